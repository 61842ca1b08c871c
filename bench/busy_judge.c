/*
 * dynprof-busy-judge-bench: the CPU a tick's judgement of busy times costs
 * the coordinator (server/busy.c's busy_judge()) at a job's size.
 *
 * usage: dynprof-busy-judge-bench [--ranks N] [--ticks K]
 *
 * N ranks (default 100,000) with busy times around 20 ms (each rank its own
 * offset of up to 5%, one in a hundred twice as long), every tick fresh
 * (each rank's history moves), judged K times (default 50, after 10 to
 * learn the baselines).  Prints each tick's thread CPU time, then the median
 * and the highest, and the ranks flagged at the last tick.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "coord.h"

/* Returns this thread's CPU time in ns. */
static double
cpu_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
}

/* Orders doubles, for qsort(). */
static int
cmp(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "ranks", required_argument, NULL, 'r' },
		{ "ticks", required_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 }
	};
	struct busy_history	*hist;
	struct busy_rank	*br;
	struct busy_job		 jb;
	double			*t, t0;
	int			 n = 100000, ticks = 50, ch, i, k;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'r': n = atoi(optarg); break;
		case 'k': ticks = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: dynprof-busy-judge-bench "
			    "[--ranks N] [--ticks K]\n");
			return (1);
		}
	}
	if (n < 2 || n > 10000000 || ticks < 1 || ticks > 10000) {
		fprintf(stderr, "busy-judge-bench: --ranks 2-10000000, "
		    "--ticks 1-10000\n");
		return (1);
	}
	hist = calloc((size_t)n, sizeof(*hist));
	br = calloc((size_t)n, sizeof(*br));
	t = calloc((size_t)ticks, sizeof(*t));
	if (hist == NULL || br == NULL || t == NULL) {
		fprintf(stderr, "busy-judge-bench: out of memory\n");
		return (1);
	}
	for (i = 0; i < n; i++)
		busy_history_reset(&hist[i]);
	srandom(1);
	for (k = -10; k < ticks; k++) {
		/* What straggler.c gathers each tick: fresh busy times. */
		for (i = 0; i < n; i++) {
			br[i].busy_us = (uint32_t)(20000 + i % 1000 +
			    random() % 200) * (i % 100 == 61 ? 2 : 1);
			br[i].fresh = 1;
			br[i].hist = &hist[i];
		}
		t0 = cpu_ns();
		if (busy_judge(br, (size_t)n, COORD_STRAGGLER_BUSY, &jb) == -1) {
			fprintf(stderr, "busy-judge-bench: out of memory\n");
			return (1);
		}
		if (k >= 0)
			t[k] = (cpu_ns() - t0) / 1e6;
	}
	for (k = 0; k < ticks; k++)
		printf("tick %2d: %.2f ms cpu\n", k + 1, t[k]);
	printf("flagged at the last tick: %u over the median, %u changed; "
	    "median %u us\n", jb.nover, jb.nchange, jb.median_us);
	qsort(t, (size_t)ticks, sizeof(*t), cmp);
	printf("RESULT ranks=%d ticks=%d judge_ms_median=%.2f judge_ms_max=%.2f "
	    "(thread cpu time)\n", n, ticks, t[ticks / 2], t[ticks - 1]);
	free(hist);
	free(br);
	free(t);
	return (0);
}
