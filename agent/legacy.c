/*
 * --legacy-dir: jobs whose code dynprof never touched (docs/legacy.md).  The
 * directory is opened once and watched with inotify; each subdirectory named
 * after a valid job id is a job on this node, subscribed while the directory
 * is there, at most --legacy-per-uid of one owner.  Its schedule is held
 * here, in memory, not in a segment: a directory costs no shared memory
 * (the job's own ranks, if they report for themselves, make theirs).  Every
 * file of the job is reached through the directory's descriptor
 * (legacy_fs.c).  On every change of the schedule,
 * of the job's directory and at each tick while a window is out, the window
 * due is worked out: the file holds one window at a time, the next is written
 * once the one before is over (observed complete on every rank seen, missed,
 * unverified, cancelled, or gone from the schedule), or, for a framework that
 * reads a file written while a window runs once it stopped (torch_npu), as
 * soon as every rank started it.  What the agent did with each
 * window, and why, goes to the coordinator as a LegacyStatus.
 */

#include <sys/inotify.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "parts.h"
#include "clock.h"
#include "jobid.h"
#include "parts_legacy.h"
#include "log.h"

#define LEGACY_DIR_EVENTS	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
	    IN_MOVED_TO | IN_ONLYDIR | IN_DELETE_SELF | IN_MOVE_SELF)
#define LEGACY_JOB_EVENTS	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | \
	    IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR)

static void	legacy_eval(struct legacy *, struct legacy_job *);
static void	legacy_keep_ended(struct legacy_job *,
		    const struct legacy_window *);
static void	legacy_arm(struct legacy *);

/* Finds the job served under name, or NULL. */
struct legacy_job *
legacy_find(struct legacy *l, const char *name)
{
	struct legacy_job	*lj;

	TAILQ_FOREACH(lj, &l->jobs, entry)
		if (strcmp(lj->name, name) == 0)
			return (lj);
	return (NULL);
}

/* Sends lj's status (removed: its directory went).  Clears status_dirty. */
static void
legacy_send_status(struct legacy *l, struct legacy_job *lj, int removed)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__LegacyStatus	 st = DYNPROF__V1__LEGACY_STATUS__INIT;
	Dynprof__V1__LegacyWindow	 w[LEGACY_STATUS_MAX], *wp[LEGACY_STATUS_MAX];
	size_t				 i;

	st.job = lj->name;
	st.dialect = lj->dialect >= 0 ? (char *)options_dialect_name(
	    (enum options_dialect)lj->dialect) : "";
	st.error = lj->error;
	st.output_dir = lj->output;
	st.removed = removed;
	for (i = 0; i < lj->nwindows && !removed; i++) {
		dynprof__v1__legacy_window__init(&w[i]);
		w[i].window_id = lj->windows[i].id;
		w[i].state = lj->windows[i].state;
		w[i].reason = lj->windows[i].reason;
		wp[i] = &w[i];
	}
	st.n_windows = removed ? 0 : lj->nwindows;
	st.windows = wp;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_LEGACY;
	m.legacy = &st;
	if (upstream_ready(l->a) && upstream_send(l->a, &m) == 0)
		lj->status_dirty = 0;
}

/* Appends "; " (if buf holds something) and the formatted text to buf. */
static void
legacy_append(char *buf, size_t size, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 off = strlen(buf);

	if (off > 0 && off + 2 < size) {
		memcpy(buf + off, "; ", 3);
		off += 2;
	}
	va_start(ap, fmt);
	(void)vsnprintf(buf + off, size - off, fmt, ap);
	va_end(ap);
}

/* Returns how window id ended (LEGACY_OVER_*), or -1 if not over. */
static int
legacy_is_over(const struct legacy_job *lj, uint32_t id)
{
	size_t	 i;

	for (i = 0; i < lj->nover && i < LEGACY_OVER_MAX; i++)
		if (lj->over[i] == id)
			return (lj->over_how[i]);
	return (-1);
}

/*
 * The window in the file is over (how: LEGACY_OVER_*; why for the log; note,
 * or NULL, for its status): nothing is out.
 */
static void
legacy_set_over(struct legacy_job *lj, int how, const char *why,
    const char *note)
{
	size_t	 unserved = legacy_log_unserved(lj);

	log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: window %u over: "
	    "%s", lj->name, lj->written, why);
	lj->over_note[0] = '\0';
	lj->over_note_id = lj->written;
	if (note != NULL)
		snprintf(lj->over_note, sizeof(lj->over_note), "%s", note);
	if (unserved > 0)
		legacy_append(lj->over_note, sizeof(lj->over_note), "%zu "
		    "targeted ranks never served (their logs show neither a "
		    "start nor a drop of it)", unserved);
	lj->over_how[lj->nover % LEGACY_OVER_MAX] = (uint8_t)how;
	lj->over[lj->nover++ % LEGACY_OVER_MAX] = lj->written;
	lj->written = 0;
	legacy_observe_reset(lj);
	lj->status_dirty = 1;
}

/*
 * Checks whether the window in the file is over (w NULL: left the schedule);
 * max_ms: how long after its first write it may go unseen to end.
 */
static void
legacy_check_over(struct legacy_job *lj, const struct seg_window *w,
    int64_t now, int64_t max_ms)
{
	char	 why[LEGACY_REASON_MAX];
	size_t	 i, open = 0;

	if (w == NULL) {
		legacy_set_over(lj, LEGACY_OVER_DONE, "it left the schedule",
		    NULL);
		return;
	}
	if (w->flags & SEG_WINDOW_CANCELLED) {
		lj->shown_until_ms = 0;	/* the next may replace it at once */
		legacy_set_over(lj, LEGACY_OVER_DONE, "cancelled", NULL);
		return;
	}
	if (legacy_log_missed(lj, now, why, sizeof(why))) {
		legacy_set_over(lj, LEGACY_OVER_MISSED, why, why);
		return;
	}
	if (lj->nranks == 0 && lj->unmarked_at_ms != 0 &&
	    now - lj->unmarked_at_ms >= LEGACY_UNVERIFIED_MS) {
		snprintf(why, sizeof(why), "a trace appeared without this "
		    "window's marker (%s in its %s): not tied to it",
		    LEGACY_MARKER_NAME, LEGACY_METADATA_NAME);
		legacy_set_over(lj, LEGACY_OVER_UNVERIFIED, "unverified", why);
		return;
	}
	for (i = 0; i < lj->nranks; i++)
		if (!lj->ranks[i].complete)
			open++;
	if (lj->first_at_ms != 0 && now - lj->first_at_ms >= max_ms &&
	    (lj->nranks == 0 || open > 0)) {
		/* Nothing says it ended: the queue does not wait for ever. */
		if (lj->nranks == 0)
			snprintf(why, sizeof(why), "no rank seen to run it "
			    "within %lld s of its write (no trace, no log line "
			    "of it; --legacy-window-max)",
			    (long long)(max_ms / 1000));
		else
			snprintf(why, sizeof(why), "%zu of %zu ranks seen "
			    "to begin it not seen to finish it within %lld s "
			    "of its write (--legacy-window-max)", open,
			    lj->nranks, (long long)(max_ms / 1000));
		legacy_set_over(lj, LEGACY_OVER_UNVERIFIED, why, why);
		return;
	}
	if (lj->nranks == 0 || now - lj->settled_at_ms < LEGACY_SETTLE_MS ||
	    open > 0)
		return;
	legacy_set_over(lj, LEGACY_OVER_DONE, "every rank seen completed it",
	    NULL);
}

/*
 * Checks whether the window before the one written (written ahead of its
 * end) is over: every rank that started it seen to complete it (and
 * LEGACY_SETTLE_MS passed), cancelled, gone from the schedule, or not seen
 * to end within max_ms of its first write.
 */
static void
legacy_check_prev(struct legacy_job *lj, const struct seg_window *sw,
    size_t nsw, int64_t now, int64_t max_ms)
{
	struct legacy_window	 lw;
	const struct seg_window	*w = NULL;
	size_t			 i, j, open = 0;
	int			 how = LEGACY_OVER_DONE;

	for (i = 0; i < nsw; i++)
		if (sw[i].id == lj->prev)
			w = &sw[i];
	for (i = 0; i < lj->nprev_started; i++) {
		for (j = 0; j < lj->nprev_done; j++)
			if (lj->prev_done[j] == lj->prev_started[i])
				break;
		if (j == lj->nprev_done)
			open++;
	}
	memset(&lw, 0, sizeof(lw));
	lw.id = lj->prev;
	lw.state = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER;
	if ((w == NULL && open > 0) ||
	    (w != NULL && (w->flags & SEG_WINDOW_CANCELLED)))
		snprintf(lw.reason, sizeof(lw.reason), "%s while it ran",
		    w == NULL ? "left the schedule" : "cancelled");
	else if (w == NULL)
		;	/* its ranks' events ended it at the coordinator */
	else if (open > 0 && now - lj->prev_first_at_ms >= max_ms) {
		how = LEGACY_OVER_UNVERIFIED;
		lw.state =
		    DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_UNVERIFIED;
		snprintf(lw.reason, sizeof(lw.reason), "%zu of %zu ranks that "
		    "started it not seen to finish it within %lld s of its "
		    "write (--legacy-window-max)", open, lj->nprev_started,
		    (long long)(max_ms / 1000));
	} else if (open > 0 || now - lj->prev_settled_at_ms < LEGACY_SETTLE_MS)
		return;
	log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: window %u over: "
	    "%s", lj->name, lj->prev, lw.reason[0] != '\0' ? lw.reason :
	    "every rank that started it completed it");
	lj->over_how[lj->nover % LEGACY_OVER_MAX] = (uint8_t)how;
	lj->over[lj->nover++ % LEGACY_OVER_MAX] = lj->prev;
	legacy_keep_ended(lj, &lw);
	legacy_observe_prev_reset(lj);
	lj->status_dirty = 1;
}

/* Sets the status of window w to state with a reason. */
static void
legacy_window_state(struct legacy_window *lw, uint32_t id, int state,
    const char *reason)
{
	lw->id = id;
	lw->state = state;
	snprintf(lw->reason, sizeof(lw->reason), "%s", reason);
}

static void legacy_tick(evutil_socket_t, short, void *);

/*
 * Looks at the jobs again at at_ms (monotonic), when a write held back falls
 * due: the tick alone would make it wait up to LEGACY_TICK_MS longer.
 */
static void
legacy_soon(struct legacy *l, int64_t at_ms, int64_t now)
{
	struct timeval	 tv;
	int64_t		 d = at_ms > now ? at_ms - now : 0;

	if (evtimer_pending(l->soon, NULL) && l->soon_at_ms <= at_ms)
		return;
	tv.tv_sec = d / 1000;
	tv.tv_usec = (d % 1000) * 1000;
	l->soon_at_ms = at_ms;
	evtimer_add(l->soon, &tv);
}

/*
 * Writes window w (NULL: "no window") in lj's file once the write rules let
 * it (legacy_write_due()).  Returns 0 written; 1 held back, looked at again
 * when due; -1 failed with why, tried again after LEGACY_RETRY_MS.
 */
static int
legacy_write_when_due(struct legacy *l, struct legacy_job *lj,
    const struct seg_window *w, int64_t now, const char **why)
{
	int64_t	 due;

	if ((due = legacy_write_due(lj, now)) > now) {
		legacy_soon(l, due, now);
		return (1);
	}
	if (legacy_write(l, lj, w, why) == -1) {
		lj->retry_at_ms = now + LEGACY_RETRY_MS;
		return (-1);
	}
	return (0);
}

/*
 * Writes window w (NULL: the file says "no window") if the rules allow it now;
 * otherwise looks again when they will.  Returns 1 if written.
 */
static int
legacy_try_write(struct legacy *l, struct legacy_job *lj,
    const struct seg_window *w, int64_t now)
{
	const char	*why;
	int		 rc;

	if (now < lj->retry_at_ms)
		return (0);
	/* The window before had a poll to see it: never rewritten unseen. */
	if (w != NULL && now < lj->shown_until_ms) {
		legacy_soon(l, lj->shown_until_ms, now);
		return (0);
	}
	if ((rc = legacy_write_when_due(l, lj, w, now, &why)) == 1) {
		if (w != NULL && lj->early != w->id) {
			lj->early = w->id;
			legacy_write_record(l, lj, w);
		}
		return (0);
	}
	if (rc == -1) {
		/* Retried each LEGACY_RETRY_MS: said when it changes. */
		if (strcmp(lj->write_error, why) != 0)
			log_limited(&lj->log, LOG_LEVEL_QUIET, "legacy job %s: "
			    "%s", lj->name, why);
		snprintf(lj->write_error, sizeof(lj->write_error), "%s", why);
		snprintf(lj->error, sizeof(lj->error), "%s", why);
		lj->status_dirty = 1;
		return (0);
	}
	if (lj->error[0] != '\0' && (strncmp(lj->error, "cannot write", 12) ==
	    0 || strcmp(lj->error, lj->write_error) == 0))
		lj->error[0] = '\0';
	lj->write_error[0] = '\0';
	lj->retry_at_ms = 0;
	lj->status_dirty = 1;
	lj->written_disabled = w == NULL;
	if (w == NULL) {
		log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: wrote no "
		    "window", lj->name);
		return (1);
	}
	if (lj->written != 0 && lj->written != w->id)
		legacy_observe_prev_take(lj);	/* written ahead of its end */
	lj->written = w->id;
	lj->first_at_ms = now;
	lj->shown_until_ms = now + LEGACY_POLL_MS + LEGACY_TICK_MS;
	lj->written_start = w->start_step;
	lj->written_stop = w->stop_step;
	if (ranks_parse(w->ranks, &lj->written_ranks, NULL) == -1)
		lj->written_ranks.nranges = 0;	/* expressible: never */
	legacy_observe_reset(lj);
	legacy_log_scan(l, lj, 1);
	log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: wrote window %u "
	    "(steps %lld-%lld) as %s", lj->name, w->id, (long long)w->start_step, (long long)w->stop_step,
	    options_dialect_name((enum options_dialect)lj->dialect));
	return (1);
}

/*
 * Writes the window in the file again, the same, once allowed: a rank that
 * started after it was written ignores a file older than its own start.
 */
static void
legacy_rewrite(struct legacy *l, struct legacy_job *lj,
    const struct seg_window *w, int64_t now)
{
	const char	*why;

	if (now < lj->retry_at_ms ||
	    legacy_write_when_due(l, lj, w, now, &why) != 0)
		return;
	lj->rewrite = 0;
	lj->status_dirty = 1;
	log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: wrote window %u "
	    "again for %zu late ranks", lj->name, w->id, lj->late_ranks);
}

/* Keeps what the status says of a window over, for once it left the schedule. */
static void
legacy_keep_ended(struct legacy_job *lj, const struct legacy_window *lw)
{
	lj->ended[lj->nended++ % LEGACY_ENDED_MAX] = *lw;
}

/* What the status said of window id when it was over, or NULL. */
static const struct legacy_window *
legacy_ended(const struct legacy_job *lj, uint32_t id)
{
	size_t	 i;

	for (i = 0; i < LEGACY_ENDED_MAX && i < lj->nended; i++)
		if (lj->ended[i].id == id)
			return (&lj->ended[i]);
	return (NULL);
}

/*
 * Works out the state of every window of ws, and of the last ones over that
 * left it; returns the next to write.
 */
static const struct seg_window *
legacy_plan(struct legacy_job *lj, const struct seg_window *ws, size_t nws,
    int ahead, struct legacy_window *out, size_t *nout)
{
	const struct seg_window	*w, *next = NULL;
	char			 why[LEGACY_REASON_MAX], reason[LEGACY_REASON_MAX];
	size_t			 i, j;
	int			 st, how;

	*nout = 0;
	for (i = 0; i < nws; i++) {
		w = &ws[i];
		reason[0] = '\0';
		if ((how = legacy_is_over(lj, w->id)) != -1) {
			st = how == LEGACY_OVER_MISSED ?
			    DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_MISSED :
			    how == LEGACY_OVER_UNVERIFIED ?
			    DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_UNVERIFIED :
			    DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER;
			if (w->id == lj->over_note_id)
				snprintf(reason, sizeof(reason), "%s",
				    lj->over_note);
			else if (how == LEGACY_OVER_UNVERIFIED)
				snprintf(reason, sizeof(reason), "unverified");
		}
		else if (w->flags & SEG_WINDOW_CANCELLED) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER;
			snprintf(reason, sizeof(reason), "cancelled before it "
			    "was written");
		} else if (lj->dialect < 0) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING;
			snprintf(reason, sizeof(reason), "the job's dialect is "
			    "unknown: nothing is written");
		} else if (legacy_expressible(lj, w, why, sizeof(why)) == -1) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_REFUSED;
			snprintf(reason, sizeof(reason), "%s", why);
		} else if (w->id == lj->prev) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WRITTEN;
			snprintf(reason, sizeof(reason), "running: %zu of %zu "
			    "ranks that started it seen to complete it; the "
			    "next window was written while it ran (%s reads it "
			    "once it stopped)", lj->nprev_done,
			    lj->nprev_started, options_dialect_name(
			    (enum options_dialect)lj->dialect));
		} else if (w->id == lj->written) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WRITTEN;
			if (snprintf(reason, sizeof(reason), "%s%s%s", why,
			    why[0] != '\0' && lj->shm_note[0] != '\0' ? "; " :
			    "", lj->shm_note) >= (int)sizeof(reason))
				reason[sizeof(reason) - 1] = '\0';
			if (lj->late_ranks > 0)
				legacy_append(reason, sizeof(reason), "%zu "
				    "ranks started after it was written: "
				    "written again%s", lj->late_ranks,
				    lj->rewrite ? " (due)" : "");
		} else if ((lj->written != 0 && !ahead) || next != NULL) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING;
			snprintf(reason, sizeof(reason), "one window at a time: "
			    "written once window %u is over", next != NULL ?
			    next->id : lj->written);
		} else {
			next = w;
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING;
			if (legacy_dialect(lj->dialect)->own_config_first &&
			    !lj->framework_seen)
				snprintf(reason, sizeof(reason), "waiting for "
				    "%s's own %s: it ignores a file older than "
				    "its start", options_dialect_name(
				    (enum options_dialect)lj->dialect),
				    LEGACY_CONFIG_NAME);
			else if (clock_mono_ms() < lj->shown_until_ms)
				snprintf(reason, sizeof(reason), "due: written "
				    "once the window before was %d ms in the "
				    "file (the frameworks poll it every %d s, "
				    "and would never see a window replaced "
				    "sooner)", LEGACY_POLL_MS + LEGACY_TICK_MS,
				    LEGACY_POLL_MS / 1000);
			else if (lj->write_error[0] != '\0')
				snprintf(reason, sizeof(reason), "not written: "
				    "%.200s", lj->write_error);
			else if (snprintf(reason, sizeof(reason), "due: written "
			    "within %d ms%s%s", LEGACY_WRITE_GAP_MS,
			    lj->early == w->id ? "; " : "", lj->early == w->id ?
			    lj->shm_note : "") >= (int)sizeof(reason))
				reason[sizeof(reason) - 1] = '\0';
		}
		if (how != -1 && legacy_ended(lj, w->id) != NULL) {
			out[(*nout)++] = *legacy_ended(lj, w->id);
			continue;
		}
		legacy_window_state(&out[(*nout)++], w->id, st, reason);
		if (how != -1)
			legacy_keep_ended(lj, &out[*nout - 1]);
	}
	/* Those over that left the schedule: said a while yet. */
	for (i = 0; i < LEGACY_ENDED_MAX && i < lj->nended; i++) {
		for (j = 0; j < nws && ws[j].id != lj->ended[i].id; j++)
			;
		if (j == nws)
			out[(*nout)++] = lj->ended[i];
	}
	return (next);
}

/*
 * Works out what lj's file should say now and writes it when allowed: the
 * window written, if it is not over; else the next window due.  Updates the
 * status and sends it when it changed.
 */
static void
legacy_eval(struct legacy *l, struct legacy_job *lj)
{
	const struct legacy_dialect *dl = legacy_dialect(lj->dialect);
	struct legacy_window	 ws[LEGACY_STATUS_MAX];
	const struct seg_window	*w = NULL, *next, *sw;
	size_t			 n, i, nsw;
	int64_t			 now = clock_mono_ms();
	int			 disable = 0, ahead;

	sw = lj->sched != NULL ? lj->sched->windows : NULL;
	nsw = lj->sched != NULL ? lj->sched->nwindows : 0;
	if (lj->written != 0) {
		for (i = 0; i < nsw; i++)
			if (sw[i].id == lj->written)
				w = &sw[i];
		/* Cancelled before a rank was seen running it: say so. */
		disable = w != NULL && (w->flags & SEG_WINDOW_CANCELLED) &&
		    lj->nranks == 0 && dl != NULL && dl->can_disable;
		legacy_check_over(lj, w, now,
		    (int64_t)l->a->opts.legacy_window_max_s * 1000);
	}
	if (lj->prev != 0)
		legacy_check_prev(lj, sw, nsw, now,
		    (int64_t)l->a->opts.legacy_window_max_s * 1000);
	if (lj->written != 0 && lj->rewrite && w != NULL &&
	    !(w->flags & SEG_WINDOW_CANCELLED))
		legacy_rewrite(l, lj, w, now);
	/*
	 * A framework that reads a file written while a window runs once it
	 * stopped is given the next as soon as every rank started the one in
	 * the file: back-to-back windows then meet no poll between them.
	 */
	ahead = dl != NULL && dl->ahead && lj->written != 0 && w != NULL &&
	    !(w->flags & SEG_WINDOW_CANCELLED) && lj->prev == 0 &&
	    !lj->rewrite && now >= lj->shown_until_ms &&
	    legacy_log_started(lj, NULL, &i);
	next = legacy_plan(lj, sw, nsw, ahead, ws, &n);
	if (dl != NULL && !(dl->own_config_first && !lj->framework_seen)) {
		if (next != NULL && legacy_try_write(l, lj, next, now))
			next = legacy_plan(lj, sw, nsw, 0, ws, &n);
		else if (next == NULL && disable && !lj->written_disabled)
			(void)legacy_try_write(l, lj, NULL, now);
	}
	if (n != lj->nwindows || memcmp(ws, lj->windows, n * sizeof(ws[0])) != 0) {
		memset(lj->windows, 0, sizeof(lj->windows));
		memcpy(lj->windows, ws, n * sizeof(ws[0]));
		lj->nwindows = n;
		lj->status_dirty = 1;
	}
	if (lj->status_dirty)
		legacy_send_status(l, lj, 0);
	legacy_arm(l);
}

/* Returns 1 if lj needs the tick: a window out, or one due. */
static int
legacy_busy(const struct legacy_job *lj)
{
	size_t	 i;

	if (lj->written != 0 || lj->prev != 0 || lj->status_dirty ||
	    lj->retry_at_ms != 0 || lj->check || lj->rewrite)
		return (1);
	if (lj->dialect < 0)
		return (0);
	for (i = 0; i < lj->nwindows; i++)
		if (lj->windows[i].state ==
		    DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING)
			return (1);
	return (0);
}

/* Arms the tick while some job needs it, or refused names may fit now. */
static void
legacy_arm(struct legacy *l)
{
	struct legacy_job	*lj;
	struct timeval		 tv = { 0, LEGACY_TICK_MS * 1000 };

	if (evtimer_pending(l->tick, NULL))
		return;
	if (l->rescan) {
		evtimer_add(l->tick, &tv);
		return;
	}
	TAILQ_FOREACH(lj, &l->jobs, entry) {
		if (legacy_busy(lj)) {
			evtimer_add(l->tick, &tv);
			return;
		}
	}
}

/*
 * The entry of owner uid (added when add is set), or NULL.  Entries stay
 * once made, with their log limiters: a user who makes and removes
 * directories in a loop keeps the same limiter.  There are as many as uids
 * that ever owned something in the directory, at most LEGACY_OWNERS_MAX.
 */
static struct legacy_owner *
legacy_owner(struct legacy *l, uid_t uid, int add)
{
	struct legacy_owner	*o;
	size_t			 i;

	for (i = 0; i < l->nowners; i++)
		if (l->owners[i].uid == uid)
			return (&l->owners[i]);
	if (!add || l->nowners >= LEGACY_OWNERS_MAX ||
	    (o = reallocarray(l->owners, l->nowners + 1, sizeof(*o))) == NULL)
		return (NULL);
	l->owners = o;
	o = &l->owners[l->nowners++];
	memset(o, 0, sizeof(*o));
	o->uid = uid;
	return (o);
}

/* The log limiter of what owner uid triggers (the directory's if none). */
static struct log_limit *
legacy_owner_log(struct legacy *l, uid_t uid, int refusals)
{
	struct legacy_owner	*o;

	if ((o = legacy_owner(l, uid, 1)) == NULL)
		return (&l->log);
	return (refusals ? &o->refusals : &o->log);
}

/* One job directory less for its owner; refused ones may fit now. */
static void
legacy_owner_release(struct legacy *l, uid_t uid)
{
	struct legacy_owner	*o;

	if ((o = legacy_owner(l, uid, 0)) != NULL && o->njobs > 0)
		o->njobs--;
	if (l->refused_budget)
		l->rescan = 1;
}

/*
 * Watches lj's directory, the one open as dfd (not whatever its name leads
 * to by the time a path is resolved): through /proc/self/fd, else by name
 * without following a link.
 */
static void
legacy_watch(struct legacy *l, struct legacy_job *lj, int dfd)
{
	char	 path[PATH_MAX];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", dfd);
	lj->wd = inotify_add_watch(l->fd, path, LEGACY_JOB_EVENTS);
	if (lj->wd == -1 && snprintf(path, sizeof(path), "%s/%s", l->dir,
	    lj->name) < (int)sizeof(path))
		lj->wd = inotify_add_watch(l->fd, path, LEGACY_JOB_EVENTS |
		    IN_DONT_FOLLOW);
	if (lj->wd == -1)
		log_limited(&lj->log, LOG_LEVEL_QUIET, "%s: cannot watch %s/%s: "
		    "%s", __func__, l->dir, lj->name, strerror(errno));
}

/* Tells the coordinator the job is on this node, with what it holds. */
static void
legacy_subscribe(struct legacy *l, struct legacy_job *lj)
{
	lj->subscribed = 1;
	upstream_subscribe_name(l->a, lj->name, lj->sched != NULL ?
	    lj->sched->generation : 0);
}

/*
 * Refuses name, owned by uid (-1: unknown): counted, and logged within the
 * limit of that owner's refusals.
 */
static struct legacy_job *
legacy_refuse(struct legacy *l, uint64_t *counter, const char *name,
    uid_t uid, const char *why)
{
	(*counter)++;
	l->a->stats.legacy_refused++;
	log_limited(uid == (uid_t)-1 ? &l->log : legacy_owner_log(l, uid, 1),
	    LOG_LEVEL_QUIET, "%s/%.100s: %s: ignored", l->dir, name, why);
	return (NULL);
}

/* Serves the job directory name, if it is one.  Returns the job or NULL. */
static struct legacy_job *
legacy_add(struct legacy *l, const char *name)
{
	struct agent_stats	*s = &l->a->stats;
	struct legacy_owner	*o;
	struct legacy_job	*lj;
	struct stat		 st;
	const char		*why;
	char			 what[128];
	int			 dfd;

	if ((lj = legacy_find(l, name)) != NULL)
		return (lj);
	if (fstatat(l->root_fd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return (NULL);			/* gone already */
	if (!jobid_valid(name, &why)) {
		snprintf(what, sizeof(what), "not a job id (%s)", why);
		return (legacy_refuse(l, &s->legacy_refused_name, name,
		    st.st_uid, what));
	}
	if ((dfd = legacy_fs_open_name(l, name, &st, what,
	    sizeof(what))) == -1) {
		if (errno == ENOENT)
			return (NULL);		/* gone already */
		strncat(what, ", not a job directory", sizeof(what) -
		    strlen(what) - 1);
		return (legacy_refuse(l, &s->legacy_refused_type, name,
		    st.st_uid, what));
	}
	if (l->njobs >= LEGACY_JOBS_MAX) {
		close(dfd);
		snprintf(what, sizeof(what), "already %d jobs",
		    LEGACY_JOBS_MAX);
		l->refused_budget = 1;
		return (legacy_refuse(l, &s->legacy_refused_max, name,
		    st.st_uid, what));
	}
	o = legacy_owner(l, st.st_uid, 1);
	if (o == NULL || o->njobs >= l->a->opts.legacy_per_uid) {
		close(dfd);
		snprintf(what, sizeof(what), "its owner, uid %u, has %zu job "
		    "directories served already (--legacy-per-uid)",
		    (unsigned)st.st_uid, o != NULL ? o->njobs : 0);
		l->refused_budget = 1;
		return (legacy_refuse(l, &s->legacy_refused_uid, name,
		    st.st_uid, what));
	}
	if ((lj = calloc(1, sizeof(*lj))) == NULL) {
		log_warn("%s", __func__);
		close(dfd);
		return (NULL);
	}
	o->njobs++;
	strcpy(lj->name, name);		/* jobid_valid(): it fits */
	lj->dev = st.st_dev;
	lj->ino = st.st_ino;
	lj->uid = st.st_uid;
	lj->gid = st.st_gid;
	lj->dialect = -1;
	lj->seen_wall = time(NULL);
	legacy_watch(l, lj, dfd);
	close(dfd);
	TAILQ_INSERT_TAIL(&l->jobs, lj, entry);
	l->njobs++;
	lj->status_dirty = 1;
	legacy_subscribe(l, lj);
	legacy_detect(l, lj);
	log_limited(&o->log, LOG_LEVEL_INFO, "legacy job %s: serving %s/%s "
	    "(uid %u), dialect %s%s%s", name, l->dir, name, (unsigned)lj->uid,
	    options_dialect_name((enum options_dialect)lj->dialect),
	    lj->error[0] != '\0' ? ": " : "", lj->error);
	legacy_eval(l, lj);
	return (lj);
}

/* Frees lj and what its observers hold. */
static void
legacy_job_free(struct legacy_job *lj)
{
	legacy_observe_reset(lj);
	legacy_observe_prev_reset(lj);
	legacy_log_reset(lj);
	json_decref(lj->base);
	free(lj->sched);
	free(lj);
}

/* Stops serving lj: its directory went. */
static void
legacy_remove(struct legacy *l, struct legacy_job *lj)
{
	log_limited(legacy_owner_log(l, lj->uid, 0), LOG_LEVEL_INFO, "legacy "
	    "job %s: %s/%s is gone", lj->name, l->dir, lj->name);
	legacy_send_status(l, lj, 1);
	if (lj->wd != -1)
		(void)inotify_rm_watch(l->fd, lj->wd);
	TAILQ_REMOVE(&l->jobs, lj, entry);
	l->njobs--;
	legacy_owner_release(l, lj->uid);
	strcpy(l->gone[l->ngone % LEGACY_GONE_MAX].name, lj->name);
	l->gone[l->ngone++ % LEGACY_GONE_MAX].at_ms = clock_mono_ms();
	/* Ranks of the job that report for themselves keep it subscribed. */
	if (lj->subscribed && !jobs_subscribed(l->a, lj->name))
		upstream_unsubscribe_name(l->a, lj->name);
	legacy_job_free(lj);
}

/*
 * Whether lj's name still leads to the directory served (a name swapped for
 * a link or another directory, even for a moment, does not: the new one, if
 * a directory, is served anew).
 */
static int
legacy_still_there(struct legacy *l, const struct legacy_job *lj)
{
	struct stat	 st;

	return (fstatat(l->root_fd, lj->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_dev == lj->dev &&
	    st.st_ino == lj->ino && st.st_uid == lj->uid);
}

/*
 * Looks at the name of every job marked for it: one that no longer leads to
 * its directory is dropped, and whatever is there now added if it is one.
 */
static void
legacy_check_names(struct legacy *l)
{
	struct legacy_job	*lj, *next;
	char			 name[SEG_JOB_MAX + 1];
	size_t			 n = l->njobs;

	/* Those there now: one added back goes to the tail, for next time. */
	for (lj = TAILQ_FIRST(&l->jobs); lj != NULL && n-- > 0; lj = next) {
		next = TAILQ_NEXT(lj, entry);
		if (!lj->check)
			continue;
		lj->check = 0;
		if (legacy_still_there(l, lj)) {
			if (lj->redetect) {
				legacy_detect(l, lj);
				legacy_eval(l, lj);
			}
			continue;
		}
		strcpy(name, lj->name);
		legacy_remove(l, lj);
		(void)legacy_add(l, name);
	}
}

/* Serves every job directory in l->dir, and drops those that went. */
static void
legacy_scan(struct legacy *l)
{
	struct legacy_job	*lj, *next;
	struct dirent		*de;
	DIR			*d;
	int			 fd;

	for (lj = TAILQ_FIRST(&l->jobs); lj != NULL; lj = next) {
		next = TAILQ_NEXT(lj, entry);
		if (!legacy_still_there(l, lj))
			legacy_remove(l, lj);
	}
	l->rescan = 0;
	l->refused_budget = 0;
	l->rescan_at_ms = clock_mono_ms();
	if ((fd = openat(l->root_fd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1 || (d = fdopendir(fd)) == NULL) {
		log_limited(&l->log, LOG_LEVEL_QUIET, "%s: %s: %s", __func__,
		    l->dir, strerror(errno));
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		(void)legacy_add(l, de->d_name);
	}
	closedir(d);
}

/* The tick: output directories scanned, writes that were not allowed yet. */
static void
legacy_tick(evutil_socket_t fd, short what, void *arg)
{
	struct legacy		*l = arg;
	struct legacy_job	*lj;

	(void)fd;
	(void)what;
	legacy_check_names(l);
	if (l->rescan && clock_mono_ms() - l->rescan_at_ms >= LEGACY_RETRY_MS)
		legacy_scan(l);
	TAILQ_FOREACH(lj, &l->jobs, entry) {
		if (!legacy_busy(lj))
			continue;
		if ((lj->written != 0 || lj->prev != 0) &&
		    lj->output[0] != '\0' && lj->sched != NULL)
			(void)legacy_observe(l, lj, lj->sched->generation);
		if (lj->written != 0)
			legacy_log_scan(l, lj, 0);
		legacy_eval(l, lj);
	}
	legacy_arm(l);
}

/* One inotify event: a job directory came or went, or a job's file changed. */
static void
legacy_inotify_event(struct legacy *l, const struct inotify_event *ie)
{
	struct legacy_job	*lj;

	if (ie->mask & IN_Q_OVERFLOW) {
		log_limited(&l->log, LOG_LEVEL_QUIET, "%s: inotify queue "
		    "overflow: rescanning", l->dir);
		legacy_scan(l);
		return;
	}
	if (ie->wd == l->dir_wd) {
		if (ie->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
			log_warnx("%s: removed or moved: no new legacy job is "
			    "seen until the agent restarts", l->dir);
		if (ie->len == 0)
			return;
		/*
		 * A name that went, or came over one served: looked at again
		 * at the tick (a name swapped back and forth is not served
		 * anew each time).  Anything else that comes is said by
		 * legacy_add(), within its limit.
		 */
		if ((lj = legacy_find(l, ie->name)) != NULL) {
			lj->check = 1;
			legacy_arm(l);
		} else if (ie->mask & (IN_CREATE | IN_MOVED_TO))
			(void)legacy_add(l, ie->name);
		return;
	}
	TAILQ_FOREACH(lj, &l->jobs, entry) {
		if (lj->wd != ie->wd)
			continue;
		if (ie->mask & IN_IGNORED)
			lj->wd = -1;
		if (ie->len > 0 && (strcmp(ie->name, LEGACY_CONFIG_NAME) == 0 ||
		    strcmp(ie->name, LEGACY_DIALECT_NAME) == 0 ||
		    strcmp(ie->name, LEGACY_OUTPUT_NAME) == 0 ||
		    strcmp(ie->name, LEGACY_LOGS_NAME) == 0)) {
			legacy_detect(l, lj);
			legacy_eval(l, lj);
		}
		return;
	}
}

/* The inotify descriptor is readable: handles every event queued. */
static void
legacy_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct legacy		*l = arg;
	char			 buf[16384]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ie;
	ssize_t			 n;
	char			*p;
	int			 rounds;

	(void)what;
	for (rounds = 0; rounds < 64; rounds++) {
		if ((n = read(fd, buf, sizeof(buf))) <= 0) {
			if (n == -1 && errno != EAGAIN && errno != EINTR)
				log_warn("%s: read", __func__);
			return;
		}
		for (p = buf; p < buf + n; p += sizeof(*ie) + ie->len) {
			ie = (const struct inotify_event *)p;
			legacy_inotify_event(l, ie);
		}
	}
}

/*
 * Starts serving --legacy-dir, if given: opens and watches it and serves the
 * job directories already there.  Returns 0, or -1 when it cannot be watched.
 */
int
legacy_open(struct agent *a)
{
	struct legacy	*l;
	struct stat	 st;

	if (a->opts.legacy_dir[0] == '\0')
		return (0);
	if ((l = calloc(1, sizeof(*l))) == NULL)
		fatal("%s", __func__);
	l->a = a;
	l->fd = -1;
	l->root_fd = -1;
	TAILQ_INIT(&l->jobs);
	snprintf(l->dir, sizeof(l->dir), "%s", a->opts.legacy_dir);
	a->lg = l;
	/* The operator's path: the one place a link is followed. */
	if ((l->root_fd = open(l->dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK |
	    O_CLOEXEC)) == -1 || fstat(l->root_fd, &st) == -1 ||
	    (l->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1 ||
	    (l->dir_wd = inotify_add_watch(l->fd, l->dir,
	    LEGACY_DIR_EVENTS)) == -1) {
		log_warn("--legacy-dir %s", l->dir);
		return (-1);
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))
		log_warnx("--legacy-dir %s: mode %04o: writable by others "
		    "without the sticky bit, so anyone can move anyone's job "
		    "directory", l->dir, (unsigned)(st.st_mode & 07777));
	if ((l->ev = event_new(a->base, l->fd, EV_READ | EV_PERSIST,
	    legacy_read_cb, l)) == NULL || event_add(l->ev, NULL) == -1 ||
	    (l->tick = evtimer_new(a->base, legacy_tick, l)) == NULL ||
	    (l->soon = evtimer_new(a->base, legacy_tick, l)) == NULL)
		fatalx("%s: cannot watch %s", __func__, l->dir);
	legacy_scan(l);
	log_info("legacy jobs: watching %s (%zu jobs, at most %zu of one "
	    "owner)", l->dir, l->njobs, a->opts.legacy_per_uid);
	return (0);
}

/* Whether a legacy directory serves job name (it keeps it subscribed). */
int
legacy_serves(struct agent *a, const char *name)
{
	return (a->lg != NULL && legacy_find(a->lg, name) != NULL);
}

/*
 * Whether job name's directory went within LEGACY_GONE_MS: a schedule the
 * coordinator sent before it heard of that is nobody's to keep (no segment is
 * made for it).
 */
static int
legacy_was_served(struct legacy *l, const char *name)
{
	int64_t	 now = clock_mono_ms();
	size_t	 i;

	for (i = 0; i < LEGACY_GONE_MAX; i++)
		if (l->gone[i].at_ms != 0 && now - l->gone[i].at_ms <
		    LEGACY_GONE_MS && strcmp(l->gone[i].name, name) == 0)
			return (1);
	return (0);
}

/*
 * A schedule pushed for job name, checked (cfg; NULL: the coordinator has
 * none, which never replaces one held).  A legacy job keeps the newest and
 * answers Applied.  Returns 1 if a legacy directory serves the job (or did a
 * moment ago: then the schedule is dropped), else 0.
 */
int
legacy_config(struct agent *a, const char *name, const struct seg_config *cfg)
{
	struct legacy_sched	*s;
	struct legacy_job	*lj;

	if (a->lg == NULL)
		return (0);
	if ((lj = legacy_find(a->lg, name)) == NULL)
		return (legacy_was_served(a->lg, name));
	if (cfg != NULL && (lj->sched == NULL ||
	    cfg->generation > lj->sched->generation) &&
	    cfg->nwindows <= SEG_MAX_WINDOWS) {
		if ((s = malloc(sizeof(*s) + cfg->nwindows *
		    sizeof(s->windows[0]))) == NULL) {
			log_warn("%s", __func__);
			return (1);
		}
		s->generation = cfg->generation;
		s->nwindows = cfg->nwindows;
		memcpy(s->windows, cfg->windows, cfg->nwindows *
		    sizeof(s->windows[0]));
		free(lj->sched);
		lj->sched = s;
		log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: schedule "
		    "generation %llu (%u windows)", name,
		    (unsigned long long)s->generation, s->nwindows);
	}
	upstream_applied_name(a, name, lj->sched != NULL ?
	    lj->sched->generation : 0);
	legacy_eval(a->lg, lj);
	return (1);
}

/* The coordinator link is up again: every legacy job's subscription, status. */
void
legacy_resend(struct agent *a)
{
	struct legacy_job	*lj;

	if (a->lg == NULL)
		return;
	TAILQ_FOREACH(lj, &a->lg->jobs, entry) {
		legacy_subscribe(a->lg, lj);
		legacy_send_status(a->lg, lj, 0);
	}
}

/* Stops watching and frees everything (the files stay). */
void
legacy_close(struct agent *a)
{
	struct legacy		*l = a->lg;
	struct legacy_job	*lj;

	if (l == NULL)
		return;
	while ((lj = TAILQ_FIRST(&l->jobs)) != NULL) {
		TAILQ_REMOVE(&l->jobs, lj, entry);
		legacy_job_free(lj);
	}
	if (l->ev != NULL)
		event_free(l->ev);
	if (l->tick != NULL)
		event_free(l->tick);
	if (l->soon != NULL)
		event_free(l->soon);
	if (l->fd != -1)
		close(l->fd);
	if (l->root_fd != -1)
		close(l->root_fd);
	free(l->owners);
	free(l);
	a->lg = NULL;
}
