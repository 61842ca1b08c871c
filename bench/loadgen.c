/*
 * dynprof-loadgen: many agents in one process, against one coordinator.
 *
 * One process, one libevent loop, N AgentLink connections speaking the real
 * protocol (common/frame.h framing, protobuf-c messages): each says Hello,
 * subscribes to a job, answers every JobConfig with Applied as a real agent does,
 * and sends heartbeats.  Two measurements:
 *
 *  fanout  the loadgen itself sends the admin request (PUT /v1/jobs/J/config)
 *          and times until all N connections have received the new generation,
 *          then until the coordinator's GET /v1/jobs/J shows all N nodes applied
 *          it; --changes times, median and max.
 *  events  every connection streams AgentEvent rank events with distinct
 *          (job, rank, window, kind) keys, --inflight unacknowledged at most;
 *          events/s until every one is acknowledged (committed), and until
 *          GET /v1/jobs/J shows every rank's last event.
 *
 * With --tls-dir DIR (deploy/tls/mkcerts.sh's: DIR/ca.crt and DIR/ca.key),
 * every connection is mutual TLS with a certificate of its own naming its node,
 * issued here by that CA before the clock starts (openssl's command line would
 * take minutes for 10,000): connect_s then times TCP, the TLS handshake, hello,
 * welcome and subscribe.  With --tls-sessions FILE as well, each connection
 * offers the session of its line in FILE (if there is one) and the sessions
 * held at the end are written back: a second run against the coordinator
 * restarted with the same state directory resumes them (RESULT resumed=N).
 *
 * With --coordinator-pid, the coordinator's RSS (now and peak) and CPU time are
 * read from /proc.  The last line is "RESULT key=value ..." for scripts.
 */

#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

#include "dynprof.pb-c.h"
#include "frame.h"
#include "loadgen.h"
#include "tls.h"
#include "version.h"

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#define LOADGEN_TRIAL_TIMEOUT_MS	60000
#define LOADGEN_APPLIED_GIVEUP_MS	20000

enum loadgen_conn_state {
	LOADGEN_CONNECTING,
	LOADGEN_HELLO_SENT,
	LOADGEN_READY,
	LOADGEN_DEAD,
};

enum loadgen_phase {
	LOADGEN_PHASE_CONNECT,
	LOADGEN_PHASE_FANOUT,
	LOADGEN_PHASE_EVENTS,
	LOADGEN_PHASE_DONE,
};

struct loadgen;

struct loadgen_conn {
	struct loadgen		*lg;
	struct bufferevent	*bev;
	int			 idx;
	enum loadgen_conn_state	 state;
	uint64_t		 boot_id;
	uint64_t		 gen;		/* newest JobConfig generation */
	int			 trial;		/* the trial that saw gen first */
	uint64_t		 sent;		/* events sent: seq 1..sent */
	uint64_t		 acked;
	int64_t			 t_acked;	/* when its last event was acked */
	X509			*cert;		/* --tls-dir: its certificate */
	EVP_PKEY		*key;
	SSL_SESSION		*session;	/* --tls-sessions: offered */
};

struct loadgen {
	struct event_base	*base;
	struct loadgen_http	*http;
	struct sockaddr_in	 coord;
	const char		*job;
	const char		*prefix;
	const char		*token;
	const char		*tls_dir;	/* NULL: plaintext */
	SSL_CTX			*tls_ctx;	/* checks the coordinator's */
	const char		*tls_sessions;	/* NULL: full handshakes */
	int			 resumed;	/* handshakes that resumed */
	int			 n;
	int			 nsrc;
	int			 changes;
	int			 events_per;	/* per connection, even */
	int			 inflight;
	int			 concurrency;
	int			 do_fanout;
	int			 do_events;
	pid_t			 coord_pid;
	struct loadgen_conn	*conns;
	int			 next_connect;
	int			 connecting;
	int			 ready;
	int			 dead;
	int			 errors_shown;
	int			 failed;
	enum loadgen_phase	 phase;
	struct event		*hb_ev;
	struct event		*trial_timer;
	struct evbuffer		*scratch;	/* one frame, to send directly */
	unsigned		 hb_ms;
	int			 hb_next;
	int64_t			 hb_last;
	double			 hb_credit;
	int64_t			 t_start;
	double			 connect_s;
	char			 uri[256];

	/* fanout */
	int			 trial;		/* -1: warm-up */
	uint64_t		 base_gen;
	int			 recv_count;
	int64_t			 t0;
	int64_t			 t_all;
	int64_t			 t_resp;
	uint64_t		 resp_gen;
	int			 resp_done;
	int			 applied_ok;	/* the metrics count applied pushes */
	uint64_t		 applied_base;	/* that count before the change */
	int			 status_applied; /* nodes the status shows at the
						    last generation */
	double			*fan_ms;
	double			*resp_ms;
	double			*applied_ms;
	int			 napplied;
	struct loadgen_proc	 proc_before;
	struct loadgen_proc	 proc_fanout;
	struct loadgen_proc	 self_before;	/* the loadgen's own CPU */
	struct loadgen_proc	 self_fanout;
	struct loadgen_proc	 self_events;

	/* events */
	int64_t			 ev_t0;
	int64_t			 ev_t_acked;
	int64_t			 ev_t_status;
	int			 conns_acked;
	uint64_t		 ack_msgs;
	int			 status_polls;
	struct loadgen_proc	 proc_events;
};

static void	loadgen_connect_more(struct loadgen *);
static void	loadgen_heartbeat_every(struct loadgen *, unsigned);
static void	loadgen_fanout_trial(struct loadgen *);
static void	loadgen_events_start(struct loadgen *);
static void	loadgen_finish(struct loadgen *);
static void	loadgen_fanout_poll(struct loadgen *);
static void	loadgen_fanout_poll_cb(evutil_socket_t, short, void *);
static int	loadgen_count_applied(struct loadgen *, const char *, size_t,
		    uint64_t);
static void	loadgen_status_applied_done(void *, int, const char *, size_t);

static void
loadgen_fail(struct loadgen *lg, const char *why)
{
	fprintf(stderr, "loadgen: %s\n", why);
	lg->failed = 1;
	event_base_loopbreak(lg->base);
}

static int
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
	if (c->state == LOADGEN_CONNECTING || c->state == LOADGEN_HELLO_SENT)
		lg->connecting--;
	else
		lg->ready--;
	c->state = LOADGEN_DEAD;
	lg->dead++;
	if (lg->errors_shown++ < 5)
		fprintf(stderr, "loadgen: connection %d: %s\n", c->idx, why);
	if (lg->phase != LOADGEN_PHASE_DONE)
		loadgen_fail(lg, "a connection was lost during the run");
}

static void
loadgen_send_hello(struct loadgen_conn *c)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Hello		 h = DYNPROF__V1__HELLO__INIT;
	char				 node[128];

	snprintf(node, sizeof(node), "%s-%d", c->lg->prefix, c->idx);
	h.protocol_version = PROTOCOL_VERSION;
	h.node = node;
	h.token = (char *)(c->lg->token != NULL ? c->lg->token : "");
	h.agent_version = (char *)"loadgen-" DYNPROF_VERSION_STRING;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO;
	m.hello = &h;
	loadgen_send(c, &m);
	c->state = LOADGEN_HELLO_SENT;
}

static void
loadgen_send_subscribe(struct loadgen_conn *c)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Subscribe		 s = DYNPROF__V1__SUBSCRIBE__INIT;

	s.job = (char *)c->lg->job;
	s.applied_generation = c->gen;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE;
	m.subscribe = &s;
	loadgen_send(c, &m);
}

static void
loadgen_send_applied(struct loadgen_conn *c, const char *job, uint64_t gen)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Applied		 a = DYNPROF__V1__APPLIED__INIT;

	a.job = (char *)job;
	a.generation = gen;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED;
	m.applied = &a;
	loadgen_send(c, &m);
}

/*
 * Event e (0-based) of connection c: rank c->idx, window e / 2 + 1, started then
 * stopped, so that every (job, rank, window, kind) key is distinct.
 */
static void
loadgen_send_event(struct loadgen_conn *c, uint64_t e)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__AgentEvent		 ae = DYNPROF__V1__AGENT_EVENT__INIT;
	Dynprof__V1__RankEvent		 re = DYNPROF__V1__RANK_EVENT__INIT;
	struct timespec			 now;
	char				 dir[128];
	uint32_t			 wid = (uint32_t)(e / 2) + 1;

	clock_gettime(CLOCK_REALTIME, &now);
	re.job = (char *)c->lg->job;
	re.rank = c->idx;
	re.pid = 100000 + c->idx;
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
		    "_stop%" PRId64, c->idx, re.start_step, re.stop_step);
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

static void
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
		if (lg->hb_ms == 0 && m->welcome->heartbeat_ms != 0)
			loadgen_heartbeat_every(lg, m->welcome->heartbeat_ms);
		c->state = LOADGEN_READY;
		lg->connecting--;
		lg->ready++;
		loadgen_send_subscribe(c);
		loadgen_connect_more(lg);
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT:
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG:
		loadgen_on_config(c, m->config);
		break;
	case DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK:
		if (m->ack->seq <= c->acked)
			break;
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
	loadgen_connect_more(c->lg);
}

/*
 * TLS: connect the socket first, then hand it to an OpenSSL bufferevent that
 * starts its handshake once the socket is writable (connected).
 */
static int
loadgen_conn_open_tls(struct loadgen *lg, struct loadgen_conn *c, int fd)
{
	SSL	*ssl;

	if (connect(fd, (struct sockaddr *)&lg->coord, sizeof(lg->coord)) ==
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

/* Adds extension nid (value as openssl.cnf writes it) to x. */
static int
loadgen_tls_ext(X509 *x, X509 *ca, int nid, const char *value)
{
	X509V3_CTX	 v3;
	X509_EXTENSION	*ext;
	int		 rc;

	X509V3_set_ctx(&v3, ca, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value)) == NULL)
		return (-1);
	rc = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return (rc == 1 ? 0 : -1);
}

/* Issues connection c's key and certificate (node PREFIX-I), signed by ca. */
static int
loadgen_tls_issue(struct loadgen_conn *c, X509 *ca, EVP_PKEY *cakey)
{
	char	 node[128], san[160];
	X509	*x;

	snprintf(node, sizeof(node), "%s-%d", c->lg->prefix, c->idx);
	snprintf(san, sizeof(san), "DNS:%s", node);
	if ((c->key = EVP_EC_gen("P-256")) == NULL ||
	    (c->cert = x = X509_new()) == NULL)
		return (-1);
	if (X509_set_version(x, 2) != 1 ||
	    ASN1_INTEGER_set(X509_get_serialNumber(x), c->idx + 1) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 86400) == NULL ||
	    X509_set_pubkey(x, c->key) != 1 ||
	    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN",
	    MBSTRING_ASC, (const unsigned char *)node, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
	    loadgen_tls_ext(x, ca, NID_subject_alt_name, san) == -1 ||
	    loadgen_tls_ext(x, ca, NID_ext_key_usage, "clientAuth") == -1 ||
	    X509_sign(x, cakey, EVP_sha256()) == 0)
		return (-1);
	return (0);
}

/* The value of hex digit ch, -1 if it is none. */
static int
loadgen_hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	if (ch >= 'a' && ch <= 'f')
		return (ch - 'a' + 10);
	return (-1);
}

/*
 * --tls-sessions: each line "INDEX HEX" is connection INDEX's session, DER in
 * hex.  Reads the file if there is one.  Returns 0 or -1.
 */
static int
loadgen_sessions_read(struct loadgen *lg)
{
	FILE			*f;
	unsigned char		*der = NULL;
	const unsigned char	*p;
	char			*line = NULL, *hex;
	size_t			 cap = 0, len;
	long			 idx;
	int			 hi, lo, rc = 0;

	if ((f = fopen(lg->tls_sessions, "r")) == NULL)
		return (errno == ENOENT ? 0 : -1);
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		idx = strtol(line, &hex, 10);
		if (idx < 0 || idx >= lg->n || *hex++ != ' ' ||
		    (der = malloc(strlen(hex) / 2 + 1)) == NULL) {
			rc = -1;
			break;
		}
		for (len = 0; (hi = loadgen_hexval(hex[0])) != -1 &&
		    (lo = loadgen_hexval(hex[1])) != -1; hex += 2)
			der[len++] = (unsigned char)(hi << 4 | lo);
		p = der;
		SSL_SESSION_free(lg->conns[idx].session);
		if ((lg->conns[idx].session = d2i_SSL_SESSION(NULL, &p,
		    (long)len)) == NULL)
			rc = -1;
		free(der);
	}
	free(line);
	fclose(f);
	return (rc);
}

/* Writes the session each live TLS connection holds.  Returns 0 or -1. */
static int
loadgen_sessions_write(struct loadgen *lg)
{
	FILE		*f;
	SSL_SESSION	*sess;
	unsigned char	*der, *p;
	int		 i, j, len;

	if ((f = fopen(lg->tls_sessions, "w")) == NULL)
		return (-1);
	for (i = 0; i < lg->n; i++) {
		if (lg->conns[i].bev == NULL || (sess = SSL_get1_session(
		    bufferevent_openssl_get_ssl(lg->conns[i].bev))) == NULL)
			continue;
		if ((len = i2d_SSL_SESSION(sess, NULL)) > 0 &&
		    (der = malloc((size_t)len)) != NULL) {
			p = der;
			i2d_SSL_SESSION(sess, &p);
			fprintf(f, "%d ", i);
			for (j = 0; j < len; j++)
				fprintf(f, "%02x", der[j]);
			fputc('\n', f);
			free(der);
		}
		SSL_SESSION_free(sess);
	}
	return (fclose(f) == 0 ? 0 : -1);
}

/* The client context and every connection's certificate, before the clock. */
static int
loadgen_tls_load(struct loadgen *lg)
{
	char		 path[PATH_MAX];
	FILE		*f;
	X509		*ca = NULL;
	EVP_PKEY	*cakey = NULL;
	int		 i, rc = -1;

	snprintf(path, sizeof(path), "%s/ca.crt", lg->tls_dir);
	if ((f = fopen(path, "r")) != NULL) {
		ca = PEM_read_X509(f, NULL, NULL, NULL);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/ca.key", lg->tls_dir);
	if ((f = fopen(path, "r")) != NULL) {
		cakey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
		fclose(f);
	}
	if (ca == NULL || cakey == NULL) {
		fprintf(stderr, "loadgen: %s: no ca.crt and ca.key\n",
		    lg->tls_dir);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/ca.crt", lg->tls_dir);
	if ((lg->tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(lg->tls_ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_load_verify_locations(lg->tls_ctx, path, NULL) != 1)
		goto out;
	SSL_CTX_set_verify(lg->tls_ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(lg->tls_ctx, SSL_MODE_RELEASE_BUFFERS);
	for (i = 0; i < lg->n; i++)
		if (loadgen_tls_issue(&lg->conns[i], ca, cakey) == -1) {
			fprintf(stderr, "loadgen: cannot issue certificate %d\n",
			    i);
			goto out;
		}
	if (lg->tls_sessions != NULL && loadgen_sessions_read(lg) == -1) {
		fprintf(stderr, "loadgen: %s: cannot read the sessions\n",
		    lg->tls_sessions);
		goto out;
	}
	rc = 0;
out:
	X509_free(ca);
	EVP_PKEY_free(cakey);
	return (rc);
}

static int
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
	if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&lg->coord,
	    sizeof(lg->coord)) == -1) {
		loadgen_conn_dead(c, "connect failed");
		return (-1);
	}
	return (0);
}

static void
loadgen_connect_more(struct loadgen *lg)
{
	char	 msg[128];

	if (lg->phase != LOADGEN_PHASE_CONNECT)
		return;
	while (lg->next_connect < lg->n && lg->connecting < lg->concurrency) {
		if (loadgen_conn_open(lg, &lg->conns[lg->next_connect++]) == -1) {
			loadgen_fail(lg, "cannot open a connection");
			return;
		}
	}
	if (lg->ready + lg->dead < lg->n || lg->next_connect < lg->n)
		return;
	if (lg->dead > 0) {
		snprintf(msg, sizeof(msg), "%d of %d connections failed",
		    lg->dead, lg->n);
		loadgen_fail(lg, msg);
		return;
	}
	lg->connect_s = (loadgen_now_ns() - lg->t_start) / 1e9;
	printf("connected: %d agents in %.2f s (hello, welcome, subscribe)\n",
	    lg->ready, lg->connect_s);
	fflush(stdout);
	if (lg->coord_pid > 0)
		loadgen_proc_read(lg->coord_pid, &lg->proc_before);
	loadgen_proc_read(getpid(), &lg->self_before);
	if (lg->do_fanout) {
		lg->phase = LOADGEN_PHASE_FANOUT;
		lg->trial = -1;
		loadgen_fanout_trial(lg);
	} else if (lg->do_events)
		loadgen_events_start(lg);
	else
		loadgen_finish(lg);
}

static void	loadgen_heartbeat_cb(evutil_socket_t, short, void *);

/*
 * Heartbeats: every connection once per heartbeat_ms, as a real agent sends
 * them, spread over the interval in LOADGEN_HB_TICK_MS slices (agents on real
 * nodes are not synchronised; a burst of N at once would be a test artefact).
 */
#define LOADGEN_HB_TICK_MS	10

static void
loadgen_heartbeat_every(struct loadgen *lg, unsigned ms)
{
	lg->hb_ms = ms;
}

static void
loadgen_heartbeat_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen			*lg = arg;
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Heartbeat		 hb = DYNPROF__V1__HEARTBEAT__INIT;
	struct timespec			 now;
	unsigned			 hb_ms = lg->hb_ms ? lg->hb_ms : 2000;
	int64_t				 t;
	int				 i, count;

	(void)fd;
	(void)what;
	clock_gettime(CLOCK_REALTIME, &now);
	hb.time_unix_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
	m.heartbeat = &hb;
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
			loadgen_send(&lg->conns[lg->hb_next], &m);
		lg->hb_next = (lg->hb_next + 1) % lg->n;
	}
}

/* --- fanout ------------------------------------------------------------- */

static void
loadgen_trial_later(struct loadgen *lg, int ms, event_callback_fn fn)
{
	struct timeval	 tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	event_base_once(lg->base, -1, EV_TIMEOUT, fn, lg, &tv);
}

static void
loadgen_fanout_next_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;

	(void)fd;
	(void)what;
	lg->trial++;
	if (lg->trial >= lg->changes) {
		if (lg->coord_pid > 0)
			loadgen_proc_read(lg->coord_pid, &lg->proc_fanout);
		loadgen_proc_read(getpid(), &lg->self_fanout);
		snprintf(lg->uri, sizeof(lg->uri), "/v1/jobs/%s", lg->job);
		if (loadgen_http_request(lg->http, "GET", lg->uri, NULL,
		    loadgen_status_applied_done, lg) == -1)
			loadgen_fail(lg, "cannot send a status request");
		return;
	}
	loadgen_fanout_trial(lg);
}


static void
loadgen_fanout_check(struct loadgen *lg)
{
	double	 ms;

	if (lg->t_all == 0 || !lg->resp_done)
		return;
	if (lg->trial >= 0) {
		ms = (lg->t_all - lg->t0) / 1e6;
		lg->fan_ms[lg->trial] = ms;
		lg->resp_ms[lg->trial] = (lg->t_resp - lg->t0) / 1e6;
	}
	lg->t_all = -1;		/* recorded */
	evtimer_del(lg->trial_timer);
	if (lg->applied_ok)
		loadgen_fanout_poll(lg);
	else
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
}

static int
loadgen_json_generation(const char *body, size_t len, uint64_t *gen)
{
	json_t		*root, *g;
	json_error_t	 err;
	int		 rc = -1;

	if ((root = json_loadb(body, len, 0, &err)) == NULL)
		return (-1);
	if ((g = json_object_get(root, "generation")) != NULL &&
	    json_is_integer(g)) {
		*gen = (uint64_t)json_integer_value(g);
		rc = 0;
	}
	json_decref(root);
	return (rc);
}

static void
loadgen_change_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;
	char		 msg[512];

	lg->t_resp = loadgen_now_ns();
	if (code < 200 || code > 299) {
		snprintf(msg, sizeof(msg), "admin change refused: HTTP %d: %.400s",
		    code, body);
		loadgen_fail(lg, msg);
		return;
	}
	if (loadgen_json_generation(body, len, &lg->resp_gen) == -1) {
		snprintf(msg, sizeof(msg), "admin change: no generation in "
		    "%.400s", body);
		loadgen_fail(lg, msg);
		return;
	}
	lg->resp_done = 1;
	loadgen_fanout_check(lg);
}

/* Counts the nodes of this run that the job's status shows at gen or newer. */
static int
loadgen_count_applied(struct loadgen *lg, const char *body, size_t len,
    uint64_t gen)
{
	json_t		*root, *nodes, *n, *name, *g;
	json_error_t	 err;
	size_t		 i, plen = strlen(lg->prefix);
	int		 count = 0;

	if ((root = json_loadb(body, len, 0, &err)) == NULL)
		return (-1);
	nodes = json_object_get(root, "nodes");
	json_array_foreach(nodes, i, n) {
		name = json_object_get(n, "node");
		g = json_object_get(n, "applied_generation");
		if (!json_is_string(name) || !json_is_integer(g))
			continue;
		if (strncmp(json_string_value(name), lg->prefix, plen) != 0 ||
		    json_string_value(name)[plen] != '-')
			continue;
		if ((uint64_t)json_integer_value(g) >= gen)
			count++;
	}
	json_decref(root);
	return (count);
}

/* The coordinator's count of pushes acknowledged applied, from /metrics. */
static int
loadgen_metrics_applied(const char *body, uint64_t *count)
{
	static const char	 key[] = "\ndynprof_push_applied_seconds_count ";
	const char		*p;

	if ((p = strstr(body, key)) == NULL)
		return (-1);
	*count = strtoull(p + sizeof(key) - 1, NULL, 10);
	return (0);
}

static void
loadgen_applied_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;
	uint64_t	 count;
	double		 ms;

	(void)len;
	if (code != 200 || loadgen_metrics_applied(body, &count) == -1) {
		fprintf(stderr, "loadgen: GET /metrics: HTTP %d, no "
		    "dynprof_push_applied_seconds_count: not measuring applied\n",
		    code);
		lg->applied_ok = 0;
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
		return;
	}
	ms = (loadgen_now_ns() - lg->t0) / 1e6;
	if (count >= lg->applied_base + (uint64_t)lg->n) {
		if (lg->trial >= 0)
			lg->applied_ms[lg->napplied++] = ms;
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
		return;
	}
	if (ms > LOADGEN_APPLIED_GIVEUP_MS) {
		fprintf(stderr, "loadgen: the coordinator counts %" PRIu64 " of "
		    "%d applied after %.0f ms; not measuring applied any more\n",
		    count - lg->applied_base, lg->n, ms);
		lg->applied_ok = 0;
		loadgen_trial_later(lg, 20, loadgen_fanout_next_cb);
		return;
	}
	loadgen_trial_later(lg, 1, loadgen_fanout_poll_cb);
}

static void
loadgen_fanout_poll(struct loadgen *lg)
{
	if (loadgen_http_request(lg->http, "GET", "/metrics", NULL,
	    loadgen_applied_done, lg) == -1)
		loadgen_fail(lg, "cannot send a metrics request");
}

static void
loadgen_fanout_poll_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	loadgen_fanout_poll(arg);
}

/* After the last change: does the job's status show every node applied it? */
static void
loadgen_status_applied_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;

	if (code == 200)
		lg->status_applied = loadgen_count_applied(lg, body, len,
		    lg->resp_gen);
	else
		fprintf(stderr, "loadgen: GET %s: HTTP %d\n", lg->uri, code);
	if (lg->do_events)
		loadgen_events_start(lg);
	else
		loadgen_finish(lg);
}

static void
loadgen_trial_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;

	(void)fd;
	(void)what;
	if (lg->phase != LOADGEN_PHASE_FANOUT)
		return;
	fprintf(stderr, "loadgen: change %d: %d of %d agents got the new "
	    "generation, answer %s, in %d ms\n", lg->trial, lg->recv_count,
	    lg->ready, lg->resp_done ? "received" : "missing",
	    LOADGEN_TRIAL_TIMEOUT_MS);
	loadgen_fail(lg, "fan-out timed out");
}

static void
loadgen_fanout_send(struct loadgen *lg)
{
	struct timeval	 tv;
	char		 body[512];
	int		 i;

	lg->base_gen = 0;
	for (i = 0; i < lg->n; i++)
		if (lg->conns[i].gen > lg->base_gen)
			lg->base_gen = lg->conns[i].gen;
	lg->recv_count = 0;
	lg->t_all = 0;
	lg->resp_done = 0;
	/* Each change flips options, so it is always a new generation. */
	snprintf(body, sizeof(body), "{\"start_step\": -1, \"stop_step\": -1, "
	    "\"aicore_metrics\": %d, \"profiler_level\": %d, "
	    "\"with_stack\": %s, \"loadgen_change\": %d}",
	    (lg->trial + 1) % 2, (lg->trial + 2) % 3,
	    lg->trial % 2 ? "true" : "false", lg->trial + 1);
	snprintf(lg->uri, sizeof(lg->uri), "/v1/jobs/%s/config", lg->job);
	lg->t0 = loadgen_now_ns();
	if (loadgen_http_request(lg->http, "PUT", lg->uri, body,
	    loadgen_change_done, lg) == -1) {
		loadgen_fail(lg, "cannot send the admin request");
		return;
	}
	tv.tv_sec = LOADGEN_TRIAL_TIMEOUT_MS / 1000;
	tv.tv_usec = 0;
	evtimer_add(lg->trial_timer, &tv);
}

static void
loadgen_metrics_before_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;

	(void)len;
	if (code != 200 || loadgen_metrics_applied(body,
	    &lg->applied_base) == -1)
		lg->applied_ok = 0;
	loadgen_fanout_send(lg);
}

/* One change: the applied count first (when measured), then the request. */
static void
loadgen_fanout_trial(struct loadgen *lg)
{
	if (!lg->applied_ok) {
		loadgen_fanout_send(lg);
		return;
	}
	if (loadgen_http_request(lg->http, "GET", "/metrics", NULL,
	    loadgen_metrics_before_done, lg) == -1)
		loadgen_fail(lg, "cannot send a metrics request");
}

/* Called from loadgen_on_config's count: checks after each read batch. */
static void
loadgen_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;

	(void)fd;
	(void)what;
	if (lg->phase == LOADGEN_PHASE_FANOUT && lg->t_all > 0)
		loadgen_fanout_check(lg);
	if (lg->phase == LOADGEN_PHASE_EVENTS && lg->ev_t_acked != 0 &&
	    lg->ev_t_status == 0 && lg->status_polls == 0)
		loadgen_events_start(lg);	/* go on to the status check */
}

/* --- events ------------------------------------------------------------- */

static int
loadgen_count_ranks_done(struct loadgen *lg, const char *body, size_t len)
{
	json_t		*root, *ranks, *r, *rank, *win, *ev;
	json_error_t	 err;
	size_t		 i;
	json_int_t	 last_window = lg->events_per / 2;
	int		 count = 0;

	if ((root = json_loadb(body, len, 0, &err)) == NULL)
		return (-1);
	ranks = json_object_get(root, "ranks");
	json_array_foreach(ranks, i, r) {
		rank = json_object_get(r, "rank");
		win = json_object_get(r, "window");
		ev = json_object_get(r, "last_event");
		if (!json_is_integer(rank) || json_integer_value(rank) < 0 ||
		    json_integer_value(rank) >= lg->n)
			continue;
		if (json_is_integer(win) && json_integer_value(win) ==
		    last_window && json_is_string(ev) &&
		    strcmp(json_string_value(ev), "stopped") == 0)
			count++;
	}
	json_decref(root);
	return (count);
}

static void
loadgen_status_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;
	int		 count;

	if (code != 200) {
		fprintf(stderr, "loadgen: GET %s: HTTP %d\n", lg->uri, code);
		loadgen_fail(lg, "status request failed");
		return;
	}
	count = loadgen_count_ranks_done(lg, body, len);
	if (count == lg->n) {
		lg->ev_t_status = loadgen_now_ns();
		loadgen_finish(lg);
		return;
	}
	if (++lg->status_polls > 2000) {
		fprintf(stderr, "loadgen: the status shows %d of %d ranks with "
		    "their last event\n", count, lg->n);
		loadgen_fail(lg, "status never caught up with the events");
		return;
	}
	loadgen_http_request(lg->http, "GET", lg->uri, NULL,
	    loadgen_status_done, lg);
}

static void
loadgen_events_start(struct loadgen *lg)
{
	int	 i;

	if (lg->phase != LOADGEN_PHASE_EVENTS) {
		lg->phase = LOADGEN_PHASE_EVENTS;
		snprintf(lg->uri, sizeof(lg->uri), "/v1/jobs/%s", lg->job);
		lg->ev_t0 = loadgen_now_ns();
		for (i = 0; i < lg->n; i++)
			loadgen_events_pump(&lg->conns[i]);
		return;
	}
	/* Every event acknowledged: does the status show them all? */
	if (lg->coord_pid > 0)
		loadgen_proc_read(lg->coord_pid, &lg->proc_events);
	loadgen_proc_read(getpid(), &lg->self_events);
	lg->status_polls = 1;
	loadgen_http_request(lg->http, "GET", lg->uri, NULL,
	    loadgen_status_done, lg);
}

/* --- report ------------------------------------------------------------- */

/* When the connections got their last ack, from the start of the events. */
static void
loadgen_ack_spread(struct loadgen *lg)
{
	struct loadgen_stats	 st;
	double			*ms;
	int			 i;

	if ((ms = calloc((size_t)lg->n, sizeof(*ms))) == NULL)
		return;
	for (i = 0; i < lg->n; i++)
		ms[i] = (lg->conns[i].t_acked - lg->ev_t0) / 1e6;
	loadgen_stats(ms, (size_t)lg->n, &st);
	printf("events: all acknowledged per connection after min "
	    "%.0f ms, median %.0f ms, p99 %.0f ms, max %.0f ms; %llu acks for "
	    "%d events\n", st.min, st.median, st.p99, st.max,
	    (unsigned long long)lg->ack_msgs, lg->n * lg->events_per);
	free(ms);
}

static void
loadgen_finish(struct loadgen *lg)
{
	struct loadgen_stats	 fs, rs, as;
	struct loadgen_proc	 now;
	double			 total, ack_s, status_s;

	lg->phase = LOADGEN_PHASE_DONE;
	if (lg->do_events)
		loadgen_ack_spread(lg);
	printf("RESULT agents=%d connect_s=%.2f", lg->n, lg->connect_s);
	if (lg->tls_dir != NULL)
		printf(" resumed=%d", lg->resumed);
	if (lg->do_fanout) {
		loadgen_stats(lg->fan_ms, (size_t)lg->changes, &fs);
		loadgen_stats(lg->resp_ms, (size_t)lg->changes, &rs);
		loadgen_stats(lg->applied_ms, (size_t)lg->napplied, &as);
		printf(" changes=%d fanout_median_ms=%.2f fanout_max_ms=%.2f"
		    " answer_median_ms=%.2f", lg->changes, fs.median, fs.max,
		    rs.median);
		if (lg->napplied == lg->changes)
			printf(" applied_median_ms=%.2f applied_max_ms=%.2f",
			    as.median, as.max);
		else
			printf(" applied_median_ms=na applied_max_ms=na");
		printf(" status_applied=%d", lg->status_applied);
	}
	if (lg->do_events) {
		total = (double)lg->n * lg->events_per;
		ack_s = (lg->ev_t_acked - lg->ev_t0) / 1e9;
		status_s = (lg->ev_t_status - lg->ev_t0) / 1e9;
		printf(" events=%.0f events_acked_s=%.3f events_per_s=%.0f"
		    " status_s=%.3f events_per_s_status=%.0f", total, ack_s,
		    ack_s > 0 ? total / ack_s : 0, status_s,
		    status_s > 0 ? total / status_s : 0);
	}
	if (lg->coord_pid > 0 && loadgen_proc_read(lg->coord_pid, &now) == 0) {
		printf(" rss_idle_mib=%.1f rss_mib=%.1f rss_peak_mib=%.1f",
		    lg->proc_before.rss_kib / 1024.0, now.rss_kib / 1024.0,
		    now.hwm_kib / 1024.0);
		/* Its CPU from its start until every agent was connected. */
		printf(" cpu_connect_s=%.2f", lg->proc_before.cpu_s);
		if (lg->do_fanout)
			printf(" cpu_fanout_s=%.2f", lg->proc_fanout.cpu_s -
			    lg->proc_before.cpu_s);
		if (lg->do_events)
			printf(" cpu_events_s=%.2f", lg->proc_events.cpu_s -
			    (lg->do_fanout ? lg->proc_fanout.cpu_s :
			    lg->proc_before.cpu_s));
		printf(" cpu_total_s=%.2f", now.cpu_s);
	}
	if (lg->do_fanout)
		printf(" loadgen_cpu_fanout_s=%.2f", lg->self_fanout.cpu_s -
		    lg->self_before.cpu_s);
	if (lg->do_events)
		printf(" loadgen_cpu_events_s=%.2f", lg->self_events.cpu_s -
		    (lg->do_fanout ? lg->self_fanout.cpu_s :
		    lg->self_before.cpu_s));
	printf("\n");
	fflush(stdout);
	event_base_loopbreak(lg->base);
}

static void
loadgen_usage(FILE *f)
{
	fprintf(f,
"usage: dynprof-loadgen --coordinator HOST:PORT --http HOST:PORT [options]\n"
"  --agents N           connections, each one agent (1000)\n"
"  --job J              the job every agent subscribes to (loadgen)\n"
"  --mode M             fanout, events or both (both)\n"
"  --changes N          measured config changes (20), after one warm-up\n"
"  --events N           events per connection, even (20)\n"
"  --inflight N         unacknowledged events per connection (1024)\n"
"  --concurrency N      connections being set up at once (256)\n"
"  --sources N          spread connections over 127.0.0.1..N (1)\n"
"  --node-prefix P      node names P-0, P-1, ... (lg)\n"
"  --token-file F       agent token\n"
"  --admin-token-file F admin token\n"
"  --coordinator-pid P  report the coordinator's RSS and CPU\n"
"  --tls-dir D          mutual TLS, a certificate per connection issued by the\n"
"                       CA D/ca.crt, D/ca.key (deploy/tls/mkcerts.sh -o D)\n"
"  --tls-sessions F     offer the sessions of F, write those held at the end\n");
}

static char *
loadgen_read_token(const char *path)
{
	FILE	*f;
	char	 buf[512];
	size_t	 n;

	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return (strdup(buf));
}

static int
loadgen_int(const char *name, const char *s, int lo, int hi)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "loadgen: %s: not a number from %d to %d: %s\n",
		    name, lo, hi, s);
		exit(1);
	}
	return ((int)v);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "coordinator",	required_argument, NULL, 'c' },
		{ "http",		required_argument, NULL, 'H' },
		{ "agents",		required_argument, NULL, 'n' },
		{ "job",		required_argument, NULL, 'j' },
		{ "mode",		required_argument, NULL, 'm' },
		{ "changes",		required_argument, NULL, 'C' },
		{ "events",		required_argument, NULL, 'e' },
		{ "inflight",		required_argument, NULL, 'i' },
		{ "concurrency",	required_argument, NULL, 'k' },
		{ "sources",		required_argument, NULL, 's' },
		{ "node-prefix",	required_argument, NULL, 'p' },
		{ "token-file",		required_argument, NULL, 't' },
		{ "admin-token-file",	required_argument, NULL, 'T' },
		{ "coordinator-pid",	required_argument, NULL, 'P' },
		{ "tls-dir",		required_argument, NULL, 'L' },
		{ "tls-sessions",	required_argument, NULL, 'S' },
		{ "help",		no_argument,	   NULL, 'h' },
		{ NULL,			0,		   NULL, 0 }
	};
	struct loadgen	 lg;
	struct timeval	 tv;
	struct event	*tick;
	const char	*coord = NULL, *http = NULL, *admin_token = NULL;
	char		 host[256];
	int		 ch, port, i;

	memset(&lg, 0, sizeof(lg));
	lg.n = 1000;
	lg.job = "loadgen";
	lg.prefix = "lg";
	lg.changes = 20;
	lg.events_per = 20;
	lg.inflight = 1024;
	lg.concurrency = 256;
	lg.nsrc = 1;
	lg.do_fanout = lg.do_events = 1;
	lg.applied_ok = 1;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			coord = optarg;
			break;
		case 'H':
			http = optarg;
			break;
		case 'n':
			lg.n = loadgen_int("--agents", optarg, 1, 1000000);
			break;
		case 'j':
			lg.job = optarg;
			break;
		case 'm':
			lg.do_fanout = strcmp(optarg, "fanout") == 0 ||
			    strcmp(optarg, "both") == 0;
			lg.do_events = strcmp(optarg, "events") == 0 ||
			    strcmp(optarg, "both") == 0;
			if (!lg.do_fanout && !lg.do_events) {
				fprintf(stderr, "loadgen: --mode: fanout, events "
				    "or both\n");
				return (1);
			}
			break;
		case 'C':
			lg.changes = loadgen_int("--changes", optarg, 1, 10000);
			break;
		case 'e':
			lg.events_per = loadgen_int("--events", optarg, 2,
			    1000000);
			lg.events_per &= ~1;
			break;
		case 'i':
			lg.inflight = loadgen_int("--inflight", optarg, 1, 65536);
			break;
		case 'k':
			lg.concurrency = loadgen_int("--concurrency", optarg, 1,
			    100000);
			break;
		case 's':
			lg.nsrc = loadgen_int("--sources", optarg, 1, 250);
			break;
		case 'p':
			lg.prefix = optarg;
			break;
		case 't':
			lg.token = loadgen_read_token(optarg);
			break;
		case 'T':
			admin_token = loadgen_read_token(optarg);
			break;
		case 'P':
			lg.coord_pid = loadgen_int("--coordinator-pid", optarg, 1,
			    INT_MAX);
			break;
		case 'L':
			lg.tls_dir = optarg;
			break;
		case 'S':
			lg.tls_sessions = optarg;
			break;
		case 'h':
			loadgen_usage(stdout);
			return (0);
		default:
			loadgen_usage(stderr);
			return (1);
		}
	}
	if (coord == NULL || http == NULL || optind != argc) {
		loadgen_usage(stderr);
		return (1);
	}
	if (loadgen_parse_hostport(coord, host, sizeof(host), &port) == -1 ||
	    inet_pton(AF_INET, host, &lg.coord.sin_addr) != 1) {
		fprintf(stderr, "loadgen: --coordinator: want IPV4:PORT: %s\n",
		    coord);
		return (1);
	}
	lg.coord.sin_family = AF_INET;
	lg.coord.sin_port = htons((uint16_t)port);
	if (loadgen_raise_nofile((size_t)lg.n + 64) == -1) {
		fprintf(stderr, "loadgen: cannot raise the descriptor limit to "
		    "%d\n", lg.n + 64);
		return (1);
	}

	lg.conns = calloc((size_t)lg.n, sizeof(*lg.conns));
	lg.fan_ms = calloc((size_t)lg.changes, sizeof(double));
	lg.resp_ms = calloc((size_t)lg.changes, sizeof(double));
	lg.applied_ms = calloc((size_t)lg.changes, sizeof(double));
	if (lg.conns == NULL || lg.fan_ms == NULL || lg.resp_ms == NULL ||
	    lg.applied_ms == NULL)
		return (2);
	srandom((unsigned)getpid() ^ (unsigned)time(NULL));
	for (i = 0; i < lg.n; i++) {
		lg.conns[i].lg = &lg;
		lg.conns[i].idx = i;
		lg.conns[i].trial = -2;
		lg.conns[i].boot_id = ((uint64_t)random() << 32) ^
		    (uint64_t)random() ^ (uint64_t)i;
	}
	if (lg.tls_dir != NULL && loadgen_tls_load(&lg) == -1)
		return (1);
	if ((lg.base = event_base_new()) == NULL ||
	    (lg.scratch = evbuffer_new()) == NULL)
		return (2);
	if ((lg.http = loadgen_http_new(lg.base, http, admin_token)) == NULL)
		return (1);

	/* Heartbeats in slices; a 1 ms tick moves the phases on. */
	lg.hb_ev = event_new(lg.base, -1, EV_PERSIST, loadgen_heartbeat_cb, &lg);
	tv.tv_sec = 0;
	tv.tv_usec = LOADGEN_HB_TICK_MS * 1000;
	event_add(lg.hb_ev, &tv);
	lg.trial_timer = evtimer_new(lg.base, loadgen_trial_timeout_cb, &lg);
	tick = event_new(lg.base, -1, EV_PERSIST, loadgen_tick_cb, &lg);
	tv.tv_sec = 0;
	tv.tv_usec = 1000;
	event_add(tick, &tv);

	lg.t_start = loadgen_now_ns();
	lg.phase = LOADGEN_PHASE_CONNECT;
	loadgen_connect_more(&lg);

	if (!lg.failed)
		event_base_dispatch(lg.base);

	event_free(tick);
	event_free(lg.trial_timer);
	event_free(lg.hb_ev);
	if (lg.tls_dir != NULL && lg.tls_sessions != NULL && !lg.failed &&
	    loadgen_sessions_write(&lg) == -1) {
		fprintf(stderr, "loadgen: %s: %s\n", lg.tls_sessions,
		    strerror(errno));
		lg.failed = 1;
	}
	for (i = 0; i < lg.n; i++) {
		if (lg.conns[i].bev != NULL)
			bufferevent_free(lg.conns[i].bev);
		X509_free(lg.conns[i].cert);
		EVP_PKEY_free(lg.conns[i].key);
		SSL_SESSION_free(lg.conns[i].session);
	}
	SSL_CTX_free(lg.tls_ctx);
	loadgen_http_free(lg.http);
	evbuffer_free(lg.scratch);
	event_base_free(lg.base);
	free(lg.conns);
	free(lg.fan_ms);
	free(lg.resp_ms);
	free(lg.applied_ms);
	return (lg.failed ? 2 : 0);
}
