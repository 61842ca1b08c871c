/*
 * A rank's arrivals at its steps' communication (dynprof_mark_comm(), kept in
 * its slot's ring by lib/busy.c), read for the job's Progress: the steps not
 * sent yet, their mark times turned from the node's CLOCK_MONOTONIC (the
 * rank's, and so the agent's: one kernel) into its wall clock, which the
 * coordinator compares across nodes (server/arrive.c).  The ring is the
 * rank's to write: a mark before the clock's start or after the read is no
 * mark of this clock, and is left out (turned, it could overflow).
 */

#include <stdlib.h>
#include <time.h>

#include "parts.h"

/* CLOCK_REALTIME - CLOCK_MONOTONIC, now, in ns; *mono: CLOCK_MONOTONIC. */
static int64_t
arrive_wall_offset_ns(int64_t *mono)
{
	struct timespec	 rt, mt;

	clock_gettime(CLOCK_MONOTONIC, &mt);
	clock_gettime(CLOCK_REALTIME, &rt);
	*mono = (int64_t)mt.tv_sec * 1000000000 + mt.tv_nsec;
	return (((int64_t)rt.tv_sec - (int64_t)mt.tv_sec) * 1000000000 +
	    (rt.tv_nsec - mt.tv_nsec));
}

/* Orders arrivals (pairs of int64: step, time) by step. */
static int
arrive_cmp(const void *a, const void *b)
{
	const int64_t	*x = a, *y = b;

	return (x[0] < y[0] ? -1 : x[0] > y[0]);
}

/*
 * Reads the arrivals of slot idx of j that were not sent yet: at most
 * SEG_ARRIVE_ENTRIES steps into steps[] and their wall-clock times in us into
 * us[], oldest first, and notes them sent.  A torn entry (being written) is
 * left for the next read.  Returns how many.
 */
size_t
arrive_read(struct agent_job *j, int idx, int64_t *steps, int64_t *us)
{
	struct seg_slot	*s = &j->seg.slots[idx];
	struct seg_arrival *e;
	int64_t		 pair[SEG_ARRIVE_ENTRIES][2], step, again, t, off, mono;
	uint64_t	 count;
	uint32_t	 inc;
	size_t		 i, k, n = 0;

	inc = atomic_load_explicit(&s->incarnation, memory_order_acquire);
	if (j->arrive_inc[idx] != inc) {
		j->arrive_inc[idx] = inc;
		j->arrive_sent[idx] = -1;
	}
	count = atomic_load_explicit(&s->arrive_count, memory_order_acquire);
	if (count == 0)
		return (0);
	for (i = 0; i < SEG_ARRIVE_ENTRIES && i < count; i++) {
		e = &s->arrive[i];
		step = atomic_load_explicit(&e->step, memory_order_acquire);
		t = atomic_load_explicit(&e->mark_ns, memory_order_relaxed);
		atomic_thread_fence(memory_order_acquire);
		again = atomic_load_explicit(&e->step, memory_order_relaxed);
		if (step < 0 || step != again)
			continue;
		pair[n][0] = step;
		pair[n++][1] = t;
	}
	/* Read after the marks: none may be later. */
	off = arrive_wall_offset_ns(&mono);
	for (i = 0, k = 0; i < n; i++)
		if (pair[i][1] >= 0 && pair[i][1] <= mono) {
			pair[k][0] = pair[i][0];
			pair[k++][1] = pair[i][1];
		}
	if ((n = k) == 0)
		return (0);
	qsort(pair, n, sizeof(pair[0]), arrive_cmp);
	/* The rank's steps went back (it loaded a checkpoint): start over. */
	if (pair[n - 1][0] < j->arrive_sent[idx])
		j->arrive_sent[idx] = -1;
	for (i = 0, count = 0; i < n; i++) {
		if (pair[i][0] <= j->arrive_sent[idx])
			continue;
		steps[count] = pair[i][0];
		us[count++] = (pair[i][1] + off) / 1000;
	}
	if (count > 0)
		j->arrive_sent[idx] = steps[count - 1];
	return ((size_t)count);
}
