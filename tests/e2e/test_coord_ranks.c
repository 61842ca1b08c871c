/*
 * The coordinator's schedule with the real agent and real training processes
 * (rankproc, linked with libdynprof): a window already behind every rank still
 * reaches them and each reports it skipped; a window that just ended, or a
 * cancelled one that never started, does not block a new overlapping window,
 * and the agent and the ranks handle what the coordinator then pushes.
 */

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

#include "fakecoord.h"
#include "test_coord_util.h"

#define T_WAIT	15000

struct t {
	struct tc_coord		 tc;
	struct agentproc	 ap;
	char			 rankbin[512];
	char			 ranklog[400];
	char			 out[400];
};

/* A coordinator with heartbeat (and housekeeping tick) hb, and an agent. */
static int
setup_hb(void **state, const char *hb)
{
	struct t	*t = calloc(1, sizeof(*t));
	const char	*cextra[] = { "-v", "--heartbeat-ms", hb, NULL };
	const char	*aextra[] = { "--coordinator", NULL, "--node", "n1",
	    "--sample-interval", "50", NULL };
	char		 coord[64];

	if (t == NULL)
		return (-1);
	*state = t;
	if (tc_setup_dir(&t->tc) == -1 || ap_setup(&t->ap) == -1 ||
	    tc_start(&t->tc, cextra) == -1)
		return (-1);
	snprintf(coord, sizeof(coord), "127.0.0.1:%d", t->tc.agent_port);
	aextra[1] = coord;
	snprintf(t->ranklog, sizeof(t->ranklog), "%s/rank.log", t->ap.dir);
	snprintf(t->out, sizeof(t->out), "%s/out", t->ap.dir);
	snprintf(t->rankbin, sizeof(t->rankbin), "%s/tests/rankproc",
	    ap_build_dir());
	setenv("DYNPROF_OUTPUT_ROOT", t->out, 1);
	if (ap_start(&t->ap, aextra) == -1)
		return (-1);
	return (0);
}

/* A fast tick: a window pruned too early would be gone within 100 ms. */
static int
setup_fast(void **state)
{
	return (setup_hb(state, "100"));
}

/* A slow tick: only the commit of the events can free a window's steps. */
static int
setup_slow(void **state)
{
	return (setup_hb(state, "10000"));
}

static int
teardown(void **state)
{
	struct t	*t = *state;
	char		 cmd[1200];
	int		 rc = 0;

	if (t == NULL)
		return (0);
	snprintf(cmd, sizeof(cmd), "echo '--- agent and ranks:' >&2; "
	    "tail -40 %s >&2; echo '--- rank log:' >&2; cat %s >&2; "
	    "echo '--- coordinator:' >&2; tail -40 %s >&2", t->ap.log,
	    t->ranklog, t->tc.log);
	if (system(cmd) == -1)
		perror("system");
	ap_cleanup(&t->ap);
	if (t->tc.pid > 0)
		rc = tc_stop(&t->tc, SIGTERM);
	if (rc != 0)
		fprintf(stderr, "coordinator exited %d\n", rc);
	tc_cleanup(&t->tc);
	free(t);
	return (rc == 0 ? 0 : -1);
}

static pid_t
start_rank(struct t *t, const char *job, const char *rank,
    const char *step_ms)
{
	const char	*argv[] = { t->rankbin, job, rank, "0", step_ms,
	    t->ranklog, NULL };
	pid_t		 pid;

	pid = ap_spawn(&t->ap, argv);
	assert_true(pid > 0);
	return (pid);
}

/* Sends a request and checks the status; returns the reply (caller frees). */
static struct tc_reply
req(struct t *t, const char *method, const char *path, const char *body,
    int status)
{
	return (tc_req(&t->tc, method, path, body, status));
}

/* Schedules [start, stop] for job; returns the window id. */
static int
post_window(struct t *t, const char *job, long long start, long long stop,
    int status)
{
	struct tc_reply	 r;
	char		 path[128], body[128];
	int		 id;

	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", job);
	/* Forced: some start behind every rank, to see them skipped. */
	snprintf(body, sizeof(body), "{\"start_step\": %lld, \"stop_step\": "
	    "%lld, \"force\": true}", start, stop);
	r = req(t, "POST", path, body, status);
	id = (int)tc_int(r.json, "id");
	tc_reply_free(&r);
	return (id);
}

/*
 * Polls GET /v1/jobs/{job}{tail} (its summary, or "/ranks") until
 * probe(answer, arg) is not negative; returns that value, or fails saying
 * what never happened.
 */
static long long
poll_job(struct t *t, const char *job, const char *tail,
    long long (*probe)(json_t *, const void *), const void *arg,
    const char *what)
{
	long long	 deadline = tc_now_ms() + T_WAIT, v = -1;
	struct tc_reply	 r;
	char		 path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s%s", job, tail);
	while (tc_now_ms() < deadline) {
		assert_int_equal(tc_http(t->tc.http_port, "GET", path, NULL,
		    NULL, &r), 0);
		if (r.status == 200)
			v = probe(r.json, arg);
		tc_reply_free(&r);
		if (v >= 0)
			return (v);
		usleep(20000);
	}
	fail_msg("job %s: never %s", job, what);
	return (-1);
}

struct probe_arg {
	int		 rank;		/* or the number of ranks */
	long long	 min;
	const char	*kind;		/* or the window state */
	int		 id;
};

/* The lowest step once p->rank ranks are alive, all at step >= p->min. */
static long long
probe_progress(json_t *status, const void *arg)
{
	const struct probe_arg	*p = arg;
	long long		 lo = tc_int(status, "progress.min_step");

	if (tc_int(status, "progress.ranks_alive") != p->rank || lo < p->min)
		return (-1);
	return (lo);
}

/* The step of rank p->rank's event p->kind for window p->id, or -1. */
static long long
probe_event(json_t *status, const void *arg)
{
	const struct probe_arg	*p = arg;
	json_t			*r, *e;
	size_t			 i, j;

	json_array_foreach(json_object_get(status, "ranks"), i, r) {
		if (tc_int(r, "rank") != p->rank)
			continue;
		json_array_foreach(json_object_get(r, "events"), j, e) {
			if (strcmp(tc_str(e, "kind"), p->kind) == 0 &&
			    tc_int(e, "window") == p->id)
				return (tc_int(e, "step"));
		}
	}
	return (-1);
}

/* 0 once window p->id is in state p->kind, else -1. */
static long long
probe_window(json_t *status, const void *arg)
{
	const struct probe_arg	*p = arg;
	json_t			*w;
	size_t			 i;

	json_array_foreach(json_object_get(status, "windows"), i, w) {
		if (tc_int(w, "id") == p->id &&
		    strcmp(tc_str(w, "state"), p->kind) == 0)
			return (0);
	}
	return (-1);
}

/* Waits until nranks ranks are alive, all at step >= min; the lowest step. */
static long long
wait_progress(struct t *t, const char *job, int nranks, long long min)
{
	struct probe_arg	 p = { nranks, min, NULL, 0 };

	return (poll_job(t, job, "", probe_progress, &p,
	    "the ranks' progress"));
}

/* Waits until rank reported an event of kind for window id; its step. */
static long long
wait_event(struct t *t, const char *job, int rank, const char *kind, int id)
{
	struct probe_arg	 p = { rank, 0, kind, id };

	return (poll_job(t, job, "/ranks", probe_event, &p, kind));
}

/* Waits until window id is in state want. */
static void
wait_window_state(struct t *t, const char *job, int id, const char *want)
{
	struct probe_arg	 p = { 0, 0, want, id };

	poll_job(t, job, "", probe_window, &p, want);
}

/* Counts the lines of the rank log that start with prefix. */
static int
rank_log_count(struct t *t, const char *prefix)
{
	char	 line[2048];
	FILE	*f;
	int	 n = 0;

	if ((f = fopen(t->ranklog, "r")) == NULL)
		return (0);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, prefix, strlen(prefix)) == 0)
			n++;
	fclose(f);
	return (n);
}

/* Waits until the rank log has a line starting with prefix. */
static void
wait_rank_log(struct t *t, const char *prefix)
{
	long long	 deadline = tc_now_ms() + T_WAIT;

	while (tc_now_ms() < deadline) {
		if (rank_log_count(t, prefix) > 0)
			return;
		usleep(10000);
	}
	fail_msg("no \"%s\" line in the rank log", prefix);
}

/*
 * A window wholly behind two slow ranks (a step every 2 s) is scheduled: it
 * stays pushed until both ranks saw it, and each reports it skipped, with its
 * own step past the window's.  With a 100 ms tick, pruning on "the lowest
 * step passed its stop" would take it away before either rank's next step.
 */
static void
test_window_behind_every_rank_is_skipped(void **state)
{
	struct t	*t = *state;
	long long	 step0, step1;
	int		 id;

	start_rank(t, "jb", "0", "2000");
	start_rank(t, "jb", "1", "2000");
	wait_progress(t, "jb", 2, 2);
	id = post_window(t, "jb", 1, 1, 201);
	step0 = wait_event(t, "jb", 0, "skipped", id);
	step1 = wait_event(t, "jb", 1, "skipped", id);
	assert_true(step0 >= 2);
	assert_true(step1 >= 2);
	/* Both ended it: it leaves the schedule. */
	wait_window_state(t, "jb", id, "done");
	assert_int_equal(rank_log_count(t, "start "), 0);
}

/*
 * A window runs to its end on a rank; right after the rank's stopped event
 * is in, a window sharing its last step is accepted (no wait for a tick), and
 * the agent and the rank take it: the rank, past its start, reports it
 * skipped.
 */
static void
test_overlap_after_done(void **state)
{
	struct t	*t = *state;
	long long	 s, step;
	int		 id1, id2;

	start_rank(t, "jd", "0", "10");
	s = wait_progress(t, "jd", 1, 1);
	id1 = post_window(t, "jd", s + 30, s + 32, 201);
	assert_int_equal(wait_event(t, "jd", 0, "stopped", id1), s + 32);
	id2 = post_window(t, "jd", s + 32, s + 40, 201);
	assert_true(id2 > id1);
	step = wait_event(t, "jd", 0, "skipped", id2);
	assert_true(step > s + 32);
	assert_int_equal(rank_log_count(t, "start "), 1);
	assert_int_equal(ap_log_count(&t->ap, "refused"), 0);
}

/*
 * A scheduled window is cancelled before it starts; a window overlapping it
 * is accepted at once, pushed beside the cancelled one, and runs on the rank,
 * while the cancelled one never starts.
 */
static void
test_overlap_after_cancel(void **state)
{
	struct t	*t = *state;
	struct tc_reply	 r;
	char		 path[128], want[64];
	long long	 s;
	int		 id1, id2;

	start_rank(t, "je", "0", "10");
	s = wait_progress(t, "je", 1, 1);
	id1 = post_window(t, "je", s + 150, s + 152, 201);
	snprintf(path, sizeof(path), "/v1/jobs/je/windows/%d", id1);
	r = req(t, "DELETE", path, NULL, 200);
	tc_reply_free(&r);
	id2 = post_window(t, "je", s + 151, s + 153, 201);
	snprintf(want, sizeof(want), "stop %d ", id2);
	wait_rank_log(t, want);
	assert_int_equal(wait_event(t, "je", 0, "started", id2), s + 151);
	assert_int_equal(wait_event(t, "je", 0, "stopped", id2), s + 153);
	snprintf(want, sizeof(want), "start %d ", id1);
	assert_int_equal(rank_log_count(t, want), 0);
	assert_int_equal(rank_log_count(t, "start "), 1);
	assert_int_equal(ap_log_count(&t->ap, "refused"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_window_behind_every_rank_is_skipped, setup_fast,
		    teardown),
		cmocka_unit_test_setup_teardown(test_overlap_after_done,
		    setup_slow, teardown),
		cmocka_unit_test_setup_teardown(test_overlap_after_cancel,
		    setup_slow, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests_name("coord_ranks", tests, NULL, NULL));
}
