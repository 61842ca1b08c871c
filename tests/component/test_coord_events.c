/*
 * The event stream, GET /v1/jobs/{job}/events, through the real coordinator
 * and fake agents: the events of a job in revision order, resumed from a
 * revision, followed as they are committed with heartbeats between, the
 * bounds (followers at once, a follower that does not read, revisions no
 * longer kept, across a restart) and bad parameters; and, through the real
 * agent and a real rank process, every attached and detached event of a
 * process that attaches and detaches 10,000 times, each once.
 */

#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>

#include <errno.h>
#include <poll.h>
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
#include "fakecoord.h"
#include "test_coord_util.h"

#define K_STARTED	DYNPROF__V1__EVENT_KIND__EVENT_STARTED
#define K_STOPPED	DYNPROF__V1__EVENT_KIND__EVENT_STOPPED
#define K_FAILED	DYNPROF__V1__EVENT_KIND__EVENT_FAILED

#define FOLLOWERS_MAX	64	/* COORD_FOLLOWERS_MAX */
#define FOLLOWERS_OPERATOR 8	/* COORD_FOLLOWERS_OPERATOR */
#define LINE_MAX_TEST	8192

/* A streamed answer read line by line (HTTP/1.0: no chunks). */
struct reader {
	int	 fd;
	char	 buf[1 << 16];
	size_t	 len;
	int	 head_done;
	int	 status;
	int	 eof;
};

/* Starts GET path on port as HTTP/1.0 with a bearer token (NULL: none);
 * rcvbuf > 0 sets the socket's receive buffer (a slow client). */
static void
reader_open_as(struct reader *rd, int port, const char *path, int rcvbuf,
    const char *token)
{
	struct sockaddr_in	 sin;
	char			 req[512], auth[128] = "";
	int			 n;

	memset(rd, 0, sizeof(*rd));
	rd->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(rd->fd >= 0);
	if (rcvbuf > 0)
		setsockopt(rd->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
		    sizeof(rcvbuf));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(rd->fd, (struct sockaddr *)&sin,
	    sizeof(sin)), 0);
	if (token != NULL)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    token);
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n%s\r\n",
	    path, auth);
	assert_int_equal(send(rd->fd, req, (size_t)n, MSG_NOSIGNAL), n);
}

/* Starts GET path on port as HTTP/1.0, no token (see reader_open_as()). */
static void
reader_open(struct reader *rd, int port, const char *path, int rcvbuf)
{
	reader_open_as(rd, port, path, rcvbuf, NULL);
}

/* Reads more within timeout_ms.  Returns 1 if bytes came, 0 if none. */
static int
reader_fill(struct reader *rd, int timeout_ms)
{
	struct pollfd	 pfd = { rd->fd, POLLIN, 0 };
	ssize_t		 n;

	if (rd->eof || rd->len == sizeof(rd->buf) ||
	    poll(&pfd, 1, timeout_ms) <= 0)
		return (0);
	n = recv(rd->fd, rd->buf + rd->len, sizeof(rd->buf) - rd->len, 0);
	if (n <= 0) {
		rd->eof = 1;
		return (0);
	}
	rd->len += (size_t)n;
	return (1);
}

/*
 * Returns the next line of the body within timeout_ms (caller decrefs), or
 * NULL.  The status line and headers are skipped first (status kept).
 */
static json_t *
reader_line(struct reader *rd, int timeout_ms)
{
	long long	 deadline = tc_now_ms() + timeout_ms;
	char		*nl, line[LINE_MAX_TEST];
	size_t		 n;
	json_t		*j;

	for (;;) {
		if (!rd->head_done && (nl = memmem(rd->buf, rd->len,
		    "\r\n\r\n", 4)) != NULL) {
			sscanf(rd->buf, "HTTP/1.%*d %d", &rd->status);
			n = (size_t)(nl + 4 - rd->buf);
			memmove(rd->buf, rd->buf + n, rd->len - n);
			rd->len -= n;
			rd->head_done = 1;
		}
		if (rd->head_done && (nl = memchr(rd->buf, '\n', rd->len)) !=
		    NULL) {
			n = (size_t)(nl - rd->buf);
			assert_true(n < sizeof(line));
			memcpy(line, rd->buf, n);
			line[n] = '\0';
			memmove(rd->buf, nl + 1, rd->len - n - 1);
			rd->len -= n + 1;
			j = json_loads(line, 0, NULL);
			if (j == NULL)
				fail_msg("not a JSON line: %s", line);
			return (j);
		}
		if (tc_now_ms() >= deadline || rd->eof)
			return (NULL);
		reader_fill(rd, (int)(deadline - tc_now_ms()));
	}
}

/* Returns the next line that is an event (skipping heartbeats), or NULL. */
static json_t *
reader_event(struct reader *rd, int timeout_ms)
{
	json_t	*j;

	while ((j = reader_line(rd, timeout_ms)) != NULL) {
		if (strcmp(tc_str(j, "type"), "heartbeat") != 0)
			return (j);
		json_decref(j);
	}
	return (NULL);
}

static void
reader_close(struct reader *rd)
{
	close(rd->fd);
}

/* A coordinator whose heartbeat is 300 ms (an agent must send one within
 * 3: the helpers do). */
static int
setup_fast(void **state)
{
	return (tc_setup_agents_hb(state, "300"));
}

/* A journal of 1024 events: what falls out of it is quick to reach.  One
 * agent stands for the ranks of many nodes (41,100 live ranks): past the
 * default budget of an agent's. */
static int
setup_small(void **state)
{
	const char	*more[] = { "--events-journal", "1024",
	    "--max-ranks-per-agent", "65536", NULL };

	return (tc_setup_agents_args(state, "300", more));
}

/* Events of a follower that does not read: its socket's buffers hold
 * megabytes, the journal 1024 events. */
#define SLOW_ROUNDS	40

/* Sends n events of job (ranks first...) with a long output directory, then
 * waits for the commit of the last. */
static void
burst(struct fakeagent *fa, const char *job, int first, int n)
{
	int	 k;

	assert_int_equal(fa_heartbeat(fa), 0);
	for (k = 0; k < n; k++)
		assert_int_equal(fa_event(fa, 0, K_STARTED, job, first + k, 3,
		    1, "/a/long/output/directory/for/a/rank/that/writes/its/"
		    "trace/somewhere/deep/below/its/root"), 0);
	assert_int_equal(fa_wait_ack(fa, fa->next_seq - 1, 20000), 0);
}

/* Waits (5 s at most) until the coordinator counts n followers. */
static void
wait_followers(struct tc_coord *tc, long long n)
{
	long long	 t0 = tc_now_ms();

	while (tc_metric(tc, "dynprof_event_followers") != n &&
	    tc_now_ms() - t0 < 5000)
		usleep(50000);
	assert_int_equal(tc_metric(tc, "dynprof_event_followers"), n);
}

/* Agent a joins as node, serving job, whose window 1 is [10, 12]. */
static void
join_window(struct tc_coord *tc, struct fakeagent *a, const char *node,
    const char *job)
{
	char	 path[128];

	assert_int_equal(fa_join(a, tc->agent_port, node, "agent-secret",
	    job), 0);
	snprintf(path, sizeof(path), "/v1/jobs/%s/windows", job);
	tc_call(tc, "POST", path, "{\"start_step\": 10, \"stop_step\": 12}",
	    201);
}

/* The job's summary's revision. */
static long long
revision(struct tc_coord *tc, const char *job)
{
	struct tc_reply	 r;
	char		 path[128];
	long long	 rev;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	r = tc_req(tc, "GET", path, NULL, 200);
	rev = tc_int(r.json, "revision");
	tc_reply_free(&r);
	assert_true(rev > 0);
	return (rev);
}

/* Reads GET path (no follow) to its end line: the events, in n. */
static json_t *
read_all(struct tc_coord *tc, const char *path, long long *end_rev)
{
	struct reader	 rd;
	json_t		*arr = json_array(), *j;

	reader_open(&rd, tc->http_port, path, 0);
	while ((j = reader_event(&rd, 5000)) != NULL) {
		if (strcmp(tc_str(j, "type"), "end") == 0) {
			*end_rev = tc_int(j, "revision");
			json_decref(j);
			assert_null(reader_line(&rd, 2000));	/* closed */
			reader_close(&rd);
			return (arr);
		}
		json_array_append_new(arr, j);
	}
	fail_msg("%s: no end line", path);
	return (NULL);
}

static void
test_resume(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	json_t		*ev, *e;
	long long	 r0, end, mid, last = 0;
	char		 path[256];
	size_t		 i;
	int		 k;

	join_window(tc, &a, "ev-node", "ev");
	r0 = revision(tc, "ev");
	for (k = 0; k < 5; k++)
		assert_int_equal(fa_event_commit(&a, K_STARTED, "ev", k, 1, 10, 5000),
	    0);
	assert_int_equal(fa_event_commit(&a, K_STARTED, "other", 0, 1, 10, 5000),
	    0);	/* not this job's */
	for (k = 0; k < 3; k++)
		assert_int_equal(fa_event_commit(&a, K_STOPPED, "ev", k, 1, 12, 5000),
	    0);
	assert_int_equal(fa_event_commit(&a, K_FAILED, "ev", 4, 1, 11, 5000),
	    0);
	/* A replay of an event already committed is no new event. */
	assert_int_equal(fa_event(&a, 0, K_STOPPED, "ev", 0, 1, 12, NULL), 0);
	assert_int_equal(fa_wait_ack(&a, a.next_seq - 1, 5000), 0);

	snprintf(path, sizeof(path), "/v1/jobs/ev/events?since=%lld", r0);
	ev = read_all(tc, path, &end);
	assert_int_equal(json_array_size(ev), 9);
	json_array_foreach(ev, i, e) {
		assert_string_equal(tc_str(e, "type"), "rank");
		assert_string_equal(tc_str(e, "job"), "ev");
		assert_string_equal(tc_str(e, "node"), "ev-node");
		assert_int_equal(tc_int(e, "window"), 1);
		assert_true(tc_int(e, "rev") > r0);
		assert_true(tc_int(e, "rev") > last);
		last = tc_int(e, "rev");
		assert_true(strlen(tc_str(e, "time")) > 0);
	}
	assert_int_equal(end, revision(tc, "ev"));
	assert_true(end >= last);
	assert_string_equal(tc_str(json_array_get(ev, 0), "kind"), "started");
	assert_int_equal(tc_int(json_array_get(ev, 0), "rank"), 0);
	assert_string_equal(tc_str(json_array_get(ev, 0), "output_dir"),
	    "/out/r");
	assert_string_equal(tc_str(json_array_get(ev, 5), "kind"), "stopped");
	assert_string_equal(tc_str(json_array_get(ev, 8), "kind"), "failed");
	assert_string_equal(tc_str(json_array_get(ev, 8), "error"),
	    "start callback failed");
	mid = tc_int(json_array_get(ev, 4), "rev");
	json_decref(ev);

	/* Resumed from the fifth: the last four, the same revisions. */
	snprintf(path, sizeof(path), "/v1/jobs/ev/events?since=%lld", mid);
	ev = read_all(tc, path, &end);
	assert_int_equal(json_array_size(ev), 4);
	assert_true(tc_int(json_array_get(ev, 0), "rev") > mid);
	assert_int_equal(tc_int(json_array_get(ev, 3), "rev"), last);
	json_decref(ev);
	/* Caught up: nothing. */
	snprintf(path, sizeof(path), "/v1/jobs/ev/events?since=%lld", end);
	ev = read_all(tc, path, &end);
	assert_int_equal(json_array_size(ev), 0);
	json_decref(ev);

	/* Without since: everything kept, the window's change first. */
	ev = read_all(tc, "/v1/jobs/ev/events", &end);
	assert_int_equal(json_array_size(ev), 10);
	e = json_array_get(ev, 0);
	assert_string_equal(tc_str(e, "type"), "window");
	assert_string_equal(tc_str(e, "change"), "scheduled");
	assert_int_equal(tc_int(e, "window"), 1);
	assert_int_equal(tc_int(e, "start_step"), 10);
	assert_int_equal(tc_int(e, "stop_step"), 12);
	assert_true(tc_int(e, "generation") > 0);
	json_decref(ev);

	/* A cancel is a window event too. */
	tc_call(tc, "DELETE", "/v1/jobs/ev/windows/1", NULL, 200);
	snprintf(path, sizeof(path), "/v1/jobs/ev/events?since=%lld", last);
	ev = read_all(tc, path, &end);
	assert_int_equal(json_array_size(ev), 1);
	assert_string_equal(tc_str(json_array_get(ev, 0), "change"),
	    "cancelled");
	json_decref(ev);
	fa_close(&a);
}

static void
test_follow(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct reader	 rd;
	json_t		*j;
	long long	 r0, t0;
	char		 path[256];
	int		 k, beats = 0;

	assert_int_equal(fa_join(&a, tc->agent_port, "fo-node", "agent-secret",
	    "fo"), 0);
	assert_int_equal(fa_event_commit(&a, K_STARTED, "fo", 0, 1, 1, 5000),
	    0);
	r0 = revision(tc, "fo");
	snprintf(path, sizeof(path), "/v1/jobs/fo/events?since=%lld&follow=1",
	    r0);
	reader_open(&rd, tc->http_port, path, 0);
	/* A heartbeat at once, with the revision to resume from. */
	j = reader_line(&rd, 2000);
	assert_non_null(j);
	assert_int_equal(rd.status, 200);
	assert_string_equal(tc_str(j, "type"), "heartbeat");
	assert_int_equal(tc_int(j, "revision"), r0);
	json_decref(j);
	/* Quiet: heartbeats every interval (300 ms). */
	t0 = tc_now_ms();
	while (tc_now_ms() - t0 < 1500 && (j = reader_line(&rd, 700)) !=
	    NULL) {
		assert_string_equal(tc_str(j, "type"), "heartbeat");
		beats++;
		json_decref(j);
		assert_int_equal(fa_heartbeat(&a), 0);
	}
	assert_true(beats >= 3);
	assert_int_equal(tc_metric(tc, "dynprof_event_followers"), 1);
	/* Events as they are committed. */
	for (k = 1; k <= 20; k++) {
		assert_int_equal(fa_event_commit(&a, K_STARTED, "fo", k, 1, 1, 5000),
	    0);
		j = reader_event(&rd, 2000);
		assert_non_null(j);
		assert_int_equal(tc_int(j, "rank"), k);
		json_decref(j);
	}
	/* A burst, all of it, in order. */
	assert_int_equal(fa_heartbeat(&a), 0);
	for (k = 100; k < 600; k++)
		assert_int_equal(fa_event(&a, 0, K_STARTED, "fo", k, 2, 5,
		    NULL), 0);
	for (k = 100; k < 600; k++) {
		j = reader_event(&rd, 5000);
		assert_non_null(j);
		assert_int_equal(tc_int(j, "rank"), k);
		json_decref(j);
	}
	/* The client goes: the coordinator notices at its next write. */
	reader_close(&rd);
	wait_followers(tc, 0);
	fa_close(&a);
}

static void
test_bounds(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct reader	 rd[FOLLOWERS_MAX + 1], slow;
	struct tc_reply	 r;
	json_t		*j;
	long long	 r0, first;
	char		 path[256];
	int		 i, k, got;

	assert_int_equal(fa_join(&a, tc->agent_port, "bd-node", "agent-secret",
	    "bd"), 0);
	r0 = revision(tc, "bd");
	burst(&a, "bd", 0, 1100);
	/* 1024 kept: since r0 is gone. */
	snprintf(path, sizeof(path), "/v1/jobs/bd/events?since=%lld", r0);
	r = tc_req(tc, "GET", path, NULL, 410);
	assert_string_equal(tc_str(r.json, "field"), "since");
	first = tc_int(r.json, "first");
	assert_int_equal(tc_int(r.json, "revision"), r0 + 1100);
	assert_int_equal(first, r0 + 1100 - 1023);
	tc_reply_free(&r);
	/* From just before the oldest kept: all 1024. */
	snprintf(path, sizeof(path), "/v1/jobs/bd/events?since=%lld",
	    first - 1);
	reader_open(&rd[0], tc->http_port, path, 0);
	for (got = 0; (j = reader_event(&rd[0], 2000)) != NULL; got++) {
		if (strcmp(tc_str(j, "type"), "end") == 0) {
			json_decref(j);
			break;
		}
		json_decref(j);
	}
	assert_int_equal(got, 1024);
	reader_close(&rd[0]);
	/* Ahead of the coordinator: 400. */
	snprintf(path, sizeof(path), "/v1/jobs/bd/events?since=%lld",
	    r0 + 1101);
	r = tc_req(tc, "GET", path, NULL, 400);
	assert_string_equal(tc_str(r.json, "field"), "since");
	tc_reply_free(&r);

	/* Followers at once: 64, the 65th refused; one gone, one more. */
	snprintf(path, sizeof(path), "/v1/jobs/bd/events?follow=1&since=%lld",
	    r0 + 1100);
	for (i = 0; i < FOLLOWERS_MAX; i++) {
		reader_open(&rd[i], tc->http_port, path, 0);
		j = reader_line(&rd[i], 2000);
		assert_non_null(j);
		json_decref(j);
	}
	r = tc_req(tc, "GET", path, NULL, 503);
	assert_true(strlen(tc_str(r.json, "error")) > 0);
	tc_reply_free(&r);
	assert_int_equal(tc_metric(tc,
	    "dynprof_event_followers_refused_total"), 1);
	/* Without follow, a reader is no follower. */
	snprintf(path, sizeof(path), "/v1/jobs/bd/events?since=%lld",
	    r0 + 1099);
	tc_call(tc, "GET", path, NULL, 200);
	reader_close(&rd[0]);
	wait_followers(tc, FOLLOWERS_MAX - 1);
	snprintf(path, sizeof(path), "/v1/jobs/bd/events?follow=1&since=%lld",
	    r0 + 1100);
	reader_open(&rd[0], tc->http_port, path, 0);
	j = reader_line(&rd[0], 2000);
	assert_non_null(j);
	assert_int_equal(rd[0].status, 200);
	json_decref(j);
	for (i = 0; i < FOLLOWERS_MAX; i++)
		reader_close(&rd[i]);
	wait_followers(tc, 0);

	/*
	 * A follower that does not read: once what it has yet to read fell
	 * out of the journal it is closed, and the others are not held back.
	 * (The agent was silent meanwhile: it comes back.)
	 */
	fa_close(&a);
	assert_int_equal(fa_join(&a, tc->agent_port, "bd-node", "agent-secret",
	    "bd"), 0);
	snprintf(path, sizeof(path), "/v1/jobs/bd/events?follow=1&since=%lld",
	    revision(tc, "bd"));
	reader_open(&slow, tc->http_port, path, 2048);
	reader_open(&rd[0], tc->http_port, path, 0);
	j = reader_line(&rd[0], 2000);
	json_decref(j);
	for (got = 0, k = 0; k < SLOW_ROUNDS; k++) {
		burst(&a, "bd", 10000 + k * 1000, 1000);
		for (; got < (k + 1) * 1000 && (j = reader_event(&rd[0],
		    5000)) != NULL; got++) {
			assert_int_equal(tc_int(j, "rank"), 10000 + got);
			json_decref(j);
		}
		assert_int_equal(got, (k + 1) * 1000);
	}
	assert_int_equal(tc_metric(tc,
	    "dynprof_event_followers_dropped_total"), 1);
	assert_int_equal(tc_metric(tc, "dynprof_event_followers"), 1);
	/* What the slow one gets ends: the close, not the end. */
	while ((j = reader_line(&slow, 2000)) != NULL) {
		assert_string_not_equal(tc_str(j, "type"), "end");
		json_decref(j);
	}
	assert_true(slow.eof);
	reader_close(&slow);
	reader_close(&rd[0]);
	fa_close(&a);
}

static void
test_restart_and_bad(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a;
	struct tc_reply	 r;
	char		 tok[512], path[256];
	const char	*extra[] = { "-q", "--agent-token-file", tok,
	    "--heartbeat-ms", "300", NULL };
	static const struct {
		const char	*query;
		const char	*field;
	} bad[] = {
		{ "since=x", "since" },
		{ "since=-1", "since" },
		{ "since=", "since" },
		{ "since=1&since=2", "since" },
		{ "follow=2", "follow" },
		{ "follow=yes", "follow" },
		{ "follow=1&follow=1", "follow" },
		{ "until=5", "until" },
	};
	long long	 before, after;
	size_t		 i;

	join_window(tc, &a, "rs-node", "rs");
	assert_int_equal(fa_event_commit(&a, K_STARTED, "rs", 0, 1, 1, 5000),
	    0);
	before = revision(tc, "rs");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(path, sizeof(path), "/v1/jobs/rs/events?%s",
		    bad[i].query);
		r = tc_req(tc, "GET", path, NULL, 400);
		if (strcmp(tc_str(r.json, "field"), bad[i].field) != 0)
			fail_msg("%s: field %s", path, tc_str(r.json, "field"));
		tc_reply_free(&r);
	}
	tc_call(tc, "GET", "/v1/jobs/none/events", NULL, 404);
	tc_call(tc, "POST", "/v1/jobs/rs/events", "{}", 405);
	fa_close(&a);

	/* After a restart the revisions go on above; the old ones are
	 * not kept: the history loaded is told again at new revisions
	 * (journal_rebuild.c), the window's and the rank's events. */
	snprintf(tok, sizeof(tok), "%s/agent.token", tc->dir);
	assert_int_equal(tc_stop(tc, SIGTERM), 0);
	assert_int_equal(tc_start(tc, extra), 0);
	after = revision(tc, "rs");
	assert_true(after > before);
	snprintf(path, sizeof(path), "/v1/jobs/rs/events?since=%lld", before);
	r = tc_req(tc, "GET", path, NULL, 410);
	assert_true(tc_int(r.json, "first") > before);
	assert_int_equal(tc_int(r.json, "first"), after - 1);	/* 2 kept */
	tc_reply_free(&r);
	snprintf(path, sizeof(path), "/v1/jobs/rs/events?since=%lld", after);
	r = tc_req(tc, "GET", path, NULL, 200);
	assert_non_null(strstr(r.body, "\"type\":\"end\""));
	tc_reply_free(&r);
}

/* Opens a follower of job ro with token and reads its first line: 200. */
static void
follow_as(struct tc_coord *tc, struct reader *rd, const char *token)
{
	json_t	*j;

	reader_open_as(rd, tc->http_port, "/v1/jobs/ro/events?follow=1", 0,
	    token);
	j = reader_line(rd, 5000);
	assert_non_null(j);
	assert_int_equal(rd->status, 200);
	json_decref(j);
}

/* GET path with token is refused with 503 naming who. */
static void
follow_refused(struct tc_coord *tc, const char *token, const char *want)
{
	struct tc_reply	 r;

	assert_int_equal(tc_http(tc->http_port, "GET",
	    "/v1/jobs/ro/events?follow=1", NULL, token, &r), 0);
	assert_int_equal(r.status, 503);
	if (strstr(r.body, want) == NULL)
		fail_msg("want \"%s\" in %s", want, r.body);
	tc_reply_free(&r);
}

/*
 * Viewers following at their most leave room for the operator: the viewer
 * token holds FOLLOWERS_MAX - FOLLOWERS_OPERATOR followers at most, the
 * operator's the rest.
 */
static void
test_operator_reserve(void **state)
{
	struct tc_coord	 t;
	struct reader	*rd;
	struct tc_reply	 r;
	char		 op[400], view[400];
	const char	*extra[] = { "-q", "--heartbeat-ms", "300",
	    "--admin-token-file", op, "--viewer-token-file", view, NULL };
	int		 i, nviewer = FOLLOWERS_MAX - FOLLOWERS_OPERATOR;

	(void)state;
	assert_non_null(rd = calloc(FOLLOWERS_MAX, sizeof(*rd)));
	assert_int_equal(tc_setup_dir(&t), 0);
	assert_int_equal(tc_write_file(&t, "op.token", "op-secret\n", op,
	    sizeof(op)), 0);
	assert_int_equal(tc_write_file(&t, "view.token", "view-secret\n", view,
	    sizeof(view)), 0);
	assert_int_equal(tc_start(&t, extra), 0);
	assert_int_equal(tc_http(t.http_port, "POST", "/v1/jobs/ro/windows",
	    "{\"start_step\": 10, \"steps\": 2}", "op-secret", &r), 0);
	assert_int_equal(r.status, 201);
	tc_reply_free(&r);
	for (i = 0; i < nviewer; i++)
		follow_as(&t, &rd[i], "view-secret");
	follow_refused(&t, "view-secret", "kept for the operator token");
	for (; i < FOLLOWERS_MAX; i++)
		follow_as(&t, &rd[i], "op-secret");
	follow_refused(&t, "op-secret", "the most the coordinator serves");
	/* A viewer gone (noticed at the next heartbeat), a viewer more. */
	reader_close(&rd[0]);
	for (i = 0; i < 100; i++) {
		reader_open_as(&rd[0], t.http_port,
		    "/v1/jobs/ro/events?follow=1", 0, "view-secret");
		json_decref(reader_line(&rd[0], 5000));
		if (rd[0].status == 200)
			break;
		reader_close(&rd[0]);
		usleep(50000);
	}
	assert_int_equal(rd[0].status, 200);
	follow_refused(&t, "view-secret", "kept for the operator token");
	reader_close(&rd[0]);
	for (i = 1; i < FOLLOWERS_MAX; i++)
		reader_close(&rd[i]);
	free(rd);
	assert_int_equal(tc_stop(&t, SIGTERM), 0);
	tc_cleanup(&t);
}

/* Attach-detach cycles of one process, each an attached and a detached
 * event (the same pid every time). */
#define CYCLES		10000

/*
 * A process that attaches and detaches 10,000 times, through the real agent:
 * the stream carries each of its attached and detached events once, as
 * /metrics counts them.  The agent forwards the logs of the rank's slots one
 * slot after the other, so a new attach may come before the last detach: it
 * is no replay of the attach before it.
 */
static void
test_process_cycles(void **state)
{
	struct tc_coord		*tc = *state;
	struct agentproc	 ap;
	struct reader		 rd;
	json_t			*j;
	char			 coord[64], tok[512], rankbin[512], log[400];
	char			 cycles[16];
	const char		*aextra[] = { "--coordinator", coord, "--node",
	    "cy-node", "--token-file", tok, NULL };
	/* One step of 1 ms a cycle: the agent keeps up (a rank that comes
	 * back faster than its events are committed finds every slot's log
	 * pending, and the oldest are lost: docs/events.md, claims). */
	const char		*argv[] = { rankbin, "cy", "0", "1", "1", log,
	    "cycles", cycles, NULL };
	long long		 deadline, attached = 0, detached = 0, last = 0;
	pid_t			 pid;
	int			 status;

	snprintf(coord, sizeof(coord), "127.0.0.1:%d", tc->agent_port);
	snprintf(tok, sizeof(tok), "%s/agent.token", tc->dir);
	snprintf(cycles, sizeof(cycles), "%d", CYCLES);
	assert_int_equal(ap_setup(&ap), 0);
	snprintf(rankbin, sizeof(rankbin), "%s/tests/rankproc", ap_build_dir());
	snprintf(log, sizeof(log), "%s/rank.log", ap.dir);
	assert_int_equal(ap_start(&ap, aextra), 0);
	/* The job exists before its first rank: followed from its start. */
	tc_call(tc, "POST", "/v1/jobs/cy/windows",
	    "{\"start_step\": 1000000, \"stop_step\": 1000001}", 201);
	reader_open(&rd, tc->http_port, "/v1/jobs/cy/events?follow=1", 0);
	pid = ap_spawn(&ap, argv);
	assert_true(pid > 0);
	deadline = tc_now_ms() + 120000;
	while ((attached < CYCLES || detached < CYCLES) &&
	    tc_now_ms() < deadline &&
	    (j = reader_line(&rd, (int)(deadline - tc_now_ms()))) != NULL) {
		if (strcmp(tc_str(j, "type"), "rank") == 0) {
			assert_int_equal(tc_int(j, "rank"), 0);
			assert_true(tc_int(j, "rev") > last);
			last = tc_int(j, "rev");
			if (strcmp(tc_str(j, "kind"), "attached") == 0)
				attached++;
			else if (strcmp(tc_str(j, "kind"), "detached") == 0)
				detached++;
			else
				fail_msg("unexpected event %s",
				    tc_str(j, "kind"));
		}
		json_decref(j);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Nothing more: no event twice. */
	deadline = tc_now_ms() + 1000;
	while (tc_now_ms() < deadline &&
	    (j = reader_line(&rd, (int)(deadline - tc_now_ms()))) != NULL) {
		if (strcmp(tc_str(j, "type"), "rank") == 0)
			fail_msg("an event past the process's %d cycles: %s",
			    CYCLES, tc_str(j, "kind"));
		json_decref(j);
	}
	reader_close(&rd);
	assert_int_equal(tc_metric(tc,
	    "dynprof_events_total{kind=\"attached\"}"), CYCLES);
	assert_int_equal(tc_metric(tc,
	    "dynprof_events_total{kind=\"detached\"}"), CYCLES);
	assert_int_equal(attached, CYCLES);
	assert_int_equal(detached, CYCLES);
	tc_wait_str(tc, "/v1/jobs/cy/ranks", "ranks.0.state", "gone");
	ap_cleanup(&ap);
}

/*
 * A collection is the word of the agent that ran the rank: node cl-a runs
 * rank 0 of job "cl" through window 1; node cl-b, authenticated too, says
 * first that rank 0's trace of window 1 is its own archive elsewhere (the
 * coordinator keeps one record per rank and window).  Refused and counted:
 * the index has cl-a's report, and rank 0 stays cl-a's.
 */
static void
test_collected_elsewhere(void **state)
{
	struct tc_coord	*tc = *state;
	struct fakeagent a, b;
	struct tc_reply	 r;
	json_t		*e;
	const char	*sha_a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	const char	*sha_b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
	long long	 refused;

	assert_int_equal(fa_join(&a, tc->agent_port, "cl-a", "agent-secret",
	    "cl"), 0);
	assert_int_equal(fa_join(&b, tc->agent_port, "cl-b", "agent-secret",
	    "cl"), 0);
	tc_call(tc, "POST", "/v1/jobs/cl/windows",
	    "{\"start_step\": 10, \"stop_step\": 12}", 201);
	assert_int_equal(fa_event_commit(&a, K_STARTED, "cl", 0, 1, 10, 5000),
	    0);
	assert_int_equal(fa_event_commit(&a, K_STOPPED, "cl", 0, 1, 12, 5000),
	    0);
	refused = tc_metric(tc, "dynprof_events_refused_total");
	assert_int_equal(fa_collected(&b, "cl", 0, 1, 666, sha_b,
	    "http://cl-b.example/rank-0.tar.zst", 5000), 0);
	assert_int_equal(fa_collected(&a, "cl", 0, 1, 100, sha_a,
	    "/store/cl/window-1/rank-0.tar.zst", 5000), 0);

	r = tc_req(tc, "GET", "/v1/jobs/cl/windows/1/traces", NULL, 200);
	e = json_array_get(json_object_get(r.json, "traces"), 0);
	assert_non_null(e);
	assert_int_equal(tc_int(e, "rank"), 0);
	assert_string_equal(tc_str(e, "location"),
	    "/store/cl/window-1/rank-0.tar.zst");
	assert_string_equal(tc_str(e, "sha256"), sha_a);
	tc_reply_free(&r);
	r = tc_req(tc, "GET", "/v1/jobs/cl/ranks", NULL, 200);
	assert_string_equal(tc_str(json_array_get(json_object_get(r.json,
	    "ranks"), 0), "node"), "cl-a");
	tc_reply_free(&r);
	assert_int_equal(tc_metric(tc, "dynprof_events_refused_total"),
	    refused + 1);
	fa_close(&a);
	fa_close(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_resume, setup_fast,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_follow, setup_fast,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup_small,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_restart_and_bad,
		    setup_fast, tc_teardown),
		cmocka_unit_test(test_operator_reserve),
		cmocka_unit_test_setup_teardown(test_process_cycles, setup_fast,
		    tc_teardown),
		cmocka_unit_test_setup_teardown(test_collected_elsewhere,
		    setup_fast, tc_teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
