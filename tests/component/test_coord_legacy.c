/*
 * Legacy jobs at the coordinator (docs/legacy.md), through the real binary and
 * fake agents speaking the real protocol: a node's LegacyStatus shown in the
 * job's status, observed events taken only from a node that reported the job
 * as legacy (never from another, nor after it withdrew it), their own rank
 * states, bad reports refused.
 */

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

#define K_OBSERVED	DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED
#define K_COMPLETE	DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE
#define W_WRITTEN	DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WRITTEN
#define W_REFUSED	DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_REFUSED
#define W_OVER		DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER

#define TOKEN		"agent-secret"	/* tc_setup_agents()'s */

/* Sends a LegacyStatus for job: dialect, window 1 in state w1, window 2
 * refused. */
static int
send_legacy_w1(struct fakeagent *a, const char *job, const char *dialect,
    const char *reason, int removed, int w1)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__LegacyStatus	 st = DYNPROF__V1__LEGACY_STATUS__INIT;
	Dynprof__V1__LegacyWindow	 w[2], *wp[2];

	dynprof__v1__legacy_window__init(&w[0]);
	dynprof__v1__legacy_window__init(&w[1]);
	w[0].window_id = 1;
	w[0].state = w1;
	w[1].window_id = 2;
	w[1].state = W_REFUSED;
	w[1].reason = (char *)reason;
	wp[0] = &w[0];
	wp[1] = &w[1];
	st.job = (char *)job;
	st.dialect = (char *)dialect;
	st.output_dir = (char *)"/out";
	st.n_windows = 2;
	st.windows = wp;
	st.removed = removed;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_LEGACY;
	m.legacy = &st;
	return (fa_send(a, &m));
}

/* Sends a LegacyStatus for job: dialect, a window refused and one written. */
static int
send_legacy(struct fakeagent *a, const char *job, const char *dialect,
    const char *reason, int removed)
{
	return (send_legacy_w1(a, job, dialect, reason, removed, W_WRITTEN));
}

/* Sends one event and waits for its commit. */
static void
event(struct fakeagent *a, uint64_t seq, int kind, const char *job,
    int32_t rank)
{
	assert_int_equal(fa_event(a, seq, kind, job, rank, 1, 10, "/out/r"), 0);
	assert_int_equal(fa_wait_ack(a, seq, 5000), 0);
}

/* The job's status: its number of ranks, rank 0's state ("" none). */
static void
ranks_are(struct tc_coord *tc, const char *job, size_t n, const char *state)
{
	struct tc_reply	 r;
	char		 path[128];
	json_t		*ranks;

	snprintf(path, sizeof(path), "/v1/jobs/%s/ranks", job);
	r = tc_req(tc, "GET", path, NULL, 200);
	ranks = json_object_get(r.json, "ranks");
	assert_int_equal(json_array_size(ranks), n);
	if (n > 0)
		assert_string_equal(json_string_value(json_object_get(
		    json_array_get(ranks, 0), "state")), state);
	tc_reply_free(&r);
}

/*
 * Observed events count only from the node that serves the job as legacy,
 * while it does; they make their own states, never started or done.
 */
static void
test_observed_from_legacy_node_only(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a, b;
	struct tc_reply	 r;
	json_t		*lg, *e;
	long long	 refused0;

	assert_int_equal(fa_handshake(&a, tc->agent_port, "lg-a", TOKEN), 0);
	assert_int_equal(fa_handshake(&b, tc->agent_port, "lg-b", TOKEN), 0);
	assert_int_equal(fa_subscribe(&a, "lg-j", 0), 0);
	assert_int_equal(fa_subscribe(&b, "lg-j", 0), 0);
	assert_int_equal(fa_expect_empty(&a, "lg-j", 5000), 0);
	assert_int_equal(fa_expect_empty(&b, "lg-j", 5000), 0);
	refused0 = tc_metric(tc, "dynprof_events_refused_total");

	/* Not reported as legacy yet: dropped. */
	event(&a, 1, K_OBSERVED, "lg-j", 0);
	ranks_are(tc, "lg-j", 0, "");
	assert_int_equal(tc_metric(tc, "dynprof_events_refused_total"),
	    refused0 + 1);

	/* Reported: taken, with its own state. */
	assert_int_equal(send_legacy(&a, "lg-j", "mindspore-2.4",
	    "ranks \"0-3\": cannot target ranks", 0), 0);
	event(&a, 2, K_OBSERVED, "lg-j", 0);
	ranks_are(tc, "lg-j", 1, "observed");
	r = tc_req(tc, "GET", "/v1/jobs/lg-j/ranks", NULL, 200);
	e = json_array_get(json_object_get(json_array_get(json_object_get(
	    r.json, "ranks"), 0), "events"), 0);
	assert_string_equal(tc_str(e, "kind"), "observed");
	tc_reply_free(&r);
	r = tc_req(tc, "GET", "/v1/jobs/lg-j", NULL, 200);
	lg = json_object_get(r.json, "legacy");
	assert_non_null(lg);
	assert_int_equal(tc_int(lg, "nodes"), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(lg,
	    "dialects"), "mindspore-2.4")), 1);
	assert_int_equal(tc_int(lg, "nodes_in_error"), 0);
	e = json_object_get(lg, "windows");
	assert_int_equal(json_array_size(e), 2);
	assert_int_equal(tc_int(json_array_get(e, 0), "id"), 1);
	assert_int_equal(tc_int(json_array_get(e, 0), "nodes.written"), 1);
	assert_int_equal(tc_int(json_array_get(e, 0), "nodes.refused"), 0);
	assert_int_equal(tc_int(json_array_get(e, 1), "nodes.refused"), 1);
	assert_string_equal(tc_str(json_array_get(e, 1), "reason"),
	    "ranks \"0-3\": cannot target ranks");
	tc_reply_free(&r);

	/* Another node made nothing up for it: dropped. */
	event(&b, 1, K_COMPLETE, "lg-j", 0);
	ranks_are(tc, "lg-j", 1, "observed");
	assert_int_equal(tc_metric(tc, "dynprof_events_refused_total"),
	    refused0 + 2);
	event(&a, 3, K_COMPLETE, "lg-j", 0);
	ranks_are(tc, "lg-j", 1, "observed_complete");
	assert_true(tc_metric(tc,
	    "dynprof_events_total{kind=\"observed_complete\"}") >= 1);

	/* The node says hello again: what it reported is forgotten until its
	 * agent reports it again. */
	fa_close(&a);
	assert_int_equal(fa_handshake(&a, tc->agent_port, "lg-a", TOKEN), 0);
	event(&a, 1, K_OBSERVED, "lg-j", 2);
	ranks_are(tc, "lg-j", 1, "observed_complete");
	r = tc_req(tc, "GET", "/v1/jobs/lg-j", NULL, 200);
	assert_null(json_object_get(r.json, "legacy"));
	tc_reply_free(&r);
	assert_int_equal(send_legacy(&a, "lg-j", "mindspore-2.4", "", 0), 0);
	event(&a, 2, K_OBSERVED, "lg-j", 2);
	ranks_are(tc, "lg-j", 2, "observed_complete");

	/* Withdrawn (the directory went): no more status, no more events. */
	assert_int_equal(send_legacy(&a, "lg-j", "mindspore-2.4", "", 1), 0);
	event(&a, 3, K_OBSERVED, "lg-j", 1);
	ranks_are(tc, "lg-j", 2, "observed_complete");
	r = tc_req(tc, "GET", "/v1/jobs/lg-j", NULL, 200);
	assert_null(json_object_get(r.json, "legacy"));
	tc_reply_free(&r);
	fa_close(&a);
	fa_close(&b);
}

/* Waits (5 s at most) for the status at path to have a "legacy" part. */
static struct tc_reply
wait_legacy(struct tc_coord *tc, const char *path)
{
	struct tc_reply	 r;
	int		 i;

	for (i = 0; i < 500; i++) {
		r = tc_req(tc, "GET", path, NULL, 200);
		if (json_object_get(r.json, "legacy") != NULL)
			return (r);
		tc_reply_free(&r);
		usleep(10000);
	}
	fail_msg("%s: no legacy report", path);
	return (r);
}

/* Waits for the status at path to have a "legacy" part. */
static void
wait_legacy_free(struct tc_coord *tc, const char *path)
{
	struct tc_reply	 r = wait_legacy(tc, path);

	tc_reply_free(&r);
}

/*
 * A legacy job's window seen through to its end by dynprofctl trace --wait:
 * its ranks observed complete are counted as such, not missed, and the
 * window is a success.  The coordinator knows a legacy rank only once its
 * agent saw its trace: rank 0 complete while rank 1 is not known yet ends
 * nothing; the window leaves the schedule once the agent says it is over
 * (a torch_npu window left it with rank 1 still running it).
 */
static void
test_observed_window_waited(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	json_t		*w;
	char		 out[512], *text;
	const char	*args[] = { "trace", "lg-w", "--start", "40", "--steps",
	    "3", "--wait", "--timeout", "15", NULL };
	pid_t		 pid;

	assert_int_equal(fa_join(&a, tc->agent_port, "legnode", TOKEN,
	    "lg-w"), 0);
	assert_int_equal(send_legacy(&a, "lg-w", "mindspore-2.4", "", 0), 0);
	wait_legacy_free(tc, "/v1/jobs/lg-w");
	snprintf(out, sizeof(out), "%s/ctl.out", tc->dir);
	pid = tc_ctl_start(tc, out, args);
	tc_wait_str(tc, "/v1/jobs/lg-w", "windows.0.state", "scheduled");
	event(&a, 1, K_OBSERVED, "lg-w", 0);
	event(&a, 2, K_COMPLETE, "lg-w", 0);
	/* Committed after rank 0's end was judged, in the same order. */
	event(&a, 3, K_OBSERVED, "lg-w", 1);
	tc_wait_str(tc, "/v1/jobs/lg-w/ranks", "ranks.1.state", "observed");
	r = tc_req(tc, "GET", "/v1/jobs/lg-w", NULL, 200);
	w = tc_window(r.json, 1);
	assert_non_null(w);
	assert_string_equal(json_string_value(json_object_get(w, "state")),
	    "running");
	tc_reply_free(&r);
	event(&a, 4, K_COMPLETE, "lg-w", 1);
	assert_int_equal(send_legacy_w1(&a, "lg-w", "mindspore-2.4", "", 0,
	    W_OVER), 0);
	assert_int_equal(tc_ctl_wait(pid), 0);
	text = tc_slurp(out);
	assert_non_null(strstr(text, "2 observed, 2 observed complete"));
	assert_non_null(strstr(text, "window 1: all 2 targeted ranks done: "
	    "0 stopped, 2 observed complete"));
	free(text);
	tc_wait_str(tc, "/v1/jobs/lg-w", "windows.0.state", "done");
	r = tc_req(tc, "GET", "/v1/jobs/lg-w", NULL, 200);
	w = tc_window(r.json, 1);
	assert_non_null(w);
	tc_assert_ints(w, "rank_counts", "targeted=2 started=0 observed=2 "
	    "observed_complete=2 missed=0 finished=2");
	tc_reply_free(&r);
	ranks_are(tc, "lg-w", 2, "observed_complete");
	fa_close(&a);
}

/*
 * A MindSpore legacy job cannot target ranks: a window with ranks is refused
 * at request time; one made before the job was served so, once every node
 * serving it refused it, leaves the schedule as refused, and dynprofctl
 * status does not headline it.
 */
static void
test_ranks_refused(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	char		 out[512], *text;
	const char	*args[] = { "status", "lg-r", NULL };

	tc_call(tc, "POST", "/v1/jobs/lg-r/windows",
	    "{\"start_step\": 10, \"stop_step\": 11}", 201);
	tc_call(tc, "POST", "/v1/jobs/lg-r/windows",
	    "{\"start_step\": 20, \"stop_step\": 21, \"ranks\": \"0-3\"}", 201);
	assert_int_equal(fa_join(&a, tc->agent_port, "lg-rn", TOKEN, "lg-r"),
	    0);
	assert_int_equal(send_legacy(&a, "lg-r", "mindspore-2.4",
	    "ranks \"0-3\": cannot target ranks", 0), 0);
	tc_wait_str(tc, "/v1/jobs/lg-r", "windows.1.state", "refused");
	r = tc_req(tc, "GET", "/v1/jobs", NULL, 200);
	assert_int_equal(tc_int(r.json, "jobs.0.pending_windows"), 1);
	tc_reply_free(&r);

	/* Now that the job is served so, refused when asked for. */
	r = tc_req(tc, "POST", "/v1/jobs/lg-r/windows",
	    "{\"start_step\": 30, \"stop_step\": 31, \"ranks\": \"1\"}", 409);
	assert_string_equal(tc_str(r.json, "field"), "ranks");
	assert_non_null(strstr(tc_str(r.json, "error"), "cannot target ranks"));
	tc_reply_free(&r);
	r = tc_req(tc, "GET", "/v1/jobs/lg-r", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "windows")),
	    2);
	tc_reply_free(&r);

	/* The headline: window 1, even cancelled, rather than the refused. */
	tc_call(tc, "DELETE", "/v1/jobs/lg-r/windows/1", NULL, 200);
	snprintf(out, sizeof(out), "%s/status.out", tc->dir);
	assert_int_equal(tc_ctl_wait(tc_ctl_start(tc, out, args)), 0);
	text = tc_slurp(out);
	assert_non_null(strstr(text, ", window 1 [10,11]"));
	assert_null(strstr(text, ", window 2 [20,21]"));
	/* The legacy part, in the table as in --json. */
	assert_non_null(strstr(text, "legacy: 1 node (mindspore-2.4: 1), "
	    "0 in error"));
	assert_non_null(strstr(text, "window 2: written 0, waiting 0, "
	    "refused 1, over 0: ranks \"0-3\": cannot target ranks"));
	free(text);
	fa_close(&a);
}

/*
 * Legacy nodes never overwrite a rank that reports for itself, and a job
 * directory of no known dialect (a SLURM prolog makes one for every job)
 * beside native ranks neither makes the job legacy nor counts a node.
 */
static void
test_native_wins(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent n1, evil, prolog;
	struct tc_reply	 r;
	json_t		*rk;
	long long	 refused0;

	assert_int_equal(fa_join(&n1, tc->agent_port, "lg-n1", TOKEN, "lg-n"),
	    0);
	assert_int_equal(fa_progress(&n1, "lg-n", 0, 5, 5, 4), 0);
	tc_wait_int(tc, "/v1/jobs/lg-n", "rank_counts.total", 4);
	/* The prolog's directory on the native node. */
	assert_int_equal(send_legacy(&n1, "lg-n", "", "", 0), 0);
	assert_int_equal(fa_join(&evil, tc->agent_port, "lg-evil", TOKEN,
	    "lg-n"), 0);
	assert_int_equal(send_legacy(&evil, "lg-n", "mindspore-2.4", "", 0), 0);
	refused0 = tc_metric(tc, "dynprof_events_refused_total");
	event(&evil, 1, K_OBSERVED, "lg-n", 3);
	event(&evil, 2, K_COMPLETE, "lg-n", 3);
	assert_int_equal(tc_metric(tc, "dynprof_events_refused_total"),
	    refused0 + 2);
	/* A rank nobody reports natively is taken. */
	event(&evil, 3, K_OBSERVED, "lg-n", 9);
	r = tc_req(tc, "GET", "/v1/jobs/lg-n/ranks", NULL, 200);
	rk = json_object_get(r.json, "ranks");
	assert_int_equal(json_array_size(rk), 5);
	assert_string_equal(tc_str(json_array_get(rk, 3), "node"), "lg-n1");
	assert_string_equal(tc_str(json_array_get(rk, 3), "state"), "attached");
	assert_true(json_is_null(json_object_get(json_array_get(rk, 3),
	    "last_event")));
	assert_true(json_is_null(json_object_get(json_array_get(rk, 3),
	    "output_dir")));
	assert_string_equal(tc_str(json_array_get(rk, 4), "state"), "observed");
	tc_reply_free(&r);

	/* A node with a directory of no dialect and no ranks: not counted. */
	assert_int_equal(fa_join(&prolog, tc->agent_port, "lg-prolog", TOKEN,
	    "lg-n"), 0);
	assert_int_equal(send_legacy(&prolog, "lg-n", "", "", 0), 0);
	tc_wait_int(tc, "/v1/jobs/lg-n", "legacy.dialects.unknown", 1);
	r = tc_req(tc, "GET", "/v1/jobs/lg-n", NULL, 200);
	assert_int_equal(tc_int(r.json, "node_counts.total"), 2);
	/* lg-evil and lg-prolog; lg-n1's directory beside its ranks is not
	 * a legacy job. */
	assert_int_equal(tc_int(r.json, "legacy.nodes"), 2);
	tc_reply_free(&r);
	fa_close(&prolog);
	fa_close(&evil);
	fa_close(&n1);
}

/* Reports that are not what an agent sends: refused, the link goes on. */
static void
test_bad_reports(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	json_t		*w;
	long long	 refused0;

	assert_int_equal(fa_handshake(&a, tc->agent_port, "lg-bad", TOKEN), 0);
	assert_int_equal(fa_subscribe(&a, "lg-k", 0), 0);
	assert_int_equal(fa_expect_empty(&a, "lg-k", 5000), 0);
	refused0 = tc_metric(tc, "dynprof_legacy_refused_total");
	assert_int_equal(send_legacy(&a, "lg-k", "mindspore-9.9", "", 0), 0);
	assert_int_equal(send_legacy(&a, "../lg-k", "torch_npu", "", 0), 0);
	assert_int_equal(send_legacy(&a, "lg-k", "dynprof\xff", "", 0), 0);
	/* A reason that is not UTF-8: that window left out, the rest kept. */
	assert_int_equal(send_legacy(&a, "lg-k", "torch_npu", "bad \xe9", 0),
	    0);
	/* Messages are taken in order: once the last shows, all were. */
	r = wait_legacy(tc, "/v1/jobs/lg-k");
	w = json_object_get(r.json, "legacy");
	assert_int_equal(tc_int(w, "dialects.torch_npu"), 1);
	assert_int_equal(json_array_size(json_object_get(w, "windows")), 1);
	tc_reply_free(&r);
	assert_int_equal(tc_metric(tc, "dynprof_legacy_refused_total"),
	    refused0 + 3);
	fa_close(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_observed_from_legacy_node_only, tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_bad_reports, tc_setup_agents,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_observed_window_waited,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_ranks_refused,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_native_wins,
		    tc_setup_agents, tc_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
