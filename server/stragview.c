/*
 * Stragglers as followers show them (docs/design.md, followers): what the
 * leader's straggler tick judged of each job (straggler.c: the medians, the
 * counts, the worst ranks and nodes, the busy times' and arrivals' judgement,
 * and the flags it was judged with) written where the store keeps it for
 * followers (etcd) when it changed, and read back into a follower's copy of
 * the model, where the same view functions (straggler_json(), the job's
 * summary, GET /v1/jobs/J/stragglers and /nodes) render it.
 *
 * Jobs go in STRAGVIEW_BATCHES batches by a hash of the job's name, one
 * value each (PREFIX stragbatch/BATCH), and a tick rewrites the batches
 * holding a job whose row changed, or that lost a job (viewrows.c has
 * what the kinds share):
 *
 *	{"JOB": {"def": [LAG, DROP, BUSY], "median": [STEP, RATE],
 *	 "n": [JUDGED, FLAGGED, LAG, SLOW, ARRIVE, BUSY, NOBUSY, NODES],
 *	 "step_us": US, "bj": [MEDIAN, FASTEST, SLOWEST, OVER, CHANGE],
 *	 "aj": [RANK, COUNT, OF, SHARE, LATE_US, FLAGGED, STEPS],
 *	 "nobusy": [RANK, ...], "list": [[RANK, REASONS, STEP, LAG, RATE,
 *	 BUSY_US, SCORE, OVER, RISE, LAST_SHARE, LAST_LATE_US, "NODE"], ...],
 *	 "nodes": [["NODE", RANKS, MIN_STEP], ...], "updated": NS}, ...}
 *
 * The time of the tick ("updated") changes at every tick: it is written
 * with the rest, not on its own.
 */

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jobid.h"
#include "log.h"
#include "model.h"
#include "nodename.h"
#include "straggler.h"

/* Returns a float as JSON (a real, -1 and over as it is). */
static json_t *
stragview_real(float v)
{
	return (json_real((double)v));
}

/* Returns the job's row without its time, or NULL (none, out of memory). */
static json_t *
stragview_row(const struct coord *c, const struct job *job)
{
	const struct straggler		*s = job->strag;
	const struct straggler_entry	*e;
	json_t				*o, *a;
	size_t				 i;

	if (s == NULL || s->updated_ns == 0 || (o = json_object()) == NULL)
		return (NULL);
	json_object_set_new(o, "def", json_pack("[I,i,i]",
	    (json_int_t)c->conf.straggler_lag, c->conf.straggler_rate_drop,
	    c->conf.straggler_busy));
	json_object_set_new(o, "median", json_pack("[I,o]",
	    (json_int_t)s->median_step, stragview_real(s->median_rate)));
	json_object_set_new(o, "n", json_pack("[I,I,I,I,I,I,I,I]",
	    (json_int_t)s->judged, (json_int_t)s->nflagged,
	    (json_int_t)s->nlag, (json_int_t)s->nslow,
	    (json_int_t)s->narrive, (json_int_t)s->nbusy,
	    (json_int_t)s->nnobusy, (json_int_t)s->nnodes));
	json_object_set_new(o, "step_us", json_integer(s->step_us));
	json_object_set_new(o, "bj", json_pack("[I,I,I,I,I]",
	    (json_int_t)s->bj.median_us, (json_int_t)s->bj.fastest_us,
	    (json_int_t)s->bj.slowest_us, (json_int_t)s->bj.nover,
	    (json_int_t)s->bj.nchange));
	json_object_set_new(o, "aj", json_pack("[i,I,I,o,I,i,I]", s->aj.rank,
	    (json_int_t)s->aj.count, (json_int_t)s->aj.n,
	    stragview_real(s->aj.share), (json_int_t)s->aj.late_avg_us,
	    s->aj.flagged, (json_int_t)s->aj.steps));
	a = json_array();
	for (i = 0; i < s->nnobusy && i < STRAGGLER_NOBUSY_KEEP; i++)
		json_array_append_new(a, json_integer(s->nobusy[i]));
	json_object_set_new(o, "nobusy", a);
	a = json_array();
	for (i = 0; i < s->nlist; i++) {
		e = &s->list[i];
		json_array_append_new(a, json_pack("[i,i,I,I,o,I,o,o,o,o,I,s]",
		    e->rank, e->reasons, (json_int_t)e->step,
		    (json_int_t)e->lag, stragview_real(e->rate),
		    (json_int_t)e->busy_us, stragview_real(e->busy_score),
		    stragview_real(e->busy_over), stragview_real(e->busy_rise),
		    stragview_real(e->last_share), (json_int_t)e->last_late_us,
		    e->node));
	}
	json_object_set_new(o, "list", a);
	a = json_array();
	for (i = 0; i < s->nnodes_kept; i++)
		json_array_append_new(a, json_pack("[s,I,I]", s->nodes[i].node,
		    (json_int_t)s->nodes[i].ranks,
		    (json_int_t)s->nodes[i].min_step));
	json_object_set_new(o, "nodes", a);
	return (o);
}

/*
 * Adds the batches of jobs' rows holding a row that changed since it was
 * stored, or that lost a job, to the open transaction (opened at the
 * first: *open).  Returns 0 or -1.
 */
static int
stragview_add(struct coord *c, int *open)
{
	struct job	*job;
	json_t		*batch[STRAGVIEW_BATCHES], *o;
	uint32_t	 njobs[STRAGVIEW_BATCHES];
	uint8_t		 dirty[STRAGVIEW_BATCHES];
	char		*row;
	unsigned	 b;
	int		 rc = 0;

	memset(dirty, 0, sizeof(dirty));
	memset(njobs, 0, sizeof(njobs));
	memset(batch, 0, sizeof(batch));
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->strag == NULL ||
		    (o = stragview_row(c, job)) == NULL)
			continue;
		row = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(o);
		if (row == NULL)
			return (-1);
		b = viewrows_batch_of(job->name, STRAGVIEW_BATCHES);
		njobs[b]++;
		if (job->strag->view_row != NULL &&
		    strcmp(row, job->strag->view_row) == 0) {
			free(row);
			continue;
		}
		free(job->strag->view_row);
		job->strag->view_row = row;	/* compared at the next tick */
		dirty[b] = 1;
	}
	for (b = 0; b < STRAGVIEW_BATCHES; b++)
		if (njobs[b] != c->strag_view_jobs[b])
			dirty[b] = 1;	/* a job gone, or come */
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->strag == NULL || job->strag->view_row == NULL ||
		    !dirty[b = viewrows_batch_of(job->name, STRAGVIEW_BATCHES)])
			continue;
		if ((batch[b] == NULL && (batch[b] = json_object()) == NULL) ||
		    (o = json_loads(job->strag->view_row, 0, NULL)) == NULL) {
			rc = -1;
			break;
		}
		json_object_set_new(o, "updated",
		    json_integer(job->strag->updated_ns));
		json_object_set_new(batch[b], job->name, o);
	}
	for (b = 0; b < STRAGVIEW_BATCHES && rc == 0; b++) {
		if (!dirty[b])
			continue;
		if (batch[b] == NULL && (batch[b] = json_object()) == NULL)
			rc = -1;
		else if (viewrows_put(c, STORE_VIEW_STRAG, b, batch[b],
		    open) == -1)
			rc = -1;
		else {
			c->strag_view_jobs[b] = njobs[b];
			c->metrics.strag_rows += json_object_size(batch[b]);
		}
	}
	for (b = 0; b < STRAGVIEW_BATCHES; b++)
		json_decref(batch[b]);
	return (rc);
}

/* The leader's tick, after the judgement: stores the batches of jobs' rows
 * that changed, in one commit not waited for. */
void
stragview_flush(struct coord *c)
{
	int	 open = 0, rc;

	if (!viewrows_due(c))
		return;
	rc = stragview_add(c, &open);
	if (viewrows_end(c, open, rc) == -1)
		stragview_forget(c);	/* written again, whole */
}

/* Reads an integer of array a at i within [min, max].  Returns 0 or -1. */
static int
stragview_int(const json_t *a, size_t i, int64_t min, int64_t max,
    int64_t *v)
{
	const json_t	*x = json_array_get(a, i);

	if (!json_is_integer(x) || json_integer_value(x) < min ||
	    json_integer_value(x) > max)
		return (-1);
	*v = json_integer_value(x);
	return (0);
}

/* Reads a float of array a at i (-1 unknown, up to a rate's ceiling).
 * Returns 0 or -1. */
static int
stragview_float(const json_t *a, size_t i, float *v)
{
	const json_t	*x = json_array_get(a, i);
	double		 d;

	if (!json_is_number(x))
		return (-1);
	d = json_number_value(x);
	if (!isfinite(d) || d < -1.0 || d > 1e12)
		return (-1);
	*v = (float)d;
	return (0);
}

/* Reads array a of n integers, each within [min, max], into v. */
static int
stragview_ints(const json_t *a, size_t n, int64_t min, int64_t max,
    int64_t *v)
{
	size_t	 i;

	if (!json_is_array(a) || json_array_size(a) != n)
		return (-1);
	for (i = 0; i < n; i++)
		if (stragview_int(a, i, min, max, &v[i]) == -1)
			return (-1);
	return (0);
}

/* Reads a worst rank's entry e of the row.  Returns 0 or -1. */
static int
stragview_entry(const json_t *a, struct straggler_entry *e)
{
	const char	*node;
	int64_t		 v[6];

	if (!json_is_array(a) || json_array_size(a) != 12 ||
	    stragview_int(a, 0, 0, INT32_MAX, &v[0]) == -1 ||
	    stragview_int(a, 1, 1, 31, &v[1]) == -1 ||
	    stragview_int(a, 2, -1, COORD_STEP_MAX, &v[2]) == -1 ||
	    stragview_int(a, 3, -COORD_STEP_MAX - 1, COORD_STEP_MAX + 1,
	    &v[3]) == -1 ||
	    stragview_float(a, 4, &e->rate) == -1 ||
	    stragview_int(a, 5, 0, UINT32_MAX, &v[4]) == -1 ||
	    stragview_float(a, 6, &e->busy_score) == -1 ||
	    stragview_float(a, 7, &e->busy_over) == -1 ||
	    stragview_float(a, 8, &e->busy_rise) == -1 ||
	    stragview_float(a, 9, &e->last_share) == -1 ||
	    stragview_int(a, 10, 0, INT64_MAX, &v[5]) == -1 ||
	    (node = json_string_value(json_array_get(a, 11))) == NULL ||
	    !nodename_valid(node, NULL))
		return (-1);
	e->rank = (int32_t)v[0];
	e->reasons = (int)v[1];
	e->step = v[2];
	e->lag = v[3];
	e->busy_us = (uint32_t)v[4];
	e->last_late_us = v[5];
	snprintf(e->node, sizeof(e->node), "%s", node);
	return (0);
}

/*
 * Reads a job's row o into *s (its judgement; not the job's own
 * thresholds).  Returns 0, or -1 with *why saying what does not read.
 */
static int
stragview_read(const json_t *o, struct straggler *s, const char **why)
{
	const json_t	*a, *x;
	const char	*node;
	int64_t		 v[8];
	size_t		 i;

	*why = "a field is missing or out of range";
	if (!json_is_object(o) ||
	    stragview_ints(json_object_get(o, "def"), 3, 0, INT64_MAX, v) == -1 ||
	    v[1] > 100 || v[2] > 1000)
		return (-1);
	s->def_lag = v[0];
	s->def_drop = (int)v[1];
	s->def_busy = (int)v[2];
	a = json_object_get(o, "median");
	if (!json_is_array(a) || json_array_size(a) != 2 ||
	    stragview_int(a, 0, -1, COORD_STEP_MAX, &s->median_step) == -1 ||
	    stragview_float(a, 1, &s->median_rate) == -1)
		return (-1);
	if (stragview_ints(json_object_get(o, "n"), 8, 0, UINT32_MAX, v) == -1)
		return (-1);
	s->judged = (uint32_t)v[0];
	s->nflagged = (uint32_t)v[1];
	s->nlag = (uint32_t)v[2];
	s->nslow = (uint32_t)v[3];
	s->narrive = (uint32_t)v[4];
	s->nbusy = (uint32_t)v[5];
	s->nnobusy = (uint32_t)v[6];
	s->nnodes = (uint32_t)v[7];
	x = json_object_get(o, "step_us");
	if (!json_is_integer(x) || json_integer_value(x) < 0)
		return (-1);
	s->step_us = json_integer_value(x);
	if (stragview_ints(json_object_get(o, "bj"), 5, 0, UINT32_MAX, v) == -1)
		return (-1);
	s->bj.median_us = (uint32_t)v[0];
	s->bj.fastest_us = (uint32_t)v[1];
	s->bj.slowest_us = (uint32_t)v[2];
	s->bj.nover = (uint32_t)v[3];
	s->bj.nchange = (uint32_t)v[4];
	a = json_object_get(o, "aj");
	if (!json_is_array(a) || json_array_size(a) != 7 ||
	    stragview_int(a, 0, -1, INT32_MAX, &v[0]) == -1 ||
	    stragview_int(a, 1, 0, UINT32_MAX, &v[1]) == -1 ||
	    stragview_int(a, 2, 0, UINT32_MAX, &v[2]) == -1 ||
	    stragview_float(a, 3, &s->aj.share) == -1 ||
	    stragview_int(a, 4, INT64_MIN, INT64_MAX, &v[3]) == -1 ||
	    stragview_int(a, 5, 0, 1, &v[4]) == -1 ||
	    stragview_int(a, 6, 0, INT64_MAX, &v[5]) == -1)
		return (-1);
	s->aj.rank = (int32_t)v[0];
	s->aj.count = (uint32_t)v[1];
	s->aj.n = (uint32_t)v[2];
	s->aj.late_avg_us = v[3];
	s->aj.flagged = (int)v[4];
	s->aj.steps = (uint64_t)v[5];
	*why = "its lists do not read or are too long";
	a = json_object_get(o, "nobusy");
	if (!json_is_array(a) || json_array_size(a) > STRAGGLER_NOBUSY_KEEP)
		return (-1);
	for (i = 0; i < json_array_size(a); i++) {
		if (stragview_int(a, i, 0, INT32_MAX, &v[0]) == -1)
			return (-1);
		s->nobusy[i] = (int32_t)v[0];
	}
	if (s->nnobusy < json_array_size(a))
		return (-1);
	a = json_object_get(o, "list");
	if (!json_is_array(a) || json_array_size(a) > STRAGGLER_KEEP_MAX)
		return (-1);
	for (i = 0; i < json_array_size(a); i++)
		if (stragview_entry(json_array_get(a, i), &s->list[i]) == -1)
			return (-1);
	s->nlist = json_array_size(a);
	a = json_object_get(o, "nodes");
	if (!json_is_array(a) || json_array_size(a) > STRAGGLER_NODES_KEEP)
		return (-1);
	for (i = 0; i < json_array_size(a); i++) {
		x = json_array_get(a, i);
		if (!json_is_array(x) || json_array_size(x) != 3 ||
		    (node = json_string_value(json_array_get(x, 0))) == NULL ||
		    !nodename_valid(node, NULL) ||
		    stragview_int(x, 1, 1, UINT32_MAX, &v[0]) == -1 ||
		    stragview_int(x, 2, -1, COORD_STEP_MAX, &v[1]) == -1)
			return (-1);
		snprintf(s->nodes[i].node, sizeof(s->nodes[i].node), "%s",
		    node);
		s->nodes[i].ranks = (uint32_t)v[0];
		s->nodes[i].min_step = v[1];
	}
	s->nnodes_kept = json_array_size(a);
	x = json_object_get(o, "updated");
	if (!json_is_integer(x) || json_integer_value(x) <= 0)
		return (-1);
	s->updated_ns = json_integer_value(x);
	return (0);
}

/*
 * Takes a batch of jobs' rows into a follower's copy of the model: every
 * row of it, or (one job's name or row does not read) none.  A job of the
 * copy that the batch would hold and does not has no judgement.  Returns
 * 0, or -1 with *why saying what does not read (the batch is set aside).
 */
int
stragview_take(struct coord *c, const char *name, const char *text,
    const char **why)
{
	struct straggler	*all = NULL;
	struct job		*job;
	json_t			*b, *o;
	const char		*jname;
	size_t			 n = 0, i;
	int64_t			 bn;

	*why = "not a batch's name";
	if (viewrows_batch_name(name, STRAGVIEW_BATCHES, &bn) == -1)
		return (-1);
	*why = "not a JSON object";
	if ((b = json_loads(text, 0, NULL)) == NULL || !json_is_object(b))
		goto bad;
	if (json_object_size(b) > 0 &&
	    (all = calloc(json_object_size(b), sizeof(*all))) == NULL) {
		*why = "out of memory";
		goto bad;
	}
	json_object_foreach(b, jname, o) {
		if (!jobid_valid(jname, why))
			goto bad;
		if (viewrows_batch_of(jname, STRAGVIEW_BATCHES) != bn) {
			*why = "a job of another batch";
			goto bad;
		}
		if (stragview_read(o, &all[n++], why) == -1)
			goto bad;
	}
	/* The copy's jobs of this batch: the rows' judgement, or none. */
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (viewrows_batch_of(job->name, STRAGVIEW_BATCHES) != bn)
			continue;
		i = 0;
		json_object_foreach(b, jname, o) {
			if (strcmp(jname, job->name) == 0)
				break;
			i++;
		}
		if (straggler_take(job, i < n ? &all[i] : NULL) == -1) {
			*why = "out of memory";
			goto bad;
		}
	}
	free(all);
	json_decref(b);
	return (0);
bad:
	free(all);
	json_decref(b);
	return (-1);
}

/* Leading now, or a store that failed a write: every row is written again
 * at the next tick. */
void
stragview_forget(struct coord *c)
{
	struct job	*job;

	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->strag != NULL) {
			free(job->strag->view_row);
			job->strag->view_row = NULL;
		}
	}
	memset(c->strag_view_jobs, 0, sizeof(c->strag_view_jobs));
}
