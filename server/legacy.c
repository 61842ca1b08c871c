/*
 * Legacy jobs as the agents report them (docs/legacy.md): for each node and
 * job, the last LegacyStatus, kept in memory (an agent sends them all again
 * after every Welcome) and shown in the job's status.  A node that reported
 * a job as legacy is the only one whose observed events for it are taken:
 * nobody else may make them up.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "legacy.h"
#include "model.h"
#include "utf8.h"

/* LegacyWindowState, as status shows it. */
static const char *const legacy_window_states[] = {
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WRITTEN] = "written",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING] = "waiting",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_REFUSED] = "refused",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER] = "over",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_UNVERIFIED] =
	    "unverified",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_MISSED] = "missed",
};

#define NITEMS(x)	(sizeof(x) / sizeof((x)[0]))

/* Marks node's batch of reports to be written for followers at the next
 * tick (legacyview.c). */
static void
legacy_changed(struct coord *c, const char *node)
{
	c->legacy_view_dirty[viewrows_batch_of(node, LEGACYVIEW_BATCHES)] = 1;
}

/* Finds what node said about job, or NULL. */
static struct legacy_entry *
legacy_find(struct coord *c, const char *node, const char *job)
{
	struct legacy_entry	*e;

	TAILQ_FOREACH(e, &c->legacy, entry)
		if (strcmp(e->job, job) == 0 && strcmp(e->node, node) == 0)
			return (e);
	return (NULL);
}

/* Copies s (NULL: "") into dst, cut at a character boundary if too long. */
static void
legacy_copy(char *dst, size_t size, const char *s)
{
	snprintf(dst, size, "%s", s != NULL ? s : "");
	utf8_cut_partial(dst);
}

/* Returns 1 if s (NULL: "") is valid UTF-8. */
static int
legacy_utf8(const char *s)
{
	return (s == NULL || utf8_valid(s, strlen(s)));
}

/* Returns 1 if node reported job as a legacy job it serves. */
int
legacy_known(struct coord *c, const char *node, const char *job)
{
	return (legacy_find(c, node, job) != NULL);
}

/* Returns 1 if node reports ranks of job through dynprof itself. */
static int
legacy_node_native(struct coord *c, const char *node, const char *job)
{
	struct node	*n;
	struct node_job	*nj;

	return ((n = schedule_node_find(c, node)) != NULL &&
	    (nj = schedule_node_job(n, job, 0)) != NULL && nj->native);
}

/*
 * Returns 1 if node reported job as a legacy job of a dialect it could not
 * tell and reports no rank of it: a directory made for every job (a SLURM
 * prolog), not a job it serves.
 */
int
legacy_idle(struct coord *c, const char *node, const char *job)
{
	struct legacy_entry	*e;

	return ((e = legacy_find(c, node, job)) != NULL &&
	    e->dialect[0] == '\0' && !legacy_node_native(c, node, job));
}

/*
 * Returns the name of a node that serves job as a MindSpore legacy job, whose
 * profiler every rank reads alike (it cannot target ranks), or NULL.
 */
const char *
legacy_ranks_refused(struct coord *c, const char *job)
{
	struct legacy_entry	*e;
	enum options_dialect	 d;

	TAILQ_FOREACH(e, &c->legacy, entry) {
		if (strcmp(e->job, job) != 0 ||
		    options_dialect_find(e->dialect, &d) == -1)
			continue;
		if (!options_dialect_ranks(d))
			return (e->node);
	}
	return (NULL);
}

/* Returns 1 if a node's window in state is over for it (refused: refused). */
static int
legacy_state_ended(int state, int refused)
{
	switch (state) {
	case DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_REFUSED:
		return (1);
	case DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER:
	case DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_UNVERIFIED:
	case DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_MISSED:
		return (!refused);
	default:
		return (0);
	}
}

/*
 * Returns 1 if every node serving job reports it as a legacy job and window
 * id ended there (refused: refused there); why (if not NULL) is then the
 * reason the first of them gave.
 */
static int
legacy_everywhere(struct coord *c, const struct job *job, uint32_t id,
    int refused, const char **why)
{
	const struct sub		*s;
	const struct legacy_entry	*e;
	size_t				 i;
	int				 any = 0;

	TAILQ_FOREACH(s, &job->subs, job_entry) {
		if (s->conn->node == NULL ||
		    (e = legacy_find(c, s->conn->node->name, job->name)) ==
		    NULL)
			return (0);
		for (i = 0; i < e->nwindows; i++)
			if (e->windows[i].id == id)
				break;
		if (i == e->nwindows ||
		    !legacy_state_ended(e->windows[i].state, refused))
			return (0);
		if (!any && why != NULL)
			*why = e->windows[i].reason;
		any = 1;
	}
	return (any);
}

/*
 * Returns 1 if every node serving job reports it as a legacy job and refused
 * window id: no rank will ever be given it.  *why is then the reason a node
 * gave (valid until its next report).
 */
int
legacy_refused_everywhere(struct coord *c, const struct job *job, uint32_t id,
    const char **why)
{
	return (legacy_everywhere(c, job, id, 1, why));
}

/*
 * Returns 1 if only the agents judge the end of job's windows: every node
 * serving job reports it as a legacy job and no rank of it reports for
 * itself.  The coordinator knows such a rank only once an agent saw its
 * trace (a torch_npu rank's appears at its stop, whole): the ranks it knows
 * are not the ranks running a window, and one of them ending it ends
 * nothing.  The agents know who started it (the ranks' logs).
 */
int
legacy_judges(struct coord *c, const struct job *job)
{
	const struct sub	*s;
	const struct rank	*r;
	int			 any = 0;

	TAILQ_FOREACH(s, &job->subs, job_entry) {
		if (s->conn->node == NULL ||
		    legacy_find(c, s->conn->node->name, job->name) == NULL)
			return (0);
		any = 1;
	}
	TAILQ_FOREACH(r, &job->ranks, entry)
		if (r->native)
			return (0);
	return (any);
}

/*
 * Returns 1 if every node serving job reports it as a legacy job and is done
 * with window id: refused it, or wrote it and saw it end (observed complete,
 * cancelled, missed by the framework, unverified, or not seen to end within
 * the agent's bound).  No node will write it again: it leaves the schedule,
 * whatever ranks were seen to begin it and never to finish.
 */
int
legacy_ended_everywhere(struct coord *c, const struct job *job, uint32_t id)
{
	return (legacy_everywhere(c, job, id, 0, NULL));
}

/*
 * Takes a LegacyStatus from node: kept (replacing the last), or forgotten
 * when the job's directory is gone.  Bad strings are refused, and counted.
 */
void
legacy_status(struct coord *c, struct node *node,
    const Dynprof__V1__LegacyStatus *st)
{
	struct legacy_entry	*e;
	enum options_dialect	 d;
	size_t			 i, n;

	if (st->job == NULL || !jobid_valid(st->job, NULL) ||
	    (st->dialect != NULL && st->dialect[0] != '\0' &&
	    options_dialect_find(st->dialect, &d) == -1) ||
	    !legacy_utf8(st->error) || !legacy_utf8(st->output_dir)) {
		c->metrics.legacy_refused++;
		log_warnx("%s: from %s: bad legacy status refused", __func__,
		    node->name);
		return;
	}
	e = legacy_find(c, node->name, st->job);
	if (st->removed) {
		if (e != NULL) {
			TAILQ_REMOVE(&c->legacy, e, entry);
			c->nlegacy--;
			free(e);
			legacy_changed(c, node->name);
		}
		return;
	}
	if (e == NULL) {
		if (c->nlegacy >= COORD_LEGACY_MAX ||
		    (e = calloc(1, sizeof(*e))) == NULL) {
			c->metrics.legacy_refused++;
			log_warnx("%s: from %s: job %s: over %d legacy jobs",
			    __func__, node->name, st->job, COORD_LEGACY_MAX);
			return;
		}
		legacy_copy(e->node, sizeof(e->node), node->name);
		legacy_copy(e->job, sizeof(e->job), st->job);
		TAILQ_INSERT_TAIL(&c->legacy, e, entry);
		c->nlegacy++;
	}
	legacy_copy(e->dialect, sizeof(e->dialect), st->dialect);
	legacy_copy(e->error, sizeof(e->error), st->error);
	legacy_copy(e->output_dir, sizeof(e->output_dir), st->output_dir);
	e->time_ns = clock_wall_ns();
	n = st->n_windows < COORD_LEGACY_WINDOWS_MAX ? st->n_windows :
	    COORD_LEGACY_WINDOWS_MAX;
	e->nwindows = 0;
	for (i = 0; i < n; i++) {
		if (!legacy_utf8(st->windows[i]->reason))
			continue;
		e->windows[e->nwindows].id = st->windows[i]->window_id;
		e->windows[e->nwindows].state = st->windows[i]->state;
		legacy_copy(e->windows[e->nwindows].reason,
		    sizeof(e->windows[0].reason), st->windows[i]->reason);
		e->nwindows++;
	}
	legacy_changed(c, node->name);
}

/* A window's tally across the nodes serving the job. */
struct legacy_tally {
	uint32_t	 id;
	json_int_t	 n[NITEMS(legacy_window_states)];
	const char	*reason;		/* the first one reported */
};

/* Counts window w of one node's report into the tallies (at most max). */
static void
legacy_count_window(struct legacy_tally *t, size_t *nt, size_t max,
    const struct legacy_window_status *w)
{
	size_t	 i;

	for (i = 0; i < *nt; i++)
		if (t[i].id == w->id)
			break;
	if (i == *nt) {
		if (*nt == max)
			return;
		memset(&t[i], 0, sizeof(t[i]));
		t[i].id = w->id;
		(*nt)++;
	}
	if (w->state > 0 && (size_t)w->state < NITEMS(legacy_window_states))
		t[i].n[w->state]++;
	if (t[i].reason == NULL && w->reason[0] != '\0')
		t[i].reason = w->reason;
}

/* The tallies as status shows them, in window id order. */
static json_t *
legacy_windows_json(struct legacy_tally *t, size_t nt)
{
	struct legacy_tally	 tmp;
	json_t			*arr, *w, *st;
	size_t			 i, j;

	for (i = 1; i < nt; i++)
		for (j = i; j > 0 && t[j - 1].id > t[j].id; j--) {
			tmp = t[j];
			t[j] = t[j - 1];
			t[j - 1] = tmp;
		}
	arr = json_array();
	for (i = 0; i < nt; i++) {
		w = json_object();
		st = json_object();
		for (j = 1; j < NITEMS(legacy_window_states); j++)
			json_object_set_new(st, legacy_window_states[j],
			    json_integer(t[i].n[j]));
		json_object_set_new(w, "id", json_integer(t[i].id));
		json_object_set_new(w, "nodes", st);
		json_object_set_new(w, "reason", t[i].reason != NULL ?
		    json_string(t[i].reason) : json_null());
		json_array_append_new(arr, w);
	}
	return (arr);
}

/*
 * Adds "legacy" to body, the job's summary, if some node serves the job as
 * legacy: how many nodes, by dialect; the first COORD_LEGACY_SHOWN nodes
 * whose report has an error; per window, how many nodes wrote it, wait, refused
 * it or are over with it, and the first reason given.  Its size does not grow
 * with the nodes.
 */
void
legacy_job_json(struct coord *c, const char *job, struct json_t *body)
{
	struct legacy_tally	 t[COORD_LEGACY_WINDOWS_MAX];
	struct legacy_entry	*e;
	json_t			*o, *dialects, *errors, *x;
	json_int_t		 nodes = 0, nerrors = 0;
	size_t			 nt = 0, i;
	const char		*d;

	dialects = json_object();
	errors = json_array();
	TAILQ_FOREACH(e, &c->legacy, entry) {
		if (strcmp(e->job, job) != 0)
			continue;
		/* A directory of a dialect nobody wrote, beside ranks that
		 * report for themselves: a native job, not a legacy one. */
		if (e->dialect[0] == '\0' &&
		    legacy_node_native(c, e->node, job))
			continue;
		nodes++;
		d = e->dialect[0] != '\0' ? e->dialect : "unknown";
		x = json_object_get(dialects, d);
		json_object_set_new(dialects, d,
		    json_integer(x != NULL ? json_integer_value(x) + 1 : 1));
		if (e->error[0] != '\0' && nerrors++ < COORD_LEGACY_SHOWN) {
			x = json_object();
			json_object_set_new(x, "node", json_string(e->node));
			json_object_set_new(x, "error", json_string(e->error));
			json_array_append_new(errors, x);
		}
		for (i = 0; i < e->nwindows; i++)
			legacy_count_window(t, &nt, COORD_LEGACY_WINDOWS_MAX,
			    &e->windows[i]);
	}
	if (nodes == 0) {
		json_decref(dialects);
		json_decref(errors);
		return;
	}
	o = json_object();
	json_object_set_new(o, "nodes", json_integer(nodes));
	json_object_set_new(o, "dialects", dialects);
	json_object_set_new(o, "nodes_in_error", json_integer(nerrors));
	json_object_set_new(o, "errors", errors);
	json_object_set_new(o, "windows", legacy_windows_json(t, nt));
	json_object_set_new(body, "legacy", o);
}

/*
 * Forgets what node reported: it said hello again, and its agent sends the
 * legacy jobs it serves now after the Welcome, before it replays events.
 */
void
legacy_forget_node(struct coord *c, const char *node)
{
	struct legacy_entry	*e, *next;

	for (e = TAILQ_FIRST(&c->legacy); e != NULL; e = next) {
		next = TAILQ_NEXT(e, entry);
		if (strcmp(e->node, node) == 0) {
			TAILQ_REMOVE(&c->legacy, e, entry);
			c->nlegacy--;
			free(e);
			legacy_changed(c, node);
		}
	}
}

/* Forgets every report. */
void
legacy_free_all(struct coord *c)
{
	struct legacy_entry	*e;

	while ((e = TAILQ_FIRST(&c->legacy)) != NULL) {
		TAILQ_REMOVE(&c->legacy, e, entry);
		free(e);
	}
	c->nlegacy = 0;
	memset(c->legacy_view_dirty, 1, sizeof(c->legacy_view_dirty));
}
