/*
 * "The library never aborts, never exits, never prints" (README, STYLE.md):
 * each scenario runs in a child process whose stdout and stderr are a pipe,
 * calls the public API (the shared library, as a training process links it)
 * with bad input, without an agent, over a directory it cannot write, over a
 * garbage segment, and with garbage in the environment, then says it got to
 * its end on a third pipe.  The child must exit 0 by itself having said so
 * (no abort, no exit, no crash inside the library) with nothing at all on
 * stdout or stderr, the library's log callback unset or set.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "dynprof.h"

/* The log callback of the "logged" runs: counts, never prints. */
static int	 silent_logged;

static void
silent_log(void *arg, enum dynprof_log_level level, const char *message)
{
	(void)arg;
	(void)level;
	(void)message;
	silent_logged++;
}

static int
silent_start(void *arg, const struct dynprof_window *w,
    const struct dynprof_options *o, const char *fw, const char *dir,
    char *err, size_t errlen)
{
	(void)arg;
	(void)w;
	(void)o;
	(void)fw;
	(void)dir;
	snprintf(err, errlen, "refused by the test");
	return (1);
}

/* The directory every scenario works in (made by the parent). */
static char	 silent_dir[256];
static int	 silent_with_log;

static void
silent_params(struct dynprof_params *p, const char *job, const char *sub)
{
	static char	 shm[300], sock[300], out[300];

	dynprof_params_init(p);
	snprintf(shm, sizeof(shm), "%s/%s", silent_dir, sub);
	snprintf(sock, sizeof(sock), "%s/no-agent.sock", silent_dir);
	snprintf(out, sizeof(out), "%s/out", silent_dir);
	mkdir(shm, 0700);
	p->job = job;
	p->rank = 0;
	p->shm_dir = shm;
	p->agent_socket = sock;
	p->output_root = out;
	p->on_start = silent_start;
	if (silent_with_log)
		p->on_log = silent_log;
}

/* Opens with p, steps, and closes whatever dynprof_open() answered. */
static void
silent_run(const struct dynprof_params *p)
{
	struct dynprof_window	 w;
	struct dynprof_stats	 st;
	struct dynprof_fast_state fs;
	dynprof_t		*h = NULL;
	int			 i;

	if (dynprof_open(p, &h) != 0 || h == NULL)
		return;
	for (i = 0; i < 200; i++)
		dynprof_step(h);
	dynprof_step_begin(h, -5);
	dynprof_step_end(h, INT64_MAX);
	dynprof_step_begin(h, INT64_MIN);
	dynprof_step_end(h, 3);
	dynprof_report_failure(h, NULL);
	dynprof_report_failure(h, "");
	dynprof_active_window(h, &w);
	dynprof_get_stats(h, &st);
	dynprof_get_fast_state(h, &fs);
	(void)dynprof_state(h);
	(void)dynprof_job(h);
	(void)dynprof_rank(h);
	(void)dynprof_current_step(h);
	dynprof_close(h);
}

/* NULL and out-of-range arguments to every call. */
static void
scenario_bad_arguments(void)
{
	struct dynprof_params	 p;
	struct dynprof_window	 w;
	struct dynprof_stats	 st;
	struct dynprof_fast_state fs;
	dynprof_t		*h = NULL;
	int			 i;

	dynprof_params_init(NULL);
	dynprof_open(NULL, &h);
	silent_params(&p, "silent-args", "shm");
	dynprof_open(&p, NULL);
	p.version = 0;
	dynprof_open(&p, &h);
	p.version = 999;
	dynprof_open(&p, &h);
	dynprof_close(NULL);
	dynprof_step(NULL);
	dynprof_step_begin(NULL, 1);
	dynprof_step_end(NULL, 1);
	(void)dynprof_state(NULL);
	(void)dynprof_job(NULL);
	(void)dynprof_rank(NULL);
	(void)dynprof_current_step(NULL);
	dynprof_active_window(NULL, &w);
	dynprof_get_stats(NULL, &st);
	dynprof_get_fast_state(NULL, &fs);
	dynprof_report_failure(NULL, "x");
	for (i = -64; i <= 64; i++)
		(void)dynprof_strerror(i);
	(void)dynprof_strerror(INT_MIN);
	(void)dynprof_strerror(INT_MAX);
	(void)dynprof_version();
}

/* Bad parameters, each alone. */
static void
scenario_bad_params(void)
{
	struct dynprof_params	 p;
	char			 long_job[600], long_path[5000];
	const char		*jobs[] = { "", "bad name!", "../up", "a/b",
	    ".", "..", "job\n", long_job };
	const char		*paths[] = { long_path, "", "relative/dir" };
	size_t			 i;
	int			 f;

	memset(long_job, 'j', sizeof(long_job) - 1);
	long_job[sizeof(long_job) - 1] = '\0';
	memset(long_path, 'p', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	for (i = 0; i < sizeof(jobs) / sizeof(jobs[0]); i++) {
		silent_params(&p, jobs[i], "shm");
		silent_run(&p);
	}
	silent_params(&p, "silent-p", "shm");
	p.rank = -5;
	silent_run(&p);
	p.rank = INT_MAX;
	silent_run(&p);
	silent_params(&p, "silent-p", "shm");
	p.shm_mode = 07777;
	silent_run(&p);
	p.shm_mode = -2;
	silent_run(&p);
	for (f = 0; f < 3; f++) {
		for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			silent_params(&p, "silent-p", "shm");
			*(f == 0 ? &p.shm_dir : f == 1 ? &p.output_root :
			    &p.agent_socket) = paths[i];
			silent_run(&p);
		}
	}
}

/* No agent at all: the socket is not there, events have nowhere to go. */
static void
scenario_no_agent(void)
{
	struct dynprof_params	 p;
	int			 i;

	silent_params(&p, "silent-noagent", "shm");
	for (i = 0; i < 3; i++)
		silent_run(&p);
}

/* Directories no one may write, for root too (/proc), a file, none. */
static void
scenario_unwritable(void)
{
	struct dynprof_params	 p;
	char			 file[300], ro[300];
	const char		*dirs[] = { "/proc", "/proc/self", "/sys",
	    "/nonexistent/dynprof", file, ro };
	size_t			 i;
	int			 fd;

	snprintf(file, sizeof(file), "%s/a-file", silent_dir);
	if ((fd = open(file, O_CREAT | O_WRONLY, 0600)) != -1)
		close(fd);
	snprintf(ro, sizeof(ro), "%s/ro", silent_dir);
	mkdir(ro, 0500);
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		silent_params(&p, "silent-ro", "shm");
		p.shm_dir = dirs[i];
		silent_run(&p);
		silent_params(&p, "silent-ro", "shm");
		p.output_root = dirs[i];
		silent_run(&p);
	}
}

/* A segment file of garbage, of every kind of size. */
static void
scenario_garbage_segment(void)
{
	struct dynprof_params	 p;
	char			 path[400];
	unsigned char		 buf[65536];
	size_t			 sizes[] = { 0, 1, 8, 100, 4096, sizeof(buf) };
	unsigned		 seed = 29;
	size_t			 i, k;
	int			 fd;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		silent_params(&p, "silent-garbage", "garbage");
		snprintf(path, sizeof(path), "%s/dynprof.silent-garbage",
		    p.shm_dir);
		for (k = 0; k < sizes[i]; k++)
			buf[k] = (unsigned char)rand_r(&seed);
		if ((fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600)) == -1)
			continue;
		if (write(fd, buf, sizes[i]) != (ssize_t)sizes[i])
			sizes[i] = 0;
		close(fd);
		silent_run(&p);
	}
}

/* Garbage in every variable the library reads, the params left default. */
static void
scenario_environment(void)
{
	struct dynprof_params	 p;
	const char		*vars[] = { "DYNPROF_JOB", "SLURM_JOB_ID",
	    "RANK", "RANK_ID", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
	    "DYNPROF_OUTPUT_ROOT", "DYNPROF_SHM_DIR", "DYNPROF_AGENT_SOCKET",
	    "DYNPROF_SHM_MODE" };
	const char		*values[] = { "", "zzz", "-1", "99999999999999",
	    "0x10", "../..", "bad name!" };
	size_t			 i, k;

	for (k = 0; k < sizeof(values) / sizeof(values[0]); k++) {
		for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
			setenv(vars[i], values[k], 1);
		dynprof_params_init(&p);
		if (silent_with_log)
			p.on_log = silent_log;
		silent_run(&p);
	}
}

struct scenario {
	const char	*name;
	void		 (*fn)(void);
};

static const struct scenario scenarios[] = {
	{ "bad arguments", scenario_bad_arguments },
	{ "bad params", scenario_bad_params },
	{ "no agent", scenario_no_agent },
	{ "unwritable directories", scenario_unwritable },
	{ "garbage segment", scenario_garbage_segment },
	{ "garbage environment", scenario_environment },
};

/*
 * Runs scenario s in a child, stdout and stderr a pipe, and checks it ran to
 * its end, exited 0 and printed nothing.
 */
static void
silent_check(const struct scenario *s, int with_log)
{
	char	 out[4096], done[8];
	int	 opipe[2], dpipe[2], status;
	ssize_t	 n, got = 0;
	pid_t	 pid;

	assert_int_equal(pipe(opipe), 0);
	assert_int_equal(pipe(dpipe), 0);
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		close(opipe[0]);
		close(dpipe[0]);
		dup2(opipe[1], STDOUT_FILENO);
		dup2(opipe[1], STDERR_FILENO);
		close(opipe[1]);
		silent_with_log = with_log;
		s->fn();
		/* What the library buffered in stdio goes out with exit(). */
		if (write(dpipe[1], "done", 4) != 4)
			_exit(3);
		exit(0);
	}
	close(opipe[1]);
	close(dpipe[1]);
	while ((n = read(opipe[0], out + got, sizeof(out) - 1 -
	    (size_t)got)) > 0 && (size_t)got < sizeof(out) - 1)
		got += n;
	out[got] = '\0';
	close(opipe[0]);
	n = read(dpipe[0], done, sizeof(done));
	close(dpipe[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	print_message("%s (log callback %s): %s, %zd bytes of output\n",
	    s->name, with_log ? "set" : "unset", WIFEXITED(status) ?
	    "exited" : "killed", got);
	if (got > 0)
		print_message("the library printed:\n%s\n", out);
	if (WIFSIGNALED(status))
		print_message("killed by signal %d\n", WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(n, 4);
	assert_int_equal(got, 0);
}

static void
test_silent(void **state)
{
	size_t	 i;

	(void)state;
	for (i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
		silent_check(&scenarios[i], 0);
		silent_check(&scenarios[i], 1);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_silent),
	};
	const char	*base = getenv("TMPDIR");
	char		 cmd[300];
	int		 rc;

	snprintf(silent_dir, sizeof(silent_dir), "%s/dynprof-silent-XXXXXX",
	    base != NULL && *base != '\0' ? base : "/tmp");
	if (mkdtemp(silent_dir) == NULL)
		return (1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", silent_dir);
	if (system(cmd) != 0)
		rc = rc == 0 ? 1 : rc;
	return (rc);
}
