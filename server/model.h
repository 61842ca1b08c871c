/*
 * The model: jobs, windows, ranks, changes, rules, stragglers, the journal
 * and legacy jobs.  It depends on the store (store.h) and common/ only, and
 * knows no protocol: neither HTTP nor AgentLink.
 */

#ifndef DYNPROF_MODEL_H
#define DYNPROF_MODEL_H

#include "refusal.h"
#include "state.h"
#include "tracesum.h"

/*
 * A window asked for (by the admin API, a rule), before the job's steps
 * resolve it: its steps, ranks, output directory and options.
 */
struct window_request {
	int64_t		 start, stop, in, steps, roundup;
	int		 has_start, has_stop, has_in, has_steps, has_round;
	/* A time window instead of steps: from at_unix_ns (the wall clock)
	 * for duration_ms; the clock offsets of the nodes may differ from the
	 * coordinator's by tolerance_ms before the window warns. */
	int		 has_at, has_duration, has_tolerance;
	int64_t		 at_unix_ns, duration_ms, tolerance_ms;
	int		 force;		/* a start every live rank passed */
	const char	*ranks;		/* NULL: every rank */
	/* Ranks by what they are (select.c), instead of ranks: */
	const char	*select;	/* a label selector, NULL: any */
	const char	*nodes;		/* node names, commas, NULL: any */
	const char	*one_per;	/* a label key, NULL: every match */
	int		 has_group;	/* group_of given: */
	int32_t		 group_rank;	/* the ranks sharing this one's */
	const char	*group_vary;	/* labels but this key */
	const char	*output_subdir;	/* NULL: none */
	int		 no_collect;	/* "collect": false */
	const struct options_over *options;	/* NULL: the job's defaults */
};

/* What DELETE /v1/jobs/J asks: the job, and whether a running window may go. */
struct job_forget_request {
	const char	*job;
	int		 force;
};

/* The budgets a rank may be refused by (schedule_ranks.c). */
enum rank_budget {
	RANK_BUDGET_JOB,			/* --max-ranks-per-job */
	RANK_BUDGET_AGENT,			/* --max-ranks-per-agent */
	RANK_BUDGET_MEMORY,			/* --rank-memory-max */
};

/* select.c */
int	 select_window_ranks(struct coord *, const char *,
	    const struct window_request *, char *, size_t, char **,
	    struct refusal *);
int	 select_window_grow(struct coord *, struct job *,
	    const struct window *, char *, size_t, struct refusal *);
int	 select_selector_field(const char *, const char *, char *, size_t);
int	 select_selector_check(const char *, struct refusal *);

/* schedule.c */
int	 schedule_window_make(const struct options *,
	    const struct window_request *, struct window **, struct refusal *);
struct job	*schedule_job_find(struct coord *, const char *);
struct job	*schedule_job_get(struct coord *, const char *);
struct job	*schedule_job_peer(struct coord *, const char *, const char *);
int	 schedule_job_unscheduled(const struct job *);
size_t	 schedule_unscheduled_count(struct coord *);
uint64_t schedule_job_push_generation(const struct job *);
void	 schedule_job_applied(struct job *, uint64_t, uint64_t);
struct rank	*schedule_rank_find(struct job *, int32_t);
struct rank	*schedule_rank_take(struct coord *, struct job *, int32_t,
		    struct node *);
void	 schedule_rank_free(struct coord *, struct rank *);
void	 schedule_rank_set_labels(struct coord *, struct rank *,
	    struct node *, const char *);
void	 schedule_rank_set_string(struct coord *, struct rank *, char **,
	    const char *);
struct node	*schedule_node_find(struct coord *, const char *);
struct node	*schedule_node_get(struct coord *, const char *);
struct node_job	*schedule_node_job(struct node *, const char *, int);
int	 schedule_node_up(const struct node *);
/* Where schedule_serving_next() is in its walk: zeroed to begin. */
struct serving {
	const struct sub	*s;
	struct node		*n;
	int			 started;
};
struct node	*schedule_serving_next(const struct coord *, const struct job *,
		    struct serving *, struct node_job **);
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
int	 schedule_window_over(struct coord *, const struct job *,
	    const struct window *, int64_t);
struct window	*schedule_overlap(struct coord *, const struct job *, int64_t,
		    int64_t);
struct window	*schedule_overlap_time(struct coord *, const struct job *,
	    int64_t, int64_t);
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
void	 schedule_node_heartbeat(struct node *, int64_t);
void	 schedule_flush_ranks(struct coord *);
void	 schedule_compact_jobs(struct coord *);
int	 schedule_store_ranks(struct coord *);
void	 schedule_ranks_stored(struct coord *);
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
#define EVENT_KIND_LAST	DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED
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

/* intake.c */
int	 intake_begin(struct coord *);
void	 intake_flush(struct coord *);

/* jobs.c */
void	 jobs_reap(struct coord *, uint64_t);
struct job	*jobs_forget(struct coord *, struct job *, uint64_t);
void	 jobs_free_all(struct coord *);
void	 jobs_clear(struct coord *);

/* summary.c */
int	 summary_add(struct coord *, struct job *, struct json_t *);
struct json_t *summary_time(int64_t);
const char *summary_rank_outcome(const struct rank *, int,
	    const struct window *);
struct json_t *summary_window_status(const struct job *,
	    const struct window *, const char *);
struct json_t *summary_clock_warnings(const struct coord *,
	    const struct job *, const struct window *);

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
void	 journal_stage_window_at(struct coord *, struct job *,
	    const struct window *, int, uint64_t, int64_t);
void	 journal_stage_window_detail(struct coord *, struct job *,
	    const struct window *, int, uint64_t, int64_t, const char *);
const char	*journal_window_refused(const struct window *);
/* journal_rebuild.c */
void	 journal_rebuild(struct coord *);
void	 journal_publish(struct coord *);
uint64_t journal_staged(const struct coord *);
void	 journal_publish_to(struct coord *, uint64_t);
void	 journal_discard(struct coord *);
const struct journal_entry *journal_next(const struct coord *, uint64_t);
uint64_t journal_job_first(const struct coord *, const struct job *);
void	 journal_forget_job(struct coord *, struct job *);
uint64_t journal_next_revision(const struct coord *);
void	 journal_restore_begin(struct coord *);
int	 journal_restore(struct coord *, const struct store_journal *);
int	 journal_insert(struct coord *, const struct store_journal *const *,
	    size_t);
void	 journal_restored(struct coord *, uint64_t, uint64_t);
void	 journal_at_store(struct coord *);

/* journal_load.c */
int	 journal_load_take(struct coord *, const struct store_journal *);
void	 journal_load_end(struct coord *);
void	 journal_load_free(struct coord *);
int	 journal_load_merge(struct coord *);
void	 journal_load_publish(struct coord *);

/* change.c */
int	 change_window_add(struct coord *, const char *,
	    const struct window_request *, struct window **, struct job **,
	    struct refusal *);
int	 change_job_forget(struct coord *, const struct job_forget_request *,
	    struct refusal *);
int	 change_window_cancel(struct coord *, const char *, uint32_t,
	    struct job **, struct refusal *);
int	 change_config_set(struct coord *, const char *, char *,
	    struct options *, int64_t, int64_t, struct job **, struct window **,
	    struct refusal *);
struct change_commit *change_pending(struct coord *, void *);
void	 change_windows_over(struct coord *, int);
void	 change_windows_grow(struct coord *);
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
	uint32_t		 last_us;	/* in: its last step's, 0 unknown */
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
int	 busy_judge(struct busy_rank *, size_t, int, int64_t,
	    struct busy_job *);

/* arrive.c */
#define ARRIVE_WINDOW		64	/* steps judged, per job */
#define ARRIVE_MIN_STEPS	16	/* judged before any is flagged */
#define ARRIVE_MIN_RANKS	2
/* One rank's arrivals for a tick's judgement. */
struct arrive_rank {
	const struct rank_arrive *ra;		/* NULL: none */
	int32_t			 rank;
};
/* A job's judged steps: the last rank at each (-1: nobody late enough). */
struct arrive_job {
	int64_t			 judged_step;	/* the newest judged, -1 none */
	uint64_t		 steps;		/* judged so far */
	int32_t			 last[ARRIVE_WINDOW];
	int64_t			 late_us[ARRIVE_WINDOW];	/* after the median */
	uint32_t		 head, n;
	int32_t			 rank;		/* out: last most often, -1 */
	uint32_t		 count;		/* out: steps it was last */
	float			 share;		/* out: count / n */
	int64_t			 late_avg_us;	/* out: its mean lateness */
	int			 flagged;	/* out: last at over half */
};
int64_t	 arrive_clock_note(struct arrive_clock *, int64_t, int64_t);
int64_t	 arrive_clock_sent(const struct arrive_clock *, int64_t, int64_t);
void	 arrive_rank_reset(struct rank_arrive *);
size_t	 arrive_rank_take(struct rank_arrive *, const int64_t *,
	    const int64_t *, size_t, int64_t, int64_t, int64_t);
void	 arrive_job_reset(struct arrive_job *);
int64_t	 arrive_rank_step_us(const struct rank_arrive *);
int	 arrive_judge(struct arrive_job *, const struct arrive_rank *, size_t,
	    int, uint32_t, int64_t);

/* traces.c */
#define TRACES_PER_JOB_MAX	1048576	/* records a job keeps */
#define TRACES_WHERE_MAX	1024	/* an archive's location */
/* A rank's trace for a window, as its agent reported it. */
struct trace_rec {
	uint32_t	 window_id;
	int32_t		 rank;
	int		 kind;			/* EVENT_COLLECTED or
						 * EVENT_COLLECT_FAILED */
	uint64_t	 size;			/* collected: the archive's */
	char		 sha256[65];		/* collected: lowercase hex */
	char		 node[COORD_NODE_MAX];	/* whose agent collected it */
	int64_t		 time_ns;
	char		*where;			/* collected: the archive's
						 * location; failed: why */
	char		*sum;			/* collected: what the agent
						 * read of it, tracesum.h's
						 * text form; NULL none */
};
/* What traces_list() is asked. */
struct traces_query {
	const char	*job;
	uint32_t	 window;
};
/* A rank of the index: its record, or (rec NULL) it stopped, still pending. */
struct traces_entry {
	int32_t			 rank;
	const struct trace_rec	*rec;
	const char		*node;		/* pending: its node */
};
struct traces_list {
	struct traces_entry	*entries;	/* by rank */
	size_t			 n;
	size_t			 collected, failed, pending;
	int			 no_collect;	/* the window's "collect": false */
};
int	 traces_event_detail(int, uint64_t, const char *, const char *,
	    const char *, const struct tracesum *, char *, size_t,
	    const char **);
int	 traces_detail_read(int, const char *, uint64_t *, char *,
	    const char **, size_t *, const char **, const char **);
const struct trace_rec *traces_find(const struct job *, uint32_t, int32_t);
int	 traces_note(struct coord *, struct job *, struct rank *, uint32_t,
	    int, const char *, int64_t, const char *);
const char *traces_detail(const struct job *, int32_t, uint32_t, int, char *,
	    size_t);
int	 traces_list(struct coord *, const struct traces_query *,
	    struct traces_list *, struct refusal *);
void	 traces_list_free(struct traces_list *);

/* traces_compare.c */
#define COMPARE_RANKS_SHOWN	4096	/* ranks whose steps are shown */
#define COMPARE_SLOWEST		8
#define COMPARE_OPS_SEEN	1024	/* operators' names compared */
#define COMPARE_OPS_SHOWN	10
#define COMPARE_SYNC_PCT	5	/* step times agree: spread within */
#define COMPARE_COMM_PCT	10	/* of the median step: a difference */
/* A rank of a window compared. */
struct compare_rank {
	int32_t		 rank;
	const char	*node;
	int64_t		 median_us;		/* of its steps; -1 none */
	int64_t		 comm_us;		/* median in collectives; -1
						 * not known */
	int64_t		 compute_us;		/* median step minus that */
	uint32_t	 nsteps;
	struct tracesum	*sum;			/* the first ranks' only */
	char		 comm_op[TRACESUM_NAME_MAX + 1];	/* busiest */
};
/* How a window's straggler was told (traces_compare()). */
enum compare_by {
	COMPARE_BY_NONE,
	COMPARE_BY_STEP,	/* its step is the longest, by over SYNC_PCT */
	COMPARE_BY_COMPUTE	/* steps agree; it waits least in collectives */
};
struct compare_straggler {
	enum compare_by	 by;
	struct compare_rank r;			/* the rank, sum NULL */
	const char	*waited_in;		/* the others' busiest
						 * collective; NULL none */
};
/* An operator whose total differs between ranks. */
struct compare_op {
	char		 name[TRACESUM_NAME_MAX + 1];
	int64_t		 min_us, max_us, mean_us;
	int32_t		 min_rank, max_rank;
	uint32_t	 nranks;		/* that reported it */
};
struct traces_compare {
	struct compare_rank	*ranks;		/* by rank, with a summary */
	size_t			 n;
	size_t			 collected, failed, pending;
	size_t			 unread;	/* collected, no summary */
	size_t			 compared;	/* ranks with steps */
	int64_t			 median_us, min_us, max_us;	/* of the
							 * ranks' medians */
	size_t			 ncomm;		/* ranks with time in
						 * collectives known */
	int64_t			 comm_median_us, comm_min_us, comm_max_us;
	int64_t			 compute_median_us, compute_min_us,
				 compute_max_us;
	int			 synchronous;	/* step times agree */
	struct compare_straggler straggler;
	struct compare_rank	*slowest;	/* slowest first */
	size_t			 nslowest;
	struct compare_rank	*slowest_compute;	/* longest compute
							 * first */
	size_t			 nslowest_compute;
	struct compare_op	*ops;		/* widest difference first */
	size_t			 nops;
};
int	 traces_compare(struct coord *, const struct traces_query *,
	    struct traces_compare *, struct refusal *);
void	 traces_compare_free(struct traces_compare *);
void	 traces_free(struct job *);

/* straggler.c */
#define STRAGGLER_LAG		1	/* step behind the median by > lag */
#define STRAGGLER_SLOW		2	/* rate under the job's by > drop % */
#define STRAGGLER_BUSY		4	/* busy time over the median by > P % */
#define STRAGGLER_BUSY_CHANGE	8	/* busy time rose against its own */
#define STRAGGLER_LAST		16	/* last at the collective most often */
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
	float		 last_share;		/* steps it arrived last, -1 */
	int64_t		 last_late_us;		/* then after the median */
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
uint32_t straggler_busy_median_us(const struct job *);
struct straggler;
int	 straggler_take(struct job *, const struct straggler *);
struct json_t *straggler_json(const struct coord *, const struct job *);
struct json_t *straggler_json_all(const struct coord *, const struct job *);
void	 straggler_metrics(struct coord *, struct evbuffer *);

/* rules.c */
struct rule;
struct rules;
struct rules_limits;
void	 rules_tick(struct coord *);
void	 rules_free(struct rules *);
int	 rules_load(struct job *, const char *);
char	*rules_dump(const struct job *);
int	 rules_store_check(const char *, struct refusal *);
struct json_t *rules_json(const struct job *);
int	 rules_add(struct coord *, const char *, struct rule *,
	    const struct rule **, struct refusal *);
int	 rules_delete(struct coord *, const char *, uint32_t,
	    struct refusal *);
int	 rules_set_thresholds(struct coord *, const char *,
	    const struct rules_limits *, struct refusal *);
void	 rules_metrics(struct coord *, struct evbuffer *);

/* load.c */
int	 load_model(struct coord *);
int	 load_model_copy(struct coord *);
int	 load_change(struct coord *, const char *, const char *, size_t,
	    int64_t);

/* valid.c */
struct store_window;
struct store_job;
struct store_rank;
int	 valid_step(int64_t);
int	 valid_generation(uint64_t);
int	 valid_window_steps(int64_t, int64_t, struct refusal *);
int	 valid_window_times(int64_t, int64_t, int64_t, int64_t, int64_t,
	    struct refusal *);
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
	    uint32_t, const char **);
int	 legacy_ended_everywhere(struct coord *, const struct job *,
	    uint32_t);
int	 legacy_judges(struct coord *, const struct job *);

/* nodeview.c: nodes' rows in this many batches, each at most this long
 * (under etcd's request limit, ETCD_TXN_BYTES_MAX, with its base64): about
 * 450,000 nodes of 300 bytes. */
#define NODEVIEW_BATCHES	256
#define NODEVIEW_BATCH_BYTES	(512 * 1024)
void	 nodeview_flush(struct coord *);
int	 nodeview_take(struct coord *, const char *, const char **);
void	 nodeview_forget(struct coord *);

/* viewrows.c: the other view rows of the leader for followers, each kind
 * in batches of at most this long (as nodeview.c's). */
#define VIEWROWS_BATCH_BYTES	(512 * 1024)
unsigned viewrows_batch_of(const char *, unsigned);
int	 viewrows_batch_name(const char *, unsigned, int64_t *);
int	 viewrows_put(struct coord *, const char *, unsigned,
	    const struct json_t *, int *);
int	 viewrows_end(struct coord *, int, int);
/* What viewrows_take() does with each row of a batch of a kind: check(name,
 * row, batch, why), clear(batch) the copy's rows of the batch (or NULL),
 * apply(name, row, why). */
struct viewrows_taker {
	int	(*check)(const char *, struct json_t *, int64_t, const char **);
	void	(*clear)(struct coord *, int64_t);
	int	(*apply)(struct coord *, const char *, struct json_t *,
		    const char **);
};
int	 viewrows_take(struct coord *, const char *, int64_t,
	    const struct viewrows_taker *, const char **);
int	 viewrows_due(const struct coord *);

/* stragview.c */
void	 stragview_flush(struct coord *);
int	 stragview_take(struct coord *, const char *, const char *,
	    const char **);
void	 stragview_forget(struct coord *);

/* legacyview.c */
void	 legacyview_flush(struct coord *);
void	 legacyview_forget(struct coord *);
int	 legacyview_take(struct coord *, const char *, const char *,
	    const char **);

#endif /* DYNPROF_MODEL_H */
