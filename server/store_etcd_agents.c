/*
 * The etcd store's agent rows (store_etcd_agents.h): a commit's rows written
 * as values of their own, the rows known committed kept by node for the
 * snapshots, and the values read back row by row through the checks of a
 * row of its own (row_decode()).
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "state.h"
#include "store_etcd_agents.h"
#include "store_row.h"

/* Appends a row to rows.  Returns 0 or -1. */
static int
esa_rows_add(struct esa_rows *rows, const char *node, uint64_t boot_id,
    uint64_t seq)
{
	struct esa_row	*v;
	size_t		 cap;

	if (rows->n == rows->cap) {
		cap = rows->cap == 0 ? 64 : 2 * rows->cap;
		if ((v = reallocarray(rows->v, cap, sizeof(*v))) == NULL)
			return (-1);
		rows->v = v;
		rows->cap = cap;
	}
	if ((rows->v[rows->n].node = strdup(node)) == NULL)
		return (-1);
	rows->v[rows->n].boot_id = boot_id;
	rows->v[rows->n].seq = seq;
	rows->v[rows->n].rev = 0;
	rows->n++;
	return (0);
}

/* Empties rows. */
void
esa_rows_clear(struct esa_rows *rows)
{
	size_t	 i;

	for (i = 0; i < rows->n; i++)
		free(rows->v[i].node);
	free(rows->v);
	memset(rows, 0, sizeof(*rows));
}

/* Takes a node's row into the open transaction.  Returns 0 or -1. */
int
esa_add(struct esa *a, const char *node, uint64_t boot_id, uint64_t seq)
{
	return (esa_rows_add(&a->open, node, boot_id, seq));
}

/* Returns node's slot in known (cap of them): its own, or the empty one
 * where it would go. */
static size_t
esa_slot(const struct esa_row *known, size_t cap, const char *node)
{
	const unsigned char	*p;
	uint64_t		 h = 1469598103934665603ULL;	/* FNV-1a */
	size_t			 i;

	for (p = (const unsigned char *)node; *p != '\0'; p++)
		h = (h ^ *p) * 1099511628211ULL;
	for (i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (known[i].node == NULL || strcmp(known[i].node, node) == 0)
			return (i);
}

/*
 * Keeps node's row as known committed, over the one known unless that one
 * has a higher revision (rev: the mod revision it was read at; 0: a row
 * that just landed, over any).  Returns 0 or -1.
 */
int
esa_known(struct esa *a, const char *node, uint64_t boot_id, uint64_t seq,
    int64_t rev)
{
	struct esa_row	*known, *r;
	size_t		 cap, i;

	if (2 * (a->n + 1) > a->cap) {
		cap = a->cap == 0 ? 1024 : 2 * a->cap;
		if ((known = calloc(cap, sizeof(*known))) == NULL)
			return (-1);
		for (i = 0; i < a->cap; i++)
			if (a->known[i].node != NULL)
				known[esa_slot(known, cap,
				    a->known[i].node)] = a->known[i];
		free(a->known);
		a->known = known;
		a->cap = cap;
	}
	r = &a->known[esa_slot(a->known, a->cap, node)];
	if (r->node == NULL) {
		if ((r->node = strdup(node)) == NULL)
			return (-1);
		a->n++;
	} else if (rev != 0 && r->rev > rev)
		return (0);
	r->boot_id = boot_id;
	r->seq = seq;
	r->rev = rev;
	return (0);
}

/* Keeps the rows of a commit that landed as the nodes' committed rows. */
void
esa_landed(struct esa *a, const struct esa_rows *rows)
{
	size_t	 i;

	/* Out of memory: the snapshot lacks a row, whose node replays
	 * events the model then counts as repeats. */
	for (i = 0; i < rows->n; i++)
		(void)esa_known(a, rows->v[i].node, rows->v[i].boot_id,
		    rows->v[i].seq, 0);
}

/* Forgets every row (the store is loaded again, or closed). */
void
esa_forget(struct esa *a)
{
	size_t	 i;

	esa_rows_clear(&a->open);
	for (i = 0; i < a->cap; i++)
		free(a->known[i].node);
	free(a->known);
	memset(a, 0, sizeof(*a));
}

/* Hands v, rows so far, to put as the value at the next key and empties
 * it.  Returns 0 or -1. */
static int
esa_put(struct esb_text *v, uint64_t *seq, int64_t fence, esb_put_fn put,
    void *arg)
{
	char	 key[64];
	int	 rc;

	if (v->n == 0)
		return (0);
	if (esb_reserve(v, 4) == -1)
		return (-1);
	v->text[v->len++] = ']';
	v->text[v->len++] = '}';
	snprintf(key, sizeof(key), "agbatch/%020" PRId64 "/%020" PRIu64,
	    fence, ++*seq);
	rc = esb_put_deflated(key, v, put, arg);
	v->len = v->n = 0;
	return (rc);
}

/* Appends a row to v, the value being written, handed to put first if it
 * is full.  Returns 0 or -1. */
static int
esa_write(struct esb_text *v, const struct esa_row *r, uint64_t *seq,
    int64_t fence, esb_put_fn put, void *arg)
{
	size_t	 len = v->len, n = v->n;

	if (v->len >= ESB_VALUE_MAX &&
	    esa_put(v, seq, fence, put, arg) == -1)
		return (-1);
	if (esb_reserve(v, 16) == -1)
		return (-1);
	if (v->n++ == 0) {
		memcpy(v->text + v->len, "{\"agents\":[", 11);
		v->len += 11;
	} else
		v->text[v->len++] = ',';
	v->text[v->len++] = '[';
	if (esb_quote(v, r->node) == -1 || esb_reserve(v, 2) == -1)
		goto fail;
	v->text[v->len++] = ',';
	/* The boot id kept as its bits, as row_encode() keeps it. */
	if (esb_num(v, (int64_t)r->boot_id, ',') == -1 ||
	    esb_num(v, (int64_t)r->seq, ']') == -1)
		goto fail;
	return (0);
fail:
	v->len = len;
	v->n = n;
	return (-1);
}

/*
 * Hands the open transaction's rows to put as values under fence (keys
 * from ++*seq on), and moves them to landing (the caller keeps them
 * committed once the commit landed: esa_landed()).  A snapshot writes
 * every row known committed first (the open ones after them: the later
 * row of a node wins).  Returns 0 or -1.
 */
int
esa_flush(struct esa *a, struct esa_rows *landing, int snapshot,
    uint64_t *seq, int64_t fence, esb_put_fn put, void *arg)
{
	struct esb_text	 v = { NULL, 0, 0, 0 };
	size_t		 i;
	int		 rc = 0;

	for (i = 0; snapshot && rc == 0 && i < a->cap; i++)
		if (a->known[i].node != NULL)
			rc = esa_write(&v, &a->known[i], seq, fence, put, arg);
	for (i = 0; rc == 0 && i < a->open.n; i++)
		rc = esa_write(&v, &a->open.v[i], seq, fence, put, arg);
	if (rc == 0)
		rc = esa_put(&v, seq, fence, put, arg);
	free(v.text);
	if (rc == 0) {
		a->values = snapshot ? 1 : a->values + 1;
		*landing = a->open;
		memset(&a->open, 0, sizeof(a->open));
	}
	return (rc);
}

/*
 * Checks one row of a value as a row of its own (row_decode()) and hands it
 * to fn, or to bad.  Returns what fn or bad did.
 */
static int
esa_decode_one(const char *key, const json_t *r, esa_row_fn fn,
    esb_bad_fn bad, void *arg)
{
	struct store_agent_row	 k;
	struct row		 row;
	char			 rel[COORD_NODE_MAX + 64];
	const char		*why;
	int			 rc;

	if (!json_is_array(r) || json_array_size(r) != 3 ||
	    (k.node = json_string_value(json_array_get(r, 0))) == NULL)
		return (bad(arg, key, "not an array of 3 fields"));
	if (row_key(ROW_AGENTS, &k, rel, sizeof(rel)) == -1)
		return (bad(arg, key, "its node names no key"));
	if (esb_unpack(&row, ROW_AGENTS, rel, NULL, r, &why) == -1)
		return (why != NULL ? bad(arg, key, why) : -1);
	rc = fn(arg, row.u.agent.node, row.u.agent.boot_id, row.u.agent.seq);
	row_clear(&row);
	return (rc);
}

/*
 * Reads the agent value at key (relative to the prefix): each row handed
 * to fn, each that is not one to bad, a value that is none to bad once.
 * Returns 0, or -1 if one of them did.
 */
int
esa_decode(const char *key, const char *value, size_t len, esa_row_fn fn,
    esb_bad_fn bad, void *arg)
{
	json_t		*obj, *rows, *r;
	size_t		 i;
	int		 rc = 0, nozlib;

	if ((obj = esb_parse(value, len, &nozlib)) == NULL && nozlib)
		return (bad(arg, key, "neither JSON nor zlib"));
	rows = json_object_get(obj, "agents");
	if (!json_is_array(rows)) {
		json_decref(obj);
		return (bad(arg, key, "not a value of agent rows"));
	}
	json_array_foreach(rows, i, r) {
		if ((rc = esa_decode_one(key, r, fn, bad, arg)) == -1)
			break;
	}
	json_decref(obj);
	return (rc);
}
