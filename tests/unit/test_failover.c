/*
 * The failover rule (common/failover.c) the agent and the load generator
 * share: where the next attempt goes and after how long, the leader lost
 * said in the next hellos, a follower's answer followed only to a listed
 * address, each answer counted, the backoff capped while followers answer.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "failover.h"

static struct failover_addr	 addrs[FAILOVER_ADDRS_MAX];

/* Three coordinators, f at the first, welcomed. */
static void
three(struct failover *f)
{
	const char	*why;

	assert_int_equal(failover_parse(addrs, "127.0.0.1:1,127.0.0.1:2,"
	    "[::1]:3", &why), 3);
	failover_init(f, addrs, 3);
	failover_welcomed(f);
}

/* Lists: numeric ports, at most 8, each HOST:PORT. */
static void
test_parse(void **state)
{
	const char	*why;

	(void)state;
	assert_int_equal(failover_parse(addrs, "a:1", &why), 1);
	assert_string_equal(addrs[0].host, "a");
	assert_int_equal(failover_parse(addrs, "[::1]:7,b:2", &why), 2);
	assert_string_equal(addrs[0].host, "::1");
	assert_string_equal(addrs[0].text, "[::1]:7");
	assert_int_equal(failover_parse(addrs, "a:1,b", &why), -1);
	assert_int_equal(failover_parse(addrs, "a:x", &why), -1);
	assert_int_equal(failover_parse(addrs, "1:1,2:1,3:1,4:1,5:1,6:1,7:1,"
	    "8:1,9:1", &why), -1);
}

/*
 * The leader's link ends: the next address within the spread, the lost
 * leader said until the next welcome; a follower naming the leader sends f
 * there within the follow jitter.
 */
static void
test_lost_then_follow(void **state)
{
	struct failover	 f;
	int		 d;

	(void)state;
	three(&f);
	assert_string_equal(failover_lost_leader(&f), "");
	d = failover_ended(&f, 1, 123456789);
	assert_true(d >= 0 && d <= FAILOVER_SPREAD_MS);
	assert_string_equal(failover_text(&f), "127.0.0.1:2");
	assert_string_equal(failover_lost_leader(&f), "127.0.0.1:1");
	assert_int_equal(failover_not_leader(&f, "::1:3"), FAILOVER_FOLLOW);
	d = failover_ended(&f, 0, 987654321);
	assert_true(d >= 0 && d <= FAILOVER_FOLLOW_JITTER_MS);
	assert_string_equal(failover_text(&f), "[::1]:3");
	assert_int_equal(f.not_leader, 1);
	failover_welcomed(&f);
	assert_string_equal(failover_lost_leader(&f), "");
	/* Counted per failover: the next one starts from 0. */
	failover_ended(&f, 1, 0);
	assert_int_equal(f.not_leader, 0);
	assert_string_equal(failover_text(&f), "127.0.0.1:1");
}

/* What a follower names that is not a listed address is not followed. */
static void
test_not_followed(void **state)
{
	struct failover	 f;

	(void)state;
	three(&f);
	failover_ended(&f, 1, 0);
	assert_int_equal(failover_not_leader(&f, ""), FAILOVER_NO_LEADER);
	assert_int_equal(failover_not_leader(&f, NULL), FAILOVER_NO_LEADER);
	assert_int_equal(failover_not_leader(&f, "10.0.0.1:1"),
	    FAILOVER_NOT_LISTED);
	assert_int_equal(failover_not_leader(&f, "nonsense"),
	    FAILOVER_NOT_AN_ADDRESS);
	assert_int_equal(f.not_leader, 4);
	failover_ended(&f, 0, 0);
	assert_string_equal(failover_text(&f), "[::1]:3");
}

/*
 * A round of attempts as long as the list, then an exponential backoff
 * with jitter (half to whole), at most FAILOVER_FOLLOWER_BACKOFF_MS while
 * followers answer, up to FAILOVER_BACKOFF_MAX_MS when none does.
 */
static void
test_backoff(void **state)
{
	struct failover	 f;
	int		 i, d = 0, rounds;

	(void)state;
	three(&f);
	failover_ended(&f, 1, 0);		/* attempt 1 of the round */
	d = failover_ended(&f, 0, 0);		/* 2 */
	assert_true(d <= FAILOVER_BACKOFF_MIN_MS);
	d = failover_ended(&f, 0, UINT32_MAX);	/* 3: the round is over */
	assert_true(d >= FAILOVER_BACKOFF_MIN_MS / 2 &&
	    d <= FAILOVER_BACKOFF_MIN_MS);
	for (rounds = 0; rounds < 20; rounds++)
		for (i = 0; i < 3; i++)
			d = failover_ended(&f, 0, UINT32_MAX);
	assert_true(d > FAILOVER_FOLLOWER_BACKOFF_MS &&
	    d <= FAILOVER_BACKOFF_MAX_MS);
	/* A follower answers: the next round waits at most the cap. */
	for (i = 0; i < 3; i++) {
		failover_not_leader(&f, "");
		d = failover_ended(&f, 0, UINT32_MAX);
	}
	assert_true(d <= FAILOVER_FOLLOWER_BACKOFF_MS);
}

/* One coordinator: always it, the backoff from the first loss. */
static void
test_one(void **state)
{
	struct failover	 f;
	const char	*why;
	int		 d;

	(void)state;
	assert_int_equal(failover_parse(addrs, "127.0.0.1:9", &why), 1);
	failover_init(&f, addrs, 1);
	failover_welcomed(&f);
	d = failover_ended(&f, 1, UINT32_MAX);
	assert_true(d <= FAILOVER_SPREAD_MS);
	d = failover_ended(&f, 0, UINT32_MAX);
	assert_true(d >= FAILOVER_BACKOFF_MIN_MS / 2);
	assert_string_equal(failover_text(&f), "127.0.0.1:9");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_lost_then_follow),
		cmocka_unit_test(test_not_followed),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_one),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
