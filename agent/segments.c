/*
 * The jobs this agent serves, one shared memory segment each: adopted at start,
 * created for a pushed config, written under the seqlock, sampled for progress
 * and dead ranks (whose events events.c forwards), removed once every process
 * of the job has been gone for the grace period.
 */

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "parts.h"
#include "clock.h"
#include "jobid.h"
#include "log.h"
#include "pidlock.h"

#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424	/* every architecture but alpha */
#endif

_Static_assert(sizeof(((struct agent_job *)0)->name) > JOBID_MAX,
    "a job's name holds any valid job id");

/*
 * At most what a new segment takes (segment.c lays it out: the header, the
 * schedule, 64-byte aligned, the slots): what --shm-budget checks first.
 */
#define SEGMENTS_NEW_MAX	(sizeof(struct seg_header) + \
	sizeof(struct seg_config) + 64 + SEG_MAX_SLOTS * sizeof(struct seg_slot))

struct segments_dead_ctx {
	struct agent		*a;
	struct agent_job	*j;
};

/* Bytes of shared memory in the segments this agent created and serves. */
static uint64_t
segments_reserved(struct agent *a)
{
	struct agent_job	*j;
	uint64_t		 n = 0;

	TAILQ_FOREACH(j, &a->jobs, entry)
		if (j->created)
			n += j->seg.size;
	return (n);
}

/* Tells the coordinator (once per job name) a rank of job is on this node. */
void
segments_subscribe(struct agent *a, struct agent_job *j)
{
	j->subscribed = 1;
	/* Once for the job: another user's segment of it may be already. */
	if (!jobs_sibling_subscribed(a, j, 1))
		upstream_subscribe_name(a, j->name, j->applied);
}

/*
 * Tells the coordinator the last rank of job on this node is gone, unless
 * its legacy directory keeps the job on this node.
 */
void
segments_unsubscribe(struct agent *a, struct agent_job *j)
{
	j->subscribed = 0;
	if (!legacy_serves(a, j->name) && !jobs_sibling_subscribed(a, j, 0))
		upstream_unsubscribe_name(a, j->name);
}

/*
 * The coordinator link is up again: each job is subscribed again, or (the
 * hello listed it, which subscribes) unsubscribed, and its progress sent.
 */
void
segments_welcomed(struct agent *a)
{
	struct agent_job	*j;

	TAILQ_FOREACH(j, &a->jobs, entry) {
		if (j->subscribed)
			segments_subscribe(a, j);
		else
			segments_unsubscribe(a, j);
		j->progress_dirty = 1;
	}
}

/* Claims a freshly mapped segment for this agent (guarded: it is mapped). */
static int
segments_claim(void *arg)
{
	struct agent_job	*j = arg;

	j->applied = atomic_load_explicit(&j->seg.hdr->generation,
	    memory_order_relaxed);
	atomic_store_explicit(&j->seg.hdr->agent_pid, (int32_t)getpid(),
	    memory_order_relaxed);
	/* Its ranks keep it from now on (it holds its shared lock). */
	atomic_store(&j->seg.hdr->served, 1);
	return (0);
}

struct segments_copy_ctx {
	struct agent_job	*j;
	struct seg_config	*cfg;
	int			 rc;
};

/* Reads a job's schedule (guarded). */
static int
segments_read_cb(void *arg)
{
	struct segments_copy_ctx	*ctx = arg;

	return (segment_read_config(&ctx->j->seg, ctx->cfg, NULL));
}

/* Writes a schedule into a job's segment (guarded). */
static int
segments_write_cb(void *arg)
{
	struct segments_copy_ctx	*ctx = arg;

	segment_write_config(&ctx->j->seg, ctx->cfg);
	jobs_note_windows(ctx->j, ctx->cfg);
	return (0);
}

/*
 * A new user's segment of a job served already: it gets the newest schedule
 * of its siblings (a config that came before its ranks, a standalone file).
 */
static void
segments_sync(struct agent *a, struct agent_job *j)
{
	struct segments_copy_ctx	 ctx;
	struct agent_job	*s, *from = NULL;
	int			 rc;

	TAILQ_FOREACH(s, &a->jobs, entry)
		if (s != j && strcmp(s->name, j->name) == 0 &&
		    s->applied > j->applied &&
		    (from == NULL || s->applied > from->applied))
			from = s;
	if (from == NULL || (ctx.cfg = malloc(sizeof(*ctx.cfg))) == NULL)
		return;
	ctx.j = from;
	if (guard_call(segments_read_cb, &ctx, &rc) == 0 && rc == SEG_OK &&
	    ctx.cfg->generation == from->applied) {
		ctx.j = j;
		if (guard_call(segments_write_cb, &ctx, NULL) == 0)
			j->applied = from->applied;
	}
	free(ctx.cfg);
}

/*
 * The clock offset to the coordinator is news (first known after a welcome,
 * or moved by more than a millisecond): moves every time window in the
 * segments by the difference from the offset they were written with, so that
 * one applied before the offset was known (a schedule pushed at the welcome,
 * before the first heartbeat) still starts at the coordinator's time.  The
 * schedules keep their generation; a rank reloads them at the changed
 * seqlock (one it runs is latched).
 */
void
segments_retime(struct agent *a)
{
	struct segments_copy_ctx	 ctx;
	struct agent_job		*j;
	struct seg_window		*w;
	int64_t				 d;
	uint32_t			 i, n;
	int				 rc;

	d = a->offset.offset_ns - a->offset.applied_ns;
	a->offset.applied_ns = a->offset.offset_ns;
	if (d == 0 || (ctx.cfg = malloc(sizeof(*ctx.cfg))) == NULL)
		return;
	TAILQ_FOREACH(j, &a->jobs, entry) {
		ctx.j = j;
		if (guard_call(segments_read_cb, &ctx, &rc) == -1 ||
		    rc != SEG_OK)
			continue;
		for (i = n = 0; i < ctx.cfg->nwindows && i < SEG_MAX_WINDOWS;
		    i++) {
			w = &ctx.cfg->windows[i];
			if (w->start_ns == 0)
				continue;
			w->start_unix_ns += d;
			w->stop_unix_ns += d;
			w->start_ns = w->start_ns + d > 0 ? w->start_ns + d : 1;
			w->stop_ns = w->stop_ns + d > w->start_ns ?
			    w->stop_ns + d : w->start_ns + 1;
			n++;
		}
		if (n > 0 && guard_call(segments_write_cb, &ctx, NULL) == 0)
			log_info("%s: job %s: %u time windows moved by %lld "
			    "us (the clock offset to the coordinator)",
			    __func__, j->name, n, (long long)(d / 1000));
	}
	free(ctx.cfg);
}

#define SEGMENTS_OVER_BUDGET	1	/* segments_create(): said, counted */

/*
 * Creates job's segment for j in the agent's own directory sd (none there,
 * or a stale one to replace), if --shm-budget has room for it: then
 * SEGMENTS_OVER_BUDGET, after a log line.  Else what segment_open_at() says.
 */
static int
segments_create(struct agent *a, struct agent_job *j, struct seg_dir *sd,
    const char *job)
{
	int	 rc;

	if (segments_reserved(a) + SEGMENTS_NEW_MAX > a->opts.shm_budget) {
		a->stats.shm_refused++;
		log_limited(&a->shm_log, LOG_LEVEL_QUIET, "segments_get: job %s: "
		    "no segment made: %llu bytes in this agent's segments "
		    "already, --shm-budget %llu (%llu refused)", job,
		    (unsigned long long)segments_reserved(a),
		    (unsigned long long)a->opts.shm_budget,
		    (unsigned long long)a->stats.shm_refused);
		return (SEGMENTS_OVER_BUDGET);
	}
	rc = segment_open_at(&j->seg, sd->fd, sd->path, job, SEG_KEEPFD |
	    SEG_USE | SEG_ONLYUID | SEG_CREATE, a->opts.shm_mode, geteuid());
	j->created = rc == SEG_OK;
	return (rc);
}

/*
 * Returns the job served in uid's segment, opening it if it is not served yet
 * (creating it when create is set, only ever in the agent's own directory).
 * The segment is taken only from uid's directory and only if uid owns it
 * (docs/segments.md).  NULL, after a log line, when it cannot be opened.
 */
struct agent_job *
segments_get_uid(struct agent *a, uid_t uid, const char *job, int create)
{
	struct agent_job	*j;
	struct seg_dir		 sd;
	int			 rc, flags, i;

	if ((j = jobs_find_uid(a, uid, job)) != NULL)
		return (j);
	if (!jobid_valid(job, NULL))
		return (NULL);
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		log_warn("%s", __func__);
		return (NULL);
	}
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		j->pidfd[i] = -1;
	j->seg.fd = -1;
	create = create && uid == geteuid();
	rc = segment_dir_open(&sd, a->opts.shm_dir, uid, create,
	    a->opts.shm_mode);
	if (rc == SEG_EOWNER) {
		log_limited(&a->seg_limit, LOG_LEVEL_QUIET, "%s: segment of job "
		    "%s for uid %u: %s refused: owned by uid %u with mode %04o",
		    __func__, job, (unsigned)uid, sd.path,
		    (unsigned)sd.st.st_uid, (unsigned)(sd.st.st_mode & 07777));
		free(j);
		return (NULL);
	}
	/*
	 * Only uid's own: whoever else made a file there (root) does not speak
	 * for uid's ranks.  Not root, the agent opens only what uid shared with
	 * its group (--shm-mode 0660).
	 */
	flags = SEG_KEEPFD | SEG_USE | SEG_ONLYUID;
	if (rc == SEG_OK) {
		rc = segment_open_at(&j->seg, sd.fd, sd.path, job, flags,
		    a->opts.shm_mode, uid);
		if (create && (rc == SEG_ENOENT || rc == SEG_EVERSION ||
		    rc == SEG_EMAGIC || rc == SEG_ESIZE))
			rc = segments_create(a, j, &sd, job);
		close(sd.fd);
	}
	if (rc == SEGMENTS_OVER_BUDGET) {
		free(j);
		return (NULL);
	}
	if (rc != SEG_OK) {
		/* A rank's datagram can get here: every line is limited. */
		if (rc == SEG_ESYS && errno == ENOSPC)
			log_limited(&a->seg_limit, LOG_LEVEL_QUIET, "%s: no space "
			    "left in %s for the segment of job %s", __func__,
			    a->opts.shm_dir, job);
		else if (rc == SEG_ESYS)
			log_limited(&a->seg_limit, LOG_LEVEL_QUIET, "%s: segment "
			    "of job %s for uid %u: %s", __func__, job,
			    (unsigned)uid, strerror(errno));
		else if (rc == SEG_ENOENT)
			log_debug("%s: no segment for job %s of uid %u", __func__,
			    job, (unsigned)uid);
		else if (create && (rc == SEG_EVERSION || rc == SEG_EMAGIC ||
		    rc == SEG_ESIZE))
			log_limited(&a->seg_limit, LOG_LEVEL_QUIET, "%s: segment "
			    "of job %s: %s; not replaced: %s", __func__, job,
			    segment_strerror(rc), segment_kept_why(errno));
		else
			log_limited(&a->seg_limit, LOG_LEVEL_QUIET, "%s: segment "
			    "of job %s for uid %u: %s", __func__, job,
			    (unsigned)uid, segment_strerror(rc));
		free(j);
		return (NULL);
	}
	j->uid = uid;
	if (j->seg.replaced != 0)
		log_warnx("%s: replaced the stale segment %s of job %s (%s)",
		    __func__, j->seg.path, job, segment_strerror(j->seg.replaced));
	if (guard_register(j->seg.hdr, j->seg.size) == -1 ||
	    guard_call(segments_claim, j, NULL) == -1) {
		log_warnx("%s: segment of job %s: cannot use it (truncated?)",
		    __func__, job);
		guard_unregister(j->seg.hdr);
		segment_close(&j->seg);
		free(j);
		return (NULL);
	}
	strcpy(j->name, job);		/* jobid_valid(): JOBID_MAX at most */
	j->progress_dirty = 1;
	segments_sync(a, j);
	TAILQ_INSERT_TAIL(&a->jobs, j, entry);
	log_info("serving job %s (segment %s of uid %u, generation %llu)", job,
	    j->seg.path, (unsigned)uid, (unsigned long long)j->applied);
	return (j);
}

/* segments_get_uid() of the agent's own segment. */
struct agent_job *
segments_get(struct agent *a, const char *job, int create)
{
	return (segments_get_uid(a, geteuid(), job, create));
}

/* Says in the segment that no agent serves it any more (guarded). */
static int
segments_release(void *arg)
{
	struct agent_job	*j = arg;

	atomic_store_explicit(&j->seg.hdr->agent_pid, 0, memory_order_relaxed);
	return (0);
}

/* Stops watching the pidfd of slot idx, if any. */
static void
segments_forget_pidfd(struct agent_job *j, int idx)
{
	if (j->pidfd_ev[idx] != NULL)
		event_free(j->pidfd_ev[idx]);
	j->pidfd_ev[idx] = NULL;
	if (j->pidfd[idx] != -1)
		close(j->pidfd[idx]);
	j->pidfd[idx] = -1;
	j->pidfd_inc[idx] = 0;
}

/* A rank's pidfd became readable: it exited; the sampler reclaims its slot. */
static void
segments_pidfd_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent	*a = arg;

	(void)fd;
	(void)what;
	a->loop->wake_sampler(a);
}

/*
 * Keeps fd (taken over: kept or closed), the pidfd that came with a believed
 * datagram of the holder of slot idx's incarnation inc, unless one is kept
 * already for that incarnation.  It must be a pidfd: pidfd_send_signal() with
 * signal 0 answers 0, ESRCH (gone already) or EINVAL (a process of a pid
 * namespace that is not ours or a descendant) for one, EBADF for anything
 * else.
 */
void
segments_keep_pidfd(struct agent *a, struct agent_job *j, int idx,
    uint32_t inc, int fd)
{
	if (idx < 0 || idx >= SEG_MAX_SLOTS || (j->pidfd[idx] != -1 &&
	    j->pidfd_inc[idx] == inc)) {
		close(fd);
		return;
	}
	if (syscall(SYS_pidfd_send_signal, fd, 0, NULL, 0) == -1 &&
	    errno != ESRCH && errno != EINVAL) {
		log_debug("%s: job %s slot %d: not a pidfd: %s", __func__,
		    j->name, idx, strerror(errno));
		close(fd);
		return;
	}
	segments_forget_pidfd(j, idx);
	j->pidfd[idx] = fd;
	j->pidfd_inc[idx] = inc;
	/* One-shot: readable for good once the process exits. */
	j->pidfd_ev[idx] = event_new(a->base, fd, EV_READ, segments_pidfd_cb, a);
	if (j->pidfd_ev[idx] == NULL ||
	    event_add(j->pidfd_ev[idx], NULL) == -1)
		log_warnx("%s: job %s slot %d: cannot watch the pidfd: its "
		    "exit is noticed at the next sample", __func__, j->name, idx);
}

/*
 * Whether the holder of slot idx of job arg is gone: segment_slot_dead() says
 * so (kill() in this pid namespace, as ever, never for a holder of another),
 * or the pidfd it sent for the incarnation the slot holds is readable (it
 * exited, whatever its namespace, and whoever has its pid now).
 */
static int
segments_rank_dead(const struct seg_slot *slot, int idx, void *arg)
{
	struct agent_job	*j = ((struct segments_dead_ctx *)arg)->j;
	struct seg_slot		*s = (struct seg_slot *)slot;
	struct pollfd		 pfd;

	if (segment_slot_dead(slot))
		return (1);
	if (j->pidfd[idx] == -1 || j->pidfd_inc[idx] !=
	    atomic_load_explicit(&s->incarnation, memory_order_acquire))
		return (0);
	pfd.fd = j->pidfd[idx];
	pfd.events = POLLIN;
	pfd.revents = 0;
	return (poll(&pfd, 1, 0) == 1);
}

/* Unmaps a job's segment (saying it no longer serves it, if touch) and frees it. */
static void
segments_free(struct agent_job *j, int touch)
{
	int	 i;

	for (i = 0; i < SEG_MAX_SLOTS; i++)
		segments_forget_pidfd(j, i);
	if (j->seg.hdr != NULL) {
		if (touch)
			(void)guard_call(segments_release, j, NULL);
		guard_unregister(j->seg.hdr);
	}
	segment_close(&j->seg);
	free(j);
}

/*
 * j leaves the list: the other users' segments of its job send the job's
 * Progress again, without j's ranks.
 */
static void
segments_siblings_dirty(struct agent *a, const struct agent_job *j)
{
	struct agent_job	*s;

	TAILQ_FOREACH(s, &a->jobs, entry)
		if (s != j && strcmp(s->name, j->name) == 0)
			s->progress_dirty = 1;
}

/*
 * Stops serving job j after its segment failed under the agent (truncated,
 * shrunk): the mapping is not touched again.  A rank's datagram or a config
 * opens the job's segment again once a good one is there.
 */
void
segments_drop(struct agent *a, struct agent_job *j, const char *why)
{
	log_warnx("job %s: segment %s dropped: %s", j->name, j->seg.path, why);
	a->stats.segments_dropped++;
	if (j->subscribed)
		segments_unsubscribe(a, j);
	TAILQ_REMOVE(&a->jobs, j, entry);
	segments_siblings_dirty(a, j);
	segments_free(j, 0);
}

/* Drops the job whose mapping the last guard_call() faulted in. */
void
segments_drop_faulted(struct agent *a)
{
	struct agent_job	*j;
	const void		*base = guard_fault_base();

	TAILQ_FOREACH(j, &a->jobs, entry) {
		if ((const void *)j->seg.hdr == base) {
			segments_drop(a, j, "SIGBUS: the file was truncated "
			    "under its mapping");
			return;
		}
	}
}

/* Unmaps every segment; the files stay for the ranks. */
void
segments_close_all(struct agent *a)
{
	struct agent_job	*j;

	while ((j = TAILQ_FIRST(&a->jobs)) != NULL) {
		TAILQ_REMOVE(&a->jobs, j, entry);
		segments_free(j, 1);
	}
	if (a->shm_lock_fd != -1)
		close(a->shm_lock_fd);
	a->shm_lock_fd = -1;
}

/*
 * Writes a pushed config into every user's segment of the job (the agent's
 * own created if none is served yet) that holds an older one, and answers
 * Applied.  A config that fails any check changes nothing.  Generation 0 with
 * no window says the coordinator has nothing scheduled for the job: never
 * newer than a segment, so a job served keeps what its segment holds (its
 * empty schedule, or one of a higher generation applied before the
 * coordinator lost its state) and is answered with that; a job not served
 * gets no segment.  Returns 0 or -1.
 */
int
segments_apply(struct agent *a, const Dynprof__V1__JobConfig *jc)
{
	struct segments_copy_ctx	 wctx;
	struct agent_job	*j, *next, *first = NULL;
	const char		*why = "?";
	int			 written = 0, failed = 0;

	if (jc->generation == 0 && jc->n_windows == 0 && jc->job != NULL &&
	    jobid_valid(jc->job, NULL)) {
		TAILQ_FOREACH(j, &a->jobs, entry)
			if (strcmp(j->name, jc->job) == 0) {
				upstream_applied(a, j);
				break;
			}
		if (j == NULL)
			(void)legacy_config(a, jc->job, NULL);
		return (0);
	}
	if (apply_jobconfig(jc, a->scratch, &why) == -1) {
		a->stats.bad_configs++;
		log_warnx("%s: config for job %.64s generation %llu refused: %s",
		    __func__, jc->job != NULL && jobid_valid(jc->job, NULL) ?
		    jc->job : "(invalid)", (unsigned long long)jc->generation,
		    why);
		return (-1);
	}
	apply_clock(a->scratch, a->offset.applied_ns, offset_wall_ns(a),
	    (int64_t)clock_mono_ns());
	collect_config(a, jc);
	TAILQ_FOREACH(j, &a->jobs, entry)
		if (strcmp(j->name, jc->job) == 0)
			break;
	/* A legacy job holds its schedule itself: no segment made for it. */
	if (legacy_config(a, jc->job, a->scratch) && j == NULL)
		return (0);
	if (j == NULL && segments_get(a, jc->job, 1) == NULL) {
		a->stats.bad_configs++;
		return (-1);
	}
	a->loop->wake_sampler(a);		/* a new job needs its first sample */
	wctx.cfg = a->scratch;
	for (j = TAILQ_FIRST(&a->jobs); j != NULL; j = next) {
		next = TAILQ_NEXT(j, entry);
		if (strcmp(j->name, jc->job) != 0)
			continue;
		if (jc->generation <= j->applied) {
			log_debug("%s: job %s of uid %u: generation %llu is not "
			    "newer than %llu", __func__, j->name,
			    (unsigned)j->uid, (unsigned long long)jc->generation,
			    (unsigned long long)j->applied);
		} else {
			wctx.j = j;
			if (guard_call(segments_write_cb, &wctx, NULL) == -1) {
				failed = 1;
				segments_drop_faulted(a);
				continue;
			}
			j->applied = jc->generation;
			written = 1;
			log_info("applied generation %llu to job %s (uid %u, %u "
			    "windows)", (unsigned long long)j->applied, j->name,
			    (unsigned)j->uid, a->scratch->nwindows);
		}
		if (first == NULL)
			first = j;
	}
	if (written)
		a->stats.configs_applied++;
	if (first == NULL) {
		a->stats.bad_configs++;
		return (-1);
	}
	if (failed)
		a->stats.bad_configs++;
	upstream_applied(a, first);
	return (0);
}

/* A rank's datagram arrived: subscribe to its job and sample soon. */
void
segments_rank_seen(struct agent *a, struct agent_job *j)
{
	j->empty_since_ms = 0;
	if (!j->subscribed)
		segments_subscribe(a, j);
	a->loop->wake_sampler(a);
}

/*
 * Adopts the segment of job found at start: replays, for every slot (live, or
 * freed while no agent listened), the log entries the coordinator has not
 * committed.  Freed slots first: a rank that ended and came back as a new
 * process in another slot ends up attached, not gone.
 */
static void
segments_adopt(struct agent *a, uid_t uid, const char *job)
{
	struct agent_job	*j;
	struct seg_config	*cfg;
	uint32_t		 i;
	int			 n = 0, ranks = 0, live = 0, k, pass, held;

	if ((j = segments_get_uid(a, uid, job, 0)) == NULL)
		return;
	/* The windows the last agent gave it: their traces are collected
	 * (at most SEG_MAX_WINDOWS, whoever wrote them). */
	if ((cfg = malloc(sizeof(*cfg))) != NULL) {
		if (segment_read_config(&j->seg, cfg, NULL) == SEG_OK)
			jobs_note_windows(j, cfg);
		free(cfg);
	}
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < j->seg.nslots; i++) {
			held = atomic_load_explicit(&j->seg.slots[i].pid,
			    memory_order_relaxed) != 0;
			if (held != pass)
				continue;
			if ((k = events_read_log(a, j, (int)i)) > 0) {
				n += k;
				ranks++;
			}
			live += held;
		}
	}
	if (live > 0)
		segments_subscribe(a, j);
	if (n > 0)
		log_info("adopted job %s: replayed %d events of %d ranks", job,
		    n, ranks);
}

struct segments_adopt_ctx {
	struct agent	*a;
	uid_t		 uid;
	const char	*job;
};

/* segments_adopt(), under the guard. */
static int
segments_adopt_cb(void *arg)
{
	struct segments_adopt_ctx	*ctx = arg;

	segments_adopt(ctx->a, ctx->uid, ctx->job);
	return (0);
}

/*
 * Holds --shm-dir's lock: two agents on one directory would both serve its
 * segments (each rank's events sent twice, as two nodes; standalone windows
 * overwritten).  A directory others may write (/dev/shm) is not locked: anyone
 * could take the lock first and keep the agent from starting.
 */
static int
segments_lock_dir(struct agent *a)
{
	struct stat	 st;

	if (a->shm_lock_fd != -1 || stat(a->opts.shm_dir, &st) == -1 ||
	    (st.st_mode & S_IWOTH))
		return (0);
	a->shm_lock_fd = pidlock_take("--shm-dir", a->opts.shm_dir,
	    AGENT_LOCK_FILE);
	return (a->shm_lock_fd == -1 ? -1 : 0);
}

/* Adopts the segments in the directory d of uid's segments. */
static void
segments_adopt_dir(struct agent *a, DIR *d, uid_t uid)
{
	struct segments_adopt_ctx	 actx;
	struct dirent	*de;
	const char	*job;
	size_t		 plen = strlen(SEG_PREFIX);

	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, SEG_PREFIX, plen) != 0)
			continue;
		job = de->d_name + plen;
		if (!jobid_valid(job, NULL))
			continue;
		actx.a = a;
		actx.uid = uid;
		actx.job = job;
		if (guard_call(segments_adopt_cb, &actx, NULL) == -1)
			segments_drop_faulted(a);
	}
}

/*
 * The uid of a user's directory name "dynprof-u<uid>", or SEG_NOUID when
 * name is not one.
 */
static uid_t
segments_dir_uid(const char *name)
{
	const char	*p = name + strlen(SEG_USERDIR_PREFIX);
	char		*end;
	unsigned long	 n;

	if (strncmp(name, SEG_USERDIR_PREFIX, strlen(SEG_USERDIR_PREFIX)) != 0 ||
	    *p < '0' || *p > '9' || (p[0] == '0' && p[1] != '\0'))
		return (SEG_NOUID);
	errno = 0;
	n = strtoul(p, &end, 10);
	if (errno != 0 || *end != '\0' || n >= (unsigned long)SEG_NOUID)
		return (SEG_NOUID);
	return ((uid_t)n);
}

/*
 * Finds the segments already in --shm-dir (ranks outlive agents) and adopts
 * them: the agent's own, and those in every user's directory (each checked
 * again when opened: a directory and a segment of its uid's).
 */
int
segments_adopt_all(struct agent *a)
{
	struct seg_dir	 sd;
	DIR		*d, *ud;
	struct dirent	*de;
	uid_t		 uid;
	int		 fd;

	if (segments_lock_dir(a) == -1)
		return (-1);
	if ((d = opendir(a->opts.shm_dir)) == NULL) {
		log_warn("%s: %s", __func__, a->opts.shm_dir);
		return (-1);
	}
	/* Flat in --shm-dir only when the directory is the agent's alone. */
	if (segment_dir_open(&sd, a->opts.shm_dir, geteuid(), 0,
	    a->opts.shm_mode) == SEG_OK) {
		close(sd.fd);
		if (strcmp(sd.path, a->opts.shm_dir) == 0)
			segments_adopt_dir(a, d, geteuid());
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if ((uid = segments_dir_uid(de->d_name)) == SEG_NOUID)
			continue;
		if ((fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		if ((ud = fdopendir(fd)) == NULL) {
			close(fd);
			continue;
		}
		segments_adopt_dir(a, ud, uid);
		closedir(ud);
	}
	closedir(d);
	return (0);
}

/* A rank died: its events, and its detached event, are forwarded. */
static void
segments_dead_cb(const struct seg_slot *s, int idx, void *arg)
{
	struct segments_dead_ctx	*ctx = arg;

	events_rank_gone(ctx->a, ctx->j, s, idx);
	segments_forget_pidfd(ctx->j, idx);
}

/* A busy time in ns, as the rank wrote it, in microseconds for the wire. */
static uint32_t
segments_busy_us(int64_t ns)
{
	if (ns <= 0)
		return (0);
	if (ns / 1000 > UINT32_MAX)
		return (UINT32_MAX);
	return ((uint32_t)(ns / 1000));
}

/* Copies a slot's busy time (dynprof_mark_comm()) into its sample. */
static void
segments_busy(const struct seg_slot *s, struct agent_rank_sample *rs)
{
	rs->busy_count = atomic_load_explicit(&s->busy_count,
	    memory_order_acquire);
	rs->busy_last_us = rs->busy_avg_us = rs->busy_max_us = 0;
	if (rs->busy_count == 0)
		return;
	rs->busy_last_us = segments_busy_us(atomic_load_explicit(
	    &s->busy_last_ns, memory_order_relaxed));
	rs->busy_avg_us = segments_busy_us(atomic_load_explicit(
	    &s->busy_avg_ns, memory_order_relaxed));
	rs->busy_max_us = segments_busy_us(atomic_load_explicit(
	    &s->busy_max_ns, memory_order_relaxed));
}

/*
 * Samples one job: dead ranks reclaimed, progress sent if it moved.  Returns 1
 * if it did.
 */
static int
segments_sample_job(struct agent *a, struct agent_job *j, int64_t now)
{
	struct segments_dead_ctx	 ctx = { a, j };
	struct agent_rank_sample	*rs;
	struct seg_slot			*s, copy;
	uint64_t			 sig = 1469598103934665603ULL;
	uint32_t			 i, n = 0;
	int32_t				 pid;
	int				 moved = 0;

	if (segment_reclaim_judged(&j->seg, segments_rank_dead, segments_dead_cb,
	    &ctx) > 0)
		moved = 1;
	for (i = 0; i < j->seg.nslots; i++) {
		s = &j->seg.slots[i];
		/* The pidfd of a holder that freed its slot is of no more use. */
		if (j->pidfd[i] != -1 && (atomic_load_explicit(&s->pid,
		    memory_order_relaxed) == 0 || j->pidfd_inc[i] !=
		    atomic_load_explicit(&s->incarnation, memory_order_relaxed)))
			segments_forget_pidfd(j, (int)i);
		/* Events whose wakeup datagram was lost (a full socket). */
		if (events_read_log(a, j, (int)i) > 0)
			moved = 1;
		/* A stopped rank's trace, for --trace-store (a hint read
		 * first: the whole slot is copied only then). */
		if (a->collect != NULL && *(volatile uint32_t *)&s->last_event ==
		    DYNPROF__V1__EVENT_KIND__EVENT_STOPPED &&
		    segment_slot_read(&j->seg, (int)i, &copy) == SEG_OK)
			collect_note_slot(a, j, (int)i, &copy);
		pid = atomic_load_explicit(&s->pid, memory_order_acquire);
		if (pid != j->slot_pid[i]) {
			moved = 1;
			j->slot_pid[i] = pid;
		}
		if (pid == 0)
			continue;
		rs = &j->sampled[n++];
		rs->rank = s->rank;
		rs->slot = (int)i;
		rs->step = atomic_load_explicit(&s->step, memory_order_relaxed);
		rs->pid = pid;
		rs->state = s->state <= SEG_RANK_GONE ? s->state : 0;
		rs->uid = jobs_rank_uid(j, (int)i);
		sig = (sig ^ (uint64_t)pid) * 1099511628211ULL;
		sig = (sig ^ (uint64_t)rs->step) * 1099511628211ULL;
		sig = (sig ^ (uint64_t)rs->state) * 1099511628211ULL;
		sig = (sig ^ (uint64_t)rs->uid) * 1099511628211ULL;
		segments_busy(s, rs);
		sig = (sig ^ rs->busy_count) * 1099511628211ULL;
	}
	j->nlive = (int)n;
	j->sample_sig = sig;
	if (n > 0) {
		j->empty_since_ms = 0;
		if (!j->subscribed)
			segments_subscribe(a, j);
	} else {
		if (j->subscribed && !j->keep) {
			segments_unsubscribe(a, j);
			log_info("job %s: no rank of uid %u left on this node",
			    j->name, (unsigned)j->uid);
		}
		if (j->empty_since_ms == 0)
			j->empty_since_ms = now;
	}
	return (moved);
}

/*
 * Sends the Progress of the jobs named as j, the first of them in the list:
 * one for all users' segments of the job, as sampled, when it changed.
 * Returns 1 if it did.
 */
static int
segments_progress(struct agent *a, struct agent_job *j)
{
	Dynprof__V1__Progress		 p = DYNPROF__V1__PROGRESS__INIT;
	Dynprof__V1__RankProgress	*rp, **rpp;
	struct agent_rank_sample	*rs;
	struct agent_job		*s;
	uint64_t			 sig = 1469598103934665603ULL;
	int64_t				*arr = NULL;
	size_t				 n = 0, k, na;
	int				 i, dirty = 0, moved = 0;

	for (s = j; s != NULL; s = TAILQ_NEXT(s, entry)) {
		if (strcmp(s->name, j->name) != 0)
			continue;
		n += (size_t)s->nlive;
		sig = (sig ^ s->sample_sig) * 1099511628211ULL;
		dirty |= s->progress_dirty;
	}
	if (sig == j->progress_sig && !dirty)
		return (0);
	if (sig != j->progress_sig)
		moved = 1;
	rp = calloc(n > 0 ? n : 1, sizeof(*rp));
	rpp = calloc(n > 0 ? n : 1, sizeof(*rpp));
	/* Each rank's arrivals: steps, then times, SEG_ARRIVE_ENTRIES each. */
	arr = calloc((n > 0 ? n : 1) * 2 * SEG_ARRIVE_ENTRIES, sizeof(*arr));
	if (rp == NULL || rpp == NULL || arr == NULL) {
		log_warn("%s", __func__);
		goto out;
	}
	k = 0;
	for (s = j; s != NULL; s = TAILQ_NEXT(s, entry)) {
		if (strcmp(s->name, j->name) != 0)
			continue;
		for (i = 0; i < s->nlive && k < n; i++, k++) {
			rs = &s->sampled[i];
			dynprof__v1__rank_progress__init(&rp[k]);
			rp[k].rank = rs->rank;
			rp[k].step = rs->step;
			rp[k].pid = rs->pid;
			rp[k].state = rs->state;
			rp[k].uid = (uint32_t)rs->uid;
			rp[k].uid_known = 1;
			rp[k].busy_count = rs->busy_count;
			rp[k].busy_last_us = rs->busy_last_us;
			rp[k].busy_avg_us = rs->busy_avg_us;
			rp[k].busy_max_us = rs->busy_max_us;
			rp[k].arrive_step = &arr[k * 2 * SEG_ARRIVE_ENTRIES];
			rp[k].arrive_unix_us = rp[k].arrive_step +
			    SEG_ARRIVE_ENTRIES;
			na = rs->busy_count > 0 ? arrive_read(s, rs->slot,
			    rp[k].arrive_step, rp[k].arrive_unix_us) : 0;
			rp[k].n_arrive_step = rp[k].n_arrive_unix_us = na;
			rpp[k] = &rp[k];
			if (k == 0 || rs->step < p.min_step)
				p.min_step = rs->step;
			if (k == 0 || rs->step > p.max_step)
				p.max_step = rs->step;
		}
		s->progress_dirty = 0;
	}
	j->progress_sig = sig;
	p.job = j->name;
	p.ranks_alive = (uint32_t)k;
	p.n_ranks = k;
	p.ranks = rpp;
	p.sent_unix_us = clock_wall_ns() / 1000;
	upstream_progress(a, j, &p);
out:
	free(arr);
	free(rp);
	free(rpp);
	return (moved);
}

/*
 * Samples every job's slots: frees the slots of dead ranks (reported detached),
 * reports progress that changed, subscribes and unsubscribes, and removes the
 * segments of jobs gone for the grace period.  Returns 1 if anything changed.
 */
struct segments_sample_ctx {
	struct agent		*a;
	struct agent_job	*j;
	int64_t			 now;
};

/* segments_sample_job(), under the guard. */
static int
segments_sample_cb(void *arg)
{
	struct segments_sample_ctx	*ctx = arg;

	return (segments_sample_job(ctx->a, ctx->j, ctx->now));
}

/*
 * Whether j's file is now smaller than its mapping: touching the pages past
 * its end would be a SIGBUS (caught by the guard, but better not tried).
 */
static int
segments_shrunk(const struct agent_job *j)
{
	struct stat	 st;

	if (j->seg.fd == -1 || fstat(j->seg.fd, &st) == -1)
		return (0);
	return (st.st_size < 0 || (uint64_t)st.st_size < j->seg.size);
}

/*
 * Removes j's segment file from its user's directory, if that name still
 * names the file served (looked up in the directory, never through a path a
 * user could turn into a link).
 */
static void
segments_unlink(struct agent *a, struct agent_job *j)
{
	struct seg_dir	 sd;
	struct stat	 st;
	char		 name[sizeof(SEG_PREFIX) + SEG_JOB_MAX];

	if (segment_dir_open(&sd, a->opts.shm_dir, j->uid, 0,
	    a->opts.shm_mode) != SEG_OK)
		return;
	snprintf(name, sizeof(name), "%s%s", SEG_PREFIX, j->name);
	if (fstatat(sd.fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_dev == j->seg.dev && st.st_ino == j->seg.ino &&
	    unlinkat(sd.fd, name, 0) == -1)
		log_warn("%s: %s", __func__, j->seg.path);
	close(sd.fd);
}

/*
 * Samples every job, drops those whose segments went bad.  Returns 1 if any
 * moved.
 */
int
segments_sample(struct agent *a, int64_t now)
{
	struct segments_sample_ctx	 sctx;
	struct agent_job	*j, *next, *s;
	int			 moved = 0, r;

	a->stats.samples++;
	for (j = TAILQ_FIRST(&a->jobs); j != NULL; j = next) {
		next = TAILQ_NEXT(j, entry);
		if (segments_shrunk(j)) {
			segments_drop(a, j, "the file shrank under its mapping");
			moved = 1;
			continue;
		}
		sctx.a = a;
		sctx.j = j;
		sctx.now = now;
		if (guard_call(segments_sample_cb, &sctx, &r) == -1) {
			segments_drop_faulted(a);
			moved = 1;
			continue;
		}
		if (r)
			moved = 1;
		if (j->nlive > 0 || j->keep || j->empty_since_ms == 0 ||
		    now - j->empty_since_ms < (int64_t)a->opts.grace_s * 1000)
			continue;
		if (procmaps_in_use(j->seg.dev, j->seg.ino, j->seg.path, 0)) {
			log_debug("%s: segment of job %s still mapped", __func__,
			    j->name);
			j->empty_since_ms = now;
			continue;
		}
		log_info("removing the segment of job %s of uid %u: no process "
		    "for %d s", j->name, (unsigned)j->uid, a->opts.grace_s);
		TAILQ_REMOVE(&a->jobs, j, entry);
		segments_siblings_dirty(a, j);
		segments_unlink(a, j);
		segments_free(j, 1);
	}
	TAILQ_FOREACH(j, &a->jobs, entry) {
		TAILQ_FOREACH(s, &a->jobs, entry)
			if (strcmp(s->name, j->name) == 0)
				break;
		if (s == j && segments_progress(a, j))
			moved = 1;
	}
	return (moved);
}

/*
 * When sampling is next needed if no rank is alive anywhere: the earliest end of
 * a grace period (a segment to remove), else never (INT64_MAX).  Returns 0 when
 * some rank is alive: sample at the usual cadence.
 */
int64_t
segments_next_due(struct agent *a)
{
	struct agent_job	*j;
	int64_t			 due = INT64_MAX, end;

	TAILQ_FOREACH(j, &a->jobs, entry) {
		if (j->nlive > 0)
			return (0);
		if (j->keep || j->empty_since_ms == 0)
			continue;
		end = j->empty_since_ms + (int64_t)a->opts.grace_s * 1000;
		if (end < due)
			due = end;
	}
	return (due);
}
