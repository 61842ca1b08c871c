/*
 * Stragglers, through fake agents reporting progress to the real
 * coordinator: a rank lagging the job's median by more than the threshold
 * (and only by more), a rank whose step rate fell under the job's, the nodes
 * they run on, ranks of a lost node left out, a rank whose busy time stands
 * out while every step is the same, /metrics, the flags' bounds.
 */

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakeagent.h"
#include "test_coord_util.h"

#define HB_MS		"200"	/* the rate is measured over 5 of these */
#define LAG		"10"
#define NODE_RANKS	4
#define WAIT_MS		8000	/* a straggler shows within this */

/* Starts a coordinator with fast heartbeats and a lag threshold of 10. */
static int
setup(void **state)
{
	const char	*more[] = { "--straggler-lag", LAG, NULL };

	return (tc_setup_agents_args(state, HB_MS, more));
}

/* Connects n fake agents as nodes sg-0.., each subscribed to job. */
static void
agents_up(struct tc_coord *tc, struct fakeagent *fa, int n, const char *job)
{
	char	 node[32];
	int	 i;

	for (i = 0; i < n; i++) {
		snprintf(node, sizeof(node), "sg-%d", i);
		assert_int_equal(fa_handshake(&fa[i], tc->agent_port, node,
		    "agent-secret"), 0);
		assert_int_equal(fa_subscribe(&fa[i], job, 0), 0);
	}
}

/* Sends each agent's ranks' steps: node i has ranks i*NODE_RANKS on. */
static void
report(struct fakeagent *fa, int n, const char *job, int64_t steps[][NODE_RANKS])
{
	int	 i;

	for (i = 0; i < n; i++)
		assert_int_equal(fa_progress_steps(&fa[i], job, i * NODE_RANKS,
		    steps[i], NODE_RANKS), 0);
}

/*
 * Polls GET /v1/jobs/JOB/stragglers until the integer at jpath is want,
 * heartbeating the n agents meanwhile (they would be lost otherwise).
 * Returns the last answer (caller frees).
 */
static json_t *
wait_stragglers(struct tc_coord *tc, struct fakeagent *fa, int n,
    const char *job, const char *jpath, long long want)
{
	long long	 deadline = tc_now_ms() + WAIT_MS, got = -999;
	struct tc_reply	 r;
	char		 path[128];
	json_t		*j;
	int		 i;

	snprintf(path, sizeof(path), "/v1/jobs/%s/stragglers", job);
	while (tc_now_ms() < deadline) {
		for (i = 0; i < n; i++)
			assert_int_equal(fa_heartbeat(&fa[i]), 0);
		assert_int_equal(tc_http(tc->http_port, "GET", path, NULL,
		    NULL, &r), 0);
		if (r.status == 200 && r.json != NULL &&
		    (got = tc_int(r.json, jpath)) == want) {
			j = json_incref(r.json);
			tc_reply_free(&r);
			return (j);
		}
		tc_reply_free(&r);
		usleep(50000);
	}
	fail_msg("%s: %s is %lld, never %lld", path, jpath, got, want);
	return (NULL);
}

/* Returns the reasons of the i-th worst rank joined by ",". */
static const char *
reasons(json_t *j, int i, char *buf, size_t len)
{
	json_t	*a, *v;
	size_t	 k, off = 0;

	a = json_array_get(json_object_get(j, "worst_ranks"), (size_t)i);
	buf[0] = '\0';
	json_array_foreach(json_object_get(a, "reasons"), k, v) {
		if (off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
			    k > 0 ? "," : "", json_string_value(v));
	}
	return (buf);
}

/*
 * Two nodes of four ranks at step 100 but one rank: behind by the threshold
 * (10) it is not flagged, by 11 it is, with its node; caught up it is not.
 */
static void
test_lag(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[2];
	int64_t		 steps[2][NODE_RANKS] = {
		{ 100, 100, 100, 100 }, { 100, 100, 100, 90 } };
	struct tc_reply	 r;
	json_t		*j;
	char		 buf[64];

	agents_up(tc, fa, 2, "lag-j");
	report(fa, 2, "lag-j", steps);
	j = wait_stragglers(tc, fa, 2, "lag-j", "ranks_judged", 8);
	assert_int_equal(tc_int(j, "median_step"), 100);
	assert_int_equal(tc_int(j, "lag_steps"), 10);
	assert_int_equal(tc_int(j, "ranks"), 0);	/* lag 10: not over */
	json_decref(j);

	steps[1][3] = 89;
	report(fa, 2, "lag-j", steps);
	j = wait_stragglers(tc, fa, 2, "lag-j", "ranks", 1);
	assert_int_equal(tc_int(j, "lagging"), 1);
	assert_int_equal(tc_int(j, "worst_ranks.0.rank"), 7);
	assert_string_equal(tc_str(j, "worst_ranks.0.node"), "sg-1");
	assert_int_equal(tc_int(j, "worst_ranks.0.step"), 89);
	assert_int_equal(tc_int(j, "worst_ranks.0.lag"), 11);
	assert_string_equal(reasons(j, 0, buf, sizeof(buf)), "lag");
	assert_int_equal(tc_int(j, "nodes"), 1);
	assert_string_equal(tc_str(j, "worst_nodes.0.node"), "sg-1");
	assert_int_equal(tc_int(j, "worst_nodes.0.ranks"), 1);
	assert_int_equal(tc_int(j, "worst_nodes.0.min_step"), 89);
	assert_string_equal(tc_str(j, "job"), "lag-j");
	json_decref(j);
	/* The job's summary carries them too. */
	r = tc_req(tc, "GET", "/v1/jobs/lag-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "stragglers.ranks"), 1);
	assert_int_equal(tc_int(r.json, "stragglers.worst_ranks.0.rank"), 7);
	assert_string_equal(tc_str(r.json, "stragglers.worst_nodes.0.node"),
	    "sg-1");
	tc_reply_free(&r);
	assert_int_equal(tc_metric(tc,
	    "dynprof_stragglers{job=\"lag-j\",reason=\"lag\"}"), 1);
	assert_int_equal(tc_metric(tc,
	    "dynprof_straggler_nodes{job=\"lag-j\"}"), 1);
	assert_int_equal(tc_metric(tc,
	    "dynprof_job_step_median{job=\"lag-j\"}"), 100);

	/* Worse on two nodes: the worst first. */
	steps[0][1] = 50;
	report(fa, 2, "lag-j", steps);
	j = wait_stragglers(tc, fa, 2, "lag-j", "ranks", 2);
	assert_int_equal(tc_int(j, "worst_ranks.0.rank"), 1);
	assert_int_equal(tc_int(j, "worst_ranks.0.lag"), 50);
	assert_int_equal(tc_int(j, "worst_ranks.1.rank"), 7);
	assert_int_equal(tc_int(j, "nodes"), 2);
	json_decref(j);

	/* Caught up: nobody. */
	steps[0][1] = steps[1][3] = 100;
	report(fa, 2, "lag-j", steps);
	j = wait_stragglers(tc, fa, 2, "lag-j", "ranks", 0);
	assert_int_equal(tc_int(j, "nodes"), 0);
	assert_int_equal(json_array_size(json_object_get(j, "worst_ranks")),
	    0);
	json_decref(j);
	fa_close(&fa[0]);
	fa_close(&fa[1]);
}

/*
 * Reports every 50 ms until the job's slow ranks are want or WAIT_MS pass:
 * each rank 10 steps further, rank 6 only inc.  Returns the last answer
 * (caller frees).
 */
static json_t *
pace_until(struct tc_coord *tc, struct fakeagent *fa,
    int64_t steps[][NODE_RANKS], int64_t inc, long long want)
{
	long long	 deadline = tc_now_ms() + WAIT_MS;
	struct tc_reply	 r;
	json_t		*j = NULL;
	int		 i, k;

	while (tc_now_ms() < deadline) {
		for (i = 0; i < 2; i++)
			for (k = 0; k < NODE_RANKS; k++)
				steps[i][k] += i == 1 && k == 2 ? inc : 10;
		report(fa, 2, "slow-j", steps);
		assert_int_equal(tc_http(tc->http_port, "GET",
		    "/v1/jobs/slow-j/stragglers", NULL, NULL, &r), 0);
		json_decref(j);
		j = json_incref(r.json);
		tc_reply_free(&r);
		if (tc_int(j, "slow") == want)
			return (j);
		usleep(50000);
	}
	fail_msg("slow ranks never %lld", want);
	return (NULL);
}

/*
 * Seven ranks make 10 steps a report, one makes 2: it is flagged slow (and
 * soon lagging too); once it keeps pace again it is not slow, though it
 * still lags.
 */
/*
 * Checks that every rate in an answer's text is written with at most three
 * decimals (20.8, never 20.800000000000001); returns how many it saw.
 */
static int
rates_short(const char *body)
{
	const char	*p = body, *dot;
	size_t		 n;
	int		 seen = 0;

	while ((p = strstr(p, "rate\":")) != NULL) {
		p += 6;
		n = strspn(p, "0123456789.-e");
		if (n == 0)
			continue;
		seen++;
		dot = memchr(p, '.', n);
		if (dot != NULL)
			assert_true((size_t)(p + n - dot - 1) <= 3);
	}
	return (seen);
}

static void
test_slow(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[2];
	int64_t		 steps[2][NODE_RANKS];
	struct tc_reply	 r;
	json_t		*j;
	char		 buf[64];
	int		 i, k;

	agents_up(tc, fa, 2, "slow-j");
	for (i = 0; i < 2; i++)
		for (k = 0; k < NODE_RANKS; k++)
			steps[i][k] = 1000;
	/* About 200 steps/s, rank 6 40 steps/s. */
	j = pace_until(tc, fa, steps, 2, 1);
	assert_int_equal(tc_int(j, "worst_ranks.0.rank"), 6);
	assert_true(strstr(reasons(j, 0, buf, sizeof(buf)), "slow") != NULL);
	assert_true(json_real_value(json_object_get(j, "median_rate")) > 50);
	assert_true(json_real_value(json_object_get(json_array_get(
	    json_object_get(j, "worst_ranks"), 0), "rate")) <
	    json_real_value(json_object_get(j, "median_rate")) / 2);
	json_decref(j);
	r = tc_req(tc, "GET", "/v1/jobs/slow-j/stragglers", NULL, 200);
	assert_true(rates_short(r.body) >= 2);
	tc_reply_free(&r);
	assert_int_equal(tc_metric(tc,
	    "dynprof_stragglers{job=\"slow-j\",reason=\"slow\"}"), 1);

	/* The same pace as the others, over a few rate periods: not slow. */
	j = pace_until(tc, fa, steps, 10, 0);
	assert_string_equal(reasons(j, 0, buf, sizeof(buf)), "lag");
	json_decref(j);
	fa_close(&fa[0]);
	fa_close(&fa[1]);
}

/*
 * Synchronous training that pauses as a whole: two nodes of four ranks at
 * the same step at all times (200 steps/s), node 1 first seen some ticks
 * after node 0, the job standing still for a rate period (1 s) three times.
 * Every rank's rate is measured over the same ticks, so a pause lowers them
 * all alike: nobody is ever "slow" (measured over periods a tick apart, the
 * ranks whose period held the whole pause were half as fast as the others).
 */
static void
test_pause_slows_nobody(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[2];
	int64_t		 steps[2][NODE_RANKS], at;
	long long	 t0, now, moved = 0, judged = 0;
	struct tc_reply	 r;
	int		 i, k;

	agents_up(tc, fa, 2, "pause-j");
	t0 = tc_now_ms();
	at = 1000;
	while ((now = tc_now_ms()) - t0 < 7500) {
		/* Still from 1.5 s to 2.5 s, 3.5 to 4.5, 5.5 to 6.5. */
		if ((now - t0) / 1000 < 1 || ((now - t0 - 500) / 1000) % 2 ==
		    1) {
			at += 10;
			moved++;
		}
		for (i = 0; i < 2; i++)
			for (k = 0; k < NODE_RANKS; k++)
				steps[i][k] = at;
		for (i = 0; i < 2; i++) {
			assert_int_equal(fa_heartbeat(&fa[i]), 0);
			if (i == 0 || now - t0 >= 500)
				assert_int_equal(fa_progress_steps(&fa[i],
				    "pause-j", i * NODE_RANKS, steps[i],
				    NODE_RANKS), 0);
		}
		assert_int_equal(tc_http(tc->http_port, "GET",
		    "/v1/jobs/pause-j/stragglers", NULL, NULL, &r), 0);
		if (tc_int(r.json, "slow") != 0)
			fail_msg("a pause of the whole job flagged ranks slow at "
			    "%lld ms: %s", now - t0, r.body);
		if (json_is_real(json_object_get(r.json, "median_rate")))
			judged++;
		tc_reply_free(&r);
		usleep(50000);
	}
	assert_true(moved > 10 && judged > 10);
	fa_close(&fa[0]);
	fa_close(&fa[1]);
}

/*
 * Ranks whose step jumps from 1,000 to the highest a rank may report (2^62)
 * within a rate period: their rate, some 4.6e18 steps/s, is measured as it
 * is (capped, in range of every integer it is turned into), the job's median
 * rate says so, and the coordinator keeps serving.
 */
static void
test_huge_pace(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[2];
	int64_t		 steps[2][NODE_RANKS], at = 1000;
	long long	 t0, now, deadline;
	double		 rate = -1;
	struct tc_reply	 r;
	json_t		*m;
	int		 i, k, jumped = 0;

	agents_up(tc, fa, 2, "huge-j");
	t0 = tc_now_ms();
	deadline = t0 + 2500 + WAIT_MS;
	while ((now = tc_now_ms()) < deadline && rate < 1e6) {
		/* 200 steps/s for 2.5 s, then the jump, then still. */
		if (now - t0 < 2500)
			at += 10;
		else if (!jumped++)
			at = 1LL << 62;
		for (i = 0; i < 2; i++)
			for (k = 0; k < NODE_RANKS; k++)
				steps[i][k] = at;
		for (i = 0; i < 2; i++)
			assert_int_equal(fa_heartbeat(&fa[i]), 0);
		report(fa, 2, "huge-j", steps);
		assert_int_equal(tc_http(tc->http_port, "GET",
		    "/v1/jobs/huge-j/stragglers", NULL, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		m = json_object_get(r.json, "median_rate");
		if (json_is_real(m) && json_real_value(m) < 0)
			fail_msg("a negative median rate: %s", r.body);
		if (jumped && json_is_real(m))
			rate = json_real_value(m);
		tc_reply_free(&r);
		usleep(50000);
	}
	if (rate < 1e6)
		fail_msg("the job's median rate after the jump never showed it "
		    "(last %g steps/s)", rate);
	tc_call(tc, "GET", "/healthz", NULL, 200);
	fa_close(&fa[0]);
	fa_close(&fa[1]);
}

/*
 * Busy times through the coordinator: two nodes of four ranks all at the same
 * step (synchronous training: no lag), seven of them marking their busy time,
 * rank 5 computing 2.5 times longer, rank 3 giving none.  Rank 5 alone is
 * flagged, "busy", with its score and its multiple of the median; rank 3 is
 * judged by lag and rate only and named among those giving no busy time; the
 * job's own busy_percent set over 150 clears rank 5.
 */
static void
test_busy(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[2];
	int64_t		 steps[NODE_RANKS];
	uint32_t	 us[2][NODE_RANKS] = {
		{ 20000, 21000, 20500, 0 }, { 20800, 50000, 19900, 20300 } };
	json_t		*j, *w;
	char		 buf[64];
	int		 i, k, round;

	agents_up(tc, fa, 2, "busy-j");
	for (round = 0; round < 3; round++)
		for (i = 0; i < 2; i++) {
			for (k = 0; k < NODE_RANKS; k++)
				steps[k] = 500 + round;
			assert_int_equal(fa_progress_busy(&fa[i], "busy-j",
			    i * NODE_RANKS, steps, us[i], NODE_RANKS), 0);
		}
	j = wait_stragglers(tc, fa, 2, "busy-j", "busy", 1);
	assert_int_equal(tc_int(j, "ranks"), 1);
	assert_int_equal(tc_int(j, "lagging"), 0);
	assert_int_equal(tc_int(j, "busy_ranks"), 7);
	assert_int_equal(tc_int(j, "busy_percent"), 30);
	assert_int_equal(tc_int(j, "no_busy"), 1);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(j,
	    "no_busy_ranks"), 0)), 3);
	assert_true(json_real_value(json_object_get(j, "busy_median_ms")) >
	    19.8 && json_real_value(json_object_get(j, "busy_median_ms")) <
	    20.6);
	w = json_array_get(json_object_get(j, "worst_ranks"), 0);
	assert_int_equal(json_integer_value(json_object_get(w, "rank")), 5);
	assert_string_equal(reasons(j, 0, buf, sizeof(buf)), "busy");
	assert_true(json_real_value(json_object_get(w, "busy_ms")) == 50.0);
	assert_true(json_real_value(json_object_get(w, "busy_over_median")) >
	    2.4);
	/* The fastest (19.9 ms) over its 50 ms. */
	assert_true(json_real_value(json_object_get(w, "busy_score")) > 0.39 &&
	    json_real_value(json_object_get(w, "busy_score")) < 0.41);
	json_decref(j);
	assert_int_equal(tc_metric(tc,
	    "dynprof_stragglers{job=\"busy-j\",reason=\"busy\"}"), 1);
	assert_int_equal(tc_metric(tc,
	    "dynprof_job_busy_ranks{job=\"busy-j\",busy=\"no\"}"), 1);

	/* The job's own threshold: 150% over the median is not reached. */
	tc_call(tc, "PUT", "/v1/jobs/busy-j/stragglers",
	    "{\"busy_percent\": 150}", 200);
	j = wait_stragglers(tc, fa, 2, "busy-j", "busy", 0);
	assert_int_equal(tc_int(j, "busy_percent"), 150);
	assert_int_equal(tc_int(j, "ranks"), 0);
	json_decref(j);
	fa_close(&fa[0]);
	fa_close(&fa[1]);
}

/* A coordinator whose heartbeats (500 ms) let an agent be silent for 1.5 s,
 * lag threshold 40. */
static int
setup_late(void **state)
{
	const char	*more[] = { "--straggler-lag", "40", NULL };

	return (tc_setup_agents_args(state, "500", more));
}

#define LATE_NODES	3
#define LATE_SLOW	6	/* on node 1, a quarter of the others' pace */
#define LATE_BATCH_MS	600	/* node 1's reports held this long */

/*
 * Three nodes of four ranks in lockstep, 4 steps every 20 ms (200 steps/s),
 * but rank 6 only 1 (50 steps/s).  Each report is stamped when sent, but
 * node 1's reports (and heartbeats) are held and delivered in batches every
 * 600 ms, as an agent slowed by load, its stream stalled or reconnecting
 * delivers them: its last report seen is up to 600 ms (120 steps) old.
 * Judged at the time they were sent, node 1's other ranks never lag nor are
 * slow; rank 6, on that node, is flagged both, and nobody else ever is.
 */
static void
test_late_reports(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[LATE_NODES];
	int64_t		 steps[LATE_NODES][NODE_RANKS];
	long long	 t0, now, flushed, polled = 0, deadline;
	int		 i, k, judged = 0, batches = 0, found = 0;
	struct tc_reply	 r;
	json_t		*w;
	char		 buf[64];
	size_t		 x;

	agents_up(tc, fa, LATE_NODES, "late-j");
	for (i = 0; i < LATE_NODES; i++)
		for (k = 0; k < NODE_RANKS; k++)
			steps[i][k] = 1000;
	t0 = flushed = tc_now_ms();
	deadline = t0 + 30000;
	assert_int_equal(fa_cork(&fa[1]), 0);
	while ((now = tc_now_ms()) < deadline && (judged < 40 || !found)) {
		for (i = 0; i < LATE_NODES; i++)
			for (k = 0; k < NODE_RANKS; k++)
				steps[i][k] += i * NODE_RANKS + k ==
				    LATE_SLOW ? 1 : 4;
		report(fa, LATE_NODES, "late-j", steps);
		if (now - flushed >= LATE_BATCH_MS) {
			assert_int_equal(fa_flush(&fa[1]), 0);
			assert_int_equal(fa_cork(&fa[1]), 0);
			flushed = now;
			batches++;
		}
		if (now - polled < 100) {
			usleep(20000);
			continue;
		}
		polled = now;
		for (i = 0; i < LATE_NODES; i++)
			assert_int_equal(fa_heartbeat(&fa[i]), 0);
		assert_int_equal(tc_http(tc->http_port, "GET",
		    "/v1/jobs/late-j/stragglers", NULL, NULL, &r), 0);
		assert_int_equal(r.status, 200);
		json_array_foreach(json_object_get(r.json, "worst_ranks"), x,
		    w) {
			if (json_integer_value(json_object_get(w, "rank")) !=
			    LATE_SLOW)
				fail_msg("a rank in lockstep flagged at %lld "
				    "ms: %s", now - t0, r.body);
			if (strcmp(reasons(r.json, (int)x, buf, sizeof(buf)),
			    "lag,slow") == 0)
				found = 1;
		}
		if (json_is_real(json_object_get(r.json, "median_rate")))
			judged++;
		tc_reply_free(&r);
		usleep(20000);
	}
	if (!found)
		fail_msg("rank %d never flagged lag and slow", LATE_SLOW);
	assert_true(judged >= 40 && batches >= 10);
	for (i = 0; i < LATE_NODES; i++)
		fa_close(&fa[i]);
}

/* The ranks of a lost node are not judged: nor flagged, nor in the median. */
static void
test_lost_node(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[2];
	int64_t		 steps[2][NODE_RANKS] = {
		{ 100, 100, 100, 100 }, { 10, 10, 10, 10 } };
	json_t		*j;

	agents_up(tc, fa, 2, "lost-j");
	report(fa, 2, "lost-j", steps);
	j = wait_stragglers(tc, fa, 2, "lost-j", "ranks", 4);
	assert_int_equal(tc_int(j, "nodes"), 1);
	json_decref(j);
	fa_close(&fa[1]);
	j = wait_stragglers(tc, fa, 1, "lost-j", "ranks_judged", 4);
	assert_int_equal(tc_int(j, "ranks"), 0);
	assert_int_equal(tc_int(j, "median_step"), 100);
	json_decref(j);
	fa_close(&fa[0]);
}

/* The job's ranks by node, as the status page's heat map reads them. */
static void
test_job_nodes(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[2];
	int64_t		 steps[2][NODE_RANKS] = {
		{ 100, 100, 101, 102 }, { 100, 100, 100, 50 } };
	struct tc_reply	 r;
	json_t		*j, *n;
	char		 out[512], *text;
	const char	*args[] = { "stragglers", "nodes-j", NULL };

	agents_up(tc, fa, 2, "nodes-j");
	report(fa, 2, "nodes-j", steps);
	j = wait_stragglers(tc, fa, 2, "nodes-j", "ranks", 1);
	json_decref(j);
	/* dynprofctl says it in words: one node, not "1 nodes". */
	snprintf(out, sizeof(out), "%s/stragglers.out", tc->dir);
	assert_int_equal(tc_ctl_wait(tc_ctl_start(tc, out, args)), 0);
	text = tc_slurp(out);
	assert_non_null(strstr(text, "1 of 8 ranks straggle on 1 node ("));
	free(text);
	r = tc_req(tc, "GET", "/v1/jobs/nodes-j/nodes", NULL, 200);
	assert_string_equal(tc_str(r.json, "job"), "nodes-j");
	assert_int_equal(tc_int(r.json, "median_step"), 100);
	assert_int_equal(tc_int(r.json, "lag_steps"), 10);
	assert_string_equal(tc_str(r.json, "fields.0"), "node");
	assert_string_equal(tc_str(r.json, "fields.3"), "ranks");
	assert_string_equal(tc_str(r.json, "fields.6"), "stragglers");
	assert_int_equal(json_array_size(json_object_get(r.json, "nodes")), 2);
	n = json_array_get(json_object_get(r.json, "nodes"), 0);
	assert_string_equal(json_string_value(json_array_get(n, 0)), "sg-0");
	assert_string_equal(json_string_value(json_array_get(n, 1)),
	    "connected");
	assert_int_equal(json_integer_value(json_array_get(n, 3)), 4);
	assert_int_equal(json_integer_value(json_array_get(n, 4)), 100);
	assert_int_equal(json_integer_value(json_array_get(n, 5)), 102);
	assert_int_equal(json_integer_value(json_array_get(n, 6)), 0);
	assert_int_equal(json_integer_value(json_array_get(n, 7)), 4);
	n = json_array_get(json_object_get(r.json, "nodes"), 1);
	assert_string_equal(json_string_value(json_array_get(n, 0)), "sg-1");
	assert_int_equal(json_integer_value(json_array_get(n, 4)), 50);
	assert_int_equal(json_integer_value(json_array_get(n, 6)), 1);
	tc_reply_free(&r);
	fa_close(&fa[1]);
	tc_wait_str(tc, "/v1/jobs/nodes-j/nodes", "nodes.1.1", "lost");
	/* A lost node's ranks are unknown there as in the summary. */
	r = tc_req(tc, "GET", "/v1/jobs/nodes-j/nodes", NULL, 200);
	assert_string_equal(tc_str(r.json, "fields.16"), "unknown");
	n = json_array_get(json_object_get(r.json, "nodes"), 1);
	assert_int_equal(json_integer_value(json_array_get(n, 7)), 0);
	assert_int_equal(json_integer_value(json_array_get(n, 16)), NODE_RANKS);
	assert_int_equal(json_integer_value(json_array_get(n, 4)), -1);
	tc_reply_free(&r);
	r = tc_req(tc, "GET", "/v1/jobs/nodes-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "rank_counts.unknown"), NODE_RANKS);
	tc_reply_free(&r);
	tc_call(tc, "GET", "/v1/jobs/none-j/nodes", NULL, 404);
	tc_call(tc, "POST", "/v1/jobs/nodes-j/nodes", "{}", 405);
	fa_close(&fa[0]);
}

/* Unknown jobs, other methods and bad flags are refused. */
static void
test_refused(void **state)
{
	struct tc_coord	*tc = *state;
	struct tc_reply	 r;
	const char	*bad[][3] = {
		{ "--straggler-lag", "0", NULL },
		{ "--straggler-lag", "x", NULL },
		{ "--straggler-rate-drop", "0", NULL },
		{ "--straggler-rate-drop", "101", NULL },
	};
	size_t		 i;

	r = tc_req(tc, "GET", "/v1/jobs/none-j/stragglers", NULL, 404);
	assert_string_equal(tc_str(r.json, "field"), "job");
	tc_reply_free(&r);
	tc_call(tc, "POST", "/v1/jobs/none-j/stragglers", "{}", 405);
	tc_call(tc, "GET", "/v1/jobs/none-j/stragglers/x", NULL, 404);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(tc_run_exit(bad[i], 10000), 1);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, tc_teardown)
	const struct CMUnitTest tests[] = {
		T(test_lag),
		T(test_slow),
		T(test_pause_slows_nobody),
		T(test_huge_pace),
		T(test_busy),
		T(test_lost_node),
		T(test_job_nodes),
		T(test_refused),
		cmocka_unit_test_setup_teardown(test_late_reports, setup_late,
		    tc_teardown),
	};
#undef T

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
