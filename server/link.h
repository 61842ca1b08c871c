/* AgentLink: the agents' connections and what their messages do. */

#ifndef DYNPROF_LINK_H
#define DYNPROF_LINK_H

#include "model.h"

/* link.c */
int	 link_listen(struct coord *, const char *);
void	 link_close_all(struct coord *);
void	 link_heartbeat(struct coord *, int);
void	 link_trim(struct coord *);
const char *link_node_state(const struct node *);
int	 link_hello_again(struct conn *, const char *);

#endif /* DYNPROF_LINK_H */
