/*
 * SQLite store: one file, DIR/dynprof.db, in WAL mode with synchronous=FULL, so
 * a committed change survives the process being killed (and the machine losing
 * power).  Writes are grouped by the caller between store_begin() and
 * store_commit(); the agents' events in batches that stay open across reads
 * (store_batch_begin()).
 */

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "coord.h"
#include "log.h"
#include "store.h"

/* Bump when the tables change; store_open() refuses a newer schema. */
#define STORE_SCHEMA_VERSION	1

static const char *store_schema =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER);"
    "CREATE TABLE IF NOT EXISTS jobs (job TEXT PRIMARY KEY,"
    " generation INTEGER, next_window_id INTEGER, config TEXT,"
    " defaults TEXT, created INTEGER);"
    "CREATE TABLE IF NOT EXISTS windows (job TEXT, id INTEGER,"
    " start_step INTEGER, stop_step INTEGER, ranks TEXT, options TEXT,"
    " output_subdir TEXT, state INTEGER, finished INTEGER, created INTEGER,"
    " PRIMARY KEY (job, id));"
    "CREATE TABLE IF NOT EXISTS ranks (job TEXT, rank INTEGER, node TEXT,"
    " pid INTEGER, step INTEGER, state INTEGER, window_id INTEGER,"
    " output_dir TEXT, last_event INTEGER, last_event_time INTEGER,"
    " error TEXT, PRIMARY KEY (job, rank));"
    "CREATE TABLE IF NOT EXISTS events (job TEXT, rank INTEGER,"
    " window_id INTEGER, kind INTEGER, step INTEGER, time INTEGER,"
    " node TEXT, detail TEXT, PRIMARY KEY (job, rank, window_id, kind));"
    "CREATE TABLE IF NOT EXISTS agents (node TEXT PRIMARY KEY,"
    " boot_id INTEGER, acked_seq INTEGER);";

enum store_stmt {
	ST_BEGIN,
	ST_COMMIT,
	ST_ROLLBACK,
	ST_GENERATION,
	ST_JOB,
	ST_WINDOW,
	ST_RANK,
	ST_EVENT,
	ST_AGENT,
	ST_COUNT
};

static const char *store_sql[ST_COUNT] = {
	"BEGIN IMMEDIATE",
	"COMMIT",
	"ROLLBACK",
	"INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?1)",
	"INSERT OR REPLACE INTO jobs VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
	"INSERT OR REPLACE INTO windows VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7,"
	" ?8, ?9, ?10)",
	"INSERT OR REPLACE INTO ranks VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
	" ?9, ?10, ?11)",
	"INSERT OR IGNORE INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	"INSERT OR REPLACE INTO agents VALUES (?1, ?2, ?3)",
};

struct store {
	sqlite3		*db;
	sqlite3_stmt	*st[ST_COUNT];
	int		 in_tx;
	void		(*batch_done)(void *);	/* an event batch is open */
	void		*batch_arg;
};

/* Runs SQL text with no result rows (the schema, pragmas). */
static int
store_exec(struct store *s, const char *sql)
{
	char	*err = NULL;

	if (sqlite3_exec(s->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		log_warnx("%s: %s: %s", __func__, sql, err ? err : "?");
		sqlite3_free(err);
		return (-1);
	}
	return (0);
}

/* Runs a prepared statement with no result rows. */
static int
store_step(struct store *s, enum store_stmt which)
{
	sqlite3_stmt	*st = s->st[which];
	int		 rc;

	rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		log_warnx("%s: %s: %s", __func__, store_sql[which],
		    sqlite3_errmsg(s->db));
		return (-1);
	}
	return (0);
}

/* Binds text, or NULL for a NULL pointer. */
static void
store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

/*
 * Opens (creating if needed) DIR/dynprof.db.  Returns NULL with *why set on
 * failure.
 */
struct store *
store_open(const char *dir, const char **why)
{
	static char	 reason[PATH_MAX + 512];
	struct store	*s;
	char		 path[PATH_MAX];
	sqlite3_stmt	*st;
	int		 i, version = 0;

	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		snprintf(reason, sizeof(reason), "%s: %s", dir,
		    strerror(errno));
		*why = reason;
		return (NULL);
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/dynprof.db", dir) >=
	    sizeof(path)) {
		*why = "state directory path too long";
		return (NULL);
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		*why = "out of memory";
		return (NULL);
	}
	if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(reason, sizeof(reason), "%s: %s", path,
		    s->db ? sqlite3_errmsg(s->db) : "cannot open");
		goto fail;
	}
	sqlite3_busy_timeout(s->db, 5000);
	if (store_exec(s, "PRAGMA journal_mode=WAL") == -1 ||
	    store_exec(s, "PRAGMA synchronous=FULL") == -1 ||
	    store_exec(s, store_schema) == -1) {
		snprintf(reason, sizeof(reason), "%s: %s", path,
		    sqlite3_errmsg(s->db));
		goto fail;
	}
	if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st,
	    NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			version = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	if (version > STORE_SCHEMA_VERSION) {
		snprintf(reason, sizeof(reason), "%s: schema version %d is "
		    "newer than this coordinator's %d", path, version,
		    STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (version < STORE_SCHEMA_VERSION)
		store_exec(s, "PRAGMA user_version=1");
	for (i = 0; i < ST_COUNT; i++) {
		if (sqlite3_prepare_v3(s->db, store_sql[i], -1,
		    SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) != SQLITE_OK) {
			snprintf(reason, sizeof(reason), "%s: %s", path,
			    sqlite3_errmsg(s->db));
			goto fail;
		}
	}
	return (s);
fail:
	*why = reason;
	store_close(s);
	return (NULL);
}

/* Closes the store, rolling back an open transaction. */
void
store_close(struct store *s)
{
	int	 i;

	if (s == NULL)
		return;
	if (s->in_tx)
		store_rollback(s);
	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close(s->db);
	free(s);
}

/*
 * Starts a transaction, after finishing an open event batch: a change never
 * joins one.
 */
int
store_begin(struct store *s)
{
	store_flush(s);
	if (s->in_tx)
		return (0);
	if (store_step(s, ST_BEGIN) == -1)
		return (-1);
	s->in_tx = 1;
	return (0);
}

/* Commits the open transaction: durable once this returns 0. */
int
store_commit(struct store *s)
{
	if (!s->in_tx)
		return (0);
	if (store_step(s, ST_COMMIT) == -1) {
		store_rollback(s);
		return (-1);
	}
	s->in_tx = 0;
	return (0);
}

/* Abandons the open transaction. */
void
store_rollback(struct store *s)
{
	if (!s->in_tx)
		return;
	store_step(s, ST_ROLLBACK);
	s->in_tx = 0;
}

/*
 * Opens a batch of event writes: a transaction that stays open across reads
 * until done(arg) finishes it (stores what the batch changed and commits), at
 * store_flush() or the next store_begin().  Returns 0 or -1.
 */
int
store_batch_begin(struct store *s, void (*done)(void *), void *arg)
{
	if (s->batch_done != NULL)
		return (0);
	if (store_begin(s) == -1)
		return (-1);
	s->batch_done = done;
	s->batch_arg = arg;
	return (0);
}

/* Returns 1 if an event batch is open. */
int
store_batch_open(const struct store *s)
{
	return (s->batch_done != NULL);
}

/* Finishes the open event batch, if any: its function commits it.  A NULL
 * store (one that failed to open) has none. */
void
store_flush(struct store *s)
{
	void	(*done)(void *);

	if (s == NULL || (done = s->batch_done) == NULL)
		return;
	s->batch_done = NULL;
	done(s->batch_arg);
	/* Whatever it did, the batch's transaction is over. */
	store_rollback(s);
}

/*
 * Deletes the ranks and events of a job nobody scheduled (never one in the
 * jobs table), in one transaction of its own unless one is open.  Returns 0
 * or -1.
 */
int
store_forget_job(struct store *s, const char *job)
{
	static const char	*sql[] = {
		"DELETE FROM ranks WHERE job = ?1 AND"
		" ?1 NOT IN (SELECT job FROM jobs)",
		"DELETE FROM events WHERE job = ?1 AND"
		" ?1 NOT IN (SELECT job FROM jobs)",
	};
	sqlite3_stmt		*st;
	size_t			 i;
	int			 own = !s->in_tx, rc = 0;

	/* Inside an open batch, with it. */
	if (own && store_begin(s) == -1)
		return (-1);
	for (i = 0; i < sizeof(sql) / sizeof(sql[0]) && rc == 0; i++) {
		if (sqlite3_prepare_v2(s->db, sql[i], -1, &st, NULL) !=
		    SQLITE_OK) {
			rc = -1;
			break;
		}
		store_bind_text(st, 1, job);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = -1;
		sqlite3_finalize(st);
	}
	if (rc == -1) {
		log_warnx("%s: %s", __func__, sqlite3_errmsg(s->db));
		if (own)
			store_rollback(s);
		return (-1);
	}
	return (own ? store_commit(s) : 0);
}

/* Stores the generation counter. */
int
store_put_generation(struct store *s, uint64_t gen)
{
	sqlite3_bind_int64(s->st[ST_GENERATION], 1, (sqlite3_int64)gen);
	return (store_step(s, ST_GENERATION));
}

/* Stores a job's own fields (not its windows or ranks). */
int
store_put_job(struct store *s, const struct store_job *j)
{
	sqlite3_stmt	*st = s->st[ST_JOB];

	store_bind_text(st, 1, j->name);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)j->generation);
	sqlite3_bind_int64(st, 3, j->next_window_id);
	store_bind_text(st, 4, j->config);
	store_bind_text(st, 5, j->defaults);
	sqlite3_bind_int64(st, 6, j->created_ns);
	return (store_step(s, ST_JOB));
}

/* Stores one window of a job. */
int
store_put_window(struct store *s, const struct store_window *w)
{
	sqlite3_stmt	*st = s->st[ST_WINDOW];

	store_bind_text(st, 1, w->job);
	sqlite3_bind_int64(st, 2, w->id);
	sqlite3_bind_int64(st, 3, w->start_step);
	sqlite3_bind_int64(st, 4, w->stop_step);
	store_bind_text(st, 5, w->ranks);
	store_bind_text(st, 6, w->options);
	store_bind_text(st, 7, w->output_subdir);
	sqlite3_bind_int(st, 8, w->state);
	sqlite3_bind_int(st, 9, w->finished);
	sqlite3_bind_int64(st, 10, w->created_ns);
	return (store_step(s, ST_WINDOW));
}

/* Stores a rank's last known state. */
int
store_put_rank(struct store *s, const struct store_rank *r)
{
	sqlite3_stmt	*st = s->st[ST_RANK];

	store_bind_text(st, 1, r->job);
	sqlite3_bind_int(st, 2, r->rank);
	store_bind_text(st, 3, r->node);
	sqlite3_bind_int(st, 4, r->pid);
	sqlite3_bind_int64(st, 5, r->step);
	sqlite3_bind_int(st, 6, r->state);
	sqlite3_bind_int64(st, 7, r->window_id);
	store_bind_text(st, 8, r->output_dir);
	sqlite3_bind_int(st, 9, r->last_event);
	sqlite3_bind_int64(st, 10, r->last_event_ns);
	store_bind_text(st, 11, r->error);
	return (store_step(s, ST_RANK));
}

/*
 * Stores an event once: a second event with the same (job, rank, window, kind)
 * is ignored.  Returns 1 if stored, 0 if it was there already, -1 on error.
 */
int
store_put_event(struct store *s, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail)
{
	sqlite3_stmt	*st = s->st[ST_EVENT];

	store_bind_text(st, 1, job);
	sqlite3_bind_int(st, 2, rank);
	sqlite3_bind_int64(st, 3, ev->window_id);
	sqlite3_bind_int(st, 4, ev->kind);
	sqlite3_bind_int64(st, 5, ev->step);
	sqlite3_bind_int64(st, 6, ev->time_ns);
	store_bind_text(st, 7, node);
	store_bind_text(st, 8, detail);
	if (store_step(s, ST_EVENT) == -1)
		return (-1);
	return (sqlite3_changes(s->db) > 0);
}

/* Stores the highest committed event seq of a node's agent process. */
int
store_put_agent(struct store *s, const char *node, uint64_t boot_id,
    uint64_t seq)
{
	sqlite3_stmt	*st = s->st[ST_AGENT];

	store_bind_text(st, 1, node);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)boot_id);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)seq);
	return (store_step(s, ST_AGENT));
}

/* Returns a text column, NULL for SQL NULL. */
static const char *
store_col_text(sqlite3_stmt *st, int i)
{
	const unsigned char	*v = sqlite3_column_text(st, i);

	return (v == NULL ? NULL : (const char *)v);
}

/* Hands every job row to the loader. */
static int
store_load_jobs(struct store *s, const struct store_loader *l)
{
	sqlite3_stmt		*st;
	struct store_job	 j;

	if (sqlite3_prepare_v2(s->db, "SELECT job, generation, next_window_id,"
	    " config, defaults, created FROM jobs", -1, &st, NULL) != SQLITE_OK)
		return (-1);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if ((j.name = store_col_text(st, 0)) == NULL)
			continue;
		j.generation = (uint64_t)sqlite3_column_int64(st, 1);
		j.next_window_id = (uint32_t)sqlite3_column_int64(st, 2);
		j.config = store_col_text(st, 3);
		j.defaults = store_col_text(st, 4);
		j.created_ns = sqlite3_column_int64(st, 5);
		if (l->job(l->arg, &j) == -1)
			break;
	}
	sqlite3_finalize(st);
	return (0);
}

/* Hands every window row to the loader, by job and start step. */
static int
store_load_windows(struct store *s, const struct store_loader *l)
{
	sqlite3_stmt		*st;
	struct store_window	 w;

	if (sqlite3_prepare_v2(s->db, "SELECT job, id, start_step, stop_step,"
	    " ranks, options, output_subdir, state, finished, created"
	    " FROM windows ORDER BY job, start_step", -1, &st, NULL) !=
	    SQLITE_OK)
		return (-1);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if ((w.job = store_col_text(st, 0)) == NULL)
			continue;
		w.id = (uint32_t)sqlite3_column_int64(st, 1);
		w.start_step = sqlite3_column_int64(st, 2);
		w.stop_step = sqlite3_column_int64(st, 3);
		w.ranks = store_col_text(st, 4);
		w.options = store_col_text(st, 5);
		w.output_subdir = store_col_text(st, 6);
		w.state = sqlite3_column_int(st, 7);
		w.finished = sqlite3_column_int(st, 8);
		w.created_ns = sqlite3_column_int64(st, 9);
		if (l->window(l->arg, &w) == -1)
			break;
	}
	sqlite3_finalize(st);
	return (0);
}

/* Hands every rank row to the loader, by job and rank. */
static int
store_load_ranks(struct store *s, const struct store_loader *l)
{
	sqlite3_stmt		*st;
	struct store_rank	 r;

	if (sqlite3_prepare_v2(s->db, "SELECT job, rank, node, pid, step,"
	    " state, window_id, output_dir, last_event, last_event_time, error"
	    " FROM ranks ORDER BY job, rank", -1, &st, NULL) != SQLITE_OK)
		return (-1);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if ((r.job = store_col_text(st, 0)) == NULL)
			continue;
		r.rank = sqlite3_column_int(st, 1);
		r.node = store_col_text(st, 2);
		r.pid = sqlite3_column_int(st, 3);
		r.step = sqlite3_column_int64(st, 4);
		r.state = sqlite3_column_int(st, 5);
		r.window_id = (uint32_t)sqlite3_column_int64(st, 6);
		r.output_dir = store_col_text(st, 7);
		r.last_event = sqlite3_column_int(st, 8);
		r.last_event_ns = sqlite3_column_int64(st, 9);
		r.error = store_col_text(st, 10);
		if (l->rank(l->arg, &r) == -1)
			break;
	}
	sqlite3_finalize(st);
	return (0);
}

/* Hands every event row to the loader, by job, rank and time. */
static int
store_load_events(struct store *s, const struct store_loader *l)
{
	sqlite3_stmt		*st;
	struct rank_event	 ev;
	const char		*job;

	if (sqlite3_prepare_v2(s->db, "SELECT job, rank, window_id, kind,"
	    " step, time FROM events ORDER BY job, rank, time", -1, &st,
	    NULL) != SQLITE_OK)
		return (-1);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if ((job = store_col_text(st, 0)) == NULL)
			continue;
		ev.window_id = (uint32_t)sqlite3_column_int64(st, 2);
		ev.kind = sqlite3_column_int(st, 3);
		ev.step = sqlite3_column_int64(st, 4);
		ev.time_ns = sqlite3_column_int64(st, 5);
		if (l->event(l->arg, job, sqlite3_column_int(st, 1), &ev) == -1)
			break;
	}
	sqlite3_finalize(st);
	return (0);
}

/* Hands every agent row (a node's committed event seq) to the loader. */
static int
store_load_agents(struct store *s, const struct store_loader *l)
{
	sqlite3_stmt	*st;
	const char	*name;

	if (sqlite3_prepare_v2(s->db, "SELECT node, boot_id, acked_seq"
	    " FROM agents", -1, &st, NULL) != SQLITE_OK)
		return (-1);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if ((name = store_col_text(st, 0)) == NULL)
			continue;
		if (l->agent(l->arg, name,
		    (uint64_t)sqlite3_column_int64(st, 1),
		    (uint64_t)sqlite3_column_int64(st, 2)) == -1)
			break;
	}
	sqlite3_finalize(st);
	return (0);
}

/*
 * Reads the whole store at start: the generation counter, then jobs, windows,
 * ranks, events and agents, each row handed to the loader.
 */
int
store_load(struct store *s, const struct store_loader *l)
{
	sqlite3_stmt	*st;

	if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE"
	    " key = 'generation'", -1, &st, NULL) != SQLITE_OK)
		return (-1);
	if (sqlite3_step(st) == SQLITE_ROW)
		l->generation(l->arg, (uint64_t)sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
	if (store_load_jobs(s, l) == -1 || store_load_windows(s, l) == -1 ||
	    store_load_ranks(s, l) == -1 || store_load_events(s, l) == -1 ||
	    store_load_agents(s, l) == -1) {
		log_warnx("%s: %s", __func__, sqlite3_errmsg(s->db));
		return (-1);
	}
	return (0);
}
