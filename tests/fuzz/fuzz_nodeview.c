/*
 * Fuzz target: a batch of nodes' rows as a follower reads it from etcd
 * (server/nodeview.c, nodeview_take()), into a copy of the model.  The input
 * is the batch's text (a NUL ends it): {"NODE": row, ...}.  A batch taken
 * must leave every node it names in a state the views can show: connected,
 * left or lost; each job's name valid, its steps -1 or in range, its ranks
 * alive counted; the views that read them (the node's state, the job's
 * serving nodes, their steps and ranks alive) run over it.  A batch refused
 * must say why, and leave no node.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "jobid.h"
#include "link.h"
#include "model.h"
#include "nodename.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct coord	*c;
	struct node		*n;
	struct node_job		*nj;
	struct job		*job;
	const char		*why = NULL, *state;
	char			*text;

	if (c == NULL) {
		if ((c = calloc(1, sizeof(*c))) == NULL)
			abort();
		TAILQ_INIT(&c->jobs);
		TAILQ_INIT(&c->nodes);
		/* A job the rows may name, with no agent here: a copy's. */
		if ((job = schedule_job_get(c, "j")) == NULL)
			abort();
	}
	if ((text = malloc(size + 1)) == NULL)
		return (0);
	memcpy(text, data, size);
	text[size] = '\0';
	if (nodeview_take(c, text, &why) == -1) {
		if (why == NULL || *why == '\0')
			abort();
		if (!TAILQ_EMPTY(&c->nodes))
			abort();
		free(text);
		return (0);
	}
	free(text);
	TAILQ_FOREACH(n, &c->nodes, entry) {
		if (!nodename_valid(n->name, &why))
			abort();
		state = link_node_state(n);
		if (strcmp(state, "connected") != 0 &&
		    strcmp(state, "left") != 0 && strcmp(state, "lost") != 0)
			abort();
		TAILQ_FOREACH(nj, &n->jobs, entry) {
			if (!jobid_valid(nj->job, NULL) || nj->min_step < -1 ||
			    nj->max_step < -1 ||
			    nj->min_step > COORD_STEP_MAX ||
			    nj->max_step > COORD_STEP_MAX ||
			    nj->applied > COORD_GENERATION_MAX)
				abort();
		}
	}
	job = schedule_job_find(c, "j");
	if (schedule_job_max_step(c, job) < -1 ||
	    schedule_job_min_step(c, job) < -1)
		abort();
	(void)schedule_job_ranks_alive(c, job);
	/* The next input starts with no node: the copy is loaded whole. */
	while ((n = TAILQ_FIRST(&c->nodes)) != NULL) {
		TAILQ_REMOVE(&c->nodes, n, entry);
		LIST_REMOVE(n, hentry);
		while ((nj = TAILQ_FIRST(&n->jobs)) != NULL) {
			TAILQ_REMOVE(&n->jobs, nj, entry);
			free(nj);
		}
		free(n);
	}
	return (0);
}
