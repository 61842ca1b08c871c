/* The monotonic and the wall clock, in the units dynprof counts in. */

#include <stdio.h>
#include <time.h>

#include "clock.h"

/* Returns the monotonic clock in milliseconds. */
int64_t
clock_mono_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Returns the monotonic clock in nanoseconds. */
uint64_t
clock_mono_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec);
}

/* Returns the wall clock in nanoseconds since the epoch. */
int64_t
clock_wall_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

/* Formats a wall clock time as RFC 3339 UTC with milliseconds. */
void
clock_rfc3339(int64_t ns, char *buf, size_t len)
{
	struct tm	 tm;
	time_t		 t = (time_t)(ns / 1000000000LL);
	char		 stamp[32];

	gmtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03dZ", stamp,
	    (int)((ns % 1000000000LL) / 1000000));
}
