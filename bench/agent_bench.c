/*
 * dynprof-agent-bench: the agent's figures.
 *
 *  1. push -> visible: a fake coordinator (this process) pushes N configs; for
 *     each, the time from just before send() to the new generation being
 *     visible in the segment, read by this process spinning on the header.
 *     This includes loopback TCP and the agent's wakeup: an upper bound of
 *     "arriving at the agent -> visible".
 *  2. idle: 8 real ranks (rankproc, libdynprof) attached and not stepping;
 *     the agent's RSS, CPU time and wakeups (voluntary context switches, one
 *     per return from epoll_wait) over a period, connected to the fake
 *     coordinator with heartbeats every 2000 ms, then standalone.
 *
 *	dynprof-agent-bench [-n PUSHES] [-t IDLE_SECONDS]
 *
 * Binaries are found under $DYNPROF_BUILD_DIR (default: the current dir's
 * parent, i.e. run it from build/bench).
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakecoord.h"
#include "procstat.h"
#include "segment.h"

#define NRANKS	8

static int64_t
bench_now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

static int
bench_cmp(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

static void
bench_drain(struct fakecoord *fc)
{
	Dynprof__V1__AgentMessage	*m;

	while ((m = fc_recv(fc, 0)) != NULL)
		dynprof__v1__agent_message__free_unpacked(m, NULL);
}

static int
bench_push(struct agentproc *ap, struct fakecoord *fc, int n)
{
	struct segment	 seg;
	int64_t		*lat, t0, t1, deadline;
	uint64_t	 gen;
	int		 i;
	Dynprof__V1__AgentMessage *m;

	if (fc_push(fc, "bench", 1, 1, 100, 110) == -1 ||
	    (m = fc_expect(fc, DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED,
	    5000)) == NULL) {
		fprintf(stderr, "agent-bench: first push not applied\n");
		return (-1);
	}
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	if (segment_open(&seg, ap->shm, "bench", 0, 0600) != SEG_OK)
		return (-1);
	if ((lat = calloc((size_t)n, sizeof(*lat))) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		gen = (uint64_t)i + 2;
		t0 = bench_now_ns();
		if (fc_push(fc, "bench", gen, (uint32_t)i + 2, 1000 + i * 10,
		    1005 + i * 10) == -1)
			return (-1);
		deadline = t0 + 2000000000LL;
		while (atomic_load_explicit(&seg.hdr->generation,
		    memory_order_acquire) != gen) {
			if (bench_now_ns() > deadline) {
				fprintf(stderr, "agent-bench: generation %llu "
				    "never visible\n", (unsigned long long)gen);
				return (-1);
			}
		}
		t1 = bench_now_ns();
		lat[i] = t1 - t0;
		if (i % 64 == 63)
			bench_drain(fc);
	}
	qsort(lat, (size_t)n, sizeof(*lat), bench_cmp);
	printf("agent push->visible: n=%d median %.1f us, p10 %.1f, p90 %.1f, "
	    "p99 %.1f, max %.1f (target < 100 us)\n", n, lat[n / 2] / 1e3,
	    lat[n / 10] / 1e3, lat[n * 9 / 10] / 1e3, lat[n * 99 / 100] / 1e3,
	    lat[n - 1] / 1e3);
	free(lat);
	segment_close(&seg);
	return (0);
}

/* Keeps the stream alive (heartbeat every 2 s, drained) until end_ms. */
static void
bench_wait(struct fakecoord *fc, int64_t end_ms, int64_t *next_hb)
{
	Dynprof__V1__CoordinatorMessage cm =
	    DYNPROF__V1__COORDINATOR_MESSAGE__INIT;
	Dynprof__V1__Heartbeat hb = DYNPROF__V1__HEARTBEAT__INIT;

	cm.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_HEARTBEAT;
	cm.heartbeat = &hb;
	while (ap_now_ms() < end_ms) {
		if (fc != NULL && ap_now_ms() >= *next_hb) {
			fc_send(fc, &cm);
			*next_hb += 2000;
		}
		if (fc != NULL)
			bench_drain(fc);
		usleep(fc != NULL ? 100000 : 500000);
	}
}

/* Watches the agent for secs seconds, heartbeating it if fc is not NULL. */
static void
bench_idle(const char *what, pid_t pid, struct fakecoord *fc, int secs)
{
	long long	 v0, nv0, c0, v1, nv1, c1;
	int64_t		 next_hb = ap_now_ms();
	double		 tick = (double)sysconf(_SC_CLK_TCK);

	/* Let the sampler settle to its idle interval first. */
	bench_wait(fc, ap_now_ms() + 3000, &next_hb);
	v0 = procstat_status(pid, "voluntary_ctxt_switches");
	nv0 = procstat_status(pid, "nonvoluntary_ctxt_switches");
	c0 = procstat_cpu_ticks(pid);
	bench_wait(fc, ap_now_ms() + secs * 1000, &next_hb);
	v1 = procstat_status(pid, "voluntary_ctxt_switches");
	nv1 = procstat_status(pid, "nonvoluntary_ctxt_switches");
	c1 = procstat_cpu_ticks(pid);
	printf("agent idle, %s, %d ranks, %d s: RSS %lld KiB (peak %lld KiB), "
	    "CPU %.0f ms, wakeups %.2f/s (%lld voluntary + %lld involuntary "
	    "switches) (targets < 8 MiB, <= 1/s)\n", what, NRANKS, secs,
	    procstat_status(pid, "VmRSS"), procstat_status(pid, "VmHWM"),
	    (double)(c1 - c0) * 1000.0 / tick, (double)(v1 - v0) / secs,
	    v1 - v0, nv1 - nv0);
}

static int
bench_ranks(struct agentproc *ap, const char *job, pid_t *pids)
{
	char	 bin[512], log[400];
	const char *argv[] = { bin, job, "0", "1", "0", log, "hold", NULL };
	char	 rank[16];
	int	 i;

	snprintf(bin, sizeof(bin), "%s/tests/rankproc", ap_build_dir());
	snprintf(log, sizeof(log), "%s/ranks.log", ap->dir);
	for (i = 0; i < NRANKS; i++) {
		snprintf(rank, sizeof(rank), "%d", i);
		argv[2] = rank;
		if ((pids[i] = ap_spawn(ap, argv)) <= 0)
			return (-1);
	}
	return (0);
}

int
main(int argc, char **argv)
{
	struct agentproc	 ap;
	struct fakecoord	 fc;
	char			 coord[64], cfg[512];
	pid_t			 pids[NRANKS];
	int			 ch, n = 1000, secs = 10, rc = 1;
	Dynprof__V1__AgentMessage *m;

	while ((ch = getopt(argc, argv, "n:t:")) != -1) {
		switch (ch) {
		case 'n':
			n = atoi(optarg);
			break;
		case 't':
			secs = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: dynprof-agent-bench [-n PUSHES] "
			    "[-t IDLE_SECONDS]\n");
			return (1);
		}
	}
	if (n < 10 || secs < 1)
		return (1);
	signal(SIGPIPE, SIG_IGN);
	if (ap_setup(&ap) == -1 || fc_listen(&fc) == -1) {
		perror("agent-bench: setup");
		return (1);
	}
	/* Warnings only: the agent logs one line per applied push otherwise. */
	snprintf(coord, sizeof(coord), "127.0.0.1:%d", fc.port);
	{
		const char *extra[] = { "--coordinator", coord, "-q", NULL };

		if (ap_start(&ap, extra) == -1 || fc_accept(&fc, 5000) == -1 ||
		    (m = fc_expect(&fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO,
		    5000)) == NULL) {
			fprintf(stderr, "agent-bench: agent did not connect\n");
			goto out;
		}
		dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
	fc_welcome(&fc, 2000, 0, 0);
	if (bench_push(&ap, &fc, n) == -1)
		goto out;
	if (bench_ranks(&ap, "idle", pids) == -1)
		goto out;
	bench_idle("coordinator heartbeat 2000 ms", ap.pid, &fc, secs);
	ap_stop(&ap, SIGTERM, 5000);
	fc_drop(&fc);

	snprintf(cfg, sizeof(cfg), "%s/profiler_config.json", ap.dir);
	{
		const char *extra[] = { "--config-file", cfg, "--job", "idle",
		    "-q", NULL };

		if (ap_start(&ap, extra) == -1)
			goto out;
	}
	bench_idle("standalone", ap.pid, NULL, secs);
	rc = 0;
out:
	ap_cleanup(&ap);
	fc_close(&fc);
	return (rc);
}
