/*
 * The event log of a rank slot (common/slotlog.c) in a real segment: entries
 * as written, the ring's wrap-around, overwrites counted when nothing was
 * acknowledged, the cursor's incarnation rule, the preference of claims for
 * acknowledged slots, a dead rank's slot held while the agent reads it, and
 * output directories kept relative to the slot's root: what the library logs
 * is rebuilt by the agent's way (segment_slot_root(), slotlog_dir()) byte for
 * byte.
 */

#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>

#include "jobid.h"
#include "test_lib_helpers.h"

#define N	SEG_LOG_ENTRIES

static char		*dir;
static struct segment	 seg;
static pid_t		 writer;	/* whose entries check_entry() expects */

static int
setup(void **state)
{
	(void)state;
	writer = getpid();
	if ((dir = tl_tmpdir()) == NULL)
		return (-1);
	return (segment_open(&seg, dir, "log", SEG_CREATE, 0600) == SEG_OK ?
	    0 : -1);
}

static int
teardown(void **state)
{
	(void)state;
	segment_close(&seg);
	tl_rmtree(dir);
	dir = NULL;
	return (0);
}

/* Appends event number k (its fields derived from k) to slot idx's log. */
static int
append(int idx, uint32_t k)
{
	struct seg_log_entry	 e;

	memset(&e, 0, sizeof(e));
	e.seq = 12345;		/* ignored */
	e.kind = 1 + k % 6;
	e.window_id = k;
	e.reason = k % 4;
	e.start_step = 100 + k;
	e.stop_step = 200 + k;
	e.step = 300 + k;
	e.generation = 400 + k;
	e.time_ns = 500 + k;
	e.rank_seq = 600 + k;
	e.pid = (int32_t)getpid();
	snprintf(e.text, sizeof(e.text), "/out/event%u", k);
	return (slotlog_append(&seg.slots[idx], &e));
}

/* Checks that entry seq of slot idx reads back as event number k. */
static void
check_entry(int idx, uint32_t inc, uint32_t seq, uint32_t k)
{
	struct seg_log_entry	 e;
	char			 want[64];

	memset(&e, 0xa5, sizeof(e));
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, seq, &e), 0);
	assert_int_equal(e.seq, seq);
	assert_int_equal(e.kind, 1 + k % 6);
	assert_int_equal(e.window_id, k);
	assert_int_equal(e.reason, k % 4);
	assert_int_equal(e.start_step, 100 + k);
	assert_int_equal(e.stop_step, 200 + k);
	assert_int_equal(e.step, 300 + k);
	assert_int_equal(e.generation, 400 + k);
	assert_int_equal(e.time_ns, 500 + k);
	assert_int_equal(e.rank_seq, 600 + k);
	assert_int_equal(e.pid, writer);
	snprintf(want, sizeof(want), "/out/event%u", k);
	assert_string_equal(e.text, want);
}

/* Entries read back as written; a fresh claim starts an empty log. */
static void
test_append_read(void **state)
{
	struct seg_log_entry	 e;
	uint32_t		 inc, k;
	int			 idx;

	(void)state;
	assert_int_equal(slotlog_head(&seg.slots[0], &inc), 0);
	assert_int_equal(inc, 0);		/* never claimed */
	idx = segment_slot_claim(&seg, getpid(), 3, NULL);
	assert_int_equal(idx, 0);
	assert_int_equal(slotlog_head(&seg.slots[idx], &inc), 0);
	assert_int_equal(inc, 1);
	assert_true(slotlog_settled(&seg.slots[idx]));
	for (k = 1; k <= 5; k++)
		assert_int_equal(append(idx, k), 0);
	assert_int_equal(slotlog_head(&seg.slots[idx], &inc), 5);
	assert_false(slotlog_settled(&seg.slots[idx]));
	for (k = 1; k <= 5; k++)
		check_entry(idx, inc, k, k);
	/* Not written yet, seq 0, another incarnation. */
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, 6, &e), -1);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, 0, &e), -1);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc + 1, 1, &e), -2);
	/* An entry being written (its seq 0) is never handed out. */
	atomic_store(&seg.slots[idx].log[3 % N].seq, 0);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, 3, &e), -1);
	atomic_store(&seg.slots[idx].log[3 % N].seq, 3);
	check_entry(idx, inc, 3, 3);
	/* A text without its NUL comes back cut, terminated. */
	memset(seg.slots[idx].log[4 % N].text, 'x', SEG_LOG_TEXT_MAX);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, 4, &e), 0);
	assert_int_equal(strlen(e.text), SEG_LOG_TEXT_MAX - 1);
}

/*
 * Acknowledged as it goes, the ring wraps around many times and loses
 * nothing: the last N entries stay readable, older ones are gone.
 */
static void
test_wrap_around(void **state)
{
	struct seg_log_entry	 e;
	uint32_t		 inc, k;
	int			 idx;

	(void)state;
	idx = segment_slot_claim(&seg, getpid(), 1, NULL);
	assert_true(idx >= 0);
	(void)slotlog_head(&seg.slots[idx], &inc);
	for (k = 1; k <= 5 * N + 3; k++) {
		assert_int_equal(append(idx, k), 0);
		check_entry(idx, inc, k, k);
		if (k > N / 2)
			assert_int_equal(slotlog_ack(&seg.slots[idx], inc,
			    k - N / 2), 1);
	}
	assert_int_equal(atomic_load(&seg.slots[idx].log_lost), 0);
	assert_int_equal(slotlog_head(&seg.slots[idx], &inc), 5 * N + 3);
	for (k = 4 * N + 4; k <= 5 * N + 3; k++)
		check_entry(idx, inc, k, k);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, 4 * N + 3, &e), -1);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, 1, &e), -1);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc), 5 * N + 3 - N / 2);
}

/* With nothing acknowledged the rank never blocks: it overwrites the oldest
 * entry and counts each one it overwrites. */
static void
test_overflow_counted(void **state)
{
	struct seg_log_entry	 e;
	uint32_t		 inc, k;
	int			 idx;

	(void)state;
	idx = segment_slot_claim(&seg, getpid(), 2, NULL);
	assert_true(idx >= 0);
	(void)slotlog_head(&seg.slots[idx], &inc);
	for (k = 1; k <= N; k++)
		assert_int_equal(append(idx, k), 0);
	assert_int_equal(atomic_load(&seg.slots[idx].log_lost), 0);
	for (k = N + 1; k <= N + 3; k++)
		assert_int_equal(append(idx, k), 1);
	assert_int_equal(atomic_load(&seg.slots[idx].log_lost), 3);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc, 3, &e), -1);
	for (k = 4; k <= N + 3; k++)
		check_entry(idx, inc, k, k);

	/* Acknowledged up to N: the next N - 3 overwrite nothing pending. */
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc, N), 1);
	for (k = N + 4; k <= 2 * N; k++)
		assert_int_equal(append(idx, k), 0);
	assert_int_equal(atomic_load(&seg.slots[idx].log_lost), 3);
	assert_int_equal(append(idx, 2 * N + 1), 1);
	assert_int_equal(atomic_load(&seg.slots[idx].log_lost), 4);

	/* The next holder of the slot starts with nothing lost. */
	segment_slot_release(&seg, idx, getpid());
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc, 2 * N + 1), 1);
	assert_int_equal(segment_slot_claim(&seg, getpid(), 2, NULL), idx);
	assert_int_equal(atomic_load(&seg.slots[idx].log_lost), 0);
	assert_int_equal(slotlog_head(&seg.slots[idx], &inc), 0);
}

/*
 * The cursor belongs to one incarnation: an ack for the holder the entries
 * were read from moves it, only forward; a late ack for an older holder
 * changes nothing for the new one.
 */
static void
test_cursor_incarnation(void **state)
{
	struct seg_log_entry	 e;
	uint32_t		 inc1, inc2, k;
	uint64_t		 raw;
	int			 idx;

	(void)state;
	idx = segment_slot_claim(&seg, getpid(), 4, NULL);
	assert_true(idx >= 0);
	(void)slotlog_head(&seg.slots[idx], &inc1);
	for (k = 1; k <= 3; k++)
		append(idx, k);
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc1, 2), 1);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc1), 2);
	/* Never backwards, no-op when equal. */
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc1, 1), 0);
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc1, 2), 0);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc1), 2);
	raw = atomic_load(&seg.slots[idx].log_acked);
	assert_int_equal(raw, (uint64_t)inc1 << 32 | 2);

	/* The holder goes with entry 3 pending; once it is acknowledged the
	 * slot is the first settled free one, and is claimed again. */
	segment_slot_release(&seg, idx, getpid());
	assert_false(slotlog_settled(&seg.slots[idx]));
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc1, 3), 1);
	assert_true(slotlog_settled(&seg.slots[idx]));
	assert_int_equal(segment_slot_claim(&seg, getpid(), 5, NULL), idx);
	(void)slotlog_head(&seg.slots[idx], &inc2);
	assert_int_equal(inc2, inc1 + 1);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc2), 0);
	assert_int_equal(slotlog_read(&seg.slots[idx], inc1, 3, &e), -2);
	append(idx, 7);
	check_entry(idx, inc2, 1, 7);

	/* A late ack of the old holder: nothing moves. */
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc1, 9), 0);
	assert_int_equal(atomic_load(&seg.slots[idx].log_acked), raw + 1);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc2), 0);
	/* The new holder's ack does. */
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc2, 1), 1);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc2), 1);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc1), 0);
	assert_int_equal(slotlog_ack(&seg.slots[idx], inc1, 9), 0);
	assert_int_equal(slotlog_acked(&seg.slots[idx], inc2), 1);
}

/* A child claims a slot, logs one event and exits without releasing it. */
static pid_t
dead_child(int32_t rank)
{
	pid_t	 pid;
	int	 status, idx;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		idx = segment_slot_claim(&seg, getpid(), rank, NULL);
		if (idx < 0)
			_exit(1);
		append(idx, 9);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return (pid);
}

/*
 * Claims take a free slot whose log is acknowledged first, then a free slot
 * with pending entries, then a dead process's slot, and never a live one's.
 */
static void
test_claim_preference(void **state)
{
	uint32_t	 inc;
	pid_t		 child;
	int		 i;

	(void)state;
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		assert_int_equal(segment_slot_claim(&seg, getpid(), i, NULL), i);
	/* Slot 7 taken by a process that is gone. */
	segment_slot_release(&seg, 7, getpid());
	child = dead_child(7);
	assert_int_equal(atomic_load(&seg.slots[7].pid), child);
	/* Slot 3 freed with an entry pending, slot 5 with all acknowledged. */
	append(3, 1);
	segment_slot_release(&seg, 3, getpid());
	append(5, 1);
	append(5, 2);
	(void)slotlog_head(&seg.slots[5], &inc);
	assert_int_equal(slotlog_ack(&seg.slots[5], inc, 2), 1);
	segment_slot_release(&seg, 5, getpid());

	assert_int_equal(segment_slot_claim(&seg, getpid(), 100, NULL), 5);
	assert_int_equal(segment_slot_claim(&seg, getpid(), 101, NULL), 3);
	assert_int_equal(segment_slot_claim(&seg, getpid(), 102, NULL), 7);
	assert_int_equal(seg.slots[7].rank, 102);
	assert_int_equal(segment_slot_claim(&seg, getpid(), 103, NULL),
	    SEG_ENOSLOT);
}

struct held {
	int	 n;
	int32_t	 pid_seen;	/* the dead rank's, in the copy */
	int32_t	 holder;	/* who held the slot during the callback */
};

static void
on_dead(const struct seg_slot *copy, int idx, void *arg)
{
	struct held	*h = arg;

	h->n++;
	h->pid_seen = copy->pid;
	h->holder = atomic_load(&seg.slots[idx].pid);
	/* The writer is dead: the reader may log in its place. */
	append(idx, 10);
}

/* A dead rank's slot is held by the reclaiming process while the callback
 * reads and appends to its log, then left free and GONE, its log kept. */
static void
test_reclaim_holds_slot(void **state)
{
	struct held	 h;
	uint32_t	 inc;
	pid_t		 child;

	(void)state;
	child = dead_child(4);
	assert_int_equal(atomic_load(&seg.slots[0].pid), child);
	memset(&h, 0, sizeof(h));
	assert_int_equal(segment_reclaim_dead(&seg, on_dead, &h), 1);
	assert_int_equal(h.n, 1);
	assert_int_equal(h.pid_seen, child);
	assert_int_equal(h.holder, getpid());
	assert_int_equal(atomic_load(&seg.slots[0].pid), 0);
	assert_int_equal(seg.slots[0].state, SEG_RANK_GONE);
	assert_int_equal(seg.slots[0].last_pid, child);
	assert_int_equal(slotlog_head(&seg.slots[0], &inc), 2);
	writer = child;
	check_entry(0, inc, 1, 9);
	writer = getpid();
	check_entry(0, inc, 2, 10);
	assert_false(slotlog_settled(&seg.slots[0]));
	/* Its pending entries keep it from the next claim. */
	assert_int_equal(segment_slot_claim(&seg, getpid(), 8, NULL), 1);
}

/* The longest error a callback can give: SEG_ERROR_MAX - 1 bytes. */
static int
long_error_start(void *arg, const struct dynprof_window *w,
    const struct dynprof_options *o, const char *fwopts, const char *out,
    char *err, size_t errlen)
{
	if (w->id != 1)
		return (tl_on_start(arg, w, o, fwopts, out, err, errlen));
	assert_int_equal(errlen, SEG_ERROR_MAX);
	memset(err, 'E', errlen - 1);
	err[errlen - 2] = 'z';
	err[errlen - 1] = '\0';
	return (-1);
}

/*
 * Reads the log of slot idx of s as the agent does (the root once, then each
 * entry) and finds the entry of kind and window id: its rebuilt output
 * directory into out, its text into text.
 */
static void
agent_entry(struct segment *s, int idx, uint32_t kind, uint32_t id,
    char *out, size_t outlen, char *text)
{
	struct seg_log_entry	 e;
	char			 root[SEG_PATH_MAX];
	uint32_t		 inc, head, seq;

	head = slotlog_head(&s->slots[idx], &inc);
	assert_int_equal(segment_slot_root(&s->slots[idx], inc, root,
	    sizeof(root)), 0);
	for (seq = 1; seq <= head; seq++) {
		assert_int_equal(slotlog_read(&s->slots[idx], inc, seq, &e), 0);
		if (e.kind != kind || e.window_id != id)
			continue;
		assert_int_equal(slotlog_dir(&e, root, out, outlen), 0);
		memcpy(text, e.text, sizeof(e.text));
		return;
	}
	fail_msg("no entry of kind %u for window %u", kind, id);
}

/*
 * The worst case through the real library: a long root, a 255-byte subdir,
 * the largest rank and steps.  The started and stopped events' directories
 * come back byte for byte as the library handed them to its callbacks; a
 * failed event's 255-byte error too, with no directory.
 */
static void
test_dir_roundtrip(void **state)
{
	struct dynprof_params	 p;
	struct tl_recorder	 rec;
	struct seg_config	*cfg;
	struct segment		 agent;
	dynprof_t		*h;
	char			 root[512], subdir[SEG_SUBDIR_MAX];
	char			 want[SEG_PATH_MAX], got[SEG_PATH_MAX];
	char			 text[SEG_LOG_TEXT_MAX], err[SEG_ERROR_MAX];
	int			 n;

	(void)state;
	/* Root: dir/ then a 200-byte component; subdir: 127 + "/" + 127. */
	n = snprintf(root, sizeof(root), "%s/", dir);
	memset(root + n, 'r', 200);
	root[n + 200] = '\0';
	memset(subdir, 'a', 255);
	subdir[127] = '/';
	subdir[254] = 'b';
	subdir[255] = '\0';
	assert_true(subdir_valid(subdir, NULL));
	n = snprintf(want, sizeof(want), "%s/%s/rank%d_start%lld_stop%lld",
	    root, subdir, INT_MAX, (long long)INT64_MAX - 1,
	    (long long)INT64_MAX);
	assert_true(n > 0 && (size_t)n < sizeof(want));
	/* Exactly the worst case the entry was sized for. */
	assert_int_equal(strlen(want) - strlen(root) - 1 + 1, SEG_LOG_DIR_MAX);
	assert_int_equal(SEG_LOG_DIR_MAX, SEG_LOG_TEXT_MAX);

	assert_non_null(cfg = calloc(1, sizeof(*cfg)));
	assert_int_equal(segment_open(&agent, dir, "rt", SEG_CREATE, 0600),
	    SEG_OK);
	tl_window(cfg, 0, 1, 1, 2, "");
	tl_window(cfg, 1, 2, INT64_MAX - 1, INT64_MAX, "");
	snprintf(cfg->windows[1].options.output_subdir,
	    sizeof(cfg->windows[1].options.output_subdir), "%s", subdir);
	tl_push(&agent, cfg);

	memset(&rec, 0, sizeof(rec));
	tl_params(&p, dir, "rt", INT_MAX, &rec);
	p.output_root = root;
	p.on_start = long_error_start;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_int_equal(dynprof_step_begin(h, 1), 0);
	assert_int_equal(dynprof_step_begin(h, INT64_MAX - 1), 0);
	assert_int_equal(dynprof_step_end(h, INT64_MAX), 0);
	assert_int_equal(rec.ncalls, 2);
	assert_string_equal(rec.calls[0].output_dir, want);
	assert_string_equal(rec.calls[1].output_dir, want);

	/* Started and stopped: the directory, rebuilt, byte for byte. */
	agent_entry(&agent, 0, 2, 2, got, sizeof(got), text);
	assert_string_equal(got, want);
	assert_string_equal(text, want + strlen(root) + 1);
	agent_entry(&agent, 0, 3, 2, got, sizeof(got), text);
	assert_string_equal(got, want);
	/* Failed: the whole error, no directory. */
	memset(err, 'E', sizeof(err) - 1);
	err[sizeof(err) - 2] = 'z';
	err[sizeof(err) - 1] = '\0';
	agent_entry(&agent, 0, SEG_EVENT_FAILED, 1, got, sizeof(got), text);
	assert_string_equal(got, "");
	assert_string_equal(text, err);

	dynprof_close(h);
	segment_close(&agent);
	free(cfg);
}

/*
 * The root belongs to one incarnation: a reader of an older one, or one that
 * meets a claim writing it, gets none; a root without its NUL comes back cut.
 */
static void
test_root_incarnation(void **state)
{
	struct seg_log_entry	 e;
	char			 root[SEG_PATH_MAX], out[16];
	uint32_t		 inc;
	int			 idx;

	(void)state;
	idx = segment_slot_claim(&seg, getpid(), 1, "/data/run1");
	(void)slotlog_head(&seg.slots[idx], &inc);
	assert_int_equal(segment_slot_root(&seg.slots[idx], inc, root,
	    sizeof(root)), 0);
	assert_string_equal(root, "/data/run1");
	assert_int_equal(segment_slot_root(&seg.slots[idx], inc + 1, root,
	    sizeof(root)), -1);
	assert_int_equal(segment_slot_root(&seg.slots[idx], inc, out,
	    sizeof(out)), 0);
	assert_string_equal(out, "/data/run1");
	/* Being written (a claim in progress): none. */
	atomic_store(&seg.slots[idx].root_inc, 0);
	assert_int_equal(segment_slot_root(&seg.slots[idx], inc, root,
	    sizeof(root)), -1);
	atomic_store(&seg.slots[idx].root_inc, inc);
	memset(seg.slots[idx].output_root, 'x', SEG_PATH_MAX);
	assert_int_equal(segment_slot_root(&seg.slots[idx], inc, root,
	    sizeof(root)), 0);
	assert_int_equal(strlen(root), SEG_PATH_MAX - 1);
	/* Claimed again: the new holder's root, for the new incarnation. */
	segment_slot_release(&seg, idx, getpid());
	assert_int_equal(segment_slot_claim(&seg, getpid(), 1, "/data/run2"),
	    idx);
	assert_int_equal(segment_slot_root(&seg.slots[idx], inc, root,
	    sizeof(root)), -1);
	assert_int_equal(segment_slot_root(&seg.slots[idx], inc + 1, root,
	    sizeof(root)), 0);
	assert_string_equal(root, "/data/run2");

	/* The library's side: under the root or not, never past the text. */
	memset(&e, 0, sizeof(e));
	e.kind = 2;
	assert_int_equal(slotlog_set_dir(&e, "/data/run2", "/data/run2/x/y"),
	    0);
	assert_string_equal(e.text, "x/y");
	assert_int_equal(slotlog_dir(&e, "/data/run2", root, sizeof(root)), 0);
	assert_string_equal(root, "/data/run2/x/y");
	assert_int_equal(slotlog_dir(&e, "/data/run2", out, 8), -1);
	assert_string_equal(out, "/data/r");
	assert_int_equal(slotlog_set_dir(&e, "/data/run2", "/data/run22/x"),
	    -1);
	assert_string_equal(e.text, "/data/run22/x");
	assert_int_equal(slotlog_set_dir(&e, "/data/run2", ""), 0);
	assert_string_equal(e.text, "");
	assert_int_equal(slotlog_dir(&e, "/data/run2", root, sizeof(root)), 0);
	assert_string_equal(root, "");
	memset(root, 'd', SEG_PATH_MAX);
	memcpy(root, "/data/run2/", 11);
	root[SEG_PATH_MAX - 1] = '\0';
	assert_int_equal(slotlog_set_dir(&e, "/data/run2", root), -1);
	assert_int_equal(strlen(e.text), SEG_LOG_TEXT_MAX - 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_append_read, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_wrap_around, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_overflow_counted, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_cursor_incarnation, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_claim_preference, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_reclaim_holds_slot, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_dir_roundtrip, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_root_incarnation, setup,
		    teardown),
	};

	return (cmocka_run_group_tests_name("slotlog", tests, NULL, NULL));
}
