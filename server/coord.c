/*
 * dynprof-coordinator: owns every job's schedule, pushes it to the agents that
 * serve the job, turns what they report into status, and serves the admin API.
 */

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <netdb.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "clock.h"
#include "coord.h"
#include "http.h"
#include "leader.h"
#include "link.h"
#include "log.h"
#include "model.h"
#include "pidlock.h"
#include "store.h"
#include "token.h"
#include "version.h"


/* Prints the usage. */
static void
coord_usage(FILE *f)
{
	fprintf(f,
	    "usage: dynprof-coordinator [--listen ADDR:PORT] [--http ADDR:PORT]\n"
	    "           [--state-dir DIR] [--admin-token-file F]"
	    " [--agent-token-file F]\n"
	    "           [--viewer-token-file F]\n"
	    "           [--tls-cert F --tls-key F --tls-ca F]\n"
	    "           [--http-tls-cert F --http-tls-key F [--http-tls-ca F]]\n"
	    "           [--insecure] [--heartbeat-ms N] [--ready-file F]"
	    " [-v] [-q]\n"
	    "\n"
	    "  --listen ADDR:PORT       agents (default 127.0.0.1:7878),"
	    " port 0 picks one\n"
	    "  --http ADDR:PORT         admin API (default 127.0.0.1:7879)\n"
	    "  --state-dir DIR          SQLite state, DIR/dynprof.db"
	    " (default /var/lib/dynprof)\n"
	    "  --admin-token-file F     the operator token: /v1 reads and"
	    " writes need it\n"
	    "  --viewer-token-file F    the viewer token: /v1 reads only"
	    " (writes: 403)\n"
	    "  --agent-token-file F     require this token in agents' hello\n"
	    "  --tls-cert FILE          AgentLink over mutual TLS: this"
	    " certificate (PEM chain),\n"
	    "  --tls-key FILE           its key, and\n"
	    "  --tls-ca FILE            the CA agents' certificates chain to;"
	    " each names its node\n"
	    "  --http-tls-cert FILE     admin API over HTTPS: this certificate,\n"
	    "  --http-tls-key FILE      its key\n"
	    "  --http-tls-ca FILE       require client certificates of this CA\n"
	    "  --insecure               allow non-loopback addresses without"
	    " TLS or tokens\n"
	    "  --heartbeat-ms N         heartbeat interval (default 2000)\n"
	    "  --ready-file F           written once listening:"
	    " agent_port=N, http_port=M\n"
	    "  --s3-endpoint URL        the object store the agents'"
	    " --trace-upload puts\n"
	    "                           traces into: the traces index hands"
	    " out presigned\n"
	    "                           GET URLs, signed with $AWS_ACCESS_KEY_ID"
	    " and\n"
	    "                           $AWS_SECRET_ACCESS_KEY (default none)\n"
	    "  --s3-region R            (default $AWS_REGION, else us-east-1)\n"
	    "  --presign-ttl S          how long a presigned URL is valid"
	    " (default 900)\n"
	    "  bounds on peers:\n"
	    "  --hello-timeout-ms N     accept to an agent's hello"
	    " (default 10000)\n"
	    "  --agent-outbuf-max N     bytes queued to an agent that does"
	    " not read (8 MiB)\n"
	    "  --agent-seq-window N     how far an event seq may run ahead"
	    " (131072)\n"
	    "  --http-max-conns N       admin connections (default 1024)\n"
	    "  --http-timeout-ms N      accept to a whole admin request"
	    " (default 10000)\n"
	    "  --events-journal N       events kept for the event stream"
	    " (default 262144)\n"
	    "  --max-ranks-per-job N    ranks one job may have (131072)\n"
	    "  --max-ranks-per-agent N  live ranks one agent may report"
	    " (4096)\n"
	    "  --rank-memory-max MIB    memory for all ranks' state"
	    " (default 1024)\n"
	    "  stragglers (a job's rules may set its own):\n"
	    "  --straggler-lag N        steps behind the job's median step"
	    " (default 50)\n"
	    "  --straggler-rate-drop P  percent under the job's median"
	    " rate (default 50)\n"
	    "  --straggler-busy P       busy time (dynprof_mark_comm()) percent"
	    " over the\n"
	    "                           job's median, or risen as much"
	    " against its own (default 30)\n"
	    "  -v, -q                   more, less logging\n"
	    "  --help, --version\n");
	leader_usage(f);
}

/* Reads a token file (token_read()); logs why it is refused. */
static char *
coord_read_token(const char *path)
{
	char		 buf[TOKEN_MAX + 1];
	const char	*why;

	if (token_read(path, buf, sizeof(buf), &why) == -1) {
		log_warnx("token file %s: %s", path, why);
		return (NULL);
	}
	return (strdup(buf));
}

/*
 * Reads the viewer token (path may be NULL: none).  It must differ from the
 * operator token, or a viewer could write.  Returns 0 or -1 (logged).
 */
static int
coord_viewer_token(struct coord *c, const char *path)
{
	if (path == NULL)
		return (0);
	if ((c->conf.viewer_token = coord_read_token(path)) == NULL)
		return (-1);
	if (c->conf.admin_token != NULL &&
	    token_equal(c->conf.viewer_token, c->conf.admin_token)) {
		log_warnx("--viewer-token-file %s holds the operator token "
		    "(--admin-token-file): give the viewer its own", path);
		return (-1);
	}
	if (c->conf.admin_token == NULL)
		log_info("a viewer token and no operator token "
		    "(--admin-token-file): the admin API is read-only");
	return (0);
}

/* Writes the ports to the ready file, atomically. */
static int
coord_write_ready(struct coord *c)
{
	char	 tmp[PATH_MAX];
	FILE	*f;

	if (c->conf.ready_file == NULL)
		return (0);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp",
	    c->conf.ready_file) >= sizeof(tmp))
		return (-1);
	if ((f = fopen(tmp, "w")) == NULL) {
		log_warn("%s: %s", __func__, tmp);
		return (-1);
	}
	fprintf(f, "agent_port=%d\nhttp_port=%d\n", c->agent_port,
	    c->http_port);
	if (fclose(f) == EOF || rename(tmp, c->conf.ready_file) == -1) {
		log_warn("%s: %s", __func__, c->conf.ready_file);
		unlink(tmp);
		return (-1);
	}
	return (0);
}

/*
 * SIGHUP: rebuilds the TLS contexts from their files.  Live connections keep
 * the context they started with; a file that does not load keeps the old one.
 */
static void
coord_reload(struct coord *c)
{
	log_info("%s: SIGHUP, reloading certificates", __func__);
	tls_reload(&c->agent_tls);
	tls_reload(&c->http_tls);
}

/* Loads the certificates the flags name.  Returns 0 or -1 (logged). */
static int
coord_load_tls(struct coord *c)
{
	const struct coord_config	*cf = &c->conf;
	char				 path[PATH_MAX];

	if (cf->tls_cert != NULL && tls_load(&c->agent_tls, "agentlink",
	    TLS_SERVER | TLS_VERIFY_PEER, cf->tls_cert, cf->tls_key,
	    cf->tls_ca) == -1)
		return (-1);
	/* Agents resume their sessions after a restart: keys in the state. */
	snprintf(path, sizeof(path), "%s/tls-ticket-keys", cf->state_dir);
	if (cf->tls_cert != NULL && tls_ticket_keys(&c->agent_tls, path) == -1)
		return (-1);
	if (cf->http_tls_cert != NULL && tls_load(&c->http_tls, "http",
	    TLS_SERVER | (cf->http_tls_ca != NULL ? TLS_VERIFY_PEER : 0),
	    cf->http_tls_cert, cf->http_tls_key, cf->http_tls_ca) == -1)
		return (-1);
	return (0);
}

/* Stops on SIGTERM and SIGINT, reloads TLS on SIGHUP. */
static void
coord_signal(evutil_socket_t sig, short what, void *arg)
{
	struct coord	*c = arg;

	(void)what;
	if (sig == SIGPIPE)
		return;
	if (sig == SIGHUP) {
		coord_reload(c);
		return;
	}
	log_info("%s: %s, stopping", __func__, strsignal(sig));
	event_base_loopbreak(c->base);
}

/* The housekeeping timer: heartbeats, finished windows, ranks, reaping,
 * stragglers and the rules they fire. */
static void
coord_tick(evutil_socket_t fd, short what, void *arg)
{
	static struct log_limit	 stall_log;
	struct coord		*c = arg;
	uint64_t		 now = clock_mono_ms(), late = 0;

	(void)fd;
	(void)what;
	/*
	 * Late by half a period or more: the loop was not free (a stopped
	 * process, a slow disk, a long callback).  Counted, and no peer is
	 * judged silent this turn: what they sent meanwhile may still be
	 * waiting in the sockets, read only after this.
	 */
	if (c->tick_due_ms != 0 && now > c->tick_due_ms &&
	    now - c->tick_due_ms >= c->conf.heartbeat_ms / 2) {
		late = now - c->tick_due_ms;
		c->stalled_ms += late;
		c->metrics.loop_stalls++;
		c->metrics.loop_stalled_ms += late;
		log_limited(&stall_log, LOG_LEVEL_QUIET, "%s: the loop was "
		    "%llu ms late: no agent judged silent this turn", __func__,
		    (unsigned long long)late);
	}
	c->tick_due_ms = now + c->conf.heartbeat_ms;
	link_heartbeat(c, late == 0);
	change_windows_over(c, 0);
	change_windows_grow(c);
	schedule_flush_ranks(c);
	if (!leader_is_follower(c))
		nodeview_flush(c);
	schedule_compact_jobs(c);
	jobs_reap(c, (uint64_t)COORD_UNSCHEDULED_LINGER *
	    c->conf.heartbeat_ms);
	/* A follower's copy holds the leader's judgement (stragview.c). */
	if (!leader_is_follower(c)) {
		straggler_tick(c);
		stragview_flush(c);
		legacyview_flush(c);
	}
	rules_tick(c);
	link_trim(c);
}

enum {
	OPT_HELLO_TIMEOUT = 256,
	OPT_OUTBUF_MAX,
	OPT_SEQ_WINDOW,
	OPT_HTTP_MAX_CONNS,
	OPT_HTTP_TIMEOUT,
	OPT_STRAGGLER_LAG,
	OPT_STRAGGLER_DROP,
	OPT_STRAGGLER_BUSY,
	OPT_EVENTS_JOURNAL,
	OPT_JOB_RANKS_MAX,
	OPT_AGENT_RANKS_MAX,
	OPT_RANK_MEMORY_MAX,
	OPT_BOUNDS_LAST = OPT_RANK_MEMORY_MAX,
	OPT_S3_ENDPOINT = 400,
	OPT_S3_REGION,
	OPT_PRESIGN_TTL
};

/* Sets the bounds on peers to their defaults. */
void
coord_bounds_init(struct coord_config *conf)
{
	conf->hello_timeout_ms = COORD_HELLO_TIMEOUT_MS;
	conf->agent_outbuf_max = COORD_OUTBUF_MAX;
	conf->seq_window = COORD_SEQ_WINDOW;
	conf->http_max_conns = COORD_HTTP_CONNS_MAX;
	conf->http_timeout_ms = COORD_HTTP_TIMEOUT_MS;
	conf->straggler_lag = COORD_STRAGGLER_LAG;
	conf->straggler_rate_drop = COORD_STRAGGLER_RATE_DROP;
	conf->straggler_busy = COORD_STRAGGLER_BUSY;
	conf->events_journal_max = COORD_JOURNAL_MAX;
	conf->job_ranks_max = COORD_JOB_RANKS_MAX;
	conf->agent_ranks_max = COORD_AGENT_RANKS_MAX;
	conf->rank_bytes_max = COORD_RANK_BYTES_MAX;
}

/* Parses one flag of the bounds on peers.  Returns 0, or -1 logged. */
static int
coord_parse_bound(struct coord_config *conf, int ch, const char *name,
    const char *arg)
{
	static const struct {
		int		 ch;
		long long	 min, max;
	} range[] = {
		{ OPT_HELLO_TIMEOUT, 100, 3600000 },
		{ OPT_OUTBUF_MAX, 65536, 1LL << 30 },
		{ OPT_SEQ_WINDOW, 1, 1LL << 62 },
		{ OPT_HTTP_MAX_CONNS, 1, 1000000 },
		{ OPT_HTTP_TIMEOUT, 100, 3600000 },
		{ OPT_STRAGGLER_LAG, 1, COORD_WINDOW_STEP_MAX },
		{ OPT_STRAGGLER_DROP, 1, 100 },
		{ OPT_STRAGGLER_BUSY, 1, 1000 },
		{ OPT_EVENTS_JOURNAL, 16, 1 << 24 },
		{ OPT_JOB_RANKS_MAX, 1, INT32_MAX },
		{ OPT_AGENT_RANKS_MAX, 1, INT32_MAX },
		{ OPT_RANK_MEMORY_MAX, 1, 1 << 20 },	/* MiB */
	};
	char		*end;
	long long	 v;
	size_t		 i;

	for (i = 0; i < sizeof(range) / sizeof(range[0]); i++)
		if (range[i].ch == ch)
			break;
	if (i == sizeof(range) / sizeof(range[0]))
		return (-1);
	errno = 0;
	v = strtoll(arg, &end, 10);
	if (*arg == '\0' || *end != '\0' || errno != 0 || v < range[i].min ||
	    v > range[i].max) {
		log_warnx("--%s: %s: expected %lld to %lld", name, arg,
		    range[i].min, range[i].max);
		return (-1);
	}
	switch (ch) {
	case OPT_HELLO_TIMEOUT:
		conf->hello_timeout_ms = (uint32_t)v;
		break;
	case OPT_OUTBUF_MAX:
		conf->agent_outbuf_max = (size_t)v;
		break;
	case OPT_SEQ_WINDOW:
		conf->seq_window = (uint64_t)v;
		break;
	case OPT_HTTP_MAX_CONNS:
		conf->http_max_conns = (size_t)v;
		break;
	case OPT_HTTP_TIMEOUT:
		conf->http_timeout_ms = (uint32_t)v;
		break;
	case OPT_STRAGGLER_LAG:
		conf->straggler_lag = v;
		break;
	case OPT_STRAGGLER_DROP:
		conf->straggler_rate_drop = (int)v;
		break;
	case OPT_STRAGGLER_BUSY:
		conf->straggler_busy = (int)v;
		break;
	case OPT_EVENTS_JOURNAL:
		conf->events_journal_max = (size_t)v;
		break;
	case OPT_JOB_RANKS_MAX:
		conf->job_ranks_max = (size_t)v;
		break;
	case OPT_AGENT_RANKS_MAX:
		conf->agent_ranks_max = (size_t)v;
		break;
	case OPT_RANK_MEMORY_MAX:
		conf->rank_bytes_max = (size_t)v * 1024 * 1024;
		break;
	}
	return (0);
}

/*
 * The TLS flags come as a set, and a non-loopback address is served only
 * encrypted and authenticated (AgentLink: mutual TLS, or TLS and the agent
 * token; admin API: HTTPS and the admin token or client certificates) unless
 * --insecure.  Returns 0, or -1 with the reason logged.
 */
static int
coord_check_exposure(const struct coord_config *cf)
{
	int	 agent_tls, http_tls, agent_ok, http_ok;

	agent_tls = cf->tls_cert != NULL || cf->tls_key != NULL ||
	    cf->tls_ca != NULL;
	if (agent_tls && (cf->tls_cert == NULL || cf->tls_key == NULL ||
	    cf->tls_ca == NULL)) {
		log_warnx("--tls-cert, --tls-key and --tls-ca go together");
		return (-1);
	}
	http_tls = cf->http_tls_cert != NULL || cf->http_tls_key != NULL;
	if ((http_tls || cf->http_tls_ca != NULL) &&
	    (cf->http_tls_cert == NULL || cf->http_tls_key == NULL)) {
		log_warnx("--http-tls-cert and --http-tls-key go together "
		    "(--http-tls-ca needs both)");
		return (-1);
	}
	/* An address that does not parse is the only error said. */
	if ((agent_ok = coord_is_loopback(cf->listen_addr)) == -1 ||
	    (http_ok = coord_is_loopback(cf->http_addr)) == -1)
		return (-1);
	agent_ok = agent_ok || agent_tls;
	http_ok = http_ok || (http_tls &&
	    (cf->admin_token != NULL || cf->viewer_token != NULL ||
	    cf->http_tls_ca != NULL));
	if (cf->insecure) {
		if (!agent_ok || !http_ok)
			log_warnx("--insecure: serving a non-loopback address "
			    "without TLS or without authentication: anyone who "
			    "reaches it can read the traffic or drive the "
			    "profilers");
		return (0);
	}
	if (!agent_ok) {
		log_warnx("--listen %s is not a loopback address: give "
		    "--tls-cert, --tls-key and --tls-ca (agents over mutual "
		    "TLS), or --insecure", cf->listen_addr);
		return (-1);
	}
	if (!http_ok) {
		log_warnx("--http %s is not a loopback address: give "
		    "--http-tls-cert and --http-tls-key, and "
		    "--admin-token-file or --http-tls-ca, or --insecure",
		    cf->http_addr);
		return (-1);
	}
	return (0);
}

/* Reads the command line into c->conf.  Returns 0 or -1 (said why). */
int
coord_parse_args(struct coord *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "http", required_argument, NULL, 'H' },
		{ "state-dir", required_argument, NULL, 's' },
		{ "admin-token-file", required_argument, NULL, 'A' },
		{ "agent-token-file", required_argument, NULL, 'T' },
		/* Token roles. */
		{ "viewer-token-file", required_argument, NULL, 'W' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "tls-cert", required_argument, NULL, 'c' },
		{ "tls-key", required_argument, NULL, 'k' },
		{ "tls-ca", required_argument, NULL, 'a' },
		{ "http-tls-cert", required_argument, NULL, 'C' },
		{ "http-tls-key", required_argument, NULL, 'K' },
		{ "http-tls-ca", required_argument, NULL, 'B' },
		{ "heartbeat-ms", required_argument, NULL, 'b' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "s3-endpoint", required_argument, NULL, OPT_S3_ENDPOINT },
		{ "s3-region", required_argument, NULL, OPT_S3_REGION },
		{ "presign-ttl", required_argument, NULL, OPT_PRESIGN_TTL },
		/* bounds on peers */
		{ "hello-timeout-ms", required_argument, NULL,
		    OPT_HELLO_TIMEOUT },
		{ "agent-outbuf-max", required_argument, NULL, OPT_OUTBUF_MAX },
		{ "agent-seq-window", required_argument, NULL, OPT_SEQ_WINDOW },
		{ "http-max-conns", required_argument, NULL,
		    OPT_HTTP_MAX_CONNS },
		{ "http-timeout-ms", required_argument, NULL,
		    OPT_HTTP_TIMEOUT },
		{ "straggler-lag", required_argument, NULL,
		    OPT_STRAGGLER_LAG },
		{ "straggler-rate-drop", required_argument, NULL,
		    OPT_STRAGGLER_DROP },
		{ "straggler-busy", required_argument, NULL,
		    OPT_STRAGGLER_BUSY },
		LEADER_LONGOPTS,
		{ "events-journal", required_argument, NULL,
		    OPT_EVENTS_JOURNAL },
		{ "max-ranks-per-job", required_argument, NULL,
		    OPT_JOB_RANKS_MAX },
		{ "max-ranks-per-agent", required_argument, NULL,
		    OPT_AGENT_RANKS_MAX },
		{ "rank-memory-max", required_argument, NULL,
		    OPT_RANK_MEMORY_MAX },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*admin_file = NULL, *agent_file = NULL;
	const char	*viewer_file = NULL;
	char		*end, why[256];
	long		 v;
	int		 ch, idx, level = LOG_LEVEL_INFO;

	c->conf.listen_addr = "127.0.0.1:7878";
	c->conf.http_addr = "127.0.0.1:7879";
	c->conf.state_dir = "/var/lib/dynprof";
	c->conf.heartbeat_ms = 2000;
	c->conf.presign_ttl_s = PRESIGN_TTL_S;
	c->conf.etcd_prefix = "/dynprof/";
	c->conf.etcd_lease_ttl = LEADER_TTL_DEFAULT;
	coord_bounds_init(&c->conf);
	while ((ch = getopt_long(argc, argv, "vqh", longopts, &idx)) != -1) {
		if (ch >= OPT_ETCD_ENDPOINTS && ch <= OPT_ETCD_LAST) {
			if (leader_parse_flag(&c->conf, ch, longopts[idx].name,
			    optarg) == -1)
				return (-1);
			continue;
		}
		if (ch >= OPT_HELLO_TIMEOUT && ch <= OPT_BOUNDS_LAST) {
			if (coord_parse_bound(&c->conf, ch,
			    longopts[idx].name, optarg) == -1)
				return (-1);
			continue;
		}
		switch (ch) {
		case 'l':
			c->conf.listen_addr = optarg;
			break;
		case 'H':
			c->conf.http_addr = optarg;
			break;
		case 's':
			c->conf.state_dir = optarg;
			break;
		case 'A':
			admin_file = optarg;
			break;
		case 'T':
			agent_file = optarg;
			break;
		case 'W':
			viewer_file = optarg;
			break;
		case 'I':
			c->conf.insecure = 1;
			break;
		case 'c':
			c->conf.tls_cert = optarg;
			break;
		case 'k':
			c->conf.tls_key = optarg;
			break;
		case 'a':
			c->conf.tls_ca = optarg;
			break;
		case 'C':
			c->conf.http_tls_cert = optarg;
			break;
		case 'K':
			c->conf.http_tls_key = optarg;
			break;
		case 'B':
			c->conf.http_tls_ca = optarg;
			break;
		case 'b':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    v < 10 || v > 3600000) {
				log_warnx("--heartbeat-ms: %s: expected 10 to "
				    "3600000", optarg);
				return (-1);
			}
			c->conf.heartbeat_ms = (uint32_t)v;
			break;
		case 'r':
			c->conf.ready_file = optarg;
			break;
		case OPT_S3_ENDPOINT:
			c->conf.s3_endpoint = optarg;
			break;
		case OPT_S3_REGION:
			c->conf.s3_region = optarg;
			break;
		case OPT_PRESIGN_TTL:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    v < 1 || v > 604800) {
				log_warnx("--presign-ttl: %s: expected 1 to "
				    "604800 (seconds)", optarg);
				return (-1);
			}
			c->conf.presign_ttl_s = (uint32_t)v;
			break;
		case 'v':
			level = LOG_LEVEL_DEBUG;
			break;
		case 'q':
			level = LOG_LEVEL_QUIET;
			break;
		case 'h':
			coord_usage(stdout);
			exit(COORD_EXIT_OK);
		case 'V':
			printf("dynprof-coordinator %s (protocol %d)\n",
			    DYNPROF_VERSION_STRING, PROTOCOL_VERSION);
			exit(COORD_EXIT_OK);
		default:
			coord_usage(stderr);
			return (-1);
		}
	}
	if (optind != argc) {
		log_warnx("unexpected argument %s", argv[optind]);
		coord_usage(stderr);
		return (-1);
	}
	log_setlevel(level);
	if (admin_file != NULL &&
	    (c->conf.admin_token = coord_read_token(admin_file)) == NULL)
		return (-1);
	if (agent_file != NULL &&
	    (c->conf.agent_token = coord_read_token(agent_file)) == NULL)
		return (-1);
	if (coord_viewer_token(c, viewer_file) == -1)
		return (-1);
	if (c->conf.s3_endpoint != NULL && presign_open(&c->presign,
	    c->conf.s3_endpoint, c->conf.s3_region, c->conf.presign_ttl_s,
	    why, sizeof(why)) == -1) {
		log_warnx("%s", why);
		return (-1);
	}
	return (coord_check_exposure(&c->conf));
}

/* Makes c's lists and node hash empty: a model with no base and no store. */
void
coord_init(struct coord *c)
{
	static const struct coord_hooks hooks = {
		.job_changed = link_push_later,
		.events_published = events_wake,
		.model_unsure = leader_model_unsure,
		.committed = http_hold_committed,
		.events_commit = link_commit_batch,
		.agent_close = link_conn_close,
		.hello_again = link_hello_again,
	};
	size_t	 i;

	c->hooks = &hooks;

	TAILQ_INIT(&c->conns);
	TAILQ_INIT(&c->dead);
	TAILQ_INIT(&c->acks);
	TAILQ_INIT(&c->commits);
	TAILQ_INIT(&c->changed_ranks);
	TAILQ_INIT(&c->jobs);
	TAILQ_INIT(&c->nodes);
	TAILQ_INIT(&c->legacy);
	c->lock_fd = -1;
	for (i = 0; i < COORD_NODE_BUCKETS; i++)
		LIST_INIT(&c->node_hash[i]);
}

/*
 * Opens what serves, without signals, timer or ready file: the lists, the
 * state directory's lock, the event base, the store, the journal, the model,
 * TLS and the listeners (coord_start(), and the fuzz target of the agents'
 * messages, which so runs the coordinator's own start).  Returns 0 or -1
 * (logged); coord_stop() frees either way.
 */
int
coord_open(struct coord *c)
{
	const char	*why;

	coord_init(c);
	/* One coordinator per state directory (etcd's keeps TLS keys). */
	if ((c->lock_fd = pidlock_take("state directory", c->conf.state_dir,
	    COORD_LOCK_FILE)) == -1)
		return (-1);
	if ((c->base = event_base_new()) == NULL ||
	    event_base_priority_init(c->base, 3) == -1) {
		log_warnx("%s: cannot create the event base", __func__);
		return (-1);
	}
	c->store = c->conf.etcd_endpoints != NULL ? leader_open(c, &why) :
	    store_open(c->conf.state_dir, &why);
	if (c->store == NULL) {
		log_warnx("%s: cannot open the store: %s", __func__, why);
		return (-1);
	}
	c->started_ns = clock_wall_ns();
	/* Revisions of the event stream count on from the wall clock in
	 * microseconds: past those of any earlier run (journal.c).  Over
	 * etcd, the model is loaded when this coordinator leads. */
	if (journal_init(c, (uint64_t)c->started_ns / 1000) == -1 ||
	    (!leader_is_etcd(c) && load_model(c) == -1))
		return (-1);
	if (coord_load_tls(c) == -1)
		return (-1);
	if (link_listen(c, c->conf.listen_addr) == -1 ||
	    http_listen(c, c->conf.http_addr, http_routes,
	    http_routes_count) == -1)
		return (-1);
	return (0);
}

/* Starts the coordinator: coord_open(), then signals, timer, leader, ready
 * file. */
int
coord_start(struct coord *c)
{
	struct timeval	 tv;
	uint32_t	 period;

	if (coord_open(c) == -1)
		return (-1);
	c->sigterm = evsignal_new(c->base, SIGTERM, coord_signal, c);
	c->sigint = evsignal_new(c->base, SIGINT, coord_signal, c);
	c->sigpipe = evsignal_new(c->base, SIGPIPE, coord_signal, c);
	c->sighup = evsignal_new(c->base, SIGHUP, coord_signal, c);
	c->tick = event_new(c->base, -1, EV_PERSIST, coord_tick, c);
	if (c->sigterm == NULL || c->sigint == NULL || c->sigpipe == NULL ||
	    c->sighup == NULL || c->tick == NULL)
		return (-1);
	evsignal_add(c->sigterm, NULL);
	evsignal_add(c->sigint, NULL);
	evsignal_add(c->sigpipe, NULL);
	evsignal_add(c->sighup, NULL);
	/* Heartbeats go out each interval; silence is judged at that grain. */
	period = c->conf.heartbeat_ms;
	tv.tv_sec = period / 1000;
	tv.tv_usec = (period % 1000) * 1000;
	event_add(c->tick, &tv);
	if ((leader_is_etcd(c) && leader_start(c) == -1) ||
	    coord_write_ready(c) == -1)
		return (-1);
	log_info("%s: serving agents on port %d (%s), admin API on port %d "
	    "(%s), state in %s, generation %llu", __func__, c->agent_port,
	    c->agent_tls.ctx != NULL ? "mutual TLS" : "plaintext",
	    c->http_port, c->http_tls.ctx == NULL ? "HTTP" :
	    c->conf.http_tls_ca != NULL ? "HTTPS, client certificates" :
	    "HTTPS", leader_is_etcd(c) ? "etcd" : c->conf.state_dir,
	    (unsigned long long)c->generation);
	return (0);
}

/* Stops the coordinator and frees what coord_start() made. */
void
coord_stop(struct coord *c)
{
	link_close_all(c);
	schedule_flush_ranks(c);
	/* What is committing is answered (or given up) before anything its
	 * answer touches is freed. */
	if (c->base != NULL) {
		store_drain(c->store, c->base, COORD_DRAIN_MS);
		store_abandon(c->store);
	}
	http_close(c);
	stream_free_all(c);		/* once their connections are closed */
	if (c->sigterm != NULL)
		event_free(c->sigterm);
	if (c->sigint != NULL)
		event_free(c->sigint);
	if (c->sigpipe != NULL)
		event_free(c->sigpipe);
	if (c->sighup != NULL)
		event_free(c->sighup);
	if (c->tick != NULL)
		event_free(c->tick);
	if (c->reaper != NULL)
		event_free(c->reaper);
	if (c->committer != NULL)
		event_free(c->committer);
	if (c->pusher != NULL)
		event_free(c->pusher);
	journal_load_free(c);
	journal_free(c);
	jobs_free_all(c);
	legacy_free_all(c);
	store_close(c->store);
	leader_stop(c);
	tls_clear(&c->agent_tls);
	tls_clear(&c->http_tls);
	if (c->base != NULL)
		event_base_free(c->base);
	free(c->conf.admin_token);
	free(c->conf.agent_token);
	free(c->conf.viewer_token);
	if (c->lock_fd != -1)
		close(c->lock_fd);
}
