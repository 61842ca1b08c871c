/*
 * The window rules under random schedules: configs with random windows (some
 * invalid, some cancelled, some for other ranks, overlapping ones) are pushed at
 * random moments, before a step_begin or between a step_begin and its step_end,
 * through the real library and a real segment.  Every callback checks the rules
 * at the moment it is called:
 *
 *	- a start happens in step_begin(start_step) of a valid window of the current
 *	  config, for this rank, not cancelled, never twice for one id, never while
 *	  another window runs;
 *	- a completed stop happens in step_end(stop_step) of the running window; a
 *	  cancelled stop in a step_end, with the window cancelled in the config;
 *	- a window due now, with nothing running, does start (nothing is lost).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_lib_helpers.h"

#define NIDS		2000
#define NSTEPS		1000
#define NSEEDS		12
#define RANK		1

struct world {
	struct segment		 agent;
	struct seg_config	 cfg;		/* the config last pushed */
	dynprof_t		*h;
	unsigned		 seed;
	int64_t			 step;
	int			 in_end;	/* inside step_end */
	int			 started[NIDS + 1];
	int			 active;	/* id running, 0: none */
	int64_t			 active_stop;
	int			 nstarts;
	int			 nstops;
	int			 ncancels;
	/* Each id has fixed steps, as the coordinator assigns them. */
	int			 assigned[NIDS + 1];
	int64_t			 start_of[NIDS + 1];
	int64_t			 stop_of[NIDS + 1];
	int			 closing;
};

static struct world w;

static const struct seg_window *
in_config(uint32_t id)
{
	uint32_t	 i;

	for (i = 0; i < w.cfg.nwindows; i++)
		if (w.cfg.windows[i].id == id)
			return (&w.cfg.windows[i]);
	return (NULL);
}

static int
on_start(void *arg, const struct dynprof_window *win,
    const struct dynprof_options *o, const char *fw, const char *dir,
    char *err, size_t errlen)
{
	const struct seg_window	*sw;

	(void)arg;
	(void)o;
	(void)fw;
	(void)dir;
	(void)err;
	(void)errlen;
	assert_false(w.in_end);
	assert_int_equal(w.active, 0);
	assert_true(win->id >= 1 && win->id <= NIDS);
	assert_int_equal(w.started[win->id], 0);
	assert_int_equal(win->start_step, w.step);
	assert_true(win->start_step > 0 && win->start_step <= win->stop_step);
	sw = in_config(win->id);
	assert_non_null(sw);
	assert_false(sw->flags & SEG_WINDOW_CANCELLED);
	assert_true(sw->ranks[0] == '\0' || strcmp(sw->ranks, "1") == 0 ||
	    strcmp(sw->ranks, "0-3") == 0);
	w.started[win->id] = 1;
	w.active = (int)win->id;
	w.active_stop = win->stop_step;
	w.nstarts++;
	return (0);
}

static int
on_stop(void *arg, const struct dynprof_window *win,
    enum dynprof_stop_reason reason, const char *dir, char *err, size_t errlen)
{
	const struct seg_window	*sw;

	(void)arg;
	(void)dir;
	(void)err;
	(void)errlen;
	assert_true(w.in_end);
	assert_int_equal((int)win->id, w.active);
	/* Latched: the stop step is the one it started with. */
	assert_int_equal(win->stop_step, w.active_stop);
	if (w.closing) {
		assert_int_equal(reason, DYNPROF_STOP_CLOSED);
	} else if (reason == DYNPROF_STOP_COMPLETED) {
		assert_int_equal(w.step, win->stop_step);
	} else {
		assert_int_equal(reason, DYNPROF_STOP_CANCELLED);
		assert_true(w.step <= win->stop_step);
		sw = in_config(win->id);
		assert_non_null(sw);
		assert_true(sw->flags & SEG_WINDOW_CANCELLED);
		w.ncancels++;
	}
	w.active = 0;
	w.nstops++;
	return (0);
}

/* A new random config around the current step. */
static void
random_push(void)
{
	static const char *const ranks[] = { "", "1", "0", "0-3", "2-9" };
	struct seg_window	*sw;
	uint32_t		 n, i, id;

	n = (uint32_t)(rand_r(&w.seed) % (SEG_MAX_WINDOWS + 1));
	w.cfg.nwindows = 0;
	for (i = 0; i < n; i++) {
		/* Ids are unique within a config, as the coordinator makes them. */
		do
			id = 1 + (uint32_t)(rand_r(&w.seed) % NIDS);
		while (in_config(id) != NULL || (int)id == w.active);
		if (!w.assigned[id]) {
			w.assigned[id] = 1;
			w.start_of[id] = w.step - 5 + rand_r(&w.seed) % 40;
			w.stop_of[id] = w.start_of[id] - 2 + rand_r(&w.seed) % 12;
			if (rand_r(&w.seed) % 10 == 0)
				w.start_of[id] = -(rand_r(&w.seed) % 3);
		}
		tl_window(&w.cfg, (int)i, id, w.start_of[id], w.stop_of[id],
		    ranks[rand_r(&w.seed) % 5]);
		sw = &w.cfg.windows[i];
		if (rand_r(&w.seed) % 8 == 0)
			sw->flags |= SEG_WINDOW_CANCELLED;
	}
	/* The running window: usually kept, sometimes cancelled, sometimes gone. */
	if (w.active != 0 && n < SEG_MAX_WINDOWS && rand_r(&w.seed) % 3 != 0) {
		tl_window(&w.cfg, (int)n, (uint32_t)w.active,
		    w.start_of[w.active], w.stop_of[w.active], "");
		if (rand_r(&w.seed) % 4 == 0)
			w.cfg.windows[n].flags |= SEG_WINDOW_CANCELLED;
	}
	tl_push(&w.agent, &w.cfg);
}

/* After step_begin(s): a window due at s, with nothing running, started. */
static void
check_nothing_lost(int was_active)
{
	const struct seg_window	*sw;
	uint32_t		 i;
	int			 due = 0;

	if (was_active)
		return;
	for (i = 0; i < w.cfg.nwindows; i++) {
		sw = &w.cfg.windows[i];
		if (sw->start_step == w.step && sw->start_step > 0 &&
		    sw->start_step <= sw->stop_step &&
		    !(sw->flags & SEG_WINDOW_CANCELLED) &&
		    (sw->ranks[0] == '\0' || strcmp(sw->ranks, "1") == 0 ||
		    strcmp(sw->ranks, "0-3") == 0) && !w.started[sw->id])
			due = 1;
	}
	if (due)
		assert_int_not_equal(w.active, 0);
}

static void
test_random_schedules(void **state)
{
	struct dynprof_params	 p;
	char			*dir;
	int			 k, was_active;
	int			 starts = 0, cancels = 0;

	(void)state;
	for (k = 0; k < NSEEDS; k++) {
		memset(&w, 0, sizeof(w));
		w.seed = 1000u + (unsigned)k;
		dir = tl_tmpdir();
		assert_non_null(dir);
		assert_int_equal(segment_open(&w.agent, dir, "rnd", SEG_CREATE,
		    0600), SEG_OK);
		tl_params(&p, dir, "rnd", RANK, NULL);
		p.on_start = on_start;
		p.on_stop = on_stop;
		p.on_log = NULL;
		assert_int_equal(dynprof_open(&p, &w.h), DYNPROF_OK);
		for (w.step = 1; w.step <= NSTEPS; w.step++) {
			if (rand_r(&w.seed) % 10 == 0)
				random_push();
			was_active = w.active != 0;
			assert_int_equal(dynprof_step_begin(w.h, w.step), 0);
			check_nothing_lost(was_active);
			if (rand_r(&w.seed) % 10 == 0)
				random_push();
			w.in_end = 1;
			assert_int_equal(dynprof_step_end(w.h, w.step), 0);
			w.in_end = 0;
			assert_int_equal(dynprof_active_window(w.h, NULL),
			    w.active != 0);
		}
		w.in_end = 1;	/* close stops like a step_end */
		w.closing = 1;
		dynprof_close(w.h);
		starts += w.nstarts;
		cancels += w.ncancels;
		segment_close(&w.agent);
		tl_rmtree(dir);
	}
	print_message("%d windows started, %d cancelled while running\n",
	    starts, cancels);
	/* The schedules exercised the rules. */
	assert_true(starts > 50);
	assert_true(cancels > 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_schedules),
	};

	return (cmocka_run_group_tests_name("lib_rules_random", tests, NULL,
	    NULL));
}
