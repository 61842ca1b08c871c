/*
 * The coordinator's one state struct (struct coord) and the types it holds:
 * jobs, windows, ranks, nodes, agent connections, streams, the journal.
 * Types only: what each layer does with them is in its own header
 * (model.h, link.h, http.h, leader.h, metrics.h, coord.h).
 */

#ifndef DYNPROF_STATE_H
#define DYNPROF_STATE_H

#include <sys/queue.h>
#include <sys/socket.h>

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <event2/util.h>

#include "dynprof.pb-c.h"
#include "jobid.h"
#include "log.h"
#include "options.h"
#include "presign.h"
#include "segment.h"
#include "store.h"
#include "tls.h"

struct event;
struct event_base;
struct evconnlistener;
struct bufferevent;
struct evhttp;
struct evbuffer;
struct evhttp_request;
struct evhttp_connection;
struct json_t;
struct store;
struct store_journal;
struct journal_loading;
struct replica;
struct leader;

#define COORD_NODE_MAX		128	/* node name length */
#define COORD_RANK_BUCKETS	4096	/* a job's rank table at first, */
#define COORD_RANK_BUCKETS_MAX	(1 << 20)	/* grown 4 times up to this */
#define COORD_NODE_BUCKETS	4096
/* Batches of events committing at once (etcd); the next one grows while
 * they are in flight. */
#define LINK_COMMITS_MAX	2
#define COORD_LOST_GRACE_HB	10	/* heartbeats a lost node may come back in */
/* A change's answer waits this long for its commit, then is a 503: past
 * etcd's election after a member is lost, within dynprofctl's 10 s. */
#define CHANGE_HOLD_MS		5000
#define COORD_DRAIN_MS		5000	/* stopping: commits in flight answered */
#define COORD_RANK_EVENTS_MAX	64	/* events kept per rank for status */
#define COORD_LEGACY_MAX	10000	/* legacy job reports (node, job) kept */
#define COORD_LEGACY_WINDOWS_MAX 64	/* windows per legacy job report */
#define COORD_LEGACY_TEXT_MAX	512	/* a reason, an error, a path kept */
#define COORD_LEGACY_SHOWN	8	/* nodes' errors a legacy job's status shows */
/* The leader's rows for followers: jobs' straggler judgement and nodes'
 * legacy reports, in this many batch values each (viewrows.c). */
#define STRAGVIEW_BATCHES	64
#define LEGACYVIEW_BATCHES	64
#define COORD_HTTP_BODY_MAX	(1024 * 1024)
/* Significant digits of a real in an answer (JSON_REAL_PRECISION): enough
 * for any rate, few enough that 20.8 is written 20.8, not 20.800000000000001. */
#define COORD_JSON_REAL_DIGITS	15
#define COORD_RANKS_LIMIT_DEFAULT 1000		/* ranks in one page */
#define COORD_RANKS_LIMIT_MAX	10000
/* The event stream (journal.c, http_events.c): events kept (a window of
 * 100,000 ranks is 200,000), bytes of their text (output directories,
 * errors) and of one event's, followers at once, bytes written to a
 * follower before the next part waits for them to leave for its socket. */
#define COORD_JOURNAL_MAX	262144
#define COORD_JOURNAL_BYTES_MAX	(64 * 1024 * 1024)
#define COORD_JOURNAL_DETAIL_MAX 4096
#define COORD_FOLLOWERS_MAX	64
/* Of COORD_FOLLOWERS_MAX, those the viewer token may not take: with viewers
 * at their most, the operator can still follow (dynprofctl, the UI). */
#define COORD_FOLLOWERS_OPERATOR 8
#define COORD_FOLLOWER_CHUNK	(64 * 1024)
/* A step an agent reports is -1 (before the first) or 0 to this; anything
 * else is absurd (no run makes 2^62 steps) and refused, so that no sum of
 * steps the coordinator makes can overflow. */
#define COORD_STEP_MAX		(1LL << 62)
/* schedule_job_step_now(): a report's age counted at most this, and the
 * time a window takes to reach the ranks. */
#define SCHEDULE_PROJECT_MS	1000
#define SCHEDULE_PUSH_MS	100
#define SCHEDULE_RATE_SPAN_MS	1000	/* a rate measured over 1 s at least */
/* The highest step an admin request may name: 1e15, far beyond any run. */
#define COORD_WINDOW_STEP_MAX	1000000000000000LL
/*
 * Time windows (docs/admin-api.md): the start may be at most
 * COORD_AT_PAST_MS behind the coordinator's clock (a request for "now" from
 * a client whose clock is a little behind) and COORD_AT_AHEAD_MS ahead, the
 * duration 1 ms to COORD_DURATION_MAX_MS; no time past COORD_TIME_MAX_NS
 * (2116) is stored.  The nodes' clock offsets may reach the tolerance
 * (default COORD_TOLERANCE_MS) before the window warns.
 */
#define COORD_AT_PAST_MS	1000
#define COORD_AT_AHEAD_MS	(7LL * 86400 * 1000)
#define COORD_DURATION_MAX_MS	(86400LL * 1000)
#define COORD_TIME_MAX_NS	(1LL << 62)
#define COORD_TOLERANCE_MS	100
#define COORD_TOLERANCE_MAX_MS	60000
/* A time window leaves a schedule no rank runs this long after its stop. */
#define SCHEDULE_TIME_LATE_MS	60000LL
/* The highest generation the counter may hold (2^53: exact in any JSON
 * reader); one change a microsecond takes 285 years to reach it.  A stored
 * row past it is refused (valid.c). */
#define COORD_GENERATION_MAX	(1ULL << 53)
/* An agent's applied generation above the counter raises it (link_dispatch.c),
 * up to this: half the range, so that no agent can use up the rest. */
#define COORD_GENERATION_AGENT_MAX (COORD_GENERATION_MAX / 2)

/*
 * Bounds on peers (docs/design.md: every peer is hostile until authenticated, and
 * bounded even then).  The ones an operator may need to change have a flag;
 * these are the defaults.
 */
#define COORD_PREHELLO_FRAME_MAX (64 * 1024)	/* a frame before hello */
#define COORD_HELLO_TIMEOUT_MS	10000		/* accept to hello, absolute */
#define COORD_OUTBUF_MAX	(8 * 1024 * 1024) /* queued to one agent */
#define COORD_AGENT_JOBS_MAX	1024		/* jobs one agent subscribes */
#define COORD_PROGRESS_RANKS_MAX SEG_MAX_SLOTS	/* ranks in one Progress */
/* An event's output directory (no path is longer: PATH_MAX) or error, NUL
 * included: a longer directory refuses the event, a longer error is cut at
 * a UTF-8 character (valid.c). */
#define COORD_EVENT_TEXT_MAX	4096
/*
 * Budgets of rank state (--max-ranks-per-job, --max-ranks-per-agent,
 * --rank-memory-max): ranks one job may have (the design's 100,000 and
 * room), ranks one agent may report alive at once (a node runs 8 or 16:
 * containers and legacy jobs leave plenty), and the bytes all ranks' state
 * may take (each rank, its strings and event history, each job's rank
 * table).  Past one, the rank is refused (logged per node, counted).
 */
#define COORD_JOB_RANKS_MAX	131072
#define COORD_AGENT_RANKS_MAX	4096
#define COORD_RANK_BYTES_MAX	(1024ULL * 1024 * 1024)
#define COORD_UNSCHEDULED_MAX	10000		/* jobs nobody scheduled */
/* A job nobody scheduled is forgotten once no node has served it for this
 * many heartbeat intervals (an agent reconnecting keeps it). */
#define COORD_UNSCHEDULED_LINGER 30
/* An event seq may run ahead of the node's acknowledged seq by this much:
 * twice the agent's default queue (AGENT_QUEUE_MAX, agent/parts.h). */
#define COORD_SEQ_WINDOW	(2 * 65536ULL)
#define COORD_HTTP_CONNS_MAX	1024		/* admin connections */
#define COORD_HTTP_TIMEOUT_MS	10000		/* accept to whole request */
/* A rank straggles when its step is more than this behind its job's median
 * step, or its step rate this many percent under the job's median rate
 * (--straggler-lag, --straggler-rate-drop; a job may set its own). */
#define COORD_STRAGGLER_LAG	50
#define COORD_STRAGGLER_RATE_DROP 50
/* ... or its busy time (dynprof_mark_comm(), server/busy.c) this many percent
 * over its job's median, or risen as much against its own history
 * (--straggler-busy). */
#define COORD_STRAGGLER_BUSY	30
/* Descriptors kept for agents, the store and logs, out of the HTTP cap. */
#define COORD_FD_RESERVE	256

/*
 * Typed profiler options plus framework options, as a window carries them:
 * an int32_t per row of the options table (common/options.h), named after
 * it (-1 an integer unset, 0 or 1 a boolean), in the table's order; its
 * layer is options_coord.
 */
#define OPTIONS_COORD_FIELD(a, field, ...)	int32_t field;
struct options {
	OPTIONS_ROWS(OPTIONS_COORD_FIELD, _)
	char		*fwopts;		/* JSON object text or NULL */
};

/* Profiler options laid over others (a job's defaults): the rows given and
 * the framework options (options.c). */
struct options_over {
	struct options	 o;
	uint32_t	 given;			/* bit (1 << row) */
};

enum window_state {
	WINDOW_STATE_SCHEDULED = 1,		/* as the proto's WindowState */
	WINDOW_STATE_CANCELLED = 2,
};

struct window {
	uint32_t		 id;
	int64_t			 start_step;
	int64_t			 stop_step;
	/* A time window (docs/admin-api.md): its start and stop on the
	 * coordinator's wall clock, start_step and stop_step 0; 0: steps. */
	int64_t			 start_unix_ns;
	int64_t			 stop_unix_ns;
	int64_t			 tolerance_ms;	/* of the nodes' clock offsets */
	char			 ranks[SEG_RANKS_MAX];
	struct rank_set		 rankset;
	char			*selector;	/* what named its ranks
						 * (select.c), NULL: ranks */
	struct options		 options;
	char			 output_subdir[SEG_SUBDIR_MAX];
	int			 no_collect;	/* "collect": false: traces
						 * not collected */
	char			*trace_store;	/* the job's own trace store
						 * when it was made, NULL: the
						 * agents' */
	enum window_state	 state;
	int			 finished;	/* left the pushed schedule */
	int			 refused;	/* left it: every node serving
						 * the job refused it (legacy) */
	char			*refused_why;	/* a node's reason for that,
						 * NULL: none said */
	int64_t			 created_ns;
	int64_t			 ended_ns;	/* cancelled or finished, wall
						 * clock; 0 not yet, or before
						 * the coordinator started */
	uint64_t		 created_gen;	/* the generation of the change
						 * that made it, and of the one */
	uint64_t		 ended_gen;	/* that ended it (as the events
						 * said them); 0 not known */
	TAILQ_ENTRY(window)	 entry;		/* job->windows, by start_step */
};
TAILQ_HEAD(windowq, window);

struct job;

/* A rank's step rate, as straggler.c measures it. */
struct rank_pace {
	int64_t			 ref_step;	/* step at ref_ms, -1 none */
	uint64_t		 ref_ms;	/* monotonic */
	int64_t			 ref_sent_us;	/* its node's sent_us then */
	int64_t			 first_step;	/* when first seen (this */
	int64_t			 first_sent_us;	/* process), sent_us then */
	uint64_t		 ref_period;	/* ref_ms / the rate's period */
	int			 aligned;	/* ref_ms is its period's first
						   tick (straggler.c) */
	float			 rate;		/* steps/s, < 0 unknown */
	int64_t			 step_now;	/* its step moved on to the
						   last tick (straggler.c) */
	int			 straggling;	/* STRAGGLER_* reasons, 0 none */
};

/* A rank's busy time against its own history (busy.c). */
struct busy_history {
	float			 base;		/* its relative busy time, learnt */
	uint32_t		 nbase;		/* ticks learnt, to BUSY_LEARN_TICKS */
	float			 cusum;
	float			 rise;		/* ratio to base, -1 unknown */
	int			 changed;	/* it rose */
	uint32_t		 over_ticks;	/* judgements in a row over the
						   median (busy.c) */
};

/* Arrivals kept per rank (arrive.c). */
#define ARRIVE_KEEP		16
/* A rank's last arrivals at its steps' communication, steps ascending from
 * head, times on the coordinator's clock (arrive.c). */
struct rank_arrive {
	int64_t			 step[ARRIVE_KEEP];
	int64_t			 us[ARRIVE_KEEP];
	uint32_t		 head, n;
};

/* Reports of a node's clock kept to estimate its offset (arrive.c). */
#define ARRIVE_CLOCK_KEEP	16
/* A node's clock against the coordinator's (arrive.c). */
struct arrive_clock {
	int64_t			 d[ARRIVE_CLOCK_KEEP];	/* received - sent, us */
	uint32_t		 head, n;
	int64_t			 offset_us;	/* the lowest: ours - its */
};

/* A rank's busy time as its agent reports it (dynprof_mark_comm()). */
struct rank_busy {
	uint64_t		 count;		/* steps measured, 0: none */
	uint32_t		 last_us;
	uint32_t		 avg_us;
	uint32_t		 max_us;
	uint64_t		 judged;	/* count at the last tick */
	struct busy_history	 hist;
	float			 score;		/* the last tick's, -1 unknown */
	float			 over;		/* over the job's median, -1 */
};

struct rank {
	int32_t			 rank;
	char			 node[COORD_NODE_MAX];
	int32_t			 pid;
	int64_t			 uid;		/* its process's, as its agent's
						 * kernel says; -1 unknown */
	int64_t			 step;		/* -1 before the first */
	int			 state;		/* Dynprof__V1__RankState */
	uint32_t		 window_id;
	char			*output_dir;
	int			 last_event;	/* EventKind, 0 none */
	int64_t			 last_event_ns;
	/* When the coordinator learned that its process came and went (its
	 * wall clock, as windows' times: a node's clock may be off). */
	int64_t			 arrived_ns;	/* 0 unknown */
	int64_t			 gone_ns;	/* 0 it did not */
	/* The time and slot of its current process's attached event and the
	 * time of its last detached event (times 0: unknown): tell apart a
	 * process that attaches again from a replay
	 * (schedule_rank_incarnation()). */
	int64_t			 attach_ev_ns;
	int64_t			 detach_ev_ns;
	uint32_t		 attach_slot;
	char			*error;
	char			*labels;	/* canonical (common/labels.h),
						 * NULL: none */
	struct rank_event	*events;
	size_t			 nevents;
	size_t			 events_cap;
	int			 native;	/* reported by its own process
						 * (not only observed) */
	int			 changed;	/* on coord->changed_ranks: its
						 * row not stored yet */
	struct rank_pace	 pace;		/* straggler.c */
	struct node		*counted_on;	/* the node it counts against:
						 * reported by it, not gone */
	struct rank_busy	 busy;		/* straggler.c, busy.c */
	struct rank_arrive	*arrive;	/* NULL: none (arrive.c) */
	uint32_t		 trace_window;	/* traces.c: its latest
						 * collection's window, 0 none */
	struct job		*job;
	LIST_ENTRY(rank)	 hentry;
	TAILQ_ENTRY(rank)	 entry;		/* job->ranks, by arrival */
	TAILQ_ENTRY(rank)	 changed_entry;
};
LIST_HEAD(rankbucket, rank);
TAILQ_HEAD(rankq, rank);

struct conn;

/* An agent subscribed to a job: on both lists. */
struct sub {
	struct job		*job;
	struct conn		*conn;
	TAILQ_ENTRY(sub)	 job_entry;
	TAILQ_ENTRY(sub)	 conn_entry;
};
TAILQ_HEAD(subq, sub);

struct job {
	char			 name[JOBID_MAX + 1];
	uint64_t		 generation;
	uint32_t		 next_window_id;
	char			*config_json;	/* last PUT config, or NULL */
	struct options		 defaults;	/* from the config */
	int			 no_collect;	/* "collect": false (rules.c's
						 * document): its windows made
						 * since say so */
	char			 trace_store[256];	/* its own trace
						 * store (rules.c's document),
						 * "" the agents' */
	int64_t			 created_ns;
	struct windowq		 windows;	/* every window ever, by start */
	struct rankq		 ranks;
	size_t			 nranks;
	struct rankbucket	*rank_hash;	/* COORD_RANK_BUCKETS, at the
						 * first rank: a job without
						 * ranks is small */
	size_t			 rank_nbuckets;	/* a power of 2, grown with
						 * the ranks */
	struct rank		**by_rank;	/* sorted by rank number; stale
						 * once nby_rank != nranks */
	size_t			 nby_rank;
	size_t			 journal_refs;	/* journal.c entries of it */
	uint64_t		 journal_last;	/* the last revision staged of it */
	uint64_t		 journal_floor;	/* loaded: its events up to this
						 * revision are not kept */
	struct subq		 subs;
	uint64_t		 forgot_gen;	/* the change that forgot the job
						 * before (or a later one, for an
						 * agent back with its windows),
						 * while nobody schedules it
						 * again; 0: none */
	uint64_t		 idle_ms;	/* monotonic: subs became empty */
	size_t			 ranks_changed;	/* of its ranks on
						 * coord->changed_ranks */
	int			 push_due;	/* link_push_later() */
	int			 windows_dirty;	/* a window may have ended */
	int			 ranks_came;	/* a rank attached: windows with
						 * a selector may grow */
	uint64_t		 grown_ms;	/* monotonic: they last grew */
	struct straggler	*strag;		/* straggler.c, NULL: none yet */
	struct rules		*rules;		/* rules.c, NULL: none */
	struct traces		*traces;	/* traces.c, NULL: none yet */
	TAILQ_ENTRY(job)	 entry;
};
TAILQ_HEAD(jobq, job);

/* What a node did with one job. */
struct node_job {
	char			 job[JOBID_MAX + 1];
	uint64_t		 applied;
	uint64_t		 pushed_gen;	/* latest generation pushed */
	uint64_t		 pushed_ns;	/* monotonic time of that push */
	uint32_t		 ranks_alive;
	int			 native;	/* it reported ranks that report
						 * for themselves */
	int64_t			 min_step;	/* from its last Progress, -1 */
	int64_t			 max_step;
	uint64_t		 max_step_ms;	/* monotonic, when it last rose */
	double			 rate;		/* steps/s max_step rose at, 0:
						   not known */
	int64_t			 rate_step;	/* where the span measured */
	uint64_t		 rate_ms;	/* began, 0: none yet */
	int			 view_sub;	/* a follower's copy: the node
						 * serves the job (nodeview.c) */
	/* Its ranks of the job as the last straggler tick counted them
	 * (straggler.c; a follower's: the leader's, nodeview.c). */
	uint32_t		 strag_ranks;	/* flagged */
	uint32_t		 busy_ranks;	/* live, giving a busy time */
	uint32_t		 busy_max_us;	/* the longest of theirs */
	TAILQ_ENTRY(node_job)	 entry;
};
TAILQ_HEAD(node_jobq, node_job);

struct node {
	char			 name[COORD_NODE_MAX];
	struct conn		*conn;		/* NULL: lost, or left */
	int			 left;		/* its agent said goodbye (and
						 * none said hello since) */
	char			 address[64];
	int64_t			 connected_ns;	/* wall clock */
	int64_t			 last_seen_ns;
	uint64_t		 boot_id;	/* whose seq acked_seq counts */
	uint64_t		 acked_seq;	/* committed */
	uint64_t		 seen_seq;	/* committed or in the open batch */
	struct node_jobq	 jobs;
	struct log_limit	 log_bounds;	/* its lines past a budget */
	size_t			 nranks;	/* ranks counted_on it */
	struct arrive_clock	 clock;		/* its offset (arrive.c) */
	int64_t			 sent_us;	/* when its agent sent its last
						 * message, on our wall clock
						 * (arrive_clock_sent()), 0
						 * none: the steps it reported
						 * are as of then */
	int64_t			 agent_offset_ns; /* its clock - ours, as its
						   agent measured it */
	int			 agent_offset_known;	/* since its hello */
	int			 view_up;	/* a follower's copy: connected
						 * to the leader (nodeview.c) */
	int			 view_dirty;	/* a field of its row for
						 * followers changed since it
						 * was last stored (nodeview.c):
						 * set wherever one changes */
	LIST_ENTRY(node)	 hentry;
	TAILQ_ENTRY(node)	 entry;
};
LIST_HEAD(nodebucket, node);
TAILQ_HEAD(nodeq, node);

enum conn_state {
	CONN_AWAIT_HELLO,
	CONN_READY,
	CONN_CLOSING,
};

/* One agent connection. */
struct conn {
	struct coord		*coord;
	struct bufferevent	*bev;
	enum conn_state		 state;
	char			 peer[64];
	struct node		*node;		/* READY only */
	uint64_t		 last_rx_ms;	/* monotonic */
	uint64_t		 stalled_at_rx;	/* coord->stalled_ms then */
	uint64_t		 accepted_ms;	/* monotonic */
	size_t			 nsubs;
	uint64_t		 ack_seq;	/* to send after the next commit */
	int			 ack_queued;
	int			 tls_up;	/* TLS handshake done */
	uint64_t		 held_ms;	/* a follower holds its hello
						 * since (leader_hold()), 0 */
	void			*held_hello;	/* that AgentMessage, kept
						 * (link.c), or NULL */
	struct subq		 subs;
	TAILQ_ENTRY(conn)	 entry;		/* coord->conns or coord->dead */
	TAILQ_ENTRY(conn)	 ack_entry;	/* coord->acks */
};
TAILQ_HEAD(connq, conn);

#define METRICS_LAT_BUCKETS	14

struct metrics {
	uint64_t	 pushes;
	uint64_t	 events[16];		/* by EventKind */
	uint64_t	 events_dup;
	uint64_t	 lat_count;
	double		 lat_sum;
	uint64_t	 lat_buckets[METRICS_LAT_BUCKETS];	/* cumulative */
	uint64_t	 http_codes[600];
	uint64_t	 commits;
	uint64_t	 agents_refused;	/* closed before or at hello */
	uint64_t	 events_refused;	/* bad strings or steps: dropped */
	uint64_t	 event_text_cut;	/* errors cut to COORD_EVENT_TEXT_MAX */
	uint64_t	 ranks_refused[3];	/* by enum rank_budget */
	uint64_t	 generations_raised;	/* by an agent's applied one */
	uint64_t	 generations_refused;	/* agents' absurd ones */
	uint64_t	 legacy_refused;	/* bad or too many legacy reports */
	uint64_t	 progress_refused;	/* rank reports with absurd steps */
	uint64_t	 labels_refused;	/* ranks' labels that did not pass */
	uint64_t	 select_last_ns;	/* the last window's select.c time */
	uint64_t	 select_grown;		/* windows' lists grown */
	uint64_t	 select_grow_refused;	/* could not grow: full */
	uint64_t	 agents_dropped;	/* bounds: outbuf, hello, seq */
	uint64_t	 subscribes_refused;	/* over the jobs per agent cap */
	uint64_t	 progress_ranks_refused; /* ranks past the cap */
	uint64_t	 unscheduled_refused;	/* over the unscheduled jobs cap */
	uint64_t	 unscheduled_reaped;	/* forgotten: no node serves them */
	uint64_t	 http_timeouts;		/* closed at the request deadline */
	uint64_t	 http_evicted;		/* closed to make room at the cap */
	uint64_t	 followers_refused;	/* event stream, over the cap */
	uint64_t	 followers_dropped;	/* fell behind the journal */
	/* Stored rows the last load set aside, by enum row_table
	 * (store_row.h): meta, jobs, windows, ranks, events, agents. */
	uint64_t	 rows_quarantined[6];
	uint64_t	 loop_stalls;		/* ticks late by half a period */
	uint64_t	 loop_stalled_ms;	/* their lateness, summed */
	uint64_t	 silent_closed;		/* agents closed as silent */
	uint64_t	 node_rows;		/* nodes' rows stored for
						 * followers (nodeview.c) */
	uint64_t	 strag_rows;		/* jobs' straggler rows, the
						 * same (stragview.c) */
	uint64_t	 legacy_rows;		/* nodes' legacy reports, the
						 * same (legacyview.c) */
};

struct http_conn;
TAILQ_HEAD(http_connq, http_conn);

/* A streamed answer (stream.c). */
#define STREAM_MORE	1		/* fill: call again once sent */
#define STREAM_WAIT	2		/* fill: nothing until stream_wake() */
#define STREAM_DONE	0		/* fill: the answer is complete */
struct stream {
	struct coord			*coord;
	struct evhttp_request		*req;
	struct evhttp_connection	*evcon;
	int				(*fill)(struct stream *,
					    struct evbuffer *);
	void				(*release)(struct stream *);
	void				*arg;
	struct event			*reaper;
	size_t				 sent;
	int				 writing;	/* a chunk not sent */
	int				 waiting;	/* STREAM_WAIT */
	int				 closed;	/* connection gone */
	int				 ended;
	TAILQ_ENTRY(stream)		 entry;		/* coord->streams */
};
TAILQ_HEAD(streamq, stream);
struct journal;
/* Leadership over etcd (leader.c). */
#define LEADER_ADDR_MAX		256	/* --advertise-agent, --advertise-http */

/* One committed event (journal.c). */
#define JOURNAL_RANK		1	/* a rank event: what is its kind */
#define JOURNAL_WINDOW		2	/* a window's change: */
#define JOURNAL_WINDOW_SCHEDULED 1
#define JOURNAL_WINDOW_CANCELLED 2
#define JOURNAL_WINDOW_DONE	3
#define JOURNAL_WINDOW_GROWN	4	/* ranks that came joined it */
struct journal_entry {
	uint64_t		 rev;
	struct job		*job;		/* NULL once it is forgotten */
	struct node		*node;		/* rank: who reported it */
	char			*detail;	/* output dir or error, or NULL */
	int64_t			 step;		/* rank: its; window: start */
	int64_t			 stop;		/* window: stop step */
	int64_t			 time_ns;
	uint64_t		 generation;	/* window: the change's */
	int32_t			 rank;
	uint32_t		 window;
	uint8_t			 type;
	uint8_t			 what;
};
struct follower;
TAILQ_HEAD(followerq, follower);

/*
 * A change the store commits without waiting (etcd): its events are
 * published, its job pushed and whoever made it told (hooks->committed: the
 * admin API sends the answer it held, http_hold()) once it is committed.
 */
struct change_commit {
	struct coord			*c;
	char				*job;
	uint64_t			 staged;	/* its journal's last */
	void				*waiter;	/* coord->waiter then,
							 * NULL: none */
	void				*held;		/* the waiter's, NULL:
							 * nothing held */
	TAILQ_ENTRY(change_commit)	 entry;		/* coord->commits */
};
TAILQ_HEAD(change_commitq, change_commit);

/*
 * What the model (and the leadership beside the store) tells the layers above
 * it, which it does not know: filled
 * by the composition root (coord_init()).  A hook may be NULL: nothing to
 * tell.
 */
struct coord_hooks {
	/* A change of job was committed: its agents get its schedule. */
	void	(*job_changed)(struct coord *, struct job *);
	/* Events were published to the journal: its followers read them. */
	void	(*events_published)(struct coord *);
	/* Memory holds what the store may not have (a commit failed). */
	void	(*model_unsure)(struct coord *);
	/* The open batch of events is ended (intake_flush()): its rows
	 * stored, committed, its agents acknowledged once committed. */
	void	(*events_commit)(struct coord *);
	/* A change a waiter made is committed (rc 0) or not (-1): its held
	 * answer (cc->held) may be sent. */
	void	(*committed)(struct coord *, struct change_commit *, int);
	/* An agent's connection closed with an error (code, why): the
	 * leadership's word to the agents it does not lead (leader.c). */
	void	(*agent_close)(struct conn *, int, const char *);
	/* A hello held while this coordinator followed is answered now that
	 * it leads: returns 1, or 0 if none was kept (closed with
	 * ERROR_NOT_LEADER saying why). */
	int	(*hello_again)(struct conn *, const char *);
};
struct journal {
	struct journal_entry	*ring;		/* cap, by revision from head */
	size_t			 cap;
	size_t			 head;		/* the oldest entry's slot */
	size_t			 n;		/* entries kept */
	uint64_t		 first;		/* every event from it is kept */
	uint64_t		 published;	/* the last one committed */
	uint64_t		 staged;	/* the last one applied */
	size_t			 bytes;		/* of the entries' details */
	struct journal_loading	*loading;	/* journal_load.c, at a load */
	struct followerq	 followers;	/* http_events.c */
	size_t			 nfollowers;	/* follow=1 */
	size_t			 nfollowers_viewer; /* of them, the viewer's */
	struct event		*heartbeat;
	struct event		*wake;		/* http_events.c: followers
						   write at the next turn */
};

/* Who may make a request (docs/admin-api.md), with tokens configured. */
enum http_role {
	HTTP_ROLE_NONE,				/* anyone */
	HTTP_ROLE_VIEWER,			/* the viewer or operator token */
	HTTP_ROLE_OPERATOR,			/* the operator token */
};

/*
 * The admin API's routes (docs/admin-api.md), in the order a path's methods
 * are listed in a 405's Allow (the table: http_routes.c).  A pattern's "{job}" and "{id}" take one
 * segment each ("{job}" checked as a job id first); one ending in "*" takes
 * any path it begins.  Method 0 takes any (the handler answers 405 itself).  A local
 * route is answered by a follower too (HTTP_LOCAL), or by a follower from its copy
 * of the model once it has one (HTTP_REPLICA, replica.c); every other is the
 * leader's.
 */
#define HTTP_LOCAL	1
#define HTTP_REPLICA	2
struct http_route {
	int			 method;	/* enum evhttp_cmd_type */
	const char		*pattern;
	enum http_role		 role;
	int			 local;
	const char		*why401;	/* NULL: the usual reason */
	void	(*h0)(struct coord *, struct evhttp_request *);
	void	(*h1)(struct coord *, struct evhttp_request *, const char *);
	void	(*h2)(struct coord *, struct evhttp_request *, const char *,
		    const char *);
	void	(*hpath)(struct coord *, struct evhttp_request *,
		    const char *);		/* given the whole path */
};

struct coord_config {
	const char	*etcd_endpoints;	/* NULL: SQLite */
	const char	*etcd_prefix;
	int		 etcd_lease_ttl;	/* seconds */
	const char	*advertise_agent;	/* NULL: the agent listener */
	const char	*advertise_http;	/* NULL: the admin listener */
	const char	*etcd_cacert;		/* https endpoints: the CA */
	const char	*etcd_cert;		/* and a client certificate */
	const char	*etcd_key;
	int		 etcd_max_txn_ops;	/* 0: etcd's default, 128 */
	char		*listen_addr;
	char		*http_addr;
	char		*state_dir;
	char		*admin_token;		/* operator: reads and writes */
	char		*agent_token;
	char		*viewer_token;		/* reads only */
	int		 insecure;
	char		*tls_cert;		/* AgentLink TLS, all three or none */
	char		*tls_key;
	char		*tls_ca;
	char		*http_tls_cert;		/* HTTPS, the CA optional */
	char		*http_tls_key;
	char		*http_tls_ca;
	uint32_t	 heartbeat_ms;
	char		*ready_file;
	/* presigned URLs of traces in an object store (presign.c) */
	char		*s3_endpoint;		/* NULL: none */
	char		*s3_region;		/* NULL: $AWS_REGION, us-east-1 */
	uint32_t	 presign_ttl_s;
	/* bounds on peers */
	uint32_t	 hello_timeout_ms;
	size_t		 agent_outbuf_max;
	uint64_t	 seq_window;
	size_t		 http_max_conns;
	uint32_t	 http_timeout_ms;
	size_t		 events_journal_max;	/* COORD_JOURNAL_MAX */
	size_t		 job_ranks_max;		/* COORD_JOB_RANKS_MAX */
	size_t		 agent_ranks_max;	/* COORD_AGENT_RANKS_MAX */
	size_t		 rank_bytes_max;	/* COORD_RANK_BYTES_MAX */
	/* stragglers: the defaults of jobs that set none */
	int64_t		 straggler_lag;
	int		 straggler_rate_drop;	/* percent */
	int		 straggler_busy;	/* percent */
};

struct coord {
	struct event_base	*base;
	struct coord_config	 conf;
	struct presign		 presign;	/* --s3-endpoint's */
	struct store		*store;
	struct leader		*leader;	/* NULL: SQLite, the only one */
	struct replica		*replica;	/* replica.c, a follower's */
	int			 lock_fd;	/* state_dir's lock, -1: none */
	char			 advertise_agent[LEADER_ADDR_MAX];
	char			 advertise_http[LEADER_ADDR_MAX];
	struct evconnlistener	*listener;
	struct evhttp		*http;
	int			 agent_port;
	int			 http_port;
	struct event		*sigterm, *sigint, *sigpipe, *sighup;
	struct tls		 agent_tls;	/* ctx NULL: plaintext */
	struct tls		 http_tls;
	struct event		*tick;		/* housekeeping */
	struct event		*reaper;	/* frees dead connections */
	struct event		*committer;	/* group commit of events */
	struct event		*pusher;	/* pushes after the answer */
	struct connq		 conns;
	struct connq		 dead;
	struct connq		 acks;
	struct change_commitq	 commits;	/* changes not committed yet */
	/* The loop's own lateness (coord_tick()): time it was not free to
	 * read, which no peer's silence counts. */
	uint64_t		 tick_due_ms;
	uint64_t		 stalled_ms;
	uint64_t		 conns_freed;	/* since link_trim() last ran */
	void			*waiter;	/* who makes changes now: the
						 * request being routed */
	const struct coord_hooks *hooks;	/* coord_init() */
	struct rankq		 changed_ranks;	/* rows to store: with the batch
						 * of events, else at the tick
						 * (schedule_store_ranks()) */
	size_t			 nconns_ready;
	struct http_connq	 http_conns;	/* http.c, oldest first */
	struct http_connq	 http_pending;	/* not adopted yet */
	size_t			 nhttp_conns;
	int			 http_paused;	/* listener off at the cap */
	struct evconnlistener	*http_listener;
	const struct http_route	*http_table;	/* http_listen(): the routes */
	size_t			 http_ntable;
	struct event		*http_adopt;	/* takes new connections in */
	struct event		*http_sweep;	/* closes them at the deadline */
	struct streamq		 streams;	/* stream.c */
	struct journal		*journal;	/* journal.c */
	struct jobq		 jobs;
	size_t			 nunscheduled;	/* jobs nobody scheduled */
	struct nodeq		 nodes;
	struct nodebucket	 node_hash[COORD_NODE_BUCKETS];
	uint64_t		 generation;	/* highest handed out */
	size_t			 rank_bytes;	/* of all ranks' state */
	struct log_limit	 log_load;	/* the store's rows past a budget */
	int64_t			 started_ns;	/* wall clock at start */
	struct metrics		 metrics;
	TAILQ_HEAD(legacyq, legacy_entry) legacy;	/* legacy.c */
	size_t			 nlegacy;
	/* The leader's view rows for followers (viewrows.c): jobs written
	 * in each batch of stragglers' rows, legacy batches to write. */
	uint32_t		 strag_view_jobs[STRAGVIEW_BATCHES];
	uint8_t			 legacy_view_dirty[LEGACYVIEW_BATCHES];
};

#endif /* DYNPROF_STATE_H */
