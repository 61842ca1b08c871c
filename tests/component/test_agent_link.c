/*
 * The agent's link to a fake coordinator (support/linktest.c): the real
 * dynprof-agent binary, a real TCP stream on 127.0.0.1, real segments in a
 * private directory.  Pushes reaching the segment, bad input from the
 * coordinator, heartbeats, random frames, the reconnect backoff.  Rank events
 * through the agent are in test_agent_events.c.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "linktest.h"
#include "segment.h"

/* Returns the generation in job's segment, UINT64_MAX if there is none. */
static uint64_t
segment_generation(struct linktest *t, const char *job)
{
	struct segment	 seg;
	uint64_t	 g;

	if (segment_open(&seg, t->ap.shm, job, 0, 0600) != SEG_OK)
		return (UINT64_MAX);
	g = atomic_load(&seg.hdr->generation);
	segment_close(&seg);
	return (g);
}

static void
test_push_reaches_segment(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	struct seg_config	*cfg = malloc(sizeof(*cfg));
	Dynprof__V1__AgentMessage *m;

	m = lt_start_connected(t, "100", 1);
	assert_int_equal(m->hello->n_applied, 0);
	dynprof__v1__agent_message__free_unpacked(m, NULL);

	assert_int_equal(fc_push(&t->fc, "j1", 3, 1, 10, 20), 0);
	lt_expect_applied(t, "j1", 3);
	assert_int_equal(segment_open(&seg, t->ap.shm, "j1", 0, 0600), SEG_OK);
	assert_int_equal(atomic_load(&seg.hdr->generation), 3);
	assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	assert_int_equal(cfg->nwindows, 1);
	assert_int_equal(cfg->windows[0].id, 1);
	assert_int_equal(cfg->windows[0].start_step, 10);
	assert_int_equal(cfg->windows[0].stop_step, 20);
	assert_int_equal(atomic_load(&seg.hdr->agent_pid), t->ap.pid);

	/* An older generation changes nothing and is answered with ours. */
	assert_int_equal(fc_push(&t->fc, "j1", 2, 9, 1, 2), 0);
	lt_expect_applied(t, "j1", 3);
	assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	assert_int_equal(cfg->windows[0].id, 1);

	/* A newer one replaces it. */
	assert_int_equal(fc_push(&t->fc, "j1", 4, 0, 0, 0), 0);
	lt_expect_applied(t, "j1", 4);
	assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	assert_int_equal(cfg->nwindows, 0);
	assert_int_equal(cfg->generation, 4);

	/* Generation 0, no window (a coordinator with nothing scheduled, as
	 * after losing its state): no error, the segment keeps what it has
	 * and is answered with it; a job not served gets no segment. */
	assert_int_equal(fc_push(&t->fc, "j1", 0, 0, 0, 0), 0);
	lt_expect_applied(t, "j1", 4);
	assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	assert_int_equal(cfg->generation, 4);
	assert_int_equal(fc_push(&t->fc, "j0", 0, 0, 0, 0), 0);
	assert_int_equal(fc_push(&t->fc, "j1", 0, 0, 0, 0), 0);
	lt_expect_applied(t, "j1", 4);
	assert_true(segment_generation(t, "j0") == UINT64_MAX);
	segment_close(&seg);
	free(cfg);

	/* SIGTERM: clean exit, the segment stays for the ranks. */
	m = NULL;
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
	assert_int_equal(segment_generation(t, "j1"), 4);
	assert_int_equal(ap_log_count(&t->ap, "bad_configs=0"), 1);
}

static void
test_bad_coordinator_input(void **state)
{
	static const uint8_t garbage[] = { 0, 0, 0, 0, 5, 0xff, 0xff, 0xff,
	    0xff, 0xff };
	static const uint8_t badflag[] = { 1, 0, 0, 0, 1, 0x08 };
	static const uint8_t huge[] = { 0, 0, 0x50, 0, 0 };	/* 5 MiB */
	static const uint8_t unknown[] = { 0, 0, 0, 0, 2, 0x78, 0x01 };
	struct linktest	*t = *state;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__CoordinatorMessage cm =
	    DYNPROF__V1__COORDINATOR_MESSAGE__INIT;
	Dynprof__V1__Heartbeat hb = DYNPROF__V1__HEARTBEAT__INIT;
	Dynprof__V1__Error err = DYNPROF__V1__ERROR__INIT;
	struct stat	 st;
	char		 path[512];

	/* A first message that is not Welcome: the agent hangs up, retries. */
	m = lt_start_connected(t, "100", 0);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	cm.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT;
	cm.heartbeat = &hb;
	assert_int_equal(fc_send(&t->fc, &cm), 0);
	assert_true(fc_closed(&t->fc, LT_WAIT));
	assert_int_equal(ap_log_wait(&t->ap, "is not welcome", 1, LT_WAIT), 0);

	/* Garbage bytes in a frame. */
	m = lt_reaccept(t, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(fc_send_raw(&t->fc, garbage, sizeof(garbage)), 0);
	assert_true(fc_closed(&t->fc, LT_WAIT));
	assert_int_equal(ap_log_wait(&t->ap, "undecodable message", 1, LT_WAIT),
	    0);

	/* Not a frame at all. */
	m = lt_reaccept(t, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(fc_send_raw(&t->fc, badflag, sizeof(badflag)), 0);
	assert_true(fc_closed(&t->fc, LT_WAIT));
	assert_int_equal(ap_log_wait(&t->ap, "frame flag", 1, LT_WAIT), 0);

	/* A frame over the limit: closed on the header alone. */
	m = lt_reaccept(t, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(fc_send_raw(&t->fc, huge, sizeof(huge)), 0);
	assert_true(fc_closed(&t->fc, LT_WAIT));
	assert_int_equal(ap_log_wait(&t->ap, "over the 4 MiB limit", 1,
	    LT_WAIT),
	    0);

	/* An Error: the agent logs the reason and comes back later. */
	m = lt_reaccept(t, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	err.code = DYNPROF__V1__ERROR_CODE__ERROR_SHUTTING_DOWN;
	err.reason = (char *)"going down for a test";
	cm.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR;
	cm.error = &err;
	assert_int_equal(fc_send(&t->fc, &cm), 0);
	assert_true(fc_closed(&t->fc, LT_WAIT));
	assert_int_equal(ap_log_wait(&t->ap, "going down for a test", 1,
	    LT_WAIT),
	    0);

	/* An unknown message type is ignored; the stream stays. */
	m = lt_reaccept(t, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(fc_send_raw(&t->fc, unknown, sizeof(unknown)), 0);
	assert_int_equal(ap_log_wait(&t->ap, "unknown message type", 1,
	    LT_WAIT),
	    0);

	/* A config for an invalid job id: refused, no file made. */
	assert_int_equal(fc_push(&t->fc, "../etc", 5, 1, 1, 2), 0);
	assert_int_equal(fc_push(&t->fc, ".hidden", 5, 1, 1, 2), 0);
	assert_int_equal(ap_log_wait(&t->ap, "refused", 2, LT_WAIT), 0);
	/* The same stream still works. */
	assert_int_equal(fc_push(&t->fc, "ok", 1, 1, 5, 6), 0);
	lt_expect_applied(t, "ok", 1);
	snprintf(path, sizeof(path), "%s/dynprof.etc", t->ap.shm);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(segment_generation(t, "ok"), 1);
	assert_int_equal(kill(t->ap.pid, 0), 0);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
	assert_int_equal(ap_log_count(&t->ap, "bad_configs=2"), 1);
}

/* Sends a config of job at gen holding the n windows ws. */
static void
push_windows(struct linktest *t, const char *job, uint64_t gen,
    Dynprof__V1__Window **ws, size_t n)
{
	Dynprof__V1__CoordinatorMessage	 c =
	    DYNPROF__V1__COORDINATOR_MESSAGE__INIT;
	Dynprof__V1__JobConfig		 jc = DYNPROF__V1__JOB_CONFIG__INIT;

	jc.job = (char *)job;
	jc.generation = gen;
	jc.n_windows = n;
	jc.windows = ws;
	c.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG;
	c.config = &jc;
	assert_int_equal(fc_send(&t->fc, &c), 0);
}

/*
 * A pushed config with a bad window among good ones: the good ones reach the
 * segment, the bad one is dropped with a log line naming it and why, and the
 * config is answered Applied (a start of -9.2e18 used to make the agent refuse
 * the whole config, and every later one of the job).
 */
static void
test_push_drops_bad_window(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	struct seg_config	*cfg = malloc(sizeof(*cfg));
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__Window	 w[3], *ws[3];
	int			 i;

	m = lt_start_connected(t, "100", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	for (i = 0; i < 3; i++) {
		dynprof__v1__window__init(&w[i]);
		w[i].id = (uint32_t)i + 1;
		w[i].start_step = 100 * (i + 1);
		w[i].stop_step = 100 * (i + 1) + 9;
		w[i].state = DYNPROF__V1__WINDOW_STATE__WINDOW_SCHEDULED;
		ws[i] = &w[i];
	}
	w[1].start_step = -9223372036854775000LL;	/* an overflowed start */
	w[1].stop_step = -9223372036854774990LL;
	push_windows(t, "jw", 5, ws, 3);
	lt_expect_applied(t, "jw", 5);
	assert_int_equal(ap_log_wait(&t->ap, "window 2 dropped: window steps "
	    "out of order or negative", 1, LT_WAIT), 0);
	assert_int_equal(segment_open(&seg, t->ap.shm, "jw", 0, 0600), SEG_OK);
	assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	assert_int_equal(cfg->generation, 5);
	assert_int_equal(cfg->nwindows, 2);
	assert_int_equal(cfg->windows[0].id, 1);
	assert_int_equal(cfg->windows[0].start_step, 100);
	assert_int_equal(cfg->windows[1].id, 3);
	assert_int_equal(cfg->windows[1].start_step, 300);

	/* Two scheduled windows that overlap: the later one is dropped. */
	w[1].start_step = 305;
	w[1].stop_step = 400;
	push_windows(t, "jw", 6, ws, 3);
	lt_expect_applied(t, "jw", 6);
	assert_int_equal(ap_log_wait(&t->ap, "window 2 dropped: scheduled "
	    "windows overlap", 1, LT_WAIT), 0);
	assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	assert_int_equal(cfg->generation, 6);
	assert_int_equal(cfg->nwindows, 2);
	assert_int_equal(cfg->windows[1].id, 3);

	/* The next good config of the job is taken as ever. */
	w[1].start_step = 200;
	w[1].stop_step = 209;
	push_windows(t, "jw", 7, ws, 3);
	lt_expect_applied(t, "jw", 7);
	assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	assert_int_equal(cfg->nwindows, 3);
	assert_int_equal(cfg->windows[1].id, 2);
	segment_close(&seg);
	free(cfg);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
	assert_int_equal(ap_log_count(&t->ap, "bad_configs=0"), 1);
}

/* Heartbeats both ways; a coordinator silent for 3 intervals is gone. */
static void
test_heartbeat_timeout(void **state)
{
	struct linktest	*t = *state;
	Dynprof__V1__AgentMessage *m;
	int64_t		 t0;

	m = lt_start_connected(t, "100", 0);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(fc_welcome(&t->fc, 200, 0, 0), 0);
	t0 = ap_now_ms();
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT,
	    LT_WAIT);
	assert_non_null(m);
	assert_true(m->heartbeat->time_unix_ns > 0);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	/* Silent from here on: hung up after 600 ms, not before. */
	assert_true(fc_closed(&t->fc, LT_WAIT));
	assert_true(ap_now_ms() - t0 >= 550);
	assert_int_equal(ap_log_wait(&t->ap, "silent for 3 heartbeats", 1,
	    LT_WAIT), 0);
	m = lt_reaccept(t, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
}

/* Random frames (fixed seed): each is ignored or ends the stream, never the
 * agent. */
static void
test_random_frames(void **state)
{
	struct linktest	*t = *state;
	Dynprof__V1__AgentMessage *m;
	uint8_t		 frame[5 + 256];
	unsigned	 seed = 11;
	int		 i, k, len, closed = 0;

	m = lt_start_connected(t, "100", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	for (i = 0; i < 40; i++) {
		len = (int)(rand_r(&seed) % 256);
		frame[0] = 0;
		frame[1] = frame[2] = frame[3] = 0;
		frame[4] = (uint8_t)len;
		for (k = 0; k < len; k++)
			frame[5 + k] = (uint8_t)rand_r(&seed);
		assert_int_equal(fc_send_raw(&t->fc, frame, 5 + (size_t)len),
		    0);
		/* A push right after: applied if the stream survived. */
		assert_int_equal(fc_push(&t->fc, "rf", (uint64_t)i + 1, 1, 1,
		    2),
		    0);
		m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED,
		    2000);
		if (m != NULL) {
			dynprof__v1__agent_message__free_unpacked(m, NULL);
			continue;
		}
		closed++;
		m = lt_reaccept(t, 1);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	assert_true(closed > 0);
	assert_int_equal(kill(t->ap.pid, 0), 0);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
}

/* Nobody listening: attempts back off exponentially (with jitter). */
static void
test_reconnect_backoff(void **state)
{
	struct linktest	*t = *state;
	const char	*extra[] = { "--coordinator", t->coord, NULL };
	int64_t		 at[5];
	int		 n;

	fc_close(&t->fc);		/* the port now refuses */
	assert_int_equal(ap_start(&t->ap, extra), 0);
	/*
	 * 100, 200, 400, 800 ms between attempts (each 50-100%): the gaps in
	 * the log are at least half of those, however loaded the machine
	 * (a timer never fires early), where retrying every 100 ms would
	 * not.  Five attempts come within a deadline far past 1.5 s.
	 */
	assert_int_equal(ap_log_wait(&t->ap, "connection to coordinator", 5,
	    60000), 0);
	assert_int_equal(ap_log_times(&t->ap, "connection to coordinator", at,
	    5), 5);
	for (n = 0; n < 4; n++) {
		print_message("attempt %d: %lld ms after the last\n", n + 2,
		    (long long)(at[n + 1] - at[n]));
		/* The log's times are to the ms: 2 ms of rounding. */
		assert_true(at[n + 1] - at[n] >= (50 << n) - 2);
	}
	assert_int_equal(kill(t->ap.pid, 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_push_reaches_segment,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_push_drops_bad_window,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_bad_coordinator_input,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_heartbeat_timeout,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_reconnect_backoff,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_random_frames,
		    lt_setup, lt_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests_name("agent_link", tests, NULL, NULL));
}
