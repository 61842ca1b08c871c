/*
 * The model rebuilt from the store at start: store_load() hands each row to
 * one of the functions here, which checks it and puts it in place.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord.h"
#include "log.h"
#include "store.h"

/* Takes the generation counter. */
static void
load_generation(void *arg, uint64_t gen)
{
	struct coord	*c = arg;

	c->generation = gen;
}

/* Takes a job's own fields; a row with an invalid name is skipped. */
static int
load_job(void *arg, const struct store_job *row)
{
	struct coord	*c = arg;
	struct job	*job;

	if (!jobid_valid(row->name, NULL))
		return (0);
	if ((job = schedule_job_get(c, row->name)) == NULL)
		return (-1);
	job->generation = row->generation;
	job->next_window_id = row->next_window_id;
	if (row->config != NULL)
		job->config_json = strdup(row->config);
	if (row->defaults != NULL)
		options_load(row->defaults, &job->defaults);
	job->created_ns = row->created_ns;
	if (row->rules != NULL && rules_load(job, row->rules) == -1)
		return (-1);
	return (0);
}

/* Takes a window of a known job. */
static int
load_window(void *arg, const struct store_window *row)
{
	struct coord	*c = arg;
	struct job	*job;
	struct window	*w;

	if ((job = schedule_job_find(c, row->job)) == NULL)
		return (0);
	if ((w = window_new()) == NULL)
		return (-1);
	w->id = row->id;
	w->start_step = row->start_step;
	w->stop_step = row->stop_step;
	if (row->ranks != NULL)
		snprintf(w->ranks, sizeof(w->ranks), "%s", row->ranks);
	if (ranks_parse(w->ranks, &w->rankset, NULL) == -1)
		w->ranks[0] = '\0';
	if (row->options != NULL)
		options_load(row->options, &w->options);
	if (row->output_subdir != NULL)
		snprintf(w->output_subdir, sizeof(w->output_subdir), "%s",
		    row->output_subdir);
	w->state = row->state == WINDOW_STATE_CANCELLED ?
	    WINDOW_STATE_CANCELLED : WINDOW_STATE_SCHEDULED;
	w->finished = row->finished;
	w->created_ns = row->created_ns;
	w->ended_ns = row->ended_ns;
	schedule_window_insert(job, w);
	if (w->id >= job->next_window_id)
		job->next_window_id = w->id + 1;
	return (0);
}

/* Returns a copy of v, or NULL for NULL. */
static char *
load_dup(const char *v)
{
	return (v == NULL ? NULL : strdup(v));
}

/* Takes a rank of a known job. */
static int
load_rank(void *arg, const struct store_rank *row)
{
	struct coord	*c = arg;
	struct job	*job;
	struct rank	*r;

	if ((job = schedule_job_find(c, row->job)) == NULL)
		return (0);
	if ((r = schedule_rank_get(job, row->rank)) == NULL)
		return (-1);
	if (row->node != NULL)
		snprintf(r->node, sizeof(r->node), "%s", row->node);
	r->pid = row->pid;
	r->native = row->pid != 0 ||
	    (row->state != DYNPROF__V1__RANK_STATE__RANK_OBSERVED &&
	    row->state != DYNPROF__V1__RANK_STATE__RANK_OBSERVED_COMPLETE);
	r->step = row->step;
	r->state = row->state;
	r->window_id = row->window_id;
	r->output_dir = load_dup(row->output_dir);
	r->last_event = row->last_event;
	r->last_event_ns = row->last_event_ns;
	r->arrived_ns = row->arrived_ns;
	r->gone_ns = row->gone_ns;
	/* Gone in a store of before these times: it went before now, which
	 * is all the windows made since need. */
	if (row->state == DYNPROF__V1__RANK_STATE__RANK_GONE &&
	    r->gone_ns == 0)
		r->gone_ns = coord_wall_ns();
	r->error = load_dup(row->error);
	return (0);
}

/* Takes an event of a rank of a known job, into its history. */
static int
load_event(void *arg, const char *name, int32_t rank,
    const struct rank_event *ev)
{
	struct coord	*c = arg;
	struct job	*job;
	struct rank	*r;

	if ((job = schedule_job_find(c, name)) == NULL)
		return (0);
	if ((r = schedule_rank_get(job, rank)) == NULL)
		return (-1);
	schedule_rank_add_event(r, ev);
	return (0);
}

/* Takes the highest committed event seq of a node's agent process. */
static int
load_agent(void *arg, const char *name, uint64_t boot_id, uint64_t seq)
{
	struct coord	*c = arg;
	struct node	*n;

	if ((n = schedule_node_get(c, name)) == NULL)
		return (-1);
	n->boot_id = boot_id;
	n->acked_seq = n->seen_seq = seq;
	return (0);
}

/* Rebuilds the coordinator's model from its store, at start. */
int
load_model(struct coord *c)
{
	struct store_loader	 l = {
		.arg = c,
		.generation = load_generation,
		.job = load_job,
		.window = load_window,
		.rank = load_rank,
		.event = load_event,
		.agent = load_agent,
	};

	return (store_load(c->store, &l));
}
