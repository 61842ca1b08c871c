/*
 * dynprof-train-sim: a simulated training rank linked with libdynprof.
 *
 * It steps at a steady rate (20 steps a second by default) around
 * dynprof_step_begin() and dynprof_step_end(), and its "profiler" writes
 * trace.json into the output directory the library hands to the start callback:
 * the job, rank, pid, window (a time window's start and length too, from
 * dynprof_window_info()), every step it profiled, and why it stopped, and
 * the steps as torch.profiler marks them ("traceEvents": a ProfilerStep#N
 * span from each step's beginning to the next's, the first 1024; none for
 * the last, which the window stops inside), which the
 * agent reads when it collects the trace (docs/traces.md).  The
 * file is closed by the stop callback, so a complete trace.json ends with "}".
 *
 * Exit codes: 0 after --max-steps or SIGTERM/SIGINT, 1 bad usage, 2 the library
 * refused to open.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynprof.h"

#define TRAIN_SIM_SPANS	1024	/* steps of a window written as spans */

struct train_sim {
	const char	*job;
	int		 rank;
	double		 steps_per_sec;
	int64_t		 max_steps;
	int64_t		 first_step;
	int64_t		 poll_ms;	/* --poll-ms: no steps, polls */
	int		 quiet;
	int		 verbose;
	dynprof_t	*h;		/* for dynprof_window_info() */
	FILE		*trace;		/* open while a window runs */
	unsigned	 trace_steps;
	char		 trace_path[4096];
	struct {			/* the traced steps' spans */
		int64_t	 step;
		int64_t	 begin_ns, end_ns;
	}		 spans[TRAIN_SIM_SPANS];
	unsigned	 nspans;
};

static volatile sig_atomic_t train_sim_stop_flag;

static void
train_sim_on_signal(int sig)
{
	(void)sig;
	train_sim_stop_flag = 1;
}

static int64_t	train_sim_now_ns(void);
static void	train_sim_sleep_until(int64_t);

/* --poll-ms: a loop without steps, polling until SIGTERM. */
static int
train_sim_poll(struct train_sim *ts, dynprof_t *h)
{
	int64_t	 next = train_sim_now_ns(), polls = 0;
	int	 rc;

	while (!train_sim_stop_flag) {
		if ((rc = dynprof_poll(h)) != DYNPROF_OK && ts->verbose)
			fprintf(stderr, "rank %d: poll: %s\n", ts->rank,
			    dynprof_strerror(rc));
		polls++;
		next += ts->poll_ms * 1000000;
		train_sim_sleep_until(next);
	}
	dynprof_close(h);
	printf("rank %d: %lld polls\n", ts->rank, (long long)polls);
	return (0);
}

static void
train_sim_usage(FILE *f)
{
	fprintf(f,
"usage: dynprof-train-sim [options]\n"
"  --steps-per-sec N  steps a second, 0 = as fast as possible (20)\n"
"  --max-steps N      stop after N steps, 0 = run until SIGTERM (0)\n"
"  --first-step N     number of the first step, as a job resumed from a\n"
"                     checkpoint would (1)\n"
"  --poll-ms N        no steps: dynprof_poll() every N ms until SIGTERM, as\n"
"                     an inference server's loop would (time windows only)\n"
"  --job J            job id (DYNPROF_JOB, SLURM_JOB_ID, \"default\")\n"
"  --rank R           rank (RANK, RANK_ID, OMPI_COMM_WORLD_RANK, SLURM_PROCID, 0)\n"
"  --output-root DIR  trace root (DYNPROF_OUTPUT_ROOT, ./dyn_profile_data)\n"
"  --shm-dir DIR      segment directory (DYNPROF_SHM_DIR, /dev/shm)\n"
"  --socket PATH      agent socket (DYNPROF_AGENT_SOCKET)\n"
"  -q, --quiet        print only errors and the final rate\n"
"  -v, --verbose      also print the library's log messages\n"
"  -h, --help\n");
}

static const char *
train_sim_reason(enum dynprof_stop_reason reason)
{
	switch (reason) {
	case DYNPROF_STOP_COMPLETED:
		return ("completed");
	case DYNPROF_STOP_CANCELLED:
		return ("cancelled");
	case DYNPROF_STOP_CLOSED:
		return ("closed");
	}
	return ("unknown");
}

/* The profiler's start: opens trace.json in the directory it is given. */
static int
train_sim_start(void *arg, const struct dynprof_window *w,
    const struct dynprof_options *opts, const char *fwopts,
    const char *output_dir, char *err, size_t errlen)
{
	struct train_sim	*ts = arg;
	struct dynprof_window_info wi;
	struct tm		 tm;
	time_t			 t;
	char			 when[96], stamp[32];
	int			 n;

	(void)opts;
	/* A time window comes with steps 0: the library says when it runs. */
	when[0] = '\0';
	wi.version = DYNPROF_WINDOW_INFO_VERSION;
	if (dynprof_window_info(ts->h, w->id, &wi) == 1 &&
	    wi.kind == DYNPROF_WINDOW_TIME) {
		t = (time_t)(wi.start_unix_ns / 1000000000);
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		snprintf(when, sizeof(when), "%s.%03dZ", stamp,
		    (int)(wi.start_unix_ns % 1000000000 / 1000000));
	}
	n = snprintf(ts->trace_path, sizeof(ts->trace_path), "%s/trace.json",
	    output_dir);
	if (n < 0 || (size_t)n >= sizeof(ts->trace_path)) {
		snprintf(err, errlen, "output path too long");
		return (-1);
	}
	if ((ts->trace = fopen(ts->trace_path, "w")) == NULL) {
		snprintf(err, errlen, "%s: %s", ts->trace_path, strerror(errno));
		return (-1);
	}
	ts->trace_steps = 0;
	ts->nspans = 0;
	fprintf(ts->trace, "{\"job\": \"%s\", \"rank\": %d, \"pid\": %ld, "
	    "\"window\": %u, \"start_step\": %lld, \"stop_step\": %lld, ",
	    ts->job, ts->rank, (long)getpid(), w->id, (long long)w->start_step,
	    (long long)w->stop_step);
	if (when[0] != '\0')
		fprintf(ts->trace, "\"at\": \"%s\", \"duration_ms\": %lld, "
		    "\"started_at_step\": %lld, ", when,
		    (long long)(wi.duration_ns / 1000000),
		    (long long)dynprof_current_step(ts->h));
	fprintf(ts->trace, "\"framework_options\": %s, \"steps\": [",
	    fwopts != NULL && *fwopts != '\0' ? fwopts : "{}");
	if (!ts->quiet && when[0] != '\0') {
		printf("rank %d: started time window %u (at %s for %lld ms) at "
		    "step %lld -> %s\n", ts->rank, w->id, when,
		    (long long)(wi.duration_ns / 1000000),
		    (long long)dynprof_current_step(ts->h), output_dir);
		fflush(stdout);
	} else if (!ts->quiet) {
		printf("rank %d: started window %u (steps %lld-%lld) -> %s\n",
		    ts->rank, w->id, (long long)w->start_step,
		    (long long)w->stop_step, output_dir);
		fflush(stdout);
	}
	return (0);
}

/* The profiler's stop: finishes and closes trace.json. */
static int
train_sim_stop(void *arg, const struct dynprof_window *w,
    enum dynprof_stop_reason reason, const char *output_dir, char *err,
    size_t errlen)
{
	struct train_sim	*ts = arg;
	unsigned		 i;
	int			 bad;

	(void)output_dir;
	if (ts->trace == NULL) {
		snprintf(err, errlen, "stop without a start");
		return (-1);
	}
	/* The last step's span has no end: the window stops inside it. */
	fprintf(ts->trace, "], \"traceEvents\": [");
	for (i = 0; i < ts->nspans && ts->spans[i].end_ns != 0; i++)
		fprintf(ts->trace, "%s{\"name\": \"ProfilerStep#%lld\", "
		    "\"ph\": \"X\", \"cat\": \"user_annotation\", \"pid\": %ld, "
		    "\"tid\": %d, \"ts\": %.3f, \"dur\": %.3f}", i ? ", " : "",
		    (long long)ts->spans[i].step, (long)getpid(), ts->rank,
		    ts->spans[i].begin_ns / 1e3, (ts->spans[i].end_ns -
		    ts->spans[i].begin_ns) / 1e3);
	fprintf(ts->trace, "], \"reason\": \"%s\"}\n", train_sim_reason(reason));
	bad = ferror(ts->trace);
	if (fclose(ts->trace) != 0)
		bad = 1;
	ts->trace = NULL;
	if (bad) {
		snprintf(err, errlen, "%s: write failed", ts->trace_path);
		return (-1);
	}
	if (!ts->quiet) {
		printf("rank %d: stopped window %u (%s, %u steps traced)\n",
		    ts->rank, w->id, train_sim_reason(reason), ts->trace_steps);
		fflush(stdout);
	}
	return (0);
}

static void
train_sim_log(void *arg, enum dynprof_log_level level, const char *msg)
{
	struct train_sim	*ts = arg;

	if (ts->verbose || level <= DYNPROF_LOG_WARNING)
		fprintf(stderr, "rank %d: dynprof: %s\n", ts->rank, msg);
}

static int
train_sim_number(const char *s, long long lo, long long hi, long long *out)
{
	char		*end;
	long long	 v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return (-1);
	*out = v;
	return (0);
}

static int64_t
train_sim_now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

static void
train_sim_sleep_until(int64_t deadline_ns)
{
	struct timespec	 ts;

	ts.tv_sec = deadline_ns / 1000000000;
	ts.tv_nsec = deadline_ns % 1000000000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	    EINTR && !train_sim_stop_flag)
		;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "steps-per-sec",	required_argument, NULL, 'r' },
		{ "max-steps",		required_argument, NULL, 'n' },
		{ "first-step",		required_argument, NULL, 'f' },
		{ "poll-ms",		required_argument, NULL, 'p' },
		{ "job",		required_argument, NULL, 'j' },
		{ "rank",		required_argument, NULL, 'k' },
		{ "output-root",	required_argument, NULL, 'o' },
		{ "shm-dir",		required_argument, NULL, 'd' },
		{ "socket",		required_argument, NULL, 's' },
		{ "quiet",		no_argument,	   NULL, 'q' },
		{ "verbose",		no_argument,	   NULL, 'v' },
		{ "help",		no_argument,	   NULL, 'h' },
		{ NULL,			0,		   NULL, 0 }
	};
	struct train_sim	 ts;
	struct dynprof_params	 p;
	struct dynprof_stats	 stats;
	struct sigaction	 sa;
	dynprof_t		*h;
	long long		 v;
	int64_t			 step, t0, period_ns, elapsed, now;
	int			 ch, rc;

	memset(&ts, 0, sizeof(ts));
	ts.steps_per_sec = 20;
	ts.first_step = 1;
	dynprof_params_init(&p);
	while ((ch = getopt_long(argc, argv, "qvh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'r':
			if (train_sim_number(optarg, 0, 1000000, &v) == -1) {
				fprintf(stderr, "dynprof-train-sim: --steps-per-sec: "
				    "not a number from 0 to 1000000: %s\n", optarg);
				return (1);
			}
			ts.steps_per_sec = (double)v;
			break;
		case 'n':
			if (train_sim_number(optarg, 0, INT64_MAX / 2, &v) == -1) {
				fprintf(stderr, "dynprof-train-sim: --max-steps: "
				    "not a number >= 0: %s\n", optarg);
				return (1);
			}
			ts.max_steps = v;
			break;
		case 'f':
			if (train_sim_number(optarg, 1, INT64_MAX / 2, &v) == -1) {
				fprintf(stderr, "dynprof-train-sim: --first-step: "
				    "not a number >= 1: %s\n", optarg);
				return (1);
			}
			ts.first_step = v;
			break;
		case 'p':
			if (train_sim_number(optarg, 1, 60000, &v) == -1) {
				fprintf(stderr, "dynprof-train-sim: --poll-ms: "
				    "not a number from 1 to 60000: %s\n", optarg);
				return (1);
			}
			ts.poll_ms = v;
			break;
		case 'j':
			p.job = optarg;
			break;
		case 'k':
			if (train_sim_number(optarg, 0, INT_MAX, &v) == -1) {
				fprintf(stderr, "dynprof-train-sim: --rank: "
				    "not a number >= 0: %s\n", optarg);
				return (1);
			}
			p.rank = (int)v;
			break;
		case 'o':
			p.output_root = optarg;
			break;
		case 'd':
			p.shm_dir = optarg;
			break;
		case 's':
			p.agent_socket = optarg;
			break;
		case 'q':
			ts.quiet = 1;
			break;
		case 'v':
			ts.verbose = 1;
			break;
		case 'h':
			train_sim_usage(stdout);
			return (0);
		default:
			train_sim_usage(stderr);
			return (1);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "dynprof-train-sim: unexpected argument: %s\n",
		    argv[optind]);
		train_sim_usage(stderr);
		return (1);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = train_sim_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	p.on_start = train_sim_start;
	p.on_stop = train_sim_stop;
	p.on_log = train_sim_log;
	p.arg = &ts;
	ts.rank = p.rank;
	if ((rc = dynprof_open(&p, &h)) != DYNPROF_OK) {
		fprintf(stderr, "dynprof-train-sim: dynprof_open: %s\n",
		    dynprof_strerror(rc));
		return (2);
	}
	ts.h = h;
	ts.job = dynprof_job(h);
	ts.rank = dynprof_rank(h);
	if (!ts.quiet) {
		printf("rank %d: job %s, pid %ld, %g steps/s from step %lld\n",
		    ts.rank, ts.job, (long)getpid(), ts.steps_per_sec,
		    (long long)ts.first_step);
		fflush(stdout);
	}

	if (ts.poll_ms > 0)
		return (train_sim_poll(&ts, h));
	period_ns = ts.steps_per_sec > 0 ?
	    (int64_t)(1e9 / ts.steps_per_sec) : 0;
	t0 = train_sim_now_ns();
	for (step = ts.first_step; !train_sim_stop_flag; step++) {
		if (ts.max_steps != 0 && step - ts.first_step >= ts.max_steps)
			break;
		if (period_ns != 0)
			train_sim_sleep_until(t0 + (step - ts.first_step) *
			    period_ns);
		if ((rc = dynprof_step_begin(h, step)) != DYNPROF_OK &&
		    ts.verbose)
			fprintf(stderr, "rank %d: step_begin %lld: %s\n",
			    ts.rank, (long long)step, dynprof_strerror(rc));
		if (ts.trace != NULL) {
			fprintf(ts.trace, "%s%lld", ts.trace_steps ? ", " : "",
			    (long long)step);
			ts.trace_steps++;
			now = train_sim_now_ns();
			if (ts.nspans > 0 &&
			    ts.spans[ts.nspans - 1].end_ns == 0)
				ts.spans[ts.nspans - 1].end_ns = now;
			if (ts.nspans < TRAIN_SIM_SPANS) {
				ts.spans[ts.nspans].step = step;
				ts.spans[ts.nspans].begin_ns = now;
				ts.spans[ts.nspans++].end_ns = 0;
			}
		}
		/* The "work" of the step happens here. */
		if ((rc = dynprof_step_end(h, step)) != DYNPROF_OK && ts.verbose)
			fprintf(stderr, "rank %d: step_end %lld: %s\n",
			    ts.rank, (long long)step, dynprof_strerror(rc));
	}
	elapsed = train_sim_now_ns() - t0;
	step -= ts.first_step;
	dynprof_get_stats(h, &stats);
	dynprof_close(h);
	printf("rank %d: %lld steps in %.3f s (%.1f steps/s), events sent %llu, "
	    "dropped %llu\n", ts.rank, (long long)step, elapsed / 1e9,
	    elapsed > 0 ? step / (elapsed / 1e9) : 0.0,
	    (unsigned long long)stats.events_sent,
	    (unsigned long long)stats.events_dropped);
	return (0);
}
