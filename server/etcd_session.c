/*
 * A coordinator's session in etcd: a lease, and the campaign for the leader
 * key on it.  The key is created only if absent (a txn comparing its create
 * revision with 0), with the lease, so it goes when the leader stops keeping
 * the lease alive; its create revision is the leader's fencing token, which
 * every write of store_etcd.c compares.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "etcd.h"
#include "log.h"

/* Grants a lease of ttl seconds, ours from now.  Returns ETCD_OK or not. */
static int
etcd_lease_grant(struct etcd *e, int ttl)
{
	json_t	*ans;
	int	 rc;

	rc = etcd_call(e, "/v3/lease/grant", json_pack("{s:i}", "TTL", ttl),
	    &ans);
	if (rc != ETCD_OK)
		return (rc);
	e->lease = etcd_int(ans, "ID");
	json_decref(ans);
	if (e->lease == 0) {
		snprintf(e->error, sizeof(e->error), "lease grant: no ID");
		return (ETCD_REFUSED);
	}
	return (ETCD_OK);
}

/* Returns the txn that creates the leader key with value on the lease,
 * only if absent (its value read back otherwise). */
static json_t *
etcd_campaign_body(const struct etcd *e, const char *value)
{
	json_t	*body, *key;

	key = etcd_b64(e->leader_key, strlen(e->leader_key));
	body = json_pack("{s:[{s:s,s:O,s:s,s:s}],"
	    "s:[{s:{s:O,s:o,s:o}}],s:[{s:{s:O}}]}",
	    "compare", "target", "CREATE", "key", key, "create_revision", "0",
	    "result", "EQUAL",
	    "success", "request_put", "key", key, "value",
	    etcd_b64(value, strlen(value)), "lease", etcd_int_json(e->lease),
	    "failure", "request_range", "key", key);
	json_decref(key);
	return (body);
}

/*
 * Reads a campaign's answer (taken).  Returns 1 if this session leads
 * (e->fence set), 0 if another does (its value copied into leader).
 */
static int
etcd_campaign_result(struct etcd *e, json_t *ans, char *leader, size_t len)
{
	json_t		*kv;
	char		*v;

	e->down = 0;
	e->camp_rev = etcd_int(json_object_get(ans, "header"), "revision");
	if (json_is_true(json_object_get(ans, "succeeded"))) {
		/* The put's revision is the key's create revision. */
		e->fence = etcd_int(json_object_get(ans, "header"), "revision");
		json_decref(ans);
		return (1);
	}
	kv = json_array_get(json_object_get(json_object_get(json_array_get(
	    json_object_get(ans, "responses"), 0), "response_range"), "kvs"),
	    0);
	if (kv != NULL && etcd_int(kv, "lease") == e->lease) {
		/* Ours: a campaign whose answer was lost, or the lead kept. */
		e->fence = etcd_int(kv, "create_revision");
		json_decref(ans);
		return (1);
	}
	e->fence = 0;
	v = kv != NULL ? etcd_unb64(json_object_get(kv, "value"), NULL) : NULL;
	snprintf(leader, len, "%s", v != NULL ? v : "");
	free(v);
	json_decref(ans);
	return (0);
}

/*
 * Campaigns for the leader key with value (JSON text), granting a lease of
 * ttl seconds first if the session has none, blocking.  Returns 1 if this
 * session leads (e->fence set), 0 if another does (its value copied into
 * leader), -1 if etcd did not answer (e->error says why).
 */
int
etcd_campaign(struct etcd *e, int ttl, const char *value, char *leader,
    size_t len)
{
	json_t		*ans;
	int		 rc;

	if (e->lease == 0 && (rc = etcd_lease_grant(e, ttl)) != ETCD_OK)
		goto fail;
	if ((rc = etcd_call(e, "/v3/kv/txn", etcd_campaign_body(e, value),
	    &ans)) != ETCD_OK)
		goto fail;
	return (etcd_campaign_result(e, ans, leader, len));
fail:
	if (rc == ETCD_UNAVAILABLE)
		e->down = 1;
	return (-1);
}

/* Ends an asynchronous campaign: its caller told rc and who leads. */
static void
etcd_campaign_end(struct etcd *e, int rc, const char *leader)
{
	etcd_campaign_fn	 done = e->camp_done;

	e->camp_done = NULL;
	done(e->camp_arg, rc, leader);
}

/* The answer to a campaign's txn. */
static void
etcd_campaign_answered(void *arg, int rc, json_t *ans)
{
	struct etcd	*e = arg;
	char		 leader[sizeof(e->camp_value)];

	if (rc != ETCD_OK) {
		json_decref(ans);
		etcd_campaign_end(e, -1, "");
		return;
	}
	rc = etcd_campaign_result(e, ans, leader, sizeof(leader));
	etcd_campaign_end(e, rc, leader);
}

/* The answer to a campaign's lease grant: then its txn. */
static void
etcd_campaign_granted(void *arg, int rc, json_t *ans)
{
	struct etcd	*e = arg;

	if (rc == ETCD_OK && (e->lease = etcd_int(ans, "ID")) == 0) {
		snprintf(e->error, sizeof(e->error), "lease grant: no ID");
		rc = ETCD_REFUSED;
	}
	json_decref(ans);
	if (rc != ETCD_OK || etcd_call_async(e, "/v3/kv/txn",
	    etcd_campaign_body(e, e->camp_value), 0, etcd_campaign_answered,
	    e) == -1)
		etcd_campaign_end(e, -1, "");
}

/*
 * Campaigns as etcd_campaign(), without waiting (one at a time): done(arg,
 * 1, NULL) if this session leads, (arg, 0, leader's value) if another
 * does, (arg, -1, "") if etcd did not answer.  Returns 0, or -1 (one is in
 * flight, value too long, out of memory: done not called).
 */
int
etcd_campaign_async(struct etcd *e, int ttl, const char *value,
    etcd_campaign_fn done, void *arg)
{
	int	 rc;

	if (e->camp_done != NULL || strlen(value) >= sizeof(e->camp_value))
		return (-1);
	snprintf(e->camp_value, sizeof(e->camp_value), "%s", value);
	e->camp_done = done;
	e->camp_arg = arg;
	if (e->lease == 0)
		rc = etcd_call_async(e, "/v3/lease/grant", json_pack("{s:i}",
		    "TTL", ttl), 0, etcd_campaign_granted, e);
	else
		rc = etcd_call_async(e, "/v3/kv/txn",
		    etcd_campaign_body(e, value), 0, etcd_campaign_answered, e);
	if (rc == -1)
		e->camp_done = NULL;
	return (rc);
}

/*
 * Rewrites the leader key's value (JSON text) while this session leads: a
 * txn comparing the key's create revision with e->fence, the put on the
 * lease.  Without waiting: done(arg, rc, answer) as etcd_call_async() says
 * (the answer's "succeeded" false if another leads).  Returns 0, or -1
 * (done not called).
 */
int
etcd_leader_update_async(struct etcd *e, const char *value,
    etcd_done_fn done, void *arg)
{
	json_t	*key, *body;

	if (e->fence == 0 || e->lease == 0)
		return (-1);
	key = etcd_b64(e->leader_key, strlen(e->leader_key));
	body = json_pack("{s:[{s:s,s:O,s:o,s:s}],s:[{s:{s:O,s:o,s:o}}]}",
	    "compare", "target", "CREATE", "key", key, "create_revision",
	    etcd_int_json(e->fence), "result", "EQUAL",
	    "success", "request_put", "key", key, "value",
	    etcd_b64(value, strlen(value)), "lease", etcd_int_json(e->lease));
	json_decref(key);
	return (etcd_call_async(e, "/v3/kv/txn", body, 0, done, arg));
}

/*
 * Takes a keepalive's outcome (rc, the answer taken).  Returns the lease's
 * TTL left in seconds, 0 if the lease is gone (expired or revoked: the
 * lead, if it was ours, is lost and e->fence cleared), -1 if etcd did not
 * answer.  An answer about a lease given up since it was asked (a
 * campaign granted another meanwhile) returns 0 and leaves the session's
 * lease and fence alone: a follower's keepalive of its expired lease,
 * answered after its campaign won on a new one, made the new leader drop
 * the lease it leads with and step down at its next keepalive.
 */
int
etcd_keepalive_result(struct etcd *e, int rc, json_t *ans)
{
	int64_t	 ttl, id;

	if (rc != ETCD_OK) {
		if (rc == ETCD_UNAVAILABLE)
			e->down = 1;
		json_decref(ans);
		return (-1);
	}
	/* A lease past its TTL answers without one. */
	ttl = etcd_int(json_object_get(ans, "result"), "TTL");
	id = etcd_int(json_object_get(ans, "result"), "ID");
	json_decref(ans);
	e->down = 0;
	if (id != 0 && id != e->lease)
		return (0);
	e->renewed_ms = clock_mono_ns() / 1000000;
	if (ttl <= 0) {
		e->lease = 0;
		e->fence = 0;
		return (0);
	}
	return ((int)ttl);
}

/* Returns a keepalive request of the session's lease. */
static json_t *
etcd_keepalive_body(const struct etcd *e)
{
	return (json_pack("{s:o}", "ID", etcd_int_json(e->lease)));
}

/*
 * Keeps the session's lease alive, blocking.  Returns as
 * etcd_keepalive_result().
 */
int
etcd_keepalive(struct etcd *e)
{
	json_t	*ans;
	int	 rc;

	if (e->lease == 0)
		return (0);
	rc = etcd_call(e, "/v3/lease/keepalive", etcd_keepalive_body(e), &ans);
	return (etcd_keepalive_result(e, rc, ans));
}

/*
 * Keeps the session's lease alive, blocking, if renew_ms passed since its
 * last keepalive: a long read or commit (a new leader loading a big state,
 * a commit of many txns) holds the loop, and the keepalive timer, for as
 * long as it takes; past the TTL, the lead would be lost.
 */
void
etcd_keepalive_due(struct etcd *e)
{
	if (e->renew_ms != 0 && e->lease != 0 && clock_mono_ns() / 1000000 -
	    e->renewed_ms >= e->renew_ms)
		etcd_keepalive(e);
}

/*
 * Keeps the session's lease alive without waiting, asking one endpoint for
 * at most timeout_ms (the next one next time): done(arg, rc, ans) as
 * etcd_call_async() says, to hand to etcd_keepalive_result().  Returns 0,
 * or -1 (done not called).
 */
int
etcd_keepalive_async(struct etcd *e, long timeout_ms, etcd_done_fn done,
    void *arg)
{
	if (e->lease == 0)
		return (-1);
	return (etcd_call_async(e, "/v3/lease/keepalive",
	    etcd_keepalive_body(e), timeout_ms, done, arg));
}

/*
 * Reads the leader key (a linearizable read: it needs etcd's quorum).
 * Returns 1 if this session still leads (the key's create revision is
 * e->fence), 0 if not (e->fence cleared), -1 if etcd did not answer.
 */
int
etcd_leader_check(struct etcd *e)
{
	json_t	*ans, *kv;
	int64_t	 created;
	int	 rc;

	rc = etcd_call(e, "/v3/kv/range", json_pack("{s:o}", "key",
	    etcd_b64(e->leader_key, strlen(e->leader_key))), &ans);
	if (rc != ETCD_OK) {
		if (rc == ETCD_UNAVAILABLE)
			e->down = 1;
		return (-1);
	}
	kv = json_array_get(json_object_get(ans, "kvs"), 0);
	created = kv != NULL ? etcd_int(kv, "create_revision") : 0;
	json_decref(ans);
	e->down = 0;
	if (e->fence == 0 || created != e->fence) {
		e->fence = 0;
		return (0);
	}
	return (1);
}

/* Revokes the session's lease (its leader key goes with it), best effort. */
void
etcd_resign(struct etcd *e)
{
	json_t	*ans;

	if (e->lease == 0)
		return;
	if (etcd_call(e, "/v3/lease/revoke", json_pack("{s:o}", "ID",
	    etcd_int_json(e->lease)), &ans) == ETCD_OK)
		json_decref(ans);
	else
		log_warnx("%s: lease %lld: %s", __func__,
		    (long long)e->lease, e->error);
	e->lease = 0;
	e->fence = 0;
}
