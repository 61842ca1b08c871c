/*
 * The store alone, on a real file in a temporary directory (SQLite) or, with
 * the argument "etcd", on the real etcd DYNPROF_ETCD_ENDPOINTS names
 * (tests/support/etcd.py starts one), each test under its own prefix: rows
 * put and committed come back through store_load() after a reopen, a
 * rollback leaves nothing, an event is stored once, the event batch is
 * finished by its own function before any other transaction, and a newer
 * schema is refused.  On etcd also: a batch past etcd's operations per txn
 * is committed whole, a deposed leader's writes are refused (fencing), and
 * the event stream's revisions (an event's, the journal's other entries, a
 * job's floor) come back with what they speak of.
 */

#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include <jansson.h>
#include <zlib.h>

#include "coord.h"
#include "etcd.h"
#include "log.h"
#include "store.h"
#include "store_etcd_agents.h"
#include "unit_util.h"

/* The backend under test: NULL SQLite, else etcd's endpoints. */
static const char	*etcd_endpoints;
static int		 etcd_tests;		/* prefixes handed out */

/*
 * What store_load() handed over, counted and the last row of each kind: the
 * strings the tests look at copied into the buffers below, the others NULL.
 */
struct loaded {
	uint64_t		 generation;
	int			 jobs, windows, ranks, events, agents;
	struct store_job	 job;
	struct store_window	 window;
	struct store_rank	 rank;
	char			 name[64], config[64], defaults[64], rules[64];
	char			 ranks_text[64], selector[64], error[64];
	char			 refused[64];
	int			 event_kind;
	char			 event_node[64], event_detail[512];
	int			 details_of_others;	/* not a collection's */
	uint64_t		 boot_id, seq;
};

/* With the summary of the trace on its second line (server/traces.c). */
#define TRACE_DETAIL	"123 " \
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 " \
    "/store/J/window-2/rank-5.tar.zst\n" \
    "sum1 kineto 1 216 3 0:10768,1:10463,2:10420 274:3:autograd::engine::" \
    "evaluate_function:%20AddmmBackward0,243:3:aten::linear junk.json: " \
    "not JSON (lexical error: \"quoted\" \\ here) at byte 1"

/* A rank row of job J and an event of it, for the tests to vary. */
static const struct store_rank	 rank_row = { "J", 0, "n0", 1, 5, 1, 0, NULL,
    1, 1, NULL, NULL, 0, 0, 0 };
static const struct rank_event	 started_ev = {
    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 1, 10, 11 };

struct fixture {
	char		 dir[64];
	char		 prefix[64];
	struct etcd	*e;
	struct store	*s;
};

/* Opens the store again (SQLite: the file; etcd: over the same client). */
static struct store *
reopen(struct fixture *f)
{
	const char	*why;

	if (f->e != NULL)
		return (store_open_etcd(f->e, &why));
	return (store_open(f->dir, &why));
}

/* Returns a client of the test's etcd under prefix, leading it, or NULL. */
static struct etcd *
etcd_leader(const char *prefix)
{
	struct etcd	*e;
	const char	*why;
	char		 other[256];

	if ((e = etcd_new(etcd_endpoints, prefix, &why)) == NULL)
		return (NULL);
	if (etcd_campaign(e, 10, "{\"agent\":\"a\"}", other,
	    sizeof(other)) != 1) {
		etcd_free(e);
		return (NULL);
	}
	return (e);
}

/* Opens a store in a new temporary directory, or under a new etcd prefix. */
static int
setup(void **state)
{
	struct fixture	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    unit_tmpdir(f->dir, sizeof(f->dir)) == -1)
		return (-1);
	if (etcd_endpoints != NULL) {
		snprintf(f->prefix, sizeof(f->prefix), "/dynprof-test-%d-%d/",
		    (int)getpid(), ++etcd_tests);
		if ((f->e = etcd_leader(f->prefix)) == NULL)
			return (-1);
	}
	if ((f->s = reopen(f)) == NULL)
		return (-1);
	*state = f;
	return (0);
}

/* The journal entries a load handed over. */
struct journal_seen {
	struct store_journal	 e[8];
	char			 node[8][16], detail[8][16];
	size_t			 n;
};

/* Takes a journal entry (its strings copied). */
static int
on_journal(void *arg, const struct store_journal *sj)
{
	struct journal_seen	*js = arg;

	assert_true(js->n < 8);
	js->e[js->n] = *sj;
	snprintf(js->node[js->n], 16, "%s", sj->node != NULL ? sj->node : "-");
	snprintf(js->detail[js->n], 16, "%s", sj->detail != NULL ?
	    sj->detail : "-");
	js->e[js->n].job = NULL;
	js->n++;
	return (0);
}

/* Ignores a row. */
static int
on_any_event(void *arg, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail)
{
	(void)node;
	(void)detail;
	(void)arg;
	(void)job;
	(void)rank;
	(void)ev;
	return (0);
}

/* Returns the entry of revision rev that js holds, failing if none. */
static const struct store_journal *
journal_seen_rev(const struct journal_seen *js, uint64_t rev, size_t *i)
{
	for (*i = 0; *i < js->n; (*i)++)
		if (js->e[*i].rev == rev)
			return (&js->e[*i]);
	fail_msg("no journal entry of revision %llu", (unsigned long long)rev);
	return (NULL);
}

/* Checks that js holds want's entry, field by field (NULL strings as "-"). */
static void
assert_journal(const struct journal_seen *js, const struct store_journal *want)
{
	const struct store_journal	*e;
	size_t				 i;

	e = journal_seen_rev(js, want->rev, &i);
	assert_int_equal(e->type, want->type);
	assert_int_equal(e->what, want->what);
	assert_int_equal(e->rank, want->rank);
	assert_int_equal(e->window, want->window);
	assert_int_equal(e->step, want->step);
	assert_int_equal(e->stop, want->stop);
	assert_int_equal(e->time_ns, want->time_ns);
	assert_int_equal(e->generation, want->generation);
	assert_string_equal(js->node[i], want->node != NULL ? want->node : "-");
	assert_string_equal(js->detail[i], want->detail != NULL ?
	    want->detail : "-");
}

/*
 * The event stream's revisions over etcd: an event's comes back with it, an
 * attach and a window's change (entries that are no stored event) come
 * back whole, a rewritten history's events come back without one, and its
 * floor says so.
 */
static void
test_etcd_journal(void **state)
{
	struct fixture			*f = *state;
	struct rank_event		 ev = {
	    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 2, 10, 14 };
	struct store_journal		 att = { 1000, "J", STORE_JOURNAL_RANK,
	    DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, 5, 0, 3, 0, 13, 0, "n0",
	    NULL };
	struct store_journal		 win = { 1001, "J", STORE_JOURNAL_WINDOW,
	    3, 0, 2, 10, 20, 12, 9, NULL, NULL };
	struct store_journal		 floor = { 1002, "J",
	    STORE_JOURNAL_FLOOR, 0, 0, 0, 0, 0, 0, 0, NULL, NULL };
	/* The event's entry, as its revision brings it back. */
	struct store_journal		 started = { 1003, "J",
	    STORE_JOURNAL_RANK, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 5, 2,
	    10, 0, 14, 0, "n0", "/out" };
	struct journal_seen		 js;
	struct store_loader		 cb = {
		.arg = &js,
		.event = on_any_event,
		.journal = on_journal,
	};

	assert_true(store_keeps_journal(f->s));
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_put_journal(f->s, &att), 0);
	assert_int_equal(store_put_event(f->s, "J", 5, &ev, "n0", "/out",
	    1003), 1);
	assert_int_equal(store_put_journal(f->s, &win), 0);
	assert_int_equal(store_commit(f->s), 0);
	memset(&js, 0, sizeof(js));
	assert_int_equal(store_load(f->s, &cb), 0);
	assert_int_equal(js.n, 3);
	assert_journal(&js, &att);
	assert_journal(&js, &win);
	assert_journal(&js, &started);
	/* Rewritten without revisions: only the floor comes back. */
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_compact_begin(f->s, "J"), 0);
	assert_int_equal(store_put_event(f->s, "J", 5, &ev, "n0", NULL, 0), 1);
	assert_int_equal(store_put_journal(f->s, &floor), 0);
	assert_int_equal(store_compact_end(f->s, "J"), 0);
	assert_int_equal(store_commit(f->s), 0);
	memset(&js, 0, sizeof(js));
	assert_int_equal(store_load(f->s, &cb), 0);
	assert_int_equal(js.n, 1);
	assert_int_equal(js.e[0].type, STORE_JOURNAL_FLOOR);
	assert_int_equal(js.e[0].rev, 1002);
}

/* Closes the store and removes its directory (and resigns in etcd). */
static int
teardown(void **state)
{
	struct fixture	*f = *state;

	store_close(f->s);
	if (f->e != NULL) {
		etcd_resign(f->e);
		etcd_free(f->e);
	}
	unit_rmstore(f->dir);
	free(f);
	return (0);
}

/* Copies v (NULL as "(null)") into buf; returns buf. */
static const char *
copy(char *buf, size_t len, const char *v)
{
	snprintf(buf, len, "%s", v != NULL ? v : "(null)");
	return (buf);
}

/* Takes the generation counter. */
static void
on_generation(void *arg, uint64_t gen)
{
	((struct loaded *)arg)->generation = gen;
}

/* Takes a job row. */
static int
on_job(void *arg, const struct store_job *j)
{
	struct loaded	*l = arg;

	l->jobs++;
	l->job = *j;
	l->job.name = copy(l->name, sizeof(l->name), j->name);
	l->job.config = copy(l->config, sizeof(l->config), j->config);
	l->job.defaults = copy(l->defaults, sizeof(l->defaults), j->defaults);
	l->job.rules = copy(l->rules, sizeof(l->rules), j->rules);
	return (0);
}

/* Takes a window row. */
static int
on_window(void *arg, const struct store_window *w)
{
	struct loaded	*l = arg;

	l->windows++;
	l->window = *w;
	l->window.job = l->window.options = l->window.output_subdir =
	    l->window.trace_store = NULL;
	l->window.ranks = copy(l->ranks_text, sizeof(l->ranks_text), w->ranks);
	l->window.selector = copy(l->selector, sizeof(l->selector),
	    w->selector);
	l->window.refused_reason = copy(l->refused, sizeof(l->refused),
	    w->refused_reason);
	return (0);
}

/* Takes a rank row. */
static int
on_rank(void *arg, const struct store_rank *r)
{
	struct loaded	*l = arg;

	l->ranks++;
	l->rank = *r;
	l->rank.job = l->rank.node = l->rank.output_dir = l->rank.labels = NULL;
	l->rank.error = copy(l->error, sizeof(l->error), r->error);
	return (0);
}

/* Takes an event row. */
static int
on_event(void *arg, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail)
{
	struct loaded	*l = arg;

	(void)job;
	(void)rank;
	l->events++;
	l->event_kind = ev->kind;
	if (ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED) {
		copy(l->event_node, sizeof(l->event_node), node);
		copy(l->event_detail, sizeof(l->event_detail), detail);
	} else if (node != NULL || detail != NULL)
		l->details_of_others++;
	return (0);
}

/* Takes an agent row. */
static int
on_agent(void *arg, const char *node, uint64_t boot_id, uint64_t seq)
{
	struct loaded	*l = arg;

	(void)node;
	l->agents++;
	l->boot_id = boot_id;
	l->seq = seq;
	return (0);
}

/* Reads the whole store, every row to arg, the agents' rows through agent. */
static void
load_rows(struct store *s, void *arg,
    int (*agent)(void *, const char *, uint64_t, uint64_t))
{
	struct store_loader	 cb = {
		.arg = arg,
		.generation = on_generation,
		.job = on_job,
		.window = on_window,
		.rank = on_rank,
		.event = on_event,
		.agent = agent,
	};

	assert_int_equal(store_load(s, &cb), 0);
}

/* Reads the whole store into l. */
static void
load(struct store *s, struct loaded *l)
{
	memset(l, 0, sizeof(*l));
	load_rows(s, l, on_agent);
}

/* Puts one row of every kind for job J. */
static void
put_all(struct store *s)
{
	struct store_job	 j = { "J", 7, 3, "{\"a\":1}", "{}", 11,
	    "{\"rules\":[]}" };
	struct store_window	 w = { "J", 2, 10, 20, "0-3", "one_per=pp\n",
	    "{}", "sub", WINDOW_STATE_CANCELLED, 1, 12, 15, 1, 0, 0, 0,
	    NULL, "refused here", 6, 7 };
	struct store_rank	 r = { "J", 5, "n0", 1234, 42, 3, 2, "/out", 2,
	    13, "it broke", "pp=3,tp=1", 16, 17, 0 };
	struct rank_event	 ev = { DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    2, 10, 14 };
	struct rank_event	 col = { DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED,
	    2, 20, 15 };

	assert_int_equal(store_put_generation(s, 7), 0);
	assert_int_equal(store_put_job(s, &j), 0);
	assert_int_equal(store_put_window(s, &w), 0);
	assert_int_equal(store_put_rank(s, &r), 0);
	assert_int_equal(store_put_event(s, "J", 5, &ev, "n0", "/out", 0), 1);
	assert_int_equal(store_put_event(s, "J", 5, &ev, "n0", "/out", 0), 0);
	/* A trace's collection: its detail comes back on load. */
	assert_int_equal(store_put_event(s, "J", 5, &col, "n0", TRACE_DETAIL,
	    0), 1);
	assert_int_equal(store_put_agent(s, "n0", 99, 17), 0);
}

/* What is committed comes back, field by field, after a reopen. */
static void
test_put_commit_reload(void **state)
{
	struct fixture	*f = *state;
	struct loaded	 l;

	assert_int_equal(store_begin(f->s), 0);
	put_all(f->s);
	assert_int_equal(store_commit(f->s), 0);
	store_close(f->s);
	assert_non_null(f->s = reopen(f));
	load(f->s, &l);
	assert_int_equal(l.generation, 7);
	assert_int_equal(l.jobs, 1);
	assert_string_equal(l.job.name, "J");
	assert_string_equal(l.job.config, "{\"a\":1}");
	assert_string_equal(l.job.defaults, "{}");
	assert_string_equal(l.job.rules, "{\"rules\":[]}");
	assert_int_equal(l.job.generation, 7);
	assert_int_equal(l.job.next_window_id, 3);
	assert_int_equal(l.windows, 1);
	assert_int_equal(l.window.id, 2);
	assert_int_equal(l.window.start_step, 10);
	assert_int_equal(l.window.stop_step, 20);
	assert_string_equal(l.window.ranks, "0-3");
	assert_string_equal(l.window.selector, "one_per=pp\n");
	assert_int_equal(l.window.state, WINDOW_STATE_CANCELLED);
	assert_int_equal(l.window.finished, 1);
	assert_int_equal(l.window.ended_ns, 15);
	assert_int_equal(l.window.no_collect, 1);
	assert_string_equal(l.window.refused_reason, "refused here");
	assert_int_equal(l.window.generation, 6);
	assert_int_equal(l.window.ended_generation, 7);
	assert_int_equal(l.ranks, 1);
	assert_int_equal(l.rank.rank, 5);
	assert_int_equal(l.rank.step, 42);
	assert_string_equal(l.rank.error, "it broke");
	assert_int_equal(l.rank.arrived_ns, 16);
	assert_int_equal(l.rank.gone_ns, 17);
	assert_int_equal(l.events, 2);
	assert_int_equal(l.event_kind, DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED);
	assert_string_equal(l.event_node, "n0");
	assert_string_equal(l.event_detail, TRACE_DETAIL);
	assert_int_equal(l.details_of_others, 0);
	assert_int_equal(l.agents, 1);
	assert_int_equal(l.boot_id, 99);
	assert_int_equal(l.seq, 17);
}

/* A rolled back transaction leaves nothing; a job nobody scheduled is
 * forgotten, a scheduled one is not. */
static void
test_rollback_forget(void **state)
{
	struct fixture		*f = *state;
	struct loaded		 l;
	struct store_rank	 r = rank_row;

	r.job = "K";
	r.rank = 1;
	assert_int_equal(store_begin(f->s), 0);
	put_all(f->s);
	store_rollback(f->s);
	load(f->s, &l);
	assert_int_equal(l.jobs + l.windows + l.ranks + l.events + l.agents,
	    0);
	assert_int_equal(l.generation, 0);

	assert_int_equal(store_begin(f->s), 0);
	put_all(f->s);
	assert_int_equal(store_put_rank(f->s, &r), 0);
	assert_int_equal(store_commit(f->s), 0);
	assert_int_equal(store_forget_job(f->s, "K"), 0);
	assert_int_equal(store_forget_job(f->s, "J"), 0);
	load(f->s, &l);
	assert_int_equal(l.ranks, 1);
	assert_int_equal(l.rank.rank, 5);		/* J's */
	assert_int_equal(l.events, 2);
}

/*
 * An event batch stays open across writes until its owner ends it
 * (store_batch_end()) and commits it: the store calls nobody back, and a
 * change's transaction is refused while a batch is open (it would join it).
 * A batch ended and rolled back is gone.
 */
static void
test_batch(void **state)
{
	struct fixture		*f = *state;
	struct loaded		 l;
	struct rank_event	 ev = { DYNPROF__V1__EVENT_KIND__EVENT_STOPPED,
	    1, 20, 21 };

	assert_false(store_batch_open(f->s));
	assert_int_equal(store_batch_begin(f->s), 0);
	assert_true(store_batch_open(f->s));
	assert_int_equal(store_put_event(f->s, "J", 0, &ev, "n0", NULL, 0), 1);
	/* A second begin joins the open batch. */
	assert_int_equal(store_batch_begin(f->s), 0);
	/* A change's transaction waits for the batch's end. */
	assert_int_equal(store_begin(f->s), -1);
	assert_true(store_batch_open(f->s));
	store_batch_end(f->s);
	assert_false(store_batch_open(f->s));
	assert_int_equal(store_commit(f->s), 0);
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_put_generation(f->s, 3), 0);
	assert_int_equal(store_commit(f->s), 0);
	load(f->s, &l);
	assert_int_equal(l.events, 1);
	assert_int_equal(l.generation, 3);

	/* Ended and rolled back: gone. */
	ev.window_id = 2;
	assert_int_equal(store_batch_begin(f->s), 0);
	assert_int_equal(store_put_event(f->s, "J", 0, &ev, "n0", NULL, 0), 1);
	store_batch_end(f->s);
	store_rollback(f->s);
	assert_false(store_batch_open(f->s));
	load(f->s, &l);
	assert_int_equal(l.events, 1);
}

/* A store written by a newer coordinator is refused. */
static void
test_newer_schema(void **state)
{
	struct fixture	*f = *state;
	sqlite3		*db;
	char		 path[128];
	const char	*why = NULL;

	store_close(f->s);
	snprintf(path, sizeof(path), "%s/dynprof.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA user_version=99", NULL, NULL,
	    NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_null(f->s = store_open(f->dir, &why));
	assert_non_null(strstr(why, "schema version 99 is newer"));
}

/* Puts v at the store's prefix + rel in etcd, past the store. */
static void
put_raw(struct fixture *f, const char *rel, const char *v)
{
	char	 key[ETCD_KEY_MAX];
	json_t	*ans;

	assert_int_equal(etcd_key(f->e, key, sizeof(key), "%s", rel), 0);
	assert_int_equal(etcd_call(f->e, "/v3/kv/put", json_pack("{s:o,s:o}",
	    "key", etcd_b64(key, strlen(key)), "value", etcd_b64(v,
	    strlen(v))), &ans), ETCD_OK);
	json_decref(ans);
}

/* A layout written by a newer coordinator is refused (etcd). */
static void
test_etcd_newer_schema(void **state)
{
	struct fixture	*f = *state;
	struct loaded	 l;
	struct store_loader cb = { .arg = &l, .generation = on_generation };

	put_raw(f, "meta/generation", "{\"generation\":1,\"schema\":4}");
	memset(&l, 0, sizeof(l));
	assert_int_equal(store_load(f->s, &cb), -1);
	assert_int_equal(l.generation, 0);
}

/*
 * A batch of more operations than etcd takes in one txn (its default
 * --max-txn-ops, 128: here a batch value for each of 200 jobs) is committed
 * whole, in several txns; an event twice in one batch is stored once.
 */
static void
test_etcd_big_batch(void **state)
{
	struct fixture		*f = *state;
	struct loaded		 l;
	struct store_rank	 r = rank_row;
	uint64_t		 calls;
	char			 job[16];
	int			 i, n = 400;

	assert_int_equal(store_begin(f->s), 0);
	for (i = 0; i < n; i++) {
		snprintf(job, sizeof(job), "J%d", i / 2);
		r.job = job;
		r.rank = i;
		assert_int_equal(store_put_rank(f->s, &r), 0);
		assert_int_equal(store_put_event(f->s, job, i, &started_ev,
		    "n0", "/out", 0), 1);
		assert_int_equal(store_put_event(f->s, job, i, &started_ev,
		    "n0", "/out", 0), 0);
	}
	assert_int_equal(store_put_agent(f->s, "n0", 5, 600), 0);
	calls = f->e->calls;
	assert_int_equal(store_commit(f->s), 0);
	/* 200 batch values and an agent: 201 > 128. */
	assert_true(f->e->calls - calls >= 2);
	load(f->s, &l);
	assert_int_equal(l.ranks, n);
	assert_int_equal(l.events, n);
	assert_int_equal(l.agents, 1);
	assert_int_equal(l.seq, 600);
}

/* Counts a key. */
static int
count_key(void *arg, const char *k, const char *v, size_t len,
    const json_t *kv)
{
	(void)k;
	(void)v;
	(void)len;
	(void)kv;
	(*(int *)arg)++;
	return (0);
}

/* Returns how many keys the store holds under its prefix + rel. */
static int
count_keys(struct fixture *f, const char *rel)
{
	char	 prefix[ETCD_KEY_MAX];
	int64_t	 rev = 0;
	int	 n = 0;

	assert_int_equal(etcd_key(f->e, prefix, sizeof(prefix), "%s", rel), 0);
	assert_int_equal(etcd_range(f->e, prefix, &rev, count_key, &n),
	    ETCD_OK);
	return (n);
}

/*
 * A job's batches, many (32: ES_COMPACT_BATCHES) and heavier than twice its
 * last snapshot (and 1 MiB), are due for compaction; its history rewritten
 * whole (the ranks' rows, the events) replaces them in etcd, and loads the
 * same.
 */
static void
test_etcd_compact(void **state)
{
	struct fixture		*f = *state;
	struct loaded		 l;
	struct store_rank	 r = rank_row;
	char			 err[64];
	int			 i, k, n = 2000, commits = 32;

	srandom(7);
	for (k = 0; k < commits; k++) {
		assert_false(store_compact_due(f->s, "J"));
		assert_int_equal(store_begin(f->s), 0);
		for (i = 0; i < n; i++) {
			/* An error that deflates little: the batches weigh. */
			snprintf(err, sizeof(err), "%08lx%08lx%08lx%08lx%08lx%08lx",
			    random(), random(), random(), random(), random(),
			    random());
			r.rank = i;
			r.step = k;
			r.error = err;
			assert_int_equal(store_put_rank(f->s, &r), 0);
			if (k == 0)
				assert_int_equal(store_put_event(f->s, "J", i,
				    &started_ev, "n0", "/out", 0), 1);
		}
		assert_int_equal(store_commit(f->s), 0);
	}
	assert_int_equal(count_keys(f, "evbatch/J/"), commits);
	assert_true(store_compact_due(f->s, "J"));
	/* The history, as the model would hold it. */
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_compact_begin(f->s, "J"), 0);
	r.error = "last";
	for (i = 0; i < n; i++) {
		r.rank = i;
		assert_int_equal(store_put_rank(f->s, &r), 0);
		assert_int_equal(store_put_event(f->s, "J", i, &started_ev,
		    "n0", NULL, 0), 1);
	}
	assert_int_equal(store_compact_end(f->s, "J"), 0);
	assert_int_equal(store_commit(f->s), 0);
	assert_false(store_compact_due(f->s, "J"));
	assert_int_equal(count_keys(f, "evbatch/J/"), 1);
	load(f->s, &l);
	assert_int_equal(l.ranks, n);
	assert_int_equal(l.events, n);
	assert_int_equal(l.rank.step, commits - 1);
	assert_string_equal(l.rank.error, "last");
}

/* Each node's row as loaded: n<i> at i, "old" at AG_NODES. */
#define AG_NODES	40
struct agents_loaded {
	uint64_t	 seq[AG_NODES + 1];
	int		 n;
};

/* Takes an agent row by its node. */
static int
on_agent_node(void *arg, const char *node, uint64_t boot_id, uint64_t seq)
{
	struct agents_loaded	*al = arg;
	int			 i = AG_NODES;

	assert_int_equal(boot_id, 5);
	if (strcmp(node, "old") != 0)
		i = atoi(node + 1);
	assert_true(i >= 0 && i <= AG_NODES);
	al->seq[i] = seq;
	al->n++;
	return (0);
}

/* Loads the agents' rows alone. */
static void
load_agents(struct store *s, struct agents_loaded *al)
{
	memset(al, 0, sizeof(*al));
	load_rows(s, al, on_agent_node);
}

/* Writes the row of node of the layout before (PREFIX agents/NODE). */
static void
put_old_agent(struct fixture *f, const char *node, uint64_t seq)
{
	char	 rel[64], v[128];

	snprintf(rel, sizeof(rel), "agents/%s", node);
	snprintf(v, sizeof(v), "{\"node\":\"%s\",\"boot_id\":5,"
	    "\"seq\":%llu}", node, (unsigned long long)seq);
	put_raw(f, rel, v);
}

/*
 * The agents' rows of a commit are one value (not a key each); a node's
 * latest row wins, a key of the layout before against a value by its
 * revision; every ESA_SNAP_VALUES values a snapshot of every node replaces
 * them and the keys of the layout before, and loads the same.
 */
static void
test_etcd_agent_values(void **state)
{
	struct fixture		*f = *state;
	struct agents_loaded	 al;
	char			 node[16];
	int			 i;

	put_old_agent(f, "old", 7);
	put_old_agent(f, "n0", 3);
	for (i = 0; i < ESA_SNAP_VALUES; i++) {
		assert_int_equal(store_begin(f->s), 0);
		snprintf(node, sizeof(node), "n%d", i);
		assert_int_equal(store_put_agent(f->s, node, 5, 100 + i), 0);
		assert_int_equal(store_put_agent(f->s, "n0", 5, 1000 + i), 0);
		assert_int_equal(store_commit(f->s), 0);
	}
	/* A value per commit, the key of the layout before kept. */
	assert_int_equal(count_keys(f, "agbatch/"), ESA_SNAP_VALUES);
	assert_int_equal(count_keys(f, "agents/"), 2);
	load_agents(f->s, &al);
	assert_int_equal(al.n, ESA_SNAP_VALUES + 1);
	assert_int_equal(al.seq[0], 1000 + ESA_SNAP_VALUES - 1);
	assert_int_equal(al.seq[5], 105);
	assert_int_equal(al.seq[AG_NODES], 7);

	/* A coordinator of the layout before writes n0's key: newer. */
	put_old_agent(f, "n0", 2000);
	load_agents(f->s, &al);
	assert_int_equal(al.seq[0], 2000);

	/* The next commit is a snapshot: every node in one value. */
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_put_agent(f->s, "n1", 5, 3000), 0);
	assert_int_equal(store_commit(f->s), 0);
	assert_int_equal(count_keys(f, "agbatch/"), 1);
	assert_int_equal(count_keys(f, "agents/"), 0);
	load_agents(f->s, &al);
	assert_int_equal(al.n, ESA_SNAP_VALUES + 1);
	assert_int_equal(al.seq[0], 2000);
	assert_int_equal(al.seq[1], 3000);
	assert_int_equal(al.seq[5], 105);
	assert_int_equal(al.seq[AG_NODES], 7);
}

static int	 deposed_calls;

/* Counts the store telling its owner that it lost the lead. */
static void
on_deposed(void *arg)
{
	(void)arg;
	deposed_calls++;
}

/*
 * Fencing: once another coordinator leads (the first one's lease gone, as
 * when it was paused past its TTL), the first one's commit is refused by
 * etcd, writes nothing, and says so; the new leader's writes go through.
 */
static void
test_etcd_fencing(void **state)
{
	struct fixture		*f = *state;
	struct store_job	 j = { "J", 1, 1, NULL, NULL, 1, NULL };
	struct loaded		 l;
	struct etcd		*e2;
	struct store		*s2;
	const char		*why;
	char			 other[256];
	json_t			*ans;
	uint64_t		 calls;

	deposed_calls = 0;
	f->e->deposed = on_deposed;
	assert_non_null(e2 = etcd_new(etcd_endpoints, f->prefix, &why));
	assert_int_equal(etcd_campaign(e2, 10, "{\"agent\":\"b\"}", other,
	    sizeof(other)), 0);
	assert_string_equal(other, "{\"agent\":\"a\"}");
	assert_int_equal(e2->fence, 0);
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_put_job(f->s, &j), 0);
	assert_int_equal(store_commit(f->s), 0);

	/* The first leader's lease goes; the second takes the lead. */
	assert_int_equal(etcd_call(e2, "/v3/lease/revoke", json_pack("{s:o}",
	    "ID", etcd_int_json(f->e->lease)), &ans), ETCD_OK);
	json_decref(ans);
	assert_int_equal(etcd_campaign(e2, 10, "{\"agent\":\"b\"}", other,
	    sizeof(other)), 1);
	assert_true(e2->fence > f->e->fence);

	/* The deposed leader still believes it leads: etcd refuses. */
	j.name = "K";
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_put_job(f->s, &j), 0);
	assert_int_equal(store_commit(f->s), -1);
	assert_int_equal(deposed_calls, 1);
	assert_int_equal(f->e->fence, 0);
	assert_non_null(strstr(store_unavailable(f->s), "not the leader"));
	/* Refused at once from now on, without asking etcd. */
	calls = f->e->calls;
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_put_job(f->s, &j), 0);
	assert_int_equal(store_commit(f->s), -1);
	assert_int_equal(f->e->calls, calls);
	assert_int_equal(deposed_calls, 1);
	assert_int_equal(etcd_keepalive(f->e), 0);

	/* The new leader sees J alone, and writes. */
	assert_non_null(s2 = store_open_etcd(e2, &why));
	load(s2, &l);
	assert_int_equal(l.jobs, 1);
	assert_string_equal(l.job.name, "J");
	j.name = "L";
	assert_int_equal(store_begin(s2), 0);
	assert_int_equal(store_put_job(s2, &j), 0);
	assert_int_equal(store_commit(s2), 0);
	load(s2, &l);
	assert_int_equal(l.jobs, 2);
	store_close(s2);
	etcd_resign(e2);
	etcd_free(e2);
}

/*
 * A keepalive's answer about a lease given up since (a follower's expired
 * lease, answered after its campaign won on a new one) leaves the lease
 * it leads with alone.
 */
static void
test_etcd_keepalive_stale(void **state)
{
	struct fixture	*f = *state;
	struct etcd	*e2;
	const char	*why;
	char		 other[256];
	json_t		*ans;
	int64_t		 old, fence;
	int		 rc;

	assert_non_null(e2 = etcd_new(etcd_endpoints, f->prefix, &why));
	assert_int_equal(etcd_campaign(e2, 10, "{\"agent\":\"b\"}", other,
	    sizeof(other)), 0);
	old = e2->lease;
	assert_true(old != 0);
	/* Its lease gone (expired while it was stopped), then the leader's:
	 * it campaigns on a new lease, and wins. */
	assert_int_equal(etcd_call(e2, "/v3/lease/revoke", json_pack("{s:o}",
	    "ID", etcd_int_json(old)), &ans), ETCD_OK);
	json_decref(ans);
	assert_int_equal(etcd_keepalive(e2), 0);
	assert_int_equal(e2->lease, 0);
	assert_int_equal(etcd_call(e2, "/v3/lease/revoke", json_pack("{s:o}",
	    "ID", etcd_int_json(f->e->lease)), &ans), ETCD_OK);
	json_decref(ans);
	assert_int_equal(etcd_campaign(e2, 10, "{\"agent\":\"b\"}", other,
	    sizeof(other)), 1);
	assert_true(e2->lease != 0 && e2->lease != old);
	fence = e2->fence;
	/* The answer to a keepalive of the old lease, asked before. */
	rc = etcd_call(e2, "/v3/lease/keepalive", json_pack("{s:o}", "ID",
	    etcd_int_json(old)), &ans);
	assert_int_equal(etcd_keepalive_result(e2, rc, ans), 0);
	assert_true(e2->lease != 0 && e2->lease != old);
	assert_int_equal(e2->fence, fence);
	assert_true(etcd_keepalive(e2) > 0);
	etcd_resign(e2);
	etcd_free(e2);
}

/* What a load of several ranks handed over: each rank's row, each event. */
struct ranks_seen {
	int64_t		 step[8];	/* by rank, -1: no row */
	int		 state[8];
	char		 labels[8][16];
	int		 nrows;
	struct {
		int32_t	 rank;
		int	 kind;
		int64_t	 time_ns;
	}		 ev[8];
	int		 nev;
	struct journal_seen js;
};

/* Takes a rank's row, by its rank (0-7). */
static int
on_rank_seen(void *arg, const struct store_rank *r)
{
	struct ranks_seen	*rs = arg;

	assert_true(r->rank >= 0 && r->rank < 8);
	assert_string_equal(r->job, "J");
	rs->step[r->rank] = r->step;
	rs->state[r->rank] = r->state;
	copy(rs->labels[r->rank], sizeof(rs->labels[r->rank]), r->labels);
	rs->nrows++;
	return (0);
}

/* Takes an event. */
static int
on_event_seen(void *arg, const char *job, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail)
{
	struct ranks_seen	*rs = arg;

	(void)node;
	(void)detail;
	assert_string_equal(job, "J");
	assert_true(rs->nev < 8);
	rs->ev[rs->nev].rank = rank;
	rs->ev[rs->nev].kind = ev->kind;
	rs->ev[rs->nev].time_ns = ev->time_ns;
	rs->nev++;
	return (0);
}

/* Takes a journal entry into rs->js. */
static int
on_journal_seen(void *arg, const struct store_journal *sj)
{
	return (on_journal(&((struct ranks_seen *)arg)->js, sj));
}

/* A loader of rows and events into rs. */
static void
ranks_seen_loader(struct store_loader *cb, struct ranks_seen *rs)
{
	int	 i;

	memset(rs, 0, sizeof(*rs));
	for (i = 0; i < 8; i++)
		rs->step[i] = -1;
	memset(cb, 0, sizeof(*cb));
	cb->arg = rs;
	cb->rank = on_rank_seen;
	cb->event = on_event_seen;
	cb->journal = on_journal_seen;
}

/* Checks that rs holds one event of rank and kind, at time_ns. */
static void
ranks_seen_event(const struct ranks_seen *rs, int32_t rank, int kind,
    int64_t time_ns)
{
	int	 i, n = 0;

	for (i = 0; i < rs->nev; i++) {
		if (rs->ev[i].rank == rank && rs->ev[i].kind == kind) {
			assert_int_equal(rs->ev[i].time_ns, time_ns);
			n++;
		}
	}
	assert_int_equal(n, 1);
}

/* The JSON batches of a coordinator before the packed layout: the first
 * plain, the second deflated (as it wrote them when that was smaller). */
static const char *const old_batches[] = {
	"{\"job\":\"J\",\"events\":[[5,2,2,10,14,null,null],"
	"[6,2,2,10,15,null,null]],\"ranks\":[{\"job\":\"J\",\"rank\":5,"
	"\"node\":\"n0\",\"pid\":1234,\"step\":10,\"state\":3,\"window_id\":2,"
	"\"last_event\":2,\"last_event_ns\":14,\"labels\":\"pp=1\"},"
	"{\"job\":\"J\",\"rank\":6,\"node\":\"n0\",\"step\":10,\"state\":3}],"
	"\"revs\":[1003,1004],\"journal\":[[1000,1,1,5,0,3,0,13,0,\"n0\","
	"null]]}",
	"{\"job\":\"J\",\"events\":[[5,2,3,20,24,null,null]],\"ranks\":["
	"{\"job\":\"J\",\"rank\":5,\"node\":\"n0\",\"step\":20,\"state\":4}],"
	"\"revs\":[1005]}",
};

/* Puts old_batches[i] at evbatch/J/1/i+1 (fence 1: before any leader of
 * this test's); deflated if deflate is set.  Its key in key. */
static void
put_old_batch(struct fixture *f, size_t i, int deflate, char *key,
    size_t klen)
{
	const char	*v = old_batches[i];
	uLongf		 zlen = compressBound(strlen(v));
	Bytef		 z[4096];
	json_t		*ans;

	assert_int_equal(etcd_key(f->e, key, klen, "evbatch/J/%020d/%020zu", 1,
	    i + 1), 0);
	assert_true(zlen <= sizeof(z));
	if (deflate)
		assert_int_equal(compress2(z, &zlen, (const Bytef *)v,
		    strlen(v), 1), Z_OK);
	assert_int_equal(etcd_call(f->e, "/v3/kv/put", json_pack("{s:o,s:o}",
	    "key", etcd_b64(key, strlen(key)), "value", deflate ?
	    etcd_b64((const char *)z, zlen) : etcd_b64(v, strlen(v))), &ans),
	    ETCD_OK);
	json_decref(ans);
}

/* Takes a batch value read back: its first 5 bytes (inflated if it is
 * zlib's) in arg, the last value's left there. */
static int
first_bytes(void *arg, const char *key, const char *value, size_t len,
    const json_t *kv)
{
	char	*head = arg;
	Bytef	 out[8];
	uLongf	 olen = sizeof(out);
	int	 rc;

	(void)key;
	(void)kv;
	assert_true(len >= 5);
	memcpy(head, value, 5);
	if ((unsigned char)value[0] == 0x78) {
		/* Only its start is asked for: Z_BUF_ERROR then. */
		rc = uncompress(out, &olen, (const Bytef *)value, len);
		assert_true(rc == Z_OK || rc == Z_BUF_ERROR);
		memcpy(head, out, 5);
	}
	return (0);
}

/*
 * A store an older leader wrote (a rolling upgrade): its JSON batches, plain
 * and deflated, load, and a watch's key of one applies alone; the batches
 * this coordinator writes after them are packed (no JSON), and the load of
 * the two keeps each rank's latest row, each event once (the earliest) and
 * every revision of the event stream.
 */
static void
test_etcd_old_batches(void **state)
{
	struct fixture		*f = *state;
	struct rank_event	 again = { DYNPROF__V1__EVENT_KIND__EVENT_STARTED,
	    2, 10, 99 };
	struct rank_event	 stop6 = { DYNPROF__V1__EVENT_KIND__EVENT_STOPPED,
	    2, 20, 25 };
	struct store_rank	 r6 = { "J", 6, "n1", 77, 30, 4, 2, NULL, 3, 25,
	    NULL, "pp=2", 0, 0, 0 };
	struct store_loader	 cb;
	struct ranks_seen	 rs;
	const struct store_journal *e;
	char			 key0[ETCD_KEY_MAX], key1[ETCD_KEY_MAX];
	char			 prefix[ETCD_KEY_MAX], head[8];
	int64_t			 rev = 0;
	size_t			 i;

	put_old_batch(f, 0, 0, key0, sizeof(key0));
	put_old_batch(f, 1, 1, key1, sizeof(key1));
	/* As a follower's watch hands them over, one key at a time. */
	ranks_seen_loader(&cb, &rs);
	assert_int_equal(store_apply(f->s, key0, old_batches[0],
	    strlen(old_batches[0]), 10, &cb), 1);
	assert_int_equal(rs.nrows, 2);
	assert_int_equal(rs.step[5], 10);
	assert_string_equal(rs.labels[5], "pp=1");
	assert_int_equal(rs.nev, 2);
	ranks_seen_event(&rs, 5, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 14);
	ranks_seen_event(&rs, 6, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 15);
	assert_int_equal(rs.js.n, 3);
	e = journal_seen_rev(&rs.js, 1000, &i);
	assert_int_equal(e->what, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED);
	assert_string_equal(rs.js.node[i], "n0");
	(void)journal_seen_rev(&rs.js, 1004, &i);
	/* This coordinator's own batch, after them in key order. */
	assert_int_equal(store_begin(f->s), 0);
	assert_int_equal(store_put_rank(f->s, &r6), 0);
	assert_int_equal(store_put_event(f->s, "J", 5, &again, NULL, NULL, 0),
	    1);
	assert_int_equal(store_put_event(f->s, "J", 6, &stop6, NULL, NULL,
	    1006), 1);
	assert_int_equal(store_commit(f->s), 0);
	memset(head, 0, sizeof(head));
	assert_int_equal(etcd_key(f->e, prefix, sizeof(prefix), "evbatch/J/"),
	    0);
	assert_int_equal(count_keys(f, "evbatch/J/"), 3);
	/* The last key (this leader's, in key order) is packed: its magic,
	 * no '{'. */
	assert_int_equal(etcd_range(f->e, prefix, &rev, first_bytes, head),
	    ETCD_OK);
	assert_memory_equal(head, "\0DPB1", 5);
	/* The whole store, as a new leader loads it. */
	ranks_seen_loader(&cb, &rs);
	assert_int_equal(store_load(f->s, &cb), 0);
	assert_int_equal(rs.nrows, 2);
	assert_int_equal(rs.step[5], 20);	/* the deflated batch's */
	assert_int_equal(rs.state[5], 4);
	assert_string_equal(rs.labels[5], "(null)");
	assert_int_equal(rs.step[6], 30);	/* the packed batch's */
	assert_string_equal(rs.labels[6], "pp=2");
	assert_int_equal(rs.nev, 4);
	ranks_seen_event(&rs, 5, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 14);
	ranks_seen_event(&rs, 5, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, 24);
	ranks_seen_event(&rs, 6, DYNPROF__V1__EVENT_KIND__EVENT_STARTED, 15);
	ranks_seen_event(&rs, 6, DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, 25);
	assert_int_equal(rs.js.n, 5);
	for (rev = 1003; rev <= 1006; rev++)
		(void)journal_seen_rev(&rs.js, (uint64_t)rev, &i);
}

int
main(int argc, char **argv)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_put_commit_reload),
		T(test_rollback_forget),
		T(test_batch),
	};
	const struct CMUnitTest sqlite_tests[] = {
		T(test_newer_schema),
	};
	const struct CMUnitTest etcd_only[] = {
		T(test_etcd_newer_schema),
		T(test_etcd_compact),
		T(test_etcd_big_batch),
		T(test_etcd_agent_values),
		T(test_etcd_fencing),
		T(test_etcd_journal),
		T(test_etcd_old_batches),
		T(test_etcd_keepalive_stale),
	};
#undef T
	int	 rc;

	log_init("test_store", LOG_LEVEL_QUIET);
	if (argc > 1 && strcmp(argv[1], "etcd") == 0 &&
	    (etcd_endpoints = getenv("DYNPROF_ETCD_ENDPOINTS")) == NULL) {
		fprintf(stderr, "test_store etcd: no DYNPROF_ETCD_ENDPOINTS "
		    "(run under tests/support/etcd.py)\n");
		return (1);
	}
	rc = cmocka_run_group_tests_name(etcd_endpoints != NULL ?
	    "store_etcd" : "store_sqlite", tests, NULL, NULL);
	if (etcd_endpoints != NULL)
		return (rc | cmocka_run_group_tests_name("store_etcd_only",
		    etcd_only, NULL, NULL));
	return (rc | cmocka_run_group_tests_name("store_sqlite_only",
	    sqlite_tests, NULL, NULL));
}
