/* The addresses the coordinator listens on (coord_addr.c). */

#ifndef DYNPROF_COORD_ADDR_H
#define DYNPROF_COORD_ADDR_H

#include <sys/socket.h>

#define COORD_PORT_MAX		65535	/* --listen, --http */

/* coord_addr.c */
int		 coord_parse_addr(const char *, struct sockaddr_storage *,
		    socklen_t *);
int		 coord_is_loopback(const char *);

#endif /* DYNPROF_COORD_ADDR_H */
