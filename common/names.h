/*
 * The names of the protocol's enums as status pages, metrics and logs show
 * them.
 */

#ifndef DYNPROF_NAMES_H
#define DYNPROF_NAMES_H

/* names.c */
const char	*names_rank_state(int);
const char	*names_event_kind(int);

#endif /* DYNPROF_NAMES_H */
