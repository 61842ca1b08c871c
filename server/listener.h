/* The coordinator's listeners' shared accept handling (listener.c). */

#ifndef DYNPROF_LISTENER_H
#define DYNPROF_LISTENER_H

struct evconnlistener;

/* listener.c */
void	 listener_accept_error(struct evconnlistener *, void *);

#endif /* DYNPROF_LISTENER_H */
