/*
 * The etcd store: the rows of the SQLite tables as keys under the prefix,
 * each value a JSON object of the row's fields; ranks' rows and events in
 * batches, one value per job and commit (store_etcd_batch.h).
 *
 *	PREFIX meta/generation			{"generation": N, "schema": 2}
 *	PREFIX jobs/JOB				struct store_job
 *	PREFIX windows/JOB/ID			struct store_window
 *	PREFIX evbatch/JOB/FENCE/SEQ		ranks' rows and events of a commit
 *	PREFIX agbatch/FENCE/SEQ		nodes' committed event seqs
 *	PREFIX agents/NODE			a node's seq (before: read)
 *	PREFIX nodebatch/BATCH			nodes as followers show them
 *	PREFIX stragbatch/BATCH			stragglers as followers show them
 *	PREFIX legacybatch/BATCH		legacy reports, the same
 *	PREFIX ranks/JOB/RANK			struct store_rank (schema 1: read)
 *	PREFIX events/JOB/RANK/WINDOW/KIND	one event (schema 1: read)
 *
 * Numbers in keys are zero-padded so that key order is numeric order.  A
 * transaction is a list of operations kept here until it is committed, then
 * sent as txns of at most e->txn_ops operations (etcd's --max-txn-ops: 128
 * by default, --etcd-max-txn-ops) and ETCD_TXN_BYTES_MAX bytes, each guarded
 * by the leader's fencing token (etcd.h), commits in order (es_pump():
 * txns of batch values up to 4 at once, any other txn alone once all
 * before it landed): a batch of events may take several txns, and
 * store.c's caller acknowledges the agents only once all of them committed.
 * Each agent's row follows the batches of the events it covers, so a
 * failover between two txns of a commit leaves events stored that their
 * agents replay: the model (rebuilt from etcd) and the load drop the repeat.
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "dynprof.pb-c.h"
#include "etcd.h"
#include "log.h"
#include "store.h"
#include "store_etcd_agents.h"
#include "store_etcd_batch.h"
#include "store_row.h"

/*
 * The layout's version in meta/generation: ROW_SCHEMA's rows, with events
 * and ranks in batches (store_etcd_batch.h) since 2, packed since 3 (the
 * JSON batches of 2 are read too; a coordinator of 2 would read a packed
 * one as no batch).  Bump when the keys or the rows' meaning change; newer
 * is refused.
 */
#define ES_SCHEMA	3

/* An event batch is committed once its batches hold this many bytes,
 * whatever is in flight. */
#define ES_BATCH_BYTES	(4 * ESB_VALUE_MAX)

/* A txn nobody answered is sent again after this. */
static const struct timeval	es_retry_tv = { 0, ETCD_RETRY_MS * 1000 };

/*
 * What a job's batches in etcd hold: the bytes of its last snapshot (its
 * whole history rewritten, store_compact_begin()), and of the batches
 * since.  A job is compacted once those are many and outweigh the
 * snapshot twice: what a new leader reads stays within three snapshots.
 */
struct es_jobstat {
	char			*job;
	uint64_t		 snap;		/* bytes */
	uint64_t		 since;		/* bytes */
	uint64_t		 batches;	/* since */
	int			 compacting;
	int64_t			 fence;		/* its snapshot's first key */
	uint64_t		 seq;
	struct es_jobstat	*next;
};
#define ES_COMPACT_BATCHES	32	/* batches since, at least */
#define ES_COMPACT_BATCHES_MAX	1024	/* ... and at most */
#define ES_COMPACT_BYTES	(1024 * 1024)	/* bytes since, at least */
/*
 * On the loop, not while events come in: a job is compacted once no batch
 * of events was written for this long and no commit is in flight, so that
 * rewriting its history never competes with a burst of its events for the
 * loop and for etcd (unless ES_COMPACT_BATCHES_MAX batches wait).
 */
#define ES_COMPACT_QUIET_MS	2000

/* A transaction committed without waiting: its txns go out one by one. */
struct es_commit {
	json_t			*ops;
	int64_t			 rev;		/* its txns' highest landed */
	size_t			 next;		/* ops sent so far */
	size_t			 ntxns;		/* its txns not answered yet */
	void			(*done)(void *, int);
	void			*arg;
	struct es_commit	*later;		/* the queue */
	struct esa_rows		 landing;	/* its agent rows */
};

/* A txn of a commit in flight: its ops [from, to). */
struct es_txn {
	struct etcd_store	*s;
	struct es_commit	*q;		/* NULL: its commit failed */
	size_t			 from, to;
	int			 ordered;	/* not only batch values */
	struct es_txn		*next;		/* s->txns, s->retryq */
};
/* Txns of batch values in flight at once: etcd takes their proposals in
 * one raft round and one fsync. */
#define ES_TXNS_PARALLEL	4

struct etcd_store {
	struct etcd	*e;
	json_t		*ops;		/* the open transaction's operations */
	json_t		*index;		/* key -> its operation's index */
	char		 why[320];	/* why writes fail, for a 503 */
	/* Commits in flight, oldest first: one txn at a time, in order. */
	struct es_commit *head, **tailp;
	size_t		 ncommits;
	struct es_txn	*txns;		/* in flight */
	struct es_txn	*retryq;	/* waiting to be sent again */
	size_t		 ninflight;	/* both */
	int		 blocked;	/* an ordered txn in flight */
	struct event	*retry;
	uint64_t	 retries;
	struct esb	 evb;		/* the open transaction's batches */
	struct es_jobstat *stats;	/* what each job's batches hold */
	uint64_t	 events_ms;	/* monotonic: the last batch of events
					 * (not of a snapshot) written */
	struct esa	 agents;	/* agent rows (store_etcd_agents.h) */
	int64_t		 rev;		/* the last load's or landed
					 * commit's revision */
};

/* Returns a put of key and value (JSON text of row), or NULL. */
static json_t *
es_put_op(const char *key, json_t *row)
{
	json_t	*op;
	char	*text;

	if (row == NULL || (text = json_dumps(row, JSON_COMPACT)) == NULL) {
		json_decref(row);
		return (NULL);
	}
	json_decref(row);
	op = json_pack("{s:{s:o,s:o}}", "request_put", "key",
	    etcd_b64(key, strlen(key)), "value", etcd_b64(text, strlen(text)));
	free(text);
	return (op);
}

/* Returns a compare: key's create revision equal to rev. */
static json_t *
es_cmp_created(const char *key, int64_t rev)
{
	return (json_pack("{s:s,s:o,s:o,s:s}", "target", "CREATE", "key",
	    etcd_b64(key, strlen(key)), "create_revision", etcd_int_json(rev),
	    "result", "EQUAL"));
}

/*
 * Adds op (taken) to the transaction under key.  A later op of the same key
 * replaces the earlier one in place (etcd refuses a txn that names a key
 * twice), unless keep_first: then it is dropped.  Returns 1 added, 0
 * dropped, -1 out of memory.
 */
static int
es_add(struct etcd_store *s, const char *key, json_t *op, int keep_first)
{
	json_t	*at;

	if (op == NULL)
		return (-1);
	if ((at = json_object_get(s->index, key)) != NULL) {
		if (keep_first) {
			json_decref(op);
			return (0);
		}
		return (json_array_set_new(s->ops,
		    (size_t)json_integer_value(at), op) == 0 ? 1 : -1);
	}
	if (json_object_set_new(s->index, key,
	    json_integer((json_int_t)json_array_size(s->ops))) == -1 ||
	    json_array_append_new(s->ops, op) == -1)
		return (-1);
	return (1);
}

/* Puts a row of table t into the transaction.  Returns 0 or -1. */
static int
es_put(struct etcd_store *s, enum row_table t, const void *row)
{
	char	 rel[ETCD_KEY_MAX], key[ETCD_KEY_MAX];

	if (row_key(t, row, rel, sizeof(rel)) == -1 ||
	    etcd_key(s->e, key, sizeof(key), "%s", rel) == -1)
		return (-1);
	return (es_add(s, key, es_put_op(key, row_encode(t, row)), 0) ==
	    -1 ? -1 : 0);
}

/* Returns the stats of the job a batch key (relative) names, made if need
 * be; NULL if none (out of memory, no job in the key). */
static struct es_jobstat *
es_jobstat(struct etcd_store *s, const char *rel)
{
	struct es_jobstat	*st;
	const char		*job = rel + strlen("evbatch/"), *end;
	size_t			 len;

	if (strncmp(rel, "evbatch/", 8) != 0 ||
	    (end = strchr(job, '/')) == NULL)
		return (NULL);
	len = (size_t)(end - job);
	for (st = s->stats; st != NULL; st = st->next)
		if (strlen(st->job) == len && strncmp(st->job, job, len) == 0)
			return (st);
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->job = strndup(job, len)) == NULL) {
		free(st);
		return (NULL);
	}
	st->next = s->stats;
	s->stats = st;
	return (st);
}

/* Forgets what each job's batches hold. */
static void
es_jobstats_free(struct etcd_store *s)
{
	struct es_jobstat	*st;

	while ((st = s->stats) != NULL) {
		s->stats = st->next;
		free(st->job);
		free(st);
	}
}

/* Counts a batch of len bytes at rel. */
static void
es_jobstat_add(struct etcd_store *s, const char *rel, size_t len)
{
	struct es_jobstat	*st;

	if ((st = es_jobstat(s, rel)) == NULL)
		return;
	if (st->compacting)
		st->snap += len;
	else {
		st->since += len;
		st->batches++;
		s->events_ms = clock_mono_ns() / 1000000;
	}
}

/* Puts a batch value (esb_flush()) at rel into the transaction. */
static int
es_batch_put(void *arg, const char *rel, const char *text, size_t len)
{
	struct etcd_store	*s = arg;
	char			 key[ETCD_KEY_MAX];
	json_t			*op;

	if (etcd_key(s->e, key, sizeof(key), "%s", rel) == -1)
		return (-1);
	es_jobstat_add(s, rel, len);
	op = json_pack("{s:{s:o,s:o}}", "request_put", "key",
	    etcd_b64(key, strlen(key)), "value", etcd_b64(text, len));
	return (es_add(s, key, op, 0) == -1 ? -1 : 0);
}

/* Puts the open batches into the transaction, in order before what
 * follows.  Returns 0 or -1. */
static int
es_batch_flush(struct etcd_store *s)
{
	int	 rc;

	rc = esb_flush(&s->evb, s->e->fence, es_batch_put, s);
	esb_clear(&s->evb);
	return (rc);
}

/* Deletes the keys [from, to) (whole keys) in the transaction, after what
 * it holds so far.  Returns 0 or -1. */
static int
es_delete_range(struct etcd_store *s, const char *from, const char *to)
{
	char	 ikey[ETCD_KEY_MAX + 16];
	json_t	*op;

	op = json_pack("{s:{s:o,s:o}}", "request_delete_range", "key",
	    etcd_b64(from, strlen(from)), "range_end", etcd_b64(to,
	    strlen(to)));
	snprintf(ikey, sizeof(ikey), "compact:%s", from);
	return (es_add(s, ikey, op, 0) == -1 ? -1 : 0);
}

/*
 * Puts the open transaction's agent rows into it as values of their own
 * (store_etcd_agents.h), after everything else, and moves them to landing.
 * Every ESA_SNAP_VALUES values, with no commit in flight (what the store
 * knows committed is then what etcd holds), a snapshot: every node's row,
 * then the values before it and the keys of the layout before deleted.
 * Returns 0 or -1.
 */
static int
es_agents_flush(struct etcd_store *s, struct esa_rows *landing)
{
	char		 from[ETCD_KEY_MAX], to[ETCD_KEY_MAX];
	const char	*ranges[] = { "agbatch/", "agents/" };
	uint64_t	 first = s->evb.seq + 1;
	size_t		 i;
	int		 snapshot;

	memset(landing, 0, sizeof(*landing));
	if (s->agents.open.n == 0)
		return (0);
	snapshot = s->agents.values >= ESA_SNAP_VALUES && s->ncommits == 0;
	if (esa_flush(&s->agents, landing, snapshot, &s->evb.seq,
	    s->e->fence, es_batch_put, s) == -1)
		return (-1);
	for (i = 0; snapshot && i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		if (etcd_key(s->e, from, sizeof(from), "%s", ranges[i]) == -1)
			return (-1);
		if (i == 0) {
			if (etcd_key(s->e, to, sizeof(to), "agbatch/%020"
			    PRId64 "/%020" PRIu64, s->e->fence, first) == -1)
				return (-1);
		} else
			etcd_range_end(from, to, sizeof(to));
		if (es_delete_range(s, from, to) == -1)
			return (-1);
	}
	return (0);
}

/* Empties the open transaction. */
static void
es_rollback(void *arg)
{
	struct etcd_store	*s = arg;

	struct es_jobstat	*st;

	json_array_clear(s->ops);
	json_object_clear(s->index);
	esb_clear(&s->evb);
	esb_seen_clear(&s->evb);
	esa_rows_clear(&s->agents.open);
	for (st = s->stats; st != NULL; st = st->next)
		st->compacting = 0;
}

/* Starts a transaction: an empty list of operations. */
static int
es_begin(void *arg)
{
	es_rollback(arg);
	return (0);
}

/* Returns how many operations etcd counts in op (a nested txn and its). */
static size_t
es_op_weight(const json_t *op)
{
	const json_t	*txn = json_object_get(op, "request_txn");

	return (txn == NULL ? 1 :
	    1 + json_array_size(json_object_get(txn, "success")));
}

/* Returns roughly how many bytes op takes in a request. */
static size_t
es_op_bytes(const json_t *op)
{
	const json_t	*put = json_object_get(op, "request_put");
	const char	*v;

	v = json_string_value(json_object_get(put, "value"));
	return (256 + (v != NULL ? strlen(v) : 0));
}

/* Notes the revision a txn answered ans landed at (blocking commits). */
static void
es_landed_at(struct etcd_store *s, const json_t *ans)
{
	int64_t	 rev = etcd_int(json_object_get(ans, "header"), "revision");

	if (rev > s->rev)
		s->rev = rev;
}

/* Returns the revision the last load read or the last commit landed at. */
static int64_t
es_revision(void *arg)
{
	const struct etcd_store	*s = arg;

	return (s->rev);
}

/* Writes why writes fail into s->why. */
static void
es_fail(struct etcd_store *s, const char *why)
{
	snprintf(s->why, sizeof(s->why), "%s", why);
	log_warnx("store: etcd: %s", why);
}

/*
 * Sends ops [from, to) as one txn guarded by the fencing token.  Returns 0,
 * or -1 with s->why set (and the leader deposed if the guard failed).
 */
static int
es_send(struct etcd_store *s, size_t from, size_t to)
{
	struct etcd	*e = s->e;
	json_t		*body, *success, *ans;
	char		 why[sizeof(e->error) + 64];
	size_t		 i;
	int		 rc;

	if ((success = json_array()) == NULL)
		return (-1);
	for (i = from; i < to; i++)
		json_array_append(success, json_array_get(s->ops, i));
	body = json_pack("{s:[o],s:o}", "compare",
	    es_cmp_created(e->leader_key, e->fence), "success", success);
	if (body == NULL)
		return (-1);
	if ((rc = etcd_call(e, "/v3/kv/txn", body, &ans)) != ETCD_OK) {
		if (rc == ETCD_UNAVAILABLE)
			e->down = 1;
		snprintf(why, sizeof(why), "%s%s", e->error, e->last_unsure ?
		    " (unanswered: it may yet be committed)" : "");
		es_fail(s, why);
		return (-1);
	}
	rc = json_is_true(json_object_get(ans, "succeeded"));
	if (rc)
		es_landed_at(s, ans);
	json_decref(ans);
	if (!rc) {
		/* Another coordinator leads: this one must never write again
		 * under this token. */
		e->fence = 0;
		es_fail(s, "this coordinator is not the leader any more: "
		    "another one took the lead");
		if (e->deposed != NULL)
			e->deposed(e->deposed_arg);
		return (-1);
	}
	return (0);
}

/*
 * Returns the end of the txn that starts at ops[from]: at most e->txn_ops
 * operations and ETCD_TXN_BYTES_MAX bytes, at least one operation.
 */
static size_t
es_txn_end(const struct etcd *e, const json_t *ops, size_t from)
{
	size_t	 i, n = json_array_size(ops), w, b, nops = 0, bytes = 0;

	for (i = from; i < n; i++) {
		w = es_op_weight(json_array_get(ops, i));
		b = es_op_bytes(json_array_get(ops, i));
		if (i > from && (nops + w > (size_t)e->txn_ops ||
		    bytes + b > ETCD_TXN_BYTES_MAX))
			break;
		nops += w;
		bytes += b;
	}
	return (i);
}

/* Returns why the store cannot write now into s->why, or NULL. */
static const char *
es_refused(struct etcd_store *s)
{
	struct etcd	*e = s->e;

	if (e->fence == 0) {
		if (s->why[0] == '\0')
			es_fail(s, "this coordinator is not the leader");
		return (s->why);
	}
	if (e->down) {
		snprintf(s->why, sizeof(s->why), "%s", e->error);
		return (s->why);
	}
	return (NULL);
}

/*
 * Commits the transaction, blocking: its operations in txns of at most
 * e->txn_ops operations and ETCD_TXN_BYTES_MAX bytes, in order (the
 * agents' rows a batch ends with go in its last txn).  Never while
 * commits are in flight (it would overtake them).  Returns 0 once all are
 * committed, -1 if one was not.
 */
static int
es_commit(void *arg)
{
	struct etcd_store	*s = arg;
	struct etcd		*e = s->e;
	struct esa_rows		 landing = { NULL, 0, 0 };
	size_t			 from = 0, to;
	size_t			 n;
	int			 rc = 0;

	if (es_batch_flush(s) == -1 || es_agents_flush(s, &landing) == -1) {
		es_rollback(s);
		esa_rows_clear(&landing);
		return (-1);
	}
	if ((n = json_array_size(s->ops)) == 0) {
		es_rollback(s);
		return (0);		/* nothing to write, nothing to fence */
	}
	if (es_refused(s) != NULL)
		rc = -1;
	else if (s->head != NULL) {
		es_fail(s, "commits in flight");
		rc = -1;
	}
	while (rc == 0 && from < n) {
		to = es_txn_end(e, s->ops, from);
		etcd_keepalive_due(e);
		rc = es_send(s, from, to);
		from = to;
	}
	es_rollback(s);
	if (rc == 0) {
		s->why[0] = '\0';
		esa_landed(&s->agents, &landing);
	}
	esa_rows_clear(&landing);
	return (rc);
}

static void	es_pump(struct etcd_store *);

/* Frees the txns in flight or waiting to be sent again (their requests
 * dropped or answered: no callback will come). */
static void
es_txns_free(struct etcd_store *s)
{
	struct es_txn	*t;

	while ((t = s->txns) != NULL) {
		s->txns = t->next;
		free(t);
	}
	while ((t = s->retryq) != NULL) {
		s->retryq = t->next;
		free(t);
	}
}

/* Fails every commit in flight, oldest first: none of them is known to be
 * committed, and a later one must not land before an earlier one. */
static void
es_fail_all(struct etcd_store *s)
{
	struct es_commit	*q = s->head, *next;
	struct es_txn		*t;

	s->head = NULL;
	s->tailp = &s->head;
	s->ncommits = 0;
	/* Memory already holds what they changed: the leader reloads it. */
	s->e->stale = 1;
	if (s->retry != NULL)
		evtimer_del(s->retry);
	/* Those in flight are answered to nobody. */
	for (t = s->txns; t != NULL; t = t->next)
		t->q = NULL;
	while ((t = s->retryq) != NULL) {
		s->retryq = t->next;
		free(t);
	}
	s->ninflight = 0;
	s->blocked = 0;
	for (; q != NULL; q = next) {
		next = q->later;
		if (q->done != NULL)
			q->done(q->arg, -1);
		esa_rows_clear(&q->landing);
		json_decref(q->ops);
		free(q);
	}
}

/* Takes t off the list of txns in flight. */
static void
es_txn_unlink(struct etcd_store *s, struct es_txn *t)
{
	struct es_txn	**pp;

	for (pp = &s->txns; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			return;
		}
	}
}

static void	es_txn_done(void *, int, json_t *);

/* Sends t (ops [from, to) of its commit) as one txn guarded by the fencing
 * token.  Returns 0 or -1. */
static int
es_txn_send(struct etcd_store *s, struct es_txn *t)
{
	struct etcd	*e = s->e;
	json_t		*body, *success;
	size_t		 i, bytes = 0;
	long		 timeout;

	if ((success = json_array()) == NULL)
		return (-1);
	for (i = t->from; i < t->to; i++) {
		json_array_append(success, json_array_get(t->q->ops, i));
		bytes += es_op_bytes(json_array_get(t->q->ops, i));
	}
	body = json_pack("{s:[o],s:o}", "compare",
	    es_cmp_created(e->leader_key, e->fence), "success", success);
	timeout = ETCD_TXN_TIMEOUT_MS + (long)(bytes *
	    ETCD_TXN_TIMEOUT_BIG_MS / ETCD_TXN_BYTES_MAX);
	if (body == NULL || etcd_call_async(e, "/v3/kv/txn", body, timeout,
	    es_txn_done, t) == -1)
		return (-1);
	t->next = s->txns;
	s->txns = t;
	return (0);
}

/* The answer to a txn of the oldest commit. */
static void
es_txn_done(void *arg, int rc, json_t *ans)
{
	struct es_txn		*t = arg;
	struct etcd_store	*s = t->s;
	struct etcd		*e = s->e;
	struct es_commit	*q;
	char			 why[sizeof(e->error) + 64];
	int64_t			 rev;
	int			 ok;

	es_txn_unlink(s, t);
	if (t->q == NULL) {		/* its commit failed meanwhile */
		json_decref(ans);
		free(t);
		return;
	}
	snprintf(why, sizeof(why), "%s%s", e->error, e->last_unsure ?
	    " (unanswered: it may yet be committed)" : "");
	if (rc == ETCD_UNAVAILABLE && s->retry != NULL) {
		/*
		 * No answer (no quorum, etcd stopped): the same txn again in a
		 * while, for as long as this coordinator leads.  Each of its
		 * operations is a put of a whole row, a put if absent or a
		 * delete: landing twice is landing once.
		 */
		snprintf(s->why, sizeof(s->why), "%s", why);
		s->retries++;
		t->next = s->retryq;
		s->retryq = t;
		if (!evtimer_pending(s->retry, NULL))
			evtimer_add(s->retry, &es_retry_tv);
		return;
	}
	s->ninflight--;
	q = t->q;
	q->ntxns--;
	if (t->ordered)
		s->blocked = 0;
	free(t);
	if (rc != ETCD_OK) {
		es_fail(s, why);
		es_fail_all(s);
		return;
	}
	ok = json_is_true(json_object_get(ans, "succeeded"));
	if (ok) {
		rev = etcd_int(json_object_get(ans, "header"), "revision");
		if (rev > q->rev)
			q->rev = rev;
	}
	json_decref(ans);
	if (!ok) {
		e->fence = 0;
		es_fail(s, "this coordinator is not the leader any more: "
		    "another one took the lead");
		es_fail_all(s);
		if (e->deposed != NULL)
			e->deposed(e->deposed_arg);
		return;
	}
	es_pump(s);
}

/* Waited after txns nobody answered: sent again. */
static void
es_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct etcd_store	*s = arg;
	struct es_txn		*t;

	(void)fd;
	(void)what;
	if (s->e->fence == 0) {
		es_fail_all(s);
		return;
	}
	while ((t = s->retryq) != NULL) {
		s->retryq = t->next;
		if (es_txn_send(s, t) == -1) {
			free(t);
			es_fail(s, "out of memory");
			es_fail_all(s);
			return;
		}
	}
}

/* Returns 1 if op is a put of a batch value: one no other op depends on. */
static int
es_op_free(const struct etcd_store *s, const json_t *op)
{
	const json_t	*put = json_object_get(op, "request_put");
	char		*key;
	size_t		 plen = strlen(s->e->prefix);
	int		 free_op;

	if (put == NULL ||
	    (key = etcd_unb64(json_object_get(put, "key"), NULL)) == NULL)
		return (0);
	free_op = strncmp(key, s->e->prefix, plen) == 0 &&
	    strncmp(key + plen, "evbatch/", 8) == 0;
	free(key);
	return (free_op);
}

/*
 * Sends what the oldest commit may send now: its txns of batch values (any
 * order does) up to ES_TXNS_PARALLEL at once; a txn of any other operation
 * alone, once all before it landed, and nothing after it until it did.  A
 * commit is done once all its txns landed; the next starts then.
 */
static void
es_pump(struct etcd_store *s)
{
	struct etcd		*e = s->e;
	struct es_commit	*q;
	struct es_txn		*t;
	size_t			 n, to, i;
	int			 ordered;

	while ((q = s->head) != NULL && !s->blocked) {
		n = json_array_size(q->ops);
		if (q->next >= n) {
			if (q->ntxns > 0)
				return;
			if ((s->head = q->later) == NULL)
				s->tailp = &s->head;
			s->ncommits--;
			s->why[0] = '\0';
			if (q->rev > s->rev)
				s->rev = q->rev;
			esa_landed(&s->agents, &q->landing);
			esa_rows_clear(&q->landing);
			if (q->done != NULL)
				q->done(q->arg, 0);
			json_decref(q->ops);
			free(q);
			continue;
		}
		if (e->fence == 0) {
			es_fail_all(s);
			return;
		}
		/* One kind per txn: batch values, or the others. */
		to = es_txn_end(e, q->ops, q->next);
		ordered = !es_op_free(s, json_array_get(q->ops, q->next));
		for (i = q->next + 1; i < to; i++)
			if (es_op_free(s, json_array_get(q->ops, i)) == ordered)
				break;
		to = i;
		if ((ordered && s->ninflight > 0) ||
		    s->ninflight >= ES_TXNS_PARALLEL)
			return;
		if ((t = calloc(1, sizeof(*t))) == NULL)
			goto fail;
		t->s = s;
		t->q = q;
		t->from = q->next;
		t->to = to;
		t->ordered = ordered;
		if (es_txn_send(s, t) == -1) {
			free(t);
			goto fail;
		}
		q->next = to;
		q->ntxns++;
		s->ninflight++;
		if (ordered)
			s->blocked = 1;
	}
	return;
fail:
	es_fail(s, "out of memory");
	es_fail_all(s);
}

/*
 * Commits the transaction without waiting: queued behind the commits in
 * flight, done(arg, 0 or -1) called once all its txns are answered.
 * Returns 0, or -1 (done not called) if the store refuses writes now.
 */
static int
es_commit_async(void *arg, void (*done)(void *, int), void *cbarg)
{
	struct etcd_store	*s = arg;
	struct es_commit	*q;
	struct esa_rows		 landing = { NULL, 0, 0 };

	/* No loop to wait on (a tool, a test): committed now. */
	if (s->e->multi == NULL) {
		if (es_commit(s) == -1)
			return (-1);
		if (done != NULL)
			done(cbarg, 0);
		return (0);
	}
	if (es_batch_flush(s) == -1 || es_agents_flush(s, &landing) == -1) {
		esa_rows_clear(&landing);
		es_fail(s, "out of memory");
		return (-1);
	}
	if (json_array_size(s->ops) == 0) {
		es_rollback(s);
		esa_rows_clear(&landing);
		if (done != NULL)
			done(cbarg, 0);
		return (0);
	}
	/* etcd away: queued all the same, sent once it answers. */
	if (s->e->fence == 0 && es_refused(s) != NULL) {
		esa_rows_clear(&landing);
		return (-1);
	}
	if ((q = calloc(1, sizeof(*q))) == NULL) {
		esa_rows_clear(&landing);
		es_fail(s, "out of memory");
		return (-1);
	}
	q->landing = landing;
	q->ops = s->ops;
	q->done = done;
	q->arg = cbarg;
	if ((s->ops = json_array()) == NULL) {
		s->ops = q->ops;
		esa_rows_clear(&q->landing);
		free(q);
		es_fail(s, "out of memory");
		return (-1);
	}
	json_object_clear(s->index);
	esb_seen_clear(&s->evb);
	*s->tailp = q;
	s->tailp = &q->later;
	s->ncommits++;
	es_pump(s);
	return (0);
}

/* Fails every commit in flight (stopping), their requests dropped. */
static void
es_abandon(void *arg)
{
	struct etcd_store	*s = arg;

	etcd_cancel_all(s->e);
	es_txns_free(s);
	es_fail_all(s);
}

/* Returns how many commits are in flight. */
static size_t
es_inflight(void *arg)
{
	struct etcd_store	*s = arg;

	return (s->ncommits);
}

/*
 * Returns 1 once the transaction holds ETCD_BATCH_TXNS txns' operations or
 * ES_BATCH_BYTES of batches: what a commit encodes and deflates in one turn
 * of the loop stays bounded (the lease's keepalive waits for it).
 */
static int
es_full(void *arg)
{
	struct etcd_store	*s = arg;

	return (json_array_size(s->ops) >=
	    (size_t)ETCD_BATCH_TXNS * (size_t)s->e->txn_ops ||
	    esb_bytes(&s->evb) >= ES_BATCH_BYTES);
}

/* Returns why writes fail for now, or NULL. */
static const char *
es_unavailable(void *arg)
{
	struct etcd_store	*s = arg;

	if (s->e->fence != 0 && !s->e->down)
		return (NULL);
	if (s->why[0] == '\0')
		snprintf(s->why, sizeof(s->why), "%s", s->e->fence == 0 ?
		    "this coordinator is not the leader" : s->e->error);
	return (s->why);
}

/* Stores the generation counter (and the layout's version). */
static int
es_put_generation(void *arg, uint64_t gen)
{
	struct store_meta_row	 row = { gen, ES_SCHEMA };

	return (es_put(arg, ROW_META, &row));
}

/* Stores a job's own fields. */
static int
es_put_job(void *arg, const struct store_job *j)
{
	return (es_put(arg, ROW_JOBS, j));
}

/* Stores one window of a job. */
static int
es_put_window(void *arg, const struct store_window *w)
{
	return (es_put(arg, ROW_WINDOWS, w));
}

/* Stores a rank's last known state. */
static int
es_put_rank(void *arg, const struct store_rank *r)
{
	struct etcd_store	*s = arg;

	return (esb_add_rank(&s->evb, r, s->e->fence, es_batch_put, s));
}

/*
 * Stores an event in its job's batch.  Returns 1, 0 if the open transaction
 * holds it already, -1 on error.
 */
static int
es_put_event(void *arg, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail,
    uint64_t rev)
{
	struct etcd_store	*s = arg;
	int			 rc;

	if ((rc = esb_seen(&s->evb, job, rank, ev->window_id, ev->kind)) != 0)
		return (rc == 1 ? 0 : -1);
	if (esb_add(&s->evb, job, rank, ev, node, detail, rev, s->e->fence,
	    es_batch_put, s) == -1)
		return (-1);
	return (1);
}

/* Stores a journal entry that is no event in its job's batch, beside the
 * rows it speaks of. */
static int
es_put_journal(void *arg, const struct store_journal *sj)
{
	struct etcd_store	*s = arg;

	return (esb_add_journal(&s->evb, sj, s->e->fence, es_batch_put, s));
}

/* Stores the highest committed event seq of a node's agent process. */
static int
es_put_agent(void *arg, const char *node, uint64_t boot_id, uint64_t seq)
{
	struct etcd_store	*s = arg;

	/* After the events it covers, in this txn or an earlier one: the
	 * commit writes it last (es_agents_flush()). */
	return (esa_add(&s->agents, node, boot_id, seq));
}

/* Stores a batch of nodes' rows as followers show them (nodeview.c):
 * text as it is. */
static int
es_put_nodes(void *arg, const char *name, const char *text)
{
	struct etcd_store	*s = arg;
	char			 key[ETCD_KEY_MAX];
	json_t			*op;

	if (etcd_key(s->e, key, sizeof(key), "nodebatch/%s", name) == -1)
		return (-1);
	op = json_pack("{s:{s:o,s:o}}", "request_put", "key",
	    etcd_b64(key, strlen(key)), "value", etcd_b64(text, strlen(text)));
	return (es_add(s, key, op, 0) == -1 ? -1 : 0);
}

/* Stores a view row of kind (STORE_VIEW_*) as followers show it
 * (stragview.c, legacyview.c): text as it is. */
static int
es_put_view(void *arg, const char *kind, const char *name, const char *text)
{
	struct etcd_store	*s = arg;
	char			 key[ETCD_KEY_MAX];
	json_t			*op;

	if (etcd_key(s->e, key, sizeof(key), "%s/%s", kind, name) == -1)
		return (-1);
	op = json_pack("{s:{s:o,s:o}}", "request_put", "key",
	    etcd_b64(key, strlen(key)), "value", etcd_b64(text, strlen(text)));
	return (es_add(s, key, op, 0) == -1 ? -1 : 0);
}

/* Returns 1 once job's batches are worth compacting, and now is the time
 * (ES_COMPACT_QUIET_MS). */
static int
es_compact_due(void *arg, const char *job)
{
	struct etcd_store	*s = arg;
	struct es_jobstat	*st;
	int			 quiet;

	/* A follower counts the batches its copy takes, and writes none. */
	if (s->e->fence == 0)
		return (0);
	quiet = s->e->multi == NULL || (s->ncommits == 0 &&
	    clock_mono_ns() / 1000000 - s->events_ms >= ES_COMPACT_QUIET_MS);
	for (st = s->stats; st != NULL; st = st->next) {
		if (strcmp(st->job, job) != 0)
			continue;
		return (st->batches >= ES_COMPACT_BATCHES_MAX ||
		    (quiet && st->batches >= ES_COMPACT_BATCHES &&
		    st->since >= ES_COMPACT_BYTES && st->since >= 2 * st->snap));
	}
	return (0);
}

/* Starts a snapshot of job: every batch of it before this one goes. */
static int
es_compact_begin(void *arg, const char *job)
{
	struct etcd_store	*s = arg;
	struct es_jobstat	*st;
	char			 rel[ETCD_KEY_MAX];

	if (es_batch_flush(s) == -1 ||
	    snprintf(rel, sizeof(rel), "evbatch/%s/", job) >=
	    (int)sizeof(rel) || (st = es_jobstat(s, rel)) == NULL)
		return (-1);
	st->compacting = 1;
	st->snap = 0;
	st->fence = s->e->fence;
	st->seq = s->evb.seq + 1;	/* its first batch's */
	return (0);
}

/*
 * Ends job's snapshot: its batches before it, and its keys of the layout
 * before, deleted after it (the last txn of the commit).
 */
static int
es_compact_end(void *arg, const char *job)
{
	struct etcd_store	*s = arg;
	struct es_jobstat	*st;
	char			 rel[ETCD_KEY_MAX], from[ETCD_KEY_MAX];
	char			 to[ETCD_KEY_MAX];
	const char		*legacy[] = { "ranks", "events" };
	size_t			 i;

	if (es_batch_flush(s) == -1 ||
	    snprintf(rel, sizeof(rel), "evbatch/%s/", job) >=
	    (int)sizeof(rel) || (st = es_jobstat(s, rel)) == NULL ||
	    !st->compacting)
		return (-1);
	if (etcd_key(s->e, from, sizeof(from), "evbatch/%s/", job) == -1 ||
	    etcd_key(s->e, to, sizeof(to), "evbatch/%s/%020" PRId64 "/%020"
	    PRIu64, job, st->fence, st->seq) == -1)
		return (-1);
	if (es_delete_range(s, from, to) == -1)
		return (-1);
	for (i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
		if (etcd_key(s->e, from, sizeof(from), "%s/%s/", legacy[i],
		    job) == -1)
			return (-1);
		etcd_range_end(from, to, sizeof(to));
		if (es_delete_range(s, from, to) == -1)
			return (-1);
	}
	st->compacting = 0;
	st->since = 0;
	st->batches = 0;
	return (0);
}

/* Returns a delete of every key that begins with prefix (taken), or NULL. */
static json_t *
es_delete_prefix_op(const char *prefix)
{
	char	 end[ETCD_KEY_MAX];

	etcd_range_end(prefix, end, sizeof(end));
	return (json_pack("{s:{s:o,s:o}}", "request_delete_range", "key",
	    etcd_b64(prefix, strlen(prefix)), "range_end",
	    etcd_b64(end, strlen(end))));
}

/*
 * Deletes the ranks and events of a job, if no job row names it; whole,
 * everything of it: its row and windows too.
 */
static int
es_forget_job(void *arg, const char *job, int whole)
{
	struct etcd_store	*s = arg;
	static const char	*under[] = { "ranks", "events", "evbatch",
				    "windows" };
	char			 jkey[ETCD_KEY_MAX], pk[ETCD_KEY_MAX];
	char			 ikey[ETCD_KEY_MAX + 8];
	json_t			*ops, *op;
	struct es_jobstat	*st;
	size_t			 i;

	/* What it batched so far goes first, and is deleted with the rest. */
	if (es_batch_flush(s) == -1)
		return (-1);
	if (etcd_key(s->e, jkey, sizeof(jkey), "jobs/%s", job) == -1 ||
	    (ops = json_array()) == NULL)
		return (-1);
	for (i = 0; i < (whole ? 4 : 3); i++) {
		if (etcd_key(s->e, pk, sizeof(pk), "%s/%s/", under[i],
		    job) == -1 || (op = es_delete_prefix_op(pk)) == NULL ||
		    json_array_append_new(ops, op) == -1) {
			json_decref(ops);
			return (-1);
		}
	}
	if (whole) {
		op = json_pack("{s:{s:o}}", "request_delete_range", "key",
		    etcd_b64(jkey, strlen(jkey)));
		if (json_array_append_new(ops, op) == -1) {
			json_decref(ops);
			return (-1);
		}
		for (st = s->stats; st != NULL; st = st->next)
			if (strcmp(st->job, job) == 0)
				st->since = st->batches = st->snap = 0;
		op = json_pack("{s:{s:[],s:o}}", "request_txn", "compare",
		    "success", ops);
	} else
		op = json_pack("{s:{s:[o],s:o}}", "request_txn", "compare",
		    es_cmp_created(jkey, 0), "success", ops);
	/* Indexed apart from the job's own put ("forget:" is no key). */
	snprintf(ikey, sizeof(ikey), "forget:%s", jkey);
	return (es_add(s, ikey, op, whole ? 0 : 1) == -1 ? -1 : 0);
}

/* An event read back, until all are sorted by job, rank and time. */
struct es_event {
	char			*job;
	int32_t			 rank;
	struct rank_event	 ev;
	char			*node;		/* a collection's only */
	char			*detail;
};

/* A rank's row a load keeps until the tables are read (es_rank_keep()):
 * its job's name then the row, packed (row_pack()). */
struct es_rankrow {
	unsigned char			*buf;
	size_t				 len;	/* of the row, after the name */
	int32_t				 rank;
	uint64_t			 order;	/* the later wins; 0: a key's own */
};

/* What store_load() reads with. */
struct es_load {
	const struct store_loader	*l;
	size_t				 prefix_len;
	enum row_table			 table;
	struct es_event			*evs;
	size_t				 nev, cap;
	int				 newer;
	struct es_rankrow		*rows;	/* ranks' rows kept */
	size_t				 nrows, caprows;
	uint64_t			 order;	/* batches' rank rows seen */
	struct etcd_store		*s;
	int64_t				 rev;	/* the agent value's */
	int				 change;	/* es_apply()'s: on the
						 * loop, never waits */
};

/*
 * A load of many keys holds the loop (the blocking load of a leader): the
 * lease is kept alive meanwhile.  A change's rows never wait for etcd.
 */
static void
es_load_keepalive(const struct es_load *ld)
{
	if (!ld->change)
		etcd_keepalive_due(ld->s->e);
}

/* Keeps an event row for sorting.  Returns 0 or -1. */
static int
es_load_event(struct es_load *ld, const struct store_event_row *r)
{
	struct es_event	*p;
	size_t		 cap;

	if (ld->nev == ld->cap) {
		cap = ld->cap == 0 ? 256 : ld->cap * 2;
		if ((p = reallocarray(ld->evs, cap, sizeof(*p))) == NULL)
			return (-1);
		ld->evs = p;
		ld->cap = cap;
	}
	memset(&ld->evs[ld->nev], 0, sizeof(ld->evs[ld->nev]));
	if ((ld->evs[ld->nev].job = strdup(r->job)) == NULL)
		return (-1);
	if ((r->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED ||
	    r->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED) &&
	    ((ld->evs[ld->nev].node = strdup(r->node != NULL ? r->node :
	    "")) == NULL || (ld->evs[ld->nev].detail = strdup(
	    r->detail != NULL ? r->detail : "")) == NULL)) {
		free(ld->evs[ld->nev].job);
		free(ld->evs[ld->nev].node);
		return (-1);
	}
	ld->evs[ld->nev].rank = r->rank;
	ld->evs[ld->nev].ev.kind = r->kind;
	ld->evs[ld->nev].ev.window_id = r->window_id;
	ld->evs[ld->nev].ev.step = r->step;
	ld->evs[ld->nev].ev.time_ns = r->time_ns;
	ld->nev++;
	return (0);
}

/* Keeps a rank's row (order: the later wins) until the tables are read.
 * Returns 0 or -1. */
static int
es_rank_keep(struct es_load *ld, const struct store_rank *r, uint64_t order)
{
	struct es_rankrow	*p;
	const struct ef		*f;
	size_t			 n, jl = strlen(r->job), cap;

	if (ld->nrows == ld->caprows) {
		cap = ld->caprows == 0 ? 1024 : 2 * ld->caprows;
		if ((p = reallocarray(ld->rows, cap, sizeof(*p))) == NULL)
			return (-1);
		ld->rows = p;
		ld->caprows = cap;
	}
	p = &ld->rows[ld->nrows];
	f = row_fields_of(ROW_RANKS, &n);
	if ((p->buf = malloc(jl + 1 + row_pack_max(f, n, r))) == NULL)
		return (-1);
	memcpy(p->buf, r->job, jl + 1);
	p->len = row_pack(f, n, r, p->buf + jl + 1);
	p->rank = r->rank;
	p->order = order;
	ld->nrows++;
	return (0);
}

/* Orders kept rank rows by job, rank, then the order they came in. */
static int
es_rankrow_cmp(const void *a, const void *b)
{
	const struct es_rankrow	*x = a, *y = b;
	int			 c;

	if ((c = strcmp((const char *)x->buf, (const char *)y->buf)) != 0)
		return (c);
	if (x->rank != y->rank)
		return (x->rank < y->rank ? -1 : 1);
	return (x->order < y->order ? -1 : x->order > y->order);
}

/*
 * Takes one key of the table being read: decodes it and hands it over, or
 * hands it to the loader as bad (row_decode() says why).
 */
static int
es_load_kv(void *arg, const char *key, const char *value, size_t len,
    const json_t *kv)
{
	struct es_load	*ld = arg;
	const struct store_loader *l = ld->l;
	const char	*rel = key + ld->prefix_len, *why;
	struct row	 row;
	int		 rc = 0;

	es_load_keepalive(ld);
	if (row_decode(&row, ld->table, rel, value, len, &why) == -1)
		return (l->bad(l->arg, row_table_names[ld->table], rel, why));
	switch (ld->table) {
	case ROW_META:
		if (row.u.meta.schema > ES_SCHEMA) {
			ld->newer = 1;
			rc = -1;
		} else
			l->generation(l->arg, row.u.meta.generation);
		break;
	case ROW_JOBS:
		rc = l->job(l->arg, &row.u.job);
		break;
	case ROW_WINDOWS:
		rc = l->window(l->arg, &row.u.window);
		break;
	case ROW_RANKS:
		/* A batch's row, read before, is newer: kept, then sorted. */
		rc = es_rank_keep(ld, &row.u.rank, 0);
		break;
	case ROW_EVENTS:
		rc = es_load_event(ld, &row.u.event);
		break;
	case ROW_AGENTS:
		/* Against the agent values, by revision: es_load_agents(). */
		rc = esa_known(&ld->s->agents, row.u.agent.node,
		    row.u.agent.boot_id, row.u.agent.seq,
		    etcd_int(kv, "mod_revision"));
		break;
	case ROW_TABLES:
		break;
	}
	row_clear(&row);
	return (rc);
}

/* Orders events by job, rank, (if same: window and kind,) then time. */
static int
es_event_order(const struct es_event *x, const struct es_event *y, int same)
{
	int	 c;

	if ((c = strcmp(x->job, y->job)) != 0)
		return (c);
	if (x->rank != y->rank)
		return (x->rank < y->rank ? -1 : 1);
	if (same && x->ev.window_id != y->ev.window_id)
		return (x->ev.window_id < y->ev.window_id ? -1 : 1);
	if (same && x->ev.kind != y->ev.kind)
		return (x->ev.kind < y->ev.kind ? -1 : 1);
	if (x->ev.time_ns != y->ev.time_ns)
		return (x->ev.time_ns < y->ev.time_ns ? -1 : 1);
	return (0);
}

/* Orders events by job, rank and time, as the SQLite store hands them. */
static int
es_event_cmp(const void *a, const void *b)
{
	return (es_event_order(a, b, 0));
}

/* Orders events by job, rank, window, kind, then time: repeats together,
 * the earliest first. */
static int
es_event_same_cmp(const void *a, const void *b)
{
	return (es_event_order(a, b, 1));
}

/* Drops the repeats of an event (a batch written again after a failover
 * in the middle of a commit), keeping the earliest. */
static void
es_event_dedupe(struct es_load *ld)
{
	size_t	 i, n = 0;

	qsort(ld->evs, ld->nev, sizeof(*ld->evs), es_event_same_cmp);
	for (i = 0; i < ld->nev; i++) {
		if (n > 0 && strcmp(ld->evs[n - 1].job, ld->evs[i].job) == 0 &&
		    ld->evs[n - 1].rank == ld->evs[i].rank &&
		    ld->evs[n - 1].ev.window_id == ld->evs[i].ev.window_id &&
		    ld->evs[n - 1].ev.kind == ld->evs[i].ev.kind) {
			free(ld->evs[i].job);
			free(ld->evs[i].node);
			free(ld->evs[i].detail);
			continue;
		}
		ld->evs[n++] = ld->evs[i];
	}
	ld->nev = n;
}

/* A batch's event: kept for sorting; with its revision, to the journal
 * too. */
static int
es_load_batch_event(void *arg, const struct store_event_row *r)
{
	struct es_load		*ld = arg;
	struct store_journal	 sj;

	if (r->rev != 0 && ld->l->journal != NULL) {
		memset(&sj, 0, sizeof(sj));
		sj.rev = r->rev;
		sj.job = r->job;
		sj.type = STORE_JOURNAL_RANK;
		sj.what = r->kind;
		sj.rank = r->rank;
		sj.window = r->window_id;
		sj.step = r->step;
		sj.time_ns = r->time_ns;
		sj.node = r->node;
		sj.detail = r->detail;
		if (ld->l->journal(ld->l->arg, &sj) == -1)
			return (-1);
	}
	return (es_load_event(arg, r));
}

/* A batch's journal entry that is no event: to the loader. */
static int
es_load_batch_journal(void *arg, const struct store_journal *sj)
{
	struct es_load	*ld = arg;

	return (ld->l->journal != NULL ? ld->l->journal(ld->l->arg, sj) : 0);
}

/* A batch's rank row: to the loader at once (a change: the later batch's
 * comes later), or kept until the tables are read (batches are read in
 * commit order). */
static int
es_load_batch_rank(void *arg, const struct store_rank *r)
{
	struct es_load	*ld = arg;

	if (ld->change)
		return (ld->l->rank(ld->l->arg, r));
	return (es_rank_keep(ld, r, ++ld->order));
}

/* Something in a batch that is no event or rank: set aside, said. */
static int
es_load_batch_bad(void *arg, const char *rel, const char *why)
{
	struct es_load	*ld = arg;

	return (ld->l->bad(ld->l->arg, row_table_names[ROW_EVENTS], rel, why));
}

/* Takes one batch value. */
static int
es_load_batch(void *arg, const char *key, const char *value, size_t len,
    const json_t *kv)
{
	struct es_load	*ld = arg;

	(void)kv;
	/* Reading and decoding 200,000 events takes seconds. */
	es_load_keepalive(ld);
	es_jobstat_add(ld->s, key + ld->prefix_len, len);
	return (esb_decode(key + ld->prefix_len, value, len,
	    es_load_batch_event, es_load_batch_rank, es_load_batch_journal,
	    es_load_batch_bad, ld));
}

/* A row of an agent value read at ld->rev: kept if the latest. */
static int
es_load_agent_row(void *arg, const char *node, uint64_t boot_id,
    uint64_t seq)
{
	struct es_load	*ld = arg;

	return (esa_known(&ld->s->agents, node, boot_id, seq, ld->rev));
}

/* Something in an agent value that is no agent row: set aside, said. */
static int
es_load_agent_bad(void *arg, const char *rel, const char *why)
{
	struct es_load	*ld = arg;

	return (ld->l->bad(ld->l->arg, row_table_names[ROW_AGENTS], rel, why));
}

/* Takes one agent value (store_etcd_agents.h). */
static int
es_load_agent_value(void *arg, const char *key, const char *value,
    size_t len, const json_t *kv)
{
	struct es_load	*ld = arg;

	es_load_keepalive(ld);
	ld->rev = etcd_int(kv, "mod_revision");
	ld->s->agents.values++;
	return (esa_decode(key + ld->prefix_len, value, len,
	    es_load_agent_row, es_load_agent_bad, ld));
}

/*
 * Reads the agent values (after the keys of the layout before, table
 * ROW_AGENTS) and hands each node's latest row to the loader.
 */
static int
es_load_agents(struct es_load *ld, int64_t *rev)
{
	struct etcd_store	*s = ld->s;
	const struct store_loader *l = ld->l;
	char			 prefix[ETCD_KEY_MAX];
	size_t			 i;

	if (etcd_key(s->e, prefix, sizeof(prefix), "agbatch/") == -1 ||
	    etcd_range(s->e, prefix, rev, es_load_agent_value, ld) != ETCD_OK)
		return (-1);
	for (i = 0; i < s->agents.cap; i++) {
		if (s->agents.known[i].node != NULL &&
		    l->agent(l->arg, s->agents.known[i].node,
		    s->agents.known[i].boot_id, s->agents.known[i].seq) == -1)
			return (-1);
	}
	return (0);
}

/* Frees the rank rows a load kept. */
static void
es_rankrows_free(struct es_load *ld)
{
	size_t	 i;

	for (i = 0; i < ld->nrows; i++)
		free(ld->rows[i].buf);
	free(ld->rows);
	ld->rows = NULL;
	ld->nrows = ld->caprows = 0;
}

/* Hands each rank's latest row kept (a batch's over a key's own) to the
 * loader, and frees them. */
static int
es_load_batch_ranks(struct es_load *ld)
{
	const struct store_loader	*l = ld->l;
	struct es_rankrow		*p;
	struct store_rank		 r;
	const struct ef			*f;
	const char			*why;
	size_t				 i, n;
	int				 rc = 0;

	if (ld->nrows > 1)
		qsort(ld->rows, ld->nrows, sizeof(*ld->rows), es_rankrow_cmp);
	f = row_fields_of(ROW_RANKS, &n);
	for (i = 0; i < ld->nrows; i++) {
		p = &ld->rows[i];
		if (i % 4096 == 0)
			es_load_keepalive(ld);
		if (rc == 0 && (i + 1 == ld->nrows || p[1].rank != p->rank ||
		    strcmp((char *)p[1].buf, (char *)p->buf) != 0)) {
			memset(&r, 0, sizeof(r));
			if (row_unpack(f, n, p->buf + strlen((char *)p->buf) + 1,
			    p->len, &r, &why) == -1)
				rc = l->bad(l->arg, row_table_names[ROW_RANKS],
				    (char *)p->buf, why);
			else
				rc = l->rank(l->arg, &r);
		}
	}
	es_rankrows_free(ld);
	return (rc);
}

/* Hands a batch of nodes' rows to the loader, named by its key. */
static int
es_load_nodes(void *arg, const char *key, const char *value, size_t len,
    const json_t *kv)
{
	struct es_load	*ld = arg;
	const char	*node = key + ld->prefix_len + strlen("nodebatch/");
	char		*text;
	int		 rc;

	(void)kv;
	if (memchr(value, '\0', len) != NULL)
		return (ld->l->bad(ld->l->arg, "agents", node, "a NUL in it"));
	if ((text = strndup(value, len)) == NULL)
		return (-1);
	rc = ld->l->nodes(ld->l->arg, node, text);
	free(text);
	return (rc);
}

static int	es_load_events(struct es_load *, int);

/* The view rows' kinds a follower's copy reads (es_load_views()), and the
 * table a row that does not read is counted against. */
static const struct {
	const char	*kind;
	const char	*table;
} es_view_kinds[] = {
	{ STORE_VIEW_STRAG, "jobs" },
	{ STORE_VIEW_LEGACY, "agents" },
};

/* What es_load_view() reads: the load, and the kind of the rows. */
struct es_load_views {
	struct es_load	*ld;
	const char	*kind;
	const char	*table;
	size_t		 prefix_len;	/* of PREFIX KIND/ */
};

/* Hands a view row to the loader, named by its key. */
static int
es_load_view(void *arg, const char *key, const char *value, size_t len,
    const json_t *kv)
{
	struct es_load_views	*lv = arg;
	const struct store_loader *l = lv->ld->l;
	const char		*name = key + lv->prefix_len;
	char			*text;
	int			 rc;

	(void)kv;
	if (memchr(value, '\0', len) != NULL)
		return (l->bad(l->arg, lv->table, name, "a NUL in it"));
	if ((text = strndup(value, len)) == NULL)
		return (-1);
	rc = l->view(l->arg, lv->kind, name, text);
	free(text);
	return (rc);
}

/* Reads the view rows of every kind, at revision *rev. */
static int
es_load_views(struct es_load *ld, int64_t *rev)
{
	struct es_load_views	 lv;
	char			 prefix[ETCD_KEY_MAX];
	size_t			 i;

	lv.ld = ld;
	for (i = 0; i < sizeof(es_view_kinds) / sizeof(es_view_kinds[0]);
	    i++) {
		lv.kind = es_view_kinds[i].kind;
		lv.table = es_view_kinds[i].table;
		if (etcd_key(ld->s->e, prefix, sizeof(prefix), "%s/",
		    lv.kind) == -1)
			return (-1);
		lv.prefix_len = strlen(prefix);
		if (etcd_range(ld->s->e, prefix, rev, es_load_view, &lv) !=
		    ETCD_OK)
			return (-1);
	}
	return (0);
}

/*
 * Reads the whole store at one revision: the batches first (ranks and
 * events), then the generation counter, jobs, windows, ranks (a batch's
 * row over a key's own), events (both kinds, a repeat once, sorted) and
 * agents, each row handed to the loader.
 */
static int
es_load(void *arg, const struct store_loader *l)
{
	struct etcd_store	*s = arg;
	struct es_load		 ld;
	char			 prefix[ETCD_KEY_MAX];
	int64_t			 rev = 0;
	int			 rc = 0, t;

	memset(&ld, 0, sizeof(ld));
	ld.l = l;
	ld.s = s;
	ld.prefix_len = strlen(s->e->prefix);
	es_jobstats_free(s);		/* counted again as they are read */
	esa_forget(&s->agents);		/* known again as they are read */
	if (etcd_key(s->e, prefix, sizeof(prefix), "evbatch/") == -1 ||
	    etcd_range(s->e, prefix, &rev, es_load_batch, &ld) != ETCD_OK)
		rc = -1;
	for (t = ROW_META; t < ROW_TABLES && rc == 0; t++) {
		ld.table = t;
		if (etcd_key(s->e, prefix, sizeof(prefix), "%s/",
		    row_table_names[t]) == -1 ||
		    etcd_range(s->e, prefix, &rev, es_load_kv, &ld) != ETCD_OK)
			rc = -1;
		if (rc == 0 && t == ROW_RANKS)
			rc = es_load_batch_ranks(&ld);
		if (rc == 0 && t == ROW_AGENTS)
			rc = es_load_agents(&ld, &rev);
	}
	/* Nodes as the leader last wrote them: a follower's copy only. */
	if (rc == 0 && l->nodes != NULL &&
	    (etcd_key(s->e, prefix, sizeof(prefix), "nodebatch/") == -1 ||
	    etcd_range(s->e, prefix, &rev, es_load_nodes, &ld) != ETCD_OK))
		rc = -1;
	/* And the leader's judgement of stragglers and legacy reports. */
	if (rc == 0 && l->view != NULL && es_load_views(&ld, &rev) == -1)
		rc = -1;
	if (rc == 0)
		s->rev = rev;
	es_rankrows_free(&ld);		/* a load that failed before them */
	if (ld.newer) {
		rc = -1;
		log_warnx("store: etcd: the layout under %s is newer than this "
		    "coordinator's (%d)", s->e->prefix, ES_SCHEMA);
	} else if (rc == -1)
		log_warnx("store: etcd: cannot load: %s", s->e->error);
	return (es_load_events(&ld, rc));
}

/*
 * Hands the events ld kept to the loader (if rc is 0), a repeat once,
 * sorted, and frees them.  Returns rc, or -1 if the loader failed.
 */
static int
es_load_events(struct es_load *ld, int rc)
{
	const struct store_loader	*l = ld->l;
	size_t				 i;

	if (rc == 0 && ld->nev > 1) {	/* qsort() takes no NULL, even of 0 */
		es_event_dedupe(ld);
		qsort(ld->evs, ld->nev, sizeof(*ld->evs), es_event_cmp);
	}
	for (i = 0; i < ld->nev; i++) {
		if (i % 4096 == 0)
			es_load_keepalive(ld);
		if (rc == 0 && l->event(l->arg, ld->evs[i].job,
		    ld->evs[i].rank, &ld->evs[i].ev, ld->evs[i].node,
		    ld->evs[i].detail) == -1)
			rc = -1;
		free(ld->evs[i].job);
		free(ld->evs[i].node);
		free(ld->evs[i].detail);
	}
	free(ld->evs);
	ld->evs = NULL;
	ld->nev = ld->cap = 0;
	return (rc);
}

/* A row of an agent value a watch told of: the latest (the watch tells in
 * revision order), to the loader. */
static int
es_apply_agent_row(void *arg, const char *node, uint64_t boot_id,
    uint64_t seq)
{
	struct es_load	*ld = arg;

	if (esa_known(&ld->s->agents, node, boot_id, seq, ld->rev) == -1)
		return (-1);
	return (ld->l->agent(ld->l->arg, node, boot_id, seq));
}

/*
 * Copies the job named at the start of rel (up to its next '/') into job.
 * Returns 0, or -1 if it is no job's name.
 */
static int
es_apply_job(const char *rel, char *job, size_t len)
{
	const char	*end = strchr(rel, '/');
	size_t		 n = end != NULL ? (size_t)(end - rel) : strlen(rel);

	if (n == 0 || n >= len)
		return (-1);
	memcpy(job, rel, n);
	job[n] = '\0';
	return (0);
}

/*
 * Applies one key a watch of the prefix told of (value NULL: deleted, else
 * put at revision rev) through l, as es_load() reads it: a batch's events
 * (a repeat of one the model holds is the loader's to drop), ranks' rows
 * and journal entries, an agent value's rows, a batch of nodes' rows or
 * of view rows, the generation counter, a job's or a window's row; a
 * job's row, a window or a batch gone.  Returns 0 (a key sent alone, once
 * all before it landed), 1 (a batch value: es_pump() sends several side
 * by side), or -1 if it cannot alone: a key of the layout before, or of
 * no kind known here, or one the loader cannot follow (the caller loads
 * the whole store again).
 */
static int
es_apply_key(void *arg, const char *key, const char *value, size_t len,
    int64_t rev, const struct store_loader *l)
{
	struct etcd_store	*s = arg;
	struct es_load		 ld;
	struct es_load_views	 lv;
	const char		*rel, *p;
	char			 job[ETCD_KEY_MAX], *end;
	unsigned long		 id;
	int			 rc, t;

	memset(&ld, 0, sizeof(ld));
	ld.l = l;
	ld.s = s;
	ld.rev = rev;
	ld.change = 1;
	ld.prefix_len = strlen(s->e->prefix);
	if (strncmp(key, s->e->prefix, ld.prefix_len) != 0)
		return (-1);
	rel = key + ld.prefix_len;
	if (strncmp(rel, "evbatch/", 8) == 0) {
		if (value == NULL)
			return (es_apply_job(rel + 8, job, sizeof(job)) == -1 ?
			    -1 : l->gone(l->arg, ROW_EVENTS, job, 0));
		rc = es_load_batch(&ld, key, value, len, NULL);
		/* Sent beside others (es_pump()): they land in any order. */
		return (es_load_events(&ld, rc) == 0 ? 1 : -1);
	}
	if (strncmp(rel, "agbatch/", 8) == 0) {
		/* An older value is deleted once a snapshot holds its rows. */
		if (value == NULL)
			return (0);
		return (esa_decode(rel, value, len, es_apply_agent_row,
		    es_load_agent_bad, &ld));
	}
	if (strncmp(rel, "nodebatch/", 10) == 0)
		return (value == NULL || l->nodes == NULL ? -1 :
		    es_load_nodes(&ld, key, value, len, NULL));
	for (t = 0; t < (int)(sizeof(es_view_kinds) /
	    sizeof(es_view_kinds[0])); t++) {
		p = es_view_kinds[t].kind;
		if (strncmp(rel, p, strlen(p)) != 0 || rel[strlen(p)] != '/')
			continue;
		lv.ld = &ld;
		lv.kind = p;
		lv.table = es_view_kinds[t].table;
		lv.prefix_len = ld.prefix_len + strlen(p) + 1;
		return (value == NULL || l->view == NULL ? -1 :
		    es_load_view(&lv, key, value, len, NULL));
	}
	for (t = ROW_META; t <= ROW_WINDOWS; t++) {
		p = row_table_names[t];
		if (strncmp(rel, p, strlen(p)) != 0 || rel[strlen(p)] != '/')
			continue;
		rel += strlen(p) + 1;
		if (value != NULL) {
			ld.table = t;
			rc = es_load_kv(&ld, key, value, len, NULL);
			return (ld.newer ? -1 : rc);
		}
		if (t == ROW_META || es_apply_job(rel, job, sizeof(job)) == -1)
			return (-1);
		if (t == ROW_JOBS)
			return (strchr(rel, '/') != NULL ? -1 :
			    l->gone(l->arg, ROW_JOBS, job, 0));
		p = rel + strlen(job);
		if (*p != '/' || p[1] < '0' || p[1] > '9')
			return (-1);
		id = strtoul(p + 1, &end, 10);
		return (*end != '\0' || id > UINT32_MAX ? -1 :
		    l->gone(l->arg, ROW_WINDOWS, job, (uint32_t)id));
	}
	return (-1);
}

/* Applies one key a watch of the prefix told of (es_apply_key()); the
 * copy then reflects the store up to its revision.  Returns what
 * es_apply_key() does. */
static int
es_apply(void *arg, const char *key, const char *value, size_t len,
    int64_t rev, const struct store_loader *l)
{
	struct etcd_store	*s = arg;
	int			 rc;

	if ((rc = es_apply_key(arg, key, value, len, rev, l)) == -1)
		return (-1);
	if (rev > s->rev)
		s->rev = rev;
	return (rc);
}

/* Frees the store (not its client). */
static void
es_close(void *arg)
{
	struct etcd_store	*s = arg;
	struct es_commit	*q;

	if (s == NULL)
		return;
	/* Nobody waits for what is still in flight: dropped unanswered. */
	etcd_cancel_all(s->e);
	es_txns_free(s);
	while ((q = s->head) != NULL) {
		s->head = q->later;
		esa_rows_clear(&q->landing);
		json_decref(q->ops);
		free(q);
	}
	if (s->retry != NULL)
		event_free(s->retry);
	esa_forget(&s->agents);
	esb_clear(&s->evb);
	esb_seen_clear(&s->evb);
	es_jobstats_free(s);
	json_decref(s->ops);
	json_decref(s->index);
	free(s);
}

/* What store.c runs etcd with. */
static const struct store_backend store_etcd = {
	.name = "etcd",
	.close = es_close,
	.load = es_load,
	.begin = es_begin,
	.commit = es_commit,
	.commit_async = es_commit_async,
	.inflight = es_inflight,
	.abandon = es_abandon,
	.compact_due = es_compact_due,
	.compact_begin = es_compact_begin,
	.compact_end = es_compact_end,
	.rollback = es_rollback,
	.put_generation = es_put_generation,
	.put_job = es_put_job,
	.put_window = es_put_window,
	.put_rank = es_put_rank,
	.put_event = es_put_event,
	.put_journal = es_put_journal,
	.forget_job = es_forget_job,
	.put_agent = es_put_agent,
	.put_nodes = es_put_nodes,
	.put_view = es_put_view,
	.revision = es_revision,
	.unavailable = es_unavailable,
	.full = es_full,
	.apply = es_apply,
};

/*
 * Opens the store over client e (the caller keeps it, and frees it after
 * store_close()).  Writes need e->fence: leader.c sets it.  Returns NULL
 * with *why set on failure.
 */
struct store *
store_open_etcd(struct etcd *e, const char **why)
{
	struct etcd_store	*s;
	struct store		*st;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->ops = json_array()) == NULL ||
	    (s->index = json_object()) == NULL ||
	    (st = store_new(&store_etcd, s)) == NULL) {
		es_close(s);
		*why = "out of memory";
		return (NULL);
	}
	s->e = e;
	s->tailp = &s->head;
	/* Batch keys count on from the clock: a store opened again under the
	 * same fence never writes a key it wrote before. */
	s->evb.seq = (uint64_t)clock_wall_ns() / 1000;
	if (e->base != NULL &&
	    (s->retry = evtimer_new(e->base, es_retry_cb, s)) == NULL) {
		store_close(st);
		*why = "out of memory";
		return (NULL);
	}
	return (st);
}
