/*
 * The SQLite store opened on a file of an older schema: a version 1 store
 * (no rules column) is migrated in place, its rows kept, and a job's rules
 * then go in and come back after a reopen; a version 4 store's windows
 * (no no_collect column) load as collected, and a window that says
 * "collect": false goes in and comes back; a window of the old shape has
 * no generation (0: not known), a new one keeps its own and its end's.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "coord.h"
#include "log.h"
#include "store.h"
#include "unit_util.h"

/* The jobs table as schema version 1 made it. */
static const char *schema_v1 =
    "CREATE TABLE jobs (job TEXT PRIMARY KEY, generation INTEGER,"
    " next_window_id INTEGER, config TEXT, defaults TEXT, created INTEGER);"
    "INSERT INTO jobs VALUES ('old-j', 5, 2, '{\"a\":1}', NULL, 77);"
    "PRAGMA user_version=1;";

/* The windows table as schema version 4 made it, with a row. */
static const char *schema_v4_windows =
    "CREATE TABLE windows (job TEXT, id INTEGER, start_step INTEGER,"
    " stop_step INTEGER, ranks TEXT, options TEXT, output_subdir TEXT,"
    " state INTEGER, finished INTEGER, created INTEGER, ended INTEGER,"
    " PRIMARY KEY (job, id));"
    "INSERT INTO windows VALUES ('old-j', 1, 10, 20, '', NULL, '', 1, 0,"
    " 5, 0);"
    "PRAGMA user_version=4;";

/* The job rows store_load() handed over: the last one's fields. */
struct loaded {
	int	 jobs;
	int	 windows, no_collect[4];	/* by window id */
	int64_t	 start_unix_ns[4], stop_unix_ns[4], tolerance_ms[4];
	char	 refused[4][64];		/* "(null)": not refused */
	uint64_t gen[4], ended_gen[4];
	char	 name[64], config[64], rules[128];
	uint64_t generation;
	int64_t	 created;
};

/* Takes a job row. */
static int
on_job(void *arg, const struct store_job *j)
{
	struct loaded	*l = arg;

	l->jobs++;
	snprintf(l->name, sizeof(l->name), "%s", j->name);
	snprintf(l->config, sizeof(l->config), "%s", j->config ? j->config :
	    "(null)");
	snprintf(l->rules, sizeof(l->rules), "%s", j->rules ? j->rules :
	    "(null)");
	l->generation = j->generation;
	l->created = j->created_ns;
	return (0);
}

/* Ignores the generation. */
static void
on_generation(void *arg, uint64_t gen)
{
	(void)arg;
	(void)gen;
}

/* Takes a window row. */
static int
on_window(void *arg, const struct store_window *w)
{
	struct loaded	*l = arg;

	l->windows++;
	if (w->id < 4) {
		l->no_collect[w->id] = w->no_collect;
		l->start_unix_ns[w->id] = w->start_unix_ns;
		l->stop_unix_ns[w->id] = w->stop_unix_ns;
		l->tolerance_ms[w->id] = w->tolerance_ms;
		snprintf(l->refused[w->id], sizeof(l->refused[0]), "%s",
		    w->refused_reason != NULL ? w->refused_reason : "(null)");
		l->gen[w->id] = w->generation;
		l->ended_gen[w->id] = w->ended_generation;
	}
	return (0);
}

/* Ignores a rank row. */
static int
on_rank(void *arg, const struct store_rank *r)
{
	(void)arg;
	(void)r;
	return (0);
}

/* Ignores an event row. */
static int
on_event(void *arg, const char *job, int32_t rank, const struct rank_event *e,
    const char *node, const char *detail)
{
	(void)node;
	(void)detail;
	(void)arg;
	(void)job;
	(void)rank;
	(void)e;
	return (0);
}

/* Ignores an agent row. */
static int
on_agent(void *arg, const char *node, uint64_t boot, uint64_t seq)
{
	(void)arg;
	(void)node;
	(void)boot;
	(void)seq;
	return (0);
}

/* Loads every row of s into l. */
static void
load(struct store *s, struct loaded *l)
{
	struct store_loader	 sl = {
		.arg = l, .generation = on_generation, .job = on_job,
		.window = on_window, .rank = on_rank, .event = on_event,
		.agent = on_agent,
	};

	memset(l, 0, sizeof(*l));
	assert_int_equal(store_load(s, &sl), 0);
}

/*
 * Makes a directory dir whose dynprof.db (its path into path) an older
 * version made with schema, and opens the store there.
 */
static struct store *
open_old(const char *schema, char *dir, size_t dlen, char *path, size_t plen)
{
	struct store	*s;
	sqlite3		*db;
	const char	*why;

	assert_int_equal(unit_tmpdir(dir, dlen), 0);
	snprintf(path, plen, "%s/dynprof.db", dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, schema, NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	s = store_open(dir, &why);
	assert_non_null(s);
	return (s);
}

/* Closes s and opens the store in dir again. */
static struct store *
reopen(struct store *s, const char *dir)
{
	const char	*why;

	store_close(s);
	s = store_open(dir, &why);
	assert_non_null(s);
	return (s);
}

static void
test_migrate_v1(void **state)
{
	struct store		*s;
	struct store_job	 j = { "new-j", 3, 1, NULL, NULL, 9,
	    "{\"rules\":[]}" };
	struct loaded		 l;
	sqlite3			*db;
	sqlite3_stmt		*st;
	char			 dir[64], path[128];
	int			 version = 0;

	(void)state;
	/* Migrated: the old row is there, without rules. */
	s = open_old(schema_v1, dir, sizeof(dir), path, sizeof(path));
	load(s, &l);
	assert_int_equal(l.jobs, 1);
	assert_string_equal(l.name, "old-j");
	assert_string_equal(l.config, "{\"a\":1}");
	assert_string_equal(l.rules, "(null)");
	assert_int_equal(l.generation, 5);
	assert_int_equal(l.created, 77);

	/* A job with rules goes in and comes back after a reopen. */
	assert_int_equal(store_begin(s), 0);
	assert_int_equal(store_put_job(s, &j), 0);
	assert_int_equal(store_commit(s), 0);
	s = reopen(s, dir);
	load(s, &l);
	assert_int_equal(l.jobs, 2);
	store_close(s);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT rules FROM jobs WHERE"
	    " job = 'new-j'", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0),
	    "{\"rules\":[]}");
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st,
	    NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	/* Version 3: when windows ended, when ranks came and went; 4: the
	 * ranks' labels; 5: what named a window's ranks; 6: a window's
	 * "collect": false; 7: a time window's times and tolerance; 8: its
	 * job's own trace store; 9: why the nodes refused it; 10: the
	 * generations that made and ended it. */
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT w.ended, r.arrived,"
	    " r.gone, r.labels, w.selector, w.no_collect, w.start_unix_ns,"
	    " w.stop_unix_ns, w.tolerance_ms, w.trace_store, w.refused_reason,"
	    " w.generation, w.ended_generation FROM windows w, ranks r", -1,
	    &st, NULL),
	    SQLITE_OK);
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_int_equal(version, 10);
	unit_rmstore(dir);
}

static void
test_migrate_v4(void **state)
{
	struct store		*s;
	struct store_window	 w = { "old-j", 2, 30, 40, "", NULL, NULL, "",
	    WINDOW_STATE_SCHEDULED, 0, 6, 0, 1, 0, 0, 0, NULL, NULL, 4, 0 };
	struct store_window	 tw = { "old-j", 3, 0, 0, "", NULL, NULL, "",
	    WINDOW_STATE_SCHEDULED, 0, 6, 0, 0, 1796472000000000000LL,
	    1796472010000000000LL, 250, NULL,
	    "a time window: torch_npu's config counts steps only", 5, 8 };
	struct loaded		 l;
	char			 dir[64], path[128];

	(void)state;
	/* The old window is there, collected as windows were. */
	s = open_old(schema_v4_windows, dir, sizeof(dir), path, sizeof(path));
	load(s, &l);
	assert_int_equal(l.windows, 1);
	assert_int_equal(l.no_collect[1], 0);
	/* One that says no goes in and comes back after a reopen. */
	assert_int_equal(store_begin(s), 0);
	assert_int_equal(store_put_window(s, &w), 0);
	assert_int_equal(store_put_window(s, &tw), 0);
	assert_int_equal(store_commit(s), 0);
	s = reopen(s, dir);
	load(s, &l);
	assert_int_equal(l.windows, 3);
	assert_int_equal(l.no_collect[1], 0);
	assert_int_equal(l.no_collect[2], 1);
	/* A window of the old schema is of steps; a time window keeps its
	 * times. */
	assert_true(l.start_unix_ns[1] == 0 && l.start_unix_ns[2] == 0);
	assert_true(l.start_unix_ns[3] == 1796472000000000000LL);
	assert_true(l.stop_unix_ns[3] == 1796472010000000000LL);
	assert_true(l.tolerance_ms[3] == 250);
	/* Refused by the nodes: the reason comes back; the old row's and
	 * one not refused read as not refused. */
	assert_string_equal(l.refused[1], "(null)");
	assert_string_equal(l.refused[2], "(null)");
	assert_string_equal(l.refused[3],
	    "a time window: torch_npu's config counts steps only");
	/* The generations: the old row's not known, the new ones' kept. */
	assert_true(l.gen[1] == 0 && l.ended_gen[1] == 0);
	assert_true(l.gen[2] == 4 && l.ended_gen[2] == 0);
	assert_true(l.gen[3] == 5 && l.ended_gen[3] == 8);
	store_close(s);
	unit_rmstore(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_migrate_v1),
		cmocka_unit_test(test_migrate_v4),
	};

	log_init("test_store_migrate", LOG_LEVEL_QUIET);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
