/*
 * Job ids and output subdirectories: the checks every component makes on names
 * that come from outside before building anything from them.  The rank lists
 * job requests carry are in ranklist.h, included here for the callers of both.
 */

#ifndef DYNPROF_JOBID_H
#define DYNPROF_JOBID_H

#include <stddef.h>
#include <stdint.h>

#include "ranklist.h"

/* The longest job id, NUL not counted: every buffer of a job id derives from it. */
#define JOBID_MAX	64

/* jobid.c */
int	 jobid_valid(const char *, const char **);
int	 subdir_valid(const char *, const char **);

#endif /* DYNPROF_JOBID_H */
