/*
 * dynprof-agent: the node daemon.  One per node; the only process that talks to
 * the coordinator and the only writer of the config part of every job segment.
 *
 *	main.c		main(): the rest builds as the dpagent library
 *	agent.c		flags, the agent's config file, signals, housekeeping:
 *			the composition root that wires the parts below
 *	parts.h		what the parts share: struct agent, their entry points
 *	upstream.c	the coordinator link: hello, dispatch, heartbeats, reconnect
 *	queue.c		rank events kept until the coordinator commits them
 *	ranks.c		the unix datagram socket the ranks report on
 *	jobs.c		the jobs served, as data: find, owner of a slot, windows
 *	segments.c	the jobs served: adopt, apply, sample, reclaim, remove
 *	arrive.c	a rank's arrivals at its steps' communication, read
 *	events.c	a rank's slot log read and forwarded as RankEvents
 *	guard.c		a segment truncated under the agent: SIGBUS caught, job dropped
 *	apply.c		a JobConfig turned into the segment's schedule
 *	offset.c	the node's clock against the coordinator's (heartbeats)
 *	standalone.c	no coordinator: profiler_config.json watched with inotify
 *	legacy*.c	--legacy-dir: jobs served through their own config files
 *			(parts_legacy.h)
 *	collect.c	--trace-store: ranks' finished traces queued and packed
 *	trace_pack.c	a finished trace directory packed (tar + zstd) into the
 *			shared-directory trace store, in a child at low priority
 *	trace_steps.c	a trace read as it is packed: its steps' durations
 *			and busiest operators (streaming JSON, yajl)
 *	trace_upload.c	an archive put into an S3-compatible object store
 *			(libcurl's SigV4), in a child at low priority
 */

#ifndef DYNPROF_AGENT_H
#define DYNPROF_AGENT_H

#include "parts.h"

/* agent.c */
struct agent *agent_new(int, char **, int *);
int	 agent_start(struct agent *);
int	 agent_run(struct agent *);
void	 agent_free(struct agent *);
void	 agent_wire(struct agent *);

#endif /* DYNPROF_AGENT_H */
