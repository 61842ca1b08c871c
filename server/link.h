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
void	 link_send(struct conn *, const Dynprof__V1__CoordinatorMessage *);
void	 link_send_error(struct conn *, int, const char *);
struct evbuffer *link_frame(const Dynprof__V1__CoordinatorMessage *);
void	 link_send_frame(struct conn *, struct evbuffer *);
void	 link_conn_close(struct conn *, int, const char *);
int	 link_hello_again(struct conn *, const char *);

/* link_dispatch.c */
void	 link_push(struct coord *, struct job *);
void	 link_push_later(struct coord *, struct job *);
void	 link_push_due(evutil_socket_t, short, void *);
void	 link_commit_batch(struct coord *);
void	 link_dispatch(struct conn *, const Dynprof__V1__AgentMessage *);
void	 link_sub_remove(struct sub *);

#endif /* DYNPROF_LINK_H */
