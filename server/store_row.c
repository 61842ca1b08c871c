/*
 * Rows to JSON and back, by the field tables here, and the keys the etcd
 * store keeps them under.  A row read back is checked as bytes: a JSON
 * object whose fields have their types and ranges, under the key its own
 * fields name.  What the fields mean is valid.c's to check.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "store_row.h"

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
	switch (f->type) {
	case EF_STR:
		*(const char **)p = v != NULL ? json_string_value(v) : NULL;
		break;
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
