/*
 * dynprof-agent: flags, the agent's own config file, signals, the one
 * housekeeping timer, and an agent's life from agent_new() to agent_free()
 * (main.c runs it).
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent.h"
#include "clock.h"
#include "file.h"
#include "jobid.h"
#include "parts_legacy.h"
#include "log.h"
#include "nodename.h"
#include "token.h"
#include "version.h"

/* The signals the agent handles: stop, stop, reload. */
static const int agent_sigs[] = { SIGTERM, SIGINT, SIGHUP };

static void	 agent_schedule(struct agent *);

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* Long options: the agent's config file takes the same names as keys. */
enum {
	OPT_COORDINATOR = 256, OPT_NODE, OPT_TOKEN_FILE, OPT_SOCKET,
	OPT_SHM_DIR, OPT_SHM_MODE, OPT_SAMPLE, OPT_QUEUE_MAX, OPT_GRACE,
	OPT_CONFIG_FILE, OPT_JOB, OPT_CONF, OPT_READY_FILE, OPT_VERSION,
	OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_CA, OPT_LEGACY_DIR, OPT_LEGACY_SHM,
	OPT_LEGACY_PER_UID, OPT_LEGACY_WINDOW_MAX, OPT_SHM_BUDGET, OPT_TRACE_STORE, OPT_TRACE_STORE_ALLOW, OPT_TRACE_SETTLE,
	OPT_TRACE_UPLOAD, OPT_S3_ENDPOINT, OPT_S3_REGION, OPT_S3_CREDENTIALS,
	OPT_UPLOAD_RATE, OPT_UPLOAD_STALL, OPT_UPLOAD_BACKOFF, OPT_UPLOAD_PART,
	OPT_TEST_CLOCK_OFFSET, OPT_TEST_STOP_AT,
	OPT_VERBOSE = 'v', OPT_QUIET = 'q', OPT_HELP = 'h',
};

static const struct option agent_longopts[] = {
	{ "coordinator",	required_argument, NULL, OPT_COORDINATOR },
	{ "node",		required_argument, NULL, OPT_NODE },
	{ "token-file",		required_argument, NULL, OPT_TOKEN_FILE },
	{ "tls-cert",		required_argument, NULL, OPT_TLS_CERT },
	{ "tls-key",		required_argument, NULL, OPT_TLS_KEY },
	{ "tls-ca",		required_argument, NULL, OPT_TLS_CA },
	{ "socket",		required_argument, NULL, OPT_SOCKET },
	{ "shm-dir",		required_argument, NULL, OPT_SHM_DIR },
	{ "shm-mode",		required_argument, NULL, OPT_SHM_MODE },
	{ "shm-budget",		required_argument, NULL, OPT_SHM_BUDGET },
	{ "sample-interval",	required_argument, NULL, OPT_SAMPLE },
	{ "queue-max",		required_argument, NULL, OPT_QUEUE_MAX },
	{ "grace",		required_argument, NULL, OPT_GRACE },
	{ "config-file",	required_argument, NULL, OPT_CONFIG_FILE },
	{ "job",		required_argument, NULL, OPT_JOB },
	{ "conf",		required_argument, NULL, OPT_CONF },
	{ "ready-file",		required_argument, NULL, OPT_READY_FILE },
	{ "legacy-dir",		required_argument, NULL, OPT_LEGACY_DIR },
	{ "legacy-shm",		no_argument,	   NULL, OPT_LEGACY_SHM },
	{ "legacy-per-uid",	required_argument, NULL, OPT_LEGACY_PER_UID },
	{ "legacy-window-max",	required_argument, NULL, OPT_LEGACY_WINDOW_MAX },
	{ "trace-store",	required_argument, NULL, OPT_TRACE_STORE },
	{ "trace-store-allow",	required_argument, NULL, OPT_TRACE_STORE_ALLOW },
	{ "trace-settle",	required_argument, NULL, OPT_TRACE_SETTLE },
	{ "trace-upload",	required_argument, NULL, OPT_TRACE_UPLOAD },
	{ "s3-endpoint",	required_argument, NULL, OPT_S3_ENDPOINT },
	{ "s3-region",		required_argument, NULL, OPT_S3_REGION },
	{ "s3-credentials",	required_argument, NULL, OPT_S3_CREDENTIALS },
	{ "upload-rate",	required_argument, NULL, OPT_UPLOAD_RATE },
	{ "upload-stall",	required_argument, NULL, OPT_UPLOAD_STALL },
	{ "upload-backoff",	required_argument, NULL, OPT_UPLOAD_BACKOFF },
	{ "upload-part-size",	required_argument, NULL, OPT_UPLOAD_PART },
	{ "test-clock-offset",	required_argument, NULL, OPT_TEST_CLOCK_OFFSET },
	{ "test-stop-at",	required_argument, NULL, OPT_TEST_STOP_AT },
	{ "verbose",		no_argument,	   NULL, OPT_VERBOSE },
	{ "quiet",		no_argument,	   NULL, OPT_QUIET },
	{ "help",		no_argument,	   NULL, OPT_HELP },
	{ "version",		no_argument,	   NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 }
};

/* Prints the flags to f. */
static void
agent_usage(FILE *f)
{
	fprintf(f,
"usage: dynprof-agent [options]\n"
"  --coordinator HOST:PORT[,HOST:PORT...]\n"
"                           the coordinators (up to 8; a follower's leader is\n"
"                           followed if listed; none: standalone, needs\n"
"                           --config-file)\n"
"  --node NAME              this node's name (default: the hostname): 1 to 127\n"
"                           bytes of UTF-8, no space, '\"', '\\' or control byte\n"
"  --token-file F           the agent token sent in hello (default: none)\n"
"  --tls-cert FILE          connect over mutual TLS with this certificate (PEM,\n"
"                           naming --node),\n"
"  --tls-key FILE           its key, and\n"
"  --tls-ca FILE            the CA the coordinator's certificate chains to; it\n"
"                           must name the --coordinator host (SIGHUP rereads them)\n"
"  --socket PATH            where ranks report (default: $DYNPROF_AGENT_SOCKET\n"
"                           or " AGENT_DEFAULT_SOCKET ")\n"
"  --shm-dir DIR            where segments are (default: $DYNPROF_SHM_DIR or "
    SEG_DEFAULT_DIR ")\n"
"  --shm-mode OCTAL         mode of created segments and of the socket\n"
"                           (default: $DYNPROF_SHM_MODE or 0600; segments\n"
"                           never get o+w)\n"
"  --shm-budget MIB         shared memory of the segments the agent creates\n"
"                           itself, in MiB (default: 16; ranks make their own)\n"
"  --sample-interval MS     rank slot sampling while ranks move (default: 500)\n"
"  --queue-max N            events kept while the coordinator is away (default: 65536)\n"
"  --grace S                remove a segment S seconds after its last process\n"
"                           is gone (default: 60)\n"
"  --config-file FILE       standalone: watch MindSpore's profiler_config.json\n"
"  --job J                  standalone job (default: $DYNPROF_JOB, $SLURM_JOB_ID,\n"
"                           or \"default\")\n"
"  --conf FILE              read these options from FILE, \"key = value\" lines,\n"
"                           keys are the long option names (default: none)\n"
"  --legacy-dir DIR         serve every DIR/<job> as a job that polls its own\n"
"                           profiler_config.json (MindSpore 2.4-2.7, torch_npu;\n"
"                           docs/legacy.md) (default: none)\n"
"  --legacy-shm             also write the window into MindSpore 2.4-2.6's shared\n"
"                           memory record, when the job made one (default: off)\n"
"  --legacy-per-uid N       job directories of one owner served at once\n"
"                           (default: 64)\n"
"  --legacy-window-max S    a legacy window none of whose ranks is seen to\n"
"                           finish it within S seconds of its write ends\n"
"                           unverified, and the next is written (default: 1800)\n"
"  --trace-store DIR        pack each rank's trace, once its window stopped,\n"
"                           into DIR/<job>/window-<id>/rank-<N>.tar.zst\n"
"                           (a shared directory; docs/traces.md) (default: none)\n"
"  --trace-store-allow DIR  a job's own store (PUT /v1/jobs/J/trace-store) may\n"
"                           be a directory under DIR (absolute, repeatable, up\n"
"                           to 8; default: none, such stores are refused)\n"
"  --trace-settle S         pack a trace once unchanged for S seconds\n"
"                           (default: 10)\n"
"  --trace-upload s3://BUCKET[/PREFIX]\n"
"                           then put each archive into an S3-compatible store\n"
"                           as PREFIX/<job>/window-<id>/rank-<N>.tar.zst;\n"
"                           credentials from AWS_ACCESS_KEY_ID and\n"
"                           AWS_SECRET_ACCESS_KEY, else --s3-credentials\n"
"                           (default: none)\n"
"  --s3-endpoint URL        the store (default: https://s3.REGION.amazonaws.com)\n"
"  --s3-region R            (default: $AWS_REGION, else us-east-1)\n"
"  --s3-credentials F       an AWS credentials file, mode 0600 or 0400, root's\n"
"                           or the agent's user's (default: none)\n"
"  --upload-rate N[k|m|g]   upload at most N bytes/s (default: no cap)\n"
"  --upload-stall S         give a try up once the store took or answered\n"
"                           nothing for S seconds (default: 30)\n"
"  --upload-backoff S       wait S seconds (or Nms) after a failed try, doubled\n"
"                           after each, up to 60 s; six tries in all\n"
"                           (default: 2)\n"
"  --upload-part-size N[m|g] an archive larger than N goes up in parts of N\n"
"                           (S3 multipart upload; 5m to 5g; default: 5g)\n"
"  --ready-file F           write \"socket=PATH\" and \"pid=N\" lines to F once\n"
"                           serving (default: none)\n"
"  --test-clock-offset NS   for tests: read the wall clock NS nanoseconds ahead\n"
"                           (-86400e9 to 86400e9), as a node whose clock is off\n"
"                           (the machine's clock is not touched; default: 0)\n"
"  --test-stop-at POINT     for tests: stop (SIGSTOP) the first time a rank's\n"
"                           collection reaches POINT: collect-packed (its\n"
"                           archive written, not yet renamed into the store),\n"
"                           collect-renamed (in the store, not yet reported)\n"
"                           (default: none)\n"
"  -v, --verbose            log more\n"
"  -q, --quiet              log warnings only\n"
"  -h, --help               this help\n"
"      --version            print the version\n"
"exit status: 0 clean stop, 1 bad usage or configuration, 2 failure at start\n");
}

/* Copies flag name's value src into dst (size bytes).  Returns 0 or -1. */
static int
agent_copy(char *dst, size_t size, const char *src, const char *name)
{
	if (strlen(src) >= size) {
		log_warnx("%s: too long", name);
		return (-1);
	}
	strcpy(dst, src);
	return (0);
}

/* Reads flag name's value s as a number in [lo, hi].  Returns 0 or -1. */
static int
agent_number(const char *s, long long lo, long long hi, long long *out,
    int base, const char *name)
{
	char		*end;
	long long	 v;

	errno = 0;
	v = strtoll(s, &end, base);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) {
		log_warnx("%s: \"%s\" is not a number in [%lld, %lld]", name, s,
		    lo, hi);
		return (-1);
	}
	*out = v;
	return (0);
}

/*
 * Reads the wait after a failed upload: S seconds (1 to 60), or N ms with the
 * suffix (100ms to 60000ms: a test's failures need not take a minute).
 * Returns 0 or -1.
 */
static int
agent_backoff(const char *s, int *out_ms, const char *name)
{
	char		 num[16];
	size_t		 n = strlen(s);
	long long	 v;

	if (n > 2 && n < sizeof(num) + 2 && strcmp(s + n - 2, "ms") == 0) {
		memcpy(num, s, n - 2);
		num[n - 2] = '\0';
		if (agent_number(num, 100, 60000, &v, 10, name) == -1)
			return (-1);
		*out_ms = (int)v;
		return (0);
	}
	if (agent_number(s, 1, 60, &v, 10, name) == -1)
		return (-1);
	*out_ms = (int)v * 1000;
	return (0);
}

/* Reads a rate in bytes/s, N with an optional k, m or g (powers of 1024;
 * 0: no cap).  Returns 0 or -1. */
static int
agent_rate(const char *s, uint64_t *out, const char *name)
{
	char		 num[32];
	size_t		 n = strlen(s);
	long long	 v;
	int		 shift = 0;

	if (n > 0 && n < sizeof(num) && strchr("kKmMgG", s[n - 1]) != NULL) {
		shift = strchr("kK", s[n - 1]) != NULL ? 10 :
		    strchr("mM", s[n - 1]) != NULL ? 20 : 30;
		n--;
	}
	snprintf(num, sizeof(num), "%.*s", (int)n, s);
	if (agent_number(num, 0, 1LL << 30, &v, 10, name) == -1)
		return (-1);
	*out = (uint64_t)v << shift;
	return (0);
}

/* Writes the flag that sets option opt, "--name", into buf (for messages). */
static void
agent_flag_name(int opt, char *buf, size_t len)
{
	const struct option	*lo;

	for (lo = agent_longopts; lo->name != NULL; lo++) {
		if (lo->val == opt) {
			snprintf(buf, len, "--%s", lo->name);
			return;
		}
	}
	snprintf(buf, len, "option %d", opt);
}

/* Sets one option from a flag or a config file key; -1 on a bad value. */
static int
agent_set_option(struct agent_options *o, int opt, const char *arg,
    const char *name)
{
	struct failover_addr	 addrs[FAILOVER_ADDRS_MAX];
	long long		 v;
	const char		*why;

	switch (opt) {
	case OPT_COORDINATOR:
		if (failover_parse(addrs, arg, &why) == -1) {
			log_warnx("%s: \"%.300s\": %s", name, arg, why);
			return (-1);
		}
		return (agent_copy(o->coordinator, sizeof(o->coordinator), arg,
		    name));
	case OPT_NODE:
		if (arg[0] == '\0') {
			log_warnx("%s: empty", name);
			return (-1);
		}
		return (agent_copy(o->node, sizeof(o->node), arg, name));
	case OPT_TOKEN_FILE:
		return (agent_copy(o->token_file, sizeof(o->token_file), arg,
		    name));
	case OPT_TLS_CERT:
		return (agent_copy(o->tls_cert, sizeof(o->tls_cert), arg,
		    name));
	case OPT_TLS_KEY:
		return (agent_copy(o->tls_key, sizeof(o->tls_key), arg, name));
	case OPT_TLS_CA:
		return (agent_copy(o->tls_ca, sizeof(o->tls_ca), arg, name));
	case OPT_SOCKET:
		if (arg[0] == '\0') {
			log_warnx("%s: empty", name);
			return (-1);
		}
		return (agent_copy(o->socket_path, sizeof(o->socket_path), arg,
		    name));
	case OPT_SHM_DIR:
		return (agent_copy(o->shm_dir, sizeof(o->shm_dir), arg, name));
	case OPT_SHM_MODE:
		if (agent_number(arg, 0, 0777, &v, 8, name) == -1)
			return (-1);
		o->shm_mode = (mode_t)v;
		return (0);
	case OPT_SAMPLE:
		if (agent_number(arg, 10, 3600000, &v, 10, name) == -1)
			return (-1);
		o->sample_ms = (int)v;
		return (0);
	case OPT_QUEUE_MAX:
		if (agent_number(arg, 1, 100000000, &v, 10, name) == -1)
			return (-1);
		o->queue_max = (size_t)v;
		return (0);
	case OPT_GRACE:
		if (agent_number(arg, 0, 86400 * 30, &v, 10, name) == -1)
			return (-1);
		o->grace_s = (int)v;
		return (0);
	case OPT_CONFIG_FILE:
		return (agent_copy(o->config_file, sizeof(o->config_file), arg,
		    name));
	case OPT_JOB:
		if (!jobid_valid(arg, &why)) {
			log_warnx("%s: \"%s\": %s", name, arg, why);
			return (-1);
		}
		return (agent_copy(o->job, sizeof(o->job), arg, name));
	case OPT_CONF:
		return (agent_copy(o->conf, sizeof(o->conf), arg, name));
	case OPT_READY_FILE:
		return (agent_copy(o->ready_file, sizeof(o->ready_file), arg,
		    name));
	case OPT_LEGACY_DIR:
		return (agent_copy(o->legacy_dir, sizeof(o->legacy_dir), arg,
		    name));
	case OPT_LEGACY_SHM:
		o->legacy_shm = 1;
		return (0);
	case OPT_LEGACY_PER_UID:
		if (agent_number(arg, 1, LEGACY_JOBS_MAX, &v, 10, name) == -1)
			return (-1);
		o->legacy_per_uid = (size_t)v;
		return (0);
	case OPT_LEGACY_WINDOW_MAX:
		if (agent_number(arg, 1, 86400, &v, 10, name) == -1)
			return (-1);
		o->legacy_window_max_s = (int)v;
		return (0);
	case OPT_TRACE_STORE:
		return (agent_copy(o->trace_store, sizeof(o->trace_store), arg,
		    name));
	case OPT_TRACE_STORE_ALLOW:
		if (o->nstore_allow == AGENT_STORE_ALLOW_MAX || arg[0] != '/') {
			log_warnx("--%s: at most %d absolute directories",
			    name, AGENT_STORE_ALLOW_MAX);
			return (-1);
		}
		return (agent_copy(o->store_allow[o->nstore_allow++],
		    sizeof(o->store_allow[0]), arg, name));
	case OPT_TRACE_SETTLE:
		if (agent_number(arg, 0, 3600, &v, 10, name) == -1)
			return (-1);
		o->trace_settle_s = (int)v;
		return (0);
	case OPT_TRACE_UPLOAD:
		return (agent_copy(o->trace_upload, sizeof(o->trace_upload),
		    arg, name));
	case OPT_S3_ENDPOINT:
		return (agent_copy(o->s3_endpoint, sizeof(o->s3_endpoint), arg,
		    name));
	case OPT_S3_REGION:
		return (agent_copy(o->s3_region, sizeof(o->s3_region), arg,
		    name));
	case OPT_S3_CREDENTIALS:
		return (agent_copy(o->s3_credentials,
		    sizeof(o->s3_credentials), arg, name));
	case OPT_UPLOAD_RATE:
		return (agent_rate(arg, &o->upload_rate, name));
	case OPT_UPLOAD_STALL:
		if (agent_number(arg, 1, 3600, &v, 10, name) == -1)
			return (-1);
		o->upload_stall_s = (int)v;
		return (0);
	case OPT_UPLOAD_PART:
		if (agent_rate(arg, &o->upload_part_size, name) == -1)
			return (-1);
		if (o->upload_part_size < UPLOAD_PART_MIN ||
		    o->upload_part_size > UPLOAD_MAX_BYTES) {
			log_warnx("%s: from 5m (S3's smallest part) to 5g",
			    name);
			return (-1);
		}
		return (0);
	case OPT_UPLOAD_BACKOFF:
		return (agent_backoff(arg, &o->upload_backoff_ms, name));
	case OPT_TEST_CLOCK_OFFSET:
		if (agent_number(arg, -86400LL * 1000000000,
		    86400LL * 1000000000, &v, 10, name) == -1)
			return (-1);
		o->test_clock_offset_ns = v;
		if (v != 0)
			log_warnx("%s: the wall clock is read %lld ms off, for "
			    "tests", name, v / 1000000);
		return (0);
	case OPT_TEST_STOP_AT:
		if (strcmp(arg, "collect-packed") != 0 &&
		    strcmp(arg, "collect-renamed") != 0) {
			log_warnx("%s: \"%s\" is neither collect-packed nor "
			    "collect-renamed", name, arg);
			return (-1);
		}
		snprintf(o->test_stop_at, sizeof(o->test_stop_at), "%s", arg);
		log_warnx("%s: the agent stops itself at %s, for tests", name,
		    arg);
		return (0);
	case OPT_SHM_BUDGET:
		if (agent_number(arg, 0, 1 << 20, &v, 10, name) == -1)
			return (-1);
		o->shm_budget = (uint64_t)v << 20;
		return (0);
	case OPT_VERBOSE:
		o->log_level = LOG_LEVEL_DEBUG;
		return (0);
	case OPT_QUIET:
		o->log_level = LOG_LEVEL_QUIET;
		return (0);
	}
	log_warnx("%s: not an option", name);
	return (-1);
}

/* Defaults, then the environment the library honours too. */
static void
agent_default_options(struct agent_options *o)
{
	const char	*e;
	long long	 v;

	memset(o, 0, sizeof(*o));
	if (gethostname(o->node, sizeof(o->node) - 1) == -1 ||
	    o->node[0] == '\0')
		strcpy(o->node, "localhost");
	strcpy(o->socket_path, AGENT_DEFAULT_SOCKET);
	if ((e = getenv("DYNPROF_AGENT_SOCKET")) != NULL && *e != '\0' &&
	    strlen(e) < sizeof(o->socket_path))
		strcpy(o->socket_path, e);
	strcpy(o->shm_dir, SEG_DEFAULT_DIR);
	if ((e = getenv("DYNPROF_SHM_DIR")) != NULL && *e != '\0' &&
	    strlen(e) < sizeof(o->shm_dir))
		strcpy(o->shm_dir, e);
	o->shm_mode = SEG_DEFAULT_MODE;
	if ((e = getenv("DYNPROF_SHM_MODE")) != NULL && *e != '\0' &&
	    agent_number(e, 0, 0777, &v, 8, "DYNPROF_SHM_MODE") == 0)
		o->shm_mode = (mode_t)v;
	o->sample_ms = AGENT_SAMPLE_MS;
	o->queue_max = AGENT_QUEUE_MAX;
	o->grace_s = AGENT_GRACE_S;
	o->legacy_per_uid = LEGACY_PER_UID;
	o->legacy_window_max_s = LEGACY_WINDOW_MAX_S;
	o->shm_budget = AGENT_SHM_BUDGET;
	o->trace_settle_s = AGENT_TRACE_SETTLE_S;
	o->upload_stall_s = AGENT_UPLOAD_STALL_S;
	o->upload_backoff_ms = AGENT_UPLOAD_BACKOFF_S * 1000;
	o->upload_part_size = AGENT_UPLOAD_PART_SIZE;
	strcpy(o->job, "default");
	if (((e = getenv("DYNPROF_JOB")) != NULL && *e != '\0') ||
	    ((e = getenv("SLURM_JOB_ID")) != NULL && *e != '\0'))
		if (jobid_valid(e, NULL) && strlen(e) < sizeof(o->job))
			strcpy(o->job, e);
	o->log_level = LOG_LEVEL_INFO;
}

/*
 * Reads "key = value" lines ('#' starts a comment; keys are long option names,
 * flags such as "verbose" take "yes"/"no"), the file read whole by
 * file_read() first: a FIFO there must not hold the agent at start nor its
 * loop on SIGHUP.  Returns 0, or -1 after logging the file, the line and the
 * reason.
 */
static int
agent_read_conf(struct agent_options *o, const char *path)
{
	char		 line[4096], name[PATH_MAX + 600], *p, *key, *val, *end;
	char		*buf, *next;
	const char	*why;
	const struct option *lo;
	size_t		 size, n;
	int		 lineno = 0, rc = 0;

	if ((buf = file_read(path, 0, AGENT_CONF_MAX, &size, NULL, &why)) ==
	    NULL) {
		log_warnx("%s: %s: %s", __func__, path, why);
		return (-1);
	}
	for (next = buf; *next != '\0'; ) {
		lineno++;
		n = strcspn(next, "\n");
		if (n >= sizeof(line)) {
			log_warnx("%s:%d: line too long", path, lineno);
			rc = -1;
			break;
		}
		memcpy(line, next, n);
		line[n] = '\0';
		next += n + (next[n] == '\n');
		if ((p = strchr(line, '#')) != NULL)
			*p = '\0';
		key = line + strspn(line, " \t");
		end = key + strlen(key);
		while (end > key && strchr(" \t\r\n", end[-1]) != NULL)
			*--end = '\0';
		if (*key == '\0')
			continue;
		if ((val = strchr(key, '=')) == NULL) {
			log_warnx("%s:%d: expected \"key = value\"", path,
			    lineno);
			rc = -1;
			continue;
		}
		*val++ = '\0';
		val += strspn(val, " \t");
		end = key + strlen(key);
		while (end > key && strchr(" \t", end[-1]) != NULL)
			*--end = '\0';
		for (lo = agent_longopts; lo->name != NULL; lo++)
			if (strcmp(lo->name, key) == 0)
				break;
		snprintf(name, sizeof(name), "%s:%d: %s", path, lineno, key);
		if (lo->name == NULL || lo->val == OPT_HELP ||
		    lo->val == OPT_VERSION || lo->val == OPT_CONF) {
			log_warnx("%s: unknown key", name);
			rc = -1;
			continue;
		}
		if (lo->has_arg == no_argument) {
			if (strcmp(val, "yes") == 0 || strcmp(val, "1") == 0 ||
			    strcmp(val, "true") == 0) {
				if (agent_set_option(o, lo->val, "", name) == -1)
					rc = -1;
			} else if (strcmp(val, "no") != 0 &&
			    strcmp(val, "0") != 0 && strcmp(val, "false") != 0) {
				log_warnx("%s: expected yes or no", name);
				rc = -1;
			}
			continue;
		}
		if (agent_set_option(o, lo->val, val, name) == -1)
			rc = -1;
	}
	file_free(buf, size);
	return (rc);
}

/* Applies argv's options to o; -1 on a usage error, 1 for --help/--version. */
static int
agent_parse_args(struct agent_options *o, int argc, char **argv)
{
	int	 ch;
	char	 name[64];

	optind = 0;
	opterr = 1;
	while ((ch = getopt_long(argc, argv, "vqh", agent_longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case OPT_HELP:
			agent_usage(stdout);
			return (1);
		case OPT_VERSION:
			printf("dynprof-agent %s (protocol %d)\n",
			    DYNPROF_VERSION_STRING, PROTOCOL_VERSION);
			return (1);
		case '?':
			agent_usage(stderr);
			return (-1);
		default:
			agent_flag_name(ch, name, sizeof(name));
			if (agent_set_option(o, ch, optarg != NULL ? optarg : "",
			    name) == -1)
				return (-1);
		}
	}
	if (optind < argc) {
		log_warnx("unexpected argument \"%s\"", argv[optind]);
		return (-1);
	}
	return (0);
}

/*
 * Builds the options: defaults and environment, then the config file named by
 * --conf, then the flags (which win).  Returns 0, 1 (help shown) or -1.
 */
static int
agent_load_options(struct agent_options *o, int argc, char **argv)
{
	struct agent_options	 first;
	const char		*why;
	int			 rc;

	agent_default_options(&first);
	if ((rc = agent_parse_args(&first, argc, argv)) != 0)
		return (rc);
	agent_default_options(o);
	if (first.conf[0] != '\0') {
		if (agent_read_conf(o, first.conf) == -1)
			return (-1);
		strcpy(o->conf, first.conf);
	}
	if (agent_parse_args(o, argc, argv) != 0)
		return (-1);
	if (o->coordinator[0] == '\0' && o->config_file[0] == '\0') {
		log_warnx("no --coordinator and no --config-file: nothing to "
		    "serve");
		return (-1);
	}
	if (o->coordinator[0] != '\0' && o->config_file[0] != '\0') {
		log_warnx("--coordinator and --config-file exclude each other");
		return (-1);
	}
	if ((o->tls_cert[0] != '\0') != (o->tls_key[0] != '\0') ||
	    (o->tls_cert[0] != '\0') != (o->tls_ca[0] != '\0')) {
		log_warnx("--tls-cert, --tls-key and --tls-ca go together");
		return (-1);
	}
	if (o->legacy_dir[0] != '\0' && o->coordinator[0] == '\0') {
		log_warnx("--legacy-dir needs --coordinator");
		return (-1);
	}
	if (!nodename_valid(o->node, &why)) {
		log_warnx("--node \"%.300s\": %s (the coordinator would refuse "
		    "every hello)", o->node, why);
		return (-1);
	}
	/* o+w is for the socket (ranks of any uid, deploy/k8s); segments
	 * never get it (segment.c, docs/segments.md). */
	if (o->shm_mode & S_IWOTH)
		log_info("--shm-mode %04o: the socket is writable by others, "
		    "the segments are created %04o (never writable by others)",
		    (unsigned)o->shm_mode, (unsigned)(o->shm_mode & 0775));
	if (o->tls_cert[0] != '\0' && o->coordinator[0] == '\0') {
		log_warnx("--tls-cert needs --coordinator");
		return (-1);
	}
	return (0);
}

/* Reads the agent token from --token-file (token_read()).  Returns 0 or -1. */
static int
agent_read_token(struct agent *a)
{
	const char	*why;

	a->token[0] = '\0';
	if (a->opts.token_file[0] == '\0')
		return (0);
	if (token_read(a->opts.token_file, a->token, sizeof(a->token),
	    &why) == -1) {
		log_warnx("token file %s: %s", a->opts.token_file, why);
		return (-1);
	}
	return (0);
}

/*
 * SIGHUP: rereads the config file (the flags still win over it); what can change
 * without a restart does: levels, sampling, grace, queue bound, token.
 */
static void
agent_reload(struct agent *a)
{
	struct agent_options	 o;

	log_info("reloading");
	if (agent_load_options(&o, a->argc, a->argv) != 0) {
		log_warnx("%s: keeping the running configuration",
		    a->opts.conf[0] != '\0' ? a->opts.conf : "flags");
	} else {
		a->opts.sample_ms = o.sample_ms;
		a->opts.grace_s = o.grace_s;
		a->opts.log_level = o.log_level;
		a->up.queue.max = o.queue_max;
		strcpy(a->opts.token_file, o.token_file);
		log_setlevel(o.log_level);
	}
	if (agent_read_token(a) == -1)
		log_warnx("token: keeping none");
	upstream_reload_tls(a);
	if (a->sa != NULL)
		standalone_reload(a);
}

/* SIGTERM and SIGINT stop the agent; SIGHUP reloads it. */
static void
agent_signal(evutil_socket_t sig, short what, void *arg)
{
	struct agent	*a = arg;

	(void)what;
	switch (sig) {
	case SIGTERM:
	case SIGINT:
		log_info("signal %d: stopping", (int)sig);
		/* A second signal does not wait for the goodbye. */
		if (a->stopping || !upstream_goodbye(a))
			event_base_loopbreak(a->base);
		a->stopping = 1;
		break;
	case SIGHUP:
		agent_reload(a);
		break;
	}
}

/* Asks for a sample soon: a rank attached or something moved. */
static void
agent_wake_sampler(struct agent *a)
{
	a->moved = 1;
	if (a->next_sample_ms == INT64_MAX ||
	    a->next_sample_ms > clock_mono_ms() + a->opts.sample_ms) {
		a->next_sample_ms = clock_mono_ms() + a->opts.sample_ms;
		agent_schedule(a);
	}
}

/*
 * Housekeeping: sampling, heartbeats, timeouts, reconnection, each when due.
 *
 * Sampling runs every --sample-interval while ranks move and slows to
 * AGENT_IDLE_SAMPLE_MS once a sample finds nothing changed.  An idle agent
 * should wake about once per heartbeat, not once per timer: so when a message
 * from the coordinator wakes it anyway (early), whatever is due within half an
 * interval runs then, and the timer's own deadlines for idle work sit a little
 * after the nominal ones, so that the coordinator's heartbeat (same period)
 * normally comes first and the timer never fires.
 */
#define COALESCE_MS	250

/* The sampling interval once nothing moves. */
static int
agent_idle_ms(const struct agent *a)
{
	return (a->opts.sample_ms > AGENT_IDLE_SAMPLE_MS ? a->opts.sample_ms :
	    AGENT_IDLE_SAMPLE_MS);
}

/* Does what is due now (early: what is due within half an interval too). */
static void
agent_housekeep(struct agent *a, int early)
{
	int64_t		 now = clock_mono_ms(), due;
	int		 interval, slack;

	interval = a->moved ? a->opts.sample_ms : agent_idle_ms(a);
	slack = early ? interval / 2 : COALESCE_MS;
	if (a->next_sample_ms != INT64_MAX &&
	    now + slack >= a->next_sample_ms) {
		a->moved = segments_sample(a, now);
		a->next_sample_ms = now + (a->moved ? a->opts.sample_ms :
		    agent_idle_ms(a));
		/* No rank alive: wake only to end a grace period, or never. */
		if (!a->moved && (due = segments_next_due(a)) != 0)
			a->next_sample_ms = due;
	}
	a->upstream_next_ms = upstream_tick(a, now, early);
	collect_tick(a);
	agent_schedule(a);
}

/* The housekeeping timer fired. */
static void
agent_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	agent_housekeep(arg, 0);
}

/* Arms the housekeeping timer for the earliest thing due. */
static void
agent_schedule(struct agent *a)
{
	struct timeval	 tv;
	int64_t		 now = clock_mono_ms(), next;

	next = a->next_sample_ms;
	if (!a->moved && next != INT64_MAX)
		next += agent_idle_ms(a) / 4;
	if (a->upstream_next_ms > 0 && a->upstream_next_ms < next)
		next = a->upstream_next_ms;
	if (collect_next_ms(a) < next)
		next = collect_next_ms(a);
	if (next == INT64_MAX) {
		evtimer_del(a->tick_ev);	/* nothing to do until woken */
		return;
	}
	if (next < now)
		next = now;
	tv.tv_sec = (next - now) / 1000;
	tv.tv_usec = ((next - now) % 1000) * 1000;
	evtimer_add(a->tick_ev, &tv);
}

static const struct agent_loop agent_loop = {
	.housekeep = agent_housekeep,
	.schedule = agent_schedule,
	.wake_sampler = agent_wake_sampler,
};

/* The coordinator committed the event read from o: its reader learns. */
static void
agent_acked(struct agent *a, const struct queue_origin *o)
{
	if (o->slot == QUEUE_ORIGIN_COLLECT)
		collect_acked(a, o);
	else if (events_log_acked(a, o) == -1)
		segments_drop_faulted(a);
}

/* The coordinator link is up again: what this node serves, told again. */
static void
agent_welcomed(struct agent *a)
{
	segments_welcomed(a);
	legacy_resend(a);
}

static const struct upstream_hooks agent_upstream_hooks = {
	.config = segments_apply,
	.acked = agent_acked,
	.welcomed = agent_welcomed,
	.retimed = segments_retime,
};

/*
 * Wires the parts of a: the housekeeping timer they ask through, what the
 * coordinator link hands up.
 */
void
agent_wire(struct agent *a)
{
	a->loop = &agent_loop;
	a->up.hooks = &agent_upstream_hooks;
}

/* Writes --ready-file (socket and pid) once serving.  Returns 0 or -1. */
static int
agent_write_ready(struct agent *a)
{
	char	 tmp[PATH_MAX + 8];
	FILE	*f;

	if (a->opts.ready_file[0] == '\0')
		return (0);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", a->opts.ready_file) >=
	    sizeof(tmp))
		return (-1);
	if ((f = fopen(tmp, "w")) == NULL) {
		log_warn("%s", tmp);
		return (-1);
	}
	fprintf(f, "socket=%s\npid=%ld\n", a->opts.socket_path, (long)getpid());
	if (fclose(f) != 0 || rename(tmp, a->opts.ready_file) == -1) {
		log_warn("%s", a->opts.ready_file);
		return (-1);
	}
	return (0);
}

/* Logs the counters of everything refused or lost. */
static void
agent_log_stats(const struct agent *a)
{
	const struct agent_stats *s = &a->stats;

	log_info("stats: configs_applied=%llu bad_configs=%llu "
	    "bad_frames=%llu bad_messages=%llu unknown_messages=%llu "
	    "bad_datagrams=%llu foreign_datagrams=%llu events_forwarded=%llu "
	    "events_dropped=%llu standalone_errors=%llu samples=%llu "
	    "segments_dropped=%llu shm_refused=%llu legacy_refused=%llu "
	    "(name %llu, type %llu, max %llu, uid %llu) dirs_made=%llu "
	    "dirs_taken_back=%llu collect_unscheduled=%llu "
	    "log_lines_held=%lu",
	    (unsigned long long)s->configs_applied,
	    (unsigned long long)s->bad_configs,
	    (unsigned long long)s->bad_frames,
	    (unsigned long long)s->bad_messages,
	    (unsigned long long)s->unknown_messages,
	    (unsigned long long)s->bad_datagrams,
	    (unsigned long long)s->foreign_datagrams,
	    (unsigned long long)s->events_forwarded,
	    (unsigned long long)a->up.queue.dropped,
	    (unsigned long long)s->standalone_errors,
	    (unsigned long long)s->samples,
	    (unsigned long long)s->segments_dropped,
	    (unsigned long long)s->shm_refused,
	    (unsigned long long)s->legacy_refused,
	    (unsigned long long)s->legacy_refused_name,
	    (unsigned long long)s->legacy_refused_type,
	    (unsigned long long)s->legacy_refused_max,
	    (unsigned long long)s->legacy_refused_uid,
	    (unsigned long long)s->dirs_made,
	    (unsigned long long)s->dirs_taken_back,
	    (unsigned long long)s->collect_unscheduled,
	    log_limited_dropped());
}

/* Arms SIGTERM, SIGINT and SIGHUP and the housekeeping timer on a's base. */
static void
agent_events(struct agent *a)
{
	size_t	 i;

	for (i = 0; i < nitems(agent_sigs); i++) {
		a->sig_ev[i] = evsignal_new(a->base, agent_sigs[i], agent_signal,
		    a);
		if (a->sig_ev[i] == NULL || evsignal_add(a->sig_ev[i], NULL) == -1)
			fatalx("cannot handle signal %d", agent_sigs[i]);
	}
	if ((a->tick_ev = evtimer_new(a->base, agent_tick, a)) == NULL)
		fatalx("evtimer_new failed");
}

/*
 * Makes an agent from the flags and its config file, with its event base,
 * signals and timer, serving nothing yet.  Returns NULL, and the exit status
 * in *rc (0 after --help or --version, 1 for a bad flag, file or token), when
 * there is none to run.  Caller frees it with agent_free().
 */
struct agent *
agent_new(int argc, char **argv, int *rc)
{
	struct agent	*a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		fatal("calloc");
	a->argc = argc;
	a->argv = argv;
	*rc = agent_load_options(&a->opts, argc, argv);
	if (*rc != 0) {
		*rc = *rc == 1 ? 0 : 1;
		free(a);
		return (NULL);
	}
	log_setlevel(a->opts.log_level);
	if (agent_read_token(a) == -1) {
		*rc = 1;
		free(a);
		return (NULL);
	}
	TAILQ_INIT(&a->jobs);
	agent_wire(a);
	a->rank_fd = a->shm_lock_fd = -1;
	if ((a->scratch = malloc(sizeof(*a->scratch))) == NULL)
		fatal("malloc");
	if ((a->base = event_base_new()) == NULL)
		fatalx("event_base_new failed");
	agent_events(a);
	return (a);
}

/*
 * Opens everything the agent serves: the coordinator link, the ranks' socket,
 * the segments already there, the standalone config; then the first
 * housekeeping and the ready file.  Returns 0 or -1.
 */
int
agent_start(struct agent *a)
{
	if (upstream_init(a) == -1)
		return (-1);
	if (ranks_open(a) == -1)
		return (-1);
	if (segments_adopt_all(a) == -1)
		return (-1);
	if (a->opts.config_file[0] != '\0' && standalone_open(a) == -1)
		return (-1);
	if (legacy_open(a) == -1)
		return (-1);
	if (collect_open(a) == -1)
		return (-1);
	a->next_sample_ms = clock_mono_ms() + a->opts.sample_ms;
	a->moved = 1;
	agent_housekeep(a, 0);
	if (agent_write_ready(a) == -1)
		return (-1);
	log_info("serving: node %s, socket %s, segments in %s, %s",
	    a->opts.node, a->opts.socket_path, a->opts.shm_dir,
	    a->opts.coordinator[0] != '\0' ? a->opts.coordinator :
	    "standalone");
	return (0);
}

/*
 * Runs the event loop until SIGTERM or SIGINT, then logs the counters.
 * Returns the exit status: 0, or 2 when the loop failed.
 */
int
agent_run(struct agent *a)
{
	int	 rc = 0;

	if (event_base_dispatch(a->base) == -1) {
		log_warnx("event loop failed");
		rc = 2;
	}
	agent_log_stats(a);
	return (rc);
}

/* Closes whatever a serves and frees it. */
void
agent_free(struct agent *a)
{
	size_t	 i;

	standalone_close(a);
	legacy_close(a);
	collect_close(a);
	upstream_free(a);
	ranks_close(a);
	segments_close_all(a);
	for (i = 0; i < nitems(agent_sigs); i++)
		if (a->sig_ev[i] != NULL)
			event_free(a->sig_ev[i]);
	event_free(a->tick_ev);
	event_base_free(a->base);
	free(a->scratch);
	free(a);
}
