/*
 * A job's ranks: finding them, the events and progress their nodes report
 * (each event applied once), and storing what changed.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "labels.h"
#include "log.h"
#include "model.h"
#include "tracesum.h"
#include "names.h"
#include "store.h"

/* Returns the job's rank, or NULL. */
struct rank *
schedule_rank_find(struct job *job, int32_t rank)
{
	struct rank	*r;

	if (job->rank_hash == NULL)
		return (NULL);
	LIST_FOREACH(r, &job->rank_hash[(uint32_t)rank &
	    (job->rank_nbuckets - 1)], hentry) {
		if (r->rank == rank)
			return (r);
	}
	return (NULL);
}

/* Returns the bytes of rank state r holds: itself, its strings, events. */
static size_t
schedule_rank_bytes(const struct rank *r)
{
	return (sizeof(*r) + (r->output_dir != NULL ?
	    strlen(r->output_dir) + 1 : 0) + (r->error != NULL ?
	    strlen(r->error) + 1 : 0) + (r->labels != NULL ?
	    strlen(r->labels) + 1 : 0) + r->events_cap * sizeof(*r->events) +
	    (r->arrive != NULL ? sizeof(*r->arrive) : 0));
}

static const char *const schedule_budget_names[] = {
	[RANK_BUDGET_JOB] = "job",
	[RANK_BUDGET_AGENT] = "agent",
	[RANK_BUDGET_MEMORY] = "memory",
};

/* Counts a refusal by budget b, and logs it (limited, per node or for the
 * store's rows). */
static void
schedule_rank_refuse(struct coord *c, const struct job *job, int32_t rank,
    struct node *node, enum rank_budget b)
{
	c->metrics.ranks_refused[b]++;
	log_limited(node != NULL ? &node->log_bounds : &c->log_load,
	    LOG_LEVEL_QUIET, "rank %d of job %s from %s refused: over the %s "
	    "budget (job %zu/%zu ranks, node %zu/%zu, memory %zu/%zu bytes)",
	    rank, job->name, node != NULL ? node->name : "the store",
	    schedule_budget_names[b], job->nranks, c->conf.job_ranks_max,
	    node != NULL ? node->nranks : 0, c->conf.agent_ranks_max,
	    c->rank_bytes, c->conf.rank_bytes_max);
}

/* Returns 1 if bytes more of rank state fit the memory budget. */
static int
schedule_rank_fits(const struct coord *c, size_t bytes)
{
	return (c->rank_bytes <= c->conf.rank_bytes_max &&
	    bytes <= c->conf.rank_bytes_max - c->rank_bytes);
}

/* Makes r count against node (NULL: none), if it is not gone. */
static void
schedule_rank_count(struct rank *r, struct node *node)
{
	if (r->state == DYNPROF__V1__RANK_STATE__RANK_GONE)
		node = NULL;
	if (r->counted_on == node)
		return;
	if (r->counted_on != NULL)
		r->counted_on->nranks--;
	if ((r->counted_on = node) != NULL)
		node->nranks++;
}

/*
 * Grows the job's rank table 4 times once it holds twice as many ranks as
 * buckets (up to COORD_RANK_BUCKETS_MAX, and as memory allows): a rank is
 * found at every event, 100,000 of them in a table of 4,096 would be
 * chains of 25.
 */
static void
schedule_rank_hash_grow(struct coord *c, struct job *job)
{
	struct rankbucket	*h;
	struct rank		*r;
	size_t			 n = job->rank_nbuckets * 4;

	if (job->nranks < 2 * job->rank_nbuckets ||
	    n > COORD_RANK_BUCKETS_MAX ||
	    !schedule_rank_fits(c, (n - job->rank_nbuckets) * sizeof(*h)) ||
	    (h = calloc(n, sizeof(*h))) == NULL)
		return;
	TAILQ_FOREACH(r, &job->ranks, entry)
		LIST_INSERT_HEAD(&h[(uint32_t)r->rank & (n - 1)], r, hentry);
	c->rank_bytes += (n - job->rank_nbuckets) * sizeof(*h);
	free(job->rank_hash);
	job->rank_hash = h;
	job->rank_nbuckets = n;
}

/*
 * Returns the job's rank for node to report on (NULL: the store's row),
 * creating it if needed, within the budgets: the job's ranks, the ranks
 * node reports alive, the memory of all ranks.  NULL if refused (counted,
 * logged) or out of memory.
 */
struct rank *
schedule_rank_take(struct coord *c, struct job *job, int32_t rank,
    struct node *node)
{
	struct rank	*r;
	size_t		 cost;

	if (rank < 0)
		return (NULL);
	r = schedule_rank_find(job, rank);
	if (node != NULL && (r == NULL || r->counted_on != node) &&
	    node->nranks >= c->conf.agent_ranks_max) {
		schedule_rank_refuse(c, job, rank, node, RANK_BUDGET_AGENT);
		return (NULL);
	}
	if (r != NULL)
		return (r);
	if (job->nranks >= c->conf.job_ranks_max) {
		schedule_rank_refuse(c, job, rank, node, RANK_BUDGET_JOB);
		return (NULL);
	}
	cost = sizeof(*r) + (job->rank_hash == NULL ?
	    COORD_RANK_BUCKETS * sizeof(*job->rank_hash) : 0);
	if (!schedule_rank_fits(c, cost)) {
		schedule_rank_refuse(c, job, rank, node, RANK_BUDGET_MEMORY);
		return (NULL);
	}
	if (job->rank_hash == NULL) {
		if ((job->rank_hash = calloc(COORD_RANK_BUCKETS,
		    sizeof(*job->rank_hash))) == NULL)
			return (NULL);	/* LIST_INIT is all zeroes */
		job->rank_nbuckets = COORD_RANK_BUCKETS;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return (NULL);
	c->rank_bytes += cost;
	r->rank = rank;
	r->step = -1;
	r->uid = -1;
	busy_history_reset(&r->busy.hist);
	r->busy.score = -1;
	r->busy.over = -1;
	r->state = DYNPROF__V1__RANK_STATE__RANK_ATTACHED;
	r->arrived_ns = clock_wall_ns();
	r->job = job;
	LIST_INSERT_HEAD(&job->rank_hash[(uint32_t)rank &
	    (job->rank_nbuckets - 1)], r, hentry);
	/* In arrival order: status sorts them. */
	TAILQ_INSERT_TAIL(&job->ranks, r, entry);
	job->nranks++;
	schedule_rank_hash_grow(c, job);
	return (r);
}

/* Queues a rank whose row is to be stored (schedule_store_ranks()). */
static void
schedule_rank_changed(struct coord *c, struct rank *r)
{
	if (r->changed)
		return;
	r->changed = 1;
	r->job->ranks_changed++;
	TAILQ_INSERT_TAIL(&c->changed_ranks, r, changed_entry);
}

/* Takes a rank off the queue of rows to store, if it is on it. */
static void
schedule_rank_unqueue(struct coord *c, struct rank *r)
{
	if (!r->changed)
		return;
	TAILQ_REMOVE(&c->changed_ranks, r, changed_entry);
	r->changed = 0;
	r->job->ranks_changed--;
}

/* Frees a rank (its job frees its table), giving its bytes back. */
void
schedule_rank_free(struct coord *c, struct rank *r)
{
	schedule_rank_unqueue(c, r);
	schedule_rank_count(r, NULL);
	c->rank_bytes -= schedule_rank_bytes(r);
	free(r->output_dir);
	free(r->error);
	free(r->labels);
	free(r->events);
	free(r->arrive);
	free(r);
}

/*
 * Appends an event to a rank's history, if it fits the memory budget (else
 * refused: counted, logged as node's, NULL the store's).  Returns 0 or -1.
 */
int
schedule_rank_add_event(struct coord *c, struct rank *r,
    const struct rank_event *ev, struct node *node)
{
	struct rank_event	*n;
	size_t			 cap;

	if (r->nevents == r->events_cap) {
		cap = r->events_cap == 0 ? 4 : r->events_cap * 2;
		if (!schedule_rank_fits(c, (cap - r->events_cap) *
		    sizeof(*n))) {
			schedule_rank_refuse(c, r->job, r->rank, node,
			    RANK_BUDGET_MEMORY);
			return (-1);
		}
		if ((n = reallocarray(r->events, cap, sizeof(*n))) == NULL)
			return (-1);
		c->rank_bytes += (cap - r->events_cap) * sizeof(*n);
		r->events = n;
		r->events_cap = cap;
	}
	r->events[r->nevents++] = *ev;
	return (0);
}

/* Replaces *dst (a string of r) with a copy of src, unless src is empty;
 * the bytes counted.  A string is bounded (COORD_EVENT_TEXT_MAX): counted,
 * never refused on its own. */
void
schedule_rank_set_string(struct coord *c, struct rank *r, char **dst,
    const char *src)
{
	size_t	 before = schedule_rank_bytes(r);

	if (src == NULL || *src == '\0')
		return;
	free(*dst);
	*dst = strdup(src);
	c->rank_bytes = c->rank_bytes - before + schedule_rank_bytes(r);
}

/*
 * Sets the labels r attached with (from node, NULL: the store), checked again:
 * labels that do not pass are dropped, counted and logged (limited), and the
 * rank keeps none.  An attach without labels clears them.
 */
void
schedule_rank_set_labels(struct coord *c, struct rank *r, struct node *node,
    const char *labels)
{
	char		 canon[LABELS_MAX];
	const char	*why;
	size_t		 before = schedule_rank_bytes(r);

	if (labels_canon(labels, canon, sizeof(canon), &why) == -1) {
		c->metrics.labels_refused++;
		log_limited(node != NULL ? &node->log_bounds : &c->log_load,
		    LOG_LEVEL_QUIET, "job %s rank %d: labels from %s dropped: "
		    "%s", r->job->name, r->rank, node != NULL ? node->name :
		    "the store", why);
	}
	free(r->labels);
	r->labels = canon[0] != '\0' ? strdup(canon) : NULL;
	c->rank_bytes = c->rank_bytes - before + schedule_rank_bytes(r);
}

/*
 * Returns a failed event's error as it is kept: whole, or cut (in buf, of
 * COORD_EVENT_TEXT_MAX bytes) at the last UTF-8 character that fits: what
 * failed is said first, and the rank's state matters more than the rest of
 * the text.  A cut is counted and logged (limited, per node).
 */
static const char *
schedule_cut_error(struct coord *c, struct node *node,
    const Dynprof__V1__RankEvent *ev, char *buf)
{
	size_t	 n = valid_event_error_len(ev->error);

	if (ev->error[n] == '\0')
		return (ev->error);
	memcpy(buf, ev->error, n);
	buf[n] = '\0';
	c->metrics.event_text_cut++;
	log_limited(&node->log_bounds, LOG_LEVEL_QUIET, "%s: error of job %s "
	    "rank %d from %s: %zu bytes, cut to %zu", __func__, ev->job,
	    ev->rank, node->name, strlen(ev->error), n);
	return (buf);
}

/*
 * The process pid (0: not said), running as uid (-1: unknown), reports on r:
 * r shows it from now on.  When it is another user's than the one r shows,
 * what r holds of that one's reports (output directory, error) is dropped
 * first: nothing one uid reported is shown under another's (docs/segments.md).
 */
static void
schedule_rank_reporter(struct coord *c, struct rank *r, int32_t pid,
    int64_t uid)
{
	size_t	 before;

	if (uid >= 0 && r->uid >= 0 && uid != r->uid) {
		before = schedule_rank_bytes(r);
		free(r->output_dir);
		r->output_dir = NULL;
		free(r->error);
		r->error = NULL;
		c->rank_bytes = c->rank_bytes - before + schedule_rank_bytes(r);
	}
	if (pid != 0 && pid != r->pid) {
		r->pid = pid;
		r->uid = uid;
	} else if (uid >= 0)
		r->uid = uid;
}

/*
 * A new process of rank r attached (a restarted job, the same id): its row
 * starts afresh, with no window, output directory or error of the run before
 * (which stays in its events).
 */
static void
schedule_rank_fresh(struct coord *c, struct rank *r)
{
	size_t	 before = schedule_rank_bytes(r);

	free(r->output_dir);
	r->output_dir = NULL;
	free(r->error);
	r->error = NULL;
	r->window_id = 0;
	c->rank_bytes = c->rank_bytes - before + schedule_rank_bytes(r);
}

/* What an attached or detached event is to its rank. */
enum rank_ev {
	RANK_EV_APPLY,		/* the rank's state moves */
	RANK_EV_OLDER,		/* of a process before the current one */
	RANK_EV_DUP,		/* taken already */
};

/*
 * Tells what attached or detached event ev (from node) is to rank r.  A
 * rank's processes are told apart by pid and, when one pid attaches again
 * while the rank still looks attached (a process that opens dynprof anew, a
 * pid reused), by the slot and time of its attached event: the agent forwards
 * the logs of the rank's slots one slot after the other, so that the new
 * attach (in another slot: a slot is claimed again only once its log was
 * committed) may come before the old one's detach, and taken as a replay it
 * would be lost to the event stream and leave the rank gone while its process
 * runs.  The same slot is the same process (a replay, or the agent's report
 * of the slot's last state, timed at the claim).  Times are compared only
 * within one node (clocks of two nodes may differ) and when both are known.
 */
static enum rank_ev
schedule_rank_incarnation(const struct rank *r, const struct node *node,
    const Dynprof__V1__RankEvent *ev)
{
	int64_t	 t = (int64_t)ev->time_unix_ns;
	int	 timed = t > 0 && r->attach_ev_ns > 0 &&
		    strcmp(r->node, node->name) == 0;
	int	 gone = r->state == DYNPROF__V1__RANK_STATE__RANK_GONE;

	if (ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED) {
		if (r->pid == ev->pid && ((timed && t == r->attach_ev_ns) ||
		    (!gone && (!timed || ev->slot == r->attach_slot))))
			return (RANK_EV_DUP);
		return (timed && t < r->attach_ev_ns ? RANK_EV_OLDER :
		    RANK_EV_APPLY);
	}
	if (ev->pid != 0 && ev->pid != r->pid)
		return (RANK_EV_OLDER);		/* another process's */
	if (timed && t < r->attach_ev_ns)
		return (RANK_EV_OLDER);
	if (gone && t > 0 && t == r->detach_ev_ns)
		return (RANK_EV_DUP);
	return (RANK_EV_APPLY);
}

/*
 * Applies one rank event from node, inside the open batch.  Events keyed by
 * (job, rank, window, kind) are applied once: a replay changes nothing.
 * Returns -1 only if the store failed.
 */
int
schedule_apply_event(struct coord *c, struct node *node,
    const Dynprof__V1__RankEvent *ev)
{
	struct job		*job;
	struct rank		*r;
	struct node_job		*nj;
	struct rank_event	 re;
	const char		*why, *detail = NULL;
	char			 errbuf[COORD_EVENT_TEXT_MAX];
	struct tracesum		 sum, *sump = NULL;
	int64_t			 uid = ev->uid_known ? (int64_t)ev->uid : -1;
	int			 kind = ev->kind, rc, collect;

	if (!jobid_valid(ev->job, &why) || ev->rank < 0) {
		log_warnx("%s: event from %s: %s", __func__, node->name,
		    ev->rank < 0 ? "negative rank" : why);
		return (0);
	}
	if (kind <= 0 || kind > EVENT_KIND_LAST) {
		log_warnx("%s: event from %s: unknown kind %d", __func__,
		    node->name, kind);
		return (0);
	}
	/* The agent's own word on a rank's trace (traces.c). */
	collect = kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED ||
	    kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED;
	/* A summary out of its bounds is dropped, not the collection. */
	if (collect && ev->trace_summary != NULL &&
	    tracesum_from_pb(ev->trace_summary, &sum, &why) == 0)
		sump = &sum;
	else if (collect && ev->trace_summary != NULL) {
		c->metrics.events_refused++;
		log_warnx("%s: event for job %s rank %d from %s: %s: the "
		    "summary dropped", __func__, ev->job, ev->rank, node->name,
		    why);
	}
	if (collect && (ev->window_id == 0 || traces_event_detail(kind,
	    ev->trace_size, ev->trace_sha256, ev->output_dir, ev->error,
	    sump, errbuf, sizeof(errbuf), &why) == -1)) {
		c->metrics.events_refused++;
		log_warnx("%s: event for job %s rank %d from %s: %s: dropped",
		    __func__, ev->job, ev->rank, node->name,
		    ev->window_id == 0 ? "a collection of no window" : why);
		return (0);
	}
	/* Only an agent that serves the job as legacy makes these up. */
	if (!collect && kind >= DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED &&
	    !legacy_known(c, node->name, ev->job)) {
		c->metrics.events_refused++;
		log_warnx("%s: observed event for job %s from %s, which "
		    "serves it as no legacy job: dropped", __func__, ev->job,
		    node->name);
		return (0);
	}
	if ((job = schedule_job_peer(c, ev->job, node->name)) == NULL)
		return (0);
	/*
	 * A collection is the word of the agent that ran the rank: another
	 * node's (the coordinator keeps the first per rank and window) would
	 * name its own archive as the rank's trace, and take the rank.
	 */
	if (collect && ((r = schedule_rank_find(job, ev->rank)) == NULL ||
	    strcmp(r->node, node->name) != 0)) {
		c->metrics.events_refused++;
		log_warnx("%s: collection of job %s rank %d from %s, which "
		    "does not run it: dropped", __func__, ev->job, ev->rank,
		    node->name);
		return (0);
	}
	if ((r = schedule_rank_take(c, job, ev->rank, node)) == NULL)
		return (0);
	/* A rank that reports for itself wins over a directory's word. */
	if (!collect && kind >= DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED &&
	    r->native) {
		c->metrics.events_refused++;
		log_warnx("%s: observed event for job %s rank %d from %s, a "
		    "rank its own process reports: dropped", __func__,
		    ev->job, ev->rank, node->name);
		return (0);
	}
	if (kind < DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED) {
		r->native = 1;
		if ((nj = schedule_node_job(node, job->name, 0)) != NULL &&
		    !nj->native) {
			nj->native = 1;
			node->view_dirty = 1;
		}
	}
	c->metrics.events[kind]++;
	re.kind = kind;
	re.window_id = ev->window_id;
	re.step = ev->step;
	re.time_ns = ev->time_unix_ns != 0 ? ev->time_unix_ns : clock_wall_ns();

	switch (kind) {
	case DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED:
	case DYNPROF__V1__EVENT_KIND__EVENT_DETACHED:
		switch (schedule_rank_incarnation(r, node, ev)) {
		case RANK_EV_DUP:
			c->metrics.events_dup++;
			return (0);
		case RANK_EV_OLDER:
			/* In the stream, as it happened; the rank stays. */
			journal_stage_rank(c, job, r, &re, node, NULL);
			return (0);
		case RANK_EV_APPLY:
			break;
		}
		if (kind == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED) {
			schedule_rank_fresh(c, r);
			schedule_rank_reporter(c, r, ev->pid, uid);
			r->state = DYNPROF__V1__RANK_STATE__RANK_ATTACHED;
			r->arrived_ns = clock_wall_ns();
			r->gone_ns = 0;
			r->attach_ev_ns = (int64_t)ev->time_unix_ns;
			r->attach_slot = ev->slot;
			r->detach_ev_ns = 0;
			schedule_rank_set_labels(c, r, node, ev->labels);
			job->ranks_came = 1;	/* change_windows_grow() */
		} else {
			if (r->state != DYNPROF__V1__RANK_STATE__RANK_GONE)
				r->gone_ns = clock_wall_ns();
			r->state = DYNPROF__V1__RANK_STATE__RANK_GONE;
			r->detach_ev_ns = (int64_t)ev->time_unix_ns;
			job->windows_dirty = 1;
		}
		break;
	default:
		if (schedule_rank_has_event(r, ev->window_id, kind)) {
			c->metrics.events_dup++;
			return (0);
		}
		/* Kept in memory first: an event stored and not kept would
		 * count once more after a restart. */
		if (schedule_rank_add_event(c, r, &re, node) == -1)
			return (0);
		if (kind < DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED)
			schedule_rank_reporter(c, r, ev->pid, uid);
		if (kind == DYNPROF__V1__EVENT_KIND__EVENT_STARTED ||
		    kind == DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED)
			detail = ev->output_dir;
		else if (kind == DYNPROF__V1__EVENT_KIND__EVENT_FAILED &&
		    ev->error != NULL)
			detail = schedule_cut_error(c, node, ev, errbuf);
		else if (collect)
			detail = errbuf;	/* traces_event_detail()'s */
		rc = store_put_event(c->store, job->name, r->rank, &re,
		    node->name, detail, journal_next_revision(c));
		if (rc == -1) {
			r->nevents--;
			return (-1);
		}
		if (collect)
			(void)traces_note(c, job, r, ev->window_id, kind,
			    node->name, re.time_ns, detail);
		else if (kind != DYNPROF__V1__EVENT_KIND__EVENT_STARTED)
			job->windows_dirty = 1;
		if (rc == 0) {
			c->metrics.events_dup++;
			return (0);
		}
		/* An older window's late event does not move the state back. */
		if (ev->window_id < r->window_id)
			break;
		r->window_id = ev->window_id;
		switch (kind) {
		case DYNPROF__V1__EVENT_KIND__EVENT_STARTED:
			r->state = DYNPROF__V1__RANK_STATE__RANK_PROFILING;
			schedule_rank_set_string(c, r, &r->output_dir,
			    ev->output_dir);
			break;
		case DYNPROF__V1__EVENT_KIND__EVENT_STOPPED:
			if (!schedule_rank_has_event(r, ev->window_id,
			    DYNPROF__V1__EVENT_KIND__EVENT_FAILED))
				r->state = DYNPROF__V1__RANK_STATE__RANK_DONE;
			break;
		case DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED:
			r->state = DYNPROF__V1__RANK_STATE__RANK_SKIPPED;
			break;
		case DYNPROF__V1__EVENT_KIND__EVENT_FAILED:
			r->state = DYNPROF__V1__RANK_STATE__RANK_FAILED;
			schedule_rank_set_string(c, r, &r->error, detail);
			break;
		case DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED:
			if (!schedule_rank_has_event(r, ev->window_id,
			    DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE))
				r->state = DYNPROF__V1__RANK_STATE__RANK_OBSERVED;
			schedule_rank_set_string(c, r, &r->output_dir,
			    ev->output_dir);
			break;
		case DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE:
			r->state =
			    DYNPROF__V1__RANK_STATE__RANK_OBSERVED_COMPLETE;
			break;
		}
		break;
	}
	snprintf(r->node, sizeof(r->node), "%s", node->name);
	schedule_rank_count(r, node);
	if (ev->step > r->step)
		r->step = ev->step;
	r->last_event = kind;
	r->last_event_ns = re.time_ns;
	/* For the event stream once the batch is committed: a collection's
	 * location, its summary left to .../compare. */
	if (collect && kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED)
		errbuf[strcspn(errbuf, "\n")] = '\0';
	journal_stage_rank(c, job, r, &re, node, detail);
	schedule_rank_changed(c, r);
	return (0);
}

/* Stores a rank's last known state (inside a transaction). */
static int
schedule_store_rank(struct coord *c, const struct rank *r)
{
	struct store_rank	 row;

	row.job = r->job->name;
	row.rank = r->rank;
	row.node = r->node;
	row.pid = r->pid;
	row.step = r->step;
	row.state = r->state;
	row.window_id = r->window_id;
	row.output_dir = r->output_dir;
	row.last_event = r->last_event;
	row.last_event_ns = r->last_event_ns;
	row.error = r->error;
	row.labels = r->labels;
	row.arrived_ns = r->arrived_ns;
	row.gone_ns = r->gone_ns;
	row.owner = r->uid >= 0 ? r->uid + 1 : 0;
	return (store_put_rank(c->store, &row));
}

/*
 * Stores the row of every rank an event or a progress report changed since
 * its row was last stored (inside the caller's transaction: the batch of
 * events' when one is open, else the tick's, schedule_flush_ranks()): the
 * one way a changed rank reaches the store.  They stay queued until
 * schedule_ranks_stored().  Returns 0 or -1.
 */
int
schedule_store_ranks(struct coord *c)
{
	struct rank	*r;

	TAILQ_FOREACH(r, &c->changed_ranks, changed_entry)
		if (schedule_store_rank(c, r) == -1)
			return (-1);
	return (0);
}

/* Empties the queue of ranks to store: their rows went to a commit. */
void
schedule_ranks_stored(struct coord *c)
{
	struct rank	*r;

	while ((r = TAILQ_FIRST(&c->changed_ranks)) != NULL)
		schedule_rank_unqueue(c, r);
}

/*
 * Sets a rank's state from a progress report, keeping when it went away
 * or came back.
 */
static void
schedule_rank_set_state(struct rank *r, int state)
{
	int	 gone = DYNPROF__V1__RANK_STATE__RANK_GONE;

	if (state == gone && r->state != gone)
		r->gone_ns = clock_wall_ns();
	else if (state != gone && r->state == gone) {
		r->arrived_ns = clock_wall_ns();
		r->gone_ns = 0;
	}
	r->state = state;
}

/*
 * Notes when a node's highest step of a job rose, and how fast: the rate over
 * spans of at least SCHEDULE_RATE_SPAN_MS (the mean of the last one and those
 * before, which count half).  Measured over reports' arrivals, a shorter span
 * would take a burst of reports held up together (a loaded agent or
 * coordinator, a burst from a test) for a rate hundreds of times the real
 * one.  A step going down (a restarted job) forgets the rate.
 */
static void
schedule_note_rate(struct node_job *nj, int64_t max)
{
	uint64_t	 now = clock_mono_ms();
	double		 rate;

	if (max < nj->max_step || nj->rate_ms == 0) {
		if (max < nj->max_step)
			nj->rate = 0;
		nj->max_step_ms = nj->rate_ms = now;
		nj->rate_step = max;
		return;
	}
	if (max == nj->max_step)
		return;
	nj->max_step_ms = now;
	if (now - nj->rate_ms < SCHEDULE_RATE_SPAN_MS)
		return;
	rate = (double)(max - nj->rate_step) * 1000.0 /
	    (double)(now - nj->rate_ms);
	nj->rate = nj->rate > 0 ? (nj->rate + rate) / 2 : rate;
	nj->rate_ms = now;
	nj->rate_step = max;
}

/*
 * Takes a rank's busy time from its progress (0s from a rank that gives none,
 * or an older agent).  A count that went back is a new process: its history
 * starts over.
 */
static void
schedule_rank_busy(struct rank *r, const Dynprof__V1__RankProgress *rp)
{
	struct rank_busy	*b = &r->busy;

	if (rp->busy_count < b->count || rp->busy_count == 0) {
		busy_history_reset(&b->hist);
		b->judged = 0;
	}
	b->count = rp->busy_count;
	b->last_us = rp->busy_count > 0 ? rp->busy_last_us : 0;
	b->avg_us = rp->busy_count > 0 ? rp->busy_avg_us : 0;
	b->max_us = rp->busy_count > 0 ? rp->busy_max_us : 0;
}

/*
 * Takes a rank's arrivals from its progress, on the coordinator's clock by
 * its node's offset off_us, if they fit the memory budget (else the rank
 * gives none).  A rank whose busy time started over starts its arrivals over.
 */
static void
schedule_rank_arrive(struct coord *c, struct rank *r,
    const Dynprof__V1__RankProgress *rp, int64_t off_us, int64_t now_us)
{
	size_t	 n = rp->n_arrive_step;

	if (rp->busy_count < r->busy.count || rp->busy_count == 0) {
		if (r->arrive != NULL)
			arrive_rank_reset(r->arrive);
	}
	if (n == 0 || rp->n_arrive_unix_us != n)
		return;
	if (r->arrive == NULL) {
		if (!schedule_rank_fits(c, sizeof(*r->arrive)) ||
		    (r->arrive = calloc(1, sizeof(*r->arrive))) == NULL)
			return;
		c->rank_bytes += sizeof(*r->arrive);
	}
	if (n > SEG_ARRIVE_ENTRIES)
		n = SEG_ARRIVE_ENTRIES;
	arrive_rank_take(r->arrive, rp->arrive_step, rp->arrive_unix_us, n,
	    off_us, now_us, COORD_STEP_MAX);
}

/*
 * Takes a node's progress report for one job (kept in memory, stored lazily
 * by schedule_flush_ranks()).  A rank whose step is absurd is logged and
 * left as it was; absurd lowest and highest steps are not taken.
 */
void
schedule_apply_progress(struct coord *c, struct node *node,
    const Dynprof__V1__Progress *p)
{
	struct job		*job;
	struct rank		*r;
	struct node_job		*nj;
	Dynprof__V1__RankProgress *rp;
	size_t			 i, n;
	int64_t			 off_us, now_us = clock_wall_ns() / 1000;

	if (!jobid_valid(p->job, NULL) ||
	    (job = schedule_job_peer(c, p->job, node->name)) == NULL ||
	    (nj = schedule_node_job(node, job->name, 1)) == NULL)
		return;
	n = p->n_ranks;
	if (n > COORD_PROGRESS_RANKS_MAX) {
		c->metrics.progress_ranks_refused += n -
		    COORD_PROGRESS_RANKS_MAX;
		log_warnx("%s: progress of job %s from %s: %zu ranks, over "
		    "the %d a node can hold; the rest ignored", __func__,
		    job->name, node->name, n, COORD_PROGRESS_RANKS_MAX);
		n = COORD_PROGRESS_RANKS_MAX;
	}
	if (nj->ranks_alive != p->ranks_alive || (n > 0 && !nj->native))
		node->view_dirty = 1;
	nj->ranks_alive = p->ranks_alive;
	if (n > 0)
		nj->native = 1;
	off_us = arrive_clock_note(&node->clock, p->sent_unix_us, now_us);
	node->sent_us = arrive_clock_sent(&node->clock, p->sent_unix_us,
	    now_us);
	if (valid_step(p->min_step) &&
	    valid_step(p->max_step)) {
		if (nj->min_step != p->min_step || nj->max_step != p->max_step)
			node->view_dirty = 1;
		nj->min_step = p->min_step;
		schedule_note_rate(nj, p->max_step);
		nj->max_step = p->max_step;
	} else {
		c->metrics.progress_refused++;
		log_warnx("%s: progress of job %s from %s: steps %lld to %lld "
		    "out of range, ignored", __func__, job->name, node->name,
		    (long long)p->min_step, (long long)p->max_step);
	}
	for (i = 0; i < n; i++) {
		rp = p->ranks[i];
		if (rp->rank < 0)
			continue;
		if (!valid_step(rp->step)) {
			c->metrics.progress_refused++;
			log_warnx("%s: progress of job %s rank %d from %s: step "
			    "%lld out of range, ignored", __func__, job->name,
			    rp->rank, node->name, (long long)rp->step);
			continue;
		}
		if ((r = schedule_rank_take(c, job, rp->rank, node)) == NULL)
			continue;
		r->native = 1;
		snprintf(r->node, sizeof(r->node), "%s", node->name);
		r->step = rp->step;
		schedule_rank_reporter(c, r, rp->pid, rp->uid_known ?
		    (int64_t)rp->uid : -1);
		schedule_rank_arrive(c, r, rp, off_us, now_us);
		schedule_rank_busy(r, rp);
		if (rp->state >= DYNPROF__V1__RANK_STATE__RANK_ATTACHED &&
		    rp->state <= DYNPROF__V1__RANK_STATE__RANK_GONE)
			schedule_rank_set_state(r, rp->state);
		schedule_rank_count(r, node);
		schedule_rank_changed(c, r);
	}
}

/*
 * Takes a node's heartbeat sent at sent_ns (its wall clock, 0 unknown): the
 * steps it reported are still its ranks' as of then (its agent sends what
 * changed before anything else).
 */
void
schedule_node_heartbeat(struct node *node, int64_t sent_ns)
{
	node->sent_us = arrive_clock_sent(&node->clock, sent_ns / 1000,
	    clock_wall_ns() / 1000);
}

/*
 * Returns the highest step the job's live ranks are at now, as well as the
 * coordinator can tell: each node's highest reported step moved on by its
 * rate for the report's age (at most SCHEDULE_PROJECT_MS) and the time a
 * window takes to reach the ranks (SCHEDULE_PUSH_MS).  A report lags the
 * ranks by up to the agent's sampling interval (500 ms: two steps of a job
 * at 4 steps/s), so "in_steps 1" counted from it would start behind them.
 * -1 when no rank reported a step.
 */
int64_t
schedule_job_step_now(const struct coord *c, const struct job *job)
{
	const struct sub	*s;
	const struct node_job	*nj;
	uint64_t		 now = clock_mono_ms(), age;
	int64_t			 max = -1, step;
	double			 ahead;

	(void)c;
	TAILQ_FOREACH(s, &job->subs, job_entry) {
		if (s->conn->node == NULL ||
		    (nj = schedule_node_job(s->conn->node, job->name, 0)) ==
		    NULL || nj->ranks_alive == 0 || nj->max_step < 0)
			continue;
		step = nj->max_step;
		if (nj->rate > 0 && nj->max_step_ms > 0) {
			age = now > nj->max_step_ms ? now - nj->max_step_ms : 0;
			if (age > SCHEDULE_PROJECT_MS)
				age = SCHEDULE_PROJECT_MS;
			/* Rounded up (one more at a whole number). */
			ahead = nj->rate * (double)(age + SCHEDULE_PUSH_MS) /
			    1000.0 + 1;
			if (!(ahead < (double)(COORD_STEP_MAX - step)))
				ahead = (double)(COORD_STEP_MAX - step);
			step += (int64_t)ahead;
		}
		if (step > max)
			max = step;
	}
	return (max);
}

/* Returns how many ranks of the job the serving nodes report alive. */
uint32_t
schedule_job_ranks_alive(const struct coord *c, const struct job *job)
{
	struct serving		 it = { 0 };
	struct node_job		*nj;
	uint32_t		 n = 0;

	while (schedule_serving_next(c, job, &it, &nj) != NULL)
		if (nj != NULL)
			n += nj->ranks_alive;
	return (n);
}

/*
 * Stores the ranks still queued (progress reports change ranks outside any
 * batch of events): the open batch's commit takes them if there is one,
 * else a transaction of their own.
 */
void
schedule_flush_ranks(struct coord *c)
{
	if (TAILQ_EMPTY(&c->changed_ranks))
		return;
	intake_flush(c);
	if (TAILQ_EMPTY(&c->changed_ranks) || store_begin(c->store) == -1)
		return;
	if (schedule_store_ranks(c) == -1) {
		store_rollback(c->store);
		return;
	}
	/* Over etcd, not waited for: a commit that fails has the leader
	 * reload the state (store_commit_async()). */
	if (store_commit_async(c->store, NULL, NULL) == -1)
		return;
	schedule_ranks_stored(c);
}

/*
 * Rewrites the stored history of the first job the store finds worth it
 * (etcd: its batches many and outweighing its last snapshot): every rank's
 * row and every event of it in one commit, which drops what was stored of
 * it before.  One job per call (a tick).
 */
void
schedule_compact_jobs(struct coord *c)
{
	struct job	*job;
	struct rank	*r;
	struct store_journal floor;
	size_t		 i, nevents = 0;
	char		 detail[COORD_EVENT_TEXT_MAX];

	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (store_compact_due(c->store, job->name))
			break;
	}
	if (job == NULL)
		return;
	intake_flush(c);
	if (store_begin(c->store) == -1)
		return;
	if (store_compact_begin(c->store, job->name) == -1)
		goto fail;
	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (schedule_store_rank(c, r) == -1)
			goto fail;
		for (i = 0; i < r->nevents; i++, nevents++) {
			/* Only a collection's detail is kept in memory. */
			if (store_put_event(c->store, job->name, r->rank,
			    &r->events[i], r->node, traces_detail(job, r->rank,
			    r->events[i].window_id, r->events[i].kind, detail,
			    sizeof(detail)), 0) == -1)
				goto fail;
		}
	}
	/* The events are rewritten without their revisions: a client
	 * resuming from before the last one reads the job again. */
	memset(&floor, 0, sizeof(floor));
	floor.type = STORE_JOURNAL_FLOOR;
	floor.job = job->name;
	floor.rev = job->journal_last > job->journal_floor ?
	    job->journal_last : job->journal_floor;
	if (floor.rev != 0 && store_put_journal(c->store, &floor) == -1)
		goto fail;
	if (store_compact_end(c->store, job->name) == -1 ||
	    store_commit_async(c->store, NULL, NULL) == -1)
		goto fail;
	log_info("%s: job %s: stored history rewritten (%zu events)", __func__,
	    job->name, nevents);
	return;
fail:
	log_warnx("%s: job %s: cannot rewrite its stored history", __func__,
	    job->name);
	store_rollback(c->store);
}

/* Orders ranks by number, for qsort(). */
static int
schedule_rank_cmp(const void *a, const void *b)
{
	const struct rank	*x = *(struct rank *const *)a;
	const struct rank	*y = *(struct rank *const *)b;

	return (x->rank < y->rank ? -1 : x->rank > y->rank);
}

/*
 * Returns the job's ranks sorted by number (n of them), with the ranks that
 * came since the last call merged in; NULL with *n 0 when there are none or
 * memory ran out.  Ranks are only ever added, at the tail of job->ranks: the
 * index holds the first nby_rank of them, so only the new ones are sorted
 * (a job whose ranks attach while a listing is written is not sorted whole
 * at every chunk).
 */
struct rank **
schedule_rank_index(struct job *job, size_t *n)
{
	struct rank	**v, **add, *r;
	size_t		 old = job->nby_rank, k, i, a, b;

	*n = 0;
	if (job->nranks == 0)
		return (NULL);
	if (old != job->nranks) {
		k = job->nranks - old;
		if ((v = calloc(job->nranks, sizeof(*v))) == NULL ||
		    (add = calloc(k, sizeof(*add))) == NULL) {
			free(v);
			return (NULL);
		}
		i = k;
		TAILQ_FOREACH_REVERSE(r, &job->ranks, rankq, entry) {
			if (i == 0)
				break;
			add[--i] = r;
		}
		qsort(add, k, sizeof(*add), schedule_rank_cmp);
		for (i = a = b = 0; i < job->nranks; i++)
			v[i] = b == k || (a < old &&
			    job->by_rank[a]->rank < add[b]->rank) ?
			    job->by_rank[a++] : add[b++];
		free(add);
		free(job->by_rank);
		job->by_rank = v;
		job->nby_rank = job->nranks;
	}
	*n = job->nby_rank;
	return (job->by_rank);
}

/* Returns the index of the first rank above after in v (n: its length). */
size_t
schedule_rank_index_after(struct rank **v, size_t n, int64_t after)
{
	size_t	 lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((int64_t)v[mid]->rank <= after)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo);
}

/*
 * Returns the state a rank shows (a RankState, or RANKS_STATE_UNKNOWN on a
 * lost node), remembering the last node looked up in memo: ranks in order
 * come node after node.
 */
int
schedule_rank_state(struct coord *c, const struct rank *r, struct ranks_memo *memo)
{
	struct node	*n;

	if (r->node[0] != '\0') {
		if (strcmp(memo->node, r->node) != 0) {
			snprintf(memo->node, sizeof(memo->node), "%s",
			    r->node);
			n = schedule_node_find(c, r->node);
			memo->lost = n == NULL || !schedule_node_up(n);
		}
		if (memo->lost)
			return (RANKS_STATE_UNKNOWN);
	}
	if (r->state < DYNPROF__V1__RANK_STATE__RANK_ATTACHED ||
	    r->state > RANKS_STATE_LAST)
		return (RANKS_STATE_UNKNOWN);
	return (r->state);
}

/* Returns the name of a state schedule_rank_state() returned. */
const char *
schedule_rank_state_name(int state)
{
	return (state == RANKS_STATE_UNKNOWN ? "unknown" :
	    names_rank_state(state));
}
