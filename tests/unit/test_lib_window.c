/*
 * The window rules, one test per rule (MindSpore 2.4's cases included), through
 * the real library: a real segment whose config the test writes as the agent
 * does (segment_write_config), and callbacks that record every call.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "libdynprof.h"
#include "test_lib_helpers.h"

struct fixture {
	char			*dir;
	struct segment		 agent;		/* the agent's view */
	struct seg_config	 cfg;
	struct tl_recorder	 rec;
	dynprof_t		*h;
};

static int
setup(void **state)
{
	struct fixture	*f;

	f = calloc(1, sizeof(*f));
	if (f == NULL || (f->dir = tl_tmpdir()) == NULL)
		return (-1);
	if (segment_open(&f->agent, f->dir, "job", SEG_CREATE, 0600) != SEG_OK)
		return (-1);
	*state = f;
	return (0);
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	dynprof_close(f->h);
	segment_close(&f->agent);
	tl_rmtree(f->dir);
	free(f);
	return (0);
}

static void
push(struct fixture *f)
{
	tl_push(&f->agent, &f->cfg);
}

static void
open_rank(struct fixture *f, int rank)
{
	struct dynprof_params	 p;

	tl_params(&p, f->dir, "job", rank, &f->rec);
	assert_int_equal(dynprof_open(&p, &f->h), DYNPROF_OK);
}

/* Runs step_begin + step_end for steps from..to. */
static void
steps(struct fixture *f, int64_t from, int64_t to)
{
	int64_t	 s;

	for (s = from; s <= to; s++) {
		assert_int_equal(dynprof_step_begin(f->h, s), DYNPROF_OK);
		assert_int_equal(dynprof_step_end(f->h, s), DYNPROF_OK);
	}
}

/* The rank's slot as the agent reads it. */
static struct seg_slot
slot_of(struct fixture *f)
{
	struct seg_slot	 s;

	assert_int_equal(segment_slot_read(&f->agent, f->h->slot_index, &s),
	    SEG_OK);
	return (s);
}

static void
assert_call(const struct tl_call *c, char what, uint32_t id, int64_t start,
    int64_t stop)
{
	assert_int_equal(c->what, what);
	assert_int_equal(c->window.id, id);
	assert_int_equal(c->window.start_step, start);
	assert_int_equal(c->window.stop_step, stop);
}

/* [5,7]: starts in step_begin(5), stops in step_end(7), output dir made. */
static void
test_inclusive_window(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;
	char		 want[4096];

	tl_window(&f->cfg, 0, 1, 5, 7, "");
	push(f);
	open_rank(f, 3);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_ARMED);
	steps(f, 1, 4);
	assert_int_equal(dynprof_step_begin(f->h, 5), 0);
	assert_int_equal(f->rec.ncalls, 1);
	assert_call(&f->rec.calls[0], 's', 1, 5, 7);
	snprintf(want, sizeof(want), "%s/out/rank3_start5_stop7", f->dir);
	assert_string_equal(f->rec.calls[0].output_dir, want);
	assert_true(f->rec.calls[0].dir_existed);
	assert_string_equal(f->rec.calls[0].fwopts, "{}");
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_PROFILING);
	s = slot_of(f);
	assert_int_equal(s.state, SEG_RANK_PROFILING);
	assert_int_equal(s.last_event, EVENT_STARTED);
	assert_string_equal(s.output_dir, want);
	assert_int_equal(s.step, 5);

	assert_int_equal(dynprof_step_end(f->h, 5), 0);
	steps(f, 6, 6);
	assert_int_equal(dynprof_step_begin(f->h, 7), 0);
	assert_int_equal(f->rec.ncalls, 1);	/* stop is inclusive */
	assert_int_equal(dynprof_step_end(f->h, 7), 0);
	assert_int_equal(f->rec.ncalls, 2);
	assert_call(&f->rec.calls[1], 'p', 1, 5, 7);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_COMPLETED);
	assert_string_equal(f->rec.calls[1].output_dir, want);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_DONE);
	s = slot_of(f);
	assert_int_equal(s.state, SEG_RANK_DONE);
	assert_int_equal(s.last_event, EVENT_STOPPED);
	assert_int_equal(s.reason, DYNPROF_STOP_COMPLETED);
	assert_int_equal(s.event_step, 7);
	assert_int_equal(s.generation, 1);
	steps(f, 8, 20);
	assert_int_equal(f->rec.ncalls, 2);
	assert_int_equal(dynprof_current_step(f->h), 20);
}

/* MindSpore 2.4: start_step > stop_step is refused, with a log line. */
static void
test_start_after_stop(void **state)
{
	struct fixture	*f = *state;

	tl_window(&f->cfg, 0, 1, 8, 5, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 12);
	assert_int_equal(f->rec.ncalls, 0);
	assert_true(tl_logged(&f->rec, "start_step is after stop_step"));
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_ATTACHED);
}

/* MindSpore 2.4: start_step <= 0 is refused, with a log line. */
static void
test_start_not_positive(void **state)
{
	struct fixture	*f = *state;

	tl_window(&f->cfg, 0, 1, 0, 5, "");
	tl_window(&f->cfg, 1, 2, -3, 2, "");
	tl_window(&f->cfg, 2, 3, 4, 4, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 6);
	assert_true(tl_logged(&f->rec, "window 1 (steps 0-5) ignored"));
	assert_true(tl_logged(&f->rec, "window 2 (steps -3-2) ignored"));
	/* The valid window beside them still runs. */
	assert_int_equal(f->rec.ncalls, 2);
	assert_call(&f->rec.calls[0], 's', 3, 4, 4);
	assert_call(&f->rec.calls[1], 'p', 3, 4, 4);
}

/* MindSpore 2.4: a start already passed is never started late: skipped. */
static void
test_start_passed(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;

	open_rank(f, 2);
	steps(f, 1, 9);
	assert_int_equal(dynprof_step_begin(f->h, 10), 0);
	tl_window(&f->cfg, 0, 1, 5, 8, "");
	push(f);
	assert_int_equal(dynprof_step_end(f->h, 10), 0);
	assert_int_equal(f->rec.ncalls, 0);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_SKIPPED);
	s = slot_of(f);
	assert_int_equal(s.last_event, EVENT_SKIPPED);
	assert_int_equal(s.window_id, 1);
	assert_int_equal(s.start_step, 5);	/* both steps reported */
	assert_int_equal(s.stop_step, 8);
	assert_int_equal(s.event_step, 10);
	assert_true(tl_logged(&f->rec, "starts at step 5, the rank is at step 10"));

	/* Its start step is the current one but step_begin has passed. */
	assert_int_equal(dynprof_step_begin(f->h, 11), 0);
	tl_window(&f->cfg, 1, 2, 11, 13, "");
	tl_window(&f->cfg, 2, 3, 12, 13, "");
	push(f);
	assert_int_equal(dynprof_step_end(f->h, 11), 0);
	assert_int_equal(f->rec.ncalls, 0);
	s = slot_of(f);
	assert_int_equal(s.last_event, EVENT_SKIPPED);
	assert_int_equal(s.window_id, 2);
	/* The next one is still ahead: it runs. */
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_ARMED);
	steps(f, 12, 13);
	assert_int_equal(f->rec.ncalls, 2);
	assert_call(&f->rec.calls[0], 's', 3, 12, 13);

	/* A rank that resumes at a later step skips what it passed. */
	tl_window(&f->cfg, 3, 4, 20, 21, "");
	push(f);
	steps(f, 1000, 1000);
	s = slot_of(f);
	assert_int_equal(s.last_event, EVENT_SKIPPED);
	assert_int_equal(s.window_id, 4);
	assert_int_equal(s.event_step, 1000);
	assert_int_equal(f->rec.ncalls, 2);
}

/* MindSpore 2.4: the same window twice runs once. */
static void
test_same_window_twice(void **state)
{
	struct fixture	*f = *state;

	tl_window(&f->cfg, 0, 1, 3, 4, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 5);
	assert_int_equal(f->rec.ncalls, 2);
	/* The same config again, then the same id with later steps. */
	push(f);
	steps(f, 6, 7);
	tl_window(&f->cfg, 0, 1, 9, 10, "");
	push(f);
	steps(f, 8, 12);
	assert_int_equal(f->rec.ncalls, 2);
	/* One id listed twice in one config. */
	tl_window(&f->cfg, 1, 5, 14, 14, "");
	tl_window(&f->cfg, 2, 5, 16, 16, "");
	push(f);
	steps(f, 13, 20);
	assert_int_equal(f->rec.ncalls, 4);
	assert_call(&f->rec.calls[2], 's', 5, 14, 14);
	assert_call(&f->rec.calls[3], 'p', 5, 14, 14);
}

/* MindSpore 2.4: a new config while a window runs: the window is latched. */
static void
test_new_config_while_running(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;

	tl_window(&f->cfg, 0, 1, 5, 10, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 7);
	assert_int_equal(f->rec.ncalls, 1);
	/* The running window shortened and a new one inside it: neither counts. */
	tl_window(&f->cfg, 0, 1, 5, 8, "");
	tl_window(&f->cfg, 1, 2, 9, 12, "");
	push(f);
	steps(f, 8, 9);
	assert_int_equal(f->rec.ncalls, 1);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_PROFILING);
	/* Then removed from the config altogether: still runs to its stop. */
	f->cfg.nwindows = 0;
	tl_window(&f->cfg, 0, 2, 9, 12, "");
	push(f);
	steps(f, 10, 10);
	assert_int_equal(f->rec.ncalls, 2);
	assert_call(&f->rec.calls[1], 'p', 1, 5, 10);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_COMPLETED);
	/* Window 2's start went by while window 1 ran: skipped, not late. */
	s = slot_of(f);
	assert_int_equal(s.last_event, EVENT_SKIPPED);
	assert_int_equal(s.window_id, 2);
	steps(f, 11, 14);
	assert_int_equal(f->rec.ncalls, 2);
}

/* MindSpore 2.4: stop step beyond the end of training: stopped at close. */
static void
test_stop_beyond_end(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;
	int		 idx;

	tl_window(&f->cfg, 0, 1, 5, 1000, "");
	push(f);
	open_rank(f, 0);
	idx = f->h->slot_index;
	steps(f, 1, 10);
	assert_int_equal(f->rec.ncalls, 1);
	dynprof_close(f->h);
	f->h = NULL;
	assert_int_equal(f->rec.ncalls, 2);
	assert_call(&f->rec.calls[1], 'p', 1, 5, 1000);
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
	struct fixture	*f = *state;
	struct seg_slot	 s;

	tl_window(&f->cfg, 0, 1, 5, 10, "");
	tl_window(&f->cfg, 1, 2, 12, 13, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 5);
	assert_int_equal(dynprof_step_begin(f->h, 6), 0);
	f->cfg.windows[0].flags |= SEG_WINDOW_CANCELLED;
	push(f);
	assert_int_equal(dynprof_step_end(f->h, 6), 0);
	assert_int_equal(f->rec.ncalls, 2);
	assert_call(&f->rec.calls[1], 'p', 1, 5, 10);
	assert_int_equal(f->rec.calls[1].reason, DYNPROF_STOP_CANCELLED);
	s = slot_of(f);
	assert_int_equal(s.reason, DYNPROF_STOP_CANCELLED);
	assert_int_equal(s.event_step, 6);

	/* Cancelled before it starts: never starts, even uncancelled later. */
	f->cfg.windows[1].flags |= SEG_WINDOW_CANCELLED;
	push(f);
	steps(f, 7, 20);
	assert_int_equal(f->rec.ncalls, 2);
}

/* Cancellation seen in step_begin still stops at that step's end. */
static void
test_cancel_seen_at_begin(void **state)
{
	struct fixture	*f = *state;

	tl_window(&f->cfg, 0, 1, 2, 10, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 3);
	f->cfg.windows[0].flags |= SEG_WINDOW_CANCELLED;
	push(f);
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
	struct fixture		*f = *state;
	struct dynprof_params	 p;
	struct tl_recorder	 rec4;
	dynprof_t		*h4;
	int64_t			 s;

	memset(&rec4, 0, sizeof(rec4));
	tl_window(&f->cfg, 0, 1, 3, 4, "0-1,4");
	push(f);
	open_rank(f, 3);
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
	struct fixture	*f = *state;

	tl_window(&f->cfg, 0, 1, 2, 3, "");
	tl_window(&f->cfg, 1, 2, 5, 5, "");
	tl_window(&f->cfg, 2, 3, 8, 9, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 12);
	assert_int_equal(f->rec.ncalls, 6);
	assert_call(&f->rec.calls[0], 's', 1, 2, 3);
	assert_call(&f->rec.calls[1], 'p', 1, 2, 3);
	assert_call(&f->rec.calls[2], 's', 2, 5, 5);
	assert_call(&f->rec.calls[3], 'p', 2, 5, 5);
	assert_call(&f->rec.calls[4], 's', 3, 8, 9);
	assert_call(&f->rec.calls[5], 'p', 3, 8, 9);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_DONE);
}

/* dynprof_step(): an internal counter from 1; close ends the last step. */
static void
test_counter_mode(void **state)
{
	struct fixture	*f = *state;
	int		 i;

	tl_window(&f->cfg, 0, 1, 3, 4, "");
	tl_window(&f->cfg, 1, 2, 6, 6, "");
	push(f);
	open_rank(f, 0);
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

/* A failing start callback: failed with its message, no stop for it. */
static void
test_start_fails(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;

	f->rec.fail_start = 1;
	tl_window(&f->cfg, 0, 1, 2, 4, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 6);
	assert_int_equal(f->rec.ncalls, 1);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_FAILED);
	assert_int_equal(dynprof_active_window(f->h, NULL), 0);
	s = slot_of(f);
	assert_int_equal(s.last_event, EVENT_FAILED);
	assert_string_equal(s.error, "profiler refused to start");
	assert_int_equal(s.window_id, 1);
	dynprof_close(f->h);
	f->h = NULL;
	assert_int_equal(f->rec.ncalls, 1);
}

/* A failing stop callback: failed with its message. */
static void
test_stop_fails(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;

	f->rec.fail_stop = 1;
	tl_window(&f->cfg, 0, 1, 2, 3, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 4);
	assert_int_equal(f->rec.ncalls, 2);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_FAILED);
	s = slot_of(f);
	assert_int_equal(s.last_event, EVENT_FAILED);
	assert_int_equal(s.reason, DYNPROF_STOP_COMPLETED);
	assert_string_equal(s.error, "profiler refused to stop");
}

/* Options, framework options and the relative subdirectory reach the callback;
 * a subdirectory escaping the root makes the window ignored. */
static void
test_options_and_subdir(void **state)
{
	struct fixture	*f = *state;
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
	push(f);
	open_rank(f, 1);
	steps(f, 1, 8);
	assert_int_equal(f->rec.ncalls, 2);
	snprintf(want, sizeof(want), "%s/out/exp/a/rank1_start2_stop2", f->dir);
	assert_string_equal(f->rec.calls[0].output_dir, want);
	assert_true(f->rec.calls[0].dir_existed);
	assert_int_equal(f->rec.calls[0].profiler_level, 1);
	assert_string_equal(f->rec.calls[0].fwopts, "{\"record_shapes\":true}");
	assert_true(tl_logged(&f->rec, "'..'"));
	assert_true(tl_logged(&f->rec, "absolute"));
}

/* No change and nothing due: the step touches only the slot's step. */
static void
test_hot_path_state(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_fast_state fs;
	struct dynprof_stats	 st;
	uint64_t		 reads;

	tl_window(&f->cfg, 0, 1, 1000, 1001, "");
	push(f);
	open_rank(f, 0);
	dynprof_get_stats(f->h, &st);
	reads = st.config_reads;
	assert_int_equal(reads, 1);		/* read at open */
	steps(f, 1, 500);
	dynprof_get_stats(f->h, &st);
	assert_int_equal(st.config_reads, reads);
	dynprof_get_fast_state(f->h, &fs);
	assert_int_equal(fs.seq_addr, (uintptr_t)&f->agent.hdr->seq -
	    (uintptr_t)f->agent.hdr + (uintptr_t)f->h->seg.hdr);
	assert_int_equal(fs.seq_seen, atomic_load(&f->agent.hdr->seq));
	assert_int_equal(fs.next_due, 1000);
	assert_int_equal(*(int64_t *)fs.step_addr, 500);
	/* The binding's own fast path: store the step, no library call. */
	*(volatile int64_t *)fs.step_addr = 501;
	assert_int_equal(slot_of(f).step, 501);
	assert_int_equal(dynprof_current_step(f->h), 501);
	/* A new config: the next step reloads it once. */
	push(f);
	steps(f, 502, 503);
	dynprof_get_stats(f->h, &st);
	assert_int_equal(st.config_reads, reads + 1);
	dynprof_get_fast_state(f->h, &fs);
	assert_int_equal(fs.seq_seen, atomic_load(&f->agent.hdr->seq));
	/* Nothing left for the rank: nothing is due. */
	f->cfg.nwindows = 0;
	push(f);
	steps(f, 504, 504);
	dynprof_get_fast_state(f->h, &fs);
	assert_int_equal(fs.next_due, INT64_MAX);
}

/* dynprof_report_failure ends the window in progress as failed. */
static void
test_report_failure(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_window	 w;
	struct seg_slot		 s;

	tl_window(&f->cfg, 0, 1, 2, 9, "");
	push(f);
	open_rank(f, 0);
	steps(f, 1, 3);
	assert_int_equal(dynprof_active_window(f->h, &w), 1);
	assert_int_equal(w.id, 1);
	assert_int_equal(w.stop_step, 9);
	assert_int_equal(dynprof_report_failure(f->h, "device lost"), 0);
	assert_int_equal(dynprof_active_window(f->h, &w), 0);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_FAILED);
	s = slot_of(f);
	assert_string_equal(s.error, "device lost");
	assert_int_equal(s.window_id, 1);
	steps(f, 4, 12);
	assert_int_equal(f->rec.ncalls, 1);	/* no stop for a failed one */
	assert_int_equal(dynprof_report_failure(NULL, "x"), DYNPROF_EINVAL);
}

/* The process exits inside a window without closing: the window is stopped
 * (reason closed) and the slot freed, by the library's exit handler. */
static void
test_exit_stops_window(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;
	pid_t		 pid;
	int		 status, i, found = 0;

	tl_window(&f->cfg, 0, 1, 2, 100, "");
	push(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		open_rank(f, 7);
		steps(f, 1, 3);
		exit(f->rec.ncalls == 1 ? 0 : 3);	/* no close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < SEG_MAX_SLOTS; i++) {
		assert_int_equal(segment_slot_read(&f->agent, i, &s), SEG_OK);
		if (s.rank != 7)
			continue;
		found = 1;
		assert_int_equal(s.pid, 0);
		assert_int_equal(s.state, SEG_RANK_GONE);
		assert_int_equal(s.last_event, EVENT_STOPPED);
		assert_int_equal(s.window_id, 1);
		assert_int_equal(s.reason, DYNPROF_STOP_CLOSED);
		assert_int_equal(s.event_step, 3);
	}
	assert_true(found);
}

/*
 * Rank 4 runs into window 1 [3, 20] and is at step 5; then its slot is taken
 * from it: the agent acknowledges its two events (attached, started) and frees
 * it, and a newcomer claims it (claims prefer free slots whose log is
 * acknowledged).  Returns the slot's index.
 */
static int
slot_taken_in_window(struct fixture *f)
{
	uint32_t	 inc, head;
	int		 old;

	tl_window(&f->cfg, 0, 1, 3, 20, "");
	push(f);
	open_rank(f, 4);
	steps(f, 1, 5);
	old = f->h->slot_index;
	head = slotlog_head(&f->agent.slots[old], &inc);
	assert_int_equal(head, 2);
	assert_int_equal(slotlog_ack(&f->agent.slots[old], inc, head), 1);
	atomic_store(&f->agent.slots[old].pid, 0);
	assert_int_equal(segment_slot_claim(&f->agent, getpid() + 100000, 9, NULL),
	    old);
	return (old);
}

/* A slot taken from a live rank (an agent in another pid namespace thought it
 * dead): the rank claims a slot again at its next slow step. */
static void
test_slot_taken(void **state)
{
	struct fixture	*f = *state;
	struct seg_slot	 s;
	int		 old;

	old = slot_taken_in_window(f);
	push(f);
	steps(f, 6, 6);
	assert_int_not_equal(f->h->slot_index, old);
	s = slot_of(f);
	assert_int_equal(s.pid, getpid());
	assert_int_equal(s.rank, 4);
	assert_int_equal(s.step, 6);
	assert_int_equal(s.state, SEG_RANK_PROFILING);
	assert_true(tl_logged(&f->rec, "was taken from pid"));
	/* The newcomer's slot is left alone. */
	assert_int_equal(segment_slot_read(&f->agent, old, &s), SEG_OK);
	assert_int_equal(s.rank, 9);
	assert_int_equal(s.step, -1);
}

/*
 * A rank whose slot was taken while it was inside a window and that closes
 * before its next slow step: its stopped and detached events must not land in
 * the log of the slot's new holder.
 */
static void
test_slot_taken_close(void **state)
{
	struct fixture	*f = *state;
	uint32_t	 inc;
	int		 old;

	old = slot_taken_in_window(f);
	dynprof_close(f->h);
	f->h = NULL;
	assert_int_equal(slotlog_head(&f->agent.slots[old], &inc), 0);
	assert_int_equal(atomic_load(&f->agent.slots[old].pid),
	    getpid() + 100000);
}

/* Job and rank from the environment; invalid values refused clearly. */
static void
test_environment(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_params	 p;
	struct stat		 st;
	char			 path[4096];
	dynprof_t		*h;

	setenv("DYNPROF_SHM_DIR", f->dir, 1);
	setenv("DYNPROF_AGENT_SOCKET", "/nonexistent/agent.sock", 1);
	setenv("DYNPROF_OUTPUT_ROOT", "rel/out", 1);
	setenv("SLURM_JOB_ID", "36199_0", 1);
	setenv("SLURM_PROCID", "12", 1);
	setenv("DYNPROF_SHM_MODE", "0640", 1);
	dynprof_params_init(&p);
	assert_int_equal(p.version, DYNPROF_PARAMS_VERSION);
	assert_int_equal(p.rank, -1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(dynprof_job(h), "36199_0");
	assert_int_equal(dynprof_rank(h), 12);
	assert_int_equal(dynprof_current_step(h), -1);
	assert_true(h->output_root[0] == '/');
	assert_non_null(strstr(h->output_root, "/rel/out"));
	snprintf(path, sizeof(path), "%s/dynprof.36199_0", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	dynprof_close(h);

	/* DYNPROF_JOB wins over SLURM_JOB_ID, RANK over SLURM_PROCID. */
	setenv("DYNPROF_JOB", "mine", 1);
	setenv("RANK", "3", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(dynprof_job(h), "mine");
	assert_int_equal(dynprof_rank(h), 3);
	dynprof_close(h);

	setenv("DYNPROF_JOB", "../etc", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EJOB);
	assert_null(h);
	setenv("DYNPROF_JOB", "mine", 1);
	setenv("RANK", "abc", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	setenv("RANK", "3", 1);
	setenv("DYNPROF_SHM_MODE", "999", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	unsetenv("DYNPROF_SHM_MODE");

	/* Nothing set at all: job "default", rank 0. */
	unsetenv("DYNPROF_JOB");
	unsetenv("SLURM_JOB_ID");
	unsetenv("RANK");
	unsetenv("SLURM_PROCID");
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(dynprof_job(h), "default");
	assert_int_equal(dynprof_rank(h), 0);
	dynprof_close(h);
	unsetenv("DYNPROF_SHM_DIR");
	unsetenv("DYNPROF_AGENT_SOCKET");
	unsetenv("DYNPROF_OUTPUT_ROOT");
}

static void
test_bad_arguments(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_params	 p;
	char			 longsock[300];
	dynprof_t		*h;
	int			 i;

	assert_int_equal(dynprof_open(NULL, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	assert_int_equal(dynprof_open(&p, NULL), DYNPROF_EINVAL);
	p.version = 99;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", -5, &f->rec);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	p.shm_mode = 01777;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	memset(longsock, 'a', sizeof(longsock) - 1);
	longsock[0] = '/';
	longsock[sizeof(longsock) - 1] = '\0';
	p.agent_socket = longsock;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EPATH);
	/* The failed opens left no slot taken. */
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		assert_int_equal(atomic_load(&f->agent.slots[i].pid), 0);

	assert_int_equal(dynprof_step_begin(NULL, 1), DYNPROF_EINVAL);
	assert_int_equal(dynprof_step_end(NULL, 1), DYNPROF_EINVAL);
	assert_int_equal(dynprof_step(NULL), DYNPROF_EINVAL);
	assert_int_equal(dynprof_state(NULL), DYNPROF_EINVAL);
	assert_null(dynprof_job(NULL));
	dynprof_close(NULL);
	assert_string_equal(dynprof_version(), "0.1.0");
	for (i = 0; i >= DYNPROF_EOWNER; i--)
		assert_string_not_equal(dynprof_strerror(i), "unknown error");

	/* A segment every slot of which a live process holds. */
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		assert_int_equal(segment_slot_claim(&f->agent, getpid(), i, NULL), i);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_ENOSLOT);
	/* A segment of another layout. */
	f->agent.hdr->version = SEG_VERSION + 1;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EVERSION);
	f->agent.hdr->version = SEG_VERSION;
}

/* The rules as pure functions: the boundary cases of start and stop. */
static void
test_decide_pure(void **state)
{
	static struct seg_config cfg;
	struct window_done	 done = { NULL, 0, 0 };
	struct window_rank	 wr = { 0, NULL, &done };
	struct seg_window	 active;
	const char		*why;
	int			 idx;

	(void)state;
	memset(&cfg, 0, sizeof(cfg));
	tl_window(&cfg, 0, 9, 5, 6, "");
	assert_int_equal(window_decide(&cfg, &wr, 4, WINDOW_BEGIN, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_decide(&cfg, &wr, 4, WINDOW_END, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_decide(&cfg, &wr, 5, WINDOW_BEGIN, &idx, &why),
	    WINDOW_START);
	assert_int_equal(idx, 0);
	assert_int_equal(window_decide(&cfg, &wr, 5, WINDOW_END, &idx, &why),
	    WINDOW_SKIP);
	assert_int_equal(window_decide(&cfg, &wr, 6, WINDOW_BEGIN, &idx, &why),
	    WINDOW_SKIP);
	assert_int_equal(window_next_due(&cfg, &wr), 5);
	assert_int_equal(window_pending(&cfg, &wr), 1);

	active = cfg.windows[0];
	wr.active = &active;
	assert_int_equal(window_decide(&cfg, &wr, 6, WINDOW_BEGIN, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_decide(&cfg, &wr, 5, WINDOW_END, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_decide(&cfg, &wr, 6, WINDOW_END, &idx, &why),
	    WINDOW_STOP_COMPLETED);
	assert_int_equal(window_next_due(&cfg, &wr), 6);
	cfg.windows[0].flags |= SEG_WINDOW_CANCELLED;
	assert_int_equal(window_decide(&cfg, &wr, 5, WINDOW_END, &idx, &why),
	    WINDOW_STOP_CANCELLED);
	assert_int_equal(window_next_due(&cfg, &wr), INT64_MIN);

	wr.active = NULL;
	assert_int_equal(window_done_add(&done, 9), 0);
	cfg.windows[0].flags = 0;
	assert_int_equal(window_decide(&cfg, &wr, 5, WINDOW_BEGIN, &idx, &why),
	    WINDOW_NONE);
	assert_int_equal(window_next_due(&cfg, &wr), INT64_MAX);
	assert_int_equal(window_pending(&cfg, &wr), 0);

	tl_window(&cfg, 1, 10, 3, 4, "not-a-list");
	assert_int_equal(window_decide(&cfg, &wr, 1, WINDOW_BEGIN, &idx, &why),
	    WINDOW_INVALID);
	assert_int_equal(idx, 1);
	assert_non_null(strstr(why, "ranks"));
	window_done_free(&done);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
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
		T(test_hot_path_state),
		T(test_report_failure),
		T(test_exit_stops_window),
		T(test_slot_taken),
		T(test_slot_taken_close),
		T(test_environment),
		T(test_bad_arguments),
		cmocka_unit_test(test_decide_pure),
	};
#undef T

	return (cmocka_run_group_tests_name("lib_window", tests, NULL, NULL));
}
