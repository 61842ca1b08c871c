/*
 * dynprof-agent as a command: flags, its config file, exit codes, and standalone
 * mode (profiler_config.json watched with inotify) on a real segment.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakecoord.h"
#include "segment.h"

#define T_WAIT	30000	/* a deadline a loaded machine does not reach */

static int
setup(void **state)
{
	struct agentproc	*ap = calloc(1, sizeof(*ap));

	if (ap == NULL || ap_setup(ap) == -1)
		return (-1);
	*state = ap;
	return (0);
}

static int
teardown(void **state)
{
	ap_cleanup(*state);
	free(*state);
	return (0);
}

/* Runs the agent with argv (after the binary) to its end; its exit status. */
static int
run_agent(struct agentproc *ap, const char *const *args)
{
	const char	*argv[32];
	char		 bin[512];
	pid_t		 pid;
	int		 n = 0, status = -1;
	int64_t		 deadline = ap_now_ms() + T_WAIT;

	snprintf(bin, sizeof(bin), "%s/agent/dynprof-agent", ap_build_dir());
	argv[n++] = bin;
	while (*args != NULL && n < 31)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = ap_spawn(ap, argv);
	assert_true(pid > 0);
	while (ap_now_ms() < deadline) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(2000);
	}
	ap_kill_child(ap, pid, SIGKILL, 100);
	assert_true(WIFEXITED(status));
	return (WEXITSTATUS(status));
}

static void
write_file(const char *path, const char *text)
{
	FILE	*f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static uint64_t	generation(struct agentproc *, const char *,
		    struct seg_config *);

static void
test_flags_and_exit_codes(void **state)
{
	struct agentproc	*ap = *state;
	char			 conf[512], cfg[512], sock2[512], want[600];
	const char *help[] = { "--help", NULL };
	const char *version[] = { "--version", NULL };
	const char *badflag[] = { "--no-such-flag", NULL };
	const char *nothing[] = { "--socket", ap->sock, NULL };
	const char *both[] = { "--coordinator", "127.0.0.1:1", "--config-file",
	    "/tmp/x.json", NULL };
	const char *badmode[] = { "--config-file", "/tmp/x.json", "--shm-mode",
	    "999", NULL };
	const char *badjob[] = { "--config-file", "/tmp/x.json", "--job",
	    "../x", NULL };
	const char *badcoord[] = { "--coordinator", "nocolon", NULL };
	const char *badsample[] = { "--coordinator", "h:1",
	    "--sample-interval", "-5", NULL };
	const char *badnode[] = { "--coordinator", "127.0.0.1:1", "--node",
	    "bad\"name", NULL };
	const char *spacenode[] = { "--coordinator", "127.0.0.1:1", "--node",
	    "two words", NULL };
	char longnode[129];
	const char *longnode_args[] = { "--coordinator", "127.0.0.1:1",
	    "--node", longnode, NULL };
	const char *extra[] = { "--conf", conf, NULL };
	const char *runtime[] = { "--config-file", cfg, "--socket",
	    "/proc/nonexistent/dir/agent.sock", "--shm-dir", ap->shm, NULL };
	const char *noshm[] = { "--config-file", cfg, "--socket", sock2,
	    "--shm-dir", "/nonexistent/shm", NULL };
	const char *worldsock[] = { "--config-file", cfg, "--socket", sock2,
	    "--shm-dir", "/nonexistent/shm", "--shm-mode", "0777", NULL };
	const char *second[] = { "--config-file", cfg, "--socket", sock2,
	    "--shm-dir", ap->shm, NULL };
	const char *conf_args[] = { "--conf", conf, "--socket", sock2, NULL };
	const char *nobudget[] = { "--config-file", cfg, "--socket", sock2,
	    "--shm-dir", ap->shm, "--job", "nobudget", "--shm-budget", "4",
	    NULL };
	const char *badperuid[] = { "--coordinator", "127.0.0.1:1",
	    "--legacy-per-uid", "0", NULL };
	static const char *const flags[] = { "--coordinator", "--node",
	    "--token-file", "--socket", "--shm-dir", "--shm-mode",
	    "--sample-interval", "--queue-max", "--grace", "--config-file",
	    "--job", "--conf", "--ready-file", "--verbose", "--quiet", "--help",
	    "--version", "--shm-budget", "--legacy-per-uid", "--trace-store",
	    "--trace-settle" };
	const char **const refused[] = { badflag, nothing, both, badmode,
	    badjob, badcoord, badsample, badnode, spacenode };
	size_t			 i;

	assert_int_equal(run_agent(ap, help), 0);
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		assert_true(ap_log_count(ap, flags[i]) >= 1);
	assert_true(ap_log_count(ap, "default: 500") == 1);
	assert_true(ap_log_count(ap, "default: 65536") == 1);
	assert_int_equal(run_agent(ap, version), 0);
	assert_int_equal(ap_log_count(ap, "dynprof-agent 0."), 1);

	/* Bad flags; the last two, a node name the coordinator would refuse
	 * in every hello. */
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		assert_int_equal(run_agent(ap, refused[i]), 1);
	assert_int_equal(ap_log_count(ap, "node name has a space, quote or "
	    "control character"), 2);
	memset(longnode, 'n', 128);
	longnode[128] = '\0';
	assert_int_equal(run_agent(ap, longnode_args), 1);
	assert_int_equal(ap_log_count(ap, "node name empty or over 127 bytes"),
	    1);

	/* The config file: bad key, bad value, then a good one. */
	snprintf(conf, sizeof(conf), "%s/agent.conf", ap->dir);
	snprintf(cfg, sizeof(cfg), "%s/profiler_config.json", ap->dir);
	snprintf(sock2, sizeof(sock2), "%s/run/agent2.sock", ap->dir);
	write_file(conf, "# comment\nno-such-key = 1\n");
	assert_int_equal(run_agent(ap, extra), 1);
	assert_int_equal(ap_log_count(ap, "agent.conf:2: no-such-key: unknown"),
	    1);
	write_file(conf, "grace = 10\nqueue-max = lots\n");
	assert_int_equal(run_agent(ap, extra), 1);
	assert_int_equal(ap_log_count(ap, "agent.conf:2: queue-max"), 1);

	/* Runtime failures at start: the socket cannot be made, no shm dir. */
	assert_int_equal(run_agent(ap, runtime), 2);
	assert_int_equal(run_agent(ap, noshm), 2);
	/*
	 * A segment the agent would make itself past --shm-budget (4 MiB: not
	 * one 4.45 MiB segment) is not made, said and counted.
	 */
	assert_int_equal(run_agent(ap, badperuid), 1);
	assert_int_equal(run_agent(ap, nobudget), 2);
	assert_int_equal(ap_log_count(ap, "job nobudget: no segment made: 0 "
	    "bytes in this agent's segments already, --shm-budget 4194304 (1 "
	    "refused)"), 1);
	assert_int_equal(generation(ap, "nobudget", NULL), UINT64_MAX);
	/* o+w is taken for the socket only, and said so. */
	assert_int_equal(run_agent(ap, worldsock), 2);
	assert_int_equal(ap_log_count(ap, "--shm-mode 0777: the socket is "
	    "writable by others, the segments are created 0775"), 1);

	/* A good config file starts a standalone agent; flags still win. */
	snprintf(conf, sizeof(conf), "%s/agent.conf", ap->dir);
	{
		char text[2048];

		snprintf(text, sizeof(text), "config-file = %s\njob = fromconf\n"
		    "shm-dir = %s\nverbose = yes\n", cfg, ap->shm);
		write_file(conf, text);
	}
	assert_int_equal(ap_start(ap, conf_args), 0);
	assert_int_equal(ap_log_wait(ap, "standalone: job fromconf", 1, T_WAIT),
	    0);
	assert_int_equal(ap_log_count(ap, "agent2.sock"), 1);

	/* SIGHUP with a broken config file: logged, the agent carries on. */
	{
		FILE *f = fopen(conf, "a");

		assert_non_null(f);
		fputs("sample-interval = 1\n", f);
		fclose(f);
	}
	kill(ap->pid, SIGHUP);
	assert_int_equal(ap_log_wait(ap, "keeping the running configuration", 1,
	    T_WAIT), 0);
	assert_int_equal(ap_log_count(ap, "agent.conf:5: sample-interval"), 1);
	assert_int_equal(kill(ap->pid, 0), 0);

	/* A second agent on the same socket refuses to start. */
	assert_int_equal(run_agent(ap, second), 2);
	assert_int_equal(ap_log_count(ap, "another agent serves"), 1);
	/* So does one on the same --shm-dir with a socket of its own. */
	snprintf(sock2, sizeof(sock2), "%s/run/agent3.sock", ap->dir);
	snprintf(want, sizeof(want), "--shm-dir %s is in use by pid %d",
	    ap->shm, (int)ap->pid);
	assert_int_equal(run_agent(ap, second), 2);
	assert_int_equal(ap_log_count(ap, want), 1);
}

static uint64_t
generation(struct agentproc *ap, const char *job, struct seg_config *cfg)
{
	struct segment	 seg;
	uint64_t	 g;

	if (segment_open(&seg, ap->shm, job, 0, 0600) != SEG_OK)
		return (UINT64_MAX);
	g = atomic_load(&seg.hdr->generation);
	if (cfg != NULL)
		assert_int_equal(segment_read_config(&seg, cfg, NULL), SEG_OK);
	segment_close(&seg);
	return (g);
}

/* Waits for the segment to reach generation gen; returns the ms it took. */
static int64_t
wait_generation(struct agentproc *ap, const char *job, uint64_t gen)
{
	int64_t	 t0 = ap_now_ms();

	while (ap_now_ms() - t0 < T_WAIT) {
		if (generation(ap, job, NULL) == gen)
			return (ap_now_ms() - t0);
		usleep(500);
	}
	fail_msg("job %s never reached generation %llu", job,
	    (unsigned long long)gen);
	return (-1);
}

/* Writes text as editors do: a temporary file renamed into place. */
static void
edit(const char *path, const char *text)
{
	char	 tmp[600];

	snprintf(tmp, sizeof(tmp), "%s.swp", path);
	write_file(tmp, text);
	assert_int_equal(rename(tmp, path), 0);
}

static void
test_standalone_edits(void **state)
{
	struct agentproc	*ap = *state;
	struct seg_config	*cfg = malloc(sizeof(*cfg));
	char			 path[512];
	const char		*args[] = { "--config-file", path, "--job", "sj",
	    NULL };
	int64_t			 ms;

	snprintf(path, sizeof(path), "%s/profiler_config.json", ap->dir);
	assert_int_equal(ap_start(ap, args), 0);
	/* Missing: MindSpore's default is written (no window). */
	assert_int_equal(ap_log_count(ap, "wrote MindSpore 2.4's default"), 1);
	assert_int_equal(generation(ap, "sj", NULL), 0);	/* created */

	edit(path, "{\"start_step\": 5, \"stop_step\": 8, \"profiler_level\": 1,"
	    " \"activities\": [\"CPU\"]}\n");
	/*
	 * Applied on inotify's word alone (the agent polls nothing): that it is
	 * applied at all, within T_WAIT, is the claim; how soon is printed.
	 */
	ms = wait_generation(ap, "sj", 1);
	print_message("edit applied after %lld ms\n", (long long)ms);
	generation(ap, "sj", cfg);
	assert_int_equal(cfg->nwindows, 1);
	assert_int_equal(cfg->windows[0].id, 1);
	assert_int_equal(cfg->windows[0].start_step, 5);
	assert_int_equal(cfg->windows[0].stop_step, 8);
	assert_int_equal(cfg->windows[0].options.profiler_level, 1);
	assert_int_equal(cfg->windows[0].options.aicore_metrics, -1);
	assert_int_equal(cfg->windows[0].options.data_simplification, 1);
	assert_string_equal(cfg->windows[0].options.fwopts,
	    "{\"activities\":[\"CPU\"]}");

	/* Invalid files: each logged, the previous config stays. */
	edit(path, "{\"start_step\": 5,\n\"stop_step\": 8,\n");
	assert_int_equal(ap_log_wait(ap, "profiler_config.json:3: invalid", 1,
	    T_WAIT), 0);
	edit(path, "{\"start_step\": \"5\", \"stop_step\": 8}");
	assert_int_equal(ap_log_wait(ap, "\"start_step\" must be an integer", 1,
	    T_WAIT), 0);
	edit(path, "{\"start_step\": 9, \"stop_step\": 8}");
	assert_int_equal(ap_log_wait(ap, "start_step 9 is after stop_step 8", 1,
	    T_WAIT), 0);
	edit(path, "[1, 2]");
	assert_int_equal(ap_log_wait(ap, "not a JSON object", 1, T_WAIT), 0);
	edit(path, "{\"start_step\": 5, \"stop_step\": 8, \"with_stack\": 1}");
	assert_int_equal(ap_log_wait(ap, "must be true or false", 1, T_WAIT), 0);
	edit(path, "{\"start_step\": 5, \"stop_step\": 8, \"profiler_level\": 7}");
	assert_int_equal(ap_log_wait(ap, "out of range", 1, T_WAIT), 0);
	assert_int_equal(generation(ap, "sj", NULL), 1);

	/* The same steps keep the window's id (it must not run twice). */
	edit(path, "{\"start_step\": 5, \"stop_step\": 8, \"profiler_level\": 2}");
	wait_generation(ap, "sj", 2);
	generation(ap, "sj", cfg);
	assert_int_equal(cfg->windows[0].id, 1);
	assert_int_equal(cfg->windows[0].options.profiler_level, 2);

	/* Written in place (no rename) works as well; new steps, new id. */
	write_file(path, "{\"start_step\": 20, \"stop_step\": 25}");
	wait_generation(ap, "sj", 3);
	generation(ap, "sj", cfg);
	assert_int_equal(cfg->windows[0].id, 2);
	assert_int_equal(cfg->windows[0].start_step, 20);

	/* SIGHUP rereads it: nothing new, no new generation. */
	kill(ap->pid, SIGHUP);
	assert_int_equal(ap_log_wait(ap, "unchanged", 1, T_WAIT), 0);
	assert_int_equal(generation(ap, "sj", NULL), 3);

	/* start_step -1 clears the schedule. */
	edit(path, "{\"start_step\": -1, \"stop_step\": -1}");
	wait_generation(ap, "sj", 4);
	generation(ap, "sj", cfg);
	assert_int_equal(cfg->nwindows, 0);

	assert_int_equal(ap_stop(ap, SIGTERM, T_WAIT), 0);
	assert_int_equal(ap_log_count(ap, "standalone_errors=6"), 1);
	/* The segment stays for the ranks. */
	assert_int_equal(generation(ap, "sj", NULL), 4);
	free(cfg);
}

/*
 * A FIFO at the config path, at start and put there while running (any
 * non-regular file): the agent opened it and blocked for good, deaf to
 * SIGTERM.  Now it is refused with a log line, the previous config stays, the
 * agent keeps serving and stops at once.  Integers are range-checked before
 * any cut to 32 bits (4294967296 was applied as 0).
 */
static void
test_standalone_fifo_and_ranges(void **state)
{
	struct agentproc	*ap = *state;
	struct seg_config	*cfg = malloc(sizeof(*cfg));
	char			 path[512], tmp[600];
	const char		*args[] = { "--config-file", path, "--job", "sf",
	    NULL };
	int64_t			 t0;

	snprintf(path, sizeof(path), "%s/profiler_config.json", ap->dir);
	snprintf(tmp, sizeof(tmp), "%s.fifo", path);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(ap_start(ap, args), 0);
	assert_int_equal(ap_log_wait(ap, "not a regular file", 1, T_WAIT), 0);
	assert_int_equal(generation(ap, "sf", NULL), 0);

	edit(path, "{\"start_step\": 5, \"stop_step\": 8}");
	wait_generation(ap, "sf", 1);

	/* Renamed into place while running: refused, window 1 stays. */
	assert_int_equal(mkfifo(tmp, 0644), 0);
	assert_int_equal(rename(tmp, path), 0);
	assert_int_equal(ap_log_wait(ap, "not a regular file", 2, T_WAIT), 0);
	kill(ap->pid, SIGHUP);
	assert_int_equal(ap_log_wait(ap, "not a regular file", 3, T_WAIT), 0);
	generation(ap, "sf", cfg);
	assert_int_equal(cfg->generation, 1);
	assert_int_equal(cfg->nwindows, 1);
	assert_int_equal(cfg->windows[0].start_step, 5);

	/* Out of range, each named: nothing changes. */
	edit(path, "{\"start_step\": 5, \"stop_step\": 8, "
	    "\"aicore_metrics\": 4294967296}");
	assert_int_equal(ap_log_wait(ap, "\"aicore_metrics\" 4294967296 out "
	    "of range", 1, T_WAIT), 0);
	edit(path, "{\"start_step\": 5, \"stop_step\": 8, "
	    "\"profiler_level\": -4294967295}");
	assert_int_equal(ap_log_wait(ap, "\"profiler_level\" -4294967295 out "
	    "of range", 1, T_WAIT), 0);
	edit(path, "{\"start_step\": 5, \"stop_step\": 4294967296000000}");
	assert_int_equal(ap_log_wait(ap, "\"stop_step\" 4294967296000000 out "
	    "of range", 1, T_WAIT), 0);
	generation(ap, "sf", cfg);
	assert_int_equal(cfg->generation, 1);
	assert_int_equal(cfg->windows[0].options.aicore_metrics, -1);

	/* Still serving: a good file is applied. */
	edit(path, "{\"start_step\": 20, \"stop_step\": 30, "
	    "\"aicore_metrics\": 5}");
	wait_generation(ap, "sf", 2);
	generation(ap, "sf", cfg);
	assert_int_equal(cfg->windows[0].start_step, 20);
	assert_int_equal(cfg->windows[0].options.aicore_metrics, 5);

	/* A FIFO again, then SIGTERM: a prompt, clean exit. */
	assert_int_equal(mkfifo(tmp, 0644), 0);
	assert_int_equal(rename(tmp, path), 0);
	assert_int_equal(ap_log_wait(ap, "not a regular file", 4, T_WAIT), 0);
	t0 = ap_now_ms();
	assert_int_equal(ap_stop(ap, SIGTERM, T_WAIT), 0);
	assert_true(ap_now_ms() - t0 < 2000);
	assert_int_equal(ap_log_count(ap, "standalone_errors=7"), 1);
	free(cfg);
}

/*
 * A token file longer than the limit was cut to 1023 bytes: now the agent
 * refuses it at start; one of exactly 1023 bytes works.
 */
static void
test_token_too_long(void **state)
{
	struct agentproc	*ap = *state;
	char			 tok[512], *text;
	const char		*args[] = { "--coordinator", "127.0.0.1:1",
	    "--token-file", tok, NULL };

	snprintf(tok, sizeof(tok), "%s/agent.token", ap->dir);
	text = malloc(1026);
	assert_non_null(text);
	memset(text, 't', 1024);
	strcpy(text + 1024, "\n");
	write_file(tok, text);
	assert_int_equal(run_agent(ap, args), 1);
	assert_int_equal(ap_log_count(ap, "token longer than 1023 bytes"), 1);
	strcpy(text + 1023, "\n");
	write_file(tok, text);
	assert_int_equal(ap_start(ap, args), 0);
	assert_int_equal(ap_stop(ap, SIGTERM, T_WAIT), 0);
	free(text);
}

/* Reads a whole small file into buf. */
static void
read_file(const char *path, char *buf, size_t len)
{
	FILE	*f = fopen(path, "r");
	size_t	 n;

	assert_non_null(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	fclose(f);
}

/*
 * As MindSpore's monitor does: a --config-file whose directory does not exist
 * gets the directory (mkdir -p, 0755) and MindSpore 2.4's default file, and is
 * watched from then on; a file that exists is never replaced.
 */
static void
test_standalone_creates_config(void **state)
{
	struct agentproc	*ap = *state;
	struct seg_config	*cfg = malloc(sizeof(*cfg));
	struct stat		 st;
	char			 dir[400], path[512], text[1024];
	const char		*args[] = { "--config-file", path, "--job", "sd",
	    NULL };
	static const char	 want[] =
	    "{\n"
	    "    \"start_step\": -1,\n"
	    "    \"stop_step\": -1,\n"
	    "    \"aicore_metrics\": -1,\n"
	    "    \"profiler_level\": -1,\n"
	    "    \"profile_framework\": -1,\n"
	    "    \"analyse_mode\": -1,\n"
	    "    \"profile_communication\": false,\n"
	    "    \"parallel_strategy\": false,\n"
	    "    \"with_stack\": false,\n"
	    "    \"data_simplification\": true\n"
	    "}\n";
	mode_t			 mask;

	assert_non_null(cfg);
	mask = umask(022);
	snprintf(dir, sizeof(dir), "%s/cfg/a/b", ap->dir);
	snprintf(path, sizeof(path), "%s/profiler_config.json", dir);
	assert_int_equal(ap_start(ap, args), 0);
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0755);
	assert_int_equal(ap_log_count(ap, "standalone: created directory"), 3);
	read_file(path, text, sizeof(text));
	assert_string_equal(text, want);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(ap_log_count(ap, "wrote MindSpore 2.4's default"), 1);
	assert_int_equal(generation(ap, "sd", NULL), 0);	/* no window */

	/* Watched: an edit is applied. */
	edit(path, "{\"start_step\": 5, \"stop_step\": 8}");
	wait_generation(ap, "sd", 1);
	generation(ap, "sd", cfg);
	assert_int_equal(cfg->nwindows, 1);
	assert_int_equal(cfg->windows[0].start_step, 5);

	/* Started again, the file is there: kept as it is. */
	assert_int_equal(ap_stop(ap, SIGTERM, T_WAIT), 0);
	assert_int_equal(ap_start(ap, args), 0);
	read_file(path, text, sizeof(text));
	assert_string_equal(text, "{\"start_step\": 5, \"stop_step\": 8}");
	assert_int_equal(ap_log_count(ap, "wrote MindSpore 2.4's default"), 1);
	assert_int_equal(ap_log_count(ap, "standalone: created directory"), 3);
	assert_int_equal(ap_stop(ap, SIGTERM, T_WAIT), 0);
	umask(mask);
	free(cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_flags_and_exit_codes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_standalone_edits, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_standalone_fifo_and_ranges,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_too_long, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_standalone_creates_config,
		    setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return (cmocka_run_group_tests_name("agent", tests, NULL, NULL));
}
