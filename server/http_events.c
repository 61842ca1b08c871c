/*
 * GET /v1/jobs/{job}/events?since=REV&follow=1 (docs/admin-api.md): the
 * job's rank and window events from the journal (journal.c), one JSON object
 * a line, from the revision after since.  Without follow the answer ends once
 * it has caught up; with it the connection stays and every event committed
 * later is written as it is published, with a heartbeat line each heartbeat
 * interval of quiet so that both ends notice the other is gone.
 *
 * Bounds: at most COORD_FOLLOWERS_MAX followers at once (beyond: 503), of
 * which the viewer token holds COORD_FOLLOWERS_OPERATOR fewer at most; a
 * follower has at most COORD_FOLLOWER_CHUNK bytes written ahead of its socket
 * (the next part waits for them to leave), so one that does not read holds
 * back only itself, and is dropped, with a last line saying so, once the
 * events it has yet to read are no longer kept; evhttp closes one whose
 * socket takes nothing for its write timeout.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "clock.h"
#include "http.h"
#include "log.h"
#include "replica.h"
#include "model.h"
#include "names.h"

/* Journal entries looked at per part written. */
#define EVENTS_SCAN_MAX		65536

/* One answer of the event stream. */
struct follower {
	struct coord		*coord;
	struct stream		*stream;
	char			 job[JOBID_MAX + 1];
	uint64_t		 next;		/* revision to write next */
	int			 follow;
	int			 viewer;	/* the viewer token's */
	int			 begun;
	int			 heartbeat_due;
	TAILQ_ENTRY(follower)	 entry;		/* journal->followers */
};

static const char *events_window_changes[] = {
	[JOURNAL_WINDOW_SCHEDULED] = "scheduled",
	[JOURNAL_WINDOW_CANCELLED] = "cancelled",
	[JOURNAL_WINDOW_DONE] = "done",
	[JOURNAL_WINDOW_GROWN] = "grown",
};

/* Adds a time window's "at" and "duration_ms" while the job holds it. */
static void
events_window_times(struct evbuffer *buf, struct job *job, uint32_t id)
{
	const struct window	*w = schedule_window_find(job, id);
	char			 at[64];

	if (w == NULL || w->start_unix_ns == 0)
		return;
	clock_rfc3339(w->start_unix_ns, at, sizeof(at));
	evbuffer_add_printf(buf, ",\"at\":\"%s\",\"duration_ms\":%" PRId64, at,
	    (w->stop_unix_ns - w->start_unix_ns) / 1000000);
}

/* Adds one event as a line of JSON. */
static void
events_write(struct evbuffer *buf, const struct journal_entry *e)
{
	evbuffer_add_printf(buf, "{\"rev\":%" PRIu64 ",\"type\":\"%s\","
	    "\"job\":", e->rev, e->type == JOURNAL_RANK ? "rank" : "window");
	ranks_json_string(buf, e->job->name);
	if (e->type == JOURNAL_RANK) {
		evbuffer_add_printf(buf, ",\"rank\":%" PRId32 ",\"node\":",
		    e->rank);
		ranks_json_string(buf, e->node != NULL ? e->node->name : NULL);
		evbuffer_add_printf(buf, ",\"kind\":\"%s\",\"window\":%" PRIu32
		    ",\"step\":%" PRId64, names_event_kind(e->what), e->window,
		    e->step);
		if (e->detail != NULL) {
			evbuffer_add_printf(buf, ",\"%s\":",
			    e->what == DYNPROF__V1__EVENT_KIND__EVENT_FAILED ?
			    "error" : "output_dir");
			ranks_json_string(buf, e->detail);
		}
	} else
		evbuffer_add_printf(buf, ",\"window\":%" PRIu32 ",\"change\":"
		    "\"%s\",\"start_step\":%" PRId64 ",\"stop_step\":%" PRId64
		    ",\"generation\":%" PRIu64, e->window,
		    events_window_changes[e->what], e->step, e->stop,
		    e->generation);
	if (e->type != JOURNAL_RANK && e->detail != NULL) {
		/* grown: the ranks it holds now; done: why the nodes
		 * refused it. */
		if (e->what == JOURNAL_WINDOW_DONE)
			evbuffer_add_printf(buf, ",\"refused_reason\":");
		else
			evbuffer_add(buf, ",\"ranks\":", 9);
		ranks_json_string(buf, e->detail);
	}
	if (e->type != JOURNAL_RANK && e->job != NULL)
		events_window_times(buf, e->job, e->window);
	evbuffer_add(buf, ",\"time\":", 8);
	ranks_json_time(buf, e->time_ns);
	evbuffer_add(buf, "}\n", 2);
}

/* Adds a line that is not an event: type, the revision, and more JSON
 * members (extra: "" or ",\"key\":value..."). */
static void
events_note(struct coord *c, struct evbuffer *buf, const char *type,
    const char *extra)
{
	evbuffer_add_printf(buf, "{\"type\":\"%s\",\"revision\":%" PRIu64
	    "%s,\"time\":", type, journal_revision(c), extra);
	ranks_json_time(buf, clock_wall_ns());
	evbuffer_add(buf, "}\n", 2);
}

/*
 * Writes the next part of the stream: the job's events after the last one
 * written, COORD_FOLLOWER_CHUNK bytes at most; once caught up, the end (no
 * follow) or a heartbeat if one is due.
 */
static int
events_fill(struct stream *s, struct evbuffer *buf)
{
	struct follower			*f = s->arg;
	struct coord			*c = s->coord;
	const struct journal_entry	*e;
	struct job			*job;
	char				 extra[128];
	size_t				 scanned = 0;

	if (!f->begun) {
		/* At once: the client knows the stream is on. */
		f->begun = 1;
		events_note(c, buf, "heartbeat", "");
	}
	if ((job = schedule_job_find(c, f->job)) == NULL) {
		events_note(c, buf, "end", ",\"reason\":\"the job is "
		    "forgotten\"");
		return (STREAM_DONE);
	}
	if (f->next < journal_job_first(c, job)) {
		snprintf(extra, sizeof(extra), ",\"reason\":\"fell behind: "
		    "events before %" PRIu64 " are no longer kept\",\"first\":"
		    "%" PRIu64, journal_job_first(c, job),
		    journal_job_first(c, job));
		events_note(c, buf, "dropped", extra);
		c->metrics.followers_dropped++;
		log_debug("%s: a follower of job %s fell behind: dropped",
		    __func__, f->job);
		return (STREAM_DONE);
	}
	while (f->next <= journal_revision(c)) {
		if (evbuffer_get_length(buf) >= COORD_FOLLOWER_CHUNK ||
		    scanned++ == EVENTS_SCAN_MAX)
			return (STREAM_MORE);
		/* Revisions need not follow each other: the next one kept. */
		if ((e = journal_next(c, f->next)) == NULL) {
			f->next = journal_revision(c) + 1;
			break;
		}
		f->next = e->rev + 1;
		if (e->job == job)
			events_write(buf, e);
	}
	if (!f->follow) {
		events_note(c, buf, "end", "");
		return (STREAM_DONE);
	}
	if (f->heartbeat_due && evbuffer_get_length(buf) == 0)
		events_note(c, buf, "heartbeat", "");
	f->heartbeat_due = 0;
	return (evbuffer_get_length(buf) > 0 ? STREAM_MORE : STREAM_WAIT);
}

/* Takes follower f off the journal's list and frees it. */
static void
events_follower_free(struct journal *j, struct follower *f)
{
	TAILQ_REMOVE(&j->followers, f, entry);
	if (f->follow)
		j->nfollowers--;
	if (f->viewer)
		j->nfollowers_viewer--;
	free(f);
}

/* Frees a follower whose stream ended. */
static void
events_release(struct stream *s)
{
	events_follower_free(s->coord->journal, s->arg);
}

/* Every heartbeat interval: a waiting follower writes a heartbeat line. */
static void
events_heartbeat_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord	*c = arg;
	struct follower	*f, *next;

	(void)fd;
	(void)what;
	for (f = TAILQ_FIRST(&c->journal->followers); f != NULL; f = next) {
		next = TAILQ_NEXT(f, entry);
		f->heartbeat_due = 1;
		stream_wake(f->stream);
	}
}

/*
 * Wakes the followers: a follower still writing whose next event is no
 * longer kept cannot catch up: its connection is closed now, not once its
 * client reads again.
 */
static void
events_wake_now(struct coord *c)
{
	struct follower	*f, *next;

	if (c->journal == NULL)
		return;
	for (f = TAILQ_FIRST(&c->journal->followers); f != NULL; f = next) {
		next = TAILQ_NEXT(f, entry);
		if (f->stream->writing && !f->stream->closed &&
		    f->next < journal_first(c)) {
			c->metrics.followers_dropped++;
			log_debug("%s: a follower of job %s does not read and "
			    "fell behind: closed", __func__, f->job);
			stream_abort(f->stream);
			continue;
		}
		stream_wake(f->stream);
	}
}

static void
events_wake_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	events_wake_now(arg);
}

/*
 * New events were published: the followers waiting for them write them, at
 * the loop's next turn.  A change is published before it is applied to
 * memory when the store commits at once (SQLite), and a window's line takes
 * its times from the window: written now, a time window's "scheduled" would
 * lack them.
 */
void
events_wake(struct coord *c)
{
	struct journal	*j = c->journal;

	if (j == NULL || TAILQ_EMPTY(&j->followers))
		return;
	if (j->wake == NULL && (j->wake = event_new(c->base, -1, 0,
	    events_wake_cb, c)) == NULL) {
		events_wake_now(c);
		return;
	}
	event_active(j->wake, EV_TIMEOUT, 0);
}

/* Starts the heartbeat timer, once.  Returns 0 or -1. */
static int
events_heartbeat_start(struct coord *c)
{
	struct journal	*j = c->journal;
	struct timeval	 tv;

	if (j->heartbeat != NULL)
		return (0);
	if ((j->heartbeat = event_new(c->base, -1, EV_PERSIST,
	    events_heartbeat_cb, c)) == NULL)
		return (-1);
	tv.tv_sec = c->conf.heartbeat_ms / 1000;
	tv.tv_usec = (c->conf.heartbeat_ms % 1000) * 1000;
	return (event_add(j->heartbeat, &tv));
}

/*
 * Reads the query of GET .../events into f.  Returns 0, or -1 with ref
 * saying what to answer; *since_given says whether since was.
 */
static int
events_parse_query(struct evhttp_request *req, struct follower *f,
    uint64_t *since, int *since_given, struct refusal *ref)
{
	struct evkeyvalq	 q;
	struct evkeyval		*kv;
	long long		 v;
	int			 rc = -1, seen_follow = 0;

	*since_given = 0;
	if (http_query(req, &q, ref) == -1)
		return (-1);
	TAILQ_FOREACH(kv, &q, next) {
		if (strcmp(kv->key, "since") == 0) {
			if (*since_given) {
				refusal_set(ref, 400, "since", "since given "
				    "twice");
				goto out;
			}
			if (ranks_parse_int(kv->value, 0, INT64_MAX, &v) == -1) {
				refusal_set(ref, 400, "since", "since must be "
				    "a revision (an integer from 0)");
				goto out;
			}
			*since = (uint64_t)v;
			*since_given = 1;
		} else if (strcmp(kv->key, "follow") == 0) {
			if (seen_follow++) {
				refusal_set(ref, 400, "follow", "follow given "
				    "twice");
				goto out;
			}
			if (strcmp(kv->value, "0") != 0 &&
			    strcmp(kv->value, "1") != 0) {
				refusal_set(ref, 400, "follow", "follow must "
				    "be 0 or 1");
				goto out;
			}
			f->follow = kv->value[0] == '1';
		} else {
			snprintf(ref->fieldbuf, sizeof(ref->fieldbuf), "%s",
			    kv->key);
			refusal_set(ref, 400, ref->fieldbuf, "unknown "
			    "parameter (since and follow are known)");
			goto out;
		}
	}
	rc = 0;
out:
	evhttp_clear_headers(&q);
	return (rc);
}

/* GET /v1/jobs/J/events: the job's events, from a revision, followed. */
void
http_get_events(struct coord *c, struct evhttp_request *req, const char *name)
{
	struct journal	*j = c->journal;
	struct follower	*f;
	struct refusal	 ref;
	struct job	*job;
	uint64_t	 since = 0, first;
	int		 given;
	json_t		*body;

	if ((f = http_job_stream_new(c, req, name, sizeof(*f))) == NULL)
		return;
	job = schedule_job_find(c, name);	/* there: just checked */
	first = journal_job_first(c, job);
	if (events_parse_query(req, f, &since, &given, &ref) == -1) {
		free(f);
		http_refused(c, req, &ref);
		return;
	}
	/* A follower's copy may be behind the leader the client read: it
	 * waits for the revisions it has yet to load. */
	if (given && since > journal_revision(c) && !replica_serves(c)) {
		free(f);
		http_error(c, req, 400, "since", "since %" PRIu64 " is ahead of "
		    "this coordinator's revision %" PRIu64, since,
		    journal_revision(c));
		return;
	}
	if (given && since + 1 < first) {
		free(f);
		body = json_object();
		json_object_set_new(body, "error", json_sprintf("events after "
		    "revision %" PRIu64 " are no longer kept (the oldest kept "
		    "is %" PRIu64 "; the coordinator keeps %zu): read the job's "
		    "summary and ranks, then follow from the summary's revision",
		    since, first, j->cap));
		json_object_set_new(body, "field", json_string("since"));
		json_object_set_new(body, "first",
		    json_integer((json_int_t)first));
		json_object_set_new(body, "revision",
		    json_integer((json_int_t)journal_revision(c)));
		http_reply(c, req, 410, body);
		return;
	}
	f->viewer = f->follow && http_is_viewer(c, req);
	if (f->viewer && j->nfollowers_viewer >= COORD_FOLLOWERS_MAX -
	    COORD_FOLLOWERS_OPERATOR) {
		free(f);
		c->metrics.followers_refused++;
		http_error(c, req, 503, NULL, "%d followers of the event stream "
		    "with the viewer token already, the most it may hold (%d "
		    "of %d are kept for the operator token): try again later",
		    COORD_FOLLOWERS_MAX - COORD_FOLLOWERS_OPERATOR,
		    COORD_FOLLOWERS_OPERATOR, COORD_FOLLOWERS_MAX);
		return;
	}
	if (f->follow && j->nfollowers >= COORD_FOLLOWERS_MAX) {
		free(f);
		c->metrics.followers_refused++;
		http_error(c, req, 503, NULL, "%d followers of the event stream "
		    "already, the most the coordinator serves: try again later",
		    COORD_FOLLOWERS_MAX);
		return;
	}
	if (f->follow && events_heartbeat_start(c) == -1) {
		free(f);
		http_error(c, req, 500, NULL, "out of memory");
		return;
	}
	f->coord = c;
	f->next = given ? since + 1 : first;
	snprintf(f->job, sizeof(f->job), "%s", name);
	TAILQ_INSERT_TAIL(&j->followers, f, entry);
	if (f->follow)
		j->nfollowers++;
	if (f->viewer)
		j->nfollowers_viewer++;
	if ((f->stream = stream_start(c, req, "application/x-ndjson",
	    events_fill, events_release, f)) == NULL)
		events_follower_free(j, f);
}
