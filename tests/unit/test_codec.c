/*
 * RankEvent: the library's codec (nanopb) and the daemons' (protobuf-c) agree on
 * every field, both ways, at ordinary values and at the edges.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <pb_decode.h>
#include <pb_encode.h>

#include "dynprof.pb-c.h"
#include "dynprof.pb.h"

struct sample {
	int		 kind;
	const char	*job;
	int32_t		 rank;
	int32_t		 pid;
	uint32_t	 slot;
	uint32_t	 window_id;
	int64_t		 start_step;
	int64_t		 stop_step;
	int64_t		 step;
	const char	*output_dir;
	int		 reason;
	const char	*error;
	uint64_t	 generation;
	int64_t		 time_unix_ns;
	uint32_t	 rank_seq;
};

static char long_dir[1024];
static char long_err[256];
static char long_job[65];

static struct sample samples[] = {
	{ 2, "36199_0", 7, 4242, 3, 17, 100, 110, 100,
	  "/data/out/rank7_start100_stop110", 0, "", 5,
	  1764000000123456789LL, 2 },
	{ 3, "j", 0, 1, 0, 1, 1, 1, 1, "/o", 3, "", 1, 1, 1 },
	{ 4, "train-job.v2", 2147483647, 2147483647, 255, 4294967295U,
	  INT64_MAX, INT64_MAX, -1, "", 0, "", UINT64_MAX, INT64_MIN,
	  4294967295U },
	{ 5, NULL, -1, -2, 1, 9, -5, -3, INT64_MIN, NULL, 2, NULL, 0, -1, 7 },
	{ 6, "x", 1, 2, 3, 0, 0, 0, 0, "", 0, "", 0, 0, 0 },
	{ 1, "", 0, 0, 0, 0, 0, 0, 0, "", 0, "", 0, 0, 0 },
};

static int
group_setup(void **state)
{
	(void)state;
	memset(long_dir, 'd', sizeof(long_dir) - 1);
	long_dir[0] = '/';
	memset(long_err, 'e', sizeof(long_err) - 1);
	memset(long_job, 'J', sizeof(long_job) - 1);
	samples[3].job = long_job;
	samples[3].output_dir = long_dir;
	samples[3].error = long_err;
	return (0);
}

static void
to_nanopb(const struct sample *s, dynprof_v1_RankEvent *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = (dynprof_v1_EventKind)s->kind;
	snprintf(ev->job, sizeof(ev->job), "%s", s->job);
	ev->rank = s->rank;
	ev->pid = s->pid;
	ev->slot = s->slot;
	ev->window_id = s->window_id;
	ev->start_step = s->start_step;
	ev->stop_step = s->stop_step;
	ev->step = s->step;
	snprintf(ev->output_dir, sizeof(ev->output_dir), "%s", s->output_dir);
	ev->reason = (dynprof_v1_StopReason)s->reason;
	snprintf(ev->error, sizeof(ev->error), "%s", s->error);
	ev->generation = s->generation;
	ev->time_unix_ns = s->time_unix_ns;
	ev->rank_seq = s->rank_seq;
}

static void
assert_same(const dynprof_v1_RankEvent *n, const Dynprof__V1__RankEvent *c)
{
	assert_int_equal(n->kind, c->kind);
	assert_string_equal(n->job, c->job);
	assert_int_equal(n->rank, c->rank);
	assert_int_equal(n->pid, c->pid);
	assert_int_equal(n->slot, c->slot);
	assert_int_equal(n->window_id, c->window_id);
	assert_true(n->start_step == c->start_step);
	assert_true(n->stop_step == c->stop_step);
	assert_true(n->step == c->step);
	assert_string_equal(n->output_dir, c->output_dir);
	assert_int_equal(n->reason, c->reason);
	assert_string_equal(n->error, c->error);
	assert_true(n->generation == c->generation);
	assert_true(n->time_unix_ns == c->time_unix_ns);
	assert_int_equal(n->rank_seq, c->rank_seq);
}

/* nanopb encodes, protobuf-c decodes. */
static void
test_nanopb_to_protobuf_c(void **state)
{
	dynprof_v1_RankEvent	 ev;
	Dynprof__V1__RankEvent	*c;
	uint8_t			 buf[dynprof_v1_RankEvent_size];
	pb_ostream_t		 os;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		to_nanopb(&samples[i], &ev);
		os = pb_ostream_from_buffer(buf, sizeof(buf));
		assert_true(pb_encode(&os, dynprof_v1_RankEvent_fields, &ev));
		c = dynprof__v1__rank_event__unpack(NULL, os.bytes_written, buf);
		assert_non_null(c);
		assert_same(&ev, c);
		dynprof__v1__rank_event__free_unpacked(c, NULL);
	}
}

/* protobuf-c encodes, nanopb decodes. */
static void
test_protobuf_c_to_nanopb(void **state)
{
	Dynprof__V1__RankEvent	 c = DYNPROF__V1__RANK_EVENT__INIT;
	dynprof_v1_RankEvent	 want, got;
	uint8_t			 buf[4096];
	pb_istream_t		 is;
	size_t			 i, n;

	(void)state;
	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		to_nanopb(&samples[i], &want);
		c.kind = (Dynprof__V1__EventKind)want.kind;
		c.job = want.job;
		c.rank = want.rank;
		c.pid = want.pid;
		c.slot = want.slot;
		c.window_id = want.window_id;
		c.start_step = want.start_step;
		c.stop_step = want.stop_step;
		c.step = want.step;
		c.output_dir = want.output_dir;
		c.reason = (Dynprof__V1__StopReason)want.reason;
		c.error = want.error;
		c.generation = want.generation;
		c.time_unix_ns = want.time_unix_ns;
		c.rank_seq = want.rank_seq;
		n = dynprof__v1__rank_event__get_packed_size(&c);
		assert_true(n <= sizeof(buf));
		assert_int_equal(dynprof__v1__rank_event__pack(&c, buf), n);
		memset(&got, 0x5a, sizeof(got));
		is = pb_istream_from_buffer(buf, n);
		assert_true(pb_decode(&is, dynprof_v1_RankEvent_fields, &got));
		assert_same(&got, &c);
	}
}

/* A string longer than the library's static size: nanopb refuses cleanly. */
static void
test_oversize_refused(void **state)
{
	Dynprof__V1__RankEvent	 c = DYNPROF__V1__RANK_EVENT__INIT;
	dynprof_v1_RankEvent	 got;
	static char		 big[2048];
	static uint8_t		 buf[4096];
	pb_istream_t		 is;
	size_t			 n;

	(void)state;
	memset(big, 'z', sizeof(big) - 1);
	c.output_dir = big;
	n = dynprof__v1__rank_event__pack(&c, buf);
	is = pb_istream_from_buffer(buf, n);
	assert_false(pb_decode(&is, dynprof_v1_RankEvent_fields, &got));
	/* And garbage is refused by protobuf-c, never a crash. */
	memset(buf, 0xff, 64);
	assert_null(dynprof__v1__rank_event__unpack(NULL, 64, buf));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nanopb_to_protobuf_c),
		cmocka_unit_test(test_protobuf_c_to_nanopb),
		cmocka_unit_test(test_oversize_refused),
	};

	return (cmocka_run_group_tests_name("codec", tests, group_setup, NULL));
}
