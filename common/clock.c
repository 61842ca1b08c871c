/* The monotonic and the wall clock, in the units dynprof counts in. */

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
