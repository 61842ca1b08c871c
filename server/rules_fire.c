/*
 * What a job's rules do (rules.h): an operator adds, deletes or sets their
 * thresholds as a change of the job, and a rule fires from the housekeeping
 * timer, after the stragglers are judged (straggler.c): it makes a window
 * through change_window_add(), the path of an operator's window, so that it
 * is stored, pushed and shown as any other.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "model.h"
#include "rules.h"

/*
 * Stores rules rs (taken) and thresholds as job name's, then puts them in
 * memory.  Returns 0 with the job in *jobp, or -1 with ref filled (rs freed).
 */
static int
rules_publish(struct coord *c, const char *name, struct rules *rs,
    const struct rules_limits *l, struct job **jobp, struct refusal *ref)
{
	char	*text;
	int	 rc;

	if ((text = rules_render(rs, l)) == NULL) {
		rules_free(rs);
		return (refusal_set(ref, 500, NULL, "out of memory"));
	}
	rc = change_rules_set(c, name, text, jobp, ref);
	free(text);
	if (rc == -1 || rules_set_limits(*jobp, l) == -1) {
		rules_free(rs);
		return (rc == -1 ? -1 : refusal_set(ref, 500, NULL,
		    "out of memory"));
	}
	rules_free((*jobp)->rules);
	(*jobp)->rules = rs;
	return (0);
}

/*
 * Adds rule r (taken: cleared whatever the outcome) to job name (creating
 * the job), its id and time of creation given here.  Returns 0 with the
 * rule as the job holds it in *added, or -1 with ref filled.
 */
int
rules_add(struct coord *c, const char *name, struct rule *r,
    const struct rule **added, struct refusal *ref)
{
	struct job	*job = schedule_job_find(c, name);
	struct rules	*rs;
	struct rules_limits l = { -1, -1, -1, 0, 0, "" };

	if (job != NULL && job->rules != NULL && job->rules->n == RULES_MAX) {
		rule_clear(r);
		return (refusal_set(ref, 409, NULL, "job %s has %d rules, "
		    "the most a job holds", name, RULES_MAX));
	}
	if ((rs = rules_copy(job != NULL ? job->rules : NULL)) == NULL) {
		rule_clear(r);
		return (refusal_set(ref, 500, NULL, "out of memory"));
	}
	r->id = rs->next_id++;
	r->created_ns = clock_wall_ns();
	rs->rule[rs->n++] = *r;
	memset(r, 0, sizeof(*r));	/* rs holds what it pointed to */
	if (job != NULL)
		rules_own_limits(job, &l);
	if (rules_publish(c, name, rs, &l, &job, ref) == -1)
		return (-1);
	*added = &job->rules->rule[job->rules->n - 1];
	log_info("%s: job %s rule %u added", __func__, name, (*added)->id);
	return (0);
}

/* Deletes rule id of job name.  Returns 0, or -1 with ref filled. */
int
rules_delete(struct coord *c, const char *name, uint32_t id,
    struct refusal *ref)
{
	struct job	*job = schedule_job_find(c, name);
	struct rules	*rs;
	struct rules_limits l;
	size_t		 i;

	if (job == NULL)
		return (refusal_set(ref, 404, "job", "no job %s", name));
	for (i = 0; job->rules != NULL && i < job->rules->n; i++)
		if (job->rules->rule[i].id == id)
			break;
	if (job->rules == NULL || i == job->rules->n)
		return (refusal_set(ref, 404, "id", "job %s has no rule %"
		    PRIu32, name, id));
	if ((rs = rules_copy(job->rules)) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	rule_clear(&rs->rule[i]);
	memmove(&rs->rule[i], &rs->rule[i + 1], (rs->n - i - 1) *
	    sizeof(rs->rule[0]));
	rs->n--;
	rules_own_limits(job, &l);
	if (rules_publish(c, name, rs, &l, &job, ref) == -1)
		return (-1);
	log_info("%s: job %s rule %" PRIu32 " deleted", __func__, name, id);
	return (0);
}

/*
 * Sets the straggler thresholds of job name to want's: -1 each for the
 * coordinator's, RULES_LIMIT_KEEP for as they are; and whether its windows
 * made from now on are collected (want->no_collect, or KEEP) and into which
 * trace store (want->store if want->store_set, "" the agents' own).
 * Returns 0, or -1 with ref filled.
 */
int
rules_set_thresholds(struct coord *c, const char *name,
    const struct rules_limits *want, struct refusal *ref)
{
	struct job		*job = schedule_job_find(c, name);
	struct rules		*rs;
	struct rules_limits	 l;

	if (job == NULL)
		return (refusal_set(ref, 404, "job", "no job %s", name));
	rules_own_limits(job, &l);
	if (want->lag != RULES_LIMIT_KEEP)
		l.lag = want->lag;
	if (want->drop != RULES_LIMIT_KEEP)
		l.drop = want->drop;
	if (want->busy != RULES_LIMIT_KEEP)
		l.busy = want->busy;
	if (want->no_collect != RULES_LIMIT_KEEP)
		l.no_collect = want->no_collect;
	if (want->store_set) {
		if (want->store[0] != '\0' &&
		    rules_store_check(want->store, ref) == -1)
			return (-1);
		snprintf(l.store, sizeof(l.store), "%s", want->store);
	}
	if ((rs = rules_copy(job->rules)) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	return (rules_publish(c, name, rs, &l, &job, ref));
}

/* Keeps the firings of the last hour before now. */
static void
rule_expire(struct rule *r, int64_t now)
{
	size_t	 i = 0;

	while (i < r->nfired && now - r->fired[i] >= RULE_HOUR_NS)
		i++;
	memmove(r->fired, r->fired + i, (r->nfired - i) * sizeof(r->fired[0]));
	r->nfired -= i;
}

/*
 * Writes into buf the worst straggler and up to peers healthy ranks (alive,
 * not straggling, the nearest the median step), in rank order.
 */
static void
rule_pick(struct job *job, const struct straggler_entry *worst, int peers,
    char *buf, size_t len)
{
	struct rank	*r, *best[RULE_PEERS_MAX];
	int32_t		 pick[RULE_PEERS_MAX + 1], t;
	int64_t		 med = straggler_median_step(job), d;
	int		 n = 0, i, j, np;
	size_t		 off = 0;

	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (peers == 0 || r->pace.straggling || r->step < 0 ||
		    r->rank == worst->rank || r->pace.ref_ms == 0 ||
		    r->state == DYNPROF__V1__RANK_STATE__RANK_GONE)
			continue;
		/* Into the nearest peers found so far, nearest (then lowest
		 * rank) first. */
		d = llabs(r->step - med);
		for (i = n; i > 0 && (llabs(best[i - 1]->step - med) > d ||
		    (llabs(best[i - 1]->step - med) == d &&
		    best[i - 1]->rank > r->rank)); i--)
			;
		if (i >= peers)
			continue;
		for (j = n < peers ? n : peers - 1; j > i; j--)
			best[j] = best[j - 1];
		best[i] = r;
		if (n < peers)
			n++;
	}
	pick[0] = worst->rank;
	for (i = 0; i < n; i++)
		pick[i + 1] = best[i]->rank;
	np = n + 1;
	for (i = 1; i < np; i++)
		for (j = i; j > 0 && pick[j - 1] > pick[j]; j--) {
			t = pick[j];
			pick[j] = pick[j - 1];
			pick[j - 1] = t;
		}
	buf[0] = '\0';
	for (i = 0; i < np && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%" PRId32,
		    i > 0 ? "," : "", pick[i]);
}

/* Fires rule r of job once: its window on the worst straggler and peers. */
static void
rule_fire(struct coord *c, struct job *job, struct rule *r,
    const struct straggler_entry *worst, int64_t now)
{
	struct window_request	 req;
	struct window		*w;
	struct refusal		 ref;
	struct rule		 prev;
	char			 ranks[SEG_RANKS_MAX], last[48];

	rule_pick(job, worst, r->peers, ranks, sizeof(ranks));
	r->attempt_ns = now;
	rule_window_request(r, ranks, &req);
	/* Counted before the change, so that the window's change stores it
	 * (the window takes the job's next id); taken back if the schedule
	 * refuses. */
	prev = *r;
	r->fired[r->nfired++] = now;
	r->fired_total++;
	r->last_window = job->next_window_id;
	snprintf(r->last_ranks, sizeof(r->last_ranks), "%s", ranks);
	if (change_window_add(c, job->name, &req, &w, &job, &ref) == -1) {
		r->nfired = prev.nfired;
		r->fired_total = prev.fired_total;
		r->last_window = prev.last_window;
		memcpy(r->last_ranks, prev.last_ranks, sizeof(r->last_ranks));
		job->rules->refused++;
		log_info("%s: job %s rule %u on rank %d: no window: %s",
		    __func__, job->name, r->id, worst->rank, ref.msg);
		return;
	}
	last[0] = '\0';
	if (worst->reasons & STRAGGLER_LAST)
		snprintf(last, sizeof(last), ", last to arrive at %.0f%% of "
		    "steps", (double)worst->last_share * 100.0);
	log_info("%s: job %s rule %u: rank %d on %s straggles (step %" PRId64
	    ", %" PRId64 " behind, busy %.2fx the median%s%s): window %u [%"
	    PRId64 ", %" PRId64 "] on ranks %s", __func__, job->name, r->id,
	    worst->rank, worst->node, worst->step, worst->lag,
	    (double)worst->busy_over, worst->reasons & STRAGGLER_BUSY_CHANGE ?
	    ", risen against its own" : "", last, w->id, w->start_step,
	    w->stop_step, ranks);
}

/* Fires the rules of every job that has a straggler, within their caps:
 * called by the housekeeping timer after the stragglers are judged. */
void
rules_tick(struct coord *c)
{
	struct job			*job;
	struct rule			*r;
	const struct straggler_entry	*list;
	int64_t				 now = clock_wall_ns();
	size_t				 i;

	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->rules == NULL || straggler_list(job, &list) == 0)
			continue;
		for (i = 0; i < job->rules->n; i++) {
			r = &job->rules->rule[i];
			rule_expire(r, now);
			if (r->attempt_ns > 0 && now - r->attempt_ns <
			    r->interval_s * 1000000000LL)
				continue;
			if (r->nfired >= (size_t)r->per_hour)
				continue;
			rule_fire(c, job, r, &list[0], now);
		}
	}
}

/* Appends the rules' metrics to buf. */
void
rules_metrics(struct coord *c, struct evbuffer *buf)
{
	const struct job	*job;
	uint64_t		 n;
	size_t			 i;

	evbuffer_add_printf(buf,
	    "# HELP dynprof_rule_firings_total Windows a job's rules made "
	    "for its stragglers.\n"
	    "# TYPE dynprof_rule_firings_total counter\n");
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->rules == NULL)
			continue;
		for (n = 0, i = 0; i < job->rules->n; i++)
			n += job->rules->rule[i].fired_total;
		evbuffer_add_printf(buf,
		    "dynprof_rule_firings_total{job=\"%s\"} %llu\n", job->name,
		    (unsigned long long)n);
	}
	evbuffer_add_printf(buf,
	    "# HELP dynprof_rule_refused_total Firings of a job's rules the "
	    "schedule refused (an overlap, a full schedule).\n"
	    "# TYPE dynprof_rule_refused_total counter\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if (job->rules != NULL)
			evbuffer_add_printf(buf,
			    "dynprof_rule_refused_total{job=\"%s\"} %llu\n",
			    job->name, (unsigned long long)job->rules->refused);
}
