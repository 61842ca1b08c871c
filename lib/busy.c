/*
 * Busy time: how long a rank computes in a step before it enters the step's
 * communication (dynprof_mark_comm()), kept in its slot as a few counters the
 * agent samples.  The rest of the step is waiting for the other ranks, which
 * synchronous training makes equal for all: the busy time is what tells the
 * rank that holds the others back.
 *
 * A mark costs one clock read (CLOCK_MONOTONIC, through the vDSO: no system
 * call) and a few stores into the rank's own slot.  Once a rank has marked,
 * every step_begin reads the clock too (the beginning of the busy time); a
 * rank that never marks pays nothing.  Only the first mark of a step counts:
 * a hook called per gradient bucket marks the first one.
 *
 * The mark's time itself (the rank's arrival at the step's communication) is
 * kept too, in the slot's ring of SEG_ARRIVE_ENTRIES, for the steps that are
 * multiples of a power of two: the coordinator compares the ranks' arrivals
 * at the same step to find the one that arrives last (server/arrive.c).  The
 * agent reads the ring every sample, so the stride grows while the ring holds
 * less than ARRIVE_SPAN_MIN_NS of steps (a fast job) and shrinks while it
 * holds more than ARRIVE_SPAN_MAX_NS; strides of powers of two nest, so ranks
 * that chose different ones still keep the steps of the larger.
 */

#include <time.h>

#include "libdynprof.h"

/* The weight of a new busy time in the moving average: 1/2^BUSY_AVG_SHIFT. */
#define BUSY_AVG_SHIFT		3	/* 1/8 */
/* The recent maximum loses 1/2^BUSY_MAX_DECAY of itself at every mark. */
#define BUSY_MAX_DECAY		4	/* 1/16 */
/* The arrivals in the ring span this much time at least, at most. */
#define ARRIVE_SPAN_MIN_NS	2000000000LL
#define ARRIVE_SPAN_MAX_NS	16000000000LL
/* The stride is at most 2^ARRIVE_SHIFT_MAX steps. */
#define ARRIVE_SHIFT_MAX	20

/*
 * Keeps the rank's arrival at step's communication (now) in the slot's ring,
 * if the step is one of the stride's.
 */
static void
busy_arrive(struct dynprof *h, struct seg_slot *s, int64_t step, int64_t now)
{
	struct seg_arrival	*e;
	uint64_t		 n;
	int64_t			 old;

	if (step < 0 || (step & ((INT64_C(1) << h->arrive_shift) - 1)) != 0)
		return;
	n = atomic_load_explicit(&s->arrive_count, memory_order_relaxed);
	e = &s->arrive[n % SEG_ARRIVE_ENTRIES];
	/* The ring is judged once it holds only arrivals of the stride: else
	 * the older ones, closer together, grow it again at every arrival. */
	if (n >= SEG_ARRIVE_ENTRIES && (n < h->arrive_turn ||
	    n - h->arrive_turn >= SEG_ARRIVE_ENTRIES)) {
		old = atomic_load_explicit(&e->mark_ns, memory_order_relaxed);
		if (now - old < ARRIVE_SPAN_MIN_NS &&
		    h->arrive_shift < ARRIVE_SHIFT_MAX) {
			h->arrive_shift++;
			h->arrive_turn = n;
		} else if (now - old > ARRIVE_SPAN_MAX_NS &&
		    h->arrive_shift > 0) {
			h->arrive_shift--;
			h->arrive_turn = n;
		}
	}
	atomic_store_explicit(&e->step, -1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->mark_ns, now, memory_order_relaxed);
	atomic_store_explicit(&e->step, step, memory_order_release);
	atomic_store_explicit(&s->arrive_count, n + 1, memory_order_release);
}

/* The slot moved (claimed again): the begin time is written to the new one. */
void
busy_slot_moved(struct dynprof *h)
{
	if (h->busy_begin != NULL)
		h->busy_begin = &h->slot->busy_begin_ns;
}

/* Stores the beginning of a step into the slot (the slow path of a step). */
void
busy_begin_slow(struct dynprof *h)
{
	if (h->busy_begin != NULL)
		atomic_store_explicit(h->busy_begin, busy_now_ns(),
		    memory_order_relaxed);
}

/* Marks the rank's entry into the step's communication. */
DYNPROF_API int
dynprof_mark_comm(dynprof_t *h)
{
	struct seg_slot	*s;
	int64_t		 now, begin, busy, avg, max;
	uint64_t	 n;

	if (h == NULL || h->closed)
		return (DYNPROF_EINVAL);
	now = busy_now_ns();
	if (__builtin_expect(h->busy_begin == NULL, 0)) {
		/* The first mark: steps are timed from the next one on. */
		h->busy_begin = &h->slot->busy_begin_ns;
		h->mark_ns = now;
		return (DYNPROF_OK);
	}
	begin = atomic_load_explicit(h->busy_begin, memory_order_relaxed);
	/* Marked already in this step, or a step begun without the time. */
	if (begin <= h->mark_ns || begin > now)
		return (DYNPROF_OK);
	h->mark_ns = now;
	busy = now - begin;
	s = h->slot;
	n = atomic_load_explicit(&s->busy_count, memory_order_relaxed);
	avg = atomic_load_explicit(&s->busy_avg_ns, memory_order_relaxed);
	max = atomic_load_explicit(&s->busy_max_ns, memory_order_relaxed);
	if (n == 0)
		avg = busy;
	else
		avg += (busy - avg) / (1 << BUSY_AVG_SHIFT);
	max -= max >> BUSY_MAX_DECAY;
	if (busy > max)
		max = busy;
	atomic_store_explicit(&s->busy_last_ns, busy, memory_order_relaxed);
	atomic_store_explicit(&s->busy_avg_ns, avg, memory_order_relaxed);
	atomic_store_explicit(&s->busy_max_ns, max, memory_order_relaxed);
	atomic_store_explicit(&s->busy_count, n + 1, memory_order_release);
	busy_arrive(h, s, atomic_load_explicit(h->step_addr,
	    memory_order_relaxed), now);
	return (DYNPROF_OK);
}

/* The address of the step's begin time for bindings that step themselves. */
DYNPROF_API uintptr_t
dynprof_get_busy_begin_addr(const dynprof_t *h)
{
	if (h == NULL || h->closed || h->busy_begin == NULL)
		return (0);
	return ((uintptr_t)h->busy_begin);
}
