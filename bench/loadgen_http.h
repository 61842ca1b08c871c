/*
 * Helpers shared by the end-to-end benchmarks (loadgen, propagation): an
 * asynchronous admin API client on the benchmark's own event loop, a reader of a
 * process's memory and CPU time, and order statistics.
 */

#ifndef DYNPROF_BENCH_LOADGEN_HTTP_H
#define DYNPROF_BENCH_LOADGEN_HTTP_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct loadgen_http;

/* Called once per request: code 0 means no answer (connection failed, timeout). */
typedef void (*loadgen_http_cb)(void *, int, const char *, size_t);

/* loadgen_http.c */
struct loadgen_http *loadgen_http_new(struct event_base *, const char *,
	    const char *);
void	 loadgen_http_free(struct loadgen_http *);
int	 loadgen_http_request(struct loadgen_http *, const char *, const char *,
	    const char *, loadgen_http_cb, void *);
int	 loadgen_parse_hostport(const char *, char *, size_t, int *);
int64_t	 loadgen_now_ns(void);

/* Processes of the store --store-pids may name. */
#define LOADGEN_STORE_PIDS_MAX	16

struct loadgen_proc {
	long	 rss_kib;	/* VmRSS */
	long	 hwm_kib;	/* VmHWM: peak RSS */
	double	 cpu_s;		/* utime + stime */
};
int	 loadgen_proc_read(pid_t, struct loadgen_proc *);
double	 loadgen_procs_cpu(const pid_t *, int);

struct loadgen_stats {
	double	 min;
	double	 median;
	double	 p99;
	double	 max;
};
void	 loadgen_stats(double *, size_t, struct loadgen_stats *);
int	 loadgen_raise_nofile(size_t);

#endif /* DYNPROF_BENCH_LOADGEN_HTTP_H */
