/*
 * Busy time judged: which ranks of a job compute longer than the others
 * before they enter the step's communication (dynprof_mark_comm()), and which
 * became slower than they were.  In synchronous training every rank waits for
 * the slowest at each collective, so steps and rates are equal everywhere;
 * only the busy time shows the rank the others wait for.
 *
 * Two signals, each against the job's threshold P percent:
 *
 *   busy	the rank's busy time over the job's median by more than P%,
 *		at BUSY_OVER_TICKS judgements in a row, its moving average
 *		and its last step's both: one step held up (a process stalled
 *		for 60 ms lifts a 20 ms average by 30% for a step or two) is
 *		not a straggler; one whose every step is slow is flagged a
 *		tick later.  Its score, as NVIDIA's resiliency-ext reports it,
 *		is the fastest rank's busy time over its own (1: the fastest).
 *   change	a one-sided CUSUM (Page's) of the rank's busy time relative
 *		to the job's median, against the rank's own baseline: each
 *		tick adds its rise over the baseline less 1 + P/3, the sum
 *		kept at or above 0; over 2P, with the rank now over the
 *		median by more than P/3, the rank changed.  A rank that
 *		became slower by about P% is found in a few ticks even when
 *		it is not the slowest (25% at the default 30: about 5 ticks),
 *		one tick of noise must rise by 2P + P/3 to alarm, a rank that
 *		drifts from the fastest to the median is not flagged, and a
 *		job that slows as a whole moves no rank.
 *
 * Either signal flags a rank only when its busy time stands over the job's
 * median by more than the floor the caller gives (a share of the job's step
 * time): a rank busy 2.2 ms where the others are 0.8 ms, in steps of 100 ms,
 * is noise to a job, however many times the median that is.
 *
 * Pure functions over the numbers the agents report: straggler.c gathers
 * them per tick, tests/unit/test_busy.c feeds recorded ones.
 */

#include <stdlib.h>

#include "model.h"

/* Ticks of a rank's relative busy time averaged into its own baseline before
 * the change test judges it. */
#define BUSY_LEARN_TICKS	4
/* While nothing rose, the baseline follows by 1/BUSY_BASE_FOLLOW a tick. */
#define BUSY_BASE_FOLLOW	16
/* The CUSUM is kept under BUSY_CUSUM_CAP times its alarm level, so that a
 * rank that recovers is cleared in a bounded number of ticks. */
#define BUSY_CUSUM_CAP		4.0f
/* Judgements in a row a rank's busy time stands over the median before it
 * is flagged "busy". */
#define BUSY_OVER_TICKS		2

/* Forgets a rank's history (a new process, or a rank that stopped marking). */
void
busy_history_reset(struct busy_history *h)
{
	*h = (struct busy_history){ .rise = -1 };
}

/*
 * Takes one relative busy time x (the rank's over the job's median) into the
 * rank's history: h->changed says whether the rank's busy time rose by about
 * percent against its own baseline and now stands over the median, h->rise
 * the ratio to the baseline (-1 while the baseline is learnt).  Returns
 * h->changed.
 */
int
busy_history_update(struct busy_history *h, float x, int percent)
{
	float	 p = (float)percent / 100.0f, k = p / 3, alarm = 2 * p;

	if (h->nbase < BUSY_LEARN_TICKS) {
		h->base = (h->base * (float)h->nbase + x) / (float)(h->nbase + 1);
		h->nbase++;
		h->rise = -1;
		h->changed = 0;
		return (0);
	}
	if (h->base <= 0)
		return (0);
	h->rise = x / h->base;
	h->cusum += h->rise - 1 - k;
	if (h->cusum < 0)
		h->cusum = 0;
	if (h->cusum > BUSY_CUSUM_CAP * alarm)
		h->cusum = BUSY_CUSUM_CAP * alarm;
	if (h->cusum == 0)
		h->base += (x - h->base) / BUSY_BASE_FOLLOW;
	/* Risen, and now over the job's median by as much: a rank that drifts
	 * from the fastest to the median holds nobody back. */
	h->changed = h->cusum > alarm && x > 1 + k;
	return (h->changed);
}

/*
 * Judges the busy times of one job's n ranks (those with busy_us 0 give none
 * and are left alone), with threshold percent and floor_us (0: none), the
 * least a flagged rank stands over the median: sets each rank's flags
 * (BUSY_OVER: its average and its last step's busy time over, at
 * BUSY_OVER_TICKS calls in a row; BUSY_CHANGE), score, over and rise, and
 * the job's median and
 * fastest in *jb.  A rank's history moves only when fresh is set (a new busy
 * time since the last tick).  Returns the ranks judged, or -1 out of memory.
 */
int
busy_judge(struct busy_rank *r, size_t n, int percent, int64_t floor_us,
    struct busy_job *jb)
{
	int64_t		*v;
	size_t		 i, m = 0;
	float		 x, bar = (float)(100 + percent);
	int		 over, stands;

	jb->median_us = 0;
	jb->fastest_us = 0;
	jb->slowest_us = 0;
	jb->nover = jb->nchange = 0;
	for (i = 0; i < n; i++) {
		r[i].flags = 0;
		r[i].score = -1;
		r[i].over = -1;
		r[i].rise = -1;
		if (r[i].busy_us > 0)
			m++;
	}
	if (m < BUSY_MIN_RANKS)
		return ((int)m);
	if ((v = calloc(m, sizeof(*v))) == NULL)
		return (-1);
	m = 0;
	for (i = 0; i < n; i++)
		if (r[i].busy_us > 0) {
			v[m++] = r[i].busy_us;
			if (jb->fastest_us == 0 || r[i].busy_us < jb->fastest_us)
				jb->fastest_us = r[i].busy_us;
			if (r[i].busy_us > jb->slowest_us)
				jb->slowest_us = r[i].busy_us;
		}
	/* The lower median: of two ranks, the faster. */
	jb->median_us = (uint32_t)median_select(v, m, (m - 1) / 2);
	free(v);
	for (i = 0; i < n; i++) {
		if (r[i].busy_us == 0)
			continue;
		r[i].score = (float)jb->fastest_us / (float)r[i].busy_us;
		x = (float)r[i].busy_us / (float)jb->median_us;
		r[i].over = x;
		stands = (int64_t)r[i].busy_us - (int64_t)jb->median_us >
		    floor_us;
		over = stands && x * 100.0f > bar && (r[i].last_us == 0 ||
		    (float)r[i].last_us * 100.0f > bar * (float)jb->median_us);
		if (!over)
			r[i].hist->over_ticks = 0;
		else if (r[i].hist->over_ticks < BUSY_OVER_TICKS)
			r[i].hist->over_ticks++;
		if (over && r[i].hist->over_ticks >= BUSY_OVER_TICKS) {
			r[i].flags |= BUSY_OVER;
			jb->nover++;
		}
		if (r[i].fresh)
			busy_history_update(r[i].hist, x, percent);
		r[i].rise = r[i].hist->rise;
		if (r[i].hist->changed && stands) {
			r[i].flags |= BUSY_CHANGE;
			jb->nchange++;
		}
	}
	return ((int)m);
}
