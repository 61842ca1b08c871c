/*
 * The etcd store's event batches (store_etcd_batch.h): a job's events, its
 * ranks' rows and its journal entries of one commit packed as they come
 * (row_pack(), by the rows' own field tables), one value per job and
 * commit, and read back in place, each checked as a row of its own is
 * (types and ranges: row_unpack()).  The JSON batches of before are read
 * too (a store written by an older leader), through row_decode()'s checks.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <zlib.h>

#include "jobid.h"
#include "store.h"
#include "store_etcd_batch.h"
#include "store_row.h"
#include "utf8.h"

/* Makes room for n more bytes of j's text.  Returns 0 or -1. */
int
esb_reserve(struct esb_text *j, size_t n)
{
	size_t	 cap = j->cap == 0 ? 4096 : j->cap;
	char	*p;

	if (j->len + n + 1 <= j->cap)
		return (0);
	while (cap < j->len + n + 1)
		cap *= 2;
	if ((p = realloc(j->text, cap)) == NULL)
		return (-1);
	j->text = p;
	j->cap = cap;
	return (0);
}

/*
 * Appends s to j's text as a JSON string (null for NULL).  Returns 0, or -1
 * (out of memory, or s is not UTF-8, which no JSON string holds).
 */
int
esb_quote(struct esb_text *j, const char *s)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*p;
	size_t			 len;

	if (s == NULL) {
		if (esb_reserve(j, 4) == -1)
			return (-1);
		memcpy(j->text + j->len, "null", 4);
		j->len += 4;
		return (0);
	}
	/* At most 6 bytes per byte, and the quotes. */
	len = strlen(s);
	if (!utf8_valid(s, len) || esb_reserve(j, len * 6 + 2) == -1)
		return (-1);
	j->text[j->len++] = '"';
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\') {
			j->text[j->len++] = '\\';
			j->text[j->len++] = (char)*p;
		} else if (*p < 0x20 || *p == 0x7f) {
			memcpy(j->text + j->len, "\\u00", 4);
			j->len += 4;
			j->text[j->len++] = hex[*p >> 4];
			j->text[j->len++] = hex[*p & 15];
		} else
			j->text[j->len++] = (char)*p;
	}
	j->text[j->len++] = '"';
	return (0);
}

/* Appends v in decimal, then the character after (0: none): what snprintf()
 * would write, without its cost at 300,000 numbers a batch.  Returns 0 or
 * -1. */
int
esb_num(struct esb_text *t, int64_t v, char after)
{
	char		 buf[24];
	size_t		 n = 0;
	uint64_t	 u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	if (esb_reserve(t, sizeof(buf) + 1) == -1)
		return (-1);
	do {
		buf[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		t->text[t->len++] = '-';
	while (n > 0)
		t->text[t->len++] = buf[--n];
	if (after != '\0')
		t->text[t->len++] = after;
	return (0);
}

/* Returns the bytes of j's batch so far. */
static size_t
esb_size(const struct esb_job *j)
{
	return (j->events.len + j->ranks.len + j->journal.len);
}

/*
 * Hands put the value v deflated (zlib, which starts with no '{'): etcd
 * stores, replicates and syncs a fifth of the bytes or less.  As it is if
 * that is no smaller.  Returns what put did, or -1.
 */
int
esb_put_deflated(const char *key, const struct esb_text *v, esb_put_fn put,
    void *arg)
{
	uLongf	 zlen = compressBound((uLong)v->len);
	Bytef	*z;
	int	 rc;

	if ((z = malloc(zlen)) == NULL)
		return (-1);
	if (compress2(z, &zlen, (const Bytef *)v->text, (uLong)v->len,
	    ESB_ZLEVEL) == Z_OK && zlen < v->len)
		rc = put(arg, key, (const char *)z, zlen);
	else
		rc = put(arg, key, v->text, v->len);
	free(z);
	return (rc);
}

/*
 * Returns a deflated value's text (caller frees), its length in *outlen;
 * NULL if it is not zlib or inflates past ESB_INFLATED_MAX.
 */
static char *
esb_inflate(const char *value, size_t len, size_t *outlen)
{
	z_stream	 zs;
	char		*out = NULL, *p;
	size_t		 cap = 4 * len + 4096;
	int		 rc;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK)
		return (NULL);
	zs.next_in = (Bytef *)(uintptr_t)value;
	zs.avail_in = (uInt)len;
	for (;;) {
		if (cap > ESB_INFLATED_MAX)
			cap = ESB_INFLATED_MAX;
		if ((p = realloc(out, cap + 1)) == NULL)
			break;
		out = p;
		zs.next_out = (Bytef *)out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out);
		rc = inflate(&zs, Z_FINISH);
		if (rc == Z_STREAM_END) {
			*outlen = zs.total_out;
			out[*outlen] = '\0';
			inflateEnd(&zs);
			return (out);
		}
		if ((rc != Z_BUF_ERROR && rc != Z_OK) || zs.avail_in == 0 ||
		    cap == ESB_INFLATED_MAX)
			break;
		cap *= 2;
	}
	inflateEnd(&zs);
	free(out);
	return (NULL);
}

/*
 * Returns a value's plain bytes in *plain (a deflated one inflated: *owned
 * to free), their length in *plen.  Returns 0, or -1 if it is empty, or
 * deflated and does not inflate.
 */
static int
esb_plain(const char *value, size_t len, const char **plain, size_t *plen,
    char **owned)
{
	*owned = NULL;
	*plain = value;
	*plen = len;
	if (len == 0)
		return (-1);
	if (value[0] == '{' || (len >= sizeof(ESB_MAGIC) - 1 &&
	    memcmp(value, ESB_MAGIC, sizeof(ESB_MAGIC) - 1) == 0))
		return (0);
	if ((*owned = esb_inflate(value, len, plen)) == NULL)
		return (-1);
	*plain = *owned;
	return (0);
}

/*
 * Returns a value (JSON, or deflated JSON) parsed, NULL if it is not JSON;
 * *nozlib 1 if it is neither JSON nor zlib.
 */
json_t *
esb_parse(const char *value, size_t len, int *nozlib)
{
	json_t		*obj;
	const char	*text;
	char		*owned;

	*nozlib = 0;
	if (esb_plain(value, len, &text, &len, &owned) == -1) {
		*nozlib = len > 0;
		return (NULL);
	}
	obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(owned);
	return (obj);
}

/* Appends a record of kind tag, len bytes at p, to t.  Returns 0 or -1. */
static int
esb_record(struct esb_text *t, int tag, const unsigned char *p, size_t len)
{
	unsigned char	*q;

	if (esb_reserve(t, 1 + ROW_PACK_VARINT_MAX + len) == -1)
		return (-1);
	q = (unsigned char *)t->text + t->len;
	*q++ = (unsigned char)tag;
	q = row_varint_put(q, len);
	memcpy(q, p, len);
	t->len = (size_t)(q + len - (unsigned char *)t->text);
	t->n++;
	return (0);
}

/*
 * Packs a row (fields f) as a record of kind tag in t, after the varint
 * pre (a revision) if with_pre.  Returns 0 or -1.
 */
static int
esb_pack(struct esb_text *t, int tag, int with_pre, uint64_t pre,
    const struct ef *f, size_t n, const void *row)
{
	unsigned char	 stack[512], *buf = stack, *p;
	size_t		 max = ROW_PACK_VARINT_MAX + row_pack_max(f, n, row);
	int		 rc;

	if (max > sizeof(stack) && (buf = malloc(max)) == NULL)
		return (-1);
	p = with_pre ? row_varint_put(buf, pre) : buf;
	p += row_pack(f, n, row, p);
	rc = esb_record(t, tag, buf, (size_t)(p - buf));
	if (buf != stack)
		free(buf);
	return (rc);
}

/* Appends t's bytes to v, which has room for them. */
static void
esb_append(struct esb_text *v, const struct esb_text *t)
{
	if (t->len == 0)
		return;		/* its text may be NULL */
	memcpy(v->text + v->len, t->text, t->len);
	v->len += t->len;
}

/* Hands j's batch to put as one value, and empties it.  Returns 0 or -1. */
static int
esb_put_one(struct esb *b, struct esb_job *j, int64_t fence, esb_put_fn put,
    void *arg)
{
	struct esb_text	 v = { NULL, 0, 0, 0 };
	char		 key[JOBID_MAX + 64];
	unsigned char	*p;
	size_t		 jl = strlen(j->job);
	int		 rc = -1;

	if (j->events.n == 0 && j->ranks.n == 0 && j->journal.n == 0)
		return (0);
	if (snprintf(key, sizeof(key), "evbatch/%s/%020" PRId64 "/%020" PRIu64,
	    j->job, fence, ++b->seq) >= (int)sizeof(key))
		return (-1);
	/* The layout's magic, the job, then events, journal and ranks: the
	 * order the JSON of before handed them over in. */
	if (esb_reserve(&v, sizeof(ESB_MAGIC) + ROW_PACK_VARINT_MAX + jl + 1 +
	    esb_size(j)) == 0) {
		p = (unsigned char *)v.text;
		memcpy(p, ESB_MAGIC, sizeof(ESB_MAGIC) - 1);
		p = row_varint_put(p + sizeof(ESB_MAGIC) - 1, (uint64_t)jl + 1);
		memcpy(p, j->job, jl + 1);
		p += jl + 1;
		v.len = (size_t)(p - (unsigned char *)v.text);
		esb_append(&v, &j->events);
		esb_append(&v, &j->journal);
		esb_append(&v, &j->ranks);
		rc = esb_put_deflated(key, &v, put, arg);
	}
	free(v.text);
	j->events.len = j->events.n = 0;
	j->ranks.len = j->ranks.n = 0;
	j->journal.len = j->journal.n = 0;
	return (rc);
}

/* Returns job's open batch, opened if need be; NULL out of memory. */
static struct esb_job *
esb_job(struct esb *b, const char *job, int64_t fence, esb_put_fn put,
    void *arg)
{
	struct esb_job	*j;
	size_t		 i;

	for (i = 0; i < b->njobs; i++)
		if (strcmp(b->jobs[i].job, job) == 0)
			return (&b->jobs[i]);
	if (b->njobs == ESB_JOBS_MAX) {
		if (esb_flush(b, fence, put, arg) == -1)
			return (NULL);
		esb_clear(b);
	}
	j = &b->jobs[b->njobs];
	memset(j, 0, sizeof(*j));
	if ((j->job = strdup(job)) == NULL)
		return (NULL);
	b->njobs++;
	return (j);
}

/* A journal entry's fields in a batch, after its job (which the batch
 * names): only ever appended to (store_row.h, row_pack()). */
static const struct ef esb_journal_fields[] = {
	EF(struct store_journal, rev, EF_U64),
	EF(struct store_journal, type, EF_INT),
	EF(struct store_journal, what, EF_INT),
	EF(struct store_journal, rank, EF_I32),
	EF(struct store_journal, window, EF_U32),
	EF(struct store_journal, step, EF_I64),
	EF(struct store_journal, stop, EF_I64),
	EF(struct store_journal, time_ns, EF_I64),
	EF(struct store_journal, generation, EF_U64),
	EF(struct store_journal, node, EF_STR),
	EF(struct store_journal, detail, EF_STR),
};

/* Returns table t's fields after the first (the job, which a batch names),
 * n of them in *n. */
static const struct ef *
esb_fields(enum row_table t, size_t *n)
{
	const struct ef	*f = row_fields_of(t, n);

	(*n)--;
	return (f + 1);
}

/* Hands j's batch to put if it reached ESB_VALUE_MAX.  Returns 0 or -1. */
static int
esb_full(struct esb *b, struct esb_job *j, int64_t fence, esb_put_fn put,
    void *arg)
{
	if (esb_size(j) >= ESB_VALUE_MAX)
		return (esb_put_one(b, j, fence, put, arg));
	return (0);
}

/*
 * Takes one event of job, of revision rev in the event stream (0: none),
 * into its batch; a batch at ESB_VALUE_MAX goes to put now (under fence),
 * and all do if more jobs than ESB_JOBS_MAX have one open.  Returns 0 or
 * -1.
 */
int
esb_add(struct esb *b, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail,
    uint64_t rev, int64_t fence, esb_put_fn put, void *arg)
{
	struct store_event_row	 r;
	struct esb_job		*j;
	const struct ef		*f;
	size_t			 n;

	if ((j = esb_job(b, job, fence, put, arg)) == NULL)
		return (-1);
	memset(&r, 0, sizeof(r));
	r.job = job;
	r.rank = rank;
	r.window_id = ev->window_id;
	r.kind = ev->kind;
	r.step = ev->step;
	r.time_ns = ev->time_ns;
	r.node = node;
	r.detail = detail;
	/* Strings of UTF-8 only, as the JSON of before held. */
	if ((node != NULL && !utf8_valid(node, strlen(node))) ||
	    (detail != NULL && !utf8_valid(detail, strlen(detail))))
		return (-1);
	f = esb_fields(ROW_EVENTS, &n);
	if (esb_pack(&j->events, ESB_EVENT, 1, rev, f, n, &r) == -1)
		return (-1);
	return (esb_full(b, j, fence, put, arg));
}

/* Takes a journal entry that is no event into its job's batch, as
 * esb_add().  Returns 0 or -1. */
int
esb_add_journal(struct esb *b, const struct store_journal *sj, int64_t fence,
    esb_put_fn put, void *arg)
{
	struct esb_job	*j;

	if ((j = esb_job(b, sj->job, fence, put, arg)) == NULL)
		return (-1);
	if ((sj->node != NULL && !utf8_valid(sj->node, strlen(sj->node))) ||
	    (sj->detail != NULL && !utf8_valid(sj->detail,
	    strlen(sj->detail))))
		return (-1);
	if (esb_pack(&j->journal, ESB_JOURNAL, 0, 0, esb_journal_fields,
	    EF_N(esb_journal_fields), sj) == -1)
		return (-1);
	return (esb_full(b, j, fence, put, arg));
}

/* Takes a rank's row into its job's batch, as esb_add().  Returns 0 or -1. */
int
esb_add_rank(struct esb *b, const struct store_rank *r, int64_t fence,
    esb_put_fn put, void *arg)
{
	struct esb_job	*j;
	const struct ef	*f;
	size_t		 n, i;

	if ((j = esb_job(b, r->job, fence, put, arg)) == NULL)
		return (-1);
	f = esb_fields(ROW_RANKS, &n);
	for (i = 0; i < n; i++) {
		const char	*str;

		if (f[i].type == EF_STR && (str = *(const char * const *)
		    ((const char *)r + f[i].off)) != NULL &&
		    !utf8_valid(str, strlen(str)))
			return (-1);
	}
	if (esb_pack(&j->ranks, ESB_RANK, 0, 0, f, n, r) == -1)
		return (-1);
	return (esb_full(b, j, fence, put, arg));
}

/* Returns the bytes the open batches hold. */
size_t
esb_bytes(const struct esb *b)
{
	size_t	 i, n = 0;

	for (i = 0; i < b->njobs; i++)
		n += esb_size(&b->jobs[i]);
	return (n);
}

/* Hands every open batch to put (under fence).  Returns 0 or -1. */
int
esb_flush(struct esb *b, int64_t fence, esb_put_fn put, void *arg)
{
	size_t	 i;

	for (i = 0; i < b->njobs; i++)
		if (esb_put_one(b, &b->jobs[i], fence, put, arg) == -1)
			return (-1);
	return (0);
}

/* Drops every open batch (the sequence goes on). */
void
esb_clear(struct esb *b)
{
	size_t	 i;

	for (i = 0; i < b->njobs; i++) {
		free(b->jobs[i].job);
		free(b->jobs[i].events.text);
		free(b->jobs[i].ranks.text);
		free(b->jobs[i].journal.text);
	}
	b->njobs = 0;
}

/* Returns the index of job among the transaction's job names, added if
 * need be; -1 out of memory. */
static int64_t
esb_seen_job(struct esb_seen *sn, const char *job)
{
	char	**p;
	size_t	  i;

	if (sn->last < sn->njobs && strcmp(sn->jobs[sn->last], job) == 0)
		return ((int64_t)sn->last);
	for (i = 0; i < sn->njobs; i++) {
		if (strcmp(sn->jobs[i], job) == 0)
			return ((int64_t)(sn->last = i));
	}
	if ((p = realloc(sn->jobs, (sn->njobs + 1) * sizeof(*p))) == NULL)
		return (-1);
	sn->jobs = p;
	if ((sn->jobs[sn->njobs] = strdup(job)) == NULL)
		return (-1);
	return ((int64_t)(sn->last = sn->njobs++));
}

/* Returns k's slot in keys (cap of them): its own, or the empty one where
 * it would go. */
static size_t
esb_seen_slot(const struct esb_key *keys, size_t cap, const struct esb_key *k)
{
	uint64_t	 h;
	size_t		 i;

	h = ((uint64_t)k->job * 0x9e3779b97f4a7c15ULL) ^
	    ((uint64_t)(uint32_t)k->rank * 0xc2b2ae3d27d4eb4fULL) ^
	    ((uint64_t)k->window_id * 0x165667b19e3779f9ULL) ^
	    (uint64_t)(uint32_t)k->kind;
	h ^= h >> 29;
	for (i = (size_t)h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		if (keys[i].job == 0 || (keys[i].job == k->job &&
		    keys[i].rank == k->rank &&
		    keys[i].window_id == k->window_id &&
		    keys[i].kind == k->kind))
			return (i);
	}
}

/* Doubles the table of keys (or makes it).  Returns 0 or -1. */
static int
esb_seen_grow(struct esb_seen *sn)
{
	struct esb_key	*keys;
	size_t		 cap = sn->cap == 0 ? 1024 : 2 * sn->cap, i;

	if ((keys = calloc(cap, sizeof(*keys))) == NULL)
		return (-1);
	for (i = 0; i < sn->cap; i++)
		if (sn->keys[i].job != 0)
			keys[esb_seen_slot(keys, cap, &sn->keys[i])] =
			    sn->keys[i];
	free(sn->keys);
	sn->keys = keys;
	sn->cap = cap;
	return (0);
}

/*
 * Notes that the open transaction holds the event (job, rank, window,
 * kind).  Returns 1 if it held it already, 0 if not, -1 out of memory.
 */
int
esb_seen(struct esb *b, const char *job, int32_t rank, uint32_t window_id,
    int kind)
{
	struct esb_seen	*sn = &b->seen;
	struct esb_key	 k;
	int64_t		 ji;
	size_t		 i;

	if ((ji = esb_seen_job(sn, job)) == -1)
		return (-1);
	k.job = (uint32_t)ji + 1;
	k.rank = rank;
	k.window_id = window_id;
	k.kind = kind;
	/* At most half full: probes stay short. */
	if (2 * (sn->n + 1) > sn->cap && esb_seen_grow(sn) == -1)
		return (-1);
	i = esb_seen_slot(sn->keys, sn->cap, &k);
	if (sn->keys[i].job != 0)
		return (1);
	sn->keys[i] = k;
	sn->n++;
	return (0);
}

/* Forgets the events the transaction held (it ended). */
void
esb_seen_clear(struct esb *b)
{
	struct esb_seen	*sn = &b->seen;
	size_t		 i;

	for (i = 0; i < sn->njobs; i++)
		free(sn->jobs[i]);
	free(sn->jobs);
	free(sn->keys);
	memset(sn, 0, sizeof(*sn));
}

/*
 * Decodes a packed row: a, an array of the fields of a row of table t in
 * the table's order (but the first, job's name, where job is not NULL),
 * checked as that row of its own at key rel would be (row_decode_obj()),
 * into row.  Returns 0, or -1 with *why (NULL: out of memory).
 */
int
esb_unpack(struct row *row, enum row_table t, const char *rel,
    const char *job, const json_t *a, const char **why)
{
	const struct ef	*f;
	json_t		*obj;
	size_t		 i, n, first = job != NULL;

	*why = NULL;
	f = row_fields_of(t, &n);
	if ((obj = json_object()) == NULL)
		return (-1);
	if (job != NULL &&
	    json_object_set_new(obj, f[0].name, json_string(job)) == -1)
		goto fail;
	for (i = first; i < n; i++)
		if (json_object_set(obj, f[i].name,
		    json_array_get(a, i - first)) == -1)
			goto fail;
	return (row_decode_obj(row, t, rel, obj, why));
fail:
	json_decref(obj);
	return (-1);
}

/*
 * Decodes one event of a batch of job: an array of its 7 fields, checked
 * as an event row of its own would be.  Returns what fn or bad did.
 */
static int
esb_decode_one(const char *key, const char *job, const json_t *a,
    uint64_t rev, esb_event_fn fn, esb_bad_fn bad, void *arg)
{
	struct store_event_row	 k;
	struct row		 row;
	char			 rel[JOBID_MAX + 64];
	const char		*why;
	int			 rc;

	if (!json_is_array(a) || json_array_size(a) != 7)
		return (bad(arg, key, "not an array of 7 fields"));
	memset(&k, 0, sizeof(k));
	k.job = job;
	k.rank = (int32_t)json_integer_value(json_array_get(a, 0));
	k.window_id = (uint32_t)json_integer_value(json_array_get(a, 1));
	k.kind = (int)json_integer_value(json_array_get(a, 2));
	if (row_key(ROW_EVENTS, &k, rel, sizeof(rel)) == -1)
		return (bad(arg, key, "its fields name no key"));
	if (esb_unpack(&row, ROW_EVENTS, rel, job, a, &why) == -1)
		return (why != NULL ? bad(arg, key, why) : -1);
	row.u.event.rev = rev;
	rc = fn(arg, &row.u.event);
	row_clear(&row);
	return (rc);
}

/*
 * Hands a rank row of a batch of job to fn, checked as a row of its own
 * under the key it would have, or to bad.  Returns what fn or bad did.
 */
static int
esb_decode_rank(const char *key, const char *job, json_t *obj,
    esb_rank_fn fn, esb_bad_fn bad, void *arg)
{
	struct store_rank	 k;
	struct row		 row;
	char			 rel[JOBID_MAX + 64];
	const json_t		*rank = json_object_get(obj, "rank");
	const char		*why;
	int			 rc;

	memset(&k, 0, sizeof(k));
	k.job = job;
	k.rank = (int32_t)json_integer_value(rank);
	if (!json_is_object(obj) || !json_is_integer(rank) ||
	    json_integer_value(rank) != k.rank ||
	    row_key(ROW_RANKS, &k, rel, sizeof(rel)) == -1)
		return (bad(arg, key, "a rank row without its rank"));
	if (row_decode_obj(&row, ROW_RANKS, rel, json_incref(obj), &why) == -1)
		return (bad(arg, key, why));
	rc = fn(arg, &row.u.rank);
	row_clear(&row);
	return (rc);
}

/* Returns the integer at index i of a in *v.  Returns 0, or -1 if it is
 * none. */
static int
esb_int(const json_t *a, size_t i, json_int_t *v)
{
	const json_t	*x = json_array_get(a, i);

	if (!json_is_integer(x))
		return (-1);
	*v = json_integer_value(x);
	return (0);
}

/* Returns the string (or null: NULL) at index i of a in *s.  Returns 0, or
 * -1 if it is neither. */
static int
esb_string(const json_t *a, size_t i, const char **s)
{
	const json_t	*x = json_array_get(a, i);

	if (!json_is_string(x) && !json_is_null(x))
		return (-1);
	*s = json_string_value(x);
	return (0);
}

/*
 * Decodes one journal entry of a batch of job: an array of its 11 fields,
 * their types checked (the journal checks what they say).  Returns what fn
 * or bad did.
 */
static int
esb_decode_journal(const char *key, const char *job, const json_t *a,
    esb_journal_fn fn, esb_bad_fn bad, void *arg)
{
	struct store_journal	 sj;
	json_int_t		 v[9];
	size_t			 i;

	if (!json_is_array(a) || json_array_size(a) != 11)
		return (bad(arg, key, "a journal entry not of 11 fields"));
	/* A rank's step is -1 before its first (an attach then). */
	for (i = 0; i < 9; i++)
		if (esb_int(a, i, &v[i]) == -1 || v[i] < INT32_MIN ||
		    (i != 3 && v[i] < (i == 5 || i == 6 ? -1 : 0)))
			return (bad(arg, key, "a journal entry's number is not "
			    "one"));
	memset(&sj, 0, sizeof(sj));
	sj.job = job;
	sj.rev = (uint64_t)v[0];
	sj.type = v[1] > INT32_MAX ? -1 : (int)v[1];
	sj.what = v[2] > INT32_MAX ? -1 : (int)v[2];
	if (v[3] > INT32_MAX || v[4] > UINT32_MAX)
		return (bad(arg, key, "a journal entry's rank or window out of "
		    "range"));
	sj.rank = (int32_t)v[3];
	sj.window = (uint32_t)v[4];
	sj.step = v[5];
	sj.stop = v[6];
	sj.time_ns = v[7];
	sj.generation = (uint64_t)v[8];
	if (esb_string(a, 9, &sj.node) == -1 ||
	    esb_string(a, 10, &sj.detail) == -1)
		return (bad(arg, key, "a journal entry's node or detail is no "
		    "string"));
	return (fn(arg, &sj));
}

/*
 * Returns the revision of event i of a batch (its "revs", or NULL: none),
 * 0 if it has none.
 */
static uint64_t
esb_rev(const json_t *revs, size_t i)
{
	const json_t	*x = json_array_get(revs, i);

	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return (0);
	return ((uint64_t)json_integer_value(x));
}

/* Returns 1 if job (jl bytes) is a job's name, the one key names. */
static int
esb_job_of(const char *key, const char *job, size_t jl)
{
	return (jl > 0 && strncmp(key, "evbatch/", 8) == 0 &&
	    strncmp(key + 8, job, jl) == 0 && key[8 + jl] == '/' &&
	    jobid_valid(job, NULL));
}

/* Reads a JSON batch (a value written before the packed layout), as
 * esb_decode(). */
static int
esb_decode_json(const char *key, const char *text, size_t len,
    esb_event_fn fn, esb_rank_fn rank, esb_journal_fn journal,
    esb_bad_fn bad, void *arg)
{
	json_t		*obj, *evs, *rks, *revs, *jnl, *a;
	const char	*job;
	size_t		 i, jl;
	int		 rc = 0;

	obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	job = json_string_value(json_object_get(obj, "job"));
	evs = json_object_get(obj, "events");
	rks = json_object_get(obj, "ranks");
	jl = job != NULL ? strlen(job) : 0;
	if (job == NULL || !json_is_array(evs) || !json_is_array(rks) ||
	    !esb_job_of(key, job, jl)) {
		json_decref(obj);
		return (bad(arg, key, "not a batch of the job its key names"));
	}
	revs = json_object_get(obj, "revs");
	if (revs != NULL && (!json_is_array(revs) ||
	    json_array_size(revs) != json_array_size(evs))) {
		revs = NULL;
		rc = bad(arg, key, "revs is not one revision per event");
	}
	json_array_foreach(evs, i, a) {
		if (rc == -1 || (rc = esb_decode_one(key, job, a,
		    esb_rev(revs, i), fn, bad, arg)) == -1)
			break;
	}
	jnl = json_object_get(obj, "journal");
	if (journal != NULL && json_is_array(jnl))
		json_array_foreach(jnl, i, a) {
			if (rc == -1 || (rc = esb_decode_journal(key, job, a,
			    journal, bad, arg)) == -1)
				break;
		}
	json_array_foreach(rks, i, a) {
		if (rc == 0 &&
		    (rc = esb_decode_rank(key, job, a, rank, bad, arg)) == -1)
			break;
	}
	json_decref(obj);
	return (rc);
}

/* Reads a packed event record of a batch of job: its revision, then its
 * row's fields after the job.  Returns what fn or bad did. */
static int
esb_unpack_event(const char *key, const char *job, const unsigned char *p,
    size_t len, esb_event_fn fn, esb_bad_fn bad, void *arg)
{
	struct store_event_row	 r;
	const unsigned char	*end = p + len;
	const struct ef		*f;
	const char		*why;
	uint64_t		 rev;
	size_t			 n;

	memset(&r, 0, sizeof(r));
	if (row_varint_get(&p, end, &rev) == -1)
		return (bad(arg, key, "an event without its revision"));
	f = esb_fields(ROW_EVENTS, &n);
	if (row_unpack(f, n, p, (size_t)(end - p), &r, &why) == -1)
		return (bad(arg, key, why));
	r.job = job;
	/* As the JSON's: a revision past an integer's is none. */
	r.rev = rev > INT64_MAX ? 0 : rev;
	return (fn(arg, &r));
}

/* Reads a packed journal entry of a batch of job, its numbers checked as
 * the JSON's are.  Returns what fn or bad did. */
static int
esb_unpack_journal(const char *key, const char *job, const unsigned char *p,
    size_t len, esb_journal_fn fn, esb_bad_fn bad, void *arg)
{
	struct store_journal	 sj;
	const char		*why;

	memset(&sj, 0, sizeof(sj));
	if (row_unpack(esb_journal_fields, EF_N(esb_journal_fields), p, len,
	    &sj, &why) == -1)
		return (bad(arg, key, why));
	if (sj.rev > INT64_MAX || sj.type < 0 || sj.what < 0 || sj.step < -1 ||
	    sj.stop < -1 || sj.time_ns < 0 || sj.generation > INT64_MAX)
		return (bad(arg, key, "a journal entry's number is not one"));
	sj.job = job;
	return (fn(arg, &sj));
}

/* Reads a packed rank row of a batch of job.  Returns what fn or bad
 * did. */
static int
esb_unpack_rank(const char *key, const char *job, const unsigned char *p,
    size_t len, esb_rank_fn fn, esb_bad_fn bad, void *arg)
{
	struct store_rank	 r;
	const struct ef		*f;
	const char		*why;
	size_t			 n;

	memset(&r, 0, sizeof(r));
	f = esb_fields(ROW_RANKS, &n);
	if (row_unpack(f, n, p, len, &r, &why) == -1)
		return (bad(arg, key, why));
	r.job = job;
	return (fn(arg, &r));
}

/* Reads a packed batch (after its magic), as esb_decode(): its job, then
 * its records in order, each of a kind, its length and its bytes. */
static int
esb_decode_packed(const char *key, const unsigned char *p, size_t len,
    esb_event_fn fn, esb_rank_fn rank, esb_journal_fn journal,
    esb_bad_fn bad, void *arg)
{
	const unsigned char	*end = p + len, *rec;
	const char		*job;
	uint64_t		 v;
	int			 rc = 0, tag;

	if (row_varint_get(&p, end, &v) == -1 || v == 0 ||
	    v - 1 >= (uint64_t)(end - p) || p[v - 1] != '\0' ||
	    !esb_job_of(key, (const char *)p, v - 1))
		return (bad(arg, key, "not a batch of the job its key names"));
	job = (const char *)p;
	p += v;
	while (p < end && rc != -1) {
		tag = *p++;
		if (row_varint_get(&p, end, &v) == -1 ||
		    v > (uint64_t)(end - p))
			return (bad(arg, key, "a record cut short"));
		rec = p;
		p += v;
		switch (tag) {
		case ESB_EVENT:
			rc = esb_unpack_event(key, job, rec, v, fn, bad, arg);
			break;
		case ESB_JOURNAL:
			if (journal != NULL)
				rc = esb_unpack_journal(key, job, rec, v,
				    journal, bad, arg);
			break;
		case ESB_RANK:
			rc = esb_unpack_rank(key, job, rec, v, rank, bad, arg);
			break;
		default:
			rc = bad(arg, key, "a record of no kind known");
			break;
		}
	}
	return (rc);
}

/*
 * Reads the batch value at key (relative to the prefix), packed or the JSON
 * of before, deflated or not: each event handed to fn (with its revision),
 * each rank row to rank (checked as a row of its own), each journal entry
 * to journal (NULL: skipped), each that is not one to bad, and a value that
 * is no batch of the job its key names to bad once.  Returns 0, or -1 if
 * one of them did.
 */
int
esb_decode(const char *key, const char *value, size_t len, esb_event_fn fn,
    esb_rank_fn rank, esb_journal_fn journal, esb_bad_fn bad, void *arg)
{
	const char	*plain;
	char		*owned;
	size_t		 plen;
	int		 rc;

	if (esb_plain(value, len, &plain, &plen, &owned) == -1)
		return (bad(arg, key, "neither a batch nor zlib"));
	if (plain[0] == '{')
		rc = esb_decode_json(key, plain, plen, fn, rank, journal, bad,
		    arg);
	else if (plen >= sizeof(ESB_MAGIC) - 1 &&
	    memcmp(plain, ESB_MAGIC, sizeof(ESB_MAGIC) - 1) == 0)
		rc = esb_decode_packed(key, (const unsigned char *)plain +
		    sizeof(ESB_MAGIC) - 1, plen - (sizeof(ESB_MAGIC) - 1), fn,
		    rank, journal, bad, arg);
	else
		rc = bad(arg, key, "not a batch of the job its key names");
	free(owned);
	return (rc);
}
