/*
 * dynprof-coordinator: one libevent loop, one thread, one struct coord.
 *
 *	coord.c		start-up, flags, signals, the housekeeping timer
 *	listener.c	what a listener does when an accept fails
 *	link.c		the AgentLink listener and one struct conn per agent
 *	link_dispatch.c	what an agent's messages do, the pushes back
 *	schedule.c	jobs, windows, nodes: the model and its rules
 *	schedule_ranks.c the ranks, and the events and progress they report
 *	change.c	the one path of a change: judge, store, apply, push
 *	straggler.c	each job's step rate, and the ranks and nodes lagging it
 *	busy.c		ranks whose busy time stands out, or rose (straggler.c's)
 *	arrive.c	the rank last to arrive at the collective most often
 *	median.c	the k-th smallest of a set (the medians)
 *	rules.c		a job's rules: its stragglers profiled on purpose
 *	load.c		the model rebuilt from the store at start
 *	valid.c		the rules a window, job, rank or stored row obeys
 *	store.c		persistence behind store.h: transactions, batches
 *	store_sqlite.c	the SQLite store, the embedded default
 *	store_etcd.c	the etcd store (etcd.c, etcd_session.c: its client;
 *			store_row.c: its rows as JSON)
 *	leader.c	several coordinators over etcd, one of them leading
 *	http.c		the admin API's listener, route table and answers
 *	http_jobs.c	the admin API's handlers (docs/admin-api.md)
 *	http_rules.c	the admin API's stragglers and rules of a job
 *	summary.c	a job's summary: counts, steps, nodes, windows' ranks
 *	http_ranks.c	a job's ranks, listed by rank number, page by page
 *	journal.c	rank and window events, by revision, for followers
 *	http_events.c	a job's events as they are committed, followed
 *	stream.c	answers written as they are produced
 *	http_ui.c	the status page (/ui/) and a job's nodes for its heat map
 *	metrics.c	counters and the /metrics text
 *	legacy.c	legacy jobs as the agents report them (docs/legacy.md)
 */


#ifndef DYNPROF_COORD_H
#define DYNPROF_COORD_H

#include "coord_addr.h"
#include "http.h"
#include "leader.h"
#include "link.h"
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
