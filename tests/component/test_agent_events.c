/*
 * Rank events through the agent, against a fake coordinator
 * (support/linktest.c): the test process holds a real slot of a real segment
 * and reports as libdynprof does, the event into the slot's log, then the
 * wakeup datagram (docs/events.md).  The agent forwards the events in order,
 * replays them after a reconnect or a restart, falls back when a log
 * overflowed, adopts freed slots before live ones, and reclaims a dead rank's.
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

/* The output root of the ranks these tests play: their dirs are under it. */
#define T_ROOT	"/out"

/* Claims a slot for this process in job's segment (created if needed). */
static int
claim_slot(struct linktest *t, struct segment *seg, const char *job, int rank)
{
	assert_int_equal(segment_open(seg, t->ap.shm, job, SEG_CREATE, 0600),
	    SEG_OK);
	return (segment_slot_claim(seg, getpid(), rank, T_ROOT));
}

static void
make_event(Dynprof__V1__RankEvent *ev, const char *job, int rank, int slot,
    int kind, uint32_t rank_seq)
{
	dynprof__v1__rank_event__init(ev);
	ev->kind = kind;
	ev->job = (char *)job;
	ev->rank = rank;
	ev->pid = getpid();
	ev->slot = (uint32_t)slot;
	ev->window_id = 1;
	ev->start_step = 10;
	ev->stop_step = 12;
	ev->step = 10;
	ev->rank_seq = rank_seq;
}

/* Appends ev to the log of slot in seg, as libdynprof does before it sends. */
static void
log_event(struct segment *seg, int slot, const Dynprof__V1__RankEvent *ev)
{
	struct seg_log_entry	 e;

	memset(&e, 0, sizeof(e));
	e.kind = (uint32_t)ev->kind;
	e.window_id = ev->window_id;
	e.reason = (uint32_t)ev->reason;
	e.start_step = ev->start_step;
	e.stop_step = ev->stop_step;
	e.step = ev->step;
	e.generation = ev->generation;
	e.time_ns = ev->time_unix_ns;
	e.rank_seq = ev->rank_seq;
	e.pid = ev->pid;
	/* Its dir relative to the root, as report_log() keeps it. */
	if (ev->output_dir != NULL && *ev->output_dir != '\0') {
		assert_memory_equal(ev->output_dir, T_ROOT "/",
		    strlen(T_ROOT "/"));
		snprintf(e.text, sizeof(e.text), "%s",
		    ev->output_dir + strlen(T_ROOT "/"));
	}
	slotlog_append(&seg->slots[slot], &e);
}

/* A rank's report: the event into its slot's log, then the wakeup datagram. */
static int
send_logged(struct linktest *t, struct segment *seg, int slot,
    const Dynprof__V1__RankEvent *ev)
{
	log_event(seg, slot, ev);
	return (ap_send_event(&t->ap, ev));
}

/* The coordinator commits every event up to seq. */
static void
send_ack(struct linktest *t, uint64_t seq)
{
	Dynprof__V1__CoordinatorMessage	 c =
	    DYNPROF__V1__COORDINATOR_MESSAGE__INIT;
	Dynprof__V1__EventAck		 ack = DYNPROF__V1__EVENT_ACK__INIT;

	ack.seq = seq;
	c.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK;
	c.ack = &ack;
	assert_int_equal(fc_send(&t->fc, &c), 0);
}

static Dynprof__V1__AgentEvent *
expect_event(struct linktest *t, Dynprof__V1__AgentMessage **mp)
{
	*mp = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT, LT_WAIT);
	assert_non_null(*mp);
	return ((*mp)->event);
}

static void
test_reconnect_replays_in_order(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	Dynprof__V1__RankEvent	 ev;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	uint64_t		 boot;
	uint32_t		 k;
	int			 slot;

	m = lt_start_connected(t, "3", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	slot = claim_slot(t, &seg, "j2", 3);
	assert_true(slot >= 0);

	make_event(&ev, "j2", 3, slot, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED,
	    1);
	assert_int_equal(send_logged(t, &seg, slot, &ev), 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE,
	    LT_WAIT);
	assert_non_null(m);
	assert_string_equal(m->subscribe->job, "j2");
	assert_int_equal(m->subscribe->applied_generation, 0);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_event(t, &m);
	assert_int_equal(ae->seq, 1);
	assert_int_equal(ae->event->kind,
	    DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED);
	assert_int_equal(ae->event->pid, getpid());
	boot = ae->agent_boot_id;
	assert_true(boot != 0);
	dynprof__v1__agent_message__free_unpacked(m, NULL);

	assert_int_equal(fc_push(&t->fc, "j2", 5, 1, 10, 12), 0);
	lt_expect_applied(t, "j2", 5);
	send_ack(t, 1);

	/* The coordinator goes away; four events happen meanwhile. */
	fc_drop(&t->fc);
	assert_int_equal(ap_log_wait(&t->ap, "lost coordinator", 1, LT_WAIT),
	    0);
	for (k = 2; k <= 5; k++) {
		make_event(&ev, "j2", 3, slot,
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, k);
		assert_int_equal(send_logged(t, &seg, slot, &ev), 0);
	}
	assert_int_equal(ap_log_wait(&t->ap, "started window 1", 4, LT_WAIT),
	    0);

	/* It comes back: hello carries the applied generation, the queue
	 * (bounded at 3: the oldest of the four dropped) replays in order. */
	m = lt_reaccept(t, 0);
	assert_int_equal(m->hello->n_applied, 1);
	assert_string_equal(m->hello->applied[0]->job, "j2");
	assert_int_equal(m->hello->applied[0]->generation, 5);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(fc_welcome(&t->fc, 60000, 1, boot), 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE,
	    LT_WAIT);
	assert_non_null(m);
	assert_int_equal(m->subscribe->applied_generation, 5);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	for (k = 3; k <= 5; k++) {
		ae = expect_event(t, &m);
		assert_int_equal(ae->seq, k);
		assert_int_equal(ae->event->rank_seq, k);
		assert_int_equal(ae->agent_boot_id, boot);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	assert_int_equal(ap_log_wait(&t->ap, "oldest events dropped", 1,
	    LT_WAIT),
	    0);

	/* The slot's process is gone (we free it): detached, unsubscribe. */
	segment_slot_release(&seg, slot, getpid());
	segment_close(&seg);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_UNSUBSCRIBE,
	    LT_WAIT);
	assert_non_null(m);
	assert_string_equal(m->unsubscribe->job, "j2");
	dynprof__v1__agent_message__free_unpacked(m, NULL);
}

static void
test_bad_datagrams(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg, other;
	Dynprof__V1__RankEvent	 ev;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	static uint8_t		 big[20000];
	static const uint8_t	 junk[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
	    0x01 };
	int			 slot;

	m = lt_start_connected(t, "100", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	slot = claim_slot(t, &seg, "j3", 0);
	assert_int_equal(slot, 0);
	assert_int_equal(segment_open(&other, t->ap.shm, "j3b", SEG_CREATE,
	    0600), SEG_OK);

	assert_int_equal(ap_send_dgram(&t->ap, junk, sizeof(junk)), 0);
	assert_int_equal(ap_send_dgram(&t->ap, big, sizeof(big)), 0);
	/* A slot this process does not hold. */
	make_event(&ev, "j3", 0, 1, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 1);
	assert_int_equal(ap_send_event(&t->ap, &ev), 0);
	/* A job with a segment where this process holds nothing. */
	make_event(&ev, "j3b", 0, 0, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 1);
	assert_int_equal(ap_send_event(&t->ap, &ev), 0);
	/* Our slot, but another rank than the slot's. */
	make_event(&ev, "j3", 5, slot, DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    1);
	assert_int_equal(ap_send_event(&t->ap, &ev), 0);
	/* Another pid than the kernel says. */
	make_event(&ev, "j3", 0, slot, DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    1);
	ev.pid = 1;
	assert_int_equal(ap_send_event(&t->ap, &ev), 0);
	/* A job with no segment, an invalid job id, a slot out of range. */
	make_event(&ev, "nosuchjob", 0, 0,
	    DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    1);
	assert_int_equal(ap_send_event(&t->ap, &ev), 0);
	make_event(&ev, "../x", 0, 0, DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    1);
	assert_int_equal(ap_send_event(&t->ap, &ev), 0);
	make_event(&ev, "j3", 0, 100000, DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    1);
	assert_int_equal(ap_send_event(&t->ap, &ev), 0);

	/* A good event cut short, inside its last string. */
	{
		uint8_t	 buf[4096];
		size_t	 len;

		make_event(&ev, "j3", 0, slot,
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 1);
		ev.error = (char *)"a long enough error message to cut";
		len = dynprof__v1__rank_event__get_packed_size(&ev);
		dynprof__v1__rank_event__pack(&ev, buf);
		assert_int_equal(ap_send_dgram(&t->ap, buf, len - 5), 0);
	}

	/* Random bytes, random lengths (fixed seed): none gets through. */
	{
		uint8_t		 rnd[3000];
		unsigned	 seed = 7;
		int		 i, k, len;

		for (i = 0; i < 200; i++) {
			len = (int)(rand_r(&seed) % sizeof(rnd));
			for (k = 0; k < len; k++)
				rnd[k] = (uint8_t)rand_r(&seed);
			assert_int_equal(ap_send_dgram(&t->ap, rnd,
			    (size_t)len),
			    0);
		}
	}

	/* Then a good one: the first event the coordinator sees, seq 1. */
	make_event(&ev, "j3", 0, slot, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED,
	    7);
	assert_int_equal(send_logged(t, &seg, slot, &ev), 0);
	ae = expect_event(t, &m);
	assert_int_equal(ae->seq, 1);
	assert_int_equal(ae->event->rank_seq, 7);
	dynprof__v1__agent_message__free_unpacked(m, NULL);

	assert_true(ap_log_count(&t->ap, "undecodable datagram") >= 2);
	assert_int_equal(ap_log_count(&t->ap, "oversized datagram"), 1);
	assert_int_equal(ap_log_count(&t->ap, "does not hold slot"), 4);
	assert_int_equal(ap_log_count(&t->ap, "claims pid 1"), 1);
	assert_true(ap_log_count(&t->ap, "has no segment here") >= 1);
	assert_true(ap_log_count(&t->ap, "job: job id") >= 1);
	assert_int_equal(kill(t->ap.pid, 0), 0);
	segment_close(&other);
	segment_slot_release(&seg, slot, getpid());
	segment_close(&seg);
	assert_int_equal(ap_stop(&t->ap, SIGTERM, LT_WAIT), 0);
	/* At most 32 of them logged per 10 s: a bad sender cannot flood. */
	assert_true(ap_log_count(&t->ap, "ranks_") <= 32);
	/* Every one of the 210 bad datagrams counted, the good one forwarded. */
	{
		FILE		*f = fopen(t->ap.log, "r");
		char		 line[4096], *p;
		unsigned long	 bad = 0, foreign = 0, fwd = 0;

		assert_non_null(f);
		while (fgets(line, sizeof(line), f) != NULL)
			if ((p = strstr(line, "bad_datagrams=")) != NULL)
				assert_int_equal(sscanf(p, "bad_datagrams=%lu "
				    "foreign_datagrams=%lu events_forwarded=%lu",
				    &bad, &foreign, &fwd), 3);
		fclose(f);
		assert_int_equal(bad + foreign, 210);
		assert_int_equal(fwd, 1);
	}
}

/* Puts the slot in state DONE for window 7 [5, 9], as a rank would leave it:
 * its log holds attached, started and stopped. */
static void
fake_done(struct segment *seg, int slot)
{
	struct seg_slot	*s = &seg->slots[slot];
	Dynprof__V1__RankEvent ev;
	int		 k;

	for (k = DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED;
	    k <= DYNPROF__V1__EVENT_KIND__EVENT_STOPPED; k++) {
		make_event(&ev, seg->job, 2, slot, k, (uint32_t)k);
		ev.window_id = 7;
		ev.start_step = 5;
		ev.stop_step = 9;
		ev.step = k == DYNPROF__V1__EVENT_KIND__EVENT_STOPPED ? 9 : 5;
		ev.reason = k == DYNPROF__V1__EVENT_KIND__EVENT_STOPPED ? 1 : 0;
		ev.output_dir = (char *)"/out/rank2_start5_stop9";
		if (k == DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED) {
			ev.window_id = 0;
			ev.start_step = ev.stop_step = 0;
			ev.step = -1;
			ev.output_dir = (char *)"";
		}
		log_event(seg, slot, &ev);
	}

	segment_slot_update_begin(s);
	s->state = SEG_RANK_DONE;
	s->window_id = 7;
	s->start_step = 5;
	s->stop_step = 9;
	s->event_step = 9;
	s->reason = 1;
	s->last_event = 3;
	s->rank_seq = 3;
	snprintf(s->output_dir, sizeof(s->output_dir),
	    "/out/rank2_start5_stop9");
	segment_slot_update_end(s);
	atomic_store(&s->step, 12);
}

static void
expect_replayed_done(struct linktest *t)
{
	static const int kinds[] = { DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED,
	    DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    DYNPROF__V1__EVENT_KIND__EVENT_STOPPED };
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	size_t			 i;

	for (i = 0; i < 3; i++) {
		ae = expect_event(t, &m);
		assert_int_equal(ae->seq, i + 1);
		assert_int_equal(ae->event->kind, kinds[i]);
		assert_int_equal(ae->event->rank, 2);
		assert_int_equal(ae->event->pid, getpid());
		if (i > 0) {
			assert_int_equal(ae->event->window_id, 7);
			assert_int_equal(ae->event->start_step, 5);
			assert_int_equal(ae->event->stop_step, 9);
			assert_string_equal(ae->event->output_dir,
			    "/out/rank2_start5_stop9");
		}
		if (i == 1)
			assert_int_equal(ae->event->step, 5);
		if (i == 2) {
			assert_int_equal(ae->event->step, 9);
			assert_int_equal(ae->event->reason, 1);
		}
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_PROGRESS,
	    LT_WAIT);
	assert_non_null(m);
	assert_string_equal(m->progress->job, "j4");
	assert_int_equal(m->progress->ranks_alive, 1);
	assert_int_equal(m->progress->min_step, 12);
	assert_int_equal(m->progress->max_step, 12);
	assert_int_equal(m->progress->n_ranks, 1);
	assert_int_equal(m->progress->ranks[0]->state,
	    DYNPROF__V1__RANK_STATE__RANK_DONE);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
}

static void
test_restart_readopts(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	Dynprof__V1__AgentMessage *m;
	int			 slot;

	slot = claim_slot(t, &seg, "j4", 2);
	assert_true(slot >= 0);
	fake_done(&seg, slot);

	m = lt_start_connected(t, "100", 1);
	assert_int_equal(m->hello->n_applied, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	expect_replayed_done(t);
	assert_int_equal(fc_push(&t->fc, "j4", 2, 1, 100, 200), 0);
	lt_expect_applied(t, "j4", 2);

	/* SIGKILL, restart: the final state is reported again. */
	assert_true(WIFSIGNALED(ap_stop(&t->ap, SIGKILL, LT_WAIT)));
	fc_drop(&t->fc);
	m = lt_start_connected(t, "100", 1);
	assert_int_equal(m->hello->n_applied, 1);
	assert_string_equal(m->hello->applied[0]->job, "j4");
	assert_int_equal(m->hello->applied[0]->generation, 2);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	expect_replayed_done(t);
	assert_int_equal(ap_log_count(&t->ap, "adopted job j4"), 2);
	segment_slot_release(&seg, slot, getpid());
	segment_close(&seg);
}

/* Waits until the cursor of slot's log says seq of its incarnation is acked. */
static void
wait_acked(struct segment *seg, int slot, uint32_t seq)
{
	int64_t		 deadline = ap_now_ms() + LT_WAIT;
	uint32_t	 inc;

	(void)slotlog_head(&seg->slots[slot], &inc);
	while (slotlog_acked(&seg->slots[slot], inc) != seq &&
	    ap_now_ms() < deadline)
		usleep(2000);
	assert_int_equal(slotlog_acked(&seg->slots[slot], inc), seq);
}

/*
 * The coordinator's acks reach the slot's cursor: an agent restarted after an
 * ack replays only the entries after it, then acks those too, and the slot's
 * log is settled.
 */
static void
test_restart_replays_unacked(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	uint32_t		 k;
	int			 slot;

	slot = claim_slot(t, &seg, "j6", 2);
	assert_true(slot >= 0);
	fake_done(&seg, slot);
	m = lt_start_connected(t, "100", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	for (k = 1; k <= 3; k++) {
		ae = expect_event(t, &m);
		assert_int_equal(ae->seq, k);
		assert_int_equal(ae->event->kind, k);	/* attached, started,
		    stopped */
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	send_ack(t, 2);
	wait_acked(&seg, slot, 2);

	assert_true(WIFSIGNALED(ap_stop(&t->ap, SIGKILL, LT_WAIT)));
	fc_drop(&t->fc);
	m = lt_start_connected(t, "100", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_event(t, &m);
	assert_int_equal(ae->seq, 1);
	assert_int_equal(ae->event->kind,
	    DYNPROF__V1__EVENT_KIND__EVENT_STOPPED);
	assert_int_equal(ae->event->window_id, 7);
	assert_int_equal(ae->event->step, 9);
	assert_int_equal(ae->event->pid, getpid());
	assert_string_equal(ae->event->output_dir, "/out/rank2_start5_stop9");
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(ap_log_wait(&t->ap,
	    "adopted job j6: replayed 1 events",
	    1, LT_WAIT), 0);
	send_ack(t, 1);
	wait_acked(&seg, slot, 3);
	assert_true(slotlog_settled(&seg.slots[slot]));
	segment_slot_release(&seg, slot, getpid());
	segment_close(&seg);
}

/*
 * A log that overflowed while no agent ran (more pending events than entries):
 * the agent says how many it lost, re-reports the slot's last state, then
 * forwards the entries still there, in order.
 */
static void
test_overflowed_log_falls_back(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	Dynprof__V1__RankEvent	 ev;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	uint32_t		 k, nskip = SEG_LOG_ENTRIES + 2;
	int			 slot;

	slot = claim_slot(t, &seg, "j7", 2);
	assert_true(slot >= 0);
	for (k = 1; k <= nskip; k++) {
		make_event(&ev, "j7", 2, slot,
		    DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED, k);
		ev.window_id = 100 + k;
		log_event(&seg, slot, &ev);
	}
	fake_done(&seg, slot);		/* 3 more: 5 overwritten */
	assert_int_equal(atomic_load(&seg.slots[slot].log_lost), 5);

	m = lt_start_connected(t, "1000", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	/* The last state first: attached, started and stopped of window 7. */
	for (k = 1; k <= 3; k++) {
		ae = expect_event(t, &m);
		assert_int_equal(ae->seq, k);
		assert_int_equal(ae->event->kind, k);
		if (k > 1)
			assert_int_equal(ae->event->window_id, 7);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	/* Then the 40 entries left: skipped 6..42, attached, started, stopped. */
	for (k = 6; k <= nskip + 3; k++) {
		ae = expect_event(t, &m);
		assert_int_equal(ae->seq, k - 2);
		if (k <= nskip) {
			assert_int_equal(ae->event->kind,
			    DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED);
			assert_int_equal(ae->event->window_id, 100 + k);
		} else
			assert_int_equal(ae->event->kind, k - nskip);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	assert_int_equal(ap_log_count(&t->ap, "slot 0: 5 events overwritten "
	    "before they were read (the rank counts 5)"), 1);
	segment_slot_release(&seg, slot, getpid());
	segment_close(&seg);
}

/*
 * Rank 2 ended (its slot freed, its events never committed) and came back as
 * a new process in a lower slot: a new agent replays the freed slot first,
 * so the coordinator ends with the new process attached, not the rank gone.
 */
static void
test_adopt_freed_before_live(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	Dynprof__V1__RankEvent	 ev;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	static const int	 kinds[] = { DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED,
	    DYNPROF__V1__EVENT_KIND__EVENT_DETACHED,
	    DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED };
	int			 live, gone, k;

	live = claim_slot(t, &seg, "j8", 2);
	gone = segment_slot_claim(&seg, getpid(), 2, T_ROOT);
	assert_int_equal(live, 0);
	assert_int_equal(gone, 1);
	make_event(&ev, "j8", 2, gone, kinds[0], 1);
	ev.pid = 4242;
	log_event(&seg, gone, &ev);
	make_event(&ev, "j8", 2, gone, kinds[1], 2);
	ev.pid = 4242;
	log_event(&seg, gone, &ev);
	segment_slot_release(&seg, gone, getpid());
	make_event(&ev, "j8", 2, live, kinds[2], 1);
	log_event(&seg, live, &ev);

	m = lt_start_connected(t, "100", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	for (k = 0; k < 3; k++) {
		ae = expect_event(t, &m);
		assert_int_equal(ae->event->kind, kinds[k]);
		assert_int_equal(ae->event->pid, k < 2 ? 4242 : getpid());
		assert_int_equal(ae->event->slot, k < 2 ? gone : live);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	segment_slot_release(&seg, live, getpid());
	segment_close(&seg);
}

/* A rank process that dies: reported detached, its slot freed, and once the
 * grace period is over (and nobody maps it) its segment removed. */
static void
test_dead_rank_reclaimed(void **state)
{
	struct linktest		*t = *state;
	struct segment		 seg;
	Dynprof__V1__RankEvent	 ev;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	struct stat		 st;
	char			 path[512];
	int			 slot, status, i;
	pid_t			 pid;

	m = lt_start_connected(t, "100", 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		alarm(10);
		slot = claim_slot(t, &seg, "j5", 4);
		make_event(&ev, "j5", 4, slot,
		    DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, 1);
		send_logged(t, &seg, slot, &ev);
		pause();
		_exit(0);
	}
	ae = expect_event(t, &m);
	assert_int_equal(ae->event->kind,
	    DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED);
	assert_int_equal(ae->event->pid, pid);
	slot = (int)ae->event->slot;
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);

	ae = expect_event(t, &m);
	assert_int_equal(ae->event->kind,
	    DYNPROF__V1__EVENT_KIND__EVENT_DETACHED);
	assert_int_equal(ae->event->pid, pid);
	assert_int_equal(ae->event->rank, 4);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_UNSUBSCRIBE,
	    LT_WAIT);
	assert_non_null(m);
	dynprof__v1__agent_message__free_unpacked(m, NULL);

	/* While this process maps it, it stays (grace is 1 s). */
	assert_int_equal(segment_open(&seg, t->ap.shm, "j5", 0, 0600), SEG_OK);
	assert_int_equal(atomic_load(&seg.slots[slot].pid), 0);
	snprintf(path, sizeof(path), "%s/dynprof.j5", t->ap.shm);
	assert_int_equal(ap_log_wait(&t->ap, "segment of job j5 still mapped",
	    1,
	    LT_WAIT), 0);
	assert_int_equal(stat(path, &st), 0);
	segment_close(&seg);
	for (i = 0; i < 500 && stat(path, &st) == 0; i++)
		usleep(10000);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(ap_log_count(&t->ap, "removing the segment of job j5"),
	    1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_reconnect_replays_in_order,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_bad_datagrams,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_restart_replays_unacked,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_overflowed_log_falls_back,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_adopt_freed_before_live,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_restart_readopts,
		    lt_setup, lt_teardown),
		cmocka_unit_test_setup_teardown(test_dead_rank_reclaimed,
		    lt_setup, lt_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests_name("agent_events", tests, NULL,
	    NULL));
}
