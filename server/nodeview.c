/*
 * Nodes as followers show them (docs/ha.md): what the leader alone knows of
 * each node (its agent connected, left or lost, its address, the jobs it
 * serves, what it applied and its ranks' progress) written where the store
 * keeps them for followers (etcd) each time the leader's housekeeping finds
 * a node's row changed; and read back into a follower's copy of the model,
 * where the view functions (schedule_node_up(), schedule_serving_next())
 * take it as the leader's connections.  The time the node was last heard
 * from changes with every frame: it is written with the rest, not on its
 * own.
 *
 * A node's lowest and highest step change at every tick while its ranks
 * step, so at 10,000 nodes nearly every row changes at every tick: rows go
 * in NODEVIEW_BATCHES batches by a hash of the node's name, one value each,
 * and a tick rewrites the batches holding a changed row (with every row of
 * theirs, as of now), not one key per node:
 *
 *	{"NODE": {"state": "connected", "address": "...", "connected": NS,
 *	 "last_seen": NS, "clock_offset_ms": MS, "jobs": {"JOB": {"applied": G,
 *	 "alive": N, "native": 0, "min": STEP, "max": STEP, "sub": 1,
 *	 "strag": N, "busy": N, "busy_max": US}}}, ...}
 *
 * clock_offset_ms (its agent's clock offset, time windows) only once known,
 * in whole ms: the estimate moves by microseconds, which rewrite no row.
 * "strag", "busy" and "busy_max" are the node's ranks of the job as the
 * last straggler tick counted them (straggler.c), for the page's heat map.
 */

/* A node's clock offset believed: a day at most (as link_dispatch.c's). */
#define NODEVIEW_OFFSET_MAX	(86400LL * 1000)

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jobid.h"
#include "log.h"
#include "model.h"
#include "nodename.h"

/* Returns 1 if the node's agent subscribed to job. */
static int
nodeview_subscribed(const struct node *n, const char *job)
{
	const struct sub	*s;

	if (n->conn == NULL)
		return (0);
	TAILQ_FOREACH(s, &n->conn->subs, conn_entry)
		if (strcmp(s->job->name, job) == 0)
			return (1);
	return (0);
}

/* Returns node n's row without the time it was last heard from, or NULL. */
static json_t *
nodeview_row(const struct node *n)
{
	const struct node_job	*nj;
	json_t			*o, *jobs;

	if ((o = json_object()) == NULL || (jobs = json_object()) == NULL) {
		json_decref(o);
		return (NULL);
	}
	json_object_set_new(o, "state", json_string(n->conn != NULL ?
	    "connected" : n->left ? "left" : "lost"));
	json_object_set_new(o, "address", json_string(n->address));
	json_object_set_new(o, "connected", json_integer(n->connected_ns));
	if (n->agent_offset_known)
		json_object_set_new(o, "clock_offset_ms",
		    json_integer(n->agent_offset_ns / 1000000));
	TAILQ_FOREACH(nj, &n->jobs, entry)
		json_object_set_new(jobs, nj->job, json_pack("{s:I,s:I,s:i,"
		    "s:I,s:I,s:i,s:I,s:I,s:I}", "applied",
		    (json_int_t)nj->applied, "alive",
		    (json_int_t)nj->ranks_alive, "native", nj->native,
		    "min", (json_int_t)nj->min_step, "max",
		    (json_int_t)nj->max_step, "sub",
		    nodeview_subscribed(n, nj->job), "strag",
		    (json_int_t)nj->strag_ranks, "busy",
		    (json_int_t)nj->busy_ranks, "busy_max",
		    (json_int_t)nj->busy_max_us));
	json_object_set_new(o, "jobs", jobs);
	return (o);
}

/* Returns the batch node name's row goes in. */
static unsigned
nodeview_batch_of(const char *name)
{
	uint32_t	 h = 2166136261u;	/* FNV-1a */

	for (; *name != '\0'; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return (h % NODEVIEW_BATCHES);
}

/*
 * Marks in dirty[] the batches holding a node whose row changed since it
 * was last stored (n->view_dirty, set wherever a field of its row
 * changes: a node that did not change costs a test), and clears that.
 */
static void
nodeview_changed(struct coord *c, uint8_t *dirty)
{
	struct node	*n;

	TAILQ_FOREACH(n, &c->nodes, entry) {
		if (!n->view_dirty)
			continue;
		n->view_dirty = 0;
		dirty[nodeview_batch_of(n->name)] = 1;
	}
}

/*
 * Stores the batches of nodes' rows holding a row that changed since it
 * was last stored, in one commit not waited for; nothing where the store
 * keeps no node rows (SQLite: no follower).  A batch over
 * NODEVIEW_BATCH_BYTES is not stored (logged).
 */
void
nodeview_flush(struct coord *c)
{
	struct node		*n;
	json_t			*batch[NODEVIEW_BATCHES], *o;
	uint8_t			 dirty[NODEVIEW_BATCHES];
	char			*text, name[16];
	unsigned		 b;
	int			 open = 0, rc = 0;

	if (!store_keeps_nodes(c->store) || store_batch_open(c->store))
		return;
	memset(dirty, 0, sizeof(dirty));
	memset(batch, 0, sizeof(batch));
	nodeview_changed(c, dirty);
	TAILQ_FOREACH(n, &c->nodes, entry) {
		if (rc == -1)
			break;
		if (!dirty[b = nodeview_batch_of(n->name)])
			continue;
		if ((batch[b] == NULL && (batch[b] = json_object()) == NULL) ||
		    (o = nodeview_row(n)) == NULL) {
			rc = -1;
			break;
		}
		json_object_set_new(o, "last_seen",
		    json_integer(n->last_seen_ns));
		json_object_set_new(batch[b], n->name, o);
	}
	for (b = 0; b < NODEVIEW_BATCHES; b++) {
		if (batch[b] == NULL)
			continue;
		text = rc == 0 ? json_dumps(batch[b], JSON_COMPACT |
		    JSON_PRESERVE_ORDER) : NULL;
		if (rc == 0 && text != NULL &&
		    strlen(text) > NODEVIEW_BATCH_BYTES) {
			log_warnx("%s: nodes' rows batch %u: %zu bytes, over "
			    "%d: not stored", __func__, b, strlen(text),
			    NODEVIEW_BATCH_BYTES);
		} else if (rc == 0) {
			snprintf(name, sizeof(name), "%04u", b);
			if (text == NULL || (!open &&
			    store_begin(c->store) == -1))
				rc = -1;
			else {
				open = 1;
				if (store_put_nodes(c->store, name, text) == -1)
					rc = -1;
				else
					c->metrics.node_rows +=
					    json_object_size(batch[b]);
			}
		}
		free(text);
		json_decref(batch[b]);
	}
	if (open && rc == -1)
		store_rollback(c->store);
	if (rc == -1 || (open && store_commit_async(c->store, NULL,
	    NULL) == -1)) {
		/* Written again at the next flush, whole. */
		TAILQ_FOREACH(n, &c->nodes, entry)
			n->view_dirty = 1;
	}
}

/* Reads an integer field of o within [min, max] into *v.  Returns 0 or -1. */
static int
nodeview_int(const json_t *o, const char *key, int64_t min, int64_t max,
    int64_t *v)
{
	const json_t	*x = json_object_get(o, key);

	if (!json_is_integer(x) || json_integer_value(x) < min ||
	    json_integer_value(x) > max)
		return (-1);
	*v = json_integer_value(x);
	return (0);
}

/* Reads an optional count of o (0 if absent: a leader of before it).
 * Returns 0 or -1. */
static int
nodeview_count(const json_t *o, const char *key, int64_t *v)
{
	*v = 0;
	if (json_object_get(o, key) == NULL)
		return (0);
	return (nodeview_int(o, key, 0, UINT32_MAX, v));
}

/* Returns 0 if o reads as a node's row, or -1 with *why saying what not. */
static int
nodeview_check(const json_t *o, const char **why)
{
	const char	*state, *job;
	json_t		*jobs, *j;
	int64_t		 v;

	*why = "a field is missing or out of range";
	if (!json_is_object(o))
		return (-1);
	state = json_string_value(json_object_get(o, "state"));
	jobs = json_object_get(o, "jobs");
	if (state == NULL || json_string_value(json_object_get(o,
	    "address")) == NULL || !json_is_object(jobs) ||
	    (strcmp(state, "connected") != 0 && strcmp(state, "left") != 0 &&
	    strcmp(state, "lost") != 0) ||
	    nodeview_int(o, "connected", 0, INT64_MAX, &v) == -1 ||
	    nodeview_int(o, "last_seen", 0, INT64_MAX, &v) == -1 ||
	    (json_object_get(o, "clock_offset_ms") != NULL && nodeview_int(o,
	    "clock_offset_ms", -NODEVIEW_OFFSET_MAX, NODEVIEW_OFFSET_MAX,
	    &v) == -1))
		return (-1);
	json_object_foreach(jobs, job, j) {
		*why = "a job's name or fields do not read";
		if (!jobid_valid(job, NULL) ||
		    nodeview_int(j, "applied", 0, COORD_GENERATION_MAX,
		    &v) == -1 ||
		    nodeview_int(j, "alive", 0, UINT32_MAX, &v) == -1 ||
		    nodeview_int(j, "native", 0, 1, &v) == -1 ||
		    nodeview_int(j, "min", -1, COORD_STEP_MAX, &v) == -1 ||
		    nodeview_int(j, "max", -1, COORD_STEP_MAX, &v) == -1 ||
		    nodeview_int(j, "sub", 0, 1, &v) == -1 ||
		    nodeview_count(j, "strag", &v) == -1 ||
		    nodeview_count(j, "busy", &v) == -1 ||
		    nodeview_count(j, "busy_max", &v) == -1)
			return (-1);
	}
	return (0);
}

/* Takes node name's row o (nodeview_check() passed) into the model.
 * Returns 0 or -1 (out of memory). */
static int
nodeview_apply(struct coord *c, const char *name, const json_t *o)
{
	const char	*state, *job;
	json_t		*j;
	struct node	*n;
	struct node_job	*nj;
	int64_t		 conn, seen, applied, alive, native, min, max, sub;
	int64_t		 off, strag, busy, busy_max;

	if ((n = schedule_node_get(c, name)) == NULL)
		return (-1);
	state = json_string_value(json_object_get(o, "state"));
	nodeview_int(o, "connected", 0, INT64_MAX, &conn);
	nodeview_int(o, "last_seen", 0, INT64_MAX, &seen);
	n->view_up = strcmp(state, "connected") == 0;
	n->left = strcmp(state, "left") == 0;
	snprintf(n->address, sizeof(n->address), "%s",
	    json_string_value(json_object_get(o, "address")));
	n->connected_ns = conn;
	n->last_seen_ns = seen;
	n->agent_offset_known = nodeview_int(o, "clock_offset_ms",
	    -NODEVIEW_OFFSET_MAX, NODEVIEW_OFFSET_MAX, &off) == 0;
	n->agent_offset_ns = n->agent_offset_known ? off * 1000000 : 0;
	json_object_foreach(json_object_get(o, "jobs"), job, j) {
		if ((nj = schedule_node_job(n, job, 1)) == NULL)
			continue;
		nodeview_int(j, "applied", 0, COORD_GENERATION_MAX, &applied);
		nodeview_int(j, "alive", 0, UINT32_MAX, &alive);
		nodeview_int(j, "native", 0, 1, &native);
		nodeview_int(j, "min", -1, COORD_STEP_MAX, &min);
		nodeview_int(j, "max", -1, COORD_STEP_MAX, &max);
		nodeview_int(j, "sub", 0, 1, &sub);
		nodeview_count(j, "strag", &strag);
		nodeview_count(j, "busy", &busy);
		nodeview_count(j, "busy_max", &busy_max);
		nj->applied = (uint64_t)applied;
		nj->ranks_alive = (uint32_t)alive;
		nj->native = (int)native;
		nj->min_step = min;
		nj->max_step = max;
		nj->view_sub = (int)sub;
		nj->strag_ranks = (uint32_t)strag;
		nj->busy_ranks = (uint32_t)busy;
		nj->busy_max_us = (uint32_t)busy_max;
	}
	return (0);
}

/* nodeview_take()'s checks of node name's row o. */
static int
nodeview_take_check(const char *name, json_t *o, int64_t bn, const char **why)
{
	(void)bn;
	if (!nodename_valid(name, why) || nodeview_check(o, why) == -1)
		return (-1);
	return (0);
}

/* nodeview_take()'s taking of node name's row o. */
static int
nodeview_take_apply(struct coord *c, const char *name, json_t *o,
    const char **why)
{
	if (nodeview_apply(c, name, o) == -1) {
		*why = "out of memory";
		return (-1);
	}
	return (0);
}

/*
 * Takes a batch of nodes' rows into a follower's copy of the model: every
 * row of it, or (one node's name or row does not read) none.  Returns 0,
 * or -1 with *why saying what does not read (the batch is set aside).
 */
int
nodeview_take(struct coord *c, const char *text, const char **why)
{
	static const struct viewrows_taker t = {
		nodeview_take_check, NULL, nodeview_take_apply
	};

	return (viewrows_take(c, text, 0, &t, why));
}

/* Leading now: no node is taken as connected but through its agent. */
void
nodeview_forget(struct coord *c)
{
	struct node	*n;
	struct node_job	*nj;

	TAILQ_FOREACH(n, &c->nodes, entry) {
		n->view_up = 0;
		n->view_dirty = 1;	/* stored by this leader at its tick */
		TAILQ_FOREACH(nj, &n->jobs, entry)
			nj->view_sub = 0;
	}
}
