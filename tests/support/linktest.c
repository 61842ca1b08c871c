/* The fixture of the agent's link tests: the agent and a fake coordinator. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "linktest.h"

/*
 * Makes a zeroed fixture ready: a private directory for the agent, a listening
 * coordinator and its address, the paths of rank processes.  Returns 0 or -1.
 */
int
lt_init(struct linktest *t)
{
	if (ap_setup(&t->ap) == -1 || fc_listen(&t->fc) == -1)
		return (-1);
	snprintf(t->coord, sizeof(t->coord), "127.0.0.1:%d", t->fc.port);
	snprintf(t->ranklog, sizeof(t->ranklog), "%s/rank.log", t->ap.dir);
	snprintf(t->out, sizeof(t->out), "%s/out", t->ap.dir);
	snprintf(t->rankbin, sizeof(t->rankbin), "%s/tests/rankproc",
	    ap_build_dir());
	return (0);
}

/* Stops the agent and its children, closes the coordinator, cleans up. */
void
lt_cleanup(struct linktest *t)
{
	ap_cleanup(&t->ap);
	fc_close(&t->fc);
}

/* Points the ranks this process starts (DYNPROF_OUTPUT_ROOT) at t->out. */
void
lt_ranks(struct linktest *t)
{
	setenv("DYNPROF_OUTPUT_ROOT", t->out, 1);
}

/* A cmocka setup: a struct linktest made ready by lt_init(). */
int
lt_setup(void **state)
{
	struct linktest	*t = calloc(1, sizeof(*t));

	if (t == NULL || lt_init(t) == -1)
		return (-1);
	*state = t;
	return (0);
}

/* A cmocka setup for tests that start ranks: lt_setup(), then lt_ranks(). */
int
lt_setup_ranks(void **state)
{
	if (lt_setup(state) == -1)
		return (-1);
	lt_ranks(*state);
	return (0);
}

/* A cmocka teardown: lt_cleanup(), and the fixture freed. */
int
lt_teardown(void **state)
{
	lt_cleanup(*state);
	free(*state);
	return (0);
}

/*
 * Starts the agent (queue of queue_max events), accepts its stream, checks the
 * hello, welcomes it if welcome.  Returns the hello (caller frees).
 */
Dynprof__V1__AgentMessage *
lt_start_connected(struct linktest *t, const char *queue_max, int welcome)
{
	const char *extra[] = { "--coordinator", t->coord, "--node", "n1",
	    "--sample-interval", "50", "--grace", "1", "--queue-max",
	    queue_max, NULL };
	Dynprof__V1__AgentMessage *m;

	assert_int_equal(ap_start(&t->ap, extra), 0);
	assert_int_equal(fc_accept(&t->fc, LT_WAIT), 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO, LT_WAIT);
	assert_non_null(m);
	assert_int_equal(m->hello->protocol_version, 1);
	assert_string_equal(m->hello->node, "n1");
	if (welcome)
		assert_int_equal(fc_welcome(&t->fc, 60000, 0, 0), 0);
	return (m);
}

/* Reconnects after the agent dropped the stream; returns the new hello. */
Dynprof__V1__AgentMessage *
lt_reaccept(struct linktest *t, int welcome)
{
	Dynprof__V1__AgentMessage *m;

	assert_int_equal(fc_accept(&t->fc, LT_WAIT), 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO, LT_WAIT);
	assert_non_null(m);
	if (welcome)
		assert_int_equal(fc_welcome(&t->fc, 60000, 0, 0), 0);
	return (m);
}

/* Expects the agent's Applied of job at generation gen. */
void
lt_expect_applied(struct linktest *t, const char *job, uint64_t gen)
{
	Dynprof__V1__AgentMessage *m;

	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED,
	    LT_WAIT);
	assert_non_null(m);
	assert_string_equal(m->applied->job, job);
	assert_int_equal(m->applied->generation, gen);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
}
