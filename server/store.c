/*
 * What every backend of the store shares: the transaction a change opens and
 * the batch of agents' events that stays open across reads
 * (store_batch_begin()) until its owner ends it (store_batch_end()), before
 * any other transaction.  The rows themselves go to the backend: SQLite
 * (store_sqlite.c) or etcd (store_etcd.c).
 */

#include <stdlib.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "store.h"

struct store {
	const struct store_backend	*be;
	void				*impl;
	int				 in_tx;
	int				 batch;		/* in_tx is a batch's */
};

/* Wraps a backend's open store.  Returns NULL out of memory. */
struct store *
store_new(const struct store_backend *be, void *impl)
{
	struct store	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return (NULL);
	s->be = be;
	s->impl = impl;
	return (s);
}

/* Closes the store, rolling back an open transaction. */
void
store_close(struct store *s)
{
	if (s == NULL)
		return;
	if (s->in_tx)
		store_rollback(s);
	s->be->close(s->impl);
	free(s);
}

/* Returns NULL, or why the store refuses writes for now. */
const char *
store_unavailable(const struct store *s)
{
	if (s == NULL || s->be->unavailable == NULL)
		return (NULL);
	return (s->be->unavailable(s->impl));
}

/* Reads the whole store, each row handed to the loader. */
int
store_load(struct store *s, const struct store_loader *l)
{
	return (s->be->load(s->impl, l));
}

/*
 * Hands what one key of the store holds now (value NULL: deleted), as a
 * watch of the store told of it at revision rev, to l as store_load()
 * would.  Returns 0 (everything committed before that key has landed), 1
 * (what was committed just before it may land after it: a batch of
 * values sent side by side), or -1 if the backend cannot apply it alone
 * (read the store again whole).
 */
int
store_apply(struct store *s, const char *key, const char *value, size_t len,
    int64_t rev, const struct store_loader *l)
{
	if (s->be->apply == NULL)
		return (-1);
	return (s->be->apply(s->impl, key, value, len, rev, l));
}

/*
 * Starts a transaction.  Refused (-1) while an event batch is open: a change
 * never joins one, its owner ends it first (intake_flush()).
 */
int
store_begin(struct store *s)
{
	if (s->batch) {
		log_warnx("%s: an event batch is open", __func__);
		return (-1);
	}
	if (s->in_tx)
		return (0);
	if (s->be->begin(s->impl) == -1)
		return (-1);
	s->in_tx = 1;
	return (0);
}

/* Commits the open transaction: durable once this returns 0. */
int
store_commit(struct store *s)
{
	if (!s->in_tx)
		return (0);
	if (s->be->commit(s->impl) == -1) {
		store_rollback(s);
		return (-1);
	}
	s->in_tx = s->batch = 0;
	return (0);
}

/*
 * Commits the open transaction without waiting where the backend can:
 * done(arg, 0) once it is durable, done(arg, -1) if it turned out not to
 * be (then the model may hold what was not stored: etcd's leader reloads
 * it).  A backend that blocks commits now and calls done(arg, 0) before
 * returning.  Returns 0, or -1 if the store refused it now (rolled back,
 * done not called).
 */
int
store_commit_async(struct store *s, void (*done)(void *, int), void *arg)
{
	if (!s->in_tx || s->be->commit_async == NULL) {
		if (store_commit(s) == -1)
			return (-1);
		if (done != NULL)
			done(arg, 0);
		return (0);
	}
	if (s->be->commit_async(s->impl, done, arg) == -1) {
		store_rollback(s);
		return (-1);
	}
	s->in_tx = s->batch = 0;
	return (0);
}

/* Returns how many commits are not answered yet. */
size_t
store_inflight(const struct store *s)
{
	if (s == NULL || s->be->inflight == NULL)
		return (0);
	return (s->be->inflight(s->impl));
}

/* Runs base's loop until every commit is answered, for at most ms. */
void
store_drain(struct store *s, struct event_base *base, int ms)
{
	uint64_t	 end = clock_mono_ns() + (uint64_t)ms * 1000000;

	while (store_inflight(s) > 0 && clock_mono_ns() < end)
		event_base_loop(base, EVLOOP_ONCE);
}

/* Gives up every commit in flight: each done function is told -1. */
void
store_abandon(struct store *s)
{
	if (s != NULL && s->be->abandon != NULL)
		s->be->abandon(s->impl);
}

/*
 * Returns 1 if the backend would have job's history rewritten whole (its
 * ranks' rows and events, between store_compact_begin() and
 * store_compact_end() in one transaction), replacing all it stored of it.
 */
int
store_compact_due(const struct store *s, const char *job)
{
	return (s != NULL && s->be->compact_due != NULL &&
	    s->be->compact_due(s->impl, job));
}

/* Starts the rewrite of job's history, in the open transaction. */
int
store_compact_begin(struct store *s, const char *job)
{
	return (s->be->compact_begin != NULL ?
	    s->be->compact_begin(s->impl, job) : 0);
}

/* Ends it: what was stored of job before the rewrite goes with it. */
int
store_compact_end(struct store *s, const char *job)
{
	return (s->be->compact_end != NULL ?
	    s->be->compact_end(s->impl, job) : 0);
}

/* Abandons the open transaction. */
void
store_rollback(struct store *s)
{
	if (!s->in_tx)
		return;
	s->be->rollback(s->impl);
	s->in_tx = s->batch = 0;
}

/*
 * Opens a batch of event writes: a transaction that stays open across reads
 * until its owner ends it (store_batch_end()) and commits it.  Joins the open
 * batch if there is one.  Returns 0 or -1.
 */
int
store_batch_begin(struct store *s)
{
	if (s->batch)
		return (0);
	if (store_begin(s) == -1)
		return (-1);
	s->batch = 1;
	return (0);
}

/* Returns 1 if an event batch is open. */
int
store_batch_open(const struct store *s)
{
	return (s != NULL && s->batch);
}

/*
 * Returns 1 if an event batch is open and the backend would rather commit it
 * before it takes more (etcd: a commit is a txn per 128 operations, and the
 * loop waits for all of them).
 */
int
store_batch_full(const struct store *s)
{
	return (s->batch && s->be->full != NULL && s->be->full(s->impl));
}

/*
 * Ends the open event batch: its transaction, still open, is the caller's to
 * commit or roll back; store_begin() takes a new one.
 */
void
store_batch_end(struct store *s)
{
	s->batch = 0;
}

/*
 * Deletes the ranks and events of a job nobody scheduled (never one in the
 * jobs table), in one transaction of its own unless one is open.  Returns 0
 * or -1.
 */
int
store_forget_job(struct store *s, const char *job)
{
	int	 own = !s->in_tx;

	/* Inside an open batch, with it. */
	if (own && store_begin(s) == -1)
		return (-1);
	if (s->be->forget_job(s->impl, job, 0) == -1) {
		if (own)
			store_rollback(s);
		return (-1);
	}
	return (own ? store_commit_async(s, NULL, NULL) : 0);
}

/* Deletes everything stored of a job (its row, windows, ranks and events),
 * in the open transaction.  Returns 0 or -1. */
int
store_drop_job(struct store *s, const char *job)
{
	return (s->be->forget_job(s->impl, job, 1));
}

/* Stores the generation counter. */
int
store_put_generation(struct store *s, uint64_t gen)
{
	return (s->be->put_generation(s->impl, gen));
}

/* Stores a job's own fields (not its windows or ranks). */
int
store_put_job(struct store *s, const struct store_job *j)
{
	return (s->be->put_job(s->impl, j));
}

/* Stores one window of a job. */
int
store_put_window(struct store *s, const struct store_window *w)
{
	return (s->be->put_window(s->impl, w));
}

/* Stores a rank's last known state. */
int
store_put_rank(struct store *s, const struct store_rank *r)
{
	return (s->be->put_rank(s->impl, r));
}

/*
 * Stores an event once: a second event with the same (job, rank, window, kind)
 * is ignored.  rev is its revision in the event stream (0: none), kept where
 * the backend keeps the journal.  Returns 1 if stored, 0 if it was there
 * already, -1 on error.
 */
int
store_put_event(struct store *s, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail,
    uint64_t rev)
{
	return (s->be->put_event(s->impl, job, rank, ev, node, detail, rev));
}

/* Returns 1 if the store keeps the event stream's revisions. */
int
store_keeps_journal(const struct store *s)
{
	return (s->be->put_journal != NULL);
}

/* Stores a journal entry that is no stored event (store.h); nothing where
 * the journal is not kept.  Returns 0 or -1. */
int
store_put_journal(struct store *s, const struct store_journal *j)
{
	if (s->be->put_journal == NULL)
		return (0);
	return (s->be->put_journal(s->impl, j));
}

/* Stores the highest committed event seq of a node's agent process. */
int
store_put_agent(struct store *s, const char *node, uint64_t boot_id,
    uint64_t seq)
{
	return (s->be->put_agent(s->impl, node, boot_id, seq));
}

/* Returns 1 if the store keeps nodes' rows for followers (etcd). */
int
store_keeps_nodes(const struct store *s)
{
	return (s != NULL && s->be->put_nodes != NULL);
}

/* Stores a batch of nodes' rows named name, as followers show them
 * (nodeview.c); nothing where no follower reads them.  Returns 0 or -1. */
int
store_put_nodes(struct store *s, const char *name, const char *text)
{
	if (s->be->put_nodes == NULL)
		return (0);
	return (s->be->put_nodes(s->impl, name, text));
}

/* Stores a view row of kind (STORE_VIEW_*) named name, as followers show
 * it; nothing where no follower reads them.  Returns 0 or -1. */
int
store_put_view(struct store *s, const char *kind, const char *name,
    const char *text)
{
	if (s->be->put_view == NULL)
		return (0);
	return (s->be->put_view(s->impl, kind, name, text));
}

/* Returns the store's revision this coordinator's state reflects (the last
 * load's or landed commit's, etcd), 0 where the store has none (SQLite). */
int64_t
store_revision(const struct store *s)
{
	if (s == NULL || s->be->revision == NULL)
		return (0);
	return (s->be->revision(s->impl));
}
