/* Counters and the Prometheus text exposition of /metrics. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>

#include "leader.h"
#include "metrics.h"
#include "model.h"
#include "names.h"
#include "store_row.h"

/* The event stream's lines of /metrics. */
static void
metrics_events(struct coord *c, struct evbuffer *buf)
{
	evbuffer_add_printf(buf,
	    "# HELP dynprof_event_revision The revision of the last event "
	    "committed.\n"
	    "# TYPE dynprof_event_revision gauge\n"
	    "dynprof_event_revision %llu\n"
	    "# HELP dynprof_event_followers Followers of the event stream.\n"
	    "# TYPE dynprof_event_followers gauge\n"
	    "dynprof_event_followers %zu\n"
	    "# HELP dynprof_event_followers_refused_total Followers refused "
	    "past their cap.\n"
	    "# TYPE dynprof_event_followers_refused_total counter\n"
	    "dynprof_event_followers_refused_total %llu\n"
	    "# HELP dynprof_event_followers_dropped_total Followers dropped "
	    "once the events they had yet to read were no longer kept.\n"
	    "# TYPE dynprof_event_followers_dropped_total counter\n"
	    "dynprof_event_followers_dropped_total %llu\n",
	    (unsigned long long)journal_revision(c),
	    c->journal != NULL ? c->journal->nfollowers : 0,
	    (unsigned long long)c->metrics.followers_refused,
	    (unsigned long long)c->metrics.followers_dropped);
}

static const double metrics_lat_bounds[METRICS_LAT_BUCKETS] = {
	0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
	2.5, 5, 10
};

/* Records one push-to-applied latency, in seconds. */
void
metrics_observe_latency(struct metrics *m, double seconds)
{
	int	 i;

	m->lat_count++;
	m->lat_sum += seconds;
	for (i = 0; i < METRICS_LAT_BUCKETS; i++)
		if (seconds <= metrics_lat_bounds[i])
			m->lat_buckets[i]++;
}

_Static_assert(sizeof(((struct metrics *)0)->rows_quarantined) /
    sizeof(uint64_t) == ROW_TABLES, "a counter per table");

/* Renders the stored rows the last load quarantined, by table. */
static void
metrics_render_rows(struct coord *c, struct evbuffer *buf)
{
	size_t	 t;

	evbuffer_add_printf(buf,
	    "# HELP dynprof_store_rows_quarantined Stored rows the last load "
	    "set aside: they break the rules the API and the agents are held "
	    "to, and are neither served nor weighed.\n"
	    "# TYPE dynprof_store_rows_quarantined gauge\n");
	for (t = 0; t < ROW_TABLES; t++)
		evbuffer_add_printf(buf,
		    "dynprof_store_rows_quarantined{table=\"%s\"} %llu\n",
		    row_table_names[t],
		    (unsigned long long)c->metrics.rows_quarantined[t]);
}

/* Renders the budgets of rank state: what they refused, what is held. */
static void
metrics_render_budgets(struct coord *c, struct evbuffer *buf)
{
	static const char *const names[] = { "job", "agent", "memory" };
	size_t	 i;

	evbuffer_add_printf(buf,
	    "# HELP dynprof_ranks_refused_total Ranks refused past a budget: "
	    "ranks per job, live ranks per agent, memory of all ranks' state "
	    "(an event or a Progress entry each).\n"
	    "# TYPE dynprof_ranks_refused_total counter\n");
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		evbuffer_add_printf(buf,
		    "dynprof_ranks_refused_total{budget=\"%s\"} %llu\n",
		    names[i], (unsigned long long)c->metrics.ranks_refused[i]);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_rank_state_bytes Bytes of all ranks' state: the "
	    "ranks, their strings and event histories, the jobs' rank "
	    "tables.\n"
	    "# TYPE dynprof_rank_state_bytes gauge\n"
	    "dynprof_rank_state_bytes %zu\n"
	    "# HELP dynprof_rank_state_bytes_max Their budget "
	    "(--rank-memory-max).\n"
	    "# TYPE dynprof_rank_state_bytes_max gauge\n"
	    "dynprof_rank_state_bytes_max %zu\n"
	    "# HELP dynprof_generations_raised_total Agents' applied "
	    "generations above the counter (a store gone back), which it "
	    "went on from.\n"
	    "# TYPE dynprof_generations_raised_total counter\n"
	    "dynprof_generations_raised_total %llu\n"
	    "# HELP dynprof_generations_refused_total Agents' applied "
	    "generations beyond 2^52, not taken.\n"
	    "# TYPE dynprof_generations_refused_total counter\n"
	    "dynprof_generations_refused_total %llu\n",
	    c->rank_bytes, c->conf.rank_bytes_max,
	    (unsigned long long)c->metrics.generations_raised,
	    (unsigned long long)c->metrics.generations_refused);
}

/* A counter of struct metrics and the text of its # HELP line. */
struct metrics_counter {
	const char	*name;
	const char	*help;
	size_t		 off;	/* of its uint64_t in struct metrics */
};

/* Renders the counters of table t, each with its # HELP and # TYPE. */
static void
metrics_counters(const struct metrics *m, struct evbuffer *buf,
    const struct metrics_counter *t, size_t n)
{
	uint64_t	 v;
	size_t		 i;

	for (i = 0; i < n; i++) {
		memcpy(&v, (const char *)m + t[i].off, sizeof(v));
		evbuffer_add_printf(buf,
		    "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", t[i].name,
		    t[i].help, t[i].name, t[i].name, (unsigned long long)v);
	}
}

/* metrics_counters() of every counter of table t. */
#define METRICS_COUNTERS(m, buf, t)					\
	metrics_counters((m), (buf), (t), sizeof(t) / sizeof((t)[0]))

/* Agents held to the bounds on peers. */
static const struct metrics_counter metrics_bound_counters[] = {
	{ "dynprof_agents_dropped_total",
	    "Agent connections dropped for a bound: output not "
	    "read, no hello in time, a big frame before hello, a "
	    "seq beyond the window.",
	    offsetof(struct metrics, agents_dropped) },
	{ "dynprof_subscribes_refused_total",
	    "Subscribes past the jobs one agent may serve.",
	    offsetof(struct metrics, subscribes_refused) },
	{ "dynprof_progress_ranks_refused_total",
	    "Ranks of a Progress past the ranks a node can hold.",
	    offsetof(struct metrics, progress_ranks_refused) },
};

/* Jobs nobody scheduled. */
static const struct metrics_counter metrics_unsched_counters[] = {
	{ "dynprof_unscheduled_refused_total",
	    "Jobs nobody scheduled refused past their cap.",
	    offsetof(struct metrics, unscheduled_refused) },
	{ "dynprof_unscheduled_reaped_total",
	    "Jobs nobody scheduled forgotten once no node served "
	    "them.",
	    offsetof(struct metrics, unscheduled_reaped) },
};

/* Admin connections closed. */
static const struct metrics_counter metrics_http_counters[] = {
	{ "dynprof_http_timeouts_total",
	    "Admin connections closed at the request deadline.",
	    offsetof(struct metrics, http_timeouts) },
	{ "dynprof_http_evicted_total",
	    "Idle admin connections closed to make room at the "
	    "cap.",
	    offsetof(struct metrics, http_evicted) },
};

/* Renders the counters of the bounds on peers. */
static void
metrics_render_bounds(struct coord *c, struct evbuffer *buf)
{
	struct metrics	*m = &c->metrics;

	METRICS_COUNTERS(m, buf, metrics_bound_counters);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_jobs_unscheduled "
	    "Jobs nobody scheduled, known from agents.\n"
	    "# TYPE dynprof_jobs_unscheduled gauge\n"
	    "dynprof_jobs_unscheduled %zu\n",
	    schedule_unscheduled_count(c));
	METRICS_COUNTERS(m, buf, metrics_unsched_counters);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_http_connections "
	    "Admin connections open.\n"
	    "# TYPE dynprof_http_connections gauge\n"
	    "dynprof_http_connections %zu\n",
	    c->nhttp_conns);
	METRICS_COUNTERS(m, buf, metrics_http_counters);
	metrics_events(c, buf);
}

/* The seconds each loaded certificate has left, by role; AgentLink's
 * handshakes, full and resumed. */
static void
metrics_render_tls(struct coord *c, struct evbuffer *buf)
{
	const struct tls	*t[] = { &c->agent_tls, &c->http_tls };
	size_t			 i;
	int			 any = 0;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (t[i]->ctx == NULL)
			continue;
		if (!any)
			evbuffer_add_printf(buf,
			    "# HELP dynprof_tls_cert_expiry_seconds Seconds "
			    "until the loaded certificate expires, by role.\n"
			    "# TYPE dynprof_tls_cert_expiry_seconds gauge\n");
		any = 1;
		evbuffer_add_printf(buf,
		    "dynprof_tls_cert_expiry_seconds{role=\"%s\"} %lld\n",
		    t[i]->role, (long long)tls_expiry_seconds(t[i]));
	}
	if (c->agent_tls.ctx == NULL)
		return;
	evbuffer_add_printf(buf,
	    "# HELP dynprof_tls_handshakes_total AgentLink TLS handshakes "
	    "done.\n"
	    "# TYPE dynprof_tls_handshakes_total counter\n"
	    "dynprof_tls_handshakes_total{role=\"agentlink\"} %llu\n"
	    "# HELP dynprof_tls_resumed_total Of those, how many resumed a "
	    "session (abbreviated handshakes).\n"
	    "# TYPE dynprof_tls_resumed_total counter\n"
	    "dynprof_tls_resumed_total{role=\"agentlink\"} %llu\n",
	    (unsigned long long)c->agent_tls.handshakes,
	    (unsigned long long)c->agent_tls.resumed);
}

/* What the rank events did that they should not have. */
static const struct metrics_counter metrics_event_counters[] = {
	{ "dynprof_events_duplicate_total",
	    "Replayed events that changed nothing.",
	    offsetof(struct metrics, events_dup) },
	{ "dynprof_events_refused_total",
	    "Rank events dropped: a string not UTF-8, an output "
	    "directory of 4096 bytes or more, a step out of "
	    "range, or an observed event from a node not serving "
	    "the job as legacy.",
	    offsetof(struct metrics, events_refused) },
	{ "dynprof_event_text_cut_total",
	    "Rank events whose error was cut to its budget (4095 "
	    "bytes, at a UTF-8 character).",
	    offsetof(struct metrics, event_text_cut) },
	{ "dynprof_progress_refused_total",
	    "Progress reports of a rank (or a node's range) with "
	    "a step out of range, ignored.",
	    offsetof(struct metrics, progress_refused) },
	{ "dynprof_legacy_refused_total",
	    "Legacy job reports refused: bad strings, or over the "
	    "bound.",
	    offsetof(struct metrics, legacy_refused) },
	{ "dynprof_labels_refused_total",
	    "Ranks' labels that did not pass (docs/labels.md), "
	    "dropped: the rank kept none.",
	    offsetof(struct metrics, labels_refused) },
};

/* Windows that name ranks by what they are. */
static const struct metrics_counter metrics_select_counters[] = {
	{ "dynprof_select_grown_total",
	    "Times a window that names ranks by what they are "
	    "took ranks that attached after it was made.",
	    offsetof(struct metrics, select_grown) },
	{ "dynprof_select_grow_refused_total",
	    "Times such a window could not take the ranks that "
	    "attached after it (its rank list full), logged.",
	    offsetof(struct metrics, select_grow_refused) },
};

/* Appends every metric to buf in the Prometheus text format. */
void
metrics_render(struct coord *c, struct evbuffer *buf)
{
	struct metrics	*m = &c->metrics;
	struct job	*job;
	int		 i;
	size_t		 njobs = 0;

	TAILQ_FOREACH(job, &c->jobs, entry)
		njobs++;
	evbuffer_add_printf(buf,
	    "# HELP dynprof_agents_connected Agents connected and past hello.\n"
	    "# TYPE dynprof_agents_connected gauge\n"
	    "dynprof_agents_connected %zu\n"
	    "# HELP dynprof_jobs Jobs known to the coordinator.\n"
	    "# TYPE dynprof_jobs gauge\n"
	    "dynprof_jobs %zu\n"
	    "# HELP dynprof_generation Highest schedule generation handed out.\n"
	    "# TYPE dynprof_generation gauge\n"
	    "dynprof_generation %llu\n"
	    "# HELP dynprof_pushes_total Schedules written to agents.\n"
	    "# TYPE dynprof_pushes_total counter\n"
	    "dynprof_pushes_total %llu\n"
	    "# HELP dynprof_agents_refused_total Agent connections closed at "
	    "hello (bad version, token, frame, or no hello) or at the TLS "
	    "handshake.\n"
	    "# TYPE dynprof_agents_refused_total counter\n"
	    "dynprof_agents_refused_total %llu\n"
	    "# HELP dynprof_event_commits_total Group commits of rank events.\n"
	    "# TYPE dynprof_event_commits_total counter\n"
	    "dynprof_event_commits_total %llu\n"
	    "# HELP dynprof_loop_stalls_total Heartbeat ticks of the loop late "
	    "by half an interval or more (no agent is judged silent then).\n"
	    "# TYPE dynprof_loop_stalls_total counter\n"
	    "dynprof_loop_stalls_total %llu\n"
	    "# HELP dynprof_loop_stalled_seconds_total Their lateness, summed.\n"
	    "# TYPE dynprof_loop_stalled_seconds_total counter\n"
	    "dynprof_loop_stalled_seconds_total %.3f\n"
	    "# HELP dynprof_agents_silent_total Agents closed as silent for 3 "
	    "heartbeat intervals while the loop was free to read them.\n"
	    "# TYPE dynprof_agents_silent_total counter\n"
	    "dynprof_agents_silent_total %llu\n"
	    "# HELP dynprof_node_rows_total Nodes' rows the leader stored "
	    "for followers (at a tick, every row of each batch holding a node "
	    "whose state changed).\n"
	    "# TYPE dynprof_node_rows_total counter\n"
	    "dynprof_node_rows_total %llu\n",
	    c->nconns_ready, njobs, (unsigned long long)c->generation,
	    (unsigned long long)m->pushes,
	    (unsigned long long)m->agents_refused,
	    (unsigned long long)m->commits,
	    (unsigned long long)m->loop_stalls,
	    (double)m->loop_stalled_ms / 1000.0,
	    (unsigned long long)m->silent_closed,
	    (unsigned long long)m->node_rows);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_view_rows_total The other rows the leader stored "
	    "for followers: jobs' straggler judgement, nodes' legacy reports "
	    "(at a tick, every row of each batch holding one that changed).\n"
	    "# TYPE dynprof_view_rows_total counter\n"
	    "dynprof_view_rows_total{kind=\"stragglers\"} %llu\n"
	    "dynprof_view_rows_total{kind=\"legacy\"} %llu\n",
	    (unsigned long long)m->strag_rows,
	    (unsigned long long)m->legacy_rows);

	evbuffer_add_printf(buf,
	    "# HELP dynprof_push_applied_seconds From a push to the agent's "
	    "applied.\n"
	    "# TYPE dynprof_push_applied_seconds histogram\n");
	for (i = 0; i < METRICS_LAT_BUCKETS; i++)
		evbuffer_add_printf(buf,
		    "dynprof_push_applied_seconds_bucket{le=\"%g\"} %llu\n",
		    metrics_lat_bounds[i],
		    (unsigned long long)m->lat_buckets[i]);
	evbuffer_add_printf(buf,
	    "dynprof_push_applied_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "dynprof_push_applied_seconds_sum %.6f\n"
	    "dynprof_push_applied_seconds_count %llu\n",
	    (unsigned long long)m->lat_count, m->lat_sum,
	    (unsigned long long)m->lat_count);

	evbuffer_add_printf(buf,
	    "# HELP dynprof_events_total Rank events received, by kind.\n"
	    "# TYPE dynprof_events_total counter\n");
	for (i = 1; i <= EVENT_KIND_LAST; i++)
		evbuffer_add_printf(buf,
		    "dynprof_events_total{kind=\"%s\"} %llu\n",
		    names_event_kind(i),
		    (unsigned long long)m->events[i]);
	METRICS_COUNTERS(m, buf, metrics_event_counters);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_select_seconds "
	    "What resolving the last window that named ranks by "
	    "labels or nodes took (docs/labels.md).\n"
	    "# TYPE dynprof_select_seconds gauge\n"
	    "dynprof_select_seconds %.6f\n",
	    (double)m->select_last_ns / 1e9);
	METRICS_COUNTERS(m, buf, metrics_select_counters);

	metrics_render_bounds(c, buf);
	metrics_render_rows(c, buf);
	metrics_render_budgets(c, buf);
	straggler_metrics(c, buf);
	rules_metrics(c, buf);
	leader_metrics(c, buf);
	evbuffer_add_printf(buf,
	    "# HELP dynprof_http_requests_total Admin requests, by status.\n"
	    "# TYPE dynprof_http_requests_total counter\n");
	for (i = 100; i < 600; i++)
		if (m->http_codes[i] != 0)
			evbuffer_add_printf(buf,
			    "dynprof_http_requests_total{code=\"%d\"} %llu\n",
			    i, (unsigned long long)m->http_codes[i]);
	metrics_render_tls(c, buf);
}
