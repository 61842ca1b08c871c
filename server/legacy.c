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

#include "coord.h"
#include "log.h"
#include "utf8.h"

/* LegacyWindowState, as status shows it. */
static const char *const legacy_window_states[] = {
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WRITTEN] = "written",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_WAITING] = "waiting",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_REFUSED] = "refused",
	[DYNPROF__V1__LEGACY_WINDOW_STATE__LEGACY_WINDOW_OVER] = "over",
};

#define NITEMS(x)	(sizeof(x) / sizeof((x)[0]))

struct legacy_window_status {
	uint32_t	 id;
	int		 state;
	char		 reason[COORD_LEGACY_TEXT_MAX];
};

struct legacy_entry {
	TAILQ_ENTRY(legacy_entry) entry;
	char		 node[COORD_NODE_MAX];
	char		 job[JOBID_MAX + 1];
	char		 dialect[32];		/* "" unknown */
	char		 error[COORD_LEGACY_TEXT_MAX];
	char		 output_dir[COORD_LEGACY_TEXT_MAX];
	int64_t		 time_ns;		/* when it came */
	size_t		 nwindows;
	struct legacy_window_status windows[COORD_LEGACY_WINDOWS_MAX];
};

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
	e->time_ns = coord_wall_ns();
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
}

/* One node's report on a legacy job, as status shows it. */
static json_t *
legacy_entry_json(const struct legacy_entry *e)
{
	json_t	*o, *arr, *w;
	size_t	 i;
	int	 s;

	o = json_object();
	json_object_set_new(o, "node", json_string(e->node));
	json_object_set_new(o, "dialect", json_string(e->dialect[0] != '\0' ?
	    e->dialect : "unknown"));
	json_object_set_new(o, "error", e->error[0] != '\0' ?
	    json_string(e->error) : json_null());
	json_object_set_new(o, "output_dir", e->output_dir[0] != '\0' ?
	    json_string(e->output_dir) : json_null());
	arr = json_array();
	for (i = 0; i < e->nwindows; i++) {
		s = e->windows[i].state;
		w = json_object();
		json_object_set_new(w, "id", json_integer(e->windows[i].id));
		json_object_set_new(w, "state", json_string(s > 0 &&
		    (size_t)s < NITEMS(legacy_window_states) ?
		    legacy_window_states[s] : "unknown"));
		json_object_set_new(w, "reason",
		    e->windows[i].reason[0] != '\0' ?
		    json_string(e->windows[i].reason) : json_null());
		json_array_append_new(arr, w);
	}
	json_object_set_new(o, "windows", arr);
	return (o);
}

/* Adds "legacy", every node's report on job, to body if there is any. */
void
legacy_job_json(struct coord *c, const char *job, struct json_t *body)
{
	struct legacy_entry	*e;
	json_t			*arr = NULL;

	TAILQ_FOREACH(e, &c->legacy, entry) {
		if (strcmp(e->job, job) != 0)
			continue;
		if (arr == NULL)
			arr = json_array();
		json_array_append_new(arr, legacy_entry_json(e));
	}
	if (arr != NULL)
		json_object_set_new(body, "legacy", arr);
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
}
