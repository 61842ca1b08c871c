/*
 * The library's handle around the window rules, through the real library and
 * a real segment (support/libfixture.c): the hot path's state, a failure
 * reported by the trainer, the exit handler, a slot taken from a live rank,
 * job and rank from the environment, and the arguments it refuses.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "libfixture.h"

/* No change and nothing due: the step touches only the slot's step. */
static void
test_hot_path_state(void **state)
{
	struct lib_fixture		*f = *state;
	struct dynprof_fast_state fs;
	struct dynprof_stats	 st;
	uint64_t		 reads;

	tl_window(&f->cfg, 0, 1, 1000, 1001, "");
	lf_push(f);
	lf_open_rank(f, 0);
	dynprof_get_stats(f->h, &st);
	reads = st.config_reads;
	assert_int_equal(reads, 1);		/* read at open */
	lf_steps(f, 1, 500);
	dynprof_get_stats(f->h, &st);
	assert_int_equal(st.config_reads, reads);
	dynprof_get_fast_state(f->h, &fs);
	assert_int_equal(fs.seq_addr, (uintptr_t)&f->agent.hdr->seq -
	    (uintptr_t)f->agent.hdr + (uintptr_t)f->h->seg.hdr);
	assert_int_equal(fs.seq_seen, atomic_load(&f->agent.hdr->seq));
	assert_int_equal(fs.next_due, 1000);
	assert_int_equal(*(int64_t *)fs.step_addr, 500);
	/* The binding's own fast path: store the step, no library call. */
	*(volatile int64_t *)fs.step_addr = 501;
	assert_int_equal(lf_slot_of(f).step, 501);
	assert_int_equal(dynprof_current_step(f->h), 501);
	/* A new config: the next step reloads it once. */
	lf_push(f);
	lf_steps(f, 502, 503);
	dynprof_get_stats(f->h, &st);
	assert_int_equal(st.config_reads, reads + 1);
	dynprof_get_fast_state(f->h, &fs);
	assert_int_equal(fs.seq_seen, atomic_load(&f->agent.hdr->seq));
	/* Nothing left for the rank: nothing is due. */
	f->cfg.nwindows = 0;
	lf_push(f);
	lf_steps(f, 504, 504);
	dynprof_get_fast_state(f->h, &fs);
	assert_int_equal(fs.next_due, INT64_MAX);
}

/* dynprof_report_failure ends the window in progress as failed. */
static void
test_report_failure(void **state)
{
	struct lib_fixture		*f = *state;
	struct dynprof_window	 w;
	struct seg_slot		 s;

	tl_window(&f->cfg, 0, 1, 2, 9, "");
	lf_push(f);
	lf_open_rank(f, 0);
	lf_steps(f, 1, 3);
	assert_int_equal(dynprof_active_window(f->h, &w), 1);
	assert_int_equal(w.id, 1);
	assert_int_equal(w.stop_step, 9);
	assert_int_equal(dynprof_report_failure(f->h, "device lost"), 0);
	assert_int_equal(dynprof_active_window(f->h, &w), 0);
	assert_int_equal(dynprof_state(f->h), DYNPROF_RANK_FAILED);
	s = lf_slot_of(f);
	assert_string_equal(s.error, "device lost");
	assert_int_equal(s.window_id, 1);
	lf_steps(f, 4, 12);
	assert_int_equal(f->rec.ncalls, 1);	/* no stop for a failed one */
	assert_int_equal(dynprof_report_failure(NULL, "x"), DYNPROF_EINVAL);
}

/* The process exits inside a window without closing: the window is stopped
 * (reason closed) and the slot freed, by the library's exit handler. */
static void
test_exit_stops_window(void **state)
{
	struct lib_fixture	*f = *state;
	struct seg_slot	 s;
	pid_t		 pid;
	int		 status, i, found = 0;

	tl_window(&f->cfg, 0, 1, 2, 100, "");
	lf_push(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		lf_open_rank(f, 7);
		lf_steps(f, 1, 3);
		exit(f->rec.ncalls == 1 ? 0 : 3);	/* no close */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < SEG_MAX_SLOTS; i++) {
		assert_int_equal(segment_slot_read(&f->agent, i, &s), SEG_OK);
		if (s.rank != 7)
			continue;
		found = 1;
		assert_int_equal(s.pid, 0);
		assert_int_equal(s.state, SEG_RANK_GONE);
		assert_int_equal(s.last_event, EVENT_STOPPED);
		assert_int_equal(s.window_id, 1);
		assert_int_equal(s.reason, DYNPROF_STOP_CLOSED);
		assert_int_equal(s.event_step, 3);
	}
	assert_true(found);
}

/*
 * Rank 4 runs into window 1 [3, 20] and is at step 5; then its slot is taken
 * from it: the agent acknowledges its two events (attached, started) and frees
 * it, and a newcomer claims it (claims prefer free slots whose log is
 * acknowledged).  Returns the slot's index.
 */
static int
slot_taken_in_window(struct lib_fixture *f)
{
	uint32_t	 inc, head;
	int		 old;

	tl_window(&f->cfg, 0, 1, 3, 20, "");
	lf_push(f);
	lf_open_rank(f, 4);
	lf_steps(f, 1, 5);
	old = f->h->slot_index;
	head = slotlog_head(&f->agent.slots[old], &inc);
	assert_int_equal(head, 2);
	assert_int_equal(slotlog_ack(&f->agent.slots[old], inc, head), 1);
	atomic_store(&f->agent.slots[old].pid, 0);
	assert_int_equal(segment_slot_claim(&f->agent, getpid() + 100000, 9,
	    NULL),
	    old);
	return (old);
}

/* A slot taken from a live rank (an agent in another pid namespace thought it
 * dead): the rank claims a slot again at its next slow step. */
static void
test_slot_taken(void **state)
{
	struct lib_fixture	*f = *state;
	struct seg_slot	 s;
	int		 old;

	old = slot_taken_in_window(f);
	lf_push(f);
	lf_steps(f, 6, 6);
	assert_int_not_equal(f->h->slot_index, old);
	s = lf_slot_of(f);
	assert_int_equal(s.pid, getpid());
	assert_int_equal(s.rank, 4);
	assert_int_equal(s.step, 6);
	assert_int_equal(s.state, SEG_RANK_PROFILING);
	assert_true(tl_logged(&f->rec, "was taken from pid"));
	/* The newcomer's slot is left alone. */
	assert_int_equal(segment_slot_read(&f->agent, old, &s), SEG_OK);
	assert_int_equal(s.rank, 9);
	assert_int_equal(s.step, -1);
}

/*
 * A rank whose slot was taken while it was inside a window and that closes
 * before its next slow step: its stopped and detached events must not land in
 * the log of the slot's new holder.
 */
static void
test_slot_taken_close(void **state)
{
	struct lib_fixture	*f = *state;
	uint32_t	 inc;
	int		 old;

	old = slot_taken_in_window(f);
	dynprof_close(f->h);
	f->h = NULL;
	assert_int_equal(slotlog_head(&f->agent.slots[old], &inc), 0);
	assert_int_equal(atomic_load(&f->agent.slots[old].pid),
	    getpid() + 100000);
}

/* Job and rank from the environment; invalid values refused clearly. */
static void
test_environment(void **state)
{
	struct lib_fixture		*f = *state;
	struct dynprof_params	 p;
	struct stat		 st;
	char			 path[4096];
	dynprof_t		*h;

	setenv("DYNPROF_SHM_DIR", f->dir, 1);
	setenv("DYNPROF_AGENT_SOCKET", "/nonexistent/agent.sock", 1);
	setenv("DYNPROF_OUTPUT_ROOT", "rel/out", 1);
	setenv("SLURM_JOB_ID", "36199_0", 1);
	setenv("SLURM_PROCID", "12", 1);
	setenv("DYNPROF_SHM_MODE", "0640", 1);
	dynprof_params_init(&p);
	assert_int_equal(p.version, DYNPROF_PARAMS_VERSION);
	assert_int_equal(p.rank, -1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(dynprof_job(h), "36199_0");
	assert_int_equal(dynprof_rank(h), 12);
	assert_int_equal(dynprof_current_step(h), -1);
	assert_true(h->output_root[0] == '/');
	assert_non_null(strstr(h->output_root, "/rel/out"));
	snprintf(path, sizeof(path), "%s/dynprof.36199_0", f->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	dynprof_close(h);

	/* DYNPROF_JOB wins over SLURM_JOB_ID, RANK over SLURM_PROCID. */
	setenv("DYNPROF_JOB", "mine", 1);
	setenv("RANK", "3", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(dynprof_job(h), "mine");
	assert_int_equal(dynprof_rank(h), 3);
	dynprof_close(h);

	setenv("DYNPROF_JOB", "../etc", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EJOB);
	assert_null(h);
	setenv("DYNPROF_JOB", "mine", 1);
	setenv("RANK", "abc", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	setenv("RANK", "3", 1);
	setenv("DYNPROF_SHM_MODE", "999", 1);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	unsetenv("DYNPROF_SHM_MODE");

	/* Nothing set at all: job "default", rank 0. */
	unsetenv("DYNPROF_JOB");
	unsetenv("SLURM_JOB_ID");
	unsetenv("RANK");
	unsetenv("SLURM_PROCID");
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(dynprof_job(h), "default");
	assert_int_equal(dynprof_rank(h), 0);
	dynprof_close(h);
	unsetenv("DYNPROF_SHM_DIR");
	unsetenv("DYNPROF_AGENT_SOCKET");
	unsetenv("DYNPROF_OUTPUT_ROOT");
}

/*
 * Labels: given in the params or DYNPROF_LABELS (the params win), written to
 * the rank's slot in canonical form; bad ones fail the open and take no slot;
 * a version 1 caller's params (no labels field) still open.
 */
static void
test_labels(void **state)
{
	struct lib_fixture	*f = *state;
	struct dynprof_params	 p;
	struct {
		struct dynprof_params	 p;	/* labels past version 1's end */
	} v1;
	dynprof_t		*h;
	int			 i;

	tl_params(&p, f->dir, "job", 0, &f->rec);
	p.labels = " tp=1, pp=3,dp=12";
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(f->agent.slots[h->slot_index].labels,
	    "dp=12,pp=3,tp=1");
	dynprof_close(h);

	setenv("DYNPROF_LABELS", "node=n-117", 1);
	tl_params(&p, f->dir, "job", 1, &f->rec);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(f->agent.slots[h->slot_index].labels,
	    "node=n-117");
	dynprof_close(h);
	p.labels = "pp=0";
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_OK);
	assert_string_equal(f->agent.slots[h->slot_index].labels, "pp=0");
	dynprof_close(h);

	setenv("DYNPROF_LABELS", "pp=3;tp=1", 1);
	tl_params(&p, f->dir, "job", 2, &f->rec);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	assert_null(h);
	unsetenv("DYNPROF_LABELS");
	p.labels = "pp=3,pp=4";
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		assert_int_equal(atomic_load(&f->agent.slots[i].pid), 0);

	/* Version 1: labels is not read even if garbage follows. */
	tl_params(&v1.p, f->dir, "job", 3, &f->rec);
	v1.p.version = 1;
	v1.p.labels = "not=,valid";
	assert_int_equal(dynprof_open(&v1.p, &h), DYNPROF_OK);
	assert_string_equal(f->agent.slots[h->slot_index].labels, "");
	dynprof_close(h);
}

static void
test_bad_arguments(void **state)
{
	struct lib_fixture		*f = *state;
	struct dynprof_params	 p;
	char			 longsock[300];
	dynprof_t		*h;
	int			 i;

	assert_int_equal(dynprof_open(NULL, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	assert_int_equal(dynprof_open(&p, NULL), DYNPROF_EINVAL);
	p.version = 99;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", -5, &f->rec);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	p.shm_mode = 01777;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EINVAL);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	memset(longsock, 'a', sizeof(longsock) - 1);
	longsock[0] = '/';
	longsock[sizeof(longsock) - 1] = '\0';
	p.agent_socket = longsock;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EPATH);
	/* The failed opens left no slot taken. */
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		assert_int_equal(atomic_load(&f->agent.slots[i].pid), 0);

	assert_int_equal(dynprof_step_begin(NULL, 1), DYNPROF_EINVAL);
	assert_int_equal(dynprof_step_end(NULL, 1), DYNPROF_EINVAL);
	assert_int_equal(dynprof_step(NULL), DYNPROF_EINVAL);
	assert_int_equal(dynprof_state(NULL), DYNPROF_EINVAL);
	assert_null(dynprof_job(NULL));
	dynprof_close(NULL);
	assert_string_equal(dynprof_version(), "0.1.0");
	for (i = 0; i >= DYNPROF_EOWNER; i--)
		assert_string_not_equal(dynprof_strerror(i), "unknown error");

	/* A segment every slot of which a live process holds. */
	for (i = 0; i < SEG_MAX_SLOTS; i++)
		assert_int_equal(segment_slot_claim(&f->agent, getpid(), i,
		    NULL), i);
	tl_params(&p, f->dir, "job", 0, &f->rec);
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_ENOSLOT);
	/* A segment of another layout. */
	f->agent.hdr->version = SEG_VERSION + 1;
	assert_int_equal(dynprof_open(&p, &h), DYNPROF_EVERSION);
	f->agent.hdr->version = SEG_VERSION;
}

/*
 * The arrivals' stride settles where the ring spans 2 s, no further: steps of
 * 1.5 ms at least (a sleep's) span 3 s at a stride of 64 (2^6), which it never
 * passes.  The ring was judged at every kept arrival, its older entries
 * (closer together) growing the stride again each time: 2^9 and more in 3 s.
 */
static void
test_arrive_stride(void **state)
{
	struct lib_fixture	*f = *state;
	struct timespec		 ts = { 0, 1500000 }, t0, t;
	int64_t			 s;

	lf_push(f);
	lf_open_rank(f, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (s = 1, t = t0; s <= 4000 && t.tv_sec - t0.tv_sec < 4; s++) {
		assert_int_equal(dynprof_step_begin(f->h, s), DYNPROF_OK);
		nanosleep(&ts, NULL);
		assert_int_equal(dynprof_mark_comm(f->h), DYNPROF_OK);
		assert_int_equal(dynprof_step_end(f->h, s), DYNPROF_OK);
		assert_true(f->h->arrive_shift <= 6);
		clock_gettime(CLOCK_MONOTONIC, &t);
	}
	/* It grew at all: 32 arrivals of 1.5 ms span 48 ms. */
	assert_true(f->h->arrive_shift >= 1);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, lf_setup, lf_teardown)
	const struct CMUnitTest tests[] = {
		T(test_hot_path_state),
		T(test_report_failure),
		T(test_exit_stops_window),
		T(test_slot_taken),
		T(test_slot_taken_close),
		T(test_environment),
		T(test_labels),
		T(test_bad_arguments),
		T(test_arrive_stride),
	};
#undef T

	return (cmocka_run_group_tests_name("lib_handle", tests, NULL, NULL));
}
