/*
 * What a torch_npu job's ranks say of the window in its file, in the log
 * its dynamic profiler keeps in the job's directory (docs/legacy.md):
 * <job>/log/dp_{host}_{pid}_rank_{N}.log, one per rank process, made when
 * the rank starts.  Read since the window was written, at most
 * LEGACY_LOG_READ_MAX bytes a file a tick, LEGACY_SCAN_MAX entries:
 *
 *	"Start Dynamic Profiler at"	a rank started a window
 *	"config is not effective"	a rank dropped a config whose start
 *					step had passed: start_step=S,
 *					current_step=C
 *	a log made since the write	a rank that started after it: its
 *					monitor ignores a file older than its
 *					own start, so the file is written again
 *
 * All of it through the job's directory descriptor, as its owner, never
 * through a link (legacy_fs.c).
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "legacy.h"
#include "log.h"

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

/* One line of rank r's log, written since the window was. */
static void
legacy_log_line(struct legacy_job *lj, struct legacy_rlog *r, const char *s)
{
	const char	*p;
	long long	 start, cur = -1;

	if (strstr(s, "Start Dynamic Profiler at") != NULL) {
		r->started = 1;
		return;
	}
	if (strstr(s, "config is not effective") == NULL ||
	    (p = strstr(s, "start_step=")) == NULL ||
	    sscanf(p, "start_step=%lld", &start) != 1 ||
	    start != lj->written_start)
		return;
	if ((p = strstr(s, "current_step=")) != NULL)
		(void)sscanf(p, "current_step=%lld", &cur);
	if (!r->dropped) {
		r->dropped = 1;
		r->drop_step = cur;
		if (lj->dropped_at_ms == 0)
			lj->dropped_at_ms = clock_mono_ms();
	}
}

/* Reads what rank r's log (fd, st) gained since r->off. */
static void
legacy_log_read(struct legacy_job *lj, struct legacy_rlog *r, int fd,
    const struct stat *st)
{
	char	 buf[LEGACY_LOG_READ_MAX + 1], *line, *nl;
	ssize_t	 n;

	if (st->st_size < r->off)
		r->off = 0;		/* rotated */
	if (st->st_size == r->off)
		return;
	if ((n = pread(fd, buf, LEGACY_LOG_READ_MAX, r->off)) <= 0)
		return;
	buf[n] = '\0';
	for (line = buf; (nl = memchr(line, '\n', (size_t)(buf + n - line))) !=
	    NULL; line = nl + 1) {
		*nl = '\0';
		legacy_log_line(lj, r, line);
	}
	/* A line not ended yet is read again whole next time. */
	r->off += line - buf;
	if (line == buf && n == LEGACY_LOG_READ_MAX)
		r->off += n;		/* one line longer than a read */
}

/*
 * Reads lj's torch_npu log directory.  With mark set (the window was just
 * written), every log there now is where reading starts: none of it is of
 * this window.  Otherwise a log not seen before is a rank that started since:
 * the file must be written again, in a later second than its start.
 */
void
legacy_log_scan(struct legacy *l, struct legacy_job *lj, int mark)
{
	struct legacy_rlog	*r;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d = NULL;
	char			 why[LEGACY_REASON_MAX];
	int			 dfd, lfd = -1, fd, added, n = 0;
	int32_t			 rank;
	const struct legacy_dialect *dl = legacy_dialect(lj->dialect);

	if (dl == NULL || dl->log_dir == NULL ||
	    (dfd = legacy_fs_open(l, lj, why, sizeof(why))) == -1)
		return;
	if (mark)
		legacy_log_reset(lj);
	if (legacy_fs_as(lj) == 0 && (lfd = openat(dfd, dl->log_dir,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) != -1 && (d = fdopendir(lfd)) == NULL)
		close(lfd);
	while (d != NULL && n++ < LEGACY_SCAN_MAX && (de = readdir(d)) != NULL) {
		if ((rank = legacy_log_rank(de->d_name)) < 0)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC);
		if (fd == -1)
			continue;
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
		    (r = legacy_log_entry(lj, st.st_ino, mark ? st.st_size : 0,
		    &added)) == NULL) {
			close(fd);
			continue;
		}
		r->rank = rank;
		if (!mark) {
			if (added) {
				/* Started after the write: a later second. */
				r->late = 1;
				lj->late_ranks++;
				if (st.st_mtim.tv_sec > lj->framework_mtime)
					lj->framework_mtime = st.st_mtim.tv_sec;
				lj->rewrite = 1;
				log_limited(&lj->log, LOG_LEVEL_INFO, "legacy "
				    "job %s: rank %d started after window %u "
				    "was written: written again", lj->name,
				    rank, lj->written);
			}
			legacy_log_read(lj, r, fd, &st);
		}
		close(fd);
	}
	if (d != NULL)
		closedir(d);
	legacy_fs_self();
	close(dfd);
}

/*
 * Whether the window written was missed: a rank dropped it (its start step
 * had passed), none started it, and LEGACY_SETTLE_MS went by.  Says so in
 * why.  Returns 1 if missed.
 */
int
legacy_log_missed(const struct legacy_job *lj, int64_t now, char *why,
    size_t len)
{
	const struct legacy_rlog *r;
	size_t			 i, n = 0;
	int32_t			 first = -1;
	long long		 at = -1;

	if (lj->dropped_at_ms == 0 || now - lj->dropped_at_ms < LEGACY_SETTLE_MS)
		return (0);
	for (i = 0; i < lj->nrlogs; i++) {
		r = &lj->rlogs[i];
		if (r->started)
			return (0);
		if (r->dropped && n++ == 0) {
			first = r->rank;
			at = r->drop_step;
		}
	}
	snprintf(why, len, "missed: torch_npu dropped it, its start step %lld "
	    "had passed (rank %d at step %lld; %zu ranks said so)",
	    (long long)lj->written_start, first, at, n);
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

	for (i = 0; i < lj->nrlogs; i++) {
		r = &lj->rlogs[i];
		if (r->started || r->dropped ||
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

/* Forgets the logs read: the job goes. */
void
legacy_log_reset(struct legacy_job *lj)
{
	free(lj->rlogs);
	lj->rlogs = NULL;
	lj->nrlogs = 0;
	lj->dropped_at_ms = 0;
	lj->late_ranks = 0;
	lj->rewrite = 0;
}
