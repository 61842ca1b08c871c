/*
 * dynprof-loadgen --mode progress: every connection reports its ranks
 * stepping, as an agent samples its segment: each LOADGEN_PROGRESS_MS, one
 * Progress per connection for the job, its --ranks ranks one step further,
 * for --progress-s seconds.  What a coordinator does with progress at scale
 * (over etcd: the nodes' rows it stores for followers) is then measured as
 * CPU per second, the coordinator's and the store's.
 */

#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "parts_loadgen.h"

/* Sends one Progress from every ready connection: all ranks at lg->step. */
static void
loadgen_progress_cb(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen			*lg = arg;
	Dynprof__V1__AgentMessage	 m;
	Dynprof__V1__Progress		 p;
	Dynprof__V1__RankProgress	 rp[LOADGEN_RANKS_MAX];
	Dynprof__V1__RankProgress	*rpp[LOADGEN_RANKS_MAX];
	struct timespec			 now;
	int				 i, r, still;

	(void)fd;
	(void)what;
	if (lg->phase != LOADGEN_PHASE_PROGRESS)
		return;
	if (loadgen_now_ns() - lg->pr_t0 >= (int64_t)lg->progress_s * 1000000000) {
		if (lg->coord_pid > 0)
			loadgen_proc_read(lg->coord_pid, &lg->proc_events);
		lg->store_events = loadgen_procs_cpu(lg->store_pids,
		    lg->nstore_pids);
		loadgen_proc_read(getpid(), &lg->self_events);
		lg->hooks->finish(lg);
		return;
	}
	lg->step++;
	clock_gettime(CLOCK_REALTIME, &now);
	dynprof__v1__agent_message__init(&m);
	dynprof__v1__progress__init(&p);
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_PROGRESS;
	m.progress = &p;
	p.job = (char *)lg->job;
	p.ranks_alive = (uint32_t)lg->ranks_per;
	p.sent_unix_us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
	p.n_ranks = (size_t)lg->ranks_per;
	p.ranks = rpp;
	for (i = 0; i < lg->n; i++) {
		if (lg->conns[i].state != LOADGEN_READY)
			continue;
		/* --progress-still: these ranks report, and do not move. */
		still = i % 100 < lg->progress_still;
		p.min_step = p.max_step = still ? 1 : lg->step;
		for (r = 0; r < lg->ranks_per; r++) {
			dynprof__v1__rank_progress__init(&rp[r]);
			rp[r].rank = i * lg->ranks_per + r;
			rp[r].step = p.max_step;
			rp[r].pid = 1000 + r;
			rp[r].state = DYNPROF__V1__RANK_STATE__RANK_ATTACHED;
			rpp[r] = &rp[r];
		}
		loadgen_send(&lg->conns[i], &m);
		lg->progress_msgs++;
	}
}

/* Starts the ranks stepping: the CPU counted from here. */
void
loadgen_progress_start(struct loadgen *lg)
{
	struct timeval	 tv;

	lg->phase = LOADGEN_PHASE_PROGRESS;
	if (lg->coord_pid > 0)
		loadgen_proc_read(lg->coord_pid, &lg->proc_before);
	lg->store_before = loadgen_procs_cpu(lg->store_pids, lg->nstore_pids);
	loadgen_proc_read(getpid(), &lg->self_before);
	lg->pr_t0 = loadgen_now_ns();
	if ((lg->pr_ev = event_new(lg->base, -1, EV_PERSIST,
	    loadgen_progress_cb, lg)) == NULL) {
		lg->hooks->fail(lg, "cannot start the progress timer");
		return;
	}
	tv.tv_sec = 0;
	tv.tv_usec = LOADGEN_PROGRESS_MS * 1000;
	event_add(lg->pr_ev, &tv);
}

/* Prints the progress phase's figures on the RESULT line. */
void
loadgen_progress_report(const struct loadgen *lg)
{
	double	 s = (loadgen_now_ns() - lg->pr_t0) / 1e9;

	printf(" progress_s=%.1f progress_msgs=%llu steps=%lld", s,
	    (unsigned long long)lg->progress_msgs, (long long)lg->step);
	if (lg->coord_pid > 0)
		printf(" cpu_progress_per_s=%.3f", (lg->proc_events.cpu_s -
		    lg->proc_before.cpu_s) / s);
	if (lg->nstore_pids > 0 && lg->store_before >= 0 &&
	    lg->store_events >= 0)
		printf(" store_cpu_progress_per_s=%.3f",
		    (lg->store_events - lg->store_before) / s);
	printf(" loadgen_cpu_progress_per_s=%.3f", (lg->self_events.cpu_s -
	    lg->self_before.cpu_s) / s);
}

void
loadgen_progress_free(struct loadgen *lg)
{
	if (lg->pr_ev != NULL)
		event_free(lg->pr_ev);
}
