/*
 * One path for every change of a job's schedule.  An operation judges the
 * request against the model and builds what changes aside (a struct change);
 * change_publish() then takes the next generation, stores the changed rows and
 * the job's, commits, and only then applies the change to memory and pushes
 * the job's schedule to its agents.  Nothing in memory changes unless the
 * store committed; every change is one generation and one push.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "model.h"
#include "store.h"
#include "utf8.h"

/* How often the windows of a job grow at most (change_windows_grow()). */
#define CHANGE_GROW_MS		1000

/* What one change does to a job, built aside before it is stored. */
struct change {
	struct job	*job;
	struct window	*add;		/* a new window, on no list, or NULL */
	struct window	*cancel;	/* a window to cancel, or NULL */
	struct window	*finish[SEG_MAX_WINDOWS * 2];	/* to finish */
	size_t		 nfinish;
	struct window	*grow[SEG_MAX_WINDOWS];	/* ranks that came since */
	char		 grow_ranks[SEG_MAX_WINDOWS][SEG_RANKS_MAX];
	size_t		 ngrow;
	char		*config_json;	/* a new config (taken), or NULL */
	struct options	*defaults;	/* new defaults (moved), or NULL */
	const char	*rules;		/* new rules text (rules.c), or NULL */
	int		 forget;	/* the job forgotten, store and memory */
	int64_t		 now;		/* wall clock when it is published */
};

/* Returns when window w ended once state and finished, now if it ends. */
static int64_t
change_window_ended(const struct window *w, int state, int finished,
    int64_t now)
{
	if (w->ended_ns != 0)
		return (w->ended_ns);
	return (state == WINDOW_STATE_CANCELLED || finished ? now : 0);
}

/* Returns the generation that ended window w once state and finished, gen
 * if it ends in the change of gen. */
static uint64_t
change_window_ended_gen(const struct window *w, int state, int finished,
    uint64_t gen)
{
	if (w->ended_ns != 0)
		return (w->ended_gen);
	return (state == WINDOW_STATE_CANCELLED || finished ? gen : 0);
}

/* Stores window w of the change's job as it will be at generation gen:
 * state, finished and ranks (NULL: w's). */
static int
change_put_window(struct coord *c, const struct change *ch,
    const struct window *w, int state, int finished, const char *ranks,
    uint64_t gen)
{
	const struct job	*job = ch->job;
	struct store_window	 row;
	char			*opts;
	int			 rc;

	if ((opts = options_dump(&w->options)) == NULL)
		return (-1);
	row.job = job->name;
	row.id = w->id;
	row.start_step = w->start_step;
	row.stop_step = w->stop_step;
	row.ranks = ranks != NULL ? ranks : w->ranks;
	row.selector = w->selector;
	row.options = opts;
	row.output_subdir = w->output_subdir;
	row.no_collect = w->no_collect;
	row.trace_store = w->trace_store;
	row.refused_reason = !w->refused ? NULL : w->refused_why != NULL ?
	    w->refused_why : "";
	row.start_unix_ns = w->start_unix_ns;
	row.stop_unix_ns = w->stop_unix_ns;
	row.tolerance_ms = w->tolerance_ms;
	row.state = state;
	row.finished = finished;
	row.created_ns = w->created_ns;
	row.ended_ns = change_window_ended(w, state, finished, ch->now);
	row.generation = w == ch->add ? gen : w->created_gen;
	row.ended_generation = change_window_ended_gen(w, state, finished, gen);
	rc = store_put_window(c->store, &row);
	free(opts);
	return (rc);
}

/* Stores the change's job as it will be, at generation gen. */
static int
change_put_job(struct coord *c, const struct change *ch, uint64_t gen)
{
	const struct job	*job = ch->job;
	struct store_job	 row;
	char			*defaults, *rules = NULL;
	int			 rc;

	if ((defaults = options_dump(ch->defaults != NULL ? ch->defaults :
	    &job->defaults)) == NULL)
		return (-1);
	row.rules = ch->rules != NULL ? ch->rules : (rules = rules_dump(job));
	row.name = job->name;
	row.generation = gen;
	row.next_window_id = ch->add != NULL ? ch->add->id + 1 :
	    job->next_window_id;
	row.config = ch->config_json != NULL ? ch->config_json :
	    job->config_json;
	row.defaults = defaults;
	row.created_ns = job->created_ns;
	rc = store_put_job(c->store, &row);
	free(defaults);
	free(rules);
	return (rc);
}

/* Applies a committed change to memory, at generation gen. */
static void
change_apply(struct coord *c, struct change *ch, uint64_t gen)
{
	struct job	*job = ch->job;
	size_t		 i;

	c->generation = gen;
	if (ch->forget) {
		jobs_forget(c, job, gen);
		ch->job = NULL;
		return;
	}
	job->generation = gen;
	for (i = 0; i < ch->nfinish; i++) {
		ch->finish[i]->ended_gen = change_window_ended_gen(
		    ch->finish[i], ch->finish[i]->state, 1, gen);
		ch->finish[i]->ended_ns = change_window_ended(ch->finish[i],
		    ch->finish[i]->state, 1, ch->now);
		ch->finish[i]->finished = 1;
		log_debug("%s: job %s window %u finished", __func__,
		    job->name, ch->finish[i]->id);
	}
	for (i = 0; i < ch->ngrow; i++) {
		memcpy(ch->grow[i]->ranks, ch->grow_ranks[i],
		    sizeof(ch->grow[i]->ranks));
		if (ranks_parse(ch->grow[i]->ranks, &ch->grow[i]->rankset,
		    NULL) == -1)
			fatalx("%s: window %u: a grown rank list does not "
			    "parse", __func__, ch->grow[i]->id);
	}
	if (ch->cancel != NULL) {
		ch->cancel->ended_gen = change_window_ended_gen(ch->cancel,
		    WINDOW_STATE_CANCELLED, ch->cancel->finished, gen);
		ch->cancel->ended_ns = change_window_ended(ch->cancel,
		    WINDOW_STATE_CANCELLED, ch->cancel->finished, ch->now);
		ch->cancel->state = WINDOW_STATE_CANCELLED;
	}
	if (ch->add != NULL) {
		ch->add->created_gen = gen;
		job->next_window_id = ch->add->id + 1;
		schedule_window_insert(job, ch->add);
		ch->add = NULL;
	}
	if (ch->config_json != NULL) {
		free(job->config_json);
		job->config_json = ch->config_json;
		ch->config_json = NULL;
	}
	if (ch->defaults != NULL) {
		options_clear(&job->defaults);
		job->defaults = *ch->defaults;
		options_init(ch->defaults);	/* moved into the job */
	}
}

/* Stages the change's windows for the event stream, at generation gen. */
static void
change_journal(struct coord *c, const struct change *ch, uint64_t gen)
{
	size_t	 i;

	for (i = 0; i < ch->nfinish; i++)
		journal_stage_window_detail(c, ch->job, ch->finish[i],
		    JOURNAL_WINDOW_DONE, gen, clock_wall_ns(),
		    journal_window_refused(ch->finish[i]));
	if (ch->cancel != NULL)
		journal_stage_window(c, ch->job, ch->cancel,
		    JOURNAL_WINDOW_CANCELLED, gen);
	if (ch->add != NULL)
		journal_stage_window(c, ch->job, ch->add,
		    JOURNAL_WINDOW_SCHEDULED, gen);
	for (i = 0; i < ch->ngrow; i++)
		journal_stage_window_detail(c, ch->job, ch->grow[i],
		    JOURNAL_WINDOW_GROWN, gen, clock_wall_ns(),
		    ch->grow_ranks[i]);
}

/* Frees a change's commit record. */
static void
change_commit_free(struct change_commit *cc)
{
	free(cc->job);
	free(cc);
}

/*
 * The store's word on a change.  Committed: its events published, its job
 * pushed, its waiter told.  Not (etcd, after memory took it): its waiter told
 * (a 503), and the model is unsure (the leader reloads the state from etcd).
 */
static void
change_committed(void *arg, int rc)
{
	struct change_commit	*cc = arg;
	struct coord		*c = cc->c;
	const struct coord_hooks *h = c->hooks;
	struct job		*job;

	TAILQ_REMOVE(&c->commits, cc, entry);
	if (rc == 0) {
		journal_publish_to(c, cc->staged);
		if ((job = schedule_job_find(c, cc->job)) != NULL &&
		    h != NULL && h->job_changed != NULL)
			h->job_changed(c, job);
	} else {
		journal_discard(c);
		if (h != NULL && h->model_unsure != NULL)
			h->model_unsure(c);
	}
	if (cc->held != NULL && h != NULL && h->committed != NULL)
		h->committed(c, cc, rc);
	change_commit_free(cc);
}

/*
 * Returns the last change waiter made that is not committed yet and holds
 * nothing, or NULL: the store commits in order.
 */
struct change_commit *
change_pending(struct coord *c, void *waiter)
{
	struct change_commit	*cc;

	if (waiter == NULL)
		return (NULL);
	TAILQ_FOREACH_REVERSE(cc, &c->commits, change_commitq, entry) {
		if (cc->waiter == waiter && cc->held == NULL)
			return (cc);
	}
	return (NULL);
}

/*
 * Publishes a change: the next generation, the changed rows and the job's
 * stored and committed, then the change applied to memory and the job's
 * schedule pushed to its agents.  Over etcd the commit does not block: the
 * change is applied to memory once etcd has it, and its push and answer
 * wait for the commit (change_committed()).  Returns 0, or -1 with nothing
 * changed.
 */
static int
change_publish(struct coord *c, struct change *ch)
{
	struct job		*job = ch->job;
	struct change_commit	*cc;
	uint64_t		 gen;
	size_t			 i;

	/* etcd away: refused now (a 503), not held until it answers. */
	if (store_unavailable(c->store) != NULL)
		return (-1);
	/* Its operation finished the batch of events before it judged the
	 * change (intake_flush()): a change never joins one. */
	if (store_batch_open(c->store))
		fatalx("%s: an event batch is open", __func__);
	if (store_begin(c->store) == -1)
		return (-1);
	ch->now = clock_wall_ns();
	gen = c->generation + 1;
	/* Never reached (2^53 changes); a row past it would not load. */
	if (!valid_generation(gen)) {
		log_warnx("%s: the generation counter is used up", __func__);
		goto fail;
	}
	if (store_put_generation(c->store, gen) == -1)
		goto fail;
	if (ch->forget && store_drop_job(c->store, job->name) == -1)
		goto fail;
	for (i = 0; i < ch->nfinish; i++) {
		if (change_put_window(c, ch, ch->finish[i],
		    ch->finish[i]->state, 1, NULL, gen) == -1)
			goto fail;
	}
	for (i = 0; i < ch->ngrow; i++) {
		if (change_put_window(c, ch, ch->grow[i],
		    ch->grow[i]->state, ch->grow[i]->finished,
		    ch->grow_ranks[i], gen) == -1)
			goto fail;
	}
	if (ch->cancel != NULL && change_put_window(c, ch, ch->cancel,
	    WINDOW_STATE_CANCELLED, ch->cancel->finished, NULL, gen) == -1)
		goto fail;
	if (ch->add != NULL && change_put_window(c, ch, ch->add,
	    ch->add->state, ch->add->finished, NULL, gen) == -1)
		goto fail;
	change_journal(c, ch, gen);
	if ((!ch->forget && change_put_job(c, ch, gen) == -1) ||
	    (cc = calloc(1, sizeof(*cc))) == NULL)
		goto fail;
	if ((cc->job = strdup(job->name)) == NULL) {
		free(cc);
		goto fail;
	}
	cc->c = c;
	cc->staged = journal_staged(c);
	cc->waiter = c->waiter;
	TAILQ_INSERT_TAIL(&c->commits, cc, entry);
	/* A blocking store calls change_committed() before it returns. */
	if (store_commit_async(c->store, change_committed, cc) == -1) {
		TAILQ_REMOVE(&c->commits, cc, entry);
		change_commit_free(cc);
		goto fail;
	}
	change_apply(c, ch, gen);
	return (0);
fail:
	store_rollback(c->store);
	journal_discard(c);
	return (-1);
}

/*
 * Refuses a change the store did not commit: 503 when the store refuses
 * writes for now (etcd without quorum, a deposed leader), else 500.
 * Returns -1.
 */
static int
change_store_refused(struct coord *c, struct refusal *ref)
{
	const char	*why = store_unavailable(c->store);

	if (why != NULL)
		return (refusal_set(ref, 503, NULL, "store unavailable: %s",
		    why));
	return (refusal_set(ref, 500, NULL, "cannot store the change"));
}

/* Starts an empty change of job. */
static void
change_init(struct change *ch, struct job *job)
{
	memset(ch, 0, sizeof(*ch));
	ch->job = job;
}

/*
 * Returns 1 with ref saying why when every live rank of job has begun step
 * start already (a window there would only be skipped), else 0.  The steps
 * are the coordinator's view, which lags the ranks: a start it judges ahead
 * may still be passed when the ranks read the schedule.
 */
static int
change_window_behind(struct coord *c, struct job *job, int64_t start,
    struct refusal *ref)
{
	int64_t	 min, max;
	char	 at[64];

	if (schedule_job_ranks_alive(c, job) == 0 ||
	    (min = schedule_job_min_step(c, job)) < 0 || start > min)
		return (0);
	max = schedule_job_max_step(c, job);
	if (max > min)
		snprintf(at, sizeof(at), "steps %" PRId64 "-%" PRId64, min, max);
	else
		snprintf(at, sizeof(at), "step %" PRId64, min);
	refusal_set(ref, 409, "start_step", "job %s is at %s: every live rank "
	    "has begun step %" PRId64 " already; start after step %" PRId64
	    " (or force it)", job->name, at, start, max);
	return (1);
}

/*
 * Sets time window w from r: its start r->at_unix_ns, judged against the
 * coordinator's clock (not in the past, not too far ahead), its stop
 * r->duration_ms later, the tolerance of the nodes' clock offsets.  Returns
 * 0, or -1 with ref saying why.
 */
static int
change_window_times(const struct window_request *r, struct window *w,
    struct refusal *ref)
{
	int64_t	 now = clock_wall_ns(), ahead_ms;
	char	 at[40], clock[40];

	if (!r->has_duration)
		return (refusal_set(ref, 400, "duration_ms", "a time window "
		    "needs duration_ms besides at"));
	if (r->duration_ms < 1 || r->duration_ms > COORD_DURATION_MAX_MS)
		return (refusal_set(ref, 400, "duration_ms", "duration_ms %"
		    PRId64 ": from 1 ms to %lld (a day)", r->duration_ms,
		    COORD_DURATION_MAX_MS));
	/* Both times said: a start typed in local time with a Z, or on a
	 * clock that is off, shows at once. */
	ahead_ms = (r->at_unix_ns - now) / 1000000;
	clock_rfc3339(r->at_unix_ns, at, sizeof(at));
	clock_rfc3339(now, clock, sizeof(clock));
	if (ahead_ms < -COORD_AT_PAST_MS)
		return (refusal_set(ref, 400, "at", "at %s is %" PRId64 " ms "
		    "in the past: the coordinator's clock says %s", at,
		    -ahead_ms, clock));
	if (ahead_ms > COORD_AT_AHEAD_MS)
		return (refusal_set(ref, 400, "at", "at %s is %" PRId64 " s "
		    "ahead: at most %lld (7 days); the coordinator's clock "
		    "says %s", at, ahead_ms / 1000, COORD_AT_AHEAD_MS / 1000,
		    clock));
	if (r->has_tolerance && (r->tolerance_ms < 0 ||
	    r->tolerance_ms > COORD_TOLERANCE_MAX_MS))
		return (refusal_set(ref, 400, "tolerance_ms", "tolerance_ms %"
		    PRId64 ": from 0 to %d", r->tolerance_ms,
		    COORD_TOLERANCE_MAX_MS));
	w->start_unix_ns = r->at_unix_ns;
	w->stop_unix_ns = r->at_unix_ns + r->duration_ms * 1000000;
	w->tolerance_ms = r->has_tolerance ? r->tolerance_ms :
	    COORD_TOLERANCE_MS;
	return (0);
}

/* Gives window w the job's own trace store of now (PUT .../trace-store), if
 * it has one.  Returns 0, or -1 out of memory. */
static int
change_window_store(struct window *w, const struct job *job)
{
	if (job->trace_store[0] == '\0')
		return (0);
	return ((w->trace_store = strdup(job->trace_store)) == NULL ? -1 : 0);
}

/*
 * Adds the window r asks for to job name, creating the job, its steps
 * resolved (in_steps and roundup against the job's ranks) and its options
 * over the job's defaults.  Windows no rank can still run leave a full
 * schedule in the same change.  Returns 0 with the window in *wp and the job
 * in *jobp, or -1 with ref saying why.
 */
int
change_window_add(struct coord *c, const char *name,
    const struct window_request *r, struct window **wp, struct job **jobp,
    struct refusal *ref)
{
	struct change		 ch;
	struct window_request	 sel;
	struct job		*job;
	struct window		*w, *other;
	const char		*node;
	char			 ranks[SEG_RANKS_MAX], *selector;
	char			 at[40], other_at[40];
	int64_t			 start, stop, max = -1;

	/* Judged on every event read so far: events already read may end a
	 * window (their commit takes it out of the schedule). */
	intake_flush(c);
	/* Ranks named by what they are: as the rank list they resolve to. */
	if (select_window_ranks(c, name, r, ranks, sizeof(ranks), &selector,
	    ref) == -1)
		return (-1);
	if (ranks[0] != '\0') {
		sel = *r;
		sel.ranks = ranks;
		r = &sel;
	}
	/* The job is created only once the window is accepted. */
	job = schedule_job_find(c, name);
	if (schedule_window_make(job != NULL ? &job->defaults : NULL, r, &w,
	    ref) == -1) {
		free(selector);
		return (-1);
	}
	w->selector = selector;		/* it grows as ranks come */
	/* A job that says "collect": false: its windows say so too. */
	if (job != NULL && job->no_collect)
		w->no_collect = 1;
	if (job != NULL && change_window_store(w, job) == -1) {
		refusal_set(ref, 500, NULL, "out of memory");
		goto fail;
	}
	if (w->rankset.nranges > 0 && (node = legacy_ranks_refused(c, name)) !=
	    NULL) {
		refusal_set(ref, 409, "ranks", "job %s is served as a "
		    "MindSpore legacy job (node %s), whose profiler cannot "
		    "target ranks: leave ranks out", name, node);
		goto fail;
	}
	if (r->has_at) {
		if (change_window_times(r, w, ref) == -1)
			goto fail;
		start = stop = 0;
	} else if (r->has_in) {
		max = job != NULL ? schedule_job_step_now(c, job) : -1;
		if (max < 0) {
			refusal_set(ref, 409, "in_steps", "no rank of job %s "
			    "has reported a step yet (or every node serving it "
			    "is lost), and in_steps counts from their steps: "
			    "check the job's name, or give start_step", name);
			goto fail;
		}
	}
	if (!r->has_at && (schedule_window_resolve(r, max, &start, &stop,
	    ref) == -1 || (!r->force && job != NULL &&
	    change_window_behind(c, job, start, ref))))
		goto fail;
	w->start_step = start;
	w->stop_step = stop;
	if (job == NULL && (job = schedule_job_get(c, name)) == NULL) {
		refusal_set(ref, 500, NULL, "out of memory");
		goto fail;
	}
	if (r->has_at && (other = schedule_overlap_time(c, job,
	    w->start_unix_ns, w->stop_unix_ns)) != NULL) {
		clock_rfc3339(w->start_unix_ns, at, sizeof(at));
		clock_rfc3339(other->start_unix_ns, other_at, sizeof(other_at));
		refusal_set(ref, 409, "at", "at %s for %" PRId64 " ms overlaps "
		    "window %u at %s for %" PRId64 " ms (%s)", at,
		    (w->stop_unix_ns - w->start_unix_ns) / 1000000, other->id,
		    other_at, (other->stop_unix_ns - other->start_unix_ns) /
		    1000000, schedule_window_state(job, other));
		goto fail;
	}
	if (!r->has_at && (other = schedule_overlap(c, job, start, stop)) !=
	    NULL) {
		refusal_set(ref, 409, "start_step", "[%" PRId64 ", %" PRId64
		    "] overlaps window %u [%" PRId64 ", %" PRId64 "] (%s)",
		    start, stop, other->id, other->start_step, other->stop_step,
		    schedule_window_state(job, other));
		goto fail;
	}
	change_init(&ch, job);
	if (schedule_make_room(c, job, ch.finish, &ch.nfinish) == -1) {
		refusal_set(ref, 409, NULL, "job %s has %d windows pending, "
		    "the most a schedule holds", name, SEG_MAX_WINDOWS);
		goto fail;
	}
	w->id = job->next_window_id;
	w->created_ns = clock_wall_ns();
	ch.add = w;
	if (change_publish(c, &ch) == -1) {
		change_store_refused(c, ref);
		goto fail;
	}
	if (r->has_at)
		log_info("%s: job %s time window %u at %" PRId64 " ms for %"
		    PRId64 " ms generation %llu", __func__, name, w->id,
		    w->start_unix_ns / 1000000, r->duration_ms,
		    (unsigned long long)job->generation);
	else
		log_info("%s: job %s window %u [%" PRId64 ", %" PRId64 "] "
		    "generation %llu", __func__, name, w->id, start, stop,
		    (unsigned long long)job->generation);
	*jobp = job;
	*wp = w;
	return (0);
fail:
	window_free(w);
	return (-1);
}

/*
 * Cancels window id of job name; one cancelled already stays so, unchanged.
 * Returns 0 with the job in *jobp, or -1 with ref saying why.
 */
int
change_window_cancel(struct coord *c, const char *name, uint32_t id,
    struct job **jobp, struct refusal *ref)
{
	struct change	 ch;
	struct job	*job;
	struct window	*w;

	/* Judged on every event read so far: events already read may end a
	 * window (their commit takes it out of the schedule). */
	intake_flush(c);
	if ((job = schedule_job_find(c, name)) == NULL)
		return (refusal_set(ref, 404, "job", "no job %s", name));
	if ((w = schedule_window_find(job, id)) == NULL)
		return (refusal_set(ref, 404, "id", "job %s has no window %"
		    PRIu32, name, id));
	*jobp = job;
	if (w->state == WINDOW_STATE_CANCELLED)
		return (0);
	if (w->finished)
		return (refusal_set(ref, 409, "id", "window %" PRIu32
		    " is done", id));
	change_init(&ch, job);
	ch.cancel = w;
	if (change_publish(c, &ch) == -1)
		return (change_store_refused(c, ref));
	log_info("%s: job %s window %" PRIu32 " cancelled, generation %llu",
	    __func__, name, id, (unsigned long long)job->generation);
	return (0);
}

/*
 * Forgets job r->job: its windows, ranks and events leave the store and
 * memory, and its agents get an empty schedule.  Refused while a window of it
 * runs (a rank started it and it is not done) unless r->force.  Returns 0, or
 * -1 with ref saying why.
 */
int
change_job_forget(struct coord *c, const struct job_forget_request *r,
    struct refusal *ref)
{
	struct change	 ch;
	struct job	*job;
	struct window	*w;

	/* Judged on every event read so far: events already read may end a
	 * window (their commit takes it out of the schedule). */
	intake_flush(c);
	if ((job = schedule_job_find(c, r->job)) == NULL)
		return (refusal_set(ref, 404, "job", "no job %s", r->job));
	TAILQ_FOREACH(w, &job->windows, entry) {
		if (r->force ||
		    strcmp(schedule_window_state(job, w), "running") != 0)
			continue;
		return (refusal_set(ref, 409, "job", "job %s has window %"
		    PRIu32 " [%" PRId64 ", %" PRId64 "] running: wait for it "
		    "to end, cancel it, or force (its ranks then profile on to "
		    "its stop step)", r->job, w->id, w->start_step,
		    w->stop_step));
	}
	change_init(&ch, job);
	ch.forget = 1;
	if (change_publish(c, &ch) == -1)
		return (change_store_refused(c, ref));
	log_info("%s: job %s forgotten, generation %llu", __func__, r->job,
	    (unsigned long long)c->generation);
	return (0);
}

/*
 * Sets the config of job name, creating the job: text (taken) as stored,
 * *defaults (moved into the job on success) for later windows, and a window
 * [start, stop] with those options unless start is -1 or the job has that
 * window pending already.  Returns 0 with the job in *jobp and the window in
 * *wp (NULL: none), or -1 with ref saying why.
 */
int
change_config_set(struct coord *c, const char *name, char *text,
    struct options *defaults, int64_t start, int64_t stop, struct job **jobp,
    struct window **wp, struct refusal *ref)
{
	struct change	 ch;
	struct job	*job;
	struct window	*w = NULL, *it, *same = NULL, *other;

	/* Judged on every event read so far: events already read may end a
	 * window (their commit takes it out of the schedule). */
	intake_flush(c);
	if ((job = schedule_job_get(c, name)) == NULL) {
		refusal_set(ref, 500, NULL, "out of memory");
		goto fail;
	}
	if (start > 0) {
		TAILQ_FOREACH(it, &job->windows, entry) {
			if (!it->finished && it->state ==
			    WINDOW_STATE_SCHEDULED && it->start_step == start &&
			    it->stop_step == stop)
				same = it;
		}
	}
	change_init(&ch, job);
	if (start > 0 && same == NULL) {
		if ((other = schedule_overlap(c, job, start, stop)) != NULL) {
			refusal_set(ref, 409, "start_step", "[%" PRId64 ", %"
			    PRId64 "] overlaps window %u [%" PRId64 ", %"
			    PRId64 "]", start, stop, other->id,
			    other->start_step, other->stop_step);
			goto fail;
		}
		if (schedule_make_room(c, job, ch.finish, &ch.nfinish) == -1) {
			refusal_set(ref, 409, NULL, "job %s has %d windows "
			    "pending", name, SEG_MAX_WINDOWS);
			goto fail;
		}
		if ((w = window_new()) == NULL ||
		    options_copy(&w->options, defaults) == -1) {
			refusal_set(ref, 500, NULL, "out of memory");
			goto fail;
		}
		w->start_step = start;
		w->stop_step = stop;
		w->id = job->next_window_id;
		w->created_ns = clock_wall_ns();
		w->no_collect = job->no_collect;	/* PUT .../collect */
		ch.add = w;
		if (change_window_store(w, job) == -1) {
			refusal_set(ref, 500, NULL, "out of memory");
			goto fail;
		}
	}
	ch.config_json = text;
	ch.defaults = defaults;
	if (change_publish(c, &ch) == -1) {
		change_store_refused(c, ref);
		goto fail;
	}
	log_info("%s: job %s config stored, generation %llu", __func__, name,
	    (unsigned long long)job->generation);
	*jobp = job;
	*wp = w != NULL ? w : same;
	return (0);
fail:
	window_free(w);
	free(text);
	return (-1);
}

/*
 * Stores text as the rules of job name (creating the job), as a change of its
 * own: one generation, one push of the schedule unchanged, so that a job with
 * rules is one somebody scheduled.  The caller applies the rules to memory
 * once this returns 0 (the job in *jobp); -1 with ref saying why.
 */
int
change_rules_set(struct coord *c, const char *name, const char *text,
    struct job **jobp, struct refusal *ref)
{
	struct change	 ch;
	struct job	*job;

	/* Judged on every event read so far: events already read may end a
	 * window (their commit takes it out of the schedule). */
	intake_flush(c);
	if ((job = schedule_job_get(c, name)) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	change_init(&ch, job);
	ch.rules = text;
	if (change_publish(c, &ch) == -1)
		return (refusal_set(ref, 500, NULL, "cannot store the "
		    "change"));
	log_info("%s: job %s rules stored, generation %llu", __func__, name,
	    (unsigned long long)job->generation);
	*jobp = job;
	return (0);
}

/*
 * Takes the windows that are over (schedule_window_over(), or for a job only
 * its agents judge, legacy_judges(), once they all ended it) out of the pushed
 * schedule and pushes the smaller schedule: for every job, or with dirty_only
 * for the jobs whose ranks ended a window or left since the last call (right
 * after their events are committed, so that a finished window frees its steps
 * at once).  A failure is retried at the next housekeeping tick.
 */
void
change_windows_over(struct coord *c, int dirty_only)
{
	struct job	*job;
	struct window	*w, *done[SEG_MAX_WINDOWS * 2];
	const char	*why;
	int64_t		 min;
	size_t		 n;

	/* Judged on every event read so far. */
	intake_flush(c);
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (dirty_only && !job->windows_dirty)
			continue;
		job->windows_dirty = 0;
		min = schedule_job_min_step(c, job);
		n = 0;
		TAILQ_FOREACH(w, &job->windows, entry) {
			if (w->finished || n == sizeof(done) / sizeof(done[0]))
				continue;
			/* Refused by every node serving the job: no rank
			 * will ever run it.  The reason is kept: the nodes
			 * forget the window once it left the schedule. */
			why = NULL;
			if (w->state != WINDOW_STATE_CANCELLED &&
			    legacy_refused_everywhere(c, job, w->id, &why)) {
				w->refused = 1;
				free(w->refused_why);
				w->refused_why = why != NULL && why[0] != '\0' ?
				    strdup(why) : NULL;
				done[n++] = w;
			} else if (legacy_ended_everywhere(c, job, w->id) ||
			    (!legacy_judges(c, job) &&
			    schedule_window_over(c, job, w, min)))
				done[n++] = w;
		}
		if (n > 0 && change_windows_finish(c, job, done, n) == -1)
			log_warnx("%s: cannot store finished windows of %s",
			    __func__, job->name);
	}
}

/*
 * Takes the n windows of done out of the job's pushed schedule (they stay in
 * status) in one change.  Returns 0, or -1 with nothing changed.
 */
int
change_windows_finish(struct coord *c, struct job *job, struct window **done,
    size_t n)
{
	struct change	 ch;

	/* Judged on every event read so far: events already read may end a
	 * window (their commit takes it out of the schedule). */
	intake_flush(c);
	change_init(&ch, job);
	if (n > sizeof(ch.finish) / sizeof(ch.finish[0]))
		n = sizeof(ch.finish) / sizeof(ch.finish[0]);
	memcpy(ch.finish, done, n * sizeof(*done));
	ch.nfinish = n;
	return (change_publish(c, &ch));
}

/*
 * Adds to the windows of every job whose ranks attached since, that name
 * ranks by what they are, the ranks that match them now
 * (select_window_grow()): one change a job, so that its agents get the
 * grown lists; a job's windows are looked at again once CHANGE_GROW_MS
 * passed since the last time.  A list that cannot grow is logged and
 * counted; it stays as it was.
 */
void
change_windows_grow(struct coord *c)
{
	static struct log_limit	 grow_log;
	struct change		 ch;
	struct refusal		 ref;
	struct job		*job;
	struct window		*w;
	uint64_t		 now = clock_mono_ms();
	int			 rc;

	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (!job->ranks_came || now - job->grown_ms < CHANGE_GROW_MS)
			continue;
		/* Judged on every event read so far. */
		intake_flush(c);
		job->ranks_came = 0;
		job->grown_ms = now;
		change_init(&ch, job);
		TAILQ_FOREACH(w, &job->windows, entry) {
			if (w->selector == NULL || w->finished ||
			    w->state != WINDOW_STATE_SCHEDULED ||
			    ch.ngrow == SEG_MAX_WINDOWS)
				continue;
			memset(&ref, 0, sizeof(ref));
			rc = select_window_grow(c, job, w,
			    ch.grow_ranks[ch.ngrow], SEG_RANKS_MAX, &ref);
			if (rc == 1)
				ch.grow[ch.ngrow++] = w;
			else if (rc == -1) {
				c->metrics.select_grow_refused++;
				log_limited(&grow_log, LOG_LEVEL_QUIET, "%s: "
				    "job %s window %u keeps ranks %s: %s",
				    __func__, job->name, w->id, w->ranks,
				    ref.msg);
			}
		}
		if (ch.ngrow == 0)
			continue;
		if (change_publish(c, &ch) == -1) {
			log_warnx("%s: cannot store the grown windows of %s",
			    __func__, job->name);
			job->ranks_came = 1;	/* again at the next tick */
			continue;
		}
		c->metrics.select_grown += ch.ngrow;
		log_info("%s: job %s: %zu windows took ranks that came, "
		    "generation %llu", __func__, job->name, ch.ngrow,
		    (unsigned long long)job->generation);
	}
}
