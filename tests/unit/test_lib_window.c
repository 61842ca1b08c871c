/*
 * The window rules, one test per rule (MindSpore 2.4's cases included), through
 * the real library: a real segment whose config the test writes as the agent
 * does (segment_write_config), and callbacks that record every call
 * (support/libfixture.c).  The rules as pure functions close it.  What the
 * library's handle does around them is in test_lib_handle.c.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "libfixture.h"

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* Checks the rank's state, its slot's and the slot's last event; returns
 * the slot. */
static struct seg_slot
assert_rank(struct lib_fixture *f, int rank_state, int slot_state, int event)
{
	struct seg_slot	 s;

	assert_int_equal(dynprof_state(f->h), rank_state);
	s = lf_slot_of(f);
	assert_int_equal(s.state, slot_state);
	assert_int_equal(s.last_event, event);
	return (s);
}

/* [5,7]: starts in step_begin(5), stops in step_end(7), output dir made. */
static void
test_inclusive_window(void **state)
{
	struct lib_fixture	*f = *state;
	struct seg_slot	 s;
	char		 want[4096];

	tl_window(&f->cfg, 0, 1, 5, 7, "");
	lf_push(f);
	lf_open_rank(f, 3);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_ARMED);
	lf_steps(f, 1, 4);
	assert_int_equal(dynprof_step_begin(f->h, 5), 0);
	assert_int_equal(f->rec.ncalls, 1);
	lf_assert_call(&f->rec.calls[0], 's', 1, 5, 7);
	snprintf(want, sizeof(want), "%s/out/rank3_start5_stop7", f->dir);
	assert_string_equal(f->rec.calls[0].output_dir, want);
	assert_true(f->rec.calls[0].dir_existed);
	assert_string_equal(f->rec.calls[0].fwopts, "{}");
	s = assert_rank(f, DYNPROF_RANK_PROFILING, SEG_RANK_PROFILING,
	    EVENT_STARTED);
	assert_string_equal(s.output_dir, want);
	assert_int_equal(s.step, 5);

	assert_int_equal(dynprof_step_end(f->h, 5), 0);
	lf_steps(f, 6, 6);
	assert_int_equal(dynprof_step_begin(f->h, 7), 0);
	assert_int_equal(f->rec.ncalls, 1);	/* stop is inclusive */
	assert_int_equal(dynprof_step_end(f->h, 7), 0);
	assert_int_equal(f->rec.ncalls, 2);
	lf_assert_call(&f->rec.calls[1], 'p', 1, 5, 7);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_COMPLETED);
	assert_string_equal(f->rec.calls[1].output_dir, want);
	s = assert_rank(f, DYNPROF_RANK_DONE, SEG_RANK_DONE, EVENT_STOPPED);
	assert_int_equal(s.reason, DYNPROF_STOP_COMPLETED);
	assert_int_equal(s.event_step, 7);
	assert_int_equal(s.generation, 1);
	lf_steps(f, 8, 20);
	assert_int_equal(f->rec.ncalls, 2);
	assert_int_equal(dynprof_current_step(f->h), 20);
}

/* MindSpore 2.4: start_step > stop_step is refused, with a log line. */
static void
test_start_after_stop(void **state)
{
	struct lib_fixture	*f = *state;

	assert_int_equal(lf_run_window(f, 8, 5, 12), 0);
	assert_true(tl_logged(&f->rec, "start_step is after stop_step"));
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_ATTACHED);
}

/* MindSpore 2.4: start_step <= 0 is refused, with a log line. */
static void
test_start_not_positive(void **state)
{
	struct lib_fixture	*f = *state;

	tl_window(&f->cfg, 0, 1, 0, 5, "");
	tl_window(&f->cfg, 1, 2, -3, 2, "");
	tl_window(&f->cfg, 2, 3, 4, 4, "");
	lf_push(f);
	lf_open_rank(f, 0);
	lf_steps(f, 1, 6);
	assert_true(tl_logged(&f->rec, "window 1 (steps 0-5) ignored"));
	assert_true(tl_logged(&f->rec, "window 2 (steps -3-2) ignored"));
	/* The valid window beside them still runs. */
	assert_int_equal(f->rec.ncalls, 2);
	lf_assert_ran(f, 0, 3, 4, 4);
}

/* MindSpore 2.4: a start already passed is never started late: skipped. */
static void
test_start_passed(void **state)
{
	struct lib_fixture	*f = *state;
	struct seg_slot	 s;

	lf_open_rank(f, 2);
	lf_steps(f, 1, 9);
	assert_int_equal(dynprof_step_begin(f->h, 10), 0);
	tl_window(&f->cfg, 0, 1, 5, 8, "");
	lf_push(f);
	assert_int_equal(dynprof_step_end(f->h, 10), 0);
	assert_int_equal(f->rec.ncalls, 0);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_SKIPPED);
	s = lf_slot_of(f);
	assert_int_equal(s.last_event, EVENT_SKIPPED);
	assert_int_equal(s.window_id, 1);
	assert_int_equal(s.start_step, 5);	/* both steps reported */
	assert_int_equal(s.stop_step, 8);
	assert_int_equal(s.event_step, 10);
	assert_true(tl_logged(&f->rec,
	    "starts at step 5, the rank is at step 10"));

	/* Its start step is the current one but step_begin has passed. */
	assert_int_equal(dynprof_step_begin(f->h, 11), 0);
	tl_window(&f->cfg, 1, 2, 11, 13, "");
	tl_window(&f->cfg, 2, 3, 12, 13, "");
	lf_push(f);
	assert_int_equal(dynprof_step_end(f->h, 11), 0);
	assert_int_equal(f->rec.ncalls, 0);
	lf_assert_skipped(f, 2);
	/* The next one is still ahead: it runs. */
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_ARMED);
	lf_steps(f, 12, 13);
	assert_int_equal(f->rec.ncalls, 2);
	lf_assert_call(&f->rec.calls[0], 's', 3, 12, 13);

	/* A rank that resumes at a later step skips what it passed. */
	tl_window(&f->cfg, 3, 4, 20, 21, "");
	lf_push(f);
	lf_steps(f, 1000, 1000);
	s = lf_slot_of(f);
	assert_int_equal(s.last_event, EVENT_SKIPPED);
	assert_int_equal(s.window_id, 4);
	assert_int_equal(s.event_step, 1000);
	assert_int_equal(f->rec.ncalls, 2);
}

/* MindSpore 2.4: the same window twice runs once. */
static void
test_same_window_twice(void **state)
{
	struct lib_fixture	*f = *state;

	assert_int_equal(lf_run_window(f, 3, 4, 5), 2);
	/* The same config again, then the same id with later steps. */
	lf_push(f);
	lf_steps(f, 6, 7);
	tl_window(&f->cfg, 0, 1, 9, 10, "");
	lf_push(f);
	lf_steps(f, 8, 12);
	assert_int_equal(f->rec.ncalls, 2);
	/* One id listed twice in one config. */
	tl_window(&f->cfg, 1, 5, 14, 14, "");
	tl_window(&f->cfg, 2, 5, 16, 16, "");
	lf_push(f);
	lf_steps(f, 13, 20);
	assert_int_equal(f->rec.ncalls, 4);
	lf_assert_ran(f, 2, 5, 14, 14);
}

/* MindSpore 2.4: a new config while a window runs: the window is latched. */
static void
test_new_config_while_running(void **state)
{
	struct lib_fixture	*f = *state;

	assert_int_equal(lf_run_window(f, 5, 10, 7), 1);
	/* The running window shortened and a new one inside it: neither counts. */
	tl_window(&f->cfg, 0, 1, 5, 8, "");
	tl_window(&f->cfg, 1, 2, 9, 12, "");
	lf_push(f);
	lf_steps(f, 8, 9);
	assert_int_equal(f->rec.ncalls, 1);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_PROFILING);
	/* Then removed from the config altogether: still runs to its stop. */
	f->cfg.nwindows = 0;
	tl_window(&f->cfg, 0, 2, 9, 12, "");
	lf_push(f);
	lf_steps(f, 10, 10);
	assert_int_equal(f->rec.ncalls, 2);
	lf_assert_call(&f->rec.calls[1], 'p', 1, 5, 10);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_COMPLETED);
	/* Window 2's start went by while window 1 ran: skipped, not late. */
	lf_assert_skipped(f, 2);
	lf_steps(f, 11, 14);
	assert_int_equal(f->rec.ncalls, 2);
}

/* MindSpore 2.4: stop step beyond the end of training: stopped at close. */
static void
test_stop_beyond_end(void **state)
{
	struct lib_fixture	*f = *state;
	struct seg_slot	 s;
	int		 idx;

	lf_one_window(f, 5, 1000);
	idx = f->h->slot_index;
	lf_steps(f, 1, 10);
	assert_int_equal(f->rec.ncalls, 1);
	dynprof_close(f->h);
	f->h = NULL;
	assert_int_equal(f->rec.ncalls, 2);
	lf_assert_call(&f->rec.calls[1], 'p', 1, 5, 1000);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_CLOSED);
	assert_int_equal(segment_slot_read(&f->agent, idx, &s), SEG_OK);
	assert_int_equal(s.pid, 0);		/* released */
	assert_int_equal(s.state, SEG_RANK_GONE);
	/* Detached keeps the last window's event for an agent that was away. */
	assert_int_equal(s.last_event, EVENT_STOPPED);
	assert_int_equal(s.window_id, 1);
	assert_int_equal(s.start_step, 5);
	assert_int_equal(s.stop_step, 1000);
	assert_int_equal(s.reason, DYNPROF_STOP_CLOSED);
	assert_int_equal(s.event_step, 10);
	assert_non_null(strstr(s.output_dir, "rank0_start5_stop1000"));
}

/* Cancellation stops at the next step_end; a cancelled window never starts. */
static void
test_cancel(void **state)
{
	struct lib_fixture	*f = *state;
	struct seg_slot	 s;

	tl_window(&f->cfg, 0, 1, 5, 10, "");
	tl_window(&f->cfg, 1, 2, 12, 13, "");
	lf_push(f);
	lf_open_rank(f, 0);
	lf_steps(f, 1, 5);
	assert_int_equal(dynprof_step_begin(f->h, 6), 0);
	f->cfg.windows[0].flags |= SEG_WINDOW_CANCELLED;
	lf_push(f);
	assert_int_equal(dynprof_step_end(f->h, 6), 0);
	assert_int_equal(f->rec.ncalls, 2);
	lf_assert_call(&f->rec.calls[1], 'p', 1, 5, 10);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_CANCELLED);
	s = lf_slot_of(f);
	assert_int_equal(s.reason, DYNPROF_STOP_CANCELLED);
	assert_int_equal(s.event_step, 6);

	/* Cancelled before it starts: never starts, even uncancelled later. */
	f->cfg.windows[1].flags |= SEG_WINDOW_CANCELLED;
	lf_push(f);
	lf_steps(f, 7, 20);
	assert_int_equal(f->rec.ncalls, 2);
}

/* Cancellation seen in step_begin still stops at that step's end. */
static void
test_cancel_seen_at_begin(void **state)
{
	struct lib_fixture	*f = *state;

	lf_one_window(f, 2, 10);
	lf_steps(f, 1, 3);
	f->cfg.windows[0].flags |= SEG_WINDOW_CANCELLED;
	lf_push(f);
	assert_int_equal(dynprof_step_begin(f->h, 4), 0);
	assert_int_equal(f->rec.ncalls, 1);
	assert_int_equal(dynprof_step_end(f->h, 4), 0);
	assert_int_equal(f->rec.ncalls, 2);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_CANCELLED);
}

/* A window runs only on the ranks of its list. */
static void
test_targeting(void **state)
{
	struct lib_fixture		*f = *state;
	struct dynprof_params	 p;
	struct tl_recorder	 rec4;
	dynprof_t		*h4;
	int64_t			 s;

	memset(&rec4, 0, sizeof(rec4));
	tl_window(&f->cfg, 0, 1, 3, 4, "0-1,4");
	lf_push(f);
	lf_open_rank(f, 3);
	tl_params(&p, f->dir, "job", 4, &rec4);
	assert_int_equal(dynprof_open(&p, &h4), DYNPROF_OK);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_ATTACHED);
	assert_int_equal(dynprof_state(h4), DYNPROF_RANK_ARMED);
	for (s = 1; s <= 6; s++) {
		dynprof_step_begin(f->h, s);
		dynprof_step_begin(h4, s);
		dynprof_step_end(f->h, s);
		dynprof_step_end(h4, s);
	}
	assert_int_equal(f->rec.ncalls, 0);
	assert_int_equal(rec4.ncalls, 2);
	assert_string_equal(strrchr(rec4.calls[0].output_dir, '/'),
	    "/rank4_start3_stop4");
	dynprof_close(h4);
}

/* A queue of windows runs in order, each once. */
static void
test_queue(void **state)
{
	struct lib_fixture	*f = *state;

	tl_window(&f->cfg, 0, 1, 2, 3, "");
	tl_window(&f->cfg, 1, 2, 5, 5, "");
	tl_window(&f->cfg, 2, 3, 8, 9, "");
	lf_push(f);
	lf_open_rank(f, 0);
	lf_steps(f, 1, 12);
	assert_int_equal(f->rec.ncalls, 6);
	lf_assert_ran(f, 0, 1, 2, 3);
	lf_assert_ran(f, 2, 2, 5, 5);
	lf_assert_ran(f, 4, 3, 8, 9);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_DONE);
}

/* dynprof_step(): an internal counter from 1; close ends the last step. */
static void
test_counter_mode(void **state)
{
	struct lib_fixture	*f = *state;
	int		 i;

	tl_window(&f->cfg, 0, 1, 3, 4, "");
	tl_window(&f->cfg, 1, 2, 6, 6, "");
	lf_push(f);
	lf_open_rank(f, 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(dynprof_step(f->h), 0);
	assert_int_equal(dynprof_current_step(f->h), 3);
	assert_int_equal(f->rec.ncalls, 1);		/* began step 3 */
	assert_int_equal(dynprof_step(f->h), 0);	/* ends 3, begins 4 */
	assert_int_equal(f->rec.ncalls, 1);
	assert_int_equal(dynprof_step(f->h), 0);	/* ends 4 */
	assert_int_equal(f->rec.ncalls, 2);
	assert_int_equal(dynprof_step(f->h), 0);	/* begins 6 */
	assert_int_equal(f->rec.ncalls, 3);
	dynprof_close(f->h);		/* ends step 6: completed, not closed */
	f->h = NULL;
	assert_int_equal(f->rec.ncalls, 4);
	assert_int_equal(f->rec.calls[3].reason, DYNPROF_STOP_COMPLETED);
}

/* Checks that the rank failed, saying error; returns its slot. */
static struct seg_slot
assert_failed(struct lib_fixture *f, const char *error)
{
	struct seg_slot	 s;

	s = assert_rank(f, DYNPROF_RANK_FAILED, SEG_RANK_FAILED, EVENT_FAILED);
	assert_string_equal(s.error, error);
	return (s);
}

/* A failing start callback: failed with its message, no stop for it. */
static void
test_start_fails(void **state)
{
	struct lib_fixture	*f = *state;

	f->rec.fail_start = 1;
	assert_int_equal(lf_run_window(f, 2, 4, 6), 1);
	assert_int_equal(assert_failed(f, "profiler refused to start").window_id,
	    1);
	assert_int_equal(dynprof_active_window(f->h, NULL), 0);
	dynprof_close(f->h);
	f->h = NULL;
	assert_int_equal(f->rec.ncalls, 1);
}

/* A failing stop callback: failed with its message. */
static void
test_stop_fails(void **state)
{
	struct lib_fixture	*f = *state;

	f->rec.fail_stop = 1;
	assert_int_equal(lf_run_window(f, 2, 3, 4), 2);
	assert_int_equal(assert_failed(f, "profiler refused to stop").reason,
	    DYNPROF_STOP_COMPLETED);
}

/* Options, framework options and the relative subdirectory reach the callback;
 * a subdirectory escaping the root makes the window ignored. */
static void
test_options_and_subdir(void **state)
{
	struct lib_fixture	*f = *state;
	char		 want[4096];

	tl_window(&f->cfg, 0, 1, 2, 2, "");
	f->cfg.windows[0].options.profiler_level = 1;
	snprintf(f->cfg.windows[0].options.output_subdir, SEG_SUBDIR_MAX,
	    "exp/a");
	snprintf(f->cfg.windows[0].options.fwopts, SEG_FWOPTS_MAX,
	    "{\"record_shapes\":true}");
	tl_window(&f->cfg, 1, 2, 4, 4, "");
	snprintf(f->cfg.windows[1].options.output_subdir, SEG_SUBDIR_MAX,
	    "../../etc");
	tl_window(&f->cfg, 2, 3, 6, 6, "");
	snprintf(f->cfg.windows[2].options.output_subdir, SEG_SUBDIR_MAX,
	    "/abs");
	lf_push(f);
	lf_open_rank(f, 1);
	lf_steps(f, 1, 8);
	assert_int_equal(f->rec.ncalls, 2);
	snprintf(want, sizeof(want), "%s/out/exp/a/rank1_start2_stop2", f->dir);
	assert_string_equal(f->rec.calls[0].output_dir, want);
	assert_true(f->rec.calls[0].dir_existed);
	assert_int_equal(f->rec.calls[0].profiler_level, 1);
	assert_string_equal(f->rec.calls[0].fwopts, "{\"record_shapes\":true}");
	assert_true(tl_logged(&f->rec, "'..'"));
	assert_true(tl_logged(&f->rec, "absolute"));
}

/* A step and phase, and what window_decide() is to say of them. */
struct decision {
	int64_t			 step;
	enum window_phase	 phase;
	enum window_action	 want;
};

/* Checks window_decide() of each of n decisions; returns the last's index. */
static int
assert_decides(const struct seg_config *cfg, const struct window_rank *wr,
    const struct decision *d, size_t n, const char **why)
{
	size_t	 i;
	int	 idx = -1, got;

	for (i = 0; i < n; i++) {
		got = window_decide(cfg, wr, d[i].step, d[i].phase, &idx, why);
		if (got != (int)d[i].want)
			fail_msg("step %lld %s: %d, want %d", (long long)d[i].step,
			    d[i].phase == WINDOW_BEGIN ? "begin" : "end", got,
			    (int)d[i].want);
	}
	return (idx);
}

/* The rules as pure functions: the boundary cases of start and stop. */
static void
test_decide_pure(void **state)
{
	static struct seg_config cfg;
	static const struct decision	 idle[] = {
		{ 4, WINDOW_BEGIN, WINDOW_NONE },
		{ 4, WINDOW_END, WINDOW_NONE },
		{ 5, WINDOW_BEGIN, WINDOW_START },
	}, passed[] = {
		{ 5, WINDOW_END, WINDOW_SKIP },
		{ 6, WINDOW_BEGIN, WINDOW_SKIP },
	}, running[] = {
		{ 6, WINDOW_BEGIN, WINDOW_NONE },
		{ 5, WINDOW_END, WINDOW_NONE },
		{ 6, WINDOW_END, WINDOW_STOP_COMPLETED },
	}, cancelled[] = {
		{ 5, WINDOW_END, WINDOW_STOP_CANCELLED },
	}, done_once[] = {
		{ 5, WINDOW_BEGIN, WINDOW_NONE },
	}, bad_ranks[] = {
		{ 1, WINDOW_BEGIN, WINDOW_INVALID },
	};
	struct window_done	 done = { NULL, 0, 0 };
	struct window_rank	 wr = { 0, NULL, &done, 0, 0, 0 };
	struct seg_window	 active;
	const char		*why;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	tl_window(&cfg, 0, 9, 5, 6, "");
	assert_int_equal(assert_decides(&cfg, &wr, idle, nitems(idle), &why), 0);
	assert_decides(&cfg, &wr, passed, nitems(passed), &why);
	assert_int_equal(window_next_due(&cfg, &wr), 5);
	assert_int_equal(window_pending(&cfg, &wr), 1);

	active = cfg.windows[0];
	wr.active = &active;
	assert_decides(&cfg, &wr, running, nitems(running), &why);
	assert_int_equal(window_next_due(&cfg, &wr), 6);
	cfg.windows[0].flags |= SEG_WINDOW_CANCELLED;
	assert_decides(&cfg, &wr, cancelled, nitems(cancelled), &why);
	assert_int_equal(window_next_due(&cfg, &wr), INT64_MIN);

	wr.active = NULL;
	assert_int_equal(window_done_add(&done, 9), 0);
	cfg.windows[0].flags = 0;
	assert_decides(&cfg, &wr, done_once, nitems(done_once), &why);
	assert_int_equal(window_next_due(&cfg, &wr), INT64_MAX);
	assert_int_equal(window_pending(&cfg, &wr), 0);

	tl_window(&cfg, 1, 10, 3, 4, "not-a-list");
	assert_int_equal(assert_decides(&cfg, &wr, bad_ranks,
	    nitems(bad_ranks), &why), 1);
	assert_non_null(strstr(why, "ranks"));
	window_done_free(&done);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, lf_setup, lf_teardown)
	const struct CMUnitTest tests[] = {
		T(test_inclusive_window),
		T(test_start_after_stop),
		T(test_start_not_positive),
		T(test_start_passed),
		T(test_same_window_twice),
		T(test_new_config_while_running),
		T(test_stop_beyond_end),
		T(test_cancel),
		T(test_cancel_seen_at_begin),
		T(test_targeting),
		T(test_queue),
		T(test_counter_mode),
		T(test_start_fails),
		T(test_stop_fails),
		T(test_options_and_subdir),
		cmocka_unit_test(test_decide_pure),
	};
#undef T

	return (cmocka_run_group_tests_name("lib_window", tests, NULL, NULL));
}
