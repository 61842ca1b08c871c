/*
 * The index of a window's traces (GET /v1/jobs/{job}/windows/{id}/traces):
 * the job's ranks joined with their records (traces.c), a query above both,
 * so that the records, which the rank intake writes, know no rank listing.
 */

#include <stdlib.h>
#include <string.h>

#include "model.h"

/* Returns 1 if r reported window id stopped. */
static int
traces_rank_stopped(const struct rank *r, uint32_t id)
{
	size_t	 i;

	for (i = 0; i < r->nevents; i++)
		if (r->events[i].window_id == id && r->events[i].kind ==
		    DYNPROF__V1__EVENT_KIND__EVENT_STOPPED)
			return (1);
	return (0);
}

/*
 * The index of a window's traces: q->job's window q->window, every rank
 * with a record for it, and every rank that stopped it without one (state
 * pending: its agent has no store, or has not collected it yet; none of a
 * window that said "collect": false), by rank.
 * Fills out (traces_list_free() frees it).  Returns 0, or -1 with the
 * refusal (404: no such job or window).
 */
int
traces_list(struct coord *c, const struct traces_query *q,
    struct traces_list *out, struct refusal *ref)
{
	struct job		*job;
	struct window		*w;
	struct rank		*r, **v;
	struct traces_entry	*e;
	size_t			 i, n;

	memset(out, 0, sizeof(*out));
	if ((job = schedule_job_find(c, q->job)) == NULL)
		return (refusal_set(ref, 404, "job", "no job %s", q->job));
	TAILQ_FOREACH(w, &job->windows, entry)
		if (w->id == q->window)
			break;
	if (w == NULL)
		return (refusal_set(ref, 404, "window", "job %s has no "
		    "window %u", q->job, q->window));
	out->no_collect = w->no_collect;
	if ((v = schedule_rank_index(job, &n)) == NULL)
		return (0);
	if ((out->entries = calloc(n, sizeof(*out->entries))) == NULL)
		return (refusal_set(ref, 503, "traces", "out of memory"));
	for (i = 0; i < n; i++) {
		r = v[i];
		e = &out->entries[out->n];
		e->rank = r->rank;
		e->rec = traces_find(job, q->window, r->rank);
		if (e->rec != NULL) {
			out->collected += e->rec->kind ==
			    DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED;
			out->failed += e->rec->kind ==
			    DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED;
		} else if (!w->no_collect &&
		    traces_rank_stopped(r, q->window)) {
			e->node = r->node;
			out->pending++;
		} else
			continue;
		out->n++;
	}
	return (0);
}

/* Frees what traces_list() filled. */
void
traces_list_free(struct traces_list *l)
{
	free(l->entries);
	memset(l, 0, sizeof(*l));
}
