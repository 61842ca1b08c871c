/*
 * dynprof-loadgen: many agents in one process, against one coordinator.
 *
 * One process, one libevent loop, N AgentLink connections speaking the real
 * protocol (common/frame.h framing, protobuf-c messages): each says Hello,
 * subscribes to a job, answers every JobConfig with Applied as a real agent does,
 * and sends heartbeats.  Two measurements:
 *
 *  fanout  the loadgen itself sends the admin request (PUT /v1/jobs/J/config)
 *          and times until all N connections have received the new generation,
 *          then until the coordinator's GET /v1/jobs/J counts all N nodes
 *          applied it; --changes times, median and max.
 *  events  every connection streams AgentEvent rank events with distinct
 *          (job, rank, window, kind) keys, --inflight unacknowledged at most;
 *          events/s until every one is acknowledged (committed), and until
 *          GET /v1/jobs/J counts every rank done.
 *
 * --mode progress (loadgen_progress.c): the ranks of every connection step,
 * reported each 500 ms for --progress-s seconds; the coordinator's and the
 * store's CPU per second.
 *
 * With --tls-dir DIR (deploy/tls/mkcerts.sh's: DIR/ca.crt and DIR/ca.key),
 * every connection is mutual TLS with a certificate of its own naming its node,
 * issued here by that CA before the clock starts (openssl's command line would
 * take minutes for 10,000): connect_s then times TCP, the TLS handshake, hello,
 * welcome and subscribe.  With --tls-sessions FILE as well, each connection
 * offers the session of its line in FILE (if there is one) and the sessions
 * held at the end are written back: a second run against the coordinator
 * restarted with the same state directory resumes them (RESULT resumed=N).
 *
 * With --coordinator-pid, the coordinator's RSS (now and peak) and CPU time are
 * read from /proc; with --store-pids, the CPU time of the store's processes
 * (etcd's members) over the events phase, summed.  The last line is "RESULT key=value ..." for scripts.
 */

#include <sys/socket.h>
#include <sys/types.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <jansson.h>

#include <openssl/ssl.h>

#include "parts_loadgen.h"

static void	loadgen_events_start(struct loadgen *);
static void	loadgen_finish(struct loadgen *);

/* Ends the run as failed, saying why. */
static void
loadgen_fail(struct loadgen *lg, const char *why)
{
	fprintf(stderr, "loadgen: %s\n", why);
	lg->failed = 1;
	event_base_loopbreak(lg->base);
}

/* Opens connections up to --concurrency; all ready: the next phase. */
static void
loadgen_connect_more(struct loadgen *lg)
{
	char	 msg[128];

	if (lg->phase != LOADGEN_PHASE_CONNECT)
		return;
	while (lg->next_connect < lg->n && lg->connecting < lg->concurrency) {
		if (loadgen_conn_open(lg, &lg->conns[lg->next_connect++]) == -1) {
			loadgen_fail(lg, "cannot open a connection");
			return;
		}
	}
	if (lg->ready + lg->dead < lg->n || lg->next_connect < lg->n)
		return;
	if (lg->dead > 0) {
		snprintf(msg, sizeof(msg), "%d of %d connections failed",
		    lg->dead, lg->n);
		loadgen_fail(lg, msg);
		return;
	}
	lg->connect_s = (loadgen_now_ns() - lg->t_start) / 1e9;
	printf("connected: %d agents in %.2f s (hello, welcome, subscribe)\n",
	    lg->ready, lg->connect_s);
	fflush(stdout);
	if (lg->coord_pid > 0)
		loadgen_proc_read(lg->coord_pid, &lg->proc_before);
	lg->store_before = loadgen_procs_cpu(lg->store_pids, lg->nstore_pids);
	loadgen_proc_read(getpid(), &lg->self_before);
	if (lg->do_failover)
		loadgen_failover_start(lg);
	else if (lg->do_progress)
		loadgen_progress_start(lg);
	else if (lg->do_fanout) {
		lg->phase = LOADGEN_PHASE_FANOUT;
		lg->trial = -1;
		loadgen_fanout_trial(lg);
	} else if (lg->do_events)
		loadgen_events_start(lg);
	else
		loadgen_finish(lg);
}

/* Called from loadgen_on_config's count: checks after each read batch. */
static void
loadgen_tick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;

	(void)fd;
	(void)what;
	if (lg->phase == LOADGEN_PHASE_FANOUT && lg->t_all > 0)
		loadgen_fanout_check(lg);
	if (lg->phase == LOADGEN_PHASE_EVENTS && lg->ev_t_acked != 0 &&
	    lg->ev_t_status == 0 && lg->status_polls == 0)
		loadgen_events_start(lg);	/* go on to the status check */
}

/* --- events ------------------------------------------------------------- */

/* The ranks the job's summary shows done (their last event: stopped). */
static int
loadgen_count_ranks_done(struct loadgen *lg, const char *body, size_t len)
{
	json_t		*root, *v;
	json_error_t	 err;
	int		 count;

	(void)lg;
	if ((root = json_loadb(body, len, 0, &err)) == NULL)
		return (-1);
	v = json_object_get(json_object_get(root, "rank_counts"), "done");
	count = json_is_integer(v) ? (int)json_integer_value(v) : -1;
	json_decref(root);
	return (count);
}

static void
loadgen_status_done(void *arg, int code, const char *body, size_t len)
{
	struct loadgen	*lg = arg;
	int		 count;

	if (code != 200) {
		fprintf(stderr, "loadgen: GET %s: HTTP %d\n", lg->uri, code);
		loadgen_fail(lg, "status request failed");
		return;
	}
	count = loadgen_count_ranks_done(lg, body, len);
	if (count == -1 && lg->status_polls == 1) {
		/* An older coordinator's status: no counts to wait for. */
		fprintf(stderr, "loadgen: the status counts no rank by state: "
		    "not waiting for it\n");
		lg->ev_t_status = loadgen_now_ns();
		loadgen_finish(lg);
		return;
	}
	if (count == lg->n * lg->ranks_per) {
		lg->ev_t_status = loadgen_now_ns();
		loadgen_finish(lg);
		return;
	}
	if (++lg->status_polls > 2000) {
		fprintf(stderr, "loadgen: the status shows %d of %d ranks with "
		    "their last event\n", count, lg->n * lg->ranks_per);
		loadgen_fail(lg, "status never caught up with the events");
		return;
	}
	loadgen_http_request(lg->http, "GET", lg->uri, NULL,
	    loadgen_status_done, lg);
}

/* Starts the events; called again once all are acked: the status. */
static void
loadgen_events_start(struct loadgen *lg)
{
	int	 i;

	if (lg->phase != LOADGEN_PHASE_EVENTS) {
		lg->phase = LOADGEN_PHASE_EVENTS;
		snprintf(lg->uri, sizeof(lg->uri), "/v1/jobs/%s", lg->job);
		lg->ev_t0 = loadgen_now_ns();
		for (i = 0; i < lg->n; i++)
			loadgen_events_pump(&lg->conns[i]);
		return;
	}
	/* Every event acknowledged: does the status show them all? */
	if (lg->coord_pid > 0)
		loadgen_proc_read(lg->coord_pid, &lg->proc_events);
	lg->store_events = loadgen_procs_cpu(lg->store_pids, lg->nstore_pids);
	loadgen_proc_read(getpid(), &lg->self_events);
	lg->status_polls = 1;
	loadgen_http_request(lg->http, "GET", lg->uri, NULL,
	    loadgen_status_done, lg);
}

/* --- report ------------------------------------------------------------- */

/* When the connections got their last ack, from the start of the events. */
static void
loadgen_ack_spread(struct loadgen *lg)
{
	struct loadgen_stats	 st;
	double			*ms;
	int			 i;

	if ((ms = calloc((size_t)lg->n, sizeof(*ms))) == NULL)
		return;
	for (i = 0; i < lg->n; i++)
		ms[i] = (lg->conns[i].t_acked - lg->ev_t0) / 1e6;
	loadgen_stats(ms, (size_t)lg->n, &st);
	printf("events: all acknowledged per connection after min "
	    "%.0f ms, median %.0f ms, p99 %.0f ms, max %.0f ms; %llu acks for "
	    "%d events\n", st.min, st.median, st.p99, st.max,
	    (unsigned long long)lg->ack_msgs, lg->n * lg->events_per);
	free(ms);
}

/* Prints the store's processes' CPU in the events phase, in all and per
 * event (of total), on the RESULT line. */
static void
loadgen_store_report(const struct loadgen *lg, double total)
{
	double	 from = lg->do_fanout ? lg->store_fanout : lg->store_before;

	if (lg->nstore_pids == 0 || !lg->do_events)
		return;
	if (from < 0 || lg->store_events < 0 || total <= 0) {
		printf(" store_cpu_events_s=na store_us_per_event=na");
		return;
	}
	printf(" store_cpu_events_s=%.2f store_us_per_event=%.2f",
	    lg->store_events - from, (lg->store_events - from) * 1e6 / total);
}

/* Prints the summary and the RESULT line, and stops the loop. */
static void
loadgen_finish(struct loadgen *lg)
{
	struct loadgen_stats	 fs, rs, as;
	struct loadgen_proc	 now;
	double			 total = 0, ack_s, status_s;

	lg->phase = LOADGEN_PHASE_DONE;
	if (lg->do_events)
		loadgen_ack_spread(lg);
	printf("RESULT agents=%d connect_s=%.2f", lg->n, lg->connect_s);
	if (lg->tls_dir != NULL)
		printf(" resumed=%d", lg->resumed);
	if (lg->do_fanout) {
		loadgen_stats(lg->fan_ms, (size_t)lg->changes, &fs);
		loadgen_stats(lg->resp_ms, (size_t)lg->changes, &rs);
		loadgen_stats(lg->applied_ms, (size_t)lg->napplied, &as);
		printf(" changes=%d fanout_median_ms=%.2f fanout_max_ms=%.2f"
		    " answer_median_ms=%.2f", lg->changes, fs.median, fs.max,
		    rs.median);
		if (lg->napplied == lg->changes)
			printf(" applied_median_ms=%.2f applied_max_ms=%.2f",
			    as.median, as.max);
		else
			printf(" applied_median_ms=na applied_max_ms=na");
		printf(" status_applied=%d", lg->status_applied);
	}
	if (lg->do_events) {
		total = (double)lg->n * lg->events_per;
		ack_s = (lg->ev_t_acked - lg->ev_t0) / 1e9;
		status_s = (lg->ev_t_status - lg->ev_t0) / 1e9;
		printf(" events=%.0f events_acked_s=%.3f events_per_s=%.0f"
		    " status_s=%.3f events_per_s_status=%.0f", total, ack_s,
		    ack_s > 0 ? total / ack_s : 0, status_s,
		    status_s > 0 ? total / status_s : 0);
	}
	if (lg->coord_pid > 0 && loadgen_proc_read(lg->coord_pid, &now) == 0) {
		printf(" rss_idle_mib=%.1f rss_mib=%.1f rss_peak_mib=%.1f",
		    lg->proc_before.rss_kib / 1024.0, now.rss_kib / 1024.0,
		    now.hwm_kib / 1024.0);
		/* Its CPU from its start until every agent was connected. */
		printf(" cpu_connect_s=%.2f", lg->proc_before.cpu_s);
		if (lg->do_fanout)
			printf(" cpu_fanout_s=%.2f", lg->proc_fanout.cpu_s -
			    lg->proc_before.cpu_s);
		if (lg->do_events)
			printf(" cpu_events_s=%.2f", lg->proc_events.cpu_s -
			    (lg->do_fanout ? lg->proc_fanout.cpu_s :
			    lg->proc_before.cpu_s));
		printf(" cpu_total_s=%.2f", now.cpu_s);
		if (lg->do_events && total > 0)
			printf(" cpu_us_per_event=%.2f", (lg->proc_events.cpu_s -
			    (lg->do_fanout ? lg->proc_fanout.cpu_s :
			    lg->proc_before.cpu_s)) * 1e6 / total);
	}
	loadgen_store_report(lg, total);
	if (lg->do_progress)
		loadgen_progress_report(lg);
	if (lg->do_fanout)
		printf(" loadgen_cpu_fanout_s=%.2f", lg->self_fanout.cpu_s -
		    lg->self_before.cpu_s);
	if (lg->do_events)
		printf(" loadgen_cpu_events_s=%.2f", lg->self_events.cpu_s -
		    (lg->do_fanout ? lg->self_fanout.cpu_s :
		    lg->self_before.cpu_s));
	printf("\n");
	fflush(stdout);
	event_base_loopbreak(lg->base);
}

static void
loadgen_usage(FILE *f)
{
	fprintf(f,
"usage: dynprof-loadgen --coordinator HOST:PORT[,...] --http HOST:PORT [options]\n"
"  --agents N           connections, each one agent (1000)\n"
"  --job J              the job every agent subscribes to (loadgen)\n"
"  --mode M             fanout, events, both (both), progress (below) or\n"
"                       failover: send the events, SIGKILL --kill-pid (the\n"
"                       leader) once half are acknowledged, time every\n"
"                       agent's return to a new leader of the --coordinator\n"
"                       list and its replay\n"
"  --kill-pid P         --mode failover: the leader's pid\n"
"  --progress-s S       --mode progress: every connection reports its ranks\n"
"                       one step further each 500 ms for S seconds (20);\n"
"                       the coordinator's and the store's CPU per second\n"
"  --progress-still P   --mode progress: P%% of the connections (0) report\n"
"                       their ranks still at step 1 instead\n"
"  --changes N          measured config changes (20), after one warm-up\n"
"  --events N           events per connection, even (20)\n"
"  --ranks R            ranks per connection (1): its events go to them in\n"
"                       turn, started then stopped, a window per 2R events\n"
"  --inflight N         unacknowledged events per connection (1024)\n"
"  --concurrency N      connections being set up at once (256)\n"
"  --sources N          spread connections over 127.0.0.1..N (1)\n"
"  --node-prefix P      node names P-0, P-1, ... (lg)\n"
"  --token-file F       agent token\n"
"  --admin-token-file F admin token\n"
"  --coordinator-pid P  report the coordinator's RSS and CPU\n"
"  --store-pids P,...   report the CPU of the store's processes (etcd's\n"
"                       members) over the events phase, summed\n"
"  --tls-dir D          mutual TLS, a certificate per connection issued by the\n"
"                       CA D/ca.crt, D/ca.key (deploy/tls/mkcerts.sh -o D)\n"
"  --tls-sessions F     offer the sessions of F, write those held at the end\n");
}

static char *
loadgen_read_token(const char *path)
{
	FILE	*f;
	char	 buf[512];
	size_t	 n;

	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	return (strdup(buf));
}

static int
loadgen_int(const char *name, const char *s, int lo, int hi)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "loadgen: %s: not a number from %d to %d: %s\n",
		    name, lo, hi, s);
		exit(1);
	}
	return ((int)v);
}

/* Takes --store-pids P[,P...]: exits on a bad one. */
static void
loadgen_store_pids(struct loadgen *lg, const char *csv)
{
	char	*copy, *p, *save = NULL;

	if ((copy = strdup(csv)) == NULL)
		exit(1);
	for (p = strtok_r(copy, ",", &save); p != NULL;
	    p = strtok_r(NULL, ",", &save)) {
		if (lg->nstore_pids == LOADGEN_STORE_PIDS_MAX) {
			fprintf(stderr, "loadgen: --store-pids: more than "
			    "%d\n", LOADGEN_STORE_PIDS_MAX);
			exit(1);
		}
		lg->store_pids[lg->nstore_pids++] = loadgen_int("--store-pids",
		    p, 1, INT_MAX);
	}
	free(copy);
}

/* What the parts hand up (parts_loadgen.h). */
static const struct loadgen_hooks loadgen_hooks = {
	.fail = loadgen_fail,
	.connect_more = loadgen_connect_more,
	.events_start = loadgen_events_start,
	.finish = loadgen_finish,
	.lost = loadgen_failover_lost,
	.hello = loadgen_failover_hello,
	.error = loadgen_failover_error,
	.welcome = loadgen_failover_welcome,
	.acked = loadgen_failover_acked,
};

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "coordinator",	required_argument, NULL, 'c' },
		{ "http",		required_argument, NULL, 'H' },
		{ "agents",		required_argument, NULL, 'n' },
		{ "job",		required_argument, NULL, 'j' },
		{ "mode",		required_argument, NULL, 'm' },
		{ "changes",		required_argument, NULL, 'C' },
		{ "events",		required_argument, NULL, 'e' },
		{ "inflight",		required_argument, NULL, 'i' },
		{ "ranks",		required_argument, NULL, 'R' },
		{ "concurrency",	required_argument, NULL, 'k' },
		{ "sources",		required_argument, NULL, 's' },
		{ "node-prefix",	required_argument, NULL, 'p' },
		{ "token-file",		required_argument, NULL, 't' },
		{ "admin-token-file",	required_argument, NULL, 'T' },
		{ "coordinator-pid",	required_argument, NULL, 'P' },
		{ "store-pids",		required_argument, NULL, 'Q' },
		{ "tls-dir",		required_argument, NULL, 'L' },
		{ "tls-sessions",	required_argument, NULL, 'S' },
		{ "kill-pid",		required_argument, NULL, 'K' },
		{ "progress-s",		required_argument, NULL, 'G' },
		{ "progress-still",	required_argument, NULL, 'U' },
		{ "help",		no_argument,	   NULL, 'h' },
		{ NULL,			0,		   NULL, 0 }
	};
	struct loadgen	 lg;
	struct timeval	 tv;
	struct event	*tick;
	const char	*coord = NULL, *http = NULL, *admin_token = NULL;
	int		 ch, i;

	memset(&lg, 0, sizeof(lg));
	lg.hooks = &loadgen_hooks;
	lg.n = 1000;
	lg.job = "loadgen";
	lg.prefix = "lg";
	lg.changes = 20;
	lg.events_per = 20;
	lg.ranks_per = 1;
	lg.inflight = 1024;
	lg.concurrency = 256;
	lg.nsrc = 1;
	lg.do_fanout = lg.do_events = 1;
	lg.applied_ok = 1;
	lg.progress_s = 20;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			coord = optarg;
			break;
		case 'H':
			http = optarg;
			break;
		case 'n':
			lg.n = loadgen_int("--agents", optarg, 1, 1000000);
			break;
		case 'j':
			lg.job = optarg;
			break;
		case 'm':
			lg.do_fanout = strcmp(optarg, "fanout") == 0 ||
			    strcmp(optarg, "both") == 0;
			lg.do_events = strcmp(optarg, "events") == 0 ||
			    strcmp(optarg, "both") == 0;
			lg.do_failover = strcmp(optarg, "failover") == 0;
			lg.do_progress = strcmp(optarg, "progress") == 0;
			if (!lg.do_fanout && !lg.do_events && !lg.do_failover &&
			    !lg.do_progress) {
				fprintf(stderr, "loadgen: --mode: fanout, events, "
				    "both, failover or progress\n");
				return (1);
			}
			break;
		case 'C':
			lg.changes = loadgen_int("--changes", optarg, 1, 10000);
			break;
		case 'e':
			lg.events_per = loadgen_int("--events", optarg, 2,
			    1000000);
			lg.events_per &= ~1;
			break;
		case 'i':
			lg.inflight = loadgen_int("--inflight", optarg, 1, 65536);
			break;
		case 'R':
			lg.ranks_per = loadgen_int("--ranks", optarg, 1,
			    LOADGEN_RANKS_MAX);
			break;
		case 'k':
			lg.concurrency = loadgen_int("--concurrency", optarg, 1,
			    100000);
			break;
		case 's':
			lg.nsrc = loadgen_int("--sources", optarg, 1, 250);
			break;
		case 'p':
			lg.prefix = optarg;
			break;
		case 't':
			lg.token = loadgen_read_token(optarg);
			break;
		case 'T':
			admin_token = loadgen_read_token(optarg);
			break;
		case 'P':
			lg.coord_pid = loadgen_int("--coordinator-pid", optarg, 1,
			    INT_MAX);
			break;
		case 'Q':
			loadgen_store_pids(&lg, optarg);
			break;
		case 'L':
			lg.tls_dir = optarg;
			break;
		case 'S':
			lg.tls_sessions = optarg;
			break;
		case 'G':
			lg.progress_s = loadgen_int("--progress-s", optarg, 1,
			    LOADGEN_PROGRESS_MAX_S);
			break;
		case 'U':
			lg.progress_still = loadgen_int("--progress-still",
			    optarg, 0, 100);
			break;
		case 'K':
			lg.kill_pid = loadgen_int("--kill-pid", optarg, 2,
			    INT_MAX);
			break;
		case 'h':
			loadgen_usage(stdout);
			return (0);
		default:
			loadgen_usage(stderr);
			return (1);
		}
	}
	if (coord == NULL || http == NULL || optind != argc) {
		loadgen_usage(stderr);
		return (1);
	}
	if (loadgen_parse_coords(&lg, coord) == -1) {
		fprintf(stderr, "loadgen: --coordinator: want IPV4:PORT[,...], "
		    "at most %d: %s\n", LOADGEN_COORDS_MAX, coord);
		return (1);
	}
	if (lg.do_failover && lg.kill_pid == 0) {
		fprintf(stderr, "loadgen: --mode failover needs --kill-pid\n");
		return (1);
	}
	if (loadgen_raise_nofile((size_t)lg.n + 64) == -1) {
		fprintf(stderr, "loadgen: cannot raise the descriptor limit to "
		    "%d\n", lg.n + 64);
		return (1);
	}

	lg.conns = calloc((size_t)lg.n, sizeof(*lg.conns));
	lg.fan_ms = calloc((size_t)lg.changes, sizeof(double));
	lg.resp_ms = calloc((size_t)lg.changes, sizeof(double));
	lg.applied_ms = calloc((size_t)lg.changes, sizeof(double));
	if (lg.conns == NULL || lg.fan_ms == NULL || lg.resp_ms == NULL ||
	    lg.applied_ms == NULL)
		return (2);
	srandom((unsigned)getpid() ^ (unsigned)time(NULL));
	for (i = 0; i < lg.n; i++) {
		lg.conns[i].lg = &lg;
		lg.conns[i].idx = i;
		lg.conns[i].trial = -2;
		lg.conns[i].boot_id = ((uint64_t)random() << 32) ^
		    (uint64_t)random() ^ (uint64_t)i;
		failover_init(&lg.conns[i].fo, lg.coord_addrs, lg.ncoords);
	}
	if (lg.tls_dir != NULL && loadgen_tls_load(&lg) == -1)
		return (1);
	/* A write to the connection of a leader just SIGKILLed is an error
	 * on that connection (EPIPE), not the end of the loadgen. */
	signal(SIGPIPE, SIG_IGN);
	if ((lg.base = event_base_new()) == NULL ||
	    (lg.scratch = evbuffer_new()) == NULL)
		return (2);
	if ((lg.http = loadgen_http_new(lg.base, http, admin_token)) == NULL)
		return (1);

	/* Heartbeats in slices; a 1 ms tick moves the phases on. */
	lg.hb_ev = event_new(lg.base, -1, EV_PERSIST, loadgen_heartbeat_cb, &lg);
	tv.tv_sec = 0;
	tv.tv_usec = LOADGEN_HB_TICK_MS * 1000;
	event_add(lg.hb_ev, &tv);
	lg.trial_timer = evtimer_new(lg.base, loadgen_trial_timeout_cb, &lg);
	tick = event_new(lg.base, -1, EV_PERSIST, loadgen_tick_cb, &lg);
	tv.tv_sec = 0;
	tv.tv_usec = 1000;
	event_add(tick, &tv);

	lg.t_start = loadgen_now_ns();
	lg.phase = LOADGEN_PHASE_CONNECT;
	loadgen_connect_more(&lg);

	if (!lg.failed)
		event_base_dispatch(lg.base);

	loadgen_failover_free(&lg);
	loadgen_progress_free(&lg);
	event_free(tick);
	event_free(lg.trial_timer);
	event_free(lg.hb_ev);
	if (lg.tls_dir != NULL && lg.tls_sessions != NULL && !lg.failed &&
	    loadgen_sessions_write(&lg) == -1) {
		fprintf(stderr, "loadgen: %s: %s\n", lg.tls_sessions,
		    strerror(errno));
		lg.failed = 1;
	}
	for (i = 0; i < lg.n; i++) {
		if (lg.conns[i].bev != NULL)
			bufferevent_free(lg.conns[i].bev);
		X509_free(lg.conns[i].cert);
		EVP_PKEY_free(lg.conns[i].key);
		SSL_SESSION_free(lg.conns[i].session);
	}
	SSL_CTX_free(lg.tls_ctx);
	loadgen_http_free(lg.http);
	evbuffer_free(lg.scratch);
	event_base_free(lg.base);
	free(lg.conns);
	free(lg.fan_ms);
	free(lg.resp_ms);
	free(lg.applied_ms);
	return (lg.failed ? 2 : 0);
}
