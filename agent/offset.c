/*
 * The node's clock against the coordinator's: every Heartbeat the coordinator
 * sends carries its wall clock; receive time (ours) - send time (its) is our
 * offset plus the one-way delay, and the lowest of the last OFFSET_KEEP is the
 * offset plus the smallest delay (under a millisecond on one network).  The
 * estimate is said in our own Heartbeats (upstream.c), and turns a time window's
 * times, on the coordinator's clock, into this node's (apply_clock()).
 *
 * --test-clock-offset NS makes this agent's wall clock read NS ahead, for the
 * tests of two "nodes" whose clocks differ on one machine: every time the agent
 * reads the wall clock for the offset or a window goes through offset_wall_ns().
 * It never changes the machine's clock.
 */

#include <time.h>

#include "parts.h"
#include "clock.h"

/* A heartbeat's time further than this from ours is not believed. */
#define OFFSET_FAR_NS		(86400LL * 1000000000)
/* A change of the estimate said at once, not at the next heartbeat. */
#define OFFSET_NEWS_NS		1000000

/* The agent's wall clock: the machine's, moved by --test-clock-offset. */
int64_t
offset_wall_ns(const struct agent *a)
{
	return (clock_wall_ns() + a->opts.test_clock_offset_ns);
}

/* Forgets the estimate: a new coordinator, whose clock may differ. */
void
offset_reset(struct agent *a)
{
	struct agent_offset	*o = &a->offset;

	o->n = 0;
	o->head = 0;
	o->known = 0;
}

/*
 * Takes the coordinator's wall clock sent_ns from a Heartbeat received now.
 * Returns 1 when the estimate is news to the coordinator (first known, or
 * moved by more than OFFSET_NEWS_NS since it was last said), else 0.
 */
int
offset_note(struct agent *a, int64_t sent_ns)
{
	struct agent_offset	*o = &a->offset;
	int64_t			 now = offset_wall_ns(a), min;
	uint32_t		 i;

	if (sent_ns <= 0 || now - sent_ns > OFFSET_FAR_NS ||
	    sent_ns - now > OFFSET_FAR_NS)
		return (0);
	o->d[o->head] = now - sent_ns;
	o->head = (o->head + 1) % OFFSET_KEEP;
	if (o->n < OFFSET_KEEP)
		o->n++;
	for (i = 1, min = o->d[0]; i < o->n; i++)
		if (o->d[i] < min)
			min = o->d[i];
	o->offset_ns = min;
	if (o->known && (o->said_ns - min < OFFSET_NEWS_NS &&
	    min - o->said_ns < OFFSET_NEWS_NS))
		return (0);
	if (!o->known)
		log_info("clock offset to the coordinator: %lld us",
		    (long long)(min / 1000));
	o->known = 1;
	return (1);
}

/* Records that the estimate was said to the coordinator. */
void
offset_said(struct agent *a)
{
	a->offset.said_ns = a->offset.offset_ns;
}
