/*
 * What the coordinator answers an agent's messages with, through fake agents
 * speaking the real protocol to the real binary: a kind it does not know, the
 * jobs a Hello lists as applied, a Subscribe to a job nobody scheduled.
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
#define WELCOME	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME

struct fixture {
	struct tc_coord	 tc;
};

/* Handshakes fa as node with the coordinator's agent token. */
static int
handshake(struct tc_coord *tc, struct fakeagent *fa, const char *node)
{
	return (fa_handshake(fa, tc->agent_port, node, "agent-secret"));
}

/*
 * A message of a kind this coordinator does not know (a newer agent's: an
 * unknown field number in the oneof) is ignored: the link stays up and what
 * follows is handled.
 */
static void
test_unknown_kind(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	/* A frame holding field 15, a message with field 1 = 1. */
	static const uint8_t unknown[] = { 0, 0, 0, 0, 4, 0x7a, 0x02, 0x08,
	    0x01 };

	assert_int_equal(handshake(&f->tc, &a, "newer-node"), 0);
	assert_int_equal(fa_subscribe(&a, "uk-j", 0), 0);
	assert_int_equal(fa_send_raw(&a, unknown, sizeof(unknown)), 0);
	assert_int_equal(fa_heartbeat(&a), 0);
	assert_int_equal(fa_event(&a, 0, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED,
	    "uk-j", 0, 0, 5, NULL), 0);
	assert_int_equal(fa_wait_ack(&a, 1, 5000), 0);
	assert_false(fa_wait_closed(&a, 300));
	tc_wait_str(&f->tc, "/v1/jobs/uk-j/ranks", "ranks.0.state", "attached");
	fa_close(&a);
}

/* Expects a JobConfig of job at generation gen holding n windows. */
static void
expect_config(struct fakeagent *fa, const char *job, long long gen, size_t n)
{
	fa_msg	*m = fa_recv_type(fa, CONFIG, 5000);

	assert_non_null(m);
	assert_string_equal(m->config->job, job);
	assert_int_equal(m->config->generation, gen);
	assert_int_equal(m->config->n_windows, n);
	fa_free(m);
}

/* Adds a window to job at start_step and returns the new generation. */
static long long
add_window(struct tc_coord *tc, const char *job, int start)
{
	struct tc_reply	 r;
	char		 path[128], body[128];
	long long	 gen;

	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", job);
	snprintf(body, sizeof(body), "{\"start_step\": %d, \"steps\": 2}",
	    start);
	r = tc_req(tc, "POST", path, body, 201);
	gen = tc_int(r.json, "generation");
	tc_reply_free(&r);
	return (gen);
}

/*
 * Each job a hello lists as applied is a subscription, as a Subscribe would
 * make: with no Subscribe, the agent gets the job's later changes.
 */
static void
test_hello_subscribes(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	fa_msg		*m;
	long long	 gen;

	gen = add_window(&f->tc, "hs-j", 100);
	assert_int_equal(fa_connect(&a, f->tc.agent_port), 0);
	assert_int_equal(fa_hello(&a, "hs-node", "agent-secret", 1, "hs-j",
	    (uint64_t)gen), 0);
	m = fa_recv(&a, 5000);
	assert_non_null(m);
	assert_int_equal(m->body_case, WELCOME);
	fa_free(m);
	/* It has that generation: nothing now; the next change comes. */
	assert_null(fa_recv_type(&a, CONFIG, 300));
	gen = add_window(&f->tc, "hs-j", 200);
	expect_config(&a, "hs-j", gen, 2);
	gen = add_window(&f->tc, "hs-j", 300);
	expect_config(&a, "hs-j", gen, 3);
	/* A Subscribe besides (as the agent sends after its hello) makes no
	 * second subscription: one push per change. */
	assert_int_equal(fa_subscribe(&a, "hs-j", (uint64_t)gen), 0);
	assert_int_equal(fa_heartbeat(&a), 0);
	assert_null(fa_recv_type(&a, CONFIG, 300));
	gen = add_window(&f->tc, "hs-j", 400);
	expect_config(&a, "hs-j", gen, 4);
	assert_null(fa_recv_type(&a, CONFIG, 300));
	fa_close(&a);

	/* A job the coordinator does not know yet: its empty schedule, then
	 * its first change. */
	assert_int_equal(fa_connect(&a, f->tc.agent_port), 0);
	assert_int_equal(fa_hello(&a, "hs-node", "agent-secret", 1, "hs-new",
	    0), 0);
	assert_int_equal(fa_expect_empty(&a, "hs-new", 5000), 0);
	gen = add_window(&f->tc, "hs-new", 100);
	expect_config(&a, "hs-new", gen, 1);
	fa_close(&a);
}

/*
 * A Subscribe to a job nobody scheduled is answered with its empty schedule
 * (generation 0, no window), whatever generation the agent says it applied;
 * the job's first change follows as ever.
 */
static void
test_subscribe_unscheduled(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	long long	 gen;

	assert_int_equal(handshake(&f->tc, &a, "su-node"), 0);
	assert_int_equal(fa_subscribe(&a, "su-j", 0), 0);
	assert_int_equal(fa_expect_empty(&a, "su-j", 5000), 0);
	/* An agent that applied generation 7 before the coordinator lost its
	 * state is told the same. */
	assert_int_equal(fa_subscribe(&a, "su-k", 7), 0);
	assert_int_equal(fa_expect_empty(&a, "su-k", 5000), 0);
	gen = add_window(&f->tc, "su-j", 100);
	expect_config(&a, "su-j", gen, 1);
	assert_null(fa_recv_type(&a, CONFIG, 300));
	fa_close(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unknown_kind,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_hello_subscribes,
		    tc_setup_agents, tc_teardown),
		cmocka_unit_test_setup_teardown(test_subscribe_unscheduled,
		    tc_setup_agents, tc_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
