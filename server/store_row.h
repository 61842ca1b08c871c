/*
 * A row of the store as a JSON object, field by field from a table: one
 * line per field (store_row.c's tables), so that a field added to a row
 * struct is one line more there.  The etcd store keeps each row as such an
 * object under a key that names it (row_key()); row_decode() reads one back
 * and checks that it is what its key says, field by field.
 */

#ifndef DYNPROF_STORE_ROW_H
#define DYNPROF_STORE_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct json_t;

/* How a row's field is kept: one line per field in a table. */
enum ef_type { EF_STR, EF_I64, EF_U64, EF_U32, EF_I32, EF_INT };

struct ef {
	const char	*name;
	enum ef_type	 type;
	size_t		 off;
};
#define EF(st, f, t)	{ #f, t, offsetof(st, f) }
#define EF_N(a)		(sizeof(a) / sizeof((a)[0]))

/* The etcd store's tables, in the order store_load() reads them. */
enum row_table {
	ROW_META,
	ROW_JOBS,
	ROW_WINDOWS,
	ROW_RANKS,
	ROW_EVENTS,
	ROW_AGENTS,
	ROW_TABLES
};

/*
 * A row packed (row_pack()): its fields in the table's order, each integer a
 * varint (a signed one zigzagged), each string a varint 0 (NULL) or its
 * length + 1, then its bytes and a NUL.  A field is only ever appended to a
 * table, never moved nor dropped: a row packed before it reads it as 0 or
 * NULL, a reader of before ignores it.
 */
#define ROW_PACK_VARINT_MAX	10	/* bytes of a 64-bit varint */

/* Bump when the keys or the rows' meaning change; newer is refused. */
#define ROW_SCHEMA	1

/* The generation counter's row, PREFIX meta/generation. */
struct store_meta_row {
	uint64_t	 generation;
	int64_t		 schema;
};

/* An event row, as the events table holds it. */
struct store_event_row {
	const char	*job;
	int32_t		 rank;
	uint32_t	 window_id;
	int		 kind;
	int64_t		 step;
	int64_t		 time_ns;
	const char	*node;
	const char	*detail;
	uint64_t	 rev;		/* in the event stream, 0: none (not
					 * a field of its own row) */
};

/* An agent row. */
struct store_agent_row {
	const char	*node;
	uint64_t	 boot_id;
	uint64_t	 seq;
};

/* A row read back: its strings point into obj, freed by row_clear(). */
struct row {
	enum row_table		 table;
	struct json_t		*obj;
	union {
		struct store_meta_row	 meta;
		struct store_job	 job;
		struct store_window	 window;
		struct store_rank	 rank;
		struct store_event_row	 event;
		struct store_agent_row	 agent;
	}			 u;
};

/* store_row.c */
extern const char *const row_table_names[ROW_TABLES];
struct json_t	*row_encode(enum row_table, const void *);
const struct ef	*row_fields_of(enum row_table, size_t *);
int		 row_key(enum row_table, const void *, char *, size_t);
int		 row_decode(struct row *, enum row_table, const char *,
		    const char *, size_t, const char **);
int		 row_decode_obj(struct row *, enum row_table, const char *,
		    struct json_t *, const char **);
void		 row_clear(struct row *);
size_t		 row_pack_max(const struct ef *, size_t, const void *);
size_t		 row_pack(const struct ef *, size_t, const void *,
		    unsigned char *);
int		 row_unpack(const struct ef *, size_t, const unsigned char *,
		    size_t, void *, const char **);
unsigned char	*row_varint_put(unsigned char *, uint64_t);
int		 row_varint_get(const unsigned char **, const unsigned char *,
		    uint64_t *);

#endif /* DYNPROF_STORE_ROW_H */
