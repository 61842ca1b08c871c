/*
 * Fuzz target: a batch of the leader's view rows as a follower reads it
 * from etcd into its copy of the model: the first byte picks the kind ('s':
 * jobs' straggler judgement, stragview_take(); anything else: nodes' legacy
 * reports, legacyview_take()), the rest is the batch's text (a NUL ends
 * it), taken as the batch job "j" (node "n1") hashes to.  A batch refused
 * must say why and leave the copy as it was; a batch taken must render
 * through the views that read it (the job's summary's stragglers and legacy
 * sections, GET /v1/jobs/J/stragglers, a node judged idle) with every
 * count and list within its bounds.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord.h"
#include "model.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Checks the rendered judgement of job j: lists within their bounds. */
static void
fuzz_check_strag(struct coord *c, struct job *job)
{
	json_t	*o;

	if ((o = straggler_json_all(c, job)) == NULL)
		abort();
	if (json_array_size(json_object_get(o, "worst_ranks")) > 256 ||
	    json_array_size(json_object_get(o, "worst_nodes")) > 64 ||
	    json_array_size(json_object_get(o, "no_busy_ranks")) > 16 ||
	    json_integer_value(json_object_get(o, "lag_steps")) < 0 ||
	    json_integer_value(json_object_get(o, "busy_percent")) < 0)
		abort();
	json_decref(o);
	if ((o = straggler_json(c, job)) == NULL)
		abort();
	json_decref(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct coord	*c;
	struct job		*job;
	const char		*why = NULL;
	char			*text, name[16];
	json_t			*body;
	size_t			 before;
	int			 strag, rc;

	if (size < 1)
		return (0);
	if (c == NULL) {
		if ((c = calloc(1, sizeof(*c))) == NULL)
			abort();
		TAILQ_INIT(&c->jobs);
		TAILQ_INIT(&c->nodes);
		TAILQ_INIT(&c->legacy);
		coord_bounds_init(&c->conf);
		if (schedule_job_get(c, "j") == NULL)
			abort();
	}
	job = schedule_job_find(c, "j");
	strag = data[0] == 's';
	if ((text = malloc(size)) == NULL)
		return (0);
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	before = c->nlegacy;
	snprintf(name, sizeof(name), "%04u", strag ?
	    viewrows_batch_of("j", STRAGVIEW_BATCHES) :
	    viewrows_batch_of("n1", LEGACYVIEW_BATCHES));
	rc = strag ? stragview_take(c, name, text, &why) :
	    legacyview_take(c, name, text, &why);
	free(text);
	if (rc == -1) {
		if (why == NULL || *why == '\0')
			abort();
		if (!strag && c->nlegacy != before)
			abort();
	} else if (c->nlegacy > COORD_LEGACY_MAX)
		abort();
	fuzz_check_strag(c, job);
	if ((body = json_object()) == NULL)
		abort();
	legacy_job_json(c, "j", body);
	(void)legacy_idle(c, "n1", "j");
	(void)legacy_ranks_refused(c, "j");
	json_decref(body);
	/* The next input starts with no judgement and no report. */
	(void)straggler_take(job, NULL);
	legacy_free_all(c);
	return (0);
}
