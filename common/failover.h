/*
 * Which coordinator an agent dials next, and when: the one rule the agent
 * (agent/upstream.c) and the load generator (bench/loadgen_failover.c)
 * follow, so that what the benchmark measures is what agents do.
 */

#ifndef DYNPROF_FAILOVER_H
#define DYNPROF_FAILOVER_H

#include <stdint.h>

#define FAILOVER_ADDRS_MAX	8	/* --coordinator A,B,... */
#define FAILOVER_BACKOFF_MIN_MS	100
#define FAILOVER_BACKOFF_MAX_MS	30000
/* The most a round's backoff grows while followers answer: a leader is
 * being elected (within a lease). */
#define FAILOVER_FOLLOWER_BACKOFF_MS 500
/* After losing a welcomed link, the first attempt within this: the
 * agents of a cluster do not all dial the same follower at once. */
#define FAILOVER_SPREAD_MS	500
/* Going to the leader a follower named: within this. */
#define FAILOVER_FOLLOW_JITTER_MS 250

/* One coordinator address, split once. */
struct failover_addr {
	char		 host[256];
	char		 port[16];
	char		 text[280];		/* as the operator wrote it */
};

/* What failover_not_leader() makes of a follower's answer. */
enum failover_named {
	FAILOVER_FOLLOW,		/* the leader named: go there next */
	FAILOVER_NO_LEADER,		/* none named: the next address */
	FAILOVER_NOT_AN_ADDRESS,	/* named something unreadable */
	FAILOVER_NOT_LISTED,		/* an address not in the list */
};

struct failover {
	const struct failover_addr *addrs;	/* the caller's */
	int		 naddrs;
	int		 cur;			/* the one connected or tried */
	int		 tries;			/* addresses tried this round */
	int		 follow;		/* a follower named cur */
	int		 heard_follower;	/* one answered this round */
	int		 lost;			/* the leader whose link ended
						 * since the last welcome, -1 */
	int		 backoff_ms;		/* the next round's */
	uint32_t	 not_leader;		/* ERROR_NOT_LEADER answers
						 * since the failover began */
};

int		 failover_parse(struct failover_addr *, const char *,
		    const char **);
void		 failover_init(struct failover *, const struct failover_addr *,
		    int);
const char	*failover_text(const struct failover *);
const char	*failover_lost_leader(const struct failover *);
int		 failover_ended(struct failover *, int, uint32_t);
enum failover_named failover_not_leader(struct failover *, const char *);
void		 failover_welcomed(struct failover *);

#endif /* DYNPROF_FAILOVER_H */
