/*
 * Fuzz target: the agent's handling of every CoordinatorMessage
 * (agent/upstream.c), with state.  A real struct agent serves its segments
 * from a private directory (under /dev/shm when there is one); job "fz" is
 * already served (a real segment, created as a rank would).
 *
 * Each input is a stream of AgentLink frames read on a new stream to the
 * coordinator (a socketpair whose far end this target reads), as after a
 * reconnect: the agent has sent its hello and two rank events are queued.
 * Every frame that decodes as a CoordinatorMessage goes through
 * upstream_dispatch() as upstream_read_cb() would pass it, until it says the
 * stream must end; an undecodable frame is skipped (the agent would hang up)
 * so that sequences go on.
 *
 * After each message: the acked seq is below the next seq and the queue
 * within its bound; every served job's segment reads back a config the
 * library accepts the sizes of, at the generation the agent says it applied.
 * After each input: every frame the agent wrote decodes as an AgentMessage.
 * The agent is rebuilt (segments removed) every FUZZ_RESET inputs; past
 * FUZZ_JOBS_MAX jobs, configs for new jobs go to one already served
 * (fuzz_bound_jobs()), so that state stays bounded.
 */

#include <sys/socket.h>
#include <sys/stat.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>

#include "agent.h"
#include "frame.h"
#include "fuzzdir.h"
#include "jobid.h"
#include "log.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_RESET	1000
#define FUZZ_JOBS_MAX	4
#define FUZZ_JOB	"fz"
#define FUZZ_QUEUE_MAX	64

static struct agent	*fa;
static struct seg_config fuzz_cfg;
static char		 fuzz_dir[128];
static int		 fuzz_fd = -1;	/* the coordinator's end */
static unsigned		 fuzz_inputs;

static void
fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_agent_dispatch: %s\n", what);
	abort();
}

static void
fuzz_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* Removes every segment of the private directory. */
static void
fuzz_rm_segments(void)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[512];

	if ((d = opendir(fuzz_dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", fuzz_dir, de->d_name);
		unlink(path);
	}
	closedir(d);
}

/* As the agent's main() does, with no coordinator address and no socket. */
static void
fuzz_agent_start(void)
{
	struct agent_job	*j;

	if ((fa = calloc(1, sizeof(*fa))) == NULL ||
	    (fa->scratch = malloc(sizeof(*fa->scratch))) == NULL)
		fuzz_fail("calloc");
	snprintf(fa->opts.node, sizeof(fa->opts.node), "fuzznode");
	snprintf(fa->opts.shm_dir, sizeof(fa->opts.shm_dir), "%s", fuzz_dir);
	fa->opts.shm_mode = 0600;
	fa->opts.sample_ms = 100;
	fa->opts.queue_max = FUZZ_QUEUE_MAX;
	fa->opts.grace_s = 60;
	fa->opts.shm_budget = AGENT_SHM_BUDGET;
	TAILQ_INIT(&fa->jobs);
	agent_wire(fa);
	fa->rank_fd = -1;
	if ((fa->base = event_base_new()) == NULL ||
	    (fa->tick_ev = evtimer_new(fa->base, fuzz_tick_cb, NULL)) == NULL)
		fuzz_fail("event base");
	if (upstream_init(fa) == -1)
		fuzz_fail("upstream_init");
	fa->next_sample_ms = INT64_MAX;
	if ((j = segments_get(fa, FUZZ_JOB, 1)) == NULL)
		fuzz_fail("segments_get");
}

static void
fuzz_agent_stop(void)
{
	upstream_free(fa);
	segments_close_all(fa);
	event_free(fa->tick_ev);
	event_base_free(fa->base);
	free(fa->scratch);
	free(fa);
	fa = NULL;
	if (fuzz_fd != -1)
		close(fuzz_fd);
	fuzz_fd = -1;
	fuzz_rm_segments();
}

static void
fuzz_cleanup(void)
{
	if (fa != NULL)
		fuzz_agent_stop();
	rmdir(fuzz_dir);
}

static void
fuzz_setup(void)
{
	if (fuzzdir_make(fuzz_dir, sizeof(fuzz_dir), "dpfuzz-agent") == -1)
		fuzz_fail("mkdtemp");
	log_init("fuzz_agent_dispatch", LOG_LEVEL_QUIET);
	atexit(fuzz_cleanup);
}

/* A new stream whose hello went out: the state upstream_event_cb() leaves. */
static void
fuzz_stream(void)
{
	int	 sv[2];

	if (fa->up.bev != NULL)
		bufferevent_free(fa->up.bev);
	if (fuzz_fd != -1)
		close(fuzz_fd);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		fuzz_fail("socketpair");
	evutil_make_socket_nonblocking(sv[0]);
	evutil_make_socket_nonblocking(sv[1]);
	if ((fa->up.bev = bufferevent_socket_new(fa->base, sv[0],
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		fuzz_fail("bufferevent_socket_new");
	bufferevent_enable(fa->up.bev, EV_WRITE);
	fa->up.state = UPSTREAM_HELLO;
	fuzz_fd = sv[1];
}

/* Two events of rank 0 of the job, queued until acked. */
static void
fuzz_events(void)
{
	Dynprof__V1__RankEvent	 ev = DYNPROF__V1__RANK_EVENT__INIT;

	ev.job = FUZZ_JOB;
	ev.pid = 4242;
	ev.kind = DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED;
	upstream_event(fa, &ev, NULL);
	ev.kind = DYNPROF__V1__EVENT_KIND__EVENT_STARTED;
	ev.window_id = 1;
	ev.start_step = ev.step = 10;
	ev.stop_step = 20;
	ev.output_dir = "rank0_start10_stop20";
	upstream_event(fa, &ev, NULL);
}

/* Reads what the agent wrote: every frame must decode. */
static void
fuzz_drain(struct evbuffer *buf)
{
	ProtobufCMessage	*m;
	const char		*why;
	int			 rc;

	while (evbuffer_read(buf, fuzz_fd, 65536) > 0)
		;
	while ((rc = frame_next(buf, &dynprof__v1__agent_message__descriptor,
	    &m, &why)) == FRAME_READY)
		protobuf_c_message_free_unpacked(m, NULL);
	if (rc != FRAME_MORE)
		fuzz_fail("the agent wrote a bad frame");
}

/*
 * A segment is 4.6 MB: past FUZZ_JOBS_MAX jobs, a config for another valid job
 * id names one already served (by a hash of its id), so that memory stays
 * bounded without a rebuild (which makes every segment again).  Returns the
 * id to put back before the free.
 */
static char *
fuzz_bound_jobs(Dynprof__V1__CoordinatorMessage *m)
{
	static char		 served[SEG_JOB_MAX + 1];
	struct agent_job	*j;
	char			*job;
	unsigned		 h = 0, n = 0;
	const char		*p;

	if (m->body_case != DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG ||
	    (job = m->config->job) == NULL || !jobid_valid(job, NULL) ||
	    jobs_find(fa, job) != NULL)
		return (NULL);
	TAILQ_FOREACH(j, &fa->jobs, entry)
		n++;
	if (n < FUZZ_JOBS_MAX)
		return (NULL);
	for (p = job; *p != '\0'; p++)
		h = h * 31 + (unsigned char)*p;
	h %= n;
	TAILQ_FOREACH(j, &fa->jobs, entry)
		if (h-- == 0)
			break;
	snprintf(served, sizeof(served), "%s", j->name);
	m->config->job = served;
	return (job);
}

static void
fuzz_check(void)
{
	struct upstream		*up = &fa->up;
	struct agent_job	*j;
	uint32_t		 gen_seq;
	int			 rc;

	if (up->acked >= up->next_seq)
		fuzz_fail("acked an event never numbered");
	if (queue_length(&up->queue) > FUZZ_QUEUE_MAX)
		fuzz_fail("queue over its bound");
	TAILQ_FOREACH(j, &fa->jobs, entry) {
		if (j->seg.hdr == NULL)
			continue;
		if (segment_validate(j->seg.hdr, j->seg.size) != SEG_OK)
			fuzz_fail("a served segment does not validate");
		rc = segment_read_config(&j->seg, &fuzz_cfg, &gen_seq);
		if (rc != SEG_OK)
			fuzz_fail("a served segment's config does not read");
		if (fuzz_cfg.nwindows > SEG_MAX_WINDOWS ||
		    (j->applied != 0 && fuzz_cfg.generation != j->applied))
			fuzz_fail("the segment is not what was applied");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer		*in, *out;
	ProtobufCMessage	*msg;
	Dynprof__V1__CoordinatorMessage *cm;
	struct agent_job	*j;
	const char		*why;
	char			*job;
	int			 rc, njobs = 0;

	if (fuzz_dir[0] == '\0')
		fuzz_setup();
	if (fa != NULL) {
		TAILQ_FOREACH(j, &fa->jobs, entry)
			njobs++;
		if (njobs > FUZZ_JOBS_MAX ||
		    fuzz_inputs % FUZZ_RESET == FUZZ_RESET - 1)
			fuzz_agent_stop();
	}
	fuzz_inputs++;
	if (fa == NULL)
		fuzz_agent_start();

	fuzz_stream();
	fuzz_events();
	if ((in = evbuffer_new()) == NULL || (out = evbuffer_new()) == NULL ||
	    evbuffer_add(in, data, size) == -1)
		fuzz_fail("evbuffer");
	for (;;) {
		rc = frame_next(in,
		    &dynprof__v1__coordinator_message__descriptor, &msg, &why);
		if (rc == FRAME_UNDECODABLE)
			continue;
		if (rc != FRAME_READY)
			break;
		cm = (Dynprof__V1__CoordinatorMessage *)msg;
		job = fuzz_bound_jobs(cm);
		rc = upstream_dispatch(fa, cm);
		if (job != NULL)
			cm->config->job = job;
		protobuf_c_message_free_unpacked(msg, NULL);
		fuzz_check();
		if (rc == -1 || fa->up.bev == NULL)
			break;		/* the agent hangs up */
		event_base_loop(fa->base, EVLOOP_NONBLOCK);
		fuzz_drain(out);
	}
	event_base_loop(fa->base, EVLOOP_NONBLOCK);
	fuzz_drain(out);
	evbuffer_free(in);
	evbuffer_free(out);
	return (0);
}
