/*
 * The ranks of a window compared (GET /v1/jobs/{job}/windows/{id}/compare):
 * from each collected trace's summary (traces.c's records, common/tracesum.h),
 * each rank's median step time, time in collectives and compute time (the
 * step's time less that), the window's median of them and their spread,
 * the slowest ranks by step and by compute and how far off the median they
 * are, the straggler, and the operators whose total time differs most
 * between ranks.  A query above the index (traces_list.c); the model's side
 * only.
 *
 * The straggler: in synchronous training every rank's step lasts as long
 * (the fast ranks wait for the slow one inside the collectives), so when
 * the ranks' median steps agree within COMPARE_SYNC_PCT % and their time in
 * collectives differs by COMPARE_COMM_PCT % of the median step or more, it
 * is the rank with the longest compute (the one that waits least), if that
 * is over the ranks' median compute by COMPARE_COMM_PCT % of a step; else,
 * when steps do not agree, the slowest by step if it is over the median by
 * COMPARE_SYNC_PCT %.
 */

#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "tracesum.h"

/* An operator's totals across the ranks, while they are read. */
struct compare_op_acc {
	char		 name[TRACESUM_NAME_MAX + 1];
	int64_t		 min_us, max_us, sum_us;
	int32_t		 min_rank, max_rank;
	uint32_t	 nranks;
};

/* The longer of two ranks' times first; of two as long, the lower rank. */
static int
compare_cmp_longer(int64_t x, int64_t y, int32_t xr, int32_t yr)
{
	if (x != y)
		return (x > y ? -1 : 1);
	return (xr < yr ? -1 : xr > yr);
}

/* Slowest step first. */
static int
compare_cmp_slow(const void *a, const void *b)
{
	const struct compare_rank *x = a, *y = b;

	return (compare_cmp_longer(x->median_us, y->median_us, x->rank,
	    y->rank));
}

/* The longest compute first. */
static int
compare_cmp_compute(const void *a, const void *b)
{
	const struct compare_rank *x = a, *y = b;

	return (compare_cmp_longer(x->compute_us, y->compute_us, x->rank,
	    y->rank));
}

/* The median (the lower of two) of the n values at v (reordered) into
 * *med, with the least and the most; -1 for none. */
static void
compare_median(int64_t *v, size_t n, int64_t *med, int64_t *min,
    int64_t *max)
{
	size_t	 i;

	*med = *min = *max = -1;
	for (i = 0; i < n; i++) {
		if (i == 0 || v[i] < *min)
			*min = v[i];
		if (v[i] > *max)
			*max = v[i];
	}
	if (n > 0)
		*med = median_select(v, n, (n - 1) / 2);
}

/* Copies the rows of out->ranks keep() takes into *rows, sorted by cmp and
 * cut at COMPARE_SLOWEST.  Returns 0, or -1 out of memory. */
static int
compare_rows(const struct traces_compare *out, int (*keep)(const struct
    compare_rank *), int (*cmp)(const void *, const void *),
    struct compare_rank **rows, size_t *n)
{
	size_t	 i;

	*n = 0;
	if ((*rows = calloc(out->n + 1, sizeof(**rows))) == NULL)
		return (-1);
	for (i = 0; i < out->n; i++)
		if (keep(&out->ranks[i]))
			(*rows)[(*n)++] = out->ranks[i];
	qsort(*rows, *n, sizeof(**rows), cmp);
	if (*n > COMPARE_SLOWEST)
		*n = COMPARE_SLOWEST;
	for (i = 0; i < *n; i++)
		(*rows)[i].sum = NULL;	/* the ranks' rows own them */
	return (0);
}

static int
compare_has_steps(const struct compare_rank *r)
{
	return (r->median_us >= 0);
}

static int
compare_has_compute(const struct compare_rank *r)
{
	return (r->compute_us >= 0);
}

/* us in percent of the median step (in doubles: the times are a peer's,
 * any int64); 0 without a median. */
static double
compare_pct(const struct traces_compare *out, int64_t us)
{
	return (out->median_us > 0 ? (double)us * 100.0 /
	    (double)out->median_us : 0.0);
}

/* Names out's straggler, if one stands out (the rule atop this file). */
static void
compare_straggler(struct traces_compare *out)
{
	struct compare_straggler	*st = &out->straggler;
	const struct compare_rank	*top, *waits = NULL;
	size_t				 i;

	memset(st, 0, sizeof(*st));
	if (out->compared < 2 || out->median_us <= 0)
		return;
	if (out->synchronous && out->ncomm >= 2 && out->nslowest_compute > 0 &&
	    compare_pct(out, out->comm_max_us - out->comm_min_us) >=
	    COMPARE_COMM_PCT) {
		top = &out->slowest_compute[0];
		if (compare_pct(out, top->compute_us - out->compute_median_us) <
		    COMPARE_COMM_PCT)
			return;
		for (i = 0; i < out->n; i++)
			if (out->ranks[i].comm_us >= 0 &&
			    out->ranks[i].comm_op[0] != '\0' && (waits == NULL ||
			    out->ranks[i].comm_us > waits->comm_us))
				waits = &out->ranks[i];
		st->by = COMPARE_BY_COMPUTE;
		st->r = *top;
		st->waited_in = waits != NULL ? waits->comm_op : NULL;
		return;
	}
	if (!out->synchronous && out->nslowest > 0 &&
	    compare_pct(out, out->slowest[0].median_us - out->median_us) >
	    COMPARE_SYNC_PCT) {
		st->by = COMPARE_BY_STEP;
		st->r = out->slowest[0];
	}
}

/* The widest difference first. */
static int
compare_cmp_op(const void *a, const void *b)
{
	const struct compare_op *x = a, *y = b;
	int64_t	 dx = x->max_us - x->min_us, dy = y->max_us - y->min_us;

	if (dx != dy)
		return (dx > dy ? -1 : 1);
	return (strcmp(x->name, y->name));
}

/* Adds rank's operators' totals to acc (n of them, at most cap). */
static void
compare_ops_add(struct compare_op_acc *acc, size_t *n, size_t cap,
    int32_t rank, const struct tracesum *s)
{
	struct compare_op_acc	*o;
	uint32_t		 i;
	size_t			 k;

	for (i = 0; i < s->nops; i++) {
		for (k = 0; k < *n; k++)
			if (strcmp(acc[k].name, s->ops[i].name) == 0)
				break;
		if (k == *n) {
			if (*n >= cap)
				continue;	/* past the bound: not compared */
			o = &acc[(*n)++];
			memcpy(o->name, s->ops[i].name, sizeof(o->name));
			o->min_us = o->max_us = s->ops[i].total_us;
			o->min_rank = o->max_rank = rank;
		}
		o = &acc[k];
		if (s->ops[i].total_us < o->min_us) {
			o->min_us = s->ops[i].total_us;
			o->min_rank = rank;
		}
		if (s->ops[i].total_us > o->max_us) {
			o->max_us = s->ops[i].total_us;
			o->max_rank = rank;
		}
		o->sum_us += s->ops[i].total_us;
		o->nranks++;
	}
}

/*
 * Compares the ranks of q->job's window q->window from their traces'
 * summaries: fills out (traces_compare_free() frees it).  Returns 0, or -1
 * with the refusal (404: no such job or window).
 */
int
traces_compare(struct coord *c, const struct traces_query *q,
    struct traces_compare *out, struct refusal *ref)
{
	struct traces_list	 l;
	struct compare_op_acc	*acc = NULL;
	struct compare_rank	*cr;
	struct tracesum		 s;
	const struct trace_rec	*x;
	const char		*why;
	int64_t			*med = NULL, *comm = NULL, *comp = NULL;
	size_t			 i, nacc = 0, nmed = 0, ncomm = 0;
	int			 rc = -1;

	memset(out, 0, sizeof(*out));
	if (traces_list(c, q, &l, ref) == -1)
		return (-1);
	out->collected = l.collected;
	out->failed = l.failed;
	out->pending = l.pending;
	if (l.n == 0) {
		traces_list_free(&l);
		return (0);
	}
	if ((out->ranks = calloc(l.n, sizeof(*out->ranks))) == NULL ||
	    (med = calloc(l.n, sizeof(*med))) == NULL ||
	    (comm = calloc(l.n, sizeof(*comm))) == NULL ||
	    (comp = calloc(l.n, sizeof(*comp))) == NULL ||
	    (acc = calloc(COMPARE_OPS_SEEN, sizeof(*acc))) == NULL ||
	    (out->ops = calloc(COMPARE_OPS_SEEN, sizeof(*out->ops))) == NULL) {
		(void)refusal_set(ref, 503, "compare", "out of memory");
		goto done;
	}
	for (i = 0; i < l.n; i++) {
		x = l.entries[i].rec;
		if (x == NULL || x->kind !=
		    DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED)
			continue;
		if (x->sum == NULL || tracesum_decode(x->sum, &s, &why) == -1) {
			out->unread++;
			continue;
		}
		cr = &out->ranks[out->n++];
		cr->rank = x->rank;
		cr->node = x->node;
		cr->median_us = tracesum_step_median(&s);
		cr->comm_us = tracesum_comm_median(&s);
		cr->compute_us = tracesum_compute_median(&s);
		memcpy(cr->comm_op, s.comm_op.name, sizeof(cr->comm_op));
		cr->nsteps = s.nsteps;
		if (out->n <= COMPARE_RANKS_SHOWN &&
		    (cr->sum = malloc(sizeof(*cr->sum))) != NULL)
			*cr->sum = s;
		if (cr->median_us >= 0)
			med[nmed++] = cr->median_us;
		if (cr->comm_us >= 0) {
			comm[ncomm] = cr->comm_us;
			comp[ncomm++] = cr->compute_us;
		}
		compare_ops_add(acc, &nacc, COMPARE_OPS_SEEN, x->rank, &s);
	}
	out->compared = nmed;
	out->ncomm = ncomm;
	if (nmed > 0) {
		compare_median(med, nmed, &out->median_us, &out->min_us,
		    &out->max_us);
		out->synchronous = nmed >= 2 && out->median_us > 0 &&
		    compare_pct(out, out->max_us - out->min_us) <=
		    COMPARE_SYNC_PCT;
	}
	compare_median(comm, ncomm, &out->comm_median_us, &out->comm_min_us,
	    &out->comm_max_us);
	compare_median(comp, ncomm, &out->compute_median_us,
	    &out->compute_min_us, &out->compute_max_us);
	/* The slowest by step and by compute: copies of the rows, sorted. */
	if (compare_rows(out, compare_has_steps, compare_cmp_slow,
	    &out->slowest, &out->nslowest) == -1 || compare_rows(out,
	    compare_has_compute, compare_cmp_compute, &out->slowest_compute,
	    &out->nslowest_compute) == -1) {
		(void)refusal_set(ref, 503, "compare", "out of memory");
		goto done;
	}
	compare_straggler(out);
	/* The operators reported by two ranks or more, widest first. */
	for (i = 0; i < nacc; i++) {
		if (acc[i].nranks < 2)
			continue;
		memcpy(out->ops[out->nops].name, acc[i].name,
		    sizeof(out->ops[0].name));
		out->ops[out->nops].min_us = acc[i].min_us;
		out->ops[out->nops].max_us = acc[i].max_us;
		out->ops[out->nops].min_rank = acc[i].min_rank;
		out->ops[out->nops].max_rank = acc[i].max_rank;
		out->ops[out->nops].mean_us = acc[i].sum_us / acc[i].nranks;
		out->ops[out->nops].nranks = acc[i].nranks;
		if (++out->nops == COMPARE_OPS_SEEN)
			break;
	}
	qsort(out->ops, out->nops, sizeof(out->ops[0]), compare_cmp_op);
	if (out->nops > COMPARE_OPS_SHOWN)
		out->nops = COMPARE_OPS_SHOWN;
	rc = 0;
done:
	free(med);
	free(comm);
	free(comp);
	free(acc);
	traces_list_free(&l);
	if (rc == -1)
		traces_compare_free(out);
	return (rc);
}

/* Frees what traces_compare() filled. */
void
traces_compare_free(struct traces_compare *tc)
{
	size_t	 i;

	for (i = 0; i < tc->n; i++)
		free(tc->ranks[i].sum);
	free(tc->ranks);
	free(tc->slowest);
	free(tc->slowest_compute);
	free(tc->ops);
	memset(tc, 0, sizeof(*tc));
}
