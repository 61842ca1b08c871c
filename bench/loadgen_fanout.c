/*
 * dynprof-loadgen's fanout phase: --changes admin requests, each timed until
 * every connection has the new generation, until the answer, and until the
 * coordinator counts every node applied; then the job's status is checked.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <jansson.h>

#include "parts_loadgen.h"


#define LOADGEN_TRIAL_TIMEOUT_MS	60000
#define LOADGEN_APPLIED_GIVEUP_MS	20000

static void	loadgen_fanout_poll(struct loadgen *);
static void	loadgen_fanout_poll_cb(evutil_socket_t, short, void *);
static int	loadgen_count_applied(struct loadgen *, const char *, size_t,
		    uint64_t);
static void	loadgen_status_applied_done(void *, int, const char *, size_t);

/* --- fanout ------------------------------------------------------------- */

static void
loadgen_trial_later(struct loadgen *lg, int ms, event_callback_fn fn)
{
	struct timeval	 tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	event_base_once(lg->base, -1, EV_TIMEOUT, fn, lg, &tv);
}

static void
loadgen_fanout_next_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;

	(void)fd;
	(void)what;
	lg->trial++;
	if (lg->trial >= lg->changes) {
		if (lg->coord_pid > 0)
			loadgen_proc_read(lg->coord_pid, &lg->proc_fanout);
		lg->store_fanout = loadgen_procs_cpu(lg->store_pids,
		    lg->nstore_pids);
		loadgen_proc_read(getpid(), &lg->self_fanout);
		snprintf(lg->uri, sizeof(lg->uri), "/v1/jobs/%s", lg->job);
		if (loadgen_http_request(lg->http, "GET", lg->uri, NULL,
		    loadgen_status_applied_done, lg) == -1)
			lg->hooks->fail(lg, "cannot send a status request");
		return;
	}
	loadgen_fanout_trial(lg);
}


/* Once every connection has the change and its answer came: record. */
void
loadgen_fanout_check(struct loadgen *lg)
{
	double	 ms;

	if (lg->t_all == 0 || !lg->resp_done)
		return;
	if (lg->trial >= 0) {
		ms = (lg->t_all - lg->t0) / 1e6;
		lg->fan_ms[lg->trial] = ms;
		lg->resp_ms[lg->trial] = (lg->t_resp - lg->t0) / 1e6;
	}
	lg->t_all = -1;		/* recorded */
	evtimer_del(lg->trial_timer);
	if (lg->applied_ok)
		loadgen_fanout_poll(lg);
	else
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
}

static int
loadgen_json_generation(const char *body, size_t len, uint64_t *gen)
{
	json_t		*root, *g;
	json_error_t	 err;
	int		 rc = -1;

	if ((root = json_loadb(body, len, 0, &err)) == NULL)
		return (-1);
	if ((g = json_object_get(root, "generation")) != NULL &&
	    json_is_integer(g)) {
		*gen = (uint64_t)json_integer_value(g);
		rc = 0;
	}
	json_decref(root);
	return (rc);
}

static void
loadgen_change_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;
	char		 msg[512];

	lg->t_resp = loadgen_now_ns();
	if (code < 200 || code > 299) {
		snprintf(msg, sizeof(msg), "admin change refused: HTTP %d: %.400s",
		    code, body);
		lg->hooks->fail(lg, msg);
		return;
	}
	if (loadgen_json_generation(body, len, &lg->resp_gen) == -1) {
		snprintf(msg, sizeof(msg), "admin change: no generation in "
		    "%.400s", body);
		lg->hooks->fail(lg, msg);
		return;
	}
	lg->resp_done = 1;
	loadgen_fanout_check(lg);
}

/*
 * Counts the nodes the job's summary shows at its current generation, once
 * that is gen (a later change would count them against a newer one).
 */
static int
loadgen_count_applied(struct loadgen *lg, const char *body, size_t len,
    uint64_t gen)
{
	json_t		*root, *v, *g;
	json_error_t	 err;
	int		 count = -1;

	(void)lg;
	if ((root = json_loadb(body, len, 0, &err)) == NULL)
		return (-1);
	g = json_object_get(root, "generation");
	v = json_object_get(json_object_get(root, "node_counts"),
	    "applied_current");
	if (json_is_integer(g) && (uint64_t)json_integer_value(g) == gen &&
	    json_is_integer(v))
		count = (int)json_integer_value(v);
	json_decref(root);
	return (count);
}

/* The coordinator's count of pushes acknowledged applied, from /metrics. */
static int
loadgen_metrics_applied(const char *body, uint64_t *count)
{
	static const char	 key[] = "\ndynprof_push_applied_seconds_count ";
	const char		*p;

	if ((p = strstr(body, key)) == NULL)
		return (-1);
	*count = strtoull(p + sizeof(key) - 1, NULL, 10);
	return (0);
}

static void
loadgen_applied_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;
	uint64_t	 count;
	double		 ms;

	(void)len;
	if (code != 200 || loadgen_metrics_applied(body, &count) == -1) {
		fprintf(stderr, "loadgen: GET /metrics: HTTP %d, no "
		    "dynprof_push_applied_seconds_count: not measuring applied\n",
		    code);
		lg->applied_ok = 0;
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
		return;
	}
	ms = (loadgen_now_ns() - lg->t0) / 1e6;
	if (count >= lg->applied_base + (uint64_t)lg->n) {
		if (lg->trial >= 0)
			lg->applied_ms[lg->napplied++] = ms;
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
		return;
	}
	if (ms > LOADGEN_APPLIED_GIVEUP_MS) {
		fprintf(stderr, "loadgen: the coordinator counts %" PRIu64 " of "
		    "%d applied after %.0f ms; not measuring applied any more\n",
		    count - lg->applied_base, lg->n, ms);
		lg->applied_ok = 0;
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
		return;
	}
	loadgen_trial_later(lg, 1, loadgen_fanout_poll_cb);
}

static void
loadgen_fanout_poll(struct loadgen *lg)
{
	if (loadgen_http_request(lg->http, "GET", "/metrics", NULL,
	    loadgen_applied_done, lg) == -1)
		lg->hooks->fail(lg, "cannot send a metrics request");
}

static void
loadgen_fanout_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	loadgen_fanout_poll(arg);
}

/* After the last change: does the job's status show every node applied it? */
static void
loadgen_status_applied_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;

	if (code == 200)
		lg->status_applied = loadgen_count_applied(lg, body, len,
		    lg->resp_gen);
	else
		fprintf(stderr, "loadgen: GET %s: HTTP %d\n", lg->uri, code);
	if (lg->do_events)
		lg->hooks->events_start(lg);
	else
		lg->hooks->finish(lg);
}

/* A change not fanned out in LOADGEN_TRIAL_TIMEOUT_MS fails the run. */
void
loadgen_trial_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;

	(void)fd;
	(void)what;
	if (lg->phase != LOADGEN_PHASE_FANOUT)
		return;
	fprintf(stderr, "loadgen: change %d: %d of %d agents got the new "
	    "generation, answer %s, in %d ms\n", lg->trial, lg->recv_count,
	    lg->ready, lg->resp_done ? "received" : "missing",
	    LOADGEN_TRIAL_TIMEOUT_MS);
	lg->hooks->fail(lg, "fan-out timed out");
}

static void
loadgen_fanout_send(struct loadgen *lg)
{
	struct timeval	 tv;
	char		 body[512];
	int		 i;

	lg->base_gen = 0;
	for (i = 0; i < lg->n; i++)
		if (lg->conns[i].gen > lg->base_gen)
			lg->base_gen = lg->conns[i].gen;
	lg->recv_count = 0;
	lg->t_all = 0;
	lg->resp_done = 0;
	/* Each change flips options, so it is always a new generation. */
	snprintf(body, sizeof(body), "{\"start_step\": -1, \"stop_step\": -1, "
	    "\"aicore_metrics\": %d, \"profiler_level\": %d, "
	    "\"with_stack\": %s, \"loadgen_change\": %d}",
	    (lg->trial + 1) % 2, (lg->trial + 2) % 3,
	    lg->trial % 2 ? "true" : "false", lg->trial + 1);
	snprintf(lg->uri, sizeof(lg->uri), "/v1/jobs/%s/config", lg->job);
	lg->t0 = loadgen_now_ns();
	if (loadgen_http_request(lg->http, "PUT", lg->uri, body,
	    loadgen_change_done, lg) == -1) {
		lg->hooks->fail(lg, "cannot send the admin request");
		return;
	}
	tv.tv_sec = LOADGEN_TRIAL_TIMEOUT_MS / 1000;
	tv.tv_usec = 0;
	evtimer_add(lg->trial_timer, &tv);
}

static void
loadgen_metrics_before_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;

	(void)len;
	if (code != 200 || loadgen_metrics_applied(body,
	    &lg->applied_base) == -1)
		lg->applied_ok = 0;
	loadgen_fanout_send(lg);
}

/* One change: the applied count first (when measured), then the request. */
void
loadgen_fanout_trial(struct loadgen *lg)
{
	if (!lg->applied_ok) {
		loadgen_fanout_send(lg);
		return;
	}
	if (loadgen_http_request(lg->http, "GET", "/metrics", NULL,
	    loadgen_metrics_before_done, lg) == -1)
		lg->hooks->fail(lg, "cannot send a metrics request");
}
