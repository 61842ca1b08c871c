/*
 * The coordinator's admin API through real HTTP against the real binary:
 * every endpoint, every validation rule, auth on and off, start-up refusals.
 */

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_coord_util.h"

static struct tc_coord	 tc;

static int
group_setup(void **state)
{
	const char *const extra[] = { "-q", NULL };

	(void)state;
	if (tc_setup_dir(&tc) == -1 || tc_start(&tc, extra) == -1) {
		tc_cleanup(&tc);
		return (-1);
	}
	return (0);
}

/* A clean stop exits 0 (and, under ASan, with no leak or error). */
static int
group_teardown(void **state)
{
	int	 rc;

	(void)state;
	rc = tc_stop(&tc, SIGTERM);
	if (rc != 0)
		fprintf(stderr, "coordinator exited %d, log in %s\n", rc,
		    tc.log);
	else
		tc_cleanup(&tc);
	return (rc == 0 ? 0 : -1);
}

/* Sends a request and checks the status; returns the reply (caller frees). */
static struct tc_reply
req(const char *method, const char *path, const char *body, int status)
{
	return (tc_req(&tc, method, path, body, status));
}

/* Sends a request expecting a 4xx naming field (NULL: no field). */
static void
bad(const char *method, const char *path, const char *body, int status,
    const char *field)
{
	struct tc_reply	 r = req(method, path, body, status);

	assert_non_null(r.json);
	assert_true(strlen(tc_str(r.json, "error")) > 0);
	if (field == NULL)
		assert_null(json_object_get(r.json, "field"));
	else
		assert_string_equal(tc_str(r.json, "field"), field);
	tc_reply_free(&r);
}

static long long
job_generation(const char *job)
{
	struct tc_reply	 r;
	char		 path[128];
	long long	 g;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = req("GET", path, NULL, 200);
	g = tc_int(r.json, "generation");
	tc_reply_free(&r);
	return (g);
}

static void
test_healthz_metrics(void **state)
{
	struct tc_reply	 r;

	(void)state;
	r = req("GET", "/healthz", NULL, 200);
	assert_string_equal(tc_str(r.json, "status"), "ok");
	tc_reply_free(&r);
	r = req("GET", "/metrics", NULL, 200);
	assert_non_null(strstr(r.body, "dynprof_agents_connected 0\n"));
	assert_non_null(strstr(r.body, "# TYPE dynprof_push_applied_seconds "
	    "histogram"));
	assert_non_null(strstr(r.body,
	    "dynprof_push_applied_seconds_bucket{le=\"+Inf\"} 0"));
	assert_non_null(strstr(r.body, "dynprof_events_total{kind=\"started\"} 0"));
	assert_non_null(strstr(r.body, "dynprof_http_requests_total{code=\"200\"}"));
	tc_reply_free(&r);
	bad("POST", "/healthz", "{}", 405, NULL);
}

static void
test_window_absolute(void **state)
{
	struct tc_reply	 r;
	long long	 g1, g2;

	(void)state;
	r = req("POST", "/v1/jobs/abs-1/windows", "{\"start_step\": 500, "
	    "\"stop_step\": 504, \"ranks\": \"0-7,16\", \"output_subdir\": "
	    "\"run/a\", \"options\": {\"profiler_level\": 1, \"with_stack\": "
	    "true, \"activities\": [\"CPU\", \"NPU\"]}}", 201);
	assert_int_equal(tc_int(r.json, "id"), 1);
	assert_int_equal(tc_int(r.json, "start_step"), 500);
	assert_int_equal(tc_int(r.json, "stop_step"), 504);
	assert_string_equal(tc_str(r.json, "ranks"), "0-7,16");
	assert_string_equal(tc_str(r.json, "state"), "scheduled");
	assert_string_equal(tc_str(r.json, "output_subdir"), "run/a");
	assert_int_equal(tc_int(r.json, "options.profiler_level"), 1);
	assert_true(json_is_true(json_object_get(json_object_get(r.json,
	    "options"), "with_stack")));
	assert_string_equal(tc_str(r.json, "options.activities.1"), "NPU");
	g1 = tc_int(r.json, "generation");
	assert_true(g1 > 0);
	tc_reply_free(&r);

	/* steps instead of stop_step; ids are never reused. */
	r = req("POST", "/v1/jobs/abs-1/windows", "{\"start_step\": 600, "
	    "\"steps\": 10}", 201);
	assert_int_equal(tc_int(r.json, "id"), 2);
	assert_int_equal(tc_int(r.json, "stop_step"), 609);
	g2 = tc_int(r.json, "generation");
	assert_true(g2 > g1);
	tc_reply_free(&r);

	/* Absolute with roundup: 601 -> 700. */
	r = req("POST", "/v1/jobs/abs-1/windows", "{\"start_step\": 601, "
	    "\"steps\": 5, \"roundup\": 100}", 201);
	assert_int_equal(tc_int(r.json, "start_step"), 700);
	assert_int_equal(tc_int(r.json, "stop_step"), 704);
	tc_reply_free(&r);

	r = req("GET", "/v1/jobs/abs-1", NULL, 200);
	assert_string_equal(tc_str(r.json, "job"), "abs-1");
	assert_int_equal(json_array_size(json_object_get(r.json, "windows")), 3);
	assert_int_equal(tc_int(r.json, "windows.0.id"), 1);
	assert_int_equal(tc_int(r.json, "windows.2.start_step"), 700);
	assert_true(json_is_null(json_object_get(r.json, "config")));
	assert_int_equal(tc_int(r.json, "progress.max_step"), -1);
	tc_reply_free(&r);

	r = req("GET", "/v1/jobs", NULL, 200);
	assert_true(json_array_size(json_object_get(r.json, "jobs")) >= 1);
	tc_reply_free(&r);
}

static void
test_window_validation(void **state)
{
	struct tc_reply	 r;
	char		*big, *path;
	size_t		 i;
	long long	 g;
	static const struct {
		const char	*body;
		int		 status;
		const char	*field;
	} cases[] = {
		{ "{bad", 400, NULL },
		{ "[1, 2]", 400, NULL },
		{ "", 400, NULL },
		{ "{\"start_step\": \"10\", \"stop_step\": 20}", 400,
		    "start_step" },
		{ "{\"start_step\": 1.5, \"stop_step\": 20}", 400,
		    "start_step" },
		{ "{\"start_step\": -1, \"stop_step\": 20}", 400, "start_step" },
		{ "{\"start_step\": 1e300, \"stop_step\": 20}", 400,
		    "start_step" },
		{ "{\"start_step\": 30, \"stop_step\": 20}", 400, "stop_step" },
		{ "{\"start_step\": 10}", 400, "stop_step" },
		{ "{\"stop_step\": 10}", 400, "start_step" },
		{ "{\"start_step\": 10, \"in_steps\": 5, \"steps\": 2}", 400,
		    "in_steps" },
		{ "{\"start_step\": 10, \"stop_step\": 12, \"steps\": 2}", 400,
		    "steps" },
		{ "{\"start_step\": 10, \"steps\": 0}", 400, "steps" },
		{ "{\"in_steps\": -3, \"steps\": 2}", 400, "in_steps" },
		{ "{\"in_steps\": 0, \"steps\": 2}", 400, "in_steps" },
		{ "{\"start_step\": 10, \"steps\": 2, \"roundup\": 0}", 400,
		    "roundup" },
		{ "{\"start_step\": 10, \"steps\": 2, \"ranks\": 5}", 400,
		    "ranks" },
		{ "{\"start_step\": 10, \"steps\": 2, \"ranks\": \"7-3\"}", 400,
		    "ranks" },
		{ "{\"start_step\": 10, \"steps\": 2, \"ranks\": \"a\"}", 400,
		    "ranks" },
		{ "{\"start_step\": 10, \"steps\": 2, \"output_subdir\": "
		    "\"../x\"}", 400, "output_subdir" },
		{ "{\"start_step\": 10, \"steps\": 2, \"output_subdir\": "
		    "\"/abs\"}", 400, "output_subdir" },
		{ "{\"start_step\": 10, \"steps\": 2, \"output_subdir\": 3}",
		    400, "output_subdir" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": [1]}", 400,
		    "options" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": "
		    "{\"profiler_level\": \"1\"}}", 400,
		    "options.profiler_level" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": "
		    "{\"profiler_level\": 9}}", 400, "options.profiler_level" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": "
		    "{\"aicore_metrics\": 6}}", 400, "options.aicore_metrics" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": "
		    "{\"analyse_mode\": -2}}", 400, "options.analyse_mode" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": "
		    "{\"profile_framework\": 2}}", 400,
		    "options.profile_framework" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": "
		    "{\"with_stack\": 1}}", 400, "options.with_stack" },
		{ "{\"start_step\": 10, \"steps\": 2, \"options\": "
		    "{\"start_step\": 1}}", 400, "options.start_step" },
		{ "{\"start_step\": 10, \"steps\": 2, \"foo\": 1}", 400, "foo" },
		{ "{\"start_step\": 10, \"start_step\": 11, \"steps\": 2}", 400,
		    NULL },
		/* Overlap with window 1 [100, 110] of the job. */
		{ "{\"start_step\": 105, \"steps\": 20}", 409, "start_step" },
		{ "{\"start_step\": 90, \"stop_step\": 100}", 409,
		    "start_step" },
		/* Relative, but no rank of the job reported a step. */
		{ "{\"in_steps\": 10, \"steps\": 2}", 409, "in_steps" },
	};

	(void)state;
	r = req("POST", "/v1/jobs/val-1/windows", "{\"start_step\": 100, "
	    "\"stop_step\": 110}", 201);
	tc_reply_free(&r);
	g = job_generation("val-1");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		bad("POST", "/v1/jobs/val-1/windows", cases[i].body,
		    cases[i].status, cases[i].field);

	/* Framework options over 4 KiB. */
	big = malloc(8192);
	assert_non_null(big);
	snprintf(big, 8192, "{\"start_step\": 10, \"steps\": 2, \"options\": "
	    "{\"x\": \"%05000d\"}}", 1);
	bad("POST", "/v1/jobs/val-1/windows", big, 400, "options");
	free(big);

	/* A body over 1 MiB. */
	big = malloc(1100 * 1024);
	assert_non_null(big);
	memset(big, ' ', 1100 * 1024 - 1);
	big[0] = '{';
	big[1100 * 1024 - 2] = '}';
	big[1100 * 1024 - 1] = '\0';
	r = req("POST", "/v1/jobs/val-1/windows", big, 413);
	tc_reply_free(&r);
	free(big);

	/* Bad job ids. */
	bad("POST", "/v1/jobs/.hidden/windows", "{\"start_step\": 1, "
	    "\"steps\": 1}", 400, "job");
	bad("POST", "/v1/jobs/a%24b/windows", "{\"start_step\": 1, "
	    "\"steps\": 1}", 400, "job");
	path = malloc(200);
	assert_non_null(path);
	snprintf(path, 200, "/v1/jobs/%065d/windows", 7);
	bad("POST", path, "{\"start_step\": 1, \"steps\": 1}", 400, "job");
	free(path);

	/* Nothing changed, and refused requests created no job. */
	assert_int_equal(job_generation("val-1"), g);
	r = req("GET", "/v1/jobs/val-1", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "windows")), 1);
	tc_reply_free(&r);
	bad("POST", "/v1/jobs/val-fresh/windows", "{\"in_steps\": 10, "
	    "\"steps\": 2}", 409, "in_steps");
	bad("GET", "/v1/jobs/val-fresh", NULL, 404, "job");
}

static void
test_window_limit(void **state)
{
	struct tc_reply	 r;
	char		 body[128];
	int		 i;

	(void)state;
	for (i = 0; i < 16; i++) {
		snprintf(body, sizeof(body), "{\"start_step\": %d, \"steps\": "
		    "5}", 1000 + i * 10);
		r = req("POST", "/v1/jobs/lim-1/windows", body, 201);
		tc_reply_free(&r);
	}
	bad("POST", "/v1/jobs/lim-1/windows", "{\"start_step\": 5000, "
	    "\"steps\": 5}", 409, NULL);
	/* A cancelled window that no rank can run makes room for one more. */
	r = req("DELETE", "/v1/jobs/lim-1/windows/1", NULL, 200);
	tc_reply_free(&r);
	r = req("POST", "/v1/jobs/lim-1/windows", "{\"start_step\": 5000, "
	    "\"steps\": 5}", 201);
	tc_reply_free(&r);
	r = req("GET", "/v1/jobs/lim-1", NULL, 200);
	assert_int_equal(tc_int(r.json, "windows.0.id"), 1);
	assert_string_equal(tc_str(r.json, "windows.0.state"), "cancelled");
	tc_reply_free(&r);
	bad("POST", "/v1/jobs/lim-1/windows", "{\"start_step\": 6000, "
	    "\"steps\": 5}", 409, NULL);
}

static void
test_cancel(void **state)
{
	struct tc_reply	 r;
	long long	 g;

	(void)state;
	r = req("POST", "/v1/jobs/can-1/windows", "{\"start_step\": 50, "
	    "\"steps\": 5}", 201);
	tc_reply_free(&r);
	g = job_generation("can-1");
	r = req("DELETE", "/v1/jobs/can-1/windows/1", NULL, 200);
	assert_int_equal(tc_int(r.json, "id"), 1);
	assert_string_equal(tc_str(r.json, "state"), "cancelled");
	assert_true(tc_int(r.json, "generation") > g);
	g = tc_int(r.json, "generation");
	tc_reply_free(&r);
	/* Again: no change. */
	r = req("DELETE", "/v1/jobs/can-1/windows/1", NULL, 200);
	assert_int_equal(tc_int(r.json, "generation"), g);
	tc_reply_free(&r);
	r = req("GET", "/v1/jobs/can-1", NULL, 200);
	assert_string_equal(tc_str(r.json, "windows.0.state"), "cancelled");
	tc_reply_free(&r);
	bad("DELETE", "/v1/jobs/can-1/windows/abc", NULL, 400, "id");
	bad("DELETE", "/v1/jobs/can-1/windows/0", NULL, 400, "id");
	bad("DELETE", "/v1/jobs/can-1/windows/99999999999", NULL, 400, "id");
	bad("DELETE", "/v1/jobs/can-1/windows/7", NULL, 404, "id");
	bad("DELETE", "/v1/jobs/nope-1/windows/1", NULL, 404, "job");
	assert_int_equal(job_generation("can-1"), g);
}

static void
test_put_config(void **state)
{
	struct tc_reply	 r;
	long long	 g, id;
	static const char *ms = "{\"start_step\": 20, \"stop_step\": 25, "
	    "\"aicore_metrics\": 1, \"profiler_level\": 1, "
	    "\"profile_framework\": 1, \"analyse_mode\": 0, "
	    "\"profile_communication\": true, \"parallel_strategy\": false, "
	    "\"with_stack\": true, \"data_simplification\": false, "
	    "\"activities\": [\"CPU\"], \"record_shapes\": true}";

	(void)state;
	bad("GET", "/v1/jobs/cfg-1/config", NULL, 404, "job");
	r = req("PUT", "/v1/jobs/cfg-1/config", ms, 200);
	assert_string_equal(tc_str(r.json, "job"), "cfg-1");
	g = tc_int(r.json, "generation");
	id = tc_int(r.json, "window.id");
	assert_true(id > 0);
	assert_int_equal(tc_int(r.json, "window.start_step"), 20);
	assert_int_equal(tc_int(r.json, "window.stop_step"), 25);
	assert_int_equal(tc_int(r.json, "window.options.aicore_metrics"), 1);
	assert_true(json_is_false(json_object_get(json_object_get(
	    json_object_get(r.json, "window"), "options"),
	    "data_simplification")));
	assert_true(json_is_true(json_object_get(json_object_get(
	    json_object_get(r.json, "window"), "options"), "record_shapes")));
	tc_reply_free(&r);

	/* The config as stored. */
	r = req("GET", "/v1/jobs/cfg-1/config", NULL, 200);
	assert_int_equal(tc_int(r.json, "start_step"), 20);
	assert_string_equal(tc_str(r.json, "activities.0"), "CPU");
	tc_reply_free(&r);

	/* The same steps again: no new window. */
	r = req("PUT", "/v1/jobs/cfg-1/config", ms, 200);
	assert_int_equal(tc_int(r.json, "window.id"), id);
	assert_true(tc_int(r.json, "generation") > g);
	tc_reply_free(&r);

	/* start_step -1: no window; the typed keys become the defaults. */
	r = req("PUT", "/v1/jobs/cfg-1/config", "{\"start_step\": -1, "
	    "\"stop_step\": -1, \"profiler_level\": 2}", 200);
	assert_true(json_is_null(json_object_get(r.json, "window")));
	tc_reply_free(&r);
	r = req("POST", "/v1/jobs/cfg-1/windows", "{\"start_step\": 40, "
	    "\"steps\": 2}", 201);
	assert_int_equal(tc_int(r.json, "options.profiler_level"), 2);
	tc_reply_free(&r);
	r = req("GET", "/v1/jobs/cfg-1", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "windows")), 2);
	assert_int_equal(tc_int(r.json, "config.profiler_level"), 2);
	g = tc_int(r.json, "generation");
	tc_reply_free(&r);

	/* Refusals change nothing. */
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"start_step\": \"5\"}", 400,
	    "start_step");
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"start_step\": 0, "
	    "\"stop_step\": 5}", 400, "start_step");
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"start_step\": 9, "
	    "\"stop_step\": 5}", 400, "stop_step");
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"start_step\": 9, "
	    "\"stop_step\": -1}", 400, "stop_step");
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"profiler_level\": \"x\"}", 400,
	    "profiler_level");
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"with_stack\": \"yes\"}", 400,
	    "with_stack");
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"start_step\": 21, "
	    "\"stop_step\": 22}", 409, "start_step");
	bad("PUT", "/v1/jobs/cfg-1/config", "[]", 400, NULL);
	bad("PUT", "/v1/jobs/cfg-1/config", "{\"a\":", 400, NULL);
	assert_int_equal(job_generation("cfg-1"), g);
	r = req("GET", "/v1/jobs/cfg-1/config", NULL, 200);
	assert_int_equal(tc_int(r.json, "profiler_level"), 2);
	tc_reply_free(&r);
}

static void
test_routes(void **state)
{
	struct tc_reply	 r;

	(void)state;
	bad("GET", "/v1/jobs/none-1", NULL, 404, "job");
	bad("GET", "/v1/nothing", NULL, 404, NULL);
	bad("GET", "/elsewhere", NULL, 404, NULL);
	bad("GET", "/v1/jobs/j/windows", NULL, 405, NULL);
	bad("POST", "/v1/jobs", "{}", 405, NULL);
	bad("DELETE", "/v1/jobs/j/config", NULL, 405, NULL);
	r = req("GET", "/v1/nodes", NULL, 200);
	assert_true(json_is_array(json_object_get(r.json, "nodes")));
	tc_reply_free(&r);
	r = req("GET", "/metrics", NULL, 200);
	assert_non_null(strstr(r.body, "dynprof_http_requests_total{code=\"404\"}"));
	tc_reply_free(&r);
}

static void
test_auth(void **state)
{
	struct tc_coord	 ta;
	struct tc_reply	 r;
	char		 tokfile[512];
	const char	*extra[] = { "-q", "--admin-token-file", tokfile, NULL };

	(void)state;
	assert_int_equal(tc_setup_dir(&ta), 0);
	assert_int_equal(tc_write_file(&ta, "admin.token", "s3cret-token\n",
	    tokfile, sizeof(tokfile)), 0);
	if (tc_start(&ta, extra) == -1) {
		tc_cleanup(&ta);
		fail_msg("coordinator did not start");
	}
	assert_int_equal(tc_http(ta.http_port, "GET", "/v1/jobs", NULL, NULL,
	    &r), 0);
	assert_int_equal(r.status, 401);
	assert_non_null(r.json);
	tc_reply_free(&r);
	assert_int_equal(tc_http(ta.http_port, "GET", "/v1/jobs", NULL,
	    "wrong-token!", &r), 0);
	assert_int_equal(r.status, 401);
	tc_reply_free(&r);
	assert_int_equal(tc_http(ta.http_port, "POST", "/v1/jobs/a1/windows",
	    "{\"start_step\": 5, \"steps\": 1}", "s3cret-toke", &r), 0);
	assert_int_equal(r.status, 401);
	tc_reply_free(&r);
	assert_int_equal(tc_http(ta.http_port, "GET", "/v1/jobs/a1", NULL,
	    "s3cret-token", &r), 0);
	assert_int_equal(r.status, 404);	/* the refused POST did nothing */
	tc_reply_free(&r);
	assert_int_equal(tc_http(ta.http_port, "POST", "/v1/jobs/a1/windows",
	    "{\"start_step\": 5, \"steps\": 1}", "s3cret-token", &r), 0);
	assert_int_equal(r.status, 201);
	tc_reply_free(&r);
	assert_int_equal(tc_http(ta.http_port, "GET", "/healthz", NULL, NULL,
	    &r), 0);
	assert_int_equal(r.status, 200);
	tc_reply_free(&r);
	/* /metrics names every job: it takes the token too. */
	assert_int_equal(tc_http(ta.http_port, "GET", "/metrics", NULL, NULL,
	    &r), 0);
	assert_int_equal(r.status, 401);
	tc_reply_free(&r);
	assert_int_equal(tc_http(ta.http_port, "GET", "/metrics", NULL,
	    "s3cret-token", &r), 0);
	assert_int_equal(r.status, 200);
	tc_reply_free(&r);
	assert_int_equal(tc_stop(&ta, SIGTERM), 0);
	tc_cleanup(&ta);
}

/* Sends one request with a token; returns the status (-1: no answer). */
static int
role_status(struct tc_coord *co, const char *method, const char *path,
    const char *body, const char *token, const char *want_error)
{
	struct tc_reply	 r;
	int		 status;

	if (tc_http(co->http_port, method, path, body, token, &r) == -1)
		return (-1);
	status = r.status;
	if (want_error != NULL && strstr(tc_str(r.json, "error"),
	    want_error) == NULL) {
		fprintf(stderr, "%s %s: error lacks \"%s\": %s\n", method,
		    path, want_error, r.body != NULL ? r.body : "");
		status = -2;
	}
	tc_reply_free(&r);
	return (status);
}

/*
 * Token roles: the operator token reads and writes, the viewer token only
 * reads (403 with the reason on a write, which changes nothing), no token or
 * an unknown one is 401; /healthz needs none, /metrics (it names every job)
 * either token.  Then a viewer
 * token alone: a read-only API.  And the same file for both is refused.
 */
static void
test_token_roles(void **state)
{
	struct tc_coord	 ta;
	char		 op[512], view[512];
	const char	*both[] = { "-q", "--admin-token-file", op,
	    "--viewer-token-file", view, NULL };
	const char	*viewonly[] = { "-q", "--viewer-token-file", view, NULL };
	const char	*w = "{\"start_step\": 5, \"steps\": 1}";

	(void)state;
	assert_int_equal(tc_setup_dir(&ta), 0);
	assert_int_equal(tc_write_file(&ta, "op.token", "operator-t0ken\n", op,
	    sizeof(op)), 0);
	assert_int_equal(tc_write_file(&ta, "view.token", "viewer-t0ken\n",
	    view, sizeof(view)), 0);
	if (tc_start(&ta, both) == -1) {
		tc_cleanup(&ta);
		fail_msg("coordinator did not start");
	}
	/* Viewer: reads yes, writes 403 naming the reason, nothing done. */
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs", NULL,
	    "viewer-t0ken", NULL), 200);
	assert_int_equal(role_status(&ta, "GET", "/v1/nodes", NULL,
	    "viewer-t0ken", NULL), 200);
	assert_int_equal(role_status(&ta, "POST", "/v1/jobs/r1/windows", w,
	    "viewer-t0ken", "viewer token may only read"), 403);
	assert_int_equal(role_status(&ta, "PUT", "/v1/jobs/r1/config", w,
	    "viewer-t0ken", "viewer token may only read"), 403);
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs/r1", NULL,
	    "viewer-t0ken", NULL), 404);
	/* Operator: both. */
	assert_int_equal(role_status(&ta, "POST", "/v1/jobs/r1/windows", w,
	    "operator-t0ken", NULL), 201);
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs/r1", NULL,
	    "operator-t0ken", NULL), 200);
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs/r1", NULL,
	    "viewer-t0ken", NULL), 200);
	assert_int_equal(role_status(&ta, "DELETE", "/v1/jobs/r1/windows/1",
	    NULL, "viewer-t0ken", "viewer token may only read"), 403);
	assert_int_equal(role_status(&ta, "DELETE", "/v1/jobs/r1/windows/1",
	    NULL, "operator-t0ken", NULL), 200);
	/* Unknown, a prefix of one, or none: 401. */
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs", NULL,
	    "someone-else", "bearer token"), 401);
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs", NULL,
	    "viewer-t0ke", NULL), 401);
	assert_int_equal(role_status(&ta, "POST", "/v1/jobs/r2/windows", w,
	    NULL, NULL), 401);
	assert_int_equal(role_status(&ta, "GET", "/healthz", NULL, NULL, NULL),
	    200);
	assert_int_equal(role_status(&ta, "GET", "/metrics", NULL, NULL,
	    "viewer token"), 401);
	assert_int_equal(role_status(&ta, "GET", "/metrics", NULL,
	    "someone-else", NULL), 401);
	assert_int_equal(role_status(&ta, "GET", "/metrics", NULL,
	    "viewer-t0ken", NULL), 200);
	assert_int_equal(role_status(&ta, "GET", "/metrics", NULL,
	    "operator-t0ken", NULL), 200);
	assert_int_equal(tc_stop(&ta, SIGTERM), 0);

	/* A viewer token alone: reads with it, no writes for anyone. */
	assert_int_equal(tc_start(&ta, viewonly), 0);
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs", NULL, NULL, NULL),
	    401);
	assert_int_equal(role_status(&ta, "GET", "/v1/jobs", NULL,
	    "viewer-t0ken", NULL), 200);
	assert_int_equal(role_status(&ta, "POST", "/v1/jobs/r3/windows", w,
	    "viewer-t0ken", NULL), 403);
	assert_int_equal(role_status(&ta, "POST", "/v1/jobs/r3/windows", w,
	    NULL, NULL), 401);
	assert_int_equal(role_status(&ta, "POST", "/v1/jobs/r3/windows", w,
	    "operator-t0ken", NULL), 401);
	assert_int_equal(tc_stop(&ta, SIGTERM), 0);

	/* The operator's token as the viewer's: refused at start. */
	{
		const char *a[] = { "--admin-token-file", op,
		    "--viewer-token-file", op, NULL };
		assert_int_equal(tc_run_exit(a, 10000), 1);
	}
	{
		const char *a[] = { "--viewer-token-file", "/nonexistent/tok",
		    NULL };
		assert_int_equal(tc_run_exit(a, 10000), 1);
	}
	tc_cleanup(&ta);
}

static void
test_start_refusals(void **state)
{
	struct tc_coord	 ts;
	char		 dir[400], tok[512];
	const char	*insecure[] = { "-q", "--insecure", NULL };
	const char	*tokens[] = { "-q", "--agent-token-file", tok,
	    "--admin-token-file", tok, NULL };

	(void)state;
	assert_int_equal(tc_setup_dir(&ts), 0);
	snprintf(dir, sizeof(dir), "%s/st", ts.dir);
	{
		const char *a[] = { "--listen", "0.0.0.0:0", "--http",
		    "127.0.0.1:0", "--state-dir", dir, NULL };
		assert_int_equal(tc_run_exit(a, 10000), 1);
	}
	{
		const char *a[] = { "--listen", "127.0.0.1:0", "--http",
		    "0.0.0.0:0", "--state-dir", dir, NULL };
		assert_int_equal(tc_run_exit(a, 10000), 1);
	}
	{
		const char *a[] = { "--heartbeat-ms", "abc", NULL };
		assert_int_equal(tc_run_exit(a, 10000), 1);
	}
	{
		const char *a[] = { "--no-such-flag", NULL };
		assert_int_equal(tc_run_exit(a, 10000), 1);
	}
	{
		const char *a[] = { "--admin-token-file", "/nonexistent/tok",
		    NULL };
		assert_int_equal(tc_run_exit(a, 10000), 1);
	}
	{
		const char *a[] = { "--listen", "127.0.0.1:0", "--http",
		    "127.0.0.1:0", "--state-dir", "/proc/self/nope/x", NULL };
		assert_int_equal(tc_run_exit(a, 10000), 2);
	}
	{
		const char *a[] = { "--version", NULL };
		assert_int_equal(tc_run_exit(a, 10000), 0);
	}
	/* Non-loopback is fine with --insecure, or with both tokens. */
	{
		const char *a[] = { "--listen", "0.0.0.0:0", "--http",
		    "0.0.0.0:0", "--state-dir", dir, "--insecure",
		    "--ready-file", "/nonexistent/dir/ready", NULL };
		/* Starts, then fails writing the ready file: runtime error. */
		assert_int_equal(tc_run_exit(a, 10000), 2);
	}
	assert_int_equal(tc_write_file(&ts, "tok", "t0k\n", tok, sizeof(tok)),
	    0);
	/* tc_start binds 127.0.0.1: check a clean SIGTERM stop instead. */
	assert_int_equal(tc_start(&ts, tokens), 0);
	assert_int_equal(tc_stop(&ts, SIGTERM), 0);
	assert_int_equal(tc_start(&ts, insecure), 0);
	assert_int_equal(tc_stop(&ts, SIGINT), 0);
	tc_cleanup(&ts);
}

/* Reads the file at path into buf (NUL-terminated); returns buf. */
static const char *
slurp(const char *path, char *buf, size_t len)
{
	FILE	*f;
	size_t	 n = 0;

	if ((f = fopen(path, "r")) != NULL) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return (buf);
}

/*
 * A second coordinator on a state directory in use refuses to start, naming
 * the directory and the holder's pid; the first keeps its state, and once it
 * is killed (SIGKILL: no clean-up) the directory is free again.
 */
static void
test_state_dir_lock(void **state)
{
	struct tc_coord	 t;
	struct tc_reply	 r;
	char		 log2[400], ready2[400], text[4096], want[600];
	const char	*quiet[] = { "-q", NULL };

	(void)state;
	assert_int_equal(tc_setup_dir(&t), 0);
	assert_int_equal(tc_start(&t, quiet), 0);
	r = tc_req(&t, "POST", "/v1/jobs/dupjob/windows",
	    "{\"start_step\": 10, \"steps\": 5}", 201);
	assert_int_equal(tc_int(r.json, "id"), 1);
	tc_reply_free(&r);
	snprintf(log2, sizeof(log2), "%s/second.log", t.dir);
	snprintf(ready2, sizeof(ready2), "%s/ready2", t.dir);
	{
		const char *a[] = { "--listen", "127.0.0.1:0", "--http",
		    "127.0.0.1:0", "--state-dir", t.state, "--ready-file",
		    ready2, NULL };
		assert_int_equal(tc_run_exit_log(a, 10000, log2), 2);
	}
	snprintf(want, sizeof(want), "state directory %s is in use by pid %d",
	    t.state, (int)t.pid);
	if (strstr(slurp(log2, text, sizeof(text)), want) == NULL)
		fail_msg("want \"%s\" in:\n%s", want, text);
	r = tc_req(&t, "POST", "/v1/jobs/dupjob/windows",
	    "{\"start_step\": 20, \"steps\": 5}", 201);
	assert_int_equal(tc_int(r.json, "id"), 2);
	tc_reply_free(&r);
	assert_int_equal(tc_stop(&t, SIGKILL), 128 + SIGKILL);
	assert_int_equal(tc_start(&t, quiet), 0);
	r = tc_req(&t, "GET", "/v1/jobs/dupjob", NULL, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "windows")), 2);
	tc_reply_free(&r);
	assert_int_equal(tc_stop(&t, SIGTERM), 0);
	tc_cleanup(&t);
}

/* A port out of range is one error about the port, exit 1 (bad flags). */
static void
test_bad_port(void **state)
{
	static const char *const addrs[][2] = {
		{ "--listen", "127.0.0.1:99999" },
		{ "--http", "127.0.0.1:-1" },
		{ "--listen", "[::1]:+80" },
		{ "--http", "127.0.0.1:" },
	};
	struct tc_coord	 t;
	char		 log[400], text[4096];
	size_t		 i;

	(void)state;
	assert_int_equal(tc_setup_dir(&t), 0);
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		const char *a[] = { "--state-dir", t.state, addrs[i][0],
		    addrs[i][1], NULL };

		snprintf(log, sizeof(log), "%s/port%zu.log", t.dir, i);
		assert_int_equal(tc_run_exit_log(a, 10000, log), 1);
		slurp(log, text, sizeof(text));
		if (strstr(text, "bad port") == NULL ||
		    strstr(text, "expected 0 to 65535") == NULL ||
		    strstr(text, "loopback") != NULL)
			fail_msg("%s %s: %s", addrs[i][0], addrs[i][1], text);
	}
	tc_cleanup(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthz_metrics),
		cmocka_unit_test(test_state_dir_lock),
		cmocka_unit_test(test_bad_port),
		cmocka_unit_test(test_window_absolute),
		cmocka_unit_test(test_window_validation),
		cmocka_unit_test(test_window_limit),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_put_config),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_token_roles),
		cmocka_unit_test(test_start_refusals),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, group_setup, group_teardown));
}
