/**
 * @file dynprof.h
 * @brief libdynprof: start and stop a profiler at the steps a cluster-wide schedule
 * says, from inside a training process.
 *
 * A training process opens one handle per rank it runs, calls dynprof_step_begin()
 * and dynprof_step_end() around every step (or dynprof_step() once per iteration),
 * and gives two callbacks that start and stop its profiler.  The schedule comes from
 * the node's dynprof-agent through a shared memory segment; checking it costs a few
 * memory loads and one store per step, with no system call, lock or allocation.
 *
 * The library never aborts, never exits and never prints.  Functions return
 * DYNPROF_OK (0) or a negative DYNPROF_E* code; dynprof_strerror() names it.
 *
 * Thread safety: a handle belongs to one thread at a time.  Different handles may
 * be used from different threads at once.  Callbacks run on the thread that called
 * the step function, inside that call.
 */

#ifndef DYNPROF_H
#define DYNPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define DYNPROF_API __attribute__((visibility("default")))
#else
#define DYNPROF_API
#endif

/** Error codes.  Every function returns one of these (0 or negative). */
enum dynprof_error {
	DYNPROF_OK = 0,
	DYNPROF_EINVAL = -1,	/**< an invalid argument */
	DYNPROF_EJOB = -2,	/**< an invalid job id */
	DYNPROF_ESYS = -3,	/**< a system call failed (errno is kept) */
	DYNPROF_EMAGIC = -4,	/**< the segment is not a dynprof segment */
	DYNPROF_EVERSION = -5,	/**< the segment has another layout version */
	DYNPROF_ESIZE = -6,	/**< the segment is truncated or its sizes are wrong */
	DYNPROF_ENOSLOT = -7,	/**< every rank slot of the segment is taken */
	DYNPROF_ENOENT = -8,	/**< no such segment */
	DYNPROF_ETORN = -9,	/**< the config kept changing while being read */
	DYNPROF_EPATH = -10,	/**< an output path is too long or invalid */
	DYNPROF_ENOMEM = -11,	/**< out of memory */
	DYNPROF_EOWNER = -12,	/**< the segment is owned by an untrusted user or
				     writable by others, or the directory of
				     this user's segments is held by another
				     and no agent took it back
				     (docs/segments.md) */
};

/** Profiler options of a window: MindSpore's profiler_config.json fields.
 * Integer fields are -1 when not set. */
struct dynprof_options {
	int	aicore_metrics;		/**< -1, or 0..5 as MindSpore */
	int	profiler_level;		/**< -1, 0 (Level0), 1 (Level1), 2 (Level2) */
	int	profile_framework;	/**< -1, 0 ("time"), 1 ("all") */
	int	analyse_mode;		/**< -1 (none), 0 ("sync"), 1 ("async") */
	int	profile_communication;	/**< 0 or 1 */
	int	parallel_strategy;	/**< 0 or 1 */
	int	with_stack;		/**< 0 or 1 */
	int	data_simplification;	/**< 0 or 1 */
};

/** A window: the profiler starts in step_begin(start_step) and stops in
 * step_end(stop_step), both inclusive.  A time window has both steps 0:
 * dynprof_window_info() says what it is.  Its layout never changes (programs
 * built against it pass it to dynprof_active_window()). */
struct dynprof_window {
	uint32_t	id;		/**< unique within the job */
	int64_t		start_step;
	int64_t		stop_step;
};

/** What kind of window dynprof_window_info() describes. */
enum dynprof_window_kind {
	DYNPROF_WINDOW_STEPS = 1,	/**< from start_step to stop_step */
	DYNPROF_WINDOW_TIME = 2,	/**< from a wall-clock start, for a
					     duration (docs/admin-api.md) */
};

/** Set by the caller into dynprof_window_info's version. */
#define DYNPROF_WINDOW_INFO_VERSION 1

/**
 * A window, all it is, as dynprof_window_info() fills it.  struct
 * dynprof_window keeps its layout (programs built against it pass and receive
 * it); what it cannot say is here, in a struct whose version the caller sets
 * and that grows only at its end.
 */
struct dynprof_window_info {
	unsigned	 version;	/**< in: DYNPROF_WINDOW_INFO_VERSION */
	uint32_t	 id;
	int		 kind;		/**< enum dynprof_window_kind */
	int64_t		 start_step;	/**< a window of steps: inclusive; */
	int64_t		 stop_step;	/**< a time window: 0 and 0 */
	/* A time window's, 0 for a window of steps: */
	int64_t		 start_unix_ns;	/**< its start: CLOCK_REALTIME in ns, on
					     this node's clock (the agent
					     corrects its offset to the
					     coordinator's) */
	int64_t		 start_ns;	/**< the same start on CLOCK_MONOTONIC,
					     the clock the library acts on */
	int64_t		 duration_ns;	/**< its length: it ends at the start
					     plus this, on either clock */
};

/** Why a window stopped. */
enum dynprof_stop_reason {
	DYNPROF_STOP_COMPLETED = 1,	/**< at its stop step */
	DYNPROF_STOP_CANCELLED = 2,	/**< cancelled while it ran */
	DYNPROF_STOP_CLOSED = 3,	/**< the handle closed inside the window */
};

/** The state of a handle's rank, as dynprof_state() returns it. */
enum dynprof_rank_state {
	DYNPROF_RANK_ATTACHED = 1,	/**< no window pending for this rank */
	DYNPROF_RANK_ARMED = 2,		/**< a window for this rank is pending */
	DYNPROF_RANK_PROFILING = 3,	/**< inside a window */
	DYNPROF_RANK_DONE = 4,		/**< its last window completed */
	DYNPROF_RANK_SKIPPED = 5,	/**< its last window started behind it */
	DYNPROF_RANK_FAILED = 6,	/**< a callback failed */
};

/** Log levels passed to the log callback. */
enum dynprof_log_level {
	DYNPROF_LOG_ERROR = 0,
	DYNPROF_LOG_WARNING = 1,
	DYNPROF_LOG_INFO = 2,
	DYNPROF_LOG_DEBUG = 3,
};

/**
 * Starts the profiler.  Called in step_begin(window->start_step).
 * @param arg the params' arg
 * @param window the window that starts
 * @param options its typed options
 * @param framework_options its framework options, a JSON object as it was given
 *        ("{}" when none)
 * @param output_dir the directory to write the trace into (already created):
 *        OUTPUT_ROOT[/subdir]/rank{N}_start{a}_stop{b}
 * @param err where to put a message on failure, NUL-terminated
 * @param errlen its size
 * @return 0 on success; anything else reports the window as failed with err, and
 *         the stop callback is not called for it.
 */
typedef int (*dynprof_start_fn)(void *arg, const struct dynprof_window *window,
    const struct dynprof_options *options, const char *framework_options,
    const char *output_dir, char *err, size_t errlen);

/**
 * Stops the profiler.  Called in step_end(window->stop_step), at the next
 * step_end after a cancellation, or at close.
 * @return 0 on success; anything else reports the window as failed with err.
 */
typedef int (*dynprof_stop_fn)(void *arg, const struct dynprof_window *window,
    enum dynprof_stop_reason reason, const char *output_dir, char *err,
    size_t errlen);

/** Receives the library's log messages (no newline at the end). */
typedef void (*dynprof_log_fn)(void *arg, enum dynprof_log_level level,
    const char *message);

/** Set to DYNPROF_PARAMS_VERSION by dynprof_params_init(). */
#define DYNPROF_PARAMS_VERSION 2

/** What dynprof_open() takes.  Fill with dynprof_params_init() first: every field
 * left as it sets it means "the environment, else the default". */
struct dynprof_params {
	unsigned	 version;	/**< DYNPROF_PARAMS_VERSION */
	const char	*job;		/**< NULL: DYNPROF_JOB, SLURM_JOB_ID, "default" */
	int		 rank;		/**< -1: RANK, RANK_ID, OMPI_COMM_WORLD_RANK,
					     SLURM_PROCID, 0 */
	const char	*output_root;	/**< NULL: DYNPROF_OUTPUT_ROOT,
					     "./dyn_profile_data" */
	const char	*shm_dir;	/**< NULL: DYNPROF_SHM_DIR, "/dev/shm" */
	const char	*agent_socket;	/**< NULL: DYNPROF_AGENT_SOCKET,
					     "/run/dynprof/agent.sock" */
	int		 shm_mode;	/**< -1: DYNPROF_SHM_MODE (octal), 0600; used
					     when this rank creates the segment */
	dynprof_start_fn on_start;	/**< may be NULL */
	dynprof_stop_fn	 on_stop;	/**< may be NULL */
	dynprof_log_fn	 on_log;	/**< may be NULL: no logging */
	void		*arg;		/**< passed to the three callbacks */
	/* Since version 2 (a version 1 caller's struct ends above): */
	const char	*labels;	/**< NULL: DYNPROF_LABELS, else none: the
					     rank's place in the job, such as
					     "pp=3,tp=1,dp=12" (docs/labels.md) */
};

/** Opaque handle. */
typedef struct dynprof dynprof_t;

/** Counters of a handle. */
struct dynprof_stats {
	uint64_t	 events_sent;	 /**< datagrams the agent's socket took */
	uint64_t	 events_dropped; /**< events no agent took (state stays in the slot) */
	uint64_t	 config_reads;	 /**< schedule reloads after a change */
	uint64_t	 torn_reads;	 /**< reads retried because the agent was writing */
};

/** Fills p with the defaults (version set, rank and shm_mode -1, the rest 0). */
DYNPROF_API void	 dynprof_params_init(struct dynprof_params *p);

/**
 * Opens (creating if needed) the job's segment, claims a slot for the rank, and
 * reports the rank attached.  On success *out is the handle.
 */
DYNPROF_API int		 dynprof_open(const struct dynprof_params *p,
			    dynprof_t **out);

/** Stops a window still open (reason DYNPROF_STOP_CLOSED), reports the rank
 * detached, frees its slot and the handle.  NULL is allowed. */
DYNPROF_API void	 dynprof_close(dynprof_t *h);

/** Marks the beginning of step: starts a window due at it, or a time window
 * whose start has come (the first step that begins at or after it). */
DYNPROF_API int		 dynprof_step_begin(dynprof_t *h, int64_t step);

/** Marks the end of step: stops a window whose stop step it is, or that was
 * cancelled, or a time window whose end a step as long as the last would
 * pass (the end of the last step before its end). */
DYNPROF_API int		 dynprof_step_end(dynprof_t *h, int64_t step);

/** For plain loops, called once at the top of every iteration: ends the previous
 * step (if any) and begins the next; steps are numbered from 1.  dynprof_close()
 * ends the last one. */
DYNPROF_API int		 dynprof_step(dynprof_t *h);

/**
 * For loops without steps (an inference server, an evaluation loop, a data
 * loader): call it often, e.g. once per request or batch.  It starts a time
 * window (a window given by a wall-clock start and a duration) at the first
 * poll at or after its start and stops it at the first poll at or after its
 * end; windows of steps are left to the step calls.  One clock read
 * (CLOCK_MONOTONIC, no system call) and two compares while nothing is due.
 * A window's start or stop is as late as the gap between two polls.  Returns
 * DYNPROF_OK, or DYNPROF_EINVAL for a NULL or closed handle.
 */
DYNPROF_API int		 dynprof_poll(dynprof_t *h);

/**
 * Marks that the rank now enters the step's communication (the first
 * collective, e.g. the first gradient bucket's all-reduce): the time from the
 * step's beginning to the mark is the rank's busy time, the rest of the step
 * is waiting for the other ranks.  The agent reports it with the rank's steps,
 * and the coordinator judges each rank's busy time against its job's: the
 * straggler that synchronous training hides (every rank waits for it, so all
 * show the same step) is the one whose busy time is long.
 *
 * One clock read (CLOCK_MONOTONIC, no system call) and a few stores into the
 * rank's slot.  Only the first mark of a step counts; the first mark of all
 * turns the timing on, and from then on every step_begin reads the clock as
 * well.  Returns DYNPROF_OK, or DYNPROF_EINVAL for a NULL or closed handle.
 */
DYNPROF_API int		 dynprof_mark_comm(dynprof_t *h);

/** The rank's state (enum dynprof_rank_state). */
DYNPROF_API int		 dynprof_state(const dynprof_t *h);

/** The job id, the rank, the last step begun (-1 before the first). */
DYNPROF_API const char	*dynprof_job(const dynprof_t *h);
DYNPROF_API int		 dynprof_rank(const dynprof_t *h);
DYNPROF_API int64_t	 dynprof_current_step(const dynprof_t *h);

/** The window in progress, if any: returns 1 and fills w, else returns 0. */
DYNPROF_API int		 dynprof_active_window(const dynprof_t *h,
			    struct dynprof_window *w);

/**
 * Describes window id of the handle's job: the one in progress, the one whose
 * start or stop callback runs (call it from a callback with window->id and
 * the handle dynprof_open() gave), or one of the schedule the rank holds.
 * The caller sets info->version to DYNPROF_WINDOW_INFO_VERSION; only the
 * fields of that version are written.  Returns 1 and fills info, 0 for a
 * window the handle does not know (any more), or DYNPROF_EINVAL for a NULL
 * handle or info or a version 0 or newer than the library's.
 */
DYNPROF_API int		 dynprof_window_info(const dynprof_t *h, uint32_t id,
			    struct dynprof_window_info *info);

/** Copies the handle's counters. */
DYNPROF_API void	 dynprof_get_stats(const dynprof_t *h,
			    struct dynprof_stats *s);

/** Reports a failure of the profiler found outside a callback (for bindings whose
 * profiler fails asynchronously): sends a failed event for the window in
 * progress, or for no window, with message. */
DYNPROF_API int		 dynprof_report_failure(dynprof_t *h, const char *message);

/** Names an error code. */
DYNPROF_API const char	*dynprof_strerror(int code);

/** The library's version, "MAJOR.MINOR.PATCH". */
DYNPROF_API const char	*dynprof_version(void);

/**
 * For language bindings that cannot afford a foreign call per step.
 *
 * While *seq_addr still holds seq_seen and step < next_due, step_begin(step) and
 * step_end(step) have nothing to do but store step into *step_addr (8 bytes,
 * aligned).  The binding may do exactly that itself and call the library only when
 * either condition fails; after any library call it must fetch the fast state
 * again.  next_due is INT64_MAX when nothing is due.  Addresses stay valid until
 * dynprof_close().
 */
struct dynprof_fast_state {
	uintptr_t	 seq_addr;	/**< a uint32_t in the segment */
	uint32_t	 seq_seen;
	uintptr_t	 step_addr;	/**< an int64_t in the rank's slot */
	int64_t		 next_due;
};

/** Fills f with the handle's fast state. */
DYNPROF_API void	 dynprof_get_fast_state(const dynprof_t *h,
			    struct dynprof_fast_state *f);

/**
 * For the same bindings, once the rank has called dynprof_mark_comm(): the
 * address of an int64_t in the rank's slot (8 bytes, aligned) where the step's
 * fast path must also store the clock (CLOCK_MONOTONIC, in ns) when it stores
 * the step.  0 before the first mark (nothing to store).  Fetch it again
 * after any library call, with the fast state.
 */
DYNPROF_API uintptr_t	 dynprof_get_busy_begin_addr(const dynprof_t *h);

#ifdef __cplusplus
}
#endif

#endif /* DYNPROF_H */
