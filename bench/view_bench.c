/*
 * dynprof-view-bench: what a big job's view costs the coordinator.
 *
 * usage: dynprof-view-bench [--agents N] [--ranks R] [--rounds K] [--busy]
 *
 * Starts dynprof-coordinator (port 0, a private state directory, heartbeats
 * every 500 ms), connects N fake agents (default 400) reporting R ranks each
 * (default 250: 100,000 ranks), one rank in a hundred 200 steps behind, and
 * moves every rank K times (default 10) so that rates are measured.  Then
 * reports: the cost of judging the stragglers at a housekeeping tick (the
 * highest dynprof_straggler_tick_seconds seen over 10 ticks), and the time
 * and size of GET /v1/jobs/J (the summary, with its stragglers), /stragglers
 * and /nodes (the status page's heat map), the median of 5 each; and the
 * coordinator's RSS.  Prints "RESULT ..." last.
 *
 * With --labels every rank first attaches with labels laid out as 8
 * pipeline stages x 8 tensor-parallel ranks x the rest data-parallel (pp =
 * rank / (ranks / 8), tp = rank % 8, dp = rank / 8 % (ranks / 64)), and the
 * bench also times what labels are for (docs/labels.md): GET .../ranks with a
 * label selector, and windows that name ranks by select, one_per and
 * group_of (each POST resolves them over every rank of the job) against a
 * window for every rank, the POST alone.
 *
 * With --busy every rank also reports a busy time (dynprof_mark_comm()),
 * 20 ms, one in a hundred others 40 ms, and the agents keep reporting
 * through the ticks measured, so that every tick judges fresh busy times
 * too: each rank against the job's median and its own history.
 */

#include <sys/resource.h>

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakeagent.h"
#include "procstat.h"
#include "test_coord_util.h"

#define JOB		"view-bench"
#define AGENTS_MAX	10000
#define SAMPLES		5

static struct fakeagent	 agents[AGENTS_MAX];

/* Returns the monotonic clock in seconds. */
static double
now_s(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

/* Orders doubles, for qsort(). */
static int
cmp(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* Sends every agent's ranks at base (one in a hundred 200 steps behind),
 * with busy: their busy times (one in a hundred others twice as long). */
static int
report(int n, int ranks, int64_t base, int busy)
{
	int64_t		 steps[FA_PROGRESS_MAX];
	uint32_t	 us[FA_PROGRESS_MAX];
	int		 i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < ranks; k++) {
			steps[k] = (i * ranks + k) % 100 == 37 ? base - 200 :
			    base;
			us[k] = (i * ranks + k) % 100 == 61 ? 40000 : 20000;
		}
		if (fa_progress_busy(&agents[i], JOB, i * ranks, steps,
		    busy ? us : NULL, ranks) == -1)
			return (-1);
	}
	return (0);
}

static void	 beat(int);
static double	 metric(struct tc_coord *, const char *);

/* Every agent's ranks attach with their labels (see the top); 0 or -1. */
static int
attach_labels(int n, int ranks)
{
	int	 total = n * ranks, i, k, g;
	char	 labels[64];

	for (i = 0; i < n; i++) {
		fa_cork(&agents[i]);
		for (k = 0; k < ranks; k++) {
			g = i * ranks + k;
			snprintf(labels, sizeof(labels), "pp=%d,tp=%d,dp=%d",
			    g / (total / 8 > 0 ? total / 8 : 1), g % 8,
			    g / 8 % (total / 64 > 0 ? total / 64 : 1));
			if (fa_attach_labels(&agents[i], JOB, g, labels) == -1)
				return (-1);
		}
		if (fa_flush(&agents[i]) == -1)
			return (-1);
		if (i % 50 == 49)
			beat(n);	/* a busy agent is no silent one */
	}
	/* Each agent's last event committed; every agent heartbeats meanwhile. */
	for (i = 0; i < n; i++) {
		for (k = 0; fa_wait_ack(&agents[i], agents[i].next_seq - 1,
		    200) == -1; k++) {
			if (k == 300)
				return (-1);
			beat(n);
		}
	}
	return (0);
}

/*
 * Times POST path body SAMPLES times (a window each, cancelled after): the
 * median in ms, the coordinator's CPU time per POST and DELETE in *cpu
 * (ms, a mean: the clock tick is 10 ms), and the last resolution's own
 * time in *sel (ms, from /metrics); exits on an answer but 201.
 */
static double
timed_windows(struct tc_coord *tc, int n, const char *named, int64_t *at,
    double *cpu, double *sel)
{
	struct tc_reply	 r;
	double		 t[SAMPLES], t0;
	char		 body[512], path[128];
	const char	*id;
	double		 c0;
	int		 i;

	beat(n);
	c0 = procstat_cpu_seconds(tc->pid);
	for (i = 0; i < SAMPLES; i++) {
		snprintf(body, sizeof(body), "{\"start_step\": %lld, "
		    "\"stop_step\": %lld, %s}", (long long)*at,
		    (long long)*at + 1, named);
		*at += 10;
		t0 = now_s();
		if (tc_http(tc->http_port, "POST", "/v1/jobs/" JOB "/windows",
		    body, NULL, &r) == -1 || r.status != 201) {
			fprintf(stderr, "view-bench: POST %s: %d %s\n", body,
			    r.status, r.body != NULL ? r.body : "");
			exit(1);
		}
		t[i] = (now_s() - t0) * 1000;
		id = r.body != NULL ? strstr(r.body, "\"id\":") : NULL;
		snprintf(path, sizeof(path), "/v1/jobs/" JOB "/windows/%ld",
		    id != NULL ? strtol(id + 5, NULL, 10) : 0L);
		tc_reply_free(&r);
		if (tc_http(tc->http_port, "DELETE", path, NULL, NULL,
		    &r) == 0)
			tc_reply_free(&r);
	}
	*cpu = (procstat_cpu_seconds(tc->pid) - c0) * 1000 / SAMPLES;
	*sel = metric(tc, "dynprof_select_seconds") * 1000;
	qsort(t, SAMPLES, sizeof(t[0]), cmp);
	return (t[SAMPLES / 2]);
}

/* Sends a heartbeat from every agent. */
static void
beat(int n)
{
	int	 i;

	for (i = 0; i < n; i++)
		fa_heartbeat(&agents[i]);
}

/* Times GET path SAMPLES times: the median in ms, the size in bytes. */
static void
timed_get(struct tc_coord *tc, int n, const char *path, double *ms,
    size_t *bytes)
{
	struct tc_reply	 r;
	double		 t[SAMPLES], t0;
	int		 i;

	*bytes = 0;
	for (i = 0; i < SAMPLES; i++) {
		beat(n);
		t0 = now_s();
		if (tc_http(tc->http_port, "GET", path, NULL, NULL, &r) == -1 ||
		    r.status != 200) {
			fprintf(stderr, "view-bench: GET %s failed\n", path);
			exit(1);
		}
		t[i] = (now_s() - t0) * 1000;
		*bytes = r.body != NULL ? strlen(r.body) : 0;
		tc_reply_free(&r);
	}
	qsort(t, SAMPLES, sizeof(t[0]), cmp);
	*ms = t[SAMPLES / 2];
}

/* Returns the metric's value as a double, -1 if absent. */
static double
metric(struct tc_coord *tc, const char *name)
{
	struct tc_reply	 r;
	char		 pat[128];
	const char	*p;
	double		 v = -1;

	if (tc_http(tc->http_port, "GET", "/metrics", NULL, NULL, &r) == -1)
		return (-1);
	snprintf(pat, sizeof(pat), "\n%s ", name);
	if (r.body != NULL && (p = strstr(r.body, pat)) != NULL)
		v = strtod(p + strlen(pat), NULL);
	tc_reply_free(&r);
	return (v);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "agents", required_argument, NULL, 'a' },
		{ "ranks", required_argument, NULL, 'r' },
		{ "rounds", required_argument, NULL, 'k' },
		{ "busy", no_argument, NULL, 'b' },
		{ "labels", no_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*extra[] = { "-q", "--heartbeat-ms", "500", NULL };
	struct tc_coord	 tc;
	struct rlimit	 rl;
	double		 tick = 0, v, ms[3];
	size_t		 bytes[3];
	const char	*paths[3] = { "/v1/jobs/" JOB,
	    "/v1/jobs/" JOB "/stragglers", "/v1/jobs/" JOB "/nodes" };
	static const char *named[5] = { NULL, "\"ranks\": \"all\"",
	    "\"select\": \"pp=3\"", "\"one_per\": \"pp\"",
	    "\"group_of\": {\"rank\": 13, \"vary\": \"tp\"}" };
	double		 lms[5], lcpu[5], lsel[5];
	size_t		 lbytes;
	int64_t		 at = 1000000000;
	int		 n = 400, ranks = 250, rounds = 10, busy = 0, ch, i, k;
	int		 labels = 0;
	char		 node[32];
	long long	 rss;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'a': n = atoi(optarg); break;
		case 'r': ranks = atoi(optarg); break;
		case 'k': rounds = atoi(optarg); break;
		case 'b': busy = 1; break;
		case 'l': labels = 1; break;
		default:
			fprintf(stderr, "usage: dynprof-view-bench [--agents N] "
			    "[--ranks R] [--rounds K] [--busy] [--labels]\n");
			return (1);
		}
	}
	if (n < 1 || n > AGENTS_MAX || ranks < 1 || ranks > FA_PROGRESS_MAX ||
	    rounds < 1 || rounds > 1000) {
		fprintf(stderr, "view-bench: --agents 1-%d, --ranks 1-%d, "
		    "--rounds 1-1000\n", AGENTS_MAX, FA_PROGRESS_MAX);
		return (1);
	}
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	memset(&tc, 0, sizeof(tc));
	if (tc_setup_dir(&tc) == -1 || tc_start(&tc, extra) == -1) {
		fprintf(stderr, "view-bench: cannot start the coordinator\n");
		return (1);
	}
	for (i = 0; i < n; i++) {
		snprintf(node, sizeof(node), "vb-%05d", i);
		if (fa_handshake(&agents[i], tc.agent_port, node, NULL) == -1 ||
		    fa_subscribe(&agents[i], JOB, 0) == -1) {
			fprintf(stderr, "view-bench: agent %d failed\n", i);
			return (1);
		}
	}
	if (labels && attach_labels(n, ranks) == -1) {
		fprintf(stderr, "view-bench: attaching with labels failed\n");
		return (1);
	}
	for (k = 0; k < rounds; k++) {
		if (report(n, ranks, 1000 + 10 * k, busy) == -1)
			return (1);
		usleep(250000);
	}
	/* The highest tick cost over 10 ticks (5 s); with busy times, fresh
	 * ones at every tick. */
	for (k = 0; k < 10; k++) {
		beat(n);
		if (busy && report(n, ranks, 1000 + 10 * (rounds + k), 1) == -1)
			return (1);
		usleep(500000);
		if ((v = metric(&tc, "dynprof_straggler_tick_seconds")) > tick)
			tick = v;
	}
	for (i = 0; i < 3; i++)
		timed_get(&tc, n, paths[i], &ms[i], &bytes[i]);
	if (labels) {
		timed_get(&tc, n, "/v1/jobs/" JOB "/ranks?limit=10000&"
		    "label=pp%3D3", &lms[0], &lbytes);
		for (i = 1; i < 5; i++)
			lms[i] = timed_windows(&tc, n, named[i], &at,
			    &lcpu[i], &lsel[i]);
	}
	rss = procstat_status(tc.pid, "VmRSS");
	printf("ranks %d on %d nodes%s; stragglers judged at a tick in %.1f ms "
	    "(highest of 10)\n", n * ranks, n, busy ? ", with busy times" : "",
	    tick * 1000);
	for (i = 0; i < 3; i++)
		printf("GET %-28s %8.1f ms %9zu bytes (median of %d)\n",
		    paths[i], ms[i], bytes[i], SAMPLES);
	if (labels) {
		printf("GET .../ranks?label=pp=3&limit=10000 %8.1f ms "
		    "%9zu bytes (median of %d)\n", lms[0], lbytes, SAMPLES);
		for (i = 1; i < 5; i++)
			printf("POST a window with %-40s %8.1f ms (median of "
			    "%d), coordinator CPU %.1f ms, resolving %.2f ms\n",
			    named[i], lms[i], SAMPLES, lcpu[i], lsel[i]);
		printf("RESULT_LABELS ranks=%d label_get_ms=%.1f "
		    "plain_window_ms=%.1f select_ms=%.1f one_per_ms=%.1f "
		    "group_of_ms=%.1f plain_cpu_ms=%.1f select_cpu_ms=%.1f "
		    "one_per_cpu_ms=%.1f group_of_cpu_ms=%.1f "
		    "select_resolve_ms=%.2f one_per_resolve_ms=%.2f "
		    "group_of_resolve_ms=%.2f\n", n * ranks, lms[0], lms[1],
		    lms[2], lms[3], lms[4], lcpu[1], lcpu[2], lcpu[3], lcpu[4],
		    lsel[2], lsel[3], lsel[4]);
	}
	printf("coordinator RSS %lld KiB\n", rss);
	printf("RESULT ranks=%d busy=%d tick_ms=%.1f summary_ms=%.1f "
	    "summary_bytes=%zu stragglers_ms=%.1f nodes_ms=%.1f nodes_bytes=%zu "
	    "rss_kib=%lld\n", n * ranks, busy, tick * 1000, ms[0], bytes[0],
	    ms[1], ms[2], bytes[2], rss);
	for (i = 0; i < n; i++)
		fa_close(&agents[i]);
	tc_stop(&tc, SIGTERM);
	tc_cleanup(&tc);
	return (0);
}
