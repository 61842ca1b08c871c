/*
 * A segment must never kill or mislead a rank or the agent (docs/segments.md):
 * header fields changed after the check, stale segments at a job's name, and a
 * segment truncated under the agent.  The real agent, real ranks (rankproc)
 * and real files; the ownership and full-tmpfs cases, which need root, are in
 * test_segsafe_root.c.
 */

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dynprof.h"
#include "linklib.h"
#include "segment.h"

#define T_WAIT	10000

struct t {
	struct linktest		 lt;
	char			 liblog[8192];	/* the library's log callback */
};

/* The agent, a fake coordinator, rank paths (lt_init()), and a log buffer. */
static int
setup(void **state)
{
	struct t	*t = calloc(1, sizeof(*t));

	if (t == NULL || lt_init(&t->lt) == -1)
		return (-1);
	lt_ranks(&t->lt);
	*state = t;
	return (0);
}

static int
teardown(void **state)
{
	struct t	*t = *state;

	lt_cleanup(&t->lt);
	free(t);
	return (0);
}

static pid_t
start_rank(struct t *t, const char *job)
{
	const char	*argv[] = { t->lt.rankbin, job, "0", "0", "5",
	    t->lt.ranklog, NULL };
	pid_t		 pid;

	pid = ap_spawn(&t->lt.ap, argv);
	assert_true(pid > 0);
	return (pid);
}

/* Waits for the event of kind from pid; fails the test on a garbage one. */
static void
expect_event(struct t *t, int kind, pid_t pid)
{
	Dynprof__V1__AgentMessage *m;
	int64_t	 deadline = ap_now_ms() + T_WAIT;

	while (ap_now_ms() < deadline) {
		m = fc_expect(&t->lt.fc, DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT,
		    (int)(deadline - ap_now_ms()));
		if (m == NULL)
			break;
		assert_true(m->event->event->slot < SEG_MAX_SLOTS);
		if ((int)m->event->event->kind == kind &&
		    m->event->event->pid == pid) {
			dynprof__v1__agent_message__free_unpacked(m, NULL);
			return;
		}
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	fail_msg("no event of kind %d from pid %d", kind, (int)pid);
}

/*
 * Starts the agent connected (sample interval ms), then a rank of job, and
 * waits for its attach.  Returns the rank's pid.
 */
static pid_t
start_attached(struct t *t, const char *ms, const char *job)
{
	pid_t	 rank;

	assert_int_equal(ap_start_connected(&t->lt.ap, &t->lt.fc, ms, T_WAIT),
	    0);
	rank = start_rank(t, job);
	expect_event(t, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, rank);
	return (rank);
}

/* Whether the agent still runs. */
static int
agent_alive(struct t *t)
{
	int	 status;

	if (waitpid(t->lt.ap.pid, &status, WNOHANG) == t->lt.ap.pid) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "agent killed by signal %d\n",
			    WTERMSIG(status));
		t->lt.ap.pid = 0;
		return (0);
	}
	return (1);
}

/* Sends, as pid (this process), an event naming slot of job. */
static void
send_slot_event(struct t *t, const char *job, uint32_t slot)
{
	Dynprof__V1__RankEvent	 ev = DYNPROF__V1__RANK_EVENT__INIT;

	ev.kind = DYNPROF__V1__EVENT_KIND__EVENT_STARTED;
	ev.job = (char *)job;
	ev.rank = 0;
	ev.pid = getpid();
	ev.slot = slot;
	ev.window_id = 7;
	ev.output_dir = (char *)"";
	ev.error = (char *)"";
	assert_int_equal(ap_send_event(&t->lt.ap, &ev), 0);
}

/* Maps the segment file of job read-write, unchecked, whatever its size. */
static void *
map_raw(struct t *t, const char *job, size_t *lenp)
{
	char		 path[512];
	struct stat	 st;
	void		*p;
	int		 fd;

	snprintf(path, sizeof(path), "%s/dynprof.%s", t->lt.ap.shm, job);
	assert_true((fd = open(path, O_RDWR)) != -1);
	assert_int_equal(fstat(fd, &st), 0);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	*lenp = (size_t)st.st_size;
	return (p);
}

/*
 * The header's sizes overwritten in a live segment while the agent samples it
 * and takes datagrams: the agent uses the sizes it checked, drops events that
 * name slots beyond them, forwards nothing garbage and keeps running.
 */
static void
test_header_changed(void **state)
{
	struct t		*t = *state;
	Dynprof__V1__AgentMessage *m;
	struct seg_header	*hdr;
	size_t			 len;
	int64_t			 deadline;
	pid_t			 rank;
	int			 i;

	rank = start_attached(t, "20", "jh");

	hdr = map_raw(t, "jh", &len);
	hdr->nslots = 0x7fffffff;
	hdr->slots_offset = 0x7fffffc0;
	hdr->config_offset = 0x7ffffff8;
	hdr->segment_size = UINT64_MAX / 2;
	hdr->slot_size = 1;
	hdr->header_size = 0xffffffff;

	/* Slots past the real table, and far past the mapping. */
	send_slot_event(t, "jh", SEG_MAX_SLOTS);
	send_slot_event(t, "jh", 100000);
	send_slot_event(t, "jh", 0x7ffffff0);
	assert_int_equal(ap_log_wait(&t->lt.ap, "does not hold slot 2147483632",
	    1, T_WAIT), 0);
	assert_true(agent_alive(t));

	/* It samples on: progress names the one rank, at sane slots only. */
	deadline = ap_now_ms() + 1000;
	while (ap_now_ms() < deadline) {
		m = fc_recv(&t->lt.fc, 200);
		if (m == NULL)
			continue;
		if (m->body_case == DYNPROF__V1__AGENT_MESSAGE__BODY_PROGRESS)
			assert_true(m->progress->n_ranks <= 1);
		if (m->body_case == DYNPROF__V1__AGENT_MESSAGE__BODY_EVENT)
			assert_true(m->event->event->slot < SEG_MAX_SLOTS &&
			    m->event->event->pid == rank);
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	/* A config is written at the offset checked at open. */
	assert_int_equal(fc_push(&t->lt.fc, "jh", 1, 1, 1000000, 1000001), 0);
	m = fc_expect(&t->lt.fc, DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED,
	    T_WAIT);
	assert_non_null(m);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	for (i = 0; i < 3; i++)
		assert_true(agent_alive(t));
	assert_int_equal(atomic_load(&hdr->generation), 1);
	munmap(hdr, len);
}

static void
liblog_cb(void *arg, enum dynprof_log_level level, const char *msg)
{
	struct t	*t = arg;
	size_t		 n = strlen(t->liblog);

	(void)level;
	snprintf(t->liblog + n, sizeof(t->liblog) - n, "%s\n", msg);
}

/* dynprof_open() of job in the test's shm dir, logging into t->liblog. */
static int
lib_open(struct t *t, const char *job, dynprof_t **h)
{
	struct dynprof_params	 p;

	linklib_params(&p, &t->lt, job, liblog_cb, t);
	t->liblog[0] = '\0';
	return (dynprof_open(&p, h));
}

/* Writes len bytes at path (replacing it). */
static void
write_file(const char *path, const void *buf, size_t len)
{
	int	 fd;

	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) != -1);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

/* A valid segment's bytes with its version set to version. */
static void *
old_segment(struct t *t, uint32_t version, size_t *lenp)
{
	struct segment	 seg;
	void		*buf;

	assert_int_equal(segment_open(&seg, t->lt.ap.shm, "tmpl", SEG_CREATE,
	    0600), SEG_OK);
	assert_non_null(buf = malloc(seg.size));
	memcpy(buf, seg.hdr, seg.size);
	((struct seg_header *)buf)->version = version;
	*lenp = seg.size;
	segment_close(&seg);
	assert_int_equal(segment_unlink(t->lt.ap.shm, "tmpl"), SEG_OK);
	return (buf);
}

/* Opens job with the library: the stale file must have been replaced. */
static void
expect_replaced(struct t *t, const char *job, const char *what)
{
	struct segment	 seg;
	dynprof_t	*h;
	char		 path[512];
	struct stat	 st;

	assert_int_equal(lib_open(t, job, &h), DYNPROF_OK);
	if (strstr(t->liblog, "replaced the stale segment") == NULL ||
	    strstr(t->liblog, what) == NULL)
		fail_msg("log: %s", t->liblog);
	assert_int_equal(segment_open(&seg, t->lt.ap.shm, job, 0, 0), SEG_OK);
	assert_int_equal(seg.nslots, SEG_MAX_SLOTS);
	segment_close(&seg);
	dynprof_close(h);
	/* No temporary file left. */
	snprintf(path, sizeof(path), "%s/.dynprof.%s.%ld", t->lt.ap.shm, job,
	    (long)getpid());
	assert_int_equal(stat(path, &st), -1);
}

/*
 * A stale segment at a job's name (garbage, an older layout, a wrong size) that
 * no live process maps is replaced when a rank opens the job; one that a live
 * process maps is left alone and the rank is refused with the reason.
 */
static void
test_stale_replaced(void **state)
{
	struct t	*t = *state;
	char		 path[512], garbage[4096];
	void		*old;
	size_t		 len;
	struct stat	 before, after;
	dynprof_t	*h;
	pid_t		 holder;
	int		 fd, status, pfd[2];
	char		 c;

	memset(garbage, 0x5a, sizeof(garbage));
	snprintf(path, sizeof(path), "%s/dynprof.sg", t->lt.ap.shm);
	write_file(path, garbage, sizeof(garbage));
	expect_replaced(t, "sg", "bad magic");

	old = old_segment(t, 1, &len);
	snprintf(path, sizeof(path), "%s/dynprof.so", t->lt.ap.shm);
	write_file(path, old, len);
	expect_replaced(t, "so", "another layout version");

	snprintf(path, sizeof(path), "%s/dynprof.ss", t->lt.ap.shm);
	((struct seg_header *)old)->version = SEG_VERSION;
	write_file(path, old, 8192);
	expect_replaced(t, "ss", "truncated");

	/* Not a file: refused at once, never replaced, nobody stalls. */
	snprintf(path, sizeof(path), "%s/dynprof.sf", t->lt.ap.shm);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(lib_open(t, "sf", &h), DYNPROF_EMAGIC);
	if (strstr(t->liblog, "not replaced: it is not a regular file") == NULL)
		fail_msg("log: %s", t->liblog);
	assert_int_equal(stat(path, &after), 0);
	assert_true(S_ISFIFO(after.st_mode));

	/* An old-version segment a live process maps: not replaced. */
	snprintf(path, sizeof(path), "%s/dynprof.sm", t->lt.ap.shm);
	((struct seg_header *)old)->version = 1;
	write_file(path, old, len);
	assert_int_equal(pipe(pfd), 0);
	if ((holder = fork()) == 0) {
		void	*p;

		close(pfd[0]);
		fd = open(path, O_RDONLY);
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (p == MAP_FAILED)
			_exit(1);
		if (write(pfd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pfd[1]);
	assert_int_equal(read(pfd[0], &c, 1), 1);
	close(pfd[0]);
	assert_int_equal(stat(path, &before), 0);
	assert_int_equal(lib_open(t, "sm", &h), DYNPROF_EVERSION);
	if (strstr(t->liblog, "not replaced: a live process maps it") == NULL)
		fail_msg("log: %s", t->liblog);
	assert_int_equal(stat(path, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(after.st_size, len);
	kill(holder, SIGKILL);
	assert_int_equal(waitpid(holder, &status, 0), holder);
	/* Once nobody maps it, it goes. */
	expect_replaced(t, "sm", "another layout version");
	free(old);
}

/*
 * Eight ranks start at once on a stale segment: one replaces it, the others
 * open that one, and all eight hold slots in the same new segment.
 */
static void
test_stale_race(void **state)
{
	struct t	*t = *state;
	struct segment	 seg;
	char		 path[512], garbage[8192], c;
	pid_t		 kids[8];
	dynprof_t	*h;
	uint32_t	 i;
	int		 k, n = 0, pfd[2];

	memset(garbage, 0x77, sizeof(garbage));
	snprintf(path, sizeof(path), "%s/dynprof.sr", t->lt.ap.shm);
	write_file(path, garbage, sizeof(garbage));
	assert_int_equal(pipe(pfd), 0);
	for (k = 0; k < 8; k++) {
		if ((kids[k] = fork()) == 0) {
			close(pfd[0]);
			c = lib_open(t, "sr", &h) == DYNPROF_OK ? 'y' : 'n';
			if (write(pfd[1], &c, 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		assert_true(kids[k] > 0);
	}
	close(pfd[1]);
	for (k = 0; k < 8; k++) {
		assert_int_equal(read(pfd[0], &c, 1), 1);
		assert_int_equal(c, 'y');
	}
	close(pfd[0]);
	assert_int_equal(segment_open(&seg, t->lt.ap.shm, "sr", 0, 0), SEG_OK);
	for (i = 0; i < seg.nslots; i++)
		for (k = 0; k < 8; k++)
			if (atomic_load(&seg.slots[i].pid) == kids[k])
				n++;
	segment_close(&seg);
	for (k = 0; k < 8; k++) {
		kill(kids[k], SIGKILL);
		waitpid(kids[k], NULL, 0);
	}
	assert_int_equal(n, 8);
}

/*
 * A segment truncated under the agent: a datagram's slot check touches a page
 * past the new end (the sampler is slow here, so the fstat check cannot come
 * first): the guard catches the SIGBUS, the job is dropped, the agent carries
 * on and serves the job again once a rank made a good segment.
 */
static void
test_truncated_guard(void **state)
{
	struct t	*t = *state;
	char		 path[512];
	pid_t		 rank, rank2;

	rank = start_attached(t, "600000", "jt");
	/* The rank would die touching its slot: stop it first. */
	assert_int_equal(kill(rank, SIGSTOP), 0);

	snprintf(path, sizeof(path), "%s/dynprof.jt", t->lt.ap.shm);
	assert_int_equal(truncate(path, 4096), 0);
	send_slot_event(t, "jt", 100);
	assert_int_equal(ap_log_wait(&t->lt.ap, "dropped: SIGBUS", 1, T_WAIT),
	    0);
	assert_true(agent_alive(t));
	assert_true(ap_kill_child(&t->lt.ap, rank, SIGKILL, T_WAIT) != -1);

	/* A new rank replaces the truncated file; the agent serves it. */
	rank2 = start_rank(t, "jt");
	expect_event(t, DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED, rank2);
	assert_true(agent_alive(t));
}

/*
 * The same with the sampler running often: the file shrank, the sampler sees
 * it (fstat, or the guard if the truncation lands inside a sample), drops the
 * job and carries on; a config pushed then makes a good segment again.
 */
static void
test_truncated_sampler(void **state)
{
	struct t	*t = *state;
	Dynprof__V1__AgentMessage *m;
	char		 path[512];
	pid_t		 rank;
	int		 i;

	rank = start_attached(t, "10", "ju");
	snprintf(path, sizeof(path), "%s/dynprof.ju", t->lt.ap.shm);
	assert_int_equal(truncate(path, 4096), 0);
	assert_int_equal(ap_log_wait(&t->lt.ap, "job ju: segment", 1, T_WAIT),
	    0);
	assert_true(ap_log_count(&t->lt.ap, "dropped: the file shrank") +
	    ap_log_count(&t->lt.ap, "dropped: SIGBUS") == 1);
	for (i = 0; i < 3; i++) {
		usleep(20000);
		assert_true(agent_alive(t));
	}
	/* The rank died touching its slot (docs/segments.md says who can). */
	assert_true(ap_kill_child(&t->lt.ap, rank, SIGKILL, T_WAIT) != -1);
	/* The agent replaces the truncated file for a config. */
	assert_int_equal(fc_push(&t->lt.fc, "ju", 1, 1, 10, 20), 0);
	m = fc_expect(&t->lt.fc, DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED,
	    T_WAIT);
	assert_non_null(m);
	assert_string_equal(m->applied->job, "ju");
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	assert_int_equal(ap_log_wait(&t->lt.ap, "replaced the stale segment", 1,
	    T_WAIT), 0);
	assert_true(agent_alive(t));
}

/* A SIGBUS that is not a fault in a segment mapping: the default action. */
static void
test_other_sigbus(void **state)
{
	struct t	*t = *state;
	int		 status;

	assert_int_equal(ap_start_connected(&t->lt.ap, &t->lt.fc, "50",
	    T_WAIT), 0);
	status = ap_stop(&t->lt.ap, SIGBUS, T_WAIT);
	assert_true(status != -1 && WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_header_changed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_stale_replaced, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_stale_race, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_truncated_guard, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_truncated_sampler, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_other_sigbus, setup,
		    teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
