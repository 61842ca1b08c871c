/*
 * What dynprof_step_begin + dynprof_step_end cost a training step when the
 * segment is live (a schedule is loaded, with a window far ahead) and no window
 * is due: the hot path every step of every rank takes.
 *
 *	step_cost [-n STEPS] [-r RUNS]	time RUNS runs of STEPS steps (default
 *					10,000,000 x 11): each run's ns/step,
 *					then median, min and max
 *	step_cost -s STEPS		open, run STEPS steps, close: run
 *					under strace, the system calls between
 *					the two markers (write(-1, "dynprof-
 *					hot-loop-begin"/"-end")) are the hot
 *					loop's
 *	step_cost -c READS		READS clock reads (CLOCK_MONOTONIC)
 *					between the same markers: whether
 *					this machine reads its clock without
 *					a system call (the vDSO), as marks do
 *	step_cost -m ...		the same with dynprof_mark_comm() in
 *					every step; timed, it prints beside it
 *					the floor of an empty library call
 *					(dynprof_rank()) and the step without
 *					marks, of the same run
 *	step_cost -p ...		dynprof_poll() instead of steps (a
 *					time window far ahead in the schedule
 *					besides the window of steps), timed
 *					beside the floor and the step as -m
 *
 * The binary links libdynprof.so like a trainer (calls through the PLT), and
 * writes the schedule into the segment as the agent does.  The segment is of a
 * job name unique to the run, in a directory of its own under
 * /dev/shm, both removed at the end.
 */

#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynprof.h"
#include "segment.h"

struct bench {
	char		 job[64];
	char		 root[256];
	char		 sock[108];
	char		 dir[64];	/* the run's own segment directory */
	int		 sockfd;
	struct segment	 agent;
	dynprof_t	*h;
};

/*
 * The agent's socket, bound where the library sends its events: a rank an
 * agent served keeps its segment at close, without looking through every
 * process's mappings (which would count their number of system calls).
 */
static void
bench_socket(struct bench *b)
{
	struct sockaddr_un	 sun;

	snprintf(b->sock, sizeof(b->sock), "/tmp/dynprof-bench-%ld.sock",
	    (long)getpid());
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", b->sock);
	(void)unlink(b->sock);
	if ((b->sockfd = socket(AF_UNIX, SOCK_DGRAM, 0)) == -1 ||
	    bind(b->sockfd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		fprintf(stderr, "step_cost: socket %s: %s\n", b->sock,
		    strerror(errno));
		if (b->sockfd != -1)
			close(b->sockfd);
		b->sockfd = -1;
		snprintf(b->sock, sizeof(b->sock), "/nonexistent/bench.sock");
	}
}

/* Undoes what bench_open() made: the agent's socket, segment, directory. */
static void
bench_unmake(struct bench *b)
{
	if (b->sockfd != -1) {
		close(b->sockfd);
		(void)unlink(b->sock);
	}
	segment_close(&b->agent);
	segment_unlink(b->dir, b->job);
	(void)rmdir(b->dir);
}

static double
now_ns(clockid_t clock)
{
	struct timespec	 ts;

	clock_gettime(clock, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
}

static int
bench_open(struct bench *b)
{
	static struct seg_config cfg;
	struct dynprof_params	 p;
	int			 rc;

	snprintf(b->job, sizeof(b->job), "bench-step-%ld", (long)getpid());
	snprintf(b->root, sizeof(b->root), "/tmp/dynprof-bench-%ld",
	    (long)getpid());
	/*
	 * A directory of the run's own, that no other process (a test beside
	 * it in the same user's directory) makes the opening wait for.
	 */
	snprintf(b->dir, sizeof(b->dir), "/dev/shm/dynprof-bench-XXXXXX");
	if (mkdtemp(b->dir) == NULL) {
		fprintf(stderr, "step_cost: %s: %s\n", b->dir, strerror(errno));
		return (-1);
	}
	rc = segment_open(&b->agent, b->dir, b->job, SEG_CREATE, 0600);
	if (rc != SEG_OK) {
		fprintf(stderr, "step_cost: segment: %s\n",
		    segment_strerror(rc));
		(void)rmdir(b->dir);
		return (-1);
	}
	/* A live schedule: one window, far ahead of every step we run. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.generation = 1;
	cfg.nwindows = 1;
	cfg.windows[0].id = 1;
	cfg.windows[0].start_step = INT64_C(1) << 60;
	cfg.windows[0].stop_step = (INT64_C(1) << 60) + 10;
	/* And a time window a year ahead, which polls look at (-p). */
	cfg.nwindows = 2;
	cfg.windows[1].id = 2;
	cfg.windows[1].start_ns = (int64_t)now_ns(CLOCK_MONOTONIC) +
	    INT64_C(365) * 86400 * 1000000000;
	cfg.windows[1].stop_ns = cfg.windows[1].start_ns + 1000000000;
	segment_write_config(&b->agent, &cfg);

	dynprof_params_init(&p);
	p.job = b->job;
	p.rank = 0;
	p.output_root = b->root;
	p.shm_dir = b->dir;
	bench_socket(b);
	p.agent_socket = b->sock;
	if ((rc = dynprof_open(&p, &b->h)) != DYNPROF_OK) {
		fprintf(stderr, "step_cost: open: %s\n", dynprof_strerror(rc));
		bench_unmake(b);
		return (-1);
	}
	return (0);
}

static void
bench_close(struct bench *b)
{
	dynprof_close(b->h);
	bench_unmake(b);
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
}

/* Times runs of steps steps of what (0: begin and end, 1: begin, mark and
 * end, 2: an empty library call, 3: a poll) into ns (thread cpu) and wall,
 * per step. */
static void
bench_runs(struct bench *b, int what, int64_t *base, long long steps, int runs,
    double *ns, double *wall, const char *name)
{
	double		 t0, w0;
	int64_t		 s;
	int		 r;

	for (r = 0; r < runs; r++) {
		w0 = now_ns(CLOCK_MONOTONIC);
		t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		for (s = *base; s < *base + steps; s++) {
			if (what == 2) {
				if (dynprof_rank(b->h) != 0)
					break;
				continue;
			}
			if (what == 3) {
				dynprof_poll(b->h);
				continue;
			}
			dynprof_step_begin(b->h, s);
			if (what == 1)
				dynprof_mark_comm(b->h);
			dynprof_step_end(b->h, s);
		}
		ns[r] = (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)steps;
		wall[r] = (now_ns(CLOCK_MONOTONIC) - w0) / (double)steps;
		if (what < 2)
			*base = s;
		printf("%s run %2d: %.2f ns cpu, %.2f ns wall\n", name, r + 1,
		    ns[r], wall[r]);
	}
	qsort(ns, (size_t)runs, sizeof(*ns), cmp_double);
	qsort(wall, (size_t)runs, sizeof(*wall), cmp_double);
}

/*
 * The mark's cost (poll 0) or the poll's (1): an empty library call, a step
 * without marks, a step with one or a poll, all in one run; the marks must
 * have been counted in the slot, the polls have started nothing.
 */
static int
bench_marks(long long steps, int runs, int poll)
{
	struct bench	 b;
	double		*ns[3], *wall[3];
	const char	*names[3] = { "step", poll ? "poll" : "step+mark",
			    "empty_call" };
	int64_t		 base = 1;
	uint64_t	 counted;
	int		 i, rc = 1;

	for (i = 0; i < 3; i++) {
		ns[i] = calloc((size_t)runs, sizeof(double));
		wall[i] = calloc((size_t)runs, sizeof(double));
	}
	if (bench_open(&b) == -1)
		goto out;
	for (i = 0; i < 3; i++)
		if (ns[i] == NULL || wall[i] == NULL)
			goto close;
	bench_runs(&b, 2, &base, steps, runs, ns[2], wall[2], names[2]);
	bench_runs(&b, 0, &base, steps, runs, ns[0], wall[0], names[0]);
	if (poll) {
		bench_runs(&b, 3, &base, steps, runs, ns[1], wall[1], names[1]);
		if (dynprof_state(b.h) != DYNPROF_RANK_ARMED) {
			fprintf(stderr, "step_cost: the polls changed the "
			    "rank's state\n");
			goto close;
		}
	} else {
		dynprof_mark_comm(b.h);	/* timing on from the next step */
		bench_runs(&b, 1, &base, steps, runs, ns[1], wall[1], names[1]);
	}
	counted = atomic_load(&b.agent.slots[0].busy_count);
	if (!poll && counted != (uint64_t)steps * (uint64_t)runs) {
		fprintf(stderr, "step_cost: %llu marks counted, not %llu\n",
		    (unsigned long long)counted,
		    (unsigned long long)steps * (unsigned long long)runs);
		goto close;
	}
	for (i = 0; i < 3; i++)
		printf("%s_ns median=%.2f min=%.2f max=%.2f wall_median=%.2f "
		    "runs=%d n=%lld (thread cpu time)\n", names[i],
		    ns[i][runs / 2], ns[i][0], ns[i][runs - 1],
		    wall[i][runs / 2], runs, steps);
	if (poll)
		printf("poll_ns median=%.2f (floor of a call %.2f)\n",
		    ns[1][runs / 2], ns[2][runs / 2]);
	else
		printf("mark_ns median=%.2f (step+mark - step; floor of a call "
		    "%.2f)\n", ns[1][runs / 2] - ns[0][runs / 2],
		    ns[2][runs / 2]);
	rc = 0;
close:
	bench_close(&b);
out:
	for (i = 0; i < 3; i++) {
		free(ns[i]);
		free(wall[i]);
	}
	return (rc);
}

static int
bench_time(long long steps, int runs)
{
	struct bench	 b;
	double		*ns, *wall, t0, w0;
	int64_t		 s, base = 1;
	int		 r;

	ns = calloc((size_t)runs, sizeof(*ns));
	wall = calloc((size_t)runs, sizeof(*wall));
	if (ns == NULL || wall == NULL || bench_open(&b) == -1) {
		free(ns);
		free(wall);
		return (1);
	}
	/* Warm up: page in the slot, train the branch predictor. */
	for (s = 1; s <= 100000; s++) {
		dynprof_step_begin(b.h, s);
		dynprof_step_end(b.h, s);
	}
	base = s;
	for (r = 0; r < runs; r++) {
		w0 = now_ns(CLOCK_MONOTONIC);
		t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		for (s = base; s < base + steps; s++) {
			dynprof_step_begin(b.h, s);
			dynprof_step_end(b.h, s);
		}
		ns[r] = (now_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)steps;
		wall[r] = (now_ns(CLOCK_MONOTONIC) - w0) / (double)steps;
		base = s;
		printf("run %2d: %.2f ns/step cpu, %.2f ns/step wall\n", r + 1,
		    ns[r], wall[r]);
	}
	if (dynprof_current_step(b.h) != base - 1 ||
	    dynprof_state(b.h) != DYNPROF_RANK_ARMED) {
		fprintf(stderr, "step_cost: the library did not follow the "
		    "steps\n");
		bench_close(&b);
		free(ns);
		free(wall);
		return (1);
	}
	bench_close(&b);
	qsort(ns, (size_t)runs, sizeof(*ns), cmp_double);
	qsort(wall, (size_t)runs, sizeof(*wall), cmp_double);
	/* CPU time: what the step costs the trainer, not the other processes
	 * of a shared machine preempting it.  Wall time beside it. */
	printf("step_cost_ns median=%.2f min=%.2f max=%.2f runs=%d "
	    "steps_per_run=%lld (thread cpu time)\n", ns[runs / 2], ns[0],
	    ns[runs - 1], runs, steps);
	printf("step_cost_wall_ns median=%.2f min=%.2f max=%.2f\n",
	    wall[runs / 2], wall[0], wall[runs - 1]);
	free(ns);
	free(wall);
	return (0);
}

/* A system call strace shows with its text, and that fails doing nothing. */
static void
hot_marker(const char *what)
{
	ssize_t	 n;

	n = write(-1, what, strlen(what));
	(void)n;
}

static int
bench_clock(long long reads)
{
	long long	 i;
	double		 sum = 0;

	hot_marker("dynprof-hot-loop-begin");
	for (i = 0; i < reads; i++)
		sum += now_ns(CLOCK_MONOTONIC);
	hot_marker("dynprof-hot-loop-end");
	return (sum < 0);
}

static int
bench_syscalls(long long steps, int marks, int poll)
{
	struct bench	 b;
	int64_t		 s;

	if (bench_open(&b) == -1)
		return (1);
	if (marks)
		dynprof_mark_comm(b.h);
	hot_marker("dynprof-hot-loop-begin");
	for (s = 1; s <= steps; s++) {
		if (poll) {
			dynprof_poll(b.h);
			continue;
		}
		dynprof_step_begin(b.h, s);
		if (marks)
			dynprof_mark_comm(b.h);
		dynprof_step_end(b.h, s);
	}
	hot_marker("dynprof-hot-loop-end");
	if (marks && atomic_load(&b.agent.slots[0].busy_count) !=
	    (uint64_t)steps) {
		fprintf(stderr, "step_cost: marks not counted\n");
		bench_close(&b);
		return (1);
	}
	bench_close(&b);
	return (0);
}

static long long
parse_count(const char *s)
{
	char		*end;
	long long	 v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 0) {
		fprintf(stderr, "step_cost: bad number: %s\n", s);
		exit(2);
	}
	return (v);
}

int
main(int argc, char **argv)
{
	long long	 steps = 10000000, sys = -1, reads = -1;
	int		 runs = 11, c, marks = 0, poll = 0;

	while ((c = getopt(argc, argv, "c:mn:pr:s:")) != -1) {
		switch (c) {
		case 'c':
			reads = parse_count(optarg);
			break;
		case 'm':
			marks = 1;
			break;
		case 'p':
			poll = 1;
			break;
		case 'n':
			steps = parse_count(optarg);
			break;
		case 'r':
			runs = (int)parse_count(optarg);
			break;
		case 's':
			sys = parse_count(optarg);
			break;
		default:
			fprintf(stderr, "usage: step_cost [-m | -p] [-n steps] "
			    "[-r runs] | [-m | -p] -s steps | -c reads\n");
			return (2);
		}
	}
	if (reads >= 0)
		return (bench_clock(reads));
	if (sys >= 0)
		return (bench_syscalls(sys, marks, poll));
	if (steps <= 0 || runs <= 0) {
		fprintf(stderr, "step_cost: steps and runs must be positive\n");
		return (2);
	}
	return (marks || poll ? bench_marks(steps, runs, poll) :
	    bench_time(steps, runs));
}
