/*
 * dynprofctl local: a real segment made with the segment API in a private shm
 * directory, a config written and slots claimed, then the real dynprofctl binary
 * run on it and its output checked.  Also segments it must refuse.
 */

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "segment.h"

extern char **environ;

struct fixture {
	char	 dir[64];
	char	 ctl[4096];
	pid_t	 dead_pid;
	char	*out;
	char	*err;
	int	 as_nobody;	/* run dynprofctl as uid/gid 65534 */
};

static char *
slurp(const char *path)
{
	FILE	*f;
	char	*buf;
	long	 len;

	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return (buf);
}

/* Runs dynprofctl with args (NULL-terminated); returns its exit code. */
static int
run_ctl(struct fixture *fx, char **env, ...)
{
	posix_spawn_file_actions_t	 fa;
	va_list				 ap;
	char				*argv[16], outp[128], errp[128];
	int				 argc = 0, status;
	pid_t				 pid;

	if (fx->as_nobody) {
		argv[argc++] = "/usr/bin/setpriv";
		argv[argc++] = "--reuid=65534";
		argv[argc++] = "--regid=65534";
		argv[argc++] = "--clear-groups";
	}
	argv[argc++] = fx->ctl;
	va_start(ap, env);
	while ((argv[argc] = va_arg(ap, char *)) != NULL && argc < 15)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	snprintf(outp, sizeof(outp), "%s/out.txt", fx->dir);
	snprintf(errp, sizeof(errp), "%s/err.txt", fx->dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, outp,
	    O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 2, errp,
	    O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv,
	    env != NULL ? env : environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	free(fx->out);
	free(fx->err);
	fx->out = slurp(outp);
	fx->err = slurp(errp);
	assert_true(WIFEXITED(status));
	return (WEXITSTATUS(status));
}

static void
options_unset(struct seg_options *o)
{
	memset(o, 0, sizeof(*o));
	o->aicore_metrics = -1;
	o->profiler_level = -1;
	o->profile_framework = -1;
	o->analyse_mode = -1;
	o->data_simplification = 1;
}

/*
 * Claims a slot of seg for rank of process pid and opens its update, at
 * step in state, window 3, its last event last_event.  The caller ends it.
 */
static struct seg_slot *
slot_begin(struct segment *seg, pid_t pid, int32_t rank, int64_t step,
    uint32_t state, uint32_t last_event)
{
	struct seg_slot	*s;
	int		 idx;

	idx = segment_slot_claim(seg, pid, rank, NULL);
	assert_true(idx >= 0);
	s = &seg->slots[idx];
	segment_slot_update_begin(s);
	atomic_store(&s->step, step);
	s->state = state;
	s->window_id = 3;
	s->last_event = last_event;
	return (s);
}

/* The segment of job "job-1": two windows, a live rank and a dead one. */
static void
make_segment(struct fixture *fx)
{
	struct segment		 seg;
	struct seg_config	*cfg;
	struct seg_slot		*s;
	pid_t			 child;
	int			 status;

	assert_int_equal(segment_open(&seg, fx->dir, "job-1", SEG_CREATE,
	    0600), SEG_OK);
	cfg = calloc(1, sizeof(*cfg));
	assert_non_null(cfg);
	cfg->generation = 7;
	cfg->nwindows = 3;
	cfg->windows[0].id = 3;
	cfg->windows[0].start_step = 160;
	cfg->windows[0].stop_step = 164;
	snprintf(cfg->windows[0].ranks, sizeof(cfg->windows[0].ranks),
	    "0-3,9");
	options_unset(&cfg->windows[0].options);
	cfg->windows[0].options.profiler_level = 1;
	cfg->windows[0].options.with_stack = 1;
	snprintf(cfg->windows[0].options.output_subdir,
	    sizeof(cfg->windows[0].options.output_subdir), "run1");
	snprintf(cfg->windows[0].options.fwopts,
	    sizeof(cfg->windows[0].options.fwopts), "{\"activities\":[\"CPU\"]}");
	cfg->windows[0].options.fwopts_len =
	    strlen(cfg->windows[0].options.fwopts);
	cfg->windows[1].id = 4;
	cfg->windows[1].flags = SEG_WINDOW_CANCELLED;
	cfg->windows[1].start_step = 200;
	cfg->windows[1].stop_step = 210;
	options_unset(&cfg->windows[1].options);
	/* A time window: its start on the node's clocks, 2 s long. */
	cfg->windows[2].id = 5;
	cfg->windows[2].start_ns = 5000000000LL;
	cfg->windows[2].stop_ns = 7000000000LL;
	cfg->windows[2].start_unix_ns = 1796472000250000000LL;
	cfg->windows[2].stop_unix_ns = 1796472002250000000LL;
	options_unset(&cfg->windows[2].options);
	segment_write_config(&seg, cfg);
	free(cfg);
	atomic_store(&seg.hdr->agent_pid, getpid());

	/* A live rank, profiling. */
	s = slot_begin(&seg, getpid(), 0, 162, SEG_RANK_PROFILING, 2);
	s->start_step = 160;
	s->stop_step = 164;
	snprintf(s->output_dir, sizeof(s->output_dir),
	    "/out/run1/rank0_start160_stop164");
	segment_slot_update_end(s);

	/* A rank whose process is gone, failed. */
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	assert_int_equal(waitpid(child, &status, 0), child);
	fx->dead_pid = child;
	s = slot_begin(&seg, child, 9, 160, SEG_RANK_FAILED, 5);
	snprintf(s->error, sizeof(s->error), "disk full");
	segment_slot_update_end(s);
	segment_close(&seg);
}

static int
setup(void **state)
{
	struct fixture	*fx;
	const char	*build;

	fx = calloc(1, sizeof(*fx));
	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/dynprof-ctl-local.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	build = getenv("DYNPROF_BUILD_DIR");
	snprintf(fx->ctl, sizeof(fx->ctl), "%s/ctl/dynprofctl",
	    build != NULL ? build : ".");
	make_segment(fx);
	*state = fx;
	return (0);
}

static int
teardown(void **state)
{
	struct fixture	*fx = *state;
	struct dirent	*de;
	DIR		*d;
	char		 path[512];

	if ((d = opendir(fx->dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", fx->dir,
			    de->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(fx->dir);
	free(fx->out);
	free(fx->err);
	free(fx);
	return (0);
}

static void
expect_in(const char *hay, const char *needle)
{
	if (strstr(hay, needle) == NULL)
		fail_msg("\"%s\" not in:\n%s", needle, hay);
}

static void
test_local_text(void **state)
{
	struct fixture	*fx = *state;
	char		 want[256];

	assert_int_equal(run_ctl(fx, NULL, "local", "job-1", "--shm-dir",
	    fx->dir, NULL), 0);
	assert_string_equal(fx->err, "");
	snprintf(want, sizeof(want), "segment %s/dynprof.job-1\n", fx->dir);
	expect_in(fx->out, want);
	snprintf(want, sizeof(want), "job job-1, layout version %d, generation "
	    "7, agent pid %d (alive), created ", SEG_VERSION, (int)getpid());
	expect_in(fx->out, want);
	expect_in(fx->out, ", 2 of 256 slots used\n");
	expect_in(fx->out,
	    "\nwindows:\n"
	    "  ID  WHEN                                     "
	    "RANKS  CANCELLED  OPTIONS\n"
	    "  3   160-164                                  "
	    "0-3,9  no         profiler_level=1 "
	    "profile_communication=false parallel_strategy=false "
	    "with_stack=true data_simplification=true output_subdir=\"run1\" "
	    "framework_options={\"activities\":[\"CPU\"]}\n"
	    "  4   200-210                                  "
	    "all    yes        profile_communication=false "
	    "parallel_strategy=false with_stack=false "
	    "data_simplification=true\n"
	    "  5   at 2026-12-05T12:00:00.250Z for 2000 ms  "
	    "all    no         profile_communication=false "
	    "parallel_strategy=false with_stack=false "
	    "data_simplification=true\n");
	expect_in(fx->out,
	    "\nslots:\n"
	    "  SLOT  PID  ");
	/* Column widths depend on pid lengths: check the cells in order. */
	expect_in(fx->out, "yes    0     162   profiling  3       started     "
	    "/out/run1/rank0_start160_stop164  -\n");
	expect_in(fx->out, "no     9     160   failed     3       failed      "
	    "-                                 disk full\n");

	/* The directory from the environment, as the library takes it. */
	{
		char	 envdir[128], *env[] = { envdir, NULL };

		snprintf(envdir, sizeof(envdir), "DYNPROF_SHM_DIR=%s", fx->dir);
		assert_int_equal(run_ctl(fx, env, "local", "job-1", NULL), 0);
		snprintf(want, sizeof(want), "job job-1, layout version %d, "
		    "generation 7", SEG_VERSION);
		expect_in(fx->out, want);
	}
}

static void
test_local_json(void **state)
{
	struct fixture	*fx = *state;
	json_t		*doc, *w, *s;
	json_error_t	 e;

	assert_int_equal(run_ctl(fx, NULL, "--json", "local", "job-1",
	    "--shm-dir", fx->dir, NULL), 0);
	doc = json_loads(fx->out, 0, &e);
	if (doc == NULL)
		fail_msg("not JSON: %s\n%s", e.text, fx->out);
	assert_string_equal(json_string_value(json_object_get(doc, "job")),
	    "job-1");
	assert_int_equal(json_integer_value(json_object_get(doc,
	    "layout_version")), SEG_VERSION);
	assert_int_equal(json_integer_value(json_object_get(doc,
	    "generation")), 7);
	assert_true(json_is_true(json_object_get(doc, "agent_alive")));
	w = json_object_get(doc, "windows");
	assert_int_equal(json_array_size(w), 3);
	/* A time window: its start on the node's clock and its length; a
	 * window of steps has neither. */
	assert_string_equal(json_string_value(json_object_get(json_array_get(w,
	    2), "at")), "2026-12-05T12:00:00.250Z");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(w,
	    2), "duration_ms")), 2000);
	assert_null(json_object_get(json_array_get(w, 0), "at"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(w,
	    0), "stop_step")), 164);
	assert_true(json_is_true(json_object_get(json_array_get(w, 1),
	    "cancelled")));
	assert_true(json_is_array(json_object_get(json_object_get(
	    json_object_get(json_array_get(w, 0), "options"),
	    "framework_options"), "activities")));
	s = json_object_get(doc, "slots");
	assert_int_equal(json_array_size(s), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(s,
	    1), "pid")), fx->dead_pid);
	assert_true(json_is_false(json_object_get(json_array_get(s, 1),
	    "alive")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(s,
	    1), "error")), "disk full");
	assert_string_equal(json_string_value(json_object_get(json_array_get(s,
	    0), "state")), "profiling");
	json_decref(doc);
	/* --json after the command works too. */
	assert_int_equal(run_ctl(fx, NULL, "local", "job-1", "--shm-dir",
	    fx->dir, "--json", NULL), 0);
	expect_in(fx->out, "\"slots\": [");
}

/* Rewrites a copy of the good segment as job "bad" with a change at off. */
static void
write_bad(struct fixture *fx, size_t off, const void *bytes, size_t n,
    size_t truncate_to)
{
	char	 src[128], dst[128], *buf;
	size_t	 len;
	FILE	*f;

	snprintf(src, sizeof(src), "%s/dynprof.job-1", fx->dir);
	snprintf(dst, sizeof(dst), "%s/dynprof.bad", fx->dir);
	f = fopen(src, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(len);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, len, f), len);
	fclose(f);
	memset(buf + offsetof(struct seg_header, job), 0, SEG_JOB_MAX + 1);
	memcpy(buf + offsetof(struct seg_header, job), "bad", 3);
	if (bytes != NULL)
		memcpy(buf + off, bytes, n);
	if (truncate_to != 0)
		len = truncate_to;
	f = fopen(dst, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
}

static void
test_local_refused(void **state)
{
	struct fixture	*fx = *state;
	uint64_t	 magic = 0x1122334455667788ULL;
	uint32_t	 version = SEG_VERSION + 1;

	/* The copy itself is fine: the test's own premise. */
	write_bad(fx, 0, NULL, 0, 0);
	assert_int_equal(run_ctl(fx, NULL, "local", "bad", "--shm-dir",
	    fx->dir, NULL), 0);

	write_bad(fx, offsetof(struct seg_header, magic), &magic,
	    sizeof(magic), 0);
	assert_int_equal(run_ctl(fx, NULL, "local", "bad", "--shm-dir",
	    fx->dir, NULL), 1);
	expect_in(fx->err, "dynprofctl: local: ");
	expect_in(fx->err, "dynprof.bad: not a dynprof segment (bad magic)\n");
	assert_string_equal(fx->out, "");

	write_bad(fx, offsetof(struct seg_header, version), &version,
	    sizeof(version), 0);
	assert_int_equal(run_ctl(fx, NULL, "local", "bad", "--shm-dir",
	    fx->dir, NULL), 1);
	expect_in(fx->err, "segment has another layout version\n");

	write_bad(fx, 0, NULL, 0, 1000);
	assert_int_equal(run_ctl(fx, NULL, "local", "bad", "--shm-dir",
	    fx->dir, NULL), 1);
	expect_in(fx->err, "segment truncated or its sizes do not match");

	assert_int_equal(run_ctl(fx, NULL, "local", "nosuch", "--shm-dir",
	    fx->dir, NULL), 1);
	expect_in(fx->err, "dynprofctl: local: no segment for job nosuch in ");

	assert_int_equal(run_ctl(fx, NULL, "local", "../etc", "--shm-dir",
	    fx->dir, NULL), 1);
	expect_in(fx->err, "invalid job id \"../etc\"");

	assert_int_equal(run_ctl(fx, NULL, "local", NULL), 1);
	expect_in(fx->err, "dynprofctl: local: missing JOB\n"
	    "usage: dynprofctl local JOB [--shm-dir DIR] [--uid UID]\n");
	assert_int_equal(run_ctl(fx, NULL, "local", "job-1", "--shm-dir",
	    NULL), 1);
	expect_in(fx->err, "--shm-dir needs a value");
}

/*
 * An operator who may read the segment but not write it (group-shared 0640
 * segments, or 0644 here) can still look at it: local maps it read-only.
 */
static void
test_local_read_only(void **state)
{
	struct fixture	*fx = *state;
	char		 path[256];

	if (geteuid() != 0 || access("/usr/bin/setpriv", X_OK) != 0) {
		print_message("skipped: needs root and setpriv to run as "
		    "another user\n");
		skip();
	}
	snprintf(path, sizeof(path), "%s/dynprof.job-1", fx->dir);
	assert_int_equal(chmod(fx->dir, 0755), 0);
	assert_int_equal(chmod(path, 0644), 0);
	fx->as_nobody = 1;
	assert_int_equal(run_ctl(fx, NULL, "local", "job-1", "--shm-dir",
	    fx->dir, NULL), 0);
	expect_in(fx->out, "job job-1, layout version");
	expect_in(fx->out, "/out/run1/rank0_start160_stop164");

	/* Not readable at all: a clear error, not a crash. */
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(run_ctl(fx, NULL, "local", "job-1", "--shm-dir",
	    fx->dir, NULL), 1);
	expect_in(fx->err, "dynprofctl: ");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_local_text, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_local_json, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_local_read_only, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_local_refused, setup,
		    teardown),
	};

	return (cmocka_run_group_tests_name("ctl_local", tests, NULL, NULL));
}
