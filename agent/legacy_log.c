/*
 * What a legacy job's ranks say of the window in its file, in their own logs
 * (docs/legacy.md), read since the window was written, at most
 * LEGACY_LOG_READ_MAX bytes a file and LEGACY_LOG_TICK_MAX in all a tick,
 * LEGACY_SCAN_MAX entries: the rest waits for the next tick.
 *
 * torch_npu: the log its dynamic profiler keeps in the job's directory,
 * <job>/log/dp_{host}_{pid}_rank_{N}.log, one per rank process, made when the
 * rank starts:
 *
 *	"Start Dynamic Profiler at"	a rank started a window
 *	"config is not effective"	a rank dropped a config whose start
 *					step had passed: start_step=S,
 *					current_step=C
 *	a log made since the write	a rank that started after it: its
 *					monitor ignores a file older than its
 *					own start, so the file is written again
 *
 * MindSpore 2.4-2.7 keep none there: its lines go to the job's output (msrun's
 * <log_dir>/worker_{N}.log) or, with GLOG_logtostderr=0, to
 * <GLOG_log_dir>/rank_{N}/logs/; dynprof.logs names that directory:
 *
 *	"Dynamic profile(r) start at step S"	a rank started the window
 *	"start_step must be greater than step_num, but get start_step = S,
 *	 stop_step = T, step_num = N"	the callback path dropped it
 *	"stop_step must be greater than step_num, ..."	the callback path, or
 *					2.7's step(), dropped it
 *
 * All of it as the owner of the job's directory: torch_npu's through the
 * directory's descriptor, never through a link (legacy_fs.c); the directory
 * dynprof.logs names is the user's path, opened with that user's rights, and
 * nothing below it is opened through a link.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parts.h"
#include "clock.h"
#include "parts_legacy.h"
#include "log.h"

static void	legacy_log_rewind(struct legacy_job *);

/* Parses "dp_{host}_{pid}_rank_{N}.log" (not the monitor's): N, or -1. */
static int32_t
legacy_log_rank(const char *name)
{
	const char	*p;
	char		*end;
	long		 n;

	if (strncmp(name, "dp_", 3) != 0 || (p = strrchr(name, '_')) == NULL ||
	    p - name < 5 || strncmp(p - 5, "_rank", 5) != 0)
		return (-1);
	n = strtol(p + 1, &end, 10);
	if (end == p + 1 || strcmp(end, ".log") != 0 || n < 0 ||
	    n > INT32_MAX)
		return (-1);
	return ((int32_t)n);
}

/* Parses "<prefix>N<suffix>" (msrun's "worker_N.log", "rank_N"): N, or -1. */
static int32_t
legacy_log_number(const char *name, const char *prefix, const char *suffix)
{
	char	*end;
	long	 n;

	if (strncmp(name, prefix, strlen(prefix)) != 0)
		return (-1);
	name += strlen(prefix);
	n = strtol(name, &end, 10);
	if (end == name || strcmp(end, suffix) != 0 || n < 0 || n > INT32_MAX)
		return (-1);
	return ((int32_t)n);
}

/* The entry of log file ino, added (at offset off) if new; NULL: full. */
static struct legacy_rlog *
legacy_log_entry(struct legacy_job *lj, ino_t ino, off_t off, int *added)
{
	struct legacy_rlog	*r;
	size_t			 i;

	*added = 0;
	for (i = 0; i < lj->nrlogs; i++)
		if (lj->rlogs[i].ino == ino)
			return (&lj->rlogs[i]);
	if (lj->nrlogs >= LEGACY_RANKS_MAX ||
	    (r = reallocarray(lj->rlogs, lj->nrlogs + 1, sizeof(*r))) == NULL)
		return (NULL);
	lj->rlogs = r;
	r = &lj->rlogs[lj->nrlogs++];
	memset(r, 0, sizeof(*r));
	r->ino = ino;
	r->off = off;
	*added = 1;
	return (r);
}

/* Rank r dropped the window written (why: LEGACY_DROP_*) at step cur. */
static void
legacy_log_drop(struct legacy_job *lj, struct legacy_rlog *r, int why,
    long long cur)
{
	if (r->dropped)
		return;
	r->dropped = 1;
	r->drop_why = why;
	r->drop_step = cur;
	if (lj->dropped_at_ms == 0)
		lj->dropped_at_ms = clock_mono_ms();
}

/* Reads the number after key in s into *v; returns 0, or -1 if none. */
static int
legacy_log_field(const char *s, const char *key, long long *v)
{
	const char	*p;

	if ((p = strstr(s, key)) == NULL ||
	    sscanf(p + strlen(key), "%lld", v) != 1)
		return (-1);
	return (0);
}

/* One line of a torch_npu rank's log, written since the window was. */
static void
legacy_log_torch(struct legacy_job *lj, struct legacy_rlog *r, const char *s)
{
	long long	 start, cur = -1;

	if (strstr(s, "Start Dynamic Profiler at") != NULL) {
		r->started = 1;
		return;
	}
	if (strstr(s, "config is not effective") == NULL ||
	    legacy_log_field(s, "start_step=", &start) == -1 ||
	    start != lj->written_start)
		return;
	(void)legacy_log_field(s, "current_step=", &cur);
	legacy_log_drop(lj, r, LEGACY_DROP_START, cur);
}

/*
 * One line of a MindSpore rank's output, written since the window was: only
 * what it says of the window written (its start and stop steps).
 */
static void
legacy_log_mindspore(struct legacy_job *lj, struct legacy_rlog *r,
    const char *s)
{
	const char	*p;
	long long	 start, stop, cur = -1;
	int		 why;

	if ((p = strstr(s, "Dynamic profile")) != NULL &&
	    legacy_log_field(p, "start at step ", &start) == 0) {
		if (start == lj->written_start)
			r->started = 1;
		return;
	}
	if (strstr(s, "start_step must be greater than step_num") != NULL)
		why = LEGACY_DROP_START;
	else if (strstr(s, "stop_step must be greater than step_num") != NULL)
		why = LEGACY_DROP_STOP;
	else
		return;
	if (legacy_log_field(s, "start_step = ", &start) == -1 ||
	    legacy_log_field(s, "stop_step = ", &stop) == -1 ||
	    start != lj->written_start || stop != lj->written_stop)
		return;
	(void)legacy_log_field(s, "step_num = ", &cur);
	legacy_log_drop(lj, r, why, cur);
}

/* Reads what rank r's log (fd, st) gained since r->off. */
static void
legacy_log_read(struct legacy_job *lj, struct legacy_rlog *r, int fd,
    const struct stat *st)
{
	char	 buf[LEGACY_LOG_READ_MAX + 1], *line, *nl;
	ssize_t	 n;
	int	 torch = legacy_dialect(lj->dialect)->log == LEGACY_LOG_TORCH;

	if (st->st_size < r->off)
		r->off = 0;		/* rotated */
	if (st->st_size == r->off || lj->log_left < LEGACY_LOG_READ_MAX)
		return;
	if ((n = pread(fd, buf, LEGACY_LOG_READ_MAX, r->off)) <= 0)
		return;
	lj->log_left -= (size_t)n;
	buf[n] = '\0';
	for (line = buf; (nl = memchr(line, '\n', (size_t)(buf + n - line))) !=
	    NULL; line = nl + 1) {
		*nl = '\0';
		if (torch)
			legacy_log_torch(lj, r, line);
		else
			legacy_log_mindspore(lj, r, line);
	}
	/* A line not ended yet is read again whole next time. */
	r->off += line - buf;
	if (line == buf && n == LEGACY_LOG_READ_MAX)
		r->off += n;		/* one line longer than a read */
}

/*
 * Reads the log name of directory dfd, rank's.  With mark set (the window
 * was just written), where it ends now is where reading starts.  A torch_npu
 * log not seen before is a rank that started since: the file must be written
 * again, in a later second than its start.
 */
static void
legacy_log_file(struct legacy_job *lj, int dfd, const char *name,
    int32_t rank, int mark)
{
	struct legacy_rlog	*r;
	struct stat		 st;
	int			 fd, added;

	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (r = legacy_log_entry(lj, st.st_ino, mark ? st.st_size : 0,
	    &added)) == NULL) {
		close(fd);
		return;
	}
	r->rank = rank;
	if (mark)
		r->off = st.st_size;	/* none of it is of this window */
	/*
	 * Started after the write, or in its very second (a file whose whole
	 * second is not above the rank's start is ignored): written again, in
	 * a later second than its log.
	 */
	if (added && legacy_dialect(lj->dialect)->own_config_first &&
	    (!mark || st.st_mtim.tv_sec >= lj->written_mtime.tv_sec)) {
		r->late = 1;
		lj->late_ranks++;
		if (st.st_mtim.tv_sec > lj->framework_mtime)
			lj->framework_mtime = st.st_mtim.tv_sec;
		lj->rewrite = 1;
		log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: rank %d "
		    "started after window %u was written, or in its second: "
		    "written again", lj->name, rank, lj->written);
	}
	if (!mark)
		legacy_log_read(lj, r, fd, &st);
	close(fd);
}

/* Opens directory name of dfd, never through a link, as a DIR; or NULL. */
static DIR *
legacy_log_opendir(int dfd, const char *name)
{
	DIR	*d;
	int	 fd;

	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC)) == -1)
		return (NULL);
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return (d);
}

/*
 * Reads the logs in d: torch_npu's dp_*_rank_N.log; MindSpore's every file
 * (msrun's worker_N.log is rank N's), and those in rank_N/logs/ (at depth 0
 * only), rank N's.  *budget: entries still to read.
 */
static void
legacy_log_dir(struct legacy_job *lj, DIR *d, int32_t dirrank, int depth,
    int mark, int *budget)
{
	struct dirent	*de;
	DIR		*sub, *logs;
	int32_t		 rank;
	int		 torch = legacy_dialect(lj->dialect)->log == LEGACY_LOG_TORCH;

	while ((*budget)-- > 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (torch) {
			if ((rank = legacy_log_rank(de->d_name)) >= 0)
				legacy_log_file(lj, dirfd(d), de->d_name, rank,
				    mark);
			continue;
		}
		if (depth == 0 && (rank = legacy_log_number(de->d_name,
		    "rank_", "")) >= 0) {
			if ((sub = legacy_log_opendir(dirfd(d),
			    de->d_name)) == NULL)
				continue;
			if ((logs = legacy_log_opendir(dirfd(sub),
			    "logs")) != NULL) {
				legacy_log_dir(lj, logs, rank, 1, mark, budget);
				closedir(logs);
			}
			closedir(sub);
			continue;
		}
		if ((rank = legacy_log_number(de->d_name, "worker_",
		    ".log")) < 0)
			rank = dirrank;
		legacy_log_file(lj, dirfd(d), de->d_name, rank, mark);
	}
}

/*
 * Reads lj's ranks' logs, as the owner of its directory.  With mark set (the
 * window was just written), every log there now is where reading starts:
 * none of it is of this window.
 */
void
legacy_log_scan(struct legacy *l, struct legacy_job *lj, int mark)
{
	const struct legacy_dialect *dl = legacy_dialect(lj->dialect);
	DIR			*d = NULL;
	char			 why[LEGACY_REASON_MAX];
	int			 dfd = -1, fd, budget = LEGACY_SCAN_MAX;

	if (dl == NULL || dl->log == LEGACY_LOG_NONE ||
	    (dl->log == LEGACY_LOG_MINDSPORE && lj->logs[0] == '\0'))
		return;
	if (mark)
		legacy_log_rewind(lj);
	lj->log_left = LEGACY_LOG_TICK_MAX;
	if (dl->log == LEGACY_LOG_TORCH) {
		if ((dfd = legacy_fs_open(l, lj, why, sizeof(why))) == -1)
			return;
		if (legacy_fs_as(lj) == 0)
			d = legacy_log_opendir(dfd, LEGACY_LOG_DIR);
	} else if (legacy_fs_as(lj) == 0) {
		/* The job's own path: its links are its user's to make. */
		if ((fd = open(lj->logs, O_RDONLY | O_DIRECTORY | O_NONBLOCK |
		    O_CLOEXEC)) != -1 && (d = fdopendir(fd)) == NULL)
			close(fd);
	}
	if (d != NULL) {
		legacy_log_dir(lj, d, -1, 0, mark, &budget);
		closedir(d);
	}
	legacy_fs_self();
	if (dfd != -1)
		close(dfd);
}

/*
 * Whether the window written was missed: a rank dropped it (its start or
 * stop step had passed), none started it, and LEGACY_SETTLE_MS went by.  Says
 * so in why, in the framework's words.  Returns 1 if missed.
 */
int
legacy_log_missed(const struct legacy_job *lj, int64_t now, char *why,
    size_t len)
{
	const struct legacy_rlog *r;
	const struct legacy_rlog *first = NULL;
	size_t			 i, n = 0;
	const char		*name;

	/* A rank whose trace was seen ran it, whatever another said. */
	if (lj->dropped_at_ms == 0 || lj->nranks > 0 ||
	    now - lj->dropped_at_ms < LEGACY_SETTLE_MS)
		return (0);
	for (i = 0; i < lj->nrlogs; i++) {
		r = &lj->rlogs[i];
		if (r->started)
			return (0);
		if (r->dropped && n++ == 0)
			first = r;
	}
	if (first == NULL)
		return (0);
	name = options_dialect_name((enum options_dialect)lj->dialect);
	if (legacy_dialect(lj->dialect)->log == LEGACY_LOG_TORCH)
		snprintf(why, len, "missed: %s dropped it, its start step %lld "
		    "had passed (rank %d at step %lld; %zu ranks said so)",
		    name, (long long)lj->written_start, first->rank,
		    (long long)first->drop_step, n);
	else
		snprintf(why, len, "missed: %s dropped it, its %s step %lld "
		    "had passed (\"%s_step must be greater than step_num\": "
		    "rank %d at step %lld; %zu ranks said so)", name,
		    first->drop_why == LEGACY_DROP_START ? "start" : "stop",
		    (long long)(first->drop_why == LEGACY_DROP_START ?
		    lj->written_start : lj->written_stop),
		    first->drop_why == LEGACY_DROP_START ? "start" : "stop",
		    first->rank, (long long)first->drop_step, n);
	return (1);
}

/*
 * Whether every rank whose log is read and whom the window written targets
 * said it started it (at least one, none dropped it): the window is
 * acknowledged.  With ranks set, the caller gets those ranks (to free).
 * Returns 1 if so.
 */
int
legacy_log_started(const struct legacy_job *lj, int32_t **ranks, size_t *n)
{
	const struct legacy_rlog *r;
	size_t			 i;

	*n = 0;
	if (ranks != NULL)
		*ranks = NULL;
	for (i = 0; i < lj->nrlogs; i++) {
		r = &lj->rlogs[i];
		if (r->rank < 0 || !ranks_contains(&lj->written_ranks, r->rank))
			continue;
		if (!r->started || r->dropped)
			break;
		(*n)++;
	}
	if (i < lj->nrlogs || *n == 0) {
		*n = 0;
		return (0);
	}
	if (ranks == NULL)
		return (1);
	if ((*ranks = calloc(*n, sizeof(**ranks))) == NULL) {
		*n = 0;
		return (0);
	}
	*n = 0;
	for (i = 0; i < lj->nrlogs; i++)
		if (lj->rlogs[i].rank >= 0 && ranks_contains(&lj->written_ranks,
		    lj->rlogs[i].rank))
			(*ranks)[(*n)++] = lj->rlogs[i].rank;
	return (1);
}

/*
 * The ranks of the window written that its logs show never served: targeted,
 * neither started nor dropped it, nor were observed.  Returns how many.
 */
size_t
legacy_log_unserved(const struct legacy_job *lj)
{
	const struct legacy_rlog *r;
	size_t			 i, j, n = 0;

	/* MindSpore's lines are split between its output and its own log
	 * files: a rank silent in one may have spoken in the other. */
	if (legacy_dialect(lj->dialect) == NULL ||
	    legacy_dialect(lj->dialect)->log != LEGACY_LOG_TORCH)
		return (0);
	for (i = 0; i < lj->nrlogs; i++) {
		r = &lj->rlogs[i];
		if (r->started || r->dropped || r->rank < 0 ||
		    !ranks_contains(&lj->written_ranks, r->rank))
			continue;
		for (j = 0; j < lj->nranks; j++)
			if (lj->ranks[j].rank == r->rank)
				break;
		if (j == lj->nranks)
			n++;
	}
	return (n);
}

/*
 * Forgets what the logs said of the window before: a new one is written.
 * The logs stay known, so that only a log never seen before is a rank that
 * started since.
 */
static void
legacy_log_rewind(struct legacy_job *lj)
{
	size_t	 i;

	for (i = 0; i < lj->nrlogs; i++) {
		lj->rlogs[i].started = 0;
		lj->rlogs[i].dropped = 0;
		lj->rlogs[i].drop_step = -1;
		lj->rlogs[i].late = 0;
	}
	lj->dropped_at_ms = 0;
	lj->late_ranks = 0;
	lj->rewrite = 0;
}

/* Forgets the logs read: the job goes. */
void
legacy_log_reset(struct legacy_job *lj)
{
	legacy_log_rewind(lj);
	free(lj->rlogs);
	lj->rlogs = NULL;
	lj->nrlogs = 0;
}
