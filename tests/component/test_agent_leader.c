/*
 * An agent given several coordinators (--coordinator A,B,...): the real
 * dynprof-agent against fake coordinators on 127.0.0.1.  A follower's
 * ERROR_NOT_LEADER sends it to the leader it names, only if the operator
 * listed that address; an unreachable coordinator makes it try the next at
 * once; bad lists are refused at start.
 */

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "linktest.h"

/* Sends ERROR_NOT_LEADER naming leader on fc's stream, and drops it. */
static void
refuse_after_hello(struct fakecoord *fc, const char *leader)
{
	Dynprof__V1__CoordinatorMessage	 m =
	    DYNPROF__V1__COORDINATOR_MESSAGE__INIT;
	Dynprof__V1__Error		 e = DYNPROF__V1__ERROR__INIT;

	e.code = DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER;
	e.reason = (char *)"follower";
	e.leader = (char *)leader;
	m.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR;
	m.error = &e;
	assert_int_equal(fc_send(fc, &m), 0);
	fc_drop(fc);
}

/* Accepts the agent's stream on fc and answers its hello with
 * ERROR_NOT_LEADER naming leader. */
static void
refuse_not_leader(struct fakecoord *fc, const char *leader)
{
	Dynprof__V1__AgentMessage	*h;

	assert_int_equal(fc_accept(fc, LT_WAIT), 0);
	h = fc_expect(fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO, LT_WAIT);
	assert_non_null(h);
	dynprof__v1__agent_message__free_unpacked(h, NULL);
	refuse_after_hello(fc, leader);
}

/* Accepts the agent's stream on fc and welcomes it. */
static void
accept_welcome(struct fakecoord *fc)
{
	Dynprof__V1__AgentMessage	*h;

	assert_int_equal(fc_accept(fc, LT_WAIT), 0);
	h = fc_expect(fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO, LT_WAIT);
	assert_non_null(h);
	dynprof__v1__agent_message__free_unpacked(h, NULL);
	assert_int_equal(fc_welcome(fc, 1000, 0, 0), 0);
}

/* A port nothing listens on (a listener opened and closed). */
static int
dead_port(void)
{
	struct fakecoord	 fc;
	int			 port;

	assert_int_equal(fc_listen(&fc), 0);
	port = fc.port;
	fc_close(&fc);
	return (port);
}

/*
 * The first listed coordinator is a follower naming the third: the agent goes
 * straight there, skipping the second (a dead port it would try next).
 */
static void
test_follows_named_leader(void **state)
{
	struct linktest		*t = *state;
	struct fakecoord	 leader;
	char			 list[256], dead[64], laddr[64], want[128];
	const char		*extra[] = { "--coordinator", list, NULL };

	assert_int_equal(fc_listen(&leader), 0);
	snprintf(dead, sizeof(dead), "127.0.0.1:%d", dead_port());
	snprintf(laddr, sizeof(laddr), "127.0.0.1:%d", leader.port);
	snprintf(list, sizeof(list), "%s,%s,%s", t->coord, dead, laddr);
	assert_int_equal(ap_start(&t->ap, extra), 0);

	refuse_not_leader(&t->fc, laddr);
	accept_welcome(&leader);
	snprintf(want, sizeof(want), "connected to coordinator %s", laddr);
	assert_int_equal(ap_log_wait(&t->ap, want, 1, LT_WAIT), 0);
	snprintf(want, sizeof(want), "coordinator %s failed", dead);
	assert_int_equal(ap_log_count(&t->ap, want), 0);

	/* The leader goes away: the agent tries the others in turn, and the
	 * follower, now the leader, takes it. */
	fc_close(&leader);
	accept_welcome(&t->fc);
	snprintf(want, sizeof(want), "connected to coordinator %s", t->coord);
	assert_int_equal(ap_log_wait(&t->ap, want, 1, LT_WAIT), 0);
	assert_int_equal(kill(t->ap.pid, 0), 0);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
}

/*
 * A leader the operator did not list is not followed: the agent says so and
 * tries the next listed coordinator.  A follower that knows no leader sends it
 * to the next one too.
 */
static void
test_unlisted_leader_ignored(void **state)
{
	struct linktest		*t = *state;
	struct fakecoord	 other;
	char			 list[256], stranger[64], want[128];
	const char		*extra[] = { "--coordinator", list, NULL };

	assert_int_equal(fc_listen(&other), 0);
	snprintf(stranger, sizeof(stranger), "127.0.0.1:%d", dead_port());
	snprintf(list, sizeof(list), "%s,127.0.0.1:%d", t->coord, other.port);
	assert_int_equal(ap_start(&t->ap, extra), 0);

	refuse_not_leader(&t->fc, stranger);
	assert_int_equal(ap_log_wait(&t->ap, "which is not in --coordinator",
	    1, LT_WAIT), 0);
	refuse_not_leader(&other, "");
	assert_int_equal(ap_log_wait(&t->ap, "knows no leader yet", 1,
	    LT_WAIT), 0);
	accept_welcome(&t->fc);
	snprintf(want, sizeof(want), "connected to coordinator %s", t->coord);
	assert_int_equal(ap_log_wait(&t->ap, want, 1, LT_WAIT), 0);
	snprintf(want, sizeof(want), "connection to coordinator %s", stranger);
	assert_int_equal(ap_log_count(&t->ap, want), 0);
	fc_close(&other);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
}

/*
 * A follower that keeps naming a dead leader (as followers do until the dead
 * leader's lease ends): the agent backs off once per round of attempts
 * instead of bouncing between them without pause, but while followers answer
 * it asks at least every AGENT_FOLLOWER_BACKOFF_MS (0.5 s), to find the new
 * leader soon after it leads.
 */
static void
test_stale_leader_backs_off(void **state)
{
	struct linktest		*t = *state;
	Dynprof__V1__AgentMessage *h;
	char			 list[256], dead[64];
	const char		*extra[] = { "--coordinator", list, NULL };
	int64_t			 end, now, last = 0, gap = 0;
	int			 hellos = 0;

	snprintf(dead, sizeof(dead), "127.0.0.1:%d", dead_port());
	snprintf(list, sizeof(list), "%s,%s", t->coord, dead);
	assert_int_equal(ap_start(&t->ap, extra), 0);
	end = ap_now_ms() + 5000;
	while (ap_now_ms() < end) {
		if (fc_accept(&t->fc, (int)(end - ap_now_ms())) == -1)
			break;
		h = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO,
		    LT_WAIT);
		if (h == NULL)
			continue;
		dynprof__v1__agent_message__free_unpacked(h, NULL);
		now = ap_now_ms();
		if (hellos++ > 0 && now - last > gap)
			gap = now - last;
		last = now;
		refuse_after_hello(&t->fc, dead);
	}
	/* Rounds of two attempts, backing off 100, 200, 400, then 500 ms
	 * (each 50-100%): 10 to 20 hellos in 5 s, where following at once
	 * every time makes 50 or more, and no gap much over 0.5 s, where an
	 * uncapped backoff reaches 0.8, 1.6 and 3.2 s. */
	assert_true(hellos >= 8);
	assert_true(hellos <= 26);
	assert_true(gap <= 750);
	assert_int_equal(kill(t->ap.pid, 0), 0);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
}

/* An unreachable first coordinator: the second is tried at once, not after
 * a backoff. */
static void
test_next_when_unreachable(void **state)
{
	struct linktest	*t = *state;
	char		 list[256];
	const char	*extra[] = { "--coordinator", list, NULL };
	int64_t		 t0;

	snprintf(list, sizeof(list), "127.0.0.1:%d,%s", dead_port(), t->coord);
	t0 = ap_now_ms();
	assert_int_equal(ap_start(&t->ap, extra), 0);
	accept_welcome(&t->fc);
	/* One refused connect and at most the shortest backoff's jitter. */
	assert_true(ap_now_ms() - t0 < 3000);
	assert_int_equal(ap_log_wait(&t->ap, "connected to coordinator", 1,
	    LT_WAIT), 0);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
}

/* Lists that are not HOST:PORT[,...] of at most 8 are refused at start. */
static void
test_bad_lists_refused(void **state)
{
	struct linktest	*t = *state;
	static const char *const bad[] = {
		"127.0.0.1:1,", ",127.0.0.1:1", "127.0.0.1:1,host",
		"127.0.0.1:x", "a:1,b:2,c:3,d:4,e:5,f:6,g:7,h:8,i:9", ":1",
	};
	const char	*extra[] = { "--coordinator", NULL, NULL };
	size_t		 i;
	int		 n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		extra[1] = bad[i];
		n = ap_log_count(&t->ap, "--coordinator: \"");
		assert_int_equal(ap_start(&t->ap, extra), -1);
		assert_int_equal(ap_log_count(&t->ap, "--coordinator: \""),
		    n + 1);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_follows_named_leader,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_unlisted_leader_ignored,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_stale_leader_backs_off,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_next_when_unreachable,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_bad_lists_refused,
		    lt_setup, lt_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests_name("agent_leader", tests, NULL,
	    NULL));
}
