/*
 * dynprof-propagation: from the admin request to the new generation in every
 * node's segment.
 *
 * usage: dynprof-propagation --http HOST:PORT --job J [--trials N] SEGMENT...
 *
 * Maps each node's segment file read-only, then N times: sends a config change
 * (PUT /v1/jobs/J/config, options flipped so that every one is a new
 * generation) and polls the segments' header generation until every one holds a
 * newer generation than before the request.  The ranks read that generation at
 * their next step, so this is the time a change takes to reach every rank.
 * Prints median, p99 and max, and "RESULT ..." last.
 */

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "loadgen_http.h"
#include "segment.h"

#define PROPAGATION_TRIAL_TIMEOUT_NS	(10LL * 1000000000)
#define PROPAGATION_START_TIMEOUT_NS	(60LL * 1000000000)

struct propagation_seg {
	const char		*path;
	struct seg_header	*hdr;
	size_t			 size;
	int64_t			 t_seen;	/* this trial: when it changed */
};

struct propagation {
	struct event_base	*base;
	struct loadgen_http	*http;
	const char		*job;
	struct propagation_seg	*segs;
	int			 nsegs;
	int			 answered;
	int64_t			 t_answer;
	double			 first_ms;	/* this trial: first segment */
	int			 last_seg;	/* this trial: the last one */
	int			 code;
	char			 answer[512];
};

static int
propagation_map(struct propagation_seg *s)
{
	struct stat	 st;
	void		*p;
	int		 fd, rc;

	if ((fd = open(s->path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	if (fstat(fd, &st) == -1 || st.st_size < (off_t)sizeof(*s->hdr)) {
		close(fd);
		return (-1);
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return (-1);
	if ((rc = segment_validate(p, (size_t)st.st_size)) != SEG_OK) {
		fprintf(stderr, "propagation: %s: %s\n", s->path,
		    segment_strerror(rc));
		munmap(p, (size_t)st.st_size);
		return (-1);
	}
	s->hdr = p;
	s->size = (size_t)st.st_size;
	return (0);
}

static uint64_t
propagation_gen(const struct propagation_seg *s)
{
	return (atomic_load_explicit(&s->hdr->generation, memory_order_acquire));
}

/* The lowest generation any segment holds. */
static uint64_t
propagation_min_gen(const struct propagation *pr)
{
	uint64_t	 g, min = UINT64_MAX;
	int		 i;

	for (i = 0; i < pr->nsegs; i++)
		if ((g = propagation_gen(&pr->segs[i])) < min)
			min = g;
	return (min);
}

static void
propagation_answer(void *arg, int code, const char *body, size_t len)
{
	struct propagation	*pr = arg;

	(void)len;
	pr->t_answer = loadgen_now_ns();
	pr->answered = 1;
	pr->code = code;
	snprintf(pr->answer, sizeof(pr->answer), "%s", body);
}

static void
propagation_pause_us(long us)
{
	struct timespec	 ts;

	ts.tv_sec = us / 1000000;
	ts.tv_nsec = (us % 1000000) * 1000;
	nanosleep(&ts, NULL);
}

/*
 * One change: returns the milliseconds until every segment held a newer
 * generation than before, or -1.
 */
static double
propagation_trial(struct propagation *pr, int n, double *answer_ms)
{
	char		 body[256], uri[128];
	uint64_t	 g0;
	int64_t		 t0, t_done = 0, t_first, deadline;
	int		 i, left;

	g0 = propagation_min_gen(pr);
	for (i = 0; i < pr->nsegs; i++)
		pr->segs[i].t_seen = 0;
	snprintf(body, sizeof(body), "{\"start_step\": -1, \"stop_step\": -1, "
	    "\"aicore_metrics\": %d, \"with_stack\": %s, "
	    "\"propagation_trial\": %d}", n % 2, n % 2 ? "true" : "false", n);
	snprintf(uri, sizeof(uri), "/v1/jobs/%s/config", pr->job);
	pr->answered = 0;
	t0 = loadgen_now_ns();
	if (loadgen_http_request(pr->http, "PUT", uri, body,
	    propagation_answer, pr) == -1)
		return (-1);
	deadline = t0 + PROPAGATION_TRIAL_TIMEOUT_NS;
	for (;;) {
		event_base_loop(pr->base, EVLOOP_NONBLOCK);
		if (t_done == 0) {
			for (left = 0, i = 0; i < pr->nsegs; i++) {
				if (pr->segs[i].t_seen != 0)
					continue;
				if (propagation_gen(&pr->segs[i]) > g0) {
					pr->segs[i].t_seen = loadgen_now_ns();
					pr->last_seg = i;
				} else
					left++;
			}
			if (left == 0)
				t_done = pr->segs[pr->last_seg].t_seen;
		}
		if (t_done != 0 && pr->answered)
			break;
		if (pr->answered && (pr->code < 200 || pr->code > 299)) {
			fprintf(stderr, "propagation: PUT %s: HTTP %d: %s\n", uri,
			    pr->code, pr->answer);
			return (-1);
		}
		if (loadgen_now_ns() > deadline) {
			fprintf(stderr, "propagation: trial %d: not every segment "
			    "got a new generation in 10 s (lowest %llu, was "
			    "%llu)\n", n, (unsigned long long)
			    propagation_min_gen(pr), (unsigned long long)g0);
			return (-1);
		}
		propagation_pause_us(100);
	}
	*answer_ms = (pr->t_answer - t0) / 1e6;
	for (t_first = t_done, i = 0; i < pr->nsegs; i++)
		if (pr->segs[i].t_seen < t_first)
			t_first = pr->segs[i].t_seen;
	pr->first_ms = (t_first - t0) / 1e6;
	return ((t_done - t0) / 1e6);
}

static void
propagation_usage(FILE *f)
{
	fprintf(f, "usage: dynprof-propagation --http HOST:PORT --job J "
	    "[--trials N] [--admin-token-file F] SEGMENT...\n");
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "http",		required_argument, NULL, 'H' },
		{ "job",		required_argument, NULL, 'j' },
		{ "trials",		required_argument, NULL, 'n' },
		{ "admin-token-file",	required_argument, NULL, 'T' },
		{ "help",		no_argument,	   NULL, 'h' },
		{ NULL,			0,		   NULL, 0 }
	};
	struct propagation	 pr;
	struct loadgen_stats	 st;
	const char		*http = NULL;
	char			 token[512] = "";
	double			*ms, *ans, v, a;
	struct {
		double	 ms, answer_ms, first_ms;
		int	 last;
	}			 slow[4];
	struct loadgen_stats	 as;
	int64_t			 deadline;
	int			 ch, i, j, trials = 100, mapped;
	FILE			*f;
	size_t			 n;

	memset(&pr, 0, sizeof(pr));
	memset(slow, 0, sizeof(slow));
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H':
			http = optarg;
			break;
		case 'j':
			pr.job = optarg;
			break;
		case 'n':
			trials = atoi(optarg);
			if (trials < 1 || trials > 100000) {
				fprintf(stderr, "propagation: --trials: 1 to "
				    "100000\n");
				return (1);
			}
			break;
		case 'T':
			if ((f = fopen(optarg, "r")) == NULL) {
				fprintf(stderr, "propagation: %s: %s\n", optarg,
				    strerror(errno));
				return (1);
			}
			n = fread(token, 1, sizeof(token) - 1, f);
			fclose(f);
			token[n] = '\0';
			token[strcspn(token, "\r\n")] = '\0';
			break;
		case 'h':
			propagation_usage(stdout);
			return (0);
		default:
			propagation_usage(stderr);
			return (1);
		}
	}
	if (http == NULL || pr.job == NULL || optind == argc) {
		propagation_usage(stderr);
		return (1);
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pr.nsegs = argc - optind;
	if ((pr.segs = calloc((size_t)pr.nsegs, sizeof(*pr.segs))) == NULL ||
	    (ms = calloc((size_t)trials, sizeof(*ms))) == NULL ||
	    (ans = calloc((size_t)trials, sizeof(*ans))) == NULL)
		return (2);
	for (i = 0; i < pr.nsegs; i++)
		pr.segs[i].path = argv[optind + i];
	/* The ranks create the segments as they start: wait for them. */
	deadline = loadgen_now_ns() + PROPAGATION_START_TIMEOUT_NS;
	do {
		for (mapped = 0, i = 0; i < pr.nsegs; i++)
			if (pr.segs[i].hdr != NULL ||
			    propagation_map(&pr.segs[i]) == 0)
				mapped++;
		if (mapped == pr.nsegs)
			break;
		propagation_pause_us(50000);
	} while (loadgen_now_ns() < deadline);
	if (mapped != pr.nsegs) {
		fprintf(stderr, "propagation: %d of %d segments exist after 60 s\n",
		    mapped, pr.nsegs);
		return (2);
	}
	if ((pr.base = event_base_new()) == NULL ||
	    (pr.http = loadgen_http_new(pr.base, http, token)) == NULL)
		return (2);

	/* Warm-up: until every agent has subscribed, a change may miss one. */
	deadline = loadgen_now_ns() + PROPAGATION_START_TIMEOUT_NS;
	for (i = 0; propagation_trial(&pr, -1 - i, &a) < 0; i++) {
		if (loadgen_now_ns() > deadline) {
			fprintf(stderr, "propagation: the segments never all "
			    "got a change\n");
			return (2);
		}
	}
	for (i = 0; i < trials; i++) {
		/* A random phase against the agents' and ranks' timers. */
		propagation_pause_us(5000 + random() % 20000);
		if ((v = propagation_trial(&pr, i, &a)) < 0)
			return (2);
		ms[i] = v;
		ans[i] = a;
		/* Keep where the time went in the slowest trials. */
		for (j = 0; j < 3; j++) {
			if (v > slow[j].ms) {
				memmove(&slow[j + 1], &slow[j],
				    (2 - j) * sizeof(slow[0]));
				slow[j].ms = v;
				slow[j].answer_ms = a;
				slow[j].first_ms = pr.first_ms;
				slow[j].last = pr.last_seg;
				break;
			}
		}
	}
	for (j = 0; j < 3 && slow[j].ms > 0; j++)
		printf("propagation: slow change %d: %.3f ms: admin answer at "
		    "%.3f ms, first segment at %.3f ms, last %s\n", j + 1,
		    slow[j].ms, slow[j].answer_ms, slow[j].first_ms,
		    pr.segs[slow[j].last].path);
	loadgen_stats(ms, (size_t)trials, &st);
	loadgen_stats(ans, (size_t)trials, &as);
	printf("propagation: %d nodes, %d changes: min %.3f ms, median %.3f ms, "
	    "p99 %.3f ms, max %.3f ms\n", pr.nsegs, trials, st.min, st.median,
	    st.p99, st.max);
	printf("propagation: the admin answer (committed): median %.3f ms, "
	    "p99 %.3f ms, max %.3f ms\n", as.median, as.p99, as.max);
	printf("RESULT nodes=%d trials=%d min_ms=%.3f median_ms=%.3f p99_ms=%.3f "
	    "max_ms=%.3f answer_median_ms=%.3f answer_p99_ms=%.3f\n", pr.nsegs,
	    trials, st.min, st.median, st.p99, st.max, as.median, as.p99);
	loadgen_http_free(pr.http);
	event_base_free(pr.base);
	for (i = 0; i < pr.nsegs; i++)
		munmap(pr.segs[i].hdr, pr.segs[i].size);
	free(pr.segs);
	free(ms);
	free(ans);
	return (0);
}
