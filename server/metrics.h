/* The coordinator's counters and the /metrics text. */

#ifndef DYNPROF_METRICS_H
#define DYNPROF_METRICS_H

#include "state.h"

/* metrics.c */
void	 metrics_observe_latency(struct metrics *, double);
void	 metrics_render(struct coord *, struct evbuffer *);

#endif /* DYNPROF_METRICS_H */
