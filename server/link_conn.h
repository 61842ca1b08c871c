/* One agent connection below the protocol: frames queued, torn down. */

#ifndef DYNPROF_LINK_CONN_H
#define DYNPROF_LINK_CONN_H

#include "model.h"

/* link_conn.c */
void	 link_send(struct conn *, const Dynprof__V1__CoordinatorMessage *);
void	 link_send_error(struct conn *, int, const char *);
struct evbuffer *link_frame(const Dynprof__V1__CoordinatorMessage *);
void	 link_send_frame(struct conn *, struct evbuffer *);
void	 link_conn_close(struct conn *, int, const char *);
void	 link_conn_bury(struct conn *);
void	 link_sub_remove(struct sub *);

#endif /* DYNPROF_LINK_CONN_H */
