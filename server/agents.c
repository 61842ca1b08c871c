/*
 * The AgentLink side: a listener, one struct conn per agent with a bufferevent
 * (so an OpenSSL bufferevent can take its place), and one dispatch function.
 * Events are committed in groups: the first event of a loop iteration opens a
 * transaction and activates the committer, which runs after the reads already
 * active in that iteration, commits once and then acknowledges.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "coord.h"
#include "frame.h"
#include "log.h"
#include "store.h"
#include "utf8.h"
#include "version.h"

#include <openssl/ssl.h>

/* A TLS handshake must be over within this (and within 3 heartbeats). */
#define AGENTS_HANDSHAKE_MS	10000
/* The first byte of a TLS record carrying a handshake (a ClientHello). */
#define AGENTS_TLS_HANDSHAKE_BYTE	0x16

static void	 agents_conn_close(struct conn *, int, const char *);

/* Returns "connected" or "lost". */
const char *
agents_node_state(const struct node *n)
{
	return (n->conn != NULL ? "connected" : "lost");
}

/*
 * Returns 0 if len more bytes fit in what is queued to the agent (at most
 * --agent-outbuf-max).  Else drops it, an agent whose socket does not read,
 * without flushing what is queued (it resyncs when it connects again: its
 * hello says what it applied, what is newer is sent), and returns -1.  A
 * closing connection takes nothing past the cap.
 */
static int
agents_outbuf_room(struct conn *conn, size_t len)
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
	agents_conn_close(conn, -1, "output not read");
	return (-1);
}

static void
agents_send(struct conn *conn, const Dynprof__V1__CoordinatorMessage *msg)
{
	if (conn->state == CONN_CLOSING && msg->body_case !=
	    DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR)
		return;
	if (agents_outbuf_room(conn, FRAME_HEADER_LEN +
	    protobuf_c_message_get_packed_size(
	    (const ProtobufCMessage *)msg)) == -1)
		return;
	if (frame_put(bufferevent_get_output(conn->bev),
	    (const ProtobufCMessage *)msg) == -1)
		log_warnx("%s: cannot queue a message to %s", __func__,
		    conn->peer);
}

static void
agents_send_error(struct conn *conn, int code, const char *reason)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__Error		 err;

	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__error__init(&err);
	err.code = code;
	err.reason = (char *)reason;
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ERROR;
	msg.error = &err;
	agents_send(conn, &msg);
}

/* Frames msg once into a new buffer, to copy to many connections. */
static struct evbuffer *
agents_frame(const Dynprof__V1__CoordinatorMessage *msg)
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

static void
agents_send_frame(struct conn *conn, struct evbuffer *frame)
{
	size_t	 len = evbuffer_get_length(frame);

	if (conn->state != CONN_READY || agents_outbuf_room(conn, len) == -1)
		return;
	if (evbuffer_add(bufferevent_get_output(conn->bev),
	    evbuffer_pullup(frame, (ev_ssize_t)len), len) == -1)
		log_warnx("%s: cannot queue a message to %s", __func__,
		    conn->peer);
}

static struct evbuffer *
agents_config_frame(struct job *job)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__JobConfig		*cfg;
	struct evbuffer			*frame;

	if ((cfg = schedule_build_config(job)) == NULL)
		return (NULL);
	dynprof__v1__coordinator_message__init(&msg);
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG;
	msg.config = cfg;
	frame = agents_frame(&msg);
	schedule_free_config(cfg);
	return (frame);
}

static void
agents_note_push(struct coord *c, struct conn *conn, struct job *job,
    uint64_t now)
{
	struct node_job	*nj;

	c->metrics.pushes++;
	if (conn->node == NULL ||
	    (nj = schedule_node_job(conn->node, job->name, 1)) == NULL)
		return;
	nj->pushed_gen = job->generation;
	nj->pushed_ns = now;
}

/* Pushes the job's schedule to every agent subscribed to it, at once. */
void
agents_push(struct coord *c, struct job *job)
{
	struct evbuffer	*frame;
	struct sub	*s, *next;
	struct conn	*conn;
	uint64_t	 now = coord_mono_ns();

	if (TAILQ_EMPTY(&job->subs))
		return;
	if ((frame = agents_config_frame(job)) == NULL) {
		log_warnx("%s: cannot build the schedule of %s", __func__,
		    job->name);
		return;
	}
	/* A send may drop its connection, and with it s (a connection has
	 * one sub per job, so next stays). */
	for (s = TAILQ_FIRST(&job->subs); s != NULL; s = next) {
		next = TAILQ_NEXT(s, job_entry);
		conn = s->conn;
		agents_note_push(c, conn, job, now);
		agents_send_frame(conn, frame);
	}
	evbuffer_free(frame);
	log_debug("%s: job %s generation %llu pushed", __func__, job->name,
	    (unsigned long long)job->generation);
}

/* Sends the job's schedule to one agent if it has an older generation. */
static void
agents_send_config_if_newer(struct conn *conn, struct job *job,
    uint64_t applied)
{
	struct evbuffer	*frame;

	if (job->generation == 0 || job->generation <= applied)
		return;
	if ((frame = agents_config_frame(job)) == NULL)
		return;
	agents_note_push(conn->coord, conn, job, coord_mono_ns());
	agents_send_frame(conn, frame);
	evbuffer_free(frame);
}

static struct sub *
agents_sub_find(struct conn *conn, struct job *job)
{
	struct sub	*s;

	TAILQ_FOREACH(s, &conn->subs, conn_entry) {
		if (s->job == job)
			return (s);
	}
	return (NULL);
}

static void
agents_subscribe(struct conn *conn, const char *name, uint64_t applied)
{
	struct coord	*c = conn->coord;
	struct job	*job;
	struct sub	*s;
	struct node_job	*nj;
	const char	*why;
	uint64_t	 n;

	if (!jobid_valid(name, &why)) {
		log_warnx("%s: %s: %s", __func__, conn->peer, why);
		return;
	}
	if (conn->nsubs >= COORD_AGENT_JOBS_MAX &&
	    ((job = schedule_job_find(c, name)) == NULL ||
	    agents_sub_find(conn, job) == NULL)) {
		n = ++c->metrics.subscribes_refused;
		if ((n & (n - 1)) == 0)
			log_warnx("%s: node %s: job %s refused: it serves %d "
			    "jobs already (%llu refused so far)", __func__,
			    conn->node->name, name, COORD_AGENT_JOBS_MAX,
			    (unsigned long long)n);
		return;
	}
	if ((job = schedule_job_peer(c, name, conn->node->name)) == NULL)
		return;
	if ((nj = schedule_node_job(conn->node, name, 1)) != NULL &&
	    applied > nj->applied)
		nj->applied = applied;
	if (agents_sub_find(conn, job) == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return;
		conn->nsubs++;
		s->job = job;
		s->conn = conn;
		TAILQ_INSERT_TAIL(&job->subs, s, job_entry);
		TAILQ_INSERT_TAIL(&conn->subs, s, conn_entry);
	}
	agents_send_config_if_newer(conn, job, applied);
}

static void
agents_sub_remove(struct sub *s)
{
	TAILQ_REMOVE(&s->job->subs, s, job_entry);
	TAILQ_REMOVE(&s->conn->subs, s, conn_entry);
	s->conn->nsubs--;
	free(s);
}

/*
 * Over mutual TLS, the node a hello claims must be one the agent's certificate
 * names: else a node's certificate could speak for another.  Returns 0, or -1
 * after refusing the connection.
 */
static int
agents_tls_check_node(struct conn *conn, const char *node)
{
	SSL	*ssl = bufferevent_openssl_get_ssl(conn->bev);
	char	 why[400], reason[512];

	if (ssl == NULL || tls_peer_names(ssl, node, why, sizeof(why)))
		return (0);
	log_warnx("%s: %s claims node %s: %s", __func__, conn->peer, node,
	    why);
	snprintf(reason, sizeof(reason), "hello for node %s refused: %s", node,
	    why);
	agents_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_TOKEN,
	    reason);
	return (-1);
}

static void
agents_hello(struct conn *conn, const Dynprof__V1__Hello *hello)
{
	struct coord			*c = conn->coord;
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__Welcome		 welcome;
	struct node			*node;
	struct node_job			*nj;
	struct job			*job;
	Dynprof__V1__JobGeneration	*ga;
	const char			*p;
	char				 reason[128];
	size_t				 i;

	if (hello->protocol_version != PROTOCOL_VERSION) {
		snprintf(reason, sizeof(reason), "protocol version %u, this "
		    "coordinator speaks %u", hello->protocol_version,
		    PROTOCOL_VERSION);
		agents_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_VERSION,
		    reason);
		return;
	}
	if (c->conf.agent_token != NULL && (hello->token == NULL ||
	    !coord_token_equal(hello->token, c->conf.agent_token))) {
		agents_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_TOKEN,
		    "wrong agent token");
		return;
	}
	p = hello->node;
	if (p == NULL || *p == '\0' || strlen(p) >= COORD_NODE_MAX) {
		agents_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
		    "node name empty or over 127 bytes");
		return;
	}
	for (; *p != '\0'; p++) {
		if ((unsigned char)*p <= 0x20 || *p == 0x7f || *p == '"' ||
		    *p == '\\') {
			agents_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
			    "node name has a space, quote or control character");
			return;
		}
	}
	if (!utf8_valid(hello->node, strlen(hello->node))) {
		agents_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
		    "node name is not valid UTF-8");
		return;
	}
	if (agents_tls_check_node(conn, hello->node) == -1)
		return;
	if ((node = schedule_node_get(c, hello->node)) == NULL) {
		agents_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_UNSPECIFIED,
		    "out of memory");
		return;
	}
	if (node->conn != NULL) {
		log_info("%s: node %s replaced: %s by %s", __func__, node->name,
		    node->conn->peer, conn->peer);
		agents_conn_close(node->conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_REPLACED,
		    "another agent connected with the same node name");
	}
	node->conn = conn;
	conn->node = node;
	conn->state = CONN_READY;
	c->nconns_ready++;
	snprintf(node->address, sizeof(node->address), "%s", conn->peer);
	node->connected_ns = node->last_seen_ns = coord_wall_ns();
	log_info("%s: node %s connected from %s", __func__, node->name,
	    conn->peer);

	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__welcome__init(&welcome);
	welcome.protocol_version = PROTOCOL_VERSION;
	welcome.heartbeat_ms = c->conf.heartbeat_ms;
	welcome.acked_seq = node->acked_seq;
	welcome.agent_boot_id = node->boot_id;
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME;
	msg.welcome = &welcome;
	agents_send(conn, &msg);

	/* Newer schedules for what the agent applied (of jobs that exist,
	 * as many as an agent may serve); it subscribes to the jobs it serves
	 * right after the welcome. */
	for (i = 0; i < hello->n_applied && i < COORD_AGENT_JOBS_MAX; i++) {
		ga = hello->applied[i];
		if (ga == NULL || !jobid_valid(ga->job, NULL) ||
		    (job = schedule_job_find(c, ga->job)) == NULL)
			continue;
		if ((nj = schedule_node_job(node, ga->job, 1)) != NULL)
			nj->applied = ga->generation;
		agents_send_config_if_newer(conn, job, ga->generation);
	}
}

static void
agents_applied(struct conn *conn, const Dynprof__V1__Applied *a)
{
	struct node_job	*nj;

	if (!jobid_valid(a->job, NULL) ||
	    schedule_job_find(conn->coord, a->job) == NULL ||
	    (nj = schedule_node_job(conn->node, a->job, 1)) == NULL)
		return;
	if (a->generation > nj->applied)
		nj->applied = a->generation;
	if (nj->pushed_ns != 0 && a->generation >= nj->pushed_gen) {
		metrics_observe_latency(&conn->coord->metrics,
		    (double)(coord_mono_ns() - nj->pushed_ns) / 1e9);
		nj->pushed_ns = 0;
	}
}

static void
agents_commit_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	agents_commit_batch(arg);
}

/*
 * Commits the open batch of events, then acknowledges each agent's highest
 * seq in it.  If the commit fails, those agents are dropped: they reconnect
 * and replay, and the replays are stored then.
 */
void
agents_commit_batch(struct coord *c)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__EventAck		 ack;
	struct conn			*conn;
	int				 failed = 0;

	if (!c->batch_open)
		return;
	c->batch_open = 0;
	if (schedule_store_batch_ranks(c) == -1)
		failed = 1;
	TAILQ_FOREACH(conn, &c->acks, ack_entry) {
		if (store_put_agent(c->store, conn->node->name,
		    conn->node->boot_id, conn->ack_seq) == -1)
			failed = 1;
	}
	if (failed || store_commit(c->store) == -1) {
		log_warnx("%s: cannot commit events", __func__);
		store_rollback(c->store);
		while ((conn = TAILQ_FIRST(&c->acks)) != NULL) {
			conn->node->seen_seq = conn->node->acked_seq;
			agents_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_UNSPECIFIED,
			    "coordinator cannot store events");
		}
		return;
	}
	c->metrics.commits++;
	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__event_ack__init(&ack);
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK;
	msg.ack = &ack;
	while ((conn = TAILQ_FIRST(&c->acks)) != NULL) {
		TAILQ_REMOVE(&c->acks, conn, ack_entry);
		conn->ack_queued = 0;
		conn->node->acked_seq = conn->ack_seq;
		ack.seq = conn->ack_seq;
		agents_send(conn, &msg);
	}
	/* A window its last rank just ended frees its steps now, not at the
	 * next tick. */
	schedule_finish_windows(c, 1);
}

/*
 * Returns NULL if a rank event's strings and step can be taken, else why not:
 * strings end up in JSON (jansson refuses invalid UTF-8), steps in sums.
 */
static const char *
agents_event_check(const Dynprof__V1__RankEvent *ev)
{
	if (ev->output_dir != NULL &&
	    !utf8_valid(ev->output_dir, strlen(ev->output_dir)))
		return ("output_dir is not valid UTF-8");
	if (ev->error != NULL && !utf8_valid(ev->error, strlen(ev->error)))
		return ("error is not valid UTF-8");
	if (!schedule_step_valid(ev->step))
		return ("step out of range");
	return (NULL);
}

static void
agents_event(struct conn *conn, const Dynprof__V1__AgentEvent *ae)
{
	struct coord	*c = conn->coord;
	struct node	*node = conn->node;
	const char	*why;
	uint64_t	 base;

	if (ae->event == NULL || ae->seq == 0) {
		agents_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
		    "event without a rank event or with seq 0");
		return;
	}
	/*
	 * The node's window: an agent holds at most its queue of events not
	 * yet acknowledged, so a seq far beyond the acknowledged one (or far
	 * from 1, for a new agent process) is not from the node's agent; taken,
	 * it would make every later real event look like a replay.
	 */
	base = ae->agent_boot_id != node->boot_id ? 0 : node->acked_seq;
	if (ae->seq > base && ae->seq - base > c->conf.seq_window) {
		c->metrics.agents_dropped++;
		log_warnx("%s: node %s from %s: event seq %llu beyond the "
		    "node's window (acknowledged %llu, window %llu): dropped",
		    __func__, node->name, conn->peer,
		    (unsigned long long)ae->seq, (unsigned long long)base,
		    (unsigned long long)c->conf.seq_window);
		agents_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
		    "event seq beyond the node's window");
		return;
	}
	if (!c->batch_open) {
		if (store_begin(c->store) == -1) {
			log_warnx("%s: cannot open a transaction", __func__);
			return;		/* not acked: the agent replays it */
		}
		c->batch_open = 1;
		event_active(c->committer, EV_TIMEOUT, 1);
	}
	if (ae->agent_boot_id != node->boot_id) {
		/* A new agent process: its seq starts over. */
		node->boot_id = ae->agent_boot_id;
		node->seen_seq = node->acked_seq = 0;
	}
	if (ae->seq > node->seen_seq &&
	    (why = agents_event_check(ae->event)) != NULL) {
		/* Dropped, yet acknowledged: a replay would be as bad. */
		c->metrics.events_refused++;
		log_warnx("%s: event %llu from %s (job %.64s rank %d) refused: "
		    "%s", __func__, (unsigned long long)ae->seq, node->name,
		    jobid_valid(ae->event->job, NULL) ? ae->event->job :
		    "(invalid)", ae->event->rank, why);
		node->seen_seq = ae->seq;
	} else if (ae->seq > node->seen_seq) {
		if (schedule_apply_event(c, node, ae->event) == -1)
			log_warnx("%s: cannot store an event of %s", __func__,
			    node->name);
		node->seen_seq = ae->seq;
	} else
		c->metrics.events_dup++;	/* a replay */
	/* A replay (seq already seen) is committed already or with this
	 * batch: acknowledge it all the same. */
	if (ae->seq > conn->ack_seq)
		conn->ack_seq = ae->seq;
	if (!conn->ack_queued) {
		TAILQ_INSERT_TAIL(&c->acks, conn, ack_entry);
		conn->ack_queued = 1;
	}
}

/*
 * Acts on one decoded message of an agent: a hello first, then anything else.
 * Stops at nothing: the caller stops once the connection is closing.
 */
void
agents_dispatch(struct conn *conn, const Dynprof__V1__AgentMessage *msg)
{
	struct sub	*s;
	struct job	*job;

	if (conn->state == CONN_AWAIT_HELLO) {
		if (msg->body_case != DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO) {
			agents_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_NOT_HELLO,
			    "the first message must be a hello");
			return;
		}
		agents_hello(conn, msg->hello);
		return;
	}
	conn->node->last_seen_ns = coord_wall_ns();
	switch (msg->body_case) {
	case DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT:
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE:
		agents_subscribe(conn, msg->subscribe->job,
		    msg->subscribe->applied_generation);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_UNSUBSCRIBE:
		if ((job = schedule_job_find(conn->coord,
		    msg->unsubscribe->job)) != NULL &&
		    (s = agents_sub_find(conn, job)) != NULL)
			agents_sub_remove(s);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED:
		agents_applied(conn, msg->applied);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT:
		agents_event(conn, msg->event);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_PROGRESS:
		schedule_apply_progress(conn->coord, conn->node,
		    msg->progress);
		break;
	default:
		agents_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
		    "unexpected message");
		break;
	}
}

/*
 * A TLS ClientHello on the plaintext port (an agent given --tls-* while this
 * coordinator has none): says so and closes.  Returns 1 if it did.
 */
static int
agents_tls_on_plain(struct conn *conn, struct evbuffer *in)
{
	unsigned char	 first;

	if (bufferevent_openssl_get_ssl(conn->bev) != NULL ||
	    evbuffer_copyout(in, &first, 1) != 1 ||
	    first != AGENTS_TLS_HANDSHAKE_BYTE)
		return (0);
	log_warnx("%s: %s speaks TLS on this plaintext AgentLink port: give "
	    "the coordinator --tls-cert, --tls-key and --tls-ca, or the "
	    "agent none", __func__, conn->peer);
	conn->coord->metrics.agents_refused++;
	agents_conn_close(conn, -1, "TLS on a plaintext port");
	return (1);
}

/*
 * Before hello a peer is anyone: it may send one frame of at most
 * COORD_PREHELLO_FRAME_MAX bytes.  Returns 0, or -1 with the connection
 * dropped.
 */
static int
agents_prehello_check(struct conn *conn, struct evbuffer *in)
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
	agents_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
	    why);
	return (-1);
}

static void
agents_read(struct bufferevent *bev, void *arg)
{
	struct conn			*conn = arg;
	struct evbuffer			*in = bufferevent_get_input(bev);
	ProtobufCMessage		*msg;
	const char			*why;
	int				 rc;

	conn->last_rx_ms = coord_mono_ms();
	if (conn->state == CONN_AWAIT_HELLO && agents_tls_on_plain(conn, in))
		return;
	while (conn->state != CONN_CLOSING) {
		if (conn->state == CONN_AWAIT_HELLO &&
		    agents_prehello_check(conn, in) == -1)
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
			agents_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE, why);
			return;
		}
		agents_dispatch(conn, (Dynprof__V1__AgentMessage *)msg);
		protobuf_c_message_free_unpacked(msg, NULL);
	}
}

static void
agents_reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord	*c = arg;
	struct conn	*conn;

	(void)fd;
	(void)what;
	while ((conn = TAILQ_FIRST(&c->dead)) != NULL) {
		TAILQ_REMOVE(&c->dead, conn, entry);
		bufferevent_free(conn->bev);
		free(conn);
	}
}

/* Moves a closing connection to the dead list, freed outside callbacks. */
static void
agents_conn_bury(struct conn *conn)
{
	struct coord	*c = conn->coord;

	bufferevent_disable(conn->bev, EV_READ | EV_WRITE);
	bufferevent_setcb(conn->bev, NULL, NULL, NULL, NULL);
	TAILQ_REMOVE(&c->conns, conn, entry);
	TAILQ_INSERT_TAIL(&c->dead, conn, entry);
	event_active(c->reaper, EV_TIMEOUT, 1);
}

static void
agents_drained(struct bufferevent *bev, void *arg)
{
	(void)bev;
	agents_conn_bury(arg);
}

static void
agents_closing_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	agents_conn_bury(arg);
}

/*
 * Tears a connection down: the only way one ends.  With a code, an Error frame
 * saying why is flushed first (bounded by a timeout).  The struct is freed
 * later, outside the callback that got here.
 */
static void
agents_conn_close(struct conn *conn, int code, const char *reason)
{
	struct coord	*c = conn->coord;
	struct timeval	 tv = { 2, 0 };
	struct sub	*s;

	if (conn->state == CONN_CLOSING)
		return;
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
			conn->node->last_seen_ns = coord_wall_ns();
		}
	}
	while ((s = TAILQ_FIRST(&conn->subs)) != NULL)
		agents_sub_remove(s);
	if (conn->ack_queued) {
		/* Its events commit with the batch; the ack is not sent. */
		TAILQ_REMOVE(&c->acks, conn, ack_entry);
		conn->ack_queued = 0;
		if (c->batch_open)
			store_put_agent(c->store, conn->node->name,
			    conn->node->boot_id, conn->ack_seq);
	}
	conn->state = CONN_CLOSING;
	/* Before the TLS handshake is over, no frame can reach the peer. */
	if (code != -1 && (conn->tls_up ||
	    bufferevent_openssl_get_ssl(conn->bev) == NULL))
		agents_send_error(conn, code, reason);
	bufferevent_disable(conn->bev, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(conn->bev)) == 0) {
		agents_conn_bury(conn);
		return;
	}
	bufferevent_setcb(conn->bev, NULL, agents_drained,
	    agents_closing_event, conn);
	bufferevent_set_timeouts(conn->bev, NULL, &tv);
	bufferevent_enable(conn->bev, EV_WRITE);
}

/*
 * Logs why a TLS connection ended before its handshake was over (a plaintext
 * agent, a certificate refused, a silent peer).  Returns 1 if it was one.
 */
static int
agents_tls_failed(struct conn *conn, short what)
{
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
	log_warnx("%s: TLS handshake with %s failed: %s", __func__,
	    conn->peer, why);
	conn->coord->metrics.agents_refused++;
	return (1);
}

static void
agents_conn_event(struct bufferevent *bev, short what, void *arg)
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
	if (agents_tls_failed(conn, what))
		;
	else if (what & BEV_EVENT_EOF)
		log_info("%s: %s%s%s closed the connection", __func__,
		    conn->peer, conn->node ? " node " : "",
		    conn->node ? conn->node->name : "");
	else if (what & BEV_EVENT_ERROR)
		log_warn("%s: %s", __func__, conn->peer);
	agents_conn_close(conn, -1, "connection ended");
}

/*
 * Gives a new connection its bufferevent: a TLS server one with a handshake
 * deadline when AgentLink is TLS.  Returns 0, or -1 (fd still open).
 */
static int
agents_conn_bev(struct conn *conn, evutil_socket_t fd)
{
	struct coord	*c = conn->coord;
	struct timeval	 tv;
	SSL		*ssl;
	uint64_t	 ms = AGENTS_HANDSHAKE_MS;

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

static void
agents_accept(struct evconnlistener *l, evutil_socket_t fd,
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
	if (agents_conn_bev(conn, fd) == -1) {
		evutil_closesocket(fd);
		free(conn);
		return;
	}
	conn->last_rx_ms = conn->accepted_ms = coord_mono_ms();
	bufferevent_setcb(conn->bev, agents_read, NULL, agents_conn_event,
	    conn);
	bufferevent_enable(conn->bev, EV_READ | EV_WRITE);
	TAILQ_INSERT_TAIL(&c->conns, conn, entry);
	log_debug("%s: connection from %s", __func__, conn->peer);
}

static void
agents_heartbeat_conn(struct conn *conn, struct evbuffer *frame,
    uint64_t now, uint64_t limit)
{
	if (conn->state == CONN_AWAIT_HELLO &&
	    now - conn->accepted_ms > conn->coord->conf.hello_timeout_ms) {
		log_warnx("%s: %s: no hello %u ms after accept", __func__,
		    conn->peer, conn->coord->conf.hello_timeout_ms);
		agents_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_NOT_HELLO,
		    "no hello in time");
		return;
	}
	if (now - conn->last_rx_ms > limit) {
		agents_conn_close(conn,
		    conn->state == CONN_AWAIT_HELLO ?
		    DYNPROF__V1__ERROR_CODE__ERROR_NOT_HELLO :
		    DYNPROF__V1__ERROR_CODE__ERROR_UNSPECIFIED,
		    conn->state == CONN_AWAIT_HELLO ? "no hello in time" :
		    "silent for 3 heartbeat intervals");
		return;
	}
	if (conn->state == CONN_READY && frame != NULL)
		agents_send_frame(conn, frame);
}

/*
 * Sends a heartbeat to every agent and drops those silent for 3 intervals
 * (their nodes become lost, their ranks unknown).
 */
void
agents_heartbeat(struct coord *c)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__Heartbeat		 hb;
	struct evbuffer			*frame;
	struct conn			*conn, *next;
	uint64_t			 now = coord_mono_ms();

	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__heartbeat__init(&hb);
	hb.time_unix_ns = coord_wall_ns();
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT;
	msg.heartbeat = &hb;
	frame = agents_frame(&msg);
	for (conn = TAILQ_FIRST(&c->conns); conn != NULL; conn = next) {
		next = TAILQ_NEXT(conn, entry);
		agents_heartbeat_conn(conn, frame, now,
		    3 * (uint64_t)c->conf.heartbeat_ms);
	}
	if (frame != NULL)
		evbuffer_free(frame);
}

/* Listens for agents on addr ("HOST:PORT").  Returns 0 or -1. */
int
agents_listen(struct coord *c, const char *addr)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss), slen = sizeof(ss);

	memset(&ss, 0, sizeof(ss));
	if (coord_parse_addr(addr, &ss, &len) == -1)
		return (-1);
	c->listener = evconnlistener_new_bind(c->base, agents_accept, c,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    4096, (struct sockaddr *)&ss, (int)len);
	if (c->listener == NULL) {
		log_warn("%s: cannot listen on %s", __func__, addr);
		return (-1);
	}
	evconnlistener_set_error_cb(c->listener, coord_accept_error);
	if (getsockname(evconnlistener_get_fd(c->listener),
	    (struct sockaddr *)&ss, &slen) == 0)
		c->agent_port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	c->reaper = event_new(c->base, -1, 0, agents_reap_cb, c);
	c->committer = event_new(c->base, -1, 0, agents_commit_cb, c);
	if (c->reaper == NULL || c->committer == NULL)
		return (-1);
	/*
	 * At the reads' own priority: activated by the first event of a loop
	 * iteration, it queues behind the reads already active in that iteration
	 * and so commits once they are done.  A lower priority would starve
	 * while agents keep sending, and hold every ack back.
	 */
	event_priority_set(c->committer, 1);
	return (0);
}

/* Says goodbye to every agent and frees every connection. */
void
agents_close_all(struct coord *c)
{
	struct conn	*conn;

	agents_commit_batch(c);
	while ((conn = TAILQ_FIRST(&c->conns)) != NULL) {
		if (conn->state != CONN_CLOSING)
			agents_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_SHUTTING_DOWN,
			    "coordinator stopping");
		if (conn->state == CONN_CLOSING &&
		    TAILQ_FIRST(&c->conns) == conn) {
			/* Still flushing: one last try, then give up (a
			 * TLS stream cannot be written around OpenSSL). */
			if (bufferevent_openssl_get_ssl(conn->bev) == NULL)
				evbuffer_write(bufferevent_get_output(
				    conn->bev), bufferevent_getfd(conn->bev));
			agents_conn_bury(conn);
		}
	}
	agents_reap_cb(-1, 0, c);
	if (c->listener != NULL)
		evconnlistener_free(c->listener);
	c->listener = NULL;
}
