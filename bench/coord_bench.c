/*
 * dynprof-coord-bench: the coordinator alone, through real agent links.
 *
 * usage: dynprof-coord-bench [--agents N] [--requests K] [--idle M]
 *            [--events E] [--coordinator PATH]
 *
 * Starts dynprof-coordinator (port 0, a private state directory), then:
 *  1. push: N fake agents (default 100) subscribe to one job; K times (default
 *     50) an admin request (PUT /v1/jobs/J/config, a new generation each time)
 *     is sent and every agent's link is watched until its JobConfig of that
 *     generation arrives.  Reports the time from sending the request to the
 *     last agent having it (median, p10, p90, max) and per agent.
 *  2. idle: M agents in all (default 1000) connected and idle; reports the
 *     coordinator's RSS (VmRSS), before any agent and with them.
 *  3. events: 10 agents each send E (default 20000) new rank events as fast as
 *     the links take them; reports events committed per second (the time to
 *     the last EventAck).
 * Prints "RESULT ..." last.
 */

#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakeagent.h"
#include "test_coord_util.h"

#define CONFIG	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG
#define ACK	DYNPROF__V1__COORDINATOR_MESSAGE__BODY_ACK

static double
bench_now_s(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

static int
bench_cmp(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

static double
bench_pct(double *v, size_t n, double p)
{
	size_t	 i;

	qsort(v, n, sizeof(*v), bench_cmp);
	i = (size_t)(p * (double)(n - 1) + 0.5);
	return (v[i]);
}

static long
bench_rss_kib(pid_t pid)
{
	char	 path[64], line[256];
	FILE	*f;
	long	 kib = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return (-1);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	fclose(f);
	return (kib);
}

/* Opens a connection and sends an HTTP request without waiting. */
static int
bench_http_send(int port, const char *method, const char *path,
    const char *body)
{
	char			 req[2048];
	int			 fd, len;

	if ((fd = tc_connect(port)) == -1)
		return (-1);
	len = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n%s", method, path,
	    strlen(body), body);
	if (write(fd, req, (size_t)len) != len) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/*
 * One admin request; waits until every agent has a JobConfig of a newer
 * generation than *gen.  Fills lat[] per agent, returns the time to the last
 * one (seconds) or -1.
 */
static double
bench_one_push(struct tc_coord *tc, struct fakeagent *fa, int n, int i,
    uint64_t *gen, double *lat, double *http_s)
{
	struct pollfd	*pfd;
	char		 body[256], buf[4096];
	double		 t0, last = 0;
	uint64_t	 want = *gen + 1;
	int		 hfd, left = n, k, http_open = 1;
	ssize_t		 r;
	fa_msg		*m;

	if ((pfd = calloc((size_t)n + 1, sizeof(*pfd))) == NULL)
		return (-1);
	for (k = 0; k < n; k++)
		lat[k] = -1;
	snprintf(body, sizeof(body), "{\"start_step\": -1, \"profiler_level\": "
	    "%d, \"bench_iteration\": %d}", i % 3, i);
	t0 = bench_now_s();
	if ((hfd = bench_http_send(tc->http_port, "PUT",
	    "/v1/jobs/bench/config", body)) == -1) {
		free(pfd);
		return (-1);
	}
	while (left > 0 || http_open) {
		for (k = 0; k < n; k++) {
			pfd[k].fd = lat[k] < 0 ? fa[k].fd : -1;
			pfd[k].events = POLLIN;
		}
		pfd[n].fd = http_open ? hfd : -1;
		pfd[n].events = POLLIN;
		if (poll(pfd, (nfds_t)n + 1, 10000) <= 0) {
			fprintf(stderr, "push %d: timed out, %d agents left\n",
			    i, left);
			break;
		}
		if (pfd[n].revents != 0) {
			r = read(hfd, buf, sizeof(buf));
			if (r <= 0) {
				http_open = 0;
				*http_s = bench_now_s() - t0;
			}
		}
		for (k = 0; k < n; k++) {
			if (pfd[k].fd == -1 || pfd[k].revents == 0)
				continue;
			while ((m = fa_recv(&fa[k], 0)) != NULL) {
				if (m->body_case == CONFIG &&
				    m->config->generation >= want &&
				    lat[k] < 0) {
					lat[k] = bench_now_s() - t0;
					last = lat[k];
					*gen = m->config->generation;
					fa_applied(&fa[k], "bench",
					    m->config->generation);
					left--;
				}
				fa_free(m);
			}
		}
	}
	close(hfd);
	free(pfd);
	return (left == 0 ? last : -1);
}

/* Each agent sends per events; returns events committed per second. */
static double
bench_events(struct fakeagent *fa, int nagents, int per)
{
	double		 t0, t1;
	int		 a, e;
	uint64_t	 seq;
	fa_msg		*m;

	t0 = bench_now_s();
	for (a = 0; a < nagents; a++)
		fa_subscribe(&fa[a], "bench-ev", 0);
	/* Chunks of 100 events per write, as an agent replaying its queue
	 * would; agents interleaved so the coordinator reads from all. */
	for (e = 1; e <= per; e++) {
		for (a = 0; a < nagents; a++) {
			if (e % 100 == 1)
				fa_cork(&fa[a]);
			seq = fa[a].next_seq++;
			fa_event(&fa[a], seq,
			    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, "bench-ev",
			    a * 1000 + (int)(seq % 1000),
			    (uint32_t)(seq / 1000 + 1), (int64_t)seq, "/o");
			if (e % 100 == 0 || e == per)
				fa_flush(&fa[a]);
		}
		/* Drain acks now and then so neither side's buffers fill. */
		if (e % 500 == 0)
			for (a = 0; a < nagents; a++)
				while ((m = fa_recv(&fa[a], 0)) != NULL)
					fa_free(m);
	}
	for (a = 0; a < nagents; a++) {
		for (;;) {
			if ((m = fa_recv_type(&fa[a], ACK, 30000)) == NULL)
				return (-1);
			seq = m->ack->seq;
			fa_free(m);
			if (seq + 1 >= fa[a].next_seq)
				break;
		}
	}
	t1 = bench_now_s();
	return ((double)nagents * per / (t1 - t0));
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "agents", required_argument, NULL, 'n' },
		{ "requests", required_argument, NULL, 'k' },
		{ "idle", required_argument, NULL, 'i' },
		{ "events", required_argument, NULL, 'e' },
		{ "coordinator", required_argument, NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*extra[] = { "-q", "--heartbeat-ms", "30000", NULL };
	struct tc_coord	 tc;
	struct fakeagent *fa;
	struct rlimit	 rl;
	char		 node[64], builddir[512];
	double		*alls, *per, *https, t, http_s = 0, evs = 0;
	uint64_t	 gen = 0;
	long		 rss0, rss_push, rss_idle;
	int		 nagents = 100, nreq = 50, nidle = 1000, nev = 20000;
	int		 ch, i, k, done = 0, npush = 0;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			nagents = atoi(optarg);
			break;
		case 'k':
			nreq = atoi(optarg);
			break;
		case 'i':
			nidle = atoi(optarg);
			break;
		case 'e':
			nev = atoi(optarg);
			break;
		case 'c':
			/* tc_start finds DIR/server/dynprof-coordinator. */
			snprintf(builddir, sizeof(builddir), "%s", optarg);
			if (strlen(builddir) > 28 && strcmp(builddir +
			    strlen(builddir) - 27, "/server/dynprof-coordinator")
			    == 0)
				builddir[strlen(builddir) - 27] = '\0';
			setenv("DYNPROF_BUILD_DIR", builddir, 1);
			break;
		default:
			fprintf(stderr, "usage: dynprof-coord-bench [--agents N]"
			    " [--requests K] [--idle M] [--events E]"
			    " [--coordinator PATH]\n");
			return (1);
		}
	}
	if (nagents < 1 || nreq < 1 || nidle < nagents || nev < 1 ||
	    nagents < 10) {
		fprintf(stderr, "need --agents >= 10, --idle >= --agents\n");
		return (1);
	}
	if (getenv("DYNPROF_BUILD_DIR") == NULL)
		setenv("DYNPROF_BUILD_DIR", "..", 1);
	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		if (rl.rlim_cur < (rlim_t)nidle * 2 + 64)
			fprintf(stderr, "warning: RLIMIT_NOFILE %llu is low for "
			    "%d agents\n", (unsigned long long)rl.rlim_cur,
			    nidle);
	}
	fa = calloc((size_t)nidle, sizeof(*fa));
	alls = calloc((size_t)nreq, sizeof(*alls));
	per = calloc((size_t)nreq * nagents, sizeof(*per));
	https = calloc((size_t)nreq, sizeof(*https));
	if (fa == NULL || alls == NULL || per == NULL || https == NULL)
		return (2);
	if (tc_setup_dir(&tc) == -1 || tc_start(&tc, extra) == -1) {
		fprintf(stderr, "cannot start the coordinator (DYNPROF_BUILD_DIR"
		    "=%s)\n", getenv("DYNPROF_BUILD_DIR"));
		tc_cleanup(&tc);
		return (2);
	}
	usleep(200000);
	rss0 = bench_rss_kib(tc.pid);

	/* 1. push to N subscribed agents. */
	for (i = 0; i < nagents; i++) {
		snprintf(node, sizeof(node), "bench-node-%05d", i);
		if (fa_handshake(&fa[i], tc.agent_port, node, NULL) == -1 ||
		    fa_subscribe(&fa[i], "bench", 0) == -1) {
			fprintf(stderr, "agent %d: handshake failed\n", i);
			goto out;
		}
	}
	usleep(200000);
	for (i = 0; i < nreq; i++) {
		t = bench_one_push(&tc, fa, nagents, i, &gen,
		    per + (size_t)npush * nagents, &http_s);
		if (t < 0) {
			fprintf(stderr, "push %d failed\n", i);
			goto out;
		}
		alls[npush] = t * 1000;
		https[npush] = http_s * 1000;
		for (k = 0; k < nagents; k++)
			per[(size_t)npush * nagents + k] *= 1000;
		npush++;
		usleep(20000);
	}
	rss_push = bench_rss_kib(tc.pid);
	printf("push: %d agents, %d requests: request -> last agent has it: "
	    "median %.3f ms, p10 %.3f, p90 %.3f, max %.3f\n", nagents, npush,
	    bench_pct(alls, npush, 0.5), bench_pct(alls, npush, 0.1),
	    bench_pct(alls, npush, 0.9), bench_pct(alls, npush, 1.0));
	printf("push: per agent: median %.3f ms, p90 %.3f, max %.3f; "
	    "HTTP answer complete: median %.3f ms\n",
	    bench_pct(per, (size_t)npush * nagents, 0.5),
	    bench_pct(per, (size_t)npush * nagents, 0.9),
	    bench_pct(per, (size_t)npush * nagents, 1.0),
	    bench_pct(https, npush, 0.5));

	/* 2. idle agents. */
	for (i = nagents; i < nidle; i++) {
		snprintf(node, sizeof(node), "bench-node-%05d", i);
		if (fa_handshake(&fa[i], tc.agent_port, node, NULL) == -1) {
			fprintf(stderr, "agent %d: handshake failed\n", i);
			nidle = i;
			break;
		}
	}
	usleep(500000);
	rss_idle = bench_rss_kib(tc.pid);

	/* 3. events from 10 agents. */
	evs = bench_events(fa, 10, nev);
	if (evs < 0) {
		fprintf(stderr, "events: acks did not come\n");
		goto out;
	}
	printf("events: 10 agents x %d new events: %.0f events/s committed "
	    "and acknowledged\n", nev, evs);

	printf("rss: %ld KiB at start, %ld KiB after the push runs, %ld KiB "
	    "with %d idle agents\n",
	    rss0, rss_push, rss_idle, nidle);
	printf("RESULT agents=%d requests=%d push_all_median_ms=%.3f "
	    "push_all_p10_ms=%.3f push_all_p90_ms=%.3f push_all_max_ms=%.3f "
	    "events_per_s=%.0f rss_start_kib=%ld rss_idle_kib=%ld "
	    "idle_agents=%d\n", nagents, npush, bench_pct(alls, npush, 0.5),
	    bench_pct(alls, npush, 0.1), bench_pct(alls, npush, 0.9),
	    bench_pct(alls, npush, 1.0), evs, rss0, rss_idle, nidle);
	done = 1;
out:
	for (i = 0; i < nidle; i++)
		if (fa[i].fd > 0)
			fa_close(&fa[i]);
	if (tc_stop(&tc, SIGTERM) != 0)
		fprintf(stderr, "coordinator did not stop cleanly: %s\n", tc.log);
	else
		tc_cleanup(&tc);
	free(fa);
	free(alls);
	free(per);
	free(https);
	return (done ? 0 : 2);
}
