/*
 * What an agent's messages do: hello, subscriptions, applied generations,
 * events and progress, and the schedules pushed back.  Events are committed
 * in groups: the first event of a loop iteration opens the store's batch and
 * activates the committer, which runs after the reads already active in that
 * iteration; the batch is finished by link_commit_batch(), which commits once
 * and then acknowledges.
 */

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "clock.h"
#include "leader.h"
#include "link_conn.h"
#include "link_dispatch.h"
#include "log.h"
#include "metrics.h"
#include "model.h"
#include "nodename.h"
#include "store.h"
#include "tls.h"
#include "token.h"
#include "version.h"

#include <openssl/ssl.h>

/* An agent's clock offset believed: a day at most. */
#define LINK_OFFSET_MAX_NS	(86400LL * 1000000000)

/* Returns the job's schedule framed as a JobConfig message. */
static struct evbuffer *
link_config_frame(struct job *job)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__JobConfig		*cfg;
	struct evbuffer			*frame;

	if ((cfg = schedule_build_config(job)) == NULL)
		return (NULL);
	dynprof__v1__coordinator_message__init(&msg);
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG;
	msg.config = cfg;
	frame = link_frame(&msg);
	schedule_free_config(cfg);
	return (frame);
}

/* Counts a push and notes its generation and time for the node. */
static void
link_note_push(struct coord *c, struct conn *conn, struct job *job,
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
link_push(struct coord *c, struct job *job)
{
	struct evbuffer	*frame;
	struct sub	*s, *next;
	struct conn	*conn;
	uint64_t	 now = clock_mono_ns();

	if (TAILQ_EMPTY(&job->subs))
		return;
	if ((frame = link_config_frame(job)) == NULL) {
		log_warnx("%s: cannot build the schedule of %s", __func__,
		    job->name);
		return;
	}
	/* A send may drop its connection, and with it s (a connection has
	 * one sub per job, so next stays). */
	for (s = TAILQ_FIRST(&job->subs); s != NULL; s = next) {
		next = TAILQ_NEXT(s, job_entry);
		conn = s->conn;
		link_note_push(c, conn, job, now);
		link_send_frame(conn, frame);
	}
	evbuffer_free(frame);
	log_debug("%s: job %s generation %llu pushed", __func__, job->name,
	    (unsigned long long)job->generation);
}

/*
 * Pushes job's schedule once the running callback is over: the admin answer
 * of the change is then queued before the frames to every agent (it does not
 * wait behind 10,000 of them), and changes made in one callback make one
 * push.  Without the event loop (link_listen() not run), pushes at once.
 */
void
link_push_later(struct coord *c, struct job *job)
{
	if (c->pusher == NULL) {
		link_push(c, job);
		return;
	}
	job->push_due = 1;
	event_active(c->pusher, EV_TIMEOUT, 0);
}

/* Pushes every job whose push link_push_later() left due. */
void
link_push_due(evutil_socket_t fd, short what, void *arg)
{
	struct coord	*c = arg;
	struct job	*job;

	(void)fd;
	(void)what;
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (!job->push_due)
			continue;
		job->push_due = 0;
		link_push(c, job);
	}
}

/*
 * Answers a subscription to job: its schedule if the agent applied an older
 * generation; for a job nobody scheduled (generation 0), its empty schedule,
 * so that the agent knows it is served and nothing is due (not a push: the
 * job did not change).
 */
static void
link_answer_subscribe(struct conn *conn, struct job *job, uint64_t applied)
{
	struct evbuffer	*frame;
	uint64_t	 gen = schedule_job_push_generation(job);

	if (gen != 0 && gen <= applied)
		return;
	if ((frame = link_config_frame(job)) == NULL)
		return;
	if (job->generation != 0)
		link_note_push(conn->coord, conn, job, clock_mono_ns());
	link_send_frame(conn, frame);
	evbuffer_free(frame);
}

/* Returns the connection's subscription to job, or NULL. */
static struct sub *
link_sub_find(struct conn *conn, struct job *job)
{
	struct sub	*s;

	TAILQ_FOREACH(s, &conn->subs, conn_entry) {
		if (s->job == job)
			return (s);
	}
	return (NULL);
}

/*
 * Takes a generation an agent says it applied: one this coordinator never
 * handed out, as far as its store knew (a store restored or rewritten), is
 * where the counter goes on from, so that the next change outranks what the
 * agents hold.  Beyond COORD_GENERATION_AGENT_MAX it is taken for what it
 * is: absurd, logged and counted, not taken.
 */
static void
link_generation_seen(struct conn *conn, const char *job, uint64_t applied)
{
	struct coord	*c = conn->coord;

	if (applied <= c->generation)
		return;
	if (applied > COORD_GENERATION_AGENT_MAX) {
		c->metrics.generations_refused++;
		log_limited(&conn->node->log_bounds, LOG_LEVEL_QUIET, "%s: node "
		    "%s applied generation %llu of job %s: absurd, not taken",
		    __func__, conn->node->name, (unsigned long long)applied,
		    job);
		return;
	}
	c->metrics.generations_raised++;
	log_limited(&conn->node->log_bounds, LOG_LEVEL_QUIET, "%s: node %s "
	    "applied generation %llu of job %s, beyond the %llu the store "
	    "held: the next change takes %llu", __func__, conn->node->name,
	    (unsigned long long)applied, job,
	    (unsigned long long)c->generation,
	    (unsigned long long)applied + 1);
	c->generation = applied;
}

/* Subscribes a connection to a job (again: no harm) and answers it. */
static void
link_subscribe(struct conn *conn, const char *name, uint64_t applied)
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
	    link_sub_find(conn, job) == NULL)) {
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
	link_generation_seen(conn, job->name, applied);
	schedule_job_applied(job, applied, c->generation);
	if ((nj = schedule_node_job(conn->node, name, 1)) != NULL &&
	    applied > nj->applied) {
		nj->applied = applied;
		conn->node->view_dirty = 1;
	}
	if (link_sub_find(conn, job) == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL)
			return;
		conn->nsubs++;
		conn->node->view_dirty = 1;
		s->job = job;
		s->conn = conn;
		TAILQ_INSERT_TAIL(&job->subs, s, job_entry);
		TAILQ_INSERT_TAIL(&conn->subs, s, conn_entry);
	}
	link_answer_subscribe(conn, job, applied);
}

/*
 * Over mutual TLS, the node a hello claims must be one the agent's certificate
 * names: else a node's certificate could speak for another.  Returns 0, or -1
 * after refusing the connection.
 */
static int
link_tls_check_node(struct conn *conn, const char *node)
{
	SSL	*ssl = bufferevent_openssl_get_ssl(conn->bev);
	char	 why[400], reason[512];

	if (ssl == NULL || tls_peer_names(ssl, node, why, sizeof(why)))
		return (0);
	log_warnx("%s: %s claims node %s: %s", __func__, conn->peer, node,
	    why);
	snprintf(reason, sizeof(reason), "hello for node %s refused: %s", node,
	    why);
	link_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_TOKEN,
	    reason);
	return (-1);
}

/* Takes an agent's hello: checks it, replaces an older link, welcomes. */
static void
link_hello(struct conn *conn, const Dynprof__V1__Hello *hello)
{
	struct coord			*c = conn->coord;
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__Welcome		 welcome;
	struct node			*node;
	struct node_job			*nj;
	Dynprof__V1__JobGeneration	*ga;
	const char			*why;
	char				 reason[128];
	size_t				 i;

	if (leader_is_follower(c)) {
		/* Held until the next leader is known, or the agent goes to
		 * the leader the error names. */
		if (leader_hold(c, conn, hello->failed_leader))
			return;
		link_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER,
		    "this coordinator is a follower");
		return;
	}
	if (hello->protocol_version != PROTOCOL_VERSION) {
		snprintf(reason, sizeof(reason), "protocol version %u, this "
		    "coordinator speaks %u", hello->protocol_version,
		    PROTOCOL_VERSION);
		link_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_VERSION,
		    reason);
		return;
	}
	if (c->conf.agent_token != NULL && (hello->token == NULL ||
	    !token_equal(hello->token, c->conf.agent_token))) {
		link_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_BAD_TOKEN,
		    "wrong agent token");
		return;
	}
	if (!nodename_valid(hello->node, &why)) {
		link_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE, why);
		return;
	}
	if (link_tls_check_node(conn, hello->node) == -1)
		return;
	if ((node = schedule_node_get(c, hello->node)) == NULL) {
		link_conn_close(conn, DYNPROF__V1__ERROR_CODE__ERROR_UNSPECIFIED,
		    "out of memory");
		return;
	}
	if (node->conn != NULL) {
		log_info("%s: node %s replaced: %s by %s", __func__, node->name,
		    node->conn->peer, conn->peer);
		link_conn_close(node->conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_REPLACED,
		    "another agent connected with the same node name");
	}
	node->conn = conn;
	node->left = 0;
	node->view_dirty = 1;
	conn->node = node;
	conn->state = CONN_READY;
	c->nconns_ready++;
	snprintf(node->address, sizeof(node->address), "%s", conn->peer);
	node->connected_ns = node->last_seen_ns = clock_wall_ns();
	node->agent_offset_known = 0;
	log_info("%s: node %s connected from %s", __func__, node->name,
	    conn->peer);
	legacy_forget_node(c, node->name);	/* its agent says them again */

	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__welcome__init(&welcome);
	welcome.protocol_version = PROTOCOL_VERSION;
	welcome.heartbeat_ms = c->conf.heartbeat_ms;
	welcome.acked_seq = node->acked_seq;
	welcome.agent_boot_id = node->boot_id;
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME;
	msg.welcome = &welcome;
	link_send(conn, &msg);

	/* Each job the agent applied is a subscription, as if it had sent
	 * Subscribe (within the same bounds); the hello says what the agent
	 * holds now, even if older than what it said before.  An answer may
	 * drop the connection (too much queued): then no more. */
	for (i = 0; i < hello->n_applied && i < COORD_AGENT_JOBS_MAX &&
	    conn->state == CONN_READY; i++) {
		ga = hello->applied[i];
		if (ga == NULL || !jobid_valid(ga->job, NULL))
			continue;
		if ((nj = schedule_node_job(node, ga->job, 0)) != NULL)
			nj->applied = ga->generation;	/* node: dirty above */
		link_subscribe(conn, ga->job, ga->generation);
	}
}

/* Takes the generation a node applied, observing the push latency. */
static void
link_applied(struct conn *conn, const Dynprof__V1__Applied *a)
{
	struct node_job	*nj;

	if (!jobid_valid(a->job, NULL) ||
	    schedule_job_find(conn->coord, a->job) == NULL ||
	    (nj = schedule_node_job(conn->node, a->job, 1)) == NULL)
		return;
	link_generation_seen(conn, a->job, a->generation);
	if (a->generation > nj->applied) {
		nj->applied = a->generation;
		conn->node->view_dirty = 1;
	}
	if (nj->pushed_ns != 0 && a->generation >= nj->pushed_gen) {
		metrics_observe_latency(&conn->coord->metrics,
		    (double)(clock_mono_ns() - nj->pushed_ns) / 1e9);
		nj->pushed_ns = 0;
	}
}

/* An agent's acknowledgement, sent once its batch is committed. */
struct link_ack {
	char		*node;
	uint64_t	 boot_id;
	uint64_t	 seq;
};

/* A batch of events on its way to the store. */
struct link_batch {
	struct coord	*c;
	uint64_t	 staged;	/* the journal's last revision in it */
	size_t		 n;
	struct link_ack	 acks[];
};

/* Frees a batch's record. */
static void
link_batch_free(struct link_batch *b)
{
	size_t	 i;

	for (i = 0; i < b->n; i++)
		free(b->acks[i].node);
	free(b);
}

/*
 * The store's word on a batch.  Committed: its events are published and
 * its agents acknowledged (those still connected, as the same process).
 * Not: those agents are dropped, and replay to a coordinator that stores
 * them; the model, which took the events already, is reloaded (etcd).
 */
static void
link_batch_done(void *arg, int rc)
{
	Dynprof__V1__CoordinatorMessage	 msg;
	Dynprof__V1__EventAck		 ack;
	struct link_batch		*b = arg;
	struct coord			*c = b->c;
	struct node			*node;
	size_t				 i;

	dynprof__v1__coordinator_message__init(&msg);
	dynprof__v1__event_ack__init(&ack);
	msg.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK;
	msg.ack = &ack;
	if (rc == -1) {
		log_warnx("%s: cannot commit events", __func__);
		journal_discard(c);
		leader_model_unsure(c);
	} else {
		c->metrics.commits++;
		journal_publish_to(c, b->staged);
	}
	for (i = 0; i < b->n; i++) {
		if ((node = schedule_node_find(c, b->acks[i].node)) == NULL ||
		    node->boot_id != b->acks[i].boot_id)
			continue;
		if (rc == -1) {
			node->seen_seq = node->acked_seq;
			if (node->conn != NULL)
				link_conn_close(node->conn,
				    DYNPROF__V1__ERROR_CODE__ERROR_UNSPECIFIED,
				    "coordinator cannot store events");
			continue;
		}
		if (b->acks[i].seq > node->acked_seq)
			node->acked_seq = b->acks[i].seq;
		if (node->conn != NULL && node->conn->state == CONN_READY) {
			ack.seq = b->acks[i].seq;
			link_send(node->conn, &msg);
		}
	}
	link_batch_free(b);
	if (rc == 0)
		/* A window its last rank just ended frees its steps now, not
		 * at the next tick. */
		change_windows_over(c, 1);
	if (rc == 0)
		/* Ranks that attached join the windows that name them. */
		change_windows_grow(c);
	/* What arrived meanwhile goes next. */
	if (store_batch_open(c->store))
		event_active(c->committer, EV_TIMEOUT, 1);
}

/*
 * Finishes the batch of events intake_flush() ended (its hook
 * events_commit): stores the ranks it changed and each agent's
 * highest seq in it, and commits without waiting; link_batch_done()
 * acknowledges those seqs once the store committed them.
 */
void
link_commit_batch(struct coord *c)
{
	struct conn		*conn;
	struct link_batch	*b;
	size_t			 n = 0;
	int			 failed = 0;

	TAILQ_FOREACH(conn, &c->acks, ack_entry)
		n++;
	if ((b = calloc(1, sizeof(*b) + n * sizeof(b->acks[0]))) == NULL) {
		/* Nothing acknowledged: the agents replay to a later batch. */
		log_warnx("%s: out of memory", __func__);
		store_rollback(c->store);
		journal_discard(c);
		leader_model_unsure(c);
		while ((conn = TAILQ_FIRST(&c->acks)) != NULL) {
			conn->node->seen_seq = conn->node->acked_seq;
			link_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_UNSPECIFIED,
			    "coordinator cannot store events");
		}
		return;
	}
	b->c = c;
	if (schedule_store_ranks(c) == -1)
		failed = 1;
	schedule_ranks_stored(c);
	while ((conn = TAILQ_FIRST(&c->acks)) != NULL) {
		TAILQ_REMOVE(&c->acks, conn, ack_entry);
		conn->ack_queued = 0;
		if (store_put_agent(c->store, conn->node->name,
		    conn->node->boot_id, conn->ack_seq) == -1)
			failed = 1;
		if ((b->acks[b->n].node = strdup(conn->node->name)) == NULL)
			failed = 1;
		b->acks[b->n].boot_id = conn->node->boot_id;
		b->acks[b->n++].seq = conn->ack_seq;
	}
	b->staged = journal_staged(c);
	if (failed) {
		store_rollback(c->store);
		link_batch_done(b, -1);
	} else if (store_commit_async(c->store, link_batch_done, b) == -1)
		link_batch_done(b, -1);
}

/*
 * Returns NULL if a rank event's strings and step can be taken, else why not:
 * strings end up in JSON (jansson refuses invalid UTF-8), steps in sums.
 */
static const char *
link_event_check(const Dynprof__V1__RankEvent *ev)
{
	const char	*why;

	if ((why = valid_event_text(ev->output_dir, ev->error)) != NULL)
		return (why);
	if (!valid_step(ev->step))
		return ("step out of range");
	return (NULL);
}

/* Takes one rank event of an agent into the open batch, acked after. */
static void
link_event(struct conn *conn, const Dynprof__V1__AgentEvent *ae)
{
	struct coord	*c = conn->coord;
	struct node	*node = conn->node;
	const char	*why;
	uint64_t	 base;

	if (ae->event == NULL || ae->seq == 0) {
		link_conn_close(conn,
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
		link_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
		    "event seq beyond the node's window");
		return;
	}
	/* A batch the store finds big enough is committed before this one,
	 * however many are in flight: one commit's work stays bounded. */
	if (store_batch_full(c->store))
		intake_flush(c);
	if (!store_batch_open(c->store)) {
		if (intake_begin(c) == -1) {
			log_warnx("%s: cannot open a transaction", __func__);
			return;		/* not acked: the agent replays it */
		}
		event_active(c->committer, EV_TIMEOUT, 1);
	}
	if (ae->agent_boot_id != node->boot_id) {
		/* A new agent process: its seq starts over. */
		node->boot_id = ae->agent_boot_id;
		node->seen_seq = node->acked_seq = 0;
	}
	if (ae->seq > node->seen_seq &&
	    (why = link_event_check(ae->event)) != NULL) {
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
 * Acts on one decoded message of an agent: a hello first, then anything else;
 * a kind it does not know is ignored.  Stops at nothing: the caller stops
 * once the connection is closing.
 */
void
link_dispatch(struct conn *conn, const Dynprof__V1__AgentMessage *msg)
{
	struct sub	*s;
	struct job	*job;

	if (conn->state == CONN_AWAIT_HELLO) {
		if (msg->body_case != DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO) {
			link_conn_close(conn,
			    DYNPROF__V1__ERROR_CODE__ERROR_NOT_HELLO,
			    "the first message must be a hello");
			return;
		}
		link_hello(conn, msg->hello);
		return;
	}
	conn->node->last_seen_ns = clock_wall_ns();
	switch (msg->body_case) {
	case DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT:
		schedule_node_heartbeat(conn->node,
		    msg->heartbeat->time_unix_ns);
		/* The agent's clock offset (its estimate): shown, and
		 * judged against time windows' tolerance.  A day at most. */
		if (msg->heartbeat->clock_offset_known &&
		    msg->heartbeat->clock_offset_ns <= LINK_OFFSET_MAX_NS &&
		    msg->heartbeat->clock_offset_ns >= -LINK_OFFSET_MAX_NS) {
			/* Followers see it in whole ms (nodeview.c). */
			if (!conn->node->agent_offset_known ||
			    conn->node->agent_offset_ns / 1000000 !=
			    msg->heartbeat->clock_offset_ns / 1000000)
				conn->node->view_dirty = 1;
			conn->node->agent_offset_ns =
			    msg->heartbeat->clock_offset_ns;
			conn->node->agent_offset_known = 1;
		}
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE:
		link_subscribe(conn, msg->subscribe->job,
		    msg->subscribe->applied_generation);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_UNSUBSCRIBE:
		if ((job = schedule_job_find(conn->coord,
		    msg->unsubscribe->job)) != NULL &&
		    (s = link_sub_find(conn, job)) != NULL)
			link_sub_remove(s);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED:
		link_applied(conn, msg->applied);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT:
		link_event(conn, msg->event);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_PROGRESS:
		schedule_apply_progress(conn->coord, conn->node,
		    msg->progress);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_LEGACY:
		legacy_status(conn->coord, conn->node, msg->legacy);
		break;
	case DYNPROF__V1__AGENT_MESSAGE__BODY_GOODBYE:
		/* Its close comes next; the node is "left", not lost. */
		conn->node->left = 1;
		conn->node->view_dirty = 1;
		log_limited(&conn->node->log_bounds, LOG_LEVEL_INFO, "%s: node "
		    "%s leaves: its agent stops", __func__, conn->node->name);
		break;
	default:
		/*
		 * A kind this coordinator does not know (a newer agent's)
		 * decodes as no kind with an unknown field: ignored.  A
		 * message with nothing in it at all is a protocol error.
		 */
		if (msg->base.n_unknown_fields > 0) {
			log_debug("%s: node %s from %s: message of an unknown "
			    "kind ignored", __func__, conn->node->name,
			    conn->peer);
			break;
		}
		link_conn_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_BAD_MESSAGE,
		    "unexpected message");
		break;
	}
}
