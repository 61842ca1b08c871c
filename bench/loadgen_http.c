/*
 * Helpers of the end-to-end benchmarks: an admin API client that runs on the
 * benchmark's own event loop (so that measuring never blocks the connections it
 * measures), /proc readers and order statistics.
 */

#include <sys/resource.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "addr.h"
#include "loadgen_http.h"
#include "procstat.h"

struct loadgen_http {
	struct evhttp_connection	*conn;
	char				 host[256];
	char				 auth[512];
};

struct loadgen_http_req {
	loadgen_http_cb	 cb;
	void		*arg;
};

/* Splits "HOST:PORT" (a URL prefix http:// and a path after are allowed).
 * Returns 0 or -1. */
int
loadgen_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
	char	 digits[16];
	long	 v;

	if (strncmp(s, "http://", 7) == 0)
		s += 7;
	if (addr_split(s, strcspn(s, "/"), host, hostlen, digits,
	    sizeof(digits)) != ADDR_OK)
		return (-1);
	v = strtol(digits, NULL, 10);
	if (v <= 0 || v > 65535)
		return (-1);
	*port = (int)v;
	return (0);
}

/* A client of the admin API at url ("http://HOST:PORT" or "HOST:PORT"); token
 * may be NULL.  Requests go out one after another on one kept-alive connection. */
struct loadgen_http *
loadgen_http_new(struct event_base *base, const char *url, const char *token)
{
	struct loadgen_http	*h;
	int			 port;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return (NULL);
	if (loadgen_parse_hostport(url, h->host, sizeof(h->host), &port) == -1) {
		fprintf(stderr, "bad admin address: %s\n", url);
		free(h);
		return (NULL);
	}
	if (token != NULL && *token != '\0')
		snprintf(h->auth, sizeof(h->auth), "Bearer %s", token);
	h->conn = evhttp_connection_base_new(base, NULL, h->host,
	    (unsigned short)port);
	if (h->conn == NULL) {
		free(h);
		return (NULL);
	}
	evhttp_connection_set_timeout(h->conn, 60);
	return (h);
}

void
loadgen_http_free(struct loadgen_http *h)
{
	if (h == NULL)
		return;
	evhttp_connection_free(h->conn);
	free(h);
}

static void
loadgen_http_done(struct evhttp_request *req, void *arg)
{
	struct loadgen_http_req	*r = arg;
	struct evbuffer		*in;
	char			*body;
	size_t			 len;
	int			 code;

	if (req == NULL || (code = evhttp_request_get_response_code(req)) == 0) {
		r->cb(r->arg, 0, "", 0);
		free(r);
		return;
	}
	in = evhttp_request_get_input_buffer(req);
	len = evbuffer_get_length(in);
	if ((body = malloc(len + 1)) == NULL) {
		r->cb(r->arg, 0, "", 0);
		free(r);
		return;
	}
	evbuffer_copyout(in, body, len);
	body[len] = '\0';
	r->cb(r->arg, code, body, len);
	free(body);
	free(r);
}

/* Sends method ("GET", "PUT", "POST", "DELETE") uri with body (NULL: none); cb
 * gets the status code and the answer's body. */
int
loadgen_http_request(struct loadgen_http *h, const char *method,
    const char *uri, const char *body, loadgen_http_cb cb, void *arg)
{
	struct evhttp_request	*req;
	struct evkeyvalq	*hdrs;
	struct loadgen_http_req	*r;
	enum evhttp_cmd_type	 type;

	if (strcmp(method, "GET") == 0)
		type = EVHTTP_REQ_GET;
	else if (strcmp(method, "PUT") == 0)
		type = EVHTTP_REQ_PUT;
	else if (strcmp(method, "POST") == 0)
		type = EVHTTP_REQ_POST;
	else if (strcmp(method, "DELETE") == 0)
		type = EVHTTP_REQ_DELETE;
	else
		return (-1);
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return (-1);
	r->cb = cb;
	r->arg = arg;
	if ((req = evhttp_request_new(loadgen_http_done, r)) == NULL) {
		free(r);
		return (-1);
	}
	hdrs = evhttp_request_get_output_headers(req);
	evhttp_add_header(hdrs, "Host", h->host);
	if (h->auth[0] != '\0')
		evhttp_add_header(hdrs, "Authorization", h->auth);
	if (body != NULL) {
		evhttp_add_header(hdrs, "Content-Type", "application/json");
		evbuffer_add(evhttp_request_get_output_buffer(req), body,
		    strlen(body));
	}
	if (evhttp_make_request(h->conn, req, type, uri) == -1) {
		free(r);
		return (-1);
	}
	return (0);
}

int64_t
loadgen_now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/* Reads a process's resident memory (now and peak) and CPU time. */
int
loadgen_proc_read(pid_t pid, struct loadgen_proc *p)
{
	long long	 v;

	memset(p, 0, sizeof(*p));
	if ((p->cpu_s = procstat_cpu_seconds(pid)) < 0)
		return (-1);
	if ((v = procstat_status(pid, "VmRSS")) > 0)
		p->rss_kib = (long)v;
	if ((v = procstat_status(pid, "VmHWM")) > 0)
		p->hwm_kib = (long)v;
	return (0);
}

/* Returns the CPU seconds of n processes, summed; -1 if one of them cannot
 * be read (gone). */
double
loadgen_procs_cpu(const pid_t *pids, int n)
{
	double	 sum = 0, v;
	int	 i;

	for (i = 0; i < n; i++) {
		if ((v = procstat_cpu_seconds(pids[i])) < 0)
			return (-1);
		sum += v;
	}
	return (sum);
}

static int
loadgen_cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* Sorts v and fills s with its order statistics. */
void
loadgen_stats(double *v, size_t n, struct loadgen_stats *s)
{
	size_t	 i;

	memset(s, 0, sizeof(*s));
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), loadgen_cmp_double);
	s->min = v[0];
	s->max = v[n - 1];
	s->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	/* Nearest rank: the smallest value with 99% of them at or below it. */
	i = (n * 99 + 99) / 100;
	i = i > 0 ? i - 1 : 0;
	s->p99 = v[i];
}

/* Raises the descriptor limit to the hard limit; -1 if it stays below want. */
int
loadgen_raise_nofile(size_t want)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return (-1);
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		return (-1);
	return (rl.rlim_cur >= want ? 0 : -1);
}
