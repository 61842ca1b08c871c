/*
 * The generation counter never goes back, whatever the store holds: agents
 * that applied generations this coordinator's store never saw (a store
 * restored or rewritten) raise the counter, so that the next change
 * outranks what they hold and reaches them; an absurd one does not.
 * Through the real coordinator on 127.0.0.1 and fake agents.
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

#define TOKEN	"agent-secret"		/* tc_setup_agents_args()'s */
#define CONFIG	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG
#define WELCOME	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME

static int
setup(void **state)
{
	return (tc_setup_agents_args(state, "2000", NULL));
}

/* Says hello as node, having applied generation gen of job. */
static void
hello_applied(struct tc_coord *tc, struct fakeagent *fa, const char *node,
    const char *job, uint64_t gen)
{
	fa_msg	*m;

	assert_int_equal(fa_connect(fa, tc->agent_port), 0);
	assert_int_equal(fa_hello(fa, node, TOKEN, 1, job, gen), 0);
	assert_non_null(m = fa_recv_type(fa, WELCOME, 5000));
	fa_free(m);
}

/* Posts a window [start, start + 10] of job; returns its generation. */
static long long
post_window(struct tc_coord *tc, const char *job, int start)
{
	struct tc_reply	 r;
	char		 path[128], body[128];
	long long	 gen;

	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", job);
	snprintf(body, sizeof(body), "{\"start_step\": %d, \"stop_step\": %d}",
	    start, start + 10);
	r = tc_req(tc, "POST", path, body, 201);
	gen = tc_int(r.json, "generation");
	tc_reply_free(&r);
	return (gen);
}

/*
 * A new store (generation 0) and an agent that applied generation 7 of job
 * g: the first window of g is generation 1 without the raise, which the
 * agent ignores.  Now it is 8, and the agent gets it.
 */
static void
test_agent_ahead(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa;
	fa_msg		*m;
	long long	 t0;

	hello_applied(tc, &fa, "ahead", "g", 7);
	assert_int_equal(tc_metric(tc, "dynprof_generations_raised_total"),
	    1);
	assert_int_equal(post_window(tc, "g", 100), 8);
	/* The empty schedule of a job nobody scheduled came first. */
	while ((m = fa_recv_type(&fa, CONFIG, 5000)) != NULL &&
	    m->config->generation == 0)
		fa_free(m);
	assert_non_null(m);
	assert_int_equal(m->config->generation, 8);
	assert_int_equal(m->config->n_windows, 1);
	fa_free(m);
	/* An Applied report further ahead raises it again. */
	assert_int_equal(fa_applied(&fa, "g", 20), 0);
	t0 = tc_now_ms();
	while (tc_metric(tc, "dynprof_generations_raised_total") < 2 &&
	    tc_now_ms() - t0 < 10000)
		usleep(20000);
	assert_int_equal(tc_metric(tc, "dynprof_generations_raised_total"),
	    2);
	assert_int_equal(post_window(tc, "g", 200), 21);
	fa_close(&fa);
}

/* An absurd generation (2^60) is not taken: the counter stays usable. */
static void
test_agent_absurd(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa;

	hello_applied(tc, &fa, "absurd", "h", 1ULL << 60);
	assert_int_equal(tc_metric(tc, "dynprof_generations_refused_total"),
	    1);
	assert_int_equal(tc_metric(tc, "dynprof_generations_raised_total"),
	    0);
	assert_int_equal(post_window(tc, "h", 100), 1);
	fa_close(&fa);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_agent_ahead, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_agent_absurd, setup,
		    tc_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
