/*
 * The SQLite store, the embedded default: one file, DIR/dynprof.db, in WAL
 * mode with synchronous=FULL, so a committed change survives the process
 * being killed (and the machine losing power).  store.c groups the writes
 * into transactions and batches; this file runs them.
 */

#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "dynprof.pb-c.h"
#include "log.h"
#include "store.h"

/* Bump when the tables change; store_open() refuses a newer schema and
 * migrates an older one (sqlite_migrate()). */
#define STORE_SCHEMA_VERSION	10

static const char *store_schema =
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER);"
    "CREATE TABLE IF NOT EXISTS jobs (job TEXT PRIMARY KEY,"
    " generation INTEGER, next_window_id INTEGER, config TEXT,"
    " defaults TEXT, created INTEGER, rules TEXT);"
    "CREATE TABLE IF NOT EXISTS windows (job TEXT, id INTEGER,"
    " start_step INTEGER, stop_step INTEGER, ranks TEXT, options TEXT,"
    " output_subdir TEXT, state INTEGER, finished INTEGER, created INTEGER,"
    " ended INTEGER, selector TEXT, no_collect INTEGER, start_unix_ns INTEGER,"
    " stop_unix_ns INTEGER, tolerance_ms INTEGER, trace_store TEXT,"
    " refused_reason TEXT, generation INTEGER, ended_generation INTEGER,"
    " PRIMARY KEY (job, id));"
    "CREATE TABLE IF NOT EXISTS ranks (job TEXT, rank INTEGER, node TEXT,"
    " pid INTEGER, step INTEGER, state INTEGER, window_id INTEGER,"
    " output_dir TEXT, last_event INTEGER, last_event_time INTEGER,"
    " error TEXT, arrived INTEGER, gone INTEGER, labels TEXT,"
    " PRIMARY KEY (job, rank));"
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
	"INSERT OR REPLACE INTO jobs VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
	"INSERT OR REPLACE INTO windows (job, id, start_step, stop_step, ranks,"
	" options, output_subdir, state, finished, created, ended, selector,"
	" no_collect, start_unix_ns, stop_unix_ns, tolerance_ms, trace_store,"
	" refused_reason, generation, ended_generation) VALUES (?1, ?2, ?3, ?4,"
	" ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,"
	" ?20)",
	"INSERT OR REPLACE INTO ranks VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
	" ?9, ?10, ?11, ?12, ?13, ?14)",
	"INSERT OR IGNORE INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	"INSERT OR REPLACE INTO agents VALUES (?1, ?2, ?3)",
};

struct sqlite_store {
	sqlite3		*db;
	sqlite3_stmt	*st[ST_COUNT];
};

static void	sqlite_close(void *);

/* Runs SQL text with no result rows (the schema, pragmas). */
static int
sqlite_exec(struct sqlite_store *s, const char *sql)
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
sqlite_step(struct sqlite_store *s, enum store_stmt which)
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
sqlite_bind(sqlite3_stmt *st, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
}

/* The columns later versions added, in the order they were added. */
static const struct {
	const char	*table, *column, *type;
} store_added[] = {
	{ "jobs", "rules", "TEXT" },		/* version 2 */
	{ "windows", "ended", "INTEGER" },	/* version 3 */
	{ "ranks", "arrived", "INTEGER" },
	{ "ranks", "gone", "INTEGER" },
	{ "ranks", "labels", "TEXT" },		/* version 4 */
	{ "windows", "selector", "TEXT" },	/* version 5 */
	{ "windows", "no_collect", "INTEGER" },	/* version 6 */
	{ "windows", "start_unix_ns", "INTEGER" },	/* version 7 */
	{ "windows", "stop_unix_ns", "INTEGER" },
	{ "windows", "tolerance_ms", "INTEGER" },
	{ "windows", "trace_store", "TEXT" },	/* version 8 */
	{ "windows", "refused_reason", "TEXT" },	/* version 9 */
	{ "windows", "generation", "INTEGER" },	/* version 10 */
	{ "windows", "ended_generation", "INTEGER" },
};

/*
 * Brings a store of an older schema to this one: adds the columns it lacks
 * (a new store has them already).  Returns 0 or -1.
 */
static int
sqlite_migrate(struct sqlite_store *s)
{
	sqlite3_stmt	*st;
	char		 sql[256];
	size_t		 i;
	int		 has;

	for (i = 0; i < sizeof(store_added) / sizeof(store_added[0]); i++) {
		snprintf(sql, sizeof(sql), "SELECT 1 FROM pragma_table_info("
		    "'%s') WHERE name = '%s'", store_added[i].table,
		    store_added[i].column);
		if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
			return (-1);
		has = sqlite3_step(st) == SQLITE_ROW;
		sqlite3_finalize(st);
		snprintf(sql, sizeof(sql), "ALTER TABLE %s ADD COLUMN %s %s",
		    store_added[i].table, store_added[i].column,
		    store_added[i].type);
		if (!has && sqlite_exec(s, sql) == -1)
			return (-1);
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version=%d",
	    STORE_SCHEMA_VERSION);
	return (sqlite_exec(s, sql));
}

/*
 * Opens (creating if needed) DIR/dynprof.db.  Returns NULL with *why set on
 * failure.
 */
static struct sqlite_store *
sqlite_open(const char *dir, const char **why)
{
	static char		 reason[PATH_MAX + 512];
	struct sqlite_store	*s;
	char			 path[PATH_MAX];
	sqlite3_stmt		*st;
	int			 i, version = 0;

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
	if (sqlite_exec(s, "PRAGMA journal_mode=WAL") == -1 ||
	    sqlite_exec(s, "PRAGMA synchronous=FULL") == -1 ||
	    sqlite_exec(s, store_schema) == -1) {
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
	if (version < STORE_SCHEMA_VERSION && sqlite_migrate(s) == -1) {
		snprintf(reason, sizeof(reason), "%s: cannot migrate schema "
		    "version %d to %d: %s", path, version, STORE_SCHEMA_VERSION,
		    sqlite3_errmsg(s->db));
		goto fail;
	}
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
	sqlite_close(s);
	return (NULL);
}

/* Closes the database (store.c rolled back an open transaction). */
static void
sqlite_close(void *arg)
{
	struct sqlite_store	*s = arg;
	int			 i;

	if (s == NULL)
		return;
	for (i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close(s->db);
	free(s);
}

/* Starts a transaction. */
static int
sqlite_begin(void *arg)
{
	return (sqlite_step(arg, ST_BEGIN));
}

/* Commits the open transaction: durable once this returns 0. */
static int
sqlite_commit(void *arg)
{
	return (sqlite_step(arg, ST_COMMIT));
}

/* Abandons the open transaction. */
static void
sqlite_rollback(void *arg)
{
	sqlite_step(arg, ST_ROLLBACK);
}

/* Deletes the ranks and events of a job nobody scheduled (never one in the
 * jobs table), or, whole, everything of a job: its row and windows too. */
static int
sqlite_forget_job(void *arg, const char *job, int whole)
{
	static const char	*unscheduled[] = {
		"DELETE FROM ranks WHERE job = ?1 AND"
		" ?1 NOT IN (SELECT job FROM jobs)",
		"DELETE FROM events WHERE job = ?1 AND"
		" ?1 NOT IN (SELECT job FROM jobs)",
		NULL, NULL,
	}, *all[] = {
		"DELETE FROM ranks WHERE job = ?1",
		"DELETE FROM events WHERE job = ?1",
		"DELETE FROM windows WHERE job = ?1",
		"DELETE FROM jobs WHERE job = ?1",
	};
	const char		**sql = whole ? all : unscheduled;
	struct sqlite_store	*s = arg;
	sqlite3_stmt		*st;
	size_t			 i;
	int			 rc = 0;

	for (i = 0; i < 4 && sql[i] != NULL && rc == 0; i++) {
		if (sqlite3_prepare_v2(s->db, sql[i], -1, &st, NULL) !=
		    SQLITE_OK) {
			rc = -1;
			break;
		}
		sqlite_bind(st, 1, job);
		if (sqlite3_step(st) != SQLITE_DONE)
			rc = -1;
		sqlite3_finalize(st);
	}
	if (rc == -1)
		log_warnx("%s: %s", __func__, sqlite3_errmsg(s->db));
	return (rc);
}

/* Stores the generation counter. */
static int
sqlite_put_generation(void *arg, uint64_t gen)
{
	struct sqlite_store	*s = arg;

	sqlite3_bind_int64(s->st[ST_GENERATION], 1, (sqlite3_int64)gen);
	return (sqlite_step(s, ST_GENERATION));
}

/* Stores a job's own fields (not its windows or ranks). */
static int
sqlite_put_job(void *arg, const struct store_job *j)
{
	struct sqlite_store	*s = arg;
	sqlite3_stmt	*st = s->st[ST_JOB];

	sqlite_bind(st, 1, j->name);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)j->generation);
	sqlite3_bind_int64(st, 3, j->next_window_id);
	sqlite_bind(st, 4, j->config);
	sqlite_bind(st, 5, j->defaults);
	sqlite3_bind_int64(st, 6, j->created_ns);
	sqlite_bind(st, 7, j->rules);
	return (sqlite_step(s, ST_JOB));
}

/* Stores one window of a job. */
static int
sqlite_put_window(void *arg, const struct store_window *w)
{
	struct sqlite_store	*s = arg;
	sqlite3_stmt	*st = s->st[ST_WINDOW];

	sqlite_bind(st, 1, w->job);
	sqlite3_bind_int64(st, 2, w->id);
	sqlite3_bind_int64(st, 3, w->start_step);
	sqlite3_bind_int64(st, 4, w->stop_step);
	sqlite_bind(st, 5, w->ranks);
	sqlite_bind(st, 6, w->options);
	sqlite_bind(st, 7, w->output_subdir);
	sqlite3_bind_int(st, 8, w->state);
	sqlite3_bind_int(st, 9, w->finished);
	sqlite3_bind_int64(st, 10, w->created_ns);
	sqlite3_bind_int64(st, 11, w->ended_ns);
	sqlite_bind(st, 12, w->selector);
	sqlite3_bind_int(st, 13, w->no_collect);
	sqlite3_bind_int64(st, 14, w->start_unix_ns);
	sqlite3_bind_int64(st, 15, w->stop_unix_ns);
	sqlite3_bind_int64(st, 16, w->tolerance_ms);
	sqlite_bind(st, 17, w->trace_store);
	sqlite_bind(st, 18, w->refused_reason);
	sqlite3_bind_int64(st, 19, (sqlite3_int64)w->generation);
	sqlite3_bind_int64(st, 20, (sqlite3_int64)w->ended_generation);
	return (sqlite_step(s, ST_WINDOW));
}

/* Stores a rank's last known state. */
static int
sqlite_put_rank(void *arg, const struct store_rank *r)
{
	struct sqlite_store	*s = arg;
	sqlite3_stmt	*st = s->st[ST_RANK];

	sqlite_bind(st, 1, r->job);
	sqlite3_bind_int(st, 2, r->rank);
	sqlite_bind(st, 3, r->node);
	sqlite3_bind_int(st, 4, r->pid);
	sqlite3_bind_int64(st, 5, r->step);
	sqlite3_bind_int(st, 6, r->state);
	sqlite3_bind_int64(st, 7, r->window_id);
	sqlite_bind(st, 8, r->output_dir);
	sqlite3_bind_int(st, 9, r->last_event);
	sqlite3_bind_int64(st, 10, r->last_event_ns);
	sqlite_bind(st, 11, r->error);
	sqlite3_bind_int64(st, 12, r->arrived_ns);
	sqlite3_bind_int64(st, 13, r->gone_ns);
	sqlite_bind(st, 14, r->labels);
	return (sqlite_step(s, ST_RANK));
}

/*
 * Stores an event once: a second event with the same (job, rank, window, kind)
 * is ignored.  Its revision is not kept: one coordinator's event stream
 * starts again when it does.  Returns 1 if stored, 0 if it was there
 * already, -1 on error.
 */
static int
sqlite_put_event(void *arg, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail,
    uint64_t rev)
{
	struct sqlite_store	*s = arg;
	sqlite3_stmt	*st = s->st[ST_EVENT];

	(void)rev;
	sqlite_bind(st, 1, job);
	sqlite3_bind_int(st, 2, rank);
	sqlite3_bind_int64(st, 3, ev->window_id);
	sqlite3_bind_int(st, 4, ev->kind);
	sqlite3_bind_int64(st, 5, ev->step);
	sqlite3_bind_int64(st, 6, ev->time_ns);
	sqlite_bind(st, 7, node);
	sqlite_bind(st, 8, detail);
	if (sqlite_step(s, ST_EVENT) == -1)
		return (-1);
	return (sqlite3_changes(s->db) > 0);
}

/* Stores the highest committed event seq of a node's agent process. */
static int
sqlite_put_agent(void *arg, const char *node, uint64_t boot_id,
    uint64_t seq)
{
	struct sqlite_store	*s = arg;
	sqlite3_stmt	*st = s->st[ST_AGENT];

	sqlite_bind(st, 1, node);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)boot_id);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)seq);
	return (sqlite_step(s, ST_AGENT));
}

/* Returns a text column, NULL for SQL NULL. */
static const char *
sqlite_col(sqlite3_stmt *st, int i)
{
	const unsigned char	*v = sqlite3_column_text(st, i);

	return (v == NULL ? NULL : (const char *)v);
}

/*
 * What a row read back holds, column by column, checked as the etcd store
 * checks its values (store_row.c): text columns text (or NULL) without a NUL
 * inside, integer columns integers (or NULL: 0) that fit their field.
 */
struct sqlite_row {
	sqlite3_stmt	*st;
	int		 bad;		/* a column was not what it should be */
};

/* Returns text column i, NULL for SQL NULL; marks the row bad otherwise. */
static const char *
sqlite_text(struct sqlite_row *r, int i)
{
	const char	*v;

	switch (sqlite3_column_type(r->st, i)) {
	case SQLITE_NULL:
		return (NULL);
	case SQLITE_TEXT:
		v = sqlite_col(r->st, i);
		if (v != NULL && strlen(v) == (size_t)sqlite3_column_bytes(r->st,
		    i))
			return (v);
		break;
	}
	r->bad = 1;
	return (NULL);
}

/* Returns integer column i within [min, max], 0 for SQL NULL; marks the row
 * bad otherwise. */
static int64_t
sqlite_int(struct sqlite_row *r, int i, int64_t min, int64_t max)
{
	int64_t	 v;

	switch (sqlite3_column_type(r->st, i)) {
	case SQLITE_NULL:
		return (0);
	case SQLITE_INTEGER:
		v = sqlite3_column_int64(r->st, i);
		if (v >= min && v <= max)
			return (v);
		break;
	}
	r->bad = 1;
	return (0);
}

#define SQL_I64		INT64_MIN, INT64_MAX
#define SQL_I32		INT32_MIN, INT32_MAX
#define SQL_U32		0, UINT32_MAX

/* Hands a row that does not decode to the loader.  Returns its answer. */
static int
sqlite_bad(const struct store_loader *l, const char *table, const char *job,
    long long id)
{
	char	 key[160];

	snprintf(key, sizeof(key), "%.*s/%lld", 128, job != NULL ? job : "",
	    id);
	return (l->bad(l->arg, table, key, "a column of the wrong type or out "
	    "of range"));
}

/* Hands every job row to the loader. */
static int
sqlite_load_jobs(struct sqlite_store *s, const struct store_loader *l)
{
	struct sqlite_row	 r = { NULL, 0 };
	struct store_job	 j;

	if (sqlite3_prepare_v2(s->db, "SELECT job, generation, next_window_id,"
	    " config, defaults, created, rules FROM jobs", -1, &r.st, NULL) !=
	    SQLITE_OK)
		return (-1);
	while (sqlite3_step(r.st) == SQLITE_ROW) {
		r.bad = 0;
		j.name = sqlite_text(&r, 0);
		j.generation = (uint64_t)sqlite_int(&r, 1, SQL_I64);
		j.next_window_id = (uint32_t)sqlite_int(&r, 2, SQL_U32);
		j.config = sqlite_text(&r, 3);
		j.defaults = sqlite_text(&r, 4);
		j.created_ns = sqlite_int(&r, 5, SQL_I64);
		j.rules = sqlite_text(&r, 6);
		if (r.bad || j.name == NULL ? sqlite_bad(l, "jobs", j.name,
		    0) == -1 : l->job(l->arg, &j) == -1)
			break;
	}
	sqlite3_finalize(r.st);
	return (0);
}

/* Hands every window row to the loader, by job and start step. */
static int
sqlite_load_windows(struct sqlite_store *s, const struct store_loader *l)
{
	struct sqlite_row	 r = { NULL, 0 };
	struct store_window	 w;

	if (sqlite3_prepare_v2(s->db, "SELECT job, id, start_step, stop_step,"
	    " ranks, options, output_subdir, state, finished, created, ended,"
	    " selector, no_collect, start_unix_ns, stop_unix_ns, tolerance_ms,"
	    " trace_store, refused_reason, generation, ended_generation FROM"
	    " windows ORDER BY job, start_step", -1,
	    &r.st, NULL) !=
	    SQLITE_OK)
		return (-1);
	while (sqlite3_step(r.st) == SQLITE_ROW) {
		r.bad = 0;
		w.job = sqlite_text(&r, 0);
		w.id = (uint32_t)sqlite_int(&r, 1, SQL_U32);
		w.start_step = sqlite_int(&r, 2, SQL_I64);
		w.stop_step = sqlite_int(&r, 3, SQL_I64);
		w.ranks = sqlite_text(&r, 4);
		w.options = sqlite_text(&r, 5);
		w.output_subdir = sqlite_text(&r, 6);
		w.state = (int)sqlite_int(&r, 7, SQL_I32);
		w.finished = (int)sqlite_int(&r, 8, SQL_I32);
		w.created_ns = sqlite_int(&r, 9, SQL_I64);
		w.ended_ns = sqlite_int(&r, 10, SQL_I64);
		w.selector = sqlite_text(&r, 11);
		w.no_collect = sqlite_int(&r, 12, SQL_I32) != 0;
		w.start_unix_ns = sqlite_int(&r, 13, SQL_I64);
		w.stop_unix_ns = sqlite_int(&r, 14, SQL_I64);
		w.tolerance_ms = sqlite_int(&r, 15, SQL_I64);
		w.trace_store = sqlite_text(&r, 16);
		w.refused_reason = sqlite_text(&r, 17);
		/* NULL in a row of the old shape: not known. */
		w.generation = (uint64_t)sqlite_int(&r, 18, SQL_I64);
		w.ended_generation = (uint64_t)sqlite_int(&r, 19, SQL_I64);
		if (r.bad || w.job == NULL ? sqlite_bad(l, "windows", w.job,
		    w.id) == -1 : l->window(l->arg, &w) == -1)
			break;
	}
	sqlite3_finalize(r.st);
	return (0);
}

/* Hands every rank row to the loader, by job and rank. */
static int
sqlite_load_ranks(struct sqlite_store *s, const struct store_loader *l)
{
	struct sqlite_row	 r = { NULL, 0 };
	struct store_rank	 k;

	if (sqlite3_prepare_v2(s->db, "SELECT job, rank, node, pid, step,"
	    " state, window_id, output_dir, last_event, last_event_time, error,"
	    " arrived, gone, labels FROM ranks ORDER BY job, rank", -1, &r.st,
	    NULL) !=
	    SQLITE_OK)
		return (-1);
	while (sqlite3_step(r.st) == SQLITE_ROW) {
		r.bad = 0;
		k.job = sqlite_text(&r, 0);
		k.rank = (int32_t)sqlite_int(&r, 1, SQL_I32);
		k.node = sqlite_text(&r, 2);
		k.pid = (int32_t)sqlite_int(&r, 3, SQL_I32);
		k.step = sqlite_int(&r, 4, SQL_I64);
		k.state = (int)sqlite_int(&r, 5, SQL_I32);
		k.window_id = (uint32_t)sqlite_int(&r, 6, SQL_U32);
		k.output_dir = sqlite_text(&r, 7);
		k.last_event = (int)sqlite_int(&r, 8, SQL_I32);
		k.last_event_ns = sqlite_int(&r, 9, SQL_I64);
		k.error = sqlite_text(&r, 10);
		k.arrived_ns = sqlite_int(&r, 11, SQL_I64);
		k.gone_ns = sqlite_int(&r, 12, SQL_I64);
		k.labels = sqlite_text(&r, 13);
		/* No uid kept: a rank's comes back with its agent (only a
		 * follower reads it from its row, over etcd). */
		k.owner = 0;
		if (r.bad || k.job == NULL ? sqlite_bad(l, "ranks", k.job,
		    k.rank) == -1 : l->rank(l->arg, &k) == -1)
			break;
	}
	sqlite3_finalize(r.st);
	return (0);
}

/* Hands every event row to the loader, by job, rank and time. */
static int
sqlite_load_events(struct sqlite_store *s, const struct store_loader *l)
{
	struct sqlite_row	 r = { NULL, 0 };
	struct rank_event	 ev;
	const char		*job, *node, *detail;
	int32_t			 rank;
	int			 collect;

	if (sqlite3_prepare_v2(s->db, "SELECT job, rank, window_id, kind,"
	    " step, time, node, detail FROM events ORDER BY job, rank, time",
	    -1, &r.st, NULL) != SQLITE_OK)
		return (-1);
	while (sqlite3_step(r.st) == SQLITE_ROW) {
		r.bad = 0;
		job = sqlite_text(&r, 0);
		rank = (int32_t)sqlite_int(&r, 1, SQL_I32);
		ev.window_id = (uint32_t)sqlite_int(&r, 2, SQL_U32);
		ev.kind = (int)sqlite_int(&r, 3, SQL_I32);
		ev.step = sqlite_int(&r, 4, SQL_I64);
		ev.time_ns = sqlite_int(&r, 5, SQL_I64);
		collect = ev.kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED ||
		    ev.kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED;
		node = collect ? sqlite_text(&r, 6) : NULL;
		detail = collect ? sqlite_text(&r, 7) : NULL;
		if (r.bad || job == NULL ? sqlite_bad(l, "events", job,
		    rank) == -1 : l->event(l->arg, job, rank, &ev, node,
		    detail) == -1)
			break;
	}
	sqlite3_finalize(r.st);
	return (0);
}

/* Hands every agent row (a node's committed event seq) to the loader. */
static int
sqlite_load_agents(struct sqlite_store *s, const struct store_loader *l)
{
	struct sqlite_row	 r = { NULL, 0 };
	const char		*name;
	uint64_t		 boot, seq;

	if (sqlite3_prepare_v2(s->db, "SELECT node, boot_id, acked_seq"
	    " FROM agents", -1, &r.st, NULL) != SQLITE_OK)
		return (-1);
	while (sqlite3_step(r.st) == SQLITE_ROW) {
		r.bad = 0;
		name = sqlite_text(&r, 0);
		boot = (uint64_t)sqlite_int(&r, 1, SQL_I64);
		seq = (uint64_t)sqlite_int(&r, 2, SQL_I64);
		if (r.bad || name == NULL ? sqlite_bad(l, "agents", name,
		    0) == -1 : l->agent(l->arg, name, boot, seq) == -1)
			break;
	}
	sqlite3_finalize(r.st);
	return (0);
}

/*
 * Reads the whole store at start: the generation counter, then jobs, windows,
 * ranks, events and agents, each row handed to the loader.
 */
static int
sqlite_load(void *arg, const struct store_loader *l)
{
	struct sqlite_store	*s = arg;
	struct sqlite_row	 r = { NULL, 0 };
	int64_t			 gen;

	if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE"
	    " key = 'generation'", -1, &r.st, NULL) != SQLITE_OK)
		return (-1);
	if (sqlite3_step(r.st) == SQLITE_ROW) {
		gen = sqlite_int(&r, 0, 0, INT64_MAX);
		if (r.bad || sqlite3_column_type(r.st, 0) == SQLITE_NULL)
			l->bad(l->arg, "meta", "generation", "not a generation");
		else
			l->generation(l->arg, (uint64_t)gen);
	}
	sqlite3_finalize(r.st);
	if (sqlite_load_jobs(s, l) == -1 || sqlite_load_windows(s, l) == -1 ||
	    sqlite_load_ranks(s, l) == -1 || sqlite_load_events(s, l) == -1 ||
	    sqlite_load_agents(s, l) == -1) {
		log_warnx("%s: %s", __func__, sqlite3_errmsg(s->db));
		return (-1);
	}
	return (0);
}

/* What store.c runs SQLite with. */
static const struct store_backend store_sqlite = {
	.name = "sqlite",
	.close = sqlite_close,
	.load = sqlite_load,
	.begin = sqlite_begin,
	.commit = sqlite_commit,
	.rollback = sqlite_rollback,
	.put_generation = sqlite_put_generation,
	.put_job = sqlite_put_job,
	.put_window = sqlite_put_window,
	.put_rank = sqlite_put_rank,
	.put_event = sqlite_put_event,
	.forget_job = sqlite_forget_job,
	.put_agent = sqlite_put_agent,
};

/*
 * Opens (creating if needed) DIR/dynprof.db.  Returns NULL with *why set on
 * failure.
 */
struct store *
store_open(const char *dir, const char **why)
{
	struct sqlite_store	*s;
	struct store		*st;

	if ((s = sqlite_open(dir, why)) == NULL)
		return (NULL);
	if ((st = store_new(&store_sqlite, s)) == NULL) {
		sqlite_close(s);
		*why = "out of memory";
	}
	return (st);
}
