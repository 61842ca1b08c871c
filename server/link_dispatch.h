/* What an agent's messages do, and schedules pushed to the agents. */

#ifndef DYNPROF_LINK_DISPATCH_H
#define DYNPROF_LINK_DISPATCH_H

#include "model.h"

/* link_dispatch.c */
void	 link_push(struct coord *, struct job *);
void	 link_push_later(struct coord *, struct job *);
void	 link_push_due(evutil_socket_t, short, void *);
void	 link_commit_batch(struct coord *);
void	 link_dispatch(struct conn *, const Dynprof__V1__AgentMessage *);

#endif /* DYNPROF_LINK_DISPATCH_H */
