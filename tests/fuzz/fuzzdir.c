/* A private directory for a fuzz target's files, in memory when it can be. */

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzzdir.h"

/*
 * Makes a new directory named NAME.XXXXXX under /dev/shm (else $TMPDIR, else
 * /tmp) into buf.  Returns 0 or -1.
 */
int
fuzzdir_make(char *buf, size_t len, const char *name)
{
	const char	*base = "/dev/shm";
	struct stat	 st;

	if (stat(base, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    access(base, W_OK) == -1)
		base = getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp";
	if ((size_t)snprintf(buf, len, "%s/%s.XXXXXX", base, name) >= len ||
	    mkdtemp(buf) == NULL)
		return (-1);
	return (0);
}
