/*
 * The agent with real training processes (rankproc, linked with libdynprof): a
 * push reaches the rank's next steps, and a rank's final state survives the
 * agent being killed while the rank finishes.
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

#define T_WAIT	10000

/* lt_teardown(), after the ranks' log is shown. */
static int
teardown(void **state)
{
	struct linktest	*t = *state;
	char		 cmd[512];

	snprintf(cmd, sizeof(cmd), "cat %s >&2", t->ranklog);
	if (system(cmd) == -1)
		perror("system");
	return (lt_teardown(state));
}

static void
start_connected(struct linktest *t)
{
	const char *extra[] = { "--coordinator", t->coord, "--node", "n1",
	    "--sample-interval", "50", NULL };
	Dynprof__V1__AgentMessage *m;

	assert_int_equal(ap_start(&t->ap, extra), 0);
	assert_int_equal(fc_accept(&t->fc, T_WAIT), 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO, T_WAIT);
	assert_non_null(m);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(fc_welcome(&t->fc, 60000, 0, 0), 0);
}

static pid_t
start_rank(struct linktest *t, const char *job, const char *steps,
    const char *step_ms, int hold)
{
	const char	*argv[] = { t->rankbin, job, "0", steps, step_ms,
	    t->ranklog, hold ? "hold" : NULL, NULL };
	pid_t		 pid;

	pid = ap_spawn(&t->ap, argv);
	assert_true(pid > 0);
	return (pid);
}

/* The rank's current step in its slot, polled until it is at least min. */
static int64_t
rank_step(struct linktest *t, const char *job, pid_t pid, int64_t min)
{
	struct segment	 seg;
	int64_t		 deadline = ap_now_ms() + T_WAIT, step = -1;
	uint32_t	 i;

	while (ap_now_ms() < deadline) {
		if (segment_open(&seg, t->ap.shm, job, 0, 0600) == SEG_OK) {
			for (i = 0; i < seg.nslots; i++)
				if (atomic_load(&seg.slots[i].pid) == pid)
					step = atomic_load(&seg.slots[i].step);
			segment_close(&seg);
			if (step >= min)
				return (step);
		}
		usleep(2000);
	}
	fail_msg("rank %d never reached step %lld", (int)pid, (long long)min);
	return (-1);
}

/* Waits until the rank's log has a line starting with prefix; returns it. */
static int
rank_log_line(struct linktest *t, const char *prefix, char *line, size_t len)
{
	int64_t	 deadline = ap_now_ms() + T_WAIT;
	FILE	*f;

	while (ap_now_ms() < deadline) {
		if ((f = fopen(t->ranklog, "r")) != NULL) {
			while (fgets(line, (int)len, f) != NULL) {
				if (strncmp(line, prefix, strlen(prefix)) == 0) {
					fclose(f);
					return (0);
				}
			}
			fclose(f);
		}
		usleep(5000);
	}
	fail_msg("no \"%s\" line in %s", prefix, t->ranklog);
	return (-1);
}

static Dynprof__V1__AgentEvent *
expect_kind(struct linktest *t, int kind, Dynprof__V1__AgentMessage **mp)
{
	Dynprof__V1__AgentMessage *m;
	int64_t	 deadline = ap_now_ms() + T_WAIT;

	while (ap_now_ms() < deadline) {
		m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT,
		    (int)(deadline - ap_now_ms()));
		if (m == NULL)
			break;
		if ((int)m->event->event->kind == kind) {
			*mp = m;
			return (m->event);
		}
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	fail_msg("no event of kind %d", kind);
	return (NULL);
}

static void
test_push_reaches_rank(void **state)
{
	struct linktest		*t = *state;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	char			 line[2048], want[128];
	int64_t			 cur, start;
	unsigned		 id, a, b;
	long long		 at;
	pid_t			 pid;

	start_connected(t);
	pid = start_rank(t, "jr", "0", "10", 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE, T_WAIT);
	assert_non_null(m);
	assert_string_equal(m->subscribe->job, "jr");
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, &m);
	assert_int_equal(ae->event->pid, pid);
	dynprof__v1__agent_message__free_unpacked(m, NULL);

	cur = rank_step(t, "jr", pid, 1);
	start = cur + 40;
	assert_int_equal(fc_push(&t->fc, "jr", 1, 1, start, start + 2), 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED, T_WAIT);
	assert_non_null(m);
	assert_int_equal(m->applied->generation, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);

	/* The rank starts in step_begin(start), stops in step_end(start + 2). */
	assert_int_equal(rank_log_line(t, "start ", line, sizeof(line)), 0);
	assert_int_equal(sscanf(line, "start %u %u %u %lld", &id, &a, &b, &at),
	    4);
	assert_int_equal(id, 1);
	assert_int_equal(a, start);
	assert_int_equal(b, start + 2);
	assert_int_equal(at, start);
	snprintf(want, sizeof(want), "rank0_start%lld_stop%lld",
	    (long long)start, (long long)start + 2);
	assert_non_null(strstr(line, want));
	assert_int_equal(rank_log_line(t, "stop ", line, sizeof(line)), 0);
	assert_int_equal(sscanf(line, "stop %u %u %lld", &id, &a, &at), 3);
	assert_int_equal(a, 1);		/* completed */
	assert_int_equal(at, start + 2);

	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, &m);
	assert_int_equal(ae->event->window_id, 1);
	assert_int_equal(ae->event->step, start);
	assert_non_null(strstr(ae->event->output_dir, want));
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, &m);
	assert_int_equal(ae->event->step, start + 2);
	assert_int_equal(ae->event->reason, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);

	/* The rank closes: detached, and the job is unsubscribed. */
	assert_int_equal(ap_kill_child(&t->ap, pid, SIGTERM, T_WAIT), 0);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_DETACHED, &m);
	assert_int_equal(ae->event->pid, pid);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_UNSUBSCRIBE,
	    T_WAIT);
	assert_non_null(m);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
}

/*
 * Pushes window id two steps long, 40 steps ahead of a new rank of job, kills
 * the agent once it applied it, and waits until the rank ran the window with
 * no agent listening.  Returns the window's start step; *pid is the rank's.
 */
static int64_t
window_without_agent(struct linktest *t, const char *job, uint32_t id,
    pid_t *pid)
{
	Dynprof__V1__AgentMessage *m;
	char			 line[2048];
	int64_t			 start;

	start_connected(t);
	*pid = start_rank(t, job, "0", "10", 0);
	start = rank_step(t, job, *pid, 1) + 40;
	assert_int_equal(fc_push(&t->fc, job, 1, id, start, start + 1), 0);
	m = fc_expect(&t->fc, DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED, T_WAIT);
	assert_non_null(m);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_true(WIFSIGNALED(ap_stop(&t->ap, SIGKILL, T_WAIT)));
	fc_drop(&t->fc);
	assert_int_equal(rank_log_line(t, "stop ", line, sizeof(line)), 0);
	return (start);
}

/*
 * The agent is killed right after applying a window; the rank runs the window
 * while no agent listens (its events go nowhere), then dies.  The restarted
 * agent finds the final state in the segment and reports it, then the death.
 */
static void
test_final_state_survives_agent_kill(void **state)
{
	struct linktest		*t = *state;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	int64_t			 start;
	pid_t			 pid;
	int			 status;

	start = window_without_agent(t, "jk", 3, &pid);
	status = ap_kill_child(&t->ap, pid, SIGKILL, T_WAIT);
	assert_true(WIFSIGNALED(status));

	start_connected(t);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, &m);
	assert_int_equal(ae->event->window_id, 3);
	assert_int_equal(ae->event->rank, 0);
	assert_int_equal(ae->event->step, start);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, &m);
	assert_int_equal(ae->event->window_id, 3);
	assert_int_equal(ae->event->step, start + 1);
	assert_int_equal(ae->event->reason, 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_DETACHED, &m);
	assert_int_equal(ae->event->pid, pid);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
}

/*
 * The rank runs a window and closes cleanly while no agent listens: its
 * detached event must not hide the window's final state from the agent that
 * comes back, which re-reports started, stopped (with its steps, output
 * directory and reason) and then detached.
 */
static void
test_final_state_survives_close_without_agent(void **state)
{
	struct linktest		*t = *state;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	char			 want[128];
	int64_t			 start;
	pid_t			 pid;
	int			 status;

	/* The window runs to its end, then the rank closes (detached). */
	start = window_without_agent(t, "jc", 4, &pid);
	status = ap_kill_child(&t->ap, pid, SIGTERM, T_WAIT);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	start_connected(t);
	snprintf(want, sizeof(want), "rank0_start%lld_stop%lld",
	    (long long)start, (long long)start + 1);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, &m);
	assert_int_equal(ae->event->window_id, 4);
	assert_int_equal(ae->event->step, start);
	assert_int_equal(ae->event->start_step, start);
	assert_int_equal(ae->event->stop_step, start + 1);
	assert_non_null(strstr(ae->event->output_dir, want));
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, &m);
	assert_int_equal(ae->event->window_id, 4);
	assert_int_equal(ae->event->step, start + 1);
	assert_int_equal(ae->event->reason, 1);		/* completed */
	assert_non_null(strstr(ae->event->output_dir, want));
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_DETACHED, &m);
	assert_int_equal(ae->event->rank, 0);
	/* Its last step: the stop step itself when the SIGTERM came before the
	 * next step began (the rank printed "steps done 42" for a window 41-42). */
	assert_true(ae->event->step >= start + 1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
}

/* Standalone: an edit (write + rename) drives a real rank; an invalid one
 * in between changes nothing. */
static void
test_standalone_drives_rank(void **state)
{
	struct linktest	*t = *state;
	char		 cfg[512], tmp[600], line[2048];
	const char	*extra[] = { "--config-file", cfg, "--job", "js",
	    "--sample-interval", "50", NULL };
	FILE		*f;
	int64_t		 cur, start;
	unsigned	 id, a, b;
	long long	 at;
	pid_t		 pid;

	snprintf(cfg, sizeof(cfg), "%s/profiler_config.json", t->ap.dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", cfg);
	assert_int_equal(ap_start(&t->ap, extra), 0);
	pid = start_rank(t, "js", "0", "10", 0);
	cur = rank_step(t, "js", pid, 1);

	/* An invalid file first: logged, nothing applied. */
	f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "{\"start_step\": 5,\n \"stop_step\": }\n");
	fclose(f);
	assert_int_equal(rename(tmp, cfg), 0);
	assert_int_equal(ap_log_wait(&t->ap, "profiler_config.json:2: invalid",
	    1, T_WAIT), 0);

	start = cur + 40;
	f = fopen(tmp, "w");
	assert_non_null(f);
	fprintf(f, "{\"start_step\": %lld, \"stop_step\": %lld, "
	    "\"profiler_level\": 1}\n", (long long)start, (long long)start + 1);
	fclose(f);
	assert_int_equal(rename(tmp, cfg), 0);
	assert_int_equal(rank_log_line(t, "start ", line, sizeof(line)), 0);
	assert_int_equal(sscanf(line, "start %u %u %u %lld", &id, &a, &b, &at),
	    4);
	assert_int_equal(id, 1);
	assert_int_equal(at, start);
	assert_int_equal(rank_log_line(t, "stop ", line, sizeof(line)), 0);
}

/*
 * A rank ends inside a window while the agent runs: the library sends stopped
 * (reason closed), then detached, then frees its slot at once, so the agent
 * often reads both datagrams after the slot is free.  Both must still be
 * forwarded: the slot remembers which pid last held it.  Several ranks, to
 * make the race likely.
 */
static void
test_close_inside_window_reports_stop(void **state)
{
	struct linktest		*t = *state;
	Dynprof__V1__AgentMessage *m;
	Dynprof__V1__AgentEvent	*ae;
	char			 line[2048];
	int64_t			 start;
	pid_t			 pid;
	int			 round;

	start_connected(t);
	for (round = 0; round < 3; round++) {
		pid = start_rank(t, "jc", "0", "5", 0);
		if (round == 0) {
			m = fc_expect(&t->fc,
			    DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE, T_WAIT);
			assert_non_null(m);
			dynprof__v1__agent_message__free_unpacked(m, NULL);
		}
		ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, &m);
		assert_int_equal(ae->event->pid, pid);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
		start = rank_step(t, "jc", pid, 1) + 20;
		assert_int_equal(fc_push(&t->fc, "jc", (uint64_t)round + 1,
		    (uint32_t)round + 1, start, start + 100000), 0);
		ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, &m);
		assert_int_equal(ae->event->window_id, round + 1);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
		assert_int_equal(ap_kill_child(&t->ap, pid, SIGTERM, T_WAIT), 0);
		assert_int_equal(rank_log_line(t, "stop ", line, sizeof(line)),
		    0);
		ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, &m);
		assert_int_equal(ae->event->pid, pid);
		assert_int_equal(ae->event->window_id, round + 1);
		assert_int_equal(ae->event->reason, 3);		/* closed */
		dynprof__v1__agent_message__free_unpacked(m, NULL);
		ae = expect_kind(t, DYNPROF__V1__EVENT_KIND__EVENT_DETACHED, &m);
		assert_int_equal(ae->event->pid, pid);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_push_reaches_rank,
		    lt_setup_ranks, teardown),
		cmocka_unit_test_setup_teardown(
		    test_final_state_survives_agent_kill, lt_setup_ranks,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_final_state_survives_close_without_agent,
		    lt_setup_ranks, teardown),
		cmocka_unit_test_setup_teardown(test_standalone_drives_rank,
		    lt_setup_ranks, teardown),
		cmocka_unit_test_setup_teardown(
		    test_close_inside_window_reports_stop, lt_setup_ranks,
		    teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests_name("agent_ranks", tests, NULL, NULL));
}
