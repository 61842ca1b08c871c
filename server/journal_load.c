/*
 * The journal rebuilt from the store at a load (journal.c): the store hands
 * its journal entries in no order (store.h, struct store_journal); the last
 * COORD_JOURNAL_MAX by revision are kept, in at most twice that much
 * memory however many the store holds, then restored in order, so that a
 * coordinator that takes the lead serves the event stream at the revisions
 * the one before it gave.  A job's floor (its history rewritten) is kept
 * apart, for the job.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "log.h"
#include "store.h"

/* The highest revision taken: what JavaScript reads exactly. */
#define JOURNAL_LOAD_REV_MAX	((UINT64_C(1) << 53) - 1)

/* One entry loaded, its strings its own. */
struct journal_loaded {
	struct store_journal	 sj;
	char			*job, *node, *detail;
};

/* A job's floor. */
struct journal_floor {
	char			*job;
	uint64_t		 rev;
};

struct journal_loading {
	struct journal_loaded	*v;
	size_t			 n, cap;	/* cap: twice what is kept */
	uint64_t		 floor;		/* the highest one forgotten */
	struct journal_floor	*floors;
	size_t			 nfloors;
	size_t			 nbad;
};

/* Frees what entry l holds. */
static void
journal_load_clear(struct journal_loaded *l)
{
	free(l->job);
	free(l->node);
	free(l->detail);
}

/* Frees what a load collected, if one was under way. */
void
journal_load_free(struct coord *c)
{
	struct journal_loading	*jl;
	size_t			 i;

	if (c->journal == NULL || (jl = c->journal->loading) == NULL)
		return;
	for (i = 0; i < jl->n; i++)
		journal_load_clear(&jl->v[i]);
	for (i = 0; i < jl->nfloors; i++)
		free(jl->floors[i].job);
	free(jl->v);
	free(jl->floors);
	free(jl);
	c->journal->loading = NULL;
}

/* Orders entries by revision, for qsort(). */
static int
journal_load_cmp(const void *a, const void *b)
{
	const struct journal_loaded	*x = a, *y = b;

	return (x->sj.rev < y->sj.rev ? -1 : x->sj.rev > y->sj.rev);
}

/* Keeps the newest keep entries, the floor raised past those forgotten. */
static void
journal_load_trim(struct journal_loading *jl, size_t keep)
{
	size_t	 i, drop;

	if (jl->n <= keep)
		return;
	qsort(jl->v, jl->n, sizeof(*jl->v), journal_load_cmp);
	drop = jl->n - keep;
	for (i = 0; i < drop; i++) {
		if (jl->v[i].sj.rev > jl->floor)
			jl->floor = jl->v[i].sj.rev;
		journal_load_clear(&jl->v[i]);
	}
	memmove(jl->v, jl->v + drop, keep * sizeof(*jl->v));
	jl->n = keep;
}

/* Returns 1 if sj reads as an entry the journal could have staged. */
static int
journal_load_valid(const struct store_journal *sj)
{
	if (sj->rev == 0 || sj->rev > JOURNAL_LOAD_REV_MAX || sj->job == NULL)
		return (0);
	switch (sj->type) {
	case STORE_JOURNAL_FLOOR:
		return (1);
	case STORE_JOURNAL_RANK:
		return (sj->what >= DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED &&
		    sj->what <= DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE &&
		    sj->rank >= 0);
	case STORE_JOURNAL_WINDOW:
		return (sj->what >= JOURNAL_WINDOW_SCHEDULED &&
		    sj->what <= JOURNAL_WINDOW_GROWN);
	}
	return (0);
}

/* Keeps a job's floor.  Returns 0 or -1. */
static int
journal_load_floor(struct journal_loading *jl, const struct store_journal *sj)
{
	struct journal_floor	*p;
	size_t			 i;

	for (i = 0; i < jl->nfloors; i++)
		if (strcmp(jl->floors[i].job, sj->job) == 0) {
			if (sj->rev > jl->floors[i].rev)
				jl->floors[i].rev = sj->rev;
			return (0);
		}
	if ((p = reallocarray(jl->floors, jl->nfloors + 1,
	    sizeof(*p))) == NULL)
		return (-1);
	jl->floors = p;
	if ((p[jl->nfloors].job = strdup(sj->job)) == NULL)
		return (-1);
	p[jl->nfloors++].rev = sj->rev;
	return (0);
}

/* Returns a copy of s (NULL for NULL) in *out.  Returns 0 or -1. */
static int
journal_load_dup(const char *s, char **out)
{
	*out = NULL;
	return (s != NULL && (*out = strdup(s)) == NULL ? -1 : 0);
}

/*
 * Takes one journal entry the store holds (store_loader.journal); one that
 * does not read as an entry is counted and skipped.  Returns 0 or -1 (out
 * of memory).
 */
int
journal_load_take(struct coord *c, const struct store_journal *sj)
{
	struct journal		*j = c->journal;
	struct journal_loading	*jl;
	struct journal_loaded	*l;

	if (j == NULL)
		return (0);
	if ((jl = j->loading) == NULL) {
		if ((jl = calloc(1, sizeof(*jl))) == NULL)
			return (-1);
		jl->cap = 2 * j->cap;
		if ((jl->v = calloc(jl->cap, sizeof(*jl->v))) == NULL) {
			free(jl);
			return (-1);
		}
		j->loading = jl;
	}
	if (!journal_load_valid(sj)) {
		jl->nbad++;
		return (0);
	}
	if (sj->type == STORE_JOURNAL_FLOOR)
		return (journal_load_floor(jl, sj));
	if (jl->n == jl->cap)
		journal_load_trim(jl, j->cap);
	l = &jl->v[jl->n];
	memset(l, 0, sizeof(*l));
	l->sj = *sj;
	if (journal_load_dup(sj->job, &l->job) == -1 ||
	    journal_load_dup(sj->node, &l->node) == -1 ||
	    journal_load_dup(sj->detail, &l->detail) == -1) {
		journal_load_clear(l);
		return (-1);
	}
	l->sj.job = l->job;
	l->sj.node = l->node;
	l->sj.detail = l->detail;
	jl->n++;
	return (0);
}

/*
 * The model is loaded: the journal is rebuilt from what the store holds of
 * it (if it keeps it), at the revisions it has there, and revisions go on
 * above them.
 */
void
journal_load_end(struct coord *c)
{
	struct journal		*j = c->journal;
	struct journal_loading	*jl;
	struct job		*job;
	uint64_t		 base, prev = 0;
	size_t			 i, nkept = 0;

	if (j == NULL || c->store == NULL || !store_keeps_journal(c->store)) {
		journal_load_free(c);
		return;
	}
	base = journal_staged(c);
	journal_restore_begin(c);
	if ((jl = j->loading) != NULL) {
		journal_load_trim(jl, j->cap);
		if (jl->n > 1)
			qsort(jl->v, jl->n, sizeof(*jl->v), journal_load_cmp);
		for (i = 0; i < jl->n; i++) {
			/* A revision twice: the first one. */
			if (jl->v[i].sj.rev == prev)
				continue;
			prev = jl->v[i].sj.rev;
			if (journal_restore(c, &jl->v[i].sj) == -1)
				break;
			nkept++;
		}
		for (i = 0; i < jl->nfloors; i++)
			if ((job = schedule_job_find(c, jl->floors[i].job)) !=
			    NULL && jl->floors[i].rev > job->journal_floor)
				job->journal_floor = jl->floors[i].rev;
		if (jl->nbad > 0)
			log_warnx("%s: %zu stored journal entries do not read: "
			    "skipped", __func__, jl->nbad);
	}
	journal_restored(c, jl != NULL ? jl->floor : 0, base);
	log_info("%s: %zu events restored for the event stream, revision %"
	    PRIu64, __func__, nkept, journal_revision(c));
	journal_load_free(c);
}

/*
 * What a change (load_change()) brought of the journal: its entries put
 * in place among those kept (journal_insert()); published by
 * journal_load_publish().  A job's floor that came with it (a snapshot of
 * the job's history, its events stored without their revisions) is not
 * the copy's: it holds each of those events with its revision since its
 * load, as the leader does.  Returns 0 or -1.
 */
int
journal_load_merge(struct coord *c)
{
	struct journal		*j = c->journal;
	struct journal_loading	*jl;
	const struct store_journal **v;
	size_t			 i;
	int			 rc = -1;

	if (j == NULL || (jl = j->loading) == NULL)
		return (0);
	if (jl->n > 1)
		qsort(jl->v, jl->n, sizeof(*jl->v), journal_load_cmp);
	if ((v = calloc(jl->n + 1, sizeof(*v))) != NULL) {
		for (i = 0; i < jl->n; i++)
			v[i] = &jl->v[i].sj;
		rc = journal_insert(c, v, jl->n);
		free(v);
	}
	journal_load_free(c);
	return (rc);
}

/*
 * A follower's copy: every entry it holds is published (the revision it
 * reflects the last the store holds) and the stream's followers told.
 */
void
journal_load_publish(struct coord *c)
{
	journal_at_store(c);
	if (c->hooks != NULL && c->hooks->events_published != NULL)
		c->hooks->events_published(c);
}
