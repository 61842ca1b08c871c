/*
 * A window's counts stay what they were, through the real coordinator, fake
 * agents and the real dynprofctl: a rank that left before a window was made,
 * or came after it ended (an elastic or restarted job), is not counted
 * against it, and dynprofctl trace --wait judges a window as the summary
 * does.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakeagent.h"
#include "test_coord_util.h"

#define K_STARTED	DYNPROF__V1__EVENT_KIND__EVENT_STARTED
#define K_STOPPED	DYNPROF__V1__EVENT_KIND__EVENT_STOPPED
#define K_DETACHED	DYNPROF__V1__EVENT_KIND__EVENT_DETACHED

#define HIST_RANKS	8	/* the job's ranks that stay, 0-7 */

/* Starts a coordinator whose agents heartbeat every 100 ms. */
static int
setup_fast(void **state)
{
	return (tc_setup_agents_hb(state, "100"));
}

/* Ranks 0-7 of job start and stop window id at step. */
static void
run_window(struct fakeagent *fa, const char *job, uint32_t id, int64_t step)
{
	int	 i;

	for (i = 0; i < HIST_RANKS; i++) {
		tc_event(fa, K_STARTED, job, i, id, step);
		tc_event(fa, K_STOPPED, job, i, id, step + 1);
	}
}

/* Returns the job's summary (caller frees). */
static struct tc_reply
summary(struct tc_coord *tc, const char *job)
{
	char	 path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	return (tc_req(tc, "GET", path, NULL, 200));
}

/* Waits 5 s at most until window id of job is in state. */
static void
wait_window(struct tc_coord *tc, const char *job, long long id,
    const char *state)
{
	struct tc_reply	 r;
	long long	 deadline = tc_now_ms() + 5000;
	int		 ok = 0;

	while (!ok && tc_now_ms() < deadline) {
		r = summary(tc, job);
		ok = tc_window(r.json, id) != NULL &&
		    strcmp(tc_str(tc_window(r.json, id), "state"), state) == 0;
		tc_reply_free(&r);
		if (!ok)
			usleep(20000);
	}
	assert_true(ok);
}

/* Checks that window id counts exactly ranks 0-7, all stopped. */
static void
window_whole(struct tc_coord *tc, const char *job, long long id)
{
	struct tc_reply	 r;
	json_t		*w;

	r = summary(tc, job);
	w = tc_window(r.json, id);
	assert_non_null(w);
	assert_string_equal(tc_str(w, "state"), "done");
	assert_int_equal(tc_int(w, "rank_counts.targeted"), HIST_RANKS);
	assert_int_equal(tc_int(w, "rank_counts.stopped"), HIST_RANKS);
	assert_int_equal(tc_int(w, "rank_counts.gone"), 0);
	assert_int_equal(tc_int(w, "rank_counts.missed"), 0);
	assert_int_equal(tc_int(w, "rank_counts.finished"), HIST_RANKS);
	tc_reply_free(&r);
}

/* Posts window id over [start, start + 1], runs it on ranks 0-7 and checks
 * it done and whole. */
static void
window_posted_run(struct tc_coord *tc, struct fakeagent *fa, const char *job,
    uint32_t id, int64_t start)
{
	char	 path[128], body[96];

	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", job);
	snprintf(body, sizeof(body), "{\"start_step\": %lld, \"stop_step\": "
	    "%lld}", (long long)start, (long long)start + 1);
	tc_call(tc, "POST", path, body, 201);
	run_window(fa, job, id, start);
	wait_window(tc, job, id, "done");
	window_whole(tc, job, id);
}

/*
 * Rank 50 comes after window 1 ended and leaves before window 2 is made;
 * rank 60 comes after both ended.  Neither is counted against them, and
 * trace --wait of window 2 exits 0.
 */
static void
test_elastic(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa;
	struct tc_reply	 r;
	char		 out[512], *text, tok[512];
	const char	*args[] = { "trace", "el", "--start", "20", "--steps",
	    "2", "--wait", "--timeout", "15", NULL };
	const char	*extra[] = { "-q", "--agent-token-file", tok,
	    "--heartbeat-ms", "100", NULL };
	pid_t		 pid;

	assert_int_equal(fa_join(&fa, tc->agent_port, "n1", "agent-secret",
	    "el"), 0);
	assert_int_equal(fa_progress(&fa, "el", 0, 5, 5, HIST_RANKS), 0);
	tc_wait_int(tc, "/v1/jobs/el", "rank_counts.total", HIST_RANKS);
	window_posted_run(tc, &fa, "el", 1, 10);

	/* Rank 50 attaches for a few steps, then exits. */
	assert_int_equal(fa_progress(&fa, "el", 50, 12, 12, 1), 0);
	tc_wait_int(tc, "/v1/jobs/el", "rank_counts.total", HIST_RANKS + 1);
	tc_event(&fa, K_DETACHED, "el", 50, 0, 13);
	tc_wait_int(tc, "/v1/jobs/el", "rank_counts.gone", 1);
	window_whole(tc, "el", 1);
	r = tc_req(tc, "GET", "/v1/jobs/el/ranks?state=gone", NULL, 200);
	assert_string_not_equal(tc_str(json_array_get(json_object_get(r.json,
	    "ranks"), 0), "arrived"), "");
	assert_string_not_equal(tc_str(json_array_get(json_object_get(r.json,
	    "ranks"), 0), "left"), "");
	tc_reply_free(&r);
	usleep(10000);

	/* A window made after rank 50 left: trace --wait sees it through. */
	snprintf(out, sizeof(out), "%s/ctl.out", tc->dir);
	pid = tc_ctl_start(tc, out, args);
	wait_window(tc, "el", 2, "scheduled");
	run_window(&fa, "el", 2, 20);
	assert_int_equal(tc_ctl_wait(pid), 0);
	text = tc_slurp(out);
	assert_non_null(strstr(text, "all 8 targeted ranks stopped"));
	assert_null(strstr(text, "gone"));
	free(text);
	wait_window(tc, "el", 2, "done");
	window_whole(tc, "el", 2);

	/* Rank 60 comes later: the windows over before it stay as they were. */
	usleep(10000);
	assert_int_equal(fa_progress(&fa, "el", 60, 30, 30, 1), 0);
	tc_wait_int(tc, "/v1/jobs/el", "rank_counts.total", HIST_RANKS + 2);
	window_whole(tc, "el", 1);
	window_whole(tc, "el", 2);
	tc_event(&fa, K_DETACHED, "el", 60, 0, 31);
	fa_close(&fa);

	/* A restart keeps when windows ended and ranks came and went: ranks
	 * 50 and 60, gone, count against none of the windows. */
	snprintf(tok, sizeof(tok), "%s/agent.token", tc->dir);
	assert_int_equal(tc_stop(tc, SIGTERM), 0);
	assert_int_equal(tc_start(tc, extra), 0);
	window_whole(tc, "el", 1);
	window_whole(tc, "el", 2);
	assert_int_equal(fa_join(&fa, tc->agent_port, "n1", "agent-secret",
	    "el"), 0);
	assert_int_equal(fa_progress(&fa, "el", 0, 40, 40, HIST_RANKS), 0);
	window_posted_run(tc, &fa, "el", 3, 50);
	fa_close(&fa);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_elastic, setup_fast,
		    tc_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
