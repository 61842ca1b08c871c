/*
 * Legacy jobs' reports as followers show them (docs/legacy.md): what each
 * node's agent last reported of the legacy jobs it serves (legacy.c, the
 * leader's memory only) written where the store keeps it for followers
 * (etcd) when a report changed, and read back into a follower's copy, where
 * the job's summary shows it and judges a node idle (legacy_idle()).
 *
 * Nodes go in LEGACYVIEW_BATCHES batches by a hash of the node's name, one
 * value each (PREFIX legacybatch/BATCH), and a tick rewrites the batches
 * holding a node whose reports changed (legacy.c marks them in
 * c->legacy_view_dirty):
 *
 *	{"NODE": {"JOB": {"dialect": "...", "error": "...", "output_dir":
 *	 "...", "windows": [[ID, STATE, "REASON"], ...]}, ...}, ...}
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jobid.h"
#include "legacy.h"
#include "log.h"
#include "model.h"
#include "nodename.h"
#include "utf8.h"

/* Returns report e as its row, or NULL out of memory. */
static json_t *
legacyview_row(const struct legacy_entry *e)
{
	json_t	*o, *w;
	size_t	 i;

	if ((w = json_array()) == NULL)
		return (NULL);
	for (i = 0; i < e->nwindows; i++)
		json_array_append_new(w, json_pack("[I,i,s]",
		    (json_int_t)e->windows[i].id, e->windows[i].state,
		    e->windows[i].reason));
	o = json_pack("{s:s,s:s,s:s,s:o}", "dialect", e->dialect, "error",
	    e->error, "output_dir", e->output_dir, "windows", w);
	return (o);
}

/*
 * Adds the batches of nodes' reports marked changed to the open
 * transaction (opened at the first: *open).  Returns 0 or -1.
 */
static int
legacyview_add(struct coord *c, int *open)
{
	const struct legacy_entry	*e;
	json_t				*batch[LEGACYVIEW_BATCHES], *n, *o;
	unsigned			 b;
	int				 rc = 0;

	memset(batch, 0, sizeof(batch));
	for (b = 0; b < LEGACYVIEW_BATCHES; b++)
		if (c->legacy_view_dirty[b] &&
		    (batch[b] = json_object()) == NULL)
			rc = -1;
	TAILQ_FOREACH(e, &c->legacy, entry) {
		if (rc == -1)
			break;
		if (batch[b = viewrows_batch_of(e->node,
		    LEGACYVIEW_BATCHES)] == NULL)
			continue;
		if ((n = json_object_get(batch[b], e->node)) == NULL &&
		    (json_object_set_new(batch[b], e->node, json_object()) ==
		    -1 || (n = json_object_get(batch[b], e->node)) == NULL))
			rc = -1;
		else if ((o = legacyview_row(e)) == NULL ||
		    json_object_set_new(n, e->job, o) == -1)
			rc = -1;
	}
	for (b = 0; b < LEGACYVIEW_BATCHES; b++) {
		if (batch[b] != NULL && rc == 0) {
			if (viewrows_put(c, STORE_VIEW_LEGACY, b, batch[b],
			    open) == -1)
				rc = -1;
			else {
				c->legacy_view_dirty[b] = 0;
				c->metrics.legacy_rows +=
				    json_object_size(batch[b]);
			}
		}
		json_decref(batch[b]);
	}
	return (rc);
}

/* The leader's tick: stores the batches of nodes' reports marked changed,
 * in one commit not waited for. */
void
legacyview_flush(struct coord *c)
{
	int	 open = 0, rc;

	if (!viewrows_due(c))
		return;
	rc = legacyview_add(c, &open);
	if (viewrows_end(c, open, rc) == -1)
		legacyview_forget(c);	/* written again, whole */
}

/* Leading now, or a store that failed a write: every batch is written
 * again at the next tick. */
void
legacyview_forget(struct coord *c)
{
	memset(c->legacy_view_dirty, 1, sizeof(c->legacy_view_dirty));
}

/* Returns 1 if s is a string of valid UTF-8 shorter than max bytes. */
static int
legacyview_text(const json_t *s, size_t max)
{
	const char	*v = json_string_value(s);

	return (v != NULL && strlen(v) < max && utf8_valid(v, strlen(v)));
}

/* Returns 0 if o reads as a node's report of a job, or -1 with *why. */
static int
legacyview_check(const json_t *o, const char **why)
{
	const json_t		*w, *x;
	enum options_dialect	 d;
	const char		*dialect;
	size_t			 i;

	*why = "a report's field is missing, too long or out of range";
	w = json_object_get(o, "windows");
	dialect = json_string_value(json_object_get(o, "dialect"));
	if (!json_is_object(o) || dialect == NULL ||
	    strlen(dialect) >= sizeof(((struct legacy_entry *)0)->dialect) ||
	    (dialect[0] != '\0' && options_dialect_find(dialect, &d) == -1) ||
	    !legacyview_text(json_object_get(o, "error"),
	    COORD_LEGACY_TEXT_MAX) ||
	    !legacyview_text(json_object_get(o, "output_dir"),
	    COORD_LEGACY_TEXT_MAX) ||
	    !json_is_array(w) || json_array_size(w) > COORD_LEGACY_WINDOWS_MAX)
		return (-1);
	for (i = 0; i < json_array_size(w); i++) {
		x = json_array_get(w, i);
		if (!json_is_array(x) || json_array_size(x) != 3 ||
		    !json_is_integer(json_array_get(x, 0)) ||
		    json_integer_value(json_array_get(x, 0)) < 0 ||
		    json_integer_value(json_array_get(x, 0)) > UINT32_MAX ||
		    !json_is_integer(json_array_get(x, 1)) ||
		    json_integer_value(json_array_get(x, 1)) < 0 ||
		    json_integer_value(json_array_get(x, 1)) > 64 ||
		    !legacyview_text(json_array_get(x, 2),
		    COORD_LEGACY_TEXT_MAX))
			return (-1);
	}
	return (0);
}

/* Takes node's report of job (checked) into the copy.  Returns 0, or -1
 * (out of memory, or over COORD_LEGACY_MAX). */
static int
legacyview_apply(struct coord *c, const char *node, const char *job,
    const json_t *o)
{
	struct legacy_entry	*e;
	const json_t		*w, *x;
	size_t			 i;

	if (c->nlegacy >= COORD_LEGACY_MAX ||
	    (e = calloc(1, sizeof(*e))) == NULL)
		return (-1);
	snprintf(e->node, sizeof(e->node), "%s", node);
	snprintf(e->job, sizeof(e->job), "%s", job);
	snprintf(e->dialect, sizeof(e->dialect), "%s",
	    json_string_value(json_object_get(o, "dialect")));
	snprintf(e->error, sizeof(e->error), "%s",
	    json_string_value(json_object_get(o, "error")));
	snprintf(e->output_dir, sizeof(e->output_dir), "%s",
	    json_string_value(json_object_get(o, "output_dir")));
	w = json_object_get(o, "windows");
	for (i = 0; i < json_array_size(w); i++) {
		x = json_array_get(w, i);
		e->windows[i].id = (uint32_t)json_integer_value(
		    json_array_get(x, 0));
		e->windows[i].state = (int)json_integer_value(
		    json_array_get(x, 1));
		snprintf(e->windows[i].reason, sizeof(e->windows[i].reason),
		    "%s", json_string_value(json_array_get(x, 2)));
	}
	e->nwindows = json_array_size(w);
	TAILQ_INSERT_TAIL(&c->legacy, e, entry);
	c->nlegacy++;
	return (0);
}

/* Forgets the copy's reports of the nodes of batch bn. */
static void
legacyview_drop(struct coord *c, int64_t bn)
{
	struct legacy_entry	*e, *next;

	for (e = TAILQ_FIRST(&c->legacy); e != NULL; e = next) {
		next = TAILQ_NEXT(e, entry);
		if (viewrows_batch_of(e->node, LEGACYVIEW_BATCHES) == bn) {
			TAILQ_REMOVE(&c->legacy, e, entry);
			c->nlegacy--;
			free(e);
		}
	}
}

/* legacyview_take()'s checks of node's reports n in batch bn. */
static int
legacyview_take_check(const char *node, json_t *n, int64_t bn,
    const char **why)
{
	json_t		*o;
	const char	*job;

	if (!nodename_valid(node, why))
		return (-1);
	if (viewrows_batch_of(node, LEGACYVIEW_BATCHES) != bn ||
	    !json_is_object(n)) {
		*why = "a node of another batch, or not an object";
		return (-1);
	}
	json_object_foreach(n, job, o) {
		if (!jobid_valid(job, why) || legacyview_check(o, why) == -1)
			return (-1);
	}
	return (0);
}

/* legacyview_take()'s taking of node's reports n. */
static int
legacyview_take_apply(struct coord *c, const char *node, json_t *n,
    const char **why)
{
	json_t		*o;
	const char	*job;

	json_object_foreach(n, job, o) {
		if (legacyview_apply(c, node, job, o) == -1) {
			*why = "over the legacy reports kept, or out of "
			    "memory";
			return (-1);
		}
	}
	return (0);
}

/*
 * Takes a batch of nodes' legacy reports into a follower's copy, in place
 * of what the copy held of its nodes: every report of it, or (one name or
 * report does not read) none.  Returns 0, or -1 with *why saying what does
 * not read (the batch is set aside).
 */
int
legacyview_take(struct coord *c, const char *name, const char *text,
    const char **why)
{
	static const struct viewrows_taker t = {
		legacyview_take_check, legacyview_drop, legacyview_take_apply
	};
	int64_t		 bn;

	*why = "not a batch's name";
	if (viewrows_batch_name(name, LEGACYVIEW_BATCHES, &bn) == -1)
		return (-1);
	return (viewrows_take(c, text, bn, &t, why));
}
