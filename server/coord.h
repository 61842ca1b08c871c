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
#include "segment.h"
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
struct leader;

#define COORD_NODE_MAX		128	/* node name length */
#define COORD_PORT_MAX		65535	/* --listen, --http */
#define COORD_RANK_BUCKETS	4096
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
 * twice the agent's default queue (AGENT_QUEUE_MAX, agent/agent.h). */
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
	char			 ranks[SEG_RANKS_MAX];
	struct rank_set		 rankset;
	struct options		 options;
	char			 output_subdir[SEG_SUBDIR_MAX];
	enum window_state	 state;
	int			 finished;	/* left the pushed schedule */
	int			 refused;	/* left it: every node serving
						 * the job refused it (legacy) */
	int64_t			 created_ns;
	int64_t			 ended_ns;	/* cancelled or finished, wall
						 * clock; 0 not yet, or before
						 * the coordinator started */
	TAILQ_ENTRY(window)	 entry;		/* job->windows, by start_step */
};
TAILQ_HEAD(windowq, window);

struct job;

/* One event of a rank, as kept for status. */
struct rank_event {
	int		 kind;			/* Dynprof__V1__EventKind */
	uint32_t	 window_id;
	int64_t		 step;
	int64_t		 time_ns;
};

/* A rank's step rate, as straggler.c measures it. */
struct rank_pace {
	int64_t			 ref_step;	/* step at ref_ms, -1 none */
	uint64_t		 ref_ms;	/* monotonic */
	float			 rate;		/* steps/s, < 0 unknown */
	int			 straggling;	/* STRAGGLER_* reasons, 0 none */
};

/* A rank's busy time against its own history (busy.c). */
struct busy_history {
	float			 base;		/* its relative busy time, learnt */
	uint32_t		 nbase;		/* ticks learnt, to BUSY_LEARN_TICKS */
	float			 cusum;
	float			 rise;		/* ratio to base, -1 unknown */
	int			 changed;	/* it rose */
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
	struct rank_event	*events;
	size_t			 nevents;
	size_t			 events_cap;
	int			 native;	/* reported by its own process
						 * (not only observed) */
	int			 dirty;		/* step/state not yet stored */
	int			 in_batch;	/* on coord->batch_ranks */
	struct rank_pace	 pace;		/* straggler.c */
	struct node		*counted_on;	/* the node it counts against:
						 * reported by it, not gone */
	struct rank_busy	 busy;		/* straggler.c, busy.c */
	struct job		*job;
	LIST_ENTRY(rank)	 hentry;
	TAILQ_ENTRY(rank)	 entry;		/* job->ranks, by arrival */
	TAILQ_ENTRY(rank)	 batch_entry;
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
	int64_t			 created_ns;
	struct windowq		 windows;	/* every window ever, by start */
	struct rankq		 ranks;
	size_t			 nranks;
	struct rankbucket	*rank_hash;	/* COORD_RANK_BUCKETS, at the
						 * first rank: a job without
						 * ranks is small */
	struct rank		**by_rank;	/* sorted by rank number; stale
						 * once nby_rank != nranks */
	size_t			 nby_rank;
	size_t			 journal_refs;	/* journal.c entries of it */
	struct subq		 subs;
	uint64_t		 idle_ms;	/* monotonic: subs became empty */
	int			 ranks_dirty;
	int			 push_due;	/* link_push_later() */
	int			 windows_dirty;	/* a window may have ended */
	struct straggler	*strag;		/* straggler.c, NULL: none yet */
	struct rules		*rules;		/* rules.c, NULL: none */
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
	TAILQ_ENTRY(node_job)	 entry;
};
TAILQ_HEAD(node_jobq, node_job);

struct node {
	char			 name[COORD_NODE_MAX];
	struct conn		*conn;		/* NULL: lost */
	char			 address[64];
	int64_t			 connected_ns;	/* wall clock */
	int64_t			 last_seen_ns;
	uint64_t		 boot_id;	/* whose seq acked_seq counts */
	uint64_t		 acked_seq;	/* committed */
	uint64_t		 seen_seq;	/* committed or in the open batch */
	struct node_jobq	 jobs;
	struct log_limit	 log_bounds;	/* its lines past a budget */
	size_t			 nranks;	/* ranks counted_on it */
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
#define LEADER_TTL_DEFAULT	5	/* --etcd-lease-ttl, seconds */
#define LEADER_TTL_MIN		2	/* etcd's own minimum */
#define LEADER_TTL_MAX		300
#define LEADER_TICKS_PER_TTL	8	/* keepalives and campaigns per TTL */
#define LEADER_PROBE_MS		1000	/* etcd away: asked once a second */

/* The etcd flags' getopt values, parsed by leader_parse_flag(). */
enum {
	OPT_ETCD_ENDPOINTS = 300,
	OPT_ETCD_PREFIX,
	OPT_ETCD_LEASE_TTL,
	OPT_ADVERTISE_AGENT,
	OPT_ADVERTISE_HTTP,
	OPT_ETCD_CACERT,
	OPT_ETCD_CERT,
	OPT_ETCD_KEY,
	OPT_ETCD_MAX_TXN_OPS,
	OPT_ETCD_LAST = OPT_ETCD_MAX_TXN_OPS
};
/* Their rows of coord_parse_args()'s getopt table. */
#define LEADER_LONGOPTS							\
	{ "etcd-endpoints", required_argument, NULL, OPT_ETCD_ENDPOINTS }, \
	{ "etcd-prefix", required_argument, NULL, OPT_ETCD_PREFIX },	\
	{ "etcd-lease-ttl", required_argument, NULL, OPT_ETCD_LEASE_TTL }, \
	{ "advertise-agent", required_argument, NULL, OPT_ADVERTISE_AGENT }, \
	{ "advertise-http", required_argument, NULL, OPT_ADVERTISE_HTTP }, \
	{ "etcd-cacert", required_argument, NULL, OPT_ETCD_CACERT },	\
	{ "etcd-cert", required_argument, NULL, OPT_ETCD_CERT },	\
	{ "etcd-key", required_argument, NULL, OPT_ETCD_KEY },		\
	{ "etcd-max-txn-ops", required_argument, NULL, OPT_ETCD_MAX_TXN_OPS }

/* One committed event (journal.c). */
#define JOURNAL_RANK		1	/* a rank event: what is its kind */
#define JOURNAL_WINDOW		2	/* a window's change: */
#define JOURNAL_WINDOW_SCHEDULED 1
#define JOURNAL_WINDOW_CANCELLED 2
#define JOURNAL_WINDOW_DONE	3
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
 * published, its job pushed and the answer to its request (held until then,
 * change_hold()) sent once it is committed.
 */
struct change_commit {
	struct coord			*c;
	char				*job;
	uint64_t			 staged;	/* its journal's last */
	struct evhttp_request		*req;		/* NULL: none waits */
	int				 code;		/* held answer, 0: none */
	const char			*reason;
	struct evbuffer			*answer;
	struct event			*expiry;	/* CHANGE_HOLD_MS */
	TAILQ_ENTRY(change_commit)	 entry;		/* coord->commits */
};
TAILQ_HEAD(change_commitq, change_commit);
struct journal {
	struct journal_entry	*ring;		/* cap, at the first event */
	size_t			 cap;
	uint64_t		 first;		/* oldest revision kept */
	uint64_t		 published;	/* the last one committed */
	uint64_t		 staged;	/* the last one applied */
	size_t			 bytes;		/* of the entries' details */
	struct followerq	 followers;	/* http_events.c */
	size_t			 nfollowers;	/* follow=1 */
	size_t			 nfollowers_viewer; /* of them, the viewer's */
	struct event		*heartbeat;
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
	struct store		*store;
	struct leader		*leader;	/* NULL: SQLite, the only one */
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
	struct evhttp_request	*http_req;	/* the one being routed */
	struct rankq		 batch_ranks;	/* changed by the open batch */
	size_t			 nconns_ready;
	struct http_connq	 http_conns;	/* http.c, oldest first */
	struct http_connq	 http_pending;	/* not adopted yet */
	size_t			 nhttp_conns;
	int			 http_paused;	/* listener off at the cap */
	struct evconnlistener	*http_listener;
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
};

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

/* coord_addr.c */
int		 coord_parse_addr(const char *, struct sockaddr_storage *,
		    socklen_t *);
int		 coord_is_loopback(const char *);

/* link.c */
int	 link_listen(struct coord *, const char *);
void	 link_close_all(struct coord *);
void	 link_heartbeat(struct coord *, int);
void	 link_trim(struct coord *);
const char *link_node_state(const struct node *);
void	 link_send(struct conn *, const Dynprof__V1__CoordinatorMessage *);
void	 link_send_error(struct conn *, int, const char *);
struct evbuffer *link_frame(const Dynprof__V1__CoordinatorMessage *);
void	 link_send_frame(struct conn *, struct evbuffer *);
void	 link_conn_close(struct conn *, int, const char *);

/* link_dispatch.c */
void	 link_push(struct coord *, struct job *);
void	 link_push_later(struct coord *, struct job *);
void	 link_push_due(evutil_socket_t, short, void *);
void	 link_dispatch(struct conn *, const Dynprof__V1__AgentMessage *);
void	 link_sub_remove(struct sub *);

/*
 * A window asked for (by the admin API, a rule), before the job's steps
 * resolve it: its steps, ranks, output directory and options.
 */
struct window_request {
	int64_t		 start, stop, in, steps, roundup;
	int		 has_start, has_stop, has_in, has_steps, has_round;
	int		 force;		/* a start every live rank passed */
	const char	*ranks;		/* NULL: every rank */
	const char	*output_subdir;	/* NULL: none */
	const struct options_over *options;	/* NULL: the job's defaults */
};

/* A refused request or change: the status, the field at fault, the message. */
struct refusal {
	int		 code;
	const char	*field;		/* NULL, a key of the body or fieldbuf */
	char		 fieldbuf[128];
	char		 msg[512];
};

/* The budgets a rank may be refused by (schedule_ranks.c). */
enum rank_budget {
	RANK_BUDGET_JOB,			/* --max-ranks-per-job */
	RANK_BUDGET_AGENT,			/* --max-ranks-per-agent */
	RANK_BUDGET_MEMORY,			/* --rank-memory-max */
};

/* schedule.c */
struct job	*schedule_job_find(struct coord *, const char *);
struct job	*schedule_job_get(struct coord *, const char *);
struct job	*schedule_job_peer(struct coord *, const char *, const char *);
int	 schedule_job_unscheduled(const struct job *);
size_t	 schedule_unscheduled_count(struct coord *);
void	 schedule_reap_jobs(struct coord *, uint64_t);
struct rank	*schedule_rank_find(struct job *, int32_t);
struct rank	*schedule_rank_take(struct coord *, struct job *, int32_t,
		    struct node *);
void	 schedule_rank_free(struct coord *, struct rank *);
void	 schedule_rank_set_string(struct coord *, struct rank *, char **,
	    const char *);
struct node	*schedule_node_find(struct coord *, const char *);
struct node	*schedule_node_get(struct coord *, const char *);
struct node_job	*schedule_node_job(struct node *, const char *, int);
extern const struct options_layer options_coord;
void	 options_init(struct options *);
void	 options_clear(struct options *);
int	 options_copy(struct options *, const struct options *);
int	 options_parse(const void *, struct options *, const char **,
	    const char **);
void	*options_to_json(const struct options *);
char	*options_dump(const struct options *);
int	 options_load(const char *, struct options *);
void	 options_over_init(struct options_over *);
void	 options_over_clear(struct options_over *);
int	 options_over_copy(struct options_over *, const struct options_over *);
int	 options_over_parse(const void *, struct options_over *,
	    const char **, const char **);
int	 options_over_apply(struct options *, const struct options_over *,
	    const char **, const char **);
int	 schedule_rank_add_event(struct coord *, struct rank *,
	    const struct rank_event *, struct node *);
struct window	*window_new(void);
void	 window_free(struct window *);
void	 schedule_window_insert(struct job *, struct window *);
struct window	*schedule_window_find(struct job *, uint32_t);
int	 schedule_pending_count(const struct job *);
struct window	*schedule_overlap(struct coord *, const struct job *, int64_t,
		    int64_t);
int	 schedule_make_room(struct coord *, struct job *, struct window **,
	    size_t *);
const char	*schedule_window_state(const struct job *,
		    const struct window *);
Dynprof__V1__JobConfig	*schedule_build_config(struct job *);
void	 schedule_free_config(Dynprof__V1__JobConfig *);
int	 schedule_apply_event(struct coord *, struct node *,
	    const Dynprof__V1__RankEvent *);
void	 schedule_apply_progress(struct coord *, struct node *,
	    const Dynprof__V1__Progress *);
int	 schedule_step_valid(int64_t);
void	 schedule_finish_windows(struct coord *, int);
void	 schedule_flush_ranks(struct coord *);
void	 schedule_compact_jobs(struct coord *);
int	 schedule_store_batch_ranks(struct coord *);
void	 schedule_free_all(struct coord *);
int	 schedule_window_resolve(const struct window_request *, int64_t,
	    int64_t *, int64_t *, struct refusal *);
int	 schedule_rank_has_event(const struct rank *, uint32_t, int);
int64_t	 schedule_job_max_step(const struct coord *, const struct job *);
int64_t	 schedule_job_min_step(const struct coord *, const struct job *);
int64_t	 schedule_job_step_now(const struct coord *, const struct job *);
uint32_t schedule_job_ranks_alive(const struct coord *, const struct job *);
/* Past the RankStates: a rank on a lost node. */
#define RANKS_STATE_LAST	DYNPROF__V1__RANK_STATE__RANK_OBSERVED_COMPLETE
#define RANKS_STATE_UNKNOWN	(RANKS_STATE_LAST + 1)
/* The last node whose state schedule_rank_state() looked up. */
struct ranks_memo {
	char		 node[COORD_NODE_MAX];
	int		 lost;
};
struct rank	**schedule_rank_index(struct job *, size_t *);
size_t	 schedule_rank_index_after(struct rank **, size_t, int64_t);
int	 schedule_rank_state(struct coord *, const struct rank *,
	    struct ranks_memo *);
const char	*schedule_rank_state_name(int);

/* http.c */
/* Who may make a request (docs/admin-api.md), with tokens configured. */
enum http_role {
	HTTP_ROLE_NONE,				/* anyone */
	HTTP_ROLE_VIEWER,			/* the viewer or operator token */
	HTTP_ROLE_OPERATOR,			/* the operator token */
};
int	 http_listen(struct coord *, const char *);
void	 http_close(struct coord *);
int	 http_is_viewer(struct coord *, struct evhttp_request *);
int	 change_hold(struct coord *, struct evhttp_request *, int,
	    const char *, struct evbuffer *);
void	 http_send_json(struct coord *, struct evhttp_request *, int,
	    struct evbuffer *);
void	 http_reply(struct coord *, struct evhttp_request *, int,
	    struct json_t *);
void	 http_error(struct coord *, struct evhttp_request *, int, const char *,
	    const char *, ...) __attribute__((format(printf, 5, 6)));
void	 http_refused(struct coord *, struct evhttp_request *,
	    const struct refusal *);
struct json_t *http_body(struct coord *, struct evhttp_request *);
void	 http_method_not_allowed(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_conn_stream(struct coord *, struct evhttp_connection *,
	    struct stream *);
void	 http_conn_hold(struct coord *, struct evhttp_request *, int);

/* stream.c */
struct stream	*stream_start(struct coord *, struct evhttp_request *,
		    const char *, int (*)(struct stream *, struct evbuffer *),
		    void (*)(struct stream *), void *);
void	 stream_wake(struct stream *);
void	 stream_abort(struct stream *);
void	 stream_end(struct stream *);
void	 stream_conn_closed(struct stream *);
void	 stream_free(struct stream *);
void	 stream_free_all(struct coord *);

/* http_jobs.c */
void	 http_get_jobs(struct coord *, struct evhttp_request *);
void	 http_get_job(struct coord *, struct evhttp_request *, const char *);
void	 http_get_config(struct coord *, struct evhttp_request *, const char *);
void	 http_post_window(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_delete_window(struct coord *, struct evhttp_request *,
	    const char *, const char *);
void	 http_put_config(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_get_nodes(struct coord *, struct evhttp_request *);
int	 http_window_parse(const void *, struct window_request *,
	    struct options_over *, struct refusal *);
int	 http_config_parse(const void *, int64_t *, int64_t *, struct options *,
	    struct refusal *);

/* summary.c */
int	 summary_add(struct coord *, struct job *, struct json_t *);
struct json_t *summary_time(int64_t);
struct json_t *summary_window_status(const struct job *,
	    const struct window *, const char *);

/* http_ranks.c */
/* Which ranks a listing (or a count) takes: 0 or "" for any. */
struct ranks_filter {
	uint32_t	 states;		/* bit (1 << state) */
	char		 node[COORD_NODE_MAX];
	uint32_t	 window;
};
void	 http_get_ranks(struct coord *, struct evhttp_request *,
	    const char *);
void	*http_job_stream_new(struct coord *, struct evhttp_request *,
	    const char *, size_t);
struct evkeyvalq;
int	 http_query(struct evhttp_request *, struct evkeyvalq *,
	    struct refusal *);
void	 ranks_json_string(struct evbuffer *, const char *);
void	 ranks_json_time(struct evbuffer *, int64_t);
void	 ranks_write(struct evbuffer *, const struct rank *, int);
int	 ranks_filter_match(const struct ranks_filter *, const struct rank *,
	    int);
int	 ranks_parse_int(const char *, long long, long long, long long *);

/* journal.c */
int	 journal_init(struct coord *, uint64_t);
void	 journal_free(struct coord *);
void	 journal_reset(struct coord *);
uint64_t journal_revision(const struct coord *);
uint64_t journal_first(const struct coord *);
void	 journal_stage_rank(struct coord *, struct job *, const struct rank *,
	    const struct rank_event *, struct node *, const char *);
void	 journal_stage_window(struct coord *, struct job *,
	    const struct window *, int, uint64_t);
void	 journal_publish(struct coord *);
uint64_t journal_staged(const struct coord *);
void	 journal_publish_to(struct coord *, uint64_t);
void	 journal_discard(struct coord *);
const struct journal_entry *journal_get(const struct coord *, uint64_t);
void	 journal_forget_job(struct coord *, struct job *);

/* http_events.c */
void	 http_get_events(struct coord *, struct evhttp_request *,
	    const char *);
void	 events_wake(struct coord *);
void	 events_metrics(struct coord *, struct evbuffer *);

/* change.c */
int	 change_refuse(struct refusal *, int, const char *, const char *, ...)
	    __attribute__((format(printf, 4, 5)));
int	 change_refuse_options(struct refusal *, const char *, const char *);
int	 change_window_make(const struct options *,
	    const struct window_request *, struct window **, struct refusal *);
int	 change_window_add(struct coord *, const char *,
	    const struct window_request *, struct window **, struct job **,
	    struct refusal *);
int	 change_window_cancel(struct coord *, const char *, uint32_t,
	    struct job **, struct refusal *);
int	 change_config_set(struct coord *, const char *, char *,
	    struct options *, int64_t, int64_t, struct job **, struct window **,
	    struct refusal *);
int	 change_windows_finish(struct coord *, struct job *, struct window **,
	    size_t);
int	 change_rules_set(struct coord *, const char *, const char *,
	    struct job **, struct refusal *);

/* median.c */
int64_t	 median_select(int64_t *, size_t, size_t);

/* busy.c */
#define BUSY_OVER		1	/* over the job's median by > P % */
#define BUSY_CHANGE		2	/* rose against its own history */
#define BUSY_MIN_RANKS		2	/* ranks with a busy time to judge any */
/* One rank's busy time for a tick's judgement. */
struct busy_rank {
	uint32_t		 busy_us;	/* in: its average, 0 none */
	int			 fresh;		/* in: measured since last tick */
	struct busy_history	*hist;		/* in/out: its own history */
	void			*arg;		/* the caller's */
	int			 flags;		/* out: BUSY_* */
	float			 score;		/* out: fastest / its own, 0-1 */
	float			 over;		/* out: its own / median */
	float			 rise;		/* out: over its history, -1 */
};
struct busy_job {
	uint32_t		 median_us;	/* 0: not judged */
	uint32_t		 fastest_us;
	uint32_t		 slowest_us;
	uint32_t		 nover, nchange;
};
void	 busy_history_reset(struct busy_history *);
int	 busy_history_update(struct busy_history *, float, int);
int	 busy_judge(struct busy_rank *, size_t, int, struct busy_job *);

/* straggler.c */
#define STRAGGLER_LAG		1	/* step behind the median by > lag */
#define STRAGGLER_SLOW		2	/* rate under the job's by > drop % */
#define STRAGGLER_BUSY		4	/* busy time over the median by > P % */
#define STRAGGLER_BUSY_CHANGE	8	/* busy time rose against its own */
struct straggler_entry {
	int32_t		 rank;
	int		 reasons;		/* STRAGGLER_* */
	int64_t		 step;
	int64_t		 lag;			/* median step - step */
	float		 rate;			/* steps/s, < 0 unknown */
	uint32_t	 busy_us;		/* average, 0 none */
	float		 busy_score;		/* fastest / its own, -1 */
	float		 busy_over;		/* its own / median, -1 */
	float		 busy_rise;		/* against its history, -1 */
	char		 node[COORD_NODE_MAX];
};
void	 straggler_tick(struct coord *);
void	 straggler_job_free(struct job *);
int	 straggler_set_thresholds(struct job *, int64_t, int);
void	 straggler_own_thresholds(const struct job *, int64_t *, int *);
int	 straggler_set_busy(struct job *, int);
int	 straggler_own_busy(const struct job *);
int	 straggler_busy(const struct coord *, const struct job *);
void	 straggler_thresholds(const struct coord *, const struct job *,
	    int64_t *, int *);
size_t	 straggler_list(const struct job *, const struct straggler_entry **);
int64_t	 straggler_median_step(const struct job *);
struct json_t *straggler_json(const struct coord *, const struct job *);
struct json_t *straggler_json_all(const struct coord *, const struct job *);
void	 straggler_metrics(struct coord *, struct evbuffer *);

/* rules.c */
struct rules;
void	 rules_tick(struct coord *);
void	 rules_free(struct rules *);
int	 rules_load(struct job *, const char *);
char	*rules_dump(const struct job *);
struct json_t *rules_json(const struct job *);
int	 rules_add(struct coord *, const char *, struct json_t *,
	    struct json_t **, struct refusal *);
int	 rules_delete(struct coord *, const char *, uint32_t,
	    struct refusal *);
int	 rules_set_thresholds(struct coord *, const char *, struct json_t *,
	    struct refusal *);
void	 rules_metrics(struct coord *, struct evbuffer *);

/* http_ui.c, and the page's files (server/ui/embed.cmake) */
struct ui_file {
	const char		*name;		/* NULL ends ui_files[] */
	const char		*type;		/* Content-Type */
	const unsigned char	*data;
	size_t			 len;
};
extern const struct ui_file ui_files[];
void	 http_ui_route(struct coord *, struct evhttp_request *, const char *);
void	 http_get_job_nodes(struct coord *, struct evhttp_request *,
	    const char *);

/* http_rules.c */
void	 http_get_stragglers(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_put_stragglers(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_get_rules(struct coord *, struct evhttp_request *, const char *);
void	 http_post_rule(struct coord *, struct evhttp_request *, const char *);
void	 http_delete_rule(struct coord *, struct evhttp_request *,
	    const char *, const char *);

/* load.c */
int	 load_model(struct coord *);

/* valid.c */
struct store_window;
struct store_job;
struct store_rank;
int	 valid_generation(uint64_t);
int	 valid_window_steps(int64_t, int64_t, struct refusal *);
int	 valid_window_ranks(struct window *, const char *, struct refusal *);
int	 valid_window_subdir(struct window *, const char *, struct refusal *);
int	 valid_window_row(const struct store_window *, struct window *,
	    struct refusal *);
int	 valid_job_row(const struct store_job *, struct options *,
	    struct refusal *);
const char	*valid_event_text(const char *, const char *);
size_t	 valid_event_error_len(const char *);
int	 valid_rank_row(const struct store_rank *, struct refusal *);
int	 valid_event_row(const char *, int32_t, const struct rank_event *,
	    struct refusal *);
int	 valid_agent_row(const char *, struct refusal *);

/* legacy.c */
void	 legacy_status(struct coord *, struct node *,
	    const Dynprof__V1__LegacyStatus *);
int	 legacy_known(struct coord *, const char *, const char *);
int	 legacy_idle(struct coord *, const char *, const char *);
void	 legacy_job_json(struct coord *, const char *, struct json_t *);
void	 legacy_forget_node(struct coord *, const char *);
void	 legacy_free_all(struct coord *);
const char	*legacy_ranks_refused(struct coord *, const char *);
int	 legacy_refused_everywhere(struct coord *, const struct job *,
	    uint32_t);
/* leader.c */
void	 leader_usage(FILE *);
int	 leader_parse_flag(struct coord_config *, int, const char *,
	    const char *);
struct store	*leader_open(struct coord *, const char **);
int	 leader_start(struct coord *);
void	 leader_stop(struct coord *);
int	 leader_is_etcd(const struct coord *);
int	 leader_is_follower(const struct coord *);
const char	*leader_role(const struct coord *);
const char	*leader_agent(const struct coord *);
void	 leader_redirect(struct coord *, struct evhttp_request *);
void	 leader_metrics(struct coord *, struct evbuffer *);
void	 leader_model_unsure(struct coord *);

/* metrics.c */
void	 metrics_observe_latency(struct metrics *, double);
void	 metrics_render(struct coord *, struct evbuffer *);

#endif /* DYNPROF_COORD_H */
