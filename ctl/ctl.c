/*
 * dynprofctl: global flags, the command table and the help texts.
 */

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ctl.h"
#include "options.h"
#include "token.h"
#include "version.h"

/* Where a help text lists the options table's typed options. */
#define CTL_HELP_OPTIONS	"\001"
#define CTL_HELP_INDENT		21	/* the column of a flag's text */
#define CTL_HELP_WIDTH		72

struct ctl_command {
	const char	*name;
	int		(*fn)(struct ctl *, int, char **);
	const char	*usage;
	const char	*help;
};

static const struct ctl_command ctl_commands[] = {
	{ "jobs", ctl_cmd_jobs, "jobs",
	  "List every job the coordinator knows: generation, windows, ranks,\n"
	  "nodes and the highest step reported.\n" },
	{ "nodes", ctl_cmd_nodes, "nodes",
	  "List the agents (one per node): connected or lost, address, last seen,\n"
	  "and the config generation each applied per job.\n" },
	{ "status", ctl_cmd_status, "status JOB [--follow]",
	  "Show a job: a summary line, then one line per rank (sorted by rank, read\n"
	  "page by page) with its node, step, state, window and output directory,\n"
	  "then the windows with how their targeted ranks are doing, and the nodes\n"
	  "counted by state and applied generation.  With --json, the job's summary\n"
	  "(GET /v1/jobs/JOB) as the coordinator gave it.\n"
	  "  --follow           then print the job's rank and window events as they\n"
	  "                     are committed, until interrupted (--json: one JSON\n"
	  "                     object a line, as the event stream has them)\n" },
	{ "config", ctl_cmd_config, "config get JOB | config set JOB FILE",
	  "get: print the job's stored profiler_config.json.\n"
	  "set: send FILE (MindSpore's profiler_config.json, as it is; '-' reads\n"
	  "     standard input).  Valid start_step/stop_step add a window.\n" },
	{ "cancel", ctl_cmd_cancel, "cancel JOB WINDOW",
	  "Cancel window WINDOW (its id) of JOB.  Ranks profiling in it stop at\n"
	  "their next step end.\n" },
	{ "forget", ctl_cmd_forget, "forget JOB [--force]",
	  "Forget JOB: its windows, ranks and events leave the coordinator and its\n"
	  "store, and its agents get an empty schedule.  Ranks still running show\n"
	  "up again as a new job nobody scheduled.\n"
	  "  --force            forget it even while a window of it runs (else\n"
	  "                     refused, 409): its ranks profile on to the window's\n"
	  "                     stop step\n" },
	{ "fetch", ctl_cmd_fetch, "fetch JOB WINDOW [--out DIR] [--ranks 0-7,16]\n"
	  "        [--jobs N] [--s3-endpoint URL] [--s3-region R] [--stall S]\n"
	  "        [--no-unpack] [--force]",
	  "Download the traces of window WINDOW that the agents collected into\n"
	  "their trace store (GET /v1/jobs/JOB/windows/WINDOW/traces) into DIR\n"
	  "(default .) as rank-N.tar.zst, each checked against the size and\n"
	  "sha256 its agent reported: an archive that differs is not kept.  A\n"
	  "location is a path (the shared store, mounted here too), a URL, or\n"
	  "s3://BUCKET/KEY, read from --s3-endpoint URL ($DYNPROF_S3_ENDPOINT)\n"
	  "with $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (SigV4; region\n"
	  "--s3-region, else $AWS_REGION, else us-east-1) when given, else from\n"
	  "the presigned URL the index gives (a coordinator with --s3-endpoint).\n"
	  "A download under 1 byte/s for S seconds (--stall, default 30) is\n"
	  "given up.  Downloads run N at once (--jobs, 1 to 64, default 4),\n"
	  "each hashed as it arrives; copies from a path one after the other.\n"
	  "On a terminal a progress bar shows the bytes of the index's total,\n"
	  "the ranks done and failed, and the rate.\n"
	  "Each checked archive is unpacked into DIR/rank-N/ (kept\n"
	  "beside it): only regular files and directories, no entry with '..',\n"
	  "an absolute path or a path through a link, no owner nor setuid bit,\n"
	  "at most 65536 entries and 64 GiB; an archive that breaks these fails\n"
	  "its rank.  An existing DIR/rank-N/ is not written into.\n"
	  "  --no-unpack        keep the archives only\n"
	  "  --force            replace an existing DIR/rank-N/\n"
	  "Exit 1 if any rank's trace failed, was not collected, or none was.\n" },
	{ "compare", ctl_cmd_compare, "compare JOB WINDOW",
	  "Compare the ranks of window WINDOW from what their agents read of\n"
	  "their collected traces (GET /v1/jobs/JOB/windows/WINDOW/compare): the\n"
	  "median step time and its spread, the compute time (the step less\n"
	  "the time in collectives) and the time in collectives, the straggler\n"
	  "(in synchronous training: the rank that waits least), the slowest\n"
	  "ranks by step and by compute and how far off the median they are,\n"
	  "the operators whose time differs most between ranks, then each\n"
	  "rank's steps.\n" },
	{ "trace", ctl_cmd_trace,
	  "trace JOB (--start N | --in N) (--steps M | --stop N)\n"
	  "        [--roundup R] [--ranks 0-7,16] [--option KEY=VALUE ...]\n"
	  "        | --at T --for D [--tolerance D]\n"
	  "        [--select SEL] [--nodes N1,N2] [--one-per KEY]\n"
	  "        [--group-of RANK:KEY]\n"
	  "        [--output-subdir D] [--wait [--timeout S]] [--new] [--force]\n"
	  "        [--no-collect]",
	  "Schedule a profiling window and print its resolved steps.\n"
	  "  --start N          start at step N (absolute)\n"
	  "  --in N             start N steps after the job's highest step now\n"
	  "                     (the one reported, moved on by the job's rate)\n"
	  "  --steps M          run M steps (stop = start + M - 1)\n"
	  "  --stop N           stop after step N (inclusive)\n"
	  "  --roundup R        move the start up to the next multiple of R\n"
	  "  --at T             a time window, for ranks that step and ranks that\n"
	  "                     do not (dynprof_poll()): from T, RFC 3339 such as\n"
	  "                     2026-12-05T12:00:00Z, or +30s (+500ms, +2m, +1h)\n"
	  "                     from the coordinator's clock now; a stepping rank\n"
	  "                     starts at its first step that begins after T\n"
	  "  --for D            for D: 10s, 1500ms, 2m (--duration D too); a\n"
	  "                     number without a unit is seconds, here, in +N\n"
	  "                     and in --tolerance\n"
	  "  --tolerance D      warn when a node's clock is further than D from\n"
	  "                     the coordinator's (default 100ms); warnings are\n"
	  "                     printed to stderr\n"
	  "  --ranks LIST       only these ranks, e.g. 0-7,16 (default: all)\n"
	  "  --select SEL       the live ranks whose labels match SEL, such as\n"
	  "                     'pp=3,tp in (0,1)' (docs/labels.md)\n"
	  "  --nodes N1,N2      the live ranks on these nodes\n"
	  "  --one-per KEY      one rank (the lowest) per value of label KEY\n"
	  "  --group-of RANK:KEY the ranks sharing every label of RANK but KEY,\n"
	  "                     e.g. 13:tp: rank 13's tensor-parallel group\n"
	  "                     (these four combine; not with --ranks)\n"
	  "  --option KEY=VALUE a profiler option, repeatable: MindSpore fields are\n"
	  CTL_HELP_OPTIONS
	  "                     other keys take a JSON value, else a string\n"
	  "  --output-subdir D  a relative subdirectory of each rank's output root\n"
	  "  --wait             follow the targeted ranks (from the job's event\n"
	  "                     stream) until each has stopped, skipped or\n"
	  "                     failed, showing how many have; exit 1\n"
	  "                     if any skipped, failed, went away, or never ran\n"
	  "                     the window (it was cancelled or finished first)\n"
	  "  --timeout S        with --wait: give up after S seconds (exit 3)\n"
	  "                     (a node of the job lost meanwhile is said as it\n"
	  "                     happens, and counted in the progress line)\n"
	  "  --new              JOB has not started yet: schedule it ahead (else,\n"
	  "                     a job the coordinator does not know is refused\n"
	  "                     with --wait or --in, the jobs there are named)\n"
	  "  --force            no checks: a job or ranks not known, a start every\n"
	  "                     live rank has passed (else refused, 409)\n"
	  "  --no-collect       the agents' --trace-store does not collect this\n"
	  "                     window's traces (\"collect\": false)\n"
	  "With --json, prints the coordinator's answer, and with --wait the job's\n"
	  "final summary after it.\n" },
	{ "stragglers", ctl_cmd_stragglers,
	  "stragglers JOB [--lag N|default] [--rate-drop P|default]\n"
	  "        [--busy P|default]",
	  "Show the job's stragglers: its median step, how many ranks and nodes\n"
	  "lag it, its ranks' busy time (step begin to the first collective, from\n"
	  "ranks that mark it), and the worst ranks (step, lag, rate, busy time,\n"
	  "its multiple of the median, its score against the fastest, and which\n"
	  "signal flagged it: lag, slow, busy, busy_change, last: the rank last to\n"
  "arrive at the collective at over half the steps).  With a flag, first\n"
	  "set the job's own threshold (default: the coordinator's):\n"
	  "  --lag N            a rank more than N steps behind the median\n"
	  "  --rate-drop P      a rank whose rate is P% under the job's\n"
	  "  --busy P           a rank whose busy time is P% over the median,\n"
	  "                     or rose P% against its own history\n" },
	{ "collect", ctl_cmd_collect, "collect JOB on|off",
	  "Whether the agents' --trace-store collects the traces of the job's\n"
	  "windows made from now on (PUT /v1/jobs/JOB/collect); windows made\n"
	  "before keep what they said.  Kept with the job's rules, across\n"
	  "restarts; `rule list JOB` shows it.\n" },
	{ "trace-store", ctl_cmd_trace_store, "trace-store JOB URL|DIR|none",
	  "Where the agents collect the traces of the job's windows made from\n"
	  "now on (PUT /v1/jobs/JOB/trace-store): a directory, which an agent\n"
	  "takes only under one of its --trace-store-allow and walks without\n"
	  "following a symbolic link; an s3://BUCKET/PREFIX, uploaded through\n"
	  "the agent's --trace-upload endpoint and credentials; or none for\n"
	  "the agents' --trace-store.\n"
	  "Kept with the job's rules, across restarts; `rule list JOB` shows\n"
	  "it.\n" },
	{ "rule", ctl_cmd_rule,
	  "rule list JOB | rule delete JOB ID\n"
	  "        rule add JOB --steps K [--peers N] [--roundup R]\n"
	  "        [--interval S] [--max-per-hour M] [--option KEY=VALUE ...]\n"
	  "        [--output-subdir D]",
	  "A job's rules: when a rank straggles, profile it and N healthy peers\n"
	  "(the nearest the median step) for K steps from the next multiple of R.\n"
	  "A job has none until one is added.\n"
	  "  --steps K          steps to profile (required)\n"
	  "  --peers N          healthy ranks profiled beside it (default 2)\n"
	  "  --roundup R        start at the next multiple of R (default 1)\n"
	  "  --interval S       at most one firing every S seconds (default 600)\n"
	  "  --max-per-hour M   at most M firings an hour (default 4)\n"
	  "  --option, --output-subdir  as for trace\n" },
	{ "local", ctl_cmd_local, "local JOB [--shm-dir DIR] [--uid UID]",
	  "Print this node's shared memory segment of JOB, read directly (no\n"
	  "coordinator): header, windows and every used rank slot.  DIR defaults\n"
	  "to $DYNPROF_SHM_DIR, else /dev/shm.\n" },
};

#define CTL_NCOMMANDS	(sizeof(ctl_commands) / sizeof(ctl_commands[0]))

static void
ctl_usage(FILE *f)
{
	size_t	 i;

	fprintf(f,
	    "usage: dynprofctl [--coordinator URL[,URL...]] [--token-file F]\n"
	    "                  [--cacert F] [--cert F] [--key F] [--json] "
	    "COMMAND [ARGS]\n"
	    "       dynprofctl COMMAND --help\n"
	    "\n"
	    "Drive dynprof's coordinator (its admin HTTP API) from the command "
	    "line.\n"
	    "\n"
	    "Commands:\n");
	for (i = 0; i < CTL_NCOMMANDS; i++)
		fprintf(f, "  %s\n", ctl_commands[i].usage);
	fprintf(f,
	    "\n"
	    "Options:\n"
	    "  --coordinator URL  the admin API, http:// or https:// (default\n"
	    "                     $DYNPROF_COORDINATOR, else %s);\n"
	    "                     a comma-separated list: the first that "
	    "answers,\n"
	    "                     and the only hosts a redirect may go to\n"
	    "  --token-file F     read the operator or viewer token from F "
	    "(default\n"
	    "                     $DYNPROF_TOKEN)\n"
	    "  --cacert F         https: trust the CAs in F (default "
	    "$DYNPROF_CACERT,\n"
	    "                     else the system's)\n"
	    "  --cert F           https: client certificate, PEM (default "
	    "$DYNPROF_CERT)\n"
	    "  --key F            its private key, PEM (default $DYNPROF_KEY, "
	    "else in F)\n"
	    "  --json             print the coordinator's JSON as is, for "
	    "scripts\n"
	    "  --help, --version\n"
	    "\n"
	    "Exit codes: 0 ok, 1 refused by the coordinator or bad usage,\n"
	    "            2 cannot reach the coordinator, 3 timeout.\n",
	    CTL_DEFAULT_URL);
}

static int
ctl_read_token(struct ctl *ctl, const char *path)
{
	char		 buf[TOKEN_MAX + 1];
	const char	*why;

	if (token_read(path, buf, sizeof(buf), &why) == -1) {
		ctl_errx(ctl, "cannot read token file %s: %s", path, why);
		return (-1);
	}
	ctl->conn.token = strdup(buf);
	return (ctl->conn.token == NULL ? -1 : 0);
}

/*
 * Takes a TLS file from its flag, else from the environment variable env;
 * checks it can be read.  Returns 0 or -1 (said why).
 */
static int
ctl_tls_file(struct ctl *ctl, const char **slot, const char *flag,
    const char *env)
{
	const char	*v;

	if (*slot == NULL && (v = getenv(env)) != NULL && *v != '\0')
		*slot = v;
	if (*slot != NULL && access(*slot, R_OK) == -1) {
		ctl_errx(ctl, "cannot read %s %s: %s", flag, *slot,
		    strerror(errno));
		return (-1);
	}
	return (0);
}

static const struct ctl_command *
ctl_find(const char *name)
{
	size_t	 i;

	for (i = 0; i < CTL_NCOMMANDS; i++) {
		if (strcmp(ctl_commands[i].name, name) == 0)
			return (&ctl_commands[i]);
	}
	return (NULL);
}

/*
 * Prints the typed options of the options table, integers then booleans,
 * wrapped under a flag's text.
 */
static void
ctl_help_options(FILE *f)
{
	static const struct {
		enum options_type	 type;
		const char		*what;
	} groups[] = {
		{ OPTIONS_INT, ": integers;" },
		{ OPTIONS_BOOL, ": true/false);" },
	};
	char		 text[1024], *word, *last;
	size_t		 g, i, off, col, len;
	const char	*sep;

	off = (size_t)snprintf(text, sizeof(text), "typed (");
	for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
		sep = "";
		for (i = 0; i < OPTIONS_N && off < sizeof(text); i++) {
			if (options_table[i].type != groups[g].type)
				continue;
			off += (size_t)snprintf(text + off, sizeof(text) - off,
			    "%s%s", sep, options_table[i].name);
			sep = ", ";
		}
		if (off < sizeof(text))
			off += (size_t)snprintf(text + off, sizeof(text) - off,
			    "%s ", groups[g].what);
	}
	col = 0;
	for (word = strtok_r(text, " ", &last); word != NULL;
	    word = strtok_r(NULL, " ", &last)) {
		len = strlen(word);
		if (col > 0 && CTL_HELP_INDENT + col + 1 + len >
		    CTL_HELP_WIDTH) {
			fputc('\n', f);
			col = 0;
		}
		if (col == 0)
			fprintf(f, "%*s", CTL_HELP_INDENT, "");
		else {
			fputc(' ', f);
			col++;
		}
		fputs(word, f);
		col += len;
	}
	fputc('\n', f);
}

/* Prints a command's usage and help, then the global options. */
static void
ctl_command_help(FILE *f, const struct ctl_command *c)
{
	const char	*at;

	fprintf(f, "usage: dynprofctl [GLOBAL OPTIONS] %s\n\n", c->usage);
	if ((at = strchr(c->help, CTL_HELP_OPTIONS[0])) != NULL) {
		fwrite(c->help, 1, (size_t)(at - c->help), f);
		ctl_help_options(f);
		fputs(at + 1, f);
	} else
		fputs(c->help, f);
	fprintf(f, "\nGlobal options: --coordinator URL, --token-file F, "
	    "--cacert F, --cert F,\n"
	    "--key F, --json (dynprofctl --help).\n"
	    "Exit codes: 0 ok, 1 refused or bad usage, 2 cannot reach the "
	    "coordinator,\n            3 timeout.\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "coordinator", required_argument, NULL, 'c' },
		{ "token-file", required_argument, NULL, 't' },
		{ "cacert", required_argument, NULL, 'C' },
		{ "cert", required_argument, NULL, 'E' },
		{ "key", required_argument, NULL, 'K' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	struct ctl			 ctl;
	const struct ctl_command	*cmd;
	const char			*token_file = NULL, *why, *env;
	int				 ch, i, j, rc;

	memset(&ctl, 0, sizeof(ctl));
	ctl.out = stdout;
	ctl.err = stderr;
	ctl.timeout_ms = CTL_HTTP_TIMEOUT_MS;
	ctl.tty = isatty(STDOUT_FILENO);
	env = getenv("DYNPROF_COORDINATOR");
	ctl.url = env != NULL && *env != '\0' ? env : CTL_DEFAULT_URL;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c':
			ctl.url = optarg;
			break;
		case 't':
			token_file = optarg;
			break;
		case 'C':
			ctl.conn.cacert = optarg;
			break;
		case 'E':
			ctl.conn.cert = optarg;
			break;
		case 'K':
			ctl.conn.key = optarg;
			break;
		case 'j':
			ctl.json = 1;
			break;
		case 'h':
			ctl_usage(stdout);
			return (CTL_EXIT_OK);
		case 'V':
			printf("dynprofctl %s\n", DYNPROF_VERSION_STRING);
			return (CTL_EXIT_OK);
		case ':':
			ctl_errx(&ctl, "%s needs a value", argv[optind - 1]);
			ctl_usage(stderr);
			return (CTL_EXIT_REFUSED);
		default:
			ctl_errx(&ctl, "unknown option: %s", argv[optind - 1]);
			ctl_usage(stderr);
			return (CTL_EXIT_REFUSED);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc == 0) {
		ctl_errx(&ctl, "no command given");
		ctl_usage(stderr);
		return (CTL_EXIT_REFUSED);
	}
	if (strcmp(argv[0], "help") == 0) {
		if (argc > 1 && (cmd = ctl_find(argv[1])) != NULL)
			ctl_command_help(stdout, cmd);
		else
			ctl_usage(stdout);
		return (CTL_EXIT_OK);
	}
	if ((cmd = ctl_find(argv[0])) == NULL) {
		ctl_errx(&ctl, "unknown command: %s", argv[0]);
		ctl_usage(stderr);
		return (CTL_EXIT_REFUSED);
	}

	/* --json and --help are accepted after the command too. */
	for (i = 1, j = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (i < argc)
				argv[j++] = argv[i++];
			break;
		}
		if (strcmp(argv[i], "--json") == 0)
			ctl.json = 1;
		else if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			ctl_command_help(stdout, cmd);
			return (CTL_EXIT_OK);
		} else
			argv[j++] = argv[i];
	}
	argc = j;
	argv[argc] = NULL;

	if (cmd->fn != ctl_cmd_local &&
	    ctl_urls_parse(ctl.url, &ctl.conn, &why) == -1) {
		ctl_errx(&ctl, "bad coordinator URL %s: %s", ctl.url, why);
		return (CTL_EXIT_REFUSED);
	}
	if (cmd->fn != ctl_cmd_local &&
	    (ctl_tls_file(&ctl, &ctl.conn.cacert, "--cacert",
	    "DYNPROF_CACERT") == -1 ||
	    ctl_tls_file(&ctl, &ctl.conn.cert, "--cert", "DYNPROF_CERT") == -1 ||
	    ctl_tls_file(&ctl, &ctl.conn.key, "--key", "DYNPROF_KEY") == -1))
		return (CTL_EXIT_REFUSED);
	if (ctl.conn.key != NULL && ctl.conn.cert == NULL) {
		ctl_errx(&ctl, "--key (or DYNPROF_KEY) needs --cert "
		    "(or DYNPROF_CERT)");
		return (CTL_EXIT_REFUSED);
	}
	if (token_file != NULL) {
		if (ctl_read_token(&ctl, token_file) == -1)
			return (CTL_EXIT_REFUSED);
	} else if ((env = getenv("DYNPROF_TOKEN")) != NULL && *env != '\0') {
		if (strpbrk(env, "\r\n") != NULL) {
			ctl_errx(&ctl, "DYNPROF_TOKEN has a line break");
			return (CTL_EXIT_REFUSED);
		}
		ctl.conn.token = strdup(env);
	}

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		ctl_errx(&ctl, "cannot start libcurl");
		free(ctl.conn.token);
		return (CTL_EXIT_UNREACHABLE);
	}
	rc = cmd->fn(&ctl, argc, argv);
	if (rc == CTL_USAGE) {
		fprintf(stderr, "usage: dynprofctl %s\n", cmd->usage);
		rc = CTL_EXIT_REFUSED;
	}
	curl_global_cleanup();
	free(ctl.conn.token);
	return (rc);
}
