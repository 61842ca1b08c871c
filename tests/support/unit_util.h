/*
 * Helpers of the unit tests: a private directory for a store.
 */

#ifndef DYNPROF_UNIT_UTIL_H
#define DYNPROF_UNIT_UTIL_H

#include <stddef.h>

int	 unit_tmpdir(char *, size_t);
void	 unit_rmstore(const char *);

#endif /* DYNPROF_UNIT_UTIL_H */
