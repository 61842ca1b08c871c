/*
 * Rank lists (common/ranklist.c): every rank, single ranks and ranges, spaces,
 * the int32 bound, the number of ranges, duplicates and overlaps, and the
 * garbage that is refused with its reason.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ranklist.h"

/* Asserts that s parses into the n ranges of lo-hi pairs in want. */
static void
assert_parsed(const char *s, const int32_t *want, int n)
{
	struct rank_set	 set;
	const char	*why = NULL;
	int		 i;

	assert_int_equal(ranks_parse(s, &set, &why), 0);
	assert_null(why);
	assert_int_equal(set.nranges, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(set.ranges[i].lo, want[2 * i]);
		assert_int_equal(set.ranges[i].hi, want[2 * i + 1]);
	}
}

/* Asserts that s is refused with the reason want. */
static void
assert_refused(const char *s, const char *want)
{
	struct rank_set	 set;
	const char	*why = NULL;

	assert_int_equal(ranks_parse(s, &set, &why), -1);
	assert_non_null(why);
	assert_string_equal(why, want);
}

/* "", "all" and NULL: an empty set, which holds every rank. */
static void
test_every_rank(void **state)
{
	struct rank_set	 set;

	(void)state;
	assert_parsed("", NULL, 0);
	assert_parsed("all", NULL, 0);
	assert_int_equal(ranks_parse(NULL, &set, NULL), 0);
	assert_int_equal(set.nranges, 0);
	assert_int_equal(ranks_contains(&set, 0), 1);
	assert_int_equal(ranks_contains(&set, INT32_MAX), 1);
	assert_int_equal(ranks_contains(&set, -1), 1);
}

/* Ranks and ranges, with spaces around the numbers. */
static void
test_ranges(void **state)
{
	static const int32_t	 a[] = { 0, 7, 16, 16 };
	static const int32_t	 b[] = { 3, 3 };
	static const int32_t	 c[] = { 1, 2, 5, 9, 11, 11 };
	struct rank_set		 set;
	int32_t			 r;

	(void)state;
	assert_parsed("0-7,16", a, 2);
	assert_parsed(" 0 - 7 , 16", a, 2);
	assert_parsed("3", b, 1);
	assert_parsed("3-3", b, 1);
	assert_parsed("1-2,5-9,11", c, 3);
	assert_int_equal(ranks_parse("0-7,16", &set, NULL), 0);
	for (r = 0; r <= 7; r++)
		assert_int_equal(ranks_contains(&set, r), 1);
	for (r = 8; r <= 15; r++)
		assert_int_equal(ranks_contains(&set, r), 0);
	assert_int_equal(ranks_contains(&set, 16), 1);
	assert_int_equal(ranks_contains(&set, 17), 0);
	assert_int_equal(ranks_contains(&set, -1), 0);
}

/* The largest int32 is a rank; one more, or many more digits, is not. */
static void
test_overflow(void **state)
{
	static const int32_t	 max[] = { INT32_MAX, INT32_MAX };
	static const int32_t	 up[] = { 0, INT32_MAX };
	struct rank_set		 set;

	(void)state;
	assert_parsed("2147483647", max, 1);
	assert_parsed("0-2147483647", up, 1);
	assert_parsed("002147483647", max, 1);
	assert_refused("2147483648",
	    "ranks: a rank number out of range (0 to 2147483647)");
	assert_refused("0-2147483648",
	    "ranks: a rank number out of range (0 to 2147483647)");
	assert_refused("99999999999999999999999",
	    "ranks: a rank number out of range (0 to 2147483647)");
	assert_int_equal(ranks_parse("0-2147483647", &set, NULL), 0);
	assert_int_equal(ranks_contains(&set, INT32_MAX), 1);
}

/* RANKS_MAX_RANGES ranges fit; one more does not. */
static void
test_too_many(void **state)
{
	char		 buf[RANKS_MAX_RANGES * 8];
	struct rank_set	 set;
	size_t		 off = 0;
	int		 i;

	(void)state;
	for (i = 0; i < RANKS_MAX_RANGES; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%d",
		    i > 0 ? "," : "", 2 * i);
	assert_int_equal(ranks_parse(buf, &set, NULL), 0);
	assert_int_equal(set.nranges, RANKS_MAX_RANGES);
	assert_int_equal(ranks_contains(&set, 2 * (RANKS_MAX_RANGES - 1)), 1);
	assert_int_equal(ranks_contains(&set, 1), 0);
	snprintf(buf + off, sizeof(buf) - off, ",%d", 2 * RANKS_MAX_RANGES);
	assert_refused(buf, "ranks: more than 64 ranges");
}

/* Duplicates and overlaps are kept as written, and change nothing asked. */
static void
test_duplicates(void **state)
{
	static const int32_t	 d[] = { 1, 1, 1, 1, 0, 3, 2, 5 };
	struct rank_set		 set;

	(void)state;
	assert_parsed("1,1,0-3,2-5", d, 4);
	assert_int_equal(ranks_parse("1,1,0-3,2-5", &set, NULL), 0);
	assert_int_equal(ranks_contains(&set, 0), 1);
	assert_int_equal(ranks_contains(&set, 5), 1);
	assert_int_equal(ranks_contains(&set, 6), 0);
}

/* What is not a list, with the reason given. */
static void
test_garbage(void **state)
{
	struct rank_set	 set;

	(void)state;
	assert_refused("x", "ranks: expected a rank number");
	assert_refused("ALL", "ranks: expected a rank number");
	assert_refused("all,1", "ranks: expected a rank number");
	assert_refused("-1", "ranks: expected a rank number");
	assert_refused("+1", "ranks: expected a rank number");
	assert_refused(",", "ranks: expected a rank number");
	assert_refused("1,", "ranks: expected a rank number");
	assert_refused("1,,2", "ranks: expected a rank number");
	assert_refused(" ", "ranks: expected a rank number");
	assert_refused("1-", "ranks: expected a rank number after '-'");
	assert_refused("1-x", "ranks: expected a rank number after '-'");
	assert_refused("1--2", "ranks: expected a rank number after '-'");
	assert_refused("7-3", "ranks: range ends before it starts");
	assert_refused("1;2", "ranks: expected ',' or '-'");
	assert_refused("1 2", "ranks: expected ',' or '-'");
	assert_refused("1-2-3", "ranks: expected ',' or '-'");
	assert_refused("0x10", "ranks: expected ',' or '-'");
	assert_refused("1\t", "ranks: expected ',' or '-'");
	/* why may be NULL. */
	assert_int_equal(ranks_parse("x", &set, NULL), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_rank),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_garbage),
	};

	return (cmocka_run_group_tests_name("ranklist", tests, NULL, NULL));
}
