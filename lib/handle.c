/*
 * Handles: opening (arguments, else the environment, else the defaults), closing,
 * the accessors, and stopping every open window when the process exits.
 */

#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobid.h"
#include "labels.h"
#include "libdynprof.h"
#include "version.h"

_Static_assert(SEG_EJOB == DYNPROF_EJOB && SEG_ESYS == DYNPROF_ESYS &&
    SEG_EMAGIC == DYNPROF_EMAGIC && SEG_EVERSION == DYNPROF_EVERSION &&
    SEG_ESIZE == DYNPROF_ESIZE && SEG_ENOSLOT == DYNPROF_ENOSLOT &&
    SEG_ENOENT == DYNPROF_ENOENT && SEG_ETORN == DYNPROF_ETORN &&
    SEG_EOWNER == DYNPROF_EOWNER,
    "segment error codes are the library's");
_Static_assert((int)SEG_RANK_ATTACHED == DYNPROF_RANK_ATTACHED &&
    (int)SEG_RANK_ARMED == DYNPROF_RANK_ARMED &&
    (int)SEG_RANK_PROFILING == DYNPROF_RANK_PROFILING &&
    (int)SEG_RANK_DONE == DYNPROF_RANK_DONE &&
    (int)SEG_RANK_SKIPPED == DYNPROF_RANK_SKIPPED &&
    (int)SEG_RANK_FAILED == DYNPROF_RANK_FAILED,
    "segment rank states are the library's");

/*
 * Open handles, so that process exit stops their windows.  Only open, close and
 * exit take the lock: never the step functions.
 */
static pthread_mutex_t	 handle_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t	 handle_once = PTHREAD_ONCE_INIT;
static struct dynprof	*handle_list;

/* The value of environment variable name, or NULL when unset or empty. */
static const char *
handle_env(const char *name)
{
	const char	*v = getenv(name);

	return (v != NULL && *v != '\0' ? v : NULL);
}

static int
handle_resolve_rank(struct dynprof *h, int rank)
{
	static const char *const names[] = { "RANK", "RANK_ID",
	    "OMPI_COMM_WORLD_RANK", "SLURM_PROCID" };
	const char	*v;
	char		*end;
	long		 n;
	size_t		 i;

	if (rank >= 0) {
		h->rank = rank;
		return (DYNPROF_OK);
	}
	if (rank != -1) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: rank %d is negative",
		    __func__, rank);
		return (DYNPROF_EINVAL);
	}
	h->rank = 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if ((v = handle_env(names[i])) == NULL)
			continue;
		errno = 0;
		n = strtol(v, &end, 10);
		if (errno != 0 || *end != '\0' || n < 0 || n > INT32_MAX) {
			handle_log(h, DYNPROF_LOG_ERROR, "%s: %s=\"%s\" is not "
			    "a rank", __func__, names[i], v);
			return (DYNPROF_EINVAL);
		}
		h->rank = (int32_t)n;
		break;
	}
	return (DYNPROF_OK);
}

static int
handle_resolve_mode(const struct dynprof *h, int mode, mode_t *out)
{
	const char	*v;
	char		*end;
	long		 n;

	if (mode >= 0) {
		if (mode > 0777) {
			handle_log(h, DYNPROF_LOG_ERROR, "%s: shm_mode %o is not "
			    "a permission mode", __func__, (unsigned)mode);
			return (DYNPROF_EINVAL);
		}
		*out = (mode_t)mode;
		return (DYNPROF_OK);
	}
	*out = SEG_DEFAULT_MODE;
	if ((v = handle_env("DYNPROF_SHM_MODE")) == NULL)
		return (DYNPROF_OK);
	errno = 0;
	n = strtol(v, &end, 8);
	if (errno != 0 || *end != '\0' || n < 0 || n > 0777) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: DYNPROF_SHM_MODE=\"%s\" is "
		    "not an octal permission mode", __func__, v);
		return (DYNPROF_EINVAL);
	}
	*out = (mode_t)n;
	return (DYNPROF_OK);
}

/*
 * The agent's user, trusted as the owner of a segment (the agent creates the
 * segment of a job whose config comes before its ranks): DYNPROF_AGENT_USER, a
 * user name or a uid; else the owner of the agent's socket, when the directory
 * holding it is not writable by others (so only its owner and group could have
 * put it there).  SEG_NOUID when neither says.
 */
static uid_t
handle_agent_uid(const struct dynprof *h, const char *sock)
{
	struct passwd	 pw, *res = NULL;
	struct stat	 st;
	const char	*v;
	char		 buf[2048], dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		*end;
	unsigned long	 n;

	if ((v = handle_env("DYNPROF_AGENT_USER")) != NULL) {
		errno = 0;
		n = strtoul(v, &end, 10);
		if (errno == 0 && *end == '\0' && isdigit((unsigned char)*v) &&
		    n < (unsigned long)SEG_NOUID)
			return ((uid_t)n);
		if (getpwnam_r(v, &pw, buf, sizeof(buf), &res) == 0 &&
		    res != NULL)
			return (pw.pw_uid);
		handle_log(h, DYNPROF_LOG_WARNING, "%s: DYNPROF_AGENT_USER=\"%s\" "
		    "is no user: ignored", __func__, v);
		return (SEG_NOUID);
	}
	if (sock == NULL || strlen(sock) >= sizeof(dir) ||
	    stat(sock, &st) == -1 || !S_ISSOCK(st.st_mode))
		return (SEG_NOUID);
	memcpy(dir, sock, strlen(sock) + 1);
	n = st.st_uid;
	if (stat(dirname(dir), &st) == -1 || (st.st_mode & S_IWOTH))
		return (SEG_NOUID);
	return ((uid_t)n);
}

/* Logs why the segment at path could not be opened (rc, errno as it came). */
static void
handle_log_segment(const struct dynprof *h, const char *path, int rc,
    uid_t agent_uid)
{
	struct stat	 st;
	char		 agent[64] = "";
	int		 saved = errno;

	switch (rc) {
	case SEG_ESYS:
		if (saved == ENOSPC) {
			handle_log(h, DYNPROF_LOG_ERROR, "dynprof_open: no space "
			    "left to create the segment %s (its space is "
			    "reserved before use): this rank runs without "
			    "dynprof", path);
			break;
		}
		handle_log(h, DYNPROF_LOG_ERROR, "dynprof_open: segment %s: %s: "
		    "%s", path, segment_strerror(rc), strerror(saved));
		break;
	case SEG_EOWNER:
		if (stat(path, &st) == -1)
			memset(&st, 0, sizeof(st));
		if (agent_uid != SEG_NOUID)
			snprintf(agent, sizeof(agent), " or the agent's uid %u",
			    (unsigned)agent_uid);
		handle_log(h, DYNPROF_LOG_ERROR, "dynprof_open: segment %s "
		    "refused: owned by uid %u with mode %03o; a segment must "
		    "belong to this process's uid %u, root%s, and not be "
		    "writable by others", path, (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 0777), (unsigned)geteuid(), agent);
		break;
	case SEG_EMAGIC:
	case SEG_EVERSION:
	case SEG_ESIZE:
		handle_log(h, DYNPROF_LOG_ERROR, "dynprof_open: segment %s: %s; "
		    "not replaced: %s", path, segment_strerror(rc),
		    segment_kept_why(saved));
		break;
	default:
		handle_log(h, DYNPROF_LOG_ERROR, "dynprof_open: segment %s: %s",
		    path, segment_strerror(rc));
		break;
	}
	errno = saved;
}

/* Logs why the directory of this process's segments is not there. */
static void
handle_log_dir(const struct dynprof *h, const struct seg_dir *sd, int rc,
    const char *agent)
{
	int	 saved = errno;

	if (rc == SEG_EOWNER)
		handle_log(h, DYNPROF_LOG_ERROR, "dynprof_open: directory %s "
		    "refused: owned by uid %u with mode %03o (%s); this "
		    "process's segments must be in a directory of its uid %u "
		    "that nobody else may write, and %s: this rank runs "
		    "without dynprof", sd->path, (unsigned)sd->st.st_uid,
		    (unsigned)(sd->st.st_mode & 0777), S_ISDIR(sd->st.st_mode) ?
		    "a directory" : S_ISLNK(sd->st.st_mode) ? "a symbolic link" :
		    "not a directory", (unsigned)geteuid(), agent);
	else
		handle_log(h, DYNPROF_LOG_ERROR, "dynprof_open: directory %s: "
		    "%s%s%s: this rank runs without dynprof", sd->path[0] != '\0' ?
		    sd->path : "of the segments", rc == SEG_ESYS ?
		    strerror(saved) : segment_strerror(rc), rc == SEG_ESYS ?
		    "; " : "", rc == SEG_ESYS ? agent : "");
	errno = saved;
}

/*
 * Opens the directory of this process's segments in dir into sd
 * (segment_dir_open()), making it when it is missing.  When this process may
 * not make it there, or another user holds its name, the agent is asked to
 * make it or take it back (it learns our uid from the kernel, so nobody can
 * ask for another's), and waited for up to LIB_DIR_WAIT_MS, at open only.
 * Logs why when it fails.
 */
static int
handle_segment_dir(struct dynprof *h, const char *dir, const char *job,
    mode_t mode, struct seg_dir *sd)
{
	char	 agent[300];
	int	 rc, i;

	rc = segment_dir_open(sd, dir, geteuid(), 1, mode);
	if (rc == SEG_OK)
		return (rc);
	if (rc != SEG_EOWNER &&
	    !(rc == SEG_ESYS && (errno == EACCES || errno == EPERM))) {
		handle_log_dir(h, sd, rc, "");
		return (rc);
	}
	if (report_make_dir(h, job) == -1) {
		snprintf(agent, sizeof(agent), "no agent at %s (%s) could %s it",
		    h->agent_addr.sun_path, strerror(errno), rc == SEG_EOWNER ?
		    "take it back" : "make");
	} else {
		for (i = 0; i < LIB_DIR_WAIT_MS / 10; i++) {
			usleep(10 * 1000);
			if (segment_dir_open(sd, dir, geteuid(), 1, mode) ==
			    SEG_OK) {
				handle_log(h, DYNPROF_LOG_INFO, "%s: the agent "
				    "%s %s", __func__, rc == SEG_EOWNER ?
				    "took back" : "made", sd->path);
				return (SEG_OK);
			}
		}
		snprintf(agent, sizeof(agent), "the agent at %s did not %s it "
		    "within %d ms", h->agent_addr.sun_path, rc == SEG_EOWNER ?
		    "take it back" : "make", LIB_DIR_WAIT_MS);
		/* Again, to say what is there now. */
		if ((rc = segment_dir_open(sd, dir, geteuid(), 1, mode)) ==
		    SEG_OK)
			return (SEG_OK);
	}
	handle_log_dir(h, sd, rc, agent);
	return (rc);
}

/* Stops the window of a handle, reports it detached and frees its slot. */
static void
handle_finish(struct dynprof *h)
{
	int64_t	 step;

	if (h->closed)
		return;
	if (h->counter > 0)
		dynprof_step_end(h, h->counter);
	step = atomic_load_explicit(h->step_addr, memory_order_relaxed);
	step_stop(h, DYNPROF_STOP_CLOSED, step);
	h->state = SEG_RANK_GONE;
	report_event(h, EVENT_DETACHED, NULL, step, 0, NULL);
	segment_slot_release(&h->seg, h->slot_index, h->pid);
	h->closed = 1;
	h->next_due = INT64_MIN;
	h->next_due_ns = INT64_MIN;
}

/*
 * At process exit, stops the windows of this process's open handles.  The
 * handles stay allocated (another thread may still hold one).  The lock is not
 * held while a handle's stop callback runs.
 */
static void
handle_atexit(void)
{
	struct dynprof	*h;
	pid_t		 pid = getpid();

	for (;;) {
		pthread_mutex_lock(&handle_lock);
		for (h = handle_list; h != NULL; h = h->next)
			if (h->pid == pid && !h->closed && !h->exiting)
				break;
		if (h != NULL)
			h->exiting = 1;
		pthread_mutex_unlock(&handle_lock);
		if (h == NULL)
			break;
		handle_finish(h);
		/* A segment no agent served goes with its last rank. */
		(void)segment_unlink_unused(&h->seg);
	}
}

static void
handle_register_atexit(void)
{
	atexit(handle_atexit);
}

static void
handle_free(struct dynprof *h)
{
	report_close(h);
	segment_close(&h->seg);
	window_done_free(&h->done);
	free(h->cfg);
	free(h->cfg_next);
	free(h);
}

/* Fills p with the defaults. */
DYNPROF_API void
dynprof_params_init(struct dynprof_params *p)
{
	if (p == NULL)
		return;
	memset(p, 0, sizeof(*p));
	p->version = DYNPROF_PARAMS_VERSION;
	p->rank = -1;
	p->shm_mode = -1;
}

/* Opens a handle: segment, slot, socket, schedule; reports the rank attached. */
DYNPROF_API int
dynprof_open(const struct dynprof_params *p, dynprof_t **out)
{
	struct dynprof	*h;
	struct seg_dir	 sd;
	const char	*job, *root, *dir, *sock, *why, *text;
	char		 labels[LABELS_MAX];
	mode_t		 mode;
	uid_t		 agent_uid;
	int		 rc, idx;

	if (out != NULL)
		*out = NULL;
	if (p == NULL || out == NULL || p->version < 1 ||
	    p->version > DYNPROF_PARAMS_VERSION)
		return (DYNPROF_EINVAL);
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return (DYNPROF_ENOMEM);
	h->sock = -1;
	h->pidfd = -1;
	h->slot_index = -1;
	h->pid = getpid();
	h->on_start = p->on_start;
	h->on_stop = p->on_stop;
	h->on_log = p->on_log;
	h->arg = p->arg;
	h->cfg = calloc(1, sizeof(*h->cfg));
	h->cfg_next = calloc(1, sizeof(*h->cfg_next));
	if (h->cfg == NULL || h->cfg_next == NULL) {
		rc = DYNPROF_ENOMEM;
		goto fail;
	}

	if ((job = p->job) == NULL && (job = handle_env("DYNPROF_JOB")) == NULL &&
	    (job = handle_env("SLURM_JOB_ID")) == NULL)
		job = LIB_JOB_DEFAULT;
	if (!jobid_valid(job, &why)) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: %s", __func__, why);
		rc = DYNPROF_EJOB;
		goto fail;
	}
	if ((text = p->version >= 2 ? p->labels : NULL) == NULL)
		text = handle_env("DYNPROF_LABELS");
	if (labels_canon(text, labels, sizeof(labels), &why) == -1) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: %s (\"%s\")", __func__,
		    why, text);
		rc = DYNPROF_EINVAL;
		goto fail;
	}
	snprintf(h->labels, sizeof(h->labels), "%s", labels);
	if ((rc = handle_resolve_rank(h, p->rank)) != DYNPROF_OK ||
	    (rc = handle_resolve_mode(h, p->shm_mode, &mode)) != DYNPROF_OK)
		goto fail;
	if ((root = p->output_root) == NULL &&
	    (root = handle_env("DYNPROF_OUTPUT_ROOT")) == NULL)
		root = LIB_OUTPUT_DEFAULT;
	if ((rc = output_root_resolve(root, h->output_root,
	    sizeof(h->output_root))) != DYNPROF_OK) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: output root \"%s\": %s",
		    __func__, root, dynprof_strerror(rc));
		goto fail;
	}
	if ((dir = p->shm_dir) == NULL)
		dir = handle_env("DYNPROF_SHM_DIR");
	if ((sock = p->agent_socket) == NULL &&
	    (sock = handle_env("DYNPROF_AGENT_SOCKET")) == NULL)
		sock = LIB_SOCKET_DEFAULT;

	agent_uid = handle_agent_uid(h, sock);
	if ((rc = report_open(h, sock)) != DYNPROF_OK) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: agent socket \"%s\": %s",
		    __func__, sock, rc == DYNPROF_EPATH ? "path too long" :
		    strerror(errno));
		if (rc == DYNPROF_EPATH)
			goto fail;
	}
	if ((rc = handle_segment_dir(h, dir, job, mode, &sd)) != SEG_OK)
		goto fail;
	rc = segment_open_at(&h->seg, sd.fd, sd.path, job, SEG_CREATE | SEG_USE,
	    mode, agent_uid);
	close(sd.fd);
	if (rc != SEG_OK) {
		handle_log_segment(h, h->seg.path[0] != '\0' ? h->seg.path : job,
		    rc, agent_uid);
		goto fail;
	}
	if (h->seg.replaced != 0)
		handle_log(h, DYNPROF_LOG_WARNING, "%s: replaced the stale "
		    "segment %s (%s)", __func__, h->seg.path,
		    segment_strerror(h->seg.replaced));
	if ((idx = segment_slot_claim_labels(&h->seg, h->pid, h->rank,
	    h->output_root, h->labels)) < 0) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: segment %s: %s", __func__,
		    h->seg.path, segment_strerror(idx));
		rc = idx;
		goto fail;
	}
	h->slot_index = idx;
	h->slot = &h->seg.slots[idx];
	h->seq_addr = &h->seg.hdr->seq;
	h->step_addr = &h->slot->step;
	/* An impossible seq (odd and not the current one): the first read loads. */
	h->seq_seen = (atomic_load(h->seq_addr) | 1) + 2;

	h->state = SEG_RANK_ATTACHED;
	report_event(h, EVENT_ATTACHED, NULL, -1, 0, NULL);
	/* Load the schedule now: the first step must not pay for it. */
	step_slow(h, -1, WINDOW_END);
	handle_log(h, DYNPROF_LOG_INFO, "rank %d attached to %s (slot %d)",
	    h->rank, h->seg.path, idx);

	pthread_once(&handle_once, handle_register_atexit);
	pthread_mutex_lock(&handle_lock);
	h->next = handle_list;
	handle_list = h;
	pthread_mutex_unlock(&handle_lock);
	*out = h;
	return (DYNPROF_OK);

fail:
	if (h->slot_index >= 0)
		segment_slot_release(&h->seg, h->slot_index, h->pid);
	handle_free(h);
	return (rc);
}

/* Stops a window still open, reports the rank detached, frees the handle. */
DYNPROF_API void
dynprof_close(dynprof_t *h)
{
	struct dynprof	**pp;

	if (h == NULL)
		return;
	pthread_mutex_lock(&handle_lock);
	for (pp = &handle_list; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == h) {
			*pp = h->next;
			break;
		}
	}
	pthread_mutex_unlock(&handle_lock);
	/* Only the process that opened it: a forked child shares its lock. */
	if (h->pid == getpid()) {
		handle_finish(h);
		(void)segment_unlink_unused(&h->seg);
	}
	handle_free(h);
}

/* The rank's state, an enum dynprof_rank_state. */
DYNPROF_API int
dynprof_state(const dynprof_t *h)
{
	if (h == NULL)
		return (DYNPROF_EINVAL);
	return ((int)h->state);
}

/* The handle's job id. */
DYNPROF_API const char *
dynprof_job(const dynprof_t *h)
{
	return (h != NULL ? h->seg.job : NULL);
}

/* The handle's rank. */
DYNPROF_API int
dynprof_rank(const dynprof_t *h)
{
	return (h != NULL ? h->rank : DYNPROF_EINVAL);
}

/* The last step begun, as stored in the rank's slot (-1 before the first). */
DYNPROF_API int64_t
dynprof_current_step(const dynprof_t *h)
{
	if (h == NULL)
		return (-1);
	return (atomic_load_explicit(h->step_addr, memory_order_relaxed));
}

/* Fills w with the window in progress and returns 1, or returns 0. */
DYNPROF_API int
dynprof_active_window(const dynprof_t *h, struct dynprof_window *w)
{
	if (h == NULL || !h->active)
		return (0);
	if (w != NULL) {
		w->id = h->window.id;
		w->start_step = h->window.start_step;
		w->stop_step = h->window.stop_step;
	}
	return (1);
}

/* Fills info's fields of its version from window w. */
static void
handle_window_info(const struct seg_window *w, struct dynprof_window_info *info)
{
	/* Version 1's fields; a later version adds its own below. */
	info->id = w->id;
	info->start_step = w->start_step;
	info->stop_step = w->stop_step;
	if (window_is_timed(w)) {
		info->kind = DYNPROF_WINDOW_TIME;
		info->start_unix_ns = w->start_unix_ns;
		info->start_ns = w->start_ns;
		info->duration_ns = w->stop_ns - w->start_ns;
	} else {
		info->kind = DYNPROF_WINDOW_STEPS;
		info->start_unix_ns = info->start_ns = info->duration_ns = 0;
	}
}

/*
 * Describes window id: the one latched (in progress, or whose callback runs
 * or last ran), else one of the schedule the rank holds.  Returns 1, 0 for
 * none, or DYNPROF_EINVAL.
 */
DYNPROF_API int
dynprof_window_info(const dynprof_t *h, uint32_t id,
    struct dynprof_window_info *info)
{
	uint32_t	 i;

	if (h == NULL || info == NULL || info->version == 0 ||
	    info->version > DYNPROF_WINDOW_INFO_VERSION)
		return (DYNPROF_EINVAL);
	if (id != 0 && h->window.id == id) {
		handle_window_info(&h->window, info);
		return (1);
	}
	for (i = 0; h->cfg != NULL && i < h->cfg->nwindows; i++)
		if (h->cfg->windows[i].id == id) {
			handle_window_info(&h->cfg->windows[i], info);
			return (1);
		}
	return (0);
}

/* Copies the handle's counters (zeros for NULL). */
DYNPROF_API void
dynprof_get_stats(const dynprof_t *h, struct dynprof_stats *s)
{
	if (s == NULL)
		return;
	if (h == NULL)
		memset(s, 0, sizeof(*s));
	else
		*s = h->stats;
}

/* Names an error code. */
DYNPROF_API const char *
dynprof_strerror(int code)
{
	switch (code) {
	case DYNPROF_EINVAL:
		return ("invalid argument");
	case DYNPROF_EPATH:
		return ("path too long or invalid");
	case DYNPROF_ENOMEM:
		return ("out of memory");
	default:
		return (segment_strerror(code));
	}
}

/* The library's version. */
DYNPROF_API const char *
dynprof_version(void)
{
	return (DYNPROF_VERSION_STRING);
}
