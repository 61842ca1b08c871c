/*
 * dynprof-batch-bench: the CPU a follower's copy (server/replica.c) spends
 * on the etcd store's event batches (store_etcd_batch.h), in process, no
 * etcd: a window's start and stop on N ranks (2 N events, each with its
 * rank's row and its revision in the event stream) written into batch
 * values twice: packed, as the leader writes them (esb_add()), and as the
 * JSON batches of before (the layout store_etcd_batch.h describes, 2,000
 * events a value, deflated), then each
 *
 *	decode	each value read (esb_decode()), its events and rows handed
 *		to functions that only count them;
 *	apply	each value taken into a follower's model as the watch hands
 *		it over (load_change(): the store's apply, the loader, the
 *		model, the event stream's journal), the job's and window's
 *		rows first.
 *
 * usage: dynprof-batch-bench [--ranks N] [--runs K]
 *
 * Each run times the four (decode and apply of either layout, one after
 * the other) in this thread's CPU time (CLOCK_THREAD_CPUTIME_ID, not wall
 * time: the machine may be shared); printed per run, with the packed
 * layout's ratio to the JSON one's in that run, then the median and the
 * range (min-max) of events per CPU second and of the ratios.
 */

#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <jansson.h>

#include "coord.h"
#include "etcd.h"
#include "store_etcd_batch.h"
#include "store_row.h"

#define BENCH_PREFIX	"/bench/"
#define BENCH_JOB	"loadgen"
#define BENCH_FENCE	7
#define BENCH_CREATED	1700000000000000000LL
#define BENCH_REV	1000000		/* the first event's, less 1 */
#define BENCH_JSON_EVENTS 2000		/* events in a JSON batch */

/* The keys and values written, in commit order. */
struct bench_keys {
	char		**key;
	char		**value;
	size_t		 *len;
	size_t		  n, cap;
};

/* Returns this thread's CPU time in s. */
static double
bench_cpu(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

/* Orders doubles, for qsort(). */
static int
bench_cmp(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* Keeps a key (under the prefix) and its value. */
static int
bench_put(void *arg, const char *key, const char *value, size_t len)
{
	struct bench_keys	*k = arg;
	size_t			 cap;

	if (k->n == k->cap) {
		cap = k->cap == 0 ? 64 : 2 * k->cap;
		if ((k->key = reallocarray(k->key, cap, sizeof(*k->key))) ==
		    NULL || (k->value = reallocarray(k->value, cap,
		    sizeof(*k->value))) == NULL || (k->len = reallocarray(
		    k->len, cap, sizeof(*k->len))) == NULL)
			return (-1);
		k->cap = cap;
	}
	if (asprintf(&k->key[k->n], "%s%s", BENCH_PREFIX, key) == -1 ||
	    (k->value[k->n] = malloc(len)) == NULL)
		return (-1);
	memcpy(k->value[k->n], value, len);
	k->len[k->n++] = len;
	return (0);
}

/* Keeps a row of table t as its JSON text under its key. */
static int
bench_put_row(struct bench_keys *k, enum row_table t, const void *row)
{
	char	 rel[256], *text;
	json_t	*obj;
	int	 rc;

	if (row_key(t, row, rel, sizeof(rel)) == -1 ||
	    (obj = row_encode(t, row)) == NULL)
		return (-1);
	text = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	if (text == NULL)
		return (-1);
	rc = bench_put(k, rel, text, strlen(text));
	free(text);
	return (rc);
}

/* Writes the job's and window's rows.  Returns 0 or -1. */
static int
bench_write_rows(struct bench_keys *k)
{
	struct store_job	 job = { BENCH_JOB, 2, 2, NULL, NULL,
	    BENCH_CREATED, NULL };
	struct store_window	 win;

	memset(&win, 0, sizeof(win));
	win.job = BENCH_JOB;
	win.id = 1;
	win.start_step = 1000000;
	win.stop_step = 1000001;
	win.ranks = "all";
	win.state = 1;
	win.created_ns = BENCH_CREATED;
	return (bench_put_row(k, ROW_JOBS, &job) == -1 ||
	    bench_put_row(k, ROW_WINDOWS, &win) == -1 ? -1 : 0);
}

static void	bench_rank_row(struct store_rank *, int,
		    const struct rank_event *, char *, size_t, char *, size_t);
static void	bench_event_at(struct rank_event *, long, int);

/*
 * Writes a window's start and stop on n ranks into packed batches, as the
 * leader does (esb_add(), esb_add_rank()), a commit's batches flushed at
 * the leader's bound.  Returns 0 or -1.
 */
static int
bench_write_packed(struct bench_keys *k, int n)
{
	struct store_rank	 r;
	struct rank_event	 ev;
	struct esb		 b;
	char			 node[32], dir[64];
	long			 i;

	memset(&b, 0, sizeof(b));
	for (i = 0; i < 2L * n; i++) {
		bench_event_at(&ev, i, n);
		bench_rank_row(&r, (int)(i % n), &ev, node, sizeof(node), dir,
		    sizeof(dir));
		if (esb_add(&b, BENCH_JOB, r.rank, &ev, NULL, NULL,
		    (uint64_t)(BENCH_REV + i + 1), BENCH_FENCE, bench_put,
		    k) == -1 ||
		    esb_add_rank(&b, &r, BENCH_FENCE, bench_put, k) == -1)
			return (-1);
		if (esb_bytes(&b) >= 4 * ESB_VALUE_MAX) {
			if (esb_flush(&b, BENCH_FENCE, bench_put, k) == -1)
				return (-1);
			esb_clear(&b);
		}
	}
	if (esb_flush(&b, BENCH_FENCE, bench_put, k) == -1)
		return (-1);
	esb_clear(&b);
	esb_seen_clear(&b);
	return (0);
}

/* Fills r with rank's row after event ev (its time) of the window. */
static void
bench_rank_row(struct store_rank *r, int rank, const struct rank_event *ev,
    char *node, size_t nlen, char *dir, size_t dlen)
{
	snprintf(node, nlen, "node-%05d", rank / 10);
	snprintf(dir, dlen, "/out/rank_%d_start1000000_stop1000001", rank);
	memset(r, 0, sizeof(*r));
	r->job = BENCH_JOB;
	r->rank = rank;
	r->node = node;
	r->pid = 10000 + rank;
	r->step = ev->step;
	r->state = ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_STARTED ?
	    DYNPROF__V1__RANK_STATE__RANK_PROFILING :
	    DYNPROF__V1__RANK_STATE__RANK_DONE;
	r->window_id = 1;
	r->output_dir = dir;
	r->last_event = ev->kind;
	r->last_event_ns = ev->time_ns;
	r->arrived_ns = BENCH_CREATED;
	r->owner = 1001;
}

/* Fills ev with event i of the 2 n (the starts, then the stops). */
static void
bench_event_at(struct rank_event *ev, long i, int n)
{
	ev->kind = i < n ? DYNPROF__V1__EVENT_KIND__EVENT_STARTED :
	    DYNPROF__V1__EVENT_KIND__EVENT_STOPPED;
	ev->window_id = 1;
	ev->step = i < n ? 1000000 : 1000001;
	ev->time_ns = BENCH_CREATED + i * 1000;
}

/* The JSON batch being written, as a coordinator before the packed layout
 * wrote it. */
struct bench_json {
	char	*events, *ranks, *revs;
	size_t	 elen, rlen, vlen, n;
};

/* Appends printf's text to *buf (*len bytes so far).  Returns 0 or -1. */
static int
bench_cat(char **buf, size_t *len, const char *fmt, ...)
{
	va_list	 ap;
	char	*text, *p;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0 || (p = realloc(*buf, *len + (size_t)n + 1)) == NULL)
		return (-1);
	memcpy(p + *len, text, (size_t)n + 1);
	*buf = p;
	*len += (size_t)n;
	free(text);
	return (0);
}

/* Puts the JSON batch so far as value seq, deflated, and empties it. */
static int
bench_json_put(struct bench_keys *k, struct bench_json *j, int seq)
{
	struct esb_text	 v = { NULL, 0, 0, 0 };
	char		 key[128];
	int		 rc;

	if (j->n == 0)
		return (0);
	snprintf(key, sizeof(key), "evbatch/%s/%020d/%020d", BENCH_JOB,
	    BENCH_FENCE, seq);
	if (bench_cat(&v.text, &v.len, "{\"job\":\"%s\",\"events\":[%s],"
	    "\"ranks\":[%s],\"revs\":[%s]}", BENCH_JOB, j->events, j->ranks,
	    j->revs) == -1)
		return (-1);
	rc = esb_put_deflated(key, &v, bench_put, k);
	free(v.text);
	free(j->events);
	free(j->ranks);
	free(j->revs);
	memset(j, 0, sizeof(*j));
	return (rc);
}

/* Writes the 2 n events and their ranks' rows as JSON batches of
 * BENCH_JSON_EVENTS each.  Returns 0 or -1. */
static int
bench_write_json(struct bench_keys *k, int n)
{
	struct bench_json	 j;
	struct store_rank	 r;
	struct rank_event	 ev;
	json_t			*obj;
	char			 node[32], dir[64], *text;
	const char		*sep;
	long			 i;
	int			 seq = 0;

	memset(&j, 0, sizeof(j));
	for (i = 0; i < 2L * n; i++) {
		bench_event_at(&ev, i, n);
		bench_rank_row(&r, (int)(i % n), &ev, node, sizeof(node), dir,
		    sizeof(dir));
		if ((obj = row_encode(ROW_RANKS, &r)) == NULL ||
		    (text = json_dumps(obj, JSON_COMPACT)) == NULL)
			return (-1);
		json_decref(obj);
		sep = j.n == 0 ? "" : ",";
		if (bench_cat(&j.events, &j.elen, "%s[%d,1,%d,%" PRId64 ",%"
		    PRId64 ",null,null]", sep, r.rank, ev.kind, ev.step,
		    ev.time_ns) == -1 ||
		    bench_cat(&j.ranks, &j.rlen, "%s%s", sep, text) == -1 ||
		    bench_cat(&j.revs, &j.vlen, "%s%ld", sep, BENCH_REV + i + 1) ==
		    -1)
			return (-1);
		free(text);
		if (++j.n == BENCH_JSON_EVENTS &&
		    bench_json_put(k, &j, ++seq) == -1)
			return (-1);
	}
	return (bench_json_put(k, &j, ++seq));
}

/* What the decode alone hands over: counted. */
static long	bench_events, bench_ranks, bench_bad;

static int
bench_event(void *arg, const struct store_event_row *r)
{
	(void)arg;
	(void)r;
	bench_events++;
	return (0);
}

static int
bench_rank(void *arg, const struct store_rank *r)
{
	(void)arg;
	(void)r;
	bench_ranks++;
	return (0);
}

static int
bench_bad_fn(void *arg, const char *key, const char *why)
{
	(void)arg;
	fprintf(stderr, "batch-bench: %s: %s\n", key, why);
	bench_bad++;
	return (0);
}

/* Decodes every batch value.  Returns the CPU seconds it took. */
static double
bench_decode(const struct bench_keys *k)
{
	double	 t0 = bench_cpu();
	size_t	 i;

	for (i = 0; i < k->n; i++)
		if (strncmp(k->key[i] + strlen(BENCH_PREFIX), "evbatch/", 8) ==
		    0)
			(void)esb_decode(k->key[i] + strlen(BENCH_PREFIX),
			    k->value[i], k->len[i], bench_event, bench_rank,
			    NULL, bench_bad_fn, NULL);
	return (bench_cpu() - t0);
}

/* Takes every key into a new follower's model.  Returns the CPU seconds
 * the batches took, or -1; *ranks the ranks the model then holds, *done
 * those done. */
static double
bench_apply(const struct bench_keys *k, long *ranks, long *done)
{
	struct coord	*c;
	struct etcd	*e;
	struct job	*job;
	struct rank	*r;
	const char	*why;
	double		 t0 = 0;
	size_t		 i;
	int		 rc = 0;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (-1);
	coord_bounds_init(&c->conf);
	c->conf.events_journal_max = 1000000;
	coord_init(c);
	if ((c->base = event_base_new()) == NULL ||
	    (e = etcd_new("http://127.0.0.1:9", BENCH_PREFIX, &why)) == NULL ||
	    (c->store = store_open_etcd(e, &why)) == NULL ||
	    journal_init(c, 1) == -1)
		return (-1);
	for (i = 0; i < k->n && rc != -1; i++) {
		if (i == 2)
			t0 = bench_cpu();
		rc = load_change(c, k->key[i], k->value[i], k->len[i],
		    (int64_t)(i + 1));
	}
	t0 = bench_cpu() - t0;
	*ranks = *done = 0;
	if ((job = schedule_job_find(c, BENCH_JOB)) != NULL)
		TAILQ_FOREACH(r, &job->ranks, entry) {
			(*ranks)++;
			*done += r->state ==
			    DYNPROF__V1__RANK_STATE__RANK_DONE;
		}
	journal_load_free(c);
	journal_free(c);
	jobs_free_all(c);
	store_close(c->store);
	etcd_free(e);
	event_base_free(c->base);
	free(c);
	return (rc == -1 ? -1 : t0);
}

/* The figures of one layout, a run each. */
struct bench_fig {
	const char		*name;
	struct bench_keys	 k;
	size_t			 bytes;
	double			*dec, *app;
};

/* Decodes and applies one layout's values in run run.  Returns 0 or -1. */
static int
bench_run(struct bench_fig *f, int run, long events, int n)
{
	long	 ranks = 0, done = 0;

	bench_events = bench_ranks = 0;
	f->dec[run] = events / bench_decode(&f->k);
	if (bench_events != events || bench_ranks != events ||
	    bench_bad != 0) {
		fprintf(stderr, "batch-bench: %s: decoded %ld events, %ld rank "
		    "rows, %ld bad of %ld\n", f->name, bench_events,
		    bench_ranks, bench_bad, events);
		return (-1);
	}
	f->app[run] = bench_apply(&f->k, &ranks, &done);
	if (f->app[run] <= 0 || ranks != n || done != n) {
		fprintf(stderr, "batch-bench: %s: the model holds %ld ranks, "
		    "%ld done, of %d\n", f->name, ranks, done, n);
		return (-1);
	}
	f->app[run] = events / f->app[run];
	return (0);
}

/* Prints the median and range of k figures (sorted here). */
static void
bench_print(const char *what, double *x, int k, const char *unit)
{
	qsort(x, (size_t)k, sizeof(*x), bench_cmp);
	printf("%s: median %.2f%s (%.2f-%.2f)\n", what, x[k / 2], unit, x[0],
	    x[k - 1]);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ranks", required_argument, NULL, 'r' },
		{ "runs", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 }
	};
	struct bench_fig	 fig[2];
	double			*rdec, *rapp;
	size_t			 i;
	long			 events;
	int			 n = 100000, runs = 5, ch, run, l;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'r': n = atoi(optarg); break;
		case 'k': runs = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: dynprof-batch-bench "
			    "[--ranks N] [--runs K]\n");
			return (1);
		}
	}
	if (n < 1 || n > 1000000 || runs < 1 || runs > 1000) {
		fprintf(stderr, "batch-bench: --ranks 1-1000000, "
		    "--runs 1-1000\n");
		return (1);
	}
	events = 2L * n;
	memset(fig, 0, sizeof(fig));
	fig[0].name = "json";
	fig[1].name = "packed";
	rdec = calloc((size_t)runs, sizeof(*rdec));
	rapp = calloc((size_t)runs, sizeof(*rapp));
	for (l = 0; l < 2; l++) {
		fig[l].dec = calloc((size_t)runs, sizeof(*fig[l].dec));
		fig[l].app = calloc((size_t)runs, sizeof(*fig[l].app));
		if (fig[l].dec == NULL || fig[l].app == NULL || rdec == NULL ||
		    rapp == NULL || bench_write_rows(&fig[l].k) == -1 ||
		    (l == 0 ? bench_write_json(&fig[l].k, n) :
		    bench_write_packed(&fig[l].k, n)) == -1) {
			fprintf(stderr, "batch-bench: cannot write the "
			    "batches\n");
			return (1);
		}
		for (i = 2; i < fig[l].k.n; i++)
			fig[l].bytes += fig[l].k.len[i];
		printf("%s: %ld events of %d ranks in %zu batch values, %zu "
		    "bytes stored\n", fig[l].name, events, n, fig[l].k.n - 2,
		    fig[l].bytes);
	}
	for (run = 0; run < runs; run++) {
		for (l = 0; l < 2; l++)
			if (bench_run(&fig[l], run, events, n) == -1)
				return (1);
		rdec[run] = fig[1].dec[run] / fig[0].dec[run];
		rapp[run] = fig[1].app[run] / fig[0].app[run];
		printf("run %d: decode json %.0f packed %.0f events/s (x%.2f), "
		    "apply json %.0f packed %.0f events/s (x%.2f), CPU\n",
		    run + 1, fig[0].dec[run], fig[1].dec[run], rdec[run],
		    fig[0].app[run], fig[1].app[run], rapp[run]);
	}
	for (l = 0; l < 2; l++) {
		printf("%s: ", fig[l].name);
		bench_print("decode", fig[l].dec, runs, " events/s");
		printf("%s: ", fig[l].name);
		bench_print("apply", fig[l].app, runs, " events/s");
	}
	bench_print("packed / json, decode", rdec, runs, "x");
	bench_print("packed / json, apply", rapp, runs, "x");
	return (0);
}
