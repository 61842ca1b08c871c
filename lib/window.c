/*
 * The window rules, as pure functions over a copied config, a rank and a step:
 *
 *	- a window is [start_step, stop_step], both inclusive: it starts in
 *	  step_begin(start_step) and stops in step_end(stop_step);
 *	- a started window is latched: it stops at its own stop step whatever later
 *	  configs say, unless the config marks it cancelled, then it stops at the
 *	  next step_end;
 *	- a window whose start is behind the rank is skipped, never started late;
 *	- each window id runs (or is skipped) once per rank;
 *	- a window targets the ranks of its list ("" for all);
 *	- a window with start_step <= 0, start_step > stop_step or a bad rank list
 *	  is ignored.
 *
 * A time window (start_ns > 0, times on the node's CLOCK_MONOTONIC) instead:
 *
 *	- starts at the first step_begin (or dynprof_poll()) at or after
 *	  start_ns, and stops at the step_end after which a step as long as the
 *	  last would end past stop_ns (the end of the last step before the
 *	  end), or, polled, at the first poll at or after stop_ns;
 *	- is skipped if the rank first sees it (at a step or a poll) at or
 *	  after stop_ns;
 *	- is ignored if stop_ns <= start_ns or its steps are not 0.
 *
 * Polls act on time windows only; steps on both.  Nothing here reads a clock:
 * the caller gives the time and the rank's step period in struct window_rank.
 */

#include <stdlib.h>
#include <string.h>

#include "jobid.h"
#include "libdynprof.h"
#include "options.h"

/*
 * Makes every string of a config copied from shared memory NUL-terminated and
 * its window count sane: the writer is another process.
 */
void
window_config_sanitize(struct seg_config *cfg)
{
	struct seg_window	*w;
	uint32_t		 i;

	if (cfg->nwindows > SEG_MAX_WINDOWS)
		cfg->nwindows = SEG_MAX_WINDOWS;
	for (i = 0; i < SEG_MAX_WINDOWS; i++) {
		w = &cfg->windows[i];
		w->ranks[sizeof(w->ranks) - 1] = '\0';
		w->options.output_subdir[sizeof(w->options.output_subdir) - 1] =
		    '\0';
		w->options.fwopts[sizeof(w->options.fwopts) - 1] = '\0';
	}
}

/* Returns 1 if w is a window of time, 0 of steps. */
int
window_is_timed(const struct seg_window *w)
{
	return (w->start_ns != 0);
}

/* Returns 1 if the window can run at all, else 0 and the reason. */
int
window_check(const struct seg_window *w, const char **why)
{
	struct rank_set	 set;

	if (window_is_timed(w)) {
		if (w->start_ns < 0 || w->stop_ns <= w->start_ns) {
			*why = "stop time is not after start time";
			return (0);
		}
		if (w->start_step != 0 || w->stop_step != 0) {
			*why = "a time window with steps";
			return (0);
		}
	} else if (w->start_step <= 0) {
		*why = "start_step is not positive";
		return (0);
	}
	if (w->start_step > w->stop_step) {
		*why = "start_step is after stop_step";
		return (0);
	}
	if (ranks_parse(w->ranks, &set, why) == -1)
		return (0);
	if (!subdir_valid(w->options.output_subdir, why))
		return (0);
	return (1);
}

/* Returns 1 if the window's rank list holds rank (a bad list holds none). */
int
window_targets(const struct seg_window *w, int32_t rank)
{
	struct rank_set	 set;

	if (ranks_parse(w->ranks, &set, NULL) == -1)
		return (0);
	return (ranks_contains(&set, rank));
}

/* Returns 1 if the config holds window id, cancelled. */
int
window_is_cancelled(const struct seg_config *cfg, uint32_t id)
{
	uint32_t	 i;

	for (i = 0; i < cfg->nwindows; i++)
		if (cfg->windows[i].id == id &&
		    (cfg->windows[i].flags & SEG_WINDOW_CANCELLED))
			return (1);
	return (0);
}

/*
 * Returns 1 if w is one the rank still has to run or skip: not done, not
 * cancelled, for this rank.  Invalid windows count (they still have to be
 * noticed and ignored).
 */
static int
window_is_open(const struct seg_window *w, const struct window_rank *wr)
{
	if (window_done_has(wr->done, w->id))
		return (0);
	if (wr->active != NULL && wr->active->id == w->id)
		return (0);
	if (w->flags & SEG_WINDOW_CANCELLED)
		return (0);
	return (1);
}

/* Says whether the active window stops at this step and phase. */
static enum window_action
window_decide_active(const struct seg_config *cfg,
    const struct window_rank *wr, int64_t step, enum window_phase phase)
{
	const struct seg_window	*a = wr->active;

	if (phase == WINDOW_BEGIN || (phase == WINDOW_POLL &&
	    !window_is_timed(a)))
		return (WINDOW_NONE);
	if (window_is_timed(a)) {
		if (wr->now_ns >= a->stop_ns || (phase == WINDOW_END &&
		    wr->period_ns > 0 && wr->now_ns + wr->period_ns > a->stop_ns))
			return (WINDOW_STOP_COMPLETED);
	} else if (step >= a->stop_step)
		return (WINDOW_STOP_COMPLETED);
	if (window_is_cancelled(cfg, a->id))
		return (WINDOW_STOP_CANCELLED);
	return (WINDOW_NONE);
}

/*
 * Says what to do at this step and phase, given the rank's active window (if
 * any) and the windows it is done with.  *index is the window concerned (for
 * START, SKIP and INVALID), *why the reason of an INVALID.  The caller acts,
 * records it, and asks again until WINDOW_NONE.
 */
enum window_action
window_decide(const struct seg_config *cfg, const struct window_rank *wr,
    int64_t step, enum window_phase phase, int *index, const char **why)
{
	const struct seg_window	*w;
	uint32_t		 i;
	int			 best = -1;

	*index = -1;
	if (wr->active != NULL)
		return (window_decide_active(cfg, wr, step, phase));

	for (i = 0; i < cfg->nwindows; i++) {
		w = &cfg->windows[i];
		if (!window_is_open(w, wr))
			continue;
		if (!window_check(w, why)) {
			*index = (int)i;
			return (WINDOW_INVALID);
		}
		if (!window_targets(w, wr->rank))
			continue;
		if (window_is_timed(w)) {
			if (wr->now_ns >= w->stop_ns) {
				*index = (int)i;
				return (WINDOW_SKIP);
			}
			if (phase != WINDOW_END && wr->now_ns >= w->start_ns) {
				*index = (int)i;
				return (WINDOW_START);
			}
			continue;
		}
		if (phase == WINDOW_POLL)
			continue;
		/* Its step_begin has passed: never start late. */
		if (w->start_step < step ||
		    (phase == WINDOW_END && w->start_step <= step)) {
			*index = (int)i;
			return (WINDOW_SKIP);
		}
		if (best == -1 || w->start_step < cfg->windows[best].start_step)
			best = (int)i;
	}
	if (best != -1 && phase == WINDOW_BEGIN &&
	    cfg->windows[best].start_step == step) {
		*index = best;
		return (WINDOW_START);
	}
	return (WINDOW_NONE);
}

/*
 * The step at which to look at the clock again for a time at_ns: half the
 * time left, in steps of the rank's period (near while the period is not
 * known or less than two steps are left: the next step for a start, which
 * happens at a begin, this one for a stop, at its end), so that a rank reads
 * the clock about log2(time left / period) times before it, and at every step
 * close to it.
 */
static int64_t
window_step_toward(const struct window_rank *wr, int64_t at_ns, int64_t near)
{
	int64_t	 left = at_ns - wr->now_ns, n;

	if (wr->step < 0 || wr->step == INT64_MAX)
		return (INT64_MIN);
	if (wr->period_ns <= 0 || left <= 2 * wr->period_ns)
		return (wr->step + near);
	n = left / 2 / wr->period_ns;
	if (n > INT64_MAX - wr->step)
		return (INT64_MAX);
	return (wr->step + n);
}

/*
 * Returns the first step at which step_begin or step_end has more to do than
 * store the step: the active window's stop step (or INT64_MIN once it is
 * cancelled), else the earliest start of a window still to run, else INT64_MAX.
 * For a time window, the step at which to look at the clock again
 * (window_step_toward()).
 */
int64_t
window_next_due(const struct seg_config *cfg, const struct window_rank *wr)
{
	const struct seg_window	*w;
	int64_t			 due = INT64_MAX, at;
	uint32_t		 i;

	if (wr->active != NULL) {
		if (window_is_cancelled(cfg, wr->active->id))
			return (INT64_MIN);
		if (window_is_timed(wr->active))
			return (window_step_toward(wr, wr->active->stop_ns -
			    wr->period_ns, 0));
		return (wr->active->stop_step);
	}
	for (i = 0; i < cfg->nwindows; i++) {
		w = &cfg->windows[i];
		if (!window_is_open(w, wr))
			continue;
		/* An invalid window is due now, to be noticed and ignored. */
		if (!window_is_timed(w) &&
		    (w->start_step <= 0 || w->start_step > w->stop_step))
			return (INT64_MIN);
		if (window_is_timed(w) && w->stop_ns <= w->start_ns)
			return (INT64_MIN);
		if (!window_targets(w, wr->rank))
			continue;
		at = window_is_timed(w) ? window_step_toward(wr, w->start_ns, 1) :
		    w->start_step;
		if (at < due)
			due = at;
	}
	return (due);
}

/*
 * Returns the CLOCK_MONOTONIC time at which dynprof_poll() has more to do than
 * read the clock: the active time window's stop (INT64_MIN once cancelled),
 * else the earliest start of a time window still to run, else INT64_MAX.
 * INT64_MIN when an invalid window waits to be noticed.
 */
int64_t
window_next_due_ns(const struct seg_config *cfg, const struct window_rank *wr)
{
	const struct seg_window	*w;
	int64_t			 due = INT64_MAX;
	uint32_t		 i;
	const char		*why;

	if (wr->active != NULL) {
		if (!window_is_timed(wr->active))
			return (INT64_MAX);
		if (window_is_cancelled(cfg, wr->active->id))
			return (INT64_MIN);
		return (wr->active->stop_ns);
	}
	for (i = 0; i < cfg->nwindows; i++) {
		w = &cfg->windows[i];
		if (!window_is_open(w, wr))
			continue;
		if (!window_check(w, &why))
			return (INT64_MIN);
		if (window_is_timed(w) && window_targets(w, wr->rank) &&
		    w->start_ns < due)
			due = w->start_ns;
	}
	return (due);
}

/* Returns 1 if a window for this rank is still to run. */
int
window_pending(const struct seg_config *cfg, const struct window_rank *wr)
{
	const struct seg_window	*w;
	const char		*why;
	uint32_t		 i;

	for (i = 0; i < cfg->nwindows; i++) {
		w = &cfg->windows[i];
		if (window_is_open(w, wr) && window_check(w, &why) &&
		    window_targets(w, wr->rank))
			return (1);
	}
	return (0);
}

/* Returns 1 if the rank is done with window id. */
int
window_done_has(const struct window_done *d, uint32_t id)
{
	size_t	 i;

	for (i = 0; i < d->n; i++)
		if (d->ids[i] == id)
			return (1);
	return (0);
}

/* Records that the rank is done with window id.  Returns 0, or -1 out of memory. */
int
window_done_add(struct window_done *d, uint32_t id)
{
	uint32_t	*ids;
	size_t		 cap;

	if (window_done_has(d, id))
		return (0);
	if (d->n == d->cap) {
		cap = d->cap == 0 ? 16 : d->cap * 2;
		ids = realloc(d->ids, cap * sizeof(*ids));
		if (ids == NULL)
			return (-1);
		d->ids = ids;
		d->cap = cap;
	}
	d->ids[d->n++] = id;
	return (0);
}

/* Frees the done list. */
void
window_done_free(struct window_done *d)
{
	free(d->ids);
	memset(d, 0, sizeof(*d));
}

/* Converts a window's options from the segment to the public struct. */
void
window_options(const struct seg_options *so, struct dynprof_options *o)
{
	options_convert(&options_lib, o, &options_seg, so);
}
