/*
 * dynprofctl compare JOB WINDOW: the ranks of a window side by side, from
 * their collected traces (GET /v1/jobs/JOB/windows/WINDOW/compare): the
 * window's median step time and spread, its compute time and time in
 * collectives, the straggler, the slowest ranks by step and by compute and
 * how far off they are, the operators that differ most between ranks, then
 * one line per rank with its steps.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "ctl.h"

/* Microseconds as milliseconds, for people. */
static double
ctl_compare_ms(json_t *o, const char *key)
{
	return ((double)ctl_json_int(o, key, 0) / 1000.0);
}

/* Microseconds as milliseconds in a column of width w, "-" for null. */
static void
ctl_compare_col(FILE *f, json_t *o, const char *key, int w)
{
	if (json_is_integer(json_object_get(o, key)))
		fprintf(f, " %*.3f", w, ctl_compare_ms(o, key));
	else
		fprintf(f, " %*s", w, "-");
}

/* Prints the slowest ranks of doc's list key, under head, by field and its
 * offset off_key. */
static void
ctl_compare_slowest(FILE *f, json_t *doc, const char *key, const char *head,
    const char *field, const char *off_key, const char *pct_key)
{
	json_t	*x;
	size_t	 i;

	if (json_array_size(json_object_get(doc, key)) == 0)
		return;
	fprintf(f, "\n%s NODE              MEDIAN_MS   OFFSET_MS  OFFSET\n",
	    head);
	json_array_foreach(json_object_get(doc, key), i, x)
		fprintf(f, "rank %-3lld %-16s %10.3f %+11.3f %+6.1f%%\n",
		    (long long)ctl_json_int(x, "rank", -1),
		    ctl_json_str(x, "node", "-"), ctl_compare_ms(x, field),
		    ctl_compare_ms(x, off_key),
		    json_number_value(json_object_get(x, pct_key)));
}

/* Prints the comparison doc. */
static void
ctl_compare_show(FILE *f, json_t *doc)
{
	json_t	*counts = json_object_get(doc, "counts"), *step, *x, *s;
	json_t	*comp, *comm, *st;
	size_t	 i, k;

	fprintf(f, "window %lld of job %s: %lld ranks compared, %lld "
	    "collected, %lld failed, %lld pending, %lld without a summary\n",
	    (long long)ctl_json_int(doc, "window", 0), ctl_json_str(doc, "job",
	    "?"), (long long)ctl_json_int(counts, "compared", 0),
	    (long long)ctl_json_int(counts, "collected", 0),
	    (long long)ctl_json_int(counts, "collect_failed", 0),
	    (long long)ctl_json_int(counts, "pending", 0),
	    (long long)ctl_json_int(counts, "unread", 0));
	step = json_object_get(doc, "step");
	if (!json_is_object(step)) {
		fprintf(f, "no step times: no rank's trace had steps\n");
		return;
	}
	fprintf(f, "step time: median %.3f ms, fastest rank %.3f ms, slowest "
	    "%.3f ms (spread %.1f%%)\n", ctl_compare_ms(step, "median_us"),
	    ctl_compare_ms(step, "min_us"), ctl_compare_ms(step, "max_us"),
	    json_number_value(json_object_get(step, "spread_pct")));
	comp = json_object_get(doc, "compute");
	comm = json_object_get(doc, "comm");
	if (json_is_object(comp) && json_is_object(comm))
		fprintf(f, "compute (step less collectives): median %.3f ms, "
		    "%.3f to %.3f ms; in collectives: median %.3f ms, %.3f to "
		    "%.3f ms (%lld ranks)\n", ctl_compare_ms(comp, "median_us"),
		    ctl_compare_ms(comp, "min_us"), ctl_compare_ms(comp,
		    "max_us"), ctl_compare_ms(comm, "median_us"),
		    ctl_compare_ms(comm, "min_us"), ctl_compare_ms(comm,
		    "max_us"), (long long)ctl_json_int(counts, "with_comm", 0));
	st = json_object_get(doc, "straggler");
	if (json_is_object(st))
		fprintf(f, "\nstraggler: %s\n  (%s)\n", ctl_json_str(st, "says",
		    "?"), ctl_json_str(st, "why", "?"));
	else
		fprintf(f, "\nno straggler stands out\n");
	ctl_compare_slowest(f, doc, "slowest", "SLOWEST ", "median_us",
	    "offset_us", "offset_pct");
	ctl_compare_slowest(f, doc, "slowest_compute", "COMPUTE ",
	    "compute_us", "compute_offset_us", "compute_offset_pct");
	if (json_array_size(json_object_get(doc, "operators")) > 0)
		fprintf(f, "\n   MAX_MS (RANK)    MIN_MS (RANK)   DIFF_MS  "
		    "OPERATOR\n");
	/* The name last and whole: names alike up to a width differ after. */
	json_array_foreach(json_object_get(doc, "operators"), i, x)
		fprintf(f, "%9.3f (%4lld) %9.3f (%4lld) %9.3f  %s\n",
		    ctl_compare_ms(x, "max_us"),
		    (long long)ctl_json_int(x, "max_rank", -1),
		    ctl_compare_ms(x, "min_us"),
		    (long long)ctl_json_int(x, "min_rank", -1),
		    ctl_compare_ms(x, "diff_us"), ctl_json_str(x, "name", "?"));
	fprintf(f, "\nRANK  MEDIAN_MS    COMM_MS COMPUTE_MS  STEPS (ms)\n");
	json_array_foreach(json_object_get(doc, "ranks"), i, x) {
		fprintf(f, "%-5lld %9.3f", (long long)ctl_json_int(x, "rank",
		    -1), ctl_compare_ms(x, "median_us"));
		ctl_compare_col(f, x, "comm_us", 10);
		ctl_compare_col(f, x, "compute_us", 10);
		fprintf(f, " ");
		json_array_foreach(json_object_get(x, "steps"), k, s)
			fprintf(f, " %lld:%.3f", (long long)ctl_json_int(s,
			    "step", 0), ctl_compare_ms(s, "dur_us"));
		if (json_is_string(json_object_get(x, "error")))
			fprintf(f, "  (not read whole: %s)", ctl_json_str(x,
			    "error", ""));
		fprintf(f, "\n");
	}
	if (json_is_true(json_object_get(doc, "ranks_cut")))
		fprintf(f, "(the first ranks only: --json for the counts)\n");
}

/* dynprofctl compare JOB WINDOW */
int
ctl_cmd_compare(struct ctl *ctl, int argc, char **argv)
{
	json_t	*doc;
	char	 path[160];
	int64_t	 id;
	int	 rc;

	if (argc != 3) {
		ctl_errx(ctl, "compare: %s", argc < 3 ? "missing JOB or WINDOW" :
		    "too many arguments");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[1]) == -1)
		return (CTL_EXIT_REFUSED);
	if (ctl_parse_int64(argv[2], 1, UINT32_MAX, &id) == -1) {
		ctl_errx(ctl, "compare: WINDOW must be a window id (a positive "
		    "integer), not \"%s\"", argv[2]);
		return (CTL_USAGE);
	}
	snprintf(path, sizeof(path), "/v1/jobs/%s/windows/%lld/compare",
	    argv[1], (long long)id);
	if ((rc = ctl_get(ctl, path, &doc)) != CTL_EXIT_OK)
		return (rc);
	if (!ctl->json)
		ctl_compare_show(ctl->out, doc);
	json_decref(doc);
	return (CTL_EXIT_OK);
}
