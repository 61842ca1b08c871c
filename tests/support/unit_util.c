/*
 * Helpers of the unit tests: a private directory for a store, and its
 * removal with the files SQLite keeps in it.
 */

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit_util.h"

/* Makes a new directory under /tmp and writes its path into buf.  Returns 0
 * or -1. */
int
unit_tmpdir(char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "/tmp/dynprof-unit-XXXXXX") >= len ||
	    mkdtemp(buf) == NULL)
		return (-1);
	return (0);
}

/* Removes a store's directory: the database, its WAL and shared memory. */
void
unit_rmstore(const char *dir)
{
	static const char	*files[] = { "dynprof.db", "dynprof.db-wal",
	    "dynprof.db-shm" };
	char			 path[512];
	size_t			 i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}
