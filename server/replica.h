/* A follower's copy of the model, loaded from etcd as it changes
 * (replica.c). */

#ifndef DYNPROF_REPLICA_H
#define DYNPROF_REPLICA_H

#include "state.h"

#define REPLICA_RELOAD_MS	200	/* a change waits this long for more */
#define REPLICA_FETCH_MS	2000	/* a page of the prefix, at most */
#define REPLICA_BUSY_TIMES	4	/* a load's time waited after it */
#define REPLICA_TURN_MS		20	/* keys taken in a turn of the loop */
#define REPLICA_PUBLISH_MS	1000	/* a batch's events published, at most */
/* What the watch tells while a load is on its way, kept (bytes of keys and
 * values) to be taken after it; more: read again whole. */
#define REPLICA_QUEUE_BYTES	(64 * 1024 * 1024)

struct etcd;
struct evbuffer;

/* replica.c */
int	 replica_new(struct coord *, struct etcd *, void (*)(struct coord *));
void	 replica_free(struct coord *);
void	 replica_follow(struct coord *);
void	 replica_stop(struct coord *);
int	 replica_serves(const struct coord *);
int	 replica_catch_up(struct coord *, int64_t);
void	 replica_metrics(struct coord *, struct evbuffer *);

#endif /* DYNPROF_REPLICA_H */
