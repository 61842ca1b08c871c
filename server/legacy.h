/*
 * What a node reported of a legacy job (legacy.c), as a follower takes it
 * from the leader's rows too (legacyview.c): private to those two files.
 */

#ifndef DYNPROF_LEGACY_H
#define DYNPROF_LEGACY_H

#include "model.h"

struct legacy_window_status {
	uint32_t	 id;
	int		 state;
	char		 reason[COORD_LEGACY_TEXT_MAX];
};

struct legacy_entry {
	TAILQ_ENTRY(legacy_entry) entry;
	char		 node[COORD_NODE_MAX];
	char		 job[JOBID_MAX + 1];
	char		 dialect[32];		/* "" unknown */
	char		 error[COORD_LEGACY_TEXT_MAX];
	char		 output_dir[COORD_LEGACY_TEXT_MAX];
	int64_t		 time_ns;		/* when it came */
	size_t		 nwindows;
	struct legacy_window_status windows[COORD_LEGACY_WINDOWS_MAX];
};

#endif /* DYNPROF_LEGACY_H */
