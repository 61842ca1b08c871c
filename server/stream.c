/*
 * Answers written as they are produced (docs/admin-api.md): a chunked reply
 * whose next chunk is asked of a fill function once the previous one has left
 * for the socket, so that what is buffered for one client stays within one
 * chunk however large the answer, and a client that does not read holds back
 * only its own answer.  A stream may also wait (the event stream between
 * events) until stream_wake().  The admin connection knows its stream
 * (http.c): a stream is neither timed out nor evicted as idle, and learns of
 * the connection's close.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>

#include "http.h"
#include "log.h"

static void	 stream_pump(struct stream *);

/* A chunk has left for the socket: asks for the next. */
static void
stream_drained(struct evhttp_connection *evcon, void *arg)
{
	struct stream	*s = arg;

	(void)evcon;
	s->writing = 0;
	stream_pump(s);
}

/* Frees a stream whose connection is gone (from its own event). */
static void
stream_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct stream	*s = arg;

	(void)fd;
	(void)what;
	stream_free(s);
}

/*
 * Asks the fill function for the next chunk and sends it; ends the answer
 * once the function says it is complete, or leaves the stream waiting.
 */
static void
stream_pump(struct stream *s)
{
	struct evbuffer	*buf;
	int		 rc;

	if (s->closed || s->writing || s->ended)
		return;
	if ((buf = evbuffer_new()) == NULL) {
		stream_end(s);
		return;
	}
	s->waiting = 0;
	rc = s->fill(s, buf);
	if (evbuffer_get_length(buf) > 0) {
		s->sent += evbuffer_get_length(buf);
		s->writing = 1;
		evhttp_send_reply_chunk_with_cb(s->req, buf, stream_drained, s);
		http_conn_noread(s->evcon);
	}
	evbuffer_free(buf);
	if (rc == STREAM_DONE)
		stream_end(s);
	else if (rc == STREAM_WAIT && !s->writing)
		s->waiting = 1;
}

/*
 * Starts a streamed 200 answer to req of type ctype: fill(s, buf) adds the
 * next part to buf and returns STREAM_MORE, STREAM_WAIT (nothing more until
 * stream_wake()) or STREAM_DONE; release(s) frees arg when the stream ends.
 * Returns the stream, or NULL (answered 500, arg not released).
 */
struct stream *
stream_start(struct coord *c, struct evhttp_request *req, const char *ctype,
    int (*fill)(struct stream *, struct evbuffer *),
    void (*release)(struct stream *), void *arg)
{
	struct stream	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->reaper = event_new(c->base, -1, 0, stream_reap_cb, s)) ==
	    NULL) {
		free(s);
		http_error(c, req, 500, NULL, "out of memory");
		return (NULL);
	}
	s->coord = c;
	s->req = req;
	s->evcon = evhttp_request_get_connection(req);
	s->fill = fill;
	s->release = release;
	s->arg = arg;
	TAILQ_INSERT_TAIL(&c->streams, s, entry);
	http_conn_stream(c, s->evcon, stream_conn_closed, s);
	c->metrics.http_codes[200]++;
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", ctype);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Cache-Control", "no-store");
	evhttp_send_reply_start(req, 200, "OK");
	/* Not read while it writes: a stream learns of a close from its
	 * writes (the event stream writes a heartbeat an interval at least). */
	http_conn_noread(s->evcon);
	stream_pump(s);
	return (s);
}

/*
 * Closes the stream's connection at once, without its end: for a client so
 * slow that what it has yet to read is gone.  Its close frees it.
 */
void
stream_abort(struct stream *s)
{
	if (s->closed)
		return;
	evhttp_connection_free(s->evcon);	/* stream_conn_closed() */
}

/* Asks a waiting stream for more: something it waits for happened. */
void
stream_wake(struct stream *s)
{
	if (s->waiting)
		stream_pump(s);
}

/*
 * Ends the answer (what is buffered still goes out), and the stream: its
 * release function runs now.
 */
void
stream_end(struct stream *s)
{
	int	 chunked;

	if (s->ended)
		return;
	s->ended = 1;
	if (!s->closed) {
		/* Forgotten first: the end may close the connection.  Only a
		 * chunked end is sure to be written later (HTTP/1.0 may be
		 * over at once, the request freed). */
		http_conn_stream(s->coord, s->evcon, NULL, NULL);
		s->closed = 1;
		chunked = s->req->chunked;
		evhttp_send_reply_end(s->req);
		if (chunked)
			http_conn_noread(s->evcon);
	}
	event_active(s->reaper, EV_TIMEOUT, 1);
}

/*
 * The stream's connection is closing (http.c).  If evhttp let go of the
 * request (the client went away) the request is freed here; otherwise evhttp
 * frees it with the connection.  The stream is freed from its own event.
 */
void
stream_conn_closed(void *arg)
{
	struct stream	*s = arg;

	if (s->closed)
		return;
	s->closed = 1;
	if (evhttp_request_get_connection(s->req) == NULL)
		evhttp_request_free(s->req);
	log_debug("%s: a streamed answer's client went away after %zu bytes",
	    __func__, s->sent);
	if (!s->ended) {
		s->ended = 1;
		event_active(s->reaper, EV_TIMEOUT, 1);
	}
}

/* Frees a stream that ended, with what its release function frees. */
void
stream_free(struct stream *s)
{
	TAILQ_REMOVE(&s->coord->streams, s, entry);
	if (s->release != NULL)
		s->release(s);
	event_free(s->reaper);
	free(s);
}

/* Frees every stream, once the admin connections are closed. */
void
stream_free_all(struct coord *c)
{
	struct stream	*s;

	while ((s = TAILQ_FIRST(&c->streams)) != NULL) {
		s->closed = s->ended = 1;
		stream_free(s);
	}
}
