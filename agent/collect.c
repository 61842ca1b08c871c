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
 *
 * A window whose request said "collect": false (the pushed config's
 * no_collect, collect_config()) is remembered, in the queue file too, and
 * its ranks are not collected.
 *
 * Each rank's outcome is reported to the coordinator once, as an event of
 * its own (`collected` with the archive's location, size and sha256, or
 * `collect_failed` with why): kept in the queue file too until the
 * coordinator has committed it (collect_acked()), sent again by an agent
 * restarted before that; the coordinator keeps one per rank and window.
 * A `collected` event carries what the packer read of the trace
 * (trace_steps.c: its steps' durations, its busiest operators), kept in
 * the queue file with it ("~" lines) until then.
 */

#include <sys/stat.h>

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "parts.h"
#include "clock.h"
#include "jobid.h"
#include "log.h"

#define COLLECT_QUEUE_FILE	"dynprof-agent.collect"	/* in --shm-dir */
#define COLLECT_PENDING_MAX	4096
#define COLLECT_DONE_MAX	8192	/* ranks remembered as collected */
#define COLLECT_TRIES		3
#define COLLECT_RETRY_MS	5000
#define COLLECT_REPORTS_MAX	8192	/* outcomes not yet committed */
#define COLLECT_UPLOAD_TRIES	6	/* then given up, reported failed */
#define COLLECT_UPLOAD_BACKOFF_MAX_MS 60000	/* --upload-backoff, doubled
						 * after each failure, up to
						 * this */
#define COLLECT_OFF_MAX		64	/* windows said "collect": false,
					 * the newest remembered */
#define COLLECT_QUEUE_VERSION	5	/* bump when a line's layout changes
					 * (1, pending lines only, 2, no '-'
					 * lines, 3, no '~' lines, 4, no '='
					 * lines, still read); '>' lines,
					 * added since, are skipped by an
					 * agent before them as bad lines,
					 * its queue kept */
#define COLLECT_OWN_MAX		64	/* windows with their job's own
					 * store, the newest remembered */
#define COLLECT_OWN_LEN		256	/* a job's own store's length */

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

/* A rank's outcome, reported until the coordinator has committed it. */
struct collect_report {
	TAILQ_ENTRY(collect_report) entry;
	char		 job[SEG_JOB_MAX + 1];
	uint32_t	 window;
	int32_t		 rank;
	int		 kind;		/* EVENT_COLLECTED, EVENT_COLLECT_FAILED */
	struct tracesum	*sum;		/* collected: what was read, or NULL */
	uint64_t	 size;		/* collected: the archive's */
	char		 sha256[65];
	char		 text[PATH_MAX + 320];	/* its location, or why not */
};
TAILQ_HEAD(collect_reports, collect_report);

/* An archive in the local store to put into the object store. */
struct collect_upload {
	TAILQ_ENTRY(collect_upload) entry;
	char		 job[SEG_JOB_MAX + 1];
	uint32_t	 window;
	int32_t		 rank;
	uint64_t	 size;
	char		 sha256[65];
	struct tracesum	*sum;		/* what was read, or NULL */
	int		 tries;
	int64_t		 due_ms;
};
TAILQ_HEAD(collect_uploads, collect_upload);

struct collect {
	int			 store_fd;
	struct collect_items	 pending;
	size_t			 npending;
	struct collect_reports	 reports;
	size_t			 nreports;
	int			 upload;	/* --trace-upload given */
	struct upload_conf	 up_conf;
	struct collect_uploads	 uploads;
	struct collect_upload	*up_busy;	/* being uploaded, off the list */
	struct trace_upload	 tu;
	struct event		*up_ev;
	int64_t			 up_started_ms;
	char			 store[PATH_MAX];	/* --trace-store, resolved */
	struct collect_item	*busy;		/* being packed, off the list */
	struct trace_pack	 tp;
	int64_t			 started_ms;	/* of the packing in progress */
	struct event		*ev;
	uint64_t		 done[COLLECT_DONE_MAX];	/* keys, a ring */
	size_t			 ndone;
	struct {			/* "collect": false, a ring */
		char		 job[SEG_JOB_MAX + 1];
		uint32_t	 window;
	}			 off[COLLECT_OFF_MAX];
	size_t			 noff;
	struct {			/* the job's own store, a ring */
		char		 job[SEG_JOB_MAX + 1];
		uint32_t	 window;
		char		 store[COLLECT_OWN_LEN];
	}			 own[COLLECT_OWN_MAX];
	size_t			 nown;
	char			 busy_store[PATH_MAX];	/* where the busy
						 * item is packed */
	struct collect_packed {		/* the busy item's archive, whole
					 * under its temporary name or in
					 * place; or, loading, the last
					 * agent's ('>' line) */
		uint64_t	 key;	/* 0: none */
		uint64_t	 size;
		char		 sha256[65];
		struct tracesum	 sum;
		int		 has_sum;
	}			 packed;
	int			 test_stopped;	/* --test-stop-at reached */
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

/* Returns 1 if job's window said "collect": false. */
static int
collect_is_off(const struct collect *c, const char *job, uint32_t window)
{
	size_t	 i, n = c->noff < COLLECT_OFF_MAX ? c->noff : COLLECT_OFF_MAX;

	for (i = 0; i < n; i++)
		if (c->off[i].window == window &&
		    strcmp(c->off[i].job, job) == 0)
			return (1);
	return (0);
}

/* Remembers that job's window said "collect": false.  Returns 1 if new. */
static int
collect_mark_off(struct collect *c, const char *job, uint32_t window)
{
	size_t	 i;

	if (collect_is_off(c, job, window))
		return (0);
	i = c->noff++ % COLLECT_OFF_MAX;
	snprintf(c->off[i].job, sizeof(c->off[i].job), "%s", job);
	c->off[i].window = window;
	return (1);
}

/* Returns the own store job's window was given (PUT .../trace-store), or
 * NULL: the agent's. */
static const char *
collect_own_store(const struct collect *c, const char *job, uint32_t window)
{
	size_t	 i, n = c->nown < COLLECT_OWN_MAX ? c->nown : COLLECT_OWN_MAX;

	for (i = 0; i < n; i++)
		if (c->own[i].window == window &&
		    strcmp(c->own[i].job, job) == 0)
			return (c->own[i].store);
	return (NULL);
}

/* Remembers job's window's own store.  Returns 1 if new. */
static int
collect_mark_own(struct collect *c, const char *job, uint32_t window,
    const char *store)
{
	size_t	 i;

	if (strlen(store) >= COLLECT_OWN_LEN || strpbrk(store, " \n") !=
	    NULL || collect_own_store(c, job, window) != NULL)
		return (0);
	i = c->nown++ % COLLECT_OWN_MAX;
	snprintf(c->own[i].job, sizeof(c->own[i].job), "%s", job);
	c->own[i].window = window;
	snprintf(c->own[i].store, sizeof(c->own[i].store), "%s", store);
	return (1);
}

/*
 * Opens a job's own directory store: an absolute path of plain parts (no
 * "..", ".", nor empty one) under one of --trace-store-allow, walked from
 * that directory one part at a time, made if missing (and make), no
 * symbolic link followed.  Returns the descriptor, or -1 with why.
 */
static int
collect_own_open(const struct agent *a, const char *store, int make,
    char *why, size_t wlen)
{
	const struct agent_options *o = &a->opts;
	char			 part[COLLECT_OWN_LEN];
	const char		*p, *root = NULL, *e;
	size_t			 i, n;
	int			 fd, next;

	for (i = 0; i < o->nstore_allow && root == NULL; i++) {
		n = strlen(o->store_allow[i]);
		while (n > 1 && o->store_allow[i][n - 1] == '/')
			n--;
		if (strncmp(store, o->store_allow[i], n) == 0 &&
		    (store[n] == '/' || store[n] == '\0' || n == 1)) {
			root = o->store_allow[i];
			p = store + n;
		}
	}
	if (root == NULL) {
		snprintf(why, wlen, "the job's own store %s is under no "
		    "--trace-store-allow of this agent", store);
		return (-1);
	}
	if ((fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(why, wlen, "--trace-store-allow %s: %s", root,
		    strerror(errno));
		return (-1);
	}
	for (; *p != '\0'; p = *e == '/' ? e + 1 : e) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		e = p + strcspn(p, "/");
		n = (size_t)(e - p);
		if (n >= sizeof(part) || (n == 1 && *p == '.') ||
		    (n == 2 && strncmp(p, "..", 2) == 0)) {
			snprintf(why, wlen, "the job's own store %s: a bad "
			    "part", store);
			close(fd);
			return (-1);
		}
		memcpy(part, p, n);
		part[n] = '\0';
		if (make && mkdirat(fd, part, 0755) == -1 && errno != EEXIST)
			next = -1;
		else
			next = openat(fd, part, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (next == -1) {
			snprintf(why, wlen, "the job's own store %s: %s: %s",
			    store, part, errno == ELOOP || errno == ENOTDIR ?
			    "not a directory (a symbolic link is not "
			    "followed)" : strerror(errno));
			close(fd);
			return (-1);
		}
		close(fd);
		fd = next;
	}
	return (fd);
}

/*
 * Opens the directory store job's window's archives are packed into: the
 * job's own (PUT .../trace-store), or --trace-store (a job's own s3 store's
 * too: packed here, then uploaded), its text into store (len bytes); make:
 * the own store's missing parts made.  Returns the descriptor, to give back
 * to collect_store_close(), or -1 with why.
 */
static int
collect_store_open(const struct agent *a, const char *job, uint32_t window,
    int make, char *store, size_t len, char *why, size_t wlen)
{
	const struct collect	*c = a->collect;
	const char		*own = collect_own_store(c, job, window);

	if (own != NULL && strncmp(own, "s3://", 5) == 0 && !c->upload) {
		snprintf(why, wlen, "the job's own store %s: this agent has no "
		    "--trace-upload (its endpoint and credentials)", own);
		return (-1);
	}
	if (own != NULL && strncmp(own, "s3://", 5) == 0)
		own = NULL;
	snprintf(store, len, "%s", own != NULL ? own : c->store);
	return (own != NULL ? collect_own_open(a, own, make, why, wlen) :
	    c->store_fd);
}

static void
collect_store_close(const struct collect *c, int fd)
{
	if (fd != -1 && fd != c->store_fd)
		close(fd);
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

/* Writes sum (NULL: nothing) of job's window's rank as a "~" line. */
static void
collect_save_sum(FILE *f, const char *job, uint32_t window, int32_t rank,
    const struct tracesum *sum)
{
	char	 text[TRACESUM_TEXT_MAX];

	if (sum != NULL && tracesum_encode(sum, text, sizeof(text)) == 0)
		fprintf(f, "~ %s %u %d %s\n", job, window, rank, text);
}

/* Rewrites the queue file (the busy item and the pending list). */
static void
collect_save(struct collect *c)
{
	struct collect_item	*it;
	struct collect_report	*rep;
	struct collect_upload	*up;
	char			 tmp[PATH_MAX + 40];
	FILE			*f;
	size_t			 i;
	int			 fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", c->queue_path);
	(void)unlink(tmp);
	/* Its own, whatever the umask: collect_queue_open() checks. */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1 || (f = fdopen(fd, "w")) == NULL) {
		log_warn("%s: %s", __func__, tmp);
		if (fd != -1)
			close(fd);
		return;
	}
	fprintf(f, "dynprof-collect %d\n", COLLECT_QUEUE_VERSION);
	for (i = 0; i < c->noff && i < COLLECT_OFF_MAX; i++)
		fprintf(f, "- %s %u\n", c->off[i].job, c->off[i].window);
	for (i = 0; i < c->nown && i < COLLECT_OWN_MAX; i++)
		fprintf(f, "= %s %u %s\n", c->own[i].job, c->own[i].window,
		    c->own[i].store);
	/*
	 * The busy item's archive, once packed: its "~" summary and ">"
	 * line before its pending line, written before the rename, so that
	 * an agent killed after it knows what it packed (collect_recover()).
	 */
	if (c->busy != NULL && c->packed.key != 0) {
		collect_save_sum(f, c->busy->job, c->busy->window,
		    c->busy->rank, c->packed.has_sum ? &c->packed.sum : NULL);
		fprintf(f, "> %s %u %d %llu %s\n", c->busy->job,
		    c->busy->window, c->busy->rank,
		    (unsigned long long)c->packed.size, c->packed.sha256);
	}
	if (c->busy != NULL)
		fprintf(f, "%s %u %d %u %s\n", c->busy->job, c->busy->window,
		    c->busy->rank, (unsigned int)c->busy->uid, c->busy->dir);
	TAILQ_FOREACH(it, &c->pending, entry)
		fprintf(f, "%s %u %d %u %s\n", it->job, it->window, it->rank,
		    (unsigned int)it->uid, it->dir);
	/*
	 * A job id starts with neither '+', '!', '^', '>' nor '~'; a "~" line
	 * is the summary of the "^", "+" or ">" line after it.
	 */
	if (c->up_busy != NULL)
		collect_save_sum(f, c->up_busy->job, c->up_busy->window,
		    c->up_busy->rank, c->up_busy->sum);
	if (c->up_busy != NULL)
		fprintf(f, "^ %s %u %d %llu %s\n", c->up_busy->job,
		    c->up_busy->window, c->up_busy->rank,
		    (unsigned long long)c->up_busy->size, c->up_busy->sha256);
	TAILQ_FOREACH(up, &c->uploads, entry) {
		collect_save_sum(f, up->job, up->window, up->rank, up->sum);
		fprintf(f, "^ %s %u %d %llu %s\n", up->job, up->window,
		    up->rank, (unsigned long long)up->size, up->sha256);
	}
	TAILQ_FOREACH(rep, &c->reports, entry) {
		collect_save_sum(f, rep->job, rep->window, rep->rank, rep->sum);
		if (rep->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED)
			fprintf(f, "+ %s %u %d %llu %s %s\n", rep->job,
			    rep->window, rep->rank,
			    (unsigned long long)rep->size, rep->sha256,
			    rep->text);
		else
			fprintf(f, "! %s %u %d %s\n", rep->job, rep->window,
			    rep->rank, rep->text);
	}
	if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
		log_warn("%s: %s", __func__, tmp);
		return;
	}
	if (rename(tmp, c->queue_path) == -1)
		log_warn("%s: %s", __func__, c->queue_path);
}

/* Sends a report to the coordinator (queued there until it commits it). */
static void
collect_send(struct agent *a, const struct collect_report *rep)
{
	Dynprof__V1__RankEvent	 ev = DYNPROF__V1__RANK_EVENT__INIT;
	Dynprof__V1__TraceSummary sum;
	Dynprof__V1__StepTime	 steps[TRACESUM_STEPS_MAX];
	Dynprof__V1__StepTime	*stepp[TRACESUM_STEPS_MAX];
	Dynprof__V1__OpTime	 ops[TRACESUM_OPS_MAX];
	Dynprof__V1__OpTime	*opp[TRACESUM_OPS_MAX];
	Dynprof__V1__OpTime	 comm_op;
	struct queue_origin	 o;

	ev.kind = rep->kind;
	ev.job = (char *)rep->job;
	ev.rank = rep->rank;
	ev.window_id = rep->window;
	ev.time_unix_ns = clock_wall_ns();
	if (rep->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED) {
		ev.output_dir = (char *)rep->text;
		ev.trace_size = rep->size;
		ev.trace_sha256 = (char *)rep->sha256;
		if (rep->sum != NULL) {
			tracesum_to_pb(rep->sum, &sum, steps, stepp, ops, opp,
			    &comm_op);
			ev.trace_summary = &sum;
		}
	} else
		ev.error = (char *)rep->text;
	memset(&o, 0, sizeof(o));
	snprintf(o.job, sizeof(o.job), "%s", rep->job);
	o.slot = QUEUE_ORIGIN_COLLECT;
	o.inc = rep->window;
	o.seq = (uint32_t)rep->rank;
	upstream_event(a, &ev, &o);
}

/*
 * Reports job's window's rank's outcome, kind, once: kept (and in the queue
 * file) until the coordinator has committed it.  Saves the queue file.
 */
static void
collect_report(struct agent *a, int kind, const char *job, uint32_t window,
    int32_t rank, uint64_t size, const char *sha256, const char *text,
    const struct tracesum *sum)
{
	struct collect		*c = a->collect;
	struct collect_report	*rep;

	TAILQ_FOREACH(rep, &c->reports, entry)
		if (rep->window == window && rep->rank == rank &&
		    strcmp(rep->job, job) == 0)
			return;
	if (c->nreports >= COLLECT_REPORTS_MAX ||
	    (rep = calloc(1, sizeof(*rep))) == NULL) {
		log_limited(&c->log_limit, LOG_LEVEL_QUIET, "%s: job %s window "
		    "%u rank %d: %s: not reported", __func__, job, window,
		    rank, c->nreports >= COLLECT_REPORTS_MAX ? "too many "
		    "reports not committed yet" : "out of memory");
		return;
	}
	snprintf(rep->job, sizeof(rep->job), "%s", job);
	rep->window = window;
	rep->rank = rank;
	rep->kind = kind;
	rep->size = size;
	if (sum != NULL && kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED &&
	    (rep->sum = malloc(sizeof(*rep->sum))) != NULL)
		*rep->sum = *sum;
	snprintf(rep->sha256, sizeof(rep->sha256), "%s", sha256 != NULL ?
	    sha256 : "");
	snprintf(rep->text, sizeof(rep->text), "%s", text);
	/* One line each in the queue file. */
	rep->text[strcspn(rep->text, "\n")] = '\0';
	TAILQ_INSERT_TAIL(&c->reports, rep, entry);
	c->nreports++;
	collect_save(c);
	collect_send(a, rep);
}

/*
 * The coordinator committed the report origin names (from collect_send()):
 * it is forgotten, and the queue file rewritten.
 */
void
collect_acked(struct agent *a, const struct queue_origin *o)
{
	struct collect		*c = a->collect;
	struct collect_report	*rep;

	if (c == NULL)
		return;
	TAILQ_FOREACH(rep, &c->reports, entry)
		if (rep->window == o->inc && rep->rank == (int32_t)o->seq &&
		    strcmp(rep->job, o->job) == 0)
			break;
	if (rep == NULL)
		return;
	TAILQ_REMOVE(&c->reports, rep, entry);
	c->nreports--;
	free(rep->sum);
	free(rep);
	collect_save(c);
}

/* Where the store holds an archive at path (relative to it): text. */
static void
collect_location(const struct collect *c, const char *path, char *buf,
    size_t len)
{
	snprintf(buf, len, "%s/%s", c->store, path);
}

/*
 * The size and sha256 of the regular file name in directory dfd (an
 * archive the last agent packed), read back.  Returns 0, or -1.
 */
static int
collect_rehash(int dfd, const char *name, uint64_t *size, char sha256[65])
{
	struct stat	 st;
	int		 fd, rc = -1;

	*size = 0;
	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return (-1);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		rc = trace_pack_sha256(fd, 0, UINT64_MAX, sha256, size);
	close(fd);
	return (rc);
}

/*
 * Opens <job>/window-<window> in store fd, no symbolic link followed.
 * Returns the descriptor, or -1.
 */
static int
collect_window_open(int fd, const char *job, uint32_t window)
{
	char	 name[32];
	int	 jfd, wfd;

	if ((jfd = openat(fd, job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return (-1);
	snprintf(name, sizeof(name), "window-%u", window);
	wfd = openat(jfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(jfd);
	return (wfd);
}

/* Returns 1 if store fd holds job's window's rank's archive. */
static int
collect_in_store(int fd, const char *job, uint32_t window, int32_t rank)
{
	struct stat	 st;
	char		 name[32];
	int		 wfd, rc;

	if ((wfd = collect_window_open(fd, job, window)) == -1)
		return (0);
	snprintf(name, sizeof(name), "rank-%d.tar.zst", rank);
	rc = fstatat(wfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	close(wfd);
	return (rc);
}

static void	collect_upload_run(struct agent *);

/* The object store job's window's archive goes to: --trace-upload's, or
 * the job's own s3 store on --trace-upload's endpoint.  Returns 0, or -1
 * with why. */
static int
collect_upload_conf(const struct collect *c, const char *job,
    uint32_t window, struct upload_conf *conf, char *why, size_t wlen)
{
	const char	*own = collect_own_store(c, job, window);

	*conf = c->up_conf;
	if (own == NULL || strncmp(own, "s3://", 5) != 0)
		return (0);
	return (trace_upload_retarget(conf, own, "the job's own store", why,
	    wlen));
}

/*
 * Queues the archive of job's window's rank (size bytes, sha256), packed
 * into the local store, for the object store.  Saves the queue file.
 */
static void
collect_upload_add(struct agent *a, const char *job, uint32_t window,
    int32_t rank, uint64_t size, const char *sha256,
    const struct tracesum *sum)
{
	struct collect		*c = a->collect;
	struct collect_upload	*up;

	if ((up = calloc(1, sizeof(*up))) == NULL) {
		log_warn("%s: job %s window %u rank %d", __func__, job, window,
		    rank);
		return;
	}
	snprintf(up->job, sizeof(up->job), "%s", job);
	up->window = window;
	up->rank = rank;
	up->size = size;
	snprintf(up->sha256, sizeof(up->sha256), "%s", sha256);
	if (sum != NULL && (up->sum = malloc(sizeof(*up->sum))) != NULL)
		*up->sum = *sum;
	up->due_ms = clock_mono_ms();
	TAILQ_INSERT_TAIL(&c->uploads, up, entry);
	collect_save(c);
}

/* The uploading child ended: reported, or tried again later. */
static void
collect_uploaded(evutil_socket_t fd, short what, void *arg)
{
	struct agent		*a = arg;
	struct collect		*c = a->collect;
	struct collect_upload	*up = c->up_busy;
	char			 path[SEG_JOB_MAX + 64], where[PATH_MAX + 320];
	char			 why[256], reason[sizeof(where) + 320];
	struct upload_conf	 conf;
	int64_t			 now = clock_mono_ms(), delay;

	(void)fd;
	(void)what;
	c->up_busy = NULL;
	snprintf(path, sizeof(path), "%s/window-%u/rank-%d.tar.zst", up->job,
	    up->window, up->rank);
	if (collect_upload_conf(c, up->job, up->window, &conf, why,
	    sizeof(why)) == -1)
		conf = c->up_conf;	/* checked as the upload started */
	trace_upload_location(&conf, path, where, sizeof(where));
	if (trace_upload_finish(&c->tu, why, sizeof(why)) == 0) {
		log_info("uploaded job %s window %u rank %d: %s, %llu bytes in "
		    "%lld ms", up->job, up->window, up->rank, where,
		    (unsigned long long)up->size,
		    (long long)(now - c->up_started_ms));
		collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED,
		    up->job, up->window, up->rank, up->size, up->sha256, where,
		    up->sum);
		free(up->sum);
		free(up);
	} else if (++up->tries < COLLECT_UPLOAD_TRIES) {
		delay = (int64_t)a->opts.upload_backoff_ms <<
		    (up->tries - 1);
		if (delay > COLLECT_UPLOAD_BACKOFF_MAX_MS)
			delay = COLLECT_UPLOAD_BACKOFF_MAX_MS;
		log_limited(&c->log_limit, LOG_LEVEL_QUIET, "upload: job %s "
		    "window %u rank %d to %s: %s: tried again in %lld ms",
		    up->job, up->window, up->rank, where, why, (long long)delay);
		up->due_ms = now + delay;
		TAILQ_INSERT_TAIL(&c->uploads, up, entry);
	} else {
		c->failed++;
		snprintf(reason, sizeof(reason), "upload to %s: %s (%d tries)",
		    where, why, up->tries);
		log_warnx("collect failed: job %s window %u rank %d: %s",
		    up->job, up->window, up->rank, reason);
		collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED,
		    up->job, up->window, up->rank, 0, NULL, reason, NULL);
		free(up->sum);
		free(up);
	}
	collect_save(c);
	collect_upload_run(a);
	a->loop->schedule(a);
}

/* Starts the first upload that is due, unless one is in progress. */
static void
collect_upload_run(struct agent *a)
{
	struct collect		*c = a->collect;
	struct collect_upload	*up;
	struct upload_conf	 conf;
	char			 path[SEG_JOB_MAX + 64], why[256];
	int64_t			 now = clock_mono_ms();

	if (c->up_busy != NULL)
		return;
	TAILQ_FOREACH(up, &c->uploads, entry)
		if (up->due_ms <= now)
			break;
	if (up == NULL)
		return;
	TAILQ_REMOVE(&c->uploads, up, entry);
	snprintf(path, sizeof(path), "%s/window-%u/rank-%d.tar.zst", up->job,
	    up->window, up->rank);
	if (collect_upload_conf(c, up->job, up->window, &conf, why,
	    sizeof(why)) == -1 || trace_upload_start(&c->tu, &conf,
	    c->store_fd, path, up->sha256, why, sizeof(why)) == -1) {
		c->failed++;
		log_warnx("collect failed: job %s window %u rank %d: upload: %s",
		    up->job, up->window, up->rank, why);
		collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED,
		    up->job, up->window, up->rank, 0, NULL, why, NULL);
		free(up->sum);
		free(up);
		collect_save(c);
		return;
	}
	c->up_busy = up;
	c->up_started_ms = now;
	if (c->up_ev != NULL)
		event_free(c->up_ev);
	c->up_ev = event_new(a->base, c->tu.fd, EV_READ, collect_uploaded, a);
	if (c->up_ev == NULL || event_add(c->up_ev, NULL) == -1)
		fatalx("%s: cannot watch the uploader", __func__);
}

/*
 * Adds job's window's rank (its trace in dir, uid's) to the pending list,
 * unless collected, pending or in its store (the job's own, or the agent's)
 * already.  Returns 1 if added.
 */
static int
collect_add(struct agent *a, const char *job, uint32_t window,
    int32_t rank, uid_t uid, const char *dir)
{
	struct collect		*c = a->collect;
	struct collect_item	*it;
	char			 store[PATH_MAX], why[512];
	uint64_t		 key = collect_key(job, window, rank);
	int			 fd, there;

	if (collect_is_done(c, key) || collect_find(c, key) != NULL ||
	    collect_is_off(c, job, window))
		return (0);
	/* A store that does not open: packed all the same, failing why. */
	fd = collect_store_open(a, job, window, 0, store, sizeof(store), why,
	    sizeof(why));
	there = fd != -1 && collect_in_store(fd, job, window, rank);
	collect_store_close(c, fd);
	if (there) {
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

/*
 * A rank the last agent was packing (a pending line of its queue file),
 * with what it had packed (its '>' line), or NULL.  Its archive may be in
 * its store already: under its final name (the agent died between the
 * rename and the report) or whole under its temporary name (between the
 * packing's end and the rename: put in place now, not packed again).  Such
 * an archive is reported as its packing would have been, with the summary
 * noted if it is the archive noted.  Returns 1 if it was, 0 if the rank is
 * still to pack.
 */
static int
collect_recover(struct agent *a, const char *job, uint32_t window,
    int32_t rank, const struct collect_packed *packed)
{
	struct collect		*c = a->collect;
	const struct tracesum	*sum = NULL;
	char			 store[PATH_MAX], why[512], name[32], tmp[40];
	char			 where[PATH_MAX + 320], sha[65];
	struct stat		 st;
	uint64_t		 size = 0, key = collect_key(job, window, rank);
	int			 fd, wfd, placed = 0, rc;

	if (collect_is_done(c, key))
		return (0);
	if ((fd = collect_store_open(a, job, window, 0, store, sizeof(store),
	    why, sizeof(why))) == -1)
		return (0);
	wfd = collect_window_open(fd, job, window);
	collect_store_close(c, fd);
	if (wfd == -1)
		return (0);
	snprintf(name, sizeof(name), "rank-%d.tar.zst", rank);
	snprintf(tmp, sizeof(tmp), ".rank-%d.tar.zst.part", rank);
	if (fstatat(wfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		rc = collect_rehash(wfd, name, &size, sha);
	else if (packed != NULL && collect_rehash(wfd, tmp, &size, sha) == 0 &&
	    size == packed->size && strcmp(sha, packed->sha256) == 0 &&
	    renameat(wfd, tmp, wfd, name) == 0) {
		rc = 0;
		placed = 1;
	} else {
		close(wfd);
		return (0);	/* packed again; its temporary file goes */
	}
	(void)unlinkat(wfd, tmp, 0);
	close(wfd);
	collect_mark_done(c, key);
	snprintf(where, sizeof(where), "%s/%s/window-%u/%s", store, job,
	    window, name);
	if (rc == -1) {
		collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED,
		    job, window, rank, 0, NULL, "its archive in the store does "
		    "not read back", NULL);
		return (1);
	}
	if (packed != NULL && packed->has_sum &&
	    strcmp(sha, packed->sha256) == 0)
		sum = &packed->sum;
	log_info("collect: job %s window %u rank %d: packed by the last "
	    "agent, %s: %s, %llu bytes, sha256 %s%s", job, window, rank,
	    placed ? "put in place now" : "in place", where,
	    (unsigned long long)size, sha, sum != NULL ? ", with its summary" :
	    "");
	if (c->upload && strcmp(store, c->store) == 0)
		collect_upload_add(a, job, window, rank, size, sha, sum);
	else
		collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED,
		    job, window, rank, size, sha, where, sum);
	return (1);
}

/*
 * Opens the queue file a previous agent left, if it is one: a regular file
 * of this agent's user that nobody else may write.  --shm-dir is shared with
 * the ranks' users (a sticky group-writable directory, or an emptyDir), and
 * a line of the file names a directory to pack and the uid to read it as:
 * a file a rank's user put there (the name squatted while no agent had
 * written one, or swapped in a directory without the sticky bit) would have
 * root pack what the user names.  Returns the stream, or NULL.
 */
static FILE *
collect_queue_open(struct collect *c)
{
	struct stat	 st;
	FILE		*f;
	int		 fd;

	if ((fd = open(c->queue_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			log_warnx("%s: %s: %s: ignored", __func__,
			    c->queue_path, errno == ELOOP ? "a symbolic link" :
			    strerror(errno));
		return (NULL);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    st.st_nlink != 1) {
		log_warnx("%s: %s: not this agent's queue file (%s, uid %u, "
		    "mode %04o, %u links): ignored, and replaced at the next "
		    "change", __func__, c->queue_path, S_ISREG(st.st_mode) ?
		    "a file" : "not a regular file", (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777), (unsigned)st.st_nlink);
		close(fd);
		return (NULL);
	}
	if ((f = fdopen(fd, "r")) == NULL)
		close(fd);
	return (f);
}

/* Reads the queue file a previous agent left. */
static void
collect_load(struct agent *a)
{
	struct collect	*c = a->collect;
	FILE		*f;
	char		 line[PATH_MAX + 512], job[SEG_JOB_MAX + 1];
	char		 sha[65], path[SEG_JOB_MAX + 64], where[PATH_MAX + 320];
	unsigned int	 window, uid;
	unsigned long long size;
	struct tracesum	*sum = NULL, *use;
	uint64_t	 sum_key = 0;
	const char	*why;
	int		 rank, off, version, n = 0, nrep = 0;

	if ((f = collect_queue_open(c)) == NULL)
		return;
	if (fgets(line, sizeof(line), f) == NULL ||
	    sscanf(line, "dynprof-collect %d", &version) != 1 ||
	    version < 1 || version > COLLECT_QUEUE_VERSION) {
		log_warnx("%s: %s: not a queue file of this version: ignored",
		    __func__, c->queue_path);
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		off = 0;
		if (line[0] == '~' && sscanf(line, "~ %64s %u %d %n", job,
		    &window, &rank, &off) == 3 && off > 0 &&
		    jobid_valid(job, NULL) && rank >= 0) {
			if (sum == NULL && (sum = malloc(sizeof(*sum))) == NULL)
				continue;
			sum_key = tracesum_decode(line + off, sum, &why) == 0 ?
			    collect_key(job, window, rank) : 0;
			continue;
		}
		/* The summary on the line before, if it is this rank's. */
		use = NULL;
		if (sum_key != 0 && sscanf(line + 1, " %64s %u %d", job, &window,
		    &rank) == 3 && collect_key(job, window, rank) == sum_key)
			use = sum;
		sum_key = 0;
		if (line[0] == '-' && sscanf(line, "- %64s %u", job,
		    &window) == 2 && jobid_valid(job, NULL)) {
			(void)collect_mark_off(c, job, window);
			continue;
		}
		if (line[0] == '=' && sscanf(line, "= %64s %u %n", job,
		    &window, &off) == 2 && off > 0 && jobid_valid(job, NULL)) {
			(void)collect_mark_own(c, job, window, line + off);
			continue;
		}
		/* What the last agent packed of the pending line after it. */
		if (line[0] == '>' && sscanf(line, "> %64s %u %d %llu %64s",
		    job, &window, &rank, &size, sha) == 5 &&
		    jobid_valid(job, NULL) && rank >= 0 && strlen(sha) == 64) {
			c->packed.key = collect_key(job, window, rank);
			c->packed.size = size;
			snprintf(c->packed.sha256, sizeof(c->packed.sha256),
			    "%s", sha);
			if ((c->packed.has_sum = use != NULL))
				c->packed.sum = *use;
			continue;
		}
		if (line[0] == '+' && sscanf(line, "+ %64s %u %d %llu %64s %n",
		    job, &window, &rank, &size, sha, &off) == 5 && off > 0 &&
		    jobid_valid(job, NULL) && rank >= 0) {
			collect_mark_done(c, collect_key(job, window, rank));
			collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED,
			    job, window, rank, size, sha, line + off, use);
			nrep++;
			continue;
		}
		if (line[0] == '^' && sscanf(line, "^ %64s %u %d %llu %64s",
		    job, &window, &rank, &size, sha) == 5 &&
		    jobid_valid(job, NULL) && rank >= 0) {
			collect_mark_done(c, collect_key(job, window, rank));
			/* Without --trace-upload now: the local store's. */
			if (c->upload)
				collect_upload_add(a, job, window, rank, size,
				    sha, use);
			else {
				snprintf(path, sizeof(path), "%s/window-%u/"
				    "rank-%d.tar.zst", job, window, rank);
				collect_location(c, path, where, sizeof(where));
				collect_report(a,
				    DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED,
				    job, window, rank, size, sha, where, use);
			}
			nrep++;
			continue;
		}
		if (line[0] == '!' && sscanf(line, "! %64s %u %d %n", job,
		    &window, &rank, &off) == 3 && off > 0 &&
		    jobid_valid(job, NULL) && rank >= 0) {
			collect_mark_done(c, collect_key(job, window, rank));
			collect_report(a,
			    DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED, job,
			    window, rank, 0, NULL, line + off, NULL);
			nrep++;
			continue;
		}
		if (sscanf(line, "%64s %u %d %u %n", job, &window, &rank, &uid,
		    &off) != 4 || !jobid_valid(job, NULL) || rank < 0) {
			log_warnx("%s: %s: a bad line: skipped", __func__,
			    c->queue_path);
			continue;
		}
		if (collect_recover(a, job, window, rank,
		    c->packed.key == collect_key(job, window, rank) ?
		    &c->packed : NULL))
			nrep++;
		else
			n += collect_add(a, job, window, rank, (uid_t)uid,
			    line + off);
		c->packed.key = 0;
	}
	fclose(f);
	free(sum);
	c->packed.key = 0;
	if (n > 0 || nrep > 0)
		log_info("collect: %d traces left to collect, %d collections "
		    "to report by the last agent", n, nrep);
}

static void	collect_run(struct agent *);

/*
 * --test-stop-at: the agent stops itself (SIGSTOP) the first time a rank's
 * collection reaches point, for a test to SIGKILL it exactly there.
 */
static void
collect_test_stop(struct agent *a, const char *point,
    const struct collect_item *it)
{
	if (a->collect->test_stopped ||
	    strcmp(a->opts.test_stop_at, point) != 0)
		return;
	a->collect->test_stopped = 1;
	log_warnx("test-stop-at %s: job %s window %u rank %d: stopped", point,
	    it->job, it->window, it->rank);
	(void)raise(SIGSTOP);
}

/* The packing child ended: its result, then the next one. */
static void
collect_packed(evutil_socket_t fd, short what, void *arg)
{
	struct agent		*a = arg;
	struct collect		*c = a->collect;
	struct collect_item	*it = c->busy;
	struct trace_pack_result r;
	struct tracesum		*sum;
	char			 where[PATH_MAX + 320];
	int64_t			 now = clock_mono_ms();
	int			 rc;

	(void)fd;
	(void)what;
	rc = trace_pack_end(&c->tp, &r);
	/* What trace_steps.c read of it: none of its files known, no
	 * summary. */
	sum = r.sum.format[0] != '\0' || r.sum.error[0] != '\0' ? &r.sum :
	    NULL;
	if (rc == 0) {
		/*
		 * Noted before the rename: an agent killed after it finds
		 * the archive, under either name, and reports it with its
		 * summary (collect_recover()).
		 */
		c->packed.key = collect_key(it->job, it->window, it->rank);
		c->packed.size = r.size;
		snprintf(c->packed.sha256, sizeof(c->packed.sha256), "%s",
		    r.sha256);
		if ((c->packed.has_sum = sum != NULL))
			c->packed.sum = *sum;
		collect_save(c);
		collect_test_stop(a, "collect-packed", it);
		rc = trace_pack_place(&c->tp, &r);
		c->packed.key = 0;
	}
	c->busy = NULL;
	if (rc == 0) {
		collect_test_stop(a, "collect-renamed", it);
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
		if (sum != NULL && sum->error[0] != '\0')
			log_limited(&c->log_limit, LOG_LEVEL_QUIET, "collect: "
			    "job %s window %u rank %d: its trace not read "
			    "whole: %s", it->job, it->window, it->rank,
			    sum->error);
		else if (sum != NULL)
			log_info("read job %s window %u rank %d's trace (%s): "
			    "%llu steps, median %lld us (%lld us in "
			    "collectives), %llu events", it->job, it->window,
			    it->rank, sum->format,
			    (unsigned long long)sum->steps_seen,
			    (long long)tracesum_step_median(sum),
			    (long long)tracesum_comm_median(sum),
			    (unsigned long long)sum->events);
		/* A job's own store is where it stays: not uploaded. */
		if (c->upload && strcmp(c->busy_store, c->store) == 0) {
			collect_upload_add(a, it->job, it->window, it->rank,
			    r.size, r.sha256, sum);
			collect_upload_run(a);
		} else {
			snprintf(where, sizeof(where), "%s/%s", c->busy_store,
			    c->tp.path);
			collect_report(a,
			    DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED, it->job,
			    it->window, it->rank, r.size, r.sha256, where, sum);
		}
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
		collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED,
		    it->job, it->window, it->rank, 0, NULL, r.why, NULL);
		free(it);
	}
	collect_save(c);
	collect_run(a);
	a->loop->schedule(a);
}

/* Starts the first pending item that is due, unless one is being packed. */
static void
collect_run(struct agent *a)
{
	struct collect		*c = a->collect;
	struct collect_item	*it;
	char			 why[512];
	int64_t			 now = clock_mono_ms();
	int			 fd, rc;

again:
	if (c->busy != NULL)
		return;
	TAILQ_FOREACH(it, &c->pending, entry)
		if (it->due_ms <= now)
			break;
	if (it == NULL)
		return;
	TAILQ_REMOVE(&c->pending, it, entry);
	c->npending--;
	fd = collect_store_open(a, it->job, it->window, 1, c->busy_store,
	    sizeof(c->busy_store), why, sizeof(why));
	/* Queued before its job's own store was known: never packed twice. */
	if (fd != -1 && collect_in_store(fd, it->job, it->window, it->rank)) {
		log_info("collect: job %s window %u rank %d: in %s already: "
		    "not packed again", it->job, it->window, it->rank,
		    c->busy_store);
		collect_store_close(c, fd);
		collect_mark_done(c, collect_key(it->job, it->window,
		    it->rank));
		free(it);
		collect_save(c);
		goto again;
	}
	rc = fd == -1 ? -1 : trace_pack_start(&c->tp, fd, it->job,
	    it->window, (uint32_t)it->rank, -1, it->dir, it->uid,
	    TRACE_PACK_MAX_BYTES, a->opts.trace_settle_s, why, sizeof(why));
	collect_store_close(c, fd);
	if (rc == -1) {
		c->failed++;
		log_warnx("collect failed: job %s window %u rank %d: %s",
		    it->job, it->window, it->rank, why);
		collect_mark_done(c, collect_key(it->job, it->window,
		    it->rank));
		collect_report(a, DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED,
		    it->job, it->window, it->rank, 0, NULL, why, NULL);
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
	/* The slot is the rank's to write: a window this agent never gave
	 * the job is not collected (each would be packed again). */
	if (!jobs_window_known(j, s->window_id)) {
		a->stats.collect_unscheduled++;
		log_limited(&a->collect->log_limit, LOG_LEVEL_QUIET, "%s: job "
		    "%s rank %d: window %u, which this agent never gave the "
		    "job: not collected", __func__, j->name, s->rank,
		    s->window_id);
		return;
	}
	if (collect_add(a, j->name, s->window_id, s->rank,
	    jobs_rank_uid(j, idx), s->output_dir))
		collect_save(a->collect);
}

/*
 * Notes the windows of a config pushed for a job that said "collect": false:
 * their ranks' traces are not collected.  Saves the queue file if one is new.
 */
void
collect_config(struct agent *a, const Dynprof__V1__JobConfig *jc)
{
	size_t	 i;
	int	 changed = 0;

	if (a->collect == NULL || jc->job == NULL)
		return;
	for (i = 0; i < jc->n_windows; i++) {
		if (jc->windows[i] != NULL && jc->windows[i]->no_collect)
			changed |= collect_mark_off(a->collect, jc->job,
			    jc->windows[i]->id);
		if (jc->windows[i] != NULL &&
		    jc->windows[i]->trace_store != NULL &&
		    jc->windows[i]->trace_store[0] != '\0')
			changed |= collect_mark_own(a->collect, jc->job,
			    jc->windows[i]->id, jc->windows[i]->trace_store);
	}
	if (changed)
		collect_save(a->collect);
}

/* The housekeeping's part: starts what is due. */
void
collect_tick(struct agent *a)
{
	if (a->collect != NULL) {
		collect_run(a);
		collect_upload_run(a);
	}
}

/* When collect_tick() has something to start next, or INT64_MAX. */
int64_t
collect_next_ms(const struct agent *a)
{
	const struct collect		*c = a->collect;
	const struct collect_item	*it;
	const struct collect_upload	*up;
	int64_t				 next = INT64_MAX;

	if (c == NULL)
		return (INT64_MAX);
	if (c->busy == NULL)
		TAILQ_FOREACH(it, &c->pending, entry)
			if (it->due_ms < next)
				next = it->due_ms;
	if (c->up_busy == NULL)
		TAILQ_FOREACH(up, &c->uploads, entry)
			if (up->due_ms < next)
				next = up->due_ms;
	return (next);
}

/* Opens --trace-store and the queue file.  Returns 0, or -1. */
int
collect_open(struct agent *a)
{
	struct collect	*c;
	char		 why[256];

	if (a->opts.trace_store[0] == '\0')
		return (0);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("calloc");
	TAILQ_INIT(&c->pending);
	TAILQ_INIT(&c->reports);
	TAILQ_INIT(&c->uploads);
	c->tu.fd = -1;
	if (a->opts.trace_upload[0] != '\0') {
		if (trace_upload_conf(&a->opts, &c->up_conf, why,
		    sizeof(why)) == -1) {
			log_warnx("%s", why);
			free(c);
			return (-1);
		}
		c->upload = 1;
	}
	c->store_fd = open(a->opts.trace_store, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC);
	if (c->store_fd == -1) {
		log_warn("--trace-store %s", a->opts.trace_store);
		free(c);
		return (-1);
	}
	/* Reported as an absolute path: the same on every node that mounts
	 * the shared directory at the same place. */
	if (realpath(a->opts.trace_store, c->store) == NULL)
		snprintf(c->store, sizeof(c->store), "%s",
		    a->opts.trace_store);
	c->tp.fd = c->tp.dir_fd = -1;
	snprintf(c->queue_path, sizeof(c->queue_path), "%s/%s",
	    a->opts.shm_dir, COLLECT_QUEUE_FILE);
	a->collect = c;
	collect_load(a);
	collect_save(c);
	return (0);
}

/* Stops the packing in progress (kept queued) and frees the state. */
void
collect_close(struct agent *a)
{
	struct collect		*c = a->collect;
	struct collect_item	*it;
	struct collect_report	*rep;
	struct collect_upload	*up;

	if (c == NULL)
		return;
	while ((rep = TAILQ_FIRST(&c->reports)) != NULL) {
		TAILQ_REMOVE(&c->reports, rep, entry);
		free(rep->sum);
		free(rep);
	}
	if (c->up_busy != NULL) {
		trace_upload_abort(&c->tu);
		free(c->up_busy->sum);
		free(c->up_busy);
	}
	if (c->up_ev != NULL)
		event_free(c->up_ev);
	while ((up = TAILQ_FIRST(&c->uploads)) != NULL) {
		TAILQ_REMOVE(&c->uploads, up, entry);
		free(up->sum);
		free(up);
	}
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
