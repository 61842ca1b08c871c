/*
 * A job's summary (GET /v1/jobs/{job}, docs/admin-api.md): of a size that
 * does not grow with its ranks or nodes.  Ranks counted by state, the steps
 * they reached (lowest, median, highest), its nodes counted by state and by
 * what they applied, and for each window how its targeted ranks are doing,
 * judged rank by rank as dynprofctl trace --wait judges them.  One pass over
 * the ranks and their events.  A window as status shows it is written here
 * too, for the answers that return one (POST windows, PUT config).
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "model.h"

/* Distinct windows one rank's flags are kept for in one pass. */
#define SUMMARY_RANK_WINDOWS	32

/* What one rank did about one window (ctl's outcome of a rank). */
#define SW_STARTED	0x01
#define SW_STOPPED	0x02
#define SW_SKIPPED	0x04
#define SW_FAILED	0x08
#define SW_OBSERVED	0x10	/* a legacy job's: its trace seen begun */
#define SW_COMPLETE	0x20	/* and seen complete, which ends it */
#define SW_COLLECTED	0x40	/* its trace in the store (traces.c) */
#define SW_COLLECT_FAILED 0x80	/* or given up */
#define SW_ENDED	(SW_STOPPED | SW_SKIPPED | SW_FAILED | SW_COMPLETE)

/* How the ranks a window targets are doing. */
struct summary_window {
	const struct window	*w;
	uint64_t		 targeted, started, stopped, skipped, failed;
	uint64_t		 observed, observed_complete;
	uint64_t		 collected, collect_failed;
	uint64_t		 gone, missed, finished, acted;
	uint64_t		 gone_idle;	/* gone, never acted on it */
	/* When its ranks ran it, as their started and stopped events say:
	 * the first start and last stop (0 none) and the lowest step started
	 * at and highest stopped at (-1 none: no rank steps). */
	int64_t			 first_start_ns, last_stop_ns;
	int64_t			 start_step_min, stop_step_max;
};

/* Orders windows by id, for bsearch(). */
static int
summary_window_cmp(const void *a, const void *b)
{
	const struct summary_window	*x = a, *y = b;

	return (x->w->id < y->w->id ? -1 : x->w->id > y->w->id);
}

/* Orders steps, for qsort(). */
static int
summary_step_cmp(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

/* Returns the window of id in sw (n, sorted by id), or NULL. */
static struct summary_window *
summary_window_find(struct summary_window *sw, size_t n, uint32_t id)
{
	struct window		 key;
	struct summary_window	 k;

	key.id = id;
	k.w = &key;
	return (bsearch(&k, sw, n, sizeof(*sw), summary_window_cmp));
}

/* Counts the ranks of the sorted index v (n) that window w targets. */
static uint64_t
summary_targeted(const struct window *w, struct rank **v, size_t n)
{
	uint64_t	 count = 0;
	size_t		 lo, hi;
	int		 i;

	if (w->rankset.nranges == 0)
		return (n);
	for (i = 0; i < w->rankset.nranges; i++) {
		lo = schedule_rank_index_after(v, n, (int64_t)w->rankset.ranges[i].lo -
		    1);
		hi = schedule_rank_index_after(v, n, w->rankset.ranges[i].hi);
		if (hi > lo)
			count += hi - lo;
	}
	return (count);
}

/*
 * Returns 1 if rank r was not there while window w was: it went away before
 * the window was made, or came after it ended (an elastic or restarted
 * job).  Such a rank is not counted against the window unless it acted on
 * it.
 */
static int
summary_rank_absent(const struct rank *r, const struct window *w)
{
	if (r->gone_ns > 0 && r->gone_ns < w->created_ns)
		return (1);
	return (w->ended_ns > 0 && r->arrived_ns > w->ended_ns);
}

/* What a rank event of kind says of its window (SW_*), 0 nothing. */
static int
summary_event_flag(int kind)
{
	switch (kind) {
	case DYNPROF__V1__EVENT_KIND__EVENT_STARTED:
		return (SW_STARTED);
	case DYNPROF__V1__EVENT_KIND__EVENT_STOPPED:
		return (SW_STOPPED);
	case DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED:
		return (SW_SKIPPED);
	case DYNPROF__V1__EVENT_KIND__EVENT_FAILED:
		return (SW_FAILED);
	case DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED:
		return (SW_OBSERVED);
	case DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE:
		return (SW_OBSERVED | SW_COMPLETE);
	case DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED:
		return (SW_COLLECTED);
	case DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED:
		return (SW_COLLECT_FAILED);
	}
	return (0);
}

/* What a rank's last state says of its current window (SW_*), 0 nothing. */
static int
summary_state_flag(int state)
{
	switch (state) {
	case DYNPROF__V1__RANK_STATE__RANK_PROFILING:
		return (SW_STARTED);
	case DYNPROF__V1__RANK_STATE__RANK_DONE:
		return (SW_STARTED | SW_STOPPED);
	case DYNPROF__V1__RANK_STATE__RANK_SKIPPED:
		return (SW_SKIPPED);
	case DYNPROF__V1__RANK_STATE__RANK_FAILED:
		return (SW_FAILED);
	case DYNPROF__V1__RANK_STATE__RANK_OBSERVED:
		return (SW_OBSERVED);
	case DYNPROF__V1__RANK_STATE__RANK_OBSERVED_COMPLETE:
		return (SW_OBSERVED | SW_COMPLETE);
	}
	return (0);
}

/* Adds the time and step of a started or stopped event ev to x's run. */
static void
summary_window_ran(struct summary_window *x, const struct rank_event *ev)
{
	if (ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_STARTED) {
		if (ev->time_ns > 0 && (x->first_start_ns == 0 ||
		    ev->time_ns < x->first_start_ns))
			x->first_start_ns = ev->time_ns;
		if (ev->step >= 0 && (x->start_step_min < 0 ||
		    ev->step < x->start_step_min))
			x->start_step_min = ev->step;
	} else if (ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_STOPPED) {
		if (ev->time_ns > x->last_stop_ns)
			x->last_stop_ns = ev->time_ns;
		if (ev->step > x->stop_step_max)
			x->stop_step_max = ev->step;
	}
}

/*
 * Adds what rank r (showing state) did about each window to the counts:
 * from its events, and its last state for its current window.  A rank
 * absent from a window it did not act on leaves its targeted count.
 * first_end: the earliest end of a window, 0 none.
 */
static void
summary_rank_windows(const struct rank *r, int state,
    struct summary_window *sw, size_t nsw, int64_t first_end)
{
	struct summary_window	*seen[SUMMARY_RANK_WINDOWS], *x;
	int			 flags[SUMMARY_RANK_WINDOWS], f, gone;
	size_t			 nseen = 0, i, j;

	for (i = 0; i <= r->nevents; i++) {
		if (i < r->nevents) {
			if ((f = summary_event_flag(r->events[i].kind)) == 0)
				continue;
			x = summary_window_find(sw, nsw,
			    r->events[i].window_id);
		} else {
			/* Its last state speaks for its current window. */
			if ((f = summary_state_flag(r->state)) == 0)
				continue;
			x = r->window_id != 0 ? summary_window_find(sw, nsw,
			    r->window_id) : NULL;
		}
		if (x == NULL || !ranks_contains(&x->w->rankset, r->rank))
			continue;
		if (i < r->nevents)
			summary_window_ran(x, &r->events[i]);
		for (j = 0; j < nseen && seen[j] != x; j++)
			;
		if (j == nseen) {
			if (nseen == SUMMARY_RANK_WINDOWS)
				continue;
			seen[nseen] = x;
			flags[nseen++] = 0;
		}
		flags[j] |= f;
	}
	for (j = 0; j < nseen; j++) {
		x = seen[j];
		f = flags[j];
		x->acted++;
		x->started += (f & SW_STARTED) != 0;
		x->stopped += (f & SW_STOPPED) != 0;
		x->skipped += (f & SW_SKIPPED) != 0;
		x->failed += (f & SW_FAILED) != 0;
		x->observed += (f & SW_OBSERVED) != 0;
		x->observed_complete += (f & SW_COMPLETE) != 0;
		x->collected += (f & SW_COLLECTED) != 0;
		x->collect_failed += (f & SW_COLLECT_FAILED) != 0;
		gone = state == DYNPROF__V1__RANK_STATE__RANK_GONE &&
		    (f & SW_ENDED) == 0;
		x->gone += gone;
		if (gone || (f & SW_ENDED))
			x->finished++;
	}
	gone = state == DYNPROF__V1__RANK_STATE__RANK_GONE;
	if (!gone && r->gone_ns == 0 && (first_end == 0 ||
	    r->arrived_ns <= first_end))
		return;
	/* Absent from a window: not targeted; gone before acting on one it
	 * is targeted by: finished. */
	for (i = 0; i < nsw; i++) {
		for (j = 0; j < nseen && seen[j] != &sw[i]; j++)
			;
		if (j < nseen || !ranks_contains(&sw[i].w->rankset, r->rank))
			continue;
		if (summary_rank_absent(r, sw[i].w)) {
			sw[i].targeted--;
			continue;
		}
		if (!gone)
			continue;
		sw[i].gone++;
		sw[i].gone_idle++;
		sw[i].finished++;
	}
}

/*
 * Returns what rank r (showing state) did about window w, as the window's
 * rank_counts count it: NULL if the window does not count the rank (not
 * targeted, or absent while it was and did not act on it), else the first
 * of "failed", "skipped", "stopped", "observed_complete" (finished with it),
 * "gone" (went away before), "missed" (the window ended before the rank
 * acted on it), "started", "observed" (at it) and "pending" (not yet).
 */
const char *
summary_rank_outcome(const struct rank *r, int state, const struct window *w)
{
	size_t	 i;
	int	 f = 0;

	if (!ranks_contains(&w->rankset, r->rank))
		return (NULL);
	for (i = 0; i < r->nevents; i++)
		if (r->events[i].window_id == w->id)
			f |= summary_event_flag(r->events[i].kind);
	if (r->window_id == w->id)
		f |= summary_state_flag(r->state);
	if (f == 0 && summary_rank_absent(r, w))
		return (NULL);
	if (f & SW_FAILED)
		return ("failed");
	if (f & SW_SKIPPED)
		return ("skipped");
	if (f & SW_STOPPED)
		return ("stopped");
	if (f & SW_COMPLETE)
		return ("observed_complete");
	if (state == DYNPROF__V1__RANK_STATE__RANK_GONE)
		return ("gone");
	if (f == 0 && (w->state == WINDOW_STATE_CANCELLED || w->finished))
		return ("missed");
	if (f & SW_STARTED)
		return ("started");
	return ((f & SW_OBSERVED) ? "observed" : "pending");
}

/* Returns a wall clock time as RFC 3339 text, null when unset. */
json_t *
summary_time(int64_t ns)
{
	char	 buf[40];

	if (ns <= 0)
		return (json_null());
	clock_rfc3339(ns, buf, sizeof(buf));
	return (json_string(buf));
}

/*
 * Returns what named the ranks of window w (select.c): select, nodes and
 * one_per as asked, and group, the selector group_of resolved to.
 */
static json_t *
summary_selector(const struct window *w)
{
	static const char *const fields[] = {
		"select", "nodes", "one_per", "group", NULL
	};
	json_t		*o = json_object();
	char		 buf[SEG_RANKS_MAX * 64];
	size_t		 i;

	for (i = 0; fields[i] != NULL; i++)
		if (select_selector_field(w->selector, fields[i], buf,
		    sizeof(buf)) == 0)
			json_object_set_new(o, fields[i], json_string(buf));
	return (o);
}

/*
 * Returns the warnings of time window w: the nodes serving its job whose
 * agent's clock is further from the coordinator's than the window's
 * tolerance, or whose offset is not known yet (an agent that has not
 * measured it, or an older one): [{"node", "offset_ms" (null: not known),
 * "warning"}].  The agents correct the offset they measured; the warning
 * says that the window's start on that node rests on the estimate.
 */
json_t *
summary_clock_warnings(const struct coord *c, const struct job *job,
    const struct window *w)
{
	struct serving		 it = { 0 };
	struct node_job		*nj;
	struct node		*n;
	json_t			*arr = json_array(), *o;
	char			 msg[COORD_NODE_MAX + 192];
	int64_t			 off;

	while ((n = schedule_serving_next(c, job, &it, &nj)) != NULL) {
		if (!schedule_node_up(n))
			continue;
		/* Whole ms, as a follower has them (nodeview.c). */
		off = n->agent_offset_ns / 1000000;
		if (n->agent_offset_known && (off < 0 ? -off : off) <=
		    w->tolerance_ms)
			continue;
		if (n->agent_offset_known)
			snprintf(msg, sizeof(msg), "node %s's clock is %lld ms "
			    "off the coordinator's, over the window's "
			    "tolerance of %lld ms: its start there rests on "
			    "the agent's estimate", n->name, (long long)off,
			    (long long)w->tolerance_ms);
		else
			snprintf(msg, sizeof(msg), "node %s's clock offset is "
			    "not known (no heartbeat measured yet, or an "
			    "older agent): taken as 0", n->name);
		o = json_object();
		json_object_set_new(o, "node", json_string(n->name));
		json_object_set_new(o, "offset_ms", n->agent_offset_known ?
		    json_integer(off) : json_null());
		json_object_set_new(o, "warning", json_string(msg));
		json_array_append_new(arr, o);
	}
	return (arr);
}

/* Returns a window as status shows it, in state (NULL: judged here). */
json_t *
summary_window_status(const struct job *job, const struct window *w,
    const char *state)
{
	json_t	*o = json_object();

	json_object_set_new(o, "id", json_integer(w->id));
	json_object_set_new(o, "start_step", json_integer(w->start_step));
	json_object_set_new(o, "stop_step", json_integer(w->stop_step));
	if (w->start_unix_ns != 0) {
		json_object_set_new(o, "at", summary_time(w->start_unix_ns));
		json_object_set_new(o, "duration_ms", json_integer(
		    (w->stop_unix_ns - w->start_unix_ns) / 1000000));
		json_object_set_new(o, "tolerance_ms",
		    json_integer(w->tolerance_ms));
	}
	json_object_set_new(o, "ranks", json_string(w->ranks));
	if (w->selector != NULL)
		json_object_set_new(o, "selector", summary_selector(w));
	json_object_set_new(o, "options", options_to_json(&w->options));
	json_object_set_new(o, "output_subdir", json_string(w->output_subdir));
	json_object_set_new(o, "collect", json_boolean(!w->no_collect));
	if (w->trace_store != NULL)
		json_object_set_new(o, "trace_store",
		    json_string(w->trace_store));
	json_object_set_new(o, "state", json_string(state != NULL ? state :
	    schedule_window_state(job, w)));
	if (w->refused && w->refused_why != NULL)
		json_object_set_new(o, "refused_reason",
		    json_string(w->refused_why));
	json_object_set_new(o, "created", summary_time(w->created_ns));
	json_object_set_new(o, "ended", summary_time(w->ended_ns));
	return (o);
}

/* Returns window w of the summary as status shows it, with its ranks. */
static json_t *
summary_window_json(const struct job *job, struct summary_window *x)
{
	const struct window	*w = x->w;
	json_t			*o, *rk;
	const char		*state;
	int			 ended;

	ended = w->state == WINDOW_STATE_CANCELLED || w->finished;
	if (ended && x->targeted > x->acted + x->gone_idle)
		x->missed = x->targeted - x->acted - x->gone_idle;
	x->finished += x->missed;
	if (w->state == WINDOW_STATE_CANCELLED)
		state = "cancelled";
	else if (w->finished)
		state = w->refused ? "refused" : "done";
	else
		state = x->started > 0 || x->observed > 0 ? "running" :
		    "scheduled";
	o = summary_window_status(job, w, state);
	rk = json_object();
	json_object_set_new(rk, "targeted", json_integer((json_int_t)x->targeted));
	json_object_set_new(rk, "started", json_integer((json_int_t)x->started));
	json_object_set_new(rk, "stopped", json_integer((json_int_t)x->stopped));
	json_object_set_new(rk, "skipped", json_integer((json_int_t)x->skipped));
	json_object_set_new(rk, "failed", json_integer((json_int_t)x->failed));
	json_object_set_new(rk, "observed",
	    json_integer((json_int_t)x->observed));
	json_object_set_new(rk, "observed_complete",
	    json_integer((json_int_t)x->observed_complete));
	json_object_set_new(rk, "collected",
	    json_integer((json_int_t)x->collected));
	json_object_set_new(rk, "collect_failed",
	    json_integer((json_int_t)x->collect_failed));
	json_object_set_new(rk, "gone", json_integer((json_int_t)x->gone));
	json_object_set_new(rk, "missed", json_integer((json_int_t)x->missed));
	json_object_set_new(rk, "finished",
	    json_integer((json_int_t)x->finished));
	json_object_set_new(o, "rank_counts", rk);
	if (x->first_start_ns > 0) {
		rk = json_object();
		json_object_set_new(rk, "first_start",
		    summary_time(x->first_start_ns));
		json_object_set_new(rk, "last_stop",
		    summary_time(x->last_stop_ns));
		json_object_set_new(rk, "start_step", x->start_step_min >= 0 ?
		    json_integer(x->start_step_min) : json_null());
		json_object_set_new(rk, "stop_step", x->stop_step_max >= 0 ?
		    json_integer(x->stop_step_max) : json_null());
		json_object_set_new(o, "ran", rk);
	}
	return (o);
}

/* Returns the nodes serving the job, counted by state and applied
 * generation. */
static json_t *
summary_nodes_json(struct coord *c, const struct job *job)
{
	struct node	*n;
	struct node_job	*nj;
	uint64_t	 total = 0, connected = 0, left = 0, current = 0;
	uint64_t	 oldest = UINT64_MAX;
	json_t		*o;

	TAILQ_FOREACH(n, &c->nodes, entry) {
		if ((nj = schedule_node_job(n, job->name, 0)) == NULL ||
		    legacy_idle(c, n->name, job->name))
			continue;
		total++;
		if (schedule_node_up(n))
			connected++;
		else if (n->left)
			left++;
		if (nj->applied >= job->generation)
			current++;
		if (nj->applied < oldest)
			oldest = nj->applied;
	}
	o = json_object();
	json_object_set_new(o, "total", json_integer((json_int_t)total));
	json_object_set_new(o, "connected",
	    json_integer((json_int_t)connected));
	json_object_set_new(o, "lost",
	    json_integer((json_int_t)(total - connected - left)));
	json_object_set_new(o, "left", json_integer((json_int_t)left));
	json_object_set_new(o, "applied_current",
	    json_integer((json_int_t)current));
	json_object_set_new(o, "applied_behind",
	    json_integer((json_int_t)(total - current)));
	json_object_set_new(o, "oldest_applied", total > 0 ?
	    json_integer((json_int_t)oldest) : json_null());
	return (o);
}

/* Returns the lowest, median and highest of n steps (sorted here). */
static json_t *
summary_steps_json(int64_t *steps, size_t n)
{
	json_t	*o = json_object();

	if (n > 1)
		qsort(steps, n, sizeof(*steps), summary_step_cmp);
	json_object_set_new(o, "ranks", json_integer((json_int_t)n));
	json_object_set_new(o, "min", json_integer(n > 0 ? steps[0] : -1));
	json_object_set_new(o, "median", json_integer(n > 0 ?
	    steps[(n - 1) / 2] : -1));
	json_object_set_new(o, "max", json_integer(n > 0 ? steps[n - 1] :
	    -1));
	return (o);
}

/*
 * Adds the summary of job to body: "rank_counts" (by state), "steps",
 * "node_counts" and "windows" (each with its rank_counts).  Returns 0, or -1 out
 * of memory.
 */
int
summary_add(struct coord *c, struct job *job, json_t *body)
{
	struct summary_window	*sw = NULL;
	struct window		*w;
	struct ranks_memo	 memo;
	struct rank		**v, *r;
	int64_t			*steps = NULL, first_end = 0;
	uint64_t		 counts[RANKS_STATE_UNKNOWN + 1];
	size_t			 nsw = 0, n, nsteps = 0, i;
	json_t			*o, *arr;
	int			 state;

	memset(&memo, 0, sizeof(memo));
	memset(counts, 0, sizeof(counts));
	v = schedule_rank_index(job, &n);
	TAILQ_FOREACH(w, &job->windows, entry)
		nsw++;
	if ((nsw > 0 && (sw = calloc(nsw, sizeof(*sw))) == NULL) ||
	    (n > 0 && (steps = calloc(n, sizeof(*steps))) == NULL)) {
		free(sw);
		return (-1);
	}
	i = 0;
	TAILQ_FOREACH(w, &job->windows, entry) {
		sw[i].w = w;
		sw[i].start_step_min = sw[i].stop_step_max = -1;
		sw[i++].targeted = summary_targeted(w, v, n);
		if (w->ended_ns > 0 && (first_end == 0 ||
		    w->ended_ns < first_end))
			first_end = w->ended_ns;
	}
	if (nsw > 1)
		qsort(sw, nsw, sizeof(*sw), summary_window_cmp);
	for (i = 0; i < n; i++) {
		r = v[i];
		state = schedule_rank_state(c, r, &memo);
		counts[state]++;
		if (r->step >= 0 && state != RANKS_STATE_UNKNOWN &&
		    state != DYNPROF__V1__RANK_STATE__RANK_GONE)
			steps[nsteps++] = r->step;
		if (nsw > 0)
			summary_rank_windows(r, state, sw, nsw, first_end);
	}
	o = json_object();
	json_object_set_new(o, "total", json_integer((json_int_t)n));
	for (state = 1; state <= RANKS_STATE_UNKNOWN; state++)
		json_object_set_new(o, schedule_rank_state_name(state),
		    json_integer((json_int_t)counts[state]));
	json_object_set_new(body, "rank_counts", o);
	json_object_set_new(body, "steps", summary_steps_json(steps, nsteps));
	json_object_set_new(body, "node_counts", summary_nodes_json(c, job));
	/* Windows by start step, as the job keeps them. */
	arr = json_array();
	TAILQ_FOREACH(w, &job->windows, entry)
	{
		o = summary_window_json(job, summary_window_find(sw, nsw,
		    w->id));
		if (w->start_unix_ns != 0)
			json_object_set_new(o, "clock_warnings",
			    summary_clock_warnings(c, job, w));
		json_array_append_new(arr, o);
	}
	json_object_set_new(body, "windows", arr);
	free(sw);
	free(steps);
	return (0);
}
