/*
 * Node names as Hello.node carries them (proto/dynprof.proto): the agent
 * checks its own at start, the coordinator every hello.
 */

#ifndef DYNPROF_NODENAME_H
#define DYNPROF_NODENAME_H

/* The longest node name, in bytes. */
#define NODENAME_MAX	127

/* nodename.c */
int	 nodename_valid(const char *, const char **);

#endif /* DYNPROF_NODENAME_H */
