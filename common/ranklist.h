/* Rank lists: "" or "all" for every rank, else "0-7,16". */

#ifndef DYNPROF_RANKLIST_H
#define DYNPROF_RANKLIST_H

#include <stdint.h>

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

/* ranklist.c */
int	 ranks_parse(const char *, struct rank_set *, const char **);
int	 ranks_contains(const struct rank_set *, int32_t);

#endif /* DYNPROF_RANKLIST_H */
