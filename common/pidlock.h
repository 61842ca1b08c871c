/*
 * A lock file that one process holds for its lifetime: two daemons never
 * share one state or shared-memory directory.
 */

#ifndef DYNPROF_PIDLOCK_H
#define DYNPROF_PIDLOCK_H

/* pidlock.c */
int	 pidlock_take(const char *, const char *, const char *);

#endif /* DYNPROF_PIDLOCK_H */
