/*
 * dynprofctl's HTTP client: URL parsing, and requests against a scripted
 * server (answers, errors, streaming, redirects).
 */

#include <sys/socket.h>
#include <sys/wait.h>

#include <fcntl.h>

#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "ctl.h"

static void
test_url_parse(void **state)
{
	struct ctl_url	 u;
	struct ctl_conn	 c;
	const char	*why;

	(void)state;
	assert_int_equal(ctl_url_parse("http://127.0.0.1:7879", &u, &why), 0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_string_equal(u.port, "7879");
	assert_string_equal(u.base, "");
	assert_false(u.https);

	assert_int_equal(ctl_url_parse("coord.example:81/dynprof/", &u, &why),
	    0);
	assert_string_equal(u.host, "coord.example");
	assert_string_equal(u.port, "81");
	assert_string_equal(u.base, "/dynprof");

	assert_int_equal(ctl_url_parse("http://[::1]:9000", &u, &why), 0);
	assert_string_equal(u.host, "::1");
	assert_string_equal(u.port, "9000");

	assert_int_equal(ctl_url_parse("http://host", &u, &why), 0);
	assert_string_equal(u.port, "80");

	assert_int_equal(ctl_url_parse("https://host", &u, &why), 0);
	assert_true(u.https);
	assert_string_equal(u.port, "443");
	assert_int_equal(ctl_url_parse("HTTPS://host:8443/x", &u, &why), 0);
	assert_true(u.https);
	assert_string_equal(u.port, "8443");
	assert_string_equal(u.base, "/x");

	assert_int_equal(ctl_url_parse("ftp://host", &u, &why), -1);
	assert_int_equal(ctl_url_parse("http://:80", &u, &why), -1);
	assert_string_equal(why, "no host in URL");
	assert_int_equal(ctl_url_parse("http://h:70000", &u, &why), -1);
	assert_int_equal(ctl_url_parse("http://h:12x", &u, &why), -1);
	assert_int_equal(ctl_url_parse("http://h:", &u, &why), -1);
	assert_int_equal(ctl_url_parse("http://[::1", &u, &why), -1);
	assert_int_equal(ctl_url_parse("http://h:1?x=1", &u, &why), -1);
	assert_int_equal(ctl_url_parse("http://u@h:1", &u, &why), -1);
	assert_int_equal(ctl_url_parse("http://h:1/a b", &u, &why), -1);
	assert_int_equal(ctl_url_parse("", &u, &why), -1);

	/* A list: each parsed, in order; any bad one refuses the whole. */
	assert_int_equal(ctl_urls_parse("http://a:1,https://[::1]:2/p", &c,
	    &why), 0);
	assert_int_equal(c.nurls, 2);
	assert_string_equal(c.urls[0].host, "a");
	assert_false(c.urls[0].https);
	assert_string_equal(c.urls[1].host, "::1");
	assert_true(c.urls[1].https);
	assert_string_equal(c.urls[1].base, "/p");
	assert_int_equal(ctl_urls_parse("http://a:1,", &c, &why), -1);
	assert_int_equal(ctl_urls_parse("http://a:1,ftp://b", &c, &why), -1);
	assert_int_equal(ctl_urls_parse("a,b,c,d,e,f,g,h,i", &c, &why), -1);
	assert_string_equal(why, "more than 8 coordinators");
}

/*
 * A listening socket on 127.0.0.1, port 0; returns the fd, and conn names it
 * as its only coordinator.
 */
static int
listener(struct ctl_conn *conn)
{
	struct ctl_url		*u = &conn->urls[0];
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	memset(conn, 0, sizeof(*conn));
	conn->nurls = 1;
	snprintf(u->host, sizeof(u->host), "127.0.0.1");
	snprintf(u->port, sizeof(u->port), "%d", ntohs(sin.sin_port));
	return (fd);
}

/*
 * Serves one connection in a child: reads the request (headers and a body of
 * Content-Length), sends it back through a pipe, answers with answer, then
 * (if not NULL) with then a second later and, if linger, keeps the connection
 * open for 10 s (or until killed).
 */
static pid_t
serve_once(int lfd, const char *answer, const char *then, int linger,
    int *reqfd)
{
	char	 buf[8192], *hend, *cl;
	size_t	 len = 0, want;
	ssize_t	 n;
	pid_t	 pid;
	int	 p[2], c;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid > 0) {
		close(p[1]);
		*reqfd = p[0];
		return (pid);
	}
	close(p[0]);
	if ((c = accept(lfd, NULL, NULL)) == -1)
		_exit(1);
	for (;;) {
		n = read(c, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			_exit(1);
		len += (size_t)n;
		buf[len] = '\0';
		if ((hend = strstr(buf, "\r\n\r\n")) == NULL)
			continue;
		want = 0;
		if ((cl = strcasestr(buf, "Content-Length: ")) != NULL)
			want = strtoul(cl + 16, NULL, 10);
		if (len >= (size_t)(hend + 4 - buf) + want)
			break;
	}
	if (write(p[1], buf, len) != (ssize_t)len ||
	    write(c, answer, strlen(answer)) != (ssize_t)strlen(answer))
		_exit(1);
	if (then != NULL) {
		sleep(1);
		if (write(c, then, strlen(then)) != (ssize_t)strlen(then))
			_exit(1);
	}
	if (linger)
		sleep(10);
	close(c);
	_exit(0);
}

/* Reads what serve_once's child got into req (NUL-terminated), reaps it. */
static void
served(pid_t pid, int rfd, char *req, size_t len)
{
	ssize_t	 n;
	int	 status;

	n = read(rfd, req, len - 1);
	assert_true(n > 0);
	req[n] = '\0';
	close(rfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void
test_http_client(void **state)
{
	struct ctl_response	 r;
	struct ctl_conn		 conn;
	char			 err[256], req[8192];
	pid_t			 pid, pid2;
	int64_t			 t0;
	int			 lfd, rfd, rfd2, status;

	(void)state;
	/* Proxies named in the environment are not used: the token goes
	 * straight to the coordinator, as it always did. */
	setenv("http_proxy", "http://127.0.0.1:1", 1);
	setenv("ALL_PROXY", "http://127.0.0.1:1", 1);
	/* A request with a token and a body, a chunked answer. */
	lfd = listener(&conn);
	conn.token = "tok";
	snprintf(conn.urls[0].base, sizeof(conn.urls[0].base), "/prefix");
	pid = serve_once(lfd, "HTTP/1.1 201 Created\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"
	    "5\r\n{\"id\"\r\n3\r\n:4}\r\n0\r\n\r\n", NULL, 0, &rfd);
	assert_int_equal(ctl_http_request(&conn, "POST", "/v1/jobs/J/windows",
	    "{\"steps\":1}", 11, 5000, NULL, NULL, &r, err, sizeof(err)),
	    CTL_EXIT_OK);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "{\"id\":4}");
	ctl_http_free(&r);
	served(pid, rfd, req, sizeof(req));
	if (strncmp(req, "POST /prefix/v1/jobs/J/windows HTTP/1.1\r\n", 41) != 0)
		fail_msg("request line: %s", req);
	assert_non_null(strstr(req, "\r\nAuthorization: Bearer tok\r\n"));
	assert_non_null(strstr(req, "\r\nContent-Length: 11\r\n"));
	assert_non_null(strstr(req, "\r\nContent-Type: application/json\r\n"));
	assert_non_null(strstr(req, "\r\n\r\n{\"steps\":1}"));
	conn.token = NULL;
	conn.urls[0].base[0] = '\0';

	/* A DELETE without a body: no Content-Type at all. */
	pid = serve_once(lfd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
	    NULL, 0, &rfd);
	assert_int_equal(ctl_http_request(&conn, "DELETE", "/v1/jobs/J/windows/"
	    "1", NULL, 0, 5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_OK);
	ctl_http_free(&r);
	served(pid, rfd, req, sizeof(req));
	assert_int_equal(strncmp(req, "DELETE /v1/jobs/J/windows/1 HTTP/1.1\r\n",
	    38), 0);
	assert_null(strcasestr(req, "Content-Type"));

	/* Not HTTP at all; a second connection asks what is there. */
	pid = serve_once(lfd, "hello\n", NULL, 0, &rfd);
	pid2 = serve_once(lfd, "hello\n", NULL, 0, &rfd2);
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_UNREACHABLE);
	assert_non_null(strstr(err, "not an HTTP answer"));
	served(pid, rfd, req, sizeof(req));
	assert_null(strstr(req, "Authorization"));
	served(pid2, rfd2, req, sizeof(req));
	assert_null(strstr(req, "Authorization"));

	/* A body shorter than its Content-Length. */
	pid = serve_once(lfd, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"
	    "short", NULL, 0, &rfd);
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_UNREACHABLE);
	assert_non_null(strstr(err, "truncated"));
	served(pid, rfd, req, sizeof(req));

	/* No length: the body runs to the end of the connection. */
	pid = serve_once(lfd, "HTTP/1.0 404 Not Found\r\n\r\n{\"error\":\"x\"}",
	    NULL, 0, &rfd);
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_OK);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.body, "{\"error\":\"x\"}");
	ctl_http_free(&r);
	served(pid, rfd, req, sizeof(req));

	/* A whole answer while the server keeps the connection: no wait. */
	pid = serve_once(lfd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
	    NULL, 1, &rfd);
	t0 = ctl_now_ms();
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_OK);
	assert_true(ctl_now_ms() - t0 < 3000);
	assert_string_equal(r.body, "{}");
	ctl_http_free(&r);
	close(rfd);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);

	/* Connected, but nobody answers: a timeout, not a hang. */
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    300, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_TIMEOUT);
	assert_string_equal(err, "no answer within 0.300 s");
	close(lfd);

	/* Nobody listening. */
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    1000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_UNREACHABLE);
	assert_string_equal(err, "Connection refused");
}

/* A sink that notes when the first piece came and keeps the whole body. */
struct sink_log {
	int64_t	 first_ms;
	int	 calls;
	char	 body[256];
	size_t	 len;
};

static int
sink_record(void *arg, const char *data, size_t len)
{
	struct sink_log	*s = arg;

	if (s->calls++ == 0)
		s->first_ms = ctl_now_ms();
	if (len > sizeof(s->body) - 1 - s->len)
		return (-1);
	memcpy(s->body + s->len, data, len);
	s->len += len;
	s->body[s->len] = '\0';
	return (0);
}

/* A streamed answer reaches the sink piece by piece, before its end. */
static void
test_http_stream(void **state)
{
	struct ctl_response	 r;
	struct ctl_conn		 conn;
	struct sink_log		 s;
	char			 err[256], req[8192];
	pid_t			 pid;
	int64_t			 t0;
	int			 lfd, rfd;

	(void)state;
	memset(&s, 0, sizeof(s));
	lfd = listener(&conn);
	pid = serve_once(lfd, "HTTP/1.1 200 OK\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n6\r\n{\"a\":1\r\n",
	    "1\r\n}\r\n0\r\n\r\n", 0, &rfd);
	t0 = ctl_now_ms();
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    5000, sink_record, &s, &r, err, sizeof(err)), CTL_EXIT_OK);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.len, 0);
	assert_string_equal(s.body, "{\"a\":1}");
	assert_true(s.calls >= 2);
	/* The first piece came before the second was even sent. */
	assert_true(s.first_ms - t0 < 900);
	assert_true(ctl_now_ms() - t0 >= 900);
	ctl_http_free(&r);
	served(pid, rfd, req, sizeof(req));

	/* An error answer is kept whole for the message, not streamed. */
	memset(&s, 0, sizeof(s));
	pid = serve_once(lfd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 13\r\n"
	    "\r\n{\"error\":\"x\"}", NULL, 0, &rfd);
	assert_int_equal(ctl_http_request(&conn, "GET", "/v1/jobs", NULL, 0,
	    5000, sink_record, &s, &r, err, sizeof(err)), CTL_EXIT_OK);
	assert_int_equal(r.status, 403);
	assert_string_equal(r.body, "{\"error\":\"x\"}");
	assert_int_equal(s.calls, 0);
	ctl_http_free(&r);
	served(pid, rfd, req, sizeof(req));
	close(lfd);
}

/*
 * 307/308 redirects: followed with the same method, body and token to a
 * coordinator in the list; refused (nothing sent there) to any other.
 */
static void
test_http_redirect(void **state)
{
	struct ctl_response	 r;
	struct ctl_conn		 conn, two;
	char			 err[512], req[8192], answer[256];
	pid_t			 pid1, pid2;
	int			 lfd1, lfd2, rfd1, rfd2, fl;

	(void)state;
	lfd1 = listener(&conn);
	lfd2 = listener(&two);
	two.urls[1] = two.urls[0];
	two.urls[0] = conn.urls[0];
	two.nurls = 2;
	two.token = "tok";
	snprintf(answer, sizeof(answer), "HTTP/1.1 307 Temporary Redirect\r\n"
	    "Location: http://127.0.0.1:%s/v1/jobs/J/windows\r\n"
	    "Content-Length: 0\r\n\r\n", two.urls[1].port);

	pid1 = serve_once(lfd1, answer, NULL, 0, &rfd1);
	pid2 = serve_once(lfd2, "HTTP/1.1 201 Created\r\nContent-Length: 8\r\n"
	    "\r\n{\"id\":9}", NULL, 0, &rfd2);
	assert_int_equal(ctl_http_request(&two, "POST", "/v1/jobs/J/windows",
	    "{\"steps\":2}", 11, 5000, NULL, NULL, &r, err, sizeof(err)),
	    CTL_EXIT_OK);
	assert_int_equal(r.status, 201);
	assert_string_equal(r.body, "{\"id\":9}");
	ctl_http_free(&r);
	served(pid1, rfd1, req, sizeof(req));
	served(pid2, rfd2, req, sizeof(req));
	assert_int_equal(strncmp(req, "POST /v1/jobs/J/windows HTTP/1.1\r\n",
	    34), 0);
	assert_non_null(strstr(req, "\r\nAuthorization: Bearer tok\r\n"));
	assert_non_null(strstr(req, "\r\n\r\n{\"steps\":2}"));

	/* Only the first is named: the same redirect is refused. */
	conn.token = "tok";
	pid1 = serve_once(lfd1, answer, NULL, 0, &rfd1);
	assert_int_equal(ctl_http_request(&conn, "POST", "/v1/jobs/J/windows",
	    "{\"steps\":2}", 11, 5000, NULL, NULL, &r, err, sizeof(err)),
	    CTL_EXIT_REFUSED);
	assert_non_null(strstr(err, "not one of the coordinators given"));
	served(pid1, rfd1, req, sizeof(req));
	fl = fcntl(lfd2, F_GETFL);
	assert_int_equal(fcntl(lfd2, F_SETFL, fl | O_NONBLOCK), 0);
	assert_int_equal(accept(lfd2, NULL, NULL), -1);

	/* The right host and port but another scheme: refused too. */
	snprintf(answer, sizeof(answer), "HTTP/1.1 308 Permanent Redirect\r\n"
	    "Location: https://127.0.0.1:%s/v1/jobs\r\n"
	    "Content-Length: 0\r\n\r\n", two.urls[1].port);
	pid1 = serve_once(lfd1, answer, NULL, 0, &rfd1);
	assert_int_equal(ctl_http_request(&two, "GET", "/v1/jobs", NULL, 0,
	    5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_REFUSED);
	served(pid1, rfd1, req, sizeof(req));

	/* A loop between named coordinators ends. */
	snprintf(answer, sizeof(answer), "HTTP/1.1 307 Temporary Redirect\r\n"
	    "Location: http://127.0.0.1:%s/v1/jobs\r\n"
	    "Content-Length: 0\r\n\r\n", two.urls[0].port);
	pid1 = fork();
	assert_true(pid1 >= 0);
	if (pid1 == 0) {
		for (fl = 0; fl <= CTL_REDIRECTS_MAX; fl++) {
			pid2 = serve_once(lfd1, answer, NULL, 0, &rfd1);
			served(pid2, rfd1, req, sizeof(req));
		}
		_exit(0);
	}
	assert_int_equal(ctl_http_request(&two, "GET", "/v1/jobs", NULL, 0,
	    5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_REFUSED);
	assert_non_null(strstr(err, "more than 4 redirects"));
	assert_int_equal(waitpid(pid1, &fl, 0), pid1);
	assert_true(WIFEXITED(fl) && WEXITSTATUS(fl) == 0);
	close(lfd1);
	close(lfd2);
}

/* Serves every connection on lfd with answer, in a child, until killed. */
static pid_t
serve_all(int lfd, const char *answer)
{
	char	 buf[8192];
	pid_t	 pid;
	int	 c;

	pid = fork();
	assert_true(pid >= 0);
	if (pid > 0)
		return (pid);
	for (;;) {
		if ((c = accept(lfd, NULL, NULL)) == -1)
			_exit(1);
		if (read(c, buf, sizeof(buf)) <= 0 ||
		    write(c, answer, strlen(answer)) != (ssize_t)strlen(answer))
			_exit(1);
		close(c);
	}
}

/* Returns 1 if a connection waits on lfd (it is then accepted and closed). */
static int
pending(int lfd)
{
	int	 fl, c;

	fl = fcntl(lfd, F_GETFL);
	assert_int_equal(fcntl(lfd, F_SETFL, fl | O_NONBLOCK), 0);
	c = accept(lfd, NULL, NULL);
	assert_int_equal(fcntl(lfd, F_SETFL, fl), 0);
	if (c == -1)
		return (0);
	close(c);
	return (1);
}

/*
 * Several coordinators: a hung one (connected, never answering) is passed
 * over for a GET after CTL_ANSWER_MS, never for a write; a refused one for
 * any method; while the others redirect to one that is gone, they are all
 * asked again until one answers, and the error names the one gone.
 */
static void
test_http_failover(void **state)
{
	struct ctl_response	 r;
	struct ctl_conn		 hung, ok, gone, c;
	char			 err[512], req[8192], answer[256];
	pid_t			 pid, pid2;
	int64_t			 t0, took;
	int			 lhung, lok, lgone, rfd, st, i;

	(void)state;
	lhung = listener(&hung);
	lok = listener(&ok);
	lgone = listener(&gone);
	close(lgone);		/* nobody listens there any more */
	memset(&c, 0, sizeof(c));
	c.urls[0] = hung.urls[0];
	c.urls[1] = ok.urls[0];
	c.nurls = 2;

	/* A GET: the hung one first, the other answers in time. */
	pid = serve_once(lok, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
	    NULL, 0, &rfd);
	t0 = ctl_now_ms();
	assert_int_equal(ctl_http_request(&c, "GET", "/v1/jobs", NULL, 0,
	    10000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_OK);
	took = ctl_now_ms() - t0;
	assert_true(took >= CTL_ANSWER_MS - 100 && took < CTL_ANSWER_MS + 2000);
	assert_string_equal(r.body, "{}");
	ctl_http_free(&r);
	served(pid, rfd, req, sizeof(req));
	assert_true(pending(lhung));

	/* A write that may have reached the hung one is not sent again. */
	assert_int_equal(ctl_http_request(&c, "POST", "/v1/jobs/J/windows",
	    "{}", 2, 3000, NULL, NULL, &r, err, sizeof(err)),
	    CTL_EXIT_TIMEOUT);
	if (strcmp(err, hung.urls[0].host) == 0 ||
	    strstr(err, hung.urls[0].port) == NULL ||
	    strstr(err, "no answer within 3.000 s") == NULL)
		fail_msg("err: %s", err);
	assert_true(pending(lhung));
	assert_false(pending(lok));

	/* Refused: nothing reached it, so a write goes to the next. */
	c.urls[0] = gone.urls[0];
	pid = serve_once(lok, "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n"
	    "\r\n{}", NULL, 0, &rfd);
	assert_int_equal(ctl_http_request(&c, "POST", "/v1/jobs/J/windows",
	    "{}", 2, 5000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_OK);
	assert_int_equal(r.status, 201);
	ctl_http_free(&r);
	served(pid, rfd, req, sizeof(req));

	/*
	 * The first two redirect to the third, gone (a dead leader): asked
	 * again after a pause, the first answers itself (it leads now).
	 */
	c.urls[0] = hung.urls[0];
	close(lhung);
	lhung = listener(&hung);
	c.urls[0] = hung.urls[0];
	c.urls[2] = gone.urls[0];
	c.nurls = 3;
	snprintf(answer, sizeof(answer), "HTTP/1.1 307 Temporary Redirect\r\n"
	    "Location: http://127.0.0.1:%s/v1/jobs/J/windows\r\n"
	    "Content-Length: 0\r\n\r\n", gone.urls[0].port);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (i = 0; i < 3; i++) {
			pid2 = serve_once(lhung, i < 2 ? answer :
			    "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n"
			    "\r\n{}", NULL, 0, &rfd);
			served(pid2, rfd, req, sizeof(req));
		}
		_exit(0);
	}
	pid2 = serve_all(lok, answer);
	assert_int_equal(ctl_http_request(&c, "POST", "/v1/jobs/J/windows",
	    "{}", 2, 10000, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_OK);
	assert_int_equal(r.status, 201);
	ctl_http_free(&r);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	/* Never answered: the error names the one that refused. */
	c.urls[0] = ok.urls[0];
	c.nurls = 3;
	t0 = ctl_now_ms();
	assert_int_equal(ctl_http_request(&c, "GET", "/v1/jobs", NULL, 0,
	    1500, NULL, NULL, &r, err, sizeof(err)), CTL_EXIT_UNREACHABLE);
	took = ctl_now_ms() - t0;
	assert_true(took >= 1400 && took < 3000);
	snprintf(answer, sizeof(answer), "127.0.0.1:%s: Connection refused",
	    gone.urls[0].port);
	assert_string_equal(err, answer);
	kill(pid2, SIGKILL);
	assert_int_equal(waitpid(pid2, &st, 0), pid2);
	close(lhung);
	close(lok);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_parse),
		cmocka_unit_test(test_http_client),
		cmocka_unit_test(test_http_stream),
		cmocka_unit_test(test_http_redirect),
		cmocka_unit_test(test_http_failover),
	};

	int	 rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests_name("ctl_http", tests, NULL, NULL);
	curl_global_cleanup();
	return (rc);
}
