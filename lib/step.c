/*
 * The step functions.  The hot path (nothing changed, nothing due) is a load of
 * the segment's seqlock counter, two compares and one relaxed store of the step
 * into the rank's slot (and, for a rank that marks its communication, a clock
 * read stored beside it: busy.c).  Everything else is the slow path: reload the schedule if
 * it changed, apply the window rules (window.c), run the callbacks, report.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libdynprof.h"

/* More than enough actions for one step: each window is acted on at most once. */
#define STEP_MAX_ACTIONS	(2 * SEG_MAX_WINDOWS + 4)

static void
step_public_window(const struct seg_window *w, struct dynprof_window *pw)
{
	pw->id = w->id;
	pw->start_step = w->start_step;
	pw->stop_step = w->stop_step;
}

static void
step_window_rank(const struct dynprof *h, struct window_rank *wr)
{
	wr->rank = h->rank;
	wr->active = h->active ? &h->window : NULL;
	wr->done = &h->done;
	wr->step = atomic_load_explicit(h->step_addr, memory_order_relaxed);
	wr->now_ns = h->now_ns;
	wr->period_ns = h->period_ns;
}

/* Reloads the schedule after the agent changed it. */
static void
step_reload(struct dynprof *h)
{
	struct seg_config	*tmp;
	uint32_t		 before, seq;

	before = atomic_load_explicit(h->seq_addr, memory_order_acquire);
	if (segment_read_config(&h->seg, h->cfg_next, &seq) != SEG_OK) {
		h->stats.torn_reads++;
		/*
		 * The agent is (or died) in the middle of a write: keep the old
		 * schedule, and stay on the fast path until the counter moves.
		 */
		before = atomic_load_explicit(h->seq_addr, memory_order_acquire);
		if (before & 1)
			h->seq_seen = before;
		return;
	}
	if (before != seq)
		h->stats.torn_reads++;
	window_config_sanitize(h->cfg_next);
	tmp = h->cfg;
	h->cfg = h->cfg_next;
	h->cfg_next = tmp;
	h->seq_seen = seq;
	h->stats.config_reads++;
	handle_log(h, DYNPROF_LOG_DEBUG, "%s: generation %llu, %u windows",
	    __func__, (unsigned long long)h->cfg->generation, h->cfg->nwindows);
}

/* Records that the rank is done with window id. */
static void
step_done(struct dynprof *h, uint32_t id)
{
	if (window_done_add(&h->done, id) == -1)
		handle_log(h, DYNPROF_LOG_ERROR, "%s: out of memory", __func__);
}

/* Sets the rank's state from its windows, in the slot too when it changed. */
void
step_update_state(struct dynprof *h)
{
	struct window_rank	 wr;
	uint32_t		 state;

	step_window_rank(h, &wr);
	if (h->active)
		state = SEG_RANK_PROFILING;
	else if (window_pending(h->cfg, &wr))
		state = SEG_RANK_ARMED;
	else if (h->outcome != 0)
		state = h->outcome;
	else
		state = SEG_RANK_ATTACHED;
	h->next_due = window_next_due(h->cfg, &wr);
	h->next_due_ns = window_next_due_ns(h->cfg, &wr);
	if (state == h->state && h->slot->generation == h->cfg->generation)
		return;
	h->state = state;
	segment_slot_update_begin(h->slot);
	h->slot->state = state;
	h->slot->generation = h->cfg->generation;
	segment_slot_update_end(h->slot);
}

/* The window failed: report it with message, and forget it. */
static void
step_fail(struct dynprof *h, const struct seg_window *w, int64_t step,
    uint32_t reason, const char *message)
{
	handle_log(h, DYNPROF_LOG_ERROR, "window %u (steps %lld-%lld): %s",
	    w != NULL ? w->id : 0, w != NULL ? (long long)w->start_step : 0,
	    w != NULL ? (long long)w->stop_step : 0, message);
	h->active = 0;
	h->outcome = SEG_RANK_FAILED;
	h->state = SEG_RANK_FAILED;
	report_event(h, EVENT_FAILED, w, step, reason, message);
}

/* Starts window w at step: output directory, start callback, report. */
static void
step_start(struct dynprof *h, const struct seg_window *w, int64_t step)
{
	struct dynprof_window	 pw;
	struct dynprof_options	 opts;
	char			 err[SEG_ERROR_MAX], msg[SEG_PATH_MAX + 128];
	const char		*fwopts;
	int			 rc;

	step_done(h, w->id);
	h->window = *w;		/* latched: later configs do not change it */
	if (window_is_timed(w))
		rc = output_dir_build_window(h->output_root,
		    w->options.output_subdir, h->rank, w->id, h->output_dir,
		    sizeof(h->output_dir));
	else
		rc = output_dir_build(h->output_root, w->options.output_subdir,
		    h->rank, w->start_step, w->stop_step, h->output_dir,
		    sizeof(h->output_dir));
	if (rc != DYNPROF_OK) {
		h->output_dir[0] = '\0';
		step_fail(h, &h->window, step, 0,
		    "output directory path too long or invalid");
		return;
	}
	if (output_mkdirs(h->output_dir) == -1) {
		snprintf(msg, sizeof(msg), "cannot create %s: %s",
		    h->output_dir, strerror(errno));
		step_fail(h, &h->window, step, 0, msg);
		return;
	}
	if (h->on_start != NULL) {
		step_public_window(w, &pw);
		window_options(&w->options, &opts);
		fwopts = w->options.fwopts[0] != '\0' ? w->options.fwopts : "{}";
		err[0] = '\0';
		rc = h->on_start(h->arg, &pw, &opts, fwopts, h->output_dir, err,
		    sizeof(err));
		err[sizeof(err) - 1] = '\0';
		if (rc != 0) {
			step_fail(h, &h->window, step, 0, err[0] != '\0' ? err :
			    "start callback failed");
			return;
		}
	}
	h->active = 1;
	h->state = SEG_RANK_PROFILING;
	report_event(h, EVENT_STARTED, &h->window, step, 0, NULL);
	if (window_is_timed(w))
		handle_log(h, DYNPROF_LOG_INFO, "rank %d: time window %u "
		    "started at step %lld, %lld ms after its start, output %s",
		    h->rank, w->id, (long long)step,
		    (long long)((h->now_ns - w->start_ns) / 1000000),
		    h->output_dir);
	else
		handle_log(h, DYNPROF_LOG_INFO, "rank %d: window %u started at "
		    "step %lld, stops at step %lld, output %s", h->rank, w->id,
		    (long long)step, (long long)w->stop_step, h->output_dir);
}

/* Stops the active window at step for reason. */
void
step_stop(struct dynprof *h, enum dynprof_stop_reason reason, int64_t step)
{
	struct dynprof_window	 pw;
	char			 err[SEG_ERROR_MAX];
	int			 rc = 0;

	if (!h->active)
		return;
	h->active = 0;
	if (h->on_stop != NULL) {
		step_public_window(&h->window, &pw);
		err[0] = '\0';
		rc = h->on_stop(h->arg, &pw, reason, h->output_dir, err,
		    sizeof(err));
		err[sizeof(err) - 1] = '\0';
	}
	if (rc != 0) {
		step_fail(h, &h->window, step, (uint32_t)reason,
		    err[0] != '\0' ? err : "stop callback failed");
		return;
	}
	h->outcome = SEG_RANK_DONE;
	h->state = SEG_RANK_DONE;
	report_event(h, EVENT_STOPPED, &h->window, step, (uint32_t)reason, NULL);
	handle_log(h, DYNPROF_LOG_INFO, "rank %d: window %u stopped at step %lld "
	    "(%s)", h->rank, h->window.id, (long long)step,
	    reason == DYNPROF_STOP_COMPLETED ? "completed" :
	    reason == DYNPROF_STOP_CANCELLED ? "cancelled" : "closed");
}

/*
 * Someone freed this rank's slot (an agent that could not see the process, in
 * another pid namespace, took it for dead): claim one again and report the rank
 * attached, with its state.  Until it succeeds the rank keeps its last slot.
 */
static void
step_reclaim_slot(struct dynprof *h)
{
	int	 idx;

	idx = segment_slot_claim_labels(&h->seg, h->pid, h->rank,
	    h->output_root, h->labels);
	if (idx < 0) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: slot %d was taken from "
		    "pid %ld and no slot is free", __func__, h->slot_index,
		    (long)h->pid);
		return;
	}
	handle_log(h, DYNPROF_LOG_WARNING, "%s: slot %d was taken from pid %ld: "
	    "now slot %d", __func__, h->slot_index, (long)h->pid, idx);
	h->slot_index = idx;
	h->slot = &h->seg.slots[idx];
	h->step_addr = &h->slot->step;
	busy_slot_moved(h);
	h->state = SEG_RANK_ATTACHED;	/* step_update_state() sets the real one */
	report_event(h, EVENT_ATTACHED, NULL, -1, 0, NULL);
}

/*
 * Measures the rank's step period between two step_begins of the slow path
 * (a time window's next_due is set from it: window.c).  A measure far below
 * the last (a burst of steps catching up after a stall) lowers it by a
 * quarter at most: the rank would otherwise skip thousands of steps past a
 * time window's start or stop once back at its pace.
 */
static void
step_note_period(struct dynprof *h, int64_t step)
{
	int64_t	 p;

	if (h->probe_ns != 0 && step > h->probe_step && h->now_ns > h->probe_ns) {
		p = (h->now_ns - h->probe_ns) / (step - h->probe_step);
		h->period_ns = p < h->period_ns * 3 / 4 ?
		    h->period_ns * 3 / 4 : p;
	}
	h->probe_step = step;
	h->probe_ns = h->now_ns;
}

/*
 * The slow path of step_begin, step_end and poll: reloads a changed schedule, then
 * applies the window rules until they say there is nothing left to do.
 */
int
step_slow(struct dynprof *h, int64_t step, enum window_phase phase)
{
	struct window_rank	 wr;
	const struct seg_window	*w;
	const char		*why;
	enum window_action	 act;
	int			 i, idx;

	if (h->closed)
		return (DYNPROF_EINVAL);
	h->now_ns = busy_now_ns();
	h->slow_calls++;
	if (atomic_load_explicit(&h->slot->pid, memory_order_relaxed) != h->pid)
		step_reclaim_slot(h);
	if (phase == WINDOW_BEGIN) {
		atomic_store_explicit(h->step_addr, step, memory_order_relaxed);
		busy_begin_slow(h);
		step_note_period(h, step);
	}
	if (atomic_load_explicit(h->seq_addr, memory_order_acquire) !=
	    h->seq_seen)
		step_reload(h);

	for (i = 0; i < STEP_MAX_ACTIONS; i++) {
		step_window_rank(h, &wr);
		why = "";
		act = window_decide(h->cfg, &wr, step, phase, &idx, &why);
		w = idx >= 0 ? &h->cfg->windows[idx] : NULL;
		if (act == WINDOW_NONE)
			break;
		switch (act) {
		case WINDOW_INVALID:
			handle_log(h, DYNPROF_LOG_WARNING, "window %u (steps "
			    "%lld-%lld) ignored: %s", w->id,
			    (long long)w->start_step, (long long)w->stop_step,
			    why);
			step_done(h, w->id);
			break;
		case WINDOW_SKIP:
			if (window_is_timed(w))
				handle_log(h, DYNPROF_LOG_WARNING, "rank %d: "
				    "time window %u skipped: it ended %lld ms "
				    "before the rank saw it", h->rank, w->id,
				    (long long)((h->now_ns - w->stop_ns) /
				    1000000));
			else
				handle_log(h, DYNPROF_LOG_WARNING, "rank %d: "
				    "window %u skipped: it starts at step %lld, "
				    "the rank is at step %lld", h->rank, w->id,
				    (long long)w->start_step, (long long)step);
			step_done(h, w->id);
			h->outcome = SEG_RANK_SKIPPED;
			h->state = SEG_RANK_SKIPPED;
			h->output_dir[0] = '\0';
			report_event(h, EVENT_SKIPPED, w, step, 0, NULL);
			break;
		case WINDOW_START:
			step_start(h, w, step);
			break;
		case WINDOW_STOP_COMPLETED:
			step_stop(h, DYNPROF_STOP_COMPLETED, step);
			break;
		case WINDOW_STOP_CANCELLED:
			step_stop(h, DYNPROF_STOP_CANCELLED, step);
			break;
		case WINDOW_NONE:
			break;
		}
	}
	step_update_state(h);
	return (DYNPROF_OK);
}

/* Marks the beginning of step.  The first branch is the hot path. */
DYNPROF_API int
dynprof_step_begin(dynprof_t *h, int64_t step)
{
	if (__builtin_expect(h != NULL && atomic_load_explicit(h->seq_addr,
	    memory_order_relaxed) == h->seq_seen && step < h->next_due, 1)) {
		atomic_store_explicit(h->step_addr, step, memory_order_relaxed);
		if (h->busy_begin != NULL)
			atomic_store_explicit(h->busy_begin, busy_now_ns(),
			    memory_order_relaxed);
		return (DYNPROF_OK);
	}
	if (h == NULL)
		return (DYNPROF_EINVAL);
	return (step_slow(h, step, WINDOW_BEGIN));
}

/* Marks the end of step.  The first branch is the hot path. */
DYNPROF_API int
dynprof_step_end(dynprof_t *h, int64_t step)
{
	if (__builtin_expect(h != NULL && atomic_load_explicit(h->seq_addr,
	    memory_order_relaxed) == h->seq_seen && step < h->next_due, 1))
		return (DYNPROF_OK);
	if (h == NULL)
		return (DYNPROF_EINVAL);
	return (step_slow(h, step, WINDOW_END));
}

/*
 * Acts on time windows in a loop without steps.  The first branch is the hot
 * path: one clock read (through the vDSO) besides step_begin's compares.
 */
DYNPROF_API int
dynprof_poll(dynprof_t *h)
{
	if (__builtin_expect(h != NULL && atomic_load_explicit(h->seq_addr,
	    memory_order_relaxed) == h->seq_seen && busy_now_ns() <
	    h->next_due_ns, 1))
		return (DYNPROF_OK);
	if (h == NULL)
		return (DYNPROF_EINVAL);
	return (step_slow(h, atomic_load_explicit(h->step_addr,
	    memory_order_relaxed), WINDOW_POLL));
}

/* Ends the previous counted step and begins the next, numbered from 1. */
DYNPROF_API int
dynprof_step(dynprof_t *h)
{
	int	 rc;

	if (h == NULL)
		return (DYNPROF_EINVAL);
	if (h->counter > 0 && (rc = dynprof_step_end(h, h->counter)) != 0)
		return (rc);
	h->counter++;
	return (dynprof_step_begin(h, h->counter));
}

/* Reports a failure of the profiler found outside a callback. */
DYNPROF_API int
dynprof_report_failure(dynprof_t *h, const char *message)
{
	int64_t	 step;

	if (h == NULL || h->closed)
		return (DYNPROF_EINVAL);
	if (message == NULL || *message == '\0')
		message = "profiler failed";
	step = atomic_load_explicit(h->step_addr, memory_order_relaxed);
	h->now_ns = busy_now_ns();
	if (h->active)
		step_fail(h, &h->window, step, 0, message);
	else
		step_fail(h, NULL, step, 0, message);
	step_update_state(h);
	return (DYNPROF_OK);
}

/* Fills f with what a binding needs to take the hot path itself. */
DYNPROF_API void
dynprof_get_fast_state(const dynprof_t *h, struct dynprof_fast_state *f)
{
	if (h == NULL || f == NULL)
		return;
	f->seq_addr = (uintptr_t)h->seq_addr;
	f->seq_seen = h->seq_seen;
	f->step_addr = (uintptr_t)h->step_addr;
	f->next_due = h->next_due;
}
