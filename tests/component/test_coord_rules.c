/*
 * A job's rules, through fake agents reporting progress to the real
 * coordinator: a rule fires on a straggler and its window is pushed to the
 * agents serving the ranks; the interval between firings and the hourly cap
 * hold; bad rules are refused with the field at fault and change nothing;
 * rules, thresholds and the firings of the hour survive a restart.
 */

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
#include "test_coord_util.h"

#define CONFIG		DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG
#define HB_MS		"200"
#define NODE_RANKS	4
#define NAGENTS		2
#define WAIT_MS		8000

/* Starts a coordinator with fast heartbeats and a lag threshold of 10. */
static int
setup(void **state)
{
	const char	*more[] = { "--straggler-lag", "10", NULL };

	return (tc_setup_agents_args(state, HB_MS, more));
}

/* Connects the fake agents as nodes rl-0.., each subscribed to job. */
static void
agents_up(struct tc_coord *tc, struct fakeagent *fa, const char *job)
{
	char	 node[32];
	int	 i;

	for (i = 0; i < NAGENTS; i++) {
		snprintf(node, sizeof(node), "rl-%d", i);
		assert_int_equal(fa_handshake(&fa[i], tc->agent_port, node,
		    "agent-secret"), 0);
		assert_int_equal(fa_subscribe(&fa[i], job, 0), 0);
	}
}

/* Closes the fake agents agents_up() connected. */
static void
agents_down(struct fakeagent *fa)
{
	int	 i;

	for (i = 0; i < NAGENTS; i++)
		fa_close(&fa[i]);
}

/* Reports every rank at step, but rank 7 (node rl-1) at slow. */
static void
report(struct fakeagent *fa, const char *job, int64_t step, int64_t slow)
{
	int64_t	 steps[NODE_RANKS];
	int	 i, k;

	for (i = 0; i < NAGENTS; i++) {
		for (k = 0; k < NODE_RANKS; k++)
			steps[k] = i * NODE_RANKS + k == 7 ? slow : step;
		assert_int_equal(fa_progress_steps(&fa[i], job, i * NODE_RANKS,
		    steps, NODE_RANKS), 0);
	}
}

/* Sends a heartbeat from every agent (they are lost after 3 intervals). */
static void
beat(struct fakeagent *fa)
{
	int	 i;

	for (i = 0; i < NAGENTS; i++)
		assert_int_equal(fa_heartbeat(&fa[i]), 0);
}

/*
 * Polls GET path until the number of elements of the array at key is want
 * (int_path NULL), or the integer at int_path is, the agents heartbeating,
 * for ms at most.  Returns the answer (caller frees), or NULL if it never
 * was.
 */
static json_t *
wait_json(struct tc_coord *tc, struct fakeagent *fa, const char *path,
    const char *key, const char *int_path, long long want, int ms)
{
	long long	 deadline = tc_now_ms() + ms;
	struct tc_reply	 r;
	json_t		*j;
	long long	 got;

	while (tc_now_ms() < deadline) {
		beat(fa);
		assert_int_equal(tc_http(tc->http_port, "GET", path, NULL,
		    NULL, &r), 0);
		got = int_path != NULL ? tc_int(r.json, int_path) :
		    (long long)json_array_size(json_object_get(r.json, key));
		if (got == want) {
			j = json_incref(r.json);
			tc_reply_free(&r);
			return (j);
		}
		tc_reply_free(&r);
		usleep(50000);
	}
	return (NULL);
}

/* wait_json() on the size of an array. */
static json_t *
wait_count(struct tc_coord *tc, struct fakeagent *fa, const char *path,
    const char *key, size_t want, int ms)
{
	return (wait_json(tc, fa, path, key, NULL, (long long)want, ms));
}

/* Reports the steps, then waits until the coordinator judged all 8 ranks
 * (two connections: their reports may come in either order). */
static void
report_judged(struct tc_coord *tc, struct fakeagent *fa, const char *job,
    int64_t step, int64_t slow)
{
	char	 path[128];
	json_t	*j;

	report(fa, job, step, slow);
	snprintf(path, sizeof(path), "/v1/jobs/%s/stragglers", job);
	j = wait_json(tc, fa, path, NULL, "ranks_judged", NAGENTS * NODE_RANKS,
	    WAIT_MS);
	if (j == NULL)
		fail_msg("%s: never all ranks judged", job);
	json_decref(j);
}

/* Waits for a pushed schedule of n windows, heartbeating; returns it
 * (caller fa_free()s), failing if none came. */
static fa_msg *
wait_config(struct fakeagent *fa, size_t n)
{
	long long	 deadline = tc_now_ms() + WAIT_MS;
	fa_msg		*m;

	while (tc_now_ms() < deadline) {
		assert_int_equal(fa_heartbeat(fa), 0);
		if ((m = fa_recv_type(fa, CONFIG, 200)) == NULL)
			continue;
		if (m->config->n_windows == n)
			return (m);
		fa_free(m);
	}
	fail_msg("no schedule of %zu windows pushed", n);
	return (NULL);
}

/* A pushed window's ranks and steps. */
struct pushed {
	char	 ranks[64];
	int64_t	 start, stop;
};

/* Waits for a pushed schedule of n windows; returns the last window's. */
static struct pushed
wait_push(struct fakeagent *fa, size_t n)
{
	fa_msg		*m = wait_config(fa, n);
	struct pushed	 p;

	snprintf(p.ranks, sizeof(p.ranks), "%s",
	    m->config->windows[n - 1]->ranks);
	p.start = m->config->windows[n - 1]->start_step;
	p.stop = m->config->windows[n - 1]->stop_step;
	fa_free(m);
	return (p);
}

/* Posts a window of job over [start, start + 4]. */
static void
post_window(struct tc_coord *tc, const char *job, int64_t start)
{
	char	 path[128], body[96];

	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", job);
	snprintf(body, sizeof(body), "{\"start_step\": %lld, \"stop_step\": "
	    "%lld}", (long long)start, (long long)start + 4);
	tc_call(tc, "POST", path, body, 201);
}

/* Waits for a pushed schedule of n windows; returns the last's no_collect. */
static int
wait_push_collect(struct fakeagent *fa, size_t n)
{
	fa_msg	*m = wait_config(fa, n);
	int	 off = m->config->windows[n - 1]->no_collect;

	fa_free(m);
	return (off);
}

/*
 * A rule (2 peers, 5 steps, roundup 100, every 2 s, twice an hour) fires on
 * rank 7, 11 steps behind: a window [200, 204] on ranks 0,1,7 reaches the
 * node serving rank 7.  The straggler stays: a second window comes no
 * sooner than 2 s later, and no third within the hour.
 */
static void
test_fire_and_caps(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[NAGENTS];
	struct tc_reply	 r;
	json_t		*j;
	struct pushed	 p;
	long long	 t1, t2;

	agents_up(tc, fa, "fire-j");
	report_judged(tc, fa, "fire-j", 100, 89);
	r = tc_req(tc, "POST", "/v1/jobs/fire-j/rules", "{\"when\": "
	    "\"straggler\", \"peers\": 2, \"steps\": 5, \"roundup\": 100, "
	    "\"min_interval_s\": 2, \"max_per_hour\": 2}", 201);
	assert_int_equal(tc_int(r.json, "id"), 1);
	assert_int_equal(tc_int(r.json, "fired_total"), 0);
	tc_reply_free(&r);

	p = wait_push(&fa[1], 1);
	t1 = tc_now_ms();
	assert_string_equal(p.ranks, "0,1,7");
	assert_int_equal(p.start, 200);
	assert_int_equal(p.stop, 204);
	/* The other node has it too (ranks 0 and 1 are its). */
	assert_string_equal(wait_push(&fa[0], 1).ranks, "0,1,7");

	/* Past the first window, still straggling. */
	report(fa, "fire-j", 300, 250);
	j = wait_count(tc, fa, "/v1/jobs/fire-j", "windows", 2, WAIT_MS);
	t2 = tc_now_ms();
	assert_non_null(j);
	assert_true(t2 - t1 >= 1500);
	assert_int_equal(tc_int(j, "windows.1.start_step"), 400);
	assert_string_equal(tc_str(j, "windows.1.ranks"), "0,1,7");
	json_decref(j);

	/* The cap: two an hour, whatever the straggler does. */
	report(fa, "fire-j", 500, 450);
	assert_null(wait_count(tc, fa, "/v1/jobs/fire-j", "windows", 3,
	    5000));
	r = tc_req(tc, "GET", "/v1/jobs/fire-j/rules", NULL, 200);
	assert_int_equal(tc_int(r.json, "rules.0.fired_total"), 2);
	assert_int_equal(json_array_size(json_object_get(json_array_get(
	    json_object_get(r.json, "rules"), 0), "fired")), 2);
	assert_int_equal(tc_int(r.json, "rules.0.last_window"), 2);
	tc_reply_free(&r);
	assert_int_equal(tc_metric(tc,
	    "dynprof_rule_firings_total{job=\"fire-j\"}"), 2);
	agents_down(fa);
}

/*
 * A rule that says "collect": false makes windows that say so: shown in the
 * job's summary and the rule, and pushed to the agents (Window.no_collect),
 * so that their --trace-store leaves the traces where they are.
 */
static void
test_fire_no_collect(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[NAGENTS];
	struct tc_reply	 r;
	json_t		*j;

	agents_up(tc, fa, "nocol-j");
	report_judged(tc, fa, "nocol-j", 100, 89);
	tc_call(tc, "POST", "/v1/jobs/nocol-j/rules", "{\"when\": "
	    "\"straggler\", \"steps\": 5, \"roundup\": 100, \"collect\": "
	    "false}", 201);
	assert_int_equal(wait_push_collect(&fa[1], 1), 1);
	j = wait_count(tc, fa, "/v1/jobs/nocol-j", "windows", 1, WAIT_MS);
	assert_non_null(j);
	assert_true(json_is_false(json_object_get(json_array_get(
	    json_object_get(j, "windows"), 0), "collect")));
	json_decref(j);
	r = tc_req(tc, "GET", "/v1/jobs/nocol-j/rules", NULL, 200);
	assert_true(json_is_false(json_object_get(json_array_get(
	    json_object_get(r.json, "rules"), 0), "collect")));
	tc_reply_free(&r);
	/* Not a boolean: refused. */
	tc_call(tc, "POST", "/v1/jobs/nocol-j/rules", "{\"when\": "
	    "\"straggler\", \"steps\": 5, \"collect\": 0}", 400);
	agents_down(fa);
}

/* Kills the coordinator and starts it again on its store. */
static void
restart(struct tc_coord *tc)
{
	char		 tok[512];
	const char	*extra[] = { "-q", "--agent-token-file", tok,
	    "--heartbeat-ms", HB_MS, "--straggler-lag", "10", NULL };

	assert_int_equal(tc_stop(tc, SIGKILL), 128 + SIGKILL);
	snprintf(tok, sizeof(tok), "%s/agent.token", tc->dir);
	assert_int_equal(tc_start(tc, extra), 0);
}

/*
 * PUT /v1/jobs/J/collect {"collect": false}: the job's windows made since
 * say "collect": false (pushed so, shown so), until it says true again; the
 * setting is in the job's rules document and survives a restart.
 */
static void
test_job_no_collect(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[NAGENTS];
	struct tc_reply	 r;

	agents_up(tc, fa, "jc-j");
	report_judged(tc, fa, "jc-j", 100, 100);
	r = tc_req(tc, "PUT", "/v1/jobs/jc-j/collect", "{\"collect\": "
	    "false}", 200);
	assert_true(json_is_false(json_object_get(r.json, "collect")));
	tc_reply_free(&r);
	post_window(tc, "jc-j", 500);
	assert_int_equal(wait_push_collect(&fa[0], 1), 1);
	r = tc_req(tc, "GET", "/v1/jobs/jc-j", NULL, 200);
	assert_true(json_is_false(json_object_get(json_array_get(
	    json_object_get(r.json, "windows"), 0), "collect")));
	tc_reply_free(&r);
	/* Refused: not a boolean, another field, no such job. */
	tc_call(tc, "PUT", "/v1/jobs/jc-j/collect", "{\"collect\": 0}",
	    400);
	tc_call(tc, "PUT", "/v1/jobs/jc-j/collect", "{\"collect\": true, "
	    "\"x\": 1}", 400);
	tc_call(tc, "PUT", "/v1/jobs/nojob-j/collect", "{\"collect\": "
	    "false}", 404);
	agents_down(fa);

	/* Kept across a restart: a new window says so still. */
	restart(tc);
	r = tc_req(tc, "GET", "/v1/jobs/jc-j/rules", NULL, 200);
	assert_true(json_is_false(json_object_get(r.json, "collect")));
	tc_reply_free(&r);
	agents_up(tc, fa, "jc-j");
	post_window(tc, "jc-j", 600);
	assert_int_equal(wait_push_collect(&fa[0], 2), 1);
	/* A window from the job's config says so too. */
	tc_call(tc, "PUT", "/v1/jobs/jc-j/config", "{\"start_step\": 650, "
	    "\"stop_step\": 654}", 200);
	assert_int_equal(wait_push_collect(&fa[0], 3), 1);
	/* Collected again from now on. */
	tc_call(tc, "PUT", "/v1/jobs/jc-j/collect", "{\"collect\": "
	    "true}", 200);
	post_window(tc, "jc-j", 700);
	assert_int_equal(wait_push_collect(&fa[0], 4), 0);
	agents_down(fa);
}

/* Waits for a pushed schedule of n windows; returns the last's trace_store
 * (caller frees). */
static char *
wait_push_store(struct fakeagent *fa, size_t n)
{
	fa_msg	*m = wait_config(fa, n);
	char	*store = strdup(m->config->windows[n - 1]->trace_store);

	fa_free(m);
	assert_non_null(store);
	return (store);
}

/* Asserts the last window of the job's summary says trace_store store
 * (NULL: none). */
static void
assert_window_store(struct tc_coord *tc, const char *job, const char *store)
{
	struct tc_reply	 r;
	json_t		*ws, *v;
	char		 path[64];

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = tc_req(tc, "GET", path, NULL, 200);
	ws = json_object_get(r.json, "windows");
	v = json_object_get(json_array_get(ws, json_array_size(ws) - 1),
	    "trace_store");
	if (store == NULL)
		assert_null(v);
	else
		assert_string_equal(json_string_value(v), store);
	tc_reply_free(&r);
}

/*
 * PUT /v1/jobs/J/trace-store {"store": ...}: the job's windows made since
 * carry the store (pushed so, shown so), until it says null; a store that
 * is not an s3:// URL or a clean absolute directory is refused saying why;
 * the setting and the windows' stores survive a restart.
 */
static void
test_job_trace_store(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[NAGENTS];
	struct tc_reply	 r;
	char		*s, big[300], body[400];
	static const struct {
		const char	*body;
		const char	*words;
	} bad[] = {
		{ "{\"store\": \"relative/dir\"}", "s3://bucket/prefix or an "
		    "absolute directory" },
		{ "{\"store\": \"http://b/p\"}", "s3://bucket/prefix or an "
		    "absolute directory" },
		{ "{\"store\": \"/srv/traces/../etc\"}", "\"..\"" },
		{ "{\"store\": \"/srv/..\"}", "\"..\"" },
		{ "{\"store\": \"/srv//x\"}", "empty part" },
		{ "{\"store\": \"/srv/x/\"}", "empty part" },
		{ "{\"store\": \"/\"}", "empty part" },
		{ "{\"store\": \"/srv/a b\"}", "may hold only" },
		{ "{\"store\": \"/srv/a\\nb\"}", "may hold only" },
		{ "{\"store\": \"s3://B/p\"}", "bucket" },
		{ "{\"store\": \"s3://ab/p\"}", "bucket" },
		{ "{\"store\": \"s3://-ab/p\"}", "bucket" },
		{ "{\"store\": \"s3://bucket/a/../b\"}", "\"..\"" },
		{ "{\"store\": \"s3://bucket/\"}", "empty part" },
		{ "{\"store\": \"\"}", "1 to 255 bytes" },
		{ "{\"store\": 3}", "a string or null" },
		{ "{\"store\": \"/x\", \"y\": 1}", "unknown field y" },
	};
	size_t		 i;

	agents_up(tc, fa, "ts-j");
	report_judged(tc, fa, "ts-j", 100, 100);
	r = tc_req(tc, "PUT", "/v1/jobs/ts-j/trace-store", "{\"store\": "
	    "\"/srv/traces/ts-j\"}", 200);
	assert_string_equal(tc_str(r.json, "store"), "/srv/traces/ts-j");
	tc_reply_free(&r);
	post_window(tc, "ts-j", 500);
	s = wait_push_store(&fa[0], 1);
	assert_string_equal(s, "/srv/traces/ts-j");
	free(s);
	assert_window_store(tc, "ts-j", "/srv/traces/ts-j");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = tc_req(tc, "PUT", "/v1/jobs/ts-j/trace-store", bad[i].body,
		    400);
		if (strstr(tc_str(r.json, "error"), bad[i].words) == NULL)
			fail_msg("%s: error \"%s\" lacks \"%s\"", bad[i].body,
			    tc_str(r.json, "error"), bad[i].words);
		tc_reply_free(&r);
	}
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	snprintf(body, sizeof(body), "{\"store\": \"%s\"}", big);
	r = tc_req(tc, "PUT", "/v1/jobs/ts-j/trace-store", body, 400);
	assert_non_null(strstr(tc_str(r.json, "error"), "1 to 255 bytes"));
	tc_reply_free(&r);
	tc_call(tc, "PUT", "/v1/jobs/nojob-j/trace-store", "{\"store\": "
	    "\"/x\"}", 404);
	/* Refused ones changed nothing. */
	r = tc_req(tc, "GET", "/v1/jobs/ts-j/rules", NULL, 200);
	assert_string_equal(tc_str(r.json, "trace_store"), "/srv/traces/ts-j");
	tc_reply_free(&r);
	tc_call(tc, "PUT", "/v1/jobs/ts-j/trace-store", "{\"store\": "
	    "\"s3://dp-bucket.1/jobs/ts-j\"}", 200);
	agents_down(fa);

	/* Kept across a restart, the window's too. */
	restart(tc);
	r = tc_req(tc, "GET", "/v1/jobs/ts-j/rules", NULL, 200);
	assert_string_equal(tc_str(r.json, "trace_store"),
	    "s3://dp-bucket.1/jobs/ts-j");
	tc_reply_free(&r);
	assert_window_store(tc, "ts-j", "/srv/traces/ts-j");
	agents_up(tc, fa, "ts-j");
	post_window(tc, "ts-j", 600);
	s = wait_push_store(&fa[0], 2);
	assert_string_equal(s, "s3://dp-bucket.1/jobs/ts-j");
	free(s);
	/* A window from the job's config carries it too. */
	tc_call(tc, "PUT", "/v1/jobs/ts-j/config", "{\"start_step\": 650, "
	    "\"stop_step\": 654}", 200);
	s = wait_push_store(&fa[0], 3);
	assert_string_equal(s, "s3://dp-bucket.1/jobs/ts-j");
	free(s);
	/* The agents' own store from now on. */
	r = tc_req(tc, "PUT", "/v1/jobs/ts-j/trace-store", "{\"store\": "
	    "null}", 200);
	assert_true(json_is_null(json_object_get(r.json, "store")));
	tc_reply_free(&r);
	post_window(tc, "ts-j", 700);
	s = wait_push_store(&fa[0], 4);
	assert_string_equal(s, "");
	free(s);
	assert_window_store(tc, "ts-j", NULL);
	r = tc_req(tc, "GET", "/v1/jobs/ts-j/rules", NULL, 200);
	assert_true(json_is_null(json_object_get(r.json, "trace_store")));
	tc_reply_free(&r);
	agents_down(fa);
}

/* No rule, no window: a straggler alone changes no schedule. */
static void
test_off_by_default(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[NAGENTS];
	json_t		*j;

	agents_up(tc, fa, "off-j");
	report(fa, "off-j", 100, 10);
	j = wait_count(tc, fa, "/v1/jobs/off-j/stragglers", "worst_ranks", 1,
	    WAIT_MS);
	assert_non_null(j);
	json_decref(j);
	assert_null(wait_count(tc, fa, "/v1/jobs/off-j", "windows", 1, 1500));
	agents_down(fa);
}

/* Each bad rule is refused with a 4xx naming the field, and changes
 * nothing. */
static void
test_refused(void **state)
{
	struct tc_coord	*tc = *state;
	struct tc_reply	 r;
	static const struct {
		const char	*body;
		int		 code;
		const char	*field;		/* NULL: none */
		const char	*words;
	} bad[] = {
		{ "{\"when\": \"straggler\", \"steps\": 5", 400, NULL,
		    "malformed JSON" },
		{ "[1]", 400, NULL, "must be a JSON object" },
		{ "{\"steps\": 5}", 400, "when", "straggler" },
		{ "{\"when\": \"slow\", \"steps\": 5}", 400, "when",
		    "straggler" },
		{ "{\"when\": \"straggler\"}", 400, "steps", "required" },
		{ "{\"when\": \"straggler\", \"steps\": 0}", 400, "steps",
		    "from 1" },
		{ "{\"when\": \"straggler\", \"steps\": \"5\"}", 400, "steps",
		    "integer" },
		{ "{\"when\": \"straggler\", \"steps\": 5, \"peers\": 17}",
		    400, "peers", "from 0 to 16" },
		{ "{\"when\": \"straggler\", \"steps\": 5, \"roundup\": 0}",
		    400, "roundup", "from 1" },
		{ "{\"when\": \"straggler\", \"steps\": 5, "
		    "\"min_interval_s\": 0}", 400, "min_interval_s", "from 1" },
		{ "{\"when\": \"straggler\", \"steps\": 5, "
		    "\"max_per_hour\": 61}", 400, "max_per_hour", "to 60" },
		{ "{\"when\": \"straggler\", \"steps\": 5, \"every\": 3}", 400,
		    "every", "unknown field" },
		{ "{\"when\": \"straggler\", \"steps\": 5, \"fired_total\": 3}",
		    400, "fired_total", "unknown field" },
		{ "{\"when\": \"straggler\", \"steps\": 5, \"options\": 3}",
		    400, "options", "object" },
		{ "{\"when\": \"straggler\", \"steps\": 5, \"options\": "
		    "{\"profiler_level\": 9}}", 400, "options.profiler_level",
		    "profiler_level" },
		{ "{\"when\": \"straggler\", \"steps\": 5, \"output_subdir\": "
		    "\"../x\"}", 400, "output_subdir", ".." },
	};
	long long	 gen;
	size_t		 i;
	char		 path[64];

	/* A job to hold the rules. */
	r = tc_req(tc, "POST", "/v1/jobs/bad-j/windows",
	    "{\"start_step\": 10, \"steps\": 1}", 201);
	gen = tc_int(r.json, "generation");
	tc_reply_free(&r);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = tc_req(tc, "POST", "/v1/jobs/bad-j/rules", bad[i].body,
		    bad[i].code);
		if (strstr(tc_str(r.json, "error"), bad[i].words) == NULL)
			fail_msg("%s: error \"%s\" lacks \"%s\"", bad[i].body,
			    tc_str(r.json, "error"), bad[i].words);
		if (bad[i].field != NULL)
			assert_string_equal(tc_str(r.json, "field"),
			    bad[i].field);
		tc_reply_free(&r);
	}
	r = tc_req(tc, "PUT", "/v1/jobs/bad-j/stragglers",
	    "{\"lag_steps\": 0}", 400);
	assert_string_equal(tc_str(r.json, "field"), "lag_steps");
	tc_reply_free(&r);
	tc_call(tc, "PUT", "/v1/jobs/bad-j/stragglers",
	    "{\"rate_drop_percent\": 101}", 400);
	tc_call(tc, "PUT", "/v1/jobs/bad-j/stragglers", "{\"lag\": 3}",
	    400);
	r = tc_req(tc, "DELETE", "/v1/jobs/bad-j/rules/1", NULL, 404);
	assert_string_equal(tc_str(r.json, "field"), "id");
	tc_reply_free(&r);
	tc_call(tc, "DELETE", "/v1/jobs/bad-j/rules/x", NULL, 400);
	tc_call(tc, "PATCH", "/v1/jobs/bad-j/rules", "{}", 405);
	tc_call(tc, "GET", "/v1/jobs/no-such-j/rules", NULL, 404);

	/* Nothing changed: no rule, the same generation. */
	r = tc_req(tc, "GET", "/v1/jobs/bad-j/rules", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "rules")), 0);
	assert_true(json_is_null(json_object_get(r.json, "lag_steps")));
	tc_reply_free(&r);
	r = tc_req(tc, "GET", "/v1/jobs/bad-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "generation"), gen);
	tc_reply_free(&r);

	/* The cap on rules: the ninth is refused. */
	for (i = 0; i < 8; i++) {
		tc_call(tc, "POST", "/v1/jobs/bad-j/rules",
		    "{\"when\": \"straggler\", \"steps\": 5}", 201);
	}
	tc_call(tc, "POST", "/v1/jobs/bad-j/rules",
	    "{\"when\": \"straggler\", \"steps\": 5}", 409);
	snprintf(path, sizeof(path), "/v1/jobs/bad-j/rules/%d", 3);
	tc_call(tc, "DELETE", path, NULL, 200);
	r = tc_req(tc, "GET", "/v1/jobs/bad-j/rules", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "rules")), 7);
	assert_int_equal(tc_int(r.json, "rules.2.id"), 4);
	tc_reply_free(&r);
}

/*
 * A rule, the job's thresholds and the rule's one firing of the hour
 * survive a restart: with max_per_hour 1 the restarted coordinator does not
 * fire again on the same straggler.
 */
static void
test_restart(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent fa[NAGENTS];
	struct tc_reply	 r;
	json_t		*j;
	struct pushed	 p;

	agents_up(tc, fa, "rs-j");
	report_judged(tc, fa, "rs-j", 100, 50);
	r = tc_req(tc, "PUT", "/v1/jobs/rs-j/stragglers",
	    "{\"lag_steps\": 20}", 200);
	assert_int_equal(tc_int(r.json, "lag_steps"), 20);
	tc_reply_free(&r);
	/* The job's defaults, under the rule's options: a typed one and a
	 * framework one of each. */
	tc_call(tc, "PUT", "/v1/jobs/rs-j/config", "{\"with_stack\": "
	    "true, \"profiler_level\": 2, \"fw_a\": 1}", 200);
	tc_call(tc, "POST", "/v1/jobs/rs-j/rules", "{\"when\": "
	    "\"straggler\", \"peers\": 1, \"steps\": 3, \"roundup\": 50, "
	    "\"min_interval_s\": 1, \"max_per_hour\": 1, \"options\": "
	    "{\"profiler_level\": 1, \"fw_b\": 2}}", 201);
	p = wait_push(&fa[1], 1);
	assert_string_equal(p.ranks, "0,7");
	assert_int_equal(p.start, 150);
	r = tc_req(tc, "GET", "/v1/jobs/rs-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "windows.0.options.profiler_level"), 1);
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_array_get(json_object_get(r.json, "windows"), 0), "options"),
	    "with_stack")));
	assert_int_equal(tc_int(r.json, "windows.0.options.fw_a"), 1);
	assert_int_equal(tc_int(r.json, "windows.0.options.fw_b"), 2);
	tc_reply_free(&r);
	agents_down(fa);

	restart(tc);
	r = tc_req(tc, "GET", "/v1/jobs/rs-j/rules", NULL, 200);
	assert_int_equal(tc_int(r.json, "lag_steps"), 20);
	assert_int_equal(tc_int(r.json, "rules.0.id"), 1);
	assert_int_equal(tc_int(r.json, "rules.0.peers"), 1);
	assert_int_equal(tc_int(r.json, "rules.0.options.profiler_level"), 1);
	assert_int_equal(tc_int(r.json, "rules.0.fired_total"), 1);
	assert_int_equal(tc_int(r.json, "rules.0.last_window"), 1);
	assert_string_equal(tc_str(r.json, "rules.0.last_ranks"), "0,7");
	assert_int_equal(json_array_size(json_object_get(json_array_get(
	    json_object_get(r.json, "rules"), 0), "fired")), 1);
	tc_reply_free(&r);

	/* Straggling again, past the window: the hour's one firing is used. */
	agents_up(tc, fa, "rs-j");
	report(fa, "rs-j", 300, 250);
	j = wait_count(tc, fa, "/v1/jobs/rs-j/stragglers", "worst_ranks", 1,
	    WAIT_MS);
	assert_non_null(j);
	assert_int_equal(tc_int(j, "lag_steps"), 20);
	json_decref(j);
	assert_null(wait_count(tc, fa, "/v1/jobs/rs-j", "windows", 2, 2500));
	assert_int_equal(tc_metric(tc,
	    "dynprof_rule_refused_total{job=\"rs-j\"}"), 0);
	agents_down(fa);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fire_and_caps, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_fire_no_collect, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_job_trace_store, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_job_no_collect, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_off_by_default, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_restart, setup,
		    tc_teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
