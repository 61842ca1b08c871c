/*
 * What dynprof_step_begin + dynprof_step_end cost a training step when the
 * segment is live (a schedule is loaded, with a window far ahead) and no window
 * is due: the hot path every step of every rank takes.
 *
 *	step_cost [-n STEPS] [-r RUNS]	time RUNS runs of STEPS steps (default
 *					10,000,000 x 11): each run's ns/step,
 *					then median, min and max
 *	step_cost -s STEPS		open, run STEPS steps, close: run
 *					it under
 *					strace -f -c with STEPS = 0 and 10^6 to
 *					count the hot loop's system calls
 *
 * The binary links libdynprof.so like a trainer (calls through the PLT), and
 * writes the schedule into the segment as the agent does.  The segment is the
 * POSIX shm object of a job name unique to the run, removed at the end.
 */

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
	struct segment	 agent;
	dynprof_t	*h;
};

static int
bench_open(struct bench *b)
{
	static struct seg_config cfg;
	struct dynprof_params	 p;
	int			 rc;

	snprintf(b->job, sizeof(b->job), "bench-step-%ld", (long)getpid());
	snprintf(b->root, sizeof(b->root), "/tmp/dynprof-bench-%ld",
	    (long)getpid());
	rc = segment_open(&b->agent, NULL, b->job, SEG_CREATE, 0600);
	if (rc != SEG_OK) {
		fprintf(stderr, "step_cost: segment: %s\n",
		    segment_strerror(rc));
		return (-1);
	}
	/* A live schedule: one window, far ahead of every step we run. */
	memset(&cfg, 0, sizeof(cfg));
	cfg.generation = 1;
	cfg.nwindows = 1;
	cfg.windows[0].id = 1;
	cfg.windows[0].start_step = INT64_C(1) << 60;
	cfg.windows[0].stop_step = (INT64_C(1) << 60) + 10;
	segment_write_config(&b->agent, &cfg);

	dynprof_params_init(&p);
	p.job = b->job;
	p.rank = 0;
	p.output_root = b->root;
	p.agent_socket = "/nonexistent/dynprof-bench.sock";
	if ((rc = dynprof_open(&p, &b->h)) != DYNPROF_OK) {
		fprintf(stderr, "step_cost: open: %s\n", dynprof_strerror(rc));
		segment_close(&b->agent);
		segment_unlink(NULL, b->job);
		return (-1);
	}
	return (0);
}

static void
bench_close(struct bench *b)
{
	dynprof_close(b->h);
	segment_close(&b->agent);
	segment_unlink(NULL, b->job);
}

static double
now_ns(clockid_t clock)
{
	struct timespec	 ts;

	clock_gettime(clock, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return ((x > y) - (x < y));
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

static int
bench_syscalls(long long steps)
{
	struct bench	 b;
	int64_t		 s;

	if (bench_open(&b) == -1)
		return (1);
	for (s = 1; s <= steps; s++) {
		dynprof_step_begin(b.h, s);
		dynprof_step_end(b.h, s);
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
	long long	 steps = 10000000, sys = -1;
	int		 runs = 11, c;

	while ((c = getopt(argc, argv, "n:r:s:")) != -1) {
		switch (c) {
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
			fprintf(stderr, "usage: step_cost [-n steps] [-r runs] "
			    "| -s steps\n");
			return (2);
		}
	}
	if (sys >= 0)
		return (bench_syscalls(sys));
	if (steps <= 0 || runs <= 0) {
		fprintf(stderr, "step_cost: steps and runs must be positive\n");
		return (2);
	}
	return (bench_time(steps, runs));
}
