/*
 * The coordinator's persistent state behind a small interface, so that another
 * store (etcd) can take SQLite's place.  The store knows rows, not the model:
 * a caller hands it values already rendered, and store_load() hands the rows
 * back through a struct store_loader.  Every write happens inside
 * store_begin()/store_commit(); a change is answered or pushed only after
 * store_commit() returned 0.  Two backends: SQLite (store_sqlite.c, the
 * embedded default) and etcd (store_etcd.c, for coordinators that share their
 * state and elect a leader); store.c keeps what they share.
 *
 * store_commit_async() commits without waiting where the backend can
 * (etcd): the caller goes on, and what depends on the commit (an answer,
 * an acknowledgement, a push) waits for its done function.  Commits land
 * in the order they were made.
 *
 * The agents' events are written in batches: store_batch_begin() opens one, a
 * transaction that stays open across reads; store_batch_end() closes it, its
 * transaction then the caller's to commit or roll back.  The store calls
 * nobody back to finish it: the model's event intake does (intake.c, its one
 * commit point).  store_begin() refuses while a batch is open, so that a
 * change never joins one.
 */

#ifndef DYNPROF_STORE_H
#define DYNPROF_STORE_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

struct etcd;
struct store;

/* One event of a rank, as kept for status. */
struct rank_event {
	int		 kind;			/* Dynprof__V1__EventKind */
	uint32_t	 window_id;
	int64_t		 step;
	int64_t		 time_ns;
};

/* A job's own fields (not its windows or ranks). */
struct store_job {
	const char	*name;
	uint64_t	 generation;
	uint32_t	 next_window_id;
	const char	*config;		/* NULL: none */
	const char	*defaults;		/* options text, NULL: none */
	int64_t		 created_ns;
	const char	*rules;			/* JSON text, NULL: none */
};

/* One window of a job. */
struct store_window {
	const char	*job;
	uint32_t	 id;
	int64_t		 start_step;
	int64_t		 stop_step;
	const char	*ranks;
	const char	*selector;		/* select.c's text, NULL: none */
	const char	*options;		/* options text, NULL: none */
	const char	*output_subdir;
	int		 state;			/* enum window_state */
	int		 finished;
	int64_t		 created_ns;
	int64_t		 ended_ns;		/* 0: not ended */
	int		 no_collect;		/* "collect": false */
	int64_t		 start_unix_ns;		/* a time window's, 0: steps */
	int64_t		 stop_unix_ns;
	int64_t		 tolerance_ms;
	const char	*trace_store;		/* the job's own, NULL: none */
	const char	*refused_reason;	/* left the schedule refused by
						 * every node (legacy): a node's
						 * reason ("" none said); NULL:
						 * not refused */
	uint64_t	 generation;		/* of the change that made it */
	uint64_t	 ended_generation;	/* of the one that ended it;
						 * 0: not ended, or not known
						 * (a row of the old shape) */
};

/* A rank's last known state. */
struct store_rank {
	const char	*job;
	int32_t		 rank;
	const char	*node;
	int32_t		 pid;
	int64_t		 step;
	int		 state;
	uint32_t	 window_id;
	const char	*output_dir;
	int		 last_event;
	int64_t		 last_event_ns;
	const char	*error;
	const char	*labels;		/* NULL or "": none */
	int64_t		 arrived_ns;		/* 0: unknown */
	int64_t		 gone_ns;		/* 0: not gone */
	int64_t		 owner;			/* its process's uid + 1,
						 * 0: unknown */
};

/*
 * One entry of the event stream's journal (journal.c) as stored, so that a
 * coordinator that loads the store serves the same events at the same
 * revisions.  A rank event the store keeps as an event carries its
 * revision there (store_put_event()); the others (a process's attach or
 * detach, a window's change) are put with store_put_journal(), in the same
 * value as the rows they speak of where the backend can.  A floor says that
 * the job's events up to rev are stored without their revisions (its history
 * was rewritten): a client resuming from before it reads the job again.
 */
#define STORE_JOURNAL_FLOOR	0
#define STORE_JOURNAL_RANK	1	/* what: the event's kind */
#define STORE_JOURNAL_WINDOW	2	/* what: scheduled, cancelled, done */
struct store_journal {
	uint64_t	 rev;
	const char	*job;
	int		 type;
	int		 what;
	int32_t		 rank;
	uint32_t	 window;
	int64_t		 step;			/* rank: its; window: start */
	int64_t		 stop;			/* window: stop step */
	int64_t		 time_ns;
	uint64_t	 generation;		/* window: the change's */
	const char	*node;			/* NULL: none */
	const char	*detail;		/* NULL: none */
};

/*
 * What store_load() hands each row to.  A function returns 0, or -1 to stop
 * reading its table (out of memory).  A row that does not even decode (a
 * value of the wrong type, a key its fields do not name) goes to bad(), with
 * its table, its key or what names it, and why; the generation counter's
 * row too, and then generation() is not called.
 */
struct store_loader {
	void	*arg;
	int	(*bad)(void *, const char *, const char *, const char *);
	void	(*generation)(void *, uint64_t);
	int	(*job)(void *, const struct store_job *);
	int	(*window)(void *, const struct store_window *);
	int	(*rank)(void *, const struct store_rank *);
	/* The node and detail only of a trace's collection (the others'
	 * are not kept in memory): NULL for every other kind. */
	int	(*event)(void *, const char *, int32_t,
		    const struct rank_event *, const char *, const char *);
	int	(*agent)(void *, const char *, uint64_t, uint64_t);
	/* NULL, or each journal entry the store keeps (in no order). */
	int	(*journal)(void *, const struct store_journal *);
	/* NULL, or each batch of nodes' rows (JSON text the model wrote,
	 * its name) the store keeps for followers (store_put_nodes()). */
	int	(*nodes)(void *, const char *, const char *);
	/* store_apply() only: a job's row (ROW_JOBS), one of its windows
	 * (ROW_WINDOWS, its id) or one of its batches of events (ROW_EVENTS)
	 * is gone from the store.  Returns 0, or -1 if the model cannot
	 * follow without reading the store again. */
	int	(*gone)(void *, int, const char *, uint32_t);
	/* NULL, or each other view row of the leader the store keeps for
	 * followers (store_put_view()): its kind, name and JSON text. */
	int	(*view)(void *, const char *, const char *, const char *);
};

/* The kinds of view rows (store_put_view()): the leader's judgement of
 * stragglers by job (stragview.c), legacy reports by node (legacyview.c). */
#define STORE_VIEW_STRAG	"stragbatch"
#define STORE_VIEW_LEGACY	"legacybatch"

/* What a backend does; store.c calls it, in and around transactions. */
struct store_backend {
	const char	*name;
	void	(*close)(void *);
	int	(*load)(void *, const struct store_loader *);
	int	(*begin)(void *);
	int	(*commit)(void *);
	/* NULL: commits block (store.c calls commit).  Else commits without
	 * waiting, in order: 0 and done called later, or -1 refused now. */
	int	(*commit_async)(void *, void (*)(void *, int), void *);
	size_t	(*inflight)(void *);	/* commits not answered yet */
	void	(*abandon)(void *);	/* fails the commits in flight */
	/* NULL: nothing to compact.  Else 1 once a job's stored history is
	 * worth rewriting whole (compact_begin, its rows, compact_end, in a
	 * transaction): what was stored of it before is dropped. */
	int	(*compact_due)(void *, const char *);
	int	(*compact_begin)(void *, const char *);
	int	(*compact_end)(void *, const char *);
	void	(*rollback)(void *);
	int	(*put_generation)(void *, uint64_t);
	int	(*put_job)(void *, const struct store_job *);
	int	(*put_window)(void *, const struct store_window *);
	int	(*put_rank)(void *, const struct store_rank *);
	int	(*put_event)(void *, const char *, int32_t,
		    const struct rank_event *, const char *, const char *,
		    uint64_t);
	/* NULL: the journal is not kept (revisions start again at a load). */
	int	(*put_journal)(void *, const struct store_journal *);
	/* In a transaction: a job nobody scheduled, or whole (0 or 1). */
	int	(*forget_job)(void *, const char *, int);
	int	(*put_agent)(void *, const char *, uint64_t, uint64_t);
	/* NULL: no node rows kept (no follower reads them).  Else stores a
	 * batch of nodes' rows (JSON text the model wrote) under its name,
	 * in place of its last. */
	int	(*put_nodes)(void *, const char *, const char *);
	/* NULL: no view rows kept.  Else stores a view row (a batch of the
	 * leader's judgement of stragglers, or of legacy reports: JSON text
	 * the model wrote) of a kind (STORE_VIEW_*) under its name, in place
	 * of its last. */
	int	(*put_view)(void *, const char *, const char *, const char *);
	/* NULL, or the revision of the store the last load read or the last
	 * commit landed at, whichever is later (0: none yet). */
	int64_t	(*revision)(void *);
	/* NULL, or why writes fail for now (no quorum, not the leader). */
	const char *(*unavailable)(void *);
	/* NULL, or 1 once the open transaction is as big as it should get. */
	int	(*full)(void *);
	/* NULL: a change is only read with load.  Else hands what one key
	 * put (its value, length and revision) or deleted (value NULL) holds
	 * to the loader, as load would: 0 (a key written alone: everything
	 * committed before it landed before it), 1 (a value written beside
	 * others of its commit and the one before: those may land after it),
	 * or -1 if it cannot alone. */
	int	(*apply)(void *, const char *, const char *, size_t, int64_t,
		    const struct store_loader *);
};

/* store_sqlite.c */
struct store	*store_open(const char *, const char **);	/* caller frees */

/* store_etcd.c */
struct store	*store_open_etcd(struct etcd *, const char **);	/* caller frees;
								 * not the etcd */

/* store.c */
struct store	*store_new(const struct store_backend *, void *);
void		 store_close(struct store *);
const char	*store_unavailable(const struct store *);
int		 store_load(struct store *, const struct store_loader *);
int		 store_apply(struct store *, const char *, const char *, size_t,
		    int64_t, const struct store_loader *);
int		 store_begin(struct store *);
int		 store_commit(struct store *);
int		 store_commit_async(struct store *, void (*)(void *, int),
		    void *);
size_t		 store_inflight(const struct store *);
void		 store_drain(struct store *, struct event_base *, int);
void		 store_abandon(struct store *);
int		 store_compact_due(const struct store *, const char *);
int		 store_compact_begin(struct store *, const char *);
int		 store_compact_end(struct store *, const char *);
void		 store_rollback(struct store *);
int		 store_batch_begin(struct store *);
int		 store_batch_open(const struct store *);
int		 store_batch_full(const struct store *);
void		 store_batch_end(struct store *);
int		 store_put_generation(struct store *, uint64_t);
int		 store_put_job(struct store *, const struct store_job *);
int		 store_put_window(struct store *, const struct store_window *);
int		 store_put_rank(struct store *, const struct store_rank *);
int		 store_put_event(struct store *, const char *, int32_t,
		    const struct rank_event *, const char *, const char *,
		    uint64_t);
int		 store_keeps_journal(const struct store *);
int		 store_put_journal(struct store *, const struct store_journal *);
int		 store_forget_job(struct store *, const char *);
int		 store_drop_job(struct store *, const char *);
int		 store_put_agent(struct store *, const char *, uint64_t,
		    uint64_t);
int		 store_keeps_nodes(const struct store *);
int		 store_put_nodes(struct store *, const char *, const char *);
int		 store_put_view(struct store *, const char *, const char *,
		    const char *);
int64_t		 store_revision(const struct store *);

#endif /* DYNPROF_STORE_H */
