/*
 * Whether a live process maps a file: /proc/PID/maps of every process this one
 * may read.  Used before a segment is removed (the agent) or replaced (anyone
 * opening a stale one).  Linked into libdynprof: no logging, errno kept.
 */

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "segment.h"

/*
 * Whether one line of a maps file is a mapping of the file dev:ino.  The
 * device a maps line shows is the file's own on tmpfs and ordinary
 * filesystems; on overlay filesystems it can differ, so the inode with the
 * same path (NULL: not compared) counts too.
 */
static int
procmaps_line_matches(const char *line, dev_t dev, ino_t ino, const char *path)
{
	unsigned int		 maj, min;
	unsigned long long	 lino;
	int			 n = 0;
	const char		*name;
	size_t			 plen;

	if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &maj, &min, &lino,
	    &n) != 3 || n == 0)
		return (0);
	if ((ino_t)lino != ino || lino == 0)
		return (0);
	if (maj == major(dev) && min == minor(dev))
		return (1);
	if (path == NULL)
		return (0);
	name = line + n;
	plen = strlen(path);
	return (strncmp(name, path, plen) == 0 && (name[plen] == '\n' ||
	    name[plen] == '\0' || name[plen] == ' '));
}

/*
 * Returns 1 if a process maps the file dev:ino (at path, if not NULL), else 0;
 * this process counts only with self set.  Processes whose maps cannot be read
 * are not counted.
 */
int
procmaps_in_use(dev_t dev, ino_t ino, const char *path, int self_too)
{
	DIR		*d;
	struct dirent	*de;
	FILE		*f;
	char		 fn[320], line[4096 + 256];
	int		 used = 0, saved = errno;
	long		 self = self_too ? -1 : (long)getpid();

	if ((d = opendir("/proc")) == NULL)
		return (0);
	while (!used && (de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]) ||
		    atol(de->d_name) == self)
			continue;
		snprintf(fn, sizeof(fn), "/proc/%s/maps", de->d_name);
		if ((f = fopen(fn, "re")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL) {
			if (procmaps_line_matches(line, dev, ino, path)) {
				used = 1;
				break;
			}
		}
		fclose(f);
	}
	closedir(d);
	errno = saved;
	return (used);
}
