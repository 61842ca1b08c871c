/*
 * One agent connection below the protocol: queueing frames to it (bounded by
 * --agent-outbuf-max), and the one function that tears it down (its
 * subscriptions, its hold, an Error frame flushed first), the struct freed
 * later, outside the callback that got there.
 */

#include <stdio.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "clock.h"
#include "frame.h"
#include "leader.h"
#include "link_conn.h"
#include "log.h"
#include "model.h"
#include "store.h"

/*
 * Returns 0 if len more bytes fit in what is queued to the agent (at most
 * --agent-outbuf-max).  Else drops it, an agent whose socket does not read,
 * without flushing what is queued (it resyncs when it connects again: its
 * hello says what it applied, what is newer is sent), and returns -1.  A
 * closing connection takes nothing past the cap.
 */
static int
link_outbuf_room(struct conn *conn, size_t len)
{
	struct evbuffer	*out = bufferevent_get_output(conn->bev);
	size_t		 queued = evbuffer_get_length(out);
	size_t		 max = conn->coord->conf.agent_outbuf_max;

	if (queued + len <= max)
		return (0);
	if (conn->state == CONN_CLOSING)
		return (-1);
	conn->coord->metrics.agents_dropped++;
	log_warnx("%s: dropping %s%s%s: %zu bytes queued and not read, over "
	    "the %zu bytes limit", __func__, conn->peer,
	    conn->node ? " node " : "", conn->node ? conn->node->name : "",
	    queued + len, max);
	/* The bufferevent alone takes from the front of its output. */
	evbuffer_unfreeze(out, 1);
	evbuffer_drain(out, queued);
	evbuffer_freeze(out, 1);
	link_conn_close(conn, -1, "output not read");
	return (-1);
}

/* Queues one message to an agent (a closing connection takes only an error). */
void
link_send(struct conn *conn, const Dynprof__V1__CoordinatorMessage *msg)
{
	if (conn->state == CONN_CLOSING && msg->body_case !=
	    DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR)
		return;
	if (link_outbuf_room(conn, FRAME_HEADER_LEN +
	    protobuf_c_message_get_packed_size(
	    (const ProtobufCMessage *)msg)) == -1)
		return;
	if (frame_put(bufferevent_get_output(conn->bev),
	    (const ProtobufCMessage *)msg) == -1)
		log_warnx("%s: cannot queue a message to %s", __func__,
		    conn->peer);
}

/* Queues an Error message to an agent. */
void
link_send_error(struct conn *conn, int code, const char *reason)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__Error		 err;

	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__error__init(&err);
	err.code = code;
	err.reason = (char *)reason;
	if (code == DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER)
		err.leader = (char *)leader_agent(conn->coord);
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR;
	msg.error = &err;
	link_send(conn, &msg);
}

/* Frames msg once into a new buffer, to copy to many connections. */
struct evbuffer *
link_frame(const Dynprof__V1__CoordinatorMessage *msg)
{
	struct evbuffer	*buf;

	if ((buf = evbuffer_new()) == NULL)
		return (NULL);
	if (frame_put(buf, (const ProtobufCMessage *)msg) == -1) {
		evbuffer_free(buf);
		return (NULL);
	}
	return (buf);
}

/* Queues a frame built once to a ready agent. */
void
link_send_frame(struct conn *conn, struct evbuffer *frame)
{
	size_t	 len = evbuffer_get_length(frame);

	if ((conn->state != CONN_READY && conn->held_ms == 0) ||
	    link_outbuf_room(conn, len) == -1)
		return;
	if (evbuffer_add(bufferevent_get_output(conn->bev),
	    evbuffer_pullup(frame, (ev_ssize_t)len), len) == -1)
		log_warnx("%s: cannot queue a message to %s", __func__,
		    conn->peer);
}

/* Frees the hello a connection's hold kept, if any. */
static void
link_held_free(struct conn *conn)
{
	if (conn->held_hello != NULL)
		protobuf_c_message_free_unpacked(conn->held_hello, NULL);
	conn->held_hello = NULL;
}

/* Moves a closing connection to the dead list, freed outside callbacks. */
void
link_conn_bury(struct conn *conn)
{
	struct coord	*c = conn->coord;

	bufferevent_disable(conn->bev, EV_READ | EV_WRITE);
	bufferevent_setcb(conn->bev, NULL, NULL, NULL, NULL);
	TAILQ_REMOVE(&c->conns, conn, entry);
	TAILQ_INSERT_TAIL(&c->dead, conn, entry);
	event_active(c->reaper, EV_TIMEOUT, 1);
}

/* Buries a closing connection once its output is written. */
static void
link_drained(struct bufferevent *bev, void *arg)
{
	(void)bev;
	link_conn_bury(arg);
}

/* Buries a closing connection on an error or timeout. */
static void
link_closing_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	link_conn_bury(arg);
}

/*
 * Tears a connection down: the only way one ends.  With a code, an Error frame
 * saying why is flushed first (bounded by a timeout).  The struct is freed
 * later, outside the callback that got here.
 */
void
link_conn_close(struct conn *conn, int code, const char *reason)
{
	struct coord	*c = conn->coord;
	struct timeval	 tv = { 2, 0 };
	struct sub	*s;

	if (conn->state == CONN_CLOSING)
		return;
	leader_hold_forget(c, conn);
	link_held_free(conn);
	if (conn->state == CONN_AWAIT_HELLO && code != -1)
		c->metrics.agents_refused++;
	if (code != -1)
		log_info("%s: closing %s%s%s: %s", __func__, conn->peer,
		    conn->node ? " node " : "", conn->node ? conn->node->name :
		    "", reason);
	if (conn->state == CONN_READY) {
		c->nconns_ready--;
		if (conn->node->conn == conn) {
			conn->node->conn = NULL;
			conn->node->view_dirty = 1;
			conn->node->last_seen_ns = clock_wall_ns();
		}
	}
	while ((s = TAILQ_FIRST(&conn->subs)) != NULL)
		link_sub_remove(s);
	if (conn->ack_queued) {
		/* Its events commit with the batch; the ack is not sent. */
		TAILQ_REMOVE(&c->acks, conn, ack_entry);
		conn->ack_queued = 0;
		if (store_batch_open(c->store))
			store_put_agent(c->store, conn->node->name,
			    conn->node->boot_id, conn->ack_seq);
	}
	conn->state = CONN_CLOSING;
	/* Before the TLS handshake is over, no frame can reach the peer. */
	if (code != -1 && (conn->tls_up ||
	    bufferevent_openssl_get_ssl(conn->bev) == NULL))
		link_send_error(conn, code, reason);
	bufferevent_disable(conn->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(conn->bev)) == 0) {
		link_conn_bury(conn);
		return;
	}
	bufferevent_setcb(conn->bev, NULL, link_drained,
	    link_closing_event, conn);
	bufferevent_set_timeouts(conn->bev, NULL, &tv);
	bufferevent_enable(conn->bev, EV_WRITE);
}

/* Removes a subscription from its job and its connection, and frees it. */
void
link_sub_remove(struct sub *s)
{
	TAILQ_REMOVE(&s->job->subs, s, job_entry);
	TAILQ_REMOVE(&s->conn->subs, s, conn_entry);
	s->conn->nsubs--;
	if (s->conn->node != NULL)
		s->conn->node->view_dirty = 1;
	free(s);
}
