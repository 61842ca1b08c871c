/*
 * etcd v3's JSON gateway from C: a request is a JSON body POSTed to one of
 * the endpoints, its answer a JSON object; 64-bit integers come as strings,
 * keys and values as base64, and fields at their zero value are left out.
 * An endpoint that does not answer, or answers that it has no leader, is
 * passed for the next one; a request that none answers is ETCD_UNAVAILABLE.
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "etcd.h"
#include "log.h"

static void	etcd_req_free(struct etcd_req *);

/* An answer being read: bounded by ETCD_RESPONSE_MAX. */
struct etcd_buf {
	char	*data;
	size_t	 len;
	size_t	 cap;
};

/* Returns 0 if csv is 1 to ETCD_ENDPOINTS_MAX http:// URLs, else -1 and why. */
int
etcd_check_endpoints(const char *csv, const char **why)
{
	const char	*p = csv, *comma;
	size_t		 n = 0, len;

	do {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (len <= strlen("http://") || len > 256 ||
		    (strncmp(p, "http://", 7) != 0 &&
		    strncmp(p, "https://", 8) != 0)) {
			*why = "expected http://HOST:PORT[,http://HOST:PORT...]";
			return (-1);
		}
		if (++n > ETCD_ENDPOINTS_MAX) {
			*why = "more than 16 endpoints";
			return (-1);
		}
		p = comma != NULL ? comma + 1 : NULL;
	} while (p != NULL);
	return (0);
}

/* Returns 0 if prefix can start every key, else -1 and why. */
int
etcd_check_prefix(const char *prefix, const char **why)
{
	size_t	 len = strlen(prefix);

	if (len == 0 || len >= ETCD_PREFIX_MAX) {
		*why = "expected 1 to 127 bytes";
		return (-1);
	}
	if (prefix[len - 1] != '/') {
		*why = "must end with '/'";
		return (-1);
	}
	return (0);
}

/*
 * Makes a client of the endpoints in csv (checked), keys under prefix.
 * Returns NULL with *why set on failure.
 */
struct etcd *
etcd_new(const char *csv, const char *prefix, const char **why)
{
	struct etcd	*e;
	const char	*p = csv, *comma;
	size_t		 len;

	if (etcd_check_endpoints(csv, why) == -1 ||
	    etcd_check_prefix(prefix, why) == -1)
		return (NULL);
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		*why = "out of memory";
		return (NULL);
	}
	snprintf(e->prefix, sizeof(e->prefix), "%s", prefix);
	etcd_key(e, e->leader_key, sizeof(e->leader_key), "leader");
	e->txn_ops = ETCD_TXN_OPS_MAX;
	do {
		comma = strchr(p, ',');
		len = comma != NULL ? (size_t)(comma - p) : strlen(p);
		/* Without a trailing '/': paths start with one. */
		while (len > 0 && p[len - 1] == '/')
			len--;
		if ((e->endpoints[e->nendpoints++] = strndup(p, len)) == NULL)
			goto oom;
		p = comma != NULL ? comma + 1 : NULL;
	} while (p != NULL);
	e->timeout_ms = ETCD_TIMEOUT_MS / (int)e->nendpoints;
	if (e->timeout_ms < ETCD_TIMEOUT_MIN_MS)
		e->timeout_ms = ETCD_TIMEOUT_MIN_MS;
	if ((e->curl = curl_easy_init()) == NULL)
		goto oom;
	return (e);
oom:
	etcd_free(e);
	*why = "out of memory";
	return (NULL);
}

/* Frees the client. */
void
etcd_free(struct etcd *e)
{
	size_t	 i;

	if (e == NULL)
		return;
	for (i = 0; i < e->nendpoints; i++)
		free(e->endpoints[i]);
	if (e->curl != NULL)
		curl_easy_cleanup(e->curl);
	if (e->multi != NULL) {
		while (e->reqs != NULL)
			etcd_req_free(e->reqs);
		curl_multi_cleanup(e->multi);
	}
	if (e->timer != NULL)
		event_free(e->timer);
	free(e);
}

/* Appends what curl read to the answer, refusing one over the bound. */
static size_t
etcd_write_cb(char *data, size_t size, size_t n, void *arg)
{
	struct etcd_buf	*b = arg;
	size_t		 len = size * n, cap;
	char		*p;

	if (b->len + len + 1 > ETCD_RESPONSE_MAX)
		return (0);
	if (b->len + len + 1 > b->cap) {
		cap = b->cap == 0 ? 4096 : b->cap;
		while (cap < b->len + len + 1)
			cap *= 2;
		if ((p = realloc(b->data, cap)) == NULL)
			return (0);
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return (len);
}

/*
 * Returns 1 if an error answer (HTTP status, body) means this member cannot
 * serve now (no leader, timed out, unavailable): another, or later, may.
 */
static int
etcd_error_transient(long status, const json_t *ans)
{
	const char	*msg = json_string_value(json_object_get(ans, "error"));
	int64_t		 code = etcd_int(ans, "code");

	/* The gateway's 5xx, and gRPC codes 4 deadline exceeded, 14
	 * unavailable, 10 aborted. */
	if (status >= 500 || code == 4 || code == 14 || code == 10)
		return (1);
	return (msg != NULL && (strstr(msg, "no leader") != NULL ||
	    strstr(msg, "timed out") != NULL ||
	    strstr(msg, "leader changed") != NULL));
}

/* Sets h up to POST text to one endpoint, the answer into b, within timeout
 * ms (0: the client's, or the probe's while etcd is down). */
static void
etcd_setup(struct etcd *e, CURL *h, size_t which, const char *path,
    const char *text, long timeout, struct etcd_buf *b)
{
	char		 url[512];

	snprintf(url, sizeof(url), "%s%s", e->endpoints[which], path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
	if (timeout == 0)
		timeout = e->down ? ETCD_PROBE_TIMEOUT_MS : e->timeout_ms;
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (e->cacert != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, e->cacert);
	if (e->cert != NULL) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, e->cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, e->key);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, etcd_write_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
	b->len = 0;
}

/*
 * Judges what one endpoint did with a request: curl's rc, the HTTP status
 * and the answer read into b.  Returns ETCD_OK with the answer in *ans,
 * ETCD_REFUSED, or ETCD_UNAVAILABLE if the next endpoint may answer.
 */
static int
etcd_judge(struct etcd *e, size_t which, CURLcode crc, long status,
    const struct etcd_buf *b, json_t **ans)
{
	json_t		*j;
	const char	*msg;

	*ans = NULL;
	if (crc != CURLE_OK) {
		snprintf(e->error, sizeof(e->error), "%s: %s",
		    e->endpoints[which], curl_easy_strerror(crc));
		/* Sent, and no answer: etcd may have applied it. */
		if (crc != CURLE_COULDNT_CONNECT &&
		    crc != CURLE_COULDNT_RESOLVE_HOST)
			e->unsure = e->last_unsure = 1;
		return (ETCD_UNAVAILABLE);
	}
	j = b->data != NULL ? json_loadb(b->data, b->len, 0, NULL) : NULL;
	if (status == 200 && json_is_object(j)) {
		e->cur = which;
		*ans = j;
		return (ETCD_OK);
	}
	msg = json_string_value(json_object_get(j, "error"));
	snprintf(e->error, sizeof(e->error), "%s: HTTP %ld: %s",
	    e->endpoints[which], status, msg != NULL ? msg :
	    "not a JSON answer");
	if (msg != NULL && strstr(msg, "timed out") != NULL)
		e->unsure = e->last_unsure = 1;	/* may apply it */
	if (!etcd_error_transient(status, j)) {
		json_decref(j);
		return (ETCD_REFUSED);
	}
	json_decref(j);
	return (ETCD_UNAVAILABLE);
}

/* Counts a request that failed. */
static void
etcd_failed(struct etcd *e, const char *path)
{
	e->failures++;
	log_debug("%s: %s: %s", __func__, path, e->error);
}

/*
 * POSTs body (taken) to path ("/v3/kv/txn") on the endpoints, the one that
 * answered last first, blocking: only where the loop has nothing else to
 * do (loading the state, resigning).  Returns ETCD_OK with the answer in
 * *ans (caller frees), or ETCD_UNAVAILABLE / ETCD_REFUSED with e->error
 * saying why.
 */
int
etcd_call(struct etcd *e, const char *path, json_t *body, json_t **ans)
{
	struct etcd_buf	 b = { NULL, 0, 0 };
	char		*text;
	size_t		 i, n, which;
	long		 status;
	int		 rc = ETCD_UNAVAILABLE;
	CURLcode	 crc;

	*ans = NULL;
	e->calls++;
	e->last_unsure = 0;
	text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	if (text == NULL) {
		snprintf(e->error, sizeof(e->error), "out of memory");
		e->failures++;
		return (ETCD_REFUSED);
	}
	/* Down: one endpoint, the next one next time. */
	n = e->down ? 1 : e->nendpoints;
	if (e->down)
		e->cur = (e->cur + 1) % e->nendpoints;
	for (i = 0; i < n; i++) {
		which = (e->cur + i) % e->nendpoints;
		curl_easy_reset(e->curl);
		etcd_setup(e, e->curl, which, path, text, 0, &b);
		status = 0;
		if ((crc = curl_easy_perform(e->curl)) == CURLE_OK)
			curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE,
			    &status);
		if ((rc = etcd_judge(e, which, crc, status, &b, ans)) !=
		    ETCD_UNAVAILABLE)
			break;
	}
	free(text);
	free(b.data);
	if (rc != ETCD_OK)
		etcd_failed(e, path);
	return (rc);
}

/*
 * The asynchronous client: libcurl's multi interface on the coordinator's
 * event loop (curl's multi-socket pattern).  curl names the sockets to watch
 * (etcd_sock_cb) and the one timeout it wants (etcd_timer_cb); libevent
 * tells it when either is due (etcd_event_cb, etcd_timeout_cb); a finished
 * transfer is judged like a blocking one and either tries the next endpoint
 * or hands its answer to its caller.
 */

/* A request in flight. */
struct etcd_req {
	struct etcd		*e;
	CURL			*h;
	const char		*path;
	char			*text;
	struct etcd_buf		 b;
	size_t			 tried, ntry, which;
	long			 timeout_ms;	/* 0: the client's */
	etcd_done_fn		 done;
	etcd_chunk_fn		 chunk;		/* a stream: its bytes */
	void			*arg;
	struct etcd_req		*next;		/* e->reqs */
};

/* Frees a request (not its caller's arg). */
static void
etcd_req_free(struct etcd_req *r)
{
	struct etcd	*e = r->e;
	struct etcd_req	**pp;

	for (pp = &e->reqs; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	}
	if (r->h != NULL) {
		curl_multi_remove_handle(e->multi, r->h);
		curl_easy_cleanup(r->h);
	}
	e->inflight--;
	free(r->text);
	free(r->b.data);
	free(r);
}

/* Starts the request's next try.  Returns 0 or -1. */
static int
etcd_req_try(struct etcd_req *r)
{
	struct etcd	*e = r->e;

	r->which = (e->cur + r->tried) % e->nendpoints;
	r->tried++;
	if (r->h == NULL && (r->h = curl_easy_init()) == NULL)
		return (-1);
	curl_multi_remove_handle(e->multi, r->h);
	curl_easy_reset(r->h);
	etcd_setup(e, r->h, r->which, r->path, r->text, r->timeout_ms, &r->b);
	curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
	return (curl_multi_add_handle(e->multi, r->h) == CURLM_OK ? 0 : -1);
}

/* Takes a finished transfer: the next endpoint, or the caller's answer. */
static void
etcd_req_finished(struct etcd_req *r, CURLcode crc)
{
	struct etcd	*e = r->e;
	etcd_done_fn	 done = r->done;
	void		*arg = r->arg;
	json_t		*ans = NULL;
	long		 status = 0;
	int		 rc;

	if (crc == CURLE_OK)
		curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, &status);
	if (r->chunk != NULL) {
		/* A stream has no answer to judge: it ended. */
		snprintf(e->error, sizeof(e->error), "%s: stream ended: %s, "
		    "HTTP %ld", e->endpoints[r->which], curl_easy_strerror(crc),
		    status);
		etcd_req_free(r);
		done(arg, ETCD_UNAVAILABLE, NULL);
		return;
	}
	e->last_unsure = 0;
	rc = etcd_judge(e, r->which, crc, status, &r->b, &ans);
	if (rc == ETCD_UNAVAILABLE && r->tried < r->ntry &&
	    etcd_req_try(r) == 0)
		return;
	if (rc != ETCD_OK)
		etcd_failed(e, r->path);
	if (r->timeout_ms == 0)
		e->down = rc == ETCD_UNAVAILABLE;
	else if (rc == ETCD_UNAVAILABLE)
		/* Its next try goes to the next endpoint. */
		e->cur = (r->which + 1) % e->nendpoints;
	etcd_req_free(r);
	done(arg, rc, ans);
}

/* Hands every transfer curl finished to its request. */
static void
etcd_multi_done(struct etcd *e)
{
	CURLMsg		*m;
	struct etcd_req	*r;
	int		 left;

	while ((m = curl_multi_info_read(e->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		r = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
		    (char **)&r);
		if (r != NULL)
			etcd_req_finished(r, m->data.result);
	}
}

/* A socket curl watches is ready. */
static void
etcd_event_cb(evutil_socket_t fd, short what, void *arg)
{
	struct etcd	*e = arg;
	int		 flags = 0, running;

	if (what & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(e->multi, fd, flags, &running);
	etcd_multi_done(e);
}

/* curl's timeout is due. */
static void
etcd_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct etcd	*e = arg;
	int		 running;

	(void)fd;
	(void)what;
	curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	etcd_multi_done(e);
}

/* curl says which of a socket's events to watch, or to forget it. */
static int
etcd_sock_cb(CURL *h, curl_socket_t fd, int what, void *arg, void *sockp)
{
	struct etcd	*e = arg;
	struct event	*ev = sockp;
	short		 kind;

	(void)h;
	if (what == CURL_POLL_REMOVE) {
		if (ev != NULL)
			event_free(ev);
		curl_multi_assign(e->multi, fd, NULL);
		return (0);
	}
	kind = EV_PERSIST | ((what & CURL_POLL_IN) ? EV_READ : 0) |
	    ((what & CURL_POLL_OUT) ? EV_WRITE : 0);
	if (ev == NULL) {
		if ((ev = event_new(e->base, fd, kind, etcd_event_cb, e)) ==
		    NULL)
			return (-1);
		curl_multi_assign(e->multi, fd, ev);
	} else {
		event_del(ev);
		event_assign(ev, e->base, fd, kind, etcd_event_cb, e);
	}
	event_add(ev, NULL);
	return (0);
}

/* curl asks to be called in ms milliseconds (-1: not at all). */
static int
etcd_timer_cb(CURLM *m, long ms, void *arg)
{
	struct etcd	*e = arg;
	struct timeval	 tv;

	(void)m;
	if (ms < 0) {
		evtimer_del(e->timer);
		return (0);
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(e->timer, &tv);
	return (0);
}

/* Puts the client's asynchronous requests on base's loop.  Returns 0 or -1. */
int
etcd_attach(struct etcd *e, struct event_base *base)
{
	e->base = base;
	if ((e->multi = curl_multi_init()) == NULL ||
	    (e->timer = evtimer_new(base, etcd_timeout_cb, e)) == NULL)
		return (-1);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, etcd_sock_cb);
	curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, etcd_timer_cb);
	curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	return (0);
}

/*
 * Makes a request of body (taken; r->text NULL if it does not dump) to path,
 * in flight from now (etcd_req_free() ends it).  Returns it, or NULL (no
 * loop, out of memory).
 */
static struct etcd_req *
etcd_req_new(struct etcd *e, const char *path, json_t *body,
    etcd_done_fn done, void *arg)
{
	struct etcd_req	*r;

	if (e->multi == NULL || (r = calloc(1, sizeof(*r))) == NULL) {
		json_decref(body);
		return (NULL);
	}
	r->e = e;
	r->path = path;
	r->done = done;
	r->arg = arg;
	r->text = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	r->next = e->reqs;
	e->reqs = r;
	e->inflight++;
	e->calls++;
	return (r);
}

/*
 * POSTs body (taken) to path like etcd_call(), without waiting: done(arg,
 * rc, ans) is called from the loop once it is answered or every endpoint
 * it may try failed (ans NULL unless ETCD_OK; done frees it).  timeout_ms
 * 0: each endpoint in turn within the client's timeout, and an endpoint
 * that does not answer makes etcd down (a keepalive); else one endpoint
 * within timeout_ms, the next one at the caller's next try, and etcd's
 * state left as it is (a big txn may take long on a busy etcd).  Returns
 * 0, or -1 (out of memory, no loop: done is not called).
 */
int
etcd_call_async(struct etcd *e, const char *path, json_t *body,
    long timeout_ms, etcd_done_fn done, void *arg)
{
	struct etcd_req	*r;

	if ((r = etcd_req_new(e, path, body, done, arg)) == NULL) {
		snprintf(e->error, sizeof(e->error), "out of memory");
		return (-1);
	}
	r->timeout_ms = timeout_ms;
	/* Down: one endpoint, the next one next time. */
	r->ntry = e->down || timeout_ms != 0 ? 1 : e->nendpoints;
	if (e->down && timeout_ms == 0)
		e->cur = (e->cur + 1) % e->nendpoints;
	if (r->text == NULL || etcd_req_try(r) == -1) {
		snprintf(e->error, sizeof(e->error), "out of memory");
		etcd_req_free(r);
		return (-1);
	}
	return (0);
}

/* Hands what a stream read to its caller; 0 (refused) ends the stream. */
static size_t
etcd_stream_write_cb(char *data, size_t size, size_t n, void *arg)
{
	struct etcd_req	*r = arg;

	if (r->chunk(r->arg, data, size * n) == -1)
		return (0);
	return (size * n);
}

/*
 * POSTs body (taken) to path on endpoint which and keeps reading the answer
 * as a stream (etcd's /v3/watch): chunk(arg, bytes, len) for what arrives,
 * from inside curl (it must not cancel the stream: it returns -1 to end
 * it), then done(arg, ETCD_UNAVAILABLE, NULL) from the loop once the stream
 * ended, whatever ended it.  No timeout but the connect's; TCP keepalives
 * notice a member gone silent.  Returns the request, to cancel with
 * etcd_stream_cancel(), or NULL (done not called).
 */
struct etcd_req *
etcd_stream_async(struct etcd *e, size_t which, const char *path,
    json_t *body, etcd_chunk_fn chunk, etcd_done_fn done, void *arg)
{
	struct etcd_req	*r;

	if (which >= e->nendpoints) {
		json_decref(body);
		return (NULL);
	}
	if ((r = etcd_req_new(e, path, body, done, arg)) == NULL)
		return (NULL);
	r->chunk = chunk;
	r->which = which;
	r->tried = r->ntry = 1;
	if (r->text == NULL || (r->h = curl_easy_init()) == NULL) {
		etcd_req_free(r);
		return (NULL);
	}
	etcd_setup(e, r->h, which, path, r->text, e->timeout_ms, &r->b);
	curl_easy_setopt(r->h, CURLOPT_TIMEOUT_MS, 0L);
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, etcd_stream_write_cb);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(r->h, CURLOPT_TCP_KEEPIDLE, 2L);
	curl_easy_setopt(r->h, CURLOPT_TCP_KEEPINTVL, 1L);
	curl_easy_setopt(r->h, CURLOPT_PRIVATE, r);
	if (curl_multi_add_handle(e->multi, r->h) != CURLM_OK) {
		etcd_req_free(r);
		return (NULL);
	}
	return (r);
}

/* Ends a stream; its done is not called.  Not from inside its chunk. */
void
etcd_stream_cancel(struct etcd_req *r)
{
	if (r != NULL)
		etcd_req_free(r);
}

/*
 * Drops every request in flight but the streams (their owners cancel them,
 * or etcd_free() does); their callers are not called.
 */
void
etcd_cancel_all(struct etcd *e)
{
	struct etcd_req	*r, *next;

	for (r = e->reqs; r != NULL; r = next) {
		next = r->next;
		if (r->chunk == NULL)
			etcd_req_free(r);
	}
	e->camp_done = NULL;
}

/* Writes prefix + the formatted rest into buf.  Returns 0, -1 if too long. */
int
etcd_key(const struct etcd *e, char *buf, size_t len, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 plen = strlen(e->prefix);
	int	 n;

	if (plen >= len)
		return (-1);
	memcpy(buf, e->prefix, plen);
	va_start(ap, fmt);
	n = vsnprintf(buf + plen, len - plen, fmt, ap);
	va_end(ap);
	return (n < 0 || (size_t)n >= len - plen ? -1 : 0);
}

/* Returns bytes as a base64 JSON string, or NULL. */
json_t *
etcd_b64(const void *data, size_t len)
{
	unsigned char	*out;
	json_t		*j;

	if ((out = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		return (NULL);
	EVP_EncodeBlock(out, data, (int)len);
	j = json_string((char *)out);
	free(out);
	return (j);
}

/*
 * Returns a base64 JSON string's bytes, NUL-terminated (caller frees), their
 * length in *lenp; NULL if it is not base64.  A missing value is "".
 */
char *
etcd_unb64(const json_t *j, size_t *lenp)
{
	const char	*in = json_string_value(j);
	size_t		 len = in != NULL ? strlen(in) : 0;
	unsigned char	*out;
	int		 n;

	if (len % 4 != 0 || (out = malloc(len / 4 * 3 + 1)) == NULL)
		return (NULL);
	if (len == 0)
		n = 0;
	else if ((n = EVP_DecodeBlock(out, (const unsigned char *)in,
	    (int)len)) < 0) {
		free(out);
		return (NULL);
	}
	/* EVP_DecodeBlock() counts the padding as bytes. */
	if (len > 0 && in[len - 1] == '=')
		n--;
	if (len > 1 && in[len - 2] == '=')
		n--;
	out[n] = '\0';
	if (lenp != NULL)
		*lenp = (size_t)n;
	return ((char *)out);
}

/* Returns obj's int64 field (the gateway sends it as a string), 0 if absent. */
int64_t
etcd_int(const json_t *obj, const char *key)
{
	const json_t	*v = json_object_get(obj, key);

	if (json_is_integer(v))
		return (json_integer_value(v));
	if (json_is_string(v))
		return (strtoll(json_string_value(v), NULL, 10));
	return (0);
}

/* Returns an int64 as the gateway takes it: a JSON string. */
json_t *
etcd_int_json(int64_t v)
{
	char	 buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return (json_string(buf));
}

/* Writes the end of the range of keys starting with prefix into buf. */
void
etcd_range_end(const char *prefix, char *buf, size_t len)
{
	size_t	 n;

	snprintf(buf, len, "%s", prefix);
	n = strlen(buf);
	/* Prefixes here end in '/', never in 0xff: one byte up is enough. */
	if (n > 0)
		buf[n - 1]++;
}

/* etcd_range() from e->range_cache: its keys that start with prefix. */
static int
etcd_range_cached(struct etcd *e, const char *prefix, int64_t *rev,
    int (*fn)(void *, const char *, const char *, size_t, const json_t *),
    void *arg)
{
	const json_t	*kv;
	char		*k, *v;
	size_t		 i, klen, vlen, plen = strlen(prefix);
	int		 stop = 0;

	*rev = e->range_cache_rev;
	json_array_foreach(e->range_cache, i, kv) {
		k = etcd_unb64(json_object_get(kv, "key"), &klen);
		v = etcd_unb64(json_object_get(kv, "value"), &vlen);
		if (k != NULL && v != NULL && klen >= plen &&
		    memcmp(k, prefix, plen) == 0 && fn(arg, k, v, vlen,
		    kv) == -1)
			stop = 1;
		free(k);
		free(v);
		if (stop)
			break;
	}
	return (ETCD_OK);
}

/*
 * Reads every key starting with prefix, in key order, in pages of
 * ETCD_RANGE_PAGE, all at one revision: *rev if not 0, else the first
 * page's (stored in *rev).  Hands each key, value and the whole kv to fn,
 * which returns 0 or -1 (stop).  Returns ETCD_OK or an error.
 */
int
etcd_range(struct etcd *e, const char *prefix, int64_t *rev,
    int (*fn)(void *, const char *, const char *, size_t, const json_t *),
    void *arg)
{
	char		 end[ETCD_KEY_MAX], *from, *k, *v;
	json_t		*body, *ans, *kvs, *kv;
	size_t		 i, vlen, klen, fromlen, pages = 0;
	int		 rc = ETCD_OK, more = 1;

	if (e->range_cache != NULL)
		return (etcd_range_cached(e, prefix, rev, fn, arg));
	etcd_range_end(prefix, end, sizeof(end));
	if ((from = strdup(prefix)) == NULL)
		return (ETCD_REFUSED);
	fromlen = strlen(from);
	/* Every page moves past its last key: the loop ends with the keys. */
	while (more && rc == ETCD_OK) {
		if (++pages > ETCD_RANGE_PAGES_MAX) {
			snprintf(e->error, sizeof(e->error), "%s: over %d "
			    "pages of keys", prefix, ETCD_RANGE_PAGES_MAX);
			rc = ETCD_REFUSED;
			break;
		}
		body = json_pack("{s:o,s:o,s:I}", "key",
		    etcd_b64(from, fromlen), "range_end",
		    etcd_b64(end, strlen(end)), "limit",
		    (json_int_t)ETCD_RANGE_PAGE);
		if (*rev != 0)
			json_object_set_new(body, "revision",
			    etcd_int_json(*rev));
		if ((rc = etcd_call(e, "/v3/kv/range", body, &ans)) != ETCD_OK)
			break;
		if (*rev == 0)
			*rev = etcd_int(json_object_get(ans, "header"),
			    "revision");
		more = json_is_true(json_object_get(ans, "more"));
		kvs = json_object_get(ans, "kvs");
		json_array_foreach(kvs, i, kv) {
			k = etcd_unb64(json_object_get(kv, "key"), &klen);
			v = etcd_unb64(json_object_get(kv, "value"), &vlen);
			if (k != NULL && v != NULL &&
			    fn(arg, k, v, vlen, kv) == -1)
				more = 0;
			if (k != NULL && i + 1 == json_array_size(kvs)) {
				/* The next page starts right after it. */
				/* k and a 0 byte: the smallest key after k
				 * (etcd_unb64() ended k with one). */
				free(from);
				from = k;
				fromlen = klen + 1;
				k = NULL;
			}
			free(k);
			free(v);
		}
		if (json_array_size(kvs) == 0)
			more = 0;
		json_decref(ans);
	}
	free(from);
	return (rc);
}
