/*
 * Bad values at the coordinator's edges, through the real binary and fake
 * agents speaking the real protocol: steps that would overflow, absurd steps
 * and strings that are not UTF-8 from agents, integers beyond int32 in
 * options, methods evhttp knows but no path takes, token files too long.
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

#define CONFIG	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG
#define ERR	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR

#define K_STARTED	DYNPROF__V1__EVENT_KIND__EVENT_STARTED
#define K_FAILED	DYNPROF__V1__EVENT_KIND__EVENT_FAILED

#define STEP_MAX	1000000000000000LL	/* the admin API's 1e15 */

struct fixture {
	struct tc_coord	 tc;
};

static int
setup(void **state)
{
	struct fixture	*f;
	const char	*extra[] = { "-q", NULL };

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return (-1);
	if (tc_setup_dir(&f->tc) == -1 || tc_start(&f->tc, extra) == -1) {
		tc_cleanup(&f->tc);
		free(f);
		return (-1);
	}
	*state = f;
	return (0);
}

/* Expects a 400 naming field for a POST of body to job's windows. */
static void
refused(struct tc_coord *tc, const char *job, const char *body,
    const char *field)
{
	struct tc_reply	 r;
	char		 path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", job);
	r = tc_req(tc, "POST", path, body, 400);
	assert_non_null(r.json);
	assert_string_equal(tc_str(r.json, "field"), field);
	assert_true(strlen(tc_str(r.json, "error")) > 0);
	tc_reply_free(&r);
}

/* Checks that the job has no window, generation 0, and nothing was pushed. */
static void
unchanged(struct tc_coord *tc, struct fakeagent *fa, const char *job)
{
	struct tc_reply	 r;
	char		 path[128];
	fa_msg		*m;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = tc_req(tc, "GET", path, NULL, 200);
	assert_int_equal(tc_int(r.json, "generation"), 0);
	assert_int_equal(json_array_size(json_object_get(r.json, "windows")),
	    0);
	tc_reply_free(&r);
	m = fa_recv_type(fa, CONFIG, 100);
	assert_null(m);
}

/*
 * A rank near INT64_MAX made "in_steps" resolve to a start of -9.2e18, which
 * was accepted and pushed.  Now absurd progress is ignored, and every sum of
 * steps (in_steps, roundup, steps) is checked: 400 naming the field, nothing
 * changes, nothing is pushed.
 */
static void
test_step_overflow(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a;
	struct tc_reply	 r;

	assert_int_equal(fa_handshake(&a, f->tc.agent_port, "ov-node", NULL),
	    0);
	assert_int_equal(fa_subscribe(&a, "ov-j", 0), 0);
	assert_int_equal(fa_subscribe(&a, "ov-probe", 0), 0);
	/* Nobody scheduled them: each is answered with its empty schedule
	 * (generation 0, no window); after that nothing is pushed. */
	assert_int_equal(fa_expect_empty(&a, "ov-j", 5000), 0);
	assert_int_equal(fa_expect_empty(&a, "ov-probe", 5000), 0);

	/* Absurd steps: above 2^62, or negative other than -1. */
	assert_int_equal(fa_progress(&a, "ov-j", 0, INT64_MAX - 5,
	    INT64_MAX - 5, 2), 0);
	assert_int_equal(fa_progress(&a, "ov-j", 0, -5, -5, 2), 0);
	/* Messages are taken in order: once this one shows, those were. */
	assert_int_equal(fa_progress(&a, "ov-probe", 0, 10, 10, 1), 0);
	tc_wait_int(&f->tc, "/v1/jobs/ov-probe", "progress.max_step", 10);
	r = tc_req(&f->tc, "GET", "/v1/jobs/ov-j", NULL, 200);
	assert_int_equal(tc_int(r.json, "progress.max_step"), -1);
	assert_int_equal(tc_int(r.json, "rank_counts.total"), 0);
	tc_reply_free(&r);
	r = tc_req(&f->tc, "POST", "/v1/jobs/ov-j/windows",
	    "{\"in_steps\": 10, \"steps\": 5}", 409);
	assert_string_equal(tc_str(r.json, "field"), "in_steps");
	tc_reply_free(&r);
	unchanged(&f->tc, &a, "ov-j");
	assert_true(tc_metric(&f->tc, "dynprof_progress_refused_total") >= 4);

	/* 2^62 is taken; a window from there is beyond 1e15. */
	assert_int_equal(fa_progress(&a, "ov-j", 0, 1LL << 62, 1LL << 62, 2),
	    0);
	tc_wait_int(&f->tc, "/v1/jobs/ov-j", "progress.max_step", 1LL << 62);
	refused(&f->tc, "ov-j", "{\"in_steps\": 10, \"steps\": 5}", "in_steps");
	refused(&f->tc, "ov-j", "{\"in_steps\": 1000000000, \"steps\": 1, "
	    "\"roundup\": 1000000000}", "in_steps");
	unchanged(&f->tc, &a, "ov-j");

	/* Just below 1e15: each sum that goes past it names its field. */
	assert_int_equal(fa_progress(&a, "ov-j", 0, STEP_MAX - 5, STEP_MAX - 5,
	    2), 0);
	tc_wait_int(&f->tc, "/v1/jobs/ov-j", "progress.max_step", STEP_MAX - 5);
	refused(&f->tc, "ov-j", "{\"in_steps\": 10, \"steps\": 1}", "in_steps");
	refused(&f->tc, "ov-j", "{\"in_steps\": 1, \"steps\": 10}", "steps");
	refused(&f->tc, "ov-j", "{\"in_steps\": 1, \"steps\": 1, "
	    "\"roundup\": 999999999}", "roundup");
	refused(&f->tc, "ov-j", "{\"start_step\": 999999999999990, "
	    "\"stop_step\": 999999999999999, \"roundup\": 999999999}",
	    "roundup");
	refused(&f->tc, "ov-j", "{\"start_step\": 999999999999999, "
	    "\"steps\": 3}", "steps");
	unchanged(&f->tc, &a, "ov-j");
	/* Right up to 1e15 is fine. */
	r = tc_req(&f->tc, "POST", "/v1/jobs/ov-j/windows", "{\"in_steps\": 1, "
	    "\"steps\": 5}", 201);
	assert_int_equal(tc_int(r.json, "start_step"), STEP_MAX - 4);
	assert_int_equal(tc_int(r.json, "stop_step"), STEP_MAX);
	tc_reply_free(&r);

	/* An event with an absurd step is dropped (and acknowledged). */
	assert_int_equal(fa_event(&a, 1, K_STARTED, "ov-j", 7, 1, INT64_MAX,
	    "out"), 0);
	assert_int_equal(fa_wait_ack(&a, 1, 5000), 0);
	r = tc_req(&f->tc, "GET", "/v1/jobs/ov-j/ranks", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "ranks")), 2);
	assert_int_equal(tc_int(r.json, "ranks.1.step"), STEP_MAX - 5);
	tc_reply_free(&r);
	assert_int_equal(tc_metric(&f->tc, "dynprof_events_refused_total"), 1);
	fa_close(&a);
}

/* Expects the hello of node to be refused with an Error, then the close. */
static void
hello_refused(struct tc_coord *tc, const char *node)
{
	struct fakeagent fa;
	fa_msg		*m;

	assert_int_equal(fa_connect(&fa, tc->agent_port), 0);
	assert_int_equal(fa_hello(&fa, node, NULL, 1, NULL, 0), 0);
	m = fa_recv(&fa, 5000);
	assert_non_null(m);
	assert_int_equal(m->body_case, ERR);
	assert_int_equal(m->error->code,
	    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE);
	assert_non_null(strstr(m->error->reason, "UTF-8"));
	fa_free(m);
	assert_true(fa_wait_closed(&fa, 5000));
	fa_close(&fa);
}

/*
 * Strings from agents that are not UTF-8 were taken, then vanished from the
 * JSON (jansson refuses them) with the key they were under.  Now a hello with
 * such a node name gets an Error; an event with such an output_dir or error
 * is dropped, logged and counted; the status stays whole.
 */
static void
test_agent_strings(void **state)
{
	struct fixture	*f = *state;
	struct fakeagent a, b;
	struct tc_reply	 r;
	json_t		*n;
	size_t		 i;
	int		 seen = 0;

	hello_refused(&f->tc, "bad\xffnode");
	hello_refused(&f->tc, "overlong-\xc0\xaf");
	hello_refused(&f->tc, "surrogate-\xed\xa0\x80");
	hello_refused(&f->tc, "cut-\xc3");
	assert_int_equal(tc_metric(&f->tc, "dynprof_agents_refused_total"), 4);

	/* A UTF-8 name beyond ASCII is fine. */
	assert_int_equal(fa_handshake(&b, f->tc.agent_port, "n\xc5\x93ud-1",
	    NULL), 0);
	assert_int_equal(fa_handshake(&a, f->tc.agent_port, "str-node", NULL),
	    0);
	assert_int_equal(fa_event_text(&a, 1, K_STARTED, "str-j", 0,
	    "out/\xe9t\xe9", NULL), 0);
	assert_int_equal(fa_event_text(&a, 2, K_FAILED, "str-j", 1, NULL,
	    "bad \xff error"), 0);
	assert_int_equal(fa_event_text(&a, 3, K_STARTED, "str-j", 2,
	    "out/\xc3\xa9t\xc3\xa9", NULL), 0);
	assert_int_equal(fa_wait_ack(&a, 3, 5000), 0);
	assert_int_equal(tc_metric(&f->tc, "dynprof_events_refused_total"), 2);

	r = tc_req(&f->tc, "GET", "/v1/jobs/str-j/ranks", NULL, 200);
	assert_non_null(r.json);
	assert_int_equal(json_array_size(json_object_get(r.json, "ranks")), 1);
	assert_int_equal(tc_int(r.json, "ranks.0.rank"), 2);
	assert_string_equal(tc_str(r.json, "ranks.0.output_dir"),
	    "out/\xc3\xa9t\xc3\xa9");
	assert_string_equal(tc_str(r.json, "ranks.0.node"), "str-node");
	tc_reply_free(&r);

	r = tc_req(&f->tc, "GET", "/v1/nodes", NULL, 200);
	assert_non_null(r.json);
	json_array_foreach(json_object_get(r.json, "nodes"), i, n) {
		/* Every node has every field. */
		assert_true(json_is_string(json_object_get(n, "node")));
		assert_true(json_is_string(json_object_get(n, "state")));
		assert_true(json_is_object(json_object_get(n, "jobs")));
		if (strcmp(tc_str(n, "node"), "n\xc5\x93ud-1") == 0 ||
		    strcmp(tc_str(n, "node"), "str-node") == 0)
			seen++;
	}
	assert_int_equal(json_array_size(json_object_get(r.json, "nodes")), 2);
	assert_int_equal(seen, 2);
	tc_reply_free(&r);
	fa_close(&a);
	fa_close(&b);
}

/*
 * Integers beyond int32 in options are refused with the field named, never
 * cut to 32 bits (4294967296 would be 0).
 */
static void
test_int_ranges(void **state)
{
	struct fixture	*f = *state;
	struct tc_reply	 r;

	r = tc_req(&f->tc, "PUT", "/v1/jobs/ir-j/config", "{\"start_step\": 5, "
	    "\"stop_step\": 8, \"aicore_metrics\": 4294967296}", 400);
	assert_string_equal(tc_str(r.json, "field"), "aicore_metrics");
	tc_reply_free(&r);
	r = tc_req(&f->tc, "PUT", "/v1/jobs/ir-j/config", "{\"start_step\": "
	    "4294967301, \"stop_step\": 4294967296}", 400);
	assert_string_equal(tc_str(r.json, "field"), "stop_step");
	tc_reply_free(&r);
	r = tc_req(&f->tc, "PUT", "/v1/jobs/ir-j/config",
	    "{\"profiler_level\": -4294967295}", 400);
	assert_string_equal(tc_str(r.json, "field"), "profiler_level");
	tc_reply_free(&r);
	refused(&f->tc, "ir-j", "{\"start_step\": 5, \"stop_step\": 8, "
	    "\"options\": {\"analyse_mode\": 4294967297}}",
	    "options.analyse_mode");
	refused(&f->tc, "ir-j", "{\"start_step\": 5, \"stop_step\": 8, "
	    "\"options\": {\"aicore_metrics\": 9223372036854775807}}",
	    "options.aicore_metrics");
	tc_call(&f->tc, "GET", "/v1/jobs/ir-j", NULL, 404);
}

/*
 * Every method evhttp knows reaches the router: one a path does not take is
 * a 405 with a JSON body and Allow (evhttp itself answered 501 in HTML).
 */
static void
test_methods(void **state)
{
	struct fixture	*f = *state;
	static const struct {
		const char	*method, *path, *allow;
	} t[] = {
		{ "PATCH", "/v1/jobs/m-j/config", "GET, PUT" },
		{ "OPTIONS", "/v1/jobs/m-j/config", "GET, PUT" },
		{ "TRACE", "/v1/jobs", "GET" },
		{ "PATCH", "/v1/nodes", "GET" },
		{ "OPTIONS", "/v1/jobs/m-j/windows", "POST" },
		{ "PATCH", "/v1/jobs/m-j/windows/1", "DELETE" },
		{ "GET", "/v1/jobs/m-j/windows", "POST" },
		{ "OPTIONS", "/healthz", "GET" },
		{ "PATCH", "/metrics", "GET" },
	};
	struct tc_reply	 r;
	char		 want[64];
	size_t		 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		r = tc_req(&f->tc, t[i].method, t[i].path, NULL, 405);
		assert_non_null(r.json);
		assert_true(strlen(tc_str(r.json, "error")) > 0);
		snprintf(want, sizeof(want), "\r\nAllow: %s\r\n", t[i].allow);
		assert_non_null(r.head);
		if (strstr(r.head, want) == NULL)
			fail_msg("%s %s: no \"Allow: %s\" in\n%s", t[i].method,
			    t[i].path, t[i].allow, r.head);
		assert_non_null(strstr(r.head, "application/json"));
		tc_reply_free(&r);
	}
	tc_call(&f->tc, "GET", "/v1/jobs/m-j", NULL, 404);
}

/* Writes a token file of len bytes of 't' (plus a newline) in tc's dir. */
static void
token_file(struct tc_coord *tc, const char *name, size_t len, char *path,
    size_t pathlen)
{
	char	*text = malloc(len + 2);

	assert_non_null(text);
	memset(text, 't', len);
	text[len] = '\n';
	text[len + 1] = '\0';
	assert_int_equal(tc_write_file(tc, name, text, path, pathlen), 0);
	free(text);
}

/* Returns 1 if the coordinator's log holds s. */
static int
log_has(struct tc_coord *tc, const char *s)
{
	FILE	*fp = fopen(tc->log, "r");
	char	 line[4096];
	int	 found = 0;

	if (fp == NULL)
		return (0);
	while (!found && fgets(line, sizeof(line), fp) != NULL)
		found = strstr(line, s) != NULL;
	fclose(fp);
	return (found);
}

/* Returns the status of GET /v1/jobs with a bearer token of any length. */
static int
get_jobs_bearer(struct tc_coord *tc, const char *token)
{
	struct tc_reply	 r;
	char		 buf[2048];
	int		 len, status;

	len = snprintf(buf, sizeof(buf), "GET /v1/jobs HTTP/1.1\r\nHost: "
	    "127.0.0.1\r\nConnection: close\r\nAuthorization: Bearer %s\r\n"
	    "\r\n", token);
	assert_true(len > 0 && len < (int)sizeof(buf));
	assert_int_equal(tc_http_raw(tc->http_port, buf, (size_t)len, &r), 0);
	status = r.status;
	tc_reply_free(&r);
	return (status);
}

/* Expects the coordinator to refuse to start (stops it if it did start). */
static void
start_refused(struct tc_coord *tc, const char *const *args)
{
	if (tc_start(tc, args) == 0) {
		tc_stop(tc, SIGKILL);
		fail_msg("the coordinator started");
	}
}

/*
 * A token file longer than the limit was cut to its first 1023 bytes (and
 * dynprofctl read up to 4095): now it is refused at start, with the reason.
 * A token of exactly 1023 bytes works.
 */
static void
test_token_too_long(void **state)
{
	struct tc_coord	 tc;
	char		 tok[512], *bearer;
	const char	*admin[] = { "-q", "--admin-token-file", tok, NULL };
	const char	*agent[] = { "-q", "--agent-token-file", tok, NULL };

	(void)state;
	assert_int_equal(tc_setup_dir(&tc), 0);
	token_file(&tc, "long.token", 1024, tok, sizeof(tok));
	start_refused(&tc, admin);
	assert_true(log_has(&tc, "token longer than 1023 bytes"));
	start_refused(&tc, agent);

	token_file(&tc, "max.token", 1023, tok, sizeof(tok));
	assert_int_equal(tc_start(&tc, admin), 0);
	bearer = malloc(1024);
	assert_non_null(bearer);
	memset(bearer, 't', 1023);
	bearer[1023] = '\0';
	assert_int_equal(get_jobs_bearer(&tc, bearer), 200);
	bearer[1022] = '\0';
	assert_int_equal(get_jobs_bearer(&tc, bearer), 401);
	free(bearer);
	assert_int_equal(tc_stop(&tc, SIGTERM), 0);
	tc_cleanup(&tc);
}

/* GET path answers 400 naming field, the error holding want. */
static void
query_refused(struct tc_coord *tc, const char *path, const char *field,
    const char *want)
{
	struct tc_reply	 r;

	r = tc_req(tc, "GET", path, NULL, 400);
	assert_non_null(r.json);
	if (strcmp(tc_str(r.json, "field"), field) != 0 ||
	    strstr(tc_str(r.json, "error"), want) == NULL)
		fail_msg("%s: %s", path, r.body);
	tc_reply_free(&r);
}

/*
 * The ranks' query and rank lists: what evhttp decodes wrong (%00, a '%'
 * without two hex digits), "-0", a job id too long for any path, a range past
 * INT32_MAX: each a 400 naming the field.
 */
static void
test_ranks_query(void **state)
{
	struct fixture	*f = *state;
	struct tc_reply	 r;
	char		*req;
	size_t		 len = 9000;
	int		 n;

	tc_call(&f->tc, "POST", "/v1/jobs/rq-j/windows",
	    "{\"start_step\": 10, \"steps\": 2}", 201);
	r = tc_req(&f->tc, "POST", "/v1/jobs/rq-j/windows", "{\"start_step\": "
	    "20, \"steps\": 2, \"ranks\": \"0-2147483648\"}", 400);
	assert_string_equal(tc_str(r.json, "field"), "ranks");
	assert_non_null(strstr(tc_str(r.json, "error"), "out of range"));
	tc_reply_free(&r);
	tc_call(&f->tc, "POST", "/v1/jobs/rq-j/windows", "{\"start_step\": "
	    "20, \"steps\": 2, \"ranks\": \"0-2147483647\"}", 201);
	query_refused(&f->tc, "/v1/jobs/rq-j/ranks?limit=5%00", "limit",
	    "NUL");
	query_refused(&f->tc, "/v1/jobs/rq-j/ranks?node=%ZZ", "node",
	    "percent-encoding");
	query_refused(&f->tc, "/v1/jobs/rq-j/ranks?node=a%4", "node",
	    "percent-encoding");
	query_refused(&f->tc, "/v1/jobs/rq-j/ranks?after=-0", "after",
	    "rank number");
	tc_call(&f->tc, "GET", "/v1/jobs/rq-j/ranks?node=n%41&after=-1",
	    NULL, 200);
	/* A job id of 9,000 characters: the job id is at fault. */
	assert_non_null(req = malloc(len + 256));
	n = snprintf(req, len + 256, "GET /v1/jobs/");
	memset(req + n, 'j', len);
	n += (int)len;
	n += snprintf(req + n, 256, "/ranks HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n");
	assert_int_equal(tc_http_raw(f->tc.http_port, req, (size_t)n, &r), 0);
	free(req);
	assert_int_equal(r.status, 400);
	assert_string_equal(tc_str(r.json, "field"), "job");
	tc_reply_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_step_overflow, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_agent_strings, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_int_ranges, setup,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_methods, setup,
		    tc_teardown),
		cmocka_unit_test(test_token_too_long),
		cmocka_unit_test_setup_teardown(test_ranks_query, setup,
		    tc_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
