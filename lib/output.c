/*
 * Output directories: OUTPUT_ROOT[/subdir]/rank{N}_start{a}_stop{b}.  The root is
 * made absolute when the handle opens (a later chdir() changes nothing); the
 * subdirectory comes from the config and is checked to stay under the root.
 */

#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jobid.h"
#include "libdynprof.h"

/*
 * Makes root absolute (relative to the current directory) into out, without a
 * trailing slash.  Returns DYNPROF_OK, or DYNPROF_EPATH / DYNPROF_ESYS.
 */
int
output_root_resolve(const char *root, char *out, size_t len)
{
	char	 cwd[SEG_PATH_MAX];
	size_t	 n;
	int	 r;

	if (root == NULL || *root == '\0')
		return (DYNPROF_EPATH);
	if (root[0] == '/')
		r = snprintf(out, len, "%s", root);
	else {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return (errno == ERANGE ? DYNPROF_EPATH : DYNPROF_ESYS);
		while (root[0] == '.' && root[1] == '/')
			root += 2;
		if (strcmp(root, ".") == 0)
			r = snprintf(out, len, "%s", cwd);
		else
			r = snprintf(out, len, "%s/%s",
			    strcmp(cwd, "/") == 0 ? "" : cwd, root);
	}
	if (r < 0 || (size_t)r >= len)
		return (DYNPROF_EPATH);
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return (DYNPROF_OK);
}

/* Joins root, subdir (if any) and leaf into out. */
static int
output_dir_join(const char *root, const char *subdir, const char *leaf,
    char *out, size_t len)
{
	int	 r;

	if (!subdir_valid(subdir, NULL))
		return (DYNPROF_EPATH);
	if (subdir != NULL && *subdir != '\0')
		r = snprintf(out, len, "%s/%s/%s", root, subdir, leaf);
	else
		r = snprintf(out, len, "%s/%s", root, leaf);
	if (r < 0 || (size_t)r >= len)
		return (DYNPROF_EPATH);
	return (DYNPROF_OK);
}

/*
 * Builds the output directory of a window of steps for rank into out:
 * "rank<r>_start<a>_stop<b>".  subdir must pass subdir_valid().  Returns
 * DYNPROF_OK or DYNPROF_EPATH.
 */
int
output_dir_build(const char *root, const char *subdir, int32_t rank,
    int64_t start, int64_t stop, char *out, size_t len)
{
	char	 leaf[64];

	snprintf(leaf, sizeof(leaf), "rank%" PRId32 "_start%" PRId64 "_stop%"
	    PRId64, rank, start, stop);
	return (output_dir_join(root, subdir, leaf, out, len));
}

/*
 * Builds the output directory of a time window for rank into out:
 * "rank<r>_window<id>", the same on every node (the times are each node's).
 */
int
output_dir_build_window(const char *root, const char *subdir, int32_t rank,
    uint32_t id, char *out, size_t len)
{
	char	 leaf[64];

	snprintf(leaf, sizeof(leaf), "rank%" PRId32 "_window%" PRIu32, rank, id);
	return (output_dir_join(root, subdir, leaf, out, len));
}

/* Creates path and its missing parents (mkdir -p).  Returns 0, or -1 and errno. */
int
output_mkdirs(const char *path)
{
	char		 buf[SEG_PATH_MAX];
	struct stat	 st;
	char		*p, c;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	for (p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		if (p[-1] != '/') {
			c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) == -1 && errno != EEXIST)
				return (-1);
			*p = c;
		}
		if (*p == '\0')
			break;
	}
	if (stat(path, &st) == -1)
		return (-1);
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return (-1);
	}
	return (0);
}
