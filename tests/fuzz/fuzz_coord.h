/* The live coordinator of the stateful coordinator targets (fuzz_coord.c). */

#ifndef DYNPROF_FUZZ_COORD_H
#define DYNPROF_FUZZ_COORD_H

#include <stdint.h>

#include <event2/buffer.h>

#include "coord.h"

/* A connection of node n1 for one input. */
struct fuzz_peer {
	struct conn	*conn;
	int		 fd;		/* our end of the socketpair */
	struct evbuffer	*rx;		/* read from fd, not yet a frame */
	uint64_t	 max_seq;	/* highest event seq sent */
};

void	 fuzz_coord_fail(const char *) __attribute__((__noreturn__));
void	 fuzz_coord_begin(struct fuzz_peer *, const char *);
void	 fuzz_coord_dispatch(struct fuzz_peer *, Dynprof__V1__AgentMessage *);
void	 fuzz_coord_run(struct fuzz_peer *);
void	 fuzz_coord_end(struct fuzz_peer *);

#endif /* DYNPROF_FUZZ_COORD_H */
