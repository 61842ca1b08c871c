/*
 * Job ids, rank lists and output subdirectories: the checks every component makes
 * on names that come from outside before building anything from them.
 */

#ifndef DYNPROF_JOBID_H
#define DYNPROF_JOBID_H

#include <stddef.h>
#include <stdint.h>

#define JOBID_MAX	64

/* jobid.c */
int	 jobid_valid(const char *, const char **);
int	 subdir_valid(const char *, const char **);

/* A parsed rank list such as "0-7,16": at most RANKS_MAX_RANGES ranges. */
#define RANKS_MAX_RANGES	64
struct rank_range {
	int32_t	 lo;
	int32_t	 hi;
};
struct rank_set {
	int			 nranges;	/* 0: every rank */
	struct rank_range	 ranges[RANKS_MAX_RANGES];
};
int	 ranks_parse(const char *, struct rank_set *, const char **);
int	 ranks_contains(const struct rank_set *, int32_t);

#endif /* DYNPROF_JOBID_H */
