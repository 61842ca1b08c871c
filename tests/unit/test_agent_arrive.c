/*
 * The agent's read of a rank's arrivals (agent/arrive.c) from a real
 * segment's slot, which is the rank's to write: marks no monotonic clock
 * gives (negative, INT64_MAX, after the read) are left out, never turned
 * into a wall-clock time (that overflowed: undefined, and a time of
 * -7.5e15 us sent on); the honest marks beside them are read, once.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "unit_util.h"

#define T_JOB		"arrive-1"

struct t {
	char			 dir[64];
	struct agent_job	*j;
};

static int
setup(void **state)
{
	struct t	*t = calloc(1, sizeof(*t));

	assert_non_null(t);
	assert_non_null(t->j = calloc(1, sizeof(*t->j)));
	assert_int_equal(unit_tmpdir(t->dir, sizeof(t->dir)), 0);
	assert_int_equal(segment_open(&t->j->seg, t->dir, T_JOB, SEG_CREATE,
	    0600), SEG_OK);
	t->j->arrive_sent[0] = -1;
	*state = t;
	return (0);
}

static int
teardown(void **state)
{
	struct t	*t = *state;

	segment_close(&t->j->seg);
	segment_unlink(t->dir, T_JOB);
	rmdir(t->dir);
	free(t->j);
	free(t);
	return (0);
}

static int64_t
now_ns(clockid_t clk)
{
	struct timespec	 ts;

	clock_gettime(clk, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/* Writes arrival i of slot 0 as the rank would. */
static void
mark(struct agent_job *j, int i, int64_t step, int64_t mark_ns)
{
	struct seg_slot	*s = &j->seg.slots[0];

	atomic_store(&s->arrive[i].step, step);
	atomic_store(&s->arrive[i].mark_ns, mark_ns);
	atomic_store(&s->arrive_count, (uint64_t)i + 1);
}

static void
test_hostile_marks(void **state)
{
	struct t	*t = *state;
	int64_t		 steps[SEG_ARRIVE_ENTRIES], us[SEG_ARRIVE_ENTRIES];
	int64_t		 mono = now_ns(CLOCK_MONOTONIC), wall_us;
	size_t		 n;

	mark(t->j, 0, 10, INT64_MAX);
	mark(t->j, 1, 11, -5);
	mark(t->j, 2, 12, mono - 1000000);		/* honest, 1 ms ago */
	mark(t->j, 3, 13, INT64_MIN);
	mark(t->j, 4, 14, mono + 3600LL * 1000000000);	/* in an hour */
	mark(t->j, 5, 15, mono - 500000);		/* honest */
	wall_us = now_ns(CLOCK_REALTIME) / 1000;
	n = arrive_read(t->j, 0, steps, us);
	assert_int_equal(n, 2);
	assert_int_equal(steps[0], 12);
	assert_int_equal(steps[1], 15);
	/* Within 10 s of the wall clock, in order. */
	assert_true(us[0] > wall_us - 10000000 && us[0] < wall_us + 10000000);
	assert_true(us[1] >= us[0]);
	/* Read once. */
	assert_int_equal(arrive_read(t->j, 0, steps, us), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hostile_marks, setup,
		    teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
