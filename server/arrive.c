/*
 * Arrivals judged: which rank of a job is the last to enter the step's
 * communication most often, the rank every other waits for at the
 * collective (as C4 and Holmes find it).  Each rank's agent sends when the
 * rank marked a step (dynprof_mark_comm()) on its node's wall clock; here
 * those times are put on the coordinator's clock, gathered per step, and
 * each step whose arrivals every rank gave names its last rank, if it came
 * well after the others: after the step's median arrival by more than P% of
 * the job's median busy time, more than ARRIVE_SLACK_US and more than the
 * floor the caller gives (a share of the job's step time: a rank that holds
 * the others for 2 ms of a 100 ms step costs the job nothing worth a
 * profile, and 2 ms is what four ranks on two cores differ by).  Over the job's
 * last ARRIVE_WINDOW steps judged, the rank that was last at more than half
 * of them (and at ARRIVE_MIN_STEPS at least) is flagged, with its share.
 *
 * Clocks.  Ranks on one node share its clock; ranks on different nodes
 * compare two clocks.  Each Progress carries the agent's wall clock when it
 * sent it: the time it arrives here less that is the one-way delay plus the
 * node's offset to the coordinator's clock, and its lowest over the node's
 * last ARRIVE_CLOCK_KEEP reports is the offset plus the smallest delay.  A
 * node's arrivals are moved by that estimate, which leaves each node's
 * times late by its smallest one-way delay: two nodes compare to within the
 * difference of those (well under a millisecond on one network), however far
 * apart their clocks are, and ARRIVE_SLACK_US keeps steps closer than that
 * from being judged.  A clock stepped under a node moves its estimate within
 * ARRIVE_CLOCK_KEEP reports.
 *
 * Pure functions over the numbers the agents report: straggler.c gathers
 * them per tick, tests/unit/test_arrive.c feeds recorded ones.
 */

#include <stdlib.h>
#include <string.h>

#include "model.h"

/* A step whose last rank came within this of the median judges nobody. */
#define ARRIVE_SLACK_US		1000
/* A report whose times stand further than this from ours is not believed
 * (a node's clock a day off, or bytes made up): no sum or difference of
 * believed times overflows. */
#define ARRIVE_FAR_US		(86400LL * 1000000)
/* Steps judged per tick at most: the newest. */
#define ARRIVE_STEPS_TICK	ARRIVE_KEEP

/* Takes a node's report sent at sent_us (its clock), received at recv_us
 * (ours): returns the node's offset estimate, ours - its, in us. */
int64_t
arrive_clock_note(struct arrive_clock *ck, int64_t sent_us, int64_t recv_us)
{
	uint32_t	 i;
	int64_t		 min;

	if (sent_us <= 0 || recv_us - sent_us > ARRIVE_FAR_US ||
	    sent_us - recv_us > ARRIVE_FAR_US)
		return (ck->n > 0 ? ck->offset_us : 0);
	ck->d[ck->head] = recv_us - sent_us;
	ck->head = (ck->head + 1) % ARRIVE_CLOCK_KEEP;
	if (ck->n < ARRIVE_CLOCK_KEEP)
		ck->n++;
	for (i = 0, min = ck->d[0]; i < ck->n; i++)
		if (ck->d[i] < min)
			min = ck->d[i];
	ck->offset_us = min;
	return (min);
}

/*
 * Returns when a node's message sent at sent_us (its clock) was sent on ours,
 * received at recv_us: moved by the node's offset estimate, never after it
 * arrived.  A message without a believable time (an older agent's) is taken
 * as sent when it arrived.
 */
int64_t
arrive_clock_sent(const struct arrive_clock *ck, int64_t sent_us,
    int64_t recv_us)
{
	int64_t	 t;

	if (ck->n == 0 || sent_us <= 0 || recv_us - sent_us > ARRIVE_FAR_US ||
	    sent_us - recv_us > ARRIVE_FAR_US)
		return (recv_us);
	t = sent_us + ck->offset_us;
	return (t < recv_us ? t : recv_us);
}

/* Forgets a rank's arrivals. */
void
arrive_rank_reset(struct rank_arrive *ra)
{
	ra->n = 0;
	ra->head = 0;
}

/* The i-th oldest arrival kept. */
#define ARRIVE_AT(ra, i)	(((ra)->head + (i)) % ARRIVE_KEEP)

/*
 * Takes n arrivals of a rank (steps ascending, times on its node's clock in
 * us) moved by the node's offset estimate off_us (arrive_clock_note()'s),
 * those within ARRIVE_FAR_US of now_us (ours) with a step in [0, max_step].
 * A step not after the newest kept is a new process or a rank that went
 * back: its arrivals start over.  Returns the arrivals taken.
 */
size_t
arrive_rank_take(struct rank_arrive *ra, const int64_t *steps,
    const int64_t *us, size_t n, int64_t off_us, int64_t now_us,
    int64_t max_step)
{
	size_t		 i, taken = 0;
	uint32_t	 k;
	int64_t		 t;

	for (i = 0; i < n; i++) {
		if (steps[i] < 0 || steps[i] > max_step || us[i] <= 0 ||
		    us[i] > now_us + 2 * ARRIVE_FAR_US)
			continue;
		t = us[i] + off_us;
		if (t - now_us > ARRIVE_FAR_US || now_us - t > ARRIVE_FAR_US)
			continue;
		if (ra->n > 0 && steps[i] <= ra->step[ARRIVE_AT(ra,
		    ra->n - 1)])
			arrive_rank_reset(ra);
		if (ra->n == ARRIVE_KEEP) {
			ra->head = (ra->head + 1) % ARRIVE_KEEP;
			ra->n--;
		}
		k = ARRIVE_AT(ra, ra->n);
		ra->step[k] = steps[i];
		ra->us[k] = t;
		ra->n++;
		taken++;
	}
	return (taken);
}

/* Forgets a job's judged steps. */
void
arrive_job_reset(struct arrive_job *aj)
{
	memset(aj, 0, sizeof(*aj));
	aj->judged_step = -1;
	aj->rank = -1;
}

/* Keeps one judged step's last rank (-1: nobody came late enough). */
static void
arrive_job_push(struct arrive_job *aj, int32_t rank, int64_t late_us)
{
	uint32_t	 k = (aj->head + aj->n) % ARRIVE_WINDOW;

	if (aj->n == ARRIVE_WINDOW) {
		aj->head = (aj->head + 1) % ARRIVE_WINDOW;
		k = (aj->head + aj->n - 1) % ARRIVE_WINDOW;
	} else
		aj->n++;
	aj->last[k] = rank;
	aj->late_us[k] = late_us;
}

/* Finds the rank last most often in the window, its count and lateness. */
static void
arrive_job_count(struct arrive_job *aj)
{
	uint32_t	 i, j, k, c;
	int64_t		 late;

	aj->rank = -1;
	aj->count = 0;
	aj->late_avg_us = 0;
	for (i = 0; i < aj->n; i++) {
		k = (aj->head + i) % ARRIVE_WINDOW;
		if (aj->last[k] < 0 || aj->last[k] == aj->rank)
			continue;
		for (j = i, c = 0, late = 0; j < aj->n; j++) {
			if (aj->last[(aj->head + j) % ARRIVE_WINDOW] !=
			    aj->last[k])
				continue;
			c++;
			late += aj->late_us[(aj->head + j) % ARRIVE_WINDOW];
		}
		if (c > aj->count || (c == aj->count && aj->last[k] <
		    aj->rank)) {
			aj->rank = aj->last[k];
			aj->count = c;
			aj->late_avg_us = late / c;
		}
	}
	aj->share = aj->n > 0 ? (float)aj->count / (float)aj->n : 0;
	aj->flagged = aj->n >= ARRIVE_MIN_STEPS && aj->count * 2 > aj->n;
}

/*
 * Returns a rank's step time from its kept arrivals, in us: the time
 * between its oldest and newest over the steps between them; 0 while it has
 * fewer than two.
 */
int64_t
arrive_rank_step_us(const struct rank_arrive *ra)
{
	int64_t		 steps, us;

	if (ra == NULL || ra->n < 2)
		return (0);
	steps = ra->step[ARRIVE_AT(ra, ra->n - 1)] - ra->step[ARRIVE_AT(ra, 0)];
	us = ra->us[ARRIVE_AT(ra, ra->n - 1)] - ra->us[ARRIVE_AT(ra, 0)];
	return (steps > 0 && us > 0 ? us / steps : 0);
}

/*
 * Judges the steps not judged yet that all of a job's n ranks (r, with
 * arrivals) gave, with the job's threshold percent, median busy time and
 * floor_us (0: none): each names its last rank, or nobody, into the job's
 * window, which names the rank last most often (aj->rank, aj->flagged).  A
 * rank whose newest arrival is older than every kept one of the freshest
 * rank stopped marking: it is left out.  With fewer than ARRIVE_MIN_RANKS
 * ranks giving arrivals (the job's ranks gone), nobody is last: the window
 * is forgotten.  Returns the steps judged, or -1 out of memory.
 */
int
arrive_judge(struct arrive_job *aj, const struct arrive_rank *r, size_t n,
    int percent, uint32_t busy_median_us, int64_t floor_us)
{
	const struct rank_arrive *fresh = NULL, *ra;
	int64_t		*v = NULL, cand[ARRIVE_STEPS_TICK], newest, oldest;
	int64_t		 gate, late, max;
	size_t		 i, m = 0, nc = 0, c, *pos = NULL, *in = NULL, last;
	uint32_t	 k;
	int		 judged = 0;

	for (i = 0; i < n; i++) {
		ra = r[i].ra;
		if (ra == NULL || ra->n == 0)
			continue;
		m++;
		if (fresh == NULL || ra->step[ARRIVE_AT(ra, ra->n - 1)] >
		    fresh->step[ARRIVE_AT(fresh, fresh->n - 1)])
			fresh = ra;
	}
	if (m < ARRIVE_MIN_RANKS) {
		arrive_job_reset(aj);
		return (0);
	}
	m = 0;
	newest = fresh->step[ARRIVE_AT(fresh, fresh->n - 1)];
	oldest = fresh->step[ARRIVE_AT(fresh, 0)];
	/* The job's steps went back (restarted from a checkpoint). */
	if (newest < aj->judged_step)
		arrive_job_reset(aj);
	for (k = 0; k < fresh->n; k++)
		if (fresh->step[ARRIVE_AT(fresh, k)] > aj->judged_step)
			cand[nc++] = fresh->step[ARRIVE_AT(fresh, k)];
	if (nc == 0)
		goto count;
	if ((in = calloc(n, sizeof(*in))) == NULL ||
	    (pos = calloc(n, sizeof(*pos))) == NULL ||
	    (v = calloc(n, sizeof(*v))) == NULL) {
		free(in);
		free(pos);
		return (-1);
	}
	for (i = 0; i < n; i++) {
		ra = r[i].ra;
		if (ra != NULL && ra->n > 0 &&
		    ra->step[ARRIVE_AT(ra, ra->n - 1)] >= oldest)
			in[m++] = i;
	}
	if (m < ARRIVE_MIN_RANKS)
		goto done;
	gate = (int64_t)busy_median_us * percent / 100;
	if (gate < ARRIVE_SLACK_US)
		gate = ARRIVE_SLACK_US;
	if (gate < floor_us)
		gate = floor_us;
	for (c = 0; c < nc; c++) {
		/* Every rank's time at cand[c], each rank's kept steps walked
		 * once over the tick (both ascending). */
		max = 0;
		last = 0;
		for (i = 0; i < m; i++) {
			ra = r[in[i]].ra;
			while (pos[i] < ra->n &&
			    ra->step[ARRIVE_AT(ra, pos[i])] < cand[c])
				pos[i]++;
			if (pos[i] == ra->n ||
			    ra->step[ARRIVE_AT(ra, pos[i])] != cand[c])
				break;
			v[i] = ra->us[ARRIVE_AT(ra, pos[i])];
			if (i == 0 || v[i] > max) {
				max = v[i];
				last = i;
			}
		}
		if (i < m)
			continue;	/* not every rank gave it (yet) */
		/* The lower median: of two ranks, the earlier. */
		late = max - median_select(v, m, (m - 1) / 2);
		arrive_job_push(aj, late > gate ? r[in[last]].rank : -1, late);
		aj->judged_step = cand[c];
		aj->steps++;
		judged++;
	}
done:
	free(in);
	free(pos);
	free(v);
count:
	arrive_job_count(aj);
	return (judged);
}
