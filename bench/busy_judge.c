/*
 * dynprof-busy-judge-bench: the CPU a tick's judgement of busy times costs
 * the coordinator (server/busy.c's busy_judge()) at a job's size, and that
 * of its arrivals (server/arrive.c's arrive_judge()).
 *
 * usage: dynprof-busy-judge-bench [--ranks N] [--ticks K]
 *
 * N ranks (default 100,000) with busy times around 20 ms (each rank its own
 * offset of up to 5%, one in a hundred twice as long), every tick fresh
 * (each rank's history moves), judged K times (default 50, after 10 to
 * learn the baselines).  Each tick also brings every rank's arrivals at
 * ARRIVALS_TICK new steps (rank 61 last, 10 ms after the others), judged
 * apart.  Prints each tick's thread CPU time, then the medians and the
 * highest, and the ranks flagged at the last tick.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "coord.h"

/* New steps each rank arrived at, every tick. */
#define ARRIVALS_TICK	5

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
	struct rank_arrive	*ra;
	struct arrive_rank	*ar;
	struct arrive_job	 aj;
	double			*t, *ta, t0;
	int64_t			 steps[ARRIVALS_TICK], us[ARRIVALS_TICK];
	int			 n = 100000, ticks = 50, ch, i, k, m;

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
	ta = calloc((size_t)ticks, sizeof(*ta));
	ra = calloc((size_t)n, sizeof(*ra));
	ar = calloc((size_t)n, sizeof(*ar));
	if (hist == NULL || br == NULL || t == NULL || ta == NULL ||
	    ra == NULL || ar == NULL) {
		fprintf(stderr, "busy-judge-bench: out of memory\n");
		return (1);
	}
	for (i = 0; i < n; i++) {
		busy_history_reset(&hist[i]);
		ar[i].ra = &ra[i];
		ar[i].rank = i;
	}
	arrive_job_reset(&aj);
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
		if (busy_judge(br, (size_t)n, COORD_STRAGGLER_BUSY, 0, &jb) == -1) {
			fprintf(stderr, "busy-judge-bench: out of memory\n");
			return (1);
		}
		if (k >= 0)
			t[k] = (cpu_ns() - t0) / 1e6;
		/* And their arrivals: 30 ms a step, rank 61 10 ms late. */
		for (i = 0; i < n; i++) {
			for (m = 0; m < ARRIVALS_TICK; m++) {
				steps[m] = (int64_t)(k + 10) * ARRIVALS_TICK + m;
				us[m] = INT64_C(1700000000000000) + steps[m] *
				    30000 + random() % 500 + (i == 61 ? 10000 :
				    0);
			}
			arrive_rank_take(&ra[i], steps, us, ARRIVALS_TICK, 0,
			    INT64_C(1700000000000000), INT64_MAX / 2);
		}
		t0 = cpu_ns();
		if (arrive_judge(&aj, ar, (size_t)n, COORD_STRAGGLER_BUSY,
		    jb.median_us, 0) == -1) {
			fprintf(stderr, "busy-judge-bench: out of memory\n");
			return (1);
		}
		if (k >= 0)
			ta[k] = (cpu_ns() - t0) / 1e6;
	}
	for (k = 0; k < ticks; k++)
		printf("tick %2d: %.2f ms cpu\n", k + 1, t[k]);
	printf("flagged at the last tick: %u over the median, %u changed; "
	    "median %u us\n", jb.nover, jb.nchange, jb.median_us);
	printf("last to arrive: rank %d at %u of %u steps, %lld us after the "
	    "median%s\n", aj.rank, aj.count, aj.n, (long long)aj.late_avg_us,
	    aj.flagged ? " (flagged)" : "");
	qsort(t, (size_t)ticks, sizeof(*t), cmp);
	qsort(ta, (size_t)ticks, sizeof(*ta), cmp);
	printf("RESULT ranks=%d ticks=%d judge_ms_median=%.2f judge_ms_max=%.2f "
	    "arrive_ms_median=%.2f arrive_ms_max=%.2f (thread cpu time)\n", n,
	    ticks, t[ticks / 2], t[ticks - 1], ta[ticks / 2], ta[ticks - 1]);
	free(ta);
	free(ra);
	free(ar);
	free(hist);
	free(br);
	free(t);
	return (0);
}
