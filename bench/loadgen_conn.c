/*
 * dynprof-loadgen: one agent connection's side of AgentLink.  It opens the
 * socket (plain, or TLS with its own certificate), says Hello, subscribes,
 * answers every JobConfig with Applied, streams its events as acks come back,
 * and takes its share of the heartbeats.
 */

#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>

#include <openssl/ssl.h>

#include "agentmsg.h"
#include "dynprof.pb-c.h"
#include "frame.h"
#include "parts_loadgen.h"
#include "tls.h"
#include "version.h"

static void	loadgen_heartbeat_every(struct loadgen *, unsigned);

/* Sends m on c (queued behind what the socket did not take). */
int
loadgen_send(struct loadgen_conn *c, Dynprof__V1__AgentMessage *m)
{
	struct evbuffer	*out = bufferevent_get_output(c->bev);
	struct evbuffer	*tmp = c->lg->scratch;
	uint8_t		 buf[1024];
	size_t		 len;
	ssize_t		 n;

	/*
	 * One process plays N agents on the coordinator's machine: every
	 * cycle it spends is taken from the coordinator.  When nothing is
	 * queued, write the frame straight to the socket (one system call)
	 * instead of through the bufferevent (enable the write event, write,
	 * disable it: three); queue only what the socket does not take.
	 */
	if (evbuffer_get_length(out) != 0 || c->state == LOADGEN_CONNECTING ||
	    c->lg->tls_dir != NULL)
		return (frame_put(out, (const ProtobufCMessage *)m));
	evbuffer_drain(tmp, evbuffer_get_length(tmp));
	if (frame_put(tmp, (const ProtobufCMessage *)m) == -1 ||
	    (len = evbuffer_get_length(tmp)) > sizeof(buf))
		return (frame_put(out, (const ProtobufCMessage *)m));
	evbuffer_remove(tmp, buf, len);
	n = send(bufferevent_getfd(c->bev), buf, len, MSG_DONTWAIT |
	    MSG_NOSIGNAL);
	if (n < 0)
		n = 0;
	if ((size_t)n < len)
		return (evbuffer_add(out, buf + n, len - (size_t)n));
	return (0);
}

static void
loadgen_conn_dead(struct loadgen_conn *c, const char *why)
{
	struct loadgen	*lg = c->lg;

	if (c->state == LOADGEN_DEAD)
		return;
	/* --mode failover: it dials again, as an agent would. */
	if (lg->hooks->lost(c))
		return;
	if (c->state == LOADGEN_CONNECTING || c->state == LOADGEN_HELLO_SENT)
		lg->connecting--;
	else
		lg->ready--;
	c->state = LOADGEN_DEAD;
	lg->dead++;
	if (lg->errors_shown++ < 5)
		fprintf(stderr, "loadgen: connection %d: %s\n", c->idx, why);
	if (lg->phase != LOADGEN_PHASE_DONE)
		lg->hooks->fail(lg, "a connection was lost during the run");
}

static void
loadgen_send_hello(struct loadgen_conn *c)
{
	struct agentmsg	 am;
	char		 node[128];

	snprintf(node, sizeof(node), "%s-%d", c->lg->prefix, c->idx);
	agentmsg_hello(&am, node, c->lg->token, "loadgen-" DYNPROF_VERSION_STRING,
	    NULL, 0);
	c->lg->hooks->hello(c, &am.u.hello);
	loadgen_send(c, &am.m);
	c->state = LOADGEN_HELLO_SENT;
}

static void
loadgen_send_subscribe(struct loadgen_conn *c)
{
	struct agentmsg	 am;

	loadgen_send(c, agentmsg_subscribe(&am, c->lg->job, c->gen));
}

static void
loadgen_send_applied(struct loadgen_conn *c, const char *job, uint64_t gen)
{
	struct agentmsg	 am;

	loadgen_send(c, agentmsg_applied(&am, job, gen));
}

/*
 * Event e (0-based) of connection c, of R ranks (--ranks): rank c->idx * R +
 * e / 2 % R, window e / 2R + 1, started then stopped, so that every (job,
 * rank, window, kind) key is distinct.
 */
static void
loadgen_send_event(struct loadgen_conn *c, uint64_t e)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__AgentEvent		 ae = DYNPROF__V1__AGENT_EVENT__INIT;
	Dynprof__V1__RankEvent		 re = DYNPROF__V1__RANK_EVENT__INIT;
	struct timespec			 now;
	char				 dir[128];
	int				 rk = c->lg->ranks_per;
	uint32_t			 wid = (uint32_t)(e / 2 / rk) + 1;

	clock_gettime(CLOCK_REALTIME, &now);
	re.job = (char *)c->lg->job;
	re.rank = c->idx * rk + (int)(e / 2 % rk);
	re.pid = 100000 + re.rank;
	re.slot = 0;
	re.window_id = wid;
	re.start_step = (int64_t)wid * 100;
	re.stop_step = (int64_t)wid * 100 + 4;
	re.generation = c->gen;
	re.time_unix_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	re.rank_seq = (uint32_t)e + 2;
	if (e % 2 == 0) {
		re.kind = DYNPROF__V1__EVENT_KIND__EVENT_STARTED;
		re.step = re.start_step;
		snprintf(dir, sizeof(dir), "/loadgen/rank%d_start%" PRId64
		    "_stop%" PRId64, re.rank, re.start_step, re.stop_step);
		re.output_dir = dir;
	} else {
		re.kind = DYNPROF__V1__EVENT_KIND__EVENT_STOPPED;
		re.step = re.stop_step;
		re.reason = DYNPROF__V1__STOP_REASON__STOP_COMPLETED;
	}
	ae.seq = e + 1;
	ae.event = &re;
	ae.agent_boot_id = c->boot_id;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT;
	m.event = &ae;
	loadgen_send(c, &m);
}

/* Sends c's next events while fewer than --inflight are unacked. */
void
loadgen_events_pump(struct loadgen_conn *c)
{
	struct loadgen	*lg = c->lg;

	while (c->sent < (uint64_t)lg->events_per &&
	    c->sent < c->acked + (uint64_t)lg->inflight) {
		loadgen_send_event(c, c->sent);
		c->sent++;
	}
}

static void
loadgen_on_config(struct loadgen_conn *c, Dynprof__V1__JobConfig *cfg)
{
	struct loadgen	*lg = c->lg;

	if (strcmp(cfg->job, lg->job) != 0) {
		loadgen_send_applied(c, cfg->job, cfg->generation);
		return;
	}
	if (cfg->generation <= c->gen)
		return;
	c->gen = cfg->generation;
	loadgen_send_applied(c, cfg->job, cfg->generation);
	if (lg->phase != LOADGEN_PHASE_FANOUT || lg->t0 == 0 ||
	    c->gen <= lg->base_gen || c->trial == lg->trial)
		return;
	c->trial = lg->trial;
	if (++lg->recv_count == lg->ready && lg->t_all == 0)
		lg->t_all = loadgen_now_ns();
}

static void
loadgen_dispatch(struct loadgen_conn *c, Dynprof__V1__CoordinatorMessage *m)
{
	struct loadgen	*lg = c->lg;
	char		 why[300];

	switch (m->body_case) {
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME:
		if (c->state != LOADGEN_HELLO_SENT)
			break;
		if (lg->phase == LOADGEN_PHASE_FAILOVER) {
			c->state = LOADGEN_READY;
			loadgen_send_subscribe(c);
			lg->hooks->welcome(c, m->welcome);
			break;
		}
		if (lg->hb_ms == 0 && m->welcome->heartbeat_ms != 0)
			loadgen_heartbeat_every(lg, m->welcome->heartbeat_ms);
		c->state = LOADGEN_READY;
		lg->connecting--;
		lg->ready++;
		loadgen_send_subscribe(c);
		lg->hooks->connect_more(lg);
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT:
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG:
		loadgen_on_config(c, m->config);
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK:
		if (m->ack->seq <= c->acked)
			break;
		if (lg->phase == LOADGEN_PHASE_FAILOVER) {
			lg->hooks->acked(c, m->ack->seq);
			break;
		}
		c->acked = m->ack->seq;
		if (lg->phase != LOADGEN_PHASE_EVENTS)
			break;
		lg->ack_msgs++;
		if (c->acked >= (uint64_t)lg->events_per) {
			c->t_acked = loadgen_now_ns();
			if (++lg->conns_acked == lg->n)
				lg->ev_t_acked = c->t_acked;
		} else
			loadgen_events_pump(c);
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR:
		snprintf(why, sizeof(why), "coordinator error %d: %s",
		    m->error->code, m->error->reason);
		lg->hooks->error(c, m->error->code, m->error->leader);
		loadgen_conn_dead(c, why);
		break;
	default:
		loadgen_conn_dead(c, "unknown message from the coordinator");
		break;
	}
}

static void
loadgen_read_cb(struct bufferevent *bev, void *arg)
{
	struct loadgen_conn			*c = arg;
	struct evbuffer				*in = bufferevent_get_input(bev);
	ProtobufCMessage			*m;
	const char				*why;
	int					 rc;

	while (c->state != LOADGEN_DEAD) {
		rc = frame_next(in, &dynprof__v1__coordinator_message__descriptor,
		    &m, &why);
		if (rc == FRAME_MORE)
			return;
		if (rc != FRAME_READY) {
			loadgen_conn_dead(c, why);
			return;
		}
		loadgen_dispatch(c, (Dynprof__V1__CoordinatorMessage *)m);
		protobuf_c_message_free_unpacked(m, NULL);
	}
}

static void
loadgen_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct loadgen_conn	*c = arg;
	char			 why[256];

	if (what & BEV_EVENT_CONNECTED) {
		if (c->lg->tls_dir != NULL &&
		    SSL_session_reused(bufferevent_openssl_get_ssl(bev)))
			c->lg->resumed++;
		loadgen_send_hello(c);
		return;
	}
	if (c->lg->tls_dir != NULL && tls_bev_error(bev, why, sizeof(why)))
		;
	else if (what & BEV_EVENT_EOF)
		snprintf(why, sizeof(why), "closed by the coordinator");
	else
		snprintf(why, sizeof(why), "%s",
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	loadgen_conn_dead(c, why);
	c->lg->hooks->connect_more(c->lg);
}

/*
 * TLS: connect the socket first, then hand it to an OpenSSL bufferevent that
 * starts its handshake once the socket is writable (connected).
 */
static int
loadgen_conn_open_tls(struct loadgen *lg, struct loadgen_conn *c, int fd)
{
	SSL	*ssl;

	if (connect(fd, (struct sockaddr *)&lg->coords[c->fo.cur],
	    sizeof(lg->coords[0])) ==
	    -1 && errno != EINPROGRESS) {
		fprintf(stderr, "loadgen: connect: %s\n", strerror(errno));
		close(fd);
		return (-1);
	}
	if ((ssl = SSL_new(lg->tls_ctx)) == NULL ||
	    SSL_use_certificate(ssl, c->cert) != 1 ||
	    SSL_use_PrivateKey(ssl, c->key) != 1 ||
	    tls_client_expect(ssl, "127.0.0.1") == -1 ||
	    (c->session != NULL && SSL_set_session(ssl, c->session) != 1)) {
		SSL_free(ssl);
		close(fd);
		return (-1);
	}
	c->bev = bufferevent_openssl_socket_new(lg->base, fd, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		SSL_free(ssl);
		close(fd);
		return (-1);
	}
	bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	bufferevent_setcb(c->bev, loadgen_read_cb, NULL, loadgen_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->state = LOADGEN_CONNECTING;
	lg->connecting++;
	return (0);
}

/* Opens connection c (from its own 127.0.0.x with --sources). */
int
loadgen_conn_open(struct loadgen *lg, struct loadgen_conn *c)
{
	struct sockaddr_in	 src;
	int			 fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		fprintf(stderr, "loadgen: socket: %s\n", strerror(errno));
		return (-1);
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (lg->nsrc > 1) {
		/* Spread the connections over 127.0.0.x: a port range each. */
#ifdef IP_BIND_ADDRESS_NO_PORT
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one,
		    sizeof(one));
#endif
		memset(&src, 0, sizeof(src));
		src.sin_family = AF_INET;
		src.sin_addr.s_addr = htonl(0x7f000001U + (uint32_t)(c->idx %
		    lg->nsrc));
		if (bind(fd, (struct sockaddr *)&src, sizeof(src)) == -1) {
			fprintf(stderr, "loadgen: bind: %s\n", strerror(errno));
			close(fd);
			return (-1);
		}
	}
	if (lg->tls_dir != NULL)
		return (loadgen_conn_open_tls(lg, c, fd));
	c->bev = bufferevent_socket_new(lg->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		close(fd);
		return (-1);
	}
	bufferevent_setcb(c->bev, loadgen_read_cb, NULL, loadgen_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	c->state = LOADGEN_CONNECTING;
	lg->connecting++;
	if (bufferevent_socket_connect(c->bev,
	    (struct sockaddr *)&lg->coords[c->fo.cur],
	    sizeof(lg->coords[0])) == -1) {
		loadgen_conn_dead(c, "connect failed");
		return (-1);
	}
	return (0);
}

/*
 * Heartbeats: every connection once per heartbeat_ms, as a real agent sends
 * them, spread over the interval in LOADGEN_HB_TICK_MS slices (agents on real
 * nodes are not synchronised; a burst of N at once would be a test artefact).
 */
static void
loadgen_heartbeat_every(struct loadgen *lg, unsigned ms)
{
	lg->hb_ms = ms;
}

/* The heartbeat tick: the heartbeats that fell due since the last. */
void
loadgen_heartbeat_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen			*lg = arg;
	struct agentmsg			 am;
	Dynprof__V1__AgentMessage	*m;
	struct timespec			 now;
	unsigned			 hb_ms = lg->hb_ms ? lg->hb_ms : 2000;
	int64_t				 t;
	int				 i, count;

	(void)fd;
	(void)what;
	clock_gettime(CLOCK_REALTIME, &now);
	m = agentmsg_heartbeat(&am, (int64_t)now.tv_sec * 1000000000 +
	    now.tv_nsec);
	/*
	 * Every connection once per 0.8 heartbeat_ms, by the time that
	 * passed (a busy loop runs this tick late: it then sends more).
	 */
	t = loadgen_now_ns();
	if (lg->hb_last == 0)
		lg->hb_last = t;
	lg->hb_credit += (double)lg->n * (double)(t - lg->hb_last) /
	    (hb_ms * 0.8e6);
	lg->hb_last = t;
	count = (int)lg->hb_credit;
	lg->hb_credit -= count;
	for (i = 0; i < count && i < lg->n; i++) {
		if (lg->conns[lg->hb_next].state == LOADGEN_READY)
			loadgen_send(&lg->conns[lg->hb_next], m);
		lg->hb_next = (lg->hb_next + 1) % lg->n;
	}
}
