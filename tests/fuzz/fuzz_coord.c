/*
 * The live coordinator the two stateful coordinator targets feed
 * (fuzz_coord_dispatch.c: streams of AgentMessage frames;
 * fuzz_legacy_status.c: one LegacyStatus an input).  A real struct coord,
 * started and stopped by the coordinator's own coord_open() and coord_stop()
 * (its journal, legacy reports and all; SQLite store in a private
 * directory, under /dev/shm when there is one, agent and admin listeners on
 * 127.0.0.1 port 0) holds job "fz" with two windows posted
 * through the admin API and node n0, whose ranks 0-3 started window 1.
 *
 * Each input comes on a new connection (a socketpair whose far end this
 * harness reads) that says hello as node n1 through link_dispatch(); at the
 * end an empty message closes it as a protocol error does, and the loop
 * frees it.
 *
 * After each input: every frame the coordinator wrote to n0 and n1 decodes as
 * a CoordinatorMessage, an ack never exceeds a seq n1 sent, and the
 * connection count, batch and per-rank event bounds hold.  GET /v1/jobs/fz and
 * GET /v1/nodes must answer 200 with JSON (through the real admin API, over
 * loopback) after every $FUZZ_ADMIN_EVERY-th input (default 1: every input),
 * before each rebuild and at exit: rendering and parsing those answers costs
 * twenty times what the dispatch of an input does.  The whole coordinator is
 * rebuilt every FUZZ_RESET inputs so that state stays bounded.
 */

#include <sys/socket.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <protobuf-c/protobuf-c.h>

#include "clock.h"
#include "coord.h"
#include "frame.h"
#include "fuzz_coord.h"
#include "fuzzdir.h"
#include "log.h"
#include "store.h"
#include "version.h"

#define FUZZ_RESET	1000
#define FUZZ_JOB	"fz"
#define FUZZ_BOOT_ID	77

struct fuzz_reply {
	int		 done;
	int		 code;
	json_t		*json;
};

static struct coord			*fc;
static struct evhttp_connection		*fuzz_http_conn;
static struct event			*fuzz_guard;
static struct fuzz_peer			 fuzz_n0;
static const char			*fuzz_name;
static char				 fuzz_dir[128];
static char				 fuzz_state[192];
static unsigned				 fuzz_inputs;
static unsigned				 fuzz_admin_every = 1;

void
fuzz_coord_fail(const char *what)
{
	fprintf(stderr, "%s: %s\n", fuzz_name, what);
	abort();
}

static void
fuzz_http_cb(struct evhttp_request *req, void *arg)
{
	struct fuzz_reply	*r = arg;
	struct evbuffer		*in;
	size_t			 len;

	r->done = 1;
	if (req != NULL && (r->code = evhttp_request_get_response_code(req)) !=
	    0) {
		in = evhttp_request_get_input_buffer(req);
		len = evbuffer_get_length(in);
		r->json = json_loadb((const char *)evbuffer_pullup(in,
		    (ev_ssize_t)len), len, 0, NULL);
	}
	event_base_loopbreak(fc->base);
}

static void
fuzz_guard_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	fuzz_coord_fail("the admin API did not answer in 10 s");
}

/* One admin request through the coordinator's real HTTP server; the reply's
 * JSON (caller frees) or NULL. */
static json_t *
fuzz_http(enum evhttp_cmd_type type, const char *path, const char *body,
    int want)
{
	struct evhttp_request	*req;
	struct fuzz_reply	 r;
	struct timeval		 tv = { 10, 0 };
	char			 msg[256];

	memset(&r, 0, sizeof(r));
	if ((req = evhttp_request_new(fuzz_http_cb, &r)) == NULL)
		fuzz_coord_fail("evhttp_request_new");
	evhttp_add_header(evhttp_request_get_output_headers(req), "Host",
	    "127.0.0.1");
	if (body != NULL)
		evbuffer_add(evhttp_request_get_output_buffer(req), body,
		    strlen(body));
	if (evhttp_make_request(fuzz_http_conn, req, type, path) == -1)
		fuzz_coord_fail("evhttp_make_request");
	event_add(fuzz_guard, &tv);
	while (!r.done)
		event_base_loop(fc->base, EVLOOP_ONCE);
	event_del(fuzz_guard);
	if (r.code != want || r.json == NULL) {
		snprintf(msg, sizeof(msg), "%s: answered %d (want %d)%s", path,
		    r.code, want, r.json == NULL ? ", not JSON" : "");
		fuzz_coord_fail(msg);
	}
	return (r.json);
}

/* Reads what the coordinator wrote to a peer: every frame must decode. */
static void
fuzz_drain(struct fuzz_peer *p)
{
	struct evbuffer		*buf = p->rx;
	ProtobufCMessage	*m;
	Dynprof__V1__CoordinatorMessage *cm;
	const char		*why;
	int			 rc;

	while (evbuffer_read(buf, p->fd, 65536) > 0)
		;
	while ((rc = frame_next(buf,
	    &dynprof__v1__coordinator_message__descriptor, &m, &why)) ==
	    FRAME_READY) {
		cm = (Dynprof__V1__CoordinatorMessage *)m;
		if (p != &fuzz_n0 && cm->body_case ==
		    DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK &&
		    cm->ack->seq > p->max_seq)
			fuzz_coord_fail("acked a seq never sent");
		protobuf_c_message_free_unpacked(m, NULL);
	}
	/* A frame cut by the socket buffer stays for the next drain. */
	if (rc != FRAME_MORE)
		fuzz_coord_fail("the coordinator wrote a bad frame");
}

/* A new agent connection, as link_accept() makes one, over a socketpair. */
static void
fuzz_connect(struct fuzz_peer *p)
{
	struct conn	*conn = NULL;
	int		 sv[2];

	memset(p, 0, sizeof(*p));
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1 ||
	    (conn = calloc(1, sizeof(*conn))) == NULL ||
	    (p->rx = evbuffer_new()) == NULL)
		fuzz_coord_fail("socketpair");
	evutil_make_socket_nonblocking(sv[0]);
	evutil_make_socket_nonblocking(sv[1]);
	conn->coord = fc;
	conn->state = CONN_AWAIT_HELLO;
	TAILQ_INIT(&conn->subs);
	snprintf(conn->peer, sizeof(conn->peer), "fuzz fd %d", sv[0]);
	if ((conn->bev = bufferevent_socket_new(fc->base, sv[0],
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		fuzz_coord_fail("bufferevent_socket_new");
	conn->last_rx_ms = clock_mono_ms();
	bufferevent_enable(conn->bev, EV_WRITE);
	TAILQ_INSERT_TAIL(&fc->conns, conn, entry);
	p->conn = conn;
	p->fd = sv[1];
}

void
fuzz_coord_dispatch(struct fuzz_peer *p, Dynprof__V1__AgentMessage *m)
{
	if (m->body_case == DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT &&
	    m->event->agent_boot_id == FUZZ_BOOT_ID &&
	    m->event->seq > p->max_seq)
		p->max_seq = m->event->seq;
	if (m->body_case == DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT &&
	    m->event->agent_boot_id != FUZZ_BOOT_ID)
		p->max_seq = UINT64_MAX;	/* another boot: seqs restart */
	link_dispatch(p->conn, m);
}

static void
fuzz_hello(struct fuzz_peer *p, const char *node)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Hello		 h = DYNPROF__V1__HELLO__INIT;

	h.protocol_version = PROTOCOL_VERSION;
	h.node = (char *)node;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO;
	m.hello = &h;
	fuzz_coord_dispatch(p, &m);
	if (p->conn->state != CONN_READY)
		fuzz_coord_fail("hello refused");
}

/* n0: subscribes to the job; its ranks 0-3 attach and start window 1. */
static void
fuzz_setup_n0(void)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Subscribe		 sub = DYNPROF__V1__SUBSCRIBE__INIT;
	Dynprof__V1__AgentEvent		 ae = DYNPROF__V1__AGENT_EVENT__INIT;
	Dynprof__V1__RankEvent		 ev = DYNPROF__V1__RANK_EVENT__INIT;
	int				 rank, kind;

	fuzz_connect(&fuzz_n0);
	fuzz_hello(&fuzz_n0, "n0");
	sub.job = FUZZ_JOB;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE;
	m.subscribe = &sub;
	fuzz_coord_dispatch(&fuzz_n0, &m);
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT;
	m.event = &ae;
	ae.event = &ev;
	ae.agent_boot_id = FUZZ_BOOT_ID;
	ev.job = FUZZ_JOB;
	for (kind = DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED;
	    kind <= DYNPROF__V1__EVENT_KIND__EVENT_STARTED; kind++) {
		for (rank = 0; rank < 4; rank++) {
			ae.seq++;
			ev.kind = kind;
			ev.rank = rank;
			ev.pid = 1000 + rank;
			ev.slot = (uint32_t)rank;
			if (kind == DYNPROF__V1__EVENT_KIND__EVENT_STARTED) {
				ev.window_id = 1;
				ev.start_step = ev.step = 10;
				ev.stop_step = 20;
				ev.output_dir = "rank_start10_stop20";
			}
			fuzz_coord_dispatch(&fuzz_n0, &m);
		}
	}
	event_base_loop(fc->base, EVLOOP_NONBLOCK);
	fuzz_drain(&fuzz_n0);
}

static void
fuzz_rm_state(void)
{
	static const char *const files[] = { "dynprof.db", "dynprof.db-wal",
	    "dynprof.db-shm", COORD_LOCK_FILE, NULL };
	char			 path[256];
	int			 i;

	for (i = 0; files[i] != NULL; i++) {
		snprintf(path, sizeof(path), "%s/%s", fuzz_state, files[i]);
		unlink(path);
	}
}

/* The coordinator's own start without signals, timer or ready file
 * (coord_open()), then the job's two windows and node n0. */
static void
fuzz_coord_start(void)
{
	json_t	*j;

	if ((fc = calloc(1, sizeof(*fc))) == NULL)
		fuzz_coord_fail("calloc");
	fc->conf.heartbeat_ms = 500;
	fc->conf.state_dir = fuzz_state;
	fc->conf.listen_addr = "127.0.0.1:0";
	fc->conf.http_addr = "127.0.0.1:0";
	fc->conf.events_journal_max = 4096;
	coord_bounds_init(&fc->conf);
	if (coord_open(fc) == -1)
		fuzz_coord_fail("coord_open");
	if ((fuzz_guard = evtimer_new(fc->base, fuzz_guard_cb, NULL)) == NULL ||
	    (fuzz_http_conn = evhttp_connection_base_new(fc->base, NULL,
	    "127.0.0.1", (unsigned short)fc->http_port)) == NULL)
		fuzz_coord_fail("http client");
	j = fuzz_http(EVHTTP_REQ_POST, "/v1/jobs/" FUZZ_JOB "/windows",
	    "{\"start_step\": 10, \"stop_step\": 20, \"ranks\": \"0-3\"}", 201);
	json_decref(j);
	j = fuzz_http(EVHTTP_REQ_POST, "/v1/jobs/" FUZZ_JOB "/windows",
	    "{\"start_step\": 100, \"stop_step\": 120, \"options\": "
	    "{\"profiler_level\": 1}}", 201);
	json_decref(j);
	fuzz_setup_n0();
}

/* The admin API's view of the state: the job's and the nodes' status. */
static void
fuzz_check_admin(void)
{
	json_t	*j, *ranks;

	j = fuzz_http(EVHTTP_REQ_GET, "/v1/jobs/" FUZZ_JOB, NULL, 200);
	json_decref(j);
	j = fuzz_http(EVHTTP_REQ_GET, "/v1/jobs/" FUZZ_JOB "/ranks", NULL, 200);
	ranks = json_object_get(j, "ranks");
	if (!json_is_array(ranks) || json_array_size(ranks) < 4)
		fuzz_coord_fail("the status lost ranks");
	json_decref(j);
	j = fuzz_http(EVHTTP_REQ_GET, "/v1/nodes", NULL, 200);
	json_decref(j);
}

/* What this target made, then the coordinator's own stop (coord_stop()). */
static void
fuzz_coord_stop(void)
{
	close(fuzz_n0.fd);
	evbuffer_free(fuzz_n0.rx);
	evhttp_connection_free(fuzz_http_conn);
	event_free(fuzz_guard);
	coord_stop(fc);
	free(fc);
	fc = NULL;
	fuzz_rm_state();
}

static void
fuzz_cleanup(void)
{
	if (fc != NULL) {
		fuzz_check_admin();
		fuzz_coord_stop();
	}
	rmdir(fuzz_state);
	rmdir(fuzz_dir);
}

static void
fuzz_setup(void)
{
	const char	*every;

	if (fuzzdir_make(fuzz_dir, sizeof(fuzz_dir), "dpfuzz-coord") == -1)
		fuzz_coord_fail("mkdtemp");
	snprintf(fuzz_state, sizeof(fuzz_state), "%s/state", fuzz_dir);
	log_init(fuzz_name, LOG_LEVEL_QUIET);
	if ((every = getenv("FUZZ_ADMIN_EVERY")) != NULL && atoi(every) > 0)
		fuzz_admin_every = (unsigned)atoi(every);
	atexit(fuzz_cleanup);
}

/* The invariants that hold between two reads of the event loop. */
static void
fuzz_check(void)
{
	struct conn	*conn;
	struct job	*job;
	struct rank	*r;
	size_t		 ready = 0;

	if (store_batch_open(fc->store))
		fuzz_coord_fail("a batch left open");
	TAILQ_FOREACH(conn, &fc->conns, entry) {
		if (conn->state == CONN_READY) {
			ready++;
			if (conn->node == NULL || conn->node->conn != conn)
				fuzz_coord_fail("a ready connection without its node");
		}
	}
	if (ready != fc->nconns_ready)
		fuzz_coord_fail("nconns_ready is off");
	TAILQ_FOREACH(job, &fc->jobs, entry)
		TAILQ_FOREACH(r, &job->ranks, entry)
			if (r->nevents > COORD_RANK_EVENTS_MAX ||
			    r->nevents > r->events_cap)
				fuzz_coord_fail("a rank keeps too many events");
	if (fuzz_inputs % fuzz_admin_every == 0)
		fuzz_check_admin();
}

/* Before an input: the coordinator (re)started when due, and a new
 * connection p that said hello as node n1. */
void
fuzz_coord_begin(struct fuzz_peer *p, const char *name)
{
	if (fuzz_dir[0] == '\0') {
		fuzz_name = name;
		fuzz_setup();
	}
	if (fc != NULL && fuzz_inputs % FUZZ_RESET == 0) {
		fuzz_check_admin();
		fuzz_coord_stop();
	}
	if (fc == NULL)
		fuzz_coord_start();
	fuzz_inputs++;
	fuzz_connect(p);
	fuzz_hello(p, "n1");
}

/* One turn of the event loop (the group commit, acks), then what the
 * coordinator wrote to n0 and p read and checked. */
void
fuzz_coord_run(struct fuzz_peer *p)
{
	event_base_loop(fc->base, EVLOOP_NONBLOCK);
	fuzz_drain(p);
	fuzz_drain(&fuzz_n0);
}

/* After an input: p closed as a protocol error closes it, freed by the
 * loop, and the invariants checked. */
void
fuzz_coord_end(struct fuzz_peer *p)
{
	Dynprof__V1__AgentMessage	 end = DYNPROF__V1__AGENT_MESSAGE__INIT;
	int				 i;

	/* A message of no known type: the protocol error that hangs up. */
	if (p->conn->state != CONN_CLOSING)
		link_dispatch(p->conn, &end);
	if (p->conn->state != CONN_CLOSING)
		fuzz_coord_fail("an unexpected message did not close");
	for (i = 0; i < 3; i++)
		fuzz_coord_run(p);
	close(p->fd);
	if (evbuffer_get_length(p->rx) != 0)
		fuzz_coord_fail("the coordinator wrote a partial frame");
	evbuffer_free(p->rx);
	if (TAILQ_FIRST(&fc->conns) != fuzz_n0.conn ||
	    TAILQ_NEXT(fuzz_n0.conn, entry) != NULL)
		fuzz_coord_fail("the closed connection was not freed");
	fuzz_check();
}
