/*
 * Output directories (lib/output.c): the root made absolute from any current
 * directory, a window's directory built under it with or without a
 * subdirectory, every too-long or unsafe path refused, and mkdir -p.
 */

#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libdynprof.h"

struct fixture {
	char	 dir[PATH_MAX];		/* a fresh directory, the cwd */
	char	 cwd[PATH_MAX];		/* the cwd before */
};

/* Makes a fresh directory under $TMPDIR or /tmp and enters it. */
static int
setup(void **state)
{
	struct fixture	*fx;
	const char	*base = getenv("TMPDIR");

	if ((fx = calloc(1, sizeof(*fx))) == NULL)
		return (-1);
	if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(fx->dir, sizeof(fx->dir), "%s/dynprof-output-XXXXXX", base);
	if (mkdtemp(fx->dir) == NULL || getcwd(fx->cwd, sizeof(fx->cwd)) == NULL ||
	    chdir(fx->dir) == -1) {
		free(fx);
		return (-1);
	}
	/* The directory as getcwd() names it (TMPDIR may be a symlink). */
	if (getcwd(fx->dir, sizeof(fx->dir)) == NULL) {
		free(fx);
		return (-1);
	}
	*state = fx;
	return (0);
}

/* Removes one entry of the tree nftw() walks, depth first. */
static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return (remove(path));
}

/* Leaves the directory and removes it with everything in it. */
static int
teardown(void **state)
{
	struct fixture	*fx = *state;
	int		 rc;

	rc = chdir(fx->cwd);
	rc |= nftw(fx->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx);
	return (rc);
}

/* Asserts that root resolves to want. */
static void
assert_root(const char *root, const char *want)
{
	char	 out[SEG_PATH_MAX];

	assert_int_equal(output_root_resolve(root, out, sizeof(out)), DYNPROF_OK);
	assert_string_equal(out, want);
}

/* Absolute roots stay as they are, less trailing slashes. */
static void
test_root_absolute(void **state)
{
	(void)state;
	assert_root("/data/prof", "/data/prof");
	assert_root("/data/prof/", "/data/prof");
	assert_root("/data/prof///", "/data/prof");
	assert_root("/", "/");
	assert_root("//", "/");
	assert_root("/a/./b", "/a/./b");
}

/* Relative roots are under the current directory, "./" prefixes dropped. */
static void
test_root_relative(void **state)
{
	struct fixture	*fx = *state;
	char		 want[PATH_MAX + 16];

	assert_root(".", fx->dir);
	snprintf(want, sizeof(want), "%s/prof", fx->dir);
	assert_root("prof", want);
	assert_root("./prof", want);
	assert_root("././prof/", want);
	snprintf(want, sizeof(want), "%s/a/b", fx->dir);
	assert_root("a/b//", want);
	snprintf(want, sizeof(want), "%s/../x", fx->dir);
	assert_root("../x", want);
	/* From / itself: no doubled slash. */
	assert_int_equal(chdir("/"), 0);
	assert_root("prof", "/prof");
	assert_root(".", "/");
	assert_int_equal(chdir(fx->dir), 0);
}

/* Empty roots and roots that do not fit are refused. */
static void
test_root_refused(void **state)
{
	struct fixture	*fx = *state;
	char		 out[SEG_PATH_MAX], longroot[SEG_PATH_MAX + 8];
	size_t		 n = strlen(fx->dir);

	assert_int_equal(output_root_resolve(NULL, out, sizeof(out)),
	    DYNPROF_EPATH);
	assert_int_equal(output_root_resolve("", out, sizeof(out)),
	    DYNPROF_EPATH);
	memset(longroot, 'r', sizeof(longroot) - 1);
	longroot[0] = '/';
	longroot[sizeof(longroot) - 1] = '\0';
	assert_int_equal(output_root_resolve(longroot, out, sizeof(out)),
	    DYNPROF_EPATH);
	/* The limit exactly: len - 1 bytes fit, len do not. */
	longroot[sizeof(out) - 1] = '\0';
	assert_int_equal(output_root_resolve(longroot, out, sizeof(out)),
	    DYNPROF_OK);
	longroot[sizeof(out) - 1] = 'r';
	longroot[sizeof(out)] = '\0';
	assert_int_equal(output_root_resolve(longroot, out, sizeof(out)),
	    DYNPROF_EPATH);
	/* A relative root that fits alone but not under the cwd. */
	memset(longroot, 'r', sizeof(out) - n - 1);
	longroot[sizeof(out) - n - 1] = '\0';
	assert_int_equal(output_root_resolve(longroot, out, sizeof(out)),
	    DYNPROF_EPATH);
	longroot[sizeof(out) - n - 2] = '\0';
	assert_int_equal(output_root_resolve(longroot, out, sizeof(out)),
	    DYNPROF_OK);
	assert_int_equal(strlen(out), sizeof(out) - 1);
}

/* rank{N}_start{a}_stop{b} under the root, or under root/subdir. */
static void
test_dir_build(void **state)
{
	char	 out[SEG_PATH_MAX];

	(void)state;
	assert_int_equal(output_dir_build("/p", "", 3, 10, 14, out, sizeof(out)),
	    DYNPROF_OK);
	assert_string_equal(out, "/p/rank3_start10_stop14");
	assert_int_equal(output_dir_build("/p", NULL, 0, 1, 1, out,
	    sizeof(out)), DYNPROF_OK);
	assert_string_equal(out, "/p/rank0_start1_stop1");
	assert_int_equal(output_dir_build("/p", "run/a", 7, 100, 200, out,
	    sizeof(out)), DYNPROF_OK);
	assert_string_equal(out, "/p/run/a/rank7_start100_stop200");
	assert_int_equal(output_dir_build("/p", "x", INT32_MAX, INT64_MAX - 1,
	    INT64_MAX, out, sizeof(out)), DYNPROF_OK);
	assert_string_equal(out, "/p/x/rank2147483647_start9223372036854775806"
	    "_stop9223372036854775807");
}

/* Subdirectories that leave the root, and outputs that do not fit. */
static void
test_dir_refused(void **state)
{
	char	 out[SEG_PATH_MAX], small[24];

	(void)state;
	assert_int_equal(output_dir_build("/p", "../x", 0, 1, 2, out,
	    sizeof(out)), DYNPROF_EPATH);
	assert_int_equal(output_dir_build("/p", "/abs", 0, 1, 2, out,
	    sizeof(out)), DYNPROF_EPATH);
	assert_int_equal(output_dir_build("/p", "a\\b", 0, 1, 2, out,
	    sizeof(out)), DYNPROF_EPATH);
	/* "/p/rank0_start1_stop2" is 21 bytes: 22 with its NUL fit. */
	assert_int_equal(output_dir_build("/p", "", 0, 1, 2, small, 22),
	    DYNPROF_OK);
	assert_string_equal(small, "/p/rank0_start1_stop2");
	assert_int_equal(output_dir_build("/p", "", 0, 1, 2, small, 21),
	    DYNPROF_EPATH);
	/* The subdirectory counts: "/p/s/rank0_start1_stop2" is 23 bytes. */
	assert_int_equal(output_dir_build("/p", "s", 0, 1, 2, small,
	    sizeof(small)), DYNPROF_OK);
	assert_int_equal(output_dir_build("/p", "s", 0, 1, 2, small, 23),
	    DYNPROF_EPATH);
}

/* mkdir -p: parents made, existing ones fine, a file in the way refused. */
static void
test_mkdirs(void **state)
{
	struct fixture	*fx = *state;
	char		 path[PATH_MAX + 64], longpath[SEG_PATH_MAX + 8];
	struct stat	 st;
	FILE		*f;

	snprintf(path, sizeof(path), "%s/a/b//c/", fx->dir);
	assert_int_equal(output_mkdirs(path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(output_mkdirs(path), 0);
	snprintf(path, sizeof(path), "%s/a/b/c/d", fx->dir);
	assert_int_equal(output_mkdirs(path), 0);
	assert_int_equal(stat(path, &st), 0);

	snprintf(path, sizeof(path), "%s/file", fx->dir);
	assert_non_null(f = fopen(path, "w"));
	fclose(f);
	errno = 0;
	assert_int_equal(output_mkdirs(path), -1);
	assert_int_equal(errno, ENOTDIR);
	snprintf(path, sizeof(path), "%s/file/under", fx->dir);
	errno = 0;
	assert_int_equal(output_mkdirs(path), -1);
	assert_int_equal(errno, ENOTDIR);

	memset(longpath, 'l', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	errno = 0;
	assert_int_equal(output_mkdirs(longpath), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_root_absolute, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_root_relative, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_root_refused, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_dir_build, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dir_refused, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_mkdirs, setup, teardown),
	};

	return (cmocka_run_group_tests_name("output", tests, NULL, NULL));
}
