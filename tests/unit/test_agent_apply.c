/*
 * The agent's pure parts: apply_jobconfig() (every check a rank relies on) and
 * the bounded event queue.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent.h"

struct cfg {
	Dynprof__V1__JobConfig		 jc;
	Dynprof__V1__Window		 w[SEG_MAX_WINDOWS + 1];
	Dynprof__V1__Window		*wp[SEG_MAX_WINDOWS + 1];
	Dynprof__V1__ProfilerOptions	 o;
};

/* A config of n windows, 10 steps apart, 5 long, ids 1..n. */
static void
make(struct cfg *c, size_t n)
{
	size_t	 i;

	dynprof__v1__job_config__init(&c->jc);
	dynprof__v1__profiler_options__init(&c->o);
	c->o.aicore_metrics = -1;
	c->o.profiler_level = -1;
	c->o.profile_framework = -1;
	c->o.analyse_mode = -1;
	c->jc.job = (char *)"job-1";
	c->jc.generation = 9;
	for (i = 0; i < n; i++) {
		dynprof__v1__window__init(&c->w[i]);
		c->w[i].id = (uint32_t)i + 1;
		c->w[i].start_step = 10 * (int64_t)i + 1;
		c->w[i].stop_step = 10 * (int64_t)i + 5;
		c->w[i].state = DYNPROF__V1__WINDOW_STATE__WINDOW_SCHEDULED;
		c->wp[i] = &c->w[i];
	}
	c->jc.n_windows = n;
	c->jc.windows = c->wp;
}

static int
apply(struct cfg *c, struct seg_config *out, const char *want)
{
	const char	*why = NULL;
	int		 rc;

	rc = apply_jobconfig(&c->jc, out, &why);
	if (want != NULL) {
		assert_int_equal(rc, -1);
		assert_non_null(why);
		assert_non_null(strstr(why, want));
	}
	return (rc);
}

static void
test_apply_good(void **state)
{
	struct cfg		 c;
	struct seg_config	*out = malloc(sizeof(*out));

	(void)state;
	make(&c, 3);
	c.w[1].ranks = (char *)"0-7,16";
	c.w[1].options = &c.o;
	c.o.profiler_level = 2;
	c.o.with_stack = 1;
	c.o.output_subdir = (char *)"exp/a";
	c.o.framework_options_json = (char *)"{\"record_shapes\":true}";
	/* Out of order on the wire: the segment gets them by start step. */
	c.w[0].start_step = 100;
	c.w[0].stop_step = 104;
	assert_int_equal(apply(&c, out, NULL), 0);
	assert_int_equal(out->generation, 9);
	assert_int_equal(out->nwindows, 3);
	assert_int_equal(out->windows[0].id, 2);
	assert_int_equal(out->windows[1].id, 3);
	assert_int_equal(out->windows[2].id, 1);
	assert_string_equal(out->windows[0].ranks, "0-7,16");
	assert_int_equal(out->windows[0].options.profiler_level, 2);
	assert_int_equal(out->windows[0].options.with_stack, 1);
	assert_string_equal(out->windows[0].options.output_subdir, "exp/a");
	assert_string_equal(out->windows[0].options.fwopts,
	    "{\"record_shapes\":true}");
	assert_int_equal(out->windows[0].options.fwopts_len, 22);
	/* No options: MindSpore's defaults. */
	assert_int_equal(out->windows[1].options.aicore_metrics, -1);
	assert_int_equal(out->windows[1].options.data_simplification, 1);

	/* A cancelled window may overlap a scheduled one. */
	make(&c, 2);
	c.w[1].start_step = 3;
	c.w[1].state = DYNPROF__V1__WINDOW_STATE__WINDOW_CANCELLED;
	assert_int_equal(apply(&c, out, NULL), 0);
	assert_int_equal(out->windows[1].flags & SEG_WINDOW_CANCELLED,
	    SEG_WINDOW_CANCELLED);
	/* No window at all. */
	make(&c, 0);
	assert_int_equal(apply(&c, out, NULL), 0);
	assert_int_equal(out->nwindows, 0);
	free(out);
}

/* What concerns the whole config refuses it. */
static void
test_apply_refused(void **state)
{
	struct cfg		 c;
	struct seg_config	*out = malloc(sizeof(*out));

	(void)state;
	make(&c, 1);
	c.jc.job = (char *)"../x";
	apply(&c, out, "job id");
	c.jc.job = (char *)"";
	apply(&c, out, "job id");
	make(&c, 1);
	c.jc.generation = 0;
	apply(&c, out, "generation 0");
	make(&c, SEG_MAX_WINDOWS + 1);
	apply(&c, out, "more than 16");
	free(out);
}

/*
 * Applies c, which holds one bad window (bad) among three: the two others are
 * taken, the bad one dropped with the reason want.
 */
static void
apply_drops(struct cfg *c, struct seg_config *out, uint32_t bad,
    const char *want)
{
	const char	*why = NULL;
	uint32_t	 i, n = 0;

	assert_int_equal(apply_jobconfig(&c->jc, out, &why), 0);
	assert_non_null(why);
	if (strstr(why, want) == NULL)
		fail_msg("dropped for \"%s\", not \"%s\"", why, want);
	for (i = 1; i <= 3; i++) {
		if (i == bad)
			continue;
		assert_true(n < out->nwindows);
		assert_int_equal(out->windows[n].id, i);
		n++;
	}
	assert_int_equal(out->nwindows, 2);
}

/*
 * A bad window is dropped and the others taken: one wrong window must never
 * keep a job's other windows from its ranks (a start of -9.2e18 once did).
 */
static void
test_apply_drops_bad_windows(void **state)
{
	struct cfg		 c;
	struct seg_config	*out = malloc(sizeof(*out));
	char			*big = malloc(SEG_FWOPTS_MAX + 10);
	char			 longranks[SEG_RANKS_MAX + 10];
	const char		*why = NULL;

	(void)state;
	/* Every window good: *why untouched. */
	make(&c, 3);
	assert_int_equal(apply_jobconfig(&c.jc, out, &why), 0);
	assert_null(why);
	assert_int_equal(out->nwindows, 3);

	make(&c, 3);
	c.w[1].start_step = INT64_MIN + 1;
	c.w[1].stop_step = INT64_MIN + 20;
	apply_drops(&c, out, 2, "negative");
	make(&c, 3);
	c.w[1].id = 0;
	apply_drops(&c, out, 2, "id 0");
	make(&c, 3);
	c.w[2].stop_step = 0;
	apply_drops(&c, out, 3, "out of order");
	make(&c, 3);
	c.w[0].start_step = -3;
	apply_drops(&c, out, 1, "negative");
	make(&c, 3);
	c.w[2].id = 1;
	apply_drops(&c, out, 3, "same id");
	make(&c, 3);
	c.w[1].start_step = 5;		/* overlaps window 1 [1, 5] */
	apply_drops(&c, out, 2, "overlap");
	make(&c, 3);
	c.w[1].ranks = (char *)"7-x";
	apply_drops(&c, out, 2, "");
	memset(longranks, '1', sizeof(longranks) - 1);
	longranks[sizeof(longranks) - 1] = '\0';
	c.w[1].ranks = longranks;
	apply_drops(&c, out, 2, "too long");
	make(&c, 3);
	c.w[1].options = &c.o;
	c.o.output_subdir = (char *)"../escape";
	apply_drops(&c, out, 2, "");
	c.o.output_subdir = (char *)"/abs";
	apply_drops(&c, out, 2, "");
	c.o.output_subdir = (char *)"";
	memset(big, 'x', SEG_FWOPTS_MAX + 9);
	big[SEG_FWOPTS_MAX + 9] = '\0';
	c.o.framework_options_json = big;
	apply_drops(&c, out, 2, "4096");
	c.o.framework_options_json = (char *)"";
	c.o.profiler_level = 3;
	apply_drops(&c, out, 2, "out of range");
	c.o.profiler_level = -1;
	c.o.aicore_metrics = 6;
	apply_drops(&c, out, 2, "out of range");

	/* Every window bad: an empty schedule, still applied. */
	make(&c, 2);
	c.w[0].start_step = c.w[1].start_step = -1;
	why = NULL;
	assert_int_equal(apply_jobconfig(&c.jc, out, &why), 0);
	assert_non_null(why);
	assert_int_equal(out->nwindows, 0);
	assert_int_equal(out->generation, 9);
	free(big);
	free(out);
}

/*
 * Time windows: kept beside windows of steps (never judged to overlap them,
 * nor each other: the ranks order them), bad ones dropped, and turned into
 * the node's clocks by apply_clock(): the node's wall clock offset ahead,
 * CLOCK_MONOTONIC read mono when the wall clock read wall.
 */
static void
test_apply_time(void **state)
{
	struct cfg		 c;
	struct seg_config	*out = malloc(sizeof(*out));
	const int64_t		 T = 1796472000LL * 1000000000, S = 1000000000;
	const char		*why = NULL;

	(void)state;
	make(&c, 5);
	/* 2 and 3: time windows; 4: steps with times; 5: times reversed. */
	c.w[1].start_step = c.w[1].stop_step = 0;
	c.w[1].start_unix_ns = T;
	c.w[1].stop_unix_ns = T + 10 * S;
	c.w[2].start_step = c.w[2].stop_step = 0;
	c.w[2].start_unix_ns = T + 5 * S;
	c.w[2].stop_unix_ns = T + 6 * S;
	c.w[3].start_unix_ns = T;
	c.w[3].stop_unix_ns = T + S;
	c.w[4].start_step = c.w[4].stop_step = 0;
	c.w[4].start_unix_ns = T + S;
	c.w[4].stop_unix_ns = T;
	assert_int_equal(apply_jobconfig(&c.jc, out, &why), 0);
	assert_non_null(strstr(why, "time window with steps, or times out of "
	    "order"));
	assert_int_equal(out->nwindows, 3);
	/* Ordered by start step: the time windows (0) first. */
	assert_int_equal(out->windows[0].id, 2);
	assert_int_equal(out->windows[1].id, 3);
	assert_int_equal(out->windows[2].id, 1);
	assert_true(out->windows[0].start_unix_ns == T);
	assert_true(out->windows[0].start_ns == 0);	/* until apply_clock() */

	/* The node's clock 3 s ahead; its monotonic clock at 100 s. */
	apply_clock(out, 3 * S, T - 60 * S + 3 * S, 100 * S);
	assert_true(out->windows[0].start_unix_ns == T + 3 * S);
	assert_true(out->windows[0].stop_unix_ns == T + 13 * S);
	/* 60 s after now, on either clock of the node. */
	assert_true(out->windows[0].start_ns == 160 * S);
	assert_true(out->windows[0].stop_ns == 170 * S);
	assert_true(out->windows[1].start_ns == 165 * S);
	/* A window of steps keeps no times. */
	assert_true(out->windows[2].start_ns == 0 &&
	    out->windows[2].start_unix_ns == 0);
	/* A start before the node's monotonic zero: at once. */
	apply_clock(out, 0, T + 1000 * S, S);
	assert_true(out->windows[0].start_ns == 1);
	free(out);
}

static void
test_queue(void **state)
{
	struct queue		 q;
	const struct queue_entry *e;
	uint8_t			 b[4] = { 1, 2, 3, 4 };
	uint64_t		 s;

	(void)state;
	queue_init(&q, 100);
	for (s = 1; s <= 40; s++)
		assert_int_equal(queue_push(&q, s, b, sizeof(b), NULL), 0);
	assert_int_equal(queue_length(&q), 40);
	queue_ack(&q, 10);
	assert_int_equal(queue_length(&q), 30);
	e = queue_at(&q, 0);
	assert_int_equal(e->seq, 11);
	assert_int_equal(e->len, 4);
	assert_memory_equal(e->buf, b, 4);
	/* Over the bound: the oldest go, counted. */
	for (s = 41; s <= 130; s++)
		queue_push(&q, s, b, sizeof(b), NULL);
	assert_int_equal(queue_length(&q), 100);
	assert_int_equal(q.dropped, 20);
	assert_int_equal(queue_at(&q, 0)->seq, 31);
	assert_int_equal(queue_at(&q, 99)->seq, 130);
	assert_null(queue_at(&q, 100));
	/* The bound shrinks (a reload): the next push trims to it. */
	q.max = 10;
	assert_int_equal(queue_push(&q, 131, b, 0, NULL), 1);
	assert_int_equal(queue_length(&q), 10);
	assert_int_equal(queue_at(&q, 0)->seq, 122);
	assert_int_equal(queue_at(&q, 9)->seq, 131);
	queue_ack(&q, 1000);
	assert_int_equal(queue_length(&q), 0);
	queue_clear(&q);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_apply_good),
		cmocka_unit_test(test_apply_refused),
		cmocka_unit_test(test_apply_drops_bad_windows),
		cmocka_unit_test(test_apply_time),
		cmocka_unit_test(test_queue),
	};

	return (cmocka_run_group_tests_name("agent_apply", tests, NULL, NULL));
}
