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
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent.h"
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

/* Finds a job already served, or NULL. */
struct agent_job *
segments_find(struct agent *a, const char *job)
{
	struct agent_job	*j;

	TAILQ_FOREACH(j, &a->jobs, entry)
		if (strcmp(j->name, job) == 0)
			return (j);
	return (NULL);
}

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

/* Claims a freshly mapped segment for this agent (guarded: it is mapped). */
static int
segments_claim(void *arg)
{
	struct agent_job	*j = arg;

	j->applied = atomic_load_explicit(&j->seg.hdr->generation,
	    memory_order_relaxed);
	atomic_store_explicit(&j->seg.hdr->agent_pid, (int32_t)getpid(),
	    memory_order_relaxed);
	return (0);
}

/*
 * Returns the job, opening its segment if it is not served yet (creating it when
 * create is set).  NULL, after a log line, when the segment cannot be opened.
 */
struct agent_job *
segments_get(struct agent *a, const char *job, int create)
{
	struct agent_job	*j;
	int			 rc, flags, i;

	if ((j = segments_find(a, job)) != NULL)
		return (j);
	if (!jobid_valid(job, NULL))
		return (NULL);
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		log_warn("%s", __func__);
		return (NULL);
	}
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		j->pidfd[i] = -1;
	/*
	 * The agent serves every user's jobs: any owner will do, never a file
	 * others may write.  Not root, it can open only what its owner shared
	 * with the agent's group (--shm-mode 0660).
	 */
	flags = SEG_KEEPFD | SEG_ANYOWNER;
	rc = segment_open(&j->seg, a->opts.shm_dir, job, flags,
	    a->opts.shm_mode);
	if (create && (rc == SEG_ENOENT || rc == SEG_EVERSION ||
	    rc == SEG_EMAGIC || rc == SEG_ESIZE)) {
		/* None, or a stale one to replace: a new one, if in budget. */
		if (segments_reserved(a) + SEGMENTS_NEW_MAX >
		    a->opts.shm_budget) {
			a->stats.shm_refused++;
			log_limited(&a->shm_log, LOG_LEVEL_QUIET, "%s: job %s: "
			    "no segment made: %llu bytes in this agent's "
			    "segments already, --shm-budget %llu (%llu refused)",
			    __func__, job, (unsigned long long)
			    segments_reserved(a), (unsigned long long)
			    a->opts.shm_budget, (unsigned long long)
			    a->stats.shm_refused);
			free(j);
			return (NULL);
		}
		rc = segment_open(&j->seg, a->opts.shm_dir, job,
		    flags | SEG_CREATE, a->opts.shm_mode);
		j->created = rc == SEG_OK && j->seg.uid == geteuid();
	}
	if (rc != SEG_OK) {
		if (rc == SEG_ESYS && errno == ENOSPC)
			log_warnx("%s: no space left in %s for the segment of "
			    "job %s", __func__, a->opts.shm_dir, job);
		else if (rc == SEG_ESYS)
			log_warn("%s: segment of job %s", __func__, job);
		else if (rc == SEG_ENOENT)
			log_debug("%s: no segment for job %s", __func__, job);
		else if (create && (rc == SEG_EVERSION || rc == SEG_EMAGIC ||
		    rc == SEG_ESIZE))
			log_warnx("%s: segment of job %s: %s; not replaced: %s",
			    __func__, job, segment_strerror(rc),
			    segment_kept_why(errno));
		else
			log_warnx("%s: segment of job %s: %s", __func__, job,
			    segment_strerror(rc));
		free(j);
		return (NULL);
	}
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
	TAILQ_INSERT_TAIL(&a->jobs, j, entry);
	log_info("serving job %s (segment %s, generation %llu)", job,
	    j->seg.path, (unsigned long long)j->applied);
	return (j);
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
	(void)fd;
	(void)what;
	agent_wake_sampler(arg);
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
		upstream_unsubscribe(a, j);
	TAILQ_REMOVE(&a->jobs, j, entry);
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

struct segments_write_ctx {
	struct agent_job	*j;
	const struct seg_config	*cfg;
};

/* Writes a config into a segment, under the guard. */
static int
segments_write(void *arg)
{
	struct segments_write_ctx	*ctx = arg;

	segment_write_config(&ctx->j->seg, ctx->cfg);
	return (0);
}

/*
 * Writes a pushed config into the job's segment (created if no rank made it yet)
 * if it is newer than what the segment holds, and answers Applied.  A config
 * that fails any check changes nothing.  Generation 0 with no window says the
 * coordinator has nothing scheduled for the job: never newer than a segment,
 * so a job served keeps what its segment holds (its empty schedule, or one of
 * a higher generation applied before the coordinator lost its state) and is
 * answered with that; a job not served gets no segment.  Returns 0 or -1.
 */
int
segments_apply(struct agent *a, const Dynprof__V1__JobConfig *jc)
{
	struct segments_write_ctx	 wctx;
	struct agent_job	*j;
	const char		*why = "?";

	if (jc->generation == 0 && jc->n_windows == 0 && jc->job != NULL &&
	    jobid_valid(jc->job, NULL)) {
		if ((j = segments_find(a, jc->job)) != NULL)
			upstream_applied(a, j);
		else
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
	/* A legacy job holds its schedule itself: no segment made for it. */
	if (legacy_config(a, jc->job, a->scratch) &&
	    segments_find(a, jc->job) == NULL)
		return (0);
	if ((j = segments_get(a, jc->job, 1)) == NULL) {
		a->stats.bad_configs++;
		return (-1);
	}
	agent_wake_sampler(a);		/* a new job needs its first sample */
	if (jc->generation <= j->applied) {
		log_debug("%s: job %s generation %llu is not newer than %llu",
		    __func__, j->name, (unsigned long long)jc->generation,
		    (unsigned long long)j->applied);
		upstream_applied(a, j);
		return (0);
	}
	wctx.j = j;
	wctx.cfg = a->scratch;
	if (guard_call(segments_write, &wctx, NULL) == -1) {
		a->stats.bad_configs++;
		segments_drop_faulted(a);
		return (-1);
	}
	j->applied = jc->generation;
	a->stats.configs_applied++;
	log_info("applied generation %llu to job %s (%u windows)",
	    (unsigned long long)j->applied, j->name, a->scratch->nwindows);
	upstream_applied(a, j);
	return (0);
}

/* A rank's datagram arrived: subscribe to its job and sample soon. */
void
segments_rank_seen(struct agent *a, struct agent_job *j)
{
	j->empty_since_ms = 0;
	if (!j->subscribed)
		upstream_subscribe(a, j);
	agent_wake_sampler(a);
}

/*
 * Adopts the segment of job found at start: replays, for every slot (live, or
 * freed while no agent listened), the log entries the coordinator has not
 * committed.  Freed slots first: a rank that ended and came back as a new
 * process in another slot ends up attached, not gone.
 */
static void
segments_adopt(struct agent *a, const char *job)
{
	struct agent_job	*j;
	uint32_t		 i;
	int			 n = 0, ranks = 0, live = 0, k, pass, held;

	if ((j = segments_get(a, job, 0)) == NULL)
		return;
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
		upstream_subscribe(a, j);
	if (n > 0)
		log_info("adopted job %s: replayed %d events of %d ranks", job,
		    n, ranks);
}

struct segments_adopt_ctx {
	struct agent	*a;
	const char	*job;
};

/* segments_adopt(), under the guard. */
static int
segments_adopt_cb(void *arg)
{
	struct segments_adopt_ctx	*ctx = arg;

	segments_adopt(ctx->a, ctx->job);
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

/* Finds the segments already in --shm-dir (ranks outlive agents) and adopts them. */
int
segments_adopt_all(struct agent *a)
{
	struct segments_adopt_ctx	 actx;
	DIR		*d;
	struct dirent	*de;
	const char	*job;
	size_t		 plen = strlen(SEG_PREFIX);

	if (segments_lock_dir(a) == -1)
		return (-1);
	if ((d = opendir(a->opts.shm_dir)) == NULL) {
		log_warn("%s: %s", __func__, a->opts.shm_dir);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, SEG_PREFIX, plen) != 0)
			continue;
		job = de->d_name + plen;
		if (!jobid_valid(job, NULL))
			continue;
		actx.a = a;
		actx.job = job;
		if (guard_call(segments_adopt_cb, &actx, NULL) == -1)
			segments_drop_faulted(a);
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

/*
 * Samples one job: dead ranks reclaimed, progress sent if it moved.  Returns 1
 * if it did.
 */
static int
segments_sample_job(struct agent *a, struct agent_job *j, int64_t now)
{
	struct segments_dead_ctx	 ctx = { a, j };
	Dynprof__V1__RankProgress	 rp[SEG_MAX_SLOTS], *rpp[SEG_MAX_SLOTS];
	Dynprof__V1__Progress		 p = DYNPROF__V1__PROGRESS__INIT;
	struct seg_slot			*s;
	uint64_t			 sig = 1469598103934665603ULL;
	uint32_t			 i, n = 0;
	int32_t				 pid;
	int64_t				 step, lo = 0, hi = 0;
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
		pid = atomic_load_explicit(&s->pid, memory_order_acquire);
		if (pid != j->slot_pid[i]) {
			moved = 1;
			j->slot_pid[i] = pid;
		}
		if (pid == 0)
			continue;
		step = atomic_load_explicit(&s->step, memory_order_relaxed);
		dynprof__v1__rank_progress__init(&rp[n]);
		rp[n].rank = s->rank;
		rp[n].step = step;
		rp[n].pid = pid;
		rp[n].state = s->state <= SEG_RANK_GONE ? s->state : 0;
		rpp[n] = &rp[n];
		if (n == 0 || step < lo)
			lo = step;
		if (n == 0 || step > hi)
			hi = step;
		sig = (sig ^ (uint64_t)pid) * 1099511628211ULL;
		sig = (sig ^ (uint64_t)step) * 1099511628211ULL;
		sig = (sig ^ (uint64_t)s->state) * 1099511628211ULL;
		n++;
	}
	j->nlive = (int)n;
	if (n > 0) {
		j->empty_since_ms = 0;
		if (!j->subscribed)
			upstream_subscribe(a, j);
	} else {
		if (j->subscribed && !j->keep) {
			upstream_unsubscribe(a, j);
			log_info("job %s: no rank left on this node", j->name);
		}
		if (j->empty_since_ms == 0)
			j->empty_since_ms = now;
	}
	if (sig != j->progress_sig || j->progress_dirty) {
		if (sig != j->progress_sig)
			moved = 1;
		j->progress_sig = sig;
		p.job = j->name;
		p.ranks_alive = n;
		p.min_step = lo;
		p.max_step = hi;
		p.n_ranks = n;
		p.ranks = rpp;
		upstream_progress(a, j, &p);
	}
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
 * Samples every job, drops those whose segments went bad.  Returns 1 if any
 * moved.
 */
int
segments_sample(struct agent *a, int64_t now)
{
	struct segments_sample_ctx	 sctx;
	struct agent_job	*j, *next;
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
		log_info("removing the segment of job %s: no process for %d s",
		    j->name, a->opts.grace_s);
		TAILQ_REMOVE(&a->jobs, j, entry);
		segment_unlink(a->opts.shm_dir, j->name);
		segments_free(j, 1);
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
