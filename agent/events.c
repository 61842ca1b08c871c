/*
 * A rank's events, read from its slot's log (docs/events.md) and forwarded
 * upstream as RankEvents: the new entries of a log, a slot's last state when
 * entries were overwritten before they were read, a dead rank's detached
 * event; and the log's cursor advanced once the coordinator commits them.
 */

#include <stdlib.h>
#include <string.h>

#include "parts.h"
#include "clock.h"
#include "labels.h"
#include "log.h"
#include "names.h"

/*
 * Copies the labels of slot (its rank's to write) into out (len bytes,
 * LABELS_MAX at least), checked: "" if they do not pass.
 */
static const char *
events_labels(const struct agent_job *j, const struct seg_slot *slot,
    char *out, size_t len)
{
	static struct log_limit	 limit;
	char			 raw[SEG_LABELS_MAX];
	const char		*why;

	memcpy(raw, slot->labels, sizeof(raw));
	raw[sizeof(raw) - 1] = '\0';
	if (labels_canon(raw, out, len, &why) == -1)
		log_limited(&limit, LOG_LEVEL_QUIET, "job %s rank %d: labels "
		    "dropped: %s", j->name, slot->rank, why);
	return (out);
}

/* Builds the RankEvent kind of slot idx of j from its last state s. */
static void
events_from_slot(Dynprof__V1__RankEvent *ev, const struct agent_job *j,
    const struct seg_slot *s, int idx, int kind)
{
	dynprof__v1__rank_event__init(ev);
	ev->kind = kind;
	ev->job = (char *)j->name;
	ev->rank = s->rank;
	ev->pid = atomic_load_explicit(&s->pid, memory_order_relaxed);
	ev->slot = (uint32_t)idx;
	ev->window_id = s->window_id;
	ev->start_step = s->start_step;
	ev->stop_step = s->stop_step;
	ev->step = s->event_step;
	ev->output_dir = (char *)s->output_dir;
	ev->reason = s->reason;
	ev->error = (char *)s->error;
	ev->generation = s->generation;
	ev->time_unix_ns = s->event_time_ns;
	ev->rank_seq = s->rank_seq;
	ev->uid = (uint32_t)jobs_rank_uid(j, idx);
	ev->uid_known = 1;
}

/*
 * Reports a slot's last state as the events that lead to it: the fallback for
 * a slot whose log lost events before they were read (docs/events.md), so that
 * the coordinator (idempotent on these) misses no final state: DONE gives
 * attached, started and stopped; PROFILING attached and started; SKIPPED and
 * FAILED attached and theirs.  A slot its rank freed while
 * no agent listened (state GONE) still holds its last window's event (the
 * library's detached event does not overwrite it): that one, what led to it,
 * and detached, at the rank's last step.
 */
static void
events_report_slot(struct agent *a, const struct agent_job *j,
    const struct seg_slot *s, int idx)
{
	Dynprof__V1__RankEvent	 ev;
	char			 labels[LABELS_MAX];
	int			 kinds[4], n = 0, i;
	uint32_t		 last = s->last_event;

	if (s->state == SEG_RANK_GONE) {
		if (last == DYNPROF__V1__EVENT_KIND__EVENT_STARTED ||
		    last == DYNPROF__V1__EVENT_KIND__EVENT_STOPPED)
			kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_STARTED;
		if (last == DYNPROF__V1__EVENT_KIND__EVENT_STOPPED ||
		    last == DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED ||
		    last == DYNPROF__V1__EVENT_KIND__EVENT_FAILED)
			kinds[n++] = (int)last;
		kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_DETACHED;
	} else {
		kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED;
		switch (s->state) {
		case SEG_RANK_PROFILING:
			kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_STARTED;
			break;
		case SEG_RANK_DONE:
			kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_STARTED;
			kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_STOPPED;
			break;
		case SEG_RANK_SKIPPED:
			kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED;
			break;
		case SEG_RANK_FAILED:
			kinds[n++] = DYNPROF__V1__EVENT_KIND__EVENT_FAILED;
			break;
		}
	}
	for (i = 0; i < n; i++) {
		events_from_slot(&ev, j, s, idx, kinds[i]);
		if (kinds[i] == DYNPROF__V1__EVENT_KIND__EVENT_STARTED &&
		    (s->state == SEG_RANK_DONE || s->state == SEG_RANK_GONE))
			ev.step = s->start_step;
		if (kinds[i] == DYNPROF__V1__EVENT_KIND__EVENT_DETACHED)
			ev.step = atomic_load_explicit(&s->step,
			    memory_order_relaxed);
		if (kinds[i] == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED ||
		    kinds[i] == DYNPROF__V1__EVENT_KIND__EVENT_DETACHED) {
			ev.window_id = 0;
			ev.start_step = ev.stop_step = 0;
			ev.output_dir = (char *)"";
			ev.reason = 0;
			ev.error = (char *)"";
		}
		if (kinds[i] == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED) {
			ev.time_unix_ns = s->attach_time_ns;
			ev.labels = (char *)events_labels(j, s, labels,
			    sizeof(labels));
		}
		upstream_event(a, &ev, NULL);
	}
}

_Static_assert(DYNPROF__V1__EVENT_KIND__EVENT_FAILED == SEG_EVENT_FAILED,
    "the log's failed kind is the proto's");

/*
 * Builds the RankEvent of entry e of the log of slot idx (rank's).  The output
 * directory of a started or stopped event is root "/" e's text, rebuilt in dir
 * (len bytes), which ev points to: the caller keeps it while ev is used.
 */
static void
events_from_entry(Dynprof__V1__RankEvent *ev, const struct agent_job *j,
    int32_t rank, int idx, const struct seg_log_entry *e, const char *root,
    char *dir, size_t len)
{
	int	 failed = e->kind == DYNPROF__V1__EVENT_KIND__EVENT_FAILED;

	dynprof__v1__rank_event__init(ev);
	ev->kind = (Dynprof__V1__EventKind)e->kind;
	ev->job = (char *)j->name;
	ev->rank = rank;
	ev->pid = e->pid;
	ev->slot = (uint32_t)idx;
	ev->window_id = e->window_id;
	ev->start_step = e->start_step;
	ev->stop_step = e->stop_step;
	ev->step = e->step;
	if (slotlog_dir(e, root, dir, len) == -1)
		log_warnx("%s: job %s slot %d: output directory %s/%s over %zu "
		    "bytes: cut", __func__, j->name, idx, root, e->text, len - 1);
	ev->output_dir = dir;
	ev->reason = (Dynprof__V1__StopReason)e->reason;
	ev->error = failed ? (char *)e->text : (char *)"";
	ev->generation = e->generation;
	ev->time_unix_ns = e->time_ns;
	ev->rank_seq = e->rank_seq;
	ev->uid = (uint32_t)jobs_rank_uid(j, idx);
	ev->uid_known = 1;
}

/* Logs a forwarded event, one line. */
static void
events_log(const Dynprof__V1__RankEvent *ev)
{
	if (ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED ||
	    ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_DETACHED)
		log_info("rank %d of job %s %s (pid %d, slot %u)", ev->rank,
		    ev->job, names_event_kind(ev->kind), ev->pid, ev->slot);
	else
		log_info("rank %d of job %s %s window %u [%lld, %lld] at step "
		    "%lld", ev->rank, ev->job, names_event_kind(ev->kind),
		    ev->window_id, (long long)ev->start_step,
		    (long long)ev->stop_step, (long long)ev->step);
}

/*
 * Events of slot idx were overwritten before this agent read them: logs it and
 * re-reports the slot's last state instead (what the coordinator already has
 * changes nothing there).
 */
static void
events_log_gap(struct agent *a, struct agent_job *j, int idx, uint32_t lost)
{
	struct seg_slot	*s;

	log_warnx("%s: job %s slot %d: %u events overwritten before they were "
	    "read (the rank counts %u): re-reporting its last state", __func__,
	    j->name, idx, lost, atomic_load_explicit(&j->seg.slots[idx].log_lost,
	    memory_order_relaxed));
	if ((s = malloc(sizeof(*s))) == NULL) {
		log_warn("%s", __func__);
		return;
	}
	if (segment_slot_read(&j->seg, idx, s) == SEG_OK)
		events_report_slot(a, j, s, idx);
	free(s);
}

/*
 * Forwards the entries of slot idx's log this agent has not queued yet: those
 * after the last one queued, or, for an incarnation of the slot not seen
 * before, after the slot's acknowledged cursor (so an agent that restarts
 * replays whatever the coordinator has not committed).  Returns the number of
 * events forwarded.
 */
int
events_read_log(struct agent *a, struct agent_job *j, int idx)
{
	struct seg_slot		*slot;
	struct seg_log_entry	 e;
	struct queue_origin	 o;
	Dynprof__V1__RankEvent	 ev;
	char			 root[SEG_PATH_MAX], dir[SEG_PATH_MAX];
	char			 labels[LABELS_MAX];
	uint32_t		 inc, head, seq, lost = 0;
	int			 n = 0, rc;

	if (idx < 0 || idx >= SEG_MAX_SLOTS || (uint32_t)idx >= j->seg.nslots)
		return (0);
	slot = &j->seg.slots[idx];
	head = slotlog_head(slot, &inc);
	if (inc == 0)
		return (0);		/* never claimed */
	if (inc != j->log_inc[idx]) {
		j->log_inc[idx] = inc;
		j->log_read[idx] = slotlog_acked(slot, inc);
	}
	if (head <= j->log_read[idx]) {
		/* A head that went back (a holder writing nonsense): follow. */
		j->log_read[idx] = head;
		return (0);
	}
	/* The root of the dirs in this incarnation's log, read once. */
	if (segment_slot_root(slot, inc, root, sizeof(root)) == -1)
		return (0);		/* being claimed again: next time */
	if (head - j->log_read[idx] > SEG_LOG_ENTRIES) {
		lost = head - j->log_read[idx] - SEG_LOG_ENTRIES;
		j->log_read[idx] = head - SEG_LOG_ENTRIES;
		events_log_gap(a, j, idx, lost);
		lost = 0;
	}
	memset(&o, 0, sizeof(o));
	strcpy(o.job, j->name);
	o.uid = j->uid;
	o.slot = idx;
	o.inc = inc;
	for (seq = j->log_read[idx] + 1; seq <= head; seq++) {
		rc = slotlog_read(slot, inc, seq, &e);
		if (rc == -2)
			break;		/* claimed again meanwhile */
		j->log_read[idx] = seq;
		if (rc == -1) {
			lost++;
			continue;
		}
		if (e.kind < DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED ||
		    e.kind > DYNPROF__V1__EVENT_KIND__EVENT_DETACHED) {
			log_warnx("%s: job %s slot %d: log entry %u has unknown "
			    "kind %u: skipped", __func__, j->name, idx, seq,
			    e.kind);
			continue;
		}
		events_from_entry(&ev, j, slot->rank, idx, &e, root,
		    dir, sizeof(dir));
		if (ev.kind == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED)
			ev.labels = (char *)events_labels(j, slot, labels,
			    sizeof(labels));
		events_log(&ev);
		o.seq = seq;
		upstream_event(a, &ev, &o);
		n++;
	}
	if (lost > 0)
		events_log_gap(a, j, idx, lost);
	return (n);
}

struct events_ack_ctx {
	struct seg_slot			*slot;
	const struct queue_origin	*o;
};

/* Advances a slot's log cursor, under the guard. */
static int
events_ack_cb(void *arg)
{
	struct events_ack_ctx	*ctx = arg;

	return (slotlog_ack(ctx->slot, ctx->o->inc, ctx->o->seq));
}

/*
 * The coordinator committed the log entry origin names: advance its cursor.
 * Returns 0, or -1 when the segment faulted (the caller drops it).
 */
int
events_log_acked(struct agent *a, const struct queue_origin *o)
{
	struct events_ack_ctx	 ctx;
	struct agent_job	*j;

	if ((j = jobs_find_uid(a, o->uid, o->job)) == NULL || o->slot < 0 ||
	    (uint32_t)o->slot >= j->seg.nslots)
		return (0);
	ctx.slot = &j->seg.slots[o->slot];
	ctx.o = o;
	return (guard_call(events_ack_cb, &ctx, NULL));
}

/*
 * Rank idx of j died (the agent holds its slot, s a copy of it, meanwhile):
 * forwards what it logged,
 * then appends its detached event to its log in its place, so that an agent
 * restarted before the coordinator commits it replays it too.
 */
void
events_rank_gone(struct agent *a, struct agent_job *j, const struct seg_slot *s,
    int idx)
{
	struct seg_slot			*slot = &j->seg.slots[idx];
	struct seg_log_entry		 e;
	Dynprof__V1__RankEvent		 ev;
	uint32_t			 inc, head;
	int32_t				 pid;

	pid = atomic_load_explicit(&s->pid, memory_order_relaxed);
	log_info("rank %d of job %s gone (pid %d, slot %d)", s->rank,
	    j->name, (int)pid, idx);
	events_read_log(a, j, idx);
	head = slotlog_head(slot, &inc);
	if (inc == 0) {
		/* No log (cannot be, with a claim): the old way. */
		events_from_slot(&ev, j, s, idx,
		    DYNPROF__V1__EVENT_KIND__EVENT_DETACHED);
		ev.step = atomic_load_explicit(&s->step, memory_order_relaxed);
		upstream_event(a, &ev, NULL);
		return;
	}
	if (head > 0 && slotlog_read(slot, inc, head, &e) == 0) {
		if (e.kind == DYNPROF__V1__EVENT_KIND__EVENT_DETACHED)
			return;		/* it said so itself */
		pid = e.pid;		/* the rank's, whoever held it last */
	}
	memset(&e, 0, sizeof(e));
	e.kind = DYNPROF__V1__EVENT_KIND__EVENT_DETACHED;
	e.step = atomic_load_explicit(&s->step, memory_order_relaxed);
	e.generation = s->generation;
	e.time_ns = clock_wall_ns();
	e.rank_seq = s->rank_seq + 1;
	e.pid = pid;
	slotlog_append(slot, &e);
	events_read_log(a, j, idx);
}

