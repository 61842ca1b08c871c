/*
 * --trace-store DIR: every rank's trace brought into a shared directory once
 * its window has ended (docs/traces.md).  The sampler notes each slot whose
 * last event is `stopped` (collect_note_slot()); the rank, window and output
 * directory go into a pending list, kept in a small queue file in --shm-dir
 * so that an agent restarted (or killed) collects what its predecessor had
 * not.  One packing runs at a time, in a child (trace_pack.c) whose end is an
 * event on the loop: the loop itself only stats the final name once per rank
 * and rewrites the queue file, a few hundred bytes.  A trace still changing
 * is tried again after the settle time; a failure a few times, then given up
 * and logged.  What is in the store under its final name is collected: a
 * rank found there is never packed again.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent.h"
#include "clock.h"
#include "jobid.h"
#include "log.h"

#define COLLECT_QUEUE_FILE	"dynprof-agent.collect"	/* in --shm-dir */
#define COLLECT_PENDING_MAX	4096
#define COLLECT_DONE_MAX	8192	/* ranks remembered as collected */
#define COLLECT_TRIES		3
#define COLLECT_RETRY_MS	5000
#define COLLECT_QUEUE_VERSION	1	/* bump when the line's layout changes */

/* A rank's trace to collect. */
struct collect_item {
	TAILQ_ENTRY(collect_item) entry;
	char		 job[SEG_JOB_MAX + 1];
	uint32_t	 window;
	int32_t		 rank;
	uid_t		 uid;
	char		 dir[SEG_PATH_MAX];
	int64_t		 due_ms;		/* not tried before */
	int		 tries;
};
TAILQ_HEAD(collect_items, collect_item);

struct collect {
	int			 store_fd;
	struct collect_items	 pending;
	size_t			 npending;
	struct collect_item	*busy;		/* being packed, off the list */
	struct trace_pack	 tp;
	int64_t			 started_ms;	/* of the packing in progress */
	struct event		*ev;
	uint64_t		 done[COLLECT_DONE_MAX];	/* keys, a ring */
	size_t			 ndone;
	char			 queue_path[PATH_MAX + 32];
	uint64_t		 collected, failed;
	struct log_limit	 log_limit;	/* what ranks' directories cause */
};

/* A rank's window's key. */
static uint64_t
collect_key(const char *job, uint32_t window, int32_t rank)
{
	uint64_t	 h = 1469598103934665603ULL;

	for (; *job != '\0'; job++)
		h = (h ^ (uint8_t)*job) * 1099511628211ULL;
	h = (h ^ window) * 1099511628211ULL;
	return ((h ^ (uint32_t)rank) * 1099511628211ULL);
}

static int
collect_is_done(const struct collect *c, uint64_t key)
{
	size_t	 i, n = c->ndone < COLLECT_DONE_MAX ? c->ndone : COLLECT_DONE_MAX;

	for (i = 0; i < n; i++)
		if (c->done[i] == key)
			return (1);
	return (0);
}

static void
collect_mark_done(struct collect *c, uint64_t key)
{
	c->done[c->ndone++ % COLLECT_DONE_MAX] = key;
}

static struct collect_item *
collect_find(const struct collect *c, uint64_t key)
{
	struct collect_item	*it;

	if (c->busy != NULL && collect_key(c->busy->job, c->busy->window,
	    c->busy->rank) == key)
		return (c->busy);
	TAILQ_FOREACH(it, &c->pending, entry)
		if (collect_key(it->job, it->window, it->rank) == key)
			return (it);
	return (NULL);
}

/* Rewrites the queue file (the busy item and the pending list). */
static void
collect_save(struct collect *c)
{
	struct collect_item	*it;
	char			 tmp[PATH_MAX + 40];
	FILE			*f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", c->queue_path);
	(void)unlink(tmp);
	if ((f = fopen(tmp, "wx")) == NULL) {
		log_warn("%s: %s", __func__, tmp);
		return;
	}
	fprintf(f, "dynprof-collect %d\n", COLLECT_QUEUE_VERSION);
	if (c->busy != NULL)
		fprintf(f, "%s %u %d %u %s\n", c->busy->job, c->busy->window,
		    c->busy->rank, (unsigned int)c->busy->uid, c->busy->dir);
	TAILQ_FOREACH(it, &c->pending, entry)
		fprintf(f, "%s %u %d %u %s\n", it->job, it->window, it->rank,
		    (unsigned int)it->uid, it->dir);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
		log_warn("%s: %s", __func__, tmp);
		return;
	}
	if (rename(tmp, c->queue_path) == -1)
		log_warn("%s: %s", __func__, c->queue_path);
}

/*
 * Adds job's window's rank (its trace in dir, uid's) to the pending list,
 * unless collected, pending or in the store already.  Returns 1 if added.
 */
static int
collect_add(struct collect *c, const char *job, uint32_t window,
    int32_t rank, uid_t uid, const char *dir)
{
	struct collect_item	*it;
	struct stat		 st;
	char			 path[SEG_JOB_MAX + 64];
	uint64_t		 key = collect_key(job, window, rank);

	if (collect_is_done(c, key) || collect_find(c, key) != NULL)
		return (0);
	snprintf(path, sizeof(path), "%s/window-%u/rank-%d.tar.zst", job,
	    window, rank);
	if (fstatat(c->store_fd, path, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		collect_mark_done(c, key);
		return (0);
	}
	if (c->npending >= COLLECT_PENDING_MAX || dir[0] != '/' ||
	    strchr(dir, '\n') != NULL || rank < 0) {
		log_limited(&c->log_limit, LOG_LEVEL_QUIET, "%s: job %s window "
		    "%u rank %d: %s", __func__, job, window, rank,
		    c->npending >= COLLECT_PENDING_MAX ? "too many pending" :
		    "not a usable output directory");
		collect_mark_done(c, key);
		return (0);
	}
	if ((it = calloc(1, sizeof(*it))) == NULL)
		return (0);
	snprintf(it->job, sizeof(it->job), "%s", job);
	it->window = window;
	it->rank = rank;
	it->uid = uid;
	snprintf(it->dir, sizeof(it->dir), "%s", dir);
	it->due_ms = clock_mono_ms();
	TAILQ_INSERT_TAIL(&c->pending, it, entry);
	c->npending++;
	return (1);
}

/* Reads the queue file a previous agent left. */
static void
collect_load(struct collect *c)
{
	FILE		*f;
	char		 line[SEG_JOB_MAX + SEG_PATH_MAX + 64], job[SEG_JOB_MAX + 1];
	unsigned int	 window, uid;
	int		 rank, off, version, n = 0;

	if ((f = fopen(c->queue_path, "re")) == NULL)
		return;
	if (fgets(line, sizeof(line), f) == NULL ||
	    sscanf(line, "dynprof-collect %d", &version) != 1 ||
	    version != COLLECT_QUEUE_VERSION) {
		log_warnx("%s: %s: not a queue file of this version: ignored",
		    __func__, c->queue_path);
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%64s %u %d %u %n", job, &window, &rank, &uid,
		    &off) != 4 || !jobid_valid(job, NULL)) {
			log_warnx("%s: %s: a bad line: skipped", __func__,
			    c->queue_path);
			continue;
		}
		n += collect_add(c, job, window, rank, (uid_t)uid, line + off);
	}
	fclose(f);
	if (n > 0)
		log_info("collect: %d traces left to collect by the last agent",
		    n);
}

static void	collect_run(struct agent *);

/* The packing child ended: its result, then the next one. */
static void
collect_packed(evutil_socket_t fd, short what, void *arg)
{
	struct agent		*a = arg;
	struct collect		*c = a->collect;
	struct collect_item	*it = c->busy;
	struct trace_pack_result r;
	int64_t			 now = clock_mono_ms();

	(void)fd;
	(void)what;
	c->busy = NULL;
	if (trace_pack_finish(&c->tp, &r) == 0) {
		c->collected++;
		log_info("collected job %s window %u rank %d: %s, %llu bytes, "
		    "sha256 %s, %llu files (%llu bytes) in %lld ms, %llu left "
		    "out%s%s", it->job, it->window, it->rank, c->tp.path,
		    (unsigned long long)r.size, r.sha256,
		    (unsigned long long)r.files,
		    (unsigned long long)r.bytes_in,
		    (long long)(now - c->started_ms),
		    (unsigned long long)r.skipped,
		    r.skipped ? ": first " : "", r.first_skipped);
		collect_mark_done(c, collect_key(it->job, it->window,
		    it->rank));
		free(it);
	} else if (r.unsettled) {
		it->due_ms = now + a->opts.trace_settle_s * 1000;
		TAILQ_INSERT_TAIL(&c->pending, it, entry);
		c->npending++;
	} else if (++it->tries < COLLECT_TRIES) {
		log_limited(&c->log_limit, LOG_LEVEL_QUIET, "collect: job %s "
		    "window %u rank %d: %s: tried again in %d s", it->job,
		    it->window,
		    it->rank, r.why, COLLECT_RETRY_MS / 1000);
		it->due_ms = now + COLLECT_RETRY_MS;
		TAILQ_INSERT_TAIL(&c->pending, it, entry);
		c->npending++;
	} else {
		c->failed++;
		log_warnx("collect failed: job %s window %u rank %d: %s",
		    it->job, it->window, it->rank, r.why);
		collect_mark_done(c, collect_key(it->job, it->window,
		    it->rank));
		free(it);
	}
	collect_save(c);
	collect_run(a);
	agent_schedule(a);
}

/* Starts the first pending item that is due, unless one is being packed. */
static void
collect_run(struct agent *a)
{
	struct collect		*c = a->collect;
	struct collect_item	*it;
	char			 why[256];
	int64_t			 now = clock_mono_ms();

	if (c->busy != NULL)
		return;
	TAILQ_FOREACH(it, &c->pending, entry)
		if (it->due_ms <= now)
			break;
	if (it == NULL)
		return;
	TAILQ_REMOVE(&c->pending, it, entry);
	c->npending--;
	if (trace_pack_start(&c->tp, c->store_fd, it->job, it->window,
	    (uint32_t)it->rank, -1, it->dir, it->uid, TRACE_PACK_MAX_BYTES,
	    a->opts.trace_settle_s, why, sizeof(why)) == -1) {
		c->failed++;
		log_warnx("collect failed: job %s window %u rank %d: %s",
		    it->job, it->window, it->rank, why);
		free(it);
		collect_save(c);
		return;
	}
	c->busy = it;
	c->started_ms = now;
	if (c->ev != NULL)
		event_free(c->ev);
	c->ev = event_new(a->base, c->tp.fd, EV_READ, collect_packed, a);
	if (c->ev == NULL || event_add(c->ev, NULL) == -1)
		fatalx("%s: cannot watch the packer", __func__);
}

/*
 * Notes slot s (index idx) of j, as just read: its trace is queued once its
 * last event is `stopped`.  Called by the sampler, under the guard.
 */
void
collect_note_slot(struct agent *a, struct agent_job *j, int idx,
    const struct seg_slot *s)
{
	uint32_t	 inc;

	if (a->collect == NULL ||
	    s->last_event != DYNPROF__V1__EVENT_KIND__EVENT_STOPPED ||
	    s->window_id == 0 || s->output_dir[0] == '\0')
		return;
	inc = atomic_load_explicit(&j->seg.slots[idx].incarnation,
	    memory_order_relaxed);
	if (j->collect_window[idx] == s->window_id &&
	    j->collect_inc[idx] == inc)
		return;
	j->collect_window[idx] = s->window_id;
	j->collect_inc[idx] = inc;
	if (collect_add(a->collect, j->name, s->window_id, s->rank,
	    segments_rank_uid(j, idx), s->output_dir))
		collect_save(a->collect);
}

/* The housekeeping's part: starts what is due. */
void
collect_tick(struct agent *a)
{
	if (a->collect != NULL)
		collect_run(a);
}

/* When collect_tick() has something to start next, or INT64_MAX. */
int64_t
collect_next_ms(const struct agent *a)
{
	const struct collect		*c = a->collect;
	const struct collect_item	*it;
	int64_t				 next = INT64_MAX;

	if (c == NULL || c->busy != NULL)
		return (INT64_MAX);
	TAILQ_FOREACH(it, &c->pending, entry)
		if (it->due_ms < next)
			next = it->due_ms;
	return (next);
}

/* Opens --trace-store and the queue file.  Returns 0, or -1. */
int
collect_open(struct agent *a)
{
	struct collect	*c;

	if (a->opts.trace_store[0] == '\0')
		return (0);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("calloc");
	TAILQ_INIT(&c->pending);
	c->store_fd = open(a->opts.trace_store, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	if (c->store_fd == -1) {
		log_warn("--trace-store %s", a->opts.trace_store);
		free(c);
		return (-1);
	}
	c->tp.fd = -1;
	snprintf(c->queue_path, sizeof(c->queue_path), "%s/%s",
	    a->opts.shm_dir, COLLECT_QUEUE_FILE);
	a->collect = c;
	collect_load(c);
	collect_save(c);
	return (0);
}

/* Stops the packing in progress (kept queued) and frees the state. */
void
collect_close(struct agent *a)
{
	struct collect		*c = a->collect;
	struct collect_item	*it;

	if (c == NULL)
		return;
	if (c->busy != NULL) {
		trace_pack_abort(&c->tp);
		free(c->busy);
	}
	if (c->ev != NULL)
		event_free(c->ev);
	while ((it = TAILQ_FIRST(&c->pending)) != NULL) {
		TAILQ_REMOVE(&c->pending, it, entry);
		free(it);
	}
	if (c->collected > 0 || c->failed > 0)
		log_info("collect: %llu traces collected, %llu failed",
		    (unsigned long long)c->collected,
		    (unsigned long long)c->failed);
	close(c->store_fd);
	free(c);
	a->collect = NULL;
}
