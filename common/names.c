/* Enum-to-name tables: a value outside a table is "unknown". */

#include <stddef.h>

#include "dynprof.pb-c.h"
#include "names.h"

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* RankState, as status shows it. */
static const char *const names_rank_states[] = {
	[DYNPROF__V1__RANK_STATE__RANK_ATTACHED] = "attached",
	[DYNPROF__V1__RANK_STATE__RANK_ARMED] = "armed",
	[DYNPROF__V1__RANK_STATE__RANK_PROFILING] = "profiling",
	[DYNPROF__V1__RANK_STATE__RANK_DONE] = "done",
	[DYNPROF__V1__RANK_STATE__RANK_SKIPPED] = "skipped",
	[DYNPROF__V1__RANK_STATE__RANK_FAILED] = "failed",
	[DYNPROF__V1__RANK_STATE__RANK_GONE] = "gone",
	[DYNPROF__V1__RANK_STATE__RANK_OBSERVED] = "observed",
	[DYNPROF__V1__RANK_STATE__RANK_OBSERVED_COMPLETE] = "observed_complete",
};

/* EventKind. */
static const char *const names_event_kinds[] = {
	[DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED] = "attached",
	[DYNPROF__V1__EVENT_KIND__EVENT_STARTED] = "started",
	[DYNPROF__V1__EVENT_KIND__EVENT_STOPPED] = "stopped",
	[DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED] = "skipped",
	[DYNPROF__V1__EVENT_KIND__EVENT_FAILED] = "failed",
	[DYNPROF__V1__EVENT_KIND__EVENT_DETACHED] = "detached",
	[DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED] = "observed",
	[DYNPROF__V1__EVENT_KIND__EVENT_OBSERVED_COMPLETE] = "observed_complete",
	[DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED] = "collected",
	[DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED] = "collect_failed",
};

/* Entry i of a table of n names, or "unknown" where it has none. */
static const char *
names_lookup(const char *const *names, size_t n, int i)
{
	if (i < 0 || (size_t)i >= n || names[i] == NULL)
		return ("unknown");
	return (names[i]);
}

/* Returns the name of a RankState as status shows it. */
const char *
names_rank_state(int state)
{
	return (names_lookup(names_rank_states, nitems(names_rank_states),
	    state));
}

/* Returns the name of an EventKind. */
const char *
names_event_kind(int kind)
{
	return (names_lookup(names_event_kinds, nitems(names_event_kinds),
	    kind));
}
