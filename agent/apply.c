/*
 * A job's schedule as the coordinator (or standalone mode) states it, turned into
 * the dynprof segment's schedule.  Kept apart from the segment code and from the
 * link, so that other layouts (MindSpore's, torch_npu's) can take the same input.
 */

#include <string.h>

#include "parts.h"
#include "jobid.h"
#include "log.h"
#include "options.h"

/* Sets o to the options table's defaults (nothing set, MindSpore's). */
static void
apply_default_options(struct seg_options *o)
{
	memset(o, 0, sizeof(*o));
	options_defaults(&options_seg, o);
}

/*
 * Fills o from a pushed window's options after checking every row's range,
 * the subdirectory and the framework options' length.  Returns 0, or -1 with
 * *why set.
 */
static int
apply_options(const Dynprof__V1__ProfilerOptions *po, struct seg_options *o,
    const char **why)
{
	size_t	 len;

	apply_default_options(o);
	if (po == NULL)
		return (0);
	if (options_check(&options_proto, po) != NULL) {
		*why = "profiler option out of range";
		return (-1);
	}
	options_convert(&options_seg, o, &options_proto, po);
	if (po->output_subdir != NULL && po->output_subdir[0] != '\0') {
		if (!subdir_valid(po->output_subdir, why))
			return (-1);
		if (strlen(po->output_subdir) >= sizeof(o->output_subdir)) {
			*why = "output_subdir too long";
			return (-1);
		}
		strcpy(o->output_subdir, po->output_subdir);
	}
	if (po->framework_options_json != NULL) {
		len = strlen(po->framework_options_json);
		if (len >= sizeof(o->fwopts)) {
			*why = "framework options over 4096 bytes";
			return (-1);
		}
		memcpy(o->fwopts, po->framework_options_json, len + 1);
		o->fwopts_len = (uint32_t)len;
	}
	return (0);
}

/* Times past this are refused: apply_clock() adds a day at most to them. */
#define APPLY_TIME_MAX_NS	(INT64_C(1) << 62)	/* year 2116 */

/*
 * Checks one window of a pushed config and fills sw from it.  Returns 0, or -1
 * with *why set.
 */
static int
apply_window(const Dynprof__V1__Window *w, struct seg_window *sw,
    const char **why)
{
	struct rank_set	 rs;

	memset(sw, 0, sizeof(*sw));
	if (w->id == 0) {
		*why = "window id 0";
		return (-1);
	}
	if (w->start_step < 0 || w->stop_step < w->start_step) {
		*why = "window steps out of order or negative";
		return (-1);
	}
	if ((w->start_unix_ns != 0 || w->stop_unix_ns != 0) &&
	    (w->start_unix_ns <= 0 || w->stop_unix_ns <= w->start_unix_ns ||
	    w->stop_unix_ns > APPLY_TIME_MAX_NS || w->start_step != 0 ||
	    w->stop_step != 0)) {
		*why = "time window with steps, or times out of order";
		return (-1);
	}
	if (w->ranks != NULL && w->ranks[0] != '\0') {
		if (strlen(w->ranks) >= sizeof(sw->ranks)) {
			*why = "rank list too long";
			return (-1);
		}
		if (ranks_parse(w->ranks, &rs, why) == -1)
			return (-1);
		strcpy(sw->ranks, w->ranks);
	}
	if (apply_options(w->options, &sw->options, why) == -1)
		return (-1);
	sw->id = w->id;
	sw->start_step = w->start_step;
	sw->stop_step = w->stop_step;
	/* On the coordinator's clock until apply_clock(). */
	sw->start_unix_ns = w->start_unix_ns;
	sw->stop_unix_ns = w->stop_unix_ns;
	if (w->state == DYNPROF__V1__WINDOW_STATE__WINDOW_CANCELLED)
		sw->flags |= SEG_WINDOW_CANCELLED;
	return (0);
}

/* Logs a window dropped from job's config and keeps the reason in *why. */
static void
apply_drop(const Dynprof__V1__JobConfig *jc, uint32_t id, const char *reason,
    const char **why)
{
	log_warnx("%s: job %s generation %llu: window %u dropped: %s",
	    __func__, jc->job, (unsigned long long)jc->generation, id, reason);
	*why = reason;
}

/*
 * Fills out (generation, windows ordered by start step) from jc after checking
 * every field a rank will trust.  The job id, the generation and the number of
 * windows concern the whole config: one wrong refuses it (returns -1 with *why
 * set, out unspecified).  A wrong window (steps, rank list, subdirectory,
 * option ranges; an id already taken; a scheduled window overlapping an
 * earlier one) is dropped with a log line and the others are taken, so that one
 * bad window never keeps a job's others from its ranks: then 0 is returned
 * with *why the reason of the last window dropped.  *why is left alone when
 * every window was taken.
 */
int
apply_jobconfig(const Dynprof__V1__JobConfig *jc, struct seg_config *out,
    const char **why)
{
	struct seg_window		 tmp;
	const char			*reason;
	size_t				 i, j, n;

	if (jc->job == NULL || !jobid_valid(jc->job, why)) {
		if (jc->job == NULL)
			*why = "no job id";
		return (-1);
	}
	if (jc->generation == 0) {
		*why = "generation 0";
		return (-1);
	}
	if (jc->n_windows > SEG_MAX_WINDOWS) {
		*why = "more than 16 windows";
		return (-1);
	}
	memset(out, 0, offsetof(struct seg_config, windows));
	out->generation = jc->generation;
	for (i = 0, n = 0; i < jc->n_windows; i++) {
		if (jc->windows[i] == NULL)
			continue;
		if (apply_window(jc->windows[i], &out->windows[n], &reason) ==
		    -1) {
			apply_drop(jc, jc->windows[i]->id, reason, why);
			continue;
		}
		/* Ids are unique: the first one stays. */
		for (j = 0; j < n; j++)
			if (out->windows[j].id == out->windows[n].id)
				break;
		if (j < n) {
			apply_drop(jc, out->windows[n].id,
			    "two windows with the same id", why);
			continue;
		}
		n++;
	}

	/* Order by start step (insertion sort: at most 16, stable). */
	for (i = 1; i < n; i++) {
		tmp = out->windows[i];
		for (j = i; j > 0 &&
		    out->windows[j - 1].start_step > tmp.start_step; j--)
			out->windows[j] = out->windows[j - 1];
		out->windows[j] = tmp;
	}
	/* Scheduled windows may not overlap (a cancelled one may): of two
	 * that do, the later one is dropped.  Time windows are the ranks'
	 * to order (one runs at a time). */
	for (i = 0, j = SIZE_MAX; i < n; i++) {
		if ((out->windows[i].flags & SEG_WINDOW_CANCELLED) ||
		    out->windows[i].start_unix_ns != 0)
			continue;
		if (j != SIZE_MAX &&
		    out->windows[i].start_step <= out->windows[j].stop_step) {
			apply_drop(jc, out->windows[i].id,
			    "scheduled windows overlap", why);
			memmove(&out->windows[i], &out->windows[i + 1],
			    (n - i - 1) * sizeof(out->windows[0]));
			n--;
			i--;
			continue;
		}
		j = i;
	}
	out->nwindows = (uint32_t)n;
	return (0);
}

/*
 * Turns the time windows of cfg (apply_jobconfig()'s, times on the
 * coordinator's wall clock) into this node's: its wall clock is offset_ns
 * ahead of the coordinator's, and read wall_ns when CLOCK_MONOTONIC read
 * mono_ns.  A rank decides on the monotonic times (start_ns, stop_ns), and
 * reports the wall-clock ones.
 */
void
apply_clock(struct seg_config *cfg, int64_t offset_ns, int64_t wall_ns,
    int64_t mono_ns)
{
	struct seg_window	*w;
	uint32_t		 i;

	for (i = 0; i < cfg->nwindows; i++) {
		w = &cfg->windows[i];
		if (w->start_unix_ns == 0)
			continue;
		w->start_unix_ns += offset_ns;
		w->stop_unix_ns += offset_ns;
		w->start_ns = w->start_unix_ns - wall_ns + mono_ns;
		w->stop_ns = w->stop_unix_ns - wall_ns + mono_ns;
		/* A start before the machine booted: at once. */
		if (w->start_ns <= 0)
			w->start_ns = 1;
		if (w->stop_ns <= w->start_ns)
			w->stop_ns = w->start_ns + 1;
	}
}
