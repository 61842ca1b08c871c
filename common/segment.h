/*
 * The shared memory segment: one per job per node, shared by the agent (the only
 * writer of the config part) and every rank of the job on the node (each the only
 * writer of its own slot).
 *
 * Layout (all offsets fixed by this header; the reader checks them before use):
 *
 *	struct seg_header		magic, version, sizes, seqlock, generation
 *	struct seg_config		the schedule, written under the seqlock
 *	struct seg_slot[nslots]		one per attached rank, claimed by pid
 *
 * The segment is a file, "dynprof.<job>", in the directory of its user's segments
 * under dir, DYNPROF_SHM_DIR or, by default, /dev/shm: dir itself when only that
 * user may write it, else the user's own "<dir>/dynprof-u<uid>" (segment_dir.c),
 * where nobody else can take the job's name first.  The directory is not in the
 * bytes of the segment: SEG_VERSION does not change with it.  It is created
 * complete under a temporary name (its space reserved before the first touch) and
 * linked into place, so nobody ever maps a half-initialised segment.  The sizes
 * and offsets of the header are read once, checked, and kept in struct segment:
 * nothing reads them from the mapping again.  docs/segments.md has the rules
 * (ownership, space, stale segments, truncation).
 *
 * Bump SEG_VERSION whenever anything in this file changes the bytes of the segment.
 */

#ifndef DYNPROF_SEGMENT_H
#define DYNPROF_SEGMENT_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "jobid.h"
#include "labels.h"

#define SEG_MAGIC		0x31464f5250594e44ULL	/* "DNYPROF1" little-endian */
#define SEG_VERSION		10	/* bump when the layout changes */

#define SEG_DEFAULT_DIR		"/dev/shm"
#define SEG_PREFIX		"dynprof."
#define SEG_USERDIR_PREFIX	"dynprof-u"	/* a user's directory: "dynprof-u<uid>" */
#define SEG_DEFAULT_MODE	0600

#define SEG_JOB_MAX		JOBID_MAX	/* job id length, NUL not counted */
#define SEG_MAX_WINDOWS		16	/* windows per job schedule */
#define SEG_MAX_SLOTS		256	/* ranks of one job on one node */
#define SEG_RANKS_MAX		256	/* "0-7,16" target list, NUL included */
#define SEG_SUBDIR_MAX		256	/* relative output subdirectory, NUL included */
#define SEG_FWOPTS_MAX		4096	/* framework options JSON, NUL included */
#define SEG_PATH_MAX		1024	/* an output directory, NUL included */
#define SEG_ERROR_MAX		256	/* a callback's error message, NUL included */
#define SEG_LABELS_MAX		256	/* the rank's labels, NUL included */
/*
 * The text of a log entry, NUL included: an error, or an output directory
 * relative to its slot's output_root: at most a subdir, "/" and
 * "rank%d_start%lld_stop%lld" (a rank >= 0: 10 digits; steps >= 1: 19 each).
 */
#define SEG_LOG_TEXT_MAX	320
#define SEG_LOG_DIR_MAX		(SEG_SUBDIR_MAX - 1 + sizeof("/rank_start_stop") - \
				    1 + 10 + 19 + 19 + 1)
/*
 * Events kept per slot until the coordinator has committed them (docs/events.md):
 * a rank that runs a whole schedule (SEG_MAX_WINDOWS windows, at most two events
 * each) between attached and detached while no agent or no coordinator listens
 * writes at most 2 * 16 + 2 = 34, so 40 lose none.
 */
#define SEG_LOG_ENTRIES		40
/*
 * Arrivals kept per slot: when the rank entered a step's communication, for
 * the steps it records (a power-of-two stride of them, lib/busy.c), the newest
 * at (its count - 1) % SEG_ARRIVE_ENTRIES.
 */
#define SEG_ARRIVE_ENTRIES	32

/*
 * One arrival: step is -1 while the rank writes the entry (a seqlock of its
 * own: the reader takes the time only if step read the same before and after).
 */
struct seg_arrival {
	_Atomic int64_t	 step;
	_Atomic int64_t	 mark_ns;		/* CLOCK_MONOTONIC of the mark */
};

/* The EventKind of a failed event, whose log text is an error, not a dir. */
#define SEG_EVENT_FAILED	5

/* Window flags. */
#define SEG_WINDOW_CANCELLED	0x1

/* Rank states kept in a slot: the same numbers as the RankState enum of the proto. */
enum seg_rank_state {
	SEG_RANK_FREE = 0,
	SEG_RANK_ATTACHED = 1,
	SEG_RANK_ARMED = 2,
	SEG_RANK_PROFILING = 3,
	SEG_RANK_DONE = 4,
	SEG_RANK_SKIPPED = 5,
	SEG_RANK_FAILED = 6,
	SEG_RANK_GONE = 7,
};

/*
 * Typed profiler options: MindSpore's profiler_config.json fields. -1 is unset.
 * A field per row of the options table (common/options.h, its layer
 * options_seg), of the same name: a new row is a new field here, and a new
 * SEG_VERSION.
 */
struct seg_options {
	int32_t		 aicore_metrics;
	int32_t		 profiler_level;
	int32_t		 profile_framework;
	int32_t		 analyse_mode;
	uint8_t		 profile_communication;
	uint8_t		 parallel_strategy;
	uint8_t		 with_stack;
	uint8_t		 data_simplification;
	uint32_t	 fwopts_len;		/* strlen(fwopts) */
	char		 output_subdir[SEG_SUBDIR_MAX];
	char		 fwopts[SEG_FWOPTS_MAX];
};

/*
 * A window of steps [start_step, stop_step], or of time: start_ns > 0, the
 * times on the node's clocks the agent turned the coordinator's into
 * (CLOCK_MONOTONIC for the rank's decisions, CLOCK_REALTIME beside them for
 * its reports), start_step and stop_step 0.
 */
struct seg_window {
	uint32_t	 id;
	uint32_t	 flags;			/* SEG_WINDOW_* */
	int64_t		 start_step;
	int64_t		 stop_step;
	int64_t		 start_ns;		/* CLOCK_MONOTONIC, 0: steps */
	int64_t		 stop_ns;
	int64_t		 start_unix_ns;		/* CLOCK_REALTIME of the same */
	int64_t		 stop_unix_ns;
	char		 ranks[SEG_RANKS_MAX];	/* "" for all ranks */
	struct seg_options options;
};

/* The schedule.  Written only by the agent, only under the header's seqlock. */
struct seg_config {
	uint64_t	 generation;
	uint32_t	 nwindows;		/* <= SEG_MAX_WINDOWS */
	uint32_t	 pad;
	struct seg_window windows[SEG_MAX_WINDOWS];
};

/*
 * One event in a slot's log (docs/events.md): what a RankEvent needs besides the
 * job, the rank and the slot.  seq is the entry's place in its incarnation's log
 * (1, 2, ...; entry seq % SEG_LOG_ENTRIES), 0 while the entry is being written:
 * it is the entry's own seqlock.  text is the output directory of a started or
 * stopped event relative to the slot's output_root (what follows "root/"; ""
 * for none), the error of a failed one (what the coordinator keeps of each).
 */
struct seg_log_entry {
	_Atomic uint32_t seq;
	uint32_t	 kind;			/* EventKind */
	uint32_t	 window_id;
	uint32_t	 reason;		/* StopReason */
	int64_t		 start_step;
	int64_t		 stop_step;
	int64_t		 step;
	uint64_t	 generation;
	int64_t		 time_ns;
	uint32_t	 rank_seq;		/* the RankEvent's */
	int32_t		 pid;			/* the writer's */
	char		 text[SEG_LOG_TEXT_MAX];
};

/*
 * One rank's slot.  pid is claimed with a compare-and-swap from 0.  step is stored
 * by the rank at every step_begin (one relaxed store: the hot path).  The other
 * fields are the rank's last state, written by the rank under the slot's own
 * seqlock (seq odd while writing) so that the agent never reports a torn one.
 *
 * Then every event of the rank, in a ring (docs/events.md): the rank writes entry
 * log_head + 1 and publishes it in log_head (release); incarnation counts the
 * slot's claims; log_acked, written only by the agent, is (incarnation << 32 |
 * the last seq the coordinator committed).  log_lost counts entries the rank
 * overwrote before they were acknowledged.  output_root is the root of every
 * output directory in the log, written at the claim (segment_slot_claim())
 * under the slot seqlock and under its own: root_inc is 0 while it changes,
 * then the incarnation it belongs to (segment_slot_root()).
 *
 * pid is the holder's pid in its own pid namespace, pidns that namespace (the
 * inode of /proc/self/ns/pid), stored right after the claim and cleared before
 * the release (last_pidns keeps it, as last_pid keeps pid): 0 while a claim is
 * in progress (docs/containers.md).  token is random, per claim: the holder's
 * datagrams carry it.
 */
struct seg_slot {
	_Atomic int32_t	 pid;			/* 0: free */
	_Atomic uint32_t seq;			/* slot seqlock */
	_Atomic int64_t	 step;			/* current step, -1 before the first */
	int32_t		 rank;
	uint32_t	 state;			/* enum seg_rank_state */
	uint32_t	 window_id;		/* the window of the last event */
	uint32_t	 last_event;		/* EventKind of the last event */
	int64_t		 start_step;		/* of that window */
	int64_t		 stop_step;
	int64_t		 event_step;		/* the rank's step at the last event */
	int64_t		 event_time_ns;		/* wall clock of the last event */
	int64_t		 attach_time_ns;
	uint64_t	 generation;		/* the config generation last acted on */
	uint32_t	 reason;		/* StopReason of the last stop */
	uint32_t	 rank_seq;		/* events sent so far */
	char		 output_dir[SEG_PATH_MAX];
	char		 error[SEG_ERROR_MAX];
	char		 labels[SEG_LABELS_MAX];	/* canonical (labels.h), at open */
	int32_t		 last_pid;		/* who held the slot when freed */
	_Atomic uint32_t incarnation;		/* claims of this slot so far */
	_Atomic uint32_t log_head;		/* seq of the newest entry */
	_Atomic uint32_t log_lost;		/* overwritten before acked */
	_Atomic uint64_t log_acked;		/* agent: incarnation << 32 | seq */
	_Atomic uint32_t root_inc;		/* incarnation of output_root */
	uint32_t	 pad0;
	_Atomic uint64_t pidns;			/* holder's pid namespace, 0: claiming */
	uint64_t	 last_pidns;		/* and last_pid's, when freed */
	uint64_t	 token;			/* the holder's datagrams carry it */
	/* Busy time (dynprof_mark_comm()), written only by the rank, each
	 * field one relaxed store, busy_count last (release): */
	_Atomic int64_t	 busy_begin_ns;		/* CLOCK_MONOTONIC at the step's
						   begin, once the rank marks */
	_Atomic int64_t	 busy_last_ns;		/* begin to mark, the last step */
	_Atomic int64_t	 busy_avg_ns;		/* moving average (1/8 weight) */
	_Atomic int64_t	 busy_max_ns;		/* highest of the recent marks */
	_Atomic uint64_t busy_count;		/* steps measured, 0: none */
	char		 pad[72];		/* to a multiple of 64 bytes */
	char		 output_root[SEG_PATH_MAX];	/* of the log's dirs */
	struct seg_log_entry log[SEG_LOG_ENTRIES];
	/* The rank's arrivals at its steps' communication (lib/busy.c),
	 * written only by the rank; arrive_count (release) after the entry. */
	_Atomic uint64_t arrive_count;		/* entries written so far */
	char		 pad3[56];		/* to a multiple of 64 bytes */
	struct seg_arrival arrive[SEG_ARRIVE_ENTRIES];
};

struct seg_header {
	uint64_t	 magic;			/* SEG_MAGIC */
	uint32_t	 version;		/* SEG_VERSION */
	uint32_t	 header_size;		/* sizeof(struct seg_header) */
	uint64_t	 segment_size;		/* the whole file */
	uint32_t	 config_offset;
	uint32_t	 config_size;		/* sizeof(struct seg_config) */
	uint32_t	 slots_offset;
	uint32_t	 slot_size;		/* sizeof(struct seg_slot) */
	uint32_t	 nslots;
	uint32_t	 pad0;
	char		 job[SEG_JOB_MAX + 1];	/* NUL-terminated */
	char		 pad1[7];
	int64_t		 created_ns;
	/* Written by the agent: */
	_Atomic uint32_t seq;			/* config seqlock, odd while writing */
	_Atomic int32_t	 agent_pid;		/* the agent serving the segment, 0: none */
	_Atomic uint64_t generation;		/* copy of config.generation, for display */
	_Atomic uint32_t served;		/* 1 once an agent served it: its
						 * last rank keeps it (the agent
						 * removes it when the job is over) */
	char		 pad2[44];		/* to a multiple of 64 bytes */
};

/* The layout is shared between processes and compilers: pin it down. */
_Static_assert(SEG_JOB_MAX == 64,
    "the header's job id is in the layout: a new JOBID_MAX bumps SEG_VERSION");
_Static_assert(sizeof(struct seg_header) == 192, "seg_header size");
_Static_assert(sizeof(struct seg_header) % 64 == 0, "seg_header alignment");
_Static_assert(sizeof(struct seg_log_entry) == 64 + SEG_LOG_TEXT_MAX,
    "seg_log_entry size");
_Static_assert(sizeof(struct seg_log_entry) == 384, "seg_log_entry size");
_Static_assert(sizeof(struct seg_log_entry) % 64 == 0, "seg_log_entry alignment");
_Static_assert(SEG_LOG_DIR_MAX <= SEG_LOG_TEXT_MAX,
    "the longest relative output directory fits a log entry");
_Static_assert(SEG_ERROR_MAX <= SEG_LOG_TEXT_MAX, "an error fits a log entry");
_Static_assert(SEG_LABELS_MAX == LABELS_MAX, "a rank's labels fit its slot");
_Static_assert(offsetof(struct seg_slot, output_root) == 1792,
    "seg_slot output_root offset");
_Static_assert(offsetof(struct seg_slot, log) == 1792 + SEG_PATH_MAX,
    "seg_slot log offset");
_Static_assert(offsetof(struct seg_slot, log_acked) % 8 == 0,
    "slot log_acked alignment");
_Static_assert(sizeof(struct seg_slot) == 1792 + SEG_PATH_MAX +
    SEG_LOG_ENTRIES * (64 + SEG_LOG_TEXT_MAX) + 64 + SEG_ARRIVE_ENTRIES * 16,
    "seg_slot size");
_Static_assert(sizeof(struct seg_slot) % 64 == 0, "seg_slot alignment");
_Static_assert(sizeof(struct seg_config) % 8 == 0, "seg_config alignment");
_Static_assert(offsetof(struct seg_slot, step) % 8 == 0, "slot step alignment");
_Static_assert(offsetof(struct seg_slot, pidns) % 8 == 0, "slot pidns alignment");
_Static_assert(offsetof(struct seg_slot, busy_begin_ns) % 8 == 0,
    "slot busy alignment");
_Static_assert(offsetof(struct seg_header, seq) % 4 == 0, "header seq alignment");
_Static_assert(sizeof(_Atomic uint32_t) == 4 && sizeof(_Atomic int64_t) == 8,
    "lock-free atomics of plain size");

/*
 * The header's sizes and offsets, each read once from the bytes and checked
 * (segment_check()).  A process keeps this copy: the mapping's own fields may be
 * changed by anyone who can write the segment, after the check.
 */
struct seg_layout {
	uint64_t		 segment_size;
	uint32_t		 config_offset;
	uint32_t		 slots_offset;
	uint32_t		 nslots;
	char			 job[SEG_JOB_MAX + 1];
};

/*
 * An open segment: the mapping, where its parts are, and the checked copy of
 * the header's sizes (nslots, size): never read them from hdr.
 */
struct segment {
	struct seg_header	*hdr;
	struct seg_config	*config;
	struct seg_slot		*slots;
	size_t			 size;		/* of the mapping, checked */
	uint32_t		 nslots;	/* checked copy of hdr->nslots */
	uint32_t		 config_offset;	/* checked copies */
	uint32_t		 slots_offset;
	int			 fd;		/* with SEG_KEEPFD, else -1 */
	int			 flags;		/* segment_open() flags */
	int			 replaced;	/* SEG_E* of a stale segment
						   replaced at open, else 0 */
	uid_t			 uid;		/* the file's owner (fstat) */
	dev_t			 dev;		/* the file (fstat) */
	ino_t			 ino;
	char			 job[SEG_JOB_MAX + 1];
	char			 path[4096];
};

/*
 * The directory of a user's segments (segment_dir_open()): the segment
 * directory itself, or the user's own in it.
 */
struct seg_dir {
	int			 fd;		/* O_PATH, -1: none */
	int			 setgid;	/* the segment directory is setgid */
	char			 path[4096];	/* the user's directory */
	struct stat		 st;		/* SEG_EOWNER: the lstat() of
						   what holds its name */
};

/* Error codes: the same numbers as the DYNPROF_E* codes of dynprof.h. */
#define SEG_OK		 0
#define SEG_EJOB	-2	/* invalid job id */
#define SEG_ESYS	-3	/* a system call failed: errno says which */
#define SEG_EMAGIC	-4	/* not a dynprof segment */
#define SEG_EVERSION	-5	/* another layout version */
#define SEG_ESIZE	-6	/* truncated, or sizes that do not match the layout */
#define SEG_ENOSLOT	-7	/* every slot taken by a live process */
#define SEG_ENOENT	-8	/* no such segment (and not asked to create one) */
#define SEG_ETORN	-9	/* the config kept changing under the reader */
#define SEG_EOWNER	-12	/* owned by an untrusted user, or writable by
				   others; or a user's directory held by
				   another (docs/segments.md) */

/* segment_open() flags. */
#define SEG_CREATE	0x1	/* create the segment if it does not exist */
#define SEG_RDONLY	0x2	/* map read-only (readers such as dynprofctl local);
				   the slot and config writers must not be used */
#define SEG_KEEPFD	0x4	/* keep the file open in seg->fd (for fstat) */
#define SEG_ANYOWNER	0x8	/* trust any owner; writable by others is
				   still refused */
#define SEG_ONLYUID	0x10	/* trust only the uid given (the agent,
				   serving a segment as its owner's) */
#define SEG_USE		0x20	/* a user (a rank, the agent serving it):
				   holds a shared flock on the file while it
				   maps it (implies SEG_KEEPFD), so that the
				   last one knows it is (segment_close_last()) */

/* segment_open_trusting(): no uid trusted besides the caller's and root. */
#define SEG_NOUID	((uid_t)-1)

/* How often a reader retries a read torn by a writer before giving up. */
#define SEGMENT_READ_RETRIES	1000

/* Lets the other hyperthread run while a reader waits out a seqlock writer. */
static inline void
segment_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* segment.c */
int	 segment_path(char *, size_t, const char *, const char *);
int	 segment_open(struct segment *, const char *, const char *, int, mode_t);
int	 segment_open_trusting(struct segment *, const char *, const char *, int,
	    mode_t, uid_t);
int	 segment_open_at(struct segment *, int, const char *, const char *, int,
	    mode_t, uid_t);
int	 segment_open_uid(struct segment *, const char *, uid_t, const char *,
	    int, mode_t, uid_t);
void	 segment_close(struct segment *);
int	 segment_close_fd(int, int);
int	 segment_unlink_unused(struct segment *);
int	 segment_unlink(const char *, const char *);
int	 segment_validate(const void *, size_t);
int	 segment_check(const void *, size_t, struct seg_layout *);
int	 segment_owner_ok(uid_t, mode_t, uid_t, int);
const char *segment_strerror(int);
const char *segment_kept_why(int);

void	 segment_write_config(struct segment *, const struct seg_config *);
int	 segment_read_config(const struct segment *, struct seg_config *,
	    uint32_t *);

/* segment_dir.c */
int	 segment_dir_open(struct seg_dir *, const char *, uid_t, int, mode_t);
int	 segment_dir_make(const char *, uid_t, gid_t, mode_t, uid_t *);

/* segment_slot.c */
int	 segment_slot_claim(struct segment *, pid_t, int32_t, const char *);
int	 segment_slot_claim_labels(struct segment *, pid_t, int32_t,
	    const char *, const char *);
void	 segment_slot_release(struct segment *, int, pid_t);
int	 segment_slot_read(const struct segment *, int, struct seg_slot *);
int	 segment_slot_root(const struct seg_slot *, uint32_t, char *, size_t);
void	 segment_slot_update_begin(struct seg_slot *);
void	 segment_slot_update_end(struct seg_slot *);
int	 segment_reclaim_dead(struct segment *, void (*)(const struct seg_slot *,
	    int, void *), void *);
int	 segment_reclaim_judged(struct segment *, int (*)(const struct seg_slot *,
	    int, void *), void (*)(const struct seg_slot *, int, void *), void *);
int	 segment_slot_dead(const struct seg_slot *);
int	 segment_pid_alive(pid_t);
uint64_t segment_pidns(void);

/* procmaps.c */
int	 procmaps_in_use(dev_t, ino_t, const char *, int);

/* slotlog.c */
int	 slotlog_append(struct seg_slot *, const struct seg_log_entry *);
uint32_t slotlog_head(const struct seg_slot *, uint32_t *);
uint32_t slotlog_acked(const struct seg_slot *, uint32_t);
int	 slotlog_read(const struct seg_slot *, uint32_t, uint32_t,
	    struct seg_log_entry *);
int	 slotlog_ack(struct seg_slot *, uint32_t, uint32_t);
int	 slotlog_settled(const struct seg_slot *);
int	 slotlog_set_dir(struct seg_log_entry *, const char *, const char *);
int	 slotlog_dir(const struct seg_log_entry *, const char *, char *, size_t);

#endif /* DYNPROF_SEGMENT_H */
