/*
 * The rank slot table of a segment: a slot claimed by a rank's pid, updated
 * under its own seqlock, read consistently, released, and reclaimed from
 * processes that are gone.  Like segment.c it never logs, never aborts and
 * keeps errno for the caller.
 */

#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "segment.h"

/* The bytes of a slot before its event log: its state. */
#define SEGMENT_SLOT_STATE	offsetof(struct seg_slot, log)

/* Starts an update of a slot's state fields: its sequence number goes odd. */
void
segment_slot_update_begin(struct seg_slot *slot)
{
	uint32_t	 s;

	/* A writer that died mid-update left it odd: keep it odd. */
	s = atomic_load_explicit(&slot->seq, memory_order_relaxed);
	atomic_store_explicit(&slot->seq, (s & ~1U) + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

/* Ends an update of a slot's state fields: its sequence number goes even. */
void
segment_slot_update_end(struct seg_slot *slot)
{
	uint32_t	 s;

	s = atomic_load_explicit(&slot->seq, memory_order_relaxed);
	atomic_store_explicit(&slot->seq, s + 1, memory_order_release);
}

/*
 * The pid namespace of this process: the inode of /proc/self/ns/pid, read once
 * (a process never changes its own).  Without /proc, 1: a namespace of its own
 * that matches nobody else's, so no other process's pid is judged by kill().
 */
uint64_t
segment_pidns(void)
{
	static _Atomic uint64_t	 ns;
	struct stat		 st;
	uint64_t		 v;

	if ((v = atomic_load_explicit(&ns, memory_order_relaxed)) != 0)
		return (v);
	v = stat("/proc/self/ns/pid", &st) == 0 && st.st_ino > 1 ?
	    (uint64_t)st.st_ino : 1;
	atomic_store_explicit(&ns, v, memory_order_relaxed);
	return (v);
}

/* A token for a new claim: random, or at worst hard to guess in time. */
static uint64_t
segment_slot_token(const struct seg_slot *slot)
{
	uint64_t	 t;

	if (getrandom(&t, sizeof(t), GRND_NONBLOCK) == (ssize_t)sizeof(t) &&
	    t != 0)
		return (t);
	t = (uint64_t)clock_wall_ns() ^ ((uint64_t)getpid() << 32) ^
	    (uint64_t)(uintptr_t)slot;
	t *= 0x9e3779b97f4a7c15ULL;
	return (t != 0 ? t : 1);
}

/*
 * Whether the process holding slot is known to be gone: it is in this
 * process's pid namespace (so its pid means something here) and kill() finds
 * nobody.  A claim in progress (pidns 0) or a holder in another namespace is
 * never judged dead here.
 */
int
segment_slot_dead(const struct seg_slot *slot)
{
	struct seg_slot	*s = (struct seg_slot *)slot;
	int32_t		 pid;

	pid = atomic_load_explicit(&s->pid, memory_order_acquire);
	if (pid == 0 || atomic_load_explicit(&s->pidns,
	    memory_order_acquire) != segment_pidns())
		return (0);
	return (!segment_pid_alive(pid));
}

/*
 * Initialises a slot just claimed for rank, whose output directories are under
 * root, as a new incarnation with an empty log.
 */
static void
segment_slot_reset(struct seg_slot *slot, int32_t rank, const char *root,
    const char *labels)
{
	int64_t		 now_ns;
	uint32_t	 inc;

	now_ns = clock_wall_ns();
	/* Who holds it, for whoever judges it (docs/containers.md). */
	slot->token = segment_slot_token(slot);
	atomic_store_explicit(&slot->pidns, segment_pidns(),
	    memory_order_release);
	segment_slot_update_begin(slot);
	atomic_store_explicit(&slot->step, -1, memory_order_relaxed);
	atomic_store_explicit(&slot->busy_count, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->busy_begin_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->busy_last_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->busy_avg_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->busy_max_ns, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->arrive_count, 0, memory_order_relaxed);
	slot->rank = rank;
	slot->state = SEG_RANK_ATTACHED;
	slot->window_id = 0;
	slot->last_event = 0;
	slot->start_step = 0;
	slot->stop_step = 0;
	slot->event_step = -1;
	slot->event_time_ns = 0;
	slot->attach_time_ns = now_ns;
	slot->generation = 0;
	slot->reason = 0;
	slot->rank_seq = 0;
	memset(slot->output_dir, 0, sizeof(slot->output_dir));
	memset(slot->error, 0, sizeof(slot->error));
	memset(slot->labels, 0, sizeof(slot->labels));
	/* In the same update: no reader sees the rank without its labels. */
	if (labels != NULL)
		snprintf(slot->labels, sizeof(slot->labels), "%s", labels);
	/*
	 * The root, under its own seqlock as well: the log's reader needs it
	 * even when a dead writer left the slot seqlock odd.  It belongs to the
	 * incarnation about to begin.
	 */
	inc = atomic_load_explicit(&slot->incarnation, memory_order_relaxed) + 1;
	atomic_store_explicit(&slot->root_inc, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memset(slot->output_root, 0, sizeof(slot->output_root));
	if (root != NULL)
		snprintf(slot->output_root, sizeof(slot->output_root), "%s",
		    root);
	atomic_store_explicit(&slot->root_inc, inc, memory_order_release);
	/*
	 * A new log: the head goes back to 0 before the incarnation changes, so
	 * a reader that sees the new incarnation never pairs it with the old
	 * head.  log_acked is the agent's: an old incarnation's cursor there
	 * reads as "nothing acknowledged" for the new one.
	 */
	atomic_store_explicit(&slot->log_head, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->log_lost, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->incarnation, inc, memory_order_release);
	segment_slot_update_end(slot);
}

/*
 * Claims a slot for pid (atomically) and initialises it for rank in state
 * ATTACHED, with root (NULL: "") as the root of the output directories its log
 * will hold (cut to SEG_PATH_MAX - 1 bytes) and labels (NULL: none; canonical,
 * checked by the caller, cut to SEG_LABELS_MAX - 1 bytes), all in one update
 * of the slot.  In order of preference: a free
 * slot whose event log the coordinator has committed entirely; a free slot
 * with events not yet committed (they are lost); the slot of a process that
 * is gone.  Returns the slot index or SEG_ENOSLOT.
 */
int
segment_slot_claim_labels(struct segment *seg, pid_t pid, int32_t rank,
    const char *root, const char *labels)
{
	uint32_t	 i, n = seg->nslots;
	int32_t		 expected;
	int		 pass;

	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < n; i++) {
			expected = atomic_load_explicit(&seg->slots[i].pid,
			    memory_order_relaxed);
			if (pass < 2 && expected != 0)
				continue;
			if (pass == 0 && !slotlog_settled(&seg->slots[i]))
				continue;
			if (pass == 2 && (expected == 0 ||
			    !segment_slot_dead(&seg->slots[i])))
				continue;
			if (atomic_compare_exchange_strong(&seg->slots[i].pid,
			    &expected, (int32_t)pid)) {
				segment_slot_reset(&seg->slots[i], rank, root,
				    labels);
				return ((int)i);
			}
		}
	}
	return (SEG_ENOSLOT);
}

/* segment_slot_claim_labels() for a rank without labels. */
int
segment_slot_claim(struct segment *seg, pid_t pid, int32_t rank,
    const char *root)
{
	return (segment_slot_claim_labels(seg, pid, rank, root, NULL));
}

/* Frees slot idx if pid still holds it, leaving its state GONE. */
void
segment_slot_release(struct segment *seg, int idx, pid_t pid)
{
	struct seg_slot	*slot;
	int32_t		 expected = (int32_t)pid;

	if (idx < 0 || (uint32_t)idx >= seg->nslots)
		return;
	slot = &seg->slots[idx];
	if (atomic_load_explicit(&slot->pid, memory_order_relaxed) != pid)
		return;
	segment_slot_update_begin(slot);
	slot->state = SEG_RANK_GONE;
	slot->last_pid = (int32_t)pid;
	slot->last_pidns = atomic_load_explicit(&slot->pidns,
	    memory_order_relaxed);
	atomic_store_explicit(&slot->pidns, 0, memory_order_relaxed);
	segment_slot_update_end(slot);
	atomic_compare_exchange_strong(&slot->pid, &expected, 0);
}

/*
 * Copies slot idx consistently into out: its state, up to its event log (read
 * with slotlog_read()), which stays untouched in out.  Returns SEG_OK,
 * SEG_ETORN when its rank kept updating it, or SEG_ESIZE for an index out of
 * range.
 */
int
segment_slot_read(const struct segment *seg, int idx, struct seg_slot *out)
{
	const struct seg_slot	*slot;
	const size_t		 off = offsetof(struct seg_slot, rank);
	uint32_t		 s1, s2;
	int			 i;

	if (idx < 0 || (uint32_t)idx >= seg->nslots)
		return (SEG_ESIZE);
	slot = &seg->slots[idx];
	for (i = 0; i < SEGMENT_READ_RETRIES; i++) {
		s1 = atomic_load_explicit(&slot->seq, memory_order_acquire);
		if (s1 & 1) {
			segment_cpu_relax();
			continue;
		}
		atomic_store_explicit(&out->pid, atomic_load_explicit(&slot->pid,
		    memory_order_relaxed), memory_order_relaxed);
		atomic_store_explicit(&out->step, atomic_load_explicit(
		    &slot->step, memory_order_relaxed), memory_order_relaxed);
		memcpy((char *)out + off, (const char *)slot + off,
		    SEGMENT_SLOT_STATE - off);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&slot->seq, memory_order_relaxed);
		if (s1 == s2) {
			atomic_store_explicit(&out->seq, s1,
			    memory_order_relaxed);
			out->output_dir[sizeof(out->output_dir) - 1] = '\0';
			out->error[sizeof(out->error) - 1] = '\0';
			out->labels[sizeof(out->labels) - 1] = '\0';
			out->output_root[sizeof(out->output_root) - 1] = '\0';
			return (SEG_OK);
		}
		segment_cpu_relax();
	}
	return (SEG_ETORN);
}

/*
 * Copies the output root of incarnation inc of the slot into out (len bytes,
 * NUL-terminated, cut if longer).  It is read under its own seqlock (root_inc),
 * never the slot's, so a writer that died mid-update does not hide it.
 * Returns 0, or -1 when the slot holds another incarnation's root or is being
 * claimed again (its log is then not inc's either).
 */
int
segment_slot_root(const struct seg_slot *slot, uint32_t inc, char *out,
    size_t len)
{
	struct seg_slot	*s = (struct seg_slot *)slot;
	size_t		 n;

	if (len == 0)
		return (-1);
	out[0] = '\0';
	if (inc == 0 || atomic_load_explicit(&s->root_inc,
	    memory_order_acquire) != inc)
		return (-1);
	n = len < sizeof(s->output_root) ? len : sizeof(s->output_root);
	memcpy(out, s->output_root, n);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&s->root_inc, memory_order_relaxed) != inc) {
		out[0] = '\0';
		return (-1);
	}
	out[n - 1] = '\0';
	return (0);
}

/*
 * Frees the slots of processes that are gone.  For each, the caller's process
 * holds the slot (its pid in place of the dead one, so that no rank claims it
 * meanwhile) while cb (if not NULL) runs with a copy of the slot's state and its
 * index: cb may read the slot's log and append to it for the dead writer.  Then
 * the slot is left free in state GONE, like a slot its rank released.  Whether
 * a holder is gone is segment_slot_dead()'s answer.  Returns the number of
 * slots freed.
 */
int
segment_reclaim_dead(struct segment *seg, void (*cb)(const struct seg_slot *,
    int, void *), void *arg)
{
	return (segment_reclaim_judged(seg, NULL, cb, arg));
}

/*
 * segment_reclaim_dead(), where dead (if not NULL) says whether the holder of
 * the slot (with its index and arg) is gone: the agent knows more than pids
 * (docs/containers.md).
 */
int
segment_reclaim_judged(struct segment *seg, int (*dead)(const struct seg_slot *,
    int, void *), void (*cb)(const struct seg_slot *, int, void *), void *arg)
{
	struct seg_slot	*copy = NULL, *slot;
	uint32_t	 i;
	uint64_t	 ns, own = segment_pidns();
	int32_t		 pid, self = (int32_t)getpid(), held;
	int		 n = 0;

	for (i = 0; i < seg->nslots; i++) {
		slot = &seg->slots[i];
		pid = atomic_load_explicit(&slot->pid, memory_order_acquire);
		ns = atomic_load_explicit(&slot->pidns, memory_order_acquire);
		if (pid == 0 || ns == 0 || (pid == self && ns == own))
			continue;
		if (dead != NULL ? !dead(slot, (int)i, arg) :
		    !segment_slot_dead(slot))
			continue;
		/* Found one: the copy (a whole slot, log included) is needed. */
		if (copy == NULL && (copy = malloc(sizeof(*copy))) == NULL)
			break;
		held = pid;
		if (!atomic_compare_exchange_strong(&slot->pid, &held, self))
			continue;
		/* Ours now, in our namespace, as a rank would see it. */
		atomic_store_explicit(&slot->pidns, own, memory_order_release);
		/*
		 * Nobody writes a dead process's slot: a plain copy is
		 * consistent, even if it died in the middle of an update.
		 */
		memcpy(copy, slot, SEGMENT_SLOT_STATE);
		atomic_store_explicit(&copy->pid, pid, memory_order_relaxed);
		atomic_store_explicit(&copy->pidns, ns, memory_order_relaxed);
		copy->output_dir[sizeof(copy->output_dir) - 1] = '\0';
		copy->error[sizeof(copy->error) - 1] = '\0';
		copy->output_root[sizeof(copy->output_root) - 1] = '\0';
		if (cb != NULL)
			cb(copy, (int)i, arg);
		segment_slot_update_begin(slot);
		slot->state = SEG_RANK_GONE;
		slot->last_pid = pid;
		slot->last_pidns = ns;
		atomic_store_explicit(&slot->pidns, 0, memory_order_relaxed);
		segment_slot_update_end(slot);
		held = self;
		if (atomic_compare_exchange_strong(&slot->pid, &held, 0))
			n++;
	}
	free(copy);
	return (n);
}

/* Returns 1 if a process with this pid exists (or may: EPERM), else 0. */
int
segment_pid_alive(pid_t pid)
{
	if (pid <= 0)
		return (0);
	if (kill(pid, 0) == 0)
		return (1);
	return (errno != ESRCH);
}
