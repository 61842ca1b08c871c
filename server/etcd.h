/*
 * A small client of etcd v3's JSON gateway (/v3/kv/range, /v3/kv/txn,
 * /v3/lease/grant and the rest) to a list of endpoints tried in turn.  Keys
 * and values travel base64 as the gateway wants them.
 *
 * Two ways to call: etcd_call_async() on the coordinator's loop (libcurl's
 * multi interface driven by libevent: the loop never waits for etcd), and
 * etcd_call(), blocking, one easy handle, for what happens while the
 * coordinator has nothing else to serve (loading the state on taking the
 * lead, resigning) and for tools and tests without a loop.
 */

#ifndef DYNPROF_ETCD_H
#define DYNPROF_ETCD_H

#include <stddef.h>
#include <stdint.h>

struct event;
struct event_base;
struct json_t;
struct etcd_req;

/* What an asynchronous request's caller gets: its arg, an enum etcd_result
 * and the answer (ETCD_OK only; the callee frees it). */
typedef void	(*etcd_done_fn)(void *, int, struct json_t *);
/* What an asynchronous campaign's caller gets: its arg, 1 (this session
 * leads), 0 (another does: its value) or -1 (no answer). */
typedef void	(*etcd_campaign_fn)(void *, int, const char *);
/* What a stream's caller gets as it arrives: its arg and the bytes; it
 * returns 0, or -1 to end the stream. */
typedef int	(*etcd_chunk_fn)(void *, const char *, size_t);

#define ETCD_ENDPOINTS_MAX	16	/* --etcd-endpoints */
#define ETCD_PREFIX_MAX		128	/* --etcd-prefix, bytes */
#define ETCD_KEY_MAX		512	/* a whole key, prefix included */
/* One request, over all the endpoints it may try (each gets its share, at
 * least ETCD_TIMEOUT_MIN_MS). */
#define ETCD_TIMEOUT_MS		2000
#define ETCD_TIMEOUT_MIN_MS	250
/* While etcd does not answer (down), a request asks one endpoint (the
 * next each time) for this long: the loop serves what it knows between. */
#define ETCD_PROBE_TIMEOUT_MS	250
/* A commit's txn is given this long by one endpoint, and this much more
 * at ETCD_TXN_BYTES_MAX (a busy etcd takes long to apply a big one); past
 * it, the next endpoint (one stuck in an election holds a proposal for
 * seconds). */
#define ETCD_TXN_TIMEOUT_MS	1000
#define ETCD_TXN_TIMEOUT_BIG_MS	4000
/* A commit's txn nobody answered is sent again after this. */
#define ETCD_RETRY_MS		200
#define ETCD_RESPONSE_MAX	(64 * 1024 * 1024)	/* bytes of one answer */
/* etcd's own default --max-txn-ops: more operations in one txn are
 * refused.  A guarded put (a nested txn) counts as two.  --etcd-max-txn-ops
 * follows an etcd run with more, up to ETCD_TXN_OPS_LIMIT. */
#define ETCD_TXN_OPS_MAX	128
#define ETCD_TXN_OPS_LIMIT	65536
/* Under etcd's default --max-request-bytes (1.5 MiB), with room for the
 * base64 and JSON around the values. */
#define ETCD_TXN_BYTES_MAX	(1024 * 1024)
/* An event batch is committed once it holds this many txns' worth of
 * operations; its txns go out without the loop waiting for them. */
#define ETCD_BATCH_TXNS		4
#define ETCD_RANGE_PAGE		1000	/* keys per range request */
#define ETCD_RANGE_PAGES_MAX	100000	/* pages of one range read */

enum etcd_result {
	ETCD_OK = 0,
	ETCD_UNAVAILABLE = -1,		/* no answer, or no quorum: retry */
	ETCD_REFUSED = -2,		/* a definite no (bad request) */
};

struct etcd {
	char		*endpoints[ETCD_ENDPOINTS_MAX];
	size_t		 nendpoints;
	size_t		 cur;		/* the endpoint that answered last */
	void		*curl;		/* CURL *, the blocking calls' */
	void		*multi;		/* CURLM *, on base's loop */
	struct event_base *base;
	struct event	*timer;		/* curl's timeout */
	struct etcd_req	*reqs;		/* in flight */
	size_t		 inflight;
	char		 prefix[ETCD_PREFIX_MAX];
	int		 timeout_ms;
	int		 txn_ops;	/* operations per txn, ETCD_TXN_OPS_MAX */
	const char	*cacert;	/* https: the CA, NULL the system's */
	const char	*cert;		/* https: a client certificate, or NULL */
	const char	*key;
	char		 error[256];	/* why the last call failed */
	uint64_t	 calls;
	uint64_t	 failures;
	/*
	 * The session leader.c keeps and store_etcd.c writes under: every
	 * write is a txn that compares the leader key's create revision with
	 * fence, so a coordinator that lost the lead can never write.
	 */
	char		 leader_key[ETCD_KEY_MAX];
	int64_t		 lease;		/* ours, 0: none */
	uint64_t	 renewed_ms;	/* monotonic: its last keepalive */
	uint64_t	 renew_ms;	/* keepalive in long commits, 0: no */
	int64_t		 fence;		/* 0: not the leader, no write */
	int		 down;		/* no answer: writes fail fast */
	int		 unsure;	/* a request may have landed unanswered */
	int		 last_unsure;	/* the last call's may have */
	int		 stale;		/* the model may hold what etcd does
					 * not (a commit failed): reload */
	/* The campaign in flight (etcd_campaign_async()), or none. */
	char		 camp_value[1024];
	etcd_campaign_fn camp_done;
	void		*camp_arg;
	int64_t		 camp_rev;	/* the revision its answer reflects */
	void		(*deposed)(void *);	/* a guarded write failed */
	void		*deposed_arg;
	/* Not NULL: etcd_range() reads these kvs (in key order, read
	 * before at range_cache_rev) instead of asking etcd. */
	const struct json_t *range_cache;
	int64_t		 range_cache_rev;
};

/* etcd.c */
struct etcd	*etcd_new(const char *, const char *, const char **);
void		 etcd_free(struct etcd *);
int		 etcd_check_endpoints(const char *, const char **);
int		 etcd_check_prefix(const char *, const char **);
int		 etcd_call(struct etcd *, const char *, struct json_t *,
		    struct json_t **);
int		 etcd_attach(struct etcd *, struct event_base *);
int		 etcd_call_async(struct etcd *, const char *, struct json_t *,
		    long, etcd_done_fn, void *);
void		 etcd_cancel_all(struct etcd *);
struct etcd_req	*etcd_stream_async(struct etcd *, size_t, const char *,
		    struct json_t *, etcd_chunk_fn, etcd_done_fn, void *);
void		 etcd_stream_cancel(struct etcd_req *);
int		 etcd_key(const struct etcd *, char *, size_t, const char *,
		    ...) __attribute__((format(printf, 4, 5)));
struct json_t	*etcd_b64(const void *, size_t);
char		*etcd_unb64(const struct json_t *, size_t *);
int64_t		 etcd_int(const struct json_t *, const char *);
struct json_t	*etcd_int_json(int64_t);
void		 etcd_range_end(const char *, char *, size_t);
int		 etcd_range(struct etcd *, const char *, int64_t *,
		    int (*)(void *, const char *, const char *, size_t,
		    const struct json_t *), void *);

/* etcd_watch.c: what a watcher is told (etcd_watch_fn's type). */
enum etcd_watch_type {
	ETCD_WATCH_PUT,			/* key, value, kv */
	ETCD_WATCH_DELETE,		/* key, kv */
	ETCD_WATCH_CREATED,		/* etcd has the watch: events follow */
	ETCD_WATCH_ENDED,		/* the stream is gone: make another */
};
struct etcd_watch;
typedef void	(*etcd_watch_fn)(void *, int, const char *, const char *,
		    size_t, const struct json_t *);
struct etcd_watch *etcd_watch_new(struct etcd *, const char *, const char *,
		    int64_t, etcd_watch_fn, void *);
int64_t		 etcd_watch_revision(const struct etcd_watch *);
void		 etcd_watch_free(struct etcd_watch *);

/* etcd_session.c */
int		 etcd_campaign(struct etcd *, int, const char *, char *,
		    size_t);
int		 etcd_campaign_async(struct etcd *, int, const char *,
		    etcd_campaign_fn, void *);
int		 etcd_keepalive(struct etcd *);
void		 etcd_keepalive_due(struct etcd *);
int		 etcd_keepalive_async(struct etcd *, long, etcd_done_fn,
		    void *);
int		 etcd_keepalive_result(struct etcd *, int, struct json_t *);
int		 etcd_leader_check(struct etcd *);
int		 etcd_leader_update_async(struct etcd *, const char *,
		    etcd_done_fn, void *);
void		 etcd_resign(struct etcd *);

#endif /* DYNPROF_ETCD_H */
