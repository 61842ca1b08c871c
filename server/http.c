/*
 * The admin API's listener (docs/admin-api.md), with evhttp: connections and
 * their bounds, bearer tokens, the route table (method, path, role, handler)
 * that leads to the handlers of the http_*.c files, and the JSON answers
 * they all give, held for their commit where a change waits for one.
 */

#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <jansson.h>

#include "clock.h"
#include "coord_addr.h"
#include "http.h"
#include "leader.h"
#include "listener.h"
#include "log.h"
#include "model.h"
#include "replica.h"
#include "store.h"
#include "token.h"
#include "utf8.h"

#include <openssl/ssl.h>

static void	 http_conn_active(struct coord *, struct evhttp_connection *);
static struct bufferevent *http_tls_bev(struct event_base *, void *);
static void	 http_vformat(char *, size_t, const char *, va_list)
		    __attribute__((format(printf, 3, 0)));

/*
 * Answers held for their commit: over etcd a change is applied once etcd has
 * it and committed later; the answer to the request that made it waits for
 * the commit (change_pending(), the model's hook committed), at most
 * CHANGE_HOLD_MS.
 */
/* One held answer, of the change cc. */
struct http_hold {
	struct change_commit	*cc;
	struct evhttp_request	*req;
	int			 code;
	const char		*reason;
	struct evbuffer		*answer;
	struct event		*expiry;	/* CHANGE_HOLD_MS */
};

/* Frees a held answer, unsent, and unties it from its change. */
static void
http_hold_free(struct http_hold *h)
{
	h->cc->held = NULL;
	if (h->answer != NULL)
		evbuffer_free(h->answer);
	if (h->expiry != NULL)
		event_free(h->expiry);
	free(h);
}

/*
 * A held answer waited CHANGE_HOLD_MS: etcd does not answer.  A 503 now;
 * the commit stays queued, and lands once etcd answers (or fails, and the
 * leader reloads).
 */
static void
http_hold_expired(evutil_socket_t fd, short what, void *arg)
{
	struct http_hold	*h = arg;
	struct coord		*c = h->cc->c;
	const char		*why = store_unavailable(c->store);

	(void)fd;
	(void)what;
	http_conn_hold(c, h->req, -1);
	http_error(c, h->req, 503, NULL, "store unavailable: the change is "
	    "not committed yet (%s): it may yet be committed", why != NULL ?
	    why : "etcd does not answer");
	h->cc->waiter = NULL;
	http_hold_free(h);
}

/*
 * Holds the answer to req if a change it made is not committed yet: sent
 * by http_hold_committed().  Returns 1 if held.
 */
int
http_hold(struct coord *c, struct evhttp_request *req, int code,
    const char *reason, struct evbuffer *buf)
{
	struct change_commit	*cc;
	struct http_hold	*h;
	struct timeval		 tv = { CHANGE_HOLD_MS / 1000,
				    (CHANGE_HOLD_MS % 1000) * 1000 };

	if ((cc = change_pending(c, req)) == NULL ||
	    (h = calloc(1, sizeof(*h))) == NULL)
		return (0);
	h->cc = cc;
	cc->held = h;
	if ((h->answer = evbuffer_new()) == NULL ||
	    (h->expiry = evtimer_new(c->base, http_hold_expired, h)) == NULL) {
		http_hold_free(h);
		return (0);
	}
	evtimer_add(h->expiry, &tv);
	evbuffer_add_buffer(h->answer, buf);
	h->req = req;
	h->code = code;
	h->reason = reason;
	http_conn_hold(c, req, 1);
	return (1);
}

/*
 * The model's word on a change whose answer is held (its hook committed):
 * committed, the answer is sent; not, a 503.
 */
void
http_hold_committed(struct coord *c, struct change_commit *cc, int rc)
{
	struct http_hold	*h = cc->held;
	const char		*why;

	http_conn_hold(c, h->req, -1);
	if (rc == 0) {
		c->metrics.http_codes[h->code]++;
		evhttp_add_header(evhttp_request_get_output_headers(h->req),
		    "Content-Type", "application/json");
		http_send_reply(h->req, h->code, h->reason, h->answer);
	} else {
		why = store_unavailable(c->store);
		http_error(c, h->req, 503, NULL, "store unavailable: the "
		    "change was not committed: %s", why != NULL ? why :
		    "the store refused it");
	}
	http_hold_free(h);
}

/*
 * Stops evhttp reading evcon while an answer is written.  evhttp reads on
 * (it enables reading with every write) to learn of a close: a client that
 * shut its side after the request, as it may, would lose what did not fit the
 * socket's buffer (a summary of a few dozen windows, say, or a stream's
 * first chunk), and one that sends more would have it buffered without bound.
 * A client gone is learnt from the writes; evhttp reads again for the next
 * request once the answer is over.
 */
void
http_conn_noread(struct evhttp_connection *evcon)
{
	bufferevent_disable(evhttp_connection_get_bufferevent(evcon), EV_READ);
}

/* Sends an answer, the connection not read until it is written. */
void
http_send_reply(struct evhttp_request *req, int code, const char *reason,
    struct evbuffer *buf)
{
	struct evhttp_connection	*evcon;

	evcon = evhttp_request_get_connection(req);
	evhttp_send_reply(req, code, reason, buf);
	if (evcon != NULL)
		http_conn_noread(evcon);
}

/*
 * Reads the id of a path's resource (what: "window", "rule") into *id, else
 * answers 400.  Returns 0 or -1.
 */
int
http_path_id(struct coord *c, struct evhttp_request *req, const char *idstr,
    const char *what, uint32_t *id)
{
	unsigned long	 v;
	char		*end;

	errno = 0;
	v = strtoul(idstr, &end, 10);
	if (*idstr < '0' || *idstr > '9' || *end != '\0' || errno != 0 ||
	    v == 0 || v > UINT32_MAX) {
		http_error(c, req, 400, "id", "%s id must be a positive "
		    "integer", what);
		return (-1);
	}
	*id = (uint32_t)v;
	return (0);
}

/* Sends buf (JSON text) as the answer. */
void
http_send_json(struct coord *c, struct evhttp_request *req, int code,
    struct evbuffer *buf)
{
	const char	*reason;

	switch (code) {
	case 200: reason = "OK"; break;
	case 201: reason = "Created"; break;
	case 307: reason = "Temporary Redirect"; break;
	case 400: reason = "Bad Request"; break;
	case 401: reason = "Unauthorized"; break;
	case 403: reason = "Forbidden"; break;
	case 404: reason = "Not Found"; break;
	case 405: reason = "Method Not Allowed"; break;
	case 409: reason = "Conflict"; break;
	case 410: reason = "Gone"; break;
	case 413: reason = "Payload Too Large"; break;
	case 503: reason = "Service Unavailable"; break;
	default: reason = "Error"; break;
	}
	/* A change's answer waits for its commit. */
	if (http_hold(c, req, code, reason, buf))
		return;
	if (code >= 100 && code < 600)
		c->metrics.http_codes[code]++;
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	http_send_reply(req, code, reason, buf);
}

/* Sends body (consumed) as the answer. */
void
http_reply(struct coord *c, struct evhttp_request *req, int code, json_t *body)
{
	struct evbuffer	*buf;
	char		*text;

	if ((buf = evbuffer_new()) == NULL) {
		json_decref(body);
		evhttp_send_error(req, 500, NULL);
		return;
	}
	text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER |
	    JSON_REAL_PRECISION(COORD_JSON_REAL_DIGITS));
	json_decref(body);
	if (text != NULL) {
		evbuffer_add(buf, text, strlen(text));
		evbuffer_add(buf, "\n", 1);
		free(text);
	}
	http_send_json(c, req, code, buf);
	evbuffer_free(buf);
}

/*
 * Formats a message into buf.  One cut short must not end inside a UTF-8
 * character (a key of the body may be quoted in it): jansson refuses such a
 * string, and the answer would carry no "error".
 */
static void
http_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	if (vsnprintf(buf, len, fmt, ap) >= (int)len)
		utf8_cut_partial(buf);
}

/* Answers the request with an error: the message and the field at fault. */
void
http_error(struct coord *c, struct evhttp_request *req, int code,
    const char *field, const char *fmt, ...)
{
	json_t	*body;
	char	 msg[512];
	va_list	 ap;

	va_start(ap, fmt);
	http_vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	body = json_object();
	json_object_set_new(body, "error", json_string(msg));
	if (field != NULL)
		json_object_set_new(body, "field", json_string(field));
	log_debug("%s: %d %s%s%s", __func__, code, msg, field ? ": " : "",
	    field ? field : "");
	http_reply(c, req, code, body);
}

/*
 * Reads the request body as a JSON object.  On failure answers the request
 * and returns NULL.
 */
json_t *
http_body(struct coord *c, struct evhttp_request *req)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	size_t		 len = evbuffer_get_length(in);
	json_error_t	 err;
	json_t		*obj;

	if (len > COORD_HTTP_BODY_MAX) {
		http_error(c, req, 413, NULL, "body over 1 MiB");
		return (NULL);
	}
	if (len == 0) {
		http_error(c, req, 400, NULL, "empty body: a JSON object is "
		    "expected");
		return (NULL);
	}
	obj = json_loadb((const char *)evbuffer_pullup(in, (ev_ssize_t)len),
	    len, JSON_REJECT_DUPLICATES, &err);
	if (obj == NULL) {
		http_error(c, req, 400, NULL, "malformed JSON: %s (line %d, "
		    "column %d)", err.text, err.line, err.column);
		return (NULL);
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		http_error(c, req, 400, NULL, "the body must be a JSON object");
		return (NULL);
	}
	return (obj);
}

/* Answers the request with what ref says. */
void
http_refused(struct coord *c, struct evhttp_request *req,
    const struct refusal *ref)
{
	http_error(c, req, ref->code, ref->field, "%s", ref->msg);
}

/* Answers 400 and returns -1 unless id is a valid job id. */
static int
http_job_id(struct coord *c, struct evhttp_request *req, const char *id)
{
	const char	*why;

	if (!jobid_valid(id, &why)) {
		http_error(c, req, 400, "job", "%s", why);
		return (-1);
	}
	return (0);
}

/* Returns the request's bearer token, or NULL if it has none. */
static const char *
http_bearer(struct evhttp_request *req)
{
	const char	*h;

	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
		return (NULL);
	for (h += 7; *h == ' '; h++)
		;
	return (h);
}

/*
 * Returns 1 if an operator token is configured and req (let in) does not bear
 * it: the viewer's request.
 */
int
http_is_viewer(struct coord *c, struct evhttp_request *req)
{
	const char	*t;

	if (c->conf.admin_token == NULL)
		return (0);
	if ((t = http_bearer(req)) == NULL)
		return (1);
	return (!token_equal(t, c->conf.admin_token));
}

/*
 * Checks the bearer token against the role a request needs
 * (docs/admin-api.md): with no token configured every request passes;
 * otherwise a viewer's request needs a known token, an operator's the
 * operator token.  Both are always compared, in constant time.  Returns 0
 * (allowed), 401 or 403.
 */
static int
http_authorized(struct coord *c, struct evhttp_request *req,
    enum http_role role)
{
	const char		*t;
	int			 operator = 0, viewer = 0;

	if (role == HTTP_ROLE_NONE ||
	    (c->conf.admin_token == NULL && c->conf.viewer_token == NULL))
		return (0);
	if ((t = http_bearer(req)) == NULL)
		return (401);
	if (c->conf.admin_token != NULL)
		operator = token_equal(t, c->conf.admin_token);
	if (c->conf.viewer_token != NULL)
		viewer = token_equal(t, c->conf.viewer_token);
	if (operator)
		return (0);
	if (!viewer)
		return (401);
	return (role == HTTP_ROLE_OPERATOR ? 403 : 0);
}

/*
 * Answers a request the tokens do not allow (http_authorized()): 401 with
 * why401 and a Bearer challenge, or 403 for a viewer's write.  Returns 1 if
 * it answered, 0 if the request may go on.
 */
static int
http_deny(struct coord *c, struct evhttp_request *req, enum http_role role,
    const char *why401)
{
	switch (http_authorized(c, req, role)) {
	case 401:
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer");
		http_error(c, req, 401, NULL, "%s", why401);
		return (1);
	case 403:
		http_error(c, req, 403, NULL, "the viewer token may only read: "
		    "this request needs the operator token");
		return (1);
	}
	return (0);
}

/* Splits path into at most n segments after the leading "/"; returns count. */
static int
http_split(char *path, char **seg, int n)
{
	int	 count = 0;
	char	*p = path;

	if (*p != '/')
		return (-1);
	p++;
	while (*p != '\0') {
		if (count == n)
			return (-1);
		seg[count++] = p;
		p = strchr(p, '/');
		if (p == NULL)
			break;
		*p++ = '\0';
		if (*p == '\0')
			break;	/* a trailing slash */
	}
	return (count);
}

/*
 * Answers a method the path does not take: 405 with the Allow header (allow:
 * the methods it takes) and a JSON body.
 */
void
http_method_not_allowed(struct coord *c, struct evhttp_request *req,
    const char *allow)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
	    allow);
	http_error(c, req, 405, NULL, "method not allowed here (allowed: %s)",
	    allow);
}

/*
 * Admin connections are bounded: at most --http-max-conns open (beyond it the
 * least recently active idle one is closed to make room, so that a new client
 * such as a health check is served while others hold connections open), and
 * each request must arrive whole within --http-timeout-ms of the accept or of
 * the connection's previous request (evhttp's own timeout is per read, which
 * one byte at a time defeats).  evhttp 2.1 has no hook per connection but the
 * bufferevent callback: a connection is tracked from there and taken in
 * (adopted) right after evhttp has set it up.
 */
struct http_conn {
	struct coord			*coord;
	struct bufferevent		*bev;
	struct evhttp_connection	*evcon;		/* NULL until adopted */
	void				(*streaming)(void *);	/* a streamed
							 * answer: told
							 * the connection
							 * closed */
	void				*stream;
	int				 held;		/* answers held (http_hold()) */
	uint64_t			 since_ms;	/* accept, last request */
	TAILQ_ENTRY(http_conn)		 entry;
};

/* Creates the bufferevent of a new admin connection (TLS with
 * --http-tls-cert) and tracks it. */
static struct bufferevent *
http_new_bev(struct event_base *base, void *arg)
{
	struct coord		*c = arg;
	struct bufferevent	*bev;
	struct http_conn	*hc;

	if (c->http_tls.ctx != NULL)
		bev = http_tls_bev(base, arg);
	else
		bev = bufferevent_socket_new(base, -1, 0);
	if (bev == NULL)
		return (NULL);
	if ((hc = calloc(1, sizeof(*hc))) == NULL) {
		bufferevent_free(bev);
		return (NULL);
	}
	hc->coord = c;
	hc->bev = bev;
	hc->since_ms = clock_mono_ms();
	TAILQ_INSERT_TAIL(&c->http_pending, hc, entry);
	c->nhttp_conns++;
	event_active(c->http_adopt, EV_TIMEOUT, 1);
	return (bev);
}

/* Forgets an admin connection evhttp closed. */
static void
http_conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct http_conn	*hc = arg;
	struct coord		*c = hc->coord;

	evhttp_connection_set_closecb(evcon, NULL, NULL);
	if (hc->streaming != NULL)
		hc->streaming(hc->stream);
	TAILQ_REMOVE(&c->http_conns, hc, entry);
	c->nhttp_conns--;
	free(hc);
	if (c->http_paused && c->http_listener != NULL &&
	    c->nhttp_conns <= c->conf.http_max_conns) {
		c->http_paused = 0;
		evconnlistener_enable(c->http_listener);
	}
}

/* Returns 1 if the connection is not writing an answer (a streamed one
 * is never idle, even between its chunks, nor one whose answer waits for
 * its commit: closed, it would free the request held). */
static int
http_conn_idle(const struct http_conn *hc)
{
	return (hc->streaming == NULL && hc->held == 0 &&
	    evbuffer_get_length(bufferevent_get_output(hc->bev)) == 0);
}

/* Counts an answer held on req's connection (delta 1), or sent (-1). */
void
http_conn_hold(struct coord *c, struct evhttp_request *req, int delta)
{
	struct evhttp_connection	*evcon;
	struct http_conn		*hc;

	if ((evcon = evhttp_request_get_connection(req)) == NULL)
		return;			/* the client went: nothing to mind */
	TAILQ_FOREACH_REVERSE(hc, &c->http_conns, http_connq, entry) {
		if (hc->evcon == evcon) {
			hc->held += delta;
			return;
		}
	}
}

/*
 * Notes the streamed answer evcon is writing (closed(s) is called if the
 * connection closes first), or forgets it (closed NULL).
 */
void
http_conn_stream(struct coord *c, struct evhttp_connection *evcon,
    void (*closed)(void *), void *s)
{
	struct http_conn	*hc;

	TAILQ_FOREACH_REVERSE(hc, &c->http_conns, http_connq, entry) {
		if (hc->evcon == evcon) {
			hc->streaming = closed;
			hc->stream = s;
			hc->since_ms = clock_mono_ms();
			return;
		}
	}
}

/*
 * Takes the new connections in (evhttp has set their callbacks, whose
 * argument is the connection), then closes the least recently active idle
 * ones over the cap; if all are busy, stops accepting until one closes.
 */
static void
http_adopt_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord		*c = arg;
	struct http_conn	*hc, *next;
	void			*evcon;

	(void)fd;
	(void)what;
	while ((hc = TAILQ_FIRST(&c->http_pending)) != NULL) {
		TAILQ_REMOVE(&c->http_pending, hc, entry);
		bufferevent_getcb(hc->bev, NULL, NULL, NULL, &evcon);
		if (evcon == NULL) {		/* evhttp did not take it */
			bufferevent_free(hc->bev);
			c->nhttp_conns--;
			free(hc);
			continue;
		}
		hc->evcon = evcon;
		evhttp_connection_set_closecb(hc->evcon, http_conn_closed, hc);
		TAILQ_INSERT_TAIL(&c->http_conns, hc, entry);
	}
	for (hc = TAILQ_FIRST(&c->http_conns); hc != NULL &&
	    c->nhttp_conns > c->conf.http_max_conns; hc = next) {
		next = TAILQ_NEXT(hc, entry);
		if (!http_conn_idle(hc))
			continue;
		c->metrics.http_evicted++;
		log_debug("%s: %zu admin connections, over %zu: closing the "
		    "least recently active", __func__, c->nhttp_conns,
		    c->conf.http_max_conns);
		evhttp_connection_free(hc->evcon);	/* http_conn_closed() */
	}
	if (c->nhttp_conns > c->conf.http_max_conns && !c->http_paused) {
		log_warnx("%s: %zu admin connections, all busy: not accepting "
		    "until one closes", __func__, c->nhttp_conns);
		c->http_paused = 1;
		evconnlistener_disable(c->http_listener);
	}
}

/* Closes the connections whose request did not arrive whole in time. */
static void
http_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord		*c = arg;
	struct http_conn	*hc, *next;
	uint64_t		 now = clock_mono_ms();

	(void)fd;
	(void)what;
	for (hc = TAILQ_FIRST(&c->http_conns); hc != NULL; hc = next) {
		next = TAILQ_NEXT(hc, entry);
		if (now - hc->since_ms < c->conf.http_timeout_ms)
			break;		/* oldest first: the rest is younger */
		if (!http_conn_idle(hc))
			continue;	/* evhttp's write timeout bounds it */
		c->metrics.http_timeouts++;
		log_debug("%s: admin connection without a whole request in "
		    "%u ms: closed", __func__, c->conf.http_timeout_ms);
		evhttp_connection_free(hc->evcon);	/* http_conn_closed() */
	}
}

/* A whole request arrived on evcon: its deadline starts over. */
static void
http_conn_active(struct coord *c, struct evhttp_connection *evcon)
{
	struct http_conn	*hc;

	TAILQ_FOREACH_REVERSE(hc, &c->http_conns, http_connq, entry) {
		if (hc->evcon == evcon) {
			hc->since_ms = clock_mono_ms();
			TAILQ_REMOVE(&c->http_conns, hc, entry);
			TAILQ_INSERT_TAIL(&c->http_conns, hc, entry);
			return;
		}
	}
}

/*
 * Keeps the HTTP cap under the descriptors the process may open, less a
 * reserve for agents, the store and logs.
 */
static void
http_cap_fit(struct coord *c)
{
	struct rlimit	 rl;
	size_t		 room;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == RLIM_INFINITY)
		return;
	room = (size_t)rl.rlim_cur / 2;
	if (rl.rlim_cur > COORD_FD_RESERVE &&
	    (size_t)rl.rlim_cur - COORD_FD_RESERVE < room)
		room = (size_t)rl.rlim_cur - COORD_FD_RESERVE;
	if (room == 0)
		room = 1;
	if (c->conf.http_max_conns > room) {
		log_warnx("%s: --http-max-conns %zu lowered to %zu of the %llu "
		    "descriptors allowed, the rest kept for agents",
		    __func__, c->conf.http_max_conns, room,
		    (unsigned long long)rl.rlim_cur);
		c->conf.http_max_conns = room;
	}
}

/*
 * Answers an admin request on a follower: 307 to the same path and query at
 * the leader's URL, or 503 while no leader is known.
 */
static void
http_redirect(struct coord *c, struct evhttp_request *req)
{
	const char	*uri = evhttp_request_get_uri(req);
	const char	*leader = leader_http(c);
	char		 loc[LEADER_ADDR_MAX + 2048];

	if (leader[0] == '\0') {
		http_error(c, req, 503, NULL, "this coordinator is a follower "
		    "and no leader is known yet: retry");
		return;
	}
	if ((size_t)snprintf(loc, sizeof(loc), "%s%s", leader,
	    uri != NULL ? uri : "/") >= sizeof(loc)) {
		http_error(c, req, 414, NULL, "request URI too long");
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Location",
	    loc);
	http_error(c, req, 307, NULL, "this coordinator is a follower: the "
	    "leader is %s", leader);
}

/* Returns the name of a method of the routes. */
static const char *
http_method_name(enum evhttp_cmd_type cmd)
{
	switch (cmd) {
	case EVHTTP_REQ_GET: return ("GET");
	case EVHTTP_REQ_PUT: return ("PUT");
	case EVHTTP_REQ_POST: return ("POST");
	case EVHTTP_REQ_DELETE: return ("DELETE");
	default: return ("?");
	}
}

/*
 * Returns 1 if route rt's pattern takes path (seg: its n segments, NULL
 * where it is not split; slash: it ended in "/"), with the "{...}"
 * segments in arg[].
 */
static int
http_route_match(const struct http_route *rt, const char *path, char **seg,
    int n, int slash, const char **arg)
{
	const char	*p = rt->pattern, *e;
	size_t		 len = strlen(p), k;
	int		 i, na = 0;

	if (p[len - 1] == '*')
		return (strncmp(path, p, len - 1) == 0);
	/* A trailing slash is taken under /v1/ only, as it always was. */
	if (seg == NULL || (slash && strncmp(p, "/v1/", 4) != 0))
		return (strcmp(path, p) == 0);
	for (i = 0, p++; *p != '\0'; i++, p = *e == '/' ? e + 1 : e) {
		e = strchr(p, '/');
		if (e == NULL)
			e = p + strlen(p);
		k = (size_t)(e - p);
		if (i == n)
			return (0);
		if (*p == '{')
			arg[na++] = seg[i];
		else if (strlen(seg[i]) != k || strncmp(seg[i], p, k) != 0)
			return (0);
	}
	return (i == n);
}

static void	 http_route_one(struct evhttp_request *, void *);

/* Routes one admin request, known as the one being routed meanwhile. */
static void
http_route(struct evhttp_request *req, void *arg)
{
	struct coord	*c = arg;

	c->waiter = req;
	http_route_one(req, arg);
	c->waiter = NULL;
}

/*
 * Routes one admin request through its table (http_routes.c): a path no route takes is
 * a 404, a method its routes do not take a 405 with their methods.  Under
 * /v1/ a request is let in before it is routed at all (the role its method
 * needs: a stranger learns no path), and a job id checked before the rest.
 */
static void
http_route_one(struct evhttp_request *req, void *arg)
{
	struct coord			*c = arg;
	const struct evhttp_uri		*uri = evhttp_request_get_evhttp_uri(req);
	enum evhttp_cmd_type		 cmd = evhttp_request_get_command(req);
	const struct http_route		*rt, *found = NULL, *any = NULL;
	const char			*p, *arg2[2] = { NULL, NULL };
	const char			*targ[2];
	char				 path[512], split[512], *seg[6];
	char				 allow[64], rev[24];
	int64_t				 srev;
	size_t				 i, len;
	int				 n, slash, v1;

	p = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	if (p == NULL || strlen(p) >= sizeof(path)) {
		/* Too long for its job id: the job id is at fault. */
		if (p != NULL && strncmp(p, "/v1/jobs/", 9) == 0 &&
		    strcspn(p + 9, "/") > JOBID_MAX)
			http_error(c, req, 400, "job", "job id is longer than "
			    "%d characters", JOBID_MAX);
		else
			http_error(c, req, 404, NULL, "no such endpoint");
		return;
	}
	snprintf(path, sizeof(path), "%s", p);
	http_conn_active(c, evhttp_request_get_connection(req));
	snprintf(split, sizeof(split), "%s", path);
	n = http_split(split, seg, 6);
	len = strlen(path);
	slash = len > 1 && path[len - 1] == '/';
	v1 = n >= 2 && strcmp(seg[0], "v1") == 0;
	for (i = 0; i < c->http_ntable; i++) {
		rt = &c->http_table[i];
		if (!http_route_match(rt, path, n >= 0 ? seg : NULL, n, slash,
		    targ))
			continue;
		if (any == NULL)
			any = rt;
		if (rt->method == 0 || rt->method == (int)cmd) {
			found = rt;
			memcpy(arg2, targ, sizeof(arg2));
			break;
		}
	}
	if (any == NULL || any->local != HTTP_LOCAL) {
		/* A follower serves a read from its copy if that route (the
		 * method's, not the path's first) says so. */
		if (leader_is_follower(c) && (found == NULL ||
		    found->local != HTTP_REPLICA || !replica_serves(c))) {
			http_redirect(c, req);
			return;
		}
		if (v1 && http_deny(c, req, cmd == EVHTTP_REQ_GET ||
		    cmd == EVHTTP_REQ_HEAD ? HTTP_ROLE_VIEWER :
		    HTTP_ROLE_OPERATOR, "missing or wrong bearer token"))
			return;
		if (v1 && n >= 3 && strcmp(seg[1], "jobs") == 0 &&
		    http_job_id(c, req, seg[2]) == -1)
			return;
	}
	if (any == NULL) {
		http_error(c, req, 404, NULL, "no such endpoint");
		return;
	}
	if (found == NULL) {
		allow[0] = '\0';
		for (i = 0; i < c->http_ntable; i++) {
			rt = &c->http_table[i];
			if (strcmp(rt->pattern, any->pattern) == 0)
				snprintf(allow + strlen(allow), sizeof(allow) -
				    strlen(allow), "%s%s", allow[0] ? ", " : "",
				    http_method_name(rt->method));
		}
		http_method_not_allowed(c, req, allow);
		return;
	}
	if (http_deny(c, req, found->role, found->why401 != NULL ?
	    found->why401 : "missing or wrong bearer token"))
		return;
	/* What the answer reflects: the store's revision (etcd's) the model
	 * was read at or the leader's commits landed at, the same on the
	 * leader and a follower holding the same state; the event stream's
	 * revision over a store that has none (SQLite). */
	srev = store_revision(c->store);
	snprintf(rev, sizeof(rev), "%llu", srev > 0 ? (unsigned long long)srev :
	    (unsigned long long)journal_revision(c));
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "X-Dynprof-Revision", rev);
	if (found->h0 != NULL)
		found->h0(c, req);
	else if (found->h1 != NULL)
		found->h1(c, req, arg2[0]);
	else if (found->h2 != NULL)
		found->h2(c, req, arg2[0], arg2[1]);
	else
		found->hpath(c, req, path);
}

/*
 * HTTPS: each admin connection gets an OpenSSL bufferevent of the context
 * loaded now (a SIGHUP reload serves the connections made after it).
 */
static struct bufferevent *
http_tls_bev(struct event_base *base, void *arg)
{
	struct coord		*c = arg;
	struct bufferevent	*bev, *pair[2];
	SSL			*ssl;

	if ((ssl = tls_ssl_new(&c->http_tls)) != NULL) {
		bev = bufferevent_openssl_socket_new(base, -1, ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
		if (bev != NULL)
			return (bev);
		SSL_free(ssl);
	}
	/*
	 * Out of memory.  evhttp would serve plaintext on a NULL: hand it one
	 * end of a pair whose other end is gone, which serves nothing; evhttp
	 * times the connection out and closes the socket.
	 */
	log_warnx("%s: cannot set up TLS for an admin connection", __func__);
	if (bufferevent_pair_new(base, 0, pair) == -1)
		return (NULL);
	bufferevent_free(pair[1]);
	return (pair[0]);
}

/* Serves the admin API on addr ("HOST:PORT").  Returns 0 or -1. */
int
http_listen(struct coord *c, const char *addr,
    const struct http_route *routes, size_t nroutes)
{
	struct evconnlistener		*l;
	struct sockaddr_storage		 ss;
	socklen_t			 len = sizeof(ss), slen = sizeof(ss);
	struct timeval			 sweep = { 0, 250000 };

	memset(&ss, 0, sizeof(ss));
	if (coord_parse_addr(addr, &ss, &len) == -1)
		return (-1);
	if ((c->http = evhttp_new(c->base)) == NULL)
		return (-1);
	evhttp_set_max_body_size(c->http, COORD_HTTP_BODY_MAX);
	evhttp_set_max_headers_size(c->http, 64 * 1024);
	evhttp_set_timeout(c->http, 30);
	/* Every method evhttp knows reaches http_route(), which answers the
	 * ones a path does not take with 405 and Allow (evhttp's own answer
	 * would be a 501 in HTML). */
	evhttp_set_allowed_methods(c->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	c->http_table = routes;
	c->http_ntable = nroutes;
	evhttp_set_gencb(c->http, http_route, c);
	evhttp_set_bevcb(c->http, http_new_bev, c);
	TAILQ_INIT(&c->http_conns);
	TAILQ_INIT(&c->http_pending);
	TAILQ_INIT(&c->streams);
	http_cap_fit(c);
	c->http_adopt = event_new(c->base, -1, 0, http_adopt_cb, c);
	c->http_sweep = event_new(c->base, -1, EV_PERSIST, http_sweep_cb, c);
	if (c->http_adopt == NULL || c->http_sweep == NULL ||
	    event_add(c->http_sweep, &sweep) == -1)
		return (-1);
	/* Before any read of a connection it adopts. */
	event_priority_set(c->http_adopt, 0);
	l = evconnlistener_new_bind(c->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
	    (struct sockaddr *)&ss, (int)len);
	if (l == NULL) {
		log_warn("%s: cannot listen on %s", __func__, addr);
		return (-1);
	}
	evconnlistener_set_error_cb(l, listener_accept_error);
	if (evhttp_bind_listener(c->http, l) == NULL) {
		evconnlistener_free(l);
		return (-1);
	}
	c->http_listener = l;
	if (getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&ss,
	    &slen) == 0)
		c->http_port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	return (0);
}

/* Stops serving the admin API. */
void
http_close(struct coord *c)
{
	struct http_conn	*hc;

	c->http_listener = NULL;	/* evhttp_free() frees it first */
	if (c->http != NULL)
		evhttp_free(c->http);	/* http_conn_closed() for each */
	c->http = NULL;
	while ((hc = TAILQ_FIRST(&c->http_pending)) != NULL) {
		TAILQ_REMOVE(&c->http_pending, hc, entry);
		free(hc);
	}
	while ((hc = TAILQ_FIRST(&c->http_conns)) != NULL) {
		TAILQ_REMOVE(&c->http_conns, hc, entry);
		free(hc);
	}
	if (c->http_adopt != NULL)
		event_free(c->http_adopt);
	if (c->http_sweep != NULL)
		event_free(c->http_sweep);
	c->http_adopt = c->http_sweep = NULL;
}
