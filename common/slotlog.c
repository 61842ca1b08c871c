/*
 * The event log of a rank slot (docs/events.md): a ring of SEG_LOG_ENTRIES
 * entries the rank appends to and the agent reads, and the agent's cursor of
 * what the coordinator has committed.  Appending never blocks: a full ring
 * overwrites its oldest entry and counts it lost.  Linked into libdynprof and
 * both daemons, so it never logs and never aborts.
 */

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "segment.h"

#define SLOTLOG_BODY	offsetof(struct seg_log_entry, kind)

/*
 * Appends a copy of e (its seq is ignored) to the slot's log as entry head + 1
 * and publishes it.  Only the slot's holder calls this (or the agent for a dead
 * holder).  Returns 1 when the entry overwritten was not acknowledged yet (it
 * is counted in log_lost), else 0.
 */
int
slotlog_append(struct seg_slot *slot, const struct seg_log_entry *e)
{
	struct seg_log_entry	*dst;
	uint32_t		 inc, seq, acked;
	int			 lost = 0;

	inc = atomic_load_explicit(&slot->incarnation, memory_order_relaxed);
	seq = atomic_load_explicit(&slot->log_head, memory_order_relaxed) + 1;
	acked = slotlog_acked(slot, inc);
	if (seq > SEG_LOG_ENTRIES && seq - SEG_LOG_ENTRIES > acked) {
		atomic_fetch_add_explicit(&slot->log_lost, 1,
		    memory_order_relaxed);
		lost = 1;
	}
	dst = &slot->log[seq % SEG_LOG_ENTRIES];
	/* The entry's own seqlock: 0 while its body changes. */
	atomic_store_explicit(&dst->seq, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy((char *)dst + SLOTLOG_BODY, (const char *)e + SLOTLOG_BODY,
	    sizeof(*dst) - SLOTLOG_BODY);
	dst->text[sizeof(dst->text) - 1] = '\0';
	atomic_store_explicit(&dst->seq, seq, memory_order_release);
	atomic_store_explicit(&slot->log_head, seq, memory_order_release);
	return (lost);
}

/*
 * Returns the seq of the slot's newest entry and stores the incarnation it
 * belongs to in *incp (0: the slot was never claimed).
 */
uint32_t
slotlog_head(const struct seg_slot *slot, uint32_t *incp)
{
	/* A claim resets the head before it bumps the incarnation. */
	*incp = atomic_load_explicit(&((struct seg_slot *)slot)->incarnation,
	    memory_order_acquire);
	return (atomic_load_explicit(&((struct seg_slot *)slot)->log_head,
	    memory_order_acquire));
}

/* The last seq of incarnation inc the coordinator committed (0: none). */
uint32_t
slotlog_acked(const struct seg_slot *slot, uint32_t inc)
{
	uint64_t	 cur;

	cur = atomic_load_explicit(&((struct seg_slot *)slot)->log_acked,
	    memory_order_acquire);
	if ((uint32_t)(cur >> 32) != inc)
		return (0);
	return ((uint32_t)cur);
}

/*
 * Copies entry seq of incarnation inc into out.  Returns 0, -1 when it is not
 * there (not written yet, being written, or overwritten by a newer one), or
 * -2 when the slot has been claimed again since incarnation inc.
 */
int
slotlog_read(const struct seg_slot *slot, uint32_t inc, uint32_t seq,
    struct seg_log_entry *out)
{
	struct seg_slot		*s = (struct seg_slot *)slot;
	struct seg_log_entry	*e;

	if (atomic_load_explicit(&s->incarnation, memory_order_acquire) != inc)
		return (-2);
	if (seq == 0 || seq > atomic_load_explicit(&s->log_head,
	    memory_order_acquire))
		return (-1);
	e = &s->log[seq % SEG_LOG_ENTRIES];
	if (atomic_load_explicit(&e->seq, memory_order_acquire) != seq)
		return (-1);
	memcpy((char *)out + SLOTLOG_BODY, (const char *)e + SLOTLOG_BODY,
	    sizeof(*out) - SLOTLOG_BODY);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&e->seq, memory_order_relaxed) != seq)
		return (-1);
	if (atomic_load_explicit(&s->incarnation, memory_order_relaxed) != inc)
		return (-2);
	atomic_store_explicit(&out->seq, seq, memory_order_relaxed);
	out->text[sizeof(out->text) - 1] = '\0';
	return (0);
}

/*
 * Records (the agent, its only writer) that the coordinator committed every
 * entry up to seq of incarnation inc.  An ack for an incarnation the slot no
 * longer holds, or older than the cursor, changes nothing.  Returns 1 if the
 * cursor moved, else 0.
 */
int
slotlog_ack(struct seg_slot *slot, uint32_t inc, uint32_t seq)
{
	uint64_t	 cur, want = (uint64_t)inc << 32 | seq;
	int		 i;

	for (i = 0; i < 8; i++) {
		cur = atomic_load_explicit(&slot->log_acked,
		    memory_order_relaxed);
		if (atomic_load_explicit(&slot->incarnation,
		    memory_order_acquire) != inc)
			return (0);
		if ((uint32_t)(cur >> 32) == inc && (uint32_t)cur >= seq)
			return (0);
		if (atomic_compare_exchange_strong_explicit(&slot->log_acked,
		    &cur, want, memory_order_release, memory_order_relaxed))
			return (1);
	}
	return (0);
}

/* Whether every entry the slot's log holds has been acknowledged. */
int
slotlog_settled(const struct seg_slot *slot)
{
	uint32_t	 inc, head;

	head = slotlog_head(slot, &inc);
	return (head == 0 || slotlog_acked(slot, inc) >= head);
}

/*
 * Stores output directory dir in e's text as the log keeps it: relative to
 * root, the slot's output_root (what follows "root/"; "" stays "").  Returns
 * 0, or -1 when dir is not under root or too long: then as much of it as fits
 * is stored.
 */
int
slotlog_set_dir(struct seg_log_entry *e, const char *root, const char *dir)
{
	const char	*rel = dir;
	size_t		 n = strlen(root), len;
	int		 under;

	under = strncmp(dir, root, n) == 0 && dir[n] == '/';
	if (under)
		rel = dir + n + 1;
	len = strlen(rel);
	if (len >= sizeof(e->text))
		len = sizeof(e->text) - 1;
	memcpy(e->text, rel, len);
	e->text[len] = '\0';
	return (*dir == '\0' || (under && rel[len] == '\0') ? 0 : -1);
}

/*
 * The output directory of entry e (read with slotlog_read()) into out (len
 * bytes): root "/" its text, for a started or stopped event; "" for a failed
 * one (the text is its error) or an empty text.  root is the slot's
 * output_root of e's incarnation (segment_slot_root()).  Returns 0, or -1 when
 * it did not fit (cut).
 */
int
slotlog_dir(const struct seg_log_entry *e, const char *root, char *out,
    size_t len)
{
	int	 r;

	if (len == 0)
		return (-1);
	out[0] = '\0';
	if (e->kind == SEG_EVENT_FAILED || e->text[0] == '\0')
		return (0);
	r = snprintf(out, len, "%s/%.*s", root, (int)sizeof(e->text), e->text);
	return (r < 0 || (size_t)r >= len ? -1 : 0);
}
