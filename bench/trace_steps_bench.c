/*
 * trace-steps-bench: the agent's trace reader (agent/trace_steps.c) on one
 * file, as the packer feeds it (64 KiB reads), with its throughput and the
 * process's peak RSS (bench/README.md, "trace parse").
 *
 *	trace-steps-bench --generate MB FILE	writes a torch.profiler-like
 *						trace of about MB MiB
 *	trace-steps-bench FILE			reads it: prints the summary's
 *						text form, then one line of
 *						figures
 *
 * Exit codes: 0 done, 1 bad usage or a file that cannot be read or written.
 */

#include <sys/resource.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "tracesum.h"

#define BENCH_CHUNK	(64 * 1024)

static const char *const bench_ops[] = { "aten::mm", "aten::addmm",
    "aten::linear", "aten::relu", "aten::sum", "aten::add_",
    "aten::empty", "aten::copy_", "aten::zeros", "aten::as_strided",
    "autograd::engine::evaluate_function: AddmmBackward0",
    "Optimizer.step#SGD.step" };

/* Writes a trace of about mb MiB into path: steps of 40 operators each and
 * a gradients' all-reduce on gloo's thread. */
static int
bench_generate(const char *path, long mb)
{
	FILE		*f;
	long long	 ts = 1000, bytes = 0, want = mb * 1024LL * 1024;
	int		 step = 0, i, n;

	if ((f = fopen(path, "w")) == NULL) {
		perror(path);
		return (1);
	}
	fprintf(f, "{\"schemaVersion\": 1, \"deviceProperties\": [], "
	    "\"traceEvents\": [\n");
	while (bytes < want) {
		n = fprintf(f, "%s{\"ph\": \"X\", \"cat\": \"user_annotation\", "
		    "\"name\": \"ProfilerStep#%d\", \"pid\": 1, \"tid\": 1, "
		    "\"ts\": %lld, \"dur\": %d.250, \"args\": {\"External id\": "
		    "%d}}", step ? ",\n" : "", step, ts, 40000 + step % 7, step);
		bytes += n;
		for (i = 0; i < 40; i++) {
			n = fprintf(f, ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", "
			    "\"name\": \"%s\", \"pid\": 1, \"tid\": 1, \"ts\": "
			    "%lld, \"dur\": %d, \"args\": {\"External id\": %d, "
			    "\"Input Dims\": [[32, 64], [64, 64]], \"Input "
			    "type\": [\"float\", \"float\"]}}", bench_ops[i %
			    12], ts + i * 900, 100 + i * 7, step * 40 + i);
			bytes += n;
		}
		n = fprintf(f, ",\n{\"ph\": \"X\", \"name\": \"gloo:all_reduce\", "
		    "\"pid\": 1, \"tid\": 2, \"ts\": %lld, \"dur\": %d, \"args\": "
		    "{}}", ts + 30000, 9000 + step % 5);
		bytes += n;
		ts += 41000;
		step++;
	}
	fprintf(f, "\n], \"traceName\": \"%s\"}\n", path);
	if (fclose(f) != 0) {
		perror(path);
		return (1);
	}
	printf("generated %s: %lld bytes, %d steps\n", path, bytes, step);
	return (0);
}

int
main(int argc, char **argv)
{
	struct trace_steps	*t;
	struct tracesum		*sum;
	struct timespec		 t0, t1;
	struct rusage		 ru;
	char			*buf, text[TRACESUM_TEXT_MAX];
	long long		 total = 0;
	ssize_t			 n;
	double			 s, cpu;
	int			 fd;

	if (argc == 4 && strcmp(argv[1], "--generate") == 0)
		return (bench_generate(argv[3], atol(argv[2])));
	if (argc != 2) {
		fprintf(stderr, "usage: trace-steps-bench [--generate MB] "
		    "FILE\n");
		return (1);
	}
	if ((fd = open(argv[1], O_RDONLY)) == -1) {
		perror(argv[1]);
		return (1);
	}
	if ((t = trace_steps_new()) == NULL || (buf = malloc(BENCH_CHUNK)) ==
	    NULL || (sum = malloc(sizeof(*sum))) == NULL) {
		fprintf(stderr, "out of memory\n");
		return (1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!trace_steps_begin(t, argv[1]))
		fprintf(stderr, "%s: not a name the agent reads\n", argv[1]);
	while ((n = read(fd, buf, BENCH_CHUNK)) > 0) {
		trace_steps_feed(t, buf, (size_t)n);
		total += n;
	}
	trace_steps_result(t, sum);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	    (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	if (tracesum_encode(sum, text, sizeof(text)) == 0)
		printf("%s\n", text);
	/* Per CPU second too: on a shared machine the wall clock says more
	 * of the others' work than of this one's. */
	printf("read %lld bytes in %.2f s (%.2f s of CPU): %.1f MB/s, %.1f MB "
	    "per CPU second, peak RSS %ld KiB, %llu steps, %llu events\n",
	    total, s, cpu, s > 0 ? total / s / 1e6 : 0.0, cpu > 0 ?
	    total / cpu / 1e6 : 0.0, ru.ru_maxrss,
	    (unsigned long long)sum->steps_seen,
	    (unsigned long long)sum->events);
	trace_steps_free(t);
	free(sum);
	free(buf);
	close(fd);
	return (0);
}
