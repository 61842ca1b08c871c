/*
 * The clocks every part of dynprof reads: monotonic for intervals and
 * deadlines, the wall clock for what is shown or stored.  clock_gettime() of
 * both is a vDSO call on Linux, no system call: the library may read them on
 * a training step.
 */

#ifndef DYNPROF_CLOCK_H
#define DYNPROF_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* clock.c */
int64_t	 clock_mono_ms(void);
uint64_t clock_mono_ns(void);
int64_t	 clock_wall_ns(void);
void	 clock_rfc3339(int64_t, char *, size_t);

#endif /* DYNPROF_CLOCK_H */
