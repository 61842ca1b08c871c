/*
 * Legacy jobs (docs/legacy.md): jobs whose code dynprof never touched, served
 * through the profiler_config.json their own dynamic profiler polls.  Every
 * subdirectory <legacy-dir>/<job> is one; the agent writes the next window
 * due into its file in the job's dialect and watches its output directory.
 * What the legacy*.c files share (the rest of the agent reaches them through
 * legacy.c's entry points in parts.h):
 *
 *	legacy.c		--legacy-dir watched with inotify, the jobs, which
 *				window is due, the status sent to the coordinator
 *	legacy_dialect.c	a job's dialect and output directory, the window
 *				rendered in its dialect and written atomically
 *	legacy_observe.c	trace directories in the output directory turned
 *				into observed and observed_complete events
 *	legacy_shm.c		--legacy-shm: the window also written into
 *				MindSpore 2.4-2.6's shared-memory record
 *	legacy_fs.c		the job's directory opened and checked, the
 *				agent acting in it as its owner
 *	legacy_log.c		the ranks' own logs (torch_npu's in the job's
 *				directory, MindSpore's where dynprof.logs
 *				says): a window started, dropped (missed),
 *				torch_npu ranks that came after it
 */

#ifndef DYNPROF_AGENT_PARTS_LEGACY_H
#define DYNPROF_AGENT_PARTS_LEGACY_H

#include <sys/queue.h>
#include <sys/types.h>

#include <limits.h>
#include <stdint.h>
#include <time.h>

#include "log.h"
#include "options.h"
#include "ranklist.h"
#include "segment.h"

struct agent;
struct agent_job;
struct event;
struct stat;

#define LEGACY_JOBS_MAX		1024	/* job directories served at once */
#define LEGACY_PER_UID		64	/* --legacy-per-uid: of one owner */
#define LEGACY_OWNERS_MAX	4096	/* owners given their own log limit */
#define LEGACY_GONE_MAX		64	/* directories gone, remembered */
#define LEGACY_GONE_MS		10000	/* for so long: schedules in flight */
#define LEGACY_CONFIG_MAX	(1024 * 1024)	/* a framework's config, read */
#define LEGACY_SMALL_FILE_MAX	4096	/* dynprof.dialect, dynprof.output */
#define LEGACY_WRITE_GAP_MS	1000	/* between two writes of one file */
#define LEGACY_TICK_MS		500	/* writes due, output scans, retries */
#define LEGACY_RETRY_MS		5000	/* after a failed write or read */
#define LEGACY_SETTLE_MS	2000	/* all observed complete: then over */
#define LEGACY_RANKS_MAX	4096	/* ranks observed per window */
#define LEGACY_SCAN_MAX		8192	/* entries read per directory scan */
#define LEGACY_SCAN_DEPTH	3	/* end-of-trace files looked for this deep */
#define LEGACY_RANK_LIST_MAX	65536	/* torch_npu rank_list entries */
#define LEGACY_OVER_MAX		64	/* ids of windows over, remembered */
#define LEGACY_ENDED_MAX	8	/* over and out of the schedule: still
					   in the status, with their reason */
#define LEGACY_STATUS_MAX	(SEG_MAX_WINDOWS + LEGACY_ENDED_MAX)
#define LEGACY_UNVERIFIED_MS	10000	/* an unmarked trace only: then over */
#define LEGACY_LOG_READ_MAX	16384	/* of a rank's log, a tick */
#define LEGACY_LOG_TICK_MAX	(256 * 1024)	/* of a job's logs, a tick */
#define LEGACY_WINDOW_MAX_S	1800	/* --legacy-window-max: not seen to end */
#define LEGACY_POLL_MS		2000	/* the frameworks' default poll */
#define LEGACY_REASON_MAX	256
#define LEGACY_MARKER_NAME	"dynprof_window"	/* in the trace's metadata */
#define LEGACY_MARKER_MAX	(SEG_JOB_MAX + 32)
#define LEGACY_METADATA_NAME	"profiler_metadata.json"
#define LEGACY_LOG_DIR		"log"	/* torch_npu's, in the job's dir */

#define LEGACY_CONFIG_NAME	"profiler_config.json"
#define LEGACY_DIALECT_NAME	"dynprof.dialect"
#define LEGACY_OUTPUT_NAME	"dynprof.output"
#define LEGACY_LOGS_NAME	"dynprof.logs"
#define LEGACY_TMP_NAME		".profiler_config.json.dynprof"
#define LEGACY_SHM_DIR		"/dev/shm"	/* where Python's SharedMemory is */
#define LEGACY_SHM_RECORD_MAX	64	/* MindSpore's records: 28 to 34 bytes */

/*
 * A legacy dialect (legacy_dialect.c): one descriptor each, beside its column
 * of the options table (common/options.h), which says its option keys and
 * how their values are written.
 */
#define LEGACY_STOP_STEP	0	/* stop_step */
#define LEGACY_STOP_ACTIVE	1	/* warmup 0, active: how many steps */
#define LEGACY_TRACE_STEPS	0	/* <output>/rank{N}_start{a}_stop{b}/ */
#define LEGACY_TRACE_MARKED	1	/* <output>/NAME_ascend_pt/, the marker */
#define LEGACY_LOG_NONE		0	/* its ranks say nothing dynprof reads */
#define LEGACY_LOG_TORCH	1	/* <job>/log/dp_{host}_{pid}_rank_{N}.log */
#define LEGACY_LOG_MINDSPORE	2	/* its lines, in dynprof.logs' directory */

struct legacy_dialect {
	enum options_dialect	 id;
	const char *const	*keys;		/* one of them in its config says it */
	const char *const	*also;		/* NULL, or one of these as well */
	const char		*output_key;	/* its config's output dir, or NULL */
	int			 stop;		/* LEGACY_STOP_* */
	int			 trace;		/* LEGACY_TRACE_* */
	int			 own_config_first; /* ignores files older than it */
	int			 can_disable;	/* start_step -1 means "none" */
	const char		*marker_key;	/* config key it copies into the
						   trace (LEGACY_TRACE_MARKED) */
	int			 log;		/* LEGACY_LOG_*: its ranks' logs
						   (legacy_log.c) */
	const char *const	*shm;		/* its record's fields, or NULL */
	int			 ahead;		/* reads a file written while a
						   window runs once it stopped:
						   the next may be written as
						   soon as every rank started */
};

/* How a window written ended. */
#define LEGACY_OVER_DONE	0	/* observed complete, cancelled, gone */
#define LEGACY_OVER_UNVERIFIED	1	/* only traces it cannot be tied to */
#define LEGACY_OVER_MISSED	2	/* the framework dropped it */

/* Why a rank dropped the window written, in its framework's words. */
#define LEGACY_DROP_START	0	/* its start step had passed */
#define LEGACY_DROP_STOP	1	/* its stop step had passed */

/* A rank's log (legacy_log.c), read since the window was written. */
struct legacy_rlog {
	ino_t		 ino;
	int32_t		 rank;
	off_t		 off;			/* read up to */
	int		 started;		/* it started a window */
	int		 dropped;		/* it dropped the one written */
	int		 drop_why;		/* LEGACY_DROP_* */
	int64_t		 drop_step;		/* at its step, -1 unknown */
	int		 late;			/* made since the write */
};

/* What the agent does with one window of the schedule (LegacyWindowState). */
struct legacy_window {
	uint32_t	 id;
	int		 state;
	char		 reason[LEGACY_REASON_MAX];
};

/* A job's schedule, as the coordinator last pushed it (nwindows windows). */
struct legacy_sched {
	uint64_t	 generation;
	uint32_t	 nwindows;
	struct seg_window windows[];
};

/* A rank seen in the output directory for the window written. */
struct legacy_rank {
	int32_t		 rank;
	int		 complete;
};

struct legacy_job {
	TAILQ_ENTRY(legacy_job) entry;
	char		 name[SEG_JOB_MAX + 1];
	dev_t		 dev;			/* the directory served */
	ino_t		 ino;
	uid_t		 uid;			/* its owner */
	gid_t		 gid;			/* its group, at the last open */
	int		 check;			/* is the name still it? */
	int		 redetect;		/* it was not, at the last detect */
	int		 wd;			/* inotify watch of dir, -1 none */
	struct legacy_sched *sched;		/* NULL: nothing pushed yet */
	int		 subscribed;		/* told the coordinator */
	struct log_limit log;			/* lines this job triggers */

	int		 dialect;		/* enum options_dialect, -1 unknown */
	int		 from_file;		/* dialect named by dynprof.dialect */
	int		 detected;		/* times the directory was read */
	int		 framework_seen;	/* the framework wrote its config */
	int64_t		 framework_mtime;	/* its mtime, whole seconds */
	uid_t		 framework_uid;		/* its owner */
	void		*base;			/* json_t: its config as first read */
	char		 output[PATH_MAX];	/* "" unknown */
	char		 logs[PATH_MAX];	/* dynprof.logs, "" none */
	char		 error[LEGACY_REASON_MAX];	/* "" none */
	char		 write_error[LEGACY_REASON_MAX]; /* last write's, "" */

	struct legacy_window windows[LEGACY_STATUS_MAX];
	struct legacy_window ended[LEGACY_ENDED_MAX];	/* ring, as planned
							   last */
	size_t		 nended;
	size_t		 nwindows;
	uint32_t	 over[LEGACY_OVER_MAX];	/* ring of ids written and over */
	uint8_t		 over_how[LEGACY_OVER_MAX];	/* LEGACY_OVER_* */
	size_t		 nover;

	/* The window in the file now (written 0: none). */
	uint32_t	 written;
	int64_t		 written_start, written_stop;
	int		 written_disabled;	/* the file says "no window" */
	int64_t		 written_at_ms;		/* monotonic, the last write */
	int64_t		 first_at_ms;		/* its first write */
	int64_t		 shown_until_ms;	/* polled at least once by then */
	struct timespec	 written_mtime;		/* of our last write */
	int64_t		 retry_at_ms;		/* a failed write: again then */
	struct rank_set	 written_ranks;		/* the ranks it targets */
	struct legacy_rank *ranks;		/* seen for the window written */
	size_t		 nranks;
	int64_t		 unmarked_at_ms;	/* a trace without its marker */
	struct legacy_rlog *rlogs;		/* its ranks' logs */
	size_t		 nrlogs;
	size_t		 log_left;		/* bytes still to read this tick */
	int64_t		 dropped_at_ms;		/* a rank dropped it first */
	size_t		 late_ranks;		/* started since the write */
	int		 rewrite;		/* write it again: a late rank */
	/* The window before it, written ahead of its end (dl->ahead): still
	 * running, its traces credited to it by its marker. */
	uint32_t	 prev;			/* 0 none */
	int64_t		 prev_start, prev_stop;
	int64_t		 prev_first_at_ms;
	int64_t		 prev_settled_at_ms;
	struct rank_set	 prev_targets;
	int32_t		*prev_started;		/* ranks that said they started it */
	size_t		 nprev_started;
	int32_t		*prev_done;		/* ranks seen to complete it */
	size_t		 nprev_done;
	uint32_t	 over_note_id;		/* the window over_note is of */
	char		 over_note[LEGACY_REASON_MAX];
	char		 unmarked[NAME_MAX + 1];	/* its name */
	int64_t		 settled_at_ms;		/* last change of ranks */

	int		 status_dirty;
	time_t		 seen_wall;		/* when the directory was first seen */
	uint32_t	 early;			/* window in the record, not the file */
	uint8_t		 shm_last[LEGACY_SHM_RECORD_MAX];	/* last written */
	size_t		 shm_last_len;
	uint8_t		 file_rec[LEGACY_SHM_RECORD_MAX];	/* the last file's */
	size_t		 file_rec_len;
	char		 shm_note[LEGACY_REASON_MAX];	/* the last write's */
};
TAILQ_HEAD(legacy_jobs, legacy_job);

/* How many job directories one owner has served; the lines it triggers. */
struct legacy_owner {
	uid_t		 uid;
	size_t		 njobs;
	struct log_limit log;			/* serving, gone */
	struct log_limit refusals;		/* its names not served */
};

struct legacy {
	struct agent	*a;
	char		 dir[PATH_MAX];
	int		 root_fd;		/* dir, opened once */
	int		 fd;			/* inotify */
	int		 dir_wd;
	struct event	*ev;
	struct event	*tick;
	struct event	*soon;			/* a write due before a tick */
	int64_t		 soon_at_ms;		/* monotonic, when soon fires */
	struct legacy_jobs jobs;
	size_t		 njobs;
	struct legacy_owner *owners;		/* those with a job served */
	size_t		 nowners;
	struct {
		char	 name[SEG_JOB_MAX + 1];
		int64_t	 at_ms;			/* monotonic, 0: none */
	}		 gone[LEGACY_GONE_MAX];	/* directories that went */
	size_t		 ngone;
	int		 refused_budget;	/* over a budget since the scan */
	int		 rescan;		/* and some may fit now */
	int64_t		 rescan_at_ms;
	struct log_limit log;			/* lines of names not served */
};

/* legacy.c */
struct legacy_job *legacy_find(struct legacy *, const char *);

/* legacy_fs.c */
const char *legacy_fs_kind(mode_t);
int	 legacy_fs_open_name(const struct legacy *, const char *,
	    struct stat *, char *, size_t);
int	 legacy_fs_open(struct legacy *, struct legacy_job *, char *, size_t);
int	 legacy_fs_as(const struct legacy_job *);
void	 legacy_fs_self(void);
char	*legacy_fs_read(int, const char *, size_t, struct stat *, char *,
	    size_t);

/* legacy_dialect.c */
const struct legacy_dialect *legacy_dialect(int);
void	 legacy_marker(const struct legacy_job *, uint32_t, char *, size_t);
void	 legacy_detect(struct legacy *, struct legacy_job *);
int	 legacy_write(struct legacy *, struct legacy_job *,
	    const struct seg_window *, const char **);
int64_t	 legacy_write_due(const struct legacy_job *, int64_t);
void	 legacy_write_record(struct legacy *, struct legacy_job *,
	    const struct seg_window *);
int	 legacy_expressible(const struct legacy_job *, const struct seg_window *,
	    char *, size_t);

/* legacy_shm.c */
int	 legacy_shm_write(const struct agent *, struct legacy_job *,
	    const struct legacy_dialect *, void *, int, char *, size_t);

/* legacy_log.c */
void	 legacy_log_scan(struct legacy *, struct legacy_job *, int);
int	 legacy_log_started(const struct legacy_job *, int32_t **, size_t *);
int	 legacy_log_missed(const struct legacy_job *, int64_t, char *, size_t);
size_t	 legacy_log_unserved(const struct legacy_job *);
void	 legacy_log_reset(struct legacy_job *);

/* legacy_observe.c */
int	 legacy_observe(struct legacy *, struct legacy_job *, uint64_t);
void	 legacy_observe_reset(struct legacy_job *);
void	 legacy_observe_prev_take(struct legacy_job *);
void	 legacy_observe_prev_reset(struct legacy_job *);

#endif /* DYNPROF_AGENT_PARTS_LEGACY_H */
