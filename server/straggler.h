/*
 * A job's straggler judgement as the last tick left it (straggler.c), and
 * as a follower takes it from the leader's row (stragview.c): private to
 * those two files.
 */

#ifndef DYNPROF_STRAGGLER_H
#define DYNPROF_STRAGGLER_H

#include "model.h"

/* Stragglers kept per job, worst first, for status and rules. */
#define STRAGGLER_KEEP_MAX	256
/* Nodes with stragglers kept per job, most stragglers first. */
#define STRAGGLER_NODES_KEEP	64
/* Judged ranks that give no busy time, named in the summary. */
#define STRAGGLER_NOBUSY_KEEP	16

/* A node with stragglers. */
struct straggler_node {
	char		 node[COORD_NODE_MAX];
	uint32_t	 ranks;			/* its ranks flagged */
	int64_t		 min_step;
};

struct straggler {
	int64_t			 lag;		/* this job's, -1: the default */
	int			 rate_drop;	/* this job's, -1: the default */
	int			 busy;		/* this job's, -1: the default */
	/* The defaults the judgement was made with (the leader's flags),
	 * -1: this coordinator's. */
	int64_t			 def_lag;
	int			 def_drop, def_busy;
	int64_t			 median_step;	/* -1 unknown */
	float			 median_rate;	/* steps/s, < 0 unknown */
	uint32_t		 judged;	/* ranks with a step */
	uint32_t		 nflagged;	/* all of them, not only kept */
	uint32_t		 nlag, nslow;
	struct busy_job		 bj;		/* the busy times' judgement */
	struct arrive_job	 aj;		/* the arrivals' */
	uint32_t		 narrive;	/* judged ranks with arrivals */
	int64_t			 step_us;	/* the job's step time, 0 unknown */
	uint32_t		 nbusy;		/* judged ranks with a busy time */
	uint32_t		 nnobusy;	/* judged ranks without */
	int32_t			 nobusy[STRAGGLER_NOBUSY_KEEP];	/* the first */
	uint32_t		 nnodes;	/* nodes with a straggler */
	struct straggler_entry	 list[STRAGGLER_KEEP_MAX];
	size_t			 nlist;
	struct straggler_node	 nodes[STRAGGLER_NODES_KEEP];
	size_t			 nnodes_kept;
	int64_t			 updated_ns;	/* wall clock of the tick */
	char			*view_row;	/* the leader's: its row as last
						 * stored, but for the time
						 * (stragview.c), NULL none */
	uint64_t		 compute_ns;	/* the tick's cost for this job */
};

#endif /* DYNPROF_STRAGGLER_H */
