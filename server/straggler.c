/*
 * Stragglers: from the steps the agents report, each job's median step and
 * step rate, and the ranks (and their nodes) that lag the median by more than
 * a number of steps or whose rate fell under the job's by more than a share;
 * from the busy times of the ranks that mark their communication, the ranks
 * that compute longer than the job's median or than they used to (busy.c):
 * the straggler synchronous training hides, where every rank shows the same
 * step and rate; from when they enter it, the rank last to arrive most often
 * (arrive.c).
 *
 * A rank's step is judged at the time its agent sent it (each Progress and
 * Heartbeat carries the agent's wall clock, put on ours by the node's offset
 * estimate, arrive.c), not at the time it arrived nor at the tick: agents
 * sample their ranks at their own times, and a report delayed by load, a
 * batch or a reconnect is older than it looks.  A rank's rate is its steps
 * over the time between its reports' sending; its lag compares the ranks'
 * steps each moved on by its rate to the tick (at most a rate period), so
 * that ranks in lockstep reported at different times show no lag, while a
 * rank that really falls behind does.  A rank is not judged for lag before a
 * second report gives it a rate (in its first period, over the time since
 * it was first seen).
 *
 * The work is done on the housekeeping timer, once per heartbeat interval, in
 * time linear in the job's ranks (a selection, not a sort, finds the medians;
 * only the flagged ranks are sorted), never per request: a request reads what
 * the last tick kept, which is bounded (STRAGGLER_KEEP_MAX ranks,
 * STRAGGLER_NODES_KEEP nodes) whatever the job's size.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "model.h"
#include "straggler.h"

/* Of those, how many the job summary shows. */
#define STRAGGLER_SUMMARY_MAX	10
/* A rank's rate is measured over this many heartbeat intervals. */
#define STRAGGLER_RATE_TICKS	5
/*
 * A rate's ceiling, steps/s: a step may jump by up to COORD_STEP_MAX in a
 * period (4.6e21 steps/s over 1 ms), and a rate is turned into milli-steps
 * in an int64_t: capped here, it stays in range (1e15).
 */
#define STRAGGLER_RATE_MAX	1e12f
/* Fewer ranks than this reporting a step: nobody is judged. */
#define STRAGGLER_MIN_RANKS	2
/* A rank is busy or last only when it costs the job more than this percent
 * of its step time (the median over ranks of the time between their marks):
 * what four ranks on two cores differ by, 1-3 ms in 100 ms steps, is none. */
#define STRAGGLER_STEP_SHARE	5

/* Sets s to a job never judged, with no thresholds of its own. */
static void
straggler_init(struct straggler *s)
{
	memset(s, 0, sizeof(*s));
	s->lag = -1;
	s->rate_drop = -1;
	s->busy = -1;
	s->def_lag = -1;
	s->def_drop = s->def_busy = -1;
	s->median_step = -1;
	s->median_rate = -1;
	arrive_job_reset(&s->aj);
}

/* Returns the job's straggler state, creating it.  NULL: out of memory. */
static struct straggler *
straggler_get(struct job *job)
{
	struct straggler	*s;

	if (job->strag != NULL)
		return (job->strag);
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return (NULL);
	straggler_init(s);
	job->strag = s;
	return (s);
}

/* Frees a job's straggler state. */
void
straggler_job_free(struct job *job)
{
	if (job->strag != NULL)
		free(job->strag->view_row);
	free(job->strag);
	job->strag = NULL;
}

/*
 * Takes the leader's judgement of a job into a follower's copy
 * (stragview.c): from's (NULL: none), keeping the job's own thresholds.
 * Returns 0, or -1 out of memory.
 */
int
straggler_take(struct job *job, const struct straggler *from)
{
	struct straggler	*s;
	int64_t			 lag;
	int			 drop, busy;

	if (from == NULL && job->strag == NULL)
		return (0);
	if ((s = straggler_get(job)) == NULL)
		return (-1);
	lag = s->lag;
	drop = s->rate_drop;
	busy = s->busy;
	free(s->view_row);
	if (from != NULL)
		*s = *from;
	else
		straggler_init(s);
	s->lag = lag;
	s->rate_drop = drop;
	s->busy = busy;
	s->view_row = NULL;
	s->compute_ns = 0;
	return (0);
}

/*
 * Sets a job's own thresholds (-1: the coordinator's default).  Returns 0, or
 * -1 out of memory.
 */
int
straggler_set_thresholds(struct job *job, int64_t lag, int rate_drop)
{
	struct straggler	*s;

	if ((s = straggler_get(job)) == NULL)
		return (-1);
	s->lag = lag;
	s->rate_drop = rate_drop;
	return (0);
}

/* Returns the job's own thresholds, -1 for each it does not set. */
void
straggler_own_thresholds(const struct job *job, int64_t *lag, int *rate_drop)
{
	*lag = job->strag != NULL ? job->strag->lag : -1;
	*rate_drop = job->strag != NULL ? job->strag->rate_drop : -1;
}

/* Sets a job's own busy threshold (-1: the default).  Returns 0, or -1 out
 * of memory. */
int
straggler_set_busy(struct job *job, int busy)
{
	struct straggler	*s;

	if ((s = straggler_get(job)) == NULL)
		return (-1);
	s->busy = busy;
	return (0);
}

/* Returns the job's own busy threshold, -1 if it sets none. */
int
straggler_own_busy(const struct job *job)
{
	return (job->strag != NULL ? job->strag->busy : -1);
}

/* Returns the busy threshold that judges the job: its own, else the flag's
 * (the leader's, in a follower's copy). */
int
straggler_busy(const struct coord *c, const struct job *job)
{
	int	 busy = straggler_own_busy(job);

	if (busy < 0 && job->strag != NULL)
		busy = job->strag->def_busy;
	return (busy >= 0 ? busy : c->conf.straggler_busy);
}

/* Returns the thresholds that judge the job: its own, else the flags' (the
 * leader's, in a follower's copy). */
void
straggler_thresholds(const struct coord *c, const struct job *job,
    int64_t *lag, int *rate_drop)
{
	straggler_own_thresholds(job, lag, rate_drop);
	/* A follower's copy: the leader's flags judged it. */
	if (*lag < 0 && job->strag != NULL)
		*lag = job->strag->def_lag;
	if (*rate_drop < 0 && job->strag != NULL)
		*rate_drop = job->strag->def_drop;
	if (*lag < 0)
		*lag = c->conf.straggler_lag;
	if (*rate_drop < 0)
		*rate_drop = c->conf.straggler_rate_drop;
}

/* The node of the ranks judged last, looked up once for a run of them. */
struct straggler_at {
	const char	*name;		/* NULL: none yet */
	int		 up;
	int64_t		 sent_us;	/* its reports' time, ours */
};

/*
 * Returns 1 if the rank is judged: a step reported, alive, its node up; its
 * node's last report's time in at.
 */
static int
straggler_judged(struct coord *c, const struct rank *r, int64_t now_us,
    struct straggler_at *at)
{
	struct node	*n;

	if (r->step < 0 || r->state == DYNPROF__V1__RANK_STATE__RANK_GONE ||
	    r->node[0] == '\0')
		return (0);
	/* Ranks arrive node by node: the last node looked up is kept. */
	if (at->name == NULL || strcmp(at->name, r->node) != 0) {
		n = schedule_node_find(c, r->node);
		at->name = r->node;
		at->up = n != NULL && n->conn != NULL;
		at->sent_us = n != NULL && n->sent_us > 0 &&
		    n->sent_us <= now_us ? n->sent_us : now_us;
	}
	return (at->up);
}

/*
 * Measures a rank's rate over each period of the coordinator's clock (now /
 * period), from the first tick of one to the first tick of the next: every
 * rank of a job over the same ticks, so that a pause of the whole job (every
 * rank waiting at a collective for a second) lowers all their rates alike and
 * makes none "slow" against the others.  The steps it made are divided by
 * the time between the reports that gave them (sent_us, when its node sent
 * its last report), not between the ticks: a report that came late does not
 * make the rank slower in one period and faster in the next.  A rank first
 * seen within a period is measured from the next.
 */
static void
straggler_pace(struct rank *r, uint64_t now, uint64_t period, int64_t sent_us)
{
	struct rank_pace	*p = &r->pace;
	uint64_t		 cur = now / period;

	if (p->ref_ms == 0 || r->step < p->ref_step) {
		/* First sight, or a new process started over. */
		p->ref_step = p->first_step = r->step;
		p->ref_ms = now;
		p->ref_sent_us = p->first_sent_us = sent_us;
		p->ref_period = cur;
		p->aligned = 0;
		p->rate = -1;
		return;
	}
	if (cur == p->ref_period)
		return;
	if (p->aligned && cur == p->ref_period + 1) {
		if (sent_us > p->ref_sent_us) {
			p->rate = (float)(r->step - p->ref_step) * 1e6f /
			    (float)(sent_us - p->ref_sent_us);
			if (p->rate > STRAGGLER_RATE_MAX)
				p->rate = STRAGGLER_RATE_MAX;
		} else
			p->rate = -1;	/* nothing new from its node */
	}
	p->ref_step = r->step;
	p->ref_ms = now;
	p->ref_sent_us = sent_us;
	p->ref_period = cur;
	p->aligned = 1;
}

/*
 * Returns the rate a rank's step moves on by, steps/s: its rate over the last
 * period, else (in its first periods) over the time since it was first seen,
 * its node's reports' times (sent_us) apart; -1 when no report came since.
 */
static float
straggler_rate_now(const struct rank *r, int64_t sent_us)
{
	const struct rank_pace	*p = &r->pace;
	float			 rate;

	if (p->rate >= 0)
		return (p->rate);
	if (sent_us <= p->first_sent_us || r->step < p->first_step)
		return (-1);
	rate = (float)(r->step - p->first_step) * 1e6f /
	    (float)(sent_us - p->first_sent_us);
	return (rate < STRAGGLER_RATE_MAX ? rate : STRAGGLER_RATE_MAX);
}

/*
 * Returns the step a rank reported at sent_us moved on to now_us by its rate
 * (straggler_rate_now(), none if unknown), for at most cap_us: where it would
 * be had its report been sent at the tick.
 */
static int64_t
straggler_step_now(const struct rank *r, int64_t sent_us, int64_t now_us,
    int64_t cap_us)
{
	float	 rate = straggler_rate_now(r, sent_us);
	int64_t	 age = now_us - sent_us;
	double	 ahead;

	if (rate <= 0 || age <= 0)
		return (r->step);
	if (age > cap_us)
		age = cap_us;
	ahead = (double)rate * (double)age / 1e6;
	if (!(ahead < (double)(COORD_STEP_MAX - r->step)))
		return (COORD_STEP_MAX);
	return (r->step + (int64_t)ahead);
}

/*
 * Orders flagged ranks worst first: those that lag, the longest lag first;
 * then those whose busy time stands out, the longest over the median first;
 * then the slowest.
 */
static int
straggler_cmp(const void *a, const void *b)
{
	const struct rank	*x = *(struct rank *const *)a;
	const struct rank	*y = *(struct rank *const *)b;
	int			 xl = x->pace.straggling & STRAGGLER_LAG;
	int			 yl = y->pace.straggling & STRAGGLER_LAG;

	if (xl != yl)
		return (xl ? -1 : 1);
	if (!xl && x->busy.over != y->busy.over)
		return (x->busy.over > y->busy.over ? -1 : 1);
	if (x->pace.step_now != y->pace.step_now)
		return (x->pace.step_now < y->pace.step_now ? -1 : 1);
	if (x->pace.rate != y->pace.rate)
		return (x->pace.rate < y->pace.rate ? -1 : 1);
	return (x->rank < y->rank ? -1 : x->rank > y->rank);
}

/* Orders nodes by their flagged ranks, most first, then by name. */
static int
straggler_node_cmp(const void *a, const void *b)
{
	const struct straggler_node	*x = a, *y = b;

	if (x->ranks != y->ranks)
		return (x->ranks > y->ranks ? -1 : 1);
	return (strcmp(x->node, y->node));
}

/*
 * Counts the flagged ranks (sorted by node) by node into s->nodes, the nodes
 * with most kept.
 */
static void
straggler_count_nodes(struct straggler *s, struct rank **flagged, size_t n)
{
	struct straggler_node	*all, *cur;
	size_t			 i, j, nall = 0;

	s->nnodes = 0;
	s->nnodes_kept = 0;
	for (i = 0; i < n; i++)
		if (i == 0 || strcmp(flagged[i]->node, flagged[i - 1]->node))
			s->nnodes++;
	if (s->nnodes == 0 || (all = calloc(s->nnodes, sizeof(*all))) == NULL)
		return;
	for (i = 0; i < n; i = j) {
		cur = &all[nall++];
		memcpy(cur->node, flagged[i]->node, sizeof(cur->node));
		cur->min_step = flagged[i]->step;
		for (j = i; j < n && strcmp(flagged[j]->node,
		    flagged[i]->node) == 0; j++) {
			cur->ranks++;
			if (flagged[j]->step < cur->min_step)
				cur->min_step = flagged[j]->step;
		}
	}
	qsort(all, nall, sizeof(*all), straggler_node_cmp);
	s->nnodes_kept = nall < STRAGGLER_NODES_KEEP ? nall :
	    STRAGGLER_NODES_KEEP;
	memcpy(s->nodes, all, s->nnodes_kept * sizeof(*all));
	free(all);
}

/* Orders ranks by node name, for counting them by node. */
static int
straggler_by_node(const void *a, const void *b)
{
	const struct rank	*x = *(struct rank *const *)a;
	const struct rank	*y = *(struct rank *const *)b;

	return (strcmp(x->node, y->node));
}

/* Keeps the worst flagged ranks, and counts them by node. */
static void
straggler_keep(struct straggler *s, struct rank **flagged, size_t n)
{
	struct straggler_entry	*e;
	size_t			 i;

	if (n > 1)
		qsort(flagged, n, sizeof(*flagged), straggler_cmp);
	s->nlist = n < STRAGGLER_KEEP_MAX ? n : STRAGGLER_KEEP_MAX;
	for (i = 0; i < s->nlist; i++) {
		e = &s->list[i];
		e->rank = flagged[i]->rank;
		e->reasons = flagged[i]->pace.straggling;
		e->step = flagged[i]->step;
		e->lag = s->median_step - flagged[i]->pace.step_now;
		e->rate = flagged[i]->pace.rate;
		e->busy_us = flagged[i]->busy.count > 0 ?
		    flagged[i]->busy.avg_us : 0;
		e->busy_score = flagged[i]->busy.score;
		e->busy_over = flagged[i]->busy.over;
		e->busy_rise = flagged[i]->busy.hist.rise;
		e->last_share = -1;
		e->last_late_us = 0;
		if (s->aj.rank == flagged[i]->rank && s->aj.n > 0) {
			e->last_share = s->aj.share;
			e->last_late_us = s->aj.late_avg_us;
		}
		memcpy(e->node, flagged[i]->node, sizeof(e->node));
	}
	if (n > 1)
		qsort(flagged, n, sizeof(*flagged), straggler_by_node);
	straggler_count_nodes(s, flagged, n);
}

/* Returns the least a busy or last rank of the job costs it, in us. */
static int64_t
straggler_floor_us(const struct straggler *s)
{
	return (s->step_us * STRAGGLER_STEP_SHARE / 100);
}

/*
 * Judges the busy times of the job's nb judged ranks that give one (br, their
 * rank in arg): flags them, keeps each one's score, and counts them.
 * Returns 0, or -1 out of memory.
 */
static int
straggler_busy_judge(struct coord *c, struct job *job, struct straggler *s,
    struct busy_rank *br, size_t nb)
{
	struct rank	*r;
	size_t		 i;

	if (busy_judge(br, nb, straggler_busy(c, job), straggler_floor_us(s),
	    &s->bj) == -1)
		return (-1);
	for (i = 0; i < nb; i++) {
		r = br[i].arg;
		r->busy.judged = r->busy.count;
		r->busy.score = br[i].score;
		r->busy.over = br[i].over;
		if (br[i].flags & BUSY_OVER)
			r->pace.straggling |= STRAGGLER_BUSY;
		if (br[i].flags & BUSY_CHANGE)
			r->pace.straggling |= STRAGGLER_BUSY_CHANGE;
	}
	return (0);
}

/* The job's entry of the node last looked up (ranks arrive node by node). */
struct straggler_nj {
	const char	*node;
	struct node_job	*nj;
};

/* Returns the job's entry of rank r's node, or NULL. */
static struct node_job *
straggler_node_job(struct coord *c, const struct job *job,
    const struct rank *r, struct straggler_nj *last)
{
	struct node	*n;

	if (last->node != NULL && strcmp(last->node, r->node) == 0)
		return (last->nj);
	n = schedule_node_find(c, r->node);
	last->node = r->node;
	last->nj = n != NULL ? schedule_node_job(n, job->name, 0) : NULL;
	return (last->nj);
}

/*
 * Counts the job's ranks by node for the page's heat map (the job's entry
 * of each node: ranks flagged, live ranks giving a busy time and the
 * longest of theirs), as this tick judged them, so that a follower shows
 * the leader's (nodeview.c) and not what it cannot judge.
 */
static void
straggler_node_counts(struct coord *c, struct job *job)
{
	struct ranks_memo	 memo;
	struct straggler_nj	 last = { NULL, NULL };
	struct node_job		*nj;
	struct rank		*r;
	int			 state;

	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (r->node[0] != '\0' &&
		    (nj = straggler_node_job(c, job, r, &last)) != NULL)
			nj->strag_ranks = nj->busy_ranks = nj->busy_max_us = 0;
	}
	memset(&memo, 0, sizeof(memo));
	last.node = NULL;
	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (r->node[0] == '\0' ||
		    (nj = straggler_node_job(c, job, r, &last)) == NULL)
			continue;
		if (r->pace.straggling)
			nj->strag_ranks++;
		state = schedule_rank_state(c, r, &memo);
		if (r->step < 0 || state == RANKS_STATE_UNKNOWN ||
		    state == DYNPROF__V1__RANK_STATE__RANK_GONE ||
		    r->busy.count == 0 || r->busy.avg_us == 0)
			continue;
		nj->busy_ranks++;
		if (r->busy.avg_us > nj->busy_max_us)
			nj->busy_max_us = r->busy.avg_us;
	}
}

/*
 * Judges one job: its medians, then each rank against them.  Returns -1 out
 * of memory (the job keeps what the last tick found).
 */
static int
straggler_job(struct coord *c, struct job *job, uint64_t now,
    uint64_t period, int64_t now_us)
{
	struct straggler	*s;
	struct rank		*r, **flagged = NULL;
	struct busy_rank	*br = NULL;
	struct arrive_rank	*ar = NULL;
	int64_t			*steps = NULL, *rates = NULL, *periods = NULL;
	int64_t			 lag, rmed = -1;
	struct straggler_at	 at = { NULL, 0, 0 };
	size_t			 n = 0, nr = 0, nf = 0, nb = 0, na = 0, np = 0;
	int			 drop, rc = -1;
	uint64_t		 t0 = clock_mono_ns();

	if ((s = straggler_get(job)) == NULL)
		return (-1);
	/* Judged here: this coordinator's flags (a copy had the leader's). */
	s->def_lag = -1;
	s->def_drop = s->def_busy = -1;
	straggler_thresholds(c, job, &lag, &drop);
	if (job->nranks > 0 &&
	    ((steps = calloc(job->nranks, sizeof(*steps))) == NULL ||
	    (rates = calloc(job->nranks, sizeof(*rates))) == NULL ||
	    (br = calloc(job->nranks, sizeof(*br))) == NULL ||
	    (ar = calloc(job->nranks, sizeof(*ar))) == NULL ||
	    (periods = calloc(job->nranks, sizeof(*periods))) == NULL))
		goto out;
	s->nnobusy = 0;
	TAILQ_FOREACH(r, &job->ranks, entry) {
		r->pace.straggling = 0;
		if (!straggler_judged(c, r, now_us, &at)) {
			r->pace.ref_ms = 0;
			continue;
		}
		straggler_pace(r, now, period, at.sent_us);
		n++;
		if (r->busy.count > 0 && r->busy.avg_us > 0) {
			br[nb].busy_us = r->busy.avg_us;
			br[nb].last_us = r->busy.last_us;
			br[nb].fresh = r->busy.count != r->busy.judged;
			br[nb].hist = &r->busy.hist;
			br[nb++].arg = r;
		} else {
			r->busy.score = r->busy.over = -1;
			if (s->nnobusy < STRAGGLER_NOBUSY_KEEP)
				s->nobusy[s->nnobusy] = r->rank;
			s->nnobusy++;
		}
		if (r->arrive != NULL && r->arrive->n > 0) {
			ar[na].ra = r->arrive;
			ar[na++].rank = r->rank;
			if ((periods[np] = arrive_rank_step_us(r->arrive)) > 0)
				np++;
		}
		if (r->pace.rate >= 0)	/* in milli-steps/s: integers */
			rates[nr++] = (int64_t)(r->pace.rate * 1000.0f);
	}
	s->judged = (uint32_t)n;
	if (nr > 0)
		rmed = median_select(rates, nr, nr / 2);
	s->median_rate = rmed >= 0 ? (float)rmed / 1000.0f : -1;
	n = 0;
	at.name = NULL;
	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (!straggler_judged(c, r, now_us, &at))
			continue;
		r->pace.step_now = straggler_step_now(r, at.sent_us, now_us,
		    (int64_t)period * 1000);
		steps[n++] = r->pace.step_now;
	}
	s->median_step = n > 0 ? median_select(steps, n, n / 2) : -1;
	s->nlag = s->nslow = 0;
	s->step_us = np > 0 ? median_select(periods, np, np / 2) : 0;
	s->nbusy = (uint32_t)nb;
	if (straggler_busy_judge(c, job, s, br, nb) == -1)
		goto out;
	s->narrive = (uint32_t)na;
	if (arrive_judge(&s->aj, ar, na, straggler_busy(c, job),
	    s->bj.median_us, straggler_floor_us(s)) == -1)
		goto out;
	if (n >= 1 && (flagged = calloc(n, sizeof(*flagged))) == NULL)
		goto out;
	at.name = NULL;
	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (!straggler_judged(c, r, now_us, &at))
			continue;
		if (n < STRAGGLER_MIN_RANKS)
			goto flag;
		/* A rank whose rate is not known yet (a single report) cannot
		 * be compared with reports sent at other times. */
		if (straggler_rate_now(r, at.sent_us) >= 0 &&
		    s->median_step - r->pace.step_now > lag) {
			r->pace.straggling |= STRAGGLER_LAG;
			s->nlag++;
		}
		if (rmed > 0 && r->pace.rate >= 0 && r->pace.rate * 100.0f <
		    s->median_rate * (float)(100 - drop)) {
			r->pace.straggling |= STRAGGLER_SLOW;
			s->nslow++;
		}
		if (s->aj.flagged && r->rank == s->aj.rank &&
		    r->arrive != NULL && r->arrive->n > 0)
			r->pace.straggling |= STRAGGLER_LAST;
flag:
		if (r->pace.straggling != 0)
			flagged[nf++] = r;
	}
	s->nflagged = (uint32_t)nf;
	straggler_keep(s, flagged, nf);
	straggler_node_counts(c, job);
	s->updated_ns = clock_wall_ns();
	rc = 0;
out:
	free(steps);
	free(rates);
	free(br);
	free(ar);
	free(periods);
	free(flagged);
	s->compute_ns = clock_mono_ns() - t0;
	if (rc == -1)
		log_warnx("%s: job %s: out of memory", __func__, job->name);
	return (rc);
}

/* Judges every job with ranks: called by the housekeeping timer. */
void
straggler_tick(struct coord *c)
{
	struct job	*job;
	uint64_t	 now = clock_mono_ms();
	uint64_t	 period = (uint64_t)STRAGGLER_RATE_TICKS *
			    c->conf.heartbeat_ms;
	int64_t		 now_us = clock_wall_ns() / 1000;

	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->nranks > 0 || job->strag != NULL)
			straggler_job(c, job, now, period, now_us);
	}
}

/* Returns the job's stragglers kept by the last tick, worst first. */
size_t
straggler_list(const struct job *job, const struct straggler_entry **list)
{
	if (job->strag == NULL) {
		*list = NULL;
		return (0);
	}
	*list = job->strag->list;
	return (job->strag->nlist);
}

/* Returns the job's median step at the last tick, -1 unknown. */
int64_t
straggler_median_step(const struct job *job)
{
	return (job->strag != NULL ? job->strag->median_step : -1);
}

/* Returns the job's median busy time at the last tick in us, 0 unknown. */
uint32_t
straggler_busy_median_us(const struct job *job)
{
	return (job->strag != NULL ? job->strag->bj.median_us : 0);
}

/*
 * Returns a rate (steps/s) or a ratio as JSON, to three decimals, null when
 * unknown (< 0).
 */
static json_t *
straggler_real_json(float v)
{
	if (v < 0)
		return (json_null());
	return (json_real((double)(int64_t)(v * 1000.0f + 0.5f) / 1000.0));
}

/* Returns a rank's reasons as a JSON array of words. */
static json_t *
straggler_reasons_json(int reasons)
{
	json_t	*a = json_array();

	if (reasons & STRAGGLER_LAG)
		json_array_append_new(a, json_string("lag"));
	if (reasons & STRAGGLER_SLOW)
		json_array_append_new(a, json_string("slow"));
	if (reasons & STRAGGLER_BUSY)
		json_array_append_new(a, json_string("busy"));
	if (reasons & STRAGGLER_BUSY_CHANGE)
		json_array_append_new(a, json_string("busy_change"));
	if (reasons & STRAGGLER_LAST)
		json_array_append_new(a, json_string("last"));
	return (a);
}

/* Returns microseconds as JSON milliseconds, null for 0 (none). */
static json_t *
straggler_ms_json(int64_t us)
{
	if (us <= 0)
		return (json_null());
	return (json_real((double)us / 1000.0));
}

/* Adds the job's busy-time judgement to o. */
static void
straggler_busy_json(const struct coord *c, const struct job *job, json_t *o)
{
	const struct straggler	*s = job->strag;
	json_t			*a;
	size_t			 i;

	json_object_set_new(o, "busy_percent",
	    json_integer(straggler_busy(c, job)));
	json_object_set_new(o, "busy_ranks", json_integer(s ? s->nbusy : 0));
	json_object_set_new(o, "busy_median_ms",
	    straggler_ms_json(s ? s->bj.median_us : 0));
	json_object_set_new(o, "busy_fastest_ms",
	    straggler_ms_json(s ? s->bj.fastest_us : 0));
	json_object_set_new(o, "step_ms",
	    straggler_ms_json(s ? s->step_us : 0));
	json_object_set_new(o, "floor_ms",
	    straggler_ms_json(s ? straggler_floor_us(s) : 0));
	json_object_set_new(o, "busy", json_integer(s ? s->bj.nover : 0));
	json_object_set_new(o, "busy_change",
	    json_integer(s ? s->bj.nchange : 0));
	json_object_set_new(o, "no_busy", json_integer(s ? s->nnobusy : 0));
	a = json_array();
	for (i = 0; s != NULL && i < s->nnobusy && i < STRAGGLER_NOBUSY_KEEP;
	    i++)
		json_array_append_new(a, json_integer(s->nobusy[i]));
	json_object_set_new(o, "no_busy_ranks", a);
}

/* Adds the job's arrivals' judgement to o: the rank last most often. */
static void
straggler_arrive_json(const struct job *job, json_t *o)
{
	const struct straggler	*s = job->strag;
	const struct arrive_job	*aj = s != NULL ? &s->aj : NULL;
	json_t			*l;

	json_object_set_new(o, "arrive_ranks", json_integer(s ? s->narrive :
	    0));
	json_object_set_new(o, "arrive_steps_judged", json_integer(aj ?
	    (json_int_t)aj->steps : 0));
	if (aj == NULL || aj->rank < 0) {
		json_object_set_new(o, "last_arriver", json_null());
		return;
	}
	l = json_object();
	json_object_set_new(l, "rank", json_integer(aj->rank));
	json_object_set_new(l, "steps", json_integer(aj->count));
	json_object_set_new(l, "of", json_integer(aj->n));
	json_object_set_new(l, "share", straggler_real_json(aj->share));
	json_object_set_new(l, "late_ms", json_real((double)aj->late_avg_us /
	    1000.0));
	json_object_set_new(l, "flagged", json_boolean(aj->flagged));
	json_object_set_new(o, "last_arriver", l);
}

/* Returns one of the job's worst ranks as JSON. */
static json_t *
straggler_entry_json(const struct straggler_entry *e)
{
	return (json_pack("{s:i,s:s,s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
	    "rank", (int)e->rank, "node", e->node, "step", (json_int_t)e->step,
	    "lag", (json_int_t)e->lag, "rate", straggler_real_json(e->rate),
	    "busy_ms", straggler_ms_json(e->busy_us),
	    "busy_score", straggler_real_json(e->busy_score),
	    "busy_over_median", straggler_real_json(e->busy_over),
	    "busy_rise", straggler_real_json(e->busy_rise),
	    "last_share", straggler_real_json(e->last_share),
	    "last_late_ms", e->last_share < 0 ? json_null() :
	    json_real((double)e->last_late_us / 1000.0),
	    "reasons", straggler_reasons_json(e->reasons)));
}

/*
 * Returns the job's stragglers: the thresholds, the medians, the counts, and
 * the max worst ranks and nodes.
 */
static json_t *
straggler_json_max(const struct coord *c, const struct job *job, size_t max)
{
	const struct straggler	*s = job->strag;
	json_t			*o = json_object(), *a;
	int64_t			 lag;
	int			 drop;
	size_t			 i;
	char			 t[40];

	straggler_thresholds(c, job, &lag, &drop);
	json_object_set_new(o, "lag_steps", json_integer(lag));
	json_object_set_new(o, "rate_drop_percent", json_integer(drop));
	json_object_set_new(o, "median_step", json_integer(s != NULL ?
	    s->median_step : -1));
	json_object_set_new(o, "median_rate", straggler_real_json(s != NULL ?
	    s->median_rate : -1));
	json_object_set_new(o, "ranks_judged", json_integer(s ? s->judged : 0));
	json_object_set_new(o, "ranks", json_integer(s ? s->nflagged : 0));
	json_object_set_new(o, "lagging", json_integer(s ? s->nlag : 0));
	json_object_set_new(o, "slow", json_integer(s ? s->nslow : 0));
	straggler_busy_json(c, job, o);
	straggler_arrive_json(job, o);
	json_object_set_new(o, "nodes", json_integer(s ? s->nnodes : 0));
	a = json_array();
	for (i = 0; s != NULL && i < s->nlist && i < max;
	    i++) {
		json_array_append_new(a, straggler_entry_json(&s->list[i]));
	}
	json_object_set_new(o, "worst_ranks", a);
	a = json_array();
	for (i = 0; s != NULL && i < s->nnodes_kept && i < max; i++)
		json_array_append_new(a, json_pack("{s:s,s:I,s:I}", "node",
		    s->nodes[i].node, "ranks", (json_int_t)s->nodes[i].ranks,
		    "min_step", (json_int_t)s->nodes[i].min_step));
	json_object_set_new(o, "worst_nodes", a);
	if (s != NULL && s->updated_ns > 0) {
		clock_rfc3339(s->updated_ns, t, sizeof(t));
		json_object_set_new(o, "updated", json_string(t));
	} else
		json_object_set_new(o, "updated", json_null());
	return (o);
}

/* Returns the job's stragglers for its summary, of constant size: the worst
 * STRAGGLER_SUMMARY_MAX ranks and nodes. */
json_t *
straggler_json(const struct coord *c, const struct job *job)
{
	return (straggler_json_max(c, job, STRAGGLER_SUMMARY_MAX));
}

/* Returns the job's stragglers with every rank and node kept. */
json_t *
straggler_json_all(const struct coord *c, const struct job *job)
{
	return (straggler_json_max(c, job, STRAGGLER_KEEP_MAX));
}

/*
 * Appends the busy-time metrics to buf: each job's median, its ranks with and
 * without one, and its slowest rank's busy time over the median: a few lines
 * a job, whatever its size.
 */
static void
straggler_busy_metrics(struct coord *c, struct evbuffer *buf)
{
	const struct job	*job;
	const struct straggler	*s;

	evbuffer_add_printf(buf,
	    "# HELP dynprof_job_busy_median_seconds The median busy time (step "
	    "begin to the first collective) of a job's ranks that mark it.\n"
	    "# TYPE dynprof_job_busy_median_seconds gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if ((s = job->strag) != NULL && s->bj.median_us > 0)
			evbuffer_add_printf(buf,
			    "dynprof_job_busy_median_seconds{job=\"%s\"} "
			    "%.6f\n", job->name, (double)s->bj.median_us / 1e6);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_job_busy_ranks A job's judged ranks, by whether "
	    "they give a busy time.\n"
	    "# TYPE dynprof_job_busy_ranks gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if ((s = job->strag) != NULL)
			evbuffer_add_printf(buf,
			    "dynprof_job_busy_ranks{job=\"%s\",busy=\"yes\"} "
			    "%u\ndynprof_job_busy_ranks{job=\"%s\","
			    "busy=\"no\"} %u\n", job->name, s->nbusy,
			    job->name, s->nnobusy);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_job_busy_worst_ratio The busy time of a job's "
	    "slowest rank over the job's median.\n"
	    "# TYPE dynprof_job_busy_worst_ratio gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if ((s = job->strag) != NULL && s->bj.median_us > 0)
			evbuffer_add_printf(buf,
			    "dynprof_job_busy_worst_ratio{job=\"%s\"} %.3f\n",
			    job->name, (double)s->bj.slowest_us /
			    (double)s->bj.median_us);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_job_last_arrival_share The share of a job's last "
	    "judged steps at whose collective its most often last rank "
	    "arrived last.\n"
	    "# TYPE dynprof_job_last_arrival_share gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if ((s = job->strag) != NULL && s->aj.rank >= 0)
			evbuffer_add_printf(buf,
			    "dynprof_job_last_arrival_share{job=\"%s\","
			    "rank=\"%d\"} %.3f\n", job->name, s->aj.rank,
			    (double)s->aj.share);
}

/* Appends the straggler metrics of every judged job to buf. */
void
straggler_metrics(struct coord *c, struct evbuffer *buf)
{
	const struct job	*job;
	const struct straggler	*s;
	uint64_t		 cost = 0;

	evbuffer_add_printf(buf,
	    "# HELP dynprof_job_step_median The median step of a job's ranks.\n"
	    "# TYPE dynprof_job_step_median gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if ((s = job->strag) != NULL)
			evbuffer_add_printf(buf,
			    "dynprof_job_step_median{job=\"%s\"} %lld\n",
			    job->name, (long long)s->median_step);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_job_step_rate The median step rate of a job's "
	    "ranks, steps/s.\n"
	    "# TYPE dynprof_job_step_rate gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if ((s = job->strag) != NULL && s->median_rate >= 0)
			evbuffer_add_printf(buf,
			    "dynprof_job_step_rate{job=\"%s\"} %.3f\n",
			    job->name, (double)s->median_rate);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_stragglers Ranks of a job flagged as stragglers, "
	    "by reason (a rank may have several).\n"
	    "# TYPE dynprof_stragglers gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if ((s = job->strag) == NULL)
			continue;
		evbuffer_add_printf(buf,
		    "dynprof_stragglers{job=\"%s\",reason=\"lag\"} %u\n"
		    "dynprof_stragglers{job=\"%s\",reason=\"slow\"} %u\n"
		    "dynprof_stragglers{job=\"%s\",reason=\"busy\"} %u\n"
		    "dynprof_stragglers{job=\"%s\",reason=\"busy_change\"} "
		    "%u\n"
		    "dynprof_stragglers{job=\"%s\",reason=\"last\"} %u\n",
		    job->name, s->nlag, job->name, s->nslow,
		    job->name, s->bj.nover, job->name, s->bj.nchange,
		    job->name, s->aj.flagged ? 1u : 0u);
		cost += s->compute_ns;
	}
	straggler_busy_metrics(c, buf);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_straggler_nodes Nodes with at least one "
	    "straggler, by job.\n"
	    "# TYPE dynprof_straggler_nodes gauge\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if ((s = job->strag) != NULL)
			evbuffer_add_printf(buf,
			    "dynprof_straggler_nodes{job=\"%s\"} %u\n",
			    job->name, s->nnodes);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_straggler_tick_seconds What judging every job "
	    "cost at the last housekeeping tick.\n"
	    "# TYPE dynprof_straggler_tick_seconds gauge\n"
	    "dynprof_straggler_tick_seconds %.6f\n", (double)cost / 1e9);
}
