/*
 * Job ids and output subdirectories (common/jobid.c): what is valid, what is
 * refused and why, and the length limits met exactly and passed by one.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "jobid.h"

/* Fills buf with n copies of c, NUL-terminated. */
static char *
repeat(char *buf, int c, size_t n)
{
	memset(buf, c, n);
	buf[n] = '\0';
	return (buf);
}

/* Asserts that check (jobid_valid or subdir_valid) refuses s, saying want. */
static void
assert_refused(int (*check)(const char *, const char **), const char *s,
    const char *want)
{
	const char	*why = NULL;

	assert_int_equal(check(s, &why), 0);
	assert_non_null(why);
	assert_string_equal(why, want);
}

#define assert_job_refused(s, want)	assert_refused(jobid_valid, s, want)
#define assert_subdir_refused(s, want)	assert_refused(subdir_valid, s, want)

/* Every allowed character, in ids such as schedulers hand out. */
static void
test_job_valid(void **state)
{
	const char	*why = NULL;

	(void)state;
	assert_int_equal(jobid_valid("a", &why), 1);
	assert_int_equal(jobid_valid("job-42", &why), 1);
	assert_int_equal(jobid_valid("1234567", &why), 1);
	assert_int_equal(jobid_valid("train_sim.v2", &why), 1);
	assert_int_equal(jobid_valid("ABCxyz-._09", &why), 1);
	assert_int_equal(jobid_valid("a.", &why), 1);
	assert_int_equal(jobid_valid("-", &why), 1);
	assert_null(why);
	/* why may be NULL. */
	assert_int_equal(jobid_valid("job", NULL), 1);
	assert_int_equal(jobid_valid("", NULL), 0);
}

/* Empty, a leading dot, and every kind of character outside the set. */
static void
test_job_invalid(void **state)
{
	(void)state;
	assert_job_refused(NULL, "job id is empty");
	assert_job_refused("", "job id is empty");
	assert_job_refused(".", "job id starts with '.'");
	assert_job_refused("..", "job id starts with '.'");
	assert_job_refused(".hidden", "job id starts with '.'");
	assert_job_refused("a/b", "job id has a character outside "
	    "[A-Za-z0-9._-]");
	assert_job_refused("../etc", "job id starts with '.'");
	assert_job_refused("a b", "job id has a character outside "
	    "[A-Za-z0-9._-]");
	assert_job_refused("job\n", "job id has a character outside "
	    "[A-Za-z0-9._-]");
	assert_job_refused("job:1", "job id has a character outside "
	    "[A-Za-z0-9._-]");
	assert_job_refused("j\xc3\xa9", "job id has a character outside "
	    "[A-Za-z0-9._-]");
	assert_job_refused("\x7f", "job id has a character outside "
	    "[A-Za-z0-9._-]");
}

/* JOBID_MAX characters pass; one more does not, whatever comes after it. */
static void
test_job_length(void **state)
{
	char	 buf[JOBID_MAX + 16];

	(void)state;
	assert_int_equal(JOBID_MAX, 64);
	assert_int_equal(jobid_valid(repeat(buf, 'j', JOBID_MAX - 1), NULL), 1);
	assert_int_equal(jobid_valid(repeat(buf, 'j', JOBID_MAX), NULL), 1);
	assert_job_refused(repeat(buf, 'j', JOBID_MAX + 1),
	    "job id is longer than 64 characters");
	assert_job_refused(repeat(buf, 'j', JOBID_MAX + 15),
	    "job id is longer than 64 characters");
	/* A bad character past the limit: the length is what is wrong. */
	repeat(buf, 'j', JOBID_MAX + 2);
	buf[JOBID_MAX + 1] = '/';
	assert_job_refused(buf, "job id is longer than 64 characters");
	/* A bad character within it is found first. */
	repeat(buf, 'j', JOBID_MAX + 2);
	buf[JOBID_MAX - 1] = '/';
	assert_job_refused(buf, "job id has a character outside "
	    "[A-Za-z0-9._-]");
}

/* Relative paths under the root, empty included. */
static void
test_subdir_valid(void **state)
{
	char	 buf[300];

	(void)state;
	assert_int_equal(subdir_valid(NULL, NULL), 1);
	assert_int_equal(subdir_valid("", NULL), 1);
	assert_int_equal(subdir_valid("run1", NULL), 1);
	assert_int_equal(subdir_valid("a/b/c", NULL), 1);
	assert_int_equal(subdir_valid("a//b/", NULL), 1);
	assert_int_equal(subdir_valid("...", NULL), 1);
	assert_int_equal(subdir_valid("a/..b/c..", NULL), 1);
	assert_int_equal(subdir_valid("./x", NULL), 1);
	assert_int_equal(subdir_valid("with space", NULL), 1);
	assert_int_equal(subdir_valid(repeat(buf, 's', 255), NULL), 1);
}

/* Whatever would leave the root or confuse a path. */
static void
test_subdir_invalid(void **state)
{
	char	 buf[300];

	(void)state;
	assert_subdir_refused(repeat(buf, 's', 256),
	    "output subdirectory is 256 bytes or longer");
	assert_subdir_refused("/abs", "output subdirectory is an absolute path");
	assert_subdir_refused("..", "output subdirectory has a '..' component");
	assert_subdir_refused("a/../b",
	    "output subdirectory has a '..' component");
	assert_subdir_refused("a/..", "output subdirectory has a '..' component");
	assert_subdir_refused("a//../b",
	    "output subdirectory has a '..' component");
	assert_subdir_refused("a\\b",
	    "output subdirectory has a control character or backslash");
	assert_subdir_refused("a\tb",
	    "output subdirectory has a control character or backslash");
	assert_subdir_refused("a\x7f",
	    "output subdirectory has a control character or backslash");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_job_valid),
		cmocka_unit_test(test_job_invalid),
		cmocka_unit_test(test_job_length),
		cmocka_unit_test(test_subdir_valid),
		cmocka_unit_test(test_subdir_invalid),
	};

	return (cmocka_run_group_tests_name("jobid", tests, NULL, NULL));
}
