/*
 * dynprofctl local JOB: this node's segment of a job, read directly with the
 * segment code (no coordinator, no agent needed), for debugging one node.
 */

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "ctl.h"
#include "options.h"
#include "segment.h"

static const char *ctl_slot_states[] = {
	"free", "attached", "armed", "profiling", "done", "skipped", "failed",
	"gone",
};

static const char *ctl_event_kinds[] = {
	"", "attached", "started", "stopped", "skipped", "failed", "detached",
};

static const char *
ctl_slot_state(uint32_t state)
{
	if (state < sizeof(ctl_slot_states) / sizeof(ctl_slot_states[0]))
		return (ctl_slot_states[state]);
	return ("invalid");
}

static const char *
ctl_event_kind(uint32_t kind)
{
	if (kind < sizeof(ctl_event_kinds) / sizeof(ctl_event_kinds[0]))
		return (ctl_event_kinds[kind]);
	return ("invalid");
}

/* A string field of the segment, which may lack its NUL: bounded copy. */
static void
ctl_local_str(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	size_t	 n;

	n = strnlen(src, srclen);
	if (n >= dstlen)
		n = dstlen - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static void
ctl_local_time(char *buf, size_t len, int64_t ns)
{
	struct tm	 tm;
	time_t		 t;

	if (ns <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	t = (time_t)(ns / 1000000000);
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The options of a window as JSON: typed fields set, subdir, framework keys. */
static json_t *
ctl_local_options(const struct seg_options *o)
{
	json_t	*j, *fw;
	char	 buf[SEG_FWOPTS_MAX];
	size_t	 i;
	int64_t	 v;

	j = json_object();
	for (i = 0; i < OPTIONS_N; i++) {
		v = options_get(&options_seg, i, o);
		if (options_table[i].type == OPTIONS_BOOL)
			json_object_set_new(j, options_table[i].name,
			    json_boolean(v));
		else if (v != OPTIONS_UNSET)
			json_object_set_new(j, options_table[i].name,
			    json_integer(v));
	}
	ctl_local_str(buf, sizeof(buf), o->output_subdir,
	    sizeof(o->output_subdir));
	if (buf[0] != '\0')
		json_object_set_new(j, "output_subdir", json_string(buf));
	ctl_local_str(buf, sizeof(buf), o->fwopts, sizeof(o->fwopts));
	if (buf[0] != '\0') {
		fw = json_loads(buf, JSON_DECODE_ANY, NULL);
		if (fw == NULL)
			fw = json_string(buf);
		json_object_set_new(j, "framework_options", fw);
	}
	return (j);
}

/* The whole segment as one JSON document. */
static json_t *
ctl_local_json(const struct segment *seg, const struct seg_config *cfg)
{
	const struct seg_window	*w;
	struct seg_slot		 s;
	json_t			*doc, *wins, *slots, *o;
	char			 buf[SEG_PATH_MAX], t[32];
	uint32_t		 i, n;
	int32_t			 apid;

	doc = json_object();
	json_object_set_new(doc, "path", json_string(seg->path));
	ctl_local_str(buf, sizeof(buf), seg->job, sizeof(seg->job));
	json_object_set_new(doc, "job", json_string(buf));
	/* Checked at open: the header's own field may have changed since. */
	json_object_set_new(doc, "layout_version", json_integer(SEG_VERSION));
	json_object_set_new(doc, "generation",
	    json_integer((json_int_t)cfg->generation));
	apid = atomic_load(&seg->hdr->agent_pid);
	json_object_set_new(doc, "agent_pid", json_integer(apid));
	json_object_set_new(doc, "agent_alive",
	    json_boolean(apid > 0 && segment_pid_alive(apid)));
	ctl_local_time(t, sizeof(t), seg->hdr->created_ns);
	json_object_set_new(doc, "created", json_string(t));
	json_object_set_new(doc, "nslots", json_integer(seg->nslots));

	wins = json_array();
	n = cfg->nwindows < SEG_MAX_WINDOWS ? cfg->nwindows : SEG_MAX_WINDOWS;
	for (i = 0; i < n; i++) {
		w = &cfg->windows[i];
		o = json_object();
		json_object_set_new(o, "id", json_integer(w->id));
		json_object_set_new(o, "start_step",
		    json_integer(w->start_step));
		json_object_set_new(o, "stop_step", json_integer(w->stop_step));
		/* A time window: its start as this node's agent wrote it (on
		 * this node's clock), and its length. */
		if (w->start_ns != 0) {
			clock_rfc3339(w->start_unix_ns, t, sizeof(t));
			json_object_set_new(o, "at", w->start_unix_ns > 0 ?
			    json_string(t) : json_null());
			json_object_set_new(o, "duration_ms", json_integer(
			    (w->stop_ns - w->start_ns) / 1000000));
		}
		ctl_local_str(buf, sizeof(buf), w->ranks, sizeof(w->ranks));
		json_object_set_new(o, "ranks", json_string(buf));
		json_object_set_new(o, "cancelled",
		    json_boolean(w->flags & SEG_WINDOW_CANCELLED));
		json_object_set_new(o, "options",
		    ctl_local_options(&w->options));
		json_array_append_new(wins, o);
	}
	json_object_set_new(doc, "windows", wins);

	slots = json_array();
	for (i = 0; i < seg->nslots; i++) {
		if (segment_slot_read(seg, (int)i, &s) != SEG_OK) {
			o = json_object();
			json_object_set_new(o, "slot", json_integer(i));
			json_object_set_new(o, "error", json_string(
			    segment_strerror(SEG_ETORN)));
			json_array_append_new(slots, o);
			continue;
		}
		if (atomic_load(&s.pid) == 0 && s.state == SEG_RANK_FREE)
			continue;
		o = json_object();
		json_object_set_new(o, "slot", json_integer(i));
		json_object_set_new(o, "pid",
		    json_integer(atomic_load(&s.pid)));
		json_object_set_new(o, "alive", json_boolean(
		    atomic_load(&s.pid) > 0 &&
		    segment_pid_alive(atomic_load(&s.pid))));
		json_object_set_new(o, "rank", json_integer(s.rank));
		json_object_set_new(o, "step",
		    json_integer(atomic_load(&s.step)));
		json_object_set_new(o, "state",
		    json_string(ctl_slot_state(s.state)));
		json_object_set_new(o, "window", json_integer(s.window_id));
		json_object_set_new(o, "start_step",
		    json_integer(s.start_step));
		json_object_set_new(o, "stop_step", json_integer(s.stop_step));
		json_object_set_new(o, "last_event",
		    json_string(ctl_event_kind(s.last_event)));
		json_object_set_new(o, "event_step",
		    json_integer(s.event_step));
		ctl_local_time(t, sizeof(t), s.event_time_ns);
		json_object_set_new(o, "event_time", json_string(t));
		json_object_set_new(o, "generation",
		    json_integer((json_int_t)s.generation));
		json_object_set_new(o, "output_dir", json_string(s.output_dir));
		json_object_set_new(o, "error", json_string(s.error));
		json_array_append_new(slots, o);
	}
	json_object_set_new(doc, "slots", slots);
	return (doc);
}

/* Options as "key=value ..." for the windows table. */
static void
ctl_local_options_text(char *buf, size_t len, json_t *opts)
{
	const char	*key;
	json_t		*v;
	char		*s;
	size_t		 off = 0;

	buf[0] = '\0';
	json_object_foreach(opts, key, v) {
		if (off >= len)
			break;
		s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		off += snprintf(buf + off, len - off, "%s%s=%s",
		    off > 0 ? " " : "", key, s != NULL ? s : "?");
		free(s);
	}
}

/* Prints the document of ctl_local_json for a person. */
static void
ctl_local_print(FILE *f, json_t *doc)
{
	struct ctl_table	 t;
	json_t			*w, *s;
	const char		*row[CTL_TABLE_COLS];
	char			 id[16], steps[48], opts[2048], slot[16];
	char			 pid[16], rank[16], step[24], win[16];
	char			 agent[64];
	size_t			 i, used;
	int64_t			 apid;

	apid = ctl_json_int(doc, "agent_pid", 0);
	if (apid > 0)
		snprintf(agent, sizeof(agent), "%lld (%s)", (long long)apid,
		    json_is_true(json_object_get(doc, "agent_alive")) ?
		    "alive" : "not running");
	else
		snprintf(agent, sizeof(agent), "none");
	used = json_array_size(json_object_get(doc, "slots"));
	fprintf(f, "segment %s\n", ctl_json_str(doc, "path", "?"));
	fprintf(f, "job %s, layout version %lld, generation %lld, agent pid "
	    "%s, created %s, %zu of %lld slots used\n",
	    ctl_json_str(doc, "job", "?"),
	    (long long)ctl_json_int(doc, "layout_version", 0),
	    (long long)ctl_json_int(doc, "generation", 0), agent,
	    ctl_json_str(doc, "created", "-"), used,
	    (long long)ctl_json_int(doc, "nslots", 0));

	w = json_object_get(doc, "windows");
	if (json_array_size(w) == 0)
		fprintf(f, "\nwindows: none\n");
	else {
		fprintf(f, "\nwindows:\n");
		ctl_table_head(&t, "ID", "WHEN", "RANKS", "CANCELLED",
		    "OPTIONS", NULL);
		json_array_foreach(w, i, s) {
			ctl_cell_int(id, sizeof(id), s, "id", INT64_MIN);
			ctl_window_when(steps, sizeof(steps), s);
			ctl_local_options_text(opts, sizeof(opts),
			    json_object_get(s, "options"));
			row[0] = id;
			row[1] = steps;
			row[2] = ctl_json_str(s, "ranks", "");
			if (*row[2] == '\0')
				row[2] = "all";
			row[3] = json_is_true(json_object_get(s, "cancelled")) ?
			    "yes" : "no";
			row[4] = opts;
			ctl_table_add(&t, row);
		}
		ctl_table_print(f, &t, "  ");
	}

	if (used == 0) {
		fprintf(f, "\nslots: none used\n");
		return;
	}
	fprintf(f, "\nslots:\n");
	ctl_table_head(&t, "SLOT", "PID", "ALIVE", "RANK", "STEP", "STATE",
	    "WINDOW", "LAST_EVENT", "OUTPUT", "ERROR", NULL);
	json_array_foreach(json_object_get(doc, "slots"), i, s) {
		ctl_cell_int(slot, sizeof(slot), s, "slot", INT64_MIN);
		ctl_cell_int(pid, sizeof(pid), s, "pid", INT64_MIN);
		ctl_cell_int(rank, sizeof(rank), s, "rank", INT64_MIN);
		ctl_cell_int(step, sizeof(step), s, "step", 0);
		ctl_cell_int(win, sizeof(win), s, "window", 1);
		row[0] = slot;
		if (json_object_get(s, "pid") == NULL) {
			/* A slot that kept changing while read. */
			row[1] = row[2] = row[3] = row[4] = row[5] = NULL;
			row[6] = row[7] = row[8] = NULL;
			row[9] = ctl_json_str(s, "error", NULL);
			ctl_table_add(&t, row);
			continue;
		}
		row[1] = pid;
		row[2] = json_is_true(json_object_get(s, "alive")) ? "yes" :
		    "no";
		row[3] = rank;
		row[4] = step;
		row[5] = ctl_json_str(s, "state", NULL);
		row[6] = win;
		row[7] = ctl_json_str(s, "last_event", NULL);
		row[8] = ctl_json_str(s, "output_dir", NULL);
		row[9] = ctl_json_str(s, "error", NULL);
		ctl_table_add(&t, row);
	}
	ctl_table_print(f, &t, "  ");
}

/*
 * Opens the segment of job in dir read-only: uid's (SEG_NOUID: this user's,
 * else, when it has none, the one of the directory's owner, whose segments
 * are in dir itself when nobody else may write it).
 */
static int
ctl_local_open(struct segment *seg, const char *dir, uid_t uid,
    const char *job)
{
	struct stat	 st;
	int		 rc;

	if (uid != SEG_NOUID)
		return (segment_open_uid(seg, dir, uid, job, SEG_RDONLY, 0,
		    SEG_NOUID));
	rc = segment_open_uid(seg, dir, geteuid(), job, SEG_RDONLY, 0,
	    SEG_NOUID);
	if (rc != SEG_ENOENT || stat(dir != NULL ? dir : SEG_DEFAULT_DIR,
	    &st) == -1 || st.st_uid == geteuid())
		return (rc);
	return (segment_open_uid(seg, dir, st.st_uid, job, SEG_RDONLY, 0,
	    SEG_NOUID));
}

/* dynprofctl local JOB [--shm-dir DIR] [--uid UID] */
int
ctl_cmd_local(struct ctl *ctl, int argc, char **argv)
{
	struct segment		 seg;
	struct seg_config	*cfg;
	const char		*job = NULL, *dir = NULL, *why, *v;
	json_t			*doc;
	char			*text, *end;
	unsigned long		 n;
	uid_t			 uid = SEG_NOUID;
	int			 i, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--uid") == 0 ||
		    strncmp(argv[i], "--uid=", 6) == 0) {
			if (argv[i][5] == '=')
				v = argv[i] + 6;
			else if (i + 1 < argc)
				v = argv[++i];
			else
				v = "";
			errno = 0;
			n = strtoul(v, &end, 10);
			if (*v < '0' || *v > '9' || *end != '\0' || errno != 0 ||
			    n >= (unsigned long)SEG_NOUID) {
				ctl_errx(ctl, "local: --uid needs a uid");
				return (CTL_USAGE);
			}
			uid = (uid_t)n;
		} else if (strcmp(argv[i], "--shm-dir") == 0) {
			if (i + 1 >= argc) {
				ctl_errx(ctl, "local: --shm-dir needs a value");
				return (CTL_USAGE);
			}
			dir = argv[++i];
		} else if (strncmp(argv[i], "--shm-dir=", 10) == 0)
			dir = argv[i] + 10;
		else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			ctl_errx(ctl, "local: unknown flag %s", argv[i]);
			return (CTL_USAGE);
		} else if (job == NULL)
			job = argv[i];
		else {
			ctl_errx(ctl, "local: unexpected argument %s", argv[i]);
			return (CTL_USAGE);
		}
	}
	if (job == NULL) {
		ctl_errx(ctl, "local: missing JOB");
		return (CTL_USAGE);
	}
	if (!jobid_valid(job, &why)) {
		ctl_errx(ctl, "invalid job id \"%s\": %s", job, why);
		return (CTL_EXIT_REFUSED);
	}
	if (dir == NULL && (dir = getenv("DYNPROF_SHM_DIR")) != NULL &&
	    *dir == '\0')
		dir = NULL;

	/* Read-only: an operator who may read a segment but not write it. */
	rc = ctl_local_open(&seg, dir, uid, job);
	if (rc == SEG_ENOENT) {
		ctl_errx(ctl, "local: no segment for job %s in %s (no rank of "
		    "the job%s is attached on this node)", job,
		    dir != NULL ? dir : SEG_DEFAULT_DIR, uid != SEG_NOUID ?
		    " of that uid" : " of this user");
		return (CTL_EXIT_REFUSED);
	}
	if (rc == SEG_EJOB) {
		ctl_errx(ctl, "local: %s belongs to another job", seg.path);
		return (CTL_EXIT_REFUSED);
	}
	if (rc == SEG_ESYS) {
		ctl_errx(ctl, "local: %s: %s", seg.path, strerror(errno));
		return (CTL_EXIT_REFUSED);
	}
	if (rc == SEG_EOWNER) {
		ctl_errx(ctl, "local: %s: a directory of another user's, or "
		    "writable by others", seg.path);
		return (CTL_EXIT_REFUSED);
	}
	if (rc != SEG_OK) {
		ctl_errx(ctl, "local: %s: %s", seg.path, segment_strerror(rc));
		return (CTL_EXIT_REFUSED);
	}
	/* The config is big: keep it off the stack. */
	if ((cfg = malloc(sizeof(*cfg))) == NULL) {
		segment_close(&seg);
		ctl_errx(ctl, "local: out of memory");
		return (CTL_EXIT_REFUSED);
	}
	rc = segment_read_config(&seg, cfg, NULL);
	if (rc != SEG_OK) {
		ctl_errx(ctl, "local: %s: %s", seg.path, segment_strerror(rc));
		free(cfg);
		segment_close(&seg);
		return (CTL_EXIT_REFUSED);
	}
	doc = ctl_local_json(&seg, cfg);
	free(cfg);
	segment_close(&seg);
	if (doc == NULL) {
		ctl_errx(ctl, "local: out of memory");
		return (CTL_EXIT_REFUSED);
	}
	if (ctl->json) {
		text = json_dumps(doc, JSON_INDENT(2));
		if (text != NULL)
			fprintf(ctl->out, "%s\n", text);
		free(text);
	} else
		ctl_local_print(ctl->out, doc);
	json_decref(doc);
	return (CTL_EXIT_OK);
}
