/*
 * The frame the agent sends for a queued event (agent/upstream.c,
 * upstream_frame_event()): the event's packed bytes wrapped in AgentEvent and
 * AgentMessage by hand are, byte for byte, what protobuf-c packs from the
 * decoded messages, for events of every size and for sequence numbers and boot
 * ids from zero (left out) to the largest varints.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "agent.h"
#include "frame.h"

/* A deterministic generator, so that a failure repeats. */
static uint64_t	 rng = 0x9e3779b97f4a7c15ULL;

/* The next pseudo-random number (xorshift64). */
static uint64_t
next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (rng);
}

/* A number of a random width: zero, small, or up to all 64 bits. */
static uint64_t
any_width(void)
{
	switch (next() % 4) {
	case 0:
		return (0);
	case 1:
		return (next() % 200);
	case 2:
		return (UINT64_MAX);
	}
	return (next() >> (next() % 64));
}

/*
 * Asserts that upstream_frame_event() frames ev (packed) as seq of boot as
 * frame_put() frames the AgentMessage built around the decoded ev.
 */
static void
assert_same_frame(const Dynprof__V1__RankEvent *ev, uint64_t seq, uint64_t boot)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__AgentEvent		 ae = DYNPROF__V1__AGENT_EVENT__INIT;
	struct evbuffer			*got, *want;
	uint8_t				*buf;
	size_t				 len;

	len = dynprof__v1__rank_event__get_packed_size(ev);
	assert_non_null(buf = malloc(len > 0 ? len : 1));
	dynprof__v1__rank_event__pack(ev, buf);
	assert_non_null(got = evbuffer_new());
	assert_non_null(want = evbuffer_new());
	assert_int_equal(upstream_frame_event(got, seq, boot, buf, len), 0);
	ae.seq = seq;
	ae.event = (Dynprof__V1__RankEvent *)ev;
	ae.agent_boot_id = boot;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT;
	m.event = &ae;
	assert_int_equal(frame_put(want, &m.base), 0);
	assert_int_equal(evbuffer_get_length(got), evbuffer_get_length(want));
	assert_memory_equal(evbuffer_pullup(got, -1), evbuffer_pullup(want, -1),
	    evbuffer_get_length(want));
	evbuffer_free(got);
	evbuffer_free(want);
	free(buf);
}

/* An empty event, and zeros wherever they can be. */
static void
test_empty(void **state)
{
	Dynprof__V1__RankEvent	 ev = DYNPROF__V1__RANK_EVENT__INIT;

	(void)state;
	assert_same_frame(&ev, 0, 0);
	assert_same_frame(&ev, 1, 0);
	assert_same_frame(&ev, 0, 1);
	assert_same_frame(&ev, UINT64_MAX, UINT64_MAX);
}

/* Events as a rank logs them, of every length past the varint steps. */
static void
test_random(void **state)
{
	Dynprof__V1__RankEvent	 ev;
	char			 dir[SEG_PATH_MAX], error[SEG_ERROR_MAX];
	size_t			 n;
	int			 i;

	(void)state;
	for (i = 0; i < 5000; i++) {
		dynprof__v1__rank_event__init(&ev);
		ev.kind = (Dynprof__V1__EventKind)(next() % 7);
		ev.job = (char *)(next() % 2 ? "job-42" : "");
		ev.rank = (int32_t)(next() % 100000);
		ev.pid = (int32_t)(next() % 4194304);
		ev.slot = (uint32_t)(next() % SEG_MAX_SLOTS);
		ev.window_id = (uint32_t)any_width();
		ev.start_step = (int64_t)any_width();
		ev.stop_step = (int64_t)any_width();
		ev.step = (int64_t)any_width();
		n = next() % sizeof(dir);
		memset(dir, 'd', n);
		dir[n] = '\0';
		ev.output_dir = dir;
		n = next() % sizeof(error);
		memset(error, 'e', n);
		error[n] = '\0';
		ev.error = error;
		ev.reason = (Dynprof__V1__StopReason)(next() % 4);
		ev.generation = any_width();
		ev.time_unix_ns = (int64_t)any_width();
		ev.rank_seq = any_width();
		assert_same_frame(&ev, any_width(), any_width());
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_random),
	};

	return (cmocka_run_group_tests_name("agent_frame", tests, NULL, NULL));
}
