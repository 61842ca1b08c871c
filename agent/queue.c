/*
 * Rank events kept until the coordinator says they are committed: a FIFO ordered
 * by seq, bounded (--queue-max), dropping the oldest on overflow.  The ring grows
 * by doubling up to the bound, so an agent that never queues much stays small.
 */

#include <stdlib.h>
#include <string.h>

#include "parts.h"

/* Makes an empty queue holding at most max entries (at least one). */
void
queue_init(struct queue *q, size_t max)
{
	memset(q, 0, sizeof(*q));
	q->max = max > 0 ? max : 1;
}

/* Frees every entry and the ring. */
void
queue_clear(struct queue *q)
{
	size_t	 i;

	for (i = 0; i < q->len; i++)
		free(q->ring[(q->head + i) % q->cap].buf);
	free(q->ring);
	q->ring = NULL;
	q->cap = q->head = q->len = 0;
}

/* Frees the oldest entry. */
static void
queue_pop(struct queue *q)
{
	free(q->ring[q->head].buf);
	q->ring[q->head].buf = NULL;
	q->head = (q->head + 1) % q->cap;
	q->len--;
}

/* Doubles the ring, up to the bound.  Returns 0 or -1. */
static int
queue_grow(struct queue *q)
{
	struct queue_entry	*ring;
	size_t			 cap, i;

	cap = q->cap == 0 ? 16 : q->cap * 2;
	if (cap > q->max)
		cap = q->max;
	ring = calloc(cap, sizeof(*ring));
	if (ring == NULL)
		return (-1);
	for (i = 0; i < q->len; i++)
		ring[i] = q->ring[(q->head + i) % q->cap];
	free(q->ring);
	q->ring = ring;
	q->cap = cap;
	q->head = 0;
	return (0);
}

/*
 * Appends a copy of len bytes as event seq, read from origin (NULL: from no
 * slot's log).  When the queue is full the oldest entry goes and q->dropped
 * counts it.  Returns 0, 1 if one was dropped, or -1 when out of memory (the
 * new event is lost, and counted).
 */
int
queue_push(struct queue *q, uint64_t seq, const uint8_t *buf, size_t len,
    const struct queue_origin *origin)
{
	struct queue_entry	*e;
	uint8_t			*copy;
	int			 dropped = 0;

	if (q->len >= q->max) {
		/* Full, or the bound shrank on a reload. */
		while (q->len >= q->max) {
			queue_pop(q);
			q->dropped++;
		}
		dropped = 1;
	} else if (q->len == q->cap && queue_grow(q) == -1) {
		q->dropped++;
		return (-1);
	}
	copy = malloc(len > 0 ? len : 1);
	if (copy == NULL) {
		q->dropped++;
		return (-1);
	}
	if (len > 0)
		memcpy(copy, buf, len);
	e = &q->ring[(q->head + q->len) % q->cap];
	e->seq = seq;
	e->buf = copy;
	e->len = len;
	if (origin != NULL)
		e->origin = *origin;
	else {
		memset(&e->origin, 0, sizeof(e->origin));
		e->origin.slot = QUEUE_ORIGIN_NONE;
	}
	q->len++;
	return (dropped);
}

/* Forgets every entry up to and including seq (cumulative ack). */
void
queue_ack(struct queue *q, uint64_t seq)
{
	while (q->len > 0 && q->ring[q->head].seq <= seq)
		queue_pop(q);
}

/* How many entries wait. */
size_t
queue_length(const struct queue *q)
{
	return (q->len);
}

/* The i-th oldest entry, or NULL. */
const struct queue_entry *
queue_at(const struct queue *q, size_t i)
{
	if (i >= q->len)
		return (NULL);
	return (&q->ring[(q->head + i) % q->cap]);
}
