/* A fake agent speaking the real AgentLink protocol, for tests and benchmarks. */

#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "agentmsg.h"
#include "fakeagent.h"
#include "frame.h"

static int64_t
fa_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Connects to 127.0.0.1:port.  Returns 0 or -1. */
int
fa_connect(struct fakeagent *fa, int port)
{
	struct sockaddr_in	 sin;
	int			 one = 1;

	memset(fa, 0, sizeof(*fa));
	fa->fd = -1;
	fa->boot_id = ((uint64_t)getpid() << 32) ^ (uint64_t)fa_now_ms() ^
	    (uint64_t)(uintptr_t)fa;
	fa->next_seq = 1;
	if ((fa->in = evbuffer_new()) == NULL)
		return (-1);
	if ((fa->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fa->fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fa->fd);
		fa->fd = -1;
		return (-1);
	}
	setsockopt(fa->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return (0);
}

/* Closes the connection and frees buffered bytes. */
void
fa_close(struct fakeagent *fa)
{
	if (fa->fd != -1)
		close(fa->fd);
	fa->fd = -1;
	if (fa->in != NULL)
		evbuffer_free(fa->in);
	fa->in = NULL;
	if (fa->cork != NULL)
		evbuffer_free(fa->cork);
	fa->cork = NULL;
}

/* Writes raw bytes.  Returns 0 or -1. */
int
fa_send_raw(struct fakeagent *fa, const void *p, size_t len)
{
	const uint8_t	*b = p;
	ssize_t		 n;

	while (len > 0) {
		n = send(fa->fd, b, len, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return (-1);
		b += n;
		len -= (size_t)n;
	}
	return (0);
}

/* Holds the frames of the next fa_send() calls until fa_flush(). */
int
fa_cork(struct fakeagent *fa)
{
	if (fa->cork == NULL && (fa->cork = evbuffer_new()) == NULL)
		return (-1);
	return (0);
}

/* Writes the held frames in one go and stops holding.  Returns 0 or -1. */
int
fa_flush(struct fakeagent *fa)
{
	struct evbuffer	*b = fa->cork;
	size_t		 len;
	int		 rc = 0;

	if (b == NULL)
		return (0);
	fa->cork = NULL;
	if ((len = evbuffer_get_length(b)) > 0)
		rc = fa_send_raw(fa, evbuffer_pullup(b, (ev_ssize_t)len), len);
	evbuffer_free(b);
	return (rc);
}

/* Frames and writes one message (or holds it, see fa_cork()).  Returns 0 or
 * -1. */
int
fa_send(struct fakeagent *fa, const Dynprof__V1__AgentMessage *m)
{
	struct evbuffer	*out;
	size_t		 len;
	int		 rc = -1;

	if (fa->cork != NULL)
		return (frame_put(fa->cork, (const ProtobufCMessage *)m));
	if ((out = evbuffer_new()) == NULL)
		return (-1);
	if (frame_put(out, (const ProtobufCMessage *)m) == 0) {
		len = evbuffer_get_length(out);
		rc = fa_send_raw(fa, evbuffer_pullup(out, (ev_ssize_t)len),
		    len);
	}
	evbuffer_free(out);
	return (rc);
}

/* Sends a hello; job/applied (job may be NULL) go in its applied list. */
int
fa_hello(struct fakeagent *fa, const char *node, const char *token,
    uint32_t version, const char *job, uint64_t applied)
{
	struct agentmsg			 am;
	Dynprof__V1__JobGeneration	 g = DYNPROF__V1__JOB_GENERATION__INIT;
	Dynprof__V1__JobGeneration	*gp = &g;
	Dynprof__V1__AgentMessage	*m;

	g.job = (char *)job;
	g.generation = applied;
	m = agentmsg_hello(&am, node, token, "fakeagent", &gp, job != NULL);
	am.u.hello.protocol_version = version;
	return (fa_send(fa, m));
}

static fa_msg *
fa_decode(struct fakeagent *fa)
{
	ProtobufCMessage	*m;
	const char		*why;

	if (frame_next(fa->in, &dynprof__v1__coordinator_message__descriptor,
	    &m, &why) != FRAME_READY)
		return (NULL);
	return ((fa_msg *)m);
}

/*
 * Returns the next message, waiting at most timeout_ms; NULL on timeout or
 * when the coordinator closed (fa->eof is then set).
 */
fa_msg *
fa_recv(struct fakeagent *fa, int timeout_ms)
{
	struct pollfd	 pfd;
	int64_t		 deadline = fa_now_ms() + timeout_ms;
	int		 left;
	int		 n;
	fa_msg		*m;

	for (;;) {
		if ((m = fa_decode(fa)) != NULL)
			return (m);
		if (fa->eof || fa->fd == -1)
			return (NULL);
		left = (int)(deadline - fa_now_ms());
		if (left < 0)
			left = 0;
		pfd.fd = fa->fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) <= 0)
			return (NULL);
		n = evbuffer_read(fa->in, fa->fd, 65536);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			fa->eof = 1;
	}
}

/* Returns the next message of type body (others skipped), or NULL. */
fa_msg *
fa_recv_type(struct fakeagent *fa, int body, int timeout_ms)
{
	int64_t	 deadline = fa_now_ms() + timeout_ms;
	int	 left;
	fa_msg	*m;

	for (;;) {
		left = (int)(deadline - fa_now_ms());
		if (left < 0)
			return (NULL);
		if ((m = fa_recv(fa, left)) == NULL)
			return (NULL);
		if ((int)m->body_case == body)
			return (m);
		fa_free(m);
	}
}

/* Connects, says hello as node and waits for the welcome.  Returns 0 or -1. */
int
fa_handshake(struct fakeagent *fa, int port, const char *node,
    const char *token)
{
	fa_msg	*m;

	if (fa_connect(fa, port) == -1)
		return (-1);
	if (fa_hello(fa, node, token, 1, NULL, 0) == -1)
		return (-1);
	if ((m = fa_recv(fa, 5000)) == NULL)
		return (-1);
	if (m->body_case != DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME) {
		fa_free(m);
		return (-1);
	}
	fa_free(m);
	return (0);
}

/* Sends Subscribe(job, applied). */
int
fa_subscribe(struct fakeagent *fa, const char *job, uint64_t applied)
{
	struct agentmsg	 am;

	return (fa_send(fa, agentmsg_subscribe(&am, job, applied)));
}

/*
 * Waits for the next JobConfig (other messages are dropped) and returns 0 if it
 * is job's empty schedule (generation 0, no window), the answer to a Subscribe
 * of a job nobody scheduled; else -1.
 */
int
fa_expect_empty(struct fakeagent *fa, const char *job, int timeout_ms)
{
	fa_msg	*m;
	int	 rc;

	if ((m = fa_recv_type(fa, DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG,
	    timeout_ms)) == NULL)
		return (-1);
	rc = m->config->job != NULL && strcmp(m->config->job, job) == 0 &&
	    m->config->generation == 0 && m->config->n_windows == 0 ? 0 : -1;
	fa_free(m);
	return (rc);
}

/* Sends Applied(job, generation). */
int
fa_applied(struct fakeagent *fa, const char *job, uint64_t gen)
{
	struct agentmsg	 am;

	return (fa_send(fa, agentmsg_applied(&am, job, gen)));
}

/* Sends a heartbeat stamped with the wall clock now, as an agent does. */
int
fa_heartbeat(struct fakeagent *fa)
{
	struct agentmsg	 am;
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (fa_send(fa, agentmsg_heartbeat(&am, (int64_t)ts.tv_sec *
	    1000000000 + ts.tv_nsec)));
}

/* Fills ev with job's rank's event of kind for window at step, as the rank
 * of pid 1000 + rank says it (job stays the caller's). */
void
fa_rank_event(Dynprof__V1__RankEvent *ev, int kind, const char *job,
    int32_t rank, uint32_t window, int64_t step)
{
	dynprof__v1__rank_event__init(ev);
	ev->kind = kind;
	ev->job = (char *)job;
	ev->rank = rank;
	ev->pid = 1000 + rank;
	ev->window_id = window;
	ev->step = step;
}

/* Sends ev as AgentEvent seq, timed by seq.  Returns 0 or -1. */
static int
fa_send_rank_event(struct fakeagent *fa, uint64_t seq,
    Dynprof__V1__RankEvent *ev)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__AgentEvent		 ae = DYNPROF__V1__AGENT_EVENT__INIT;

	ev->time_unix_ns = 1700000000000000000LL + (int64_t)seq;
	ae.seq = seq;
	ae.event = ev;
	ae.agent_boot_id = fa->boot_id;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT;
	m.event = &ae;
	return (fa_send(fa, &m));
}

/* Sends a rank event with the given strings (NULL: none).  Returns 0 or -1. */
static int
fa_send_event_labels(struct fakeagent *fa, uint64_t seq, int kind,
    const char *job, int32_t rank, uint32_t window, int64_t step,
    const char *output_dir, const char *error, const char *labels)
{
	Dynprof__V1__RankEvent		 ev;

	if (seq == 0)
		seq = fa->next_seq++;
	fa_rank_event(&ev, kind, job, rank, window, step);
	if (output_dir != NULL)
		ev.output_dir = (char *)output_dir;
	if (error != NULL)
		ev.error = (char *)error;
	if (labels != NULL)
		ev.labels = (char *)labels;
	return (fa_send_rank_event(fa, seq, &ev));
}

/*
 * Sends the collection of job's rank's trace of window: collected at where
 * (size bytes, sha256) and waits for its commit.  Returns 0, or -1 after
 * timeout_ms.
 */
int
fa_collected(struct fakeagent *fa, const char *job, int32_t rank,
    uint32_t window, uint64_t size, const char *sha256, const char *where,
    int timeout_ms)
{
	Dynprof__V1__RankEvent		 ev = DYNPROF__V1__RANK_EVENT__INIT;
	uint64_t			 seq = fa->next_seq++;

	ev.kind = DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED;
	ev.job = (char *)job;
	ev.rank = rank;
	ev.window_id = window;
	ev.output_dir = (char *)where;
	ev.trace_size = size;
	ev.trace_sha256 = (char *)sha256;
	if (fa_heartbeat(fa) == -1 || fa_send_rank_event(fa, seq, &ev) == -1)
		return (-1);
	return (fa_wait_ack(fa, seq, timeout_ms));
}

static int
fa_send_event(struct fakeagent *fa, uint64_t seq, int kind, const char *job,
    int32_t rank, uint32_t window, int64_t step, const char *output_dir,
    const char *error)
{
	return (fa_send_event_labels(fa, seq, kind, job, rank, window, step,
	    output_dir, error, NULL));
}

/* Sends rank of job attached with labels (the next seq).  Returns 0 or -1. */
int
fa_attach_labels(struct fakeagent *fa, const char *job, int32_t rank,
    const char *labels)
{
	return (fa_send_event_labels(fa, 0,
	    DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, job, rank, 0, -1, NULL,
	    NULL, labels));
}

/*
 * Sends AgentEvent(seq, event) for job/rank: kind, window, step, output_dir
 * (may be NULL).  seq 0 takes the next one.
 */
int
fa_event(struct fakeagent *fa, uint64_t seq, int kind, const char *job,
    int32_t rank, uint32_t window, int64_t step, const char *output_dir)
{
	return (fa_send_event(fa, seq, kind, job, rank, window, step,
	    output_dir != NULL ? output_dir : "",
	    kind == DYNPROF__V1__EVENT_KIND__EVENT_FAILED ?
	    "start callback failed" : NULL));
}

/*
 * Sends a rank event of job at step 5 of window 1 with the given strings
 * (NULL: none).  Returns 0 or -1.
 */
int
fa_event_text(struct fakeagent *fa, uint64_t seq, int kind, const char *job,
    int32_t rank, const char *output_dir, const char *error)
{
	return (fa_send_event(fa, seq, kind, job, rank, 1, 5, output_dir,
	    error));
}

/* Sends Progress for ranks first..first+n-1 of job: the first at min_step,
 * the others at max_step. */
int
fa_progress(struct fakeagent *fa, const char *job, int32_t first,
    int64_t min_step, int64_t max_step, int n)
{
	int64_t	 steps[FA_PROGRESS_MAX];
	int	 i;

	if (n > FA_PROGRESS_MAX)
		n = FA_PROGRESS_MAX;
	for (i = 0; i < n; i++)
		steps[i] = i == 0 ? min_step : max_step;
	return (fa_progress_steps(fa, job, first, steps, n));
}

/* Sends Progress for ranks first..first+n-1 of job at steps[0..n-1]. */
int
fa_progress_steps(struct fakeagent *fa, const char *job, int32_t first,
    const int64_t *steps, int n)
{
	return (fa_progress_busy(fa, job, first, steps, NULL, n));
}

/*
 * The same with busy times: busy_us[i] (0: none) as rank i's last, average
 * and recent maximum, counted at its step.  busy_us NULL: none at all.
 */
int
fa_progress_busy(struct fakeagent *fa, const char *job, int32_t first,
    const int64_t *steps, const uint32_t *busy_us, int n)
{
	return (fa_progress_arrive(fa, job, first, steps, busy_us, n, 0, 0,
	    NULL));
}

/*
 * As fa_progress_busy(), each rank also arriving at the collectives of
 * steps [from, from + nsteps) (at most FA_ARRIVE_MAX): rank first + i at
 * base_us[i] + the step's number times FA_ARRIVE_STEP_US, and the Progress
 * sent at the wall clock now.
 */
int
fa_progress_arrive(struct fakeagent *fa, const char *job, int32_t first,
    const int64_t *steps, const uint32_t *busy_us, int n, int64_t from,
    int nsteps, const int64_t *base_us)
{
	static int64_t			 ast[FA_PROGRESS_MAX][FA_ARRIVE_MAX];
	static int64_t			 aus[FA_PROGRESS_MAX][FA_ARRIVE_MAX];
	struct timespec			 ts;
	int				 k;
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__Progress		 p = DYNPROF__V1__PROGRESS__INIT;
	Dynprof__V1__RankProgress	 rp[FA_PROGRESS_MAX];
	Dynprof__V1__RankProgress	*rpp[FA_PROGRESS_MAX];
	int				 i;

	if (n > FA_PROGRESS_MAX)
		n = FA_PROGRESS_MAX;
	p.min_step = p.max_step = n > 0 ? steps[0] : -1;
	for (i = 0; i < n; i++) {
		dynprof__v1__rank_progress__init(&rp[i]);
		rp[i].rank = first + i;
		rp[i].step = steps[i];
		rp[i].pid = 1000 + first + i;
		rp[i].state = DYNPROF__V1__RANK_STATE__RANK_ATTACHED;
		if (busy_us != NULL && busy_us[i] > 0 && steps[i] > 0) {
			rp[i].busy_count = (uint64_t)steps[i];
			rp[i].busy_last_us = rp[i].busy_avg_us =
			    rp[i].busy_max_us = busy_us[i];
		}
		for (k = 0; base_us != NULL && k < nsteps &&
		    k < FA_ARRIVE_MAX; k++) {
			ast[i][k] = from + k;
			aus[i][k] = base_us[i] + (from + k) * FA_ARRIVE_STEP_US;
		}
		if (base_us != NULL && nsteps > 0) {
			rp[i].arrive_step = ast[i];
			rp[i].arrive_unix_us = aus[i];
			rp[i].n_arrive_step = rp[i].n_arrive_unix_us =
			    (size_t)(nsteps < FA_ARRIVE_MAX ? nsteps :
			    FA_ARRIVE_MAX);
		}
		rpp[i] = &rp[i];
		if (steps[i] < p.min_step)
			p.min_step = steps[i];
		if (steps[i] > p.max_step)
			p.max_step = steps[i];
	}
	p.job = (char *)job;
	p.ranks_alive = (uint32_t)n;
	p.n_ranks = (size_t)n;
	p.ranks = rpp;
	clock_gettime(CLOCK_REALTIME, &ts);
	p.sent_unix_us = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_PROGRESS;
	m.progress = &p;
	return (fa_send(fa, &m));
}

/* Waits for an EventAck covering seq.  Returns 0, or -1 after timeout_ms. */
int
fa_wait_ack(struct fakeagent *fa, uint64_t seq, int timeout_ms)
{
	int64_t	 deadline = fa_now_ms() + timeout_ms;
	fa_msg	*m;
	int	 done;

	while (fa_now_ms() < deadline) {
		m = fa_recv_type(fa, DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK,
		    (int)(deadline - fa_now_ms()));
		if (m == NULL)
			return (-1);
		done = m->ack->seq >= seq;
		fa_free(m);
		if (done)
			return (0);
	}
	return (-1);
}

/* Returns 1 once the coordinator closed the connection within timeout_ms. */
int
fa_wait_closed(struct fakeagent *fa, int timeout_ms)
{
	int64_t	 deadline = fa_now_ms() + timeout_ms;
	fa_msg	*m;

	while (!fa->eof && fa_now_ms() < deadline) {
		if ((m = fa_recv(fa, (int)(deadline - fa_now_ms()))) != NULL)
			fa_free(m);
	}
	return (fa->eof);
}

/* Frees a received message. */
void
fa_free(fa_msg *m)
{
	if (m != NULL)
		dynprof__v1__coordinator_message__free_unpacked(m, NULL);
}

/* Handshakes fa as node with token on port, then subscribes it to job.
 * Returns 0 or -1. */
int
fa_join(struct fakeagent *fa, int port, const char *node, const char *token,
    const char *job)
{
	if (fa_handshake(fa, port, node, token) == -1)
		return (-1);
	return (fa_subscribe(fa, job, 0));
}

/*
 * Sends a heartbeat (a silent agent is dropped), then an event of job (its
 * output directory "/out/r" if it is a start) and waits for its commit.
 * Returns 0, or -1 after timeout_ms.
 */
int
fa_event_commit(struct fakeagent *fa, int kind, const char *job,
    int32_t rank, uint32_t window, int64_t step, int timeout_ms)
{
	uint64_t	 seq = fa->next_seq;

	if (fa_heartbeat(fa) == -1 || fa_event(fa, 0, kind, job, rank, window,
	    step, kind == DYNPROF__V1__EVENT_KIND__EVENT_STARTED ? "/out/r" :
	    NULL) == -1)
		return (-1);
	return (fa_wait_ack(fa, seq, timeout_ms));
}
