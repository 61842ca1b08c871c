/*
 * The library on a linktest's agent (test_segsafe.c, test_segsafe_root.c):
 * the parameters of a rank opening a job there.  Whatever links linklib.c
 * links libdynprof.
 */

#ifndef DYNPROF_LINKLIB_H
#define DYNPROF_LINKLIB_H

#include "dynprof.h"
#include "linktest.h"

/* linklib.c */
void	 linklib_params(struct dynprof_params *, const struct linktest *,
	    const char *, dynprof_log_fn, void *);

#endif /* DYNPROF_LINKLIB_H */
