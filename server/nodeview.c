/*
 * Nodes as followers show them (docs/ha.md): what the leader alone knows of
 * each node (its agent connected, left or lost, its address, the jobs it
 * serves, what it applied and its ranks' progress) written as one row per
 * node where the store keeps them for followers (etcd), each time the
 * leader's housekeeping finds it changed; and read back into a follower's
 * copy of the model, where the view functions (schedule_node_up(),
 * schedule_serving_next()) take it as the leader's connections.  The time
 * the node was last heard from changes with every frame: it is written with
 * the rest, not on its own.
 *
 *	{"state": "connected", "address": "...", "connected": NS,
 *	 "last_seen": NS, "jobs": {"JOB": {"applied": G, "alive": N,
 *	 "native": 0, "min": STEP, "max": STEP, "sub": 1}}}
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jobid.h"
#include "model.h"

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
	TAILQ_FOREACH(nj, &n->jobs, entry)
		json_object_set_new(jobs, nj->job, json_pack("{s:I,s:I,s:i,"
		    "s:I,s:I,s:i}", "applied", (json_int_t)nj->applied,
		    "alive", (json_int_t)nj->ranks_alive, "native", nj->native,
		    "min", (json_int_t)nj->min_step, "max",
		    (json_int_t)nj->max_step, "sub",
		    nodeview_subscribed(n, nj->job)));
	json_object_set_new(o, "jobs", jobs);
	return (o);
}

/*
 * Stores the rows of the nodes whose state changed since their row was last
 * stored, in one commit not waited for; nothing where the store keeps no
 * node rows (SQLite: no follower).
 */
void
nodeview_flush(struct coord *c)
{
	struct node	*n;
	json_t		*o;
	char		*text, *row;
	int		 open = 0, rc = 0;

	if (!store_keeps_nodes(c->store) || store_batch_open(c->store))
		return;
	TAILQ_FOREACH(n, &c->nodes, entry) {
		if ((o = nodeview_row(n)) == NULL || (row = json_dumps(o,
		    JSON_COMPACT | JSON_PRESERVE_ORDER)) == NULL) {
			json_decref(o);
			rc = -1;
			break;
		}
		if (n->view_row != NULL && strcmp(row, n->view_row) == 0) {
			free(row);
			json_decref(o);
			continue;
		}
		free(n->view_row);
		n->view_row = row;	/* compared with at the next flush */
		json_object_set_new(o, "last_seen",
		    json_integer(n->last_seen_ns));
		text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(o);
		if (text == NULL || (!open && store_begin(c->store) == -1)) {
			free(text);
			rc = -1;
			break;
		}
		open = 1;
		rc = store_put_node(c->store, n->name, text);
		free(text);
		if (rc == -1)
			break;
		c->metrics.node_rows++;
	}
	if (open && rc == -1)
		store_rollback(c->store);
	if (rc == -1 || (open && store_commit_async(c->store, NULL,
	    NULL) == -1)) {
		/* Written again at the next flush, whole. */
		TAILQ_FOREACH(n, &c->nodes, entry) {
			free(n->view_row);
			n->view_row = NULL;
		}
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

/*
 * Takes a node's row into a follower's copy of the model.  Returns 0, or -1
 * with *why saying what does not read (the row is set aside).
 */
int
nodeview_take(struct coord *c, const char *name, const char *text,
    const char **why)
{
	json_t		*o, *jobs, *j;
	const char	*state, *addr, *job;
	struct node	*n;
	struct node_job	*nj;
	int64_t		 conn, seen, applied, alive, native, min, max, sub;

	*why = "not a JSON object";
	if ((o = json_loads(text, 0, NULL)) == NULL || !json_is_object(o))
		goto bad;
	*why = "a field is missing or out of range";
	state = json_string_value(json_object_get(o, "state"));
	addr = json_string_value(json_object_get(o, "address"));
	jobs = json_object_get(o, "jobs");
	if (state == NULL || addr == NULL || !json_is_object(jobs) ||
	    (strcmp(state, "connected") != 0 && strcmp(state, "left") != 0 &&
	    strcmp(state, "lost") != 0) ||
	    nodeview_int(o, "connected", 0, INT64_MAX, &conn) == -1 ||
	    nodeview_int(o, "last_seen", 0, INT64_MAX, &seen) == -1)
		goto bad;
	json_object_foreach(jobs, job, j) {
		*why = "a job's name or fields do not read";
		if (!jobid_valid(job, NULL) ||
		    nodeview_int(j, "applied", 0, COORD_GENERATION_MAX,
		    &applied) == -1 ||
		    nodeview_int(j, "alive", 0, UINT32_MAX, &alive) == -1 ||
		    nodeview_int(j, "native", 0, 1, &native) == -1 ||
		    nodeview_int(j, "min", -1, COORD_STEP_MAX, &min) == -1 ||
		    nodeview_int(j, "max", -1, COORD_STEP_MAX, &max) == -1 ||
		    nodeview_int(j, "sub", 0, 1, &sub) == -1)
			goto bad;
	}
	if ((n = schedule_node_get(c, name)) == NULL) {
		*why = "out of memory";
		goto bad;
	}
	n->view_up = strcmp(state, "connected") == 0;
	n->left = strcmp(state, "left") == 0;
	snprintf(n->address, sizeof(n->address), "%s", addr);
	n->connected_ns = conn;
	n->last_seen_ns = seen;
	json_object_foreach(jobs, job, j) {
		if ((nj = schedule_node_job(n, job, 1)) == NULL)
			continue;
		nodeview_int(j, "applied", 0, COORD_GENERATION_MAX, &applied);
		nodeview_int(j, "alive", 0, UINT32_MAX, &alive);
		nodeview_int(j, "native", 0, 1, &native);
		nodeview_int(j, "min", -1, COORD_STEP_MAX, &min);
		nodeview_int(j, "max", -1, COORD_STEP_MAX, &max);
		nodeview_int(j, "sub", 0, 1, &sub);
		nj->applied = (uint64_t)applied;
		nj->ranks_alive = (uint32_t)alive;
		nj->native = (int)native;
		nj->min_step = min;
		nj->max_step = max;
		nj->view_sub = (int)sub;
	}
	json_decref(o);
	return (0);
bad:
	json_decref(o);
	return (-1);
}

/* Leading now: no node is taken as connected but through its agent. */
void
nodeview_forget(struct coord *c)
{
	struct node	*n;
	struct node_job	*nj;

	TAILQ_FOREACH(n, &c->nodes, entry) {
		n->view_up = 0;
		free(n->view_row);
		n->view_row = NULL;
		TAILQ_FOREACH(nj, &n->jobs, entry)
			nj->view_sub = 0;
	}
}
