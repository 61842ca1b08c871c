/*
 * The event stream rebuilt from the model at a load, where the store keeps no
 * journal (SQLite): the windows' changes and the ranks' events that the store
 * holds, in time order, the newest COORD_JOURNAL_MAX or the journal's bound,
 * published at new revisions.  A page or a follower that looks after a
 * restart then sees the jobs' history, not an empty feed; a client that
 * followed the coordinator before resumes with a 410 (revisions started again)
 * and reads the summary, as after any gap.
 */

#include <stdlib.h>

#include "model.h"
#include "store.h"

/* One thing to say again, with its time. */
struct rebuild_item {
	int64_t			 time_ns;
	struct job		*job;
	struct rank		*rank;		/* a rank's event, or NULL */
	const struct rank_event	*ev;
	struct window		*w;		/* a window's change */
	int			 what;		/* JOURNAL_WINDOW_* */
};

/* Orders items by time, then windows' before ranks' at the same time. */
static int
journal_rebuild_cmp(const void *a, const void *b)
{
	const struct rebuild_item	*x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return (x->time_ns < y->time_ns ? -1 : 1);
	return ((x->rank != NULL) - (y->rank != NULL));
}

/* Adds an item to v (n of cap, grown).  Returns 0 or -1. */
static int
journal_rebuild_add(struct rebuild_item **v, size_t *n, size_t *cap,
    const struct rebuild_item *it)
{
	struct rebuild_item	*nv;
	size_t			 ncap;

	/* The capacity grows with the array only: a failed growth leaves
	 * both as they were, and the next add fails too. */
	if (*n == *cap) {
		ncap = *cap == 0 ? 256 : *cap * 2;
		if ((nv = reallocarray(*v, ncap, sizeof(**v))) == NULL)
			return (-1);
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = *it;
	return (0);
}

/* Rebuilds the journal from the model, unless the store keeps one. */
void
journal_rebuild(struct coord *c)
{
	struct rebuild_item	*v = NULL, it;
	struct job		*job;
	struct window		*w;
	struct rank		*r;
	size_t			 n = 0, cap = 0, i, from, keep;
	int			 rc = 0;

	if (c->journal == NULL || c->store == NULL ||
	    store_keeps_journal(c->store))
		return;
	TAILQ_FOREACH(job, &c->jobs, entry) {
		TAILQ_FOREACH(w, &job->windows, entry) {
			it = (struct rebuild_item){ w->created_ns, job, NULL,
			    NULL, w, JOURNAL_WINDOW_SCHEDULED };
			rc |= journal_rebuild_add(&v, &n, &cap, &it);
			if (w->ended_ns == 0)
				continue;
			it.time_ns = w->ended_ns;
			it.what = w->state == WINDOW_STATE_CANCELLED ?
			    JOURNAL_WINDOW_CANCELLED : JOURNAL_WINDOW_DONE;
			rc |= journal_rebuild_add(&v, &n, &cap, &it);
		}
		TAILQ_FOREACH(r, &job->ranks, entry) {
			for (i = 0; i < r->nevents; i++) {
				it = (struct rebuild_item){
				    r->events[i].time_ns, job, r,
				    &r->events[i], NULL, 0 };
				rc |= journal_rebuild_add(&v, &n, &cap, &it);
			}
		}
	}
	if (rc != 0 || n == 0) {
		free(v);
		return;
	}
	qsort(v, n, sizeof(*v), journal_rebuild_cmp);
	keep = c->journal->cap;
	from = n > keep ? n - keep : 0;
	for (i = from; i < n; i++) {
		if (v[i].rank != NULL)
			journal_stage_rank(c, v[i].job, v[i].rank, v[i].ev,
			    schedule_node_find(c, v[i].rank->node), NULL);
		else
			journal_stage_window_detail(c, v[i].job, v[i].w,
			    v[i].what, v[i].what == JOURNAL_WINDOW_SCHEDULED ?
			    v[i].w->created_gen : v[i].w->ended_gen, v[i].time_ns,
			    v[i].what == JOURNAL_WINDOW_DONE ?
			    journal_window_refused(v[i].w) : NULL);
	}
	journal_publish(c);
	free(v);
}
