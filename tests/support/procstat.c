/*
 * A process's CPU time (/proc/PID/stat) and the fields of /proc/PID/status,
 * for the benchmarks and the tests.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"

/* Returns the user + system CPU time of pid in clock ticks, or -1. */
long long
procstat_cpu_ticks(pid_t pid)
{
	char		 path[64], buf[2048], *p;
	FILE		*f;
	unsigned long	 ut, st;
	size_t		 n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return (-1);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The fields after the command name, which may hold spaces and
	 * parentheses: after ") ", state (3) ... utime 14, stime 15. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] == '\0' ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	    &ut, &st) != 2)
		return (-1);
	return ((long long)(ut + st));
}

/* Returns the user + system CPU time of pid in seconds, or -1. */
double
procstat_cpu_seconds(pid_t pid)
{
	long long	 ticks = procstat_cpu_ticks(pid);
	long		 hz = sysconf(_SC_CLK_TCK);

	if (ticks < 0)
		return (-1);
	return ((double)ticks / (double)(hz > 0 ? hz : 100));
}

/*
 * Returns a field of /proc/PID/status by its name ("VmRSS", "VmHWM" in KiB,
 * "voluntary_ctxt_switches" a count), or -1.
 */
long long
procstat_status(pid_t pid, const char *field)
{
	char		 path[64], line[256];
	FILE		*f;
	long long	 v = -1;
	size_t		 len = strlen(field);

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if ((f = fopen(path, "r")) == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, field, len) == 0 && line[len] == ':') {
			v = strtoll(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return (v);
}
