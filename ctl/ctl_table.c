/*
 * Output for people: the coordinator's JSON documents as aligned tables with a
 * summary on top.  Pure functions of the document, so tests feed them JSON.
 */

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

/* "window 3: steps 160-164 on ranks 0-3,9" for a window object. */
void
ctl_format_window(char *buf, size_t len, json_t *w)
{
	const char	*ranks;

	ranks = ctl_json_str(w, "ranks", "");
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
			free(c);
		}
	}
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}

static int
ctl_rank_cmp(const void *a, const void *b)
{
	int64_t	 ra, rb;

	ra = ctl_json_int(*(json_t * const *)a, "rank", -1);
	rb = ctl_json_int(*(json_t * const *)b, "rank", -1);
	return (ra < rb ? -1 : ra > rb);
}

/*
 * The window the summary speaks of: the running one, else the next scheduled,
 * else the last one.
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
		if (best == NULL || ctl_json_int(w, "id", 0) >
		    ctl_json_int(best, "id", 0))
			best = w;
	}
	return (best);
}

static const char *ctl_rank_states[] = {
	"attached", "armed", "profiling", "done", "skipped", "failed", "gone",
	"unknown",
};
#define CTL_NSTATES	(sizeof(ctl_rank_states) / sizeof(ctl_rank_states[0]))

/* The summary line of a job status document. */
static void
ctl_status_summary(FILE *f, json_t *doc, json_t **sorted, size_t nranks)
{
	json_t		*progress, *w;
	const char	*node, *state;
	size_t		 i, j, nnodes = 0, counts[CTL_NSTATES + 1] = { 0 };
	int64_t		 lo, hi;
	int		 first;

	fprintf(f, "job %s generation %lld: ", ctl_json_str(doc, "job", "?"),
	    (long long)ctl_json_int(doc, "generation", 0));
	for (i = 0; i < nranks; i++) {
		node = ctl_json_str(sorted[i], "node", "");
		for (j = 0; j < i; j++) {
			if (strcmp(ctl_json_str(sorted[j], "node", ""),
			    node) == 0)
				break;
		}
		if (j == i)
			nnodes++;
		state = ctl_json_str(sorted[i], "state", "");
		for (j = 0; j < CTL_NSTATES; j++) {
			if (strcmp(state, ctl_rank_states[j]) == 0)
				break;
		}
		counts[j]++;
	}
	if (nranks == 0)
		fprintf(f, "no ranks reported yet");
	else
		fprintf(f, "%zu rank%s on %zu node%s", nranks,
		    nranks == 1 ? "" : "s", nnodes, nnodes == 1 ? "" : "s");
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
	else
		fprintf(f, ", window %lld [%lld,%lld]",
		    (long long)ctl_json_int(w, "id", 0),
		    (long long)ctl_json_int(w, "start_step", 0),
		    (long long)ctl_json_int(w, "stop_step", 0));
	first = 1;
	for (j = 0; j <= CTL_NSTATES; j++) {
		if (counts[j] == 0)
			continue;
		fprintf(f, "%s %zu %s", first ? ":" : ",", counts[j],
		    j < CTL_NSTATES ? ctl_rank_states[j] : "other");
		first = 0;
	}
	fputc('\n', f);
}

/* Prints a job status document (GET /v1/jobs/{job}) for a person. */
void
ctl_table_status(FILE *f, json_t *doc)
{
	struct ctl_table	 t;
	json_t			*ranks, *r, *w, *n, **sorted = NULL;
	const char		*row[CTL_TABLE_COLS], *err, *out;
	char			 rank[16], step[24], win[16], id[16];
	char			 range[64], gen[24], outbuf[1600];
	size_t			 i, nranks = 0;

	ranks = json_object_get(doc, "ranks");
	if (json_is_array(ranks) && json_array_size(ranks) > 0) {
		sorted = calloc(json_array_size(ranks), sizeof(*sorted));
		if (sorted == NULL)
			abort();
		json_array_foreach(ranks, i, r) {
			if (json_is_object(r))
				sorted[nranks++] = r;
		}
		qsort(sorted, nranks, sizeof(*sorted), ctl_rank_cmp);
	}
	ctl_status_summary(f, doc, sorted, nranks);

	if (nranks > 0) {
		ctl_table_init(&t, 6);
		row[0] = "RANK"; row[1] = "NODE"; row[2] = "STEP";
		row[3] = "STATE"; row[4] = "WINDOW"; row[5] = "OUTPUT";
		ctl_table_add(&t, row);
		for (i = 0; i < nranks; i++) {
			r = sorted[i];
			ctl_cell_int(rank, sizeof(rank), r, "rank", INT64_MIN);
			ctl_cell_int(step, sizeof(step), r, "step", 0);
			ctl_cell_int(win, sizeof(win), r, "window", 1);
			out = ctl_json_str(r, "output_dir", "");
			err = ctl_json_str(r, "error", "");
			if (*err != '\0')
				snprintf(outbuf, sizeof(outbuf), "%s%serror: %s",
				    out, *out != '\0' ? " " : "", err);
			else
				snprintf(outbuf, sizeof(outbuf), "%s", out);
			row[0] = rank;
			row[1] = ctl_json_str(r, "node", NULL);
			row[2] = step;
			row[3] = ctl_json_str(r, "state", NULL);
			row[4] = win;
			row[5] = outbuf;
			ctl_table_add(&t, row);
		}
		ctl_table_print(f, &t, "");
	}
	free(sorted);

	w = json_object_get(doc, "windows");
	if (json_is_array(w) && json_array_size(w) > 0) {
		fprintf(f, "\nwindows:\n");
		ctl_table_init(&t, 4);
		row[0] = "ID"; row[1] = "STEPS"; row[2] = "STATE";
		row[3] = "RANKS";
		ctl_table_add(&t, row);
		json_array_foreach(w, i, r) {
			ctl_cell_int(id, sizeof(id), r, "id", INT64_MIN);
			snprintf(range, sizeof(range), "%lld-%lld",
			    (long long)ctl_json_int(r, "start_step", 0),
			    (long long)ctl_json_int(r, "stop_step", 0));
			row[0] = id;
			row[1] = range;
			row[2] = ctl_json_str(r, "state", NULL);
			row[3] = ctl_json_str(r, "ranks", "");
			if (*row[3] == '\0')
				row[3] = "all";
			ctl_table_add(&t, row);
		}
		ctl_table_print(f, &t, "  ");
	}

	n = json_object_get(doc, "nodes");
	if (json_is_array(n) && json_array_size(n) > 0) {
		fprintf(f, "\nnodes:\n");
		ctl_table_init(&t, 3);
		row[0] = "NODE"; row[1] = "STATE"; row[2] = "APPLIED";
		ctl_table_add(&t, row);
		json_array_foreach(n, i, r) {
			ctl_cell_int(gen, sizeof(gen), r,
			    "applied_generation", INT64_MIN);
			row[0] = ctl_json_str(r, "node", NULL);
			row[1] = ctl_json_str(r, "state", NULL);
			row[2] = gen;
			ctl_table_add(&t, row);
		}
		ctl_table_print(f, &t, "  ");
	}
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
	ctl_table_init(&t, 7);
	row[0] = "JOB"; row[1] = "GENERATION"; row[2] = "WINDOWS";
	row[3] = "PENDING"; row[4] = "RANKS"; row[5] = "NODES";
	row[6] = "MAX_STEP";
	ctl_table_add(&t, row);
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
	json_t			*nodes, *n, *jobs, *g;
	const char		*row[CTL_TABLE_COLS], *job;
	char			 jobsbuf[1024];
	size_t			 i, off;

	nodes = json_object_get(doc, "nodes");
	if (!json_is_array(nodes) || json_array_size(nodes) == 0) {
		fprintf(f, "no nodes\n");
		return;
	}
	ctl_table_init(&t, 6);
	row[0] = "NODE"; row[1] = "STATE"; row[2] = "ADDRESS";
	row[3] = "CONNECTED_SINCE"; row[4] = "LAST_SEEN";
	row[5] = "JOBS (APPLIED GENERATION)";
	ctl_table_add(&t, row);
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
		row[5] = jobsbuf;
		ctl_table_add(&t, row);
	}
	ctl_table_print(f, &t, "");
}
