/*
 * An address as every program writes it, "HOST:PORT" or "[V6]:PORT": split
 * here once.  The port's range is each caller's to judge (a listener may
 * take 0, a client may not).
 */

#ifndef DYNPROF_ADDR_H
#define DYNPROF_ADDR_H

#include <stddef.h>

/* What is wrong with an address addr_split() refused. */
enum addr_fault {
	ADDR_OK = 0,
	ADDR_NO_PORT,			/* no ':' before a port */
	ADDR_BAD_PORT,			/* a port that is not digits */
	ADDR_BAD_HOST,			/* no host, or one too long */
};

enum addr_fault addr_split(const char *, size_t, char *, size_t, char *,
	    size_t);
int		addr_same(const char *, const char *);

#endif /* DYNPROF_ADDR_H */
