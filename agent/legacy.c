/*
 * --legacy-dir: jobs whose code dynprof never touched (docs/legacy.md).  The
 * directory is watched with inotify; each subdirectory named after a valid
 * job id is a job on this node, served as a job with a segment is (the
 * segment holds its schedule, so an agent restart loses nothing) and kept
 * subscribed while the directory is there.  On every change of the schedule,
 * of the job's directory and at each tick while a window is out, the window
 * due is worked out: the file holds one window at a time, the next is written
 * once the one before is over (observed complete on every rank seen, or
 * cancelled, or gone from the schedule).  What the agent did with each
 * window, and why, goes to the coordinator as a LegacyStatus.
 */

#include <sys/inotify.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "agent.h"
#include "clock.h"
#include "jobid.h"
#include "legacy.h"
#include "log.h"

#define LEGACY_DIR_EVENTS	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | \
	    IN_MOVED_TO | IN_ONLYDIR | IN_DELETE_SELF | IN_MOVE_SELF)
#define LEGACY_JOB_EVENTS	(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | \
	    IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR)

static void	legacy_eval(struct legacy *, struct legacy_job *);
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

/*
 * The job's segment, served and subscribed (opened again if it was dropped
 * under us); NULL when it cannot be opened.
 */
static struct agent_job *
legacy_segment(struct legacy *l, struct legacy_job *lj)
{
	struct agent_job	*j;

	if ((j = segments_get(l->a, lj->name, 1)) == NULL) {
		snprintf(lj->error, sizeof(lj->error), "no segment for the "
		    "job in %.200s", l->a->opts.shm_dir);
		return (NULL);
	}
	j->keep = 1;		/* no rank of ours ever attaches */
	if (!j->subscribed)
		upstream_subscribe(l->a, j);
	return (j);
}

/* Reads the job's schedule from its segment into l->cfg (guarded). */
static int
legacy_read_cfg(void *arg)
{
	struct legacy		*l = ((void **)arg)[0];
	struct agent_job	*j = ((void **)arg)[1];

	return (segment_read_config(&j->seg, l->cfg, NULL) == SEG_OK ? 0 : -1);
}

/* Sends lj's status (removed: its directory went).  Clears status_dirty. */
static void
legacy_send_status(struct legacy *l, struct legacy_job *lj, int removed)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__LegacyStatus	 st = DYNPROF__V1__LEGACY_STATUS__INIT;
	Dynprof__V1__LegacyWindow	 w[SEG_MAX_WINDOWS], *wp[SEG_MAX_WINDOWS];
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

/* Returns 1 if window id was written and is over. */
static int
legacy_is_over(const struct legacy_job *lj, uint32_t id)
{
	size_t	 i;

	for (i = 0; i < lj->nover && i < LEGACY_OVER_MAX; i++)
		if (lj->over[i] == id)
			return (1);
	return (0);
}

/* The window in the file is over: remembered, and nothing is out. */
static void
legacy_set_over(struct legacy_job *lj, const char *why)
{
	log_info("legacy job %s: window %u over: %s", lj->name, lj->written,
	    why);
	lj->over[lj->nover++ % LEGACY_OVER_MAX] = lj->written;
	lj->written = 0;
	legacy_observe_reset(lj);
	lj->status_dirty = 1;
}

/* Checks whether the window in the file is over (w NULL: left the schedule). */
static void
legacy_check_over(struct legacy_job *lj, const struct seg_window *w,
    int64_t now)
{
	size_t	 i;

	if (w == NULL) {
		legacy_set_over(lj, "it left the schedule");
		return;
	}
	if (w->flags & SEG_WINDOW_CANCELLED) {
		legacy_set_over(lj, "cancelled");
		return;
	}
	if (lj->nranks == 0 || now - lj->settled_at_ms < LEGACY_SETTLE_MS)
		return;
	for (i = 0; i < lj->nranks; i++)
		if (!lj->ranks[i].complete)
			return;
	legacy_set_over(lj, "every rank seen completed it");
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

/*
 * Writes window w (NULL: the file says "no window") if the rules allow it now;
 * otherwise arms a retry.  Returns 1 if written.
 */
static int
legacy_try_write(struct legacy *l, struct legacy_job *lj,
    const struct seg_window *w, int64_t now)
{
	const char	*why;

	if (now < lj->retry_at_ms)
		return (0);
	if (legacy_write_due(lj, now) > now) {
		if (w != NULL && lj->early != w->id) {
			lj->early = w->id;
			legacy_write_record(l->a, lj, w);
		}
		return (0);
	}
	if (legacy_write(l->a, lj, w, &why) == -1) {
		/* Retried each LEGACY_RETRY_MS: said when it changes. */
		if (strcmp(lj->write_error, why) != 0)
			log_warnx("legacy job %s: %s", lj->name, why);
		snprintf(lj->write_error, sizeof(lj->write_error), "%s", why);
		snprintf(lj->error, sizeof(lj->error), "%s", why);
		lj->retry_at_ms = now + LEGACY_RETRY_MS;
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
		log_info("legacy job %s: wrote no window", lj->name);
		return (1);
	}
	lj->written = w->id;
	lj->written_start = w->start_step;
	lj->written_stop = w->stop_step;
	legacy_observe_reset(lj);
	log_info("legacy job %s: wrote window %u (steps %lld-%lld) as %s",
	    lj->name, w->id, (long long)w->start_step, (long long)w->stop_step,
	    options_dialect_name((enum options_dialect)lj->dialect));
	return (1);
}

/* Works out the state of every window of cfg; returns the next to write. */
static const struct seg_window *
legacy_plan(struct legacy_job *lj, const struct seg_config *cfg,
    struct legacy_window *out, size_t *nout)
{
	const struct seg_window	*w, *next = NULL;
	char			 why[LEGACY_REASON_MAX], reason[LEGACY_REASON_MAX];
	uint32_t		 i;
	int			 st;

	*nout = 0;
	for (i = 0; i < cfg->nwindows; i++) {
		w = &cfg->windows[i];
		reason[0] = '\0';
		if (legacy_is_over(lj, w->id))
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER;
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
		} else if (w->id == lj->written) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WRITTEN;
			if (snprintf(reason, sizeof(reason), "%s%s%s", why,
			    why[0] != '\0' && lj->shm_note[0] != '\0' ? "; " :
			    "", lj->shm_note) >= (int)sizeof(reason))
				reason[sizeof(reason) - 1] = '\0';
		} else if (lj->written != 0 || next != NULL) {
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING;
			snprintf(reason, sizeof(reason), "one window at a time: "
			    "written once window %u is over", lj->written != 0 ?
			    lj->written : next->id);
		} else {
			next = w;
			st = DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING;
			if (lj->dialect == OPTIONS_TORCH_NPU &&
			    !lj->framework_seen)
				snprintf(reason, sizeof(reason), "waiting for "
				    "torch_npu's own %s: it ignores a file older "
				    "than its start", LEGACY_CONFIG_NAME);
			else if (lj->write_error[0] != '\0')
				snprintf(reason, sizeof(reason), "not written: "
				    "%.200s", lj->write_error);
			else if (snprintf(reason, sizeof(reason), "due: written "
			    "within %d ms%s%s", LEGACY_WRITE_GAP_MS,
			    lj->early == w->id ? "; " : "", lj->early == w->id ?
			    lj->shm_note : "") >= (int)sizeof(reason))
				reason[sizeof(reason) - 1] = '\0';
		}
		legacy_window_state(&out[(*nout)++], w->id, st, reason);
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
	struct legacy_window	 ws[SEG_MAX_WINDOWS];
	const struct seg_window	*w = NULL, *next;
	struct agent_job	*j;
	void			*ctx[2];
	size_t			 n, i;
	int64_t			 now = clock_mono_ms();
	int			 disable = 0;

	if ((j = legacy_segment(l, lj)) == NULL) {
		lj->status_dirty = 1;
		goto send;
	}
	ctx[0] = l;
	ctx[1] = j;
	if (guard_call(legacy_read_cfg, ctx, NULL) == -1) {
		segments_drop_faulted(l->a);
		return;
	}
	if (lj->written != 0) {
		for (i = 0; i < l->cfg->nwindows; i++)
			if (l->cfg->windows[i].id == lj->written)
				w = &l->cfg->windows[i];
		/* Cancelled before a rank was seen running it: say so. */
		disable = w != NULL && (w->flags & SEG_WINDOW_CANCELLED) &&
		    lj->nranks == 0 && lj->dialect != OPTIONS_TORCH_NPU;
		legacy_check_over(lj, w, now);
	}
	next = legacy_plan(lj, l->cfg, ws, &n);
	if (lj->dialect >= 0 && !(lj->dialect == OPTIONS_TORCH_NPU &&
	    !lj->framework_seen)) {
		if (next != NULL && legacy_try_write(l, lj, next, now))
			next = legacy_plan(lj, l->cfg, ws, &n);
		else if (next == NULL && disable && !lj->written_disabled)
			(void)legacy_try_write(l, lj, NULL, now);
	}
	if (n != lj->nwindows || memcmp(ws, lj->windows, n * sizeof(ws[0])) != 0) {
		memset(lj->windows, 0, sizeof(lj->windows));
		memcpy(lj->windows, ws, n * sizeof(ws[0]));
		lj->nwindows = n;
		lj->status_dirty = 1;
	}
send:
	if (lj->status_dirty)
		legacy_send_status(l, lj, 0);
	legacy_arm(l);
}

/* Returns 1 if lj needs the tick: a window out, or one due. */
static int
legacy_busy(const struct legacy_job *lj)
{
	size_t	 i;

	if (lj->written != 0 || lj->status_dirty || lj->retry_at_ms != 0)
		return (1);
	if (lj->dialect < 0)
		return (0);
	for (i = 0; i < lj->nwindows; i++)
		if (lj->windows[i].state ==
		    DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING)
			return (1);
	return (0);
}

/* Arms the tick while some job needs it. */
static void
legacy_arm(struct legacy *l)
{
	struct legacy_job	*lj;
	struct timeval		 tv = { 0, LEGACY_TICK_MS * 1000 };

	if (evtimer_pending(l->tick, NULL))
		return;
	TAILQ_FOREACH(lj, &l->jobs, entry) {
		if (legacy_busy(lj)) {
			evtimer_add(l->tick, &tv);
			return;
		}
	}
}

/* The tick: output directories scanned, writes that were not allowed yet. */
static void
legacy_tick(evutil_socket_t fd, short what, void *arg)
{
	struct legacy		*l = arg;
	struct legacy_job	*lj;
	struct agent_job	*j;

	(void)fd;
	(void)what;
	TAILQ_FOREACH(lj, &l->jobs, entry) {
		if (!legacy_busy(lj))
			continue;
		if (lj->written != 0 && lj->output[0] != '\0' &&
		    (j = segments_find(l->a, lj->name)) != NULL)
			(void)legacy_observe(l, lj, j->applied);
		legacy_eval(l, lj);
	}
	legacy_arm(l);
}

/* Serves the job directory name, if it is one.  Returns the job or NULL. */
static struct legacy_job *
legacy_add(struct legacy *l, const char *name)
{
	struct legacy_job	*lj;
	struct stat		 st;
	const char		*why;

	if ((lj = legacy_find(l, name)) != NULL)
		return (lj);
	if (!jobid_valid(name, &why)) {
		log_warnx("%s/%.100s: not a job id (%s): ignored", l->dir, name,
		    why);
		return (NULL);
	}
	if (l->njobs >= LEGACY_JOBS_MAX) {
		log_warnx("%s/%s: already %d jobs: ignored", l->dir, name,
		    LEGACY_JOBS_MAX);
		return (NULL);
	}
	if ((lj = calloc(1, sizeof(*lj))) == NULL) {
		log_warn("%s", __func__);
		return (NULL);
	}
	strcpy(lj->name, name);		/* jobid_valid(): it fits */
	if ((size_t)snprintf(lj->dir, sizeof(lj->dir), "%s/%s", l->dir,
	    name) >= sizeof(lj->dir) || lstat(lj->dir, &st) == -1 ||
	    !S_ISDIR(st.st_mode)) {
		if (lj->dir[0] != '\0' && lstat(lj->dir, &st) == 0)
			log_warnx("%s: %s, not a job directory: ignored",
			    lj->dir, S_ISLNK(st.st_mode) ? "a symbolic link" :
			    S_ISREG(st.st_mode) ? "a plain file" :
			    "not a directory");
		free(lj);
		return (NULL);
	}
	lj->dialect = -1;
	lj->seen_wall = time(NULL);
	lj->wd = inotify_add_watch(l->fd, lj->dir, LEGACY_JOB_EVENTS);
	if (lj->wd == -1)
		log_warn("%s: cannot watch %s", __func__, lj->dir);
	TAILQ_INSERT_TAIL(&l->jobs, lj, entry);
	l->njobs++;
	log_info("legacy job %s: serving %s", name, lj->dir);
	lj->status_dirty = 1;
	legacy_detect(lj);
	legacy_eval(l, lj);
	return (lj);
}

/* Stops serving lj: its directory went. */
static void
legacy_remove(struct legacy *l, struct legacy_job *lj)
{
	struct agent_job	*j;

	log_info("legacy job %s: %s is gone", lj->name, lj->dir);
	legacy_send_status(l, lj, 1);
	if (lj->wd != -1)
		(void)inotify_rm_watch(l->fd, lj->wd);
	/* The sampler unsubscribes and, after the grace, removes it. */
	if ((j = segments_find(l->a, lj->name)) != NULL) {
		j->keep = 0;
		agent_wake_sampler(l->a);
	}
	TAILQ_REMOVE(&l->jobs, lj, entry);
	l->njobs--;
	legacy_observe_reset(lj);
	json_decref(lj->base);
	free(lj);
}

/* Serves every job directory in l->dir, and drops those that went. */
static void
legacy_scan(struct legacy *l)
{
	struct legacy_job	*lj, *next;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;

	for (lj = TAILQ_FIRST(&l->jobs); lj != NULL; lj = next) {
		next = TAILQ_NEXT(lj, entry);
		if (lstat(lj->dir, &st) == -1 || !S_ISDIR(st.st_mode))
			legacy_remove(l, lj);
	}
	if ((d = opendir(l->dir)) == NULL) {
		log_warn("%s: %s", __func__, l->dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		(void)legacy_add(l, de->d_name);
	}
	closedir(d);
}

/* One inotify event: a job directory came or went, or a job's file changed. */
static void
legacy_inotify_event(struct legacy *l, const struct inotify_event *ie)
{
	struct legacy_job	*lj;

	if (ie->mask & IN_Q_OVERFLOW) {
		log_warnx("%s: inotify queue overflow: rescanning", l->dir);
		legacy_scan(l);
		return;
	}
	if (ie->wd == l->dir_wd) {
		if (ie->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
			log_warnx("%s: removed or moved: no new legacy job is "
			    "seen until the agent restarts", l->dir);
		if (ie->len == 0)
			return;
		/* Anything else that comes is said once, by legacy_add(). */
		if (!(ie->mask & IN_ISDIR)) {
			if (ie->mask & (IN_CREATE | IN_MOVED_TO))
				(void)legacy_add(l, ie->name);
			return;
		}
		if (ie->mask & (IN_CREATE | IN_MOVED_TO))
			(void)legacy_add(l, ie->name);
		else if ((ie->mask & (IN_DELETE | IN_MOVED_FROM)) &&
		    (lj = legacy_find(l, ie->name)) != NULL)
			legacy_remove(l, lj);
		return;
	}
	TAILQ_FOREACH(lj, &l->jobs, entry) {
		if (lj->wd != ie->wd)
			continue;
		if (ie->mask & IN_IGNORED)
			lj->wd = -1;
		if (ie->len > 0 && (strcmp(ie->name, LEGACY_CONFIG_NAME) == 0 ||
		    strcmp(ie->name, LEGACY_DIALECT_NAME) == 0 ||
		    strcmp(ie->name, LEGACY_OUTPUT_NAME) == 0)) {
			legacy_detect(lj);
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
 * Starts serving --legacy-dir, if given: watches it and serves the job
 * directories already there.  Returns 0, or -1 when it cannot be watched.
 */
int
legacy_open(struct agent *a)
{
	struct legacy	*l;

	if (a->opts.legacy_dir[0] == '\0')
		return (0);
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->cfg = malloc(sizeof(*l->cfg))) == NULL)
		fatal("%s", __func__);
	l->a = a;
	TAILQ_INIT(&l->jobs);
	snprintf(l->dir, sizeof(l->dir), "%s", a->opts.legacy_dir);
	a->lg = l;
	if ((l->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1 ||
	    (l->dir_wd = inotify_add_watch(l->fd, l->dir,
	    LEGACY_DIR_EVENTS)) == -1) {
		log_warn("--legacy-dir %s", l->dir);
		return (-1);
	}
	if ((l->ev = event_new(a->base, l->fd, EV_READ | EV_PERSIST,
	    legacy_read_cb, l)) == NULL || event_add(l->ev, NULL) == -1 ||
	    (l->tick = evtimer_new(a->base, legacy_tick, l)) == NULL)
		fatalx("%s: cannot watch %s", __func__, l->dir);
	legacy_scan(l);
	log_info("legacy jobs: watching %s (%zu jobs)", l->dir, l->njobs);
	return (0);
}

/* A job's schedule changed in its segment: its file may need another window. */
void
legacy_schedule(struct agent *a, struct agent_job *j)
{
	struct legacy_job	*lj;

	if (a->lg != NULL && (lj = legacy_find(a->lg, j->name)) != NULL)
		legacy_eval(a->lg, lj);
}

/* The coordinator link is up again: every legacy job's status, again. */
void
legacy_resend(struct agent *a)
{
	struct legacy_job	*lj;

	if (a->lg == NULL)
		return;
	TAILQ_FOREACH(lj, &a->lg->jobs, entry)
		legacy_send_status(a->lg, lj, 0);
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
		legacy_observe_reset(lj);
		json_decref(lj->base);
		free(lj);
	}
	if (l->ev != NULL)
		event_free(l->ev);
	if (l->tick != NULL)
		event_free(l->tick);
	if (l->fd != -1)
		close(l->fd);
	free(l->cfg);
	free(l);
	a->lg = NULL;
}
