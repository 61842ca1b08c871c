/*
 * What the agent's parts share: the agent's state (struct agent) and each
 * part's entry points, grouped by file (agent.h says what each file owns).
 * agent.c, the composition root, wires the parts; they include this header,
 * never agent.h, and reach the housekeeping timer through a->loop.
 */

#ifndef DYNPROF_AGENT_PARTS_H
#define DYNPROF_AGENT_PARTS_H

#include <sys/queue.h>
#include <sys/types.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "dynprof.pb-c.h"
#include "failover.h"
#include "log.h"
#include "segment.h"
#include "tls.h"
#include "tracesum.h"

struct agent;
struct evbuffer;

#define AGENT_DEFAULT_SOCKET	"/run/dynprof/agent.sock"
#define AGENT_SAMPLE_MS		500
#define AGENT_IDLE_SAMPLE_MS	2000	/* when nothing moved at the last sample */
#define AGENT_QUEUE_MAX		65536
#define AGENT_GRACE_S		60
#define AGENT_CONF_MAX		(1024 * 1024)	/* bytes of --conf FILE */
#define AGENT_LOCK_FILE		"dynprof-agent.lock"	/* in --shm-dir */
#define AGENT_HEARTBEAT_MS	2000	/* until a Welcome says otherwise */
#define AGENT_DGRAM_MAX		8192	/* a RankEvent is well under 2 KiB */
#define AGENT_TOKEN_MAX		1024
#define AGENT_SHM_BUDGET	(16ULL << 20)	/* --shm-budget: segments made */
#define AGENT_TRACE_SETTLE_S	10	/* --trace-settle */
#define AGENT_UPLOAD_STALL_S	30	/* --upload-stall */
#define AGENT_UPLOAD_BACKOFF_S	2	/* --upload-backoff */
/*
 * --upload-part-size: multipart only past one PUT's bound (5 GiB).  The
 * parts go up one at a time and a failure starts again from the first, so
 * below it they buy no speed and no resumption, only a second read of the
 * archive for each part's sha256 (bench/README.md, "collect").
 */
#define AGENT_UPLOAD_PART_SIZE	(5ULL << 30)

/* Everything the flags and the config file set. */
struct agent_options {
	char		 coordinator[2048];	/* HOST:PORT[,...], "" for none */
	char		 node[256];
	char		 token_file[PATH_MAX];
	char		 tls_cert[PATH_MAX];	/* AgentLink over TLS: all three */
	char		 tls_key[PATH_MAX];
	char		 tls_ca[PATH_MAX];
	char		 socket_path[108];	/* sun_path */
	char		 shm_dir[PATH_MAX];
	mode_t		 shm_mode;
	int		 sample_ms;
	size_t		 queue_max;
	int		 grace_s;
	char		 config_file[PATH_MAX];	/* standalone */
	char		 job[SEG_JOB_MAX + 1];	/* standalone */
	char		 conf[PATH_MAX];
	char		 ready_file[PATH_MAX];
	char		 legacy_dir[PATH_MAX];	/* "" none */
	int		 legacy_shm;		/* also MindSpore's shm record */
	size_t		 legacy_per_uid;	/* job directories of one owner */
	int		 legacy_window_max_s;	/* a window seen to end by then */
	uint64_t	 shm_budget;		/* bytes of segments it creates */
	char		 trace_store[PATH_MAX];	/* "" none */
#define AGENT_STORE_ALLOW_MAX	8
	char		 store_allow[AGENT_STORE_ALLOW_MAX][PATH_MAX];
	size_t		 nstore_allow;	/* --trace-store-allow: where a job's
					 * own directory store may be */
	int		 trace_settle_s;
	char		 trace_upload[PATH_MAX];	/* s3://bucket/prefix, "" none */
	char		 s3_endpoint[512];
	char		 s3_region[64];
	char		 s3_credentials[PATH_MAX];
	uint64_t	 upload_rate;		/* bytes/s, 0: no cap */
	int		 upload_stall_s;	/* a try given up after */
	int		 upload_backoff_ms;	/* after the first failed try */
	uint64_t	 upload_part_size;	/* over it: multipart */
	int		 log_level;
	int64_t		 test_clock_offset_ns;	/* --test-clock-offset */
	char		 test_stop_at[32];	/* --test-stop-at, "" none */
};

/* Counters of everything refused or lost, logged at exit. */
struct agent_stats {
	uint64_t	 bad_frames;		/* framing errors from the coordinator */
	uint64_t	 bad_messages;		/* undecodable or out of order */
	uint64_t	 unknown_messages;	/* types this agent does not know */
	uint64_t	 bad_configs;		/* pushed configs refused */
	uint64_t	 configs_applied;
	uint64_t	 bad_datagrams;		/* truncated, oversized, undecodable */
	uint64_t	 foreign_datagrams;	/* the sender does not hold the slot */
	uint64_t	 events_forwarded;
	uint64_t	 events_dropped;	/* queue overflow, oldest first */
	uint64_t	 standalone_errors;	/* invalid profiler_config.json */
	uint64_t	 samples;
	uint64_t	 segments_dropped;	/* truncated or shrunk under us */
	uint64_t	 shm_refused;		/* a segment over --shm-budget */
	uint64_t	 legacy_refused;	/* legacy directories, all below */
	uint64_t	 legacy_refused_name;	/* not a job id */
	uint64_t	 legacy_refused_type;	/* a link, a file, not a dir */
	uint64_t	 legacy_refused_max;	/* over LEGACY_JOBS_MAX */
	uint64_t	 legacy_refused_uid;	/* over --legacy-per-uid */
	uint64_t	 dirs_made;		/* users' directories made for ranks */
	uint64_t	 dirs_taken_back;	/* ... from another user's squat */
	uint64_t	 collect_unscheduled;	/* a slot's window not this agent's */
};

/*
 * Where a queued event was read: entry seq of incarnation inc of the log of slot
 * slot of job's segment (docs/events.md).  slot -1: read from no log.
 */
/* origin.slot of an event that no slot's log holds (queue_push(), NULL). */
#define QUEUE_ORIGIN_NONE	(-1)
/* origin.slot of a trace collection's report (collect.c): inc holds its
 * window, seq its rank. */
#define QUEUE_ORIGIN_COLLECT	(-2)
struct queue_origin {
	char		 job[SEG_JOB_MAX + 1];
	uid_t		 uid;			/* whose segment */
	int32_t		 slot;
	uint32_t	 inc;
	uint32_t	 seq;
};

/* A rank event waiting for the coordinator's commit. */
struct queue_entry {
	uint64_t	 seq;
	uint8_t		*buf;			/* packed RankEvent */
	size_t		 len;
	struct queue_origin origin;
};

/* A bounded FIFO of queue_entry, oldest dropped on overflow. */
struct queue {
	struct queue_entry *ring;
	size_t		 cap;			/* allocated */
	size_t		 head;
	size_t		 len;
	size_t		 max;
	uint64_t	 dropped;
};

/* Windows a job's segment was given, remembered for collection. */
#define AGENT_WINDOWS_KNOWN	64

/* A rank as last sampled, for the job's Progress. */
struct agent_rank_sample {
	int32_t		 rank;
	int32_t		 pid;
	int64_t		 step;
	uint32_t	 state;
	uid_t		 uid;
	uint64_t	 busy_count;		/* dynprof_mark_comm(), 0: none */
	uint32_t	 busy_last_us;
	uint32_t	 busy_avg_us;
	uint32_t	 busy_max_us;
	int		 slot;			/* its index in the segment */
};

/*
 * A job served on this node, in one user's segment (docs/segments.md): the
 * jobs of one name (one per uid whose ranks run it) are siblings, with one
 * subscription and one Progress between them.
 */
struct agent_job {
	TAILQ_ENTRY(agent_job) entry;
	char		 name[SEG_JOB_MAX + 1];
	uid_t		 uid;			/* the segment's owner */
	struct segment	 seg;
	uint64_t	 applied;		/* generation in the segment */
	int		 subscribed;		/* told the coordinator */
	int		 created;		/* by this agent: in --shm-budget */
	int		 keep;			/* standalone job: never removed */
	int		 nlive;
	struct agent_rank_sample sampled[SEG_MAX_SLOTS];	/* nlive of them */
	uint64_t	 sample_sig;		/* of sampled[] */
	int64_t		 empty_since_ms;	/* 0: some rank alive */
	uint64_t	 progress_sig;
	int		 progress_dirty;	/* send it at the next chance */
	int32_t		 slot_pid[SEG_MAX_SLOTS];	/* as last sampled */
	/* Each slot's log: the incarnation read and its last entry queued. */
	uint32_t	 log_inc[SEG_MAX_SLOTS];
	uint32_t	 log_read[SEG_MAX_SLOTS];
	/*
	 * The pidfd each slot's holder sent with a believed datagram, for the
	 * incarnation it held then (docs/containers.md); watched for its exit.
	 */
	int		 pidfd[SEG_MAX_SLOTS];		/* -1: none */
	uint32_t	 pidfd_inc[SEG_MAX_SLOTS];
	struct event	*pidfd_ev[SEG_MAX_SLOTS];
	/*
	 * The uid the kernel gave for the holder of each slot, with a believed
	 * datagram of the incarnation it held then (0: none yet).
	 */
	uid_t		 slot_uid[SEG_MAX_SLOTS];
	uint32_t	 slot_uid_inc[SEG_MAX_SLOTS];
	/* The window each slot's incarnation was last noted stopped in
	 * for --trace-store (collect.c): noted once, not at every sample. */
	uint32_t	 collect_window[SEG_MAX_SLOTS];
	uint32_t	 collect_inc[SEG_MAX_SLOTS];
	/*
	 * The windows this agent wrote into the segment (or found in it when
	 * it adopted it), the newest AGENT_WINDOWS_KNOWN: a slot is the rank's
	 * to write, and a trace is collected only for one of these.
	 */
	uint32_t	 windows_known[AGENT_WINDOWS_KNOWN];
	uint32_t	 nwindows_known;	/* noted so far: a ring */
	/* The newest arrival each slot's incarnation sent (arrive.c). */
	int64_t		 arrive_sent[SEG_MAX_SLOTS];	/* step, -1 none */
	uint32_t	 arrive_inc[SEG_MAX_SLOTS];
};
TAILQ_HEAD(agent_jobs, agent_job);

enum upstream_state {
	UPSTREAM_NONE,		/* no coordinator configured */
	UPSTREAM_WAIT,		/* backing off before the next attempt */
	UPSTREAM_CONNECTING,
	UPSTREAM_HELLO,		/* hello sent, waiting for Welcome */
	UPSTREAM_READY,
};

/*
 * What the coordinator link hands up to the parts above it.  agent.c sets
 * them: upstream.c calls no part above it.
 */
struct upstream_hooks {
	/* A JobConfig came. */
	int	(*config)(struct agent *, const Dynprof__V1__JobConfig *);
	/* The event read from origin is committed, or needs no commit. */
	void	(*acked)(struct agent *, const struct queue_origin *);
	/* A Welcome came: what this node serves, told again. */
	void	(*welcomed)(struct agent *);
	/* The clock offset to the coordinator is news (offset.c). */
	void	(*retimed)(struct agent *);
};

struct upstream {
	const struct upstream_hooks *hooks;	/* set by agent.c */
	enum upstream_state state;
	struct failover_addr addrs[FAILOVER_ADDRS_MAX];	/* --coordinator */
	struct failover	 fo;			/* whom next, when */
	struct bufferevent *bev;
	int64_t		 retry_at_ms;		/* UPSTREAM_WAIT: next attempt */
	uint32_t	 heartbeat_ms;
	int64_t		 last_recv_ms;
	int64_t		 last_sent_ms;
	uint64_t	 boot_id;
	uint64_t	 next_seq;		/* the next event's seq */
	uint64_t	 acked;			/* committed by the coordinator */
	struct queue	 queue;
	uint64_t	 connects;
	struct tls	 tls;			/* ctx NULL: plaintext */
};

/* Coordinator heartbeats kept for the clock offset (offset.c). */
#define OFFSET_KEEP	8

/* This node's clock against the coordinator's (offset.c). */
struct agent_offset {
	int64_t		 d[OFFSET_KEEP];	/* receive - send, ns */
	uint32_t	 n;
	uint32_t	 head;
	int		 known;
	int64_t		 offset_ns;		/* ours - the coordinator's */
	int64_t		 said_ns;		/* as last sent */
	int64_t		 applied_ns;		/* what the segments' time
						   windows were written with */
};

struct standalone;
struct legacy;
struct collect;

/*
 * The housekeeping timer as the parts see it.  agent.c owns the timer and
 * sets a->loop to its own functions: a part asks through it and never calls
 * up into agent.c.
 */
struct agent_loop {
	/* Does what is due now (early: what is due within half an interval). */
	void	(*housekeep)(struct agent *, int);
	/* Arms the timer for the earliest thing due. */
	void	(*schedule)(struct agent *);
	/* Asks for a sample soon: a rank attached or something moved. */
	void	(*wake_sampler)(struct agent *);
};

struct agent {
	struct event_base	*base;
	int			 stopping;	/* SIGTERM or SIGINT came */
	struct agent_options	 opts;
	int			 argc;		/* kept for SIGHUP */
	char			**argv;
	char			 token[AGENT_TOKEN_MAX];
	struct agent_stats	 stats;
	struct agent_jobs	 jobs;
	struct upstream		 up;
	struct agent_offset	 offset;
	struct standalone	*sa;
	struct legacy		*lg;		/* --legacy-dir, or NULL */
	struct collect		*collect;	/* --trace-store, or NULL */
	int			 rank_fd;
	int			 shm_lock_fd;	/* --shm-dir's lock, -1: none */
	struct event		*rank_ev;
	struct log_limit	 shm_log;	/* segments over --shm-budget */
	int64_t			 rank_log_start;	/* bad datagram log limit */
	int			 rank_log_count;
	uint64_t		 rank_log_suppressed;
	struct log_limit	 dir_limit;	/* users' directories made */
	struct log_limit	 seg_limit;	/* segments a datagram opens */
	const struct agent_loop	*loop;		/* set by agent.c */
	struct event		*tick_ev;
	struct event		*sig_ev[4];
	int64_t			 next_sample_ms;
	int64_t			 upstream_next_ms;	/* 0: nothing due */
	int			 moved;		/* something changed at the last sample */
	struct seg_config	*scratch;	/* one config buffer for every apply */
};

/* guard.c */
int	 guard_install(void);
int	 guard_register(const void *, size_t);
void	 guard_unregister(const void *);
int	 guard_call(int (*)(void *), void *, int *);
const void *guard_fault_base(void);

/* queue.c */
void	 queue_init(struct queue *, size_t);
void	 queue_clear(struct queue *);
int	 queue_push(struct queue *, uint64_t, const uint8_t *, size_t,
	    const struct queue_origin *);
void	 queue_ack(struct queue *, uint64_t);
size_t	 queue_length(const struct queue *);
const struct queue_entry *queue_at(const struct queue *, size_t);

/* upstream.c */
int	 upstream_init(struct agent *);
void	 upstream_free(struct agent *);
void	 upstream_reload_tls(struct agent *);
int64_t	 upstream_tick(struct agent *, int64_t, int);
void	 upstream_event(struct agent *, const Dynprof__V1__RankEvent *,
	    const struct queue_origin *);
void	 upstream_subscribe_name(struct agent *, const char *, uint64_t);
void	 upstream_unsubscribe_name(struct agent *, const char *);
void	 upstream_applied(struct agent *, struct agent_job *);
void	 upstream_applied_name(struct agent *, const char *, uint64_t);
void	 upstream_progress(struct agent *, struct agent_job *,
	    const Dynprof__V1__Progress *);
int	 upstream_send(struct agent *, Dynprof__V1__AgentMessage *);
int	 upstream_ready(const struct agent *);
int	 upstream_goodbye(struct agent *);
int	 upstream_dispatch(struct agent *,
	    const Dynprof__V1__CoordinatorMessage *);
int	 upstream_frame_event(struct evbuffer *, uint64_t, uint64_t,
	    const uint8_t *, size_t);

/* upstream_addr.c */
const char *upstream_addr_text(const struct agent *);
void	 upstream_addr_not_leader(struct agent *, const char *);

/* ranks_decode() results. */
#define RANKS_OK		0
#define RANKS_UNDECODABLE	-1	/* not a RankEvent */
#define RANKS_BAD_JOB		-2	/* an invalid job id */
#define RANKS_FOREIGN		-3	/* it claims another sender's pid */

/* ranks.c */
int	 ranks_open(struct agent *);
void	 ranks_close(struct agent *);
int	 ranks_decode(const uint8_t *, size_t, pid_t, Dynprof__V1__RankEvent **,
	    const char **);
int	 ranks_check_slot(const struct segment *, const Dynprof__V1__RankEvent *,
	    pid_t);
int	 ranks_check_sender(const struct segment *,
	    const Dynprof__V1__RankEvent *, pid_t, uint32_t *);

/* jobs.c */
struct agent_job *jobs_find(struct agent *, const char *);
struct agent_job *jobs_find_uid(struct agent *, uid_t, const char *);
int	 jobs_subscribed(struct agent *, const char *);
int	 jobs_sibling_subscribed(struct agent *, const struct agent_job *, int);
uid_t	 jobs_rank_uid(const struct agent_job *, int);
void	 jobs_note_windows(struct agent_job *, const struct seg_config *);
int	 jobs_window_known(const struct agent_job *, uint32_t);

/* segments.c */
int	 segments_adopt_all(struct agent *);
struct agent_job *segments_get(struct agent *, const char *, int);
struct agent_job *segments_get_uid(struct agent *, uid_t, const char *, int);
int	 segments_apply(struct agent *, const Dynprof__V1__JobConfig *);
void	 segments_subscribe(struct agent *, struct agent_job *);
void	 segments_unsubscribe(struct agent *, struct agent_job *);
void	 segments_welcomed(struct agent *);
int	 segments_sample(struct agent *, int64_t);
void	 segments_rank_seen(struct agent *, struct agent_job *);
int64_t	 segments_next_due(struct agent *);
void	 segments_close_all(struct agent *);
void	 segments_drop(struct agent *, struct agent_job *, const char *);
void	 segments_drop_faulted(struct agent *);
void	 segments_keep_pidfd(struct agent *, struct agent_job *, int, uint32_t,
	    int);

/* arrive.c */
size_t	 arrive_read(struct agent_job *, int, int64_t *, int64_t *);

/* events.c */
int	 events_read_log(struct agent *, struct agent_job *, int);
int	 events_log_acked(struct agent *, const struct queue_origin *);
void	 events_rank_gone(struct agent *, struct agent_job *,
	    const struct seg_slot *, int);

/* apply.c */
int	 apply_jobconfig(const Dynprof__V1__JobConfig *, struct seg_config *,
	    const char **);
void	 apply_clock(struct seg_config *, int64_t, int64_t, int64_t);

/* segments.c, time windows */
void	 segments_retime(struct agent *);

/* offset.c */
int64_t	 offset_wall_ns(const struct agent *);
void	 offset_reset(struct agent *);
int	 offset_note(struct agent *, int64_t);
void	 offset_said(struct agent *);

/* standalone.c */
int	 standalone_parse(struct agent *, const char *, Dynprof__V1__Window *,
	    Dynprof__V1__ProfilerOptions *, int *, char **);
int	 standalone_open(struct agent *);
void	 standalone_reload(struct agent *);
void	 standalone_close(struct agent *);

/* legacy.c */
int	 legacy_open(struct agent *);
int	 legacy_serves(struct agent *, const char *);
int	 legacy_config(struct agent *, const char *, const struct seg_config *);
void	 legacy_resend(struct agent *);
void	 legacy_close(struct agent *);

/* collect.c */
int	 collect_open(struct agent *);
void	 collect_close(struct agent *);
void	 collect_note_slot(struct agent *, struct agent_job *, int,
	    const struct seg_slot *);
void	 collect_tick(struct agent *);
void	 collect_config(struct agent *, const Dynprof__V1__JobConfig *);
int64_t	 collect_next_ms(const struct agent *);
void	 collect_acked(struct agent *, const struct queue_origin *);

/* trace_pack.c */
#define TRACE_PACK_MAX_BYTES	(8ULL << 30)	/* files in one rank's trace */

/* What packing one directory gave; crosses from the child through a pipe. */
struct trace_pack_result {
	int		 ok;
	int		 unsettled;	/* changed within the settle time */
	uint64_t	 size;		/* bytes of the archive */
	char		 sha256[65];	/* of the archive, lowercase hex */
	uint64_t	 bytes_in;	/* bytes of the files packed */
	uint64_t	 files;
	uint64_t	 entries;	/* every name seen */
	uint64_t	 skipped;	/* links, FIFOs, other owners' files... */
	char		 first_skipped[256];
	char		 why[256];	/* when !ok */
	struct tracesum	 sum;		/* what trace_steps.c read of it */
};

/* One packing in progress. */
struct trace_pack {
	pid_t		 pid;
	int		 fd;		/* readable when the child ends; -1: none */
	int		 dir_fd;	/* <store>/<job>/window-<id> */
	char		 name[64];	/* rank-<N>.tar.zst */
	char		 tmp[80];
	char		 path[256];	/* <job>/window-<id>/rank-<N>.tar.zst */
};

int	 trace_pack_write(int, int, uid_t, uint64_t,
	    struct trace_pack_result *);
int	 trace_pack_settled(int, int, struct trace_pack_result *);
int	 trace_pack_start(struct trace_pack *, int, const char *, uint32_t,
	    uint32_t, int, const char *, uid_t, uint64_t, int, char *, size_t);
int	 trace_pack_end(struct trace_pack *, struct trace_pack_result *);
int	 trace_pack_place(struct trace_pack *, struct trace_pack_result *);
int	 trace_pack_finish(struct trace_pack *, struct trace_pack_result *);
void	 trace_pack_abort(struct trace_pack *);
int	 trace_pack_sha256(int, uint64_t, uint64_t, char [65], uint64_t *);
void	 trace_pack_keep_fds(int, int, int);
void	 trace_pack_lower(void);
void	 trace_pack_child_exit(int, const void *, size_t)
	    __attribute__((noreturn));
size_t	 trace_pack_child_result(int, void *, size_t);

/* trace_steps.c */
struct trace_steps;
struct trace_steps *trace_steps_new(void);
void	 trace_steps_free(struct trace_steps *);
int	 trace_steps_begin(struct trace_steps *, const char *);
void	 trace_steps_feed(struct trace_steps *, const void *, size_t);
void	 trace_steps_end(struct trace_steps *);
void	 trace_steps_result(struct trace_steps *, struct tracesum *);

/* trace_upload.c */
#define UPLOAD_MAX_BYTES	(5ULL << 30)	/* one PUT: S3's bound */
#define UPLOAD_PART_MIN		(5ULL << 20)	/* S3's smallest part but the
						 * last */
#define UPLOAD_PARTS_MAX	10000		/* S3's most parts */
/* --trace-upload: an S3-compatible object store. */
struct upload_conf {
	char		 endpoint[512];	/* scheme://host[:port], no '/' after */
	char		 bucket[64];
	char		 prefix[256];	/* "" or a/b, no '/' at either end */
	char		 region[64];
	char		 access_key[256];
	char		 secret_key[256];
	char		 session_token[2048];	/* "" none */
	uint64_t	 rate;		/* bytes/s, 0: no cap */
	int		 stall_s;	/* nothing moved that long: given up */
	uint64_t	 part_size;	/* an archive over it: in parts */
};
/* One upload in progress. */
struct trace_upload {
	pid_t		 pid;
	int		 fd;		/* readable when the child ends; -1: none */
};
int	 trace_upload_conf(const struct agent_options *, struct upload_conf *,
	    char *, size_t);
int	 trace_upload_retarget(struct upload_conf *, const char *,
	    const char *, char *, size_t);
void	 trace_upload_location(const struct upload_conf *, const char *,
	    char *, size_t);
int	 trace_upload_start(struct trace_upload *, const struct upload_conf *,
	    int, const char *, const char *, char *, size_t);
int	 trace_upload_finish(struct trace_upload *, char *, size_t);
void	 trace_upload_abort(struct trace_upload *);

/* trace_s3.c */
int	 trace_s3_put(const struct upload_conf *, int, uint64_t, const char *,
	    const char *, char *, size_t);

#endif /* DYNPROF_AGENT_PARTS_H */
