/* Leadership over etcd: several coordinators, one of them leading. */

#ifndef DYNPROF_LEADER_H
#define DYNPROF_LEADER_H

#include "state.h"

#define LEADER_TTL_DEFAULT	5	/* --etcd-lease-ttl, seconds */
#define LEADER_TTL_MIN		2	/* etcd's own minimum */
#define LEADER_TTL_MAX		300
#define LEADER_TICKS_PER_TTL	8	/* keepalives per TTL (and campaigns
					 * while a follower has no watch) */
#define LEADER_PROBE_MS		1000	/* etcd away: asked once a second */
/* A lead won waits this long (seconds, of TTL t) for the follower's copy to
 * catch up, then loads the state instead. */
#define LEADER_TAKE_S(t)	((t) * 2 > 5 ? (t) * 2 : 5)

/* The etcd flags' getopt values, parsed by leader_parse_flag(). */
enum {
	OPT_ETCD_ENDPOINTS = 300,
	OPT_ETCD_PREFIX,
	OPT_ETCD_LEASE_TTL,
	OPT_ADVERTISE_AGENT,
	OPT_ADVERTISE_HTTP,
	OPT_ETCD_CACERT,
	OPT_ETCD_CERT,
	OPT_ETCD_KEY,
	OPT_ETCD_MAX_TXN_OPS,
	OPT_ETCD_LAST = OPT_ETCD_MAX_TXN_OPS
};
/* Their rows of coord_parse_args()'s getopt table. */
#define LEADER_LONGOPTS							\
	{ "etcd-endpoints", required_argument, NULL, OPT_ETCD_ENDPOINTS }, \
	{ "etcd-prefix", required_argument, NULL, OPT_ETCD_PREFIX },	\
	{ "etcd-lease-ttl", required_argument, NULL, OPT_ETCD_LEASE_TTL }, \
	{ "advertise-agent", required_argument, NULL, OPT_ADVERTISE_AGENT }, \
	{ "advertise-http", required_argument, NULL, OPT_ADVERTISE_HTTP }, \
	{ "etcd-cacert", required_argument, NULL, OPT_ETCD_CACERT },	\
	{ "etcd-cert", required_argument, NULL, OPT_ETCD_CERT },	\
	{ "etcd-key", required_argument, NULL, OPT_ETCD_KEY },		\
	{ "etcd-max-txn-ops", required_argument, NULL, OPT_ETCD_MAX_TXN_OPS }

/* leader.c */
void	 leader_usage(FILE *);
int	 leader_parse_flag(struct coord_config *, int, const char *,
	    const char *);
struct store	*leader_open(struct coord *, const char **);
int	 leader_start(struct coord *);
void	 leader_stop(struct coord *);
int	 leader_is_etcd(const struct coord *);
int	 leader_is_follower(const struct coord *);
const char	*leader_role(const struct coord *);
const char	*leader_agent(const struct coord *);
const char	*leader_http(const struct coord *);
void	 leader_metrics(struct coord *, struct evbuffer *);
void	 leader_model_unsure(struct coord *);
int	 leader_hold(struct coord *, struct conn *, const char *);
void	 leader_hold_forget(struct coord *, struct conn *);
void	 leader_copy_moved(struct coord *);

#endif /* DYNPROF_LEADER_H */
