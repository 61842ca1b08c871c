/*
 * Answers held for their commit: over etcd a change is applied once etcd has
 * it and committed later; the answer to the request that made it waits for
 * the commit (change_pending(), the model's hook committed), at most
 * CHANGE_HOLD_MS.
 */

#include <sys/queue.h>

#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "http.h"
#include "model.h"
#include "store.h"

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
		evhttp_send_reply(h->req, h->code, h->reason, h->answer);
	} else {
		why = store_unavailable(c->store);
		http_error(c, h->req, 503, NULL, "store unavailable: the "
		    "change was not committed: %s", why != NULL ? why :
		    "the store refused it");
	}
	http_hold_free(h);
}
