/*
 * The journal of committed events (docs/admin-api.md, events): every rank
 * event that changed something and every change of a window, each with a
 * revision, kept in memory for the event stream (http_events.c) in a ring of
 * COORD_JOURNAL_MAX entries and COORD_JOURNAL_BYTES_MAX bytes of text, in
 * the order of their revisions (which need not follow each other).
 *
 * Revisions count events one by one, from a base taken when the model is
 * made: the wall clock in microseconds, or the highest revision the store
 * holds if that is higher.  A revision of an earlier run is so below every
 * revision of a later one (a coordinator takes far fewer than a million
 * events a second).  Where the store keeps the journal (etcd: each event's
 * revision stored with it, store.h), a coordinator that loads the model
 * loads its events at their revisions (journal_load.c), so that a client
 * resumes on any coordinator after any failover; else (SQLite) a client
 * resuming from an earlier run is told that what it asks for is no longer
 * kept.  Events are staged as they are applied (in the open batch of the
 * store, or in a change) and published once the store committed them: a
 * follower never sees an event that a crash could undo.  A revision staged
 * and not committed is never handed out again (the store may hold it yet).
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "log.h"
#include "model.h"
#include "store.h"
#include "utf8.h"

/* The i-th entry kept, from the oldest. */
#define JOURNAL_AT(j, i)	(&(j)->ring[((j)->head + (i)) % (j)->cap])

_Static_assert(STORE_JOURNAL_RANK == JOURNAL_RANK &&
    STORE_JOURNAL_WINDOW == JOURNAL_WINDOW, "journal entry types");

/* Frees what entry e holds, and forgets it. */
static void
journal_drop(struct journal *j, struct journal_entry *e)
{
	if (e->detail != NULL) {
		j->bytes -= strlen(e->detail) + 1;
		free(e->detail);
	}
	if (e->job != NULL)
		e->job->journal_refs--;
	memset(e, 0, sizeof(*e));
}

/* Forgets the oldest entry: every event from the one after it is kept. */
static void
journal_drop_oldest(struct journal *j)
{
	struct journal_entry	*e = JOURNAL_AT(j, 0);

	if (e->rev + 1 > j->first)
		j->first = e->rev + 1;
	journal_drop(j, e);
	j->head = (j->head + 1) % j->cap;
	j->n--;
}

/* Forgets every entry. */
static void
journal_drop_all(struct journal *j)
{
	size_t	 i;

	if (j->ring != NULL)
		for (i = 0; i < j->n; i++)
			journal_drop(j, JOURNAL_AT(j, i));
	j->head = j->n = 0;
}

/* Returns the ring, made at the first entry; NULL out of memory. */
static struct journal_entry *
journal_ring(struct journal *j)
{
	if (j->ring == NULL)
		j->ring = calloc(j->cap, sizeof(*j->ring));
	return (j->ring);
}

/* Makes the journal of c, its revisions starting past base.  Returns 0 or
 * -1. */
int
journal_init(struct coord *c, uint64_t base)
{
	struct journal	*j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return (-1);
	j->cap = c->conf.events_journal_max != 0 ?
	    c->conf.events_journal_max : COORD_JOURNAL_MAX;
	j->first = base + 1;
	j->published = j->staged = base;
	TAILQ_INIT(&j->followers);
	c->journal = j;
	return (0);
}

/* Frees the journal (its followers are gone with the admin API). */
void
journal_free(struct coord *c)
{
	struct journal	*j = c->journal;

	if (j == NULL)
		return;
	if (j->heartbeat != NULL)
		event_free(j->heartbeat);
	if (j->wake != NULL)
		event_free(j->wake);
	journal_drop_all(j);
	free(j->ring);
	free(j);
	c->journal = NULL;
}

/*
 * Forgets every event, as the model they speak of goes (a coordinator that
 * stops leading, or loads again): revisions go on from the wall clock now,
 * above any handed out, and a follower's job is gone.
 */
void
journal_reset(struct coord *c)
{
	struct journal	*j = c->journal;
	uint64_t	 base;

	if (j == NULL)
		return;
	journal_drop_all(j);
	base = (uint64_t)clock_wall_ns() / 1000;
	if (base <= j->staged)
		base = j->staged + 1;
	j->first = base + 1;
	j->published = j->staged = base;
}

/* Returns the revision of the last event committed. */
uint64_t
journal_revision(const struct coord *c)
{
	return (c->journal != NULL ? c->journal->published : 0);
}

/* Returns the oldest revision from which every event is kept. */
uint64_t
journal_first(const struct coord *c)
{
	return (c->journal != NULL ? c->journal->first : 1);
}

/* Returns the oldest revision from which every event of job is kept: a
 * loaded job whose stored history was rewritten keeps none from before. */
uint64_t
journal_job_first(const struct coord *c, const struct job *job)
{
	uint64_t	 first = journal_first(c);

	return (job->journal_floor >= first ? job->journal_floor + 1 : first);
}

/* Returns a new entry of job at rev, the newest, making room by forgetting
 * the oldest; NULL out of memory. */
static struct journal_entry *
journal_append(struct journal *j, struct job *job, uint64_t rev)
{
	struct journal_entry	*e;

	if (journal_ring(j) == NULL)
		return (NULL);
	if (j->n == j->cap)
		journal_drop_oldest(j);
	e = JOURNAL_AT(j, j->n++);
	e->rev = rev;
	e->job = job;
	job->journal_refs++;
	if (rev > job->journal_last)
		job->journal_last = rev;
	return (e);
}

/*
 * Returns a new staged entry of job (its revision the next, taken even
 * out of memory); NULL out of memory.
 */
static struct journal_entry *
journal_stage(struct coord *c, struct job *job)
{
	struct journal	*j = c->journal;

	if (j == NULL)
		return (NULL);
	return (journal_append(j, job, ++j->staged));
}

/* Returns the revision the next event staged gets. */
uint64_t
journal_next_revision(const struct coord *c)
{
	return (c->journal != NULL ? c->journal->staged + 1 : 0);
}

/* Keeps a copy of text (at most COORD_JOURNAL_DETAIL_MAX bytes) in e,
 * forgetting the oldest entries while the text kept is over its bound. */
static void
journal_detail(struct coord *c, struct journal_entry *e, const char *text)
{
	struct journal	*j = c->journal;
	size_t		 len;

	if (text == NULL || *text == '\0')
		return;
	len = strlen(text);
	if (len > COORD_JOURNAL_DETAIL_MAX)
		len = COORD_JOURNAL_DETAIL_MAX;
	if ((e->detail = malloc(len + 1)) == NULL)
		return;
	memcpy(e->detail, text, len);
	e->detail[len] = '\0';
	utf8_cut_partial(e->detail);
	j->bytes += strlen(e->detail) + 1;
	while (j->bytes > COORD_JOURNAL_BYTES_MAX && JOURNAL_AT(j, 0) != e)
		journal_drop_oldest(j);
}

/* Stores entry e, which is no stored event, in the open transaction (where
 * the store keeps the journal). */
static void
journal_store(struct coord *c, const struct journal_entry *e)
{
	struct store_journal	 sj;

	if (c->store == NULL || !store_keeps_journal(c->store))
		return;
	memset(&sj, 0, sizeof(sj));
	sj.rev = e->rev;
	sj.job = e->job->name;
	sj.type = e->type;
	sj.what = e->what;
	sj.rank = e->rank;
	sj.window = e->window;
	sj.step = e->step;
	sj.stop = e->stop;
	sj.time_ns = e->time_ns;
	sj.generation = e->generation;
	sj.node = e->node != NULL ? e->node->name : NULL;
	sj.detail = e->detail;
	if (store_put_journal(c->store, &sj) == -1)
		log_warnx("%s: job %s: cannot store the revision of event %"
		    PRIu64 ": a coordinator that loads the store will not "
		    "serve it", __func__, e->job->name, e->rev);
}

/* Stages rank r's event ev, reported by node (detail: its output directory
 * or error, or NULL). */
void
journal_stage_rank(struct coord *c, struct job *job, const struct rank *r,
    const struct rank_event *ev, struct node *node, const char *detail)
{
	struct journal_entry	*e;

	if ((e = journal_stage(c, job)) == NULL)
		return;
	e->type = JOURNAL_RANK;
	e->what = (uint8_t)ev->kind;
	e->rank = r->rank;
	e->window = ev->window_id;
	e->step = ev->step;
	e->time_ns = ev->time_ns;
	e->node = node;
	journal_detail(c, e, detail);
	/* Any other kind is stored as an event, with its revision. */
	if (ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED ||
	    ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_DETACHED)
		journal_store(c, e);
}

/* Stages a change of window w of job to what (a JOURNAL_WINDOW_*), at
 * generation gen. */
void
journal_stage_window(struct coord *c, struct job *job, const struct window *w,
    int what, uint64_t gen)
{
	journal_stage_window_at(c, job, w, what, gen, clock_wall_ns());
}

/* journal_stage_window() of a change made at time_ns (wall clock). */
void
journal_stage_window_at(struct coord *c, struct job *job,
    const struct window *w, int what, uint64_t gen, int64_t time_ns)
{
	journal_stage_window_detail(c, job, w, what, gen, time_ns, NULL);
}

/* journal_stage_window_at() with a detail: a grown window's new ranks. */
void
journal_stage_window_detail(struct coord *c, struct job *job,
    const struct window *w, int what, uint64_t gen, int64_t time_ns,
    const char *detail)
{
	struct journal_entry	*e;

	if ((e = journal_stage(c, job)) == NULL)
		return;
	e->type = JOURNAL_WINDOW;
	e->what = (uint8_t)what;
	e->window = w->id;
	e->step = w->start_step;
	e->stop = w->stop_step;
	e->generation = gen;
	e->time_ns = time_ns;
	journal_detail(c, e, detail);
	journal_store(c, e);
}

/* The detail of window w's "done": the nodes' reason if they refused it,
 * else NULL. */
const char *
journal_window_refused(const struct window *w)
{
	return (w->refused ? w->refused_why : NULL);
}

/* Tells the layers above that events were published (their followers). */
static void
journal_wake(struct coord *c)
{
	if (c->hooks != NULL && c->hooks->events_published != NULL)
		c->hooks->events_published(c);
}

/* The store committed what was staged: followers get it. */
void
journal_publish(struct coord *c)
{
	struct journal	*j = c->journal;

	if (j == NULL || j->staged == j->published)
		return;
	j->published = j->staged;
	journal_wake(c);
}

/* Returns the revision of the last event staged. */
uint64_t
journal_staged(const struct coord *c)
{
	return (c->journal != NULL ? c->journal->staged : 0);
}

/* The store committed what was staged up to rev: followers get it. */
void
journal_publish_to(struct coord *c, uint64_t rev)
{
	struct journal	*j = c->journal;

	if (j == NULL)
		return;
	if (rev > j->staged)
		rev = j->staged;
	if (rev <= j->published)
		return;
	j->published = rev;
	journal_wake(c);
}

/* The store did not commit what was staged: forgotten, its revisions not
 * handed out again. */
void
journal_discard(struct coord *c)
{
	struct journal	*j = c->journal;

	if (j == NULL)
		return;
	while (j->n > 0 && JOURNAL_AT(j, j->n - 1)->rev > j->published)
		journal_drop(j, JOURNAL_AT(j, --j->n));
}

/* Returns the index of the first of the entries [0, hi) (in order) at or
 * after revision rev. */
static size_t
journal_lower(const struct journal *j, size_t hi, uint64_t rev)
{
	size_t	 lo = 0, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (JOURNAL_AT(j, mid)->rev < rev)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo);
}

/* Returns the first entry published from revision rev on, or NULL when
 * there is none (yet). */
const struct journal_entry *
journal_next(const struct coord *c, uint64_t rev)
{
	const struct journal		*j = c->journal;
	const struct journal_entry	*e;
	size_t				 lo;

	if (j == NULL || j->n == 0)
		return (NULL);
	lo = journal_lower(j, j->n, rev);
	if (lo == j->n || (e = JOURNAL_AT(j, lo))->rev > j->published)
		return (NULL);
	return (e);
}

/* A job is freed: its entries stay (the revisions count) but name no job. */
void
journal_forget_job(struct coord *c, struct job *job)
{
	struct journal	*j = c->journal;
	size_t		 i;

	if (j == NULL || j->ring == NULL || job->journal_refs == 0)
		return;
	for (i = 0; i < j->n; i++)
		if (JOURNAL_AT(j, i)->job == job)
			JOURNAL_AT(j, i)->job = NULL;
	job->journal_refs = 0;
}

/* A load restores entries (journal_restore()): none kept yet, so that the
 * first one forgotten meanwhile says where what is kept starts. */
void
journal_restore_begin(struct coord *c)
{
	if (c->journal != NULL) {
		journal_drop_all(c->journal);
		c->journal->first = 0;
	}
}

/*
 * Keeps an entry loaded from the store, as committed (journal_load.c hands
 * them in the order of their revisions); one of a job not loaded is
 * skipped.  Returns 0 or -1.
 */
int
journal_restore(struct coord *c, const struct store_journal *sj)
{
	struct journal		*j = c->journal;
	struct journal_entry	*e;
	struct job		*job;

	if (j == NULL)
		return (-1);
	if ((job = schedule_job_find(c, sj->job)) == NULL)
		return (0);
	if ((e = journal_append(j, job, sj->rev)) == NULL)
		return (-1);
	e->type = (uint8_t)sj->type;
	e->what = (uint8_t)sj->what;
	e->rank = sj->rank;
	e->window = sj->window;
	e->step = sj->step;
	e->stop = sj->stop;
	e->time_ns = sj->time_ns;
	e->generation = sj->generation;
	e->node = sj->node != NULL ? schedule_node_find(c, sj->node) : NULL;
	journal_detail(c, e, sj->detail);
	return (0);
}

/*
 * Keeps entries of the store's (v, n of them, in the order of their
 * revisions) at their places among those kept: a follower's copy takes
 * them as the watch of the store tells of them, and commits land nearly,
 * not strictly, in that order.  One of a revision kept already, older than
 * every entry kept, or of a job not in the model is skipped.  The entries
 * kept after the first new one and the new ones are merged: the cost is
 * theirs, not each new entry's times theirs.  Returns 0 or -1.
 */
int
journal_insert(struct coord *c, const struct store_journal *const *v,
    size_t n)
{
	struct journal		*j = c->journal;
	struct journal_entry	*tmp;
	size_t			 i, t, lo, old, a, b, k, added = 0;
	uint64_t		 last;

	if (j == NULL)
		return (-1);
	/* The ones after every entry kept (v[t, n)) go last, in order. */
	last = j->n > 0 ? JOURNAL_AT(j, j->n - 1)->rev : 0;
	for (t = 0; t < n && v[t]->rev <= last; t++)
		;
	k = t;				/* v[0, k): among those kept */
	if (k > 0 && (j->n - journal_lower(j, j->n, v[0]->rev)) + k >
	    j->cap / 2)
		k = 0;			/* that far back: not kept */
	while (k > 0 && j->n + k > j->cap)
		journal_drop_oldest(j);
	old = j->n;
	lo = k > 0 ? journal_lower(j, old, v[0]->rev) : old;
	for (i = 0; i < k; i++) {
		if (v[i]->rev < j->first || schedule_job_find(c, v[i]->job) ==
		    NULL || (i > 0 && v[i]->rev == v[i - 1]->rev))
			continue;
		a = journal_lower(j, old, v[i]->rev);
		if (a < old && JOURNAL_AT(j, a)->rev == v[i]->rev)
			continue;
		if (journal_restore(c, v[i]) == -1)
			return (-1);
		added++;
	}
	if (added > 0) {
		/* [lo, old) and [old, n): two sorted runs, merged. */
		if ((tmp = calloc(j->n - lo, sizeof(*tmp))) == NULL)
			return (-1);
		for (a = lo, b = old, i = 0; a < old || b < j->n; i++)
			tmp[i] = *JOURNAL_AT(j, b == j->n || (a < old &&
			    JOURNAL_AT(j, a)->rev < JOURNAL_AT(j, b)->rev) ?
			    a++ : b++);
		for (i = 0; i < j->n - lo; i++)
			*JOURNAL_AT(j, lo + i) = tmp[i];
		free(tmp);
	}
	for (i = t; i < n; i++) {
		if (i > t && v[i]->rev == v[i - 1]->rev)
			continue;
		if (journal_restore(c, v[i]) == -1)
			return (-1);
	}
	return (0);
}

/*
 * The load is over: every event above floor that the store holds was
 * restored; revisions go on above the highest of them and above base.
 */
void
journal_restored(struct coord *c, uint64_t floor, uint64_t base)
{
	struct journal	*j = c->journal;
	uint64_t	 last;

	if (j == NULL)
		return;
	if (floor + 1 > j->first)
		j->first = floor + 1;
	last = j->n > 0 ? JOURNAL_AT(j, j->n - 1)->rev : 0;
	j->staged = last > base ? last : base;
	j->published = j->staged;
}

/* A follower's copy: its revision is the last the store holds (the
 * leader's), not one of its own. */
void
journal_at_store(struct coord *c)
{
	struct journal	*j = c->journal;

	if (j == NULL)
		return;
	j->staged = j->n > 0 ? JOURNAL_AT(j, j->n - 1)->rev :
	    (j->first > 0 ? j->first - 1 : 0);
	j->published = j->staged;
}
