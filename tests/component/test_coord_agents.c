/*
 * The coordinator's agent side, through fake agents speaking the real protocol
 * to the real binary: hello checks, bad input, replacement, pushes to
 * subscribers only, idempotent events, relative windows, lost nodes, and
 * persistence across SIGKILL.  What each message is answered with is in
 * test_coord_protocol.c.
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

#define CONFIG	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG
#define ACK	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK
#define ERR	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR
#define WELCOME	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME

#define K_ATTACHED	DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED
#define K_STARTED	DYNPROF__V1__EVENT_KIND__EVENT_STARTED
#define K_STOPPED	DYNPROF__V1__EVENT_KIND__EVENT_STOPPED
#define K_SKIPPED	DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED

struct fixture {
	struct tc_coord	 tc;
};

/* Starts a coordinator whose agents heartbeat every 100 ms. */
static int
setup_fast(void **state)
{
	return (tc_setup_agents_hb(state, "100"));
}

/* Starts a coordinator whose agents heartbeat every 500 ms. */
static int
setup_half(void **state)
{
	return (tc_setup_agents_hb(state, "500"));
}

/* Handshakes fa as node with the coordinator's agent token. */
static int
handshake(struct tc_coord *tc, struct fakeagent *fa, const char *node)
{
	return (fa_handshake(fa, tc->agent_port, node, "agent-secret"));
}

/* Waits for an EventAck covering seq. */
static void
wait_ack(struct fakeagent *fa, uint64_t seq)
{
	if (fa_wait_ack(fa, seq, 5000) == -1)
		fail_msg("no ack for seq %llu", (unsigned long long)seq);
}

/* Expects an Error frame with code, then the close. */
static void
expect_error(struct fakeagent *fa, int code)
{
	fa_msg	*m = fa_recv(fa, 5000);

	assert_non_null(m);
	assert_int_equal(m->body_case, ERR);
	assert_int_equal(m->error->code, code);
	assert_true(strlen(m->error->reason) > 0);
	fa_free(m);
	assert_true(fa_wait_closed(fa, 5000));
}

static void
test_bad_peers(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent good, fa;
	struct tc_reply	 r;
	fa_msg		*m;
	static const uint8_t garbage[] = "GET / HTTP/1.1\r\n\r\n";
	static const uint8_t huge[] = { 0, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t junk[] = { 0, 0, 0, 0, 3, 0xff, 0xff, 0xff };
	Dynprof__V1__AgentMessage hb = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Heartbeat	 h = DYNPROF__V1__HEARTBEAT__INIT;

	assert_int_equal(handshake(&f->tc, &good, "good-node"), 0);
	assert_int_equal(fa_subscribe(&good, "bp-1", 0), 0);

	/* Not a frame at all. */
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	assert_int_equal(fa_send_raw(&fa, garbage, sizeof(garbage) - 1), 0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE);
	fa_close(&fa);

	/* A frame over the limit. */
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	assert_int_equal(fa_send_raw(&fa, huge, sizeof(huge)), 0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE);
	fa_close(&fa);

	/* A frame that does not decode. */
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	assert_int_equal(fa_send_raw(&fa, junk, sizeof(junk)), 0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE);
	fa_close(&fa);

	/* Anything but a hello first. */
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	hb.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
	hb.heartbeat = &h;
	assert_int_equal(fa_send(&fa, &hb), 0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_NOT_HELLO);
	fa_close(&fa);

	/* Wrong protocol version. */
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	assert_int_equal(fa_hello(&fa, "v-node", "agent-secret", 99, NULL, 0),
	    0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_VERSION);
	fa_close(&fa);

	/* Wrong token, and none. */
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	assert_int_equal(fa_hello(&fa, "t-node", "agent-secreT", 1, NULL, 0),
	    0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_TOKEN);
	fa_close(&fa);
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	assert_int_equal(fa_hello(&fa, "t-node", NULL, 1, NULL, 0), 0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_TOKEN);
	fa_close(&fa);

	/* A bad node name. */
	assert_int_equal(fa_connect(&fa, f->tc.agent_port), 0);
	assert_int_equal(fa_hello(&fa, "bad node", "agent-secret", 1, NULL, 0),
	    0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE);
	fa_close(&fa);

	/* A second hello after the first. */
	assert_int_equal(handshake(&f->tc, &fa, "twice-node"), 0);
	assert_int_equal(fa_hello(&fa, "twice-node", "agent-secret", 1, NULL,
	    0), 0);
	expect_error(&fa, DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE);
	fa_close(&fa);

	/* The good agent is still served: it gets the next push. */
	tc_call(&f->tc, "POST", "/v1/jobs/bp-1/windows",
	    "{\"start_step\": 10, \"steps\": 2}", 201);
	m = fa_recv_type(&good, CONFIG, 5000);
	assert_non_null(m);
	assert_string_equal(m->config->job, "bp-1");
	fa_free(m);
	assert_int_equal(fa_heartbeat(&good), 0);
	r = tc_req(&f->tc, "GET", "/v1/nodes", NULL, 200);
	assert_non_null(strstr(r.body, "\"good-node\""));
	assert_null(strstr(r.body, "\"v-node\""));
	assert_null(strstr(r.body, "\"t-node\""));
	tc_reply_free(&r);
	r = tc_req(&f->tc, "GET", "/metrics", NULL, 200);
	assert_non_null(strstr(r.body, "dynprof_agents_refused_total 8\n"));
	assert_non_null(strstr(r.body, "dynprof_agents_connected 1\n"));
	tc_reply_free(&r);
	fa_close(&good);
}

static void
test_push_subscribers_only(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a, b, c, d;
	struct tc_reply	 r;
	fa_msg		*m;
	long long	 gen;

	assert_int_equal(handshake(&f->tc, &a, "node-a"), 0);
	assert_int_equal(handshake(&f->tc, &b, "node-b"), 0);
	assert_int_equal(handshake(&f->tc, &c, "node-c"), 0);
	assert_int_equal(fa_subscribe(&a, "push-j", 0), 0);
	assert_int_equal(fa_subscribe(&b, "push-k", 0), 0);
	/* Jobs nobody scheduled yet: each answered with its empty schedule. */
	assert_int_equal(fa_expect_empty(&a, "push-j", 5000), 0);
	assert_int_equal(fa_expect_empty(&b, "push-k", 5000), 0);
	/* Subscriptions are processed in order with what follows. */
	assert_int_equal(fa_heartbeat(&a), 0);
	usleep(100000);

	r = tc_req(&f->tc, "POST", "/v1/jobs/push-j/windows",
	    "{\"start_step\": 100, \"stop_step\": 104, \"ranks\": \"0-3\", "
	    "\"output_subdir\": \"x/y\", \"options\": {\"profiler_level\": 2, "
	    "\"activities\": [\"NPU\"]}}", 201);
	gen = tc_int(r.json, "generation");
	tc_reply_free(&r);

	m = fa_recv_type(&a, CONFIG, 5000);
	assert_non_null(m);
	assert_string_equal(m->config->job, "push-j");
	assert_int_equal(m->config->generation, gen);
	assert_int_equal(m->config->n_windows, 1);
	assert_int_equal(m->config->windows[0]->id, 1);
	assert_int_equal(m->config->windows[0]->start_step, 100);
	assert_int_equal(m->config->windows[0]->stop_step, 104);
	assert_string_equal(m->config->windows[0]->ranks, "0-3");
	assert_int_equal(m->config->windows[0]->state,
	    DYNPROF__V1__WINDOW_STATE__WINDOW_SCHEDULED);
	assert_int_equal(m->config->windows[0]->options->profiler_level, 2);
	assert_int_equal(m->config->windows[0]->options->aicore_metrics, -1);
	assert_true(m->config->windows[0]->options->data_simplification);
	assert_string_equal(m->config->windows[0]->options->output_subdir,
	    "x/y");
	assert_string_equal(
	    m->config->windows[0]->options->framework_options_json,
	    "{\"activities\":[\"NPU\"]}");
	fa_free(m);
	assert_null(fa_recv_type(&b, CONFIG, 400));
	assert_null(fa_recv_type(&c, CONFIG, 100));

	/* Applied is recorded per node, with the push latency. */
	assert_int_equal(fa_applied(&a, "push-j", (uint64_t)gen), 0);
	{
		long long	 deadline = tc_now_ms() + 5000;
		long long	 applied = -1;

		while (tc_now_ms() < deadline && applied != gen) {
			r = tc_req(&f->tc, "GET", "/v1/nodes", NULL, 200);
			applied = tc_int(r.json, "nodes.0.jobs.push-j");
			if (applied == gen)
				assert_string_equal(tc_str(r.json,
				    "nodes.0.node"), "node-a");
			tc_reply_free(&r);
			usleep(20000);
		}
		assert_int_equal(applied, gen);
	}
	r = tc_req(&f->tc, "GET", "/metrics", NULL, 200);
	assert_non_null(strstr(r.body, "dynprof_push_applied_seconds_count 1\n"));
	assert_non_null(strstr(r.body, "dynprof_agents_connected 3\n"));
	tc_reply_free(&r);

	/* A later subscriber with an older generation gets it at once; one
	 * that has it gets nothing. */
	assert_int_equal(fa_subscribe(&c, "push-j", 0), 0);
	m = fa_recv_type(&c, CONFIG, 5000);
	assert_non_null(m);
	assert_int_equal(m->config->generation, gen);
	fa_free(m);
	assert_int_equal(handshake(&f->tc, &d, "node-d"), 0);
	assert_int_equal(fa_subscribe(&d, "push-j", (uint64_t)gen), 0);
	assert_null(fa_recv_type(&d, CONFIG, 300));
	fa_close(&d);

	/* A hello naming an older generation gets the newer schedule. */
	assert_int_equal(fa_connect(&d, f->tc.agent_port), 0);
	assert_int_equal(fa_hello(&d, "node-d", "agent-secret", 1, "push-j",
	    (uint64_t)gen - 1), 0);
	m = fa_recv(&d, 5000);
	assert_non_null(m);
	assert_int_equal(m->body_case, WELCOME);
	assert_int_equal(m->welcome->heartbeat_ms, 1000);
	fa_free(m);
	m = fa_recv_type(&d, CONFIG, 5000);
	assert_non_null(m);
	assert_int_equal(m->config->generation, gen);
	fa_free(m);

	/* Cancel: pushed to the subscribers, the window marked cancelled. */
	tc_call(&f->tc, "DELETE", "/v1/jobs/push-j/windows/1", NULL, 200);
	m = fa_recv_type(&a, CONFIG, 5000);
	assert_non_null(m);
	assert_int_equal(m->config->n_windows, 1);
	assert_int_equal(m->config->windows[0]->state,
	    DYNPROF__V1__WINDOW_STATE__WINDOW_CANCELLED);
	fa_free(m);
	assert_null(fa_recv_type(&b, CONFIG, 300));
	fa_close(&a);
	fa_close(&b);
	fa_close(&c);
	fa_close(&d);
}

static void
test_replace(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a, b;
	struct tc_reply	 r;
	fa_msg		*m;

	assert_int_equal(handshake(&f->tc, &a, "same-node"), 0);
	assert_int_equal(fa_subscribe(&a, "rep-j", 0), 0);
	assert_int_equal(fa_expect_empty(&a, "rep-j", 5000), 0);
	assert_int_equal(handshake(&f->tc, &b, "same-node"), 0);
	expect_error(&a, DYNPROF__V1__ERROR_CODE__ERROR_REPLACED);
	fa_close(&a);
	/* The newcomer is served; the old one's subscription went with it. */
	assert_int_equal(fa_subscribe(&b, "rep-j", 0), 0);
	assert_int_equal(fa_expect_empty(&b, "rep-j", 5000), 0);
	assert_int_equal(fa_heartbeat(&b), 0);
	usleep(100000);
	tc_call(&f->tc, "POST", "/v1/jobs/rep-j/windows",
	    "{\"start_step\": 5, \"steps\": 1}", 201);
	m = fa_recv_type(&b, CONFIG, 5000);
	assert_non_null(m);
	fa_free(m);
	r = tc_req(&f->tc, "GET", "/v1/nodes", NULL, 200);
	{
		json_t	*nodes = json_object_get(r.json, "nodes"), *n;
		size_t	 i, count = 0;

		json_array_foreach(nodes, i, n) {
			if (strcmp(tc_str(n, "node"), "same-node") == 0) {
				count++;
				assert_string_equal(tc_str(n, "state"),
				    "connected");
			}
		}
		assert_int_equal(count, 1);
	}
	tc_reply_free(&r);
	fa_close(&b);
}

static void
test_events_idempotent(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a, a2;
	struct tc_reply	 r;
	fa_msg		*m;
	char		*before;
	const char	*after;

	assert_int_equal(handshake(&f->tc, &a, "ev-node"), 0);
	assert_int_equal(fa_subscribe(&a, "ev-j", 0), 0);
	assert_int_equal(fa_expect_empty(&a, "ev-j", 5000), 0);
	tc_call(&f->tc, "POST", "/v1/jobs/ev-j/windows",
	    "{\"start_step\": 10, \"stop_step\": 12, \"ranks\": \"0-1\"}", 201);
	m = fa_recv_type(&a, CONFIG, 5000);
	assert_non_null(m);
	fa_free(m);

	assert_int_equal(fa_event(&a, 1, K_ATTACHED, "ev-j", 0, 0, 0, NULL), 0);
	assert_int_equal(fa_event(&a, 2, K_ATTACHED, "ev-j", 1, 0, 0, NULL), 0);
	assert_int_equal(fa_event(&a, 3, K_STARTED, "ev-j", 0, 1, 10,
	    "/out/rank0_start10_stop12"), 0);
	assert_int_equal(fa_event(&a, 4, K_STARTED, "ev-j", 1, 1, 10,
	    "/out/rank1_start10_stop12"), 0);
	assert_int_equal(fa_event(&a, 5, K_STOPPED, "ev-j", 0, 1, 12, NULL), 0);
	wait_ack(&a, 5);
	r = tc_req(&f->tc, "GET", "/v1/jobs/ev-j/ranks", NULL, 200);
	assert_string_equal(tc_str(r.json, "ranks.0.state"), "done");
	assert_string_equal(tc_str(r.json, "ranks.0.node"), "ev-node");
	assert_string_equal(tc_str(r.json, "ranks.0.output_dir"),
	    "/out/rank0_start10_stop12");
	assert_string_equal(tc_str(r.json, "ranks.0.last_event"), "stopped");
	assert_int_equal(tc_int(r.json, "ranks.0.window"), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(
	    json_object_get(r.json, "ranks"), 0), "events")), 2);
	assert_string_equal(tc_str(r.json, "ranks.1.state"), "profiling");
	tc_reply_free(&r);
	r = tc_req(&f->tc, "GET", "/v1/jobs/ev-j", NULL, 200);
	assert_string_equal(tc_str(r.json, "windows.0.state"), "running");
	before = strdup(r.body);
	tc_reply_free(&r);

	/* Replays of the same seqs: acked, nothing changes. */
	assert_int_equal(fa_event(&a, 3, K_STARTED, "ev-j", 0, 1, 10,
	    "/out/rank0_start10_stop12"), 0);
	assert_int_equal(fa_event(&a, 5, K_STOPPED, "ev-j", 0, 1, 12, NULL), 0);
	assert_int_equal(fa_event(&a, 1, K_ATTACHED, "ev-j", 0, 0, 0, NULL), 0);
	wait_ack(&a, 5);
	r = tc_req(&f->tc, "GET", "/v1/jobs/ev-j", NULL, 200);
	assert_string_equal(r.body, before);
	tc_reply_free(&r);

	/* A restarted agent (new boot id) re-reports the slots' last states
	 * with new seqs: nothing changes either. */
	fa_close(&a);
	assert_int_equal(handshake(&f->tc, &a2, "ev-node"), 0);
	assert_int_equal(fa_subscribe(&a2, "ev-j", 0), 0);
	m = fa_recv_type(&a2, CONFIG, 5000);
	assert_non_null(m);
	fa_free(m);
	assert_int_equal(fa_event(&a2, 1, K_STARTED, "ev-j", 0, 1, 10,
	    "/out/rank0_start10_stop12"), 0);
	assert_int_equal(fa_event(&a2, 2, K_STOPPED, "ev-j", 0, 1, 12, NULL),
	    0);
	wait_ack(&a2, 2);
	r = tc_req(&f->tc, "GET", "/v1/jobs/ev-j", NULL, 200);
	after = r.body;
	assert_string_equal(after, before);
	tc_reply_free(&r);
	free(before);
	r = tc_req(&f->tc, "GET", "/metrics", NULL, 200);
	assert_non_null(strstr(r.body, "dynprof_events_duplicate_total 5\n"));
	tc_reply_free(&r);

	/* Rank 1 ends the window: it ended on every targeted rank, so it
	 * leaves the pushed schedule and shows as done. */
	assert_int_equal(fa_event(&a2, 3, K_STOPPED, "ev-j", 1, 1, 12, NULL),
	    0);
	wait_ack(&a2, 3);
	m = fa_recv_type(&a2, CONFIG, 5000);
	assert_non_null(m);
	assert_int_equal(m->config->n_windows, 0);
	fa_free(m);
	tc_wait_str(&f->tc, "/v1/jobs/ev-j", "windows.0.state", "done");
	fa_close(&a2);
}

static void
test_relative_windows(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	long long	 deadline;
	long long	 max = -1;
	int		 i;

	assert_int_equal(handshake(&f->tc, &a, "rel-node"), 0);
	assert_int_equal(fa_subscribe(&a, "rel-j", 0), 0);
	r = tc_req(&f->tc, "POST", "/v1/jobs/rel-j/windows",
	    "{\"in_steps\": 20, \"steps\": 5}", 409);
	assert_string_equal(tc_str(r.json, "field"), "in_steps");
	tc_reply_free(&r);

	assert_int_equal(fa_progress(&a, "rel-j", 0, 139, 141, 4), 0);
	deadline = tc_now_ms() + 5000;
	while (tc_now_ms() < deadline && max != 141) {
		r = tc_req(&f->tc, "GET", "/v1/jobs/rel-j", NULL, 200);
		max = tc_int(r.json, "progress.max_step");
		tc_reply_free(&r);
		usleep(20000);
	}
	assert_int_equal(max, 141);

	r = tc_req(&f->tc, "POST", "/v1/jobs/rel-j/windows",
	    "{\"in_steps\": 20, \"steps\": 5}", 201);
	assert_int_equal(tc_int(r.json, "start_step"), 161);
	assert_int_equal(tc_int(r.json, "stop_step"), 165);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "POST", "/v1/jobs/rel-j/windows",
	    "{\"in_steps\": 0, \"steps\": 10, \"roundup\": 100}", 201);
	assert_int_equal(tc_int(r.json, "start_step"), 200);
	assert_int_equal(tc_int(r.json, "stop_step"), 209);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "POST", "/v1/jobs/rel-j/windows",
	    "{\"in_steps\": 100, \"stop_step\": 400, \"roundup\": 50}", 201);
	assert_int_equal(tc_int(r.json, "start_step"), 250);
	assert_int_equal(tc_int(r.json, "stop_step"), 400);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "GET", "/v1/jobs/rel-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "progress.ranks_alive"), 4);
	assert_int_equal(tc_int(r.json, "progress.min_step"), 139);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "GET", "/v1/jobs/rel-j/ranks", NULL, 200);
	assert_int_equal(tc_int(r.json, "ranks.3.step"), 141);
	assert_string_equal(tc_str(r.json, "ranks.3.state"), "attached");
	tc_reply_free(&r);

	/*
	 * Once the lowest step passed a window's stop, it leaves the schedule
	 * when every live rank it targets reported it ended (here skipped).
	 */
	assert_int_equal(fa_progress(&a, "rel-j", 0, 170, 171, 4), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(fa_event(&a, 0, K_SKIPPED, "rel-j", i, 1, 170,
		    NULL), 0);
	tc_wait_str(&f->tc, "/v1/jobs/rel-j", "windows.0.state", "done");
	r = tc_req(&f->tc, "GET", "/v1/jobs/rel-j", NULL, 200);
	assert_string_equal(tc_str(r.json, "windows.1.state"), "scheduled");
	tc_reply_free(&r);
	fa_close(&a);
}

/* Returns the job's pending_windows from GET /v1/jobs. */
static long long
pending_windows(struct tc_coord *tc, const char *job)
{
	struct tc_reply	 r;
	json_t		*j;
	long long	 n = -1;
	size_t		 i;

	r = tc_req(tc, "GET", "/v1/jobs", NULL, 200);
	json_array_foreach(json_object_get(r.json, "jobs"), i, j) {
		if (strcmp(tc_str(j, "job"), job) == 0)
			n = tc_int(j, "pending_windows");
	}
	tc_reply_free(&r);
	return (n);
}

/*
 * Windows behind every rank stay in the schedule (their ranks have not
 * reported them skipped), up to the bound: a new window then takes the place
 * of the oldest that no rank can run any more, then of a cancelled one; a
 * schedule of 16 windows still ahead refuses a 17th.
 */
static void
test_schedule_bound(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	char		 body[128];
	long long	 gen;
	int		 i;

	assert_int_equal(handshake(&f->tc, &a, "bound-node"), 0);
	assert_int_equal(fa_subscribe(&a, "bound-j", 0), 0);
	assert_int_equal(fa_progress(&a, "bound-j", 0, 1000, 1000, 1), 0);
	tc_wait_str(&f->tc, "/v1/jobs/bound-j/ranks", "ranks.0.state",
	    "attached");
	for (i = 0; i < 16; i++) {	/* behind the rank: forced */
		snprintf(body, sizeof(body), "{\"start_step\": %d, "
		    "\"stop_step\": %d, \"force\": true}", 10 * i + 1,
		    10 * i + 5);
		r = tc_req(&f->tc, "POST", "/v1/jobs/bound-j/windows", body,
		    201);
		assert_int_equal(tc_int(r.json, "id"), i + 1);
		gen = tc_int(r.json, "generation");
		tc_reply_free(&r);
	}
	assert_int_equal(fa_heartbeat(&a), 0);
	assert_int_equal(pending_windows(&f->tc, "bound-j"), 16);

	/* Each window ahead evicts the oldest window behind, in the same
	 * change: one generation. */
	for (i = 0; i < 15; i++) {
		snprintf(body, sizeof(body), "{\"start_step\": %d, "
		    "\"stop_step\": %d}", 2000 + 10 * i, 2004 + 10 * i);
		r = tc_req(&f->tc, "POST", "/v1/jobs/bound-j/windows", body,
		    201);
		assert_int_equal(tc_int(r.json, "generation"), ++gen);
		tc_reply_free(&r);
		assert_int_equal(pending_windows(&f->tc, "bound-j"), 16);
	}
	r = tc_req(&f->tc, "GET", "/v1/jobs/bound-j", NULL, 200);
	for (i = 0; i < 15; i++) {
		snprintf(body, sizeof(body), "windows.%d.state", i);
		assert_string_equal(tc_str(r.json, body), "done");
	}
	assert_int_equal(tc_int(r.json, "windows.15.id"), 16);
	assert_string_equal(tc_str(r.json, "windows.15.state"), "scheduled");
	tc_reply_free(&r);

	/* The last window behind goes, then nothing can: 409. */
	tc_call(&f->tc, "POST", "/v1/jobs/bound-j/windows",
	    "{\"start_step\": 3000, \"stop_step\": 3004}", 201);
	assert_int_equal(fa_heartbeat(&a), 0);
	r = tc_req(&f->tc, "POST", "/v1/jobs/bound-j/windows",
	    "{\"start_step\": 4000, \"stop_step\": 4004}", 409);
	assert_non_null(strstr(tc_str(r.json, "error"), "16 windows pending"));
	tc_reply_free(&r);
	assert_int_equal(pending_windows(&f->tc, "bound-j"), 16);

	/* A cancelled window ahead, not running, makes room. */
	tc_call(&f->tc, "DELETE", "/v1/jobs/bound-j/windows/20", NULL, 200);
	tc_call(&f->tc, "POST", "/v1/jobs/bound-j/windows",
	    "{\"start_step\": 4000, \"stop_step\": 4004}", 201);
	assert_int_equal(pending_windows(&f->tc, "bound-j"), 16);
	fa_close(&a);
}

static void
test_lost_node(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	struct tc_reply	 r;

	assert_int_equal(handshake(&f->tc, &a, "quiet-node"), 0);
	assert_int_equal(fa_subscribe(&a, "lost-j", 0), 0);
	assert_int_equal(fa_progress(&a, "lost-j", 0, 7, 7, 1), 0);
	tc_wait_str(&f->tc, "/v1/jobs/lost-j/ranks", "ranks.0.state",
	    "attached");
	/* Silent from now on: 3 intervals of 100 ms and it is gone. */
	assert_true(fa_wait_closed(&a, 5000));
	tc_wait_str(&f->tc, "/v1/jobs/lost-j/ranks", "ranks.0.state",
	    "unknown");
	r = tc_req(&f->tc, "GET", "/v1/jobs/lost-j/ranks", NULL, 200);
	assert_int_equal(tc_int(r.json, "ranks.0.step"), 7);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "GET", "/v1/jobs/lost-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "node_counts.lost"), 1);
	assert_int_equal(tc_int(r.json, "rank_counts.unknown"), 1);
	tc_reply_free(&r);
	fa_close(&a);
}

static void
test_persistence(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	fa_msg		*m;
	char		 tok[512];
	const char	*extra[] = { "-q", "--agent-token-file", tok,
	    "--heartbeat-ms", "1000", NULL };
	long long	 gen, gen2, rev;
	char		*before, *after, *ranks_before;
	uint64_t	 boot;

	snprintf(tok, sizeof(tok), "%s/agent.token", f->tc.dir);
	assert_int_equal(handshake(&f->tc, &a, "pers-node"), 0);
	boot = a.boot_id;
	assert_int_equal(fa_subscribe(&a, "pers-j", 0), 0);
	tc_call(&f->tc, "PUT", "/v1/jobs/pers-j/config",
	    "{\"start_step\": 10, \"stop_step\": 12, \"profiler_level\": 1}",
	    200);
	tc_call(&f->tc, "POST", "/v1/jobs/pers-j/windows",
	    "{\"start_step\": 50, \"steps\": 3, \"ranks\": \"1\"}", 201);
	tc_call(&f->tc, "DELETE", "/v1/jobs/pers-j/windows/2", NULL, 200);
	assert_int_equal(fa_event(&a, 1, K_STARTED, "pers-j", 0, 1, 10,
	    "/o/r0"), 0);
	assert_int_equal(fa_event(&a, 2, K_STOPPED, "pers-j", 0, 1, 12, NULL),
	    0);
	assert_int_equal(fa_event(&a, 3, K_SKIPPED, "pers-j", 1, 1, 11, NULL),
	    0);
	wait_ack(&a, 3);
	r = tc_req(&f->tc, "GET", "/v1/jobs/pers-j", NULL, 200);
	gen = tc_int(r.json, "generation");
	tc_reply_free(&r);
	fa_close(&a);
	tc_wait_int(&f->tc, "/v1/jobs/pers-j", "node_counts.lost", 1);
	r = tc_req(&f->tc, "GET", "/v1/jobs/pers-j", NULL, 200);
	/* Which generation each node applied is not kept across restarts:
	 * the agents report it again in their hello.  The events' revisions
	 * go on above the last run's. */
	json_object_del(r.json, "node_counts");
	rev = tc_int(r.json, "revision");
	json_object_del(r.json, "revision");
	before = json_dumps(r.json, JSON_SORT_KEYS);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "GET", "/v1/jobs/pers-j/ranks", NULL, 200);
	json_object_del(r.json, "revision");
	ranks_before = json_dumps(r.json, JSON_SORT_KEYS);
	tc_reply_free(&r);

	assert_int_equal(tc_stop(&f->tc, SIGKILL), 128 + SIGKILL);
	assert_int_equal(tc_start(&f->tc, extra), 0);

	r = tc_req(&f->tc, "GET", "/v1/jobs/pers-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "generation"), gen);
	json_object_del(r.json, "node_counts");
	assert_true(tc_int(r.json, "revision") > rev);
	json_object_del(r.json, "revision");
	after = json_dumps(r.json, JSON_SORT_KEYS);
	assert_string_equal(after, before);
	free(after);
	assert_string_equal(tc_str(r.json, "windows.1.state"), "cancelled");
	assert_int_equal(tc_int(r.json, "config.profiler_level"), 1);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "GET", "/v1/jobs/pers-j/ranks", NULL, 200);
	json_object_del(r.json, "revision");
	after = json_dumps(r.json, JSON_SORT_KEYS);
	assert_string_equal(after, ranks_before);
	free(after);
	free(ranks_before);
	assert_string_equal(tc_str(r.json, "ranks.0.output_dir"), "/o/r0");
	assert_string_equal(tc_str(r.json, "ranks.0.last_event"), "stopped");
	assert_string_equal(tc_str(r.json, "ranks.1.last_event"), "skipped");
	tc_reply_free(&r);
	free(before);

	/* The agent's acknowledged seq survived; the generation only grows. */
	assert_int_equal(fa_connect(&a, f->tc.agent_port), 0);
	a.boot_id = boot;
	assert_int_equal(fa_hello(&a, "pers-node", "agent-secret", 1, "pers-j",
	    0), 0);
	m = fa_recv(&a, 5000);
	assert_non_null(m);
	assert_int_equal(m->body_case, WELCOME);
	assert_int_equal(m->welcome->acked_seq, 3);
	assert_int_equal(m->welcome->agent_boot_id, boot);
	fa_free(m);
	m = fa_recv_type(&a, CONFIG, 5000);
	assert_non_null(m);
	assert_int_equal(m->config->generation, gen);
	fa_free(m);
	r = tc_req(&f->tc, "POST", "/v1/jobs/pers-j/windows",
	    "{\"start_step\": 90, \"steps\": 1}", 201);
	gen2 = tc_int(r.json, "generation");
	assert_true(gen2 > gen);
	assert_int_equal(tc_int(r.json, "id"), 3);
	tc_reply_free(&r);
	fa_close(&a);
	assert_int_equal(tc_stop(&f->tc, SIGTERM), 0);
}

#define STALL_AGENTS	300

/* Heartbeats every agent in turn, spread over each 100 ms, for ms; what
 * they receive is read and checked to be no error.  Returns 0, or -1 if an
 * agent could not send. */
static int
stall_beat(struct fakeagent *fa, int n, int ms)
{
	long long	 end = tc_now_ms() + ms;
	fa_msg		*m;
	int		 i;

	while (tc_now_ms() < end) {
		for (i = 0; i < n; i++) {
			if (fa_heartbeat(&fa[i]) == -1)
				return (-1);
			while ((m = fa_recv(&fa[i], 0)) != NULL) {
				if (m->body_case == ERR)
					fail_msg("agent %d: error %d: %s", i,
					    m->error->code, m->error->reason);
				fa_free(m);
			}
			usleep(100000 / n);
		}
	}
	return (0);
}

/*
 * The coordinator SIGSTOPped for 5 heartbeat intervals (of 500 ms) while its
 * agents go on heartbeating, one at a time every 100 ms (the coordinator
 * never finds many of them readable at once, until it wakes with all of
 * them): woken, it drops none as silent, and counts its stall.
 */
static void
test_stall_not_silent(void **state)
{
	struct fixture		*f = *state;
	struct fakeagent	*fa;
	char			 node[32];
	int			 i;

	assert_non_null(fa = calloc(STALL_AGENTS, sizeof(*fa)));
	for (i = 0; i < STALL_AGENTS; i++) {
		snprintf(node, sizeof(node), "stall-%d", i);
		assert_int_equal(handshake(&f->tc, &fa[i], node), 0);
	}
	assert_int_equal(stall_beat(fa, STALL_AGENTS, 1000), 0);
	assert_int_equal(kill(f->tc.pid, SIGSTOP), 0);
	assert_int_equal(stall_beat(fa, STALL_AGENTS, 2500), 0);
	assert_int_equal(kill(f->tc.pid, SIGCONT), 0);
	assert_int_equal(stall_beat(fa, STALL_AGENTS, 2000), 0);
	for (i = 0; i < STALL_AGENTS; i++)
		assert_false(fa[i].eof);
	assert_int_equal(tc_metric(&f->tc, "dynprof_agents_silent_total"), 0);
	assert_true(tc_metric(&f->tc, "dynprof_loop_stalls_total") >= 1);
	for (i = 0; i < STALL_AGENTS; i++)
		fa_close(&fa[i]);
	free(fa);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_peers, tc_setup_agents,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_push_subscribers_only,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_replace, tc_setup_agents,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_events_idempotent,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_relative_windows,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_schedule_bound,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_stall_not_silent,
		    setup_half, tc_teardown),
		cmocka_unit_test_setup_teardown(test_lost_node, setup_fast,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_persistence,
		    tc_setup_agents, tc_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
