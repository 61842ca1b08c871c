/*
 * The AgentLink side's connections: a listener, one struct conn per agent
 * with a bufferevent (so an OpenSSL bufferevent can take its place), reading
 * frames into link_dispatch() (link_dispatch.c), sending, heartbeats, and one
 * function that tears a connection down.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "clock.h"
#include "coord_addr.h"
#include "frame.h"
#include "leader.h"
#include "link.h"
#include "listener.h"
#include "log.h"
#include "model.h"
#include "store.h"
#include "utf8.h"
#include "version.h"

#include <openssl/ssl.h>

/* A TLS handshake must be over within this (and within 3 heartbeats). */
#define LINK_HANDSHAKE_MS	10000
/* The first byte of a TLS record carrying a handshake (a ClientHello). */
#define LINK_TLS_HANDSHAKE_BYTE	0x16
/* Limiters of the lines of failed handshakes, by reason (FNV-1a). */
#define LINK_HANDSHAKE_LOGS	32
/* Connections freed before the heap is trimmed (link_trim()). */
#define LINK_TRIM_AFTER		256

/* Returns "connected", "left" (its agent said goodbye) or "lost". */
const char *
link_node_state(const struct node *n)
{
	if (schedule_node_up(n))
		return ("connected");
	return (n->left ? "left" : "lost");
}

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

/* The committer: finishes the open batch of events, once per loop turn. */
static void
link_commit_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord	*c = arg;

	(void)fd;
	(void)what;
	/* With as many commits in flight as it may have, the batch grows
	 * until one is answered (link_batch_done() comes back here). */
	if (store_inflight(c->store) < LINK_COMMITS_MAX)
		intake_flush(c);
}

/*
 * A TLS ClientHello on the plaintext port (an agent given --tls-* while this
 * coordinator has none): says so and closes.  Returns 1 if it did.
 */
static int
link_tls_on_plain(struct conn *conn, struct evbuffer *in)
{
	unsigned char	 first;

	if (bufferevent_openssl_get_ssl(conn->bev) != NULL ||
	    evbuffer_copyout(in, &first, 1) != 1 ||
	    first != LINK_TLS_HANDSHAKE_BYTE)
		return (0);
	log_warnx("%s: %s speaks TLS on this plaintext AgentLink port: give "
	    "the coordinator --tls-cert, --tls-key and --tls-ca, or the "
	    "agent none", __func__, conn->peer);
	conn->coord->metrics.agents_refused++;
	link_conn_close(conn, -1, "TLS on a plaintext port");
	return (1);
}

/*
 * Before hello a peer is anyone: it may send one frame of at most
 * COORD_PREHELLO_FRAME_MAX bytes.  Returns 0, or -1 with the connection
 * dropped.
 */
static int
link_prehello_check(struct conn *conn, struct evbuffer *in)
{
	uint8_t		 hdr[FRAME_HEADER_LEN];
	uint32_t	 be, n;
	char		 why[128];

	if (evbuffer_copyout(in, hdr, sizeof(hdr)) != sizeof(hdr) ||
	    hdr[0] != 0)
		return (0);	/* frame_next() says what is wrong */
	memcpy(&be, hdr + 1, sizeof(be));
	if ((n = ntohl(be)) <= COORD_PREHELLO_FRAME_MAX)
		return (0);
	snprintf(why, sizeof(why), "a frame of %u bytes before hello, over "
	    "%d", n, COORD_PREHELLO_FRAME_MAX);
	log_warnx("%s: %s: %s", __func__, conn->peer, why);
	link_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
	    why);
	return (-1);
}

/* Reads the frames an agent sent and dispatches each one. */
static void
link_read(struct bufferevent *bev, void *arg)
{
	struct conn			*conn = arg;
	struct evbuffer			*in = bufferevent_get_input(bev);
	ProtobufCMessage		*msg;
	const char			*why;
	int				 rc;

	conn->last_rx_ms = clock_mono_ms();
	conn->stalled_at_rx = conn->coord->stalled_ms;
	if (conn->state == CONN_AWAIT_HELLO && link_tls_on_plain(conn, in))
		return;
	while (conn->state != CONN_CLOSING) {
		if (conn->state == CONN_AWAIT_HELLO &&
		    link_prehello_check(conn, in) == -1)
			return;
		rc = frame_next(in, &dynprof__v1__agent_message__descriptor,
		    &msg, &why);
		if (rc == FRAME_MORE)
			return;
		if (rc != FRAME_READY) {
			if (rc == FRAME_UNDECODABLE)
				why = "message does not decode as an "
				    "AgentMessage";
			log_warnx("%s: bad frame from %s: %s", __func__,
			    conn->peer, why);
			link_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE, why);
			return;
		}
		link_dispatch(conn, (Dynprof__V1__AgentMessage *)msg);
		if (conn->held_ms != 0 && conn->held_hello == NULL) {
			/* Held (leader_hold()): answered from it if this
			 * coordinator takes the lead (link_hello_again()). */
			conn->held_hello = msg;
			continue;
		}
		protobuf_c_message_free_unpacked(msg, NULL);
	}
}

/* Frees the hello a connection's hold kept, if any. */
static void
link_held_free(struct conn *conn)
{
	if (conn->held_hello != NULL)
		protobuf_c_message_free_unpacked(conn->held_hello, NULL);
	conn->held_hello = NULL;
}

/*
 * Answers a hello held while this coordinator followed (leader_hold()), now
 * that it leads, as if it came now: the agent is welcomed without dialling
 * again; returns 1.  No hello kept: ERROR_NOT_LEADER saying why (the agent
 * says hello again, here); returns 0.
 */
int
link_hello_again(struct conn *conn, const char *why)
{
	ProtobufCMessage	*msg = conn->held_hello;

	leader_hold_forget(conn->coord, conn);
	if (msg == NULL || conn->state != CONN_AWAIT_HELLO) {
		link_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER,
		    why);
		return (0);
	}
	conn->held_hello = NULL;
	link_dispatch(conn, (Dynprof__V1__AgentMessage *)msg);
	protobuf_c_message_free_unpacked(msg, NULL);
	return (1);
}

/* Frees the connections buried since the last turn of the loop. */
static void
link_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord	*c = arg;
	struct conn	*conn;

	(void)fd;
	(void)what;
	while ((conn = TAILQ_FIRST(&c->dead)) != NULL) {
		TAILQ_REMOVE(&c->dead, conn, entry);
		bufferevent_free(conn->bev);
		free(conn);
		c->conns_freed++;
	}
}

/*
 * Each tick: once LINK_TRIM_AFTER connections were freed since the last time,
 * gives the heap's free memory back to the system.  Thousands of connections
 * (a burst of handshakes that stalled, a reconnect storm) leave their TLS
 * buffers and bufferevents as free chunks scattered through the heap, which
 * malloc keeps: 2,000 stalled handshakes left 100 MB resident after they
 * were all closed.
 */
void
link_trim(struct coord *c)
{
	if (c->conns_freed < LINK_TRIM_AFTER)
		return;
	c->conns_freed = 0;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* Moves a closing connection to the dead list, freed outside callbacks. */
static void
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

/*
 * Logs why a TLS connection ended before its handshake was over (a plaintext
 * agent, a certificate refused, a silent peer).  Returns 1 if it was one.
 */
static int
link_tls_failed(struct conn *conn, short what)
{
	/* Anyone who can reach the port can fail a handshake: limited per
	 * reason, so that a flood of one kind hides no other. */
	static struct log_limit	 handshake_log[LINK_HANDSHAKE_LOGS];
	const unsigned char	*p;
	uint32_t		 h = 2166136261u;
	SSL	*ssl = bufferevent_openssl_get_ssl(conn->bev);
	char	 why[512];

	if (ssl == NULL)
		return (0);
	if (conn->tls_up) {
		if (!tls_bev_error(conn->bev, why, sizeof(why)))
			return (0);
		log_info("%s: %s%s%s: TLS: %s", __func__, conn->peer,
		    conn->node ? " node " : "", conn->node ? conn->node->name :
		    "", why);
		return (1);
	}
	if (what & BEV_EVENT_TIMEOUT)
		snprintf(why, sizeof(why), "not done in time");
	else if (!tls_bev_error(conn->bev, why, sizeof(why)))
		snprintf(why, sizeof(why), "closed during the handshake");
	for (p = (const unsigned char *)why; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	log_limited(&handshake_log[h % LINK_HANDSHAKE_LOGS], LOG_LEVEL_QUIET,
	    "%s: TLS handshake with %s failed: %s", __func__, conn->peer, why);
	conn->coord->metrics.agents_refused++;
	return (1);
}

/* Acts on a connection's events: TLS up, end of stream, errors. */
static void
link_conn_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn	*conn = arg;
	SSL		*ssl;
	int		 resumed;

	if (what & BEV_EVENT_CONNECTED) {
		/* The TLS handshake is over: the hello deadline is the tick's. */
		conn->tls_up = 1;
		bufferevent_set_timeouts(bev, NULL, NULL);
		ssl = bufferevent_openssl_get_ssl(bev);
		resumed = tls_handshake_done(&conn->coord->agent_tls, ssl);
		log_debug("%s: %s: TLS handshake done (%s%s)", __func__,
		    conn->peer, SSL_get_version(ssl), resumed ?
		    ", session resumed" : "");
		return;
	}
	if (link_tls_failed(conn, what))
		;
	else if (what & BEV_EVENT_EOF)
		log_info("%s: %s%s%s closed the connection", __func__,
		    conn->peer, conn->node ? " node " : "",
		    conn->node ? conn->node->name : "");
	else if (what & BEV_EVENT_ERROR)
		log_warn("%s: %s", __func__, conn->peer);
	link_conn_close(conn, -1, "connection ended");
}

/*
 * Gives a new connection its bufferevent: a TLS server one with a handshake
 * deadline when AgentLink is TLS.  Returns 0, or -1 (fd still open).
 */
static int
link_conn_bev(struct conn *conn, evutil_socket_t fd)
{
	struct coord	*c = conn->coord;
	struct timeval	 tv;
	SSL		*ssl;
	uint64_t	 ms = LINK_HANDSHAKE_MS;

	if (c->agent_tls.ctx == NULL) {
		conn->bev = bufferevent_socket_new(c->base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
		return (conn->bev != NULL ? 0 : -1);
	}
	if ((ssl = tls_ssl_new(&c->agent_tls)) == NULL)
		return (-1);
	conn->bev = bufferevent_openssl_socket_new(c->base, fd, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (conn->bev == NULL) {
		SSL_free(ssl);
		return (-1);
	}
	bufferevent_openssl_set_allow_dirty_shutdown(conn->bev, 1);
	if (ms > 3 * (uint64_t)c->conf.heartbeat_ms)
		ms = 3 * (uint64_t)c->conf.heartbeat_ms;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	bufferevent_set_timeouts(conn->bev, &tv, &tv);
	return (0);
}

/* Takes a new agent connection, refusing it past the bounds. */
static void
link_accept(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct coord	*c = arg;
	struct conn	*conn;
	char		 host[INET6_ADDRSTRLEN];
	int		 port = 0;

	(void)l;
	(void)salen;
	if ((conn = calloc(1, sizeof(*conn))) == NULL) {
		evutil_closesocket(fd);
		return;
	}
	conn->coord = c;
	conn->state = CONN_AWAIT_HELLO;
	TAILQ_INIT(&conn->subs);
	host[0] = '\0';
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, host,
		    sizeof(host));
		port = ntohs(((struct sockaddr_in *)sa)->sin_port);
		snprintf(conn->peer, sizeof(conn->peer), "%s:%d", host, port);
	} else if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr,
		    host, sizeof(host));
		port = ntohs(((struct sockaddr_in6 *)sa)->sin6_port);
		snprintf(conn->peer, sizeof(conn->peer), "[%s]:%d", host, port);
	} else
		snprintf(conn->peer, sizeof(conn->peer), "fd %d", (int)fd);
	if (frame_socket_tune(fd) == -1)
		log_warn("%s: %s: TCP_NODELAY", __func__, conn->peer);
	if (link_conn_bev(conn, fd) == -1) {
		evutil_closesocket(fd);
		free(conn);
		return;
	}
	conn->last_rx_ms = conn->accepted_ms = clock_mono_ms();
	conn->stalled_at_rx = c->stalled_ms;
	bufferevent_setcb(conn->bev, link_read, NULL, link_conn_event,
	    conn);
	bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
	TAILQ_INSERT_TAIL(&c->conns, conn, entry);
	log_debug("%s: connection from %s", __func__, conn->peer);
}

/*
 * Returns how long conn has been silent while the loop was free to read: the
 * time since it last sent, less the loop's stalls since.
 */
static uint64_t
link_silence(const struct conn *conn, uint64_t now)
{
	uint64_t	 since = now - conn->last_rx_ms;
	uint64_t	 stalled = conn->coord->stalled_ms - conn->stalled_at_rx;

	return (stalled >= since ? 0 : since - stalled);
}

/*
 * Sends one connection its heartbeat, or drops it if silent too long (judge:
 * 0 on a turn right after the loop stalled).
 */
static void
link_heartbeat_conn(struct conn *conn, struct evbuffer *frame,
    uint64_t now, uint64_t limit, int judge)
{
	if (conn->held_ms != 0) {
		/* A follower holds its hello (leader_hold()), for a bounded
		 * time: the agent is told it is alive, nothing judged. */
		if (frame != NULL)
			link_send_frame(conn, frame);
		return;
	}
	if (judge && conn->state == CONN_AWAIT_HELLO &&
	    now - conn->accepted_ms > conn->coord->conf.hello_timeout_ms) {
		log_warnx("%s: %s: no hello %u ms after accept", __func__,
		    conn->peer, conn->coord->conf.hello_timeout_ms);
		link_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_NOT_HELLO,
		    "no hello in time");
		return;
	}
	if (judge && link_silence(conn, now) > limit) {
		if (conn->state != CONN_AWAIT_HELLO)
			conn->coord->metrics.silent_closed++;
		link_conn_close(conn,
		    conn->state == CONN_AWAIT_HELLO ?
		    DYNPROF__V1__ERROR_CODE__ERROR_NOT_HELLO :
		    DYNPROF__V1__ERROR_CODE__ERROR_UNSPECIFIED,
		    conn->state == CONN_AWAIT_HELLO ? "no hello in time" :
		    "silent for 3 heartbeat intervals");
		return;
	}
	if (conn->state == CONN_READY && frame != NULL)
		link_send_frame(conn, frame);
}

/*
 * Sends a heartbeat to every agent and, if judge, drops those silent for 3
 * intervals while the loop was free (their nodes become lost, their ranks
 * unknown).
 */
void
link_heartbeat(struct coord *c, int judge)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__Heartbeat		 hb;
	struct evbuffer			*frame;
	struct conn			*conn, *next;
	uint64_t			 now = clock_mono_ms();

	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__heartbeat__init(&hb);
	hb.time_unix_ns = clock_wall_ns();
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT;
	msg.heartbeat = &hb;
	frame = link_frame(&msg);
	for (conn = TAILQ_FIRST(&c->conns); conn != NULL; conn = next) {
		next = TAILQ_NEXT(conn, entry);
		link_heartbeat_conn(conn, frame, now,
		    3 * (uint64_t)c->conf.heartbeat_ms, judge);
	}
	if (frame != NULL)
		evbuffer_free(frame);
}

/* Listens for agents on addr ("HOST:PORT").  Returns 0 or -1. */
int
link_listen(struct coord *c, const char *addr)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss), slen = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (coord_parse_addr(addr, &ss, &len) == -1)
		return (-1);
	c->listener = evconnlistener_new_bind(c->base, link_accept, c,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    4096, (struct sockaddr *)&ss, (int)len);
	if (c->listener == NULL) {
		log_warn("%s: cannot listen on %s", __func__, addr);
		return (-1);
	}
	evconnlistener_set_error_cb(c->listener, listener_accept_error);
	if (getsockname(evconnlistener_get_fd(c->listener),
	    (struct sockaddr *)&ss, &slen) == 0)
		c->agent_port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	c->reaper = event_new(c->base, -1, 0, link_reap_cb, c);
	c->committer = event_new(c->base, -1, 0, link_commit_cb, c);
	c->pusher = event_new(c->base, -1, 0, link_push_due, c);
	if (c->reaper == NULL || c->committer == NULL || c->pusher == NULL)
		return (-1);
	/*
	 * At the reads' own priority: activated by the first event of a loop
	 * iteration, it queues behind the reads already active in that iteration
	 * and so commits once they are done.  A lower priority would starve
	 * while agents keep sending, and hold every ack back.
	 */
	event_priority_set(c->committer, 1);
	event_priority_set(c->pusher, 1);
	return (0);
}

/* Says goodbye to every agent and frees every connection. */
void
link_close_all(struct coord *c)
{
	struct conn	*conn;

	intake_flush(c);
	while ((conn = TAILQ_FIRST(&c->conns)) != NULL) {
		if (conn->state != CONN_CLOSING)
			link_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_SHUTTING_DOWN,
			    "coordinator stopping");
		if (conn->state == CONN_CLOSING &&
		    TAILQ_FIRST(&c->conns) == conn) {
			/* Still flushing: one last try, then give up (a
			 * TLS stream cannot be written around OpenSSL). */
			if (bufferevent_openssl_get_ssl(conn->bev) == NULL)
				evbuffer_write(bufferevent_get_output(
				    conn->bev), bufferevent_getfd(conn->bev));
			link_conn_bury(conn);
		}
	}
	link_reap_cb(-1, 0, c);
	if (c->listener != NULL)
		evconnlistener_free(c->listener);
	c->listener = NULL;
}
