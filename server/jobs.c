/*
 * The jobs as a whole: a job forgotten, the jobs nobody scheduled reaped, the
 * model freed.  Above the parts a job holds (schedule.c, straggler.c,
 * rules.c, journal.c, legacy.c), which it frees; below change.c, whose
 * changes forget jobs.
 */

#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "model.h"
#include "store.h"

static void	 jobs_free(struct coord *, struct job *);

/*
 * Forgets the jobs nobody scheduled that no node has served for linger_ms:
 * they leave memory, /v1/jobs and the store.  A job its ranks attached to
 * before any window stays while a node serves it.
 */
void
jobs_reap(struct coord *c, uint64_t linger_ms)
{
	struct job	*job, *next;
	struct node	*n;
	struct node_job	*nj;
	uint64_t	 now = clock_mono_ms();

	for (job = TAILQ_FIRST(&c->jobs); job != NULL; job = next) {
		next = TAILQ_NEXT(job, entry);
		if (!schedule_job_unscheduled(job) ||
		    !TAILQ_EMPTY(&job->subs) || job->ranks_changed > 0) {
			job->idle_ms = 0;
			continue;
		}
		if (job->idle_ms == 0) {
			job->idle_ms = now;
			continue;
		}
		if (now - job->idle_ms < linger_ms)
			continue;
		if (store_forget_job(c->store, job->name) == -1) {
			log_warnx("%s: cannot forget job %s", __func__,
			    job->name);
			continue;
		}
		TAILQ_FOREACH(n, &c->nodes, entry) {
			if ((nj = schedule_node_job(n, job->name, 0)) != NULL) {
				TAILQ_REMOVE(&n->jobs, nj, entry);
				free(nj);
				n->view_dirty = 1;
			}
		}
		log_info("%s: job %s forgotten: nobody scheduled it and no node "
		    "serves it", __func__, job->name);
		c->metrics.unscheduled_reaped++;
		if (c->nunscheduled > 0)
			c->nunscheduled--;
		TAILQ_REMOVE(&c->jobs, job, entry);
		jobs_free(c, job);
	}
}

/* Frees a job, its windows and ranks (off c->jobs already). */
static void
jobs_free(struct coord *c, struct job *job)
{
	struct window	*w;
	struct rank	*r;

	while ((w = TAILQ_FIRST(&job->windows)) != NULL) {
		TAILQ_REMOVE(&job->windows, w, entry);
		window_free(w);
	}
	while ((r = TAILQ_FIRST(&job->ranks)) != NULL) {
		TAILQ_REMOVE(&job->ranks, r, entry);
		schedule_rank_free(c, r);
	}
	if (job->rank_hash != NULL)
		c->rank_bytes -= job->rank_nbuckets * sizeof(*job->rank_hash);
	options_clear(&job->defaults);
	straggler_job_free(job);
	rules_free(job->rules);
	traces_free(job);
	free(job->config_json);
	free(job->rank_hash);
	free(job->by_rank);
	journal_forget_job(c, job);
	free(job);
}

/*
 * Forgets job, committed at generation gen: it leaves memory with its windows,
 * ranks, events and what each node did with it.  Agents subscribed to it stay
 * so, to a job of the same name nobody scheduled (as if they had just
 * subscribed to an unknown job), whose empty schedule carries gen so that
 * they take it over the forgotten windows, and whose window ids go on from
 * the forgotten ones (a running rank never runs an id twice).  Returns that
 * job, or NULL if no agent was subscribed.
 */
struct job *
jobs_forget(struct coord *c, struct job *job, uint64_t gen)
{
	struct job	*fresh = NULL;
	struct sub	*s;
	struct node	*n;
	struct node_job	*nj;

	TAILQ_FOREACH(n, &c->nodes, entry) {
		if ((nj = schedule_node_job(n, job->name, 0)) != NULL) {
			TAILQ_REMOVE(&n->jobs, nj, entry);
			free(nj);
			n->view_dirty = 1;
		}
	}
	TAILQ_REMOVE(&c->jobs, job, entry);
	if (schedule_job_unscheduled(job) && c->nunscheduled > 0)
		c->nunscheduled--;
	if (!TAILQ_EMPTY(&job->subs) &&
	    (fresh = schedule_job_get(c, job->name)) != NULL) {
		fresh->forgot_gen = gen;
		/* Its ranks know the ids they ran: never the same again. */
		fresh->next_window_id = job->next_window_id;
		/* A store that commits at once asked the forgotten job's
		 * push already (change_committed()): the new job's now. */
		fresh->push_due = job->push_due;
		while ((s = TAILQ_FIRST(&job->subs)) != NULL) {
			TAILQ_REMOVE(&job->subs, s, job_entry);
			s->job = fresh;
			TAILQ_INSERT_TAIL(&fresh->subs, s, job_entry);
		}
	}
	/* Out of memory: the subscriptions go with the job. */
	while ((s = TAILQ_FIRST(&job->subs)) != NULL) {
		TAILQ_REMOVE(&job->subs, s, job_entry);
		TAILQ_REMOVE(&s->conn->subs, s, conn_entry);
		s->conn->nsubs--;
		free(s);
	}
	jobs_free(c, job);
	return (fresh);
}

/* Frees the whole model. */
void
jobs_free_all(struct coord *c)
{
	struct job	*job;
	struct node	*n;
	struct node_job	*nj;

	journal_reset(c);		/* its events speak of what goes */
	while ((job = TAILQ_FIRST(&c->jobs)) != NULL) {
		TAILQ_REMOVE(&c->jobs, job, entry);
		jobs_free(c, job);
	}
	while ((n = TAILQ_FIRST(&c->nodes)) != NULL) {
		TAILQ_REMOVE(&c->nodes, n, entry);
		while ((nj = TAILQ_FIRST(&n->jobs)) != NULL) {
			TAILQ_REMOVE(&n->jobs, nj, entry);
			free(nj);
		}
		free(n);
	}
}

/* Empties the model: no job, node, legacy report or batch; generation 0. */
void
jobs_clear(struct coord *c)
{
	size_t	 i;

	jobs_free_all(c);
	legacy_free_all(c);		/* what the agents reported */
	TAILQ_INIT(&c->jobs);
	TAILQ_INIT(&c->nodes);
	TAILQ_INIT(&c->changed_ranks);
	for (i = 0; i < COORD_NODE_BUCKETS; i++)
		LIST_INIT(&c->node_hash[i]);
	c->generation = 0;
	c->nunscheduled = 0;
}
