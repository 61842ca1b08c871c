/*
 * Output for people: the coordinator's JSON documents as aligned tables with a
 * summary on top.  Pure functions of the document, so tests feed them JSON.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* The string member key of o, or def when absent or not a string. */
const char *
ctl_json_str(json_t *o, const char *key, const char *def)
{
	json_t	*v;

	if (!json_is_object(o))
		return (def);
	v = json_object_get(o, key);
	return (json_is_string(v) ? json_string_value(v) : def);
}

/* The integer member key of o, or def when absent or not an integer. */
int64_t
ctl_json_int(json_t *o, const char *key, int64_t def)
{
	json_t	*v;

	if (!json_is_object(o))
		return (def);
	v = json_object_get(o, key);
	return (json_is_integer(v) ? (int64_t)json_integer_value(v) : def);
}

/*
 * Writes the integer member key of o into buf, or "" (printed as "-") when it
 * is absent or below min.  Returns buf.
 */
const char *
ctl_cell_int(char *buf, size_t len, json_t *o, const char *key, int64_t min)
{
	json_t	*v;

	v = json_is_object(o) ? json_object_get(o, key) : NULL;
	if (json_is_integer(v) && json_integer_value(v) >= min)
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (len > 0)
		buf[0] = '\0';
	return (buf);
}

/* A count given either as a number or as an array of things. */
static int64_t
ctl_json_count(json_t *o, const char *key)
{
	json_t	*v;

	v = json_is_object(o) ? json_object_get(o, key) : NULL;
	if (json_is_array(v))
		return ((int64_t)json_array_size(v));
	if (json_is_object(v))
		return ((int64_t)json_object_size(v));
	return (json_is_integer(v) ? (int64_t)json_integer_value(v) : 0);
}

/* When a window object runs: "160-164", or "at T for N ms" for a time
 * window, with the steps its ranks ran it at once known ("at T for N ms,
 * steps 46-75", "..., from step 46" before one stopped it). */
void
ctl_window_when(char *buf, size_t len, json_t *w)
{
	json_t	*ran = json_object_get(w, "ran");
	char	 steps[64] = "";

	if (json_is_integer(json_object_get(ran, "start_step"))) {
		if (json_is_integer(json_object_get(ran, "stop_step")))
			snprintf(steps, sizeof(steps), ", steps %lld-%lld",
			    (long long)ctl_json_int(ran, "start_step", 0),
			    (long long)ctl_json_int(ran, "stop_step", 0));
		else
			snprintf(steps, sizeof(steps), ", from step %lld",
			    (long long)ctl_json_int(ran, "start_step", 0));
	}
	if (json_is_string(json_object_get(w, "at")))
		snprintf(buf, len, "at %s for %lld ms%s", ctl_json_str(w, "at",
		    ""), (long long)ctl_json_int(w, "duration_ms", 0), steps);
	else
		snprintf(buf, len, "%lld-%lld",
		    (long long)ctl_json_int(w, "start_step", 0),
		    (long long)ctl_json_int(w, "stop_step", 0));
}

/* "window 3: steps 160-164 on ranks 0-3,9" for a window object. */
void
ctl_format_window(char *buf, size_t len, json_t *w)
{
	const char	*ranks;

	ranks = ctl_json_str(w, "ranks", "");
	if (json_is_string(json_object_get(w, "at"))) {
		snprintf(buf, len, "window %lld: at %s for %lld ms on %s%s",
		    (long long)ctl_json_int(w, "id", 0),
		    ctl_json_str(w, "at", ""),
		    (long long)ctl_json_int(w, "duration_ms", 0),
		    *ranks == '\0' ? "all ranks" : strpbrk(ranks, ",-") !=
		    NULL ? "ranks " : "rank ", ranks);
		return;
	}
	snprintf(buf, len, "window %lld: steps %lld-%lld on %s%s",
	    (long long)ctl_json_int(w, "id", 0),
	    (long long)ctl_json_int(w, "start_step", 0),
	    (long long)ctl_json_int(w, "stop_step", 0),
	    *ranks == '\0' ? "all ranks" : strpbrk(ranks, ",-") != NULL ?
	    "ranks " : "rank ", ranks);
}

/* Starts a table of ncols (at most CTL_TABLE_COLS) columns. */
void
ctl_table_init(struct ctl_table *t, int ncols)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
}

/*
 * Starts a table with its header: the column names, NULL-terminated, say how
 * many columns it has.
 */
void
ctl_table_head(struct ctl_table *t, const char *first, ...)
{
	const char	*row[CTL_TABLE_COLS];
	va_list		 ap;
	int		 n = 0;

	va_start(ap, first);
	for (row[0] = first; row[n] != NULL; row[n] = va_arg(ap,
	    const char *)) {
		if (++n == CTL_TABLE_COLS)
			break;
	}
	va_end(ap);
	ctl_table_init(t, n);
	ctl_table_add(t, row);
}

/* Adds a row of ncols cells (NULL or "" prints as "-"). */
void
ctl_table_add(struct ctl_table *t, const char **row)
{
	char	**n;
	int	  i;

	if (t->nrows == t->cap) {
		t->cap = t->cap == 0 ? 16 : t->cap * 2;
		n = reallocarray(t->cells, t->cap * t->ncols, sizeof(*n));
		if (n == NULL)
			abort();	/* a command line tool out of memory */
		t->cells = n;
	}
	for (i = 0; i < t->ncols; i++) {
		t->cells[t->nrows * t->ncols + i] = strdup(row[i] != NULL &&
		    *row[i] != '\0' ? row[i] : "-");
		if (t->cells[t->nrows * t->ncols + i] == NULL)
			abort();
	}
	t->nrows++;
}

/* Prints the table, the first row being the header, and frees it. */
void
ctl_table_print(FILE *f, struct ctl_table *t, const char *indent)
{
	size_t	 w[CTL_TABLE_COLS] = { 0 }, r, len;
	int	 i;
	char	*c;

	for (r = 0; r < t->nrows; r++) {
		for (i = 0; i < t->ncols; i++) {
			len = strlen(t->cells[r * t->ncols + i]);
			if (len > w[i])
				w[i] = len;
		}
	}
	for (r = 0; r < t->nrows; r++) {
		fputs(indent, f);
		for (i = 0; i < t->ncols; i++) {
			c = t->cells[r * t->ncols + i];
			if (i == t->ncols - 1)
				fprintf(f, "%s\n", c);
			else
				fprintf(f, "%-*s  ", (int)w[i], c);
		}
	}
	ctl_table_clear(t);
}

/* Frees the rows of t, printed or not. */
void
ctl_table_clear(struct ctl_table *t)
{
	size_t	 i;

	for (i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

/*
 * The window the summary speaks of: the running one, else the next scheduled,
 * else the last one, never one refused (no rank was ever given it) unless
 * every window was.
 */
static json_t *
ctl_current_window(json_t *windows)
{
	json_t	*w, *best = NULL;
	size_t	 i;

	json_array_foreach(windows, i, w) {
		if (strcmp(ctl_json_str(w, "state", ""), "running") == 0)
			return (w);
	}
	json_array_foreach(windows, i, w) {
		if (strcmp(ctl_json_str(w, "state", ""), "scheduled") != 0)
			continue;
		if (best == NULL || ctl_json_int(w, "start_step", 0) <
		    ctl_json_int(best, "start_step", 0))
			best = w;
	}
	if (best != NULL)
		return (best);
	json_array_foreach(windows, i, w) {
		if (strcmp(ctl_json_str(w, "state", ""), "refused") == 0)
			continue;
		if (best == NULL || ctl_json_int(w, "id", 0) >
		    ctl_json_int(best, "id", 0))
			best = w;
	}
	if (best == NULL)
		best = json_array_get(windows, json_array_size(windows) - 1);
	return (best);
}

static const char *ctl_rank_states[] = {
	"attached", "armed", "profiling", "done", "skipped", "failed", "gone",
	"observed", "observed_complete", "unknown",
};
#define CTL_NSTATES	(sizeof(ctl_rank_states) / sizeof(ctl_rank_states[0]))

/* The summary line of a job's summary (GET /v1/jobs/{job}). */
static void
ctl_status_summary(FILE *f, json_t *doc)
{
	json_t		*progress, *w, *counts, *nodes;
	int64_t		 lo, hi, nranks, nnodes, n;
	size_t		 j;
	int		 first;

	fprintf(f, "job %s generation %lld: ", ctl_json_str(doc, "job", "?"),
	    (long long)ctl_json_int(doc, "generation", 0));
	counts = json_object_get(doc, "rank_counts");
	nodes = json_object_get(doc, "node_counts");
	nranks = ctl_json_int(counts, "total", 0);
	nnodes = ctl_json_int(nodes, "total", 0);
	if (nranks == 0)
		fprintf(f, "no ranks reported yet");
	else
		fprintf(f, "%lld rank%s on %lld node%s", (long long)nranks,
		    nranks == 1 ? "" : "s", (long long)nnodes,
		    nnodes == 1 ? "" : "s");
	if ((n = ctl_json_int(nodes, "lost", 0)) > 0)
		fprintf(f, " (%lld lost)", (long long)n);
	if ((n = ctl_json_int(nodes, "left", 0)) > 0)
		fprintf(f, " (%lld left)", (long long)n);
	progress = json_object_get(doc, "progress");
	lo = ctl_json_int(progress, "min_step", -1);
	hi = ctl_json_int(progress, "max_step", -1);
	if (lo >= 0 && hi > lo)
		fprintf(f, ", steps %lld-%lld", (long long)lo, (long long)hi);
	else if (hi >= 0)
		fprintf(f, ", step %lld", (long long)hi);
	w = ctl_current_window(json_object_get(doc, "windows"));
	if (w == NULL)
		fprintf(f, ", no windows");
	else if (json_is_string(json_object_get(w, "at")))
		fprintf(f, ", window %lld [at %s, %lld ms]",
		    (long long)ctl_json_int(w, "id", 0),
		    ctl_json_str(w, "at", ""),
		    (long long)ctl_json_int(w, "duration_ms", 0));
	else
		fprintf(f, ", window %lld [%lld,%lld]",
		    (long long)ctl_json_int(w, "id", 0),
		    (long long)ctl_json_int(w, "start_step", 0),
		    (long long)ctl_json_int(w, "stop_step", 0));
	first = 1;
	for (j = 0; j < CTL_NSTATES; j++) {
		if ((n = ctl_json_int(counts, ctl_rank_states[j], 0)) <= 0)
			continue;
		fprintf(f, "%s %lld %s", first ? ":" : ",", (long long)n,
		    ctl_rank_states[j]);
		first = 0;
	}
	fputc('\n', f);
}

/*
 * Adds the ranks of one page of GET /v1/jobs/{job}/ranks to t (made with
 * ctl_table_init(t, 8)), the header first: UID is the uid the rank's process
 * runs as, as its agent's kernel says ("-": unknown); LABELS its labels,
 * key=value by key (docs/labels.md).
 */
void
ctl_table_rank_rows(struct ctl_table *t, json_t *page)
{
	json_t		*r, *v, *tr;
	const char	*row[CTL_TABLE_COLS], *err, *out, *key;
	char		 rank[16], uid[24], step[24], win[16], outbuf[3200];
	char		 labels[512];
	size_t		 i, off;
	int		 n;

	if (t->nrows == 0) {
		row[0] = "RANK"; row[1] = "NODE"; row[2] = "UID";
		row[3] = "STEP"; row[4] = "STATE"; row[5] = "WINDOW";
		row[6] = "LABELS"; row[7] = "OUTPUT";
		ctl_table_add(t, row);
	}
	json_array_foreach(json_object_get(page, "ranks"), i, r) {
		if (!json_is_object(r))
			continue;
		ctl_cell_int(rank, sizeof(rank), r, "rank", INT64_MIN);
		ctl_cell_int(uid, sizeof(uid), r, "uid", 0);
		ctl_cell_int(step, sizeof(step), r, "step", 0);
		ctl_cell_int(win, sizeof(win), r, "window", 1);
		out = ctl_json_str(r, "output_dir", "");
		err = ctl_json_str(r, "error", "");
		if (*err != '\0')
			snprintf(outbuf, sizeof(outbuf), "%s%serror: %s", out,
			    *out != '\0' ? " " : "", err);
		else
			snprintf(outbuf, sizeof(outbuf), "%s", out);
		/* Its latest trace collected (or not) into the trace store. */
		tr = json_object_get(r, "trace");
		n = (int)strlen(outbuf);
		if (json_is_object(tr) && n < (int)sizeof(outbuf) - 1) {
			if (strcmp(ctl_json_str(tr, "state", ""),
			    "collected") == 0)
				snprintf(outbuf + n, sizeof(outbuf) - (size_t)n,
				    "%scollected (window %lld): %s, %lld "
				    "bytes, sha256 %.12s", n > 0 ? " " : "",
				    (long long)ctl_json_int(tr, "window", 0),
				    ctl_json_str(tr, "location", ""),
				    (long long)ctl_json_int(tr, "size", 0),
				    ctl_json_str(tr, "sha256", ""));
			else
				snprintf(outbuf + n, sizeof(outbuf) - (size_t)n,
				    "%scollect failed (window %lld): %s",
				    n > 0 ? " " : "",
				    (long long)ctl_json_int(tr, "window", 0),
				    ctl_json_str(tr, "error", ""));
		}
		row[0] = rank;
		row[1] = ctl_json_str(r, "node", NULL);
		row[2] = uid;
		row[3] = step;
		row[4] = ctl_json_str(r, "state", NULL);
		off = 0;
		labels[0] = '\0';
		json_object_foreach(json_object_get(r, "labels"), key, v) {
			if (off < sizeof(labels))
				off += (size_t)snprintf(labels + off,
				    sizeof(labels) - off, "%s%s=%s",
				    off > 0 ? "," : "", key,
				    json_string_value(v) != NULL ?
				    json_string_value(v) : "?");
		}
		row[5] = win;
		row[6] = labels;
		row[7] = outbuf;
		ctl_table_add(t, row);
	}
}

/*
 * Prints the "legacy" part of a job's summary, if any: its nodes by dialect,
 * the first nodes in error, and per window how many nodes wrote it, wait,
 * refused it or are over with it, with the first reason given.
 */
static void
ctl_status_legacy(FILE *f, json_t *doc)
{
	json_t		*l = json_object_get(doc, "legacy"), *d, *v, *w, *n;
	const char	*key, *sep = "";
	size_t		 i;

	if (!json_is_object(l))
		return;
	fprintf(f, "\nlegacy: %lld node%s (", (long long)ctl_json_int(l,
	    "nodes", 0), ctl_json_int(l, "nodes", 0) == 1 ? "" : "s");
	d = json_object_get(l, "dialects");
	json_object_foreach(d, key, v) {
		fprintf(f, "%s%s: %lld", sep, key,
		    (long long)json_integer_value(v));
		sep = ", ";
	}
	fprintf(f, "), %lld in error\n", (long long)ctl_json_int(l,
	    "nodes_in_error", 0));
	json_array_foreach(json_object_get(l, "errors"), i, v)
		fprintf(f, "  %s: %s\n", ctl_json_str(v, "node", "?"),
		    ctl_json_str(v, "error", ""));
	json_array_foreach(json_object_get(l, "windows"), i, w) {
		n = json_object_get(w, "nodes");
		fprintf(f, "  window %lld: written %lld, waiting %lld, refused "
		    "%lld, over %lld", (long long)ctl_json_int(w, "id", 0),
		    (long long)ctl_json_int(n, "written", 0),
		    (long long)ctl_json_int(n, "waiting", 0),
		    (long long)ctl_json_int(n, "refused", 0),
		    (long long)ctl_json_int(n, "over", 0));
		/* Said only when some node has them. */
		if (ctl_json_int(n, "unverified", 0) != 0)
			fprintf(f, ", unverified %lld",
			    (long long)ctl_json_int(n, "unverified", 0));
		fprintf(f, "%s%s\n",
		    json_is_string(json_object_get(w, "reason")) ? ": " : "",
		    ctl_json_str(w, "reason", ""));
	}
}

/*
 * Prints a job for a person: its summary (GET /v1/jobs/{job}) with ranks, the
 * rows ctl_table_rank_rows() gathered (NULL: none), then its windows and how
 * their ranks are doing, and its nodes.
 */
void
ctl_table_status(FILE *f, json_t *doc, struct ctl_table *ranks)
{
	struct ctl_table	 t;
	json_t			*w, *r, *n, *rc, *cw;
	const char		*row[CTL_TABLE_COLS];
	char			 id[16], range[96], num[3][24], fin[160];
	char			 col[64];
	int			 collected = 0;
	size_t			 i, j;

	ctl_status_summary(f, doc);
	if (ranks != NULL && ranks->nrows > 1)
		ctl_table_print(f, ranks, "");

	w = json_object_get(doc, "windows");
	if (json_is_array(w) && json_array_size(w) > 0) {
		fprintf(f, "\nwindows:\n");
		/* A column for the traces collected once any window has. */
		json_array_foreach(w, i, r) {
			rc = json_object_get(r, "rank_counts");
			if (ctl_json_int(rc, "collected", 0) > 0 ||
			    ctl_json_int(rc, "collect_failed", 0) > 0)
				collected = 1;
		}
		/* The last name NULL: no such column. */
		ctl_table_head(&t, "ID", "WHEN", "STATE", "RANKS", "TARGETED",
		    "STARTED", "STOPPED", "FINISHED", collected ? "COLLECTED" :
		    NULL, NULL);
		json_array_foreach(w, i, r) {
			rc = json_object_get(r, "rank_counts");
			ctl_cell_int(id, sizeof(id), r, "id", INT64_MIN);
			ctl_window_when(range, sizeof(range), r);
			ctl_cell_int(num[0], sizeof(num[0]), rc, "targeted", 0);
			ctl_cell_int(num[1], sizeof(num[1]), rc, "started", 0);
			ctl_cell_int(num[2], sizeof(num[2]), rc, "stopped", 0);
			ctl_cell_int(fin, sizeof(fin), rc, "finished", 0);
			if (ctl_json_int(rc, "failed", 0) > 0 ||
			    ctl_json_int(rc, "skipped", 0) > 0 ||
			    ctl_json_int(rc, "gone", 0) > 0 ||
			    ctl_json_int(rc, "missed", 0) > 0)
				snprintf(fin, sizeof(fin), "%lld (%lld failed, "
				    "%lld skipped, %lld gone, %lld missed)",
				    (long long)ctl_json_int(rc, "finished", 0),
				    (long long)ctl_json_int(rc, "failed", 0),
				    (long long)ctl_json_int(rc, "skipped", 0),
				    (long long)ctl_json_int(rc, "gone", 0),
				    (long long)ctl_json_int(rc, "missed", 0));
			row[0] = id;
			row[1] = range;
			row[2] = ctl_json_str(r, "state", NULL);
			row[3] = ctl_json_str(r, "ranks", "");
			if (*row[3] == '\0')
				row[3] = "all";
			row[4] = num[0];
			row[5] = num[1];
			row[6] = num[2];
			row[7] = fin;
			ctl_cell_int(col, sizeof(col), rc, "collected", 0);
			if (ctl_json_int(rc, "collect_failed", 0) > 0)
				snprintf(col, sizeof(col), "%lld (%lld failed)",
				    (long long)ctl_json_int(rc, "collected", 0),
				    (long long)ctl_json_int(rc,
				    "collect_failed", 0));
			row[8] = col;
			ctl_table_add(&t, row);
		}
		ctl_table_print(f, &t, "  ");
		/* A time window's clock warnings: nodes off by more than
		 * its tolerance. */
		json_array_foreach(w, i, r)
			json_array_foreach(json_object_get(r,
			    "clock_warnings"), j, cw)
				fprintf(f, "  window %lld: %s\n",
				    (long long)ctl_json_int(r, "id", 0),
				    ctl_json_str(cw, "warning", "?"));
		/* A legacy job's window its nodes refused: why. */
		json_array_foreach(w, i, r)
			if (json_is_string(json_object_get(r,
			    "refused_reason")))
				fprintf(f, "  window %lld refused by the "
				    "nodes: %s\n", (long long)ctl_json_int(r,
				    "id", 0), ctl_json_str(r, "refused_reason",
				    ""));
	}

	n = json_object_get(doc, "node_counts");
	if (ctl_json_int(n, "total", 0) > 0) {
		fprintf(f, "\nnodes: %lld connected, %lld lost",
		    (long long)ctl_json_int(n, "connected", 0),
		    (long long)ctl_json_int(n, "lost", 0));
		if (ctl_json_int(n, "left", 0) > 0)
			fprintf(f, ", %lld left",
			    (long long)ctl_json_int(n, "left", 0));
		fprintf(f, "; %lld applied generation %lld, %lld behind",
		    (long long)ctl_json_int(n, "applied_current", 0),
		    (long long)ctl_json_int(doc, "generation", 0),
		    (long long)ctl_json_int(n, "applied_behind", 0));
		if (ctl_json_int(n, "applied_behind", 0) > 0)
			fprintf(f, " (oldest %lld)",
			    (long long)ctl_json_int(n, "oldest_applied", 0));
		fputc('\n', f);
	}
	ctl_status_legacy(f, doc);
}

/* Prints GET /v1/jobs for a person. */
void
ctl_table_jobs(FILE *f, json_t *doc)
{
	struct ctl_table	 t;
	json_t			*jobs, *j;
	const char		*row[CTL_TABLE_COLS];
	char			 num[6][24];
	size_t			 i;

	jobs = json_object_get(doc, "jobs");
	if (!json_is_array(jobs) || json_array_size(jobs) == 0) {
		fprintf(f, "no jobs\n");
		return;
	}
	ctl_table_head(&t, "JOB", "GENERATION", "WINDOWS", "PENDING", "RANKS",
	    "NODES", "MAX_STEP", NULL);
	json_array_foreach(jobs, i, j) {
		ctl_cell_int(num[0], sizeof(num[0]), j, "generation",
		    INT64_MIN);
		snprintf(num[1], sizeof(num[1]), "%lld",
		    (long long)ctl_json_count(j, "windows"));
		ctl_cell_int(num[2], sizeof(num[2]), j, "pending_windows", 0);
		snprintf(num[3], sizeof(num[3]), "%lld",
		    (long long)ctl_json_count(j, "ranks"));
		snprintf(num[4], sizeof(num[4]), "%lld",
		    (long long)ctl_json_count(j, "nodes"));
		ctl_cell_int(num[5], sizeof(num[5]), j, "max_step", 0);
		row[0] = ctl_json_str(j, "job", NULL);
		row[1] = num[0];
		row[2] = num[1];
		row[3] = num[2];
		row[4] = num[3];
		row[5] = num[4];
		row[6] = num[5];
		ctl_table_add(&t, row);
	}
	ctl_table_print(f, &t, "");
}

/* Prints GET /v1/nodes for a person. */
void
ctl_table_nodes(FILE *f, json_t *doc)
{
	struct ctl_table	 t;
	json_t			*nodes, *n, *jobs, *g, *worst, *off_ms;
	const char		*row[CTL_TABLE_COLS], *job;
	char			 jobsbuf[1024], offbuf[32];
	size_t			 i, off;

	nodes = json_object_get(doc, "nodes");
	if (!json_is_array(nodes) || json_array_size(nodes) == 0) {
		fprintf(f, "no nodes\n");
		return;
	}
	ctl_table_head(&t, "NODE", "STATE", "ADDRESS", "CONNECTED_SINCE",
	    "LAST_SEEN", "CLOCK_OFFSET", "JOBS (APPLIED GENERATION)", NULL);
	json_array_foreach(nodes, i, n) {
		jobsbuf[0] = '\0';
		off = 0;
		jobs = json_object_get(n, "jobs");
		json_object_foreach(jobs, job, g) {
			if (off >= sizeof(jobsbuf))
				break;
			off += snprintf(jobsbuf + off, sizeof(jobsbuf) - off,
			    "%s%s:%lld", off > 0 ? "," : "", job,
			    json_is_integer(g) ?
			    (long long)json_integer_value(g) : 0LL);
		}
		row[0] = ctl_json_str(n, "node", NULL);
		row[1] = ctl_json_str(n, "state", NULL);
		row[2] = ctl_json_str(n, "address", NULL);
		row[3] = ctl_json_str(n, "connected_since", NULL);
		row[4] = ctl_json_str(n, "last_seen", NULL);
		off_ms = json_object_get(n, "clock_offset_ms");
		if (json_is_number(off_ms))
			snprintf(offbuf, sizeof(offbuf), "%+.0f ms",
			    json_number_value(off_ms));
		else
			snprintf(offbuf, sizeof(offbuf), "-");
		row[5] = offbuf;
		row[6] = jobsbuf;
		ctl_table_add(&t, row);
	}
	ctl_table_print(f, &t, "");
	/* The node whose clock is furthest from the coordinator's. */
	worst = json_object_get(doc, "worst_clock_offset");
	if (json_is_number(json_object_get(worst, "offset_ms")))
		fprintf(f, "worst clock offset: %+.0f ms (node %s)\n",
		    json_number_value(json_object_get(worst, "offset_ms")),
		    ctl_json_str(worst, "node", "?"));
}
