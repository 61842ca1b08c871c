/* The fixture of the library's window tests: a segment and one rank on it. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "libfixture.h"

/* A cmocka setup: a private directory holding the job's segment. */
int
lf_setup(void **state)
{
	struct lib_fixture	*f;

	f = calloc(1, sizeof(*f));
	if (f == NULL || (f->dir = tl_tmpdir()) == NULL)
		return (-1);
	/* An agent serving it: its ranks' closes keep the file. */
	if (segment_open(&f->agent, f->dir, "job", SEG_CREATE | SEG_USE,
	    0600) != SEG_OK)
		return (-1);
	atomic_store(&f->agent.hdr->served, 1);
	*state = f;
	return (0);
}

/* A cmocka teardown: closes the rank and the segment, removes the directory. */
int
lf_teardown(void **state)
{
	struct lib_fixture	*f = *state;

	dynprof_close(f->h);
	segment_close(&f->agent);
	tl_rmtree(f->dir);
	free(f);
	return (0);
}

/* Writes the fixture's config into the segment, as the agent does. */
void
lf_push(struct lib_fixture *f)
{
	tl_push(&f->agent, &f->cfg);
}

/* Opens the library on the segment as the given rank. */
void
lf_open_rank(struct lib_fixture *f, int rank)
{
	struct dynprof_params	 p;

	tl_params(&p, f->dir, "job", rank, &f->rec);
	assert_int_equal(dynprof_open(&p, &f->h), DYNPROF_OK);
}

/* The common start of a test: window 1 over [start, stop], rank 0 opened. */
void
lf_one_window(struct lib_fixture *f, int64_t start, int64_t stop)
{
	tl_window(&f->cfg, 0, 1, start, stop, "");
	lf_push(f);
	lf_open_rank(f, 0);
}

/* lf_one_window(), then steps 1..to; returns how many calls were recorded. */
int
lf_run_window(struct lib_fixture *f, int64_t start, int64_t stop, int64_t to)
{
	lf_one_window(f, start, stop);
	lf_steps(f, 1, to);
	return (f->rec.ncalls);
}

/* Runs step_begin + step_end for steps from..to. */
void
lf_steps(struct lib_fixture *f, int64_t from, int64_t to)
{
	int64_t	 s;

	for (s = from; s <= to; s++) {
		assert_int_equal(dynprof_step_begin(f->h, s), DYNPROF_OK);
		assert_int_equal(dynprof_step_end(f->h, s), DYNPROF_OK);
	}
}

/* The rank's slot as the agent reads it. */
struct seg_slot
lf_slot_of(struct lib_fixture *f)
{
	struct seg_slot	 s;

	assert_int_equal(segment_slot_read(&f->agent, f->h->slot_index, &s),
	    SEG_OK);
	return (s);
}

/* Checks a recorded call: what ('s' start, 'p' stop), and its window. */
void
lf_assert_call(const struct tl_call *c, char what, uint32_t id, int64_t start,
    int64_t stop)
{
	assert_int_equal(c->what, what);
	assert_int_equal(c->window.id, id);
	assert_int_equal(c->window.start_step, start);
	assert_int_equal(c->window.stop_step, stop);
}

/* Checks that calls i and i + 1 are window id's start and stop. */
void
lf_assert_ran(struct lib_fixture *f, int i, uint32_t id, int64_t start,
    int64_t stop)
{
	assert_true(f->rec.ncalls > i + 1);
	lf_assert_call(&f->rec.calls[i], 's', id, start, stop);
	lf_assert_call(&f->rec.calls[i + 1], 'p', id, start, stop);
}

/* Checks that the rank's slot says it skipped window id. */
void
lf_assert_skipped(struct lib_fixture *f, uint32_t id)
{
	struct seg_slot	 s = lf_slot_of(f);

	assert_int_equal(s.last_event, EVENT_SKIPPED);
	assert_int_equal(s.window_id, id);
}
