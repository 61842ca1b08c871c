/*
 * libdynprof's private header: the handle and the functions its files share.
 * Never installed.
 */

#ifndef LIBDYNPROF_H
#define LIBDYNPROF_H

#include <sys/types.h>
#include <sys/un.h>

#include <stdarg.h>
#include <stdint.h>
#include <time.h>

#include "dynprof.h"
#include "segment.h"

#define LIB_SOCKET_DEFAULT	"/run/dynprof/agent.sock"
#define LIB_OUTPUT_DEFAULT	"./dyn_profile_data"
#define LIB_JOB_DEFAULT		"default"
#define LIB_DIR_WAIT_MS		1000	/* for the agent to make our directory */

/* Event kinds: the EventKind numbers of proto/dynprof.proto (report.c checks). */
#define EVENT_ATTACHED		1
#define EVENT_STARTED		2
#define EVENT_STOPPED		3
#define EVENT_SKIPPED		4
#define EVENT_FAILED		5
#define EVENT_DETACHED		6

/* Where a step call is: window starts happen at a begin, stops at an end. */
enum window_phase {
	WINDOW_BEGIN,
	WINDOW_END,
	WINDOW_POLL,		/* dynprof_poll(): time windows only */
};

/* What the window rules say to do next. */
enum window_action {
	WINDOW_NONE,
	WINDOW_START,		/* start windows[index] */
	WINDOW_SKIP,		/* windows[index] started behind the rank */
	WINDOW_INVALID,		/* windows[index] cannot run: ignore it */
	WINDOW_STOP_COMPLETED,	/* the active window reached its stop step */
	WINDOW_STOP_CANCELLED,	/* the active window was cancelled */
};

/* The ids of the windows a rank is done with (run, skipped, failed, ignored). */
struct window_done {
	uint32_t	*ids;
	size_t		 n;
	size_t		 cap;
};

/* The window rules' view of a rank: what it runs and what it is done with. */
struct window_rank {
	int32_t			 rank;
	const struct seg_window	*active;	/* NULL: none */
	const struct window_done *done;
	int64_t			 step;		/* the step of the call */
	int64_t			 now_ns;	/* CLOCK_MONOTONIC at the call */
	int64_t			 period_ns;	/* a step's, 0: not known yet */
};

struct dynprof {
	/*
	 * The hot paths read these six and nothing else: keep them first, in
	 * one cache line.
	 */
	_Atomic uint32_t	*seq_addr;	/* &hdr->seq */
	uint32_t		 seq_seen;	/* the seq h->cfg was read at */
	_Atomic int64_t		*step_addr;	/* &slot->step */
	int64_t			 next_due;	/* first step needing more work */
	_Atomic int64_t		*busy_begin;	/* &slot->busy_begin_ns once the
						   rank marks (busy.c), else NULL */
	int64_t			 next_due_ns;	/* dynprof_poll()'s next_due:
						   CLOCK_MONOTONIC */

	struct segment		 seg;
	struct seg_slot		*slot;
	int			 slot_index;
	pid_t			 pid;
	int32_t			 rank;
	int64_t			 counter;	/* dynprof_step()'s last step */
	int64_t			 mark_ns;	/* the last mark counted (busy.c) */
	uint32_t		 arrive_shift;	/* arrivals kept every 2^this
						   steps (busy.c) */
	uint64_t		 arrive_turn;	/* the slot's arrive_count when
						   the stride last changed */
	int64_t			 probe_step;	/* a step_begin the slow path saw, */
	int64_t			 probe_ns;	/* and when: 0 none (the period) */
	int64_t			 period_ns;	/* a step's, 0: not known yet */
	int64_t			 now_ns;	/* CLOCK_MONOTONIC read by the
						   slow path at its entry */
	uint64_t		 slow_calls;	/* entries of the slow path */

	struct seg_config	*cfg;		/* last consistent copy */
	struct seg_config	*cfg_next;	/* where the next one is read */
	struct window_done	 done;
	int			 active;	/* a window runs */
	struct seg_window	 window;	/* the one that runs, latched */
	char			 output_dir[SEG_PATH_MAX];
	uint32_t		 state;		/* enum seg_rank_state */
	uint32_t		 outcome;	/* state of the last finished window */
	uint32_t		 rank_seq;

	char			 output_root[SEG_PATH_MAX];
	char			 labels[SEG_LABELS_MAX]; /* canonical, for a claim */
	int			 sock;		/* -1: none */
	int			 pidfd;		/* this process's, -1: none */
	struct sockaddr_un	 agent_addr;

	dynprof_start_fn	 on_start;
	dynprof_stop_fn		 on_stop;
	dynprof_log_fn		 on_log;
	void			*arg;

	struct dynprof_stats	 stats;
	uint64_t		 log_overwritten; /* log entries never acked */
	int			 closed;	/* stopped at process exit */
	int			 exiting;	/* being stopped at exit */
	struct dynprof		*next;		/* open handles, for exit */
};

/* handle_log.c */
void	 handle_log(const struct dynprof *, enum dynprof_log_level,
	    const char *, ...) __attribute__((format(printf, 3, 4)));

/* busy.c */
/* CLOCK_MONOTONIC in ns: through the vDSO, no system call. */
static inline int64_t
busy_now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

void	 busy_begin_slow(struct dynprof *);
void	 busy_slot_moved(struct dynprof *);

/* step.c */
int	 step_slow(struct dynprof *, int64_t, enum window_phase);
void	 step_stop(struct dynprof *, enum dynprof_stop_reason, int64_t);
void	 step_update_state(struct dynprof *);

/* window.c */
void	 window_config_sanitize(struct seg_config *);
int	 window_check(const struct seg_window *, const char **);
int	 window_targets(const struct seg_window *, int32_t);
int	 window_is_cancelled(const struct seg_config *, uint32_t);
enum window_action window_decide(const struct seg_config *,
	    const struct window_rank *, int64_t, enum window_phase, int *,
	    const char **);
int64_t	 window_next_due(const struct seg_config *, const struct window_rank *);
int64_t	 window_next_due_ns(const struct seg_config *,
	    const struct window_rank *);
int	 window_is_timed(const struct seg_window *);
int	 window_pending(const struct seg_config *, const struct window_rank *);
int	 window_done_has(const struct window_done *, uint32_t);
int	 window_done_add(struct window_done *, uint32_t);
void	 window_done_free(struct window_done *);
void	 window_options(const struct seg_options *, struct dynprof_options *);

/* report.c */
int	 report_open(struct dynprof *, const char *);
void	 report_close(struct dynprof *);
int	 report_make_dir(struct dynprof *, const char *);
void	 report_event(struct dynprof *, int, const struct seg_window *,
	    int64_t, uint32_t, const char *);

/* output.c */
int	 output_root_resolve(const char *, char *, size_t);
int	 output_dir_build(const char *, const char *, int32_t, int64_t, int64_t,
	    char *, size_t);
int	 output_dir_build_window(const char *, const char *, int32_t,
	    uint32_t, char *, size_t);
int	 output_mkdirs(const char *);

#endif /* LIBDYNPROF_H */
