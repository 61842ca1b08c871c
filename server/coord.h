/*
 * dynprof-coordinator: one libevent loop, one thread, one struct coord.  The
 * composition root: it includes every layer's header and wires the layers
 * (docs/design.md, "Layers of the coordinator"), from the top down:
 *
 *	coord.c		start-up, flags, signals, the housekeeping timer, the
 *			model's hooks and the route table wired in
 *	http.h		the admin API: http.c (listener, routing, answers,
 *			held for their commit where a change waits for one),
 *			http_routes.c (the route table), http_jobs.c,
 *			http_rules.c, http_ranks.c, http_events.c, http_ui.c,
 *			http_traces.c, http_forget.c (resources), stream.c
 *			(answers written as they are produced)
 *	metrics.h	metrics.c: counters and the /metrics text
 *	link.h		AgentLink: link.c (the listener, one struct conn per
 *			agent), link_dispatch.h: link_dispatch.c (what an
 *			agent's messages do, the pushes back), link_conn.h:
 *			link_conn.c (a connection's frames queued, its teardown)
 *	leader.h	leader.c: several coordinators over etcd, one leading
 *	model.h		the model, which knows no protocol: schedule.c (jobs,
 *			windows, nodes), schedule_ranks.c (ranks, their events
 *			and progress), change.c (the one path of a change),
 *			jobs.c (the jobs as a whole), intake.c (the agents'
 *			events taken in), straggler.c, busy.c,
 *			arrive.c, median.c, rules.c, journal.c, journal_load.c,
 *			legacy.c, summary.c, load.c, select.c, valid.c,
 *			traces.c (each job's collected traces),
 *			options.c, refusal.c (refusal.h: the model's error)
 *	state.h		the types every layer shares, struct coord among them
 *	store.h		the store: store.c, store_sqlite.c, store_etcd*.c,
 *			store_row.c, etcd*.c
 *	coord_addr.h, listener.h	addresses and listeners' accept errors
 */

#ifndef DYNPROF_COORD_H
#define DYNPROF_COORD_H

#include "coord_addr.h"
#include "http.h"
#include "leader.h"
#include "link.h"
#include "link_conn.h"
#include "link_dispatch.h"
#include "metrics.h"
#include "model.h"
#include "state.h"

/* Exit codes of dynprof-coordinator. */
#define COORD_EXIT_OK		0
#define COORD_EXIT_USAGE	1
#define COORD_EXIT_RUNTIME	2

/* The file in --state-dir a coordinator holds locked while it runs. */
#define COORD_LOCK_FILE		"coordinator.lock"

/* coord.c */
int		 coord_parse_args(struct coord *, int, char **);
void		 coord_init(struct coord *);
int		 coord_open(struct coord *);
int		 coord_start(struct coord *);
void		 coord_stop(struct coord *);
void		 coord_bounds_init(struct coord_config *);

#endif /* DYNPROF_COORD_H */
