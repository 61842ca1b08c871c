/*
 * Limited logging (common/log.c): one source writes at most LOG_LIMIT_LINES lines
 * an interval, all sources together at most LOG_LIMIT_GLOBAL, and every line held
 * back is counted.  stderr is redirected into a file and its lines counted.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Points stderr at a new temporary file; returns the descriptor of the old one. */
static int
stderr_capture(FILE **out)
{
	int	 saved;

	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	*out = tmpfile();
	assert_non_null(*out);
	assert_true(dup2(fileno(*out), STDERR_FILENO) >= 0);
	return (saved);
}

/* Puts stderr back and returns how many lines went to the capture. */
static int
stderr_release(FILE *f, int saved)
{
	char	 line[4096];
	int	 n = 0;

	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	rewind(f);
	while (fgets(line, sizeof(line), f) != NULL)
		n++;
	fclose(f);
	return (n);
}

/* One source, many lines: LOG_LIMIT_LINES written, the rest counted. */
static void
test_one_source(void **state)
{
	struct log_limit	 ll;
	unsigned long		 before = log_limited_dropped();
	FILE			*f;
	int			 saved, i;

	(void)state;
	memset(&ll, 0, sizeof(ll));
	saved = stderr_capture(&f);
	for (i = 0; i < 1000; i++)
		log_limited(&ll, LOG_LEVEL_QUIET, "line %d from one source", i);
	assert_int_equal(stderr_release(f, saved), LOG_LIMIT_LINES);
	assert_int_equal(ll.held, 1000 - LOG_LIMIT_LINES);
	assert_int_equal(log_limited_dropped() - before, 1000 - LOG_LIMIT_LINES);
}

/* Many sources, one line each: the process's budget holds. */
static void
test_many_sources(void **state)
{
	static struct log_limit	 ll[10000];
	FILE			*f;
	int			 saved, i, n;

	(void)state;
	saved = stderr_capture(&f);
	for (i = 0; i < 10000; i++)
		log_limited(&ll[i], LOG_LEVEL_QUIET, "source %d", i);
	n = stderr_release(f, saved);
	/* The first test used LOG_LIMIT_LINES of this interval's budget. */
	assert_true(n <= LOG_LIMIT_GLOBAL);
	assert_true(n >= LOG_LIMIT_GLOBAL - LOG_LIMIT_LINES);
}

/* A level above the process's writes nothing and counts nothing. */
static void
test_level(void **state)
{
	struct log_limit	 ll;
	unsigned long		 before = log_limited_dropped();
	FILE			*f;
	int			 saved;

	(void)state;
	memset(&ll, 0, sizeof(ll));
	log_setlevel(LOG_LEVEL_INFO);
	saved = stderr_capture(&f);
	log_limited(&ll, LOG_LEVEL_DEBUG, "not shown");
	assert_int_equal(stderr_release(f, saved), 0);
	assert_int_equal(ll.held, 0);
	assert_int_equal(log_limited_dropped(), before);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_source),
		cmocka_unit_test(test_many_sources),
		cmocka_unit_test(test_level),
	};

	log_init("test_log", LOG_LEVEL_INFO);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
