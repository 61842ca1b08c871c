/*
 * rankproc: a tiny training process linked with libdynprof, for the agent's
 * tests and benchmark.
 *
 *	rankproc JOB RANK STEPS STEP_MS LOG [hold | cycles N]
 *
 * Steps STEPS times (0: until SIGTERM), STEP_MS milliseconds each, and appends
 * to LOG one line per callback: "start ID A B STEP" and "stop ID REASON".
 * With "hold" it stays attached after its last step until SIGTERM; with
 * "cycles N" it attaches, steps and detaches N times over, the same process
 * (the same pid) each time, then writes "cycles done N".  The segment dir,
 * socket and output root come from the environment.
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynprof.h"

static volatile sig_atomic_t	 rankproc_stop;
static FILE			*rankproc_log;
static int64_t			 rankproc_step;

static void
rankproc_signal(int sig)
{
	(void)sig;
	rankproc_stop = 1;
}

static int
rankproc_start(void *arg, const struct dynprof_window *w,
    const struct dynprof_options *o, const char *fwopts, const char *dir,
    char *err, size_t errlen)
{
	(void)arg;
	(void)o;
	(void)fwopts;
	(void)err;
	(void)errlen;
	fprintf(rankproc_log, "start %u %lld %lld %lld %s\n", w->id,
	    (long long)w->start_step, (long long)w->stop_step,
	    (long long)rankproc_step, dir);
	fflush(rankproc_log);
	return (0);
}

static int
rankproc_stop_cb(void *arg, const struct dynprof_window *w,
    enum dynprof_stop_reason reason, const char *dir, char *err, size_t errlen)
{
	(void)arg;
	(void)dir;
	(void)err;
	(void)errlen;
	fprintf(rankproc_log, "stop %u %d %lld\n", w->id, (int)reason,
	    (long long)rankproc_step);
	fflush(rankproc_log);
	return (0);
}

/* Waits for SIGTERM or SIGINT. */
static void
rankproc_hold(void)
{
	sigset_t	 block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!rankproc_stop)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int
main(int argc, char **argv)
{
	struct dynprof_params	 p;
	struct timespec		 ts;
	dynprof_t		*h;
	long			 steps, step_ms, cycles = 1, cycle;
	int			 rc, hold;

	if (argc < 6) {
		fprintf(stderr, "usage: rankproc JOB RANK STEPS STEP_MS LOG "
		    "[hold | cycles N]\n");
		return (1);
	}
	signal(SIGTERM, rankproc_signal);
	signal(SIGINT, rankproc_signal);
	if ((rankproc_log = fopen(argv[5], "a")) == NULL) {
		perror(argv[5]);
		return (1);
	}
	steps = atol(argv[3]);
	step_ms = atol(argv[4]);
	hold = argc > 6 && strcmp(argv[6], "hold") == 0;
	if (argc > 7 && strcmp(argv[6], "cycles") == 0)
		cycles = atol(argv[7]);
	dynprof_params_init(&p);
	p.job = argv[1];
	p.rank = atoi(argv[2]);
	p.on_start = rankproc_start;
	p.on_stop = rankproc_stop_cb;
	ts.tv_sec = step_ms / 1000;
	ts.tv_nsec = (step_ms % 1000) * 1000000;
	for (cycle = 0; cycle < cycles && !rankproc_stop; cycle++) {
		if ((rc = dynprof_open(&p, &h)) != DYNPROF_OK) {
			fprintf(stderr, "rankproc: dynprof_open: %s\n",
			    dynprof_strerror(rc));
			return (1);
		}
		for (rankproc_step = 1; !rankproc_stop &&
		    (steps == 0 || rankproc_step <= steps); rankproc_step++) {
			dynprof_step_begin(h, rankproc_step);
			nanosleep(&ts, NULL);
			dynprof_step_end(h, rankproc_step);
		}
		if (cycles == 1) {
			fprintf(rankproc_log, "steps done %lld\n",
			    (long long)rankproc_step - 1);
			fflush(rankproc_log);
		}
		if (hold)
			rankproc_hold();
		dynprof_close(h);
	}
	if (cycles > 1)
		fprintf(rankproc_log, "cycles done %ld\n", cycle);
	fclose(rankproc_log);
	return (0);
}
