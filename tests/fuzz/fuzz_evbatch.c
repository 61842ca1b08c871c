/*
 * Fuzz target: an event batch of the etcd store (server/store_etcd_batch.c)
 * as a coordinator reads it back, at start or from a follower's watch: the
 * input is the value under evbatch/J/1/1, packed, JSON (the layout of
 * before) or either deflated.  What esb_decode() hands over must be of job
 * J, its strings UTF-8 without a NUL; a refusal must say why.  Everything
 * it hands over, written again as the leader writes a batch (esb_add(),
 * esb_add_rank(), esb_add_journal()), must decode to as many events, rows
 * and journal entries, none refused.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_etcd_batch.h"
#include "store_row.h"
#include "utf8.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_KEY	"evbatch/J/00000000000000000001/00000000000000000001"

/* What a decode handed over, and the batch it is written again into. */
struct fuzz_batch {
	struct esb	 b;
	size_t		 events, ranks, journal, bad;
	char		*value[16];	/* the batch written again */
	size_t		 len[16], nvalues;
	int		 writing;	/* into b */
};

/* A string handed over: NULL, or UTF-8 without a NUL. */
static void
fuzz_str(const char *s)
{
	if (s != NULL && !utf8_valid(s, strlen(s)))
		abort();
}

/* Keeps a value the batch is written again as (an input inflates to
 * ESB_INFLATED_MAX at most: a few values). */
static int
fuzz_put(void *arg, const char *key, const char *value, size_t len)
{
	struct fuzz_batch	*fb = arg;
	char			*v;

	if (fb->nvalues == 16 || strncmp(key, "evbatch/J/", 10) != 0 ||
	    (v = malloc(len)) == NULL)
		abort();
	memcpy(v, value, len);
	fb->value[fb->nvalues] = v;
	fb->len[fb->nvalues++] = len;
	return (0);
}

static int
fuzz_event(void *arg, const struct store_event_row *r)
{
	struct fuzz_batch	*fb = arg;
	struct rank_event	 ev = { r->kind, r->window_id, r->step,
	    r->time_ns };

	if (strcmp(r->job, "J") != 0)
		abort();
	fuzz_str(r->node);
	fuzz_str(r->detail);
	fb->events++;
	if (fb->writing && esb_add(&fb->b, r->job, r->rank, &ev, r->node,
	    r->detail, r->rev, 1, fuzz_put, fb) == -1)
		abort();
	return (0);
}

static int
fuzz_rank(void *arg, const struct store_rank *r)
{
	struct fuzz_batch	*fb = arg;

	if (strcmp(r->job, "J") != 0)
		abort();
	fuzz_str(r->node);
	fuzz_str(r->output_dir);
	fuzz_str(r->error);
	fuzz_str(r->labels);
	fb->ranks++;
	if (fb->writing && esb_add_rank(&fb->b, r, 1, fuzz_put, fb) == -1)
		abort();
	return (0);
}

static int
fuzz_journal(void *arg, const struct store_journal *sj)
{
	struct fuzz_batch	*fb = arg;

	if (strcmp(sj->job, "J") != 0)
		abort();
	fuzz_str(sj->node);
	fuzz_str(sj->detail);
	fb->journal++;
	if (fb->writing && esb_add_journal(&fb->b, sj, 1, fuzz_put, fb) == -1)
		abort();
	return (0);
}

static int
fuzz_bad(void *arg, const char *key, const char *why)
{
	struct fuzz_batch	*fb = arg;

	if (strcmp(key, FUZZ_KEY) != 0 || why == NULL || *why == '\0')
		abort();
	fb->bad++;
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_batch	 fb, again;
	size_t			 i;

	memset(&fb, 0, sizeof(fb));
	fb.writing = 1;
	if (esb_decode(FUZZ_KEY, (const char *)data, size, fuzz_event,
	    fuzz_rank, fuzz_journal, fuzz_bad, &fb) == -1 ||
	    esb_flush(&fb.b, 1, fuzz_put, &fb) == -1)
		abort();
	esb_clear(&fb.b);
	esb_seen_clear(&fb.b);
	memset(&again, 0, sizeof(again));
	for (i = 0; i < fb.nvalues; i++) {
		if (esb_decode(FUZZ_KEY, fb.value[i], fb.len[i], fuzz_event,
		    fuzz_rank, fuzz_journal, fuzz_bad, &again) == -1)
			abort();
		free(fb.value[i]);
	}
	if (again.bad != 0 || again.events != fb.events ||
	    again.ranks != fb.ranks || again.journal != fb.journal)
		abort();
	return (0);
}
