/*
 * The status page in a real browser: the real coordinator with a running job
 * (fake agents reporting steps and events, a straggler, a window), loaded by
 * headless Chromium, whose rendered DOM is checked: the job, its counts, the
 * heat map's nodes, the straggler, the window, the feed; without a token the
 * page asks for one and shows nothing; a stream that falls behind what the
 * coordinator keeps reads the summary again instead of replaying the events
 * kept into the feed; a stream cut plainly (through a proxy that closes it
 * and holds the page's requests while events are committed) is resumed from
 * its revision, each event shown once; past 4,096 nodes the heat map groups
 * them into cells; the heat map shows each node's busy time, and which
 * nodes' ranks give none; the page's files carry the security headers the API
 * documents, and Chromium refuses to frame it.  A screenshot is kept under
 * the build directory (tests/artefacts/ui-job.png).
 *
 * DYNPROF_UI_NODES and DYNPROF_UI_NODE_RANKS make the job bigger (the
 * screenshot of a 10,000-rank job: 625 and 16).
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakeagent.h"
#include "test_coord_util.h"

#define JOB		"ui-job"
#define VIEWER		"viewer-secret"
#define ADMIN		"admin-secret"
#define NODES_MAX	5000
#define MANY_NODES	4100	/* past the heat map's 4096 cells */
#define CHROME		"/usr/bin/chromium"
#define CHROME_MS	90000		/* one browser run, at most */
#define BUDGET		"--virtual-time-budget=6000"
/* A page the test acts on in real time (a burst of events, a cut stream)
 * must still be running when the test has acted and the page answered: its
 * virtual time runs ahead of real time on a busy machine. */
#define BUDGET_LIVE	"--virtual-time-budget=20000"
#define JOURNAL_SMALL	"16"		/* --events-journal of the burst */
#define BURST_EVENTS	26		/* burst()'s */
#define FIRST_EVENTS	6		/* rank events of setup() */
#define STEP		1000
#define SLOW_STEP	900		/* the straggler's, lag 100 */

struct fixture {
	struct tc_coord	 tc;
	struct fakeagent fa[NODES_MAX];
	int		 nodes;		/* agents, one node each */
	int		 node_ranks;
	int		 straggler;	/* its rank */
	uint64_t	 seq[NODES_MAX];
	int		 burst;	/* chrome(): a burst of events once the page
				   follows (0: none, 1: to come, 2: sent) */
	int		 cut;	/* chrome(): the page's stream cut once it
				   follows (0: none, 1: to come, 2: done) */
	pid_t		 proxy;	/* proxy_start()'s, 0: none */
	int		 proxy_port;
};

static const char	*journal;	/* setup's --events-journal, NULL: the
					   default */
static int		 many;		/* setup: MANY_NODES nodes */

/* Returns an integer from the environment within [1, max], else def. */
static int
env_int(const char *name, int def, int max)
{
	const char	*v = getenv(name);
	int		 n;

	if (v == NULL || (n = atoi(v)) < 1 || n > max)
		return (def);
	return (n);
}

/* Sends a heartbeat from the first n agents. */
static void
beat_first(struct fixture *f, int n)
{
	int	 i;

	for (i = 0; i < n; i++)
		assert_int_equal(fa_heartbeat(&f->fa[i]), 0);
}

/* Sends a heartbeat from every agent. */
static void
beat(struct fixture *f)
{
	beat_first(f, f->nodes);
}

/* A request with a token; fails the test unless the status is want. */
static json_t *
req(struct fixture *f, const char *method, const char *path,
    const char *body, const char *token, int want)
{
	struct tc_reply	 r;
	json_t		*j;

	assert_int_equal(tc_http(f->tc.http_port, method, path, body, token,
	    &r), 0);
	if (r.status != want)
		fail_msg("%s %s: %d, not %d: %s", method, path, r.status, want,
		    r.body ? r.body : "");
	j = r.json != NULL ? json_incref(r.json) : NULL;
	tc_reply_free(&r);
	return (j);
}

/* Adds a window (body) and waits until every agent applied it. */
static void
add_window(struct fixture *f, const char *body)
{
	json_t		*j;
	uint64_t	 gen;
	int		 i;

	j = req(f, "POST", "/v1/jobs/" JOB "/windows", body, ADMIN, 201);
	gen = (uint64_t)tc_int(j, "generation");
	json_decref(j);
	for (i = 0; i < f->nodes; i++)
		assert_int_equal(fa_applied(&f->fa[i], JOB, gen), 0);
}

/*
 * Starts the coordinator (viewer and operator tokens), connects the agents,
 * reports every rank at STEP but one, and schedules a window on ranks 0-7
 * that four of them start and two finish.
 */
static int
setup(void **state)
{
	struct fixture	*f;
	char		 atok[512], vtok[512], gtok[512], node[32];
	/* Thousands of agents are slow to connect one by one: 5 s
	 * heartbeats, so that the first are not silent meanwhile. */
	const char	*extra[] = { "-q", "--agent-token-file", gtok,
	    "--admin-token-file", atok, "--viewer-token-file", vtok,
	    "--heartbeat-ms", many ? "5000" : "500", "--straggler-lag", "10",
	    journal != NULL ? "--events-journal" : NULL, journal, NULL };
	int64_t		 steps[FA_PROGRESS_MAX];
	int		 i, k;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return (-1);
	f->nodes = many ? MANY_NODES : env_int("DYNPROF_UI_NODES", 8,
	    NODES_MAX);
	f->node_ranks = many ? 2 : env_int("DYNPROF_UI_NODE_RANKS", 8,
	    FA_PROGRESS_MAX);
	f->straggler = f->node_ranks + 5 < f->nodes * f->node_ranks ?
	    f->node_ranks + 5 : 0;
	if (tc_setup_dir(&f->tc) == -1 ||
	    tc_write_file(&f->tc, "agent.token", "agent-secret\n", gtok,
	    sizeof(gtok)) == -1 ||
	    tc_write_file(&f->tc, "admin.token", ADMIN "\n", atok,
	    sizeof(atok)) == -1 ||
	    tc_write_file(&f->tc, "viewer.token", VIEWER "\n", vtok,
	    sizeof(vtok)) == -1 || tc_start(&f->tc, extra) == -1) {
		tc_cleanup(&f->tc);
		free(f);
		return (-1);
	}
	*state = f;
	for (i = 0; i < f->nodes; i++) {
		snprintf(node, sizeof(node), "ui-%03d", i);
		assert_int_equal(fa_handshake(&f->fa[i], f->tc.agent_port, node,
		    "agent-secret"), 0);
		assert_int_equal(fa_subscribe(&f->fa[i], JOB, 0), 0);
		for (k = 0; k < f->node_ranks; k++)
			steps[k] = i * f->node_ranks + k == f->straggler ?
			    SLOW_STEP : STEP;
		assert_int_equal(fa_progress_steps(&f->fa[i], JOB,
		    i * f->node_ranks, steps, f->node_ranks), 0);
		if (i % 200 == 199)
			beat_first(f, i + 1);
	}
	add_window(f, "{\"start_step\": 1010, \"steps\": 5, \"ranks\": "
	    "\"0-7\"}");
	/* Ranks 0-3 (node ui-000) start it, 0 and 1 finish it. */
	for (k = 0; k < 4 && k < f->node_ranks; k++)
		assert_int_equal(fa_event(&f->fa[0], ++f->seq[0],
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, JOB, k, 1, 1010,
		    "/out/prof"), 0);
	for (k = 0; k < 2 && k < f->node_ranks; k++)
		assert_int_equal(fa_event(&f->fa[0], ++f->seq[0],
		    DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, JOB, k, 1, 1014,
		    NULL), 0);
	assert_int_equal(fa_wait_ack(&f->fa[0], f->seq[0], 5000), 0);
	return (0);
}

/* Stops the agents and the coordinator. */
static int
teardown(void **state)
{
	struct fixture	*f = *state;
	int		 i, rc;

	if (f->proxy > 0) {
		kill(f->proxy, SIGTERM);
		waitpid(f->proxy, NULL, 0);
	}
	for (i = 0; i < f->nodes; i++)
		fa_close(&f->fa[i]);
	rc = tc_finish(&f->tc);
	free(f);
	return (rc);
}

/* Waits until the coordinator judged every rank and found the straggler,
 * the agents heartbeating. */
static void
wait_judged(struct fixture *f)
{
	long long	 deadline = tc_now_ms() + 60000;
	json_t		*j;
	long long	 judged = -1, flagged = -1;

	while (tc_now_ms() < deadline) {
		beat(f);
		j = req(f, "GET", "/v1/jobs/" JOB "/stragglers", NULL, VIEWER,
		    200);
		judged = tc_int(j, "ranks_judged");
		flagged = tc_int(j, "ranks");
		json_decref(j);
		if (judged == f->nodes * f->node_ranks && flagged == 1)
			return;
		usleep(100000);
	}
	fail_msg("ranks judged %lld, stragglers %lld", judged, flagged);
}

/* Returns the value of a metric of the coordinator's, -1 if none. */
static long long
metric(struct fixture *f, const char *name)
{
	struct tc_reply	 r;
	char		 key[128];
	const char	*m;
	long long	 n = -1;

	snprintf(key, sizeof(key), "\n%s ", name);
	if (tc_http(f->tc.http_port, "GET", "/metrics", NULL, VIEWER,
	    &r) == 0 && r.status == 200 && r.body != NULL &&
	    (m = strstr(r.body, key)) != NULL)
		n = atoll(m + strlen(key));
	tc_reply_free(&r);
	return (n);
}

/*
 * Ranks 4-7 start window 1 and ranks 2-7 stop it, ranks 8-23 start window
 * 2: BURST_EVENTS events committed at once, more than a journal of
 * JOURNAL_SMALL keeps, so the page's stream falls behind what is kept and
 * is dropped.
 */
static void
burst(struct fixture *f)
{
	int	 k, i;

	for (k = 4; k < 8; k++)
		assert_int_equal(fa_event(&f->fa[0], ++f->seq[0],
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, JOB, k, 1, 1010,
		    "/out/prof"), 0);
	for (k = 2; k < 8; k++)
		assert_int_equal(fa_event(&f->fa[0], ++f->seq[0],
		    DYNPROF__V1__EVENT_KIND__EVENT_STOPPED, JOB, k, 1, 1014,
		    NULL), 0);
	for (k = 8; k < 24; k++) {
		i = k / f->node_ranks;
		assert_int_equal(fa_event(&f->fa[i], ++f->seq[i],
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, JOB, k, 2, 1020,
		    "/out/prof"), 0);
	}
	for (i = 0; i < 3; i++)
		assert_int_equal(fa_wait_ack(&f->fa[i], f->seq[i], 5000), 0);
	f->burst = 2;
}

/* Returns the file's contents (caller frees). */
static char *
slurp(const char *path)
{
	FILE	*fp;
	char	*buf;
	long	 len;

	assert_non_null(fp = fopen(path, "r"));
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	rewind(fp);
	assert_non_null(buf = calloc(1, (size_t)len + 1));
	assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
	fclose(fp);
	return (buf);
}

/*
 * A TCP proxy to the coordinator's admin port, in a child process, so that a
 * test can break the page's event stream the plain way (the connection
 * closed, no error).  SIGUSR1 arms it: once an event stream carried
 * PROXY_CUT_AFTER events to the page (what the job had committed), it ends
 * that answer between two chunks and closes the connection, writes "cut" in
 * its log, and holds every stream request that comes until SIGUSR2, which
 * forwards them.  Each request line it sees is appended to proxy.log in the
 * fixture's directory.
 */
#define PROXY_PAIRS	64
#define PROXY_HELD	8192
#define PROXY_CUT_AFTER	(FIRST_EVENTS + 1)	/* and "window scheduled" */

static volatile sig_atomic_t	 proxy_armed, proxy_cut, proxy_stop;

static void
proxy_signal(int sig)
{
	if (sig == SIGUSR1)
		proxy_armed = 1;
	else if (sig == SIGUSR2)
		proxy_cut = 0;
	else
		proxy_stop = 1;
}

/* Returns how many times needle is in hay. */
static int
count(const char *hay, const char *needle)
{
	int	 n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return (n);
}

struct proxy_pair {
	int	 c, s;			/* the page's side, the coordinator's */
	int	 events;		/* carried an event stream request */
	int	 revs;			/* events it carried to the page */
	/* Where the coordinator's chunked answer is: its head, then chunks. */
	int	 body;			/* past the head */
	unsigned tail;			/* the head's last 4 bytes */
	long	 left;			/* bytes of the chunk (and CRLF) to go */
	long	 size;			/* the chunk size line read so far */
	int	 sizing;		/* in a chunk size line */
	char	 held[PROXY_HELD];	/* the page's bytes, held while cut */
	size_t	 nheld;
};

static void
proxy_close(struct proxy_pair *p)
{
	close(p->c);
	close(p->s);
	p->c = p->s = -1;
	p->nheld = 0;
}

/* Writes all of buf to fd; -1 on error. */
static int
proxy_write(int fd, const char *buf, size_t len)
{
	ssize_t	 n;

	while (len > 0) {
		if ((n = write(fd, buf, len)) <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return (-1);
		}
		buf += n;
		len -= (size_t)n;
	}
	return (0);
}

/* Follows the coordinator's chunked answer through buf. */
static void
proxy_chunks(struct proxy_pair *p, const char *buf, size_t len)
{
	size_t	 i;
	int	 c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)buf[i];
		if (!p->body) {
			p->tail = p->tail << 8 | (unsigned)c;
			p->body = p->tail == 0x0d0a0d0a;
		} else if (p->left > 0) {
			p->left--;
		} else if (c == '\n') {
			p->left = p->size + 2;
			p->size = p->sizing = 0;
		} else if (c != '\r') {
			p->sizing = 1;
			p->size = p->size * 16 + (c <= '9' ? c - '0' :
			    (c | 0x20) - 'a' + 10);
		}
	}
}

static void
proxy_main(int lfd, int port, const char *logpath)
{
	struct proxy_pair	 pp[PROXY_PAIRS];
	struct pollfd		 pfd[1 + 2 * PROXY_PAIRS];
	struct sockaddr_in	 sin;
	struct sigaction	 sa;
	char			 buf[16384], *line, *eol;
	FILE			*log;
	int			 i, n, fd;
	ssize_t			 r;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = proxy_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if ((log = fopen(logpath, "a")) == NULL)
		_exit(2);
	for (i = 0; i < PROXY_PAIRS; i++)
		pp[i].c = pp[i].s = -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	while (!proxy_stop) {
		/*
		 * Cut between two chunks: the answer ended ("0" chunk), the
		 * connection closed.  The page reads every event it was sent
		 * (an error instead would discard those it had not read yet).
		 */
		for (i = 0; proxy_armed && i < PROXY_PAIRS; i++) {
			if (pp[i].c == -1 || !pp[i].events ||
			    pp[i].revs < PROXY_CUT_AFTER || !pp[i].body ||
			    pp[i].left != 0 || pp[i].sizing)
				continue;
			proxy_armed = 0;
			proxy_cut = 1;
			proxy_write(pp[i].c, "0\r\n\r\n", 5);
			fprintf(log, "cut\n");
			fflush(log);
			proxy_close(&pp[i]);
		}
		for (i = 0; !proxy_cut && i < PROXY_PAIRS; i++) {
			if (pp[i].c == -1 || pp[i].nheld == 0)
				continue;
			if (proxy_write(pp[i].s, pp[i].held, pp[i].nheld) == -1)
				proxy_close(&pp[i]);
			pp[i].nheld = 0;
		}
		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		for (i = 0; i < PROXY_PAIRS; i++) {
			/* Held: the page's side not read until released. */
			pfd[1 + 2 * i].fd = pp[i].nheld > 0 ? -1 : pp[i].c;
			pfd[1 + 2 * i].events = POLLIN;
			pfd[2 + 2 * i].fd = pp[i].s;
			pfd[2 + 2 * i].events = POLLIN;
		}
		if (poll(pfd, 1 + 2 * PROXY_PAIRS, 100) <= 0)
			continue;
		if (pfd[0].revents & POLLIN) {
			for (i = 0; i < PROXY_PAIRS && pp[i].c != -1; i++)
				;
			if ((fd = accept(lfd, NULL, NULL)) != -1) {
				if (i == PROXY_PAIRS) {
					close(fd);
				} else {
					pp[i].c = fd;
					pp[i].events = pp[i].revs = 0;
					pp[i].body = pp[i].sizing = 0;
					pp[i].tail = 0;
					pp[i].left = pp[i].size = 0;
					pp[i].nheld = 0;
					pp[i].s = socket(AF_INET, SOCK_STREAM,
					    0);
					if (pp[i].s == -1 || connect(pp[i].s,
					    (struct sockaddr *)&sin,
					    sizeof(sin)) == -1)
						proxy_close(&pp[i]);
				}
			}
		}
		for (i = 0; i < PROXY_PAIRS; i++) {
			if (pp[i].c != -1 && pfd[2 + 2 * i].revents != 0) {
				r = read(pp[i].s, buf, sizeof(buf) - 1);
				if (r <= 0 || proxy_write(pp[i].c, buf,
				    (size_t)r) == -1) {
					proxy_close(&pp[i]);
					continue;
				}
				buf[r] = '\0';
				if (pp[i].events) {
					pp[i].revs += count(buf, "\"rev\"");
					proxy_chunks(&pp[i], buf, (size_t)r);
				}
			}
			if (pp[i].c == -1 || pfd[1 + 2 * i].revents == 0)
				continue;
			r = read(pp[i].c, buf, sizeof(buf) - 1);
			if (r <= 0) {
				proxy_close(&pp[i]);
				continue;
			}
			buf[r] = '\0';
			for (line = buf; (eol = strstr(line, "\r\n")) != NULL;
			    line = eol + 2) {
				n = (int)(eol - line);
				if (strncmp(line, "GET ", 4) != 0)
					continue;
				fprintf(log, "%.*s\n", n, line);
				if (strstr(line, "/events?") != NULL &&
				    strstr(line, "/events?") < eol)
					pp[i].events = 1;
			}
			fflush(log);
			if (proxy_cut && pp[i].events &&
			    (size_t)r <= sizeof(pp[i].held)) {
				memcpy(pp[i].held, buf, (size_t)r);
				pp[i].nheld = (size_t)r;
				fprintf(log, "held\n");
				fflush(log);
			} else if (proxy_write(pp[i].s, buf, (size_t)r) == -1)
				proxy_close(&pp[i]);
		}
	}
	fclose(log);
	_exit(0);
}

/* Starts the proxy; sets f->proxy and f->proxy_port. */
static void
proxy_start(struct fixture *f)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	char			 logpath[320];
	int			 lfd;

	snprintf(logpath, sizeof(logpath), "%s/proxy.log", f->tc.dir);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true((lfd = socket(AF_INET, SOCK_STREAM, 0)) != -1);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(lfd, 64), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&sin, &len), 0);
	f->proxy_port = ntohs(sin.sin_port);
	assert_true((f->proxy = fork()) != -1);
	if (f->proxy == 0)
		proxy_main(lfd, f->tc.http_port, logpath);
	close(lfd);
}

/*
 * The page follows the stream through the proxy: once the page has the
 * job's events, the proxy cuts it and holds the page's requests for it;
 * ranks 4-7 start window 1 meanwhile; then the proxy lets the page's next
 * request through.
 */
static void
cut(struct fixture *f)
{
	char		 logpath[320];
	char		*log = NULL;
	long long	 deadline = tc_now_ms() + 30000;
	int		 k;

	assert_int_equal(kill(f->proxy, SIGUSR1), 0);
	snprintf(logpath, sizeof(logpath), "%s/proxy.log", f->tc.dir);
	for (;;) {
		free(log);
		log = slurp(logpath);
		if (strstr(log, "cut\n") != NULL || tc_now_ms() > deadline)
			break;
		beat(f);
		usleep(50000);
	}
	if (strstr(log, "cut\n") == NULL)
		fail_msg("the proxy never cut the stream:\n%s", log);
	free(log);
	for (k = 4; k < 8 && k < f->nodes * f->node_ranks; k++)
		assert_int_equal(fa_event(&f->fa[0], ++f->seq[0],
		    DYNPROF__V1__EVENT_KIND__EVENT_STARTED, JOB, k, 1, 1010,
		    "/out/prof"), 0);
	assert_int_equal(fa_wait_ack(&f->fa[0], f->seq[0], 30000), 0);
	assert_int_equal(kill(f->proxy, SIGUSR2), 0);
	f->cut = 2;
}

/*
 * Runs Chromium on url with two more flags (the second may be NULL), the
 * agents heartbeating while it runs; its standard output into out (NULL:
 * discarded).  Fails the test if it does not exit 0 in time.
 */
static void
chrome(struct fixture *f, const char *url, const char *flag,
    const char *flag2, const char *out)
{
	char		 profile[320], datadir[340], errlog[320];
	long long	 deadline = tc_now_ms() + CHROME_MS;
	pid_t		 pid, r;
	int		 fd, status = 0;

	if (access(CHROME, X_OK) != 0)
		fail_msg("%s is missing: scripts/deps.sh installs chromium "
		    "(the \"test\" set)", CHROME);
	snprintf(profile, sizeof(profile), "%s/chrome", f->tc.dir);
	snprintf(datadir, sizeof(datadir), "--user-data-dir=%s", profile);
	snprintf(errlog, sizeof(errlog), "%s/chrome.log", f->tc.dir);
	if ((pid = fork()) == -1)
		fail_msg("fork");
	if (pid == 0) {
		if ((fd = open(out != NULL ? out : "/dev/null", O_WRONLY |
		    O_CREAT | O_TRUNC, 0644)) != -1)
			dup2(fd, 1);
		if ((fd = open(errlog, O_WRONLY | O_CREAT | O_APPEND,
		    0644)) != -1)
			dup2(fd, 2);
		execl(CHROME, CHROME, "--headless", "--no-sandbox",
		    "--disable-gpu", "--no-first-run", "--disable-extensions",
		    "--disable-dev-shm-usage", datadir, f->burst == 1 ||
		    f->cut == 1 ? BUDGET_LIVE : BUDGET, flag,
		    flag2 != NULL ? flag2 : url, flag2 != NULL ? url : NULL,
		    (char *)NULL);
		_exit(127);
	}
	while ((r = waitpid(pid, &status, WNOHANG)) == 0 &&
	    tc_now_ms() < deadline) {
		beat(f);
		if (f->burst == 1 &&
		    metric(f, "dynprof_event_followers") >= 1)
			burst(f);
		if (f->cut == 1 &&
		    metric(f, "dynprof_event_followers") >= 1)
			cut(f);
		usleep(100000);
	}
	if (r == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("chromium did not finish in %d ms", CHROME_MS);
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("chromium failed (status %d): see %s", status, errlog);
}

/* Writes v as the page does: 10,000. */
static const char *
thousands(long long v, char *buf, size_t len)
{
	char	 digits[32];
	size_t	 n, i, o = 0;

	n = (size_t)snprintf(digits, sizeof(digits), "%lld", v);
	for (i = 0; i < n && o + 2 < len; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return (buf);
}

/* Fails unless the DOM holds s, saying what the page holds instead: what
 * follows the longest start of s it holds (a cell's other words). */
static void
expect(const char *dom, const char *s)
{
	char		 head[512];
	const char	*at = NULL, *p;
	size_t		 n, len = strlen(s);

	if (strstr(dom, s) != NULL)
		return;
	for (n = len < sizeof(head) - 1 ? len : sizeof(head) - 1; n > 3;
	    n--) {
		memcpy(head, s, n);
		head[n] = '\0';
		if ((p = strstr(dom, head)) != NULL) {
			at = p;
			break;
		}
	}
	if (at != NULL)
		fail_msg("the page lacks: %s; it has: %.300s", s, at);
	fail_msg("the page lacks: %s", s);
}

/* The job's page with the viewer token, from port, as Chromium rendered
 * it (kept as name in the fixture's directory; caller frees). */
static char *
job_dom(struct fixture *f, int port, const char *name)
{
	char	 url[256], dom[320];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ui/#job=" JOB
	    "&token=" VIEWER, port);
	snprintf(dom, sizeof(dom), "%s/%s", f->tc.dir, name);
	chrome(f, url, "--dump-dom", NULL, dom);
	return (slurp(dom));
}

/* Loads the job's page with the viewer token: everything is shown. */
static void
test_job_page(void **state)
{
	struct fixture	*f = *state;
	char		 buf[256], n[32];
	char		*d;

	wait_judged(f);
	d = job_dom(f, f->tc.http_port, "dom.html");
	expect(d, "<span id=\"job-name\">" JOB "</span>");
	expect(d, "id=\"error\" class=\"error\" hidden=\"\"");
	expect(d, "<form id=\"login\" hidden=\"\">");
	/* The counts. */
	snprintf(buf, sizeof(buf), "<div class=\"v\">%s</div><div class="
	    "\"k\">ranks</div>", thousands(f->nodes * f->node_ranks, n,
	    sizeof(n)));
	expect(d, buf);
	expect(d, "<div class=\"v\">2</div><div class=\"k\">profiling</div>");
	expect(d, "<div class=\"v\">2</div><div class=\"k\">done</div>");
	expect(d, "<div class=\"v\">1 on 1 nodes</div><div class=\"k\">"
	    "stragglers</div>");
	snprintf(buf, sizeof(buf), "<div class=\"v\">%s / 0 / 0</div><div "
	    "class=\"k\">nodes connected / lost / left</div>",
	    thousands(f->nodes, n, sizeof(n)));
	expect(d, buf);
	/* The straggler, its node. */
	snprintf(buf, sizeof(buf), "<tr class=\"straggler\"><td class=\"num\">"
	    "%d</td><td>ui-%03d</td><td class=\"num\">900</td><td class="
	    "\"num\">100</td>", f->straggler, f->straggler / f->node_ranks);
	expect(d, buf);
	/* Its busy time: these ranks give none, and the page says which. */
	expect(d, "<td class=\"num\">-</td><td class=\"num\">-</td><td>lag "
	    "100 steps</td></tr>");
	expect(d, "Busy time (step begin to the first collective): 0 ranks "
	    "give it");
	expect(d, " ranks give no busy time (judged by lag and rate only): 0, "
	    "1, 2, 3, 4, 5");
	/* One heat map cell per node, up to the cap. */
	if (count(d, "data-node=\"ui-") != f->nodes)
		fail_msg("%d heat map cells, not %d",
		    count(d, "data-node=\"ui-"), f->nodes);
	/* The window on its line, and how its ranks are doing. */
	expect(d, "id=\"window-1\"");
	expect(d, "#1 [1010, 1014] ranks 0-7");
	/* The nodes by generation. */
	expect(d, "generation ");
	/* The live feed: the job's committed events, newest first: the
	 * window added, four starts and two stops. */
	if (count(d, "<li class=\"ev ev-rank") != 6)
		fail_msg("%d rank events in the live feed, not 6",
		    count(d, "<li class=\"ev ev-rank"));
	expect(d, "rank 3 on ui-000 started window 1 at step 1010 \xe2\x86\x92 "
	    "/out/prof</li>");
	expect(d, "rank 1 on ui-000 stopped window 1 at step 1014</li>");
	expect(d, "window 1 scheduled [1010, 1014], generation 1</li>");
	free(d);
}

/*
 * A window every targeted rank skipped is shown as such, not as a success:
 * "none ran", red, its skips counted; window 1 says how many stopped; the
 * cards count every rank state; the rank lists are labelled.
 */
static void
test_window_outcomes(void **state)
{
	struct fixture	*f = *state;
	char		 body[160], buf[256];
	char		*d, *note, *end, *med;
	int		 r = f->node_ranks;	/* the first rank of ui-001 */

	snprintf(body, sizeof(body), "{\"start_step\": 1100, \"steps\": 5, "
	    "\"ranks\": \"%d\"}", r);
	add_window(f, body);
	assert_int_equal(fa_event(&f->fa[1], ++f->seq[1],
	    DYNPROF__V1__EVENT_KIND__EVENT_SKIPPED, JOB, r, 2, 1100, NULL), 0);
	assert_int_equal(fa_wait_ack(&f->fa[1], f->seq[1], 5000), 0);
	wait_judged(f);
	d = job_dom(f, f->tc.http_port, "dom-outcomes.html");
	snprintf(buf, sizeof(buf), "#2 [1100, 1104] rank %d \xc2\xb7 none ran "
	    "\xc2\xb7 1/1 finished: 1 skipped", r);
	expect(d, buf);
	expect(d, "class=\"bar st-none\"");
	if (strstr(d, "st-done") != NULL)
		fail_msg("a window is shown done in green");
	expect(d, "#1 [1010, 1014] ranks 0-7 \xc2\xb7 running \xc2\xb7 ");
	expect(d, " finished: 2 stopped");
	expect(d, "<div class=\"v\">1</div><div class=\"k\">skipped</div>");
	expect(d, "<div class=\"k\">attached</div>");
	expect(d, "<div class=\"k\">armed</div>");
	/* One median, the card's: the stragglers' note gives no second. */
	note = strstr(d, "id=\"strag-note\">");
	if (note == NULL || (end = strstr(note, "</span>")) == NULL)
		fail_msg("no stragglers' note");
	expect(note, "% under the median)</span>");
	if ((med = strstr(note, "median step")) != NULL && med < end)
		fail_msg("a second median in the stragglers' note");
	free(d);
}

/* Without a token, or with a wrong one, the page asks for one and shows no
 * job. */
static void
test_no_token(void **state)
{
	struct fixture	*f = *state;
	char		 url[256], dom[320];
	char		*d;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ui/",
	    f->tc.http_port);
	snprintf(dom, sizeof(dom), "%s/dom0.html", f->tc.dir);
	chrome(f, url, "--dump-dom", NULL, dom);
	d = slurp(dom);
	expect(d, "<form id=\"login\">");
	expect(d, "this coordinator needs a token");
	if (strstr(d, JOB) != NULL)
		fail_msg("the page shows the job without a token");
	free(d);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ui/#token=wrong",
	    f->tc.http_port);
	chrome(f, url, "--dump-dom", NULL, dom);
	d = slurp(dom);
	expect(d, "the coordinator refused this token");
	if (strstr(d, JOB) != NULL)
		fail_msg("the page shows the job with a wrong token");
	free(d);
}

/*
 * The page's stream falls behind what the coordinator keeps (a burst of
 * events past a small journal): dropped, then 410 for its revision.  It
 * reads the summary again (every rank of window 1 done) and follows from
 * its revision, without replaying the events kept into the feed.
 */
static void
test_feed_dropped(void **state)
{
	struct fixture	*f = *state;
	char		 url[256], dom[320];
	char		*d;
	int		 n;

	wait_judged(f);
	add_window(f, "{\"start_step\": 1020, \"steps\": 5, \"ranks\": "
	    "\"8-23\"}");
	f->burst = 1;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ui/#job=" JOB
	    "&token=" VIEWER, f->tc.http_port);
	snprintf(dom, sizeof(dom), "%s/dom.html", f->tc.dir);
	chrome(f, url, "--dump-dom", NULL, dom);
	if (f->burst != 2)
		fail_msg("the page never followed the event stream");
	if (metric(f, "dynprof_event_followers_dropped_total") < 1)
		fail_msg("the burst did not drop the page's stream");
	d = slurp(dom);
	/*
	 * The first look's four starts and two stops, and those of the burst
	 * the page had live before it was dropped: a drop means more than the
	 * journal's 16 entries were committed past it.  The burst's last stop
	 * finishes window 1, whose "done" is an entry of the journal too, so
	 * the burst made 27 entries and at most 27 - 17 of its rank events
	 * came live.  Replaying what is kept would add 15 more.
	 */
	n = count(d, "<li class=\"ev ev-rank");
	if (n < FIRST_EVENTS ||
	    n > FIRST_EVENTS + BURST_EVENTS + 1 - atoi(JOURNAL_SMALL) - 1)
		fail_msg("%d rank events in the live feed, not %d to %d: the "
		    "events kept replayed", n, FIRST_EVENTS, FIRST_EVENTS +
		    BURST_EVENTS + 1 - atoi(JOURNAL_SMALL) - 1);
	expect(d, "<div class=\"v\">8</div><div class=\"k\">done</div>");
	free(d);
}

/*
 * A plain break of the page's event stream (the connection closed, nothing
 * said): the page asks again from the revision it had, so the events
 * committed while it was away come once each, and neither a 410 nor a
 * dropped stream made it read the summary again.
 */
static void
test_feed_resumed(void **state)
{
	struct fixture	*f = *state;
	char		 logpath[320];
	char		*d, *log, *since;

	wait_judged(f);
	proxy_start(f);
	f->cut = 1;
	d = job_dom(f, f->proxy_port, "dom.html");
	if (f->cut != 2)
		fail_msg("the page never followed the event stream");
	snprintf(logpath, sizeof(logpath), "%s/proxy.log", f->tc.dir);
	log = slurp(logpath);
	print_message("the proxy saw:\n%s", log);
	if (count(log, "cut\n") < 1)
		fail_msg("the proxy cut no event stream");
	/* The page's next stream request names the revision it had. */
	if ((since = strstr(strstr(log, "cut\n"), "/events?follow=1&since=")) ==
	    NULL)
		fail_msg("after the cut, no stream request with since=");
	/* The first look's four starts and two stops, then the four starts
	 * committed while the stream was cut: each once. */
	if (count(d, "<li class=\"ev ev-rank") != FIRST_EVENTS + 4)
		fail_msg("%d rank events in the live feed, not %d",
		    count(d, "<li class=\"ev ev-rank"), FIRST_EVENTS + 4);
	expect(d, "rank 7 on ui-000 started window 1 at step 1010");
	if (strstr(d, "events missed") != NULL)
		fail_msg("a plain break was taken for missed events");
	if (metric(f, "dynprof_event_followers_dropped_total") != 0)
		fail_msg("the coordinator dropped the page's stream");
	free(log);
	free(d);
}

/* setup, with MANY_NODES nodes. */
static int
setup_many(void **state)
{
	int	 rc;

	many = 1;
	rc = setup(state);
	many = 0;
	return (rc);
}

/*
 * Past 4,096 nodes the heat map groups them: 4,100 nodes of 2 ranks, two
 * nodes a cell, 2,050 cells, each named by its first and last node and
 * counting the ranks of both; the straggler's cell says so.
 */
static void
test_heat_grouped(void **state)
{
	struct fixture	*f = *state;
	char		 buf[256], n[32];
	char		*d;
	int		 cells = (MANY_NODES + 1) / 2;

	wait_judged(f);
	d = job_dom(f, f->tc.http_port, "dom-many.html");
	if (count(d, "data-node=\"ui-") != cells)
		fail_msg("%d heat map cells, not %d",
		    count(d, "data-node=\"ui-"), cells);
	expect(d, "(4,100 nodes, 8,200 ranks, 2 nodes a cell; click a cell "
	    "for its ranks)");
	expect(d, "data-node=\"ui-000 \xe2\x80\xa6 ui-001\"");
	/* The straggler (rank 7) on ui-003, with ui-002 in its cell. */
	snprintf(buf, sizeof(buf), "title=\"ui-002 \xe2\x80\xa6 ui-003: 4 ranks, "
	    "steps %d-%s, 1 straggling\"", SLOW_STEP, thousands(STEP, n,
	    sizeof(n)));
	expect(d, buf);
	free(d);
}

/*
 * Busy time on the heat map (#heat=busy: that view chosen): the ranks of
 * ui-000 to ui-005 give a busy time of 20 ms, rank 16 (on ui-002) 60 ms (a
 * straggler, once judged twice), those of ui-006 and ui-007 none; rank 16
 * arrives 10 ms after the others at each of 16 steps' collectives.  Each cell's title says its longest busy time
 * against the job's median, or that its ranks give none (hatched, as the
 * legend says); the stragglers' text names the ranks that give none.
 */
static void
test_heat_busy(void **state)
{
	struct fixture	*f = *state;
	long long	 deadline = tc_now_ms() + 60000, busy = -1, over = -1;
	long long	 last = -1;
	int64_t		 steps[FA_PROGRESS_MAX], base[FA_PROGRESS_MAX];
	uint32_t	 us[FA_PROGRESS_MAX];
	char		 url[256], dom[320];
	struct timespec	 ts;
	char		*d, *cell, *end, *hatch;
	json_t		*j;
	int		 i, k;

	if (f->nodes != 8 || f->node_ranks != 8)
		skip();
	/* Their arrivals at steps 100-115, rank 16 10 ms after the others. */
	clock_gettime(CLOCK_REALTIME, &ts);
	for (i = 0; i < 6; i++) {
		for (k = 0; k < f->node_ranks; k++) {
			steps[k] = i * f->node_ranks + k == f->straggler ?
			    SLOW_STEP : STEP;
			us[k] = i * f->node_ranks + k == 16 ? 60000 : 20000;
			base[k] = (int64_t)ts.tv_sec * 1000000 - 120 *
			    FA_ARRIVE_STEP_US + (i * f->node_ranks + k == 16 ?
			    10000 : 0);
		}
		assert_int_equal(fa_progress_arrive(&f->fa[i], JOB,
		    i * f->node_ranks, steps, us, f->node_ranks, 100, 16,
		    base), 0);
	}
	while (tc_now_ms() < deadline && (busy != 48 || over != 1 ||
	    last != 16)) {
		beat(f);
		j = req(f, "GET", "/v1/jobs/" JOB "/stragglers", NULL, VIEWER,
		    200);
		busy = tc_int(j, "busy_ranks");
		over = tc_int(j, "busy");
		last = json_is_true(json_object_get(json_object_get(j,
		    "last_arriver"), "flagged")) ? tc_int(j,
		    "last_arriver.rank") : -1;
		json_decref(j);
		usleep(100000);
	}
	if (busy != 48 || over != 1 || last != 16)
		fail_msg("%lld ranks judged with a busy time (not 48), %lld "
		    "flagged busy (not 1), last arriver %lld (not 16)", busy,
		    over, last);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ui/#job=" JOB
	    "&heat=busy&token=" VIEWER, f->tc.http_port);
	snprintf(dom, sizeof(dom), "%s/dom-busy.html", f->tc.dir);
	chrome(f, url, "--dump-dom", NULL, dom);
	d = slurp(dom);
	expect(d, "title=\"ui-002: 8 ranks, steps 1,000-1,000, 1 straggling, "
	    "busy 60.0 ms (3.00x the median)\"");
	expect(d, "title=\"ui-003: 8 ranks, steps 1,000-1,000, busy 20.0 ms "
	    "(1.00x the median)\"");
	expect(d, "title=\"ui-006: 8 ranks, steps 1,000-1,000, no busy "
	    "time\"");
	expect(d, "</i>no busy time</span>");
	expect(d, "</i>30% over it or more</span>");
	/* The cells of nodes with no busy time are hatched, the others not. */
	for (i = 0; i < 8; i++) {
		snprintf(url, sizeof(url), "data-node=\"ui-%03d\"", i);
		if ((cell = strstr(d, url)) == NULL)
			fail_msg("no cell for ui-%03d", i);
		while (cell > d && strncmp(cell, "<div", 4) != 0)
			cell--;
		if ((end = strchr(cell, '>')) == NULL)
			fail_msg("ui-%03d: no end to its cell", i);
		hatch = strstr(cell, "repeating-linear-gradient");
		if ((hatch != NULL && hatch < end) != (i >= 6))
			fail_msg("ui-%03d: hatched or not wrongly: %.*s", i,
			    (int)(end - cell), cell);
	}
	/* Their step time from their marks, and the least a straggler
	 * stands out by. */
	expect(d, "(busy_change), and by more than 1.5 ms (5% of its steps of "
	    "30.0 ms). ");
	expect(d, "16 ranks give no busy time (judged by lag and rate only): "
	    "48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63.");
	/* Rank 16 also arrives last at every step: both signals say it. */
	expect(d, "<td>busy 3.00x the median, last to arrive at 100% of "
	    "steps, 10.0 ms after the median</td>");
	expect(d, " Last to arrive at the collective: rank 16, at 16 of the "
	    "last 16 steps (100%), 10.0 ms after the median (last).");
	free(d);
}

/*
 * The page's files carry the headers docs/admin-api.md names (a
 * Content-Security-Policy allowing only this origin and no framing,
 * Referrer-Policy: no-referrer, nosniff), and Chromium refuses to show
 * the page in a frame of another page, while it frames /healthz, which
 * has no such header.
 */
static void
test_headers(void **state)
{
	struct fixture	*f = *state;
	const char	*paths[] = { "/ui/", "/ui/app.js", "/ui/style.css" };
	const char	*want[] = {
	    "\r\nContent-Security-Policy: default-src 'none'; ",
	    "; frame-ancestors 'none'",
	    "connect-src 'self'", "script-src 'self'",
	    "\r\nReferrer-Policy: no-referrer\r\n",
	    "\r\nX-Content-Type-Options: nosniff\r\n" };
	char		 page[320], url[340], errlog[320], html[400];
	char		*log;
	struct tc_reply	 r;
	size_t		 i, k;
	FILE		*fp;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		assert_int_equal(tc_expect(&f->tc, "GET", paths[i], NULL, 200,
		    &r), 0);
		for (k = 0; k < sizeof(want) / sizeof(want[0]); k++)
			if (strstr(r.head, want[k]) == NULL)
				fail_msg("%s: no \"%s\" in:\n%s", paths[i],
				    want[k], r.head);
		tc_reply_free(&r);
	}
	snprintf(errlog, sizeof(errlog), "%s/chrome.log", f->tc.dir);
	for (i = 0; i < 2; i++) {
		snprintf(page, sizeof(page), "%s/frame%zu.html", f->tc.dir, i);
		snprintf(html, sizeof(html), "<html><body><iframe src=\""
		    "http://127.0.0.1:%d%s\"></iframe></body></html>\n",
		    f->tc.http_port, i == 0 ? "/healthz" : "/ui/");
		assert_non_null(fp = fopen(page, "w"));
		fputs(html, fp);
		fclose(fp);
		truncate(errlog, 0);
		snprintf(url, sizeof(url), "file://%s", page);
		chrome(f, url, "--enable-logging=stderr", "--v=0", NULL);
		log = slurp(errlog);
		if ((i == 0) != (strstr(log, "frame-ancestors 'none'") == NULL))
			fail_msg("%s in a frame: %s", i == 0 ? "/healthz" :
			    "/ui/", i == 0 ? "refused" : "not refused");
		free(log);
	}
}

/* setup, with a journal of JOURNAL_SMALL events. */
static int
setup_small_journal(void **state)
{
	int	 rc;

	journal = JOURNAL_SMALL;
	rc = setup(state);
	journal = NULL;
	return (rc);
}

/* A screenshot of the job's page, kept as a test artefact. */
static void
test_screenshot(void **state)
{
	struct fixture	*f = *state;
	const char	*b = getenv("DYNPROF_BUILD_DIR");
	char		 dir[512], png[600], flag[640], url[256];
	struct stat	 sb;
	char		*d;

	wait_judged(f);
	snprintf(dir, sizeof(dir), "%s/tests/artefacts", b != NULL ? b : ".");
	mkdir(dir, 0755);
	snprintf(png, sizeof(png), "%s/ui-job.png", dir);
	unlink(png);
	snprintf(flag, sizeof(flag), "--screenshot=%s", png);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ui/#job=" JOB
	    "&token=" VIEWER, f->tc.http_port);
	chrome(f, url, "--window-size=1400,1400", flag, NULL);
	if (stat(png, &sb) == -1 || sb.st_size < 20000)
		fail_msg("no screenshot, or a blank one, at %s", png);
	d = slurp(png);
	assert_memory_equal(d, "\x89PNG", 4);
	free(d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_job_page, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_token, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_outcomes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_feed_dropped,
		    setup_small_journal, teardown),
		cmocka_unit_test_setup_teardown(test_screenshot, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_feed_resumed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_headers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_heat_grouped, setup_many,
		    teardown),
		cmocka_unit_test_setup_teardown(test_heat_busy, setup,
		    teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
