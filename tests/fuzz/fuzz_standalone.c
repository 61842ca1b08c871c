/*
 * Fuzz target: MindSpore's profiler_config.json as the standalone agent reads
 * it (agent/standalone.c): the bytes are written to a file, parsed by
 * standalone_parse() and, if accepted, turned into the job's schedule by
 * apply_jobconfig() exactly as standalone_load() does before it touches the
 * segment.  The file lives in a private directory made at the first input
 * (under /dev/shm when there is one: a rewrite on a disk file system is
 * flushed at every close) and removed at exit.
 */

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "fuzzdir.h"
#include "log.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct agent		 fuzz_agent;
static struct seg_config	 fuzz_config;
static char			 fuzz_dir[128], fuzz_path[160];

static void
fuzz_cleanup(void)
{
	unlink(fuzz_path);
	rmdir(fuzz_dir);
}

static void
fuzz_setup(void)
{
	if (fuzzdir_make(fuzz_dir, sizeof(fuzz_dir), "dpfuzz-standalone") ==
	    -1) {
		perror("fuzz_standalone: mkdtemp");
		abort();
	}
	snprintf(fuzz_path, sizeof(fuzz_path), "%s/profiler_config.json",
	    fuzz_dir);
	atexit(fuzz_cleanup);
	/* Every refused file is logged: keep the log to warnings. */
	log_init("fuzz_standalone", LOG_LEVEL_QUIET);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Dynprof__V1__JobConfig		 jc = DYNPROF__V1__JOB_CONFIG__INIT;
	Dynprof__V1__Window		 w = DYNPROF__V1__WINDOW__INIT;
	Dynprof__V1__ProfilerOptions	 po = DYNPROF__V1__PROFILER_OPTIONS__INIT;
	Dynprof__V1__Window		*wp = &w;
	const char			*why;
	char				*fwopts = NULL;
	int				 fd, has_window = 0;

	if (fuzz_dir[0] == '\0')
		fuzz_setup();
	if ((fd = open(fuzz_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1 || write(fd, data, size) != (ssize_t)size) {
		perror("fuzz_standalone: write");
		abort();
	}
	close(fd);
	if (standalone_parse(&fuzz_agent, fuzz_path, &w, &po, &has_window,
	    &fwopts) == -1) {
		if (fwopts != NULL)
			abort();
		return (0);
	}
	jc.job = "fuzzjob";
	jc.generation = 1;
	if (has_window) {
		if (w.start_step <= 0 || w.stop_step < w.start_step)
			abort();
		w.id = 1;
		jc.n_windows = 1;
		jc.windows = &wp;
	}
	(void)apply_jobconfig(&jc, &fuzz_config, &why);
	free(fwopts);
	return (0);
}
