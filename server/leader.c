/*
 * Coordinators that share their state in etcd, one of them the leader.
 *
 * Each coordinator keeps a lease in etcd (alive every eighth of the lease's
 * TTL) and campaigns for the leader key on it (etcd_session.c).  A
 * follower watches the key (etcd_watch.c) and campaigns again the moment it
 * goes (the leader's lease expired or was revoked), not on a timer; only
 * while it has no watch (etcd away) does it campaign every eighth of the
 * TTL, which also learns who leads and starts the watch again.  The
 * leader key's value names the leader's AgentLink address and admin URL
 * (--advertise-agent, --advertise-http), and its create revision is the
 * fencing token every write compares (store_etcd.c).
 *
 * A follower that wins the key serves from its copy of the model
 * (replica.c) once the copy holds everything committed before its lead
 * (replica_catch_up()), without loading anything; with no such copy within
 * the TTL it loads the whole state from etcd first.  It then serves as a
 * coordinator with SQLite does.  A follower keeps the copy only for the
 * event stream: it
 * answers an agent's hello with ERROR_NOT_LEADER naming the leader, and an
 * admin request with a 307 to the leader's URL (/healthz and /metrics it
 * answers itself).  A hello from an agent that lost the leader this
 * follower still names (Hello.failed_leader), or while it knows none, is
 * held instead until the watch names the next leader and says it serves
 * (its state loaded; at most twice the TTL and 5 s, heartbeats sent
 * meanwhile): so an agent learns the new leader from one answer, when it
 * can be served, not from one every backoff for the lease's TTL.  (The
 * key's value says "serving": false from the campaign until the leader
 * loaded its state, then true.)  The leader steps down (closes its agents,
 * drops its model) as soon as etcd says its lease is gone or a guarded
 * write fails.
 * When etcd does not answer (no quorum), it stays: writes fail with a 503,
 * reads are served from memory, agents' events stay unacknowledged; once
 * etcd answers again it carries on, after reloading its state if a request
 * went unanswered (a write that timed out may have landed).
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>

#include "addr.h"
#include "clock.h"
#include "etcd.h"
#include "leader.h"
#include "log.h"
#include "model.h"
#include "replica.h"
#include "store.h"

enum leader_role {
	ROLE_FOLLOWER,
	ROLE_LEADER,
};

struct leader {
	struct etcd		*e;
	enum leader_role	 role;
	int			 resync;	/* etcd was away: reload */
	char			 me[1024];	/* our leader key value */
	char			 me_serving[1024];	/* once loaded */
	int			 serving;	/* the leader named serves */
	char			 agent[LEADER_ADDR_MAX];	/* the leader's */
	char			 http[LEADER_ADDR_MAX];
	struct event		*timer;
	struct event		*deposed;	/* steps down outside the store */
	uint64_t		 probed_ms;	/* monotonic: last tick that asked */
	uint64_t		 elections;	/* times this one took the lead */
	uint64_t		 stepdowns;
	int			 renewing;	/* a keepalive in flight */
	int			 campaigning;	/* a campaign in flight */
	int			 following;	/* said whom it follows */
	int			 again;		/* campaign once this one ends */
	int64_t			 renewed_lease;	/* of that keepalive */
	struct etcd_watch	*watch;		/* a follower's, of the key */
	int			 watching;	/* etcd has it: no timed
						 * campaign */
	int			 keeping;	/* a follower's keepalive */
	uint64_t		 held;		/* hellos held now */
	uint64_t		 held_total;
	uint64_t		 held_welcomed;	/* here, once it led */
	uint64_t		 campaigns;	/* txns sent */
	int			 taking;	/* won: its copy catching up */
	struct event		*take_bound;	/* then the load instead */
	uint64_t		 take_ms;	/* monotonic: won then */
	uint64_t		 takes_copy;	/* served from the copy */
	uint64_t		 takes_load;	/* loaded the state first */
	uint64_t		 take_ms_last;	/* won to serving */
};

/* Prints the etcd flags' usage. */
void
leader_usage(FILE *f)
{
	fprintf(f,
	    "  state in etcd, several coordinators, one leader:\n"
	    "  --etcd-endpoints URLS    http://HOST:PORT[,...]: etcd instead of"
	    " SQLite\n"
	    "  --etcd-prefix P          keys under P (default /dynprof/)\n"
	    "  --etcd-lease-ttl S       the leader's lease, seconds"
	    " (default 5)\n"
	    "  --advertise-agent H:P    agents reach this coordinator there"
	    " (default --listen)\n"
	    "  --advertise-http URL     the admin API's URL"
	    " (default http://--http)\n"
	    "  --etcd-cacert F          https endpoints: trust the CAs in F\n"
	    "  --etcd-cert F            and show this client certificate,\n"
	    "  --etcd-key F             with this key\n"
	    "  --etcd-max-txn-ops N     operations per txn, as etcd's"
	    " --max-txn-ops (128)\n");
}

/* Parses one etcd flag into conf.  Returns 0, or -1 logged. */
int
leader_parse_flag(struct coord_config *conf, int ch, const char *name,
    const char *arg)
{
	const char	*why = NULL;
	char		*end;
	long		 v;

	switch (ch) {
	case OPT_ETCD_ENDPOINTS:
		if (etcd_check_endpoints(arg, &why) == 0)
			conf->etcd_endpoints = arg;
		break;
	case OPT_ETCD_PREFIX:
		if (etcd_check_prefix(arg, &why) == 0)
			conf->etcd_prefix = arg;
		break;
	case OPT_ETCD_LEASE_TTL:
		v = strtol(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || v < LEADER_TTL_MIN ||
		    v > LEADER_TTL_MAX)
			why = "expected 2 to 300 seconds";
		else
			conf->etcd_lease_ttl = (int)v;
		break;
	case OPT_ADVERTISE_AGENT:
		if (strlen(arg) >= LEADER_ADDR_MAX || strchr(arg, ':') == NULL)
			why = "expected HOST:PORT";
		else
			conf->advertise_agent = arg;
		break;
	case OPT_ADVERTISE_HTTP:
		if (strlen(arg) >= LEADER_ADDR_MAX ||
		    (strncmp(arg, "http://", 7) != 0 &&
		    strncmp(arg, "https://", 8) != 0))
			why = "expected http://HOST:PORT or https://HOST:PORT";
		else
			conf->advertise_http = arg;
		break;
	case OPT_ETCD_MAX_TXN_OPS:
		v = strtol(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || v < ETCD_TXN_OPS_MAX ||
		    v > ETCD_TXN_OPS_LIMIT)
			why = "expected 128 to 65536 (etcd's --max-txn-ops)";
		else
			conf->etcd_max_txn_ops = (int)v;
		break;
	case OPT_ETCD_CACERT:
	case OPT_ETCD_CERT:
	case OPT_ETCD_KEY:
		if (access(arg, R_OK) == -1)
			why = strerror(errno);
		else if (ch == OPT_ETCD_CACERT)
			conf->etcd_cacert = arg;
		else if (ch == OPT_ETCD_CERT)
			conf->etcd_cert = arg;
		else
			conf->etcd_key = arg;
		break;
	default:
		why = "unknown flag";
		break;
	}
	if (why != NULL) {
		log_warnx("--%s: %s: %s", name, arg, why);
		return (-1);
	}
	return (0);
}

/*
 * Returns 1 if this coordinator keeps its state in etcd, shared with others
 * (one of them leading), 0 if in its own SQLite file: the one place that
 * says which.
 */
int
leader_is_etcd(const struct coord *c)
{
	return (c->leader != NULL);
}

/* Returns 1 if this coordinator uses etcd and does not lead now. */
int
leader_is_follower(const struct coord *c)
{
	return (leader_is_etcd(c) && c->leader->role != ROLE_LEADER);
}

/* Returns this coordinator's role: "leader" or "follower". */
const char *
leader_role(const struct coord *c)
{
	return (leader_is_follower(c) ? "follower" : "leader");
}

/* Returns the leader's AgentLink address, "" while none is known. */
const char *
leader_agent(const struct coord *c)
{
	return (leader_is_etcd(c) ? c->leader->agent : "");
}

/* Closes an agent's connection with ERROR_NOT_LEADER (the link's, a hook). */
static void
leader_agent_close(struct coord *c, struct conn *conn, const char *why)
{
	if (c->hooks != NULL && c->hooks->agent_close != NULL)
		c->hooks->agent_close(conn,
		    DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER, why);
}

/*
 * Closes every agent connection with ERROR_NOT_LEADER (naming the leader),
 * but the held hellos if keep_held.
 */
static void
leader_close_agents(struct coord *c, const char *why, int keep_held)
{
	struct conn	*conn, *next;

	/* Events read and not committed: the commit fails, the agents replay
	 * them to the leader. */
	intake_flush(c);
	for (conn = TAILQ_FIRST(&c->conns); conn != NULL; conn = next) {
		next = TAILQ_NEXT(conn, entry);
		if (keep_held && conn->held_ms != 0)
			continue;
		leader_agent_close(c, conn, why);
	}
}

static void	leader_campaign(struct coord *);
static void	leader_watch_stop(struct leader *);
static void	leader_hold_release(struct coord *, int);

/* Stops leading: agents closed, model dropped, lease given up. */
static void
leader_step_down(struct coord *c, const char *why)
{
	struct leader	*l = c->leader;

	if (l->role != ROLE_LEADER)
		return;
	log_warnx("%s: stepping down: %s", __func__, why);
	l->role = ROLE_FOLLOWER;
	l->stepdowns++;
	l->e->fence = 0;
	l->agent[0] = l->http[0] = '\0';
	leader_close_agents(c, "this coordinator is not the leader any more",
	    0);
	jobs_clear(c);
	/* A fresh lease for the next campaign; the old key goes with it. */
	etcd_resign(l->e);
}

/* The answer to the leader key's rewrite saying this leader serves. */
static void
leader_announced(void *arg, int rc, json_t *ans)
{
	struct coord	*c = arg;

	if (rc != ETCD_OK || !json_is_true(json_object_get(ans, "succeeded")))
		log_warnx("%s: the leader key does not say this coordinator "
		    "serves: %s (followers hold agents until their bound)",
		    __func__, rc != ETCD_OK ? c->leader->e->error :
		    "another leads");
	json_decref(ans);
}

/*
 * Takes the lead just won (or reloads it): serves from the follower's copy
 * if from_copy (it holds everything committed before this lead:
 * replica_catch_up()), else loads the whole state from etcd first.
 * Returns 0, or -1 (stepped down) if the state does not load.
 */
static int
leader_take(struct coord *c, int from_copy)
{
	struct leader	*l = c->leader;
	int		 reload = l->role == ROLE_LEADER;

	l->taking = 0;
	event_del(l->take_bound);
	leader_watch_stop(l);
	replica_stop(c);
	snprintf(l->agent, sizeof(l->agent), "%s", c->conf.advertise_agent);
	snprintf(l->http, sizeof(l->http), "%s", c->conf.advertise_http);
	/* Held hellos wait for the load, then are told to come back here. */
	leader_close_agents(c, reload ? "this coordinator reloads its state" :
	    "this coordinator is taking the lead", 1);
	l->role = ROLE_LEADER;
	if (!from_copy) {
		jobs_clear(c);
		if (load_model(c) == -1) {
			leader_step_down(c, "cannot load the state from etcd");
			return (-1);
		}
	}
	l->resync = 0;
	l->e->unsure = l->e->stale = 0;	/* the model is etcd's now */
	if (!reload) {
		l->elections++;
		if (from_copy)
			l->takes_copy++;
		else
			l->takes_load++;
		l->take_ms_last = l->take_ms != 0 ? clock_mono_ms() -
		    l->take_ms : 0;
	}
	log_info("%s: leading (fencing token %lld, lease %lld), generation "
	    "%llu, %s, %s", __func__, (long long)l->e->fence,
	    (long long)l->e->lease, (unsigned long long)c->generation,
	    l->agent, from_copy ? "serving from its copy" : "state loaded");
	l->take_ms = 0;
	l->serving = 1;
	leader_hold_release(c, 0);
	if (!reload && etcd_leader_update_async(l->e, l->me_serving,
	    leader_announced, c) == -1)
		log_warnx("%s: cannot say this coordinator serves: %s",
		    __func__, l->e->error);
	return (0);
}

/*
 * The lead just won: a follower's copy that holds everything committed
 * before it (the watch of the prefix passed the campaign's revision, the
 * copy read since the last change) is the model at once, nothing loaded;
 * until it does (a read of the prefix on its way, the loop serving), it
 * names no leader: hellos of agents that lost one are held, admin requests
 * answered 503.  Bounded (LEADER_TAKE_S, for a watch that does not
 * deliver), then the state is loaded as without a copy.
 */
static void
leader_take_begin(struct coord *c)
{
	struct leader	*l = c->leader;
	struct timeval	 tv = { LEADER_TAKE_S(c->conf.etcd_lease_ttl), 0 };

	l->take_ms = clock_mono_ms();
	leader_watch_stop(l);
	l->agent[0] = l->http[0] = '\0';
	l->serving = 0;
	l->taking = 1;
	event_add(l->take_bound, &tv);
	leader_copy_moved(c);
}

/* The copy or its watch moved: a lead won is served once it caught up. */
void
leader_copy_moved(struct coord *c)
{
	struct leader	*l = c->leader;

	if (l == NULL || !l->taking)
		return;
	switch (replica_catch_up(c, l->e->fence)) {
	case 1:
		leader_take(c, 1);
		break;
	case -1:
		log_info("%s: no copy to serve from: loading the state",
		    __func__);
		leader_take(c, 0);
		break;
	}
}

/* The copy did not catch up within the TTL: the state loaded instead. */
static void
leader_take_bound_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord	*c = arg;

	(void)fd;
	(void)what;
	if (!c->leader->taking)
		return;
	log_warnx("%s: the copy did not catch up with etcd within %d s: "
	    "loading the state", __func__,
	    LEADER_TAKE_S(c->conf.etcd_lease_ttl));
	leader_take(c, 0);
}

/* The lead won is lost before it served: a follower again. */
static void
leader_take_abort(struct coord *c, const char *why)
{
	struct leader	*l = c->leader;

	log_warnx("%s: %s", __func__, why);
	l->taking = 0;
	l->take_ms = 0;
	event_del(l->take_bound);
	l->e->fence = 0;
	etcd_resign(l->e);
	leader_campaign(c);
}

/*
 * Reads who leads from the leader key's value; a new one known: the hellos
 * held for it are answered.
 */
static void
leader_learn(struct coord *c, const char *value)
{
	struct leader	*l = c->leader;
	json_t		*j;
	const char	*agent, *http;
	int		 changed, serving;

	if ((j = json_loads(value, 0, NULL)) == NULL)
		return;
	agent = json_string_value(json_object_get(j, "agent"));
	http = json_string_value(json_object_get(j, "http"));
	/* A leader that does not say (of before) serves once it leads. */
	serving = !json_is_false(json_object_get(j, "serving"));
	changed = agent != NULL && strcmp(agent, l->agent) != 0;
	if (changed)
		log_info("leader: %s (%s)%s", agent, http != NULL ? http : "?",
		    serving ? "" : ", loading its state");
	changed |= serving && !l->serving;
	l->serving = serving;
	snprintf(l->agent, sizeof(l->agent), "%s", agent != NULL ? agent : "");
	snprintf(l->http, sizeof(l->http), "%s", http != NULL ? http : "");
	json_decref(j);
	if (changed && serving && l->agent[0] != '\0')
		leader_hold_release(c, 0);
}

/*
 * Returns how long one keepalive may take: half the lease's TTL.  A busy
 * etcd (big txns in flight) answers a keepalive late, not never; given
 * less (the client's 2 s over all endpoints, the probe's 250 ms once etcd
 * was called down), the leader gave up on answers on the way and lost a
 * lease it was keeping.
 */
static long
leader_keepalive_ms(const struct coord *c)
{
	return ((long)c->conf.etcd_lease_ttl * 1000 / 2);
}

static void	leader_watch_start(struct coord *, int64_t);

/* What the watch of the leader key says. */
static void
leader_watched(void *arg, int type, const char *key, const char *value,
    size_t len, const json_t *kv)
{
	struct coord	*c = arg;
	struct leader	*l = c->leader;

	(void)key;
	(void)len;
	(void)kv;
	switch (type) {
	case ETCD_WATCH_CREATED:
		l->watching = 1;
		log_debug("%s: watching %s", __func__, l->e->leader_key);
		break;
	case ETCD_WATCH_PUT:
		leader_learn(c, value);
		break;
	case ETCD_WATCH_DELETE:
		if (l->role == ROLE_LEADER)
			break;
		log_info("%s: the leader's key is gone: campaigning", __func__);
		l->agent[0] = l->http[0] = '\0';
		l->serving = 0;
		leader_campaign(c);
		break;
	case ETCD_WATCH_ENDED:
		/* Campaigns on the timer until a campaign starts another. */
		log_info("%s: the watch of %s ended: %s", __func__,
		    l->e->leader_key, l->e->error);
		leader_watch_stop(l);
		break;
	}
}

/* Watches the leader key from revision rev on, unless watching already. */
static void
leader_watch_start(struct coord *c, int64_t rev)
{
	struct leader	*l = c->leader;

	if (l->watch != NULL || l->role == ROLE_LEADER)
		return;
	if ((l->watch = etcd_watch_new(l->e, l->e->leader_key, NULL, rev,
	    leader_watched, c)) == NULL)
		log_warnx("%s: cannot watch %s: out of memory", __func__,
		    l->e->leader_key);
}

/* Stops watching: the timer campaigns instead. */
static void
leader_watch_stop(struct leader *l)
{
	etcd_watch_free(l->watch);
	l->watch = NULL;
	l->watching = 0;
}

/*
 * The answer to a watching follower's keepalive.  No answer: the watch's
 * member may be cut off from the others too, so the watch starts again
 * (after a campaign, on the endpoint that answers).
 */
static void
leader_follower_kept(void *arg, int rc, json_t *ans)
{
	struct coord	*c = arg;
	struct leader	*l = c->leader;

	l->keeping = 0;
	if (etcd_keepalive_result(l->e, rc, ans) == -1 &&
	    l->role != ROLE_LEADER) {
		log_debug("%s: %s", __func__, l->e->error);
		leader_watch_stop(l);
	}
}

/* A watching follower's turn: its lease kept alive, ready to campaign. */
static void
leader_follower_keep(struct coord *c)
{
	struct leader	*l = c->leader;

	if (l->keeping || l->campaigning)
		return;
	if (l->e->lease == 0) {
		leader_campaign(c);	/* grants one (and learns who leads) */
		return;
	}
	if (etcd_keepalive_async(l->e, leader_keepalive_ms(c),
	    leader_follower_kept, c) == 0)
		l->keeping = 1;
}

/* A campaign's answer: lead, or learn who does. */
static void
leader_campaigned(void *arg, int rc, const char *other)
{
	struct coord	*c = arg;
	struct leader	*l = c->leader;

	l->campaigning = 0;
	if (l->role == ROLE_LEADER)
		return;
	switch (rc) {
	case 1:
		l->again = 0;
		leader_take_begin(c);
		return;
	case 0:
		if (l->agent[0] == '\0' && !l->following)
			log_info("%s: following %s", __func__, other);
		l->following = 1;
		leader_learn(c, other);
		/* From right after what this answer saw: nothing missed. */
		leader_watch_start(c, l->e->camp_rev + 1);
		break;
	default:
		log_debug("%s: %s", __func__, l->e->error);
		break;
	}
	if (l->again) {
		/* The key went while this campaign was on its way. */
		l->again = 0;
		leader_campaign(c);
	}
}

/* The answer to a follower's keepalive: then its campaign. */
static void
leader_campaign_kept(void *arg, int rc, json_t *ans)
{
	struct coord	*c = arg;
	struct leader	*l = c->leader;

	/* A lease past its TTL is gone: the campaign grants a new one. */
	if (etcd_keepalive_result(l->e, rc, ans) == -1) {
		log_debug("%s: %s", __func__, l->e->error);
		l->campaigning = 0;
		return;
	}
	if (l->role == ROLE_LEADER || etcd_campaign_async(l->e,
	    c->conf.etcd_lease_ttl, l->me, leader_campaigned, c) == -1)
		l->campaigning = 0;
}

/*
 * One campaign, without waiting: the follower's lease kept alive (a
 * campaign's put needs one alive; gone, a new one is granted), then lead
 * if the key is free, else learn who leads.
 */
static void
leader_campaign(struct coord *c)
{
	struct leader	*l = c->leader;
	int		 rc;

	if (l->campaigning) {
		l->again = 1;
		return;
	}
	l->campaigning = 1;
	l->campaigns++;
	if (l->e->lease != 0)
		rc = etcd_keepalive_async(l->e, leader_keepalive_ms(c),
		    leader_campaign_kept, c);
	else
		rc = etcd_campaign_async(l->e, c->conf.etcd_lease_ttl, l->me,
		    leader_campaigned, c);
	if (rc == -1)
		l->campaigning = 0;
}

/*
 * The answer to the leader's keepalive.  Gone: steps down.  No answer: stays
 * (changes are refused and commits wait meanwhile).  A commit that failed
 * after the model took it: the state reloaded.
 */
static void
leader_renewed(void *arg, int rc, json_t *ans)
{
	struct coord	*c = arg;
	struct leader	*l = c->leader;
	int		 ttl;

	l->renewing = 0;
	if (l->renewed_lease != l->e->lease) {
		json_decref(ans);	/* a lease given up meanwhile */
		return;
	}
	ttl = etcd_keepalive_result(l->e, rc, ans);
	if (l->taking && ttl == 0)
		leader_take_abort(c, "the lease expired before serving");
	if (l->role != ROLE_LEADER)
		return;
	switch (ttl) {
	case 0:
		leader_step_down(c, "the lease expired");
		leader_campaign(c);	/* who leads now */
		return;
	case -1:
		if (!l->resync)
			log_warnx("%s: etcd does not answer: %s; changes fail "
			    "and events wait until it does", __func__,
			    l->e->error);
		l->resync = 1;
		return;
	}
	if (l->e->stale && store_inflight(c->store) == 0) {
		/*
		 * A commit failed after memory took what it changed: memory
		 * may be ahead of etcd.  Reloaded once a quorum read works (a
		 * keepalive may be answered without one) and nothing else is
		 * committing.
		 */
		switch (etcd_leader_check(l->e)) {
		case -1:
			l->resync = 1;
			return;
		case 0:
			leader_step_down(c, "another coordinator took the lead");
			leader_campaign(c);
			return;
		}
		log_info("%s: reloading the state (a commit failed)",
		    __func__);
		leader_take(c, 0);
	} else if (l->resync) {
		log_info("%s: etcd answers again", __func__);
		l->resync = 0;
	}
}

/* The leader's turn: keeps the lease alive, without waiting. */
static void
leader_renew(struct coord *c)
{
	struct leader	*l = c->leader;

	if (l->renewing)
		return;
	if (etcd_keepalive_async(l->e, leader_keepalive_ms(c), leader_renewed,
	    c) == -1) {
		leader_step_down(c, l->e->lease == 0 ? "the lease is gone" :
		    "cannot keep the lease alive: out of memory");
		leader_campaign(c);
		return;
	}
	l->renewing = 1;
	l->renewed_lease = l->e->lease;
}

/* The election timer: every eighth of the TTL (LEADER_TICKS_PER_TTL). */
static void
leader_tick(evutil_socket_t fd, short what, void *arg)
{
	struct coord	*c = arg;

	struct leader	*l = c->leader;
	uint64_t	 now = clock_mono_ms();

	(void)fd;
	(void)what;
	/* etcd away: asked once a LEADER_PROBE_MS, the loop serving between. */
	if (l->e->down && now - l->probed_ms < LEADER_PROBE_MS)
		return;
	l->probed_ms = now;
	if (l->role == ROLE_LEADER || l->taking)
		leader_renew(c);
	else if (l->watching)
		leader_follower_keep(c);
	else
		leader_campaign(c);
	leader_hold_release(c, 1);
	if (l->role != ROLE_LEADER)
		replica_follow(c);
}

/* A guarded write failed (store_etcd.c): step down, out of the store. */
static void
leader_deposed_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	leader_step_down(arg, "another coordinator took the lead");
	leader_campaign(arg);		/* who leads now */
}

/* The store's word that a guarded write failed: acted on next. */
static void
leader_deposed(void *arg)
{
	struct coord	*c = arg;

	event_active(c->leader->deposed, EV_TIMEOUT, 1);
}

/*
 * Opens the etcd client and store (--etcd-endpoints).  Returns the store, or
 * NULL with *why set.
 */
struct store *
leader_open(struct coord *c, const char **why)
{
	struct leader	*l;
	struct store	*s;

	if ((l = calloc(1, sizeof(*l))) == NULL) {
		*why = "out of memory";
		return (NULL);
	}
	c->leader = l;
	if ((c->conf.etcd_cert == NULL) != (c->conf.etcd_key == NULL)) {
		*why = "--etcd-cert and --etcd-key go together";
		return (NULL);
	}
	if ((l->e = etcd_new(c->conf.etcd_endpoints, c->conf.etcd_prefix,
	    why)) == NULL)
		return (NULL);
	/* Kept alive in long commits too, twice as often as it must. */
	l->e->renew_ms = (uint64_t)c->conf.etcd_lease_ttl * 1000 / 4;
	if (c->conf.etcd_max_txn_ops != 0)
		l->e->txn_ops = c->conf.etcd_max_txn_ops;
	l->e->cacert = c->conf.etcd_cacert;
	l->e->cert = c->conf.etcd_cert;
	l->e->key = c->conf.etcd_key;
	l->e->deposed = leader_deposed;
	l->e->deposed_arg = c;
	if (etcd_attach(l->e, c->base) == -1) {
		*why = "out of memory";
		return (NULL);
	}
	if ((s = store_open_etcd(l->e, why)) == NULL)
		return (NULL);
	if (replica_new(c, l->e, leader_copy_moved) == -1) {
		store_close(s);
		*why = "out of memory";
		return (NULL);
	}
	return (s);
}

/*
 * Writes scheme + the host of a listen address ("HOST:PORT", "[V6]:PORT")
 * and the port it got into buf: what the leader key names by default.
 * Returns -1 for a wildcard host (0.0.0.0, ::), which nobody can dial.
 */
static int
leader_default_addr(const char *listen, const char *scheme, int port,
    char *buf, size_t len)
{
	char	 host[256], lport[16];
	int	 v6;

	if (addr_split(listen, strlen(listen), host, sizeof(host), lport,
	    sizeof(lport)) != ADDR_OK || strcmp(host, "0.0.0.0") == 0 ||
	    strcmp(host, "::") == 0 || strcmp(host, "*") == 0)
		return (-1);
	v6 = strchr(host, ':') != NULL;
	if ((size_t)snprintf(buf, len, "%s%s%s%s:%d", scheme, v6 ? "[" : "",
	    host, v6 ? "]" : "", port) >= len)
		return (-1);
	return (0);
}

/*
 * Writes the leader key's value into buf: this coordinator's addresses, and
 * whether it serves yet (loaded its state).  Returns 0 or -1.
 */
static int
leader_value(struct coord *c, int serving, char *buf, size_t len)
{
	json_t	*me;
	char	*text;
	int	 rc = -1;

	me = json_pack("{s:s,s:s,s:b}", "agent", c->conf.advertise_agent,
	    "http", c->conf.advertise_http, "serving", serving);
	text = me != NULL ? json_dumps(me, JSON_COMPACT) : NULL;
	json_decref(me);
	if (text != NULL && strlen(text) < len) {
		snprintf(buf, len, "%s", text);
		rc = 0;
	}
	free(text);
	return (rc);
}

/*
 * Starts campaigning, once listening (the leader key names the ports): one
 * campaign now, then the timer.  Returns 0 or -1.
 */
int
leader_start(struct coord *c)
{
	struct leader	*l = c->leader;
	struct timeval	 tv;
	uint32_t	 ms = (uint32_t)c->conf.etcd_lease_ttl * 1000 /
			    LEADER_TICKS_PER_TTL;

	if (c->conf.advertise_agent == NULL) {
		if (leader_default_addr(c->conf.listen_addr, "",
		    c->agent_port, c->advertise_agent,
		    sizeof(c->advertise_agent)) == -1) {
			log_warnx("--listen %s: no address agents can dial: "
			    "give --advertise-agent", c->conf.listen_addr);
			return (-1);
		}
		c->conf.advertise_agent = c->advertise_agent;
	}
	if (c->conf.advertise_http == NULL) {
		if (leader_default_addr(c->conf.http_addr,
		    c->http_tls.ctx != NULL ? "https://" : "http://",
		    c->http_port, c->advertise_http,
		    sizeof(c->advertise_http)) == -1) {
			log_warnx("--http %s: no address clients can reach: "
			    "give --advertise-http", c->conf.http_addr);
			return (-1);
		}
		c->conf.advertise_http = c->advertise_http;
	}
	if (leader_value(c, 0, l->me, sizeof(l->me)) == -1 ||
	    leader_value(c, 1, l->me_serving, sizeof(l->me_serving)) == -1)
		return (-1);
	l->timer = event_new(c->base, -1, EV_PERSIST, leader_tick, c);
	l->deposed = event_new(c->base, -1, 0, leader_deposed_cb, c);
	l->take_bound = evtimer_new(c->base, leader_take_bound_cb, c);
	if (l->timer == NULL || l->deposed == NULL || l->take_bound == NULL)
		return (-1);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	event_add(l->timer, &tv);
	log_info("%s: etcd %s, prefix %s, lease %d s; advertising %s and %s",
	    __func__, c->conf.etcd_endpoints, c->conf.etcd_prefix,
	    c->conf.etcd_lease_ttl, c->conf.advertise_agent,
	    c->conf.advertise_http);
	leader_campaign(c);
	return (0);
}

/* Returns the leader's admin URL, "" while none is known. */
const char *
leader_http(const struct coord *c)
{
	return (leader_is_etcd(c) ? c->leader->http : "");
}

/*
 * Returns how long a follower holds a hello: twice the lease's TTL and 5 s,
 * by when a dead leader's key is gone (etcd checks leases every 500 ms) and
 * the next leader has loaded the state and serves (a few seconds at 100,000
 * ranks).  The agent is sent heartbeats meanwhile.
 */
static uint64_t
leader_hold_ms(const struct coord *c)
{
	return ((2 * (uint64_t)c->conf.etcd_lease_ttl + 5) * 1000);
}

/*
 * A follower's answer to an agent's hello: held (returns 1) if the agent
 * says it lost a leader (failed, HOST:PORT: an agent that says so takes
 * heartbeats before its welcome) and this follower names that one still,
 * or none; else 0 (ERROR_NOT_LEADER at once, naming the leader).
 */
int
leader_hold(struct coord *c, struct conn *conn, const char *failed)
{
	struct leader	*l = c->leader;

	if (!leader_is_follower(c) || failed == NULL || failed[0] == '\0')
		return (0);
	if (l->agent[0] != '\0' && l->serving && !addr_same(failed, l->agent))
		return (0);
	if (conn->held_ms == 0) {
		l->held++;
		l->held_total++;
	}
	conn->held_ms = clock_mono_ms();
	log_debug("%s: %s: hello held until a leader other than \"%s\" is "
	    "known", __func__, conn->peer, l->agent);
	return (1);
}

/*
 * Answers the held hellos (expired: only those held leader_hold_ms()) with
 * ERROR_NOT_LEADER naming the leader known now.
 */
static void
leader_hold_release(struct coord *c, int expired)
{
	struct leader	*l = c->leader;
	struct conn	*conn, *next;
	uint64_t	 now = clock_mono_ms(), limit = leader_hold_ms(c);
	const char	*why;

	if (l->held == 0)
		return;
	if (l->role == ROLE_LEADER)
		why = "this coordinator leads now: say hello again";
	else if (l->agent[0] != '\0')
		why = "this coordinator is a follower";
	else
		why = "this coordinator is a follower and knows no leader yet";
	for (conn = TAILQ_FIRST(&c->conns); conn != NULL; conn = next) {
		next = TAILQ_NEXT(conn, entry);
		if (conn->held_ms == 0 || conn->state != CONN_AWAIT_HELLO ||
		    (expired && now - conn->held_ms < limit))
			continue;
		conn->held_ms = 0;
		l->held--;
		/* Held here, and this one leads now: welcomed at once. */
		if (l->role == ROLE_LEADER && c->hooks != NULL &&
		    c->hooks->hello_again != NULL)
			l->held_welcomed += (uint64_t)c->hooks->hello_again(conn,
			    why);
		else
			leader_agent_close(c, conn, why);
	}
}

/* A held connection is gone (closed): no longer counted. */
void
leader_hold_forget(struct coord *c, struct conn *conn)
{
	if (conn->held_ms != 0 && leader_is_etcd(c) && c->leader->held > 0)
		c->leader->held--;
	conn->held_ms = 0;
}

/*
 * The model holds what the store may not (a commit failed after the model
 * took it): the leader reloads the state from etcd once etcd answers.
 */
void
leader_model_unsure(struct coord *c)
{
	if (leader_is_etcd(c))
		c->leader->e->stale = 1;
}

/* Renders the leadership's metrics. */
void
leader_metrics(struct coord *c, struct evbuffer *buf)
{
	struct leader	*l = c->leader;

	evbuffer_add_printf(buf,
	    "# HELP dynprof_coordinator_leader 1 if this coordinator leads\n"
	    "# TYPE dynprof_coordinator_leader gauge\n"
	    "dynprof_coordinator_leader %d\n", !leader_is_follower(c));
	if (l == NULL)
		return;
	evbuffer_add_printf(buf,
	    "# HELP dynprof_coordinator_elections_total times it took the lead\n"
	    "# TYPE dynprof_coordinator_elections_total counter\n"
	    "dynprof_coordinator_elections_total %llu\n"
	    "# HELP dynprof_coordinator_stepdowns_total times it lost the lead\n"
	    "# TYPE dynprof_coordinator_stepdowns_total counter\n"
	    "dynprof_coordinator_stepdowns_total %llu\n"
	    "# HELP dynprof_coordinator_etcd_failures_total etcd requests "
	    "that failed\n"
	    "# TYPE dynprof_coordinator_etcd_failures_total counter\n"
	    "dynprof_coordinator_etcd_failures_total %llu\n"
	    "# HELP dynprof_coordinator_campaigns_total campaigns for the "
	    "leader key sent\n"
	    "# TYPE dynprof_coordinator_campaigns_total counter\n"
	    "dynprof_coordinator_campaigns_total %llu\n"
	    "# HELP dynprof_coordinator_leader_watched 1 if a follower "
	    "watches the leader key\n"
	    "# TYPE dynprof_coordinator_leader_watched gauge\n"
	    "dynprof_coordinator_leader_watched %d\n"
	    "# HELP dynprof_coordinator_hellos_held agents' hellos a follower "
	    "holds until the next leader is known\n"
	    "# TYPE dynprof_coordinator_hellos_held gauge\n"
	    "dynprof_coordinator_hellos_held %llu\n"
	    "# HELP dynprof_coordinator_hellos_held_total hellos held\n"
	    "# TYPE dynprof_coordinator_hellos_held_total counter\n"
	    "dynprof_coordinator_hellos_held_total %llu\n"
	    "# HELP dynprof_coordinator_hellos_held_welcomed_total hellos "
	    "held while following, answered as hellos once it led\n"
	    "# TYPE dynprof_coordinator_hellos_held_welcomed_total counter\n"
	    "dynprof_coordinator_hellos_held_welcomed_total %llu\n"
	    "# HELP dynprof_coordinator_takeovers_total leads taken, by how "
	    "the model came: a follower's copy that had caught up, or a load "
	    "from etcd\n"
	    "# TYPE dynprof_coordinator_takeovers_total counter\n"
	    "dynprof_coordinator_takeovers_total{model=\"copy\"} %llu\n"
	    "dynprof_coordinator_takeovers_total{model=\"load\"} %llu\n"
	    "# HELP dynprof_coordinator_takeover_seconds from the campaign "
	    "won to serving, the last lead taken\n"
	    "# TYPE dynprof_coordinator_takeover_seconds gauge\n"
	    "dynprof_coordinator_takeover_seconds %.3f\n",
	    (unsigned long long)l->elections, (unsigned long long)l->stepdowns,
	    (unsigned long long)l->e->failures,
	    (unsigned long long)l->campaigns, l->watching,
	    (unsigned long long)l->held, (unsigned long long)l->held_total,
	    (unsigned long long)l->held_welcomed,
	    (unsigned long long)l->takes_copy,
	    (unsigned long long)l->takes_load, l->take_ms_last / 1e3);
	replica_metrics(c, buf);
}

/*
 * Stops: a leader gives up its lease, so that a follower takes the lead
 * at its next campaign rather than after the TTL.  After store_close().
 */
void
leader_stop(struct coord *c)
{
	struct leader	*l = c->leader;

	if (l == NULL)
		return;
	leader_watch_stop(l);
	replica_free(c);
	if (l->e != NULL && l->e->lease != 0)
		etcd_resign(l->e);
	if (l->timer != NULL)
		event_free(l->timer);
	if (l->deposed != NULL)
		event_free(l->deposed);
	if (l->take_bound != NULL)
		event_free(l->take_bound);
	etcd_free(l->e);
	free(l);
	c->leader = NULL;
}
