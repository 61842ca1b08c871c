/*
 * The ranks of a window compared (GET /v1/jobs/{job}/windows/{id}/compare):
 * from each collected trace's summary (traces.c's records, common/tracesum.h),
 * each rank's median step time, the window's median of them and their
 * spread, the slowest ranks and how far off the median they are, and the
 * operators whose total time differs most between ranks.  A query above
 * the index (traces_list.c); the model's side only.
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

/* Slowest first; of two as slow, the lower rank. */
static int
compare_cmp_slow(const void *a, const void *b)
{
	const struct compare_rank *x = a, *y = b;

	if (x->median_us != y->median_us)
		return (x->median_us > y->median_us ? -1 : 1);
	return (x->rank < y->rank ? -1 : x->rank > y->rank);
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
	int64_t			*med = NULL;
	size_t			 i, nacc = 0, nmed = 0;
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
		cr->nsteps = s.nsteps;
		if (out->n <= COMPARE_RANKS_SHOWN &&
		    (cr->sum = malloc(sizeof(*cr->sum))) != NULL)
			*cr->sum = s;
		if (cr->median_us >= 0) {
			if (nmed == 0 || cr->median_us < out->min_us)
				out->min_us = cr->median_us;
			if (cr->median_us > out->max_us)
				out->max_us = cr->median_us;
			med[nmed++] = cr->median_us;
		}
		compare_ops_add(acc, &nacc, COMPARE_OPS_SEEN, x->rank, &s);
	}
	out->compared = nmed;
	if (nmed > 0)
		out->median_us = median_select(med, nmed, (nmed - 1) / 2);
	/* The slowest: a copy of the rows, sorted. */
	if ((out->slowest = calloc(out->n, sizeof(*out->slowest))) == NULL) {
		(void)refusal_set(ref, 503, "compare", "out of memory");
		goto done;
	}
	for (i = 0; i < out->n; i++)
		if (out->ranks[i].median_us >= 0)
			out->slowest[out->nslowest++] = out->ranks[i];
	qsort(out->slowest, out->nslowest, sizeof(*out->slowest),
	    compare_cmp_slow);
	if (out->nslowest > COMPARE_SLOWEST)
		out->nslowest = COMPARE_SLOWEST;
	for (i = 0; i < out->nslowest; i++)
		out->slowest[i].sum = NULL;	/* the rows own them */
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
	free(tc->ops);
	memset(tc, 0, sizeof(*tc));
}
