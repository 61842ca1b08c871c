/*
 * Standalone mode: no coordinator.  MindSpore's profiler_config.json is watched
 * with inotify (on its directory, so that editors that write a temporary file and
 * rename it are seen) and applied to the job's segment as soon as it is closed or
 * renamed into place.  Keys and meanings are MindSpore 2.4's; an invalid file is
 * reported with its line and reason and the previous config stays in force.
 */

#include <sys/inotify.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "parts.h"
#include "file.h"
#include "log.h"
#include "options.h"

#define STANDALONE_FILE_MAX	(1024 * 1024)	/* a profiler_config.json is tiny */

struct standalone {
	int		 fd;
	struct event	*ev;
	char		 dir[PATH_MAX];
	char		 base[NAME_MAX + 1];
	uint32_t	 last_id;		/* highest window id issued */
	struct seg_config *cur;			/* the segment's config */
	struct seg_config *next;		/* the file's, checked */
};

#define STANDALONE_STEP_MAX	1000000000000000LL	/* 1e15, as the coordinator */

/* The window's steps: integers, -1 for none. */
static const char *const standalone_step_keys[] = { "start_step", "stop_step" };

#define NITEMS(x)	(sizeof(x) / sizeof((x)[0]))

/*
 * Returns 1 if key is typed in MindSpore 2.4's file: a step, or a key of the
 * options table; *is_int says how, *min and *max give an integer's range.
 * Every other key is a framework option.
 */
static int
standalone_known_key(const char *key, int *is_int, int64_t *min,
    int64_t *max)
{
	const struct options_row	*r;
	size_t				 i;

	for (i = 0; i < NITEMS(standalone_step_keys); i++)
		if (strcmp(key, standalone_step_keys[i]) == 0) {
			*is_int = 1;
			*min = -1;
			*max = STANDALONE_STEP_MAX;
			return (1);
		}
	if ((r = options_find(OPTIONS_MS24, key)) == NULL)
		return (0);
	*is_int = r->type == OPTIONS_INT;
	*min = r->min;
	*max = r->max;
	return (1);
}

/*
 * Writes what MindSpore 2.4's monitor writes when rank 0 finds no
 * profiler_config.json into buf: DynamicProfilerArgs().vars, as
 * json.dump(..., indent=4) prints it.  Returns its length, or -1 if len is
 * short.
 */
static int
standalone_default_json(char *buf, size_t len)
{
	const struct options_row	*r;
	size_t				 i, off;
	int				 n;

	n = snprintf(buf, len, "{\n    \"start_step\": -1,\n"
	    "    \"stop_step\": -1");
	for (i = 0; i < OPTIONS_N && n >= 0 && (size_t)n < len; i++) {
		r = &options_table[i];
		if (r->keys[OPTIONS_MS24] == NULL)
			continue;
		off = (size_t)n;
		if (r->type == OPTIONS_BOOL)
			n = snprintf(buf + off, len - off, ",\n    \"%s\": %s",
			    r->keys[OPTIONS_MS24], r->def ? "true" : "false");
		else
			n = snprintf(buf + off, len - off, ",\n    \"%s\": %lld",
			    r->keys[OPTIONS_MS24], (long long)r->def);
		n = n < 0 ? n : n + (int)off;
	}
	if (n >= 0 && (size_t)n < len) {
		off = (size_t)n;
		n = snprintf(buf + off, len - off, "\n}\n");
		n = n < 0 ? n : n + (int)off;
	}
	return (n < 0 || (size_t)n >= len ? -1 : n);
}

/* Returns key's integer in root, or def when root has no such key. */
static int64_t
standalone_int(json_t *root, const char *key, int64_t def)
{
	json_t	*v = json_object_get(root, key);

	return (v != NULL ? (int64_t)json_integer_value(v) : def);
}

/*
 * Reads the file at path as JSON, in at most STANDALONE_FILE_MAX bytes.  It is
 * read by file_read(), without blocking, and must be a regular file: a FIFO
 * put there would otherwise hold the agent for good.  (Symbolic links are
 * followed: a Kubernetes ConfigMap's file is one.)  Returns the JSON, or NULL
 * after logging why.
 */
static json_t *
standalone_read(const char *path)
{
	json_error_t	 err;
	json_t		*root;
	const char	*why;
	char		*buf;
	size_t		 got;

	if ((buf = file_read(path, 0, STANDALONE_FILE_MAX, &got, NULL, &why)) ==
	    NULL) {
		if (errno == EFBIG)
			log_warnx("%s: invalid, previous config stays: over %d "
			    "bytes", path, STANDALONE_FILE_MAX);
		else
			log_warnx("%s: invalid, previous config stays: %s",
			    path, why);
		return (NULL);
	}
	if ((root = json_loadb(buf, got, JSON_REJECT_DUPLICATES, &err)) ==
	    NULL)
		log_warnx("%s:%d: invalid, previous config stays: %s", path,
		    err.line, err.text);
	file_free(buf, got);
	return (root);
}

/*
 * Parses the file into w (one window if *has_window) with its options in po and
 * the framework options in *fwopts (caller frees).  Returns 0, or -1 after
 * logging the line and reason.
 */
int
standalone_parse(struct agent *a, const char *path, Dynprof__V1__Window *w,
    Dynprof__V1__ProfilerOptions *po, int *has_window, char **fwopts)
{
	json_t		*root, *rest, *v;
	const char	*key;
	int64_t		 start, stop;
	json_int_t	 iv;
	int64_t		 min, max;
	size_t		 i;
	int		 is_int;

	*fwopts = NULL;
	if ((root = standalone_read(path)) == NULL) {
		a->stats.standalone_errors++;
		return (-1);
	}
	if (!json_is_object(root)) {
		a->stats.standalone_errors++;
		log_warnx("%s:1: invalid, previous config stays: not a JSON "
		    "object", path);
		json_decref(root);
		return (-1);
	}
	if ((rest = json_object()) == NULL)
		goto fail_nomem;
	json_object_foreach(root, key, v) {
		if (!standalone_known_key(key, &is_int, &min, &max)) {
			if (json_object_set(rest, key, v) == -1)
				goto fail_nomem;
			continue;
		}
		if (is_int && !json_is_integer(v)) {
			log_warnx("%s: invalid, previous config stays: \"%s\" "
			    "must be an integer", path, key);
			goto fail;
		}
		iv = is_int ? json_integer_value(v) : 0;
		if (is_int && (iv < min || iv > max)) {
			log_warnx("%s: invalid, previous config stays: \"%s\" "
			    "%lld out of range (%lld to %lld)", path, key,
			    (long long)iv, (long long)min, (long long)max);
			goto fail;
		}
		if (!is_int && !json_is_boolean(v)) {
			log_warnx("%s: invalid, previous config stays: \"%s\" "
			    "must be true or false", path, key);
			goto fail;
		}
	}
	start = standalone_int(root, "start_step", -1);
	stop = standalone_int(root, "stop_step", -1);
	/* MindSpore 2.4: a step <= 0 means no profiling; start > stop is an error. */
	*has_window = start > 0 && stop > 0;
	if (*has_window && start > stop) {
		log_warnx("%s: invalid, previous config stays: start_step %lld "
		    "is after stop_step %lld", path, (long long)start,
		    (long long)stop);
		goto fail;
	}
	for (i = 0; i < OPTIONS_N; i++) {
		key = options_table[i].keys[OPTIONS_MS24];
		v = key != NULL ? json_object_get(root, key) : NULL;
		if (v == NULL)
			iv = options_table[i].def;
		else if (options_table[i].type == OPTIONS_BOOL)
			iv = json_is_true(v);
		else
			iv = json_integer_value(v);
		options_set(&options_proto, i, po, iv);
	}
	if (json_object_size(rest) > 0) {
		*fwopts = json_dumps(rest, JSON_COMPACT | JSON_SORT_KEYS);
		if (*fwopts == NULL)
			goto fail_nomem;
		po->framework_options_json = *fwopts;
	}
	w->start_step = start;
	w->stop_step = stop;
	w->options = po;
	w->state = DYNPROF__V1__WINDOW_STATE__WINDOW_SCHEDULED;
	json_decref(rest);
	json_decref(root);
	return (0);

fail_nomem:
	log_warnx("%s: out of memory", path);
fail:
	a->stats.standalone_errors++;
	json_decref(rest);
	json_decref(root);
	return (-1);
}

/* Reads the file and applies it if it is valid and says something new. */
struct standalone_config_ctx {
	struct agent_job	*j;
	struct seg_config	*out;
};

static int
standalone_config_cb(void *arg)
{
	struct standalone_config_ctx	*ctx = arg;

	return (segment_read_config(&ctx->j->seg, ctx->out, NULL));
}

static void
standalone_load(struct agent *a)
{
	struct standalone_config_ctx	 rctx;
	int				 rc;
	struct standalone		*sa = a->sa;
	Dynprof__V1__JobConfig		 jc = DYNPROF__V1__JOB_CONFIG__INIT;
	Dynprof__V1__Window		 w = DYNPROF__V1__WINDOW__INIT;
	Dynprof__V1__ProfilerOptions	 po = DYNPROF__V1__PROFILER_OPTIONS__INIT;
	Dynprof__V1__Window		*wp = &w;
	struct agent_job		*j;
	const char			*path = a->opts.config_file, *why = NULL;
	char				*fwopts = NULL;
	uint32_t			 i;
	int				 has_window = 0;

	if (access(path, F_OK) == -1) {
		log_info("%s: not there yet, waiting for it", path);
		return;
	}
	if (standalone_parse(a, path, &w, &po, &has_window, &fwopts) == -1)
		return;
	if ((j = segments_get(a, a->opts.job, 1)) == NULL)
		goto out;
	j->keep = 1;
	rctx.j = j;
	rctx.out = sa->cur;
	if (guard_call(standalone_config_cb, &rctx, &rc) == -1) {
		segments_drop_faulted(a);
		goto out;
	}
	if (rc != SEG_OK) {
		log_warnx("%s: cannot read the segment of job %s", __func__,
		    j->name);
		goto out;
	}
	for (i = 0; i < sa->cur->nwindows; i++)
		if (sa->cur->windows[i].id > sa->last_id)
			sa->last_id = sa->cur->windows[i].id;

	jc.job = j->name;
	jc.generation = j->applied + 1;
	if (has_window) {
		/* The same steps as a window in force: the same window. */
		w.id = 0;
		for (i = 0; i < sa->cur->nwindows; i++)
			if (sa->cur->windows[i].start_step == w.start_step &&
			    sa->cur->windows[i].stop_step == w.stop_step &&
			    !(sa->cur->windows[i].flags & SEG_WINDOW_CANCELLED))
				w.id = sa->cur->windows[i].id;
		if (w.id == 0)
			w.id = sa->last_id + 1;
		jc.n_windows = 1;
		jc.windows = &wp;
	}
	/* A window apply_jobconfig() dropped is an invalid file here: the
	 * previous config stays. */
	if (apply_jobconfig(&jc, sa->next, &why) == -1 || why != NULL) {
		a->stats.standalone_errors++;
		log_warnx("%s: invalid, previous config stays: %s", path,
		    why != NULL ? why : "?");
		goto out;
	}
	if (sa->next->nwindows == sa->cur->nwindows &&
	    memcmp(sa->next->windows, sa->cur->windows,
	    sa->next->nwindows * sizeof(sa->next->windows[0])) == 0) {
		log_info("%s: unchanged", path);
		goto out;
	}
	if (segments_apply(a, &jc) == 0) {
		if (w.id > sa->last_id)
			sa->last_id = w.id;
		if (has_window)
			log_info("%s: window %u, steps %lld to %lld", path, w.id,
			    (long long)w.start_step, (long long)w.stop_step);
		else
			log_info("%s: no window (start_step %lld)", path,
			    (long long)w.start_step);
	}
out:
	free(fwopts);
}

static void
standalone_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent		*a = arg;
	struct standalone	*sa = a->sa;
	char			 buf[4096]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event *ie;
	ssize_t			 n;
	char			*p;
	int			 changed = 0;

	(void)what;
	for (;;) {
		n = read(fd, buf, sizeof(buf));
		if (n <= 0) {
			if (n == -1 && errno != EAGAIN && errno != EINTR)
				log_warn("%s: inotify", __func__);
			break;
		}
		for (p = buf; p < buf + n; p += sizeof(*ie) + ie->len) {
			ie = (const struct inotify_event *)p;
			if (ie->mask & IN_Q_OVERFLOW)
				changed = 1;
			if (ie->mask & (IN_DELETE_SELF | IN_MOVE_SELF))
				log_warnx("%s: directory %s went away; "
				    "watching stops", __func__, sa->dir);
			if (ie->len > 0 && strcmp(ie->name, sa->base) == 0 &&
			    (ie->mask & (IN_CLOSE_WRITE | IN_MOVED_TO)))
				changed = 1;
		}
	}
	if (changed)
		standalone_load(a);
}

/*
 * Creates directory dir and its missing parents, mode 0755 (mkdir -p), logging
 * each one made.  Returns 0, or -1 with errno set.
 */
static int
standalone_mkdirs(const char *dir)
{
	char		 parent[PATH_MAX];
	struct stat	 st;
	const char	*up;

	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return (0);
		errno = ENOTDIR;
		return (-1);
	}
	if (errno != ENOENT)
		return (-1);
	if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	up = dirname(parent);
	if (strcmp(up, dir) != 0 && standalone_mkdirs(up) == -1)
		return (-1);
	if (mkdir(dir, 0755) == -1) {
		if (errno == EEXIST)
			return (0);
		return (-1);
	}
	log_info("standalone: created directory %s", dir);
	return (0);
}

/*
 * Writes MindSpore 2.4's default profiler_config.json (no window) at the path
 * of --config-file, as MindSpore's monitor does when the file is missing:
 * complete under a temporary name in the same directory, then renamed into
 * place (without replacing a file someone wrote meanwhile).  Returns 0 or -1.
 */
static int
standalone_write_default(struct standalone *sa, const char *path)
{
	char		 tmp[PATH_MAX], text[1024];
	size_t		 len;
	int		 fd, n;

	if ((n = standalone_default_json(text, sizeof(text))) == -1) {
		log_warnx("%s: %s: default config too long", __func__, path);
		return (-1);
	}
	len = (size_t)n;
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", sa->dir, sa->base) >=
	    (int)sizeof(tmp)) {
		log_warnx("%s: %s: path too long", __func__, path);
		return (-1);
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		log_warn("%s: %s", __func__, tmp);
		return (-1);
	}
	if (fchmod(fd, 0644) == -1 ||
	    write(fd, text, len) != (ssize_t)len) {
		log_warn("%s: %s", __func__, tmp);
		goto fail;
	}
	if (close(fd) == -1) {
		fd = -1;
		log_warn("%s: %s", __func__, tmp);
		goto fail;
	}
	fd = -1;
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == -1) {
		if (errno == EEXIST) {
			unlink(tmp);
			return (0);	/* written meanwhile: theirs stays */
		}
		/* A file system without RENAME_NOREPLACE. */
		if ((errno != EINVAL && errno != ENOSYS) ||
		    rename(tmp, path) == -1) {
			log_warn("%s: rename %s to %s", __func__, tmp, path);
			goto fail;
		}
	}
	log_info("%s: missing: wrote MindSpore 2.4's default (start_step -1, "
	    "no window)", path);
	return (0);
fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	return (-1);
}

/*
 * Starts watching --config-file and applies it once.  As MindSpore's monitor
 * does, a missing directory is created and a missing file is written with
 * MindSpore 2.4's defaults.
 */
int
standalone_open(struct agent *a)
{
	struct standalone	*sa;
	char			 tmp[PATH_MAX];
	int			 wd;

	if ((sa = calloc(1, sizeof(*sa))) == NULL ||
	    (sa->cur = malloc(sizeof(*sa->cur))) == NULL ||
	    (sa->next = malloc(sizeof(*sa->next))) == NULL) {
		if (sa != NULL)
			free(sa->cur);
		free(sa);
		log_warn("%s", __func__);
		return (-1);
	}
	sa->fd = -1;
	a->sa = sa;
	strcpy(tmp, a->opts.config_file);
	if (strlen(basename(tmp)) >= sizeof(sa->base)) {
		log_warnx("%s: file name too long", __func__);
		return (-1);
	}
	strcpy(tmp, a->opts.config_file);
	strcpy(sa->base, basename(tmp));
	strcpy(tmp, a->opts.config_file);
	strcpy(sa->dir, dirname(tmp));

	if (standalone_mkdirs(sa->dir) == -1) {
		log_warn("%s: cannot create directory %s", __func__, sa->dir);
		return (-1);
	}
	if (access(a->opts.config_file, F_OK) == -1 && errno == ENOENT)
		standalone_write_default(sa, a->opts.config_file);

	if ((sa->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1) {
		log_warn("%s: inotify_init1", __func__);
		return (-1);
	}
	wd = inotify_add_watch(sa->fd, sa->dir, IN_CLOSE_WRITE | IN_MOVED_TO |
	    IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR);
	if (wd == -1) {
		log_warn("%s: watch %s", __func__, sa->dir);
		return (-1);
	}
	sa->ev = event_new(a->base, sa->fd, EV_READ | EV_PERSIST,
	    standalone_read_cb, a);
	if (sa->ev == NULL || event_add(sa->ev, NULL) == -1) {
		log_warnx("%s: cannot watch inotify", __func__);
		return (-1);
	}
	if (segments_get(a, a->opts.job, 1) == NULL)
		return (-1);
	jobs_find(a, a->opts.job)->keep = 1;
	log_info("standalone: job %s from %s", a->opts.job,
	    a->opts.config_file);
	standalone_load(a);
	return (0);
}

/* SIGHUP: reads the file again. */
void
standalone_reload(struct agent *a)
{
	if (a->sa != NULL)
		standalone_load(a);
}

/* Stops watching. */
void
standalone_close(struct agent *a)
{
	struct standalone	*sa = a->sa;

	if (sa == NULL)
		return;
	if (sa->ev != NULL)
		event_free(sa->ev);
	if (sa->fd != -1)
		close(sa->fd);
	free(sa->cur);
	free(sa->next);
	free(sa);
	a->sa = NULL;
}
