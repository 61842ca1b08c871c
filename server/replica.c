/*
 * A follower's copy of the model (docs/design.md, followers), from which it
 * answers the reads of the model itself (the routes marked HTTP_REPLICA in
 * http_routes.c: the event stream, jobs, summaries, nodes, ranks, configs,
 * rules, stragglers, the page): a
 * watch of the whole prefix in etcd tells of every key committed, and the
 * copy takes each one as it comes (load_change(): a batch of events, a
 * job's, a window's, a batch of nodes' rows, ...), in the order of etcd's
 * revisions, so that a change costs the copy what the change holds, not
 * what the whole store holds.  The copy is read whole from etcd only at
 * first, when the watch started again (etcd compacted past it, or it was
 * cut), or when a key cannot be taken alone (a key of the layout before,
 * of a kind this coordinator does not know, the history of a job nobody
 * scheduled deleted): then at most every REPLICA_RELOAD_MS (the first
 * change waits that long for the ones that follow it), and not before
 * REPLICA_BUSY_TIMES the last load's time has passed since it ended.  What
 * the watch tells meanwhile is kept (at most REPLICA_QUEUE_BYTES, else
 * read whole again) and taken after the load, from the revision the load
 * read at; and a turn of the loop takes keys for REPLICA_TURN_MS at most
 * (a burst of batches), the next ones kept for the next turn.  The copy's event stream has the leader's revisions
 * (journal_load.c), so that a client resumes on any coordinator, and an
 * answer's revision (X-Dynprof-Revision) says which of the leader's states
 * it reflects.  The nodes are as the leader last wrote them (nodeview.c:
 * their agents connected, the jobs they serve, their progress), loaded only
 * into a copy and forgotten when this one leads; so are its straggler
 * judgement and legacy reports (stragview.c, legacyview.c): a follower
 * judges nothing itself.  The store's revision of the last key the copy
 * took (or of its read) is what its answers say they reflect
 * (store_revision(), X-Dynprof-Revision).  The prefix
 * is read without waiting (page by page on the loop, at one revision),
 * then loaded from what was read: the loop never waits for etcd; the
 * loads' and changes' times and counts are in /metrics.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>

#include "clock.h"
#include "etcd.h"
#include "log.h"
#include "model.h"
#include "replica.h"

/* A read of the whole prefix in flight, page by page, at one revision. */
struct replica_fetch {
	struct coord		*c;
	json_t			*kvs;		/* the pages so far */
	int64_t			 rev;		/* 0 until the first page */
	char			*from;		/* the next page's first key */
	size_t			 fromlen;
	int64_t			 changed_ns;	/* the first change it takes */
	uint64_t		 t0;		/* monotonic: it started */
	int			 cancelled;	/* freed when answered */
};

/* A key the watch told of while the copy could not take it. */
struct replica_change {
	int64_t			 rev;
	char			*key;
	char			*value;		/* NULL: deleted */
	size_t			 len;
	TAILQ_ENTRY(replica_change) entry;
};
TAILQ_HEAD(replica_changeq, replica_change);

struct replica {
	struct etcd		*e;
	void			(*moved)(struct coord *);	/* the owner's */
	int			 following;	/* replica_follow() till
						 * replica_stop() */
	struct etcd_watch	*watch;
	struct replica_fetch	*fetch;		/* NULL: none in flight */
	struct event		*reload;	/* REPLICA_RELOAD_MS after a change */
	int			 loaded;	/* the copy may be served */
	int			 synced;	/* takes the watch's keys as they
						 * come: nothing missed since
						 * the load */
	struct replica_changeq	 queue;		/* not taken yet */
	size_t			 queued_bytes;
	struct event		*drain;		/* takes them, a turn's share */
	struct event		*publish;	/* batches' entries taken */
	uint64_t		 turn_ns;	/* taking keys, this turn */
	int			 yield;		/* this turn's share is taken */
	int			 overflow;	/* dropped some: read again */
	uint64_t		 next_ns;	/* monotonic: no read before */
	int64_t			 changed_ns;	/* wall: first change not loaded */
	int64_t			 loaded_rev;	/* of the read the copy holds */
	int64_t			 seen_rev;	/* the watch's last change */
	int64_t			 watch_rev;	/* its last event, any key */
	uint64_t		 loads;
	uint64_t		 changes;	/* keys taken one by one */
	uint64_t		 change_us_max;
	uint64_t		 load_us_last, load_us_max;
	uint64_t		 lag_ms_last, lag_ms_max;
};

/* Frees a read of the prefix. */
static void
replica_fetch_free(struct replica_fetch *f)
{
	json_decref(f->kvs);
	free(f->from);
	free(f);
}

/* Forgets the keys kept while the copy could not take them. */
static void
replica_queue_clear(struct replica *r)
{
	struct replica_change	*ch;

	while ((ch = TAILQ_FIRST(&r->queue)) != NULL) {
		TAILQ_REMOVE(&r->queue, ch, entry);
		free(ch->key);
		free(ch->value);
		free(ch);
	}
	r->queued_bytes = 0;
}

/* Keeps a key the watch told of (value NULL: deleted) until the load. */
static void
replica_queue(struct replica *r, const char *key, const char *value,
    size_t len, int64_t rev)
{
	struct replica_change	*ch;
	size_t			 klen = strlen(key);

	if (r->overflow)
		return;
	if (r->queued_bytes + klen + len > REPLICA_QUEUE_BYTES ||
	    (ch = calloc(1, sizeof(*ch))) == NULL) {
		/* Read again whole once this load is in. */
		r->overflow = 1;
		replica_queue_clear(r);
		return;
	}
	ch->rev = rev;
	if ((ch->key = strdup(key)) == NULL || (value != NULL &&
	    (ch->value = malloc(len + 1)) == NULL)) {
		free(ch->key);
		free(ch);
		r->overflow = 1;
		replica_queue_clear(r);
		return;
	}
	if (value != NULL) {
		memcpy(ch->value, value, len);
		ch->value[len] = '\0';
	}
	ch->len = len;
	r->queued_bytes += klen + len;
	TAILQ_INSERT_TAIL(&r->queue, ch, entry);
}

static void	replica_changed(struct coord *);
static void	replica_next_turn(struct replica *);

/*
 * Publishes the event stream's entries the copy took: once a key written
 * alone landed, every batch committed before it did (es_pump() sends a
 * commit's batches side by side, in any order, and such a key only once
 * they all landed), so no entry of a lower revision comes after; or
 * REPLICA_PUBLISH_MS after a batch when no such key came.
 */
static void
replica_publish(struct coord *c)
{
	event_del(c->replica->publish);
	journal_load_publish(c);
}

/* No key written alone came after the last batches: they are published. */
static void
replica_publish_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	journal_load_publish(arg);
}

/*
 * Takes one key the watch told of (value NULL: deleted) into the copy; past
 * REPLICA_TURN_MS of them in a turn of the loop, the next ones wait for
 * the next turn (replica_drain_cb()).  Returns 0, or -1: the copy no longer
 * follows the watch (read again whole, scheduled).
 */
static int
replica_apply(struct coord *c, const char *key, const char *value,
    size_t len, int64_t rev)
{
	struct replica	*r = c->replica;
	uint64_t	 t0 = clock_mono_ns(), ns;

	struct timeval	 tv = { 0, REPLICA_PUBLISH_MS * 1000 };
	int		 rc;

	if ((rc = load_change(c, key, value, len, rev)) == -1) {
		log_info("%s: %s at revision %lld cannot be taken alone: "
		    "reading the copy again", __func__, key, (long long)rev);
		r->synced = 0;
		replica_changed(c);
		return (-1);
	}
	if (rc == 0)
		replica_publish(c);
	else if (!event_pending(r->publish, EV_TIMEOUT, NULL))
		event_add(r->publish, &tv);
	r->changes++;
	if (rev > r->loaded_rev)
		r->loaded_rev = rev;
	ns = clock_mono_ns() - t0;
	if (ns / 1000 > r->change_us_max)
		r->change_us_max = ns / 1000;
	r->turn_ns += ns;
	if (r->turn_ns >= (uint64_t)REPLICA_TURN_MS * 1000000) {
		r->yield = 1;
		replica_next_turn(r);
	}
	return (0);
}

/*
 * Takes the keys kept at the next turn of the loop: after it polled
 * (a timer's, not an active callback's: those run in this turn).
 */
static void
replica_next_turn(struct replica *r)
{
	static const struct timeval	 now = { 0, 0 };

	if (!event_pending(r->drain, EV_TIMEOUT, NULL))
		event_add(r->drain, &now);
}

/* Returns 1 if a key the watch tells of now is taken at once. */
static int
replica_takes_now(const struct replica *r)
{
	return (r->loaded && r->synced && r->fetch == NULL && !r->yield &&
	    TAILQ_EMPTY(&r->queue));
}

/*
 * A turn of the loop: the keys kept (the watch told of them during a load,
 * or past the last turn's share) taken, within this turn's share; then the
 * leader is told that the copy moved.
 */
static void
replica_drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord		*c = arg;
	struct replica		*r = c->replica;
	struct replica_change	*ch;

	(void)fd;
	(void)what;
	r->yield = 0;
	r->turn_ns = 0;
	if (r->overflow) {
		r->overflow = 0;
		r->synced = 0;
		replica_queue_clear(r);
		replica_changed(c);
		return;
	}
	while (r->loaded && r->synced && r->fetch == NULL && !r->yield &&
	    (ch = TAILQ_FIRST(&r->queue)) != NULL) {
		TAILQ_REMOVE(&r->queue, ch, entry);
		r->queued_bytes -= strlen(ch->key) + ch->len;
		(void)replica_apply(c, ch->key, ch->value, ch->len, ch->rev);
		free(ch->key);
		free(ch->value);
		free(ch);
	}
	r->moved(c);
}

/* A load read at revision rev is in: the keys kept that it holds dropped,
 * the others taken from the next turn on. */
static void
replica_loaded(struct replica *r, int64_t rev)
{
	struct replica_change	*ch, *next;

	for (ch = TAILQ_FIRST(&r->queue); ch != NULL; ch = next) {
		next = TAILQ_NEXT(ch, entry);
		if (ch->rev > rev)
			break;
		TAILQ_REMOVE(&r->queue, ch, entry);
		r->queued_bytes -= strlen(ch->key) + ch->len;
		free(ch->key);
		free(ch->value);
		free(ch);
	}
	if (r->overflow || !TAILQ_EMPTY(&r->queue))
		replica_next_turn(r);
}

/*
 * The whole prefix is read: the model loaded again from what was read
 * (etcd_range() serves it, store_etcd.c's load as it is), without asking
 * etcd anything more.
 */
static void
replica_load(struct coord *c, struct replica_fetch *f)
{
	struct replica	*r = c->replica;
	uint64_t	 us;
	uint64_t	 t1 = clock_mono_ns();
	int		 rc;

	jobs_clear(c);
	r->e->range_cache = f->kvs;
	r->e->range_cache_rev = f->rev;
	rc = load_model_copy(c);
	r->e->range_cache = NULL;
	/* The loop is busy while it loads: at most a fifth of the time. */
	r->next_ns = clock_mono_ns() + REPLICA_BUSY_TIMES *
	    (clock_mono_ns() - t1);
	if (rc == -1) {
		log_warnx("%s: cannot load the state read from etcd: the "
		    "event stream goes to the leader", __func__);
		jobs_clear(c);
		r->loaded = 0;
		return;
	}
	event_del(r->publish);
	journal_at_store(c);
	r->loaded = 1;
	r->synced = 1;
	r->loaded_rev = f->rev;
	r->loads++;
	/* Followers of the stream on this copy: the layer above's. */
	if (c->hooks != NULL && c->hooks->events_published != NULL)
		c->hooks->events_published(c);
	us = (uint64_t)(clock_mono_ns() - f->t0) / 1000;
	r->load_us_last = us;
	if (us > r->load_us_max)
		r->load_us_max = us;
	if (f->changed_ns != 0) {
		r->lag_ms_last = (uint64_t)(clock_wall_ns() - f->changed_ns) /
		    1000000;
		if (r->lag_ms_last > r->lag_ms_max)
			r->lag_ms_max = r->lag_ms_last;
	}
	log_debug("%s: model read and loaded in %llu us, revision %llu",
	    __func__, (unsigned long long)us,
	    (unsigned long long)journal_revision(c));
	replica_loaded(r, f->rev);
}

static int	replica_fetch_page(struct replica_fetch *);
static void	replica_later(struct replica *);

/* A page of the prefix (ans ours to free): the next one asked, or the
 * model loaded. */
static void
replica_fetched(void *arg, int rc, json_t *ans)
{
	struct replica_fetch	*f = arg;
	struct coord		*c = f->c;
	struct replica		*r = c->replica;
	const json_t		*kvs, *kv;
	char			*k;
	size_t			 i, klen;
	int			 more;

	if (f->cancelled || rc != ETCD_OK) {
		if (!f->cancelled) {
			/* Read again at the next change or after a pause. */
			log_debug("%s: cannot read %s: %s", __func__,
			    r->e->prefix, r->e->error);
			r->fetch = NULL;
			if (r->changed_ns == 0)
				r->changed_ns = f->changed_ns != 0 ?
				    f->changed_ns : clock_wall_ns();
			replica_changed(c);
		}
		replica_fetch_free(f);
		json_decref(ans);
		return;
	}
	if (f->rev == 0)
		f->rev = etcd_int(json_object_get(ans, "header"), "revision");
	kvs = json_object_get(ans, "kvs");
	more = json_is_true(json_object_get(ans, "more")) &&
	    json_array_size(kvs) > 0;
	json_array_foreach(kvs, i, kv)
		json_array_append(f->kvs, (json_t *)(uintptr_t)kv);
	kv = more ? json_array_get(kvs, json_array_size(kvs) - 1) : NULL;
	k = kv != NULL ? etcd_unb64(json_object_get(kv, "key"), &klen) : NULL;
	json_decref(ans);
	if (more) {
		/* The next page starts right after the last key (and the 0
		 * byte etcd_unb64() ends it with). */
		if (k != NULL) {
			free(f->from);
			f->from = k;
			f->fromlen = klen + 1;
			if (replica_fetch_page(f) == 0)
				return;
		}
		r->fetch = NULL;
		replica_fetch_free(f);
		replica_changed(c);
		return;
	}
	r->fetch = NULL;
	if (r->following && r->watch != NULL)
		replica_load(c, f);
	replica_fetch_free(f);
	r->moved(c);
}

/* Asks for the next page of f.  Returns 0, or -1 (done is not called). */
static int
replica_fetch_page(struct replica_fetch *f)
{
	struct replica	*r = f->c->replica;
	char		 end[ETCD_KEY_MAX];
	json_t		*body;

	etcd_range_end(r->e->prefix, end, sizeof(end));
	body = json_pack("{s:o,s:o,s:I}", "key", etcd_b64(f->from,
	    f->fromlen), "range_end", etcd_b64(end, strlen(end)), "limit",
	    (json_int_t)ETCD_RANGE_PAGE);
	if (body == NULL)
		return (-1);
	if (f->rev != 0)
		json_object_set_new(body, "revision", etcd_int_json(f->rev));
	return (etcd_call_async(r->e, "/v3/kv/range", body, REPLICA_FETCH_MS,
	    replica_fetched, f));
}

/*
 * Reads the whole prefix again, page by page, without waiting (the loop
 * goes on), if this coordinator still follows; one read at a time.
 */
static void
replica_reload_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord		*c = arg;
	struct replica		*r = c->replica;
	struct replica_fetch	*f;

	(void)fd;
	(void)what;
	if (!r->following || r->watch == NULL ||
	    (r->loaded && r->synced))
		return;
	if (r->fetch != NULL || clock_mono_ns() < r->next_ns) {
		replica_later(r);	/* once this one is in, or later */
		return;
	}
	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (f->kvs = json_array()) == NULL ||
	    (f->from = strdup(r->e->prefix)) == NULL) {
		if (f != NULL)
			replica_fetch_free(f);
		replica_changed(c);
		return;
	}
	f->c = c;
	f->fromlen = strlen(f->from);
	f->changed_ns = r->changed_ns;
	f->t0 = clock_mono_ns();
	r->changed_ns = 0;
	if (replica_fetch_page(f) == -1) {
		replica_fetch_free(f);
		replica_changed(c);
		return;
	}
	r->fetch = f;
}

/* Looks again in REPLICA_RELOAD_MS. */
static void
replica_later(struct replica *r)
{
	struct timeval	 tv = { REPLICA_RELOAD_MS / 1000,
	    (REPLICA_RELOAD_MS % 1000) * 1000 };

	if (!event_pending(r->reload, EV_TIMEOUT, NULL))
		event_add(r->reload, &tv);
}

/* Schedules a load REPLICA_RELOAD_MS from the first change not loaded. */
static void
replica_changed(struct coord *c)
{
	struct replica	*r = c->replica;

	if (r->changed_ns == 0)
		r->changed_ns = clock_wall_ns();
	replica_later(r);
}

/* What the watch of the prefix says: any key but the leader's changed. */
static void
replica_watched(void *arg, int type, const char *key, const char *value,
    size_t len, const json_t *kv)
{
	struct coord	*c = arg;
	struct replica	*r = c->replica;
	int64_t		 rev;

	switch (type) {
	case ETCD_WATCH_CREATED:
		/* What was committed before the watch: loaded now. */
		r->synced = 0;
		event_active(r->reload, EV_TIMEOUT, 1);
		break;
	case ETCD_WATCH_PUT:
	case ETCD_WATCH_DELETE:
		/* Events come in revision order: all below rev are seen. */
		rev = etcd_int(kv, "mod_revision");
		if (rev > r->watch_rev)
			r->watch_rev = rev;
		if (key != NULL && strcmp(key, r->e->leader_key) == 0) {
			r->moved(c);
			break;
		}
		if (rev > r->seen_rev)
			r->seen_rev = rev;
		if (type == ETCD_WATCH_DELETE)
			value = NULL;
		if (replica_takes_now(r))
			(void)replica_apply(c, key, value, len, rev);
		else {
			/* Taken at the next turn, or once the load (on its
			 * way) is in. */
			replica_queue(r, key, value, len, rev);
			if (r->loaded && r->synced && r->fetch == NULL)
				replica_next_turn(r);
			else
				replica_changed(c);
		}
		r->moved(c);
		break;
	case ETCD_WATCH_ENDED:
		log_info("%s: the watch of %s ended: %s", __func__,
		    r->e->prefix, r->e->error);
		etcd_watch_free(r->watch);
		r->watch = NULL;	/* replica_follow() makes another */
		r->synced = 0;
		replica_queue_clear(r);
		r->watch_rev = r->seen_rev = 0;
		r->moved(c);
		break;
	}
}

/*
 * Makes the follower's copy (none is loaded yet); moved(c) is called each
 * time the copy or its watch moved (what replica_catch_up() answers may
 * have changed).  Returns 0 or -1.
 */
int
replica_new(struct coord *c, struct etcd *e, void (*moved)(struct coord *))
{
	struct replica	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return (-1);
	r->e = e;
	r->moved = moved;
	TAILQ_INIT(&r->queue);
	r->reload = event_new(c->base, -1, 0, replica_reload_cb, c);
	r->drain = event_new(c->base, -1, 0, replica_drain_cb, c);
	r->publish = evtimer_new(c->base, replica_publish_cb, c);
	if (r->reload == NULL || r->drain == NULL || r->publish == NULL) {
		if (r->reload != NULL)
			event_free(r->reload);
		if (r->drain != NULL)
			event_free(r->drain);
		if (r->publish != NULL)
			event_free(r->publish);
		free(r);
		return (-1);
	}
	c->replica = r;
	return (0);
}

/* Frees the copy's watch and timer (not the model), after store_close(). */
void
replica_free(struct coord *c)
{
	struct replica	*r = c->replica;

	if (r == NULL)
		return;
	etcd_watch_free(r->watch);
	/* store_close() dropped its request unanswered: no callback comes. */
	if (r->fetch != NULL)
		replica_fetch_free(r->fetch);
	event_free(r->reload);
	event_free(r->drain);
	event_free(r->publish);
	replica_queue_clear(r);
	free(r);
	c->replica = NULL;
}

/* A follower (the caller leads not): watches the prefix (its copy loaded
 * once etcd has the watch), unless it does already. */
void
replica_follow(struct coord *c)
{
	struct replica	*r = c->replica;
	char		 end[ETCD_KEY_MAX];

	if (r == NULL || r->watch != NULL)
		return;
	r->following = 1;
	etcd_range_end(r->e->prefix, end, sizeof(end));
	if ((r->watch = etcd_watch_new(r->e, r->e->prefix, end, 0,
	    replica_watched, c)) == NULL)
		log_warnx("%s: cannot watch %s: out of memory", __func__,
		    r->e->prefix);
}

/* Leading now: the copy is the leader's model, no longer watched. */
void
replica_stop(struct coord *c)
{
	struct replica	*r = c->replica;

	if (r == NULL)
		return;
	etcd_watch_free(r->watch);
	r->watch = NULL;
	if (r->fetch != NULL)
		r->fetch->cancelled = 1;	/* freed when answered */
	r->fetch = NULL;
	event_del(r->reload);
	event_del(r->drain);
	/* Everything committed is in (replica_catch_up()): published. */
	if (event_pending(r->publish, EV_TIMEOUT, NULL))
		replica_publish(c);
	nodeview_forget(c);	/* the agents connected to the leader */
	replica_queue_clear(r);
	stragview_forget(c);	/* its rows are written again */
	legacyview_forget(c);
	r->overflow = r->yield = r->following = 0;
	r->loaded = r->synced = 0;
	r->changed_ns = 0;
	r->watch_rev = r->seen_rev = r->loaded_rev = 0;
}

/*
 * A follower that won the lead at revision rev (its key's): returns 1 if
 * the copy holds everything committed below rev (the watch passed rev, in
 * revision order, and nothing it told of since the copy's read), so that
 * the new leader serves from it at once; 0 if not yet (the watch has yet
 * to pass rev, or a read is on its way: started here if none is), and
 * the copy's owner is told (replica_new()'s moved) when that changes; -1
 * if it cannot (no
 * watch, so no word of what changed).
 */
int
replica_catch_up(struct coord *c, int64_t rev)
{
	struct replica	*r = c->replica;

	if (r == NULL || r->watch == NULL)
		return (-1);
	if (r->watch_rev < rev)
		return (0);
	if (replica_takes_now(r) && r->loaded_rev >= r->seen_rev)
		return (1);
	/* Keys kept for the next turns: r->moved() once taken. */
	if (r->loaded && r->synced && r->fetch == NULL)
		return (0);
	if (r->fetch == NULL) {
		log_info("%s: the copy (revision %lld) lags the watch "
		    "(%lld): reading it again before serving", __func__,
		    (long long)r->loaded_rev, (long long)r->seen_rev);
		/* Read now: no wait for more changes nor for the loop. */
		r->next_ns = 0;
		event_del(r->reload);
		event_active(r->reload, EV_TIMEOUT, 1);
	}
	return (0);
}

/* Returns 1 if this follower answers reads from its copy. */
int
replica_serves(const struct coord *c)
{
	return (c->replica != NULL && c->replica->loaded &&
	    c->replica->following);
}

/* The copy's lines of /metrics. */
void
replica_metrics(struct coord *c, struct evbuffer *buf)
{
	struct replica	*r = c->replica;

	if (r == NULL)
		return;
	evbuffer_add_printf(buf,
	    "# HELP dynprof_replica_loads_total Loads of a follower's copy of "
	    "the model from etcd, whole.\n"
	    "# TYPE dynprof_replica_loads_total counter\n"
	    "dynprof_replica_loads_total %llu\n"
	    "# HELP dynprof_replica_changes_total Keys a follower's copy took "
	    "one by one, as the watch told of them.\n"
	    "# TYPE dynprof_replica_changes_total counter\n"
	    "dynprof_replica_changes_total %llu\n"
	    "# HELP dynprof_replica_change_seconds_max The longest a key took "
	    "(the loop waits for it).\n"
	    "# TYPE dynprof_replica_change_seconds_max gauge\n"
	    "dynprof_replica_change_seconds_max %.6f\n"
	    "# HELP dynprof_replica_revision The etcd revision the copy "
	    "holds everything up to.\n"
	    "# TYPE dynprof_replica_revision gauge\n"
	    "dynprof_replica_revision %lld\n"
	    "# HELP dynprof_replica_load_seconds The last load's time (the "
	    "loop waits for it).\n"
	    "# TYPE dynprof_replica_load_seconds gauge\n"
	    "dynprof_replica_load_seconds %.6f\n"
	    "# HELP dynprof_replica_load_seconds_max The longest load.\n"
	    "# TYPE dynprof_replica_load_seconds_max gauge\n"
	    "dynprof_replica_load_seconds_max %.6f\n"
	    "# HELP dynprof_replica_lag_seconds From the first change the "
	    "watch told of to the end of the load that took it, the last "
	    "time.\n"
	    "# TYPE dynprof_replica_lag_seconds gauge\n"
	    "dynprof_replica_lag_seconds %.3f\n"
	    "# HELP dynprof_replica_lag_seconds_max The longest such lag.\n"
	    "# TYPE dynprof_replica_lag_seconds_max gauge\n"
	    "dynprof_replica_lag_seconds_max %.3f\n",
	    (unsigned long long)r->loads, (unsigned long long)r->changes,
	    r->change_us_max / 1e6, (long long)r->loaded_rev,
	    r->load_us_last / 1e6,
	    r->load_us_max / 1e6, r->lag_ms_last / 1e3, r->lag_ms_max / 1e3);
}
