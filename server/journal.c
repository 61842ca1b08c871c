/*
 * The journal of committed events (docs/admin-api.md, events): every rank
 * event that changed something and every change of a window, each with a
 * revision, kept in memory for the event stream (http_events.c) in a ring of
 * COORD_JOURNAL_MAX entries and COORD_JOURNAL_BYTES_MAX bytes of text.
 *
 * Revisions count events one by one, from a base taken at start: the wall
 * clock in microseconds.  A revision of an earlier run is so below every
 * revision of a later one (a coordinator takes far fewer than a million
 * events a second), and a client resuming from it is told that what it asks
 * for is no longer kept.  Events are staged as they are applied (in the open
 * batch of the store, or in a change) and published once the store committed
 * them: a follower never sees an event that a crash could undo.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "http.h"
#include "log.h"
#include "model.h"
#include "utf8.h"

/* The revision an entry of rev has in the ring. */
#define JOURNAL_SLOT(j, rev)	(&(j)->ring[(rev) % (j)->cap])

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
	uint64_t	 rev;

	if (j == NULL)
		return;
	if (j->heartbeat != NULL)
		event_free(j->heartbeat);
	if (j->ring != NULL)
		for (rev = j->first; rev <= j->staged; rev++)
			journal_drop(j, JOURNAL_SLOT(j, rev));
	free(j->ring);
	free(j);
	c->journal = NULL;
}

/*
 * Forgets every event, as the model they speak of goes (a coordinator that
 * stops leading): revisions go on from the wall clock now, above any handed
 * out, and a follower's job is gone.
 */
void
journal_reset(struct coord *c)
{
	struct journal	*j = c->journal;
	uint64_t	 rev, base;

	if (j == NULL)
		return;
	if (j->ring != NULL)
		for (rev = j->first; rev <= j->staged; rev++)
			journal_drop(j, JOURNAL_SLOT(j, rev));
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

/* Returns the oldest revision kept (past the last one when none is). */
uint64_t
journal_first(const struct coord *c)
{
	return (c->journal != NULL ? c->journal->first : 1);
}

/*
 * Returns a new staged entry of job (its revision the next), making room by
 * forgetting the oldest; NULL out of memory.
 */
static struct journal_entry *
journal_stage(struct coord *c, struct job *job)
{
	struct journal		*j = c->journal;
	struct journal_entry	*e;

	if (j == NULL)
		return (NULL);
	if (j->ring == NULL &&
	    (j->ring = calloc(j->cap, sizeof(*j->ring))) == NULL)
		return (NULL);
	while (j->staged + 1 - j->first >= j->cap)
		journal_drop(j, JOURNAL_SLOT(j, j->first++));
	e = JOURNAL_SLOT(j, j->staged + 1);
	e->rev = ++j->staged;
	e->job = job;
	job->journal_refs++;
	return (e);
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
	while (j->bytes > COORD_JOURNAL_BYTES_MAX && j->first < e->rev)
		journal_drop(j, JOURNAL_SLOT(j, j->first++));
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
}

/* Stages a change of window w of job to what (a JOURNAL_WINDOW_*), at
 * generation gen. */
void
journal_stage_window(struct coord *c, struct job *job, const struct window *w,
    int what, uint64_t gen)
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
	e->time_ns = clock_wall_ns();
}

/* The store committed what was staged: followers get it. */
void
journal_publish(struct coord *c)
{
	struct journal	*j = c->journal;

	if (j == NULL || j->staged == j->published)
		return;
	j->published = j->staged;
	events_wake(c);
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
	events_wake(c);
}

/* The store did not commit what was staged: forgotten. */
void
journal_discard(struct coord *c)
{
	struct journal	*j = c->journal;

	if (j == NULL)
		return;
	for (; j->staged > j->published; j->staged--)
		if (j->staged >= j->first)
			journal_drop(j, JOURNAL_SLOT(j, j->staged));
	if (j->first > j->staged + 1)
		j->first = j->staged + 1;
}

/* Returns the entry of revision rev, or NULL when it is not kept or not
 * published. */
const struct journal_entry *
journal_get(const struct coord *c, uint64_t rev)
{
	const struct journal	*j = c->journal;

	if (j == NULL || j->ring == NULL || rev < j->first ||
	    rev > j->published)
		return (NULL);
	return (JOURNAL_SLOT(j, rev));
}

/* A job is freed: its entries stay (the revisions count) but name no job. */
void
journal_forget_job(struct coord *c, struct job *job)
{
	struct journal	*j = c->journal;
	uint64_t	 rev;

	if (j == NULL || j->ring == NULL || job->journal_refs == 0)
		return;
	for (rev = j->first; rev <= j->staged; rev++)
		if (JOURNAL_SLOT(j, rev)->job == job)
			JOURNAL_SLOT(j, rev)->job = NULL;
	job->journal_refs = 0;
}
