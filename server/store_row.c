/*
 * Rows to JSON and back, by the field tables here, and the keys the etcd
 * store keeps them under.  A row read back is checked as bytes: a JSON
 * object whose fields have their types and ranges, under the key its own
 * fields name.  What the fields mean is valid.c's to check.  Packed (the
 * etcd store's event batches, store_etcd_batch.h): the same fields by the
 * same tables, as varints and NUL-ended strings, checked as the JSON is
 * (types, ranges, strings of UTF-8 without a NUL) and read in place.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "store_row.h"
#include "utf8.h"

static const struct ef ef_meta[] = {
	EF(struct store_meta_row, generation, EF_U64),
	EF(struct store_meta_row, schema, EF_I64),
};

static const struct ef ef_job[] = {
	EF(struct store_job, name, EF_STR),
	EF(struct store_job, generation, EF_U64),
	EF(struct store_job, next_window_id, EF_U32),
	EF(struct store_job, config, EF_STR),
	EF(struct store_job, defaults, EF_STR),
	EF(struct store_job, created_ns, EF_I64),
	EF(struct store_job, rules, EF_STR),
};

static const struct ef ef_window[] = {
	EF(struct store_window, job, EF_STR),
	EF(struct store_window, id, EF_U32),
	EF(struct store_window, start_step, EF_I64),
	EF(struct store_window, stop_step, EF_I64),
	EF(struct store_window, ranks, EF_STR),
	EF(struct store_window, selector, EF_STR),
	EF(struct store_window, options, EF_STR),
	EF(struct store_window, output_subdir, EF_STR),
	EF(struct store_window, state, EF_INT),
	EF(struct store_window, finished, EF_INT),
	EF(struct store_window, created_ns, EF_I64),
	EF(struct store_window, ended_ns, EF_I64),
	EF(struct store_window, no_collect, EF_INT),
	EF(struct store_window, start_unix_ns, EF_I64),
	EF(struct store_window, stop_unix_ns, EF_I64),
	EF(struct store_window, tolerance_ms, EF_I64),
	EF(struct store_window, trace_store, EF_STR),
	EF(struct store_window, refused_reason, EF_STR),
	EF(struct store_window, generation, EF_U64),
	EF(struct store_window, ended_generation, EF_U64),
};

static const struct ef ef_rank[] = {
	EF(struct store_rank, job, EF_STR),
	EF(struct store_rank, rank, EF_I32),
	EF(struct store_rank, node, EF_STR),
	EF(struct store_rank, pid, EF_I32),
	EF(struct store_rank, step, EF_I64),
	EF(struct store_rank, state, EF_INT),
	EF(struct store_rank, window_id, EF_U32),
	EF(struct store_rank, output_dir, EF_STR),
	EF(struct store_rank, last_event, EF_INT),
	EF(struct store_rank, last_event_ns, EF_I64),
	EF(struct store_rank, error, EF_STR),
	EF(struct store_rank, arrived_ns, EF_I64),
	EF(struct store_rank, gone_ns, EF_I64),
	EF(struct store_rank, labels, EF_STR),
	EF(struct store_rank, owner, EF_I64),
};

static const struct ef ef_event[] = {
	EF(struct store_event_row, job, EF_STR),
	EF(struct store_event_row, rank, EF_I32),
	EF(struct store_event_row, window_id, EF_U32),
	EF(struct store_event_row, kind, EF_INT),
	EF(struct store_event_row, step, EF_I64),
	EF(struct store_event_row, time_ns, EF_I64),
	EF(struct store_event_row, node, EF_STR),
	EF(struct store_event_row, detail, EF_STR),
};

static const struct ef ef_agent[] = {
	EF(struct store_agent_row, node, EF_STR),
	EF(struct store_agent_row, boot_id, EF_U64),
	EF(struct store_agent_row, seq, EF_U64),
};

static const struct {
	const struct ef	*f;
	size_t		 n;
} row_fields[ROW_TABLES] = {
	[ROW_META] = { ef_meta, EF_N(ef_meta) },
	[ROW_JOBS] = { ef_job, EF_N(ef_job) },
	[ROW_WINDOWS] = { ef_window, EF_N(ef_window) },
	[ROW_RANKS] = { ef_rank, EF_N(ef_rank) },
	[ROW_EVENTS] = { ef_event, EF_N(ef_event) },
	[ROW_AGENTS] = { ef_agent, EF_N(ef_agent) },
};

/* The tables' key prefixes, without their "/". */
const char *const row_table_names[ROW_TABLES] = {
	[ROW_META] = "meta",
	[ROW_JOBS] = "jobs",
	[ROW_WINDOWS] = "windows",
	[ROW_RANKS] = "ranks",
	[ROW_EVENTS] = "events",
	[ROW_AGENTS] = "agents",
};

/* Returns a row (fields f) as a JSON object; NULL strings are left out. */
static json_t *
ef_encode(const struct ef *f, size_t n, const void *row)
{
	const char	*base = row, *str;
	json_t		*obj, *v;
	size_t		 i;

	if ((obj = json_object()) == NULL)
		return (NULL);
	for (i = 0; i < n; i++) {
		const void	*p = base + f[i].off;

		switch (f[i].type) {
		case EF_STR:
			if ((str = *(const char * const *)p) == NULL)
				continue;
			v = json_string(str);
			break;
		case EF_I64:
			v = json_integer(*(const int64_t *)p);
			break;
		case EF_U64:
			/* Kept as its bits: boot ids use all 64. */
			v = json_integer((json_int_t)*(const uint64_t *)p);
			break;
		case EF_U32:
			v = json_integer(*(const uint32_t *)p);
			break;
		case EF_I32:
			v = json_integer(*(const int32_t *)p);
			break;
		default:
			v = json_integer(*(const int *)p);
			break;
		}
		if (v == NULL || json_object_set_new(obj, f[i].name, v) == -1) {
			json_decref(obj);
			return (NULL);
		}
	}
	return (obj);
}

/* Returns table t's fields, n of them in *n. */
const struct ef *
row_fields_of(enum row_table t, size_t *n)
{
	*n = row_fields[t].n;
	return (row_fields[t].f);
}

/* Returns a row of table t as a JSON object, or NULL. */
json_t *
row_encode(enum row_table t, const void *row)
{
	return (ef_encode(row_fields[t].f, row_fields[t].n, row));
}

/*
 * Writes the key (under the store's prefix) a row of table t is kept at.
 * Returns 0, or -1 if it does not fit.
 */
int
row_key(enum row_table t, const void *row, char *buf, size_t len)
{
	const struct store_job		*j = row;
	const struct store_window	*w = row;
	const struct store_rank		*r = row;
	const struct store_event_row	*e = row;
	const struct store_agent_row	*a = row;
	int				 n = -1;

	switch (t) {
	case ROW_META:
		n = snprintf(buf, len, "meta/generation");
		break;
	case ROW_JOBS:
		n = snprintf(buf, len, "jobs/%s", j->name);
		break;
	case ROW_WINDOWS:
		n = snprintf(buf, len, "windows/%s/%010u", w->job, w->id);
		break;
	case ROW_RANKS:
		n = snprintf(buf, len, "ranks/%s/%010d", r->job, r->rank);
		break;
	case ROW_EVENTS:
		n = snprintf(buf, len, "events/%s/%010d/%010u/%d", e->job,
		    e->rank, e->window_id, e->kind);
		break;
	case ROW_AGENTS:
		n = snprintf(buf, len, "agents/%s", a->node);
		break;
	case ROW_TABLES:
		break;
	}
	return (n < 0 || (size_t)n >= len ? -1 : 0);
}

/*
 * Stores iv into integer field f at p (a uint64's bits as an int64).
 * Returns 0, or -1 if it does not fit.
 */
static int
ef_store_int(const struct ef *f, void *p, int64_t iv)
{
	switch (f->type) {
	case EF_I64:
		*(int64_t *)p = iv;
		break;
	case EF_U64:
		*(uint64_t *)p = (uint64_t)iv;
		break;
	case EF_U32:
		if (iv < 0 || iv > UINT32_MAX)
			return (-1);
		*(uint32_t *)p = (uint32_t)iv;
		break;
	case EF_I32:
		if (iv < INT32_MIN || iv > INT32_MAX)
			return (-1);
		*(int32_t *)p = (int32_t)iv;
		break;
	default:
		if (iv < INT32_MIN || iv > INT32_MAX)
			return (-1);
		*(int *)p = (int)iv;
		break;
	}
	return (0);
}

/*
 * Reads field f of obj into p: absent or null (a row written before the
 * field existed, a NULL string) is 0 or NULL.  Returns 0, or -1 if it has
 * another type or does not fit.
 */
static int
ef_decode_one(const struct ef *f, const json_t *obj, void *p)
{
	const json_t	*v = json_object_get(obj, f->name);
	json_int_t	 iv = 0;

	if (v != NULL && !json_is_null(v)) {
		if (f->type == EF_STR) {
			/* A NUL inside would cut the string C reads. */
			if (!json_is_string(v) || strlen(json_string_value(v)) !=
			    json_string_length(v))
				return (-1);
		} else if (!json_is_integer(v))
			return (-1);
		else
			iv = json_integer_value(v);
	}
	if (f->type == EF_STR) {
		*(const char **)p = v != NULL ? json_string_value(v) : NULL;
		return (0);
	}
	return (ef_store_int(f, p, iv));
}

/* Returns the string field of a row that names it in its key. */
static const char *
row_name(const struct row *row)
{
	switch (row->table) {
	case ROW_JOBS:
		return (row->u.job.name);
	case ROW_WINDOWS:
		return (row->u.window.job);
	case ROW_RANKS:
		return (row->u.rank.job);
	case ROW_EVENTS:
		return (row->u.event.job);
	case ROW_AGENTS:
		return (row->u.agent.node);
	default:
		return ("");
	}
}

/*
 * Decodes the value (len bytes) kept at key (under the prefix) of table t
 * into row: a JSON object whose fields have their types and fit them, and
 * which names the key it is kept at.  Returns 0 (row_clear() it), or -1
 * with *why (nothing to clear).
 */
int
row_decode(struct row *row, enum row_table t, const char *key,
    const char *value, size_t len, const char **why)
{
	json_t	*obj;

	if ((obj = json_loadb(value, len, JSON_REJECT_DUPLICATES, NULL)) ==
	    NULL) {
		memset(row, 0, sizeof(*row));
		*why = "not a JSON object";
		return (-1);
	}
	return (row_decode_obj(row, t, key, obj, why));
}

/*
 * Decodes a row of table t kept at key from obj (taken: row_clear() or a
 * failure frees it), parsed already, as row_decode() does: a batch's rows
 * are parsed once, with the batch.  Returns 0 or -1 with *why.
 */
int
row_decode_obj(struct row *row, enum row_table t, const char *key,
    json_t *obj, const char **why)
{
	const struct ef	*f = row_fields[t].f;
	char		 want[512];
	size_t		 i;

	memset(row, 0, sizeof(*row));
	row->table = t;
	if ((row->obj = obj) == NULL || !json_is_object(row->obj)) {
		*why = "not a JSON object";
		goto bad;
	}
	for (i = 0; i < row_fields[t].n; i++) {
		if (ef_decode_one(&f[i], row->obj,
		    (char *)&row->u + f[i].off) == -1) {
			*why = "a field of the wrong type or out of range";
			goto bad;
		}
	}
	if (t == ROW_META) {
		if (!json_is_integer(json_object_get(row->obj,
		    "generation")) || json_integer_value(json_object_get(
		    row->obj, "generation")) < 0) {
			*why = "no generation";
			goto bad;
		}
	} else if (row_name(row) == NULL) {
		*why = "no name";
		goto bad;
	}
	if (row_key(t, &row->u, want, sizeof(want)) == -1 ||
	    strcmp(want, key) != 0) {
		*why = "its fields name another key";
		goto bad;
	}
	return (0);
bad:
	row_clear(row);
	return (-1);
}

/* Frees what a decoded row points into. */
void
row_clear(struct row *row)
{
	json_decref(row->obj);
	row->obj = NULL;
}

/* Writes v as a varint at p.  Returns the byte after it. */
unsigned char *
row_varint_put(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return (p);
}

/* Reads a varint from *p (before end) into *v, *p moved past it.  Returns
 * 0, or -1 if it runs past end or past 64 bits. */
int
row_varint_get(const unsigned char **p, const unsigned char *end,
    uint64_t *v)
{
	const unsigned char	*q = *p;
	uint64_t		 x = 0;
	unsigned		 shift;

	for (shift = 0; q < end && shift < 64; shift += 7) {
		x |= (uint64_t)(*q & 0x7f) << shift;
		if ((*q++ & 0x80) == 0) {
			if (shift == 63 && q[-1] > 1)
				return (-1);
			*p = q;
			*v = x;
			return (0);
		}
	}
	return (-1);
}

/* Returns a signed field of a row as a zigzagged varint's value. */
static uint64_t
ef_zigzag(int64_t v)
{
	return (((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

/* Returns the int64 a zigzagged varint's value holds. */
static int64_t
ef_unzigzag(uint64_t v)
{
	return ((int64_t)(v >> 1) ^ -(int64_t)(v & 1));
}

/* Returns the bytes row_pack() writes at most for a row (fields f). */
size_t
row_pack_max(const struct ef *f, size_t n, const void *row)
{
	const char	*base = row, *str;
	size_t		 i, len = 0;

	for (i = 0; i < n; i++) {
		len += ROW_PACK_VARINT_MAX;
		if (f[i].type == EF_STR &&
		    (str = *(const char * const *)(base + f[i].off)) != NULL)
			len += strlen(str) + 1;
	}
	return (len);
}

/*
 * Packs a row (fields f) at out, which holds row_pack_max() bytes.  Returns
 * the bytes written.
 */
size_t
row_pack(const struct ef *f, size_t n, const void *row, unsigned char *out)
{
	const char	*base = row, *str;
	unsigned char	*p = out;
	size_t		 i, len;

	for (i = 0; i < n; i++) {
		const void	*v = base + f[i].off;

		switch (f[i].type) {
		case EF_STR:
			if ((str = *(const char * const *)v) == NULL) {
				*p++ = 0;
				break;
			}
			len = strlen(str);
			p = row_varint_put(p, (uint64_t)len + 1);
			memcpy(p, str, len + 1);
			p += len + 1;
			break;
		case EF_I64:
			p = row_varint_put(p, ef_zigzag(*(const int64_t *)v));
			break;
		case EF_U64:
			p = row_varint_put(p, *(const uint64_t *)v);
			break;
		case EF_U32:
			p = row_varint_put(p, *(const uint32_t *)v);
			break;
		case EF_I32:
			p = row_varint_put(p, ef_zigzag(*(const int32_t *)v));
			break;
		default:
			p = row_varint_put(p, ef_zigzag(*(const int *)v));
			break;
		}
	}
	return ((size_t)(p - out));
}

/*
 * Reads a row (fields f) packed in len bytes at in into row, its strings
 * pointing into in: a field past the end is 0 or NULL (packed before it
 * was one), bytes past the last field are a newer writer's, ignored.
 * Returns 0, or -1 with *why: a varint cut or past its type's range, a
 * string cut, without its NUL, with a NUL inside, or not UTF-8.
 */
int
row_unpack(const struct ef *f, size_t n, const unsigned char *in, size_t len,
    void *row, const char **why)
{
	const unsigned char	*p = in, *end = in + len;
	char			*base = row;
	uint64_t		 v;
	size_t			 i;

	for (i = 0; i < n; i++) {
		void	*dst = base + f[i].off;

		if (p == end) {
			if (f[i].type == EF_STR)
				*(const char **)dst = NULL;
			else
				memset(dst, 0, f[i].type == EF_I64 ||
				    f[i].type == EF_U64 ? 8 : 4);
			continue;
		}
		if (row_varint_get(&p, end, &v) == -1) {
			*why = "a packed field cut or too long";
			return (-1);
		}
		if (f[i].type != EF_STR) {
			/* Unsigned ones as their bits (EF_U64) or in range. */
			if (f[i].type == EF_U32 && v > UINT32_MAX)
				goto range;
			if (ef_store_int(&f[i], dst, f[i].type == EF_U64 ||
			    f[i].type == EF_U32 ? (int64_t)v :
			    ef_unzigzag(v)) == -1)
				goto range;
			continue;
		}
		if (v == 0) {
			*(const char **)dst = NULL;
			continue;
		}
		if (v - 1 >= (uint64_t)(end - p) || p[v - 1] != '\0' ||
		    memchr(p, '\0', v - 1) != NULL ||
		    !utf8_valid((const char *)p, v - 1)) {
			*why = "a packed string cut, with a NUL in it or not "
			    "UTF-8";
			return (-1);
		}
		*(const char **)dst = (const char *)p;
		p += v;
	}
	return (0);
range:
	*why = "a packed field out of its range";
	return (-1);
}
