/*
 * A job's view through the real coordinator and fake agents: the summary of
 * GET /v1/jobs/{job} (counts, steps, nodes, each window's ranks, a size that
 * does not grow with the ranks), and GET /v1/jobs/{job}/ranks (pages in rank
 * order, filters, ranks coming and changing between pages, a long page
 * streamed, bad parameters), and a selection past what a window's rank
 * list holds.
 */

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
#include "test_coord_util.h"

#define K_STARTED	DYNPROF__V1__EVENT_KIND__EVENT_STARTED
#define K_STOPPED	DYNPROF__V1__EVENT_KIND__EVENT_STOPPED
#define K_SKIPPED	DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED
#define K_FAILED	DYNPROF__V1__EVENT_KIND__EVENT_FAILED
#define K_DETACHED	DYNPROF__V1__EVENT_KIND__EVENT_DETACHED

/* Ranks one fake agent reports in the large cases. */
#define VIEW_MANY	2000

/*
 * Starts a coordinator whose agents heartbeat every second: a fake agent
 * sends only when the test does, and a test slowed by a loaded machine (or a
 * sanitizer) must not have it closed as silent (3 intervals) between two of
 * its steps.
 */
static int
setup_view(void **state)
{
	return (tc_setup_agents_hb(state, "1000"));
}

/* Handshakes fa as node and subscribes it to job. */
static void
agent(struct tc_coord *tc, struct fakeagent *fa, const char *node,
    const char *job)
{
	assert_int_equal(fa_join(fa, tc->agent_port, node, "agent-secret",
	    job), 0);
}

/* Reports ranks first..first+n-1 at steps lo (the first) and hi. */
static void
progress(struct fakeagent *fa, const char *job, int first, int n, int64_t lo,
    int64_t hi)
{
	int	 i, k;

	for (i = 0; i < n; i += 64) {
		k = n - i < 64 ? n - i : 64;
		assert_int_equal(fa_progress(fa, job, first + i, lo, hi, k), 0);
	}
}

/* Waits until the job's summary counts total ranks. */
static void
wait_total(struct tc_coord *tc, const char *job, long long total)
{
	char	 path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	tc_wait_int(tc, path, "rank_counts.total", total);
}

/*
 * Checks the outcome of window id of each rank GET .../ranks?outcome=id
 * lists (the ranks the window counts, in rank order), want: the outcomes
 * separated by commas.
 */
static void
outcomes_check(struct tc_coord *tc, const char *job, int id, const char *want)
{
	struct tc_reply	 r;
	json_t		*rank;
	char		 path[128], got[256];
	size_t		 i, off = 0;

	snprintf(path, sizeof(path), "/v1/jobs/%s/ranks?outcome=%d", job, id);
	r = tc_req(tc, "GET", path, NULL, 200);
	got[0] = '\0';
	json_array_foreach(json_object_get(r.json, "ranks"), i, rank) {
		assert_int_equal(tc_int(rank, "rank"), (long long)i);
		off += (size_t)snprintf(got + off, sizeof(got) - off, "%s%s",
		    i > 0 ? "," : "", tc_str(rank, "outcome"));
		assert_true(off < sizeof(got));
	}
	assert_string_equal(got, want);
	tc_reply_free(&r);
}

/*
 * The size of a summary without its stragglers section, which a tick fills in
 * once ranks report (bounded by itself: the worst ranks are a few).
 */
static size_t
summary_size(json_t *summary)
{
	json_t	*copy, *st;
	char	*text;
	size_t	 n;

	assert_non_null(copy = json_deep_copy(summary));
	if ((st = json_object_get(copy, "stragglers")) != NULL) {
		assert_non_null(text = json_dumps(st, JSON_COMPACT));
		assert_true(strlen(text) < 1024);
		free(text);
		json_object_del(copy, "stragglers");
	}
	assert_non_null(text = json_dumps(copy, JSON_COMPACT));
	n = strlen(text);
	free(text);
	json_decref(copy);
	return (n);
}

static void
test_summary(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a, b;
	struct tc_reply	 r;
	json_t		*w;
	size_t		 small, large;
	char		*small_body;
	int		 i;

	agent(tc, &a, "view-a", "sum");
	agent(tc, &b, "view-b", "sum");
	tc_call(tc, "POST", "/v1/jobs/sum/windows",
	    "{\"start_step\": 10, \"stop_step\": 12, \"ranks\": \"0-7\"}", 201);
	/* Ranks 0-4 on view-a at steps 5 (rank 0) and 9, 5-9 on view-b at
	 * steps 7 (rank 5) and 11. */
	progress(&a, "sum", 0, 5, 5, 9);
	progress(&b, "sum", 5, 5, 7, 11);
	wait_total(tc, "sum", 10);
	for (i = 0; i < 4; i++)
		tc_event(&a, K_STARTED, "sum", i, 1, 10);
	for (i = 0; i < 3; i++)
		tc_event(&a, K_STOPPED, "sum", i, 1, 12);
	tc_event(&a, K_FAILED, "sum", 4, 1, 10);
	tc_event(&b, K_SKIPPED, "sum", 5, 1, 11);
	tc_event(&b, K_DETACHED, "sum", 6, 0, 11);

	r = tc_req(tc, "GET", "/v1/jobs/sum", NULL, 200);
	/* The fields of before stay; per-rank detail moved away. */
	assert_string_equal(tc_str(r.json, "job"), "sum");
	assert_true(tc_int(r.json, "generation") > 0);
	assert_int_equal(tc_int(r.json, "progress.max_step"), 11);
	assert_int_equal(tc_int(r.json, "progress.min_step"), 5);
	assert_null(json_object_get(r.json, "ranks"));
	assert_null(json_object_get(r.json, "nodes"));
	tc_assert_ints(r.json, "rank_counts", "total=10 profiling=1 done=3 "
	    "failed=1 skipped=1 gone=1 attached=3 unknown=0");
	/* Steps of the live ranks (rank 6 is gone), events moving them on:
	 * 12 12 12 10 10 11 11 11 11. */
	assert_int_equal(tc_int(r.json, "steps.ranks"), 9);
	assert_int_equal(tc_int(r.json, "steps.min"), 10);
	assert_int_equal(tc_int(r.json, "steps.median"), 11);
	assert_int_equal(tc_int(r.json, "steps.max"), 12);
	tc_assert_ints(r.json, "node_counts", "total=2 connected=2 lost=0 "
	    "applied_behind=2");
	w = tc_window(r.json, 1);
	assert_non_null(w);
	assert_string_equal(tc_str(w, "state"), "running");
	/* 0-2 stopped, 4 failed, 5 skipped, 6 gone: 3 and 7 still to go. */
	tc_assert_ints(w, "rank_counts", "targeted=8 started=4 stopped=3 "
	    "failed=1 skipped=1 gone=1 missed=0 finished=6");
	tc_reply_free(&r);
	outcomes_check(tc, "sum", 1, "stopped,stopped,stopped,started,failed,"
	    "skipped,gone,pending");

	/* Cancelled: rank 7 never acted on it, missed; 3 runs it still. */
	tc_call(tc, "DELETE", "/v1/jobs/sum/windows/1", NULL, 200);
	r = tc_req(tc, "GET", "/v1/jobs/sum", NULL, 200);
	w = tc_window(r.json, 1);
	assert_string_equal(tc_str(w, "state"), "cancelled");
	assert_int_equal(tc_int(w, "rank_counts.missed"), 1);
	assert_int_equal(tc_int(w, "rank_counts.finished"), 7);
	outcomes_check(tc, "sum", 1, "stopped,stopped,stopped,started,failed,"
	    "skipped,gone,missed");
	small = summary_size(r.json);
	assert_non_null(small_body = strdup(r.body));
	tc_reply_free(&r);

	/* A job of many more ranks has a summary of the same size. */
	progress(&b, "sum", 10000, VIEW_MANY, 7, 11);
	wait_total(tc, "sum", 10 + VIEW_MANY);
	r = tc_req(tc, "GET", "/v1/jobs/sum", NULL, 200);
	large = summary_size(r.json);
	if (large >= small + 32)
		print_error("summary of %zu bytes, then %zu:\n%s\n%s\n", small,
		    large, small_body, r.body);
	assert_true(large < small + 32);
	free(small_body);
	tc_reply_free(&r);

	/* A lost node: its ranks show unknown. */
	fa_close(&a);
	tc_wait_int(tc, "/v1/jobs/sum", "rank_counts.unknown", 5);
	r = tc_req(tc, "GET", "/v1/jobs/sum", NULL, 200);
	tc_assert_ints(r.json, "node_counts", "lost=1 connected=1");
	tc_reply_free(&r);
	fa_close(&b);
	tc_call(tc, "GET", "/v1/jobs/nobody", NULL, 404);
}

/*
 * Reads every page of path (with its query, to which after= is added),
 * checking that ranks come in increasing order and never twice; returns how
 * many, their sum in *sum.
 */
static long long
read_pages(struct tc_coord *tc, const char *path, int limit, long long *sum,
    void (*between)(void *), void *arg)
{
	struct tc_reply	 r;
	char		 url[512];
	json_t		*rk;
	long long	 after = -1, last = -1, n = 0, pages = 0, next;
	size_t		 i;

	*sum = 0;
	for (;;) {
		snprintf(url, sizeof(url), "%s%slimit=%d&after=%lld", path,
		    strchr(path, '?') != NULL ? "&" : "?", limit, after);
		r = tc_req(tc, "GET", url, NULL, 200);
		assert_non_null(r.json);
		assert_true(json_array_size(json_object_get(r.json, "ranks")) <=
		    (size_t)limit);
		json_array_foreach(json_object_get(r.json, "ranks"), i, rk) {
			assert_true(tc_int(rk, "rank") > last);
			last = tc_int(rk, "rank");
			*sum += last;
			n++;
		}
		next = json_is_null(json_object_get(r.json, "next")) ? -2 :
		    tc_int(r.json, "next");
		if (next != -2)
			assert_int_equal(next, last);
		tc_reply_free(&r);
		pages++;
		assert_true(pages < 10000);
		if (next == -2)
			break;
		after = next;
		if (between != NULL)
			between(arg);
	}
	return (n);
}

struct churn {
	struct fakeagent	*fa;
	int			 round;
};

/* Between two pages: ranks come below and above the cursor, and change. */
static void
churn(void *arg)
{
	struct churn	*ch = arg;

	if (ch->round++ > 0)
		return;
	/* 50 below every cursor, 50 past the last: only the latter show. */
	progress(ch->fa, "pg", 0, 50, 3, 3);
	progress(ch->fa, "pg", 90000, 50, 3, 3);
	tc_event(ch->fa, K_DETACHED, "pg", 20000, 0, 3);
}

static void
test_pages(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a, b;
	struct tc_reply	 r;
	struct churn	 ch;
	long long	 sum, n, want;
	int		 i;

	agent(tc, &a, "page-a", "pg");
	agent(tc, &b, "page-b", "pg");
	/* 10000-11999 on page-a, 20000-21999 on page-b. */
	progress(&a, "pg", 10000, VIEW_MANY, 1, 2);
	progress(&b, "pg", 20000, VIEW_MANY, 1, 2);
	wait_total(tc, "pg", 2 * VIEW_MANY);
	for (i = 0; i < 5; i++)
		tc_event(&b, K_FAILED, "pg", 20100 + i, 0, 2);

	/* Every rank once, in order, across pages of several sizes. */
	want = 0;
	for (i = 0; i < VIEW_MANY; i++)
		want += 10000 + i + 20000 + i;
	n = read_pages(tc, "/v1/jobs/pg/ranks", 333, &sum, NULL, NULL);
	assert_int_equal(n, 2 * VIEW_MANY);
	assert_int_equal(sum, want);
	n = read_pages(tc, "/v1/jobs/pg/ranks", 10000, &sum, NULL, NULL);
	assert_int_equal(n, 2 * VIEW_MANY);

	/* Filters. */
	n = read_pages(tc, "/v1/jobs/pg/ranks?node=page-a", 500, &sum, NULL,
	    NULL);
	assert_int_equal(n, VIEW_MANY);
	n = read_pages(tc, "/v1/jobs/pg/ranks?state=failed", 2, &sum, NULL,
	    NULL);
	assert_int_equal(n, 5);
	assert_int_equal(sum, 5 * 20100 + 10);
	n = read_pages(tc, "/v1/jobs/pg/ranks?state=failed,gone&node=page-a",
	    100, &sum, NULL, NULL);
	assert_int_equal(n, 0);
	r = tc_req(tc, "GET", "/v1/jobs/pg/ranks?state=failed&limit=5", NULL,
	    200);
	assert_true(json_is_null(json_object_get(r.json, "next")));
	assert_int_equal(tc_int(r.json, "ranks.0.rank"), 20100);
	assert_string_equal(tc_str(r.json, "ranks.0.state"), "failed");
	assert_string_equal(tc_str(r.json, "ranks.0.node"), "page-b");
	assert_string_equal(tc_str(r.json, "ranks.0.error"),
	    "start callback failed");
	assert_string_equal(tc_str(r.json, "ranks.0.events.0.kind"),
	    "failed");
	tc_reply_free(&r);
	r = tc_req(tc, "GET", "/v1/jobs/pg/ranks?limit=1", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "ranks")), 1);
	assert_int_equal(tc_int(r.json, "next"), 10000);
	assert_int_equal(tc_int(r.json, "ranks.0.step"), 1);
	assert_true(json_is_null(json_object_get(json_array_get(
	    json_object_get(r.json, "ranks"), 0), "window")));
	tc_reply_free(&r);
	/* Default limit. */
	r = tc_req(tc, "GET", "/v1/jobs/pg/ranks", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "ranks")),
	    1000);
	assert_int_equal(tc_int(r.json, "limit"), 1000);
	assert_int_equal(tc_int(r.json, "next"), 10999);
	tc_reply_free(&r);

	/* Ranks coming and changing between pages: none twice, none out of
	 * order, those past the cursor seen. */
	ch.fa = &a;
	ch.round = 0;
	n = read_pages(tc, "/v1/jobs/pg/ranks", 700, &sum, churn, &ch);
	assert_int_equal(n, 2 * VIEW_MANY + 50);
	n = read_pages(tc, "/v1/jobs/pg/ranks?state=gone", 700, &sum, NULL,
	    NULL);
	assert_int_equal(n, 1);
	assert_int_equal(sum, 20000);
	/* The ranks that came are in their place, below and above. */
	n = read_pages(tc, "/v1/jobs/pg/ranks", 333, &sum, NULL, NULL);
	assert_int_equal(n, 2 * VIEW_MANY + 100);
	assert_int_equal(sum, want + 49 * 50 / 2 + 50 * 90000 + 49 * 50 / 2);

	/* A long page goes out chunked as it is written. */
	r = tc_req(tc, "GET", "/v1/jobs/pg/ranks?limit=10000", NULL, 200);
	assert_non_null(strcasestr(r.head, "Transfer-Encoding: chunked"));
	assert_int_equal(json_array_size(json_object_get(r.json, "ranks")),
	    2 * VIEW_MANY + 100);
	tc_reply_free(&r);
	fa_close(&a);
	fa_close(&b);
}

static void
test_bad_params(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	static const struct {
		const char	*query;
		const char	*field;
	} bad[] = {
		{ "limit=0", "limit" },
		{ "limit=10001", "limit" },
		{ "limit=x", "limit" },
		{ "limit=", "limit" },
		{ "limit=5&limit=6", "limit" },
		{ "after=-2", "after" },
		{ "after=2147483648", "after" },
		{ "after=1e3", "after" },
		{ "window=0", "window" },
		{ "window=-1", "window" },
		{ "window=4294967296", "window" },
		{ "outcome=0", "outcome" },
		{ "outcome=1&outcome=1", "outcome" },
		{ "state=sleeping", "state" },
		{ "state=failed,", "state" },
		{ "state=", "state" },
		{ "node=", "node" },
		{ "colour=red", "colour" },
	};
	size_t		 i;
	char		 url[256];

	agent(tc, &a, "bad-a", "bp");
	progress(&a, "bp", 0, 3, 1, 1);
	wait_total(tc, "bp", 3);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(url, sizeof(url), "/v1/jobs/bp/ranks?%s",
		    bad[i].query);
		r = tc_req(tc, "GET", url, NULL, 400);
		if (strcmp(tc_str(r.json, "field"), bad[i].field) != 0)
			fail_msg("%s: field %s, want %s", url,
			    tc_str(r.json, "field"), bad[i].field);
		assert_true(strlen(tc_str(r.json, "error")) > 0);
		tc_reply_free(&r);
	}
	tc_call(tc, "GET", "/v1/jobs/nobody/ranks", NULL, 404);
	tc_call(tc, "POST", "/v1/jobs/bp/ranks", "{}", 405);
	tc_call(tc, "GET", "/v1/jobs/b%20p/ranks", NULL, 400);
	/* A node name percent-encoded, an empty page past the last rank. */
	r = tc_req(tc, "GET", "/v1/jobs/bp/ranks?node=bad%2Da&after=2", NULL,
	    200);
	assert_int_equal(json_array_size(json_object_get(r.json, "ranks")), 0);
	assert_true(json_is_null(json_object_get(r.json, "next")));
	tc_reply_free(&r);
	fa_close(&a);
}

/* Attaches ranks first..last of job sr, labelled tp (rank % 2). */
static void
attach_tp(struct fakeagent *fa, int first, int last)
{
	char	 labels[32];
	int	 r;

	for (r = first; r <= last; r++) {
		snprintf(labels, sizeof(labels), "tp=%d", r % 2);
		assert_int_equal(fa_attach_labels(fa, "sr", r, labels), 0);
	}
}

/*
 * A selection of more ranges than a window's rank list holds (64) is a 400
 * that says how many it is and what the list holds; 64 ranges are taken; a
 * window at 64 ranges does not grow past them when more ranks come (counted,
 * its list kept).
 */
static void
test_select_ranges(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	char		 want[512];
	size_t		 off = 0;
	int		 i;
	long long	 deadline;

	agent(tc, &a, "sel-a", "sr");
	attach_tp(&a, 0, 127);
	wait_total(tc, "sr", 128);
	for (i = 0; i < 128; i += 2)
		off += (size_t)snprintf(want + off, sizeof(want) - off, "%s%d",
		    i > 0 ? "," : "", i);
	r = tc_req(tc, "POST", "/v1/jobs/sr/windows", "{\"start_step\": 100, "
	    "\"stop_step\": 101, \"select\": \"tp=0\"}", 201);
	assert_string_equal(tc_str(r.json, "ranks"), want);
	tc_reply_free(&r);
	attach_tp(&a, 128, 199);
	wait_total(tc, "sr", 200);
	deadline = tc_now_ms() + 15000;
	while (tc_metric(tc, "dynprof_select_grow_refused_total") < 1) {
		if (tc_now_ms() > deadline)
			fail_msg("the full window was not looked at again");
		usleep(50 * 1000);
	}
	r = tc_req(tc, "GET", "/v1/jobs/sr", NULL, 200);
	assert_string_equal(tc_str(tc_window(r.json, 1), "ranks"), want);
	tc_reply_free(&r);
	r = tc_req(tc, "POST", "/v1/jobs/sr/windows", "{\"start_step\": 200, "
	    "\"stop_step\": 201, \"select\": \"tp=1\"}", 400);
	assert_string_equal(tc_str(r.json, "field"), "select");
	if (strstr(tc_str(r.json, "error"), "100 ranks in 100 ranges") == NULL ||
	    strstr(tc_str(r.json, "error"), "64 ranges") == NULL)
		fail_msg("refusal: %s", tc_str(r.json, "error"));
	tc_reply_free(&r);
	fa_close(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_summary, setup_view,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_pages, setup_view,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_bad_params, setup_view,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_select_ranges, setup_view,
		    tc_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
