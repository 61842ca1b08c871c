/*
 * The coordinator's model: jobs, their windows, the nodes, and the rules that
 * say when a window holds its steps, runs, is over or may be evicted.  The
 * ranks and what their nodes report are in schedule_ranks.c.
 */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "model.h"
#include "store.h"

/* Returns the FNV-1a hash of a name. */
static uint32_t
schedule_hash(const char *s)
{
	uint32_t	 h = 2166136261U;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619U;
	}
	return (h);
}

/* Returns the job named name, or NULL. */
struct job *
schedule_job_find(struct coord *c, const char *name)
{
	struct job	*job;

	if (name == NULL)
		return (NULL);
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (strcmp(job->name, name) == 0)
			return (job);
	}
	return (NULL);
}

/* Returns the job named name, creating it (in memory only) if needed. */
struct job *
schedule_job_get(struct coord *c, const char *name)
{
	struct job	*job;

	if ((job = schedule_job_find(c, name)) != NULL)
		return (job);
	if (!jobid_valid(name, NULL) || (job = calloc(1, sizeof(*job))) == NULL)
		return (NULL);
	snprintf(job->name, sizeof(job->name), "%s", name);
	job->next_window_id = 1;
	job->created_ns = clock_wall_ns();
	options_init(&job->defaults);
	TAILQ_INIT(&job->windows);
	TAILQ_INIT(&job->ranks);
	TAILQ_INIT(&job->subs);
	TAILQ_INSERT_TAIL(&c->jobs, job, entry);
	c->nunscheduled++;	/* recounted by schedule_job_peer() */
	return (job);
}

/* Returns 1 if nobody scheduled the job: no config, window or generation. */
int
schedule_job_unscheduled(const struct job *job)
{
	return (job->generation == 0 && job->config_json == NULL &&
	    TAILQ_EMPTY(&job->windows));
}

/* Returns how many jobs nobody scheduled exist. */
size_t
schedule_unscheduled_count(struct coord *c)
{
	struct job	*job;
	size_t		 n = 0;

	TAILQ_FOREACH(job, &c->jobs, entry)
		if (schedule_job_unscheduled(job))
			n++;
	return (n);
}

/*
 * Returns the job named name for what an agent reports (a subscribe, an
 * event, progress), creating it in memory if there is room: at most
 * COORD_UNSCHEDULED_MAX jobs nobody scheduled exist at once.  NULL when
 * refused (logged, counted) or out of memory.
 */
struct job *
schedule_job_peer(struct coord *c, const char *name, const char *node)
{
	struct job	*job;
	uint64_t	 n;

	if ((job = schedule_job_find(c, name)) != NULL)
		return (job);
	if (c->nunscheduled >= COORD_UNSCHEDULED_MAX)
		c->nunscheduled = schedule_unscheduled_count(c);
	if (c->nunscheduled >= COORD_UNSCHEDULED_MAX) {
		n = ++c->metrics.unscheduled_refused;
		if ((n & (n - 1)) == 0)
			log_warnx("%s: job %s from %s refused: %d jobs nobody "
			    "scheduled exist already (%llu refused so far)",
			    __func__, name, node, COORD_UNSCHEDULED_MAX,
			    (unsigned long long)n);
		return (NULL);
	}
	return (schedule_job_get(c, name));
}

/* Returns the node named name, or NULL. */
struct node *
schedule_node_find(struct coord *c, const char *name)
{
	struct node	*n;

	LIST_FOREACH(n, &c->node_hash[schedule_hash(name) %
	    COORD_NODE_BUCKETS], hentry) {
		if (strcmp(n->name, name) == 0)
			return (n);
	}
	return (NULL);
}

/* Returns the node named name, creating it if needed. */
struct node *
schedule_node_get(struct coord *c, const char *name)
{
	struct node	*n;

	if ((n = schedule_node_find(c, name)) != NULL)
		return (n);
	if ((n = calloc(1, sizeof(*n))) == NULL)
		return (NULL);
	snprintf(n->name, sizeof(n->name), "%s", name);
	n->view_dirty = 1;
	TAILQ_INIT(&n->jobs);
	LIST_INSERT_HEAD(&c->node_hash[schedule_hash(name) %
	    COORD_NODE_BUCKETS], n, hentry);
	TAILQ_INSERT_TAIL(&c->nodes, n, entry);
	return (n);
}

/* Returns what node did with job; creates the record if create is set. */
struct node_job *
schedule_node_job(struct node *n, const char *job, int create)
{
	struct node_job	*nj;

	TAILQ_FOREACH(nj, &n->jobs, entry) {
		if (strcmp(nj->job, job) == 0)
			return (nj);
	}
	if (!create || (nj = calloc(1, sizeof(*nj))) == NULL)
		return (NULL);
	snprintf(nj->job, sizeof(nj->job), "%s", job);
	nj->min_step = nj->max_step = -1;
	TAILQ_INSERT_TAIL(&n->jobs, nj, entry);
	n->view_dirty = 1;
	return (nj);
}

/* Returns 1 if node n's agent is connected: here, or (a follower's copy)
 * to the leader, as it last wrote (nodeview.c). */
int
schedule_node_up(const struct node *n)
{
	return (n->conn != NULL || n->view_up);
}

/*
 * Walks the nodes serving job (its agents subscribed to it): the agents
 * subscribed here, or in a follower's copy (no agent here) the nodes the
 * leader wrote as serving it (nodeview.c).  Returns the next node, with what
 * it did with the job in *nj (NULL: nothing yet), or NULL after the last;
 * it is zeroed to begin.
 */
struct node *
schedule_serving_next(const struct coord *c, const struct job *job,
    struct serving *it, struct node_job **nj)
{
	struct node	*n;

	if (!it->started) {
		it->started = 1;
		it->s = TAILQ_FIRST(&job->subs);
		it->n = it->s == NULL ? TAILQ_FIRST(&c->nodes) : NULL;
	} else if (it->s != NULL)
		it->s = TAILQ_NEXT(it->s, job_entry);
	else if (it->n != NULL)
		it->n = TAILQ_NEXT(it->n, entry);
	if (it->s != NULL) {
		n = it->s->conn->node;
		*nj = n != NULL ? schedule_node_job(n, job->name, 0) : NULL;
		return (n != NULL ? n : schedule_serving_next(c, job, it, nj));
	}
	for (; it->n != NULL; it->n = TAILQ_NEXT(it->n, entry)) {
		if ((*nj = schedule_node_job(it->n, job->name, 0)) != NULL &&
		    (*nj)->view_sub)
			return (it->n);
	}
	*nj = NULL;
	return (NULL);
}

/* Returns a new window with default options. */
struct window *
window_new(void)
{
	struct window	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return (NULL);
	options_init(&w->options);
	w->state = WINDOW_STATE_SCHEDULED;
	return (w);
}

/* Frees a window that is on no list. */
void
window_free(struct window *w)
{
	if (w == NULL)
		return;
	options_clear(&w->options);
	free(w->selector);
	free(w->trace_store);
	free(w->refused_why);
	free(w);
}

/* Inserts w into the job's windows, ordered by start step then id. */
void
schedule_window_insert(struct job *job, struct window *w)
{
	struct window	*it;

	TAILQ_FOREACH(it, &job->windows, entry) {
		if (it->start_step > w->start_step ||
		    (it->start_step == w->start_step && it->id > w->id)) {
			TAILQ_INSERT_BEFORE(it, w, entry);
			return;
		}
	}
	TAILQ_INSERT_TAIL(&job->windows, w, entry);
}

/* Returns the job's window with that id, or NULL. */
struct window *
schedule_window_find(struct job *job, uint32_t id)
{
	struct window	*w;

	TAILQ_FOREACH(w, &job->windows, entry) {
		if (w->id == id)
			return (w);
	}
	return (NULL);
}

/* Returns how many windows the job's pushed schedule holds. */
int
schedule_pending_count(const struct job *job)
{
	const struct window	*w;
	int			 n = 0;

	TAILQ_FOREACH(w, &job->windows, entry) {
		if (!w->finished)
			n++;
	}
	return (n);
}

/* Returns 1 if the rank reported an event of kind for window_id. */
int
schedule_rank_has_event(const struct rank *r, uint32_t window_id, int kind)
{
	size_t	 i;

	for (i = 0; i < r->nevents; i++)
		if (r->events[i].window_id == window_id &&
		    r->events[i].kind == kind)
			return (1);
	return (0);
}

/* Returns 1 if the rank reported the end of window id: stopped, skipped or
 * failed, or (a legacy job's) observed complete. */
static int
schedule_rank_ended(const struct rank *r, uint32_t id)
{
	size_t	 i;

	for (i = 0; i < r->nevents; i++)
		if (r->events[i].window_id == id &&
		    (r->events[i].kind == DYNPROF__V1__EVENT_KIND__EVENT_STOPPED ||
		    r->events[i].kind == DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED ||
		    r->events[i].kind == DYNPROF__V1__EVENT_KIND__EVENT_FAILED ||
		    r->events[i].kind ==
		    DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE))
			return (1);
	return (0);
}

/* Returns 1 if the rank is neither gone nor on a lost node. */
static int
schedule_rank_live(struct coord *c, const struct rank *r)
{
	struct node	*n;

	if (r->state == DYNPROF__V1__RANK_STATE__RANK_GONE || r->node[0] == '\0')
		return (0);
	return ((n = schedule_node_find(c, r->node)) != NULL &&
	    schedule_node_up(n));
}

/*
 * Returns 1 if the rank is not live only because its node was lost (or this
 * coordinator started) less than COORD_LOST_GRACE_HB heartbeats ago: its agent
 * may be back in a moment, with the rank still short of a window.
 */
static int
schedule_rank_may_return(struct coord *c, const struct rank *r)
{
	struct node	*n;
	int64_t		 since, grace;

	if (r->state == DYNPROF__V1__RANK_STATE__RANK_GONE || r->node[0] == '\0' ||
	    (n = schedule_node_find(c, r->node)) == NULL || schedule_node_up(n))
		return (0);
	since = n->last_seen_ns > c->started_ns ? n->last_seen_ns :
	    c->started_ns;
	grace = (int64_t)COORD_LOST_GRACE_HB * c->conf.heartbeat_ms * 1000000;
	return (clock_wall_ns() - since < grace);
}

/* Returns 1 if a live rank started window w and has not ended it. */
static int
schedule_window_running(struct coord *c, const struct job *job,
    const struct window *w)
{
	const struct rank	*r;

	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (schedule_rank_has_event(r, w->id,
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED) &&
		    !schedule_rank_ended(r, w->id) && schedule_rank_live(c, r))
			return (1);
	}
	return (0);
}

/*
 * Returns 1 if no rank can still start window w (start 1) or run it (0),
 * given min, the lowest step the job's live ranks reported (-1: none): min
 * passed its start or stop step; for a time window, its stop passed
 * SCHEDULE_TIME_LATE_MS ago on the coordinator's clock (a node whose clock
 * is behind, a rank that polls late, still sees it).
 */
static int
schedule_window_behind(const struct window *w, int64_t min, int start)
{
	if (w->start_unix_ns != 0)
		return (clock_wall_ns() - w->stop_unix_ns >
		    SCHEDULE_TIME_LATE_MS * 1000000);
	return (min >= 0 && min > (start ? w->start_step : w->stop_step));
}

/*
 * Returns 1 if window w may leave the pushed schedule, given min, the lowest
 * step the job's live ranks reported (-1: none).  A scheduled window stays
 * until every live rank it targets has reported its end (stopped, skipped or
 * failed), so that a window already behind a rank still reaches it and is
 * reported skipped, and while a rank it targets that has not ended it is on a
 * node lost moments ago (schedule_rank_may_return()); one that targets no live
 * rank leaves once min passed its stop.  A cancelled window stays while a live rank runs it (the rank must see
 * the cancellation), then leaves once every live rank it targets ended it or
 * min passed its start (no rank can be starting it any more).  A time window
 * leaves once its stop is SCHEDULE_TIME_LATE_MS behind our clock and no live
 * rank runs it, whatever the ranks that never ran it (that neither step nor
 * poll) reported.
 */
int
schedule_window_over(struct coord *c, const struct job *job,
    const struct window *w, int64_t min)
{
	const struct rank	*r;
	int			 live = 0, open = 0, ended;

	/* A time window long past: a rank that did not run it (one that
	 * neither steps nor polls) never will, nor report it. */
	if (w->start_unix_ns != 0 && schedule_window_behind(w, min, 0) &&
	    !schedule_window_running(c, job, w))
		return (1);
	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (!ranks_contains(&w->rankset, r->rank))
			continue;
		/* Whether one more rank that ended it is live changes nothing
		 * once one is: spare the node lookup. */
		ended = schedule_rank_ended(r, w->id);
		if (ended && live > 0)
			continue;
		if (!schedule_rank_live(c, r)) {
			/* Pushed without the window, a returning rank would
			 * never see it: it waits for the rank a while. */
			if (!ended && w->state != WINDOW_STATE_CANCELLED &&
			    schedule_rank_may_return(c, r))
				return (0);
			continue;
		}
		live++;
		if (ended)
			continue;
		if (w->state != WINDOW_STATE_CANCELLED)
			return (0);
		if (schedule_rank_has_event(r, w->id,
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED))
			return (0);	/* still running it */
		open++;
	}
	if (w->state == WINDOW_STATE_CANCELLED)
		return ((live > 0 && open == 0) ||
		    schedule_window_behind(w, min, 1));
	if (live > 0)
		return (1);
	return (schedule_window_behind(w, min, 0));
}

/*
 * Returns 1 if window w may be dropped from a full schedule to make room for a
 * new one, given the lowest and highest steps of the job's live ranks (-1:
 * none): no live rank runs it and none can start it any more.  That is a
 * window wholly behind min (its ranks only have to report it skipped), or a
 * cancelled one whose start no rank has reached (max) or every rank passed
 * (min).
 */
static int
schedule_window_evictable(struct coord *c, const struct job *job,
    const struct window *w, int64_t min, int64_t max)
{
	if (w->finished || schedule_window_running(c, job, w))
		return (0);
	if (schedule_window_behind(w, min, 0))
		return (1);
	if (w->start_unix_ns != 0)
		return (w->state == WINDOW_STATE_CANCELLED);
	return (w->state == WINDOW_STATE_CANCELLED &&
	    (max < w->start_step || min > w->start_step));
}

/*
 * Returns a window of the pushed schedule that shares a step with [start, stop]
 * and still holds those steps: a scheduled window (pending or running), or a
 * cancelled one that a live rank still runs.  A cancelled window that never
 * started, or that every rank running it has ended, holds no step: the agent
 * and the library take a cancelled window beside an overlapping scheduled one
 * (a rank never starts a cancelled window).  NULL when none.
 */
struct window *
schedule_overlap(struct coord *c, const struct job *job, int64_t start,
    int64_t stop)
{
	struct window	*w;

	TAILQ_FOREACH(w, &job->windows, entry) {
		if (w->finished)
			continue;
		if (w->state == WINDOW_STATE_CANCELLED &&
		    !schedule_window_running(c, job, w))
			continue;
		if (w->start_step <= stop && start <= w->stop_step)
			return (w);
	}
	return (NULL);
}

/*
 * Returns a time window of the pushed schedule whose times meet [start_ns,
 * stop_ns) and that still holds them (as schedule_overlap()), else NULL.
 */
struct window *
schedule_overlap_time(struct coord *c, const struct job *job,
    int64_t start_ns, int64_t stop_ns)
{
	struct window	*w;

	TAILQ_FOREACH(w, &job->windows, entry) {
		if (w->finished || w->start_unix_ns == 0)
			continue;
		if (w->state == WINDOW_STATE_CANCELLED &&
		    !schedule_window_running(c, job, w))
			continue;
		if (w->start_unix_ns < stop_ns && start_ns < w->stop_unix_ns)
			return (w);
	}
	return (NULL);
}

/* Returns the state of a window as status shows it. */
const char *
schedule_window_state(const struct job *job, const struct window *w)
{
	const struct rank	*r;

	if (w->state == WINDOW_STATE_CANCELLED)
		return ("cancelled");
	if (w->finished)
		return (w->refused ? "refused" : "done");
	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (schedule_rank_has_event(r, w->id,
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED))
			return ("running");
	}
	return ("scheduled");
}

/*
 * Resolves the steps a POST windows body asks for (r) to absolute ones, given
 * max, the highest step the job's ranks reported (needed with in_steps).
 * Every sum is checked: a step past COORD_WINDOW_STEP_MAX (or one that would
 * not even fit an int64_t) is refused with the field that took it there.
 * Returns 0, or -1 with ref saying what to answer.
 */
int
schedule_window_resolve(const struct window_request *r, int64_t max,
    int64_t *startp, int64_t *stopp, struct refusal *ref)
{
	int64_t	 start = r->start, stop = r->stop, rem;

	if (r->has_in) {
		if (max < 0 || __builtin_add_overflow(max, r->in, &start) ||
		    start > COORD_WINDOW_STEP_MAX)
			return (refusal_set(ref, 400, "in_steps", "in_steps %"
			    PRId64 " from step %" PRId64 " is beyond step %lld",
			    r->in, max, COORD_WINDOW_STEP_MAX));
		if (r->has_round && start <= max)
			start = max + 1;
	}
	if (r->has_round) {
		/* Up to the next multiple of roundup (start is not negative). */
		if (start < 0)
			return (refusal_set(ref, 400, "roundup", "roundup of a "
			    "negative step"));
		rem = start % r->roundup;
		if (rem != 0 && (__builtin_add_overflow(start, r->roundup - rem,
		    &start) || start > COORD_WINDOW_STEP_MAX))
			return (refusal_set(ref, 400, "roundup", "roundup %"
			    PRId64 " takes the start beyond step %lld",
			    r->roundup, COORD_WINDOW_STEP_MAX));
	}
	if (r->has_steps && (__builtin_add_overflow(start, r->steps - 1,
	    &stop) || stop > COORD_WINDOW_STEP_MAX))
		return (refusal_set(ref, 400, "steps", "steps %" PRId64 " from "
		    "step %" PRId64 " end beyond step %lld", r->steps, start,
		    COORD_WINDOW_STEP_MAX));
	if (valid_window_steps(start, stop, ref) == -1)
		return (-1);
	*startp = start;
	*stopp = stop;
	return (0);
}

/* Returns the job's schedule as a JobConfig message; free it with
 * schedule_free_config(). */
Dynprof__V1__JobConfig *
schedule_build_config(struct job *job)
{
	Dynprof__V1__JobConfig		*cfg;
	Dynprof__V1__Window		*pw;
	Dynprof__V1__ProfilerOptions	*po;
	struct window			*w;
	size_t				 n = 0;

	if ((cfg = calloc(1, sizeof(*cfg))) == NULL)
		return (NULL);
	dynprof__v1__job_config__init(cfg);
	cfg->job = job->name;
	cfg->generation = schedule_job_push_generation(job);
	cfg->windows = calloc(SEG_MAX_WINDOWS, sizeof(*cfg->windows));
	if (cfg->windows == NULL) {
		free(cfg);
		return (NULL);
	}
	TAILQ_FOREACH(w, &job->windows, entry) {
		if (w->finished || n == SEG_MAX_WINDOWS)
			continue;
		pw = calloc(1, sizeof(*pw));
		po = calloc(1, sizeof(*po));
		if (pw == NULL || po == NULL) {
			free(pw);
			free(po);
			break;
		}
		dynprof__v1__window__init(pw);
		dynprof__v1__profiler_options__init(po);
		pw->id = w->id;
		pw->start_step = w->start_step;
		pw->stop_step = w->stop_step;
		pw->start_unix_ns = w->start_unix_ns;
		pw->stop_unix_ns = w->stop_unix_ns;
		pw->ranks = w->ranks;
		pw->state = w->state == WINDOW_STATE_CANCELLED ?
		    DYNPROF__V1__WINDOW_STATE__WINDOW_CANCELLED :
		    DYNPROF__V1__WINDOW_STATE__WINDOW_SCHEDULED;
		options_convert(&options_proto, po, &options_coord,
		    &w->options);
		po->output_subdir = w->output_subdir;
		po->framework_options_json = w->options.fwopts != NULL ?
		    w->options.fwopts : (char *)"";
		pw->options = po;
		pw->no_collect = w->no_collect != 0;
		pw->trace_store = w->trace_store != NULL ? w->trace_store :
		    (char *)"";
		cfg->windows[n++] = pw;
	}
	cfg->n_windows = n;
	return (cfg);
}

/* Frees a message from schedule_build_config(). */
void
schedule_free_config(Dynprof__V1__JobConfig *cfg)
{
	size_t	 i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->n_windows; i++) {
		free(cfg->windows[i]->options);
		free(cfg->windows[i]);
	}
	free(cfg->windows);
	free(cfg);
}

/*
 * Makes room for one more window in a full schedule: picks the windows no
 * rank can still run (schedule_window_evictable()), oldest stop step first,
 * into done (SEG_MAX_WINDOWS of them at most) and their number into *np, for
 * the change that adds the window to finish.  Returns 0 once the schedule
 * would hold fewer than SEG_MAX_WINDOWS windows, else -1.  Changes nothing.
 */
int
schedule_make_room(struct coord *c, struct job *job, struct window **done,
    size_t *np)
{
	struct window	*w, *pick;
	int64_t		 min, max;
	size_t		 n = 0, i;
	int		 count;

	*np = 0;
	if ((count = schedule_pending_count(job)) < SEG_MAX_WINDOWS)
		return (0);
	min = schedule_job_min_step(c, job);
	max = schedule_job_max_step(c, job);
	while (count - (int)n >= SEG_MAX_WINDOWS && n < SEG_MAX_WINDOWS) {
		pick = NULL;
		TAILQ_FOREACH(w, &job->windows, entry) {
			if (!schedule_window_evictable(c, job, w, min, max))
				continue;
			for (i = 0; i < n && done[i] != w; i++)
				;
			if (i < n)
				continue;
			if (pick == NULL || w->stop_step < pick->stop_step)
				pick = w;
		}
		if (pick == NULL)
			return (-1);
		done[n++] = pick;
	}
	if (count - (int)n >= SEG_MAX_WINDOWS)
		return (-1);
	*np = n;
	return (0);
}

/*
 * Returns the highest step any live rank of the job reported, from the
 * nodes serving it, or -1 when none did.
 */
int64_t
schedule_job_max_step(const struct coord *c, const struct job *job)
{
	struct serving		 it = { 0 };
	struct node_job		*nj;
	int64_t			 max = -1;

	while (schedule_serving_next(c, job, &it, &nj) != NULL) {
		if (nj == NULL || nj->ranks_alive == 0)
			continue;
		if (nj->max_step > max)
			max = nj->max_step;
	}
	return (max);
}

/*
 * Notes that an agent serving job applied generation applied, generation
 * being the coordinator's now.  A job nobody scheduled (a coordinator that
 * forgot it, or lost it with its store) may have had windows its running
 * ranks ran: their ids, each one change of a generation, were at most
 * applied, and the job's next ids come after it.  Its windows that agent
 * still holds are of a schedule this coordinator committed past and no
 * longer has (the job was forgotten or reaped while the agent was away, or
 * before a restart): its empty schedule is then pushed at generation, so the
 * agent drops them as it would have had it been connected.  An applied
 * generation the coordinator never reached (a store lost) is not judged.
 */
void
schedule_job_applied(struct job *job, uint64_t applied, uint64_t generation)
{
	if (!schedule_job_unscheduled(job))
		return;
	if (applied < UINT32_MAX && applied >= job->next_window_id)
		job->next_window_id = (uint32_t)applied + 1;
	if (applied != 0 && applied < generation && job->forgot_gen <= applied)
		job->forgot_gen = generation;
}

/* Returns the generation of job's schedule as pushed: its own, or for a job
 * nobody scheduled since it was forgotten, the generation of that. */
uint64_t
schedule_job_push_generation(const struct job *job)
{
	return (job->generation != 0 ? job->generation : job->forgot_gen);
}

/* Returns the lowest step of the job's live ranks, or -1 when unknown. */
int64_t
schedule_job_min_step(const struct coord *c, const struct job *job)
{
	struct serving		 it = { 0 };
	struct node_job		*nj;
	int64_t			 min = -1;

	while (schedule_serving_next(c, job, &it, &nj) != NULL) {
		if (nj == NULL || nj->ranks_alive == 0 || nj->min_step < 0)
			continue;
		if (min == -1 || nj->min_step < min)
			min = nj->min_step;
	}
	return (min);
}

/*
 * Makes the window r asks for, steps not resolved yet: its ranks, output
 * directory and options over defaults (NULL: the table's).  Needs no
 * coordinator, so that it can be fuzzed alone.  Returns 0 with a new *wp
 * (caller frees), or -1 with ref saying why (*wp NULL).
 */
int
schedule_window_make(const struct options *defaults,
    const struct window_request *r, struct window **wp, struct refusal *ref)
{
	struct window	*w;
	const char	*field, *why;

	*wp = NULL;
	if ((w = window_new()) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	if ((r->ranks != NULL &&
	    valid_window_ranks(w, r->ranks, ref) == -1) ||
	    (r->output_subdir != NULL &&
	    valid_window_subdir(w, r->output_subdir, ref) == -1))
		goto fail;
	options_clear(&w->options);
	if (defaults != NULL && options_copy(&w->options, defaults) == -1) {
		refusal_set(ref, 500, NULL, "out of memory");
		goto fail;
	}
	if (r->options != NULL &&
	    options_over_apply(&w->options, r->options, &field, &why) == -1) {
		refusal_options(ref, field, why);
		goto fail;
	}
	w->no_collect = r->no_collect;
	*wp = w;
	return (0);
fail:
	window_free(w);
	return (-1);
}
