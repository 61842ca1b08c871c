/*
 * Budgets of rank state, through the real coordinator on 127.0.0.1 and fake
 * agents speaking the real protocol: bytes of an event's strings, ranks per
 * job, live ranks per agent, the memory of all ranks' state.  Each refusal is
 * counted in /metrics and logged at most a few times per node per interval;
 * a healthy job beside the attack is served whole.  The coordinator's VmRSS
 * and its store's size are printed before and after each attack.
 */

#include <sys/stat.h>

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakeagent.h"
#include "procstat.h"
#include "test_coord_util.h"

#define K_ATTACHED	DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED
#define K_STARTED	DYNPROF__V1__EVENT_KIND__EVENT_STARTED
#define K_FAILED	DYNPROF__V1__EVENT_KIND__EVENT_FAILED
#define K_DETACHED	DYNPROF__V1__EVENT_KIND__EVENT_DETACHED

#define MIB		(1024 * 1024)

#define TOKEN		"agent-secret"	/* tc_setup_agents_args()'s */

/* The coordinator of each test: the default budgets, small counts, or a
 * small memory budget. */
static int
setup_default(void **state)
{
	return (tc_setup_agents_args(state, "2000", NULL));
}

static int
setup_counts(void **state)
{
	const char	*more[] = { "--max-ranks-per-job", "500",
	    "--max-ranks-per-agent", "300", NULL };

	return (tc_setup_agents_args(state, "2000", more));
}

static int
setup_memory(void **state)
{
	const char	*more[] = { "--rank-memory-max", "1", NULL };

	return (tc_setup_agents_args(state, "2000", more));
}

/* Returns the size in KiB of the coordinator's store (the database and its
 * write-ahead log). */
static long long
store_kb(struct tc_coord *tc)
{
	static const char *const files[] = { "dynprof.db", "dynprof.db-wal" };
	char		 path[512];
	struct stat	 st;
	long long	 kb = 0;
	size_t		 i;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", tc->state, files[i]);
		if (stat(path, &st) == 0)
			kb += (long long)st.st_size / 1024;
	}
	return (kb);
}

/* Sends attach events for ranks first..first+n-1 of job, in one write. */
static void
attach_many(struct fakeagent *fa, const char *job, int first, int n)
{
	int	 i;

	assert_int_equal(fa_cork(fa), 0);
	for (i = first; i < first + n; i++)
		assert_int_equal(fa_event(fa, 0, K_ATTACHED, job, i, 0, -1,
		    NULL), 0);
	assert_int_equal(fa_flush(fa), 0);
}

/* Waits for the ack of everything fa sent. */
static void
acked(struct fakeagent *fa, int timeout_ms)
{
	assert_int_equal(fa_wait_ack(fa, fa->next_seq - 1, timeout_ms), 0);
}

/* Returns the ranks GET /v1/jobs lists for job, -1 if it lists no job. */
static long long
job_ranks(struct tc_coord *tc, const char *job)
{
	struct tc_reply	 r;
	json_t		*list, *o;
	long long	 n = -1;
	size_t		 i;

	assert_int_equal(tc_expect(tc, "GET", "/v1/jobs", NULL, 200, &r), 0);
	list = json_object_get(r.json, "jobs");
	for (i = 0; i < json_array_size(list); i++) {
		o = json_array_get(list, i);
		if (strcmp(tc_str(o, "job"), job) == 0)
			n = tc_int(o, "ranks");
	}
	tc_reply_free(&r);
	return (n);
}

/* Returns how many lines of the coordinator's log hold what. */
static int
log_lines(struct tc_coord *tc, const char *what)
{
	char	*text = tc_slurp(tc->log), *p;
	int	 n = 0;

	assert_non_null(text);
	for (p = text; (p = strstr(p, what)) != NULL; p++)
		n++;
	free(text);
	return (n);
}

/* A healthy job beside the attack: 8 ranks of job ok on node healthy
 * attach and start window 1; all 8 are served. */
static void
healthy_job(struct tc_coord *tc)
{
	struct fakeagent fa;
	struct tc_reply	 r;
	int		 i;

	assert_int_equal(fa_handshake(&fa, tc->agent_port, "healthy", TOKEN),
	    0);
	assert_int_equal(fa_subscribe(&fa, "ok", 0), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(fa_event(&fa, 0, K_ATTACHED, "ok", i, 0, -1,
		    NULL), 0);
		assert_int_equal(fa_event(&fa, 0, K_STARTED, "ok", i, 1, 10,
		    "/out/ok"), 0);
	}
	acked(&fa, 10000);
	assert_int_equal(job_ranks(tc, "ok"), 8);
	assert_int_equal(tc_expect(tc, "GET", "/v1/jobs/ok/ranks?state="
	    "profiling", NULL, 200, &r), 0);
	assert_int_equal(json_array_size(json_object_get(r.json, "ranks")), 8);
	tc_reply_free(&r);
	fa_close(&fa);
}

/*
 * 300 events with 1 MiB error texts took the coordinator from 10 to 325 MB
 * and its SQLite file to 634 MB.  Now an error is cut to 4095 bytes at a
 * UTF-8 character (counted), an output directory of 4096 bytes or more
 * refuses its event (counted).
 */
static void
test_event_text(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa;
	static char	 big[MIB + 2], dir[5001];
	struct tc_reply	 r;
	json_t		*rank;
	long long	 rss0, rss1, db0, db1;
	int		 i;

	assert_int_equal(fa_handshake(&fa, tc->agent_port, "texter", TOKEN), 0);
	/* 1 MiB of "é" (2 bytes each) after "xy": 4095 bytes end inside an
	 * "é", so the cut steps back to 4094. */
	big[0] = 'x';
	big[1] = 'y';
	for (i = 2; i + 1 < MIB; i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;
	}
	big[i] = '\0';
	memset(dir, 'd', 5000);
	dir[0] = '/';
	dir[5000] = '\0';
	rss0 = procstat_status(tc->pid, "VmRSS");
	db0 = store_kb(tc);
	for (i = 0; i < 300; i++)
		assert_int_equal(fa_event_text(&fa, 0, K_FAILED, "txt", i,
		    NULL, big), 0);
	acked(&fa, 60000);
	assert_int_equal(fa_event_text(&fa, 0, K_STARTED, "txt", 300, dir,
	    NULL), 0);
	acked(&fa, 10000);
	rss1 = procstat_status(tc->pid, "VmHWM");
	db1 = store_kb(tc);
	print_message("300 events of 1 MiB errors: coordinator VmRSS %lld KiB, "
	    "peak %lld KiB; store %lld KiB -> %lld KiB\n", rss0, rss1, db0,
	    db1);
	assert_int_equal(tc_metric(tc, "dynprof_event_text_cut_total"), 300);
	assert_int_equal(tc_metric(tc, "dynprof_events_refused_total"), 1);
	/* Under ASan each 1 MiB message freed waits in its quarantine: there
	 * the store's size says it. */
	if (getenv("DYNPROF_SANITIZED") == NULL)
		assert_true(rss1 - rss0 < 64 * 1024);
	assert_true(db1 - db0 < 16 * 1024);
	assert_int_equal(tc_expect(tc, "GET", "/v1/jobs/txt/ranks?limit=1",
	    NULL, 200, &r), 0);
	rank = json_array_get(json_object_get(r.json, "ranks"), 0);
	assert_int_equal(tc_int(rank, "rank"), 0);
	assert_string_equal(tc_str(rank, "state"), "failed");
	assert_int_equal(strlen(tc_str(rank, "error")), 4094);
	assert_memory_equal(tc_str(rank, "error"), big, 4094);
	tc_reply_free(&r);
	assert_int_equal(job_ranks(tc, "txt"), 300);
	/* Logged a few times, not 300. */
	assert_true(log_lines(tc, "cut to 4094") >= 1);
	assert_true(log_lines(tc, "cut to 4094") <= 10);
	fa_close(&fa);
	healthy_job(tc);
}

/*
 * 200,000 attached events for distinct ranks of one job were all taken.
 * Now a job has at most --max-ranks-per-job ranks (here 500) and an agent
 * reports at most --max-ranks-per-agent live ranks (here 300); a rank gone
 * counts against no agent.  A healthy job is served whole meanwhile.
 */
static void
test_rank_counts(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a, b;
	int		 i;

	assert_int_equal(fa_handshake(&a, tc->agent_port, "node-a", TOKEN), 0);
	assert_int_equal(fa_handshake(&b, tc->agent_port, "node-b", TOKEN), 0);
	/* node-a: 400 ranks, 300 taken. */
	attach_many(&a, "big", 0, 400);
	acked(&a, 20000);
	assert_int_equal(tc_metric(tc,
	    "dynprof_ranks_refused_total{budget=\"agent\"}"), 100);
	assert_int_equal(job_ranks(tc, "big"), 300);
	/* node-b: 300 more, 200 taken: the job is full at 500. */
	attach_many(&b, "big", 400, 300);
	acked(&b, 20000);
	assert_int_equal(tc_metric(tc,
	    "dynprof_ranks_refused_total{budget=\"job\"}"), 100);
	assert_int_equal(job_ranks(tc, "big"), 500);
	healthy_job(tc);
	/* 100 of node-a's ranks leave: 100 of another job are taken. */
	assert_int_equal(fa_cork(&a), 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(fa_event(&a, 0, K_DETACHED, "big", i, 0, -1,
		    NULL), 0);
	assert_int_equal(fa_flush(&a), 0);
	attach_many(&a, "other", 0, 150);
	acked(&a, 20000);
	assert_int_equal(job_ranks(tc, "other"), 100);
	assert_int_equal(tc_metric(tc,
	    "dynprof_ranks_refused_total{budget=\"agent\"}"), 150);
	assert_int_equal(tc_metric(tc, "dynprof_ranks_refused_total{budget="
	    "\"memory\"}"), 0);
	/* 250 refusals, logged a few times per node. */
	assert_true(log_lines(tc, "budget (job") >= 2);
	assert_true(log_lines(tc, "budget (job") <= 20);
	fa_close(&a);
	fa_close(&b);
}

/* At the defaults: one agent's 10,000 ranks of one job, 4096 taken. */
static void
test_rank_defaults(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa;
	long long	 rss0;

	rss0 = procstat_status(tc->pid, "VmRSS");
	assert_int_equal(fa_handshake(&fa, tc->agent_port, "many", TOKEN), 0);
	attach_many(&fa, "wide", 0, 10000);
	acked(&fa, 30000);
	print_message("10000 ranks from one agent: %lld taken, VmRSS %lld KiB "
	    "-> %lld KiB\n", job_ranks(tc, "wide"), rss0,
	    procstat_status(tc->pid, "VmHWM"));
	assert_int_equal(job_ranks(tc, "wide"), 4096);
	assert_int_equal(tc_metric(tc,
	    "dynprof_ranks_refused_total{budget=\"agent\"}"), 10000 - 4096);
	healthy_job(tc);
	fa_close(&fa);
}

/*
 * The memory of all ranks' state is bounded too (--rank-memory-max, here
 * 1 MiB): 4000 ranks from 16 agents (250 each, under the agent budget) of
 * jobs of 250, past it refused; the bytes counted stay under the budget.
 */
static void
test_rank_memory(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[16];
	char		 node[32], job[32];
	long long	 bytes, refused, taken = 0;
	int		 i;

	for (i = 0; i < 16; i++) {
		snprintf(node, sizeof(node), "mem-%d", i);
		snprintf(job, sizeof(job), "mem-%d", i);
		assert_int_equal(fa_handshake(&fa[i], tc->agent_port, node,
		    TOKEN), 0);
		attach_many(&fa[i], job, 0, 250);
		acked(&fa[i], 20000);
	}
	for (i = 0; i < 16; i++) {
		snprintf(job, sizeof(job), "mem-%d", i);
		taken += job_ranks(tc, job) > 0 ? job_ranks(tc, job) : 0;
	}
	bytes = tc_metric(tc, "dynprof_rank_state_bytes");
	refused = tc_metric(tc, "dynprof_ranks_refused_total{budget="
	    "\"memory\"}");
	print_message("4000 ranks under a 1 MiB budget: %lld taken, %lld "
	    "refused, %lld bytes of rank state\n", taken, refused, bytes);
	assert_true(refused > 0);
	assert_int_equal(taken + refused, 4000);
	assert_true(bytes > 0 && bytes <= MIB);
	for (i = 0; i < 16; i++)
		fa_close(&fa[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_event_text,
		    setup_default, tc_teardown),
		cmocka_unit_test_setup_teardown(test_rank_counts,
		    setup_counts, tc_teardown),
		cmocka_unit_test_setup_teardown(test_rank_defaults,
		    setup_default, tc_teardown),
		cmocka_unit_test_setup_teardown(test_rank_memory,
		    setup_memory, tc_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
