/*
 * What a legacy job did with the window in its file, as far as its output
 * directory shows it (docs/legacy.md).  Nothing here is a rank's own word:
 * the events are EVENT_OBSERVED (a rank's trace directory for the window
 * appeared) and EVENT_OBSERVED_COMPLETE (the framework's end-of-trace files
 * appeared in it), made by the agent, with pid 0 and no slot.
 *
 *	MindSpore	<output>/rank{N}_start{a}_stop{b}/ is rank N's trace of
 *			window [a, b]; complete once a profiler_info*.json is
 *			in it (at most LEGACY_SCAN_DEPTH levels down)
 *	torch_npu	<output>/NAME_ascend_pt/ whose profiler_metadata.json
 *			holds the marker the window's config gave it (its
 *			metadata, which torch_npu copies there); its rank N
 *			from profiler_info_{N}.json, which torch_npu writes at
 *			the end (profiler_info.json: rank 0), so both events
 *			come together, and only for a rank the window targets
 *
 * Every scan is bounded: LEGACY_SCAN_MAX entries per directory read.  It
 * runs as the owner of the job's directory (legacy_fs.c): the output
 * directory the job names is read with that user's rights, and below it
 * nothing is opened through a symbolic link, nor anything but a directory.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "parts.h"
#include "clock.h"
#include "parts_legacy.h"
#include "log.h"

/* Forgets the ranks seen: a new window is out, or none. */
void
legacy_observe_reset(struct legacy_job *lj)
{
	free(lj->ranks);
	lj->ranks = NULL;
	lj->nranks = 0;
	lj->settled_at_ms = 0;
	lj->unmarked_at_ms = 0;
	lj->unmarked[0] = '\0';
}

/*
 * The window before the one written becomes lj->prev: its ranks that said
 * they started it, those seen to complete it.  The caller writes the next.
 */
void
legacy_observe_prev_take(struct legacy_job *lj)
{
	size_t	 i;

	legacy_observe_prev_reset(lj);
	lj->prev = lj->written;
	lj->prev_start = lj->written_start;
	lj->prev_stop = lj->written_stop;
	lj->prev_first_at_ms = lj->first_at_ms;
	lj->prev_settled_at_ms = clock_mono_ms();
	lj->prev_targets = lj->written_ranks;
	(void)legacy_log_started(lj, &lj->prev_started, &lj->nprev_started);
	if (lj->nranks > 0 && (lj->prev_done = calloc(lj->nranks,
	    sizeof(*lj->prev_done))) != NULL)
		for (i = 0; i < lj->nranks; i++)
			if (lj->ranks[i].complete)
				lj->prev_done[lj->nprev_done++] =
				    lj->ranks[i].rank;
	legacy_observe_reset(lj);
}

/* Forgets the window before the one written. */
void
legacy_observe_prev_reset(struct legacy_job *lj)
{
	free(lj->prev_started);
	free(lj->prev_done);
	lj->prev_started = lj->prev_done = NULL;
	lj->nprev_started = lj->nprev_done = 0;
	lj->prev = 0;
}

/*
 * Sends an observed event of kind for rank, its trace in dir, of window id
 * (steps start to stop).
 */
static void
legacy_emit(struct legacy *l, struct legacy_job *lj, int kind, int32_t rank,
    const char *dir, uint64_t gen, uint32_t id, int64_t start, int64_t stop)
{
	Dynprof__V1__RankEvent	 ev = DYNPROF__V1__RANK_EVENT__INIT;

	ev.kind = kind;
	ev.job = lj->name;
	ev.rank = rank;
	ev.window_id = id;
	ev.start_step = start;
	ev.stop_step = stop;
	ev.step = kind == DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED ? start :
	    stop;
	ev.output_dir = (char *)dir;
	ev.generation = gen;
	ev.time_unix_ns = clock_wall_ns();
	upstream_event(l->a, &ev, NULL);
	log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: rank %d %s "
	    "window %u (%s)", lj->name, rank,
	    kind == DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED ? "observed in" :
	    "observed complete", id, dir);
}

/* Returns rank's entry, added if new (NULL: over LEGACY_RANKS_MAX). */
static struct legacy_rank *
legacy_rank(struct legacy_job *lj, int32_t rank, int *added)
{
	struct legacy_rank	*r;
	size_t			 i;

	*added = 0;
	for (i = 0; i < lj->nranks; i++)
		if (lj->ranks[i].rank == rank)
			return (&lj->ranks[i]);
	if (lj->nranks >= LEGACY_RANKS_MAX)
		return (NULL);
	if ((r = reallocarray(lj->ranks, lj->nranks + 1, sizeof(*r))) == NULL)
		return (NULL);
	lj->ranks = r;
	r = &lj->ranks[lj->nranks++];
	r->rank = rank;
	r->complete = 0;
	*added = 1;
	return (r);
}

/* Parses "profiler_info_{N}.json" (N) or "profiler_info.json" (-1). */
static int
legacy_info_name(const char *name, int32_t *rank)
{
	int	 n = 0, end = 0;

	if (strcmp(name, "profiler_info.json") == 0) {
		*rank = -1;
		return (0);
	}
	if (sscanf(name, "profiler_info_%d.json%n", &n, &end) == 1 &&
	    end > 0 && name[end] == '\0' && n >= 0) {
		*rank = n;
		return (0);
	}
	return (-1);
}

/*
 * Opens directory name of pfd for reading, never through a link, never
 * blocking.  Returns the stream, or NULL.
 */
static DIR *
legacy_opendir_at(int pfd, const char *name)
{
	DIR	*d;
	int	 fd;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return (NULL);
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return (d);
}

/* The type of entry de of d, from the entry or else from fstatat(). */
static int
legacy_entry_type(DIR *d, const struct dirent *de)
{
	struct stat	 st;

	if (de->d_type != DT_UNKNOWN)
		return (de->d_type);
	if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return (DT_UNKNOWN);
	return (S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
	    DT_UNKNOWN);
}

/*
 * Looks for an end-of-trace file in directory name of pfd, depth levels
 * down at most, reading at most *budget entries.  Returns 1 with *rank set
 * (-1: no rank in its name) if one is there.
 */
static int
legacy_find_end(int pfd, const char *name, int depth, int *budget,
    int32_t *rank)
{
	struct dirent	*de;
	DIR		*d;
	int		 found = 0, type;

	if (depth <= 0 || (d = legacy_opendir_at(pfd, name)) == NULL)
		return (0);
	while (!found && *budget > 0 && (de = readdir(d)) != NULL) {
		(*budget)--;
		if (de->d_name[0] == '.')
			continue;
		type = legacy_entry_type(d, de);
		if (type == DT_REG && legacy_info_name(de->d_name, rank) == 0)
			found = 1;
		else if (type == DT_DIR)
			found = legacy_find_end(dirfd(d), de->d_name, depth - 1,
			    budget, rank);
	}
	closedir(d);
	return (found);
}

/* Rank dir's trace for the written window: observed, then maybe complete. */
static int
legacy_see(struct legacy *l, struct legacy_job *lj, int32_t rank,
    const char *path, int complete, uint64_t gen)
{
	struct legacy_rank	*r;
	int			 added, moved = 0;

	if ((r = legacy_rank(lj, rank, &added)) == NULL)
		return (0);
	if (added) {
		legacy_emit(l, lj, DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED, rank,
		    path, gen, lj->written, lj->written_start,
		    lj->written_stop);
		moved = 1;
	}
	if (complete && !r->complete) {
		r->complete = 1;
		legacy_emit(l, lj,
		    DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE, rank, path,
		    gen, lj->written, lj->written_start, lj->written_stop);
		moved = 1;
	}
	if (moved)
		lj->settled_at_ms = clock_mono_ms();
	return (moved);
}

/* Rank's finished trace, in path, of the window before the one written. */
static int
legacy_see_prev(struct legacy *l, struct legacy_job *lj, int32_t rank,
    const char *path, uint64_t gen)
{
	int32_t	*d;
	size_t	 i;

	if (!ranks_contains(&lj->prev_targets, rank))
		return (0);		/* a rank it does not target */
	for (i = 0; i < lj->nprev_done; i++)
		if (lj->prev_done[i] == rank)
			return (0);
	if (lj->nprev_done >= LEGACY_RANKS_MAX || (d = reallocarray(
	    lj->prev_done, lj->nprev_done + 1, sizeof(*d))) == NULL)
		return (0);
	lj->prev_done = d;
	lj->prev_done[lj->nprev_done++] = rank;
	legacy_emit(l, lj, DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED, rank, path,
	    gen, lj->prev, lj->prev_start, lj->prev_stop);
	legacy_emit(l, lj, DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE,
	    rank, path, gen, lj->prev, lj->prev_start, lj->prev_stop);
	lj->prev_settled_at_ms = clock_mono_ms();
	return (1);
}

/* One entry, name, of a MindSpore job's output directory odfd. */
static int
legacy_see_mindspore(struct legacy *l, struct legacy_job *lj, int odfd,
    const char *name, const char *path, uint64_t gen)
{
	long long	 a, b;
	int		 n, end = 0, budget = LEGACY_SCAN_MAX, done;
	int32_t		 info;

	if (sscanf(name, "rank%d_start%lld_stop%lld%n", &n, &a, &b, &end) != 3 ||
	    name[end] != '\0' || n < 0 || a != lj->written_start ||
	    b != lj->written_stop)
		return (0);
	done = legacy_find_end(odfd, name, LEGACY_SCAN_DEPTH, &budget, &info);
	return (legacy_see(l, lj, n, path, done, gen));
}

/*
 * Whether trace directory name of odfd is the trace of the window written:
 * 1 if the metadata the framework copied into it holds that window's marker,
 * 2 if the window's before it (lj->prev), -1 if another window's, 0 if none
 * (no such file, or no marker in it).
 */
static int
legacy_trace_marker(const struct legacy_job *lj, int odfd, const char *name)
{
	struct stat	 st;
	json_t		*o, *v;
	char		 want[LEGACY_MARKER_MAX], why[LEGACY_REASON_MAX], *buf;
	int		 dfd, rc = 0;

	dfd = openat(odfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	if (dfd == -1)
		return (0);
	buf = legacy_fs_read(dfd, LEGACY_METADATA_NAME, LEGACY_CONFIG_MAX, &st,
	    why, sizeof(why));
	close(dfd);
	if (buf == NULL)
		return (0);
	o = json_loads(buf, 0, NULL);
	free(buf);
	if (json_is_string(v = json_object_get(o, LEGACY_MARKER_NAME))) {
		legacy_marker(lj, lj->written, want, sizeof(want));
		rc = strcmp(json_string_value(v), want) == 0 ? 1 : -1;
		if (rc == -1 && lj->prev != 0) {
			legacy_marker(lj, lj->prev, want, sizeof(want));
			if (strcmp(json_string_value(v), want) == 0)
				rc = 2;
		}
	}
	json_decref(o);
	return (rc);
}

/*
 * One entry, name, of a torch_npu job's output directory odfd: a finished
 * trace (its end-of-trace file there) is the written window's only if it
 * holds that window's marker, and counts only for a rank the window targets.
 * One without a marker, made since the window was written, is remembered:
 * if no marked one comes, the window ends unverified.
 */
static int
legacy_see_torch(struct legacy *l, struct legacy_job *lj, int odfd,
    const char *name, const char *path, uint64_t gen)
{
	struct stat	 st;
	size_t		 len = strlen(name), sfx = strlen("_ascend_pt");
	int		 budget = LEGACY_SCAN_MAX, mark;
	int32_t		 rank;

	if (len <= sfx || strcmp(name + len - sfx, "_ascend_pt") != 0 ||
	    fstatat(odfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISDIR(st.st_mode))
		return (0);
	if (!legacy_find_end(odfd, name, LEGACY_SCAN_DEPTH, &budget, &rank))
		return (0);
	if (rank < 0)
		rank = 0;		/* profiler_info.json: rank 0's */
	if ((mark = legacy_trace_marker(lj, odfd, name)) == -1)
		return (0);		/* another window's */
	if (mark == 2)
		return (legacy_see_prev(l, lj, rank, path, gen));
	if (mark == 0) {
		if (lj->written != 0 &&
		    st.st_mtim.tv_sec >= lj->written_mtime.tv_sec &&
		    lj->unmarked_at_ms == 0) {
			lj->unmarked_at_ms = clock_mono_ms();
			snprintf(lj->unmarked, sizeof(lj->unmarked), "%s", name);
			log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: "
			    "%s has no marker of window %u: not tied to it",
			    lj->name, path, lj->written);
		}
		return (0);
	}
	if (!ranks_contains(&lj->written_ranks, rank))
		return (0);		/* a rank it does not target */
	return (legacy_see(l, lj, rank, path, 1, gen));
}

/*
 * Scans lj's output directory for traces of the window in its file, as the
 * owner of the job's directory, and reports what is new.  Returns 1 if
 * anything was.
 */
int
legacy_observe(struct legacy *l, struct legacy_job *lj, uint64_t gen)
{
	char		 path[PATH_MAX];
	struct dirent	*de;
	DIR		*d = NULL;
	int		 n = 0, moved = 0, fd, type;

	if ((lj->written == 0 && lj->prev == 0) || lj->output[0] == '\0')
		return (0);
	if (legacy_fs_as(lj) == 0) {
		/* The job's own path: its links are its user's to make. */
		fd = open(lj->output, O_RDONLY | O_DIRECTORY | O_NONBLOCK |
		    O_CLOEXEC);
		if (fd != -1 && (d = fdopendir(fd)) == NULL)
			close(fd);
		else if (fd == -1 && errno != ENOENT)
			log_limited(&lj->log, LOG_LEVEL_DEBUG, "legacy job %s: "
			    "%s: %s", lj->name, lj->output, strerror(errno));
	}
	while (d != NULL && n++ < LEGACY_SCAN_MAX && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' ||
		    (type = legacy_entry_type(d, de)) != DT_DIR)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", lj->output,
		    de->d_name) >= sizeof(path))
			continue;
		if (legacy_dialect(lj->dialect)->trace == LEGACY_TRACE_MARKED)
			moved |= legacy_see_torch(l, lj, dirfd(d), de->d_name,
			    path, gen);
		else
			moved |= legacy_see_mindspore(l, lj, dirfd(d),
			    de->d_name, path, gen);
	}
	if (d != NULL)
		closedir(d);
	legacy_fs_self();
	return (moved);
}
