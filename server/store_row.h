/*
 * A row of the store as a JSON object, field by field from a table: one
 * line per field (store_etcd.c's tables), so that a field added to a row
 * struct is one line more there.
 */

#ifndef DYNPROF_STORE_ROW_H
#define DYNPROF_STORE_ROW_H

#include <stddef.h>

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

/* store_row.c */
struct json_t	*ef_encode(const struct ef *, size_t, const void *);
void		 ef_decode(const struct ef *, size_t, const struct json_t *,
		    void *);

#endif /* DYNPROF_STORE_ROW_H */
