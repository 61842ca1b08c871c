/*
 * Time windows (a start and a stop on the node's CLOCK_MONOTONIC, written by
 * the agent) through the real library and a real segment: a loop without
 * steps that polls, a stepping rank (started at the first step that begins
 * after the start, stopped at the end of the last step before the end, and
 * the clock read about log2 times on the way), windows the rank sees too late
 * or that cannot run.  The rules as pure functions close it.
 */

#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "libfixture.h"

#define MS	1000000LL

static int64_t
tw_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

static void
tw_sleep_ms(long ms)
{
	struct timespec	 ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

/* Sets window i of cfg to a time window [start_ns, stop_ns) for ranks. */
static void
tw_window(struct seg_config *cfg, int i, uint32_t id, int64_t start_ns,
    int64_t stop_ns, const char *ranks)
{
	tl_window(cfg, i, id, 0, 0, ranks);
	cfg->windows[i].start_ns = start_ns;
	cfg->windows[i].stop_ns = stop_ns;
	cfg->windows[i].start_unix_ns = start_ns;
	cfg->windows[i].stop_unix_ns = stop_ns;
}

/* Pushes time window id alone, from ahead_ms from now for length_ms (into
 * *start, *stop), and opens rank. */
static void
tw_open(struct lib_fixture *f, uint32_t id, int64_t ahead_ms,
    int64_t length_ms, int rank, int64_t *start, int64_t *stop)
{
	*start = tw_now() + ahead_ms * MS;
	*stop = *start + length_ms * MS;
	tw_window(&f->cfg, 0, id, *start, *stop, "");
	lf_push(f);
	lf_open_rank(f, rank);
}

/*
 * A loop without steps: dynprof_poll() starts the window at the first poll
 * at or after its start and stops it at the first at or after its end, with
 * the output directory named by the window; nothing before.
 */
static void
test_poll_window(void **state)
{
	struct lib_fixture	*f = *state;
	int64_t			 start, stop, t_start = 0, t_stop = 0, now;
	struct seg_slot		 s;
	char			 want[4096];
	int			 i;

	f->rec.handle = &f->h;
	tw_open(f, 4, 200, 300, 3, &start, &stop);
	for (i = 0; i < 20000 && t_stop == 0; i++) {
		assert_int_equal(dynprof_poll(f->h), DYNPROF_OK);
		now = tw_now();
		if (t_start == 0 && f->rec.ncalls >= 1)
			t_start = now;
		if (t_stop == 0 && f->rec.ncalls >= 2)
			t_stop = now;
		if (t_start == 0)
			assert_int_equal(dynprof_state(f->h),
			    now < start ? DYNPROF_RANK_ARMED :
			    DYNPROF_RANK_PROFILING);
		tw_sleep_ms(1);
	}
	assert_int_equal(f->rec.ncalls, 2);
	lf_assert_call(&f->rec.calls[0], 's', 4, 0, 0);
	lf_assert_call(&f->rec.calls[1], 'p', 4, 0, 0);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_COMPLETED);
	/* Each callback can tell it a time window, and its times. */
	for (i = 0; i < 2; i++) {
		assert_int_equal(f->rec.calls[i].info_rc, 1);
		assert_int_equal(f->rec.calls[i].info.id, 4);
		assert_int_equal(f->rec.calls[i].info.kind, DYNPROF_WINDOW_TIME);
		assert_int_equal(f->rec.calls[i].info.start_ns, start);
		assert_int_equal(f->rec.calls[i].info.start_unix_ns, start);
		assert_int_equal(f->rec.calls[i].info.duration_ns, 300 * MS);
		assert_int_equal(f->rec.calls[i].info.start_step, 0);
	}
	/* Not before, and by the next poll: generous for a loaded machine. */
	assert_true(t_start >= start && t_start < start + 150 * MS);
	assert_true(t_stop >= stop && t_stop < stop + 150 * MS);
	snprintf(want, sizeof(want), "%s/out/rank3_window4", f->dir);
	assert_string_equal(f->rec.calls[0].output_dir, want);
	assert_true(f->rec.calls[0].dir_existed);
	s = lf_slot_of(f);
	assert_int_equal(s.state, SEG_RANK_DONE);
	assert_int_equal(s.last_event, EVENT_STOPPED);
	assert_int_equal(s.window_id, 4);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_DONE);
	/* Polls after it do nothing more. */
	for (i = 0; i < 100; i++)
		assert_int_equal(dynprof_poll(f->h), DYNPROF_OK);
	assert_int_equal(f->rec.ncalls, 2);
	assert_int_equal(dynprof_poll(NULL), DYNPROF_EINVAL);
}

/*
 * A stepping rank: steps of about 2 ms, a window of 600 ms starting 300 ms
 * ahead.  It starts in the step_begin of the first step that begins at or
 * after the start, and stops in the step_end of a step that ends before the
 * end, the next one would not; the slow path (one clock read each) is taken
 * a few dozen times over the ~450 steps, not at each.
 */
static void
test_step_window(void **state)
{
	struct lib_fixture	*f = *state;
	static int64_t		 begin_ns[4000], end_ns[4000];
	int64_t			 start, stop, s, s_start = -1, s_stop = -1;
	uint64_t		 slow0;
	int			 n;

	tw_open(f, 7, 300, 600, 0, &start, &stop);
	slow0 = f->h->slow_calls;
	for (s = 1; s < 4000 && s_stop == -1; s++) {
		begin_ns[s] = tw_now();
		n = f->rec.ncalls;
		assert_int_equal(dynprof_step_begin(f->h, s), DYNPROF_OK);
		if (f->rec.ncalls > n)
			s_start = s;
		tw_sleep_ms(2);
		end_ns[s] = tw_now();
		n = f->rec.ncalls;
		assert_int_equal(dynprof_step_end(f->h, s), DYNPROF_OK);
		if (f->rec.ncalls > n)
			s_stop = s;
	}
	assert_int_equal(f->rec.ncalls, 2);
	assert_true(s_start > 1 && s_stop >= s_start);
	/* The first step that begins at or after the start. */
	assert_true(begin_ns[s_start] >= start);
	assert_true(begin_ns[s_start - 1] < start);
	/*
	 * The last before the end: it ends before, the next would not.  A
	 * step preempted past the end (a loaded machine) stops the window at
	 * its end: it began before the end, and lasted well over the period
	 * the library predicted the next from.
	 */
	assert_true(begin_ns[s_stop] < stop);
	assert_true(end_ns[s_stop] < stop || end_ns[s_stop] - begin_ns[s_stop] >
	    f->h->period_ns * 3 / 2);
	assert_true(end_ns[s_stop] + 3 * (end_ns[s_stop] - begin_ns[s_stop]) +
	    20 * MS > stop);
	/* About log2 entries of the slow path, not one per step. */
	print_message("steps %lld-%lld of %lld, slow path %llu times\n",
	    (long long)s_start, (long long)s_stop, (long long)s,
	    (unsigned long long)(f->h->slow_calls - slow0));
	assert_true(f->h->slow_calls - slow0 < (uint64_t)s / 4);
	assert_true(lf_slot_of(f).event_step == s_stop);
}

/*
 * A window the rank first sees after its end is skipped (a stepping rank and
 * a polling one); one whose stop is not after its start is ignored with a
 * log line, and one for other ranks left alone.
 */
static void
test_late_and_invalid(void **state)
{
	struct lib_fixture	*f = *state;
	int64_t			 now = tw_now();

	tw_window(&f->cfg, 0, 1, now - 300 * MS, now - 100 * MS, "");
	tw_window(&f->cfg, 1, 2, now + 100 * MS, now + 100 * MS, "");
	tw_window(&f->cfg, 2, 3, now - 300 * MS, now + 60000 * MS, "5");
	lf_push(f);
	lf_open_rank(f, 0);
	assert_int_equal(dynprof_poll(f->h), DYNPROF_OK);
	assert_int_equal(f->rec.ncalls, 0);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_SKIPPED);
	assert_int_equal(lf_slot_of(f).last_event, EVENT_SKIPPED);
	assert_true(tl_logged(&f->rec, "time window 1 skipped"));
	assert_true(tl_logged(&f->rec, "stop time is not after start time"));
	lf_steps(f, 1, 5);
	assert_int_equal(f->rec.ncalls, 0);
}

/* A stepping rank sees a time window late: skipped at its step too. */
static void
test_step_late(void **state)
{
	struct lib_fixture	*f = *state;
	int64_t			 now;

	lf_open_rank(f, 1);
	lf_steps(f, 1, 3);
	now = tw_now();
	tw_window(&f->cfg, 0, 9, now - 300 * MS, now - 1 * MS, "");
	lf_push(f);
	lf_steps(f, 4, 4);
	assert_int_equal(f->rec.ncalls, 0);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_SKIPPED);
	/* Cancelled while it runs: stopped at the next poll. */
	now = tw_now();
	tw_window(&f->cfg, 1, 10, now, now + 60000 * MS, "");
	lf_push(f);
	assert_int_equal(dynprof_poll(f->h), DYNPROF_OK);
	assert_int_equal(f->rec.ncalls, 1);
	f->cfg.windows[1].flags |= SEG_WINDOW_CANCELLED;
	lf_push(f);
	assert_int_equal(dynprof_poll(f->h), DYNPROF_OK);
	assert_int_equal(f->rec.ncalls, 2);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_CANCELLED);
}

/*
 * dynprof_window_info() says what each window of the rank's schedule is (a
 * window of steps, a time window with its start on both clocks and its
 * length); a struct dynprof_window laid out as programs built before it know
 * it is filled by dynprof_active_window() with not a byte past its end.
 */
static void
test_window_info(void **state)
{
	struct lib_fixture		*f = *state;
	struct dynprof_window_info	 wi;
	struct {
		struct dynprof_window	 w;
		unsigned char		 after[64];
	} old;
	int64_t				 now = tw_now();
	size_t				 i;
	int				 n;

	tl_window(&f->cfg, 0, 2, 1000, 1001, "");
	tw_window(&f->cfg, 1, 3, now + 100 * MS, now + 60000 * MS, "");
	f->cfg.windows[1].start_unix_ns = 1764936000LL * 1000000000;
	lf_push(f);
	lf_open_rank(f, 0);

	memset(&wi, 0xff, sizeof(wi));
	wi.version = DYNPROF_WINDOW_INFO_VERSION;
	assert_int_equal(dynprof_window_info(f->h, 2, &wi), 1);
	assert_int_equal(wi.id, 2);
	assert_int_equal(wi.kind, DYNPROF_WINDOW_STEPS);
	assert_int_equal(wi.start_step, 1000);
	assert_int_equal(wi.stop_step, 1001);
	assert_int_equal(wi.start_unix_ns, 0);
	assert_int_equal(wi.start_ns, 0);
	assert_int_equal(wi.duration_ns, 0);
	assert_int_equal(dynprof_window_info(f->h, 3, &wi), 1);
	assert_int_equal(wi.kind, DYNPROF_WINDOW_TIME);
	assert_int_equal(wi.start_ns, now + 100 * MS);
	assert_int_equal(wi.start_unix_ns, 1764936000LL * 1000000000);
	assert_int_equal(wi.duration_ns, 59900 * MS);
	assert_int_equal(wi.start_step, 0);
	assert_int_equal(dynprof_window_info(f->h, 9, &wi), 0);
	assert_int_equal(dynprof_window_info(f->h, 0, &wi), 0);
	assert_int_equal(dynprof_window_info(NULL, 3, &wi), DYNPROF_EINVAL);
	assert_int_equal(dynprof_window_info(f->h, 3, NULL), DYNPROF_EINVAL);
	wi.version = 0;
	assert_int_equal(dynprof_window_info(f->h, 3, &wi), DYNPROF_EINVAL);
	wi.version = DYNPROF_WINDOW_INFO_VERSION + 1;
	assert_int_equal(dynprof_window_info(f->h, 3, &wi), DYNPROF_EINVAL);

	/* The time window runs: the old struct sees its id, steps 0 and 0. */
	for (n = 0; n < 5000 && dynprof_state(f->h) != DYNPROF_RANK_PROFILING;
	    n++) {
		assert_int_equal(dynprof_poll(f->h), DYNPROF_OK);
		tw_sleep_ms(1);
	}
	memset(&old, 0xa5, sizeof(old));
	assert_int_equal(dynprof_active_window(f->h, &old.w), 1);
	assert_int_equal(old.w.id, 3);
	assert_int_equal(old.w.start_step, 0);
	assert_int_equal(old.w.stop_step, 0);
	for (i = 0; i < sizeof(old.after); i++)
		assert_int_equal(old.after[i], 0xa5);
	/* Both leave the schedule: the one the rank ran is still known. */
	f->cfg.nwindows = 0;
	lf_push(f);
	assert_int_equal(dynprof_poll(f->h), DYNPROF_OK);
	wi.version = DYNPROF_WINDOW_INFO_VERSION;
	assert_int_equal(dynprof_window_info(f->h, 3, &wi), 1);
	assert_int_equal(wi.duration_ns, 59900 * MS);
	assert_int_equal(dynprof_window_info(f->h, 2, &wi), 0);
}

/* The rules as pure functions: start, stop and next_due around the times. */
static void
test_decide_time_pure(void **state)
{
	static struct seg_config cfg;
	struct window_done	 done = { NULL, 0, 0 };
	struct window_rank	 wr = { 0, NULL, &done, 10, 0, 0 };
	const char		*why;
	int			 idx;

	(void)state;
	tw_window(&cfg, 0, 1, 1000 * MS, 2000 * MS, "");
	wr.now_ns = 999 * MS;
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_BEGIN, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_next_due_ns(&cfg, &wr), 1000 * MS);
	/* Period unknown: the next step; known: half the time left. */
	assert_int_equal(window_next_due(&cfg, &wr), 11);
	wr.now_ns = 0;
	wr.period_ns = 10 * MS;
	assert_int_equal(window_next_due(&cfg, &wr), 10 + 50);
	wr.now_ns = 985 * MS;
	assert_int_equal(window_next_due(&cfg, &wr), 11);
	wr.now_ns = 1000 * MS;
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_END, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_BEGIN, &idx, &why),
	    WINDOW_START);
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_POLL, &idx, &why),
	    WINDOW_START);
	wr.active = &cfg.windows[0];
	wr.now_ns = 1989 * MS;
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_END, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_POLL, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_next_due_ns(&cfg, &wr), 2000 * MS);
	/* The stop is at an end: this step's, once close. */
	assert_int_equal(window_next_due(&cfg, &wr), 10);
	wr.now_ns = 1000 * MS;
	assert_int_equal(window_next_due(&cfg, &wr), 10 + 49);
	wr.now_ns = 1991 * MS;
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_END, &idx, &why),
	    WINDOW_STOP_COMPLETED);
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_POLL, &idx, &why),
	    WINDOW_NONE);
	wr.now_ns = 2000 * MS;
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_POLL, &idx, &why),
	    WINDOW_STOP_COMPLETED);
	wr.active = NULL;
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_BEGIN, &idx, &why),
	    WINDOW_SKIP);
	/* A window of steps is the steps' business, not the polls'. */
	tl_window(&cfg, 0, 2, 10, 12, "");
	assert_int_equal(window_decide(&cfg, &wr, 10, WINDOW_POLL, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_next_due_ns(&cfg, &wr), INT64_MAX);
}

/*
 * A rank whose period was measured, then ran a burst of steps (catching up
 * after a stall) before a time window came, then steps at its usual pace: it
 * starts and stops the window near its times, not thousands of steps later
 * on the burst's period.
 */
static void
test_step_burst(void **state)
{
	struct lib_fixture	*f = *state;
	int64_t			 start, stop, s, b_start = -1, e_stop = -1, t;
	int			 n;

	lf_push(f);
	lf_open_rank(f, 0);
	for (s = 1; s <= 10; s++) {
		/* Schedule changes at its pace: the period measured. */
		if (s == 3 || s == 8) {
			f->cfg.generation++;
			lf_push(f);
		}
		assert_int_equal(dynprof_step_begin(f->h, s), DYNPROF_OK);
		tw_sleep_ms(2);
		assert_int_equal(dynprof_step_end(f->h, s), DYNPROF_OK);
	}
	/* A schedule change in the middle of the burst: the slow path
	 * measures the period on it. */
	f->cfg.generation++;
	lf_push(f);
	for (; s <= 5010; s++) {
		assert_int_equal(dynprof_step_begin(f->h, s), DYNPROF_OK);
		assert_int_equal(dynprof_step_end(f->h, s), DYNPROF_OK);
	}
	start = tw_now() + 100 * MS;
	stop = start + 300 * MS;
	tw_window(&f->cfg, 0, 9, start, stop, "");
	f->cfg.generation++;
	lf_push(f);
	for (; s <= 5010 + 1000 && e_stop == -1; s++) {
		t = tw_now();
		n = f->rec.ncalls;
		assert_int_equal(dynprof_step_begin(f->h, s), DYNPROF_OK);
		if (f->rec.ncalls > n)
			b_start = t;
		tw_sleep_ms(2);
		n = f->rec.ncalls;
		assert_int_equal(dynprof_step_end(f->h, s), DYNPROF_OK);
		if (f->rec.ncalls > n)
			e_stop = tw_now();
	}
	print_message("after a burst: started %lld ms, stopped %lld ms from "
	    "the times\n", b_start < 0 ? -1 : (long long)((b_start - start) /
	    MS), e_stop < 0 ? -1 : (long long)((e_stop - stop) / MS));
	assert_true(b_start >= start && b_start - start < 50 * MS);
	assert_true(e_stop >= 0 && e_stop - stop < 50 * MS);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, lf_setup, lf_teardown)
	const struct CMUnitTest tests[] = {
		T(test_poll_window),
		T(test_step_window),
		T(test_late_and_invalid),
		T(test_step_late),
		T(test_step_burst),
		T(test_window_info),
		cmocka_unit_test(test_decide_time_pure),
	};
#undef T

	return (cmocka_run_group_tests_name("lib_timewin", tests, NULL, NULL));
}
