/*
 * The coordinator link: one TCP stream, framed protobuf (common/frame.h).  The
 * agent speaks first (Hello), waits for Welcome, then applies pushed configs,
 * forwards rank events numbered by seq and keeps them until acknowledged,
 * heartbeats, and reconnects with capped exponential backoff and jitter.  Its
 * timing (heartbeats, timeouts, the next attempt) is driven by the agent's one
 * housekeeping timer through upstream_tick().
 */

#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "parts.h"
#include "agentmsg.h"
#include "clock.h"
#include "frame.h"
#include "log.h"
#include "version.h"

#include <openssl/ssl.h>

#define UPSTREAM_HB_MIN_MS	100
#define UPSTREAM_HB_MAX_MS	60000
#define UPSTREAM_OUTBUF_MAX	(16U * 1024 * 1024)	/* a peer that stops reading */
#define UPSTREAM_GOODBYE_MS	1000	/* a stopping agent waits for its goodbye */

static void	 upstream_connect(struct agent *);
static void	 upstream_read_cb(struct bufferevent *, void *);
static void	 upstream_event_cb(struct bufferevent *, short, void *);
static void	 upstream_lost(struct agent *, const char *);

/* Sets up the link; connects at once if a coordinator is configured. */
int
upstream_init(struct agent *a)
{
	struct upstream		*up = &a->up;
	const char		*why;
	int			 n;

	up->state = UPSTREAM_NONE;
	up->next_seq = 1;
	up->heartbeat_ms = AGENT_HEARTBEAT_MS;
	failover_init(&up->fo, up->addrs, 0);
	queue_init(&up->queue, a->opts.queue_max);
	if (getrandom(&up->boot_id, sizeof(up->boot_id), 0) !=
	    sizeof(up->boot_id) || up->boot_id == 0)
		up->boot_id = ((uint64_t)clock_wall_ns() << 1) | 1;
	if (upstream_addr_text(a)[0] == '\0')
		return (0);
	if ((n = failover_parse(up->addrs, upstream_addr_text(a), &why)) ==
	    -1) {
		log_warnx("%s: bad coordinator address \"%s\": %s", __func__,
		    upstream_addr_text(a), why);
		return (-1);
	}
	failover_init(&up->fo, up->addrs, n);
	if (a->opts.tls_cert[0] != '\0' && tls_load(&up->tls, "agentlink",
	    TLS_VERIFY_PEER, a->opts.tls_cert, a->opts.tls_key,
	    a->opts.tls_ca) == -1)
		return (-1);
	upstream_connect(a);
	return (0);
}

/* Closes the link and frees the queue. */
void
upstream_free(struct agent *a)
{
	if (a->up.bev != NULL)
		bufferevent_free(a->up.bev);
	a->up.bev = NULL;
	a->up.state = UPSTREAM_NONE;
	queue_clear(&a->up.queue);
	tls_clear(&a->up.tls);
}

/*
 * SIGHUP: rereads the TLS files; the next connection uses them, the current
 * one goes on.  A file that does not load keeps the old ones (logged).
 */
void
upstream_reload_tls(struct agent *a)
{
	tls_reload(&a->up.tls);
}

/* Returns 1 when the coordinator has welcomed this agent on the current stream. */
int
upstream_ready(const struct agent *a)
{
	return (a->up.state == UPSTREAM_READY);
}

/*
 * The stream's output buffer, or NULL when nothing can be sent: no stream, or
 * a coordinator that stopped reading (then the stream is dropped).
 */
static struct evbuffer *
upstream_output(struct agent *a)
{
	struct upstream	*up = &a->up;

	if (up->bev == NULL)
		return (NULL);
	/*
	 * Unsent bytes pile up only if the coordinator stopped reading: hang up
	 * (the events stay queued) rather than grow without bound.  The free is
	 * safe here: libevent defers it while a callback of this bufferevent runs.
	 */
	if (evbuffer_get_length(bufferevent_get_output(up->bev)) >
	    UPSTREAM_OUTBUF_MAX) {
		upstream_lost(a, "coordinator not reading");
		return (NULL);
	}
	return (bufferevent_get_output(up->bev));
}

/* Sends one message as a frame.  Returns 0 or -1. */
int
upstream_send(struct agent *a, Dynprof__V1__AgentMessage *m)
{
	struct evbuffer	*out;

	if ((out = upstream_output(a)) == NULL)
		return (-1);
	if (frame_put(out, &m->base) == -1) {
		log_warnx("%s: cannot frame message %d", __func__,
		    (int)m->body_case);
		return (-1);
	}
	a->up.last_sent_ms = clock_mono_ms();
	return (0);
}

/* The goodbye left (the output drained): the loop may end. */
static void
upstream_goodbye_sent(struct bufferevent *bev, void *arg)
{
	struct agent	*a = arg;

	(void)bev;
	event_base_loopbreak(a->base);
}

/*
 * The agent stops cleanly: says goodbye to the coordinator, which then shows
 * the node as left rather than lost, and ends the loop once it is sent, or
 * after UPSTREAM_GOODBYE_MS.  Returns 1 if the loop ends so, 0 if nothing
 * could be sent (no stream welcomed): the caller ends it.
 */
int
upstream_goodbye(struct agent *a)
{
	struct agentmsg	 am;
	struct timeval	 tv = { UPSTREAM_GOODBYE_MS / 1000,
			    (UPSTREAM_GOODBYE_MS % 1000) * 1000 };

	if (!upstream_ready(a) || upstream_send(a, agentmsg_goodbye(&am)) == -1)
		return (0);
	bufferevent_setcb(a->up.bev, upstream_read_cb, upstream_goodbye_sent,
	    upstream_event_cb, a);
	event_base_loopexit(a->base, &tv);
	return (1);
}

/* Sends a heartbeat, with the clock offset once known (offset.c). */
static void
upstream_heartbeat(struct agent *a)
{
	struct agentmsg	 am;

	agentmsg_heartbeat(&am, clock_wall_ns());
	if (a->offset.known) {
		am.u.heartbeat.clock_offset_ns = a->offset.offset_ns;
		am.u.heartbeat.clock_offset_known = 1;
		offset_said(a);
	}
	upstream_send(a, &am.m);
}

/* Sends Hello: the token, and every job's applied generation. */
static void
upstream_send_hello(struct agent *a)
{
	struct agentmsg			 am;
	Dynprof__V1__JobGeneration	*gens = NULL, **gp = NULL;
	struct agent_job		*j;
	size_t				 n = 0;

	TAILQ_FOREACH(j, &a->jobs, entry)
		n++;
	if (n > 0) {
		gens = calloc(n, sizeof(*gens));
		gp = calloc(n, sizeof(*gp));
		if (gens == NULL || gp == NULL) {
			free(gens);
			free(gp);
			gens = NULL;
			gp = NULL;
			n = 0;
		}
	}
	n = 0;
	if (gens != NULL) {
		TAILQ_FOREACH(j, &a->jobs, entry) {
			dynprof__v1__job_generation__init(&gens[n]);
			gens[n].job = j->name;
			gens[n].generation = j->applied;
			gp[n] = &gens[n];
			n++;
		}
	}
	agentmsg_hello(&am, a->opts.node, a->token, DYNPROF_VERSION_STRING,
	    gp, n);
	am.u.hello.failed_leader = (char *)failover_lost_leader(&a->up.fo);
	upstream_send(a, &am.m);
	free(gens);
	free(gp);
}

/*
 * The tags, field number << 3 | wire type (0 varint, 2 length-delimited), of
 * the fields around a packed RankEvent in an AgentMessage (proto/dynprof.proto).
 */
#define TAG_AGENT_MESSAGE_EVENT	((6 << 3) | 2)	/* AgentMessage.event */
#define TAG_AGENT_EVENT_SEQ	((1 << 3) | 0)	/* AgentEvent.seq */
#define TAG_AGENT_EVENT_EVENT	((2 << 3) | 2)	/* AgentEvent.event */
#define TAG_AGENT_EVENT_BOOT_ID	((3 << 3) | 0)	/* AgentEvent.agent_boot_id */

/* Writes v at p as a protobuf varint; returns its length (at most 10). */
static size_t
upstream_varint(uint8_t *p, uint64_t v)
{
	size_t	 n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return (n);
}

/*
 * Appends to out the frame of the AgentMessage {event: AgentEvent {seq, event,
 * agent_boot_id}} whose event is the len bytes of a packed RankEvent at buf:
 * the bytes protobuf-c would write (fields in number order, zeros left out),
 * without decoding and packing the event again.  Returns 0 or -1.
 */
int
upstream_frame_event(struct evbuffer *out, uint64_t seq, uint64_t boot_id,
    const uint8_t *buf, size_t len)
{
	struct iovec	 iov[3];
	uint8_t		 head[48], fields[24], tail[12];
	size_t		 nh = 0, nf = 0, nt = 0;

	if (seq != 0) {
		fields[nf++] = TAG_AGENT_EVENT_SEQ;
		nf += upstream_varint(fields + nf, seq);
	}
	fields[nf++] = TAG_AGENT_EVENT_EVENT;
	nf += upstream_varint(fields + nf, len);
	if (boot_id != 0) {
		tail[nt++] = TAG_AGENT_EVENT_BOOT_ID;
		nt += upstream_varint(tail + nt, boot_id);
	}
	head[nh++] = TAG_AGENT_MESSAGE_EVENT;
	nh += upstream_varint(head + nh, nf + len + nt);
	memcpy(head + nh, fields, nf);
	nh += nf;
	iov[0].iov_base = head;
	iov[0].iov_len = nh;
	iov[1].iov_base = (void *)buf;
	iov[1].iov_len = len;
	iov[2].iov_base = tail;
	iov[2].iov_len = nt;
	return (frame_put_parts(out, iov, 3));
}

/* Sends event seq, the len bytes it was packed into when it was queued. */
static void
upstream_send_event(struct agent *a, uint64_t seq, const uint8_t *buf,
    size_t len)
{
	struct evbuffer	*out;

	if ((out = upstream_output(a)) == NULL)
		return;
	if (upstream_frame_event(out, seq, a->up.boot_id, buf, len) == -1) {
		log_warnx("%s: cannot frame event %llu", __func__,
		    (unsigned long long)seq);
		return;
	}
	a->up.last_sent_ms = clock_mono_ms();
}

/* Sends, in order, every queued event the coordinator has not committed. */
static void
upstream_replay(struct agent *a)
{
	const struct queue_entry	*e;
	size_t				 i, n = 0;

	for (i = 0; (e = queue_at(&a->up.queue, i)) != NULL; i++) {
		if (e->seq <= a->up.acked)
			continue;
		upstream_send_event(a, e->seq, e->buf, e->len);
		n++;
	}
	if (n > 0)
		log_info("replayed %zu queued events", n);
}

/*
 * The coordinator committed every event up to seq: the slots they were read
 * from learn it (their log entries may be overwritten now), and the queue
 * forgets them.
 */
static void
upstream_acked(struct agent *a, uint64_t seq)
{
	const struct queue_entry	*e;
	size_t				 i;

	a->up.acked = seq;
	for (i = 0; (e = queue_at(&a->up.queue, i)) != NULL && e->seq <= seq;
	    i++)
		if (e->origin.slot != QUEUE_ORIGIN_NONE)
			a->up.hooks->acked(a, &e->origin);
	queue_ack(&a->up.queue, seq);
}

/* Welcome: the stream is up; resubscribes and replays what is not committed. */
static void
upstream_welcome(struct agent *a, const Dynprof__V1__Welcome *w)
{
	struct upstream		*up = &a->up;

	offset_reset(a);	/* another coordinator, maybe */
	up->heartbeat_ms = w->heartbeat_ms;
	if (up->heartbeat_ms < UPSTREAM_HB_MIN_MS)
		up->heartbeat_ms = w->heartbeat_ms == 0 ? AGENT_HEARTBEAT_MS :
		    UPSTREAM_HB_MIN_MS;
	if (up->heartbeat_ms > UPSTREAM_HB_MAX_MS)
		up->heartbeat_ms = UPSTREAM_HB_MAX_MS;
	if (w->agent_boot_id == up->boot_id && w->acked_seq > up->acked &&
	    w->acked_seq < up->next_seq)
		upstream_acked(a, w->acked_seq);
	up->state = UPSTREAM_READY;
	if (up->fo.lost >= 0)
		log_info("failover over: %u ERROR_NOT_LEADER answers on the way",
		    up->fo.not_leader);
	failover_welcomed(&up->fo);
	up->connects++;
	log_info("connected to coordinator %s (heartbeat %u ms, %zu events "
	    "queued)", upstream_addr_text(a), up->heartbeat_ms,
	    queue_length(&up->queue));
	/* First: the legacy jobs' observed events follow. */
	a->up.hooks->welcomed(a);
	upstream_replay(a);
	a->loop->wake_sampler(a);
}

/*
 * Acts on one decoded message of the coordinator.  Returns 0, or -1 when the
 * stream must end (an error frame, no welcome first).
 */
int
upstream_dispatch(struct agent *a, const Dynprof__V1__CoordinatorMessage *m)
{
	struct upstream	*up = &a->up;
	const Dynprof__V1__Error *e;

	up->last_recv_ms = clock_mono_ms();
	if (m->body_case == DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR) {
		e = m->error;
		log_warnx("coordinator %s refused: error %d: %.200s",
		    upstream_addr_text(a), (int)e->code,
		    e->reason != NULL ? e->reason : "");
		if (e->code == DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER)
			upstream_addr_not_leader(a, e->leader);
		return (-1);
	}
	if (up->state == UPSTREAM_HELLO) {
		/* A follower holds the hello until the next leader is known
		 * (the hello said which one was lost): alive, keep waiting. */
		if (m->body_case ==
		    DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT &&
		    up->fo.lost >= 0)
			return (0);
		if (m->body_case != DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME) {
			a->stats.bad_messages++;
			log_warnx("%s: first message from %s is not welcome "
			    "(type %d)", __func__, upstream_addr_text(a),
			    (int)m->body_case);
			return (-1);
		}
		if (m->welcome->protocol_version != PROTOCOL_VERSION) {
			a->stats.bad_messages++;
			log_warnx("%s: coordinator speaks protocol %u, this "
			    "agent %d", __func__,
			    m->welcome->protocol_version, PROTOCOL_VERSION);
			return (-1);
		}
		upstream_welcome(a, m->welcome);
		return (0);
	}

	switch (m->body_case) {
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT:
		if (offset_note(a, m->heartbeat->time_unix_ns)) {
			upstream_heartbeat(a);
			a->up.hooks->retimed(a);
		}
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG:
		(void)a->up.hooks->config(a, m->config);
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK:
		if (m->ack->seq >= up->next_seq) {
			a->stats.bad_messages++;
			log_warnx("%s: ack of event %llu never sent", __func__,
			    (unsigned long long)m->ack->seq);
			break;
		}
		if (m->ack->seq > up->acked)
			upstream_acked(a, m->ack->seq);
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME:
		a->stats.bad_messages++;
		log_warnx("%s: second welcome ignored", __func__);
		break;
	default:
		a->stats.unknown_messages++;
		log_warnx("%s: unknown message type from %s ignored", __func__,
		    upstream_addr_text(a));
		break;
	}
	return (0);
}

/* Takes every whole frame the coordinator sent and dispatches it. */
static void
upstream_read_cb(struct bufferevent *bev, void *arg)
{
	struct agent		*a = arg;
	struct evbuffer		*in = bufferevent_get_input(bev);
	ProtobufCMessage	*m;
	const char		*why = "?";
	int			 rc;

	for (;;) {
		rc = frame_next(in, &dynprof__v1__coordinator_message__descriptor,
		    &m, &why);
		if (rc == FRAME_MORE)
			break;
		if (rc == FRAME_BAD) {
			a->stats.bad_frames++;
			log_warnx("%s: bad frame from %s: %s", __func__,
			    upstream_addr_text(a), why);
			upstream_lost(a, "bad frame");
			a->loop->housekeep(a, 0);
			return;
		}
		if (rc == FRAME_UNDECODABLE) {
			a->stats.bad_messages++;
			log_warnx("%s: undecodable message from %s", __func__,
			    upstream_addr_text(a));
			upstream_lost(a, "bad message");
			a->loop->housekeep(a, 0);
			return;
		}
		rc = upstream_dispatch(a, (Dynprof__V1__CoordinatorMessage *)m);
		protobuf_c_message_free_unpacked(m, NULL);
		if (rc == -1) {
			upstream_lost(a, "protocol error");
			a->loop->housekeep(a, 0);
			return;
		}
		if (a->up.bev != bev)
			return;		/* hung up while answering */
	}
	/* Awake anyway: do now what would soon wake us again. */
	a->loop->housekeep(a, 1);
}

/*
 * A TLS stream ended with an OpenSSL error (a certificate refused by either
 * side, a plaintext coordinator): says why and hangs up.  Returns 1 if so.
 */
static int
upstream_tls_failed(struct agent *a, struct bufferevent *bev, short what)
{
	char	 why[512], msg[768];
	int	 handshaking = a->up.state == UPSTREAM_CONNECTING;

	if (bufferevent_openssl_get_ssl(bev) == NULL)
		return (0);
	if (!tls_bev_error(bev, why, sizeof(why))) {
		if (!handshaking || !(what & BEV_EVENT_EOF))
			return (0);
		snprintf(why, sizeof(why), "closed during the handshake");
	}
	snprintf(msg, sizeof(msg), "TLS %s: %s%s", handshaking ?
	    "handshake failed" : "error", why, handshaking ? " (is the "
	    "coordinator serving TLS, with a certificate of --tls-ca naming "
	    "the --coordinator host?)" : "");
	log_warnx("%s: %s: %s", __func__, upstream_addr_text(a), msg);
	upstream_lost(a, msg);
	return (1);
}

/* The stream connected, ended or failed. */
static void
upstream_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct agent	*a = arg;
	char		 msg[256];
	SSL		*ssl;
	int		 resumed;

	if (what & BEV_EVENT_CONNECTED) {
		a->up.state = UPSTREAM_HELLO;
		a->up.last_recv_ms = clock_mono_ms();
		if (frame_socket_tune(bufferevent_getfd(bev)) == -1)
			log_warn("%s: TCP_NODELAY", __func__);
		if ((ssl = bufferevent_openssl_get_ssl(bev)) != NULL) {
			resumed = tls_handshake_done(&a->up.tls, ssl);
			log_info("%s: %s: %s, %s", __func__,
			    upstream_addr_text(a), SSL_get_version(ssl), resumed ?
			    "session resumed" : "full handshake");
		}
		log_debug("%s: connected to %s, sending hello", __func__,
		    upstream_addr_text(a));
		upstream_send_hello(a);
	} else if (upstream_tls_failed(a, bev, what))
		;
	else if (a->up.state == UPSTREAM_HELLO) {
		/* A TLS coordinator drops a plaintext hello at once, and one
		 * refusing this agent's certificate may close without a word. */
		snprintf(msg, sizeof(msg), "%s before any answer to the hello: "
		    "%s", (what & BEV_EVENT_EOF) ? "closed" :
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()),
		    a->up.tls.ctx == NULL ? "does the coordinator require TLS "
		    "(--tls-cert, --tls-key, --tls-ca)?" : "was this agent's "
		    "certificate refused (see the coordinator's log)?");
		log_warnx("%s: %s: %s", __func__, upstream_addr_text(a), msg);
		upstream_lost(a, msg);
	} else if (what & BEV_EVENT_EOF)
		upstream_lost(a, "closed by the coordinator");
	else
		upstream_lost(a, evutil_socket_error_to_string(
		    EVUTIL_SOCKET_ERROR()));
	a->loop->housekeep(a, 0);
}

/* A bufferevent to connect with: a TLS client one when TLS is configured. */
static struct bufferevent *
upstream_new_bev(struct agent *a)
{
	struct bufferevent	*bev;
	SSL			*ssl;

	if (a->up.tls.ctx == NULL)
		return (bufferevent_socket_new(a->base, -1,
		    BEV_OPT_CLOSE_ON_FREE));
	if ((ssl = tls_ssl_new(&a->up.tls)) == NULL)
		return (NULL);
	if (tls_client_expect(ssl, a->up.fo.addrs[a->up.fo.cur].host) == -1) {
		log_warnx("%s: cannot expect the name %s", __func__,
		    a->up.fo.addrs[a->up.fo.cur].host);
		SSL_free(ssl);
		return (NULL);
	}
	bev = bufferevent_openssl_socket_new(a->base, -1, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL) {
		SSL_free(ssl);
		return (NULL);
	}
	bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return (bev);
}

/* Starts connecting to the coordinator (TLS if configured). */
static void
upstream_connect(struct agent *a)
{
	struct upstream		*up = &a->up;
	const struct failover_addr *ad = &up->fo.addrs[up->fo.cur];
	struct addrinfo		 hints, *res = NULL;
	int			 rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	rc = getaddrinfo(ad->host, ad->port, &hints, &res);
	if (rc != 0) {
		/* A name: resolve it (blocking, once per attempt). */
		hints.ai_flags = 0;
		rc = getaddrinfo(ad->host, ad->port, &hints, &res);
	}
	if (rc != 0) {
		log_warnx("%s: %s: %s", __func__, upstream_addr_text(a),
		    gai_strerror(rc));
		up->state = UPSTREAM_CONNECTING;
		upstream_lost(a, "cannot resolve");
		return;
	}
	up->bev = upstream_new_bev(a);
	if (up->bev == NULL) {
		freeaddrinfo(res);
		up->state = UPSTREAM_CONNECTING;
		upstream_lost(a, "out of memory");
		return;
	}
	bufferevent_setcb(up->bev, upstream_read_cb, NULL, upstream_event_cb, a);
	up->state = UPSTREAM_CONNECTING;
	up->last_recv_ms = clock_mono_ms();
	if (bufferevent_socket_connect(up->bev, res->ai_addr,
	    (int)res->ai_addrlen) == -1) {
		freeaddrinfo(res);
		upstream_lost(a, "connect failed");
		return;
	}
	freeaddrinfo(res);
	bufferevent_enable(up->bev, EV_READ | EV_WRITE);
}

/*
 * Ends the current stream (the bufferevent is freed: libevent defers the free
 * while one of its callbacks runs) and schedules the next attempt where and
 * when common/failover.c says: the next coordinator or the leader a follower
 * named, with jitter, and after a round of them an exponential backoff.
 */
static void
upstream_lost(struct agent *a, const char *why)
{
	struct upstream	*up = &a->up;
	uint32_t	 r;
	int		 delay;

	if (up->state == UPSTREAM_READY)
		log_warnx("lost coordinator %s: %s", upstream_addr_text(a), why);
	else
		log_info("connection to coordinator %s failed: %s",
		    upstream_addr_text(a), why);
	if (up->bev != NULL)
		bufferevent_free(up->bev);
	up->bev = NULL;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)clock_wall_ns();
	delay = failover_ended(&up->fo, up->state == UPSTREAM_READY, r);
	up->retry_at_ms = clock_mono_ms() + delay;
	up->state = UPSTREAM_WAIT;
	log_debug("%s: next attempt at %s in %d ms", __func__,
	    upstream_addr_text(a), delay);
	a->upstream_next_ms = up->retry_at_ms;
	a->loop->schedule(a);
}

/*
 * Does what is due at now: a heartbeat, the end of a silent peer, the next
 * connection attempt.  early (a message woke the agent anyway): send the
 * heartbeat if half an interval has passed.  Returns when it wants to run next
 * (a heartbeat's deadline is an eighth of an interval late, so that a
 * coordinator heartbeating at the same period wakes us first), 0 for never.
 */
int64_t
upstream_tick(struct agent *a, int64_t now, int early)
{
	struct upstream	*up = &a->up;
	int64_t		 hb_ms = up->heartbeat_ms;
	int64_t		 dead_at, next, slack;

	switch (up->state) {
	case UPSTREAM_NONE:
		return (0);
	case UPSTREAM_WAIT:
		if (now < up->retry_at_ms)
			return (up->retry_at_ms);
		upstream_connect(a);
		if (up->state == UPSTREAM_WAIT)
			return (up->retry_at_ms);
		return (now + 3 * hb_ms);
	case UPSTREAM_CONNECTING:
	case UPSTREAM_HELLO:
		if (now - up->last_recv_ms < 3 * hb_ms)
			return (up->last_recv_ms + 3 * hb_ms);
		upstream_lost(a, up->state == UPSTREAM_HELLO ? "no welcome" :
		    "connect timed out");
		return (up->retry_at_ms);
	case UPSTREAM_READY:
		break;
	}
	dead_at = up->last_recv_ms + 3 * hb_ms;
	if (now >= dead_at) {
		upstream_lost(a, "silent for 3 heartbeats");
		return (up->retry_at_ms);
	}
	slack = early ? hb_ms / 2 : 0;
	if (now + slack >= up->last_sent_ms + hb_ms)
		upstream_heartbeat(a);
	next = up->last_sent_ms + hb_ms + hb_ms / 8;
	return (next < dead_at ? next : dead_at);
}

/*
 * Numbers a rank event read from origin (NULL: from no slot's log), packs it
 * (the one time it is), keeps the bytes until the coordinator commits it, and
 * sends them now if the stream is up.
 * Without a coordinator (standalone) nobody commits it: its log entry is
 * acknowledged at once, so that the rank's log never fills.
 */
void
upstream_event(struct agent *a, const Dynprof__V1__RankEvent *ev,
    const struct queue_origin *origin)
{
	struct upstream	*up = &a->up;
	uint8_t		 stackbuf[4096], *buf = stackbuf;
	size_t		 len;
	uint64_t	 seq;

	if (up->state == UPSTREAM_NONE) {
		if (origin != NULL)
			a->up.hooks->acked(a, origin);
		return;
	}
	len = dynprof__v1__rank_event__get_packed_size(ev);
	if (len > sizeof(stackbuf) && (buf = malloc(len)) == NULL) {
		up->queue.dropped++;
		log_warn("%s: event lost", __func__);
		return;
	}
	dynprof__v1__rank_event__pack(ev, buf);
	seq = up->next_seq++;
	if (queue_push(&up->queue, seq, buf, len, origin) != 0 &&
	    (up->queue.dropped & (up->queue.dropped - 1)) == 0)
		log_warnx("%s: event queue full (%zu): %llu oldest events "
		    "dropped so far", __func__, up->queue.max,
		    (unsigned long long)up->queue.dropped);
	a->stats.events_forwarded++;
	if (up->state == UPSTREAM_READY)
		upstream_send_event(a, seq, buf, len);
	if (buf != stackbuf)
		free(buf);
}

/*
 * Tells the coordinator job name is on this node (a rank of it, or its
 * legacy directory), holding generation applied of its schedule.
 */
void
upstream_subscribe_name(struct agent *a, const char *name, uint64_t applied)
{
	struct agentmsg	 am;

	if (a->up.state != UPSTREAM_READY)
		return;		/* the hello after reconnecting carries it */
	upstream_send(a, agentmsg_subscribe(&am, name, applied));
	log_debug("subscribed to job %s (applied %llu)", name,
	    (unsigned long long)applied);
}

/* Tells the coordinator job name is no longer on this node. */
void
upstream_unsubscribe_name(struct agent *a, const char *name)
{
	struct agentmsg	 am;

	if (a->up.state != UPSTREAM_READY)
		return;
	upstream_send(a, agentmsg_unsubscribe(&am, name));
	log_debug("unsubscribed from job %s", name);
}

/* Tells the coordinator which generation of job name this node now holds. */
void
upstream_applied_name(struct agent *a, const char *name, uint64_t generation)
{
	struct agentmsg	 am;

	if (a->up.state != UPSTREAM_READY)
		return;
	upstream_send(a, agentmsg_applied(&am, name, generation));
}

/* Tells the coordinator which generation of job the segment now holds. */
void
upstream_applied(struct agent *a, struct agent_job *j)
{
	upstream_applied_name(a, j->name, j->applied);
}

/* Sends a job's progress if the stream is up; keeps it dirty otherwise. */
void
upstream_progress(struct agent *a, struct agent_job *j,
    const Dynprof__V1__Progress *p)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;

	if (a->up.state != UPSTREAM_READY) {
		j->progress_dirty = 1;
		return;
	}
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_PROGRESS;
	m.progress = (Dynprof__V1__Progress *)p;
	if (upstream_send(a, &m) == 0)
		j->progress_dirty = 0;
}

