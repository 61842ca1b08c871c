/*
 * A process's CPU time and memory as /proc shows them, read once here for
 * the benchmarks and the tests.
 */

#ifndef DYNPROF_PROCSTAT_H
#define DYNPROF_PROCSTAT_H

#include <sys/types.h>

long long	 procstat_cpu_ticks(pid_t);
double		 procstat_cpu_seconds(pid_t);
long long	 procstat_status(pid_t, const char *);

#endif /* DYNPROF_PROCSTAT_H */
