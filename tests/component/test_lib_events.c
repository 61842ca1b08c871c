/*
 * Rank events on the wire: a real unix datagram socket stands in for the agent,
 * and what the library sends (nanopb) is decoded with protobuf-c, the daemons'
 * codec.  Without an agent, or with one that does not read, events are dropped
 * and counted, and the steps never block.
 */

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dynprof.pb-c.h"
#include "libdynprof.h"
#include "test_lib_helpers.h"

struct fixture {
	char			*dir;
	char			 sock[4096];
	int			 fd;		/* the "agent" end */
	struct segment		 agent;
	struct seg_config	 cfg;
	struct tl_recorder	 rec;
};

static int
setup(void **state)
{
	struct fixture		*f;
	struct sockaddr_un	 sun;

	f = calloc(1, sizeof(*f));
	if (f == NULL || (f->dir = tl_tmpdir()) == NULL)
		return (-1);
	snprintf(f->sock, sizeof(f->sock), "%s/agent.sock", f->dir);
	f->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(f->sock) >= sizeof(sun.sun_path))
		return (-1);
	memcpy(sun.sun_path, f->sock, strlen(f->sock));
	if (f->fd == -1 || bind(f->fd, (struct sockaddr *)&sun,
	    sizeof(sun)) == -1)
		return (-1);
	if (segment_open(&f->agent, f->dir, "evjob", SEG_CREATE, 0600) !=
	    SEG_OK)
		return (-1);
	*state = f;
	return (0);
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;

	close(f->fd);
	segment_close(&f->agent);
	tl_rmtree(f->dir);
	free(f);
	return (0);
}

static void
push(struct fixture *f)
{
	tl_push(&f->agent, &f->cfg);
}

/* The next datagram, decoded by protobuf-c; NULL after 5 s without one. */
static Dynprof__V1__RankEvent *
next_event(struct fixture *f)
{
	uint8_t		 buf[8192];
	struct pollfd	 pfd = { f->fd, POLLIN, 0 };
	ssize_t		 n;

	if (poll(&pfd, 1, 5000) != 1)
		return (NULL);
	n = recv(f->fd, buf, sizeof(buf), 0);
	if (n <= 0)
		return (NULL);
	return (dynprof__v1__rank_event__unpack(NULL, (size_t)n, buf));
}

/* Takes the next event and checks the fields every event carries. */
static Dynprof__V1__RankEvent *
expect(struct fixture *f, Dynprof__V1__EventKind kind, pid_t pid,
    int32_t rank, uint32_t seq)
{
	Dynprof__V1__RankEvent	*ev;
	struct timespec		 ts;
	int64_t			 now;

	ev = next_event(f);
	assert_non_null(ev);
	assert_int_equal(ev->kind, kind);
	assert_string_equal(ev->job, "evjob");
	assert_int_equal(ev->pid, pid);
	assert_int_equal(ev->rank, rank);
	assert_int_equal(ev->rank_seq, seq);
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	assert_true(ev->time_unix_ns <= now &&
	    ev->time_unix_ns > now - 60LL * 1000000000);
	return (ev);
}

static void
steps(dynprof_t *h, int64_t from, int64_t to)
{
	int64_t	 s;

	for (s = from; s <= to; s++) {
		assert_int_equal(dynprof_step_begin(h, s), 0);
		assert_int_equal(dynprof_step_end(h, s), 0);
	}
}

static void
test_every_event(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_params	 p;
	struct dynprof_stats	 st;
	Dynprof__V1__RankEvent	*ev;
	dynprof_t		*h;
	char			 want[4096];
	uint32_t		 slot;

	tl_window(&f->cfg, 0, 11, 2, 3, "");
	push(f);
	/* The agent's socket as the environment names it. */
	tl_params(&p, f->dir, "evjob", 6, &f->rec);
	p.agent_socket = NULL;
	setenv("DYNPROF_AGENT_SOCKET", f->sock, 1);
	assert_int_equal(dynprof_open(&p, &h), 0);
	unsetenv("DYNPROF_AGENT_SOCKET");
	slot = (uint32_t)h->slot_index;

	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, getpid(), 6, 1);
	assert_int_equal(ev->slot, slot);
	assert_int_equal(ev->step, -1);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);

	steps(h, 1, 3);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, getpid(), 6, 2);
	snprintf(want, sizeof(want), "%s/out/rank6_start2_stop3", f->dir);
	assert_string_equal(ev->output_dir, want);
	assert_int_equal(ev->window_id, 11);
	assert_int_equal(ev->start_step, 2);
	assert_int_equal(ev->stop_step, 3);
	assert_int_equal(ev->step, 2);
	assert_int_equal(ev->generation, 1);
	assert_int_equal(ev->slot, slot);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, getpid(), 6, 3);
	assert_int_equal(ev->reason, DYNPROF__V1__STOP_REASON__STOP_COMPLETED);
	assert_int_equal(ev->step, 3);
	assert_string_equal(ev->output_dir, want);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);

	/* Skipped: both the window's steps and the rank's. */
	assert_int_equal(dynprof_step_begin(h, 4), 0);
	tl_window(&f->cfg, 1, 12, 1, 2, "");
	push(f);
	assert_int_equal(dynprof_step_end(h, 4), 0);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED, getpid(), 6, 4);
	assert_int_equal(ev->window_id, 12);
	assert_int_equal(ev->start_step, 1);
	assert_int_equal(ev->stop_step, 2);
	assert_int_equal(ev->step, 4);
	assert_int_equal(ev->generation, 2);
	assert_string_equal(ev->output_dir, "");
	dynprof__v1__rank_event__free_unpacked(ev, NULL);

	/* Failed: the callback's message. */
	f->rec.fail_start = 1;
	tl_window(&f->cfg, 2, 13, 6, 8, "");
	push(f);
	steps(h, 5, 6);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_FAILED, getpid(), 6, 5);
	assert_int_equal(ev->window_id, 13);
	assert_string_equal(ev->error, "profiler refused to start");
	assert_int_equal(ev->step, 6);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);

	/* Cancelled while running. */
	f->rec.fail_start = 0;
	tl_window(&f->cfg, 3, 14, 7, 20, "");
	push(f);
	steps(h, 7, 7);
	f->cfg.windows[3].flags |= SEG_WINDOW_CANCELLED;
	push(f);
	steps(h, 8, 8);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, getpid(), 6, 6);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, getpid(), 6, 7);
	assert_int_equal(ev->reason, DYNPROF__V1__STOP_REASON__STOP_CANCELLED);
	assert_int_equal(ev->step, 8);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);

	/* Closed inside a window, then detached. */
	tl_window(&f->cfg, 4, 15, 9, 100, "");
	push(f);
	steps(h, 9, 10);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, getpid(), 6, 8);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	dynprof_get_stats(h, &st);
	assert_int_equal(st.events_sent, 8);
	assert_int_equal(st.events_dropped, 0);
	dynprof_close(h);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, getpid(), 6, 9);
	assert_int_equal(ev->reason, DYNPROF__V1__STOP_REASON__STOP_CLOSED);
	assert_int_equal(ev->step, 10);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_DETACHED, getpid(), 6, 10);
	assert_int_equal(ev->slot, slot);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
}

/* No agent listening: every event is dropped and counted; the slot keeps the
 * last state. */
static void
test_no_agent(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_params	 p;
	struct dynprof_stats	 st;
	struct seg_slot		 s;
	dynprof_t		*h;
	char			 nosock[4200];

	snprintf(nosock, sizeof(nosock), "%s/nobody.sock", f->dir);
	tl_window(&f->cfg, 0, 1, 2, 3, "");
	push(f);
	tl_params(&p, f->dir, "evjob", 0, &f->rec);
	p.agent_socket = nosock;
	assert_int_equal(dynprof_open(&p, &h), 0);
	steps(h, 1, 5);
	dynprof_get_stats(h, &st);
	assert_int_equal(st.events_sent, 0);
	assert_int_equal(st.events_dropped, 3);	/* attached, started, stopped */
	assert_true(tl_logged(&f->rec, "no agent at"));
	assert_int_equal(segment_slot_read(&f->agent, h->slot_index, &s), 0);
	assert_int_equal(s.last_event, EVENT_STOPPED);
	assert_int_equal(s.rank_seq, 3);
	dynprof_close(h);
}

/* An agent that does not read: the socket fills, events are dropped, and no
 * step waits for it. */
static void
test_full_socket_never_blocks(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_params	 p;
	struct dynprof_stats	 st;
	dynprof_t		*h;
	long long		 t0;
	int			 i, small = 1;

	setsockopt(f->fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	tl_params(&p, f->dir, "evjob", 0, &f->rec);
	p.agent_socket = f->sock;
	assert_int_equal(dynprof_open(&p, &h), 0);
	t0 = tl_now_ms();
	for (i = 0; i < 2000; i++) {
		assert_int_equal(dynprof_report_failure(h, "again"), 0);
		assert_int_equal(dynprof_step(h), 0);
	}
	assert_true(tl_now_ms() - t0 < 5000);
	dynprof_get_stats(h, &st);
	assert_true(st.events_sent > 0);
	assert_true(st.events_dropped > 0);
	assert_int_equal(st.events_sent + st.events_dropped, 2001);
	dynprof_close(h);
}

/* A rank process that exits without closing still reports the end. */
static void
test_exit_reports(void **state)
{
	struct fixture		*f = *state;
	struct dynprof_params	 p;
	Dynprof__V1__RankEvent	*ev;
	dynprof_t		*h;
	pid_t			 pid;
	int			 status;

	tl_window(&f->cfg, 0, 21, 2, 50, "");
	push(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tl_params(&p, f->dir, "evjob", 1, &f->rec);
		p.agent_socket = f->sock;
		if (dynprof_open(&p, &h) != 0)
			_exit(2);
		dynprof_step(h);
		dynprof_step(h);
		dynprof_step(h);
		exit(0);		/* no close: the exit handler does it */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, pid, 1, 1);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, pid, 1, 2);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, pid, 1, 3);
	assert_int_equal(ev->reason, DYNPROF__V1__STOP_REASON__STOP_CLOSED);
	assert_int_equal(ev->step, 3);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	ev = expect(f, DYNPROF__V1__EVENT_KIND__EVENT_DETACHED, pid, 1, 4);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_every_event),
		T(test_no_agent),
		T(test_full_socket_never_blocks),
		T(test_exit_reports),
	};
#undef T

	return (cmocka_run_group_tests_name("lib_events", tests, NULL, NULL));
}
