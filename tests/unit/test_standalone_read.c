/*
 * The standalone agent's read of profiler_config.json (agent/standalone.c):
 * a file of exactly STANDALONE_FILE_MAX bytes is read whole and parsed, one
 * byte more is refused, a small file with a window is read as it is.
 */

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "log.h"

#define FILE_MAX	(1024 * 1024)	/* STANDALONE_FILE_MAX */

static char	 dir[64] = "/tmp/dpstandalone-XXXXXX", path[96];

/* Writes text padded with spaces to size bytes into path. */
static void
write_padded(const char *text, size_t size)
{
	char	*buf;
	size_t	 len = strlen(text);
	int	 fd;

	assert_true(size >= len);
	assert_non_null(buf = malloc(size));
	memcpy(buf, text, len);
	memset(buf + len, ' ', size - len);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd != -1);
	assert_int_equal(write(fd, buf, size), (ssize_t)size);
	close(fd);
	free(buf);
}

/* Parses path as the agent does; returns standalone_parse()'s result. */
static int
parse(int *has_window, int64_t *start)
{
	static struct agent		 a;
	Dynprof__V1__Window		 w = DYNPROF__V1__WINDOW__INIT;
	Dynprof__V1__ProfilerOptions	 po = DYNPROF__V1__PROFILER_OPTIONS__INIT;
	char				*fwopts = NULL;
	int				 rc;

	*has_window = 0;
	rc = standalone_parse(&a, path, &w, &po, has_window, &fwopts);
	*start = w.start_step;
	free(fwopts);
	return (rc);
}

/* The bound is FILE_MAX bytes: at it a file is read, past it refused. */
static void
test_bound(void **state)
{
	const char	*text = "{\"start_step\": 10, \"stop_step\": 12}";
	int64_t		 start;
	int		 has;

	(void)state;
	write_padded(text, strlen(text));
	assert_int_equal(parse(&has, &start), 0);
	assert_int_equal(has, 1);
	assert_int_equal(start, 10);

	write_padded(text, FILE_MAX);
	assert_int_equal(parse(&has, &start), 0);
	assert_int_equal(has, 1);
	assert_int_equal(start, 10);

	write_padded(text, FILE_MAX + 1);
	assert_int_equal(parse(&has, &start), -1);

	write_padded("{}", 3 * FILE_MAX);
	assert_int_equal(parse(&has, &start), -1);
}

/* Makes the directory the tests' file lives in. */
static int
setup(void **state)
{
	(void)state;
	log_init("test_standalone_read", LOG_LEVEL_QUIET);
	if (mkdtemp(dir) == NULL)
		return (-1);
	snprintf(path, sizeof(path), "%s/profiler_config.json", dir);
	return (0);
}

/* Removes the file and its directory. */
static int
teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	return (0);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_bound),
	};

	return (cmocka_run_group_tests(tests, setup, teardown));
}
