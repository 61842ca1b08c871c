/*
 * The status page in a real browser: the real coordinator with a running job
 * (fake agents reporting steps and events, a straggler, a window), loaded by
 * headless Chromium, whose rendered DOM is checked: the job, its counts, the
 * heat map's nodes, the straggler, the window, the feed; without a token the
 * page asks for one and shows nothing; a stream that falls behind what the
 * coordinator keeps reads the summary again instead of replaying the events
 * kept into the feed.  A screenshot is kept under the build
 * directory (tests/artefacts/ui-job.png).
 *
 * DYNPROF_UI_NODES and DYNPROF_UI_NODE_RANKS make the job bigger (the
 * screenshot of a 10,000-rank job: 625 and 16).
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakeagent.h"
#include "test_coord_util.h"

#define JOB		"ui-job"
#define VIEWER		"viewer-secret"
#define ADMIN		"admin-secret"
#define NODES_MAX	1000
#define CHROME		"/usr/bin/chromium"
#define CHROME_MS	90000		/* one browser run, at most */
#define BUDGET		"--virtual-time-budget=6000"
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
};

static const char	*journal;	/* setup's --events-journal, NULL: the
					   default */

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

/* Sends a heartbeat from every agent. */
static void
beat(struct fixture *f)
{
	int	 i;

	for (i = 0; i < f->nodes; i++)
		assert_int_equal(fa_heartbeat(&f->fa[i]), 0);
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
	const char	*extra[] = { "-q", "--agent-token-file", gtok,
	    "--admin-token-file", atok, "--viewer-token-file", vtok,
	    "--heartbeat-ms", "500", "--straggler-lag", "10",
	    journal != NULL ? "--events-journal" : NULL, journal, NULL };
	int64_t		 steps[FA_PROGRESS_MAX];
	int		 i, k;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return (-1);
	f->nodes = env_int("DYNPROF_UI_NODES", 8, NODES_MAX);
	f->node_ranks = env_int("DYNPROF_UI_NODE_RANKS", 8, FA_PROGRESS_MAX);
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
	long long	 deadline = tc_now_ms() + 10000;
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
		    "--disable-dev-shm-usage", datadir, BUDGET, flag,
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

/* Fails unless the DOM holds s. */
static void
expect(const char *dom, const char *s)
{
	if (strstr(dom, s) == NULL)
		fail_msg("the page lacks: %s", s);
}

/* Loads the job's page with the viewer token: everything is shown. */
static void
test_job_page(void **state)
{
	struct fixture	*f = *state;
	char		 url[256], dom[320], buf[256], n[32];
	char		*d;

	wait_judged(f);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/ui/#job=" JOB
	    "&token=" VIEWER, f->tc.http_port);
	snprintf(dom, sizeof(dom), "%s/dom.html", f->tc.dir);
	chrome(f, url, "--dump-dom", NULL, dom);
	d = slurp(dom);
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
	snprintf(buf, sizeof(buf), "<div class=\"v\">%s / 0</div>",
	    thousands(f->nodes, n, sizeof(n)));
	expect(d, buf);
	/* The straggler, its node. */
	snprintf(buf, sizeof(buf), "<tr class=\"straggler\"><td class=\"num\">"
	    "%d</td><td>ui-%03d</td><td class=\"num\">900</td><td class="
	    "\"num\">100</td>", f->straggler, f->straggler / f->node_ranks);
	expect(d, buf);
	/* One heat map cell per node, up to the cap. */
	if (count(d, "data-node=\"ui-") != f->nodes)
		fail_msg("%d heat map cells, not %d",
		    count(d, "data-node=\"ui-"), f->nodes);
	/* The window on its line, and how its ranks are doing. */
	expect(d, "id=\"window-1\"");
	expect(d, "#1 [1010, 1014] 0-7");
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
	 * journal's 16 were committed past it, so at most 26 - 17 came live.
	 * Replaying what is kept would add 16 more.
	 */
	n = count(d, "<li class=\"ev ev-rank");
	if (n < FIRST_EVENTS ||
	    n > FIRST_EVENTS + BURST_EVENTS - atoi(JOURNAL_SMALL) - 1)
		fail_msg("%d rank events in the live feed, not %d to %d: the "
		    "events kept replayed", n, FIRST_EVENTS, FIRST_EVENTS +
		    BURST_EVENTS - atoi(JOURNAL_SMALL) - 1);
	expect(d, "<div class=\"v\">8</div><div class=\"k\">done</div>");
	free(d);
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
		cmocka_unit_test_setup_teardown(test_feed_dropped,
		    setup_small_journal, teardown),
		cmocka_unit_test_setup_teardown(test_screenshot, setup,
		    teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests(tests, NULL, NULL));
}
