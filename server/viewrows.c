/*
 * What the leader's view rows for followers beside the nodes' (nodeview.c)
 * share: the straggler judgement by job (stragview.c) and legacy reports
 * by node (legacyview.c), each kind in a fixed number of batch values named
 * by their number, written at the housekeeping tick when a row of theirs
 * changed, in a commit not waited for behind the leader's fencing compare;
 * nothing where the store keeps no view rows (SQLite: no follower).  A
 * batch over VIEWROWS_BATCH_BYTES is not stored (logged).
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"
#include "model.h"

/* Returns the batch of n that name's row goes in. */
unsigned
viewrows_batch_of(const char *name, unsigned n)
{
	uint32_t	 h = 2166136261u;	/* FNV-1a */

	for (; *name != '\0'; name++)
		h = (h ^ (uint8_t)*name) * 16777619u;
	return (h % n);
}

/* Reads a batch's name (four digits, below n) into *b.  Returns 0 or -1. */
int
viewrows_batch_name(const char *name, unsigned n, int64_t *b)
{
	size_t	 i;

	if (strlen(name) != 4)
		return (-1);
	for (i = 0; i < 4; i++)
		if (name[i] < '0' || name[i] > '9')
			return (-1);
	*b = strtol(name, NULL, 10);
	return (*b < (int64_t)n ? 0 : -1);
}

/*
 * Stores batch b of kind (its rows in o) in the open transaction, opening
 * it first if *open is not set.  Returns 0, or -1 (a store error; a batch
 * too long is logged and left out: 0).
 */
int
viewrows_put(struct coord *c, const char *kind, unsigned b, const json_t *o,
    int *open)
{
	char	*text, name[16];
	int	 rc = 0;

	if ((text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)) ==
	    NULL)
		return (-1);
	if (strlen(text) > VIEWROWS_BATCH_BYTES) {
		log_warnx("%s: %s %u: %zu bytes, over %d: not stored",
		    __func__, kind, b, strlen(text), VIEWROWS_BATCH_BYTES);
		free(text);
		return (0);
	}
	snprintf(name, sizeof(name), "%04u", b);
	if (!*open && store_begin(c->store) == -1)
		rc = -1;
	else {
		*open = 1;
		rc = store_put_view(c->store, kind, name, text);
	}
	free(text);
	return (rc);
}

/*
 * Ends what a kind's flush put in the open transaction (open: one was
 * opened; rc: -1 if a put failed): rolled back, or committed without
 * waiting.  Returns 0, or -1 if nothing was stored (the kind writes its
 * rows again, whole, at the next tick).
 */
int
viewrows_end(struct coord *c, int open, int rc)
{
	if (open && rc == -1)
		store_rollback(c->store);
	if (rc == -1 || (open && store_commit_async(c->store, NULL,
	    NULL) == -1))
		return (-1);
	return (0);
}

/*
 * Takes a batch of a kind's rows (text, a JSON object of rows by name) into
 * a follower's copy: every row checked first, then, if all read, the copy's
 * rows of batch bn cleared and each row taken (one not taken clears them
 * again).  Returns 0, or -1 with *why saying what does not read.
 */
int
viewrows_take(struct coord *c, const char *text, int64_t bn,
    const struct viewrows_taker *t, const char **why)
{
	json_t		*b, *o;
	const char	*name;
	int		 rc = -1;

	*why = "not a JSON object";
	if ((b = json_loads(text, 0, NULL)) == NULL || !json_is_object(b))
		goto out;
	json_object_foreach(b, name, o) {
		if (t->check(name, o, bn, why) == -1)
			goto out;
	}
	if (t->clear != NULL)
		t->clear(c, bn);
	json_object_foreach(b, name, o) {
		if (t->apply(c, name, o, why) == -1) {
			if (t->clear != NULL)
				t->clear(c, bn);	/* none of it */
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(b);
	return (rc);
}

/* Returns 1 if the store keeps view rows for followers and may take them
 * now (no batch of events open). */
int
viewrows_due(const struct coord *c)
{
	return (store_keeps_nodes(c->store) && !store_batch_open(c->store));
}
