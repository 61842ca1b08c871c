/*
 * A legacy job's dialect and output directory, and a window written in its
 * dialect (docs/legacy.md).  The dialect comes from dynprof.dialect in the
 * job's directory, else from the keys of the profiler_config.json the
 * framework wrote there at start-up.  A window is rendered from the options
 * table's columns over the framework's own file (its other keys kept) and
 * written whole: a temporary file, fsync, rename, fsync of the directory, so
 * the framework never reads half a file.  All of it in the job's directory
 * as legacy_fs.c opened it, as its owner.  Every write is at least
 * LEGACY_WRITE_GAP_MS after the one before, and in a later whole second than
 * any mtime the framework saw: torch_npu compares seconds.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "parts.h"
#include "clock.h"
#include "parts_legacy.h"
#include "log.h"
#include "ranklist.h"

/* The keys a window's steps and targets take: never a framework option's. */
static const char *const legacy_owned_keys[] = {
	"start_step", "stop_step", "is_valid", "active", "warmup", "is_rank",
	"rank_list",
};

#define NITEMS(x)	(sizeof(x) / sizeof((x)[0]))

/*
 * The dialects, in the order their keys are tried (2.7 has 2.6's keys and
 * more).  Their options' keys and value forms are their columns of the
 * options table; the record fields' types and defaults come from it too
 * (legacy_shm.c).
 */
static const char *const legacy_keys_torch[] = { "prof_dir", "warmup",
	"active", NULL };
static const char *const legacy_keys_ms26[] = { "export_type", "mstx", NULL };
static const char *const legacy_keys_ms27[] = { "prof_path", "record_shapes",
	"l2_cache", NULL };
static const char *const legacy_keys_ms25[] = { "activities", NULL };
static const char *const legacy_keys_ms24[] = { "profile_framework",
	"profile_communication", NULL };
static const char *const legacy_shm_ms24[] = { "start_step", "stop_step",
	"aicore_metrics", "profiler_level", "profile_framework", "analyse_mode",
	"profile_communication", "parallel_strategy", "with_stack",
	"data_simplification", NULL };
static const char *const legacy_shm_ms25[] = { "start_step", "stop_step",
	"aicore_metrics", "profiler_level", "analyse_mode", "activities",
	"parallel_strategy", "with_stack", "data_simplification", NULL };
static const char *const legacy_shm_ms26[] = { "start_step", "stop_step",
	"aic_metrics", "profiler_level", "analyse_mode", "activities",
	"export_type", "profile_memory", "mstx", "parallel_strategy",
	"with_stack", "data_simplification", NULL };

static const struct legacy_dialect legacy_dialects[] = {
	{ .id = OPTIONS_TORCH_NPU, .keys = legacy_keys_torch,
	  .output_key = "prof_dir", .stop = LEGACY_STOP_ACTIVE,
	  .trace = LEGACY_TRACE_MARKED, .own_config_first = 1,
	  .marker_key = "metadata", .log = LEGACY_LOG_TORCH, .ahead = 1 },
	{ .id = OPTIONS_MS27, .keys = legacy_keys_ms26,
	  .also = legacy_keys_ms27, .output_key = "prof_path",
	  .stop = LEGACY_STOP_STEP, .trace = LEGACY_TRACE_STEPS,
	  .can_disable = 1, .log = LEGACY_LOG_MINDSPORE },
	{ .id = OPTIONS_MS26, .keys = legacy_keys_ms26, .stop = LEGACY_STOP_STEP,
	  .trace = LEGACY_TRACE_STEPS, .can_disable = 1,
	  .log = LEGACY_LOG_MINDSPORE, .shm = legacy_shm_ms26 },
	{ .id = OPTIONS_MS25, .keys = legacy_keys_ms25, .stop = LEGACY_STOP_STEP,
	  .trace = LEGACY_TRACE_STEPS, .can_disable = 1,
	  .log = LEGACY_LOG_MINDSPORE, .shm = legacy_shm_ms25 },
	{ .id = OPTIONS_MS24, .keys = legacy_keys_ms24, .stop = LEGACY_STOP_STEP,
	  .trace = LEGACY_TRACE_STEPS, .can_disable = 1,
	  .log = LEGACY_LOG_MINDSPORE, .shm = legacy_shm_ms24 },
};

/* The descriptor of dialect d (enum options_dialect), or NULL. */
const struct legacy_dialect *
legacy_dialect(int d)
{
	size_t	 i;

	for (i = 0; i < NITEMS(legacy_dialects); i++)
		if ((int)legacy_dialects[i].id == d)
			return (&legacy_dialects[i]);
	return (NULL);
}

/* Returns 1 if a dialect served comes after d in the enum. */
static int
legacy_dialect_later(int d)
{
	int	 i;

	for (i = d + 1; i < OPTIONS_NDIALECTS; i++)
		if (legacy_dialect(i) != NULL)
			return (1);
	return (0);
}

/* The names of the dialects served, "a, b or c", into buf. */
static void
legacy_dialect_names(char *buf, size_t len)
{
	size_t	 i, off = 0;
	int	 k;

	buf[0] = '\0';
	for (i = 0; i < OPTIONS_NDIALECTS; i++) {
		if (legacy_dialect((int)i) == NULL || off >= len)
			continue;
		k = snprintf(buf + off, len - off, "%s%s", off == 0 ? "" :
		    legacy_dialect_later((int)i) ? ", " : " or ",
		    options_dialect_name((enum options_dialect)i));
		off = k < 0 ? len : off + (size_t)k;
	}
}

/* The marker of window id of lj, as its trace holds it. */
void
legacy_marker(const struct legacy_job *lj, uint32_t id, char *buf, size_t len)
{
	snprintf(buf, len, "dynprof:%s:%u", lj->name, id);
}

/* Returns 1 if o has one of keys (NULL-ended). */
static int
legacy_has_key(json_t *o, const char *const *keys)
{
	for (; *keys != NULL; keys++)
		if (json_object_get(o, *keys) != NULL)
			return (1);
	return (0);
}

/* Trims s of surrounding white space, in place; returns it. */
static char *
legacy_trim(char *s)
{
	char	*e;

	s += strspn(s, " \t\r\n");
	e = s + strlen(s);
	while (e > s && strchr(" \t\r\n", e[-1]) != NULL)
		*--e = '\0';
	return (s);
}

/* Returns the dialect the keys of a framework's config say, or -1. */
static int
legacy_dialect_of(json_t *o)
{
	size_t	 i;

	for (i = 0; i < NITEMS(legacy_dialects); i++)
		if (legacy_has_key(o, legacy_dialects[i].keys) &&
		    (legacy_dialects[i].also == NULL ||
		    legacy_has_key(o, legacy_dialects[i].also)))
			return ((int)legacy_dialects[i].id);
	return (-1);
}

/* Reads dynprof.dialect: 0 (none, or *d set), -1 with lj->error set. */
static int
legacy_detect_named(struct legacy_job *lj, int dfd, int *d)
{
	struct stat		 st;
	enum options_dialect	 nd;
	char			 why[LEGACY_REASON_MAX], *buf, *name, names[160];

	buf = legacy_fs_read(dfd, LEGACY_DIALECT_NAME,
	    LEGACY_SMALL_FILE_MAX, &st, why, sizeof(why));
	if (buf == NULL) {
		if (why[0] != '\0') {
			snprintf(lj->error, sizeof(lj->error), "%s", why);
			return (-1);
		}
		return (0);
	}
	if (strlen(buf) != (size_t)st.st_size) {
		snprintf(lj->error, sizeof(lj->error), "%s: holds a NUL byte",
		    LEGACY_DIALECT_NAME);
		free(buf);
		return (-1);
	}
	name = legacy_trim(buf);
	if (options_dialect_find(name, &nd) == -1 ||
	    legacy_dialect((int)nd) == NULL) {
		legacy_dialect_names(names, sizeof(names));
		snprintf(lj->error, sizeof(lj->error), "%s: unknown dialect "
		    "\"%.64s\" (%.120s)", LEGACY_DIALECT_NAME, name, names);
		free(buf);
		return (-1);
	}
	*d = (int)nd;
	lj->from_file = 1;
	free(buf);
	return (0);
}

/*
 * Reads the framework's profiler_config.json, unless it is the one we wrote
 * last: the first one read is kept as the base every window is written over.
 * Returns 0, or -1 with lj->error set.
 */
static int
legacy_detect_config(struct legacy_job *lj, int dfd)
{
	struct stat	 st;
	json_t		*o;
	json_error_t	 jerr;
	char		 why[LEGACY_REASON_MAX], *buf;

	buf = legacy_fs_read(dfd, LEGACY_CONFIG_NAME, LEGACY_CONFIG_MAX,
	    &st, why, sizeof(why));
	if (buf == NULL) {
		if (why[0] == '\0')
			return (0);
		snprintf(lj->error, sizeof(lj->error), "%s", why);
		return (-1);
	}
	if (lj->written_mtime.tv_sec != 0 &&
	    st.st_mtim.tv_sec == lj->written_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == lj->written_mtime.tv_nsec) {
		free(buf);
		return (0);		/* ours */
	}
	o = json_loads(buf, 0, &jerr);
	free(buf);
	if (o == NULL || !json_is_object(o)) {
		snprintf(lj->error, sizeof(lj->error), "%s: not a JSON object"
		    " (line %d: %.100s)", LEGACY_CONFIG_NAME, o == NULL ?
		    jerr.line : 1, o == NULL ? jerr.text : "");
		json_decref(o);
		return (-1);
	}
	lj->framework_seen = 1;
	lj->framework_uid = st.st_uid;
	if (st.st_mtim.tv_sec > lj->framework_mtime)
		lj->framework_mtime = st.st_mtim.tv_sec;
	if (lj->base == NULL)
		lj->base = o;
	else
		json_decref(o);
	return (0);
}

/*
 * Reads the absolute path in file name of the job's directory into dst
 * (PATH_MAX bytes; "" none).  Returns 1 if the file is there, else 0; a bad
 * one is the job's error.
 */
static int
legacy_detect_path(struct legacy_job *lj, int dfd, const char *name,
    char *dst)
{
	struct stat	 st;
	char		 why[LEGACY_REASON_MAX], *buf, *p;
	int		 nul;

	dst[0] = '\0';
	if ((buf = legacy_fs_read(dfd, name, LEGACY_SMALL_FILE_MAX, &st, why,
	    sizeof(why))) == NULL)
		return (0);
	nul = strlen(buf) != (size_t)st.st_size;
	p = legacy_trim(buf);
	if (!nul && p[0] == '/' && strlen(p) < PATH_MAX)
		strcpy(dst, p);
	else if (lj->error[0] == '\0')	/* the status says it */
		snprintf(lj->error, sizeof(lj->error), "%s: %s", name,
		    nul ? "holds a NUL byte" : p[0] != '/' ?
		    "not an absolute path" : "too long");
	free(buf);
	return (1);
}

/*
 * Finds the output directory: dynprof.output, else the dialect's key; and
 * where the ranks' logs are, dynprof.logs.
 */
static void
legacy_detect_output(struct legacy_job *lj, int dfd)
{
	const struct legacy_dialect *dl = legacy_dialect(lj->dialect);
	json_t		*v = NULL;

	(void)legacy_detect_path(lj, dfd, LEGACY_LOGS_NAME, lj->logs);
	if (legacy_detect_path(lj, dfd, LEGACY_OUTPUT_NAME, lj->output))
		return;
	if (lj->base == NULL || dl == NULL || dl->output_key == NULL)
		return;
	v = json_object_get(lj->base, dl->output_key);
	if (json_is_string(v) && json_string_value(v)[0] == '/' &&
	    strlen(json_string_value(v)) < sizeof(lj->output))
		strcpy(lj->output, json_string_value(v));
}

/*
 * Looks at the job's directory again, as its owner: its dialect (kept once
 * known), the framework's config, the output directory.  lj->error says what
 * is wrong.  A directory that cannot be opened now (gone, replaced) changes
 * nothing: the tick looks at its name again.
 */
void
legacy_detect(struct legacy *l, struct legacy_job *lj)
{
	int	 d = -1, old = lj->dialect, rn, rc, dfd, first;
	char	 was[LEGACY_REASON_MAX], why[LEGACY_REASON_MAX], names[160];

	if ((dfd = legacy_fs_open(l, lj, why, sizeof(why))) == -1) {
		lj->redetect = 1;	/* once its name leads to it again */
		return;
	}
	lj->redetect = 0;
	if (legacy_fs_as(lj) == -1) {
		legacy_fs_self();
		close(dfd);
		snprintf(lj->error, sizeof(lj->error), "cannot act as the "
		    "directory's owner (uid %u)", (unsigned)lj->uid);
		lj->status_dirty = 1;
		return;
	}
	first = lj->detected++ == 0;
	snprintf(was, sizeof(was), "%s", lj->error);
	lj->error[0] = '\0';
	lj->from_file = 0;
	rn = legacy_detect_named(lj, dfd, &d);
	rc = legacy_detect_config(lj, dfd);
	if (rn == -1)
		lj->dialect = -1;
	else if (d != -1)
		lj->dialect = d;
	else if (lj->base != NULL &&
	    (d = legacy_dialect_of(lj->base)) != -1)
		lj->dialect = d;
	else if (lj->base != NULL) {
		lj->dialect = -1;
		legacy_dialect_names(names, sizeof(names));
		snprintf(lj->error, sizeof(lj->error), "unknown dialect: the "
		    "keys of %s are none of %.120s's; name it in %s",
		    LEGACY_CONFIG_NAME, names, LEGACY_DIALECT_NAME);
	} else if (rc == 0 && lj->dialect == -1)
		snprintf(lj->error, sizeof(lj->error), "dialect unknown yet: "
		    "no %s from the framework and no %s", LEGACY_CONFIG_NAME,
		    LEGACY_DIALECT_NAME);
	legacy_detect_output(lj, dfd);
	legacy_fs_self();
	close(dfd);
	if (old != lj->dialect || strcmp(was, lj->error) != 0) {
		lj->status_dirty = 1;
		if (first)
			return;		/* legacy_add() says it */
		log_limited(&lj->log, LOG_LEVEL_INFO, "legacy job %s: dialect "
		    "%s%s%s", lj->name,
		    options_dialect_name((enum options_dialect)lj->dialect),
		    lj->error[0] != '\0' ? ": " : "", lj->error);
	}
}

/*
 * Whether window w can be said in lj's dialect.  Returns 0 (reason may say
 * which options the dialect has no key for: left out), or -1 with reason
 * saying why it is refused.
 */
int
legacy_expressible(const struct legacy_job *lj, const struct seg_window *w,
    char *reason, size_t len)
{
	const struct legacy_dialect *dl = legacy_dialect(lj->dialect);
	struct rank_set	 set;
	const char	*why;
	size_t		 i, n = 0, off = 0;
	int64_t		 v, count = 0;
	int		 k;

	reason[0] = '\0';
	if (dl == NULL)
		return (snprintf(reason, len, "no dialect"), -1);
	if (w->start_ns != 0)
		return (snprintf(reason, len, "a time window: %s's config "
		    "counts steps only", options_dialect_name(
		    (enum options_dialect)lj->dialect)), -1);
	if (w->start_step < 1)
		return (snprintf(reason, len, "start step %lld: %s counts steps "
		    "from 1", (long long)w->start_step, options_dialect_name(
		    (enum options_dialect)lj->dialect)), -1);
	if (!options_dialect_ranks(dl->id) && w->ranks[0] != '\0' &&
	    strcmp(w->ranks, "all") != 0)
		return (snprintf(reason, len, "ranks \"%.64s\": %s's %s "
		    "cannot target ranks (every rank reads it)", w->ranks,
		    options_dialect_name((enum options_dialect)lj->dialect),
		    LEGACY_CONFIG_NAME), -1);
	if (options_dialect_ranks(dl->id)) {
		if (ranks_parse(w->ranks, &set, &why) == -1)
			return (snprintf(reason, len, "%s", why), -1);
		for (k = 0; k < set.nranges; k++)
			count += (int64_t)set.ranges[k].hi - set.ranges[k].lo + 1;
		if (count > LEGACY_RANK_LIST_MAX)
			return (snprintf(reason, len, "ranks \"%.64s\": %lld "
			    "ranks, over the %d a rank_list is written with",
			    w->ranks, (long long)count, LEGACY_RANK_LIST_MAX),
			    -1);
	}
	for (i = 0; i < OPTIONS_N; i++) {
		v = options_get(&options_seg, i, &w->options);
		if (options_table[i].keys[lj->dialect] != NULL ||
		    v == options_table[i].def || off >= len)
			continue;
		k = snprintf(reason + off, len - off, "%s%s", n++ == 0 ?
		    "left out (no such key): " : ", ", options_table[i].name);
		off = k < 0 ? len : off + (size_t)k;
	}
	return (0);
}

/* Sets key ("a" or "a.b") of o to v (taken). */
static void
legacy_set(json_t *o, const char *key, json_t *v)
{
	char	 top[64];
	const char *dot;
	json_t	*sub;

	if ((dot = strchr(key, '.')) == NULL ||
	    (size_t)(dot - key) >= sizeof(top)) {
		json_object_set_new(o, key, v);
		return;
	}
	memcpy(top, key, (size_t)(dot - key));
	top[dot - key] = '\0';
	if (!json_is_object(sub = json_object_get(o, top))) {
		sub = json_object();
		json_object_set_new(o, top, sub);
	}
	json_object_set_new(sub, dot + 1, v);
}

/* Puts the typed options of w into o, each under its key in dialect d. */
static void
legacy_render_options(json_t *o, int d, const struct seg_window *w)
{
	const struct options_row *r;
	char		 name[64];
	size_t		 i;
	int64_t		 v, num;

	for (i = 0; i < OPTIONS_N; i++) {
		r = &options_table[i];
		if (r->keys[d] == NULL)
			continue;
		v = options_get(&options_seg, i, &w->options);
		switch (options_value_form(r, (enum options_dialect)d, v, name,
		    sizeof(name), &num)) {
		case OPTIONS_FORM_NAME:
			legacy_set(o, r->keys[d], json_string(name));
			break;
		case OPTIONS_FORM_NUMBER:
			legacy_set(o, r->keys[d], json_integer(num));
			break;
		case OPTIONS_FORM_PLAIN:
			legacy_set(o, r->keys[d], r->type == OPTIONS_BOOL ?
			    json_boolean(v != 0) : json_integer(v));
			break;
		default:
			break;		/* unset: the framework's own */
		}
	}
}

/* Adds the framework options of w that are not a key a window owns. */
static void
legacy_render_fwopts(json_t *o, const struct seg_window *w)
{
	json_t		*fw, *v;
	const char	*key;
	size_t		 i;

	if (w->options.fwopts[0] == '\0' ||
	    (fw = json_loads(w->options.fwopts, 0, NULL)) == NULL)
		return;
	if (json_is_object(fw)) {
		json_object_foreach(fw, key, v) {
			for (i = 0; i < NITEMS(legacy_owned_keys); i++)
				if (strcmp(key, legacy_owned_keys[i]) == 0)
					break;
			if (i == NITEMS(legacy_owned_keys))
				json_object_set(o, key, v);
		}
	}
	json_decref(fw);
}

/* Puts torch_npu's targets: is_rank and rank_list.  Returns 0 or -1. */
static int
legacy_render_ranks(json_t *o, const char *ranks)
{
	struct rank_set	 set;
	json_t		*list;
	int64_t		 r;
	int		 k;

	if (ranks_parse(ranks, &set, NULL) == -1)
		return (-1);
	json_object_set_new(o, "is_rank", json_boolean(set.nranges > 0));
	list = json_array();
	for (k = 0; k < set.nranges; k++)
		for (r = set.ranges[k].lo; r <= set.ranges[k].hi; r++)
			json_array_append_new(list, json_integer(r));
	json_object_set_new(o, "rank_list", list);
	return (0);
}

/*
 * The file that says window w (NULL: no window) in lj's dialect: the
 * framework's own config with the window's keys over it.  NULL on error.
 */
static json_t *
legacy_render(const struct legacy_job *lj, const struct seg_window *w)
{
	const struct legacy_dialect *dl = legacy_dialect(lj->dialect);
	json_t	*o, *meta;
	char	 marker[LEGACY_MARKER_MAX];

	o = lj->base != NULL ? json_deep_copy(lj->base) : json_object();
	if (o == NULL)
		return (NULL);
	json_object_del(o, "is_valid");
	if (w == NULL) {
		json_object_set_new(o, "start_step", json_integer(-1));
		json_object_set_new(o, "stop_step", json_integer(-1));
		return (o);
	}
	legacy_render_fwopts(o, w);
	legacy_render_options(o, lj->dialect, w);
	json_object_set_new(o, "start_step", json_integer(w->start_step));
	if (dl != NULL && dl->marker_key != NULL) {
		/* Copied by the framework into the window's trace. */
		if (!json_is_object(meta = json_object_get(o, dl->marker_key))) {
			meta = json_object();
			json_object_set_new(o, dl->marker_key, meta);
		}
		legacy_marker(lj, w->id, marker, sizeof(marker));
		json_object_set_new(meta, LEGACY_MARKER_NAME,
		    json_string(marker));
	}
	if (dl != NULL && dl->stop == LEGACY_STOP_ACTIVE) {
		json_object_del(o, "stop_step");
		json_object_set_new(o, "warmup", json_integer(0));
		json_object_set_new(o, "active",
		    json_integer(w->stop_step - w->start_step + 1));
		if (options_dialect_ranks(dl->id) &&
		    legacy_render_ranks(o, w->ranks) == -1) {
			json_decref(o);
			return (NULL);
		}
	} else
		json_object_set_new(o, "stop_step", json_integer(w->stop_step));
	return (o);
}

/*
 * Writes text into profiler_config.json of directory dfd, atomically: a new
 * temporary file beside it, synced, renamed over it, the directory synced.
 * A config that is not a regular file is never replaced.  Returns 0, or -1
 * with why set.
 */
static int
legacy_write_file(int dfd, const char *text, char *why, size_t wlen)
{
	struct stat	 st;
	ssize_t		 n;
	size_t		 off = 0, len = strlen(text);
	int		 fd, saved;

	if (fstatat(dfd, LEGACY_CONFIG_NAME, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISREG(st.st_mode))
		return (snprintf(why, wlen, "%s is %s: not replaced",
		    LEGACY_CONFIG_NAME, legacy_fs_kind(st.st_mode)), -1);
	(void)unlinkat(dfd, LEGACY_TMP_NAME, 0);	/* an agent died writing */
	fd = openat(dfd, LEGACY_TMP_NAME, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
	if (fd == -1)
		goto fail;
	errno = 0;
	while (off < len && (n = write(fd, text + off, len - off)) > 0)
		off += (size_t)n;
	if (off < len || fsync(fd) == -1) {
		saved = off < len && errno == 0 ? EIO : errno;
		close(fd);
		errno = saved;
		goto fail;
	}
	if (close(fd) == -1 || renameat(dfd, LEGACY_TMP_NAME, dfd,
	    LEGACY_CONFIG_NAME) == -1)
		goto fail;
	(void)fsync(dfd);
	return (0);
fail:
	saved = errno;
	(void)unlinkat(dfd, LEGACY_TMP_NAME, 0);
	snprintf(why, wlen, "cannot write %s: %s", LEGACY_CONFIG_NAME,
	    strerror(saved));
	return (-1);
}

/*
 * Writes window w (NULL: "no window") into lj's profiler_config.json in its
 * dialect, atomically, in the directory served and as its owner.  Returns
 * 0, or -1 with *why set.
 */
int
legacy_write(struct legacy *l, struct legacy_job *lj,
    const struct seg_window *w, const char **why)
{
	static char	 buf[LEGACY_REASON_MAX];
	struct stat	 st;
	json_t		*o;
	char		*text;
	int		 dfd, rc;

	*why = buf;
	if ((o = legacy_render(lj, w)) == NULL)
		return (snprintf(buf, sizeof(buf), "cannot render"), -1);
	text = json_dumps(o, JSON_INDENT(4) | JSON_PRESERVE_ORDER);
	if (text == NULL) {
		json_decref(o);
		return (snprintf(buf, sizeof(buf), "out of memory"), -1);
	}
	if ((dfd = legacy_fs_open(l, lj, buf, sizeof(buf))) == -1) {
		free(text);
		json_decref(o);
		return (-1);
	}
	if (legacy_fs_as(lj) == -1) {
		snprintf(buf, sizeof(buf), "cannot act as the directory's "
		    "owner (uid %u)", (unsigned)lj->uid);
		rc = -1;
	} else
		rc = legacy_write_file(dfd, text, buf, sizeof(buf));
	legacy_fs_self();
	free(text);
	if (rc == 0) {
		/* The file first: the poller then copies the same window. */
		lj->shm_note[0] = '\0';
		(void)legacy_shm_write(l->a, lj, legacy_dialect(lj->dialect),
		    o, 1, lj->shm_note, sizeof(lj->shm_note));
		if (fstatat(dfd, LEGACY_CONFIG_NAME, &st,
		    AT_SYMLINK_NOFOLLOW) == 0)
			lj->written_mtime = st.st_mtim;
		lj->written_at_ms = clock_mono_ms();
	}
	json_decref(o);
	close(dfd);
	return (rc);
}

/*
 * When, on the monotonic clock, lj's file may be written next: at least
 * LEGACY_WRITE_GAP_MS after the last write, and in a later whole second of
 * the wall clock than the file's last mtime, ours or the framework's.
 */
int64_t
legacy_write_due(const struct legacy_job *lj, int64_t now)
{
	struct timespec	 ts;
	int64_t		 due = now, last;

	if (lj->written_at_ms != 0 &&
	    lj->written_at_ms + LEGACY_WRITE_GAP_MS > due)
		due = lj->written_at_ms + LEGACY_WRITE_GAP_MS;
	last = lj->written_mtime.tv_sec > lj->framework_mtime ?
	    lj->written_mtime.tv_sec : lj->framework_mtime;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (ts.tv_sec <= last) {
		/* The next whole second, and a little past it. */
		if (now + (last - ts.tv_sec) * 1000 +
		    (1000 - ts.tv_nsec / 1000000) + 5 > due)
			due = now + (last - ts.tv_sec) * 1000 +
			    (1000 - ts.tv_nsec / 1000000) + 5;
	}
	return (due);
}

/*
 * Writes window w into the job's shared-memory record only (--legacy-shm),
 * while its file may not be written yet: the poller copies the file only when
 * its mtime changes, and the file then says the same window.
 */
void
legacy_write_record(struct legacy *l, struct legacy_job *lj,
    const struct seg_window *w)
{
	json_t	*o;

	if (!l->a->opts.legacy_shm || (o = legacy_render(lj, w)) == NULL)
		return;
	lj->shm_note[0] = '\0';
	(void)legacy_shm_write(l->a, lj, legacy_dialect(lj->dialect), o, 0,
	    lj->shm_note, sizeof(lj->shm_note));
	json_decref(o);
}
