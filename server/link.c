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
#include "link_conn.h"
#include "link_dispatch.h"
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
