/*
 * dynprofctl trace: schedule a window, print its resolved steps, and with
 * --wait follow the targeted ranks until each has stopped, skipped or failed.
 */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "options.h"
#include "when.h"

#define CTL_POLL_MS	500	/* --wait without an event stream: how often */
#define CTL_REFRESH_MS	200	/* --wait: the summary at most this often */
#define CTL_PRINT_MS	1000	/* plain progress lines at most this often */
#define CTL_REPORT_RANKS 5	/* --wait: ranks named as examples of each
				   way of not finishing */

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/*
 * Adds "KEY=VALUE" to the options object: MindSpore's integer and boolean
 * fields typed (a wrong value is an error), other keys a JSON value if VALUE
 * parses as one, else a string.  Returns 0, or -1 with the reason in err.
 */
int
ctl_option_parse(json_t *options, const char *arg, char *err, size_t errlen)
{
	const struct options_row *r;
	const char	*eq, *value;
	char		 key[128];
	json_t		*v;
	int64_t		 n;
	size_t		 klen;
	int		 b;

	eq = strchr(arg, '=');
	if (eq == NULL) {
		snprintf(err, errlen, "--option %s: expected KEY=VALUE", arg);
		return (-1);
	}
	klen = (size_t)(eq - arg);
	if (klen == 0 || klen >= sizeof(key)) {
		snprintf(err, errlen, "--option %s: %s key", arg,
		    klen == 0 ? "empty" : "overlong");
		return (-1);
	}
	memcpy(key, arg, klen);
	key[klen] = '\0';
	value = eq + 1;
	if (json_object_get(options, key) != NULL) {
		snprintf(err, errlen, "--option %s given twice", key);
		return (-1);
	}
	if (strcmp(key, "start_step") == 0 || strcmp(key, "stop_step") == 0) {
		snprintf(err, errlen, "--option %s: give the steps with "
		    "--start/--in and --stop/--steps", key);
		return (-1);
	}
	if (strcmp(key, "output_subdir") == 0) {
		snprintf(err, errlen, "--option output_subdir: use "
		    "--output-subdir");
		return (-1);
	}
	r = options_find(OPTIONS_DYNPROF, key);
	if (r != NULL && r->type == OPTIONS_INT) {
		if (ctl_parse_int64(value, -1, INT32_MAX, &n) == -1) {
			snprintf(err, errlen, "--option %s=%s: %s takes an "
			    "integer (-1 for unset)", key, value, key);
			return (-1);
		}
		v = json_integer(n);
	} else if (r != NULL) {
		if (options_bool_text(value, &b) == -1) {
			snprintf(err, errlen, "--option %s=%s: %s takes true "
			    "or false", key, value, key);
			return (-1);
		}
		v = json_boolean(b);
	} else {
		v = json_loads(value, JSON_DECODE_ANY, NULL);
		if (v == NULL)
			v = json_string(value);
		if (v == NULL) {
			snprintf(err, errlen, "--option %s: the value is not "
			    "valid UTF-8", key);
			return (-1);
		}
	}
	json_object_set_new(options, key, v);
	return (0);
}

/* Frees what ctl_trace_parse allocated. */
void
ctl_trace_args_free(struct ctl_trace_args *a)
{
	json_decref(a->options);
	a->options = NULL;
}

enum ctl_trace_flag {
	CTL_F_START, CTL_F_IN, CTL_F_STEPS, CTL_F_STOP, CTL_F_ROUNDUP,
	CTL_F_RANKS, CTL_F_OPTION, CTL_F_SUBDIR, CTL_F_TIMEOUT,
	CTL_F_SELECT, CTL_F_NODES, CTL_F_ONE_PER, CTL_F_GROUP_OF,
	CTL_F_AT, CTL_F_FOR, CTL_F_TOLERANCE,
};

/* The window's keys of the flags naming ranks by what they are. */
static const char *ctl_trace_named_keys[] = { "select", "nodes", "one_per" };

static const struct {
	const char		*name;
	enum ctl_trace_flag	 flag;
} ctl_trace_flags[] = {
	{ "--start", CTL_F_START },
	{ "--in", CTL_F_IN },
	{ "--steps", CTL_F_STEPS },
	{ "--stop", CTL_F_STOP },
	{ "--roundup", CTL_F_ROUNDUP },
	{ "--ranks", CTL_F_RANKS },
	{ "--option", CTL_F_OPTION },
	{ "--output-subdir", CTL_F_SUBDIR },
	{ "--timeout", CTL_F_TIMEOUT },
	{ "--select", CTL_F_SELECT },
	{ "--nodes", CTL_F_NODES },
	{ "--one-per", CTL_F_ONE_PER },
	{ "--group-of", CTL_F_GROUP_OF },
	{ "--at", CTL_F_AT },
	{ "--for", CTL_F_FOR },
	{ "--duration", CTL_F_FOR },
	{ "--tolerance", CTL_F_TOLERANCE },
};

/* A step count flag: given once, an integer >= min. */
static int
ctl_trace_number(const char *flag, const char *v, int64_t min, int *have,
    int64_t *out, char *err, size_t errlen)
{
	if (*have) {
		snprintf(err, errlen, "%s given twice", flag);
		return (-1);
	}
	if (ctl_parse_int64(v, min, INT64_MAX / 2, out) == -1) {
		snprintf(err, errlen, "%s %s: expected an integer >= %lld",
		    flag, v, (long long)min);
		return (-1);
	}
	*have = 1;
	return (0);
}

/* Takes one flag and its value into a; 0, or -1 with the reason. */
static int
ctl_trace_flag(struct ctl_trace_args *a, const char *name,
    enum ctl_trace_flag flag, const char *v, char *err, size_t errlen)
{
	struct rank_set	 rs;
	const char	*why;
	char		*end, num[16];
	int64_t		 ms;

	switch (flag) {
	case CTL_F_START:
		return (ctl_trace_number(name, v, 0, &a->have_start, &a->start,
		    err, errlen));
	case CTL_F_IN:
		return (ctl_trace_number(name, v, 0, &a->have_in, &a->in, err,
		    errlen));
	case CTL_F_STEPS:
		return (ctl_trace_number(name, v, 1, &a->have_steps, &a->steps,
		    err, errlen));
	case CTL_F_STOP:
		return (ctl_trace_number(name, v, 0, &a->have_stop, &a->stop,
		    err, errlen));
	case CTL_F_ROUNDUP:
		return (ctl_trace_number(name, v, 1, &a->have_roundup,
		    &a->roundup, err, errlen));
	case CTL_F_RANKS:
		if (a->ranks != NULL) {
			snprintf(err, errlen, "--ranks given twice");
			return (-1);
		}
		if (*v == '\0' || ranks_parse(v, &rs, &why) == -1) {
			snprintf(err, errlen, "--ranks %s: %s", v,
			    *v == '\0' ? "empty rank list" : why);
			return (-1);
		}
		a->ranks = v;
		return (0);
	case CTL_F_SELECT:
	case CTL_F_NODES:
	case CTL_F_ONE_PER:
		/* What they name is the coordinator's to judge. */
		if (a->named[flag - CTL_F_SELECT] != NULL || *v == '\0') {
			snprintf(err, errlen, "%s %s", name,
			    *v == '\0' ? "is empty" : "given twice");
			return (-1);
		}
		a->named[flag - CTL_F_SELECT] = v;
		return (0);
	case CTL_F_GROUP_OF:
		if (a->have_group || (end = strchr(v, ':')) == NULL ||
		    end[1] == '\0') {
			snprintf(err, errlen, "%s %s: expected RANK:KEY, such "
			    "as 13:tp (rank 13's group, its tp varying)", name,
			    v);
			return (-1);
		}
		snprintf(num, sizeof(num), "%.*s", (int)(end - v), v);
		if ((size_t)(end - v) >= sizeof(num) ||
		    ctl_parse_int64(num, 0, INT32_MAX, &a->group_rank) == -1) {
			snprintf(err, errlen, "%s: rank %s: expected a rank "
			    "number", name, num);
			return (-1);
		}
		a->group_vary = end + 1;
		a->have_group = 1;
		return (0);
	case CTL_F_AT:
		/* Checked here for its form; the coordinator judges it
		 * ("+30s" is from its clock). */
		if (a->at != NULL || when_parse_at(v, 0, &ms, &why) == -1) {
			snprintf(err, errlen, "%s %s: %s", name, v, a->at !=
			    NULL ? "given twice" : why);
			return (-1);
		}
		a->at = v;
		return (0);
	case CTL_F_FOR:
	case CTL_F_TOLERANCE:
		if ((flag == CTL_F_FOR ? a->have_for : a->have_tolerance) ||
		    when_parse_duration_ms(v, &ms, &why) == -1) {
			snprintf(err, errlen, "%s %s: %s", name, v,
			    (flag == CTL_F_FOR ? a->have_for :
			    a->have_tolerance) ? "given twice" : why);
			return (-1);
		}
		if (flag == CTL_F_FOR) {
			a->have_for = 1;
			a->for_ms = ms;
		} else {
			a->have_tolerance = 1;
			a->tolerance_ms = ms;
		}
		return (0);
	case CTL_F_OPTION:
		return (ctl_option_parse(a->options, v, err, errlen));
	case CTL_F_SUBDIR:
		if (a->output_subdir != NULL) {
			snprintf(err, errlen, "--output-subdir given twice");
			return (-1);
		}
		if (!subdir_valid(v, &why)) {
			snprintf(err, errlen, "--output-subdir %s: %s", v, why);
			return (-1);
		}
		a->output_subdir = v;
		return (0);
	case CTL_F_TIMEOUT:
		errno = 0;
		a->timeout = strtod(v, &end);
		if (*v == '\0' || *end != '\0' || errno != 0 ||
		    !isfinite(a->timeout) || a->timeout <= 0 ||
		    a->timeout > 1e7) {
			snprintf(err, errlen, "--timeout %s: expected a number "
			    "of seconds > 0", v);
			return (-1);
		}
		a->have_timeout = 1;
		return (0);
	}
	return (-1);
}

/*
 * Parses the arguments of trace (argv[0] is "trace"): flags as "--flag V" or
 * "--flag=V", in any order around JOB.  Returns 0 with a filled (caller frees
 * with ctl_trace_args_free), or -1 with the reason.
 */
int
ctl_trace_parse(int argc, char **argv, struct ctl_trace_args *a, char *err,
    size_t errlen)
{
	const char	*v, *why;
	size_t		 f, len;
	int		 i;

	memset(a, 0, sizeof(*a));
	if ((a->options = json_object()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return (-1);
	}
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--wait") == 0) {
			a->wait = 1;
			continue;
		}
		if (strcmp(argv[i], "--new") == 0) {
			a->new = 1;
			continue;
		}
		if (strcmp(argv[i], "--force") == 0) {
			a->force = 1;
			continue;
		}
		if (strcmp(argv[i], "--no-collect") == 0) {
			a->no_collect = 1;
			continue;
		}
		if (argv[i][0] != '-' || argv[i][1] == '\0') {
			if (a->job != NULL) {
				snprintf(err, errlen, "unexpected argument %s",
				    argv[i]);
				goto fail;
			}
			a->job = argv[i];
			continue;
		}
		len = strcspn(argv[i], "=");
		for (f = 0; f < nitems(ctl_trace_flags); f++) {
			if (strlen(ctl_trace_flags[f].name) == len &&
			    strncmp(argv[i], ctl_trace_flags[f].name, len) == 0)
				break;
		}
		if (f == nitems(ctl_trace_flags)) {
			snprintf(err, errlen, "unknown flag %s", argv[i]);
			goto fail;
		}
		if (argv[i][len] == '=')
			v = argv[i] + len + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else {
			snprintf(err, errlen, "%s needs a value", argv[i]);
			goto fail;
		}
		if (ctl_trace_flag(a, ctl_trace_flags[f].name,
		    ctl_trace_flags[f].flag, v, err, errlen) == -1)
			goto fail;
	}

	if (a->job == NULL) {
		snprintf(err, errlen, "missing JOB");
		goto fail;
	}
	if (!jobid_valid(a->job, &why)) {
		snprintf(err, errlen, "invalid job id \"%s\": %s", a->job, why);
		goto fail;
	}
	if (a->at != NULL) {
		if (a->have_start || a->have_in || a->have_stop ||
		    a->have_steps || a->have_roundup || a->force) {
			snprintf(err, errlen, "--at (a time window) takes no "
			    "steps: no --start, --in, --stop, --steps, "
			    "--roundup or --force");
			goto fail;
		}
		if (!a->have_for) {
			snprintf(err, errlen, "say how long: --for 10s (or "
			    "--duration)");
			goto fail;
		}
		if (a->have_timeout && !a->wait) {
			snprintf(err, errlen, "--timeout goes with --wait");
			goto fail;
		}
		return (0);
	}
	if (a->have_for || a->have_tolerance) {
		snprintf(err, errlen, "--for and --tolerance go with --at");
		goto fail;
	}
	if (a->have_start == a->have_in) {
		snprintf(err, errlen, a->have_start ? "--start and --in "
		    "exclude each other" : "say when: --start N or --in N");
		goto fail;
	}
	if (a->have_in && a->in == 0 && !a->have_roundup) {
		snprintf(err, errlen, "--in 0 would start at the step the "
		    "ranks are in, which they have begun already: --in 1 is "
		    "the soonest (--in 0 goes with --roundup R: the next "
		    "multiple of R)");
		goto fail;
	}
	if (a->have_steps == a->have_stop) {
		snprintf(err, errlen, a->have_steps ? "--steps and --stop "
		    "exclude each other" : "say how long: --steps M or "
		    "--stop N");
		goto fail;
	}
	if (a->have_start && a->have_stop && a->stop < a->start) {
		snprintf(err, errlen, "--stop %lld is before --start %lld",
		    (long long)a->stop, (long long)a->start);
		goto fail;
	}
	if (a->have_timeout && !a->wait) {
		snprintf(err, errlen, "--timeout goes with --wait");
		goto fail;
	}
	return (0);

fail:
	ctl_trace_args_free(a);
	return (-1);
}

/* The body of POST /v1/jobs/{job}/windows for these arguments. */
json_t *
ctl_trace_body(const struct ctl_trace_args *a)
{
	json_t	*b;
	int	 i;

	if ((b = json_object()) == NULL)
		return (NULL);
	if (a->at != NULL) {
		json_object_set_new(b, "at", json_string(a->at));
		json_object_set_new(b, "duration_ms", json_integer(a->for_ms));
	}
	if (a->have_tolerance)
		json_object_set_new(b, "tolerance_ms",
		    json_integer(a->tolerance_ms));
	if (a->have_start)
		json_object_set_new(b, "start_step", json_integer(a->start));
	if (a->have_in)
		json_object_set_new(b, "in_steps", json_integer(a->in));
	if (a->have_stop)
		json_object_set_new(b, "stop_step", json_integer(a->stop));
	if (a->have_steps)
		json_object_set_new(b, "steps", json_integer(a->steps));
	if (a->have_roundup)
		json_object_set_new(b, "roundup", json_integer(a->roundup));
	if (a->ranks != NULL)
		json_object_set_new(b, "ranks", json_string(a->ranks));
	for (i = 0; i < 3; i++)
		if (a->named[i] != NULL)
			json_object_set_new(b, ctl_trace_named_keys[i],
			    json_string(a->named[i]));
	if (a->have_group)
		json_object_set_new(b, "group_of", json_pack("{s:I,s:s}",
		    "rank", (json_int_t)a->group_rank, "vary", a->group_vary));
	if (json_object_size(a->options) > 0)
		json_object_set(b, "options", a->options);
	if (a->output_subdir != NULL)
		json_object_set_new(b, "output_subdir",
		    json_string(a->output_subdir));
	if (a->force)
		json_object_set_new(b, "force", json_true());
	if (a->no_collect)
		json_object_set_new(b, "collect", json_false());
	return (b);
}

/*
 * Reads how the ranks the window targets are doing from the job's summary
 * (its windows' rank_counts, judged by the coordinator as it judges each
 * rank's outcome, GET .../ranks?outcome=W).  A rank is finished once it
 * stopped, skipped, failed or is gone; once the window is cancelled or done,
 * a rank that never acted on it is finished too (missed): it never will.
 * Returns 1 if the window is in the document, 0 if not.
 */
int
ctl_progress_count(json_t *doc, uint32_t window, struct ctl_progress *p)
{
	json_t		*w, *rc;
	size_t		 i;

	memset(p, 0, sizeof(*p));
	p->max_step = ctl_json_int(json_object_get(doc, "progress"),
	    "max_step", -1);
	p->nodes_lost = (int)ctl_json_int(json_object_get(doc, "node_counts"),
	    "lost", 0);
	p->nodes_left = (int)ctl_json_int(json_object_get(doc, "node_counts"),
	    "left", 0);
	p->legacy = json_object_get(doc, "legacy") != NULL;
	json_array_foreach(json_object_get(doc, "windows"), i, w) {
		if (ctl_json_int(w, "id", 0) != window)
			continue;
		if (strcmp(ctl_json_str(w, "state", ""), "cancelled") == 0)
			p->window_cancelled = 1;
		if (strcmp(ctl_json_str(w, "state", ""), "done") == 0)
			p->window_done = 1;
		snprintf(p->created, sizeof(p->created), "%s",
		    ctl_json_str(w, "created", ""));
		snprintf(p->ended, sizeof(p->ended), "%s",
		    ctl_json_str(w, "ended", ""));
		rc = json_object_get(w, "rank_counts");
		p->targeted = (int)ctl_json_int(rc, "targeted", 0);
		p->started = (int)ctl_json_int(rc, "started", 0);
		p->stopped = (int)ctl_json_int(rc, "stopped", 0);
		p->skipped = (int)ctl_json_int(rc, "skipped", 0);
		p->failed = (int)ctl_json_int(rc, "failed", 0);
		p->observed = (int)ctl_json_int(rc, "observed", 0);
		p->observed_complete = (int)ctl_json_int(rc,
		    "observed_complete", 0);
		p->gone = (int)ctl_json_int(rc, "gone", 0);
		p->missed = (int)ctl_json_int(rc, "missed", 0);
		p->finished = (int)ctl_json_int(rc, "finished", 0);
		return (1);
	}
	return (0);
}

/* One line of progress: "window 3: 12 targeted, 12 started, 8 stopped, ...". */
void
ctl_progress_format(const struct ctl_progress *p, uint32_t window, char *buf,
    size_t len)
{
	int	 n;

	if (p->targeted == 0) {
		n = snprintf(buf, len, "window %u: waiting for targeted ranks "
		    "to report", window);
	} else
		n = snprintf(buf, len, "window %u: %d targeted, %d started, "
		    "%d stopped, %d skipped, %d failed", window, p->targeted,
		    p->started, p->stopped, p->skipped, p->failed);
	/* A legacy job's ranks, seen through their trace files. */
	if (n > 0 && (size_t)n < len && p->observed > 0)
		n += snprintf(buf + n, len - n, ", %d observed, %d observed "
		    "complete", p->observed, p->observed_complete);
	if (n > 0 && (size_t)n < len && p->gone > 0)
		n += snprintf(buf + n, len - n, ", %d gone", p->gone);
	if (n > 0 && (size_t)n < len && p->missed > 0)
		n += snprintf(buf + n, len - n, ", %d missed", p->missed);
	if (n > 0 && (size_t)n < len && p->nodes_lost > 0)
		n += snprintf(buf + n, len - n, ", %d node%s lost",
		    p->nodes_lost, p->nodes_lost == 1 ? "" : "s");
	if (n > 0 && (size_t)n < len && p->nodes_left > 0)
		n += snprintf(buf + n, len - n, ", %d node%s left",
		    p->nodes_left, p->nodes_left == 1 ? "" : "s");
	if (n > 0 && (size_t)n < len && p->window_cancelled)
		n += snprintf(buf + n, len - n, ", window cancelled");
	if (n > 0 && (size_t)n < len && p->max_step >= 0)
		snprintf(buf + n, len - n, " (job at step %lld)",
		    (long long)p->max_step);
}

static void
ctl_sleep_ms(int ms)
{
	struct timespec	 ts;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* What ctl_trace_report() names ranks for. */
struct ctl_report {
	struct ctl		*ctl;
	uint32_t		 window;
	const struct ctl_progress *p;
	int			 named[4];	/* failed, skipped, gone, missed */
};

/* The outcomes ctl_trace_report() names, in the order it counts them. */
static const char *const ctl_report_outcomes[4] = {
	"failed", "skipped", "gone", "missed"
};

/*
 * Names the targeted ranks of one page that skipped, failed, went away or
 * missed the window, as the coordinator judged each (its "outcome").
 */
static int
ctl_trace_report_page(void *arg, json_t *page)
{
	struct ctl_report	*rp = arg;
	struct ctl		*ctl = rp->ctl;
	json_t			*r;
	size_t			 i;
	int64_t			 rank;
	const char		*err, *outcome;
	int			 kind;

	json_array_foreach(json_object_get(page, "ranks"), i, r) {
		outcome = ctl_json_str(r, "outcome", "");
		for (kind = 0; kind < 4 &&
		    strcmp(outcome, ctl_report_outcomes[kind]) != 0; kind++)
			;
		if (kind == 4)
			continue;
		rank = ctl_json_int(r, "rank", -1);
		err = ctl_json_str(r, "error", "");
		/* A few of each kind: the counts say how many in all. */
		if (rp->named[kind]++ >= CTL_REPORT_RANKS)
			continue;
		if (kind == 0)
			ctl_errx(ctl, "rank %lld on %s failed%s%s",
			    (long long)rank, ctl_json_str(r, "node", "?"),
			    *err != '\0' ? ": " : "", err);
		else if (kind == 1)
			ctl_errx(ctl, "rank %lld on %s skipped window %u (its "
			    "start was behind the rank)", (long long)rank,
			    ctl_json_str(r, "node", "?"), rp->window);
		else if (kind == 2)
			ctl_errx(ctl, "rank %lld on %s is gone",
			    (long long)rank, ctl_json_str(r, "node", "?"));
		else
			ctl_errx(ctl, "rank %lld on %s did not run window %u: "
			    "it was %s before the rank acted on it",
			    (long long)rank, ctl_json_str(r, "node", "?"),
			    rp->window, rp->p->window_cancelled ? "cancelled" :
			    "finished");
	}
	return (0);
}

/*
 * Names the targeted ranks that skipped, failed or went away, reading the
 * job's ranks with their outcome of the window page by page (only when the
 * counts say there are some).
 */
static void
ctl_trace_report(struct ctl *ctl, const char *job, uint32_t window,
    const struct ctl_progress *p)
{
	struct ctl_report	 rp = { ctl, window, p, { 0, 0, 0, 0 } };
	const int		 n[4] = { p->failed, p->skipped, p->gone,
				    p->missed };
	const char		*what[4] = { "failed", "skipped", "gone",
				    "did not run it" };
	char			 line[256], query[32];
	int			 k, len = 0;

	if (p->failed + p->skipped + p->gone + p->missed == 0)
		return;
	snprintf(query, sizeof(query), "outcome=%u", window);
	for (k = 0; k < 4 && len < (int)sizeof(line); k++)
		if (n[k] > 0)
			len += snprintf(line + len, sizeof(line) - len, "%s%d "
			    "%s", len > 0 ? ", " : "", n[k], what[k]);
	ctl_errx(ctl, "window %u: of %d targeted rank%s, %s%s", window,
	    p->targeted, p->targeted == 1 ? "" : "s", line,
	    n[0] + n[1] + n[2] + n[3] > CTL_REPORT_RANKS ? "; some of them:" :
	    ":");
	ctl_ranks_pages(ctl, job, query, ctl_trace_report_page, &rp);
	for (k = 0; k < 4; k++)
		if (rp.named[k] > CTL_REPORT_RANKS)
			ctl_errx(ctl, "and %d more %s (dynprofctl status %s "
			    "lists every rank)", rp.named[k] - CTL_REPORT_RANKS,
			    what[k], job);
}

/* The targeted ranks not finished with a window, named at a timeout. */
struct ctl_pending {
	char				 names[512];
	size_t				 off;
	int				 n;
};

static int
ctl_trace_pending_page(void *arg, json_t *page)
{
	struct ctl_pending	*pd = arg;
	json_t			*r;
	size_t			 i;
	const char		*outcome;

	/* Not finished: at the window, or not yet (the coordinator's). */
	json_array_foreach(json_object_get(page, "ranks"), i, r) {
		outcome = ctl_json_str(r, "outcome", "");
		if (strcmp(outcome, "started") != 0 &&
		    strcmp(outcome, "observed") != 0 &&
		    strcmp(outcome, "pending") != 0)
			continue;
		if (pd->n++ < CTL_REPORT_RANKS && pd->off < sizeof(pd->names))
			pd->off += (size_t)snprintf(pd->names + pd->off,
			    sizeof(pd->names) - pd->off, "%srank %lld on %s "
			    "(%s, step %lld)", pd->n > 1 ? ", " : "",
			    (long long)ctl_json_int(r, "rank", -1),
			    ctl_json_str(r, "node", "?"),
			    ctl_json_str(r, "state", "?"),
			    (long long)ctl_json_int(r, "step", -1));
	}
	return (0);
}

/*
 * At a timeout: names the targeted ranks that have not finished the window
 * (a few; how many in all), with their node, state and step.
 */
static void
ctl_trace_pending(struct ctl *ctl, const char *job, uint32_t window)
{
	struct ctl_pending	 pd;
	char			 query[32];

	memset(&pd, 0, sizeof(pd));
	snprintf(query, sizeof(query), "outcome=%u", window);
	if (ctl_ranks_pages(ctl, job, query, ctl_trace_pending_page, &pd) !=
	    CTL_EXIT_OK || pd.n == 0)
		return;
	ctl_errx(ctl, "window %u: %d targeted rank%s not finished: %s%s",
	    window, pd.n, pd.n == 1 ? "" : "s", pd.names,
	    pd.n > CTL_REPORT_RANKS ? ", ..." : "");
}

/* What --wait looks for in the event stream. */
struct ctl_wait {
	uint32_t	 window;
	int		 seen;		/* an event of the window came */
	int64_t		 since_ms;	/* the last look at the summary */
};

/*
 * A line of the event stream: an event of the window calls for a look at the
 * summary, at once if the last was CTL_REFRESH_MS ago, else at the next
 * heartbeat (or event) after that.
 */
static int
ctl_trace_event(void *arg, json_t *j)
{
	struct ctl_wait	*w = arg;
	const char	*type = ctl_json_str(j, "type", "");

	if ((strcmp(type, "rank") == 0 || strcmp(type, "window") == 0) &&
	    ctl_json_int(j, "window", 0) == w->window)
		w->seen = 1;
	return (w->seen && ctl_now_ms() - w->since_ms >= CTL_REFRESH_MS);
}

/*
 * Waits for something to happen to the window after revision since: the
 * event stream until an event of it (or wait_ms); polling if the coordinator
 * has no event stream.
 */
static void
ctl_trace_pause(struct ctl *ctl, const char *job, uint32_t window,
    uint64_t since, int wait_ms)
{
	struct ctl_follow	*f;
	struct ctl_wait		 w = { window, 0, ctl_now_ms() };

	if (since > 0 && (f = calloc(1, sizeof(*f))) != NULL) {
		f->fn = ctl_trace_event;
		f->arg = &w;
		f->since = since;
		if (ctl_follow_once(ctl, job, f, wait_ms) == CTL_EXIT_OK &&
		    !f->gone) {
			free(f);
			return;
		}
		free(f);
	}
	ctl_sleep_ms(wait_ms < CTL_POLL_MS ? wait_ms : CTL_POLL_MS);
}

/* Removes every suffix suf that ends a name of the list names ("a, b"). */
static void
ctl_trace_unsuffix(char *names, const char *suf)
{
	size_t	 n = strlen(suf);
	char	*p = names, *q;

	while ((q = strstr(p, suf)) != NULL) {
		if (q[n] == '\0' || q[n] == ',') {
			memmove(q, q + n, strlen(q + n) + 1);
			p = q;
		} else
			p = q + 1;
	}
}

/*
 * Says which of the job's nodes are lost or left (GET /v1/nodes) when their
 * number changed from *was to now: their ranks' progress is unknown until they
 * come back.  At most CTL_REPORT_RANKS are named, a node that left (its agent
 * stopped cleanly) said so.
 */
static void
ctl_trace_lost(struct ctl *ctl, const char *job, int *was, int now)
{
	json_t		*doc, *n;
	const char	*state;
	char		 names[512];
	size_t		 i, off = 0;
	int		 k = 0, left = 0;

	if (now == *was)
		return;
	if (now < *was && now == 0) {
		ctl_errx(ctl, "trace: every node of job %s is back", job);
		*was = now;
		return;
	}
	*was = now;
	if (now == 0 || ctl_call(ctl, "GET", "/v1/nodes", NULL, 0, &doc,
	    NULL) != CTL_EXIT_OK)
		return;
	names[0] = '\0';
	json_array_foreach(json_object_get(doc, "nodes"), i, n) {
		state = ctl_json_str(n, "state", "");
		if ((strcmp(state, "lost") != 0 && strcmp(state, "left") != 0) ||
		    json_object_get(json_object_get(n, "jobs"), job) == NULL)
			continue;
		left += strcmp(state, "left") == 0;
		if (k++ < CTL_REPORT_RANKS && off < sizeof(names))
			off += (size_t)snprintf(names + off, sizeof(names) - off,
			    "%s%s%s", k > 1 ? ", " : "", ctl_json_str(n, "node",
			    "?"), strcmp(state, "left") == 0 ? " left" : "");
	}
	json_decref(doc);
	/* All of one kind: the kind said once, not after each name. */
	if (left == k)
		ctl_trace_unsuffix(names, " left");
	ctl_errx(ctl, "trace: %d node%s of job %s %s%s%s%s: the progress of "
	    "%s ranks is unknown until %s back", now, now == 1 ? "" : "s",
	    job, left == 0 ? "lost" : left < k ? "lost or left" : now == 1 ?
	    "left, its agent stopped" : "left, their agents stopped",
	    k > 0 ? " (" : "", names, k > CTL_REPORT_RANKS ? ", ...)" :
	    k > 0 ? ")" : "", now == 1 ? "its" : "their", now == 1 ?
	    "it comes" : "they come");
}

/*
 * Follows the job until every targeted rank is finished with the window: the
 * summary says how they are doing, the event stream when to look again.
 */
static int
ctl_trace_wait(struct ctl *ctl, const char *job, uint32_t window,
    const struct ctl_trace_args *a)
{
	struct ctl_progress	 p;
	struct ctl_response	 res;
	json_t			*doc = NULL;
	char			 path[128], line[512], last[512] = "";
	int64_t			 deadline = 0, last_print = 0, now;
	uint64_t		 since;
	int			 rc, lost = 0;

	memset(&p, 0, sizeof(p));
	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	if (a->have_timeout)
		deadline = ctl_now_ms() + (int64_t)(a->timeout * 1000);
	ctl->quiet = 1;
	for (;;) {
		res.body = NULL;
		/* One slow answer must not outlast --timeout. */
		if (a->have_timeout) {
			now = deadline - ctl_now_ms();
			if (now > CTL_HTTP_TIMEOUT_MS)
				now = CTL_HTTP_TIMEOUT_MS;
			ctl->timeout_ms = now < 100 ? 100 : (int)now;
		}
		rc = ctl_call(ctl, "GET", path, NULL, 0, &doc, &res);
		now = ctl_now_ms();
		since = 0;
		if (rc == CTL_EXIT_REFUSED)
			goto out;
		if (rc != CTL_EXIT_OK) {
			snprintf(line, sizeof(line), "window %u: cannot reach "
			    "the coordinator at %s, retrying", window,
			    ctl->url);
		} else {
			ctl_progress_count(doc, window, &p);
			ctl_progress_format(&p, window, line, sizeof(line));
			ctl_trace_lost(ctl, job, &lost, p.nodes_lost +
			    p.nodes_left);
			/* A legacy rank is known once its trace is seen:
			 * those known finished, another may still run it
			 * until the agents say they are done with it. */
			if (p.targeted > 0 && p.finished == p.targeted &&
			    (!p.legacy || p.window_done ||
			    p.window_cancelled))
				break;
			since = (uint64_t)ctl_json_int(doc, "revision", 0);
		}
		if (!ctl->json && strcmp(line, last) != 0) {
			if (ctl->tty) {
				fprintf(ctl->out, "\r%s\033[K", line);
				fflush(ctl->out);
				ctl->line_open = 1;
				snprintf(last, sizeof(last), "%s", line);
			} else if (now - last_print >= CTL_PRINT_MS) {
				fprintf(ctl->out, "%s\n", line);
				fflush(ctl->out);
				last_print = now;
				snprintf(last, sizeof(last), "%s", line);
			}
		}
		json_decref(doc);
		doc = NULL;
		ctl_http_free(&res);
		if (a->have_timeout && now >= deadline) {
			ctl_errx(ctl, "timed out after %g s: %s", a->timeout,
			    line);
			if (p.targeted > 0)
				ctl_trace_pending(ctl, job, window);
			ctl->quiet = 0;
			return (CTL_EXIT_TIMEOUT);
		}
		ctl_trace_pause(ctl, job, window, since, a->have_timeout ?
		    (int)(deadline - now) : CTL_FOLLOW_SPAN_MS);
	}

	/* Finished: show the last state, then the verdict. */
	if (ctl->json)
		fprintf(ctl->out, "%.*s\n", (int)res.len, res.body);
	else if (ctl->tty) {
		fprintf(ctl->out, "\r%s\033[K\n", line);
		ctl->line_open = 0;
	} else if (strcmp(line, last) != 0)
		fprintf(ctl->out, "%s\n", line);
	ctl_trace_report(ctl, job, window, &p);
	if (p.failed > 0 || p.skipped > 0 || p.gone > 0 || p.missed > 0)
		rc = CTL_EXIT_REFUSED;
	else if (p.window_cancelled) {
		ctl_errx(ctl, "window %u was cancelled", window);
		rc = CTL_EXIT_REFUSED;
	} else {
		if (!ctl->json && p.observed_complete == 0)
			fprintf(ctl->out, "window %u: all %d targeted rank%s "
			    "stopped\n", window, p.targeted,
			    p.targeted == 1 ? "" : "s");
		else if (!ctl->json)
			fprintf(ctl->out, "window %u: all %d targeted rank%s "
			    "done: %d stopped, %d observed complete\n", window,
			    p.targeted, p.targeted == 1 ? "" : "s", p.stopped,
			    p.observed_complete);
		rc = CTL_EXIT_OK;
	}
out:
	ctl->quiet = 0;
	json_decref(doc);
	ctl_http_free(&res);
	return (rc);
}

/* dynprofctl trace JOB ... */
int
ctl_cmd_trace(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_trace_args	 a;
	struct ctl_response	 res;
	json_t			*body, *doc, *w, *cw;
	char			*text, err[512], path[128], wbuf[512];
	int64_t			 id;
	size_t			 i;
	int			 rc;

	if (ctl_trace_parse(argc, argv, &a, err, sizeof(err)) == -1) {
		ctl_errx(ctl, "trace: %s", err);
		return (CTL_USAGE);
	}
	if ((rc = ctl_check_trace(ctl, &a)) != CTL_EXIT_OK) {
		ctl_trace_args_free(&a);
		return (rc);
	}
	body = ctl_trace_body(&a);
	text = body != NULL ? json_dumps(body, JSON_COMPACT) : NULL;
	json_decref(body);
	if (text == NULL) {
		ctl_errx(ctl, "trace: out of memory");
		ctl_trace_args_free(&a);
		return (CTL_EXIT_REFUSED);
	}
	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", a.job);
	rc = ctl_call(ctl, "POST", path, text, strlen(text), &doc, &res);
	free(text);
	if (rc != CTL_EXIT_OK) {
		if (rc == CTL_EXIT_REFUSED && a.have_in)
			ctl_check_missing_job(ctl, a.job);
		ctl_trace_args_free(&a);
		return (rc);
	}
	/* The answer is the window, or holds it under "window". */
	w = json_object_get(doc, "window");
	if (!json_is_object(w))
		w = doc;
	id = ctl_json_int(w, "id", 0);
	if (ctl->json) {
		fprintf(ctl->out, "%.*s\n", (int)res.len, res.body);
		fflush(ctl->out);
	} else {
		ctl_format_window(wbuf, sizeof(wbuf), w);
		fprintf(ctl->out, "%s\n", wbuf);
		json_array_foreach(json_object_get(doc, "clock_warnings"), i,
		    cw)
			ctl_errx(ctl, "warning: %s", ctl_json_str(cw, "warning",
			    "?"));
		fflush(ctl->out);
	}
	ctl_http_free(&res);
	ctl_check_new_job(ctl, &a, w);
	rc = CTL_EXIT_OK;
	if (a.wait) {
		if (id <= 0 || id > UINT32_MAX) {
			ctl_errx(ctl, "trace: the coordinator's answer has no "
			    "window id to wait for");
			rc = CTL_EXIT_REFUSED;
		} else
			rc = ctl_trace_wait(ctl, a.job, (uint32_t)id, &a);
	}
	json_decref(doc);
	ctl_trace_args_free(&a);
	return (rc);
}
