/*
 * The coordinator's model linked directly, no daemon: a struct coord with a
 * real store in a temporary directory and one node whose connection is a
 * bufferevent without a socket, so that what is pushed to it stays in its
 * output buffer to be counted.  Window order, overlaps and states, relative
 * windows, the exactly-once rules of rank events, windows finished and
 * evicted, and a change into a full schedule (one generation, one push).
 */

#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sqlite3.h>

#include "clock.h"
#include "coord.h"
#include "fakeagent.h"
#include "frame.h"
#include "log.h"
#include "store.h"
#include "unit_util.h"

#define JOB		"unit-job"
#define K_ATTACHED	DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED
#define K_STARTED	DYNPROF__V1__EVENT_KIND__EVENT_STARTED
#define K_STOPPED	DYNPROF__V1__EVENT_KIND__EVENT_STOPPED
#define K_SKIPPED	DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED

struct fixture {
	char		 dir[64];
	struct coord	*c;
	struct conn	*conn;		/* node n0's, READY */
};

/* Opens the model over a store in a new temporary directory. */
static int
setup(void **state)
{
	struct fixture	*f;
	struct coord	*c;
	const char	*why;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (c = calloc(1, sizeof(*c))) == NULL ||
	    unit_tmpdir(f->dir, sizeof(f->dir)) == -1)
		return (-1);
	c->conf.heartbeat_ms = 1000;
	coord_bounds_init(&c->conf);
	coord_init(c);
	c->started_ns = clock_wall_ns();
	if ((c->base = event_base_new()) == NULL ||
	    (c->store = store_open(f->dir, &why)) == NULL)
		return (-1);
	f->c = c;
	*state = f;
	return (0);
}

/* Frees the model and removes the store's directory. */
static int
teardown(void **state)
{
	struct fixture	*f = *state;
	struct sub	*s;

	if (f->conn != NULL) {
		while ((s = TAILQ_FIRST(&f->conn->subs)) != NULL) {
			TAILQ_REMOVE(&f->conn->subs, s, conn_entry);
			TAILQ_REMOVE(&s->job->subs, s, job_entry);
			free(s);
		}
		f->conn->node->conn = NULL;
		bufferevent_free(f->conn->bev);
		free(f->conn);
	}
	jobs_free_all(f->c);
	store_close(f->c->store);
	event_base_free(f->c->base);
	free(f->c);
	unit_rmstore(f->dir);
	free(f);
	return (0);
}

/* Connects node n0 (a connection that never sends) and subscribes it to job. */
static void
connect_node(struct fixture *f, struct job *job)
{
	struct conn	*conn;
	struct sub	*s;

	assert_non_null(conn = calloc(1, sizeof(*conn)));
	assert_non_null(s = calloc(1, sizeof(*s)));
	conn->coord = f->c;
	conn->state = CONN_READY;
	snprintf(conn->peer, sizeof(conn->peer), "unit");
	TAILQ_INIT(&conn->subs);
	assert_non_null(conn->bev = bufferevent_socket_new(f->c->base, -1, 0));
	bufferevent_disable(conn->bev, EV_READ | EV_WRITE);
	assert_non_null(conn->node = schedule_node_get(f->c, "n0"));
	conn->node->conn = conn;
	s->job = job;
	s->conn = conn;
	TAILQ_INSERT_TAIL(&job->subs, s, job_entry);
	TAILQ_INSERT_TAIL(&conn->subs, s, conn_entry);
	conn->nsubs = 1;
	f->conn = conn;
}

/* Returns how many frames were pushed to node n0, and forgets them. */
static int
pushes(struct fixture *f)
{
	struct evbuffer	*out = bufferevent_get_output(f->conn->bev);
	uint8_t		 hdr[FRAME_HEADER_LEN];
	uint32_t	 len;
	int		 n = 0;

	/* A bufferevent's output is frozen at the front for all but it. */
	evbuffer_unfreeze(out, 1);
	while (evbuffer_copyout(out, hdr, sizeof(hdr)) == sizeof(hdr)) {
		len = (uint32_t)hdr[1] << 24 | (uint32_t)hdr[2] << 16 |
		    (uint32_t)hdr[3] << 8 | hdr[4];
		evbuffer_drain(out, sizeof(hdr) + len);
		n++;
	}
	evbuffer_freeze(out, 1);
	return (n);
}

/* Reports ranks 0..n-1 of job alive on n0 at step. */
static void
progress(struct fixture *f, const char *job, int n, int64_t step)
{
	Dynprof__V1__Progress		 p = DYNPROF__V1__PROGRESS__INIT;
	Dynprof__V1__RankProgress	 rp[8], *rpp[8];
	int				 i;

	assert_true(n <= 8);
	for (i = 0; i < n; i++) {
		dynprof__v1__rank_progress__init(&rp[i]);
		rp[i].rank = i;
		rp[i].step = step;
		rp[i].pid = 1000 + i;		/* as fa_rank_event()'s */
		rp[i].state = DYNPROF__V1__RANK_STATE__RANK_ATTACHED;
		rpp[i] = &rp[i];
	}
	p.job = (char *)job;
	p.ranks_alive = (uint32_t)n;
	p.min_step = p.max_step = step;
	p.n_ranks = (size_t)n;
	p.ranks = rpp;
	schedule_apply_progress(f->c, schedule_node_get(f->c, "n0"), &p);
}

/* Applies one event of rank on n0 in a transaction of its own; returns what
 * schedule_apply_event() returned. */
static int
event(struct fixture *f, int kind, int32_t rank, uint32_t window, int64_t step)
{
	Dynprof__V1__RankEvent	 ev;
	int			 rc;

	fa_rank_event(&ev, kind, JOB, rank, window, step);
	ev.time_unix_ns = 1700000000000000000LL + step;
	assert_int_equal(store_begin(f->c->store), 0);
	rc = schedule_apply_event(f->c, schedule_node_get(f->c, "n0"), &ev);
	assert_int_equal(schedule_store_ranks(f->c), 0);
	schedule_ranks_stored(f->c);
	assert_int_equal(store_commit(f->c->store), 0);
	return (rc);
}

/* Adds window [start, stop] to JOB through the change path; returns its id,
 * or -1 with *ref saying why. */
static int
add(struct fixture *f, int64_t start, int64_t stop, struct refusal *ref)
{
	struct window_request	 r;
	struct window		*w;
	struct job		*job;

	memset(&r, 0, sizeof(r));
	r.start = start;
	r.stop = stop;
	r.has_start = r.has_stop = 1;
	if (change_window_add(f->c, JOB, &r, &w, &job, ref) == -1)
		return (-1);
	return ((int)w->id);
}

/* Adds windows 1 [10, 20] and 2 [30, 40] to JOB; returns the job. */
static struct job *
two_windows(struct fixture *f)
{
	struct refusal	 ref;

	assert_int_equal(add(f, 10, 20, &ref), 1);
	assert_int_equal(add(f, 30, 40, &ref), 2);
	return (schedule_job_find(f->c, JOB));
}

/* Windows are kept by start step, then id, whatever the order they came in. */
static void
test_window_insert(void **state)
{
	struct fixture	*f = *state;
	struct job	*job;
	struct window	*w;
	int64_t		 starts[] = { 50, 10, 30, 10, 70 };
	uint32_t	 want[] = { 2, 4, 3, 1, 5 };
	size_t		 i;

	assert_non_null(job = schedule_job_get(f->c, JOB));
	assert_true(schedule_job_unscheduled(job));
	for (i = 0; i < 5; i++) {
		assert_non_null(w = window_new());
		w->id = (uint32_t)i + 1;
		w->start_step = starts[i];
		w->stop_step = starts[i] + 5;
		schedule_window_insert(job, w);
	}
	i = 0;
	TAILQ_FOREACH(w, &job->windows, entry)
		assert_int_equal(w->id, want[i++]);
	assert_int_equal(schedule_pending_count(job), 5);
	assert_non_null(schedule_window_find(job, 3));
	assert_null(schedule_window_find(job, 9));
	assert_false(schedule_job_unscheduled(job));
}

/*
 * A scheduled window holds its steps; a cancelled one no rank runs does not;
 * status names each state.
 */
static void
test_overlap_state(void **state)
{
	struct fixture	*f = *state;
	struct refusal	 ref;
	struct job	*job;
	struct window	*w;

	job = two_windows(f);
	assert_int_equal(add(f, 15, 25, &ref), -1);
	assert_int_equal(ref.code, 409);
	assert_string_equal(ref.field, "start_step");
	assert_string_equal(ref.msg, "[15, 25] overlaps window 1 [10, 20] "
	    "(scheduled)");
	assert_int_equal(add(f, 21, 29, &ref), 3);
	assert_ptr_equal(schedule_overlap(f->c, job, 40, 45),
	    schedule_window_find(job, 2));
	assert_null(schedule_overlap(f->c, job, 41, 45));

	/* Cancelled and not running: its steps are free. */
	assert_int_equal(change_window_cancel(f->c, JOB, 2, &job, &ref), 0);
	w = schedule_window_find(job, 2);
	assert_string_equal(schedule_window_state(job, w), "cancelled");
	assert_null(schedule_overlap(f->c, job, 30, 40));
	/* Cancelling again changes nothing. */
	assert_int_equal(job->generation, 4);
	assert_int_equal(change_window_cancel(f->c, JOB, 2, &job, &ref), 0);
	assert_int_equal(job->generation, 4);
	assert_int_equal(change_window_cancel(f->c, JOB, 9, &job, &ref), -1);
	assert_int_equal(ref.code, 404);

	/* A rank that started window 1 makes it running. */
	connect_node(f, job);
	progress(f, JOB, 1, 12);
	w = schedule_window_find(job, 1);
	assert_string_equal(schedule_window_state(job, w), "scheduled");
	assert_int_equal(event(f, K_STARTED, 0, 1, 12), 0);
	assert_string_equal(schedule_window_state(job, w), "running");
	w->finished = 1;
	assert_string_equal(schedule_window_state(job, w), "done");
}

/* Adds a time window at now + ahead_ms for duration_ms; its id or -1. */
static int
add_time(struct fixture *f, int64_t ahead_ms, int64_t duration_ms,
    struct refusal *ref)
{
	struct window_request	 r;
	struct window		*w;
	struct job		*job;

	memset(&r, 0, sizeof(r));
	r.has_at = r.has_duration = 1;
	r.at_unix_ns = clock_wall_ns() + ahead_ms * 1000000;
	r.duration_ms = duration_ms;
	if (change_window_add(f->c, JOB, &r, &w, &job, ref) == -1)
		return (-1);
	return ((int)w->id);
}

/*
 * Time windows: judged against the coordinator's clock, kept apart from each
 * other but not from windows of steps, pushed with their times, and over
 * once long past even while a live rank never ran them.
 */
static void
test_time_windows(void **state)
{
	struct fixture		*f = *state;
	struct refusal		 ref;
	struct job		*job;
	struct window		*w;
	Dynprof__V1__JobConfig	*cfg;
	int64_t			 now;

	job = two_windows(f);
	assert_int_equal(add_time(f, 10000, 5000, &ref), 3);
	assert_int_equal(add_time(f, 12000, 1000, &ref), -1);
	assert_int_equal(ref.code, 409);
	assert_string_equal(ref.field, "at");
	/* Both windows said by their times. */
	assert_non_null(strstr(ref.msg, " for 1000 ms overlaps window 3 at "));
	assert_non_null(strstr(ref.msg, " for 5000 ms (scheduled)"));
	assert_int_equal(add_time(f, -5000, 1000, &ref), -1);
	assert_int_equal(ref.code, 400);
	assert_non_null(strstr(ref.msg, "in the past"));
	/* Both times said: the one asked for and the coordinator's now. */
	assert_non_null(strstr(ref.msg, "ms in the past: the coordinator's "
	    "clock says 20"));
	assert_true(strncmp(ref.msg, "at 20", 5) == 0);
	assert_int_equal(add_time(f, 8LL * 86400 * 1000, 1000, &ref), -1);
	assert_non_null(strstr(ref.msg, "ahead"));
	assert_non_null(strstr(ref.msg, "the coordinator's clock says 20"));
	assert_int_equal(add_time(f, 20000, 0, &ref), -1);
	assert_string_equal(ref.field, "duration_ms");
	assert_int_equal(add_time(f, 20000, 1000, &ref), 4);
	w = schedule_window_find(job, 3);
	assert_true(w->start_step == 0 && w->stop_step == 0);
	assert_true(w->stop_unix_ns - w->start_unix_ns == 5000LL * 1000000);
	assert_true(w->tolerance_ms == COORD_TOLERANCE_MS);
	assert_non_null(cfg = schedule_build_config(job));
	assert_int_equal(cfg->n_windows, 4);
	assert_true(cfg->windows[0]->start_unix_ns == w->start_unix_ns);
	schedule_free_config(cfg);

	/* A live rank that never runs it: over once long past, not before. */
	connect_node(f, job);
	progress(f, JOB, 1, 12);
	assert_false(schedule_window_over(f->c, job, w, 12));
	now = clock_wall_ns();
	w->start_unix_ns = now - 200LL * 1000000000;
	w->stop_unix_ns = now - 10LL * 1000000000;
	assert_false(schedule_window_over(f->c, job, w, 12));
	w->stop_unix_ns = now - (SCHEDULE_TIME_LATE_MS + 1000) * 1000000;
	assert_true(schedule_window_over(f->c, job, w, 12));
	/* Unless a live rank runs it. */
	assert_int_equal(event(f, K_STARTED, 0, 3, 12), 0);
	assert_false(schedule_window_over(f->c, job, w, 12));
}

/* in_steps counts from the highest step reported, roundup rounds the start
 * up, and every sum is checked. */
static void
test_window_resolve(void **state)
{
	struct window_request	 r;
	struct refusal		 ref;
	int64_t			 start, stop;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.in = 10;
	r.steps = 5;
	r.has_in = r.has_steps = 1;
	assert_int_equal(schedule_window_resolve(&r, 100, &start, &stop, &ref),
	    0);
	assert_int_equal(start, 110);
	assert_int_equal(stop, 114);
	r.roundup = 50;
	r.has_round = 1;
	assert_int_equal(schedule_window_resolve(&r, 100, &start, &stop, &ref),
	    0);
	assert_int_equal(start, 150);
	assert_int_equal(stop, 154);
	/* in_steps 0 with roundup: the next multiple past the current step. */
	r.in = 0;
	assert_int_equal(schedule_window_resolve(&r, 150, &start, &stop, &ref),
	    0);
	assert_int_equal(start, 200);
	/* No step reported: refused. */
	assert_int_equal(schedule_window_resolve(&r, -1, &start, &stop, &ref),
	    -1);
	assert_int_equal(ref.code, 400);
	assert_string_equal(ref.field, "in_steps");
	/* Beyond the highest step a request may name. */
	r.has_round = 0;
	r.in = 10;
	assert_int_equal(schedule_window_resolve(&r, COORD_WINDOW_STEP_MAX - 5,
	    &start, &stop, &ref), -1);
	assert_string_equal(ref.field, "in_steps");
	r.steps = 100;
	assert_int_equal(schedule_window_resolve(&r, COORD_WINDOW_STEP_MAX - 50,
	    &start, &stop, &ref), -1);
	assert_string_equal(ref.field, "steps");
	/* Absolute steps out of order. */
	memset(&r, 0, sizeof(r));
	r.start = 20;
	r.stop = 10;
	r.has_start = r.has_stop = 1;
	assert_int_equal(schedule_window_resolve(&r, -1, &start, &stop, &ref),
	    -1);
	assert_string_equal(ref.field, "stop_step");
	assert_string_equal(ref.msg, "start_step 20 is after stop_step 10");
}

/*
 * An event is applied once per (job, rank, window, kind): a replay changes
 * nothing; a late event of an older window does not move the state back; a
 * replayed attach of the same process keeps the later state.
 */
static void
test_apply_event_once(void **state)
{
	struct fixture	*f = *state;
	struct job	*job;
	struct rank	*r;

	job = two_windows(f);
	connect_node(f, job);
	assert_int_equal(event(f, K_ATTACHED, 0, 0, 5), 0);
	assert_non_null(r = schedule_rank_find(job, 0));
	assert_int_equal(r->state, DYNPROF__V1__RANK_STATE__RANK_ATTACHED);
	assert_int_equal(event(f, K_STARTED, 0, 1, 10), 0);
	assert_int_equal(r->state, DYNPROF__V1__RANK_STATE__RANK_PROFILING);
	assert_int_equal(r->nevents, 1);
	assert_int_equal(f->c->metrics.events_dup, 0);
	assert_int_equal(event(f, K_STARTED, 0, 1, 10), 0);
	assert_int_equal(r->nevents, 1);
	assert_int_equal(f->c->metrics.events_dup, 1);
	assert_int_equal(event(f, K_STOPPED, 0, 1, 20), 0);
	assert_int_equal(r->state, DYNPROF__V1__RANK_STATE__RANK_DONE);
	assert_int_equal(event(f, K_SKIPPED, 0, 2, 45), 0);
	assert_int_equal(r->state, DYNPROF__V1__RANK_STATE__RANK_SKIPPED);
	assert_int_equal(r->window_id, 2);
	/* Window 1's late event: kept, the state stays. */
	assert_int_equal(event(f, K_SKIPPED, 0, 1, 20), 0);
	assert_int_equal(r->state, DYNPROF__V1__RANK_STATE__RANK_SKIPPED);
	assert_int_equal(r->window_id, 2);
	assert_int_equal(r->nevents, 4);
	assert_int_equal(r->step, 45);
	/* The same process attaching again keeps its state. */
	assert_int_equal(event(f, K_ATTACHED, 0, 0, 46), 0);
	assert_int_equal(r->state, DYNPROF__V1__RANK_STATE__RANK_SKIPPED);
	/* Bad rank, bad kind: ignored. */
	assert_int_equal(event(f, K_STARTED, -1, 1, 10), 0);
	assert_int_equal(event(f, 99, 0, 1, 10), 0);
	assert_int_equal(r->nevents, 4);
}

/* Passes over the rows test_rank_rows_one_path() does not look at. */
static void
on_generation(void *arg, uint64_t gen)
{
	(void)arg;
	(void)gen;
}

static int
on_job(void *arg, const struct store_job *row)
{
	(void)arg;
	(void)row;
	return (0);
}

static int
on_window(void *arg, const struct store_window *row)
{
	(void)arg;
	(void)row;
	return (0);
}

static int
on_event(void *arg, const char *job, int32_t rank,
    const struct rank_event *e, const char *node, const char *detail)
{
	(void)arg;
	(void)job;
	(void)rank;
	(void)e;
	(void)node;
	(void)detail;
	return (0);
}

static int
on_agent(void *arg, const char *node, uint64_t boot_id, uint64_t seq)
{
	(void)arg;
	(void)node;
	(void)boot_id;
	(void)seq;
	return (0);
}

/* Keeps the step of each rank row the store hands back (ranks 0-7). */
static int
on_rank_step(void *arg, const struct store_rank *row)
{
	int64_t	*steps = arg;

	if (row->rank >= 0 && row->rank < 8)
		steps[row->rank] = row->step;
	return (0);
}

/*
 * One path stores rank rows: ranks a progress report changed go with the
 * next batch of events' commit (not only at the tick), each once, and the
 * tick has nothing left to store.
 */
static void
test_rank_rows_one_path(void **state)
{
	struct fixture		*f = *state;
	struct job		*job;
	struct store_loader	 l;
	int64_t			 steps[8];
	int			 i;

	job = two_windows(f);
	connect_node(f, job);
	assert_int_equal(event(f, K_ATTACHED, 3, 0, 5), 0);
	progress(f, JOB, 2, 7);
	assert_int_equal(job->ranks_changed, 2);
	assert_int_equal(event(f, K_ATTACHED, 4, 0, 8), 0);
	assert_int_equal(job->ranks_changed, 0);
	assert_true(TAILQ_EMPTY(&f->c->changed_ranks));
	for (i = 0; i < 8; i++)
		steps[i] = -1;
	memset(&l, 0, sizeof(l));
	l.arg = steps;
	l.generation = on_generation;
	l.job = on_job;
	l.window = on_window;
	l.rank = on_rank_step;
	l.event = on_event;
	l.agent = on_agent;
	assert_int_equal(store_load(f->c->store, &l), 0);
	assert_int_equal(steps[0], 7);
	assert_int_equal(steps[1], 7);
	assert_int_equal(steps[3], 5);
	assert_int_equal(steps[4], 8);
	/* A progress report with no batch after it: the tick stores it. */
	progress(f, JOB, 2, 9);
	assert_int_equal(job->ranks_changed, 2);
	schedule_flush_ranks(f->c);
	assert_int_equal(job->ranks_changed, 0);
	assert_int_equal(store_load(f->c->store, &l), 0);
	assert_int_equal(steps[0], 9);
	assert_int_equal(steps[1], 9);
}

/*
 * A window every live rank has ended leaves the pushed schedule in a change
 * of its own: one generation, one push.
 */
static void
test_finish_windows(void **state)
{
	struct fixture	*f = *state;
	struct job	*job;
	uint64_t	 gen;

	job = two_windows(f);
	connect_node(f, job);
	progress(f, JOB, 2, 25);
	gen = job->generation;
	change_windows_over(f->c, 0);
	assert_int_equal(job->generation, gen);	/* not ended yet */
	assert_int_equal(pushes(f), 0);
	assert_int_equal(event(f, K_STARTED, 0, 1, 10), 0);
	assert_int_equal(event(f, K_STOPPED, 0, 1, 20), 0);
	assert_int_equal(event(f, K_SKIPPED, 1, 1, 25), 0);
	change_windows_over(f->c, 1);
	assert_true(schedule_window_find(job, 1)->finished);
	assert_false(schedule_window_find(job, 2)->finished);
	assert_int_equal(job->generation, gen + 1);
	assert_int_equal(f->c->generation, gen + 1);
	assert_int_equal(pushes(f), 1);
	assert_int_equal(schedule_pending_count(job), 1);
}

/*
 * A full schedule makes room for a new window from the windows no rank can
 * run any more, oldest stop first, in the change that adds it: one
 * generation, one push.  With nothing to evict, nothing changes.
 */
static void
test_make_room(void **state)
{
	struct fixture	*f = *state;
	struct refusal	 ref;
	struct job	*job;
	struct window	*done[SEG_MAX_WINDOWS];
	uint64_t	 gen;
	size_t		 n;
	int		 i;

	for (i = 0; i < SEG_MAX_WINDOWS; i++)
		assert_int_equal(add(f, 100 - 5 * i, 100 - 5 * i + 2, &ref),
		    i + 1);
	job = schedule_job_find(f->c, JOB);
	connect_node(f, job);
	/* Every window ahead of the ranks: none can go. */
	progress(f, JOB, 1, 0);
	assert_int_equal(schedule_make_room(f->c, job, done, &n), -1);
	gen = job->generation;
	assert_int_equal(add(f, 500, 510, &ref), -1);
	assert_int_equal(ref.code, 409);
	assert_string_equal(ref.msg, "job " JOB " has 16 windows pending, the "
	    "most a schedule holds");
	assert_int_equal(job->generation, gen);
	assert_int_equal(pushes(f), 0);

	/* Past them all: the one that stops first goes. */
	progress(f, JOB, 1, 200);
	assert_int_equal(schedule_make_room(f->c, job, done, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(done[0]->id, SEG_MAX_WINDOWS);
	assert_false(done[0]->finished);	/* picked, not changed */
	assert_int_equal(add(f, 500, 510, &ref), SEG_MAX_WINDOWS + 1);
	assert_int_equal(job->generation, gen + 1);
	assert_int_equal(pushes(f), 1);
	assert_true(schedule_window_find(job, SEG_MAX_WINDOWS)->finished);
	assert_int_equal(schedule_pending_count(job), SEG_MAX_WINDOWS);
	assert_int_equal(job->next_window_id, SEG_MAX_WINDOWS + 2);
}

/*
 * A config that cannot be stored changes nothing in memory: neither the
 * config, the defaults, the next window id nor the generation.
 */
static void
test_config_not_stored(void **state)
{
	struct fixture	*f = *state;
	struct refusal	 ref;
	struct options	 defaults;
	struct job	*job;
	struct window	*w;
	sqlite3		*db;
	char		 path[128];

	assert_int_equal(add(f, 10, 20, &ref), 1);
	job = schedule_job_find(f->c, JOB);
	/* Another writer holds the database past the busy timeout. */
	snprintf(path, sizeof(path), "%s/dynprof.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL,
	    NULL), SQLITE_OK);
	options_init(&defaults);
	defaults.profiler_level = 1;
	assert_int_equal(change_config_set(f->c, JOB, strdup("{}"), &defaults,
	    30, 40, &job, &w, &ref), -1);
	assert_int_equal(ref.code, 500);
	assert_string_equal(ref.msg, "cannot store the change");
	assert_null(job->config_json);
	assert_int_equal(job->defaults.profiler_level, -1);
	assert_int_equal(job->next_window_id, 2);
	assert_int_equal(job->generation, 1);
	assert_int_equal(f->c->generation, 1);
	assert_null(schedule_window_find(job, 2));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(db);

	/* Stored, it takes. */
	assert_int_equal(change_config_set(f->c, JOB, strdup("{}"), &defaults,
	    30, 40, &job, &w, &ref), 0);
	assert_string_equal(job->config_json, "{}");
	assert_int_equal(job->defaults.profiler_level, 1);
	assert_int_equal(w->id, 2);
	assert_int_equal(w->options.profiler_level, 1);
	assert_int_equal(job->next_window_id, 3);
	assert_int_equal(job->generation, 2);
	options_clear(&defaults);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_window_insert, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_overlap_state, setup,
		    teardown),
		cmocka_unit_test(test_window_resolve),
		cmocka_unit_test_setup_teardown(test_apply_event_once, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_rank_rows_one_path, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_finish_windows, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_make_room, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_config_not_stored, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_time_windows, setup,
		    teardown),
	};

	log_init("test_schedule", LOG_LEVEL_QUIET);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
