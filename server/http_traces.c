/*
 * The admin API's index of a window's traces (docs/admin-api.md):
 *
 *	GET /v1/jobs/J/windows/ID/traces	per rank: its archive's location,
 *						size, sha256, node and state;
 *						with --s3-endpoint, a presigned
 *						URL of an s3:// location
 *	GET /v1/jobs/J/windows/ID/compare	the ranks side by side: step,
 *						collective and compute times,
 *						their median and spread, the
 *						slowest ranks, the straggler,
 *						the operators that differ most
 *
 * What is in them is traces_list.c's and traces_compare.c's; this file only
 * writes it.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/http.h>
#include <jansson.h>

#include "http.h"
#include "model.h"
#include "names.h"
#include "tracesum.h"

/* One rank of the index as JSON. */
static json_t *
http_traces_entry(const struct coord *c, const struct traces_entry *e,
    time_t now)
{
	const struct trace_rec	*x = e->rec;
	json_t			*o;
	char			 url[8192];

	o = json_pack("{s:i}", "rank", (int)e->rank);
	if (o == NULL)
		return (NULL);
	if (x == NULL) {
		json_object_set_new(o, "node", e->node != NULL &&
		    e->node[0] != '\0' ? json_string(e->node) : json_null());
		json_object_set_new(o, "state", json_string("pending"));
		return (o);
	}
	json_object_set_new(o, "node", x->node[0] != '\0' ?
	    json_string(x->node) : json_null());
	json_object_set_new(o, "state", json_string(names_event_kind(x->kind)));
	if (x->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED) {
		json_object_set_new(o, "location", json_string(x->where));
		json_object_set_new(o, "size", json_integer((json_int_t)
		    x->size));
		json_object_set_new(o, "sha256", json_string(x->sha256));
		if (presign_url(&c->presign, x->where, now, url,
		    sizeof(url)) == 0) {
			json_object_set_new(o, "url", json_string(url));
			json_object_set_new(o, "url_expires", summary_time(
			    ((int64_t)now + c->presign.ttl_s) * 1000000000LL));
		}
	} else
		json_object_set_new(o, "error", json_string(x->where));
	json_object_set_new(o, "time", summary_time(x->time_ns));
	return (o);
}

/* GET /v1/jobs/J/windows/ID/traces: the window's traces, by rank. */
void
http_get_traces(struct coord *c, struct evhttp_request *req,
    const char *name, const char *idstr)
{
	struct traces_query	 q;
	struct traces_list	 l;
	struct refusal		 ref;
	json_t			*body, *arr;
	size_t			 i;
	time_t			 now = time(NULL);

	q.job = name;
	if (http_path_id(c, req, idstr, "window", &q.window) == -1)
		return;
	if (traces_list(c, &q, &l, &ref) == -1) {
		http_refused(c, req, &ref);
		return;
	}
	arr = json_array();
	for (i = 0; i < l.n; i++)
		json_array_append_new(arr, http_traces_entry(c, &l.entries[i],
		    now));
	body = json_pack("{s:s,s:I,s:b,s:{s:I,s:I,s:I},s:o}", "job", name,
	    "window", (json_int_t)q.window, "collect", !l.no_collect,
	    "counts", "collected",
	    (json_int_t)l.collected, "collect_failed", (json_int_t)l.failed,
	    "pending", (json_int_t)l.pending, "traces", arr);
	traces_list_free(&l);
	http_reply(c, req, 200, body);
}

/* A rank's offset from the window's median, in percent (0 without one). */
static double
http_compare_pct(int64_t us, int64_t median)
{
	return (median > 0 ? (double)(us - median) * 100.0 / (double)median :
	    0.0);
}

/* A rank's time as JSON: null when not known (-1). */
static json_t *
http_compare_us(int64_t us)
{
	return (us >= 0 ? json_integer((json_int_t)us) : json_null());
}

/* One rank of the comparison as JSON; median and compute_median the
 * window's. */
static json_t *
http_compare_rank(const struct compare_rank *r, int64_t median,
    int64_t compute_median)
{
	json_t		*o, *steps, *st;
	uint32_t	 i;

	o = json_pack("{s:i,s:s?,s:I,s:I,s:I,s:f}", "rank", (int)r->rank,
	    "node", r->node != NULL && r->node[0] != '\0' ? r->node : NULL,
	    "steps_read", (json_int_t)r->nsteps, "median_us",
	    (json_int_t)r->median_us, "offset_us", (json_int_t)(r->median_us >=
	    0 && median >= 0 ? r->median_us - median : 0), "offset_pct",
	    r->median_us >= 0 ? http_compare_pct(r->median_us, median) : 0.0);
	if (o == NULL)
		return (NULL);
	json_object_set_new(o, "comm_us", http_compare_us(r->comm_us));
	json_object_set_new(o, "compute_us", http_compare_us(r->compute_us));
	if (r->compute_us >= 0 && compute_median >= 0) {
		json_object_set_new(o, "compute_offset_us", json_integer(
		    (json_int_t)(r->compute_us - compute_median)));
		json_object_set_new(o, "compute_offset_pct", json_real(
		    http_compare_pct(r->compute_us, compute_median)));
	}
	if (r->comm_op[0] != '\0')
		json_object_set_new(o, "comm_op", json_string(r->comm_op));
	if (r->sum == NULL)
		return (o);
	steps = json_array();
	for (i = 0; i < r->sum->nsteps; i++) {
		st = json_pack("{s:I,s:I}", "step", (json_int_t)
		    r->sum->steps[i].step, "dur_us", (json_int_t)
		    r->sum->steps[i].dur_us);
		if (st != NULL && r->sum->steps[i].comm_us >= 0)
			json_object_set_new(st, "comm_us", json_integer(
			    (json_int_t)r->sum->steps[i].comm_us));
		json_array_append_new(steps, st);
	}
	json_object_set_new(o, "steps", steps);
	json_object_set_new(o, "format", json_string(r->sum->format));
	if (r->sum->error[0] != '\0')
		json_object_set_new(o, "error", json_string(r->sum->error));
	return (o);
}

/* us as milliseconds for people: "510 ms", "12.3 ms", "0.84 ms". */
static const char *
http_compare_ms(char *buf, size_t len, int64_t us)
{
	double	 ms = (double)us / 1000.0;

	snprintf(buf, len, ms >= 10.0 ? "%.0f ms" : ms >= 1.0 ? "%.1f ms" :
	    "%.2f ms", ms);
	return (buf);
}

/* The straggler of tc (traces_compare()) as JSON, or null. */
static json_t *
http_compare_straggler(const struct traces_compare *tc)
{
	const struct compare_straggler	*st = &tc->straggler;
	json_t				*o;
	char				 says[512], why[256];
	char				 a[32], b[32];

	if (st->by == COMPARE_BY_NONE)
		return (json_null());
	if (st->by == COMPARE_BY_COMPUTE) {
		snprintf(says, sizeof(says), "rank %d: compute %s vs median "
		    "%s; the others wait for it in %s", (int)st->r.rank,
		    http_compare_ms(a, sizeof(a), st->r.compute_us),
		    http_compare_ms(b, sizeof(b), tc->compute_median_us),
		    st->waited_in != NULL ? st->waited_in : "collectives");
		snprintf(why, sizeof(why), "step times agree within %.1f%%, "
		    "time in collectives differs: %s to %s a step",
		    http_compare_pct(tc->max_us, tc->median_us) -
		    http_compare_pct(tc->min_us, tc->median_us),
		    http_compare_ms(a, sizeof(a), tc->comm_min_us),
		    http_compare_ms(b, sizeof(b), tc->comm_max_us));
	} else {
		snprintf(says, sizeof(says), "rank %d: step %s vs median %s",
		    (int)st->r.rank, http_compare_ms(a, sizeof(a),
		    st->r.median_us), http_compare_ms(b, sizeof(b),
		    tc->median_us));
		snprintf(why, sizeof(why), "step times differ by %.1f%%",
		    http_compare_pct(tc->max_us, tc->median_us) -
		    http_compare_pct(tc->min_us, tc->median_us));
	}
	o = json_pack("{s:i,s:s?,s:s,s:I,s:I}", "rank", (int)st->r.rank,
	    "node", st->r.node != NULL && st->r.node[0] != '\0' ? st->r.node :
	    NULL, "by", st->by == COMPARE_BY_COMPUTE ? "compute" : "step",
	    "step_us", (json_int_t)st->r.median_us, "median_step_us",
	    (json_int_t)tc->median_us);
	if (o == NULL)
		return (json_null());
	json_object_set_new(o, "compute_us", http_compare_us(st->r.compute_us));
	json_object_set_new(o, "median_compute_us", http_compare_us(
	    tc->ncomm > 0 ? tc->compute_median_us : -1));
	json_object_set_new(o, "comm_us", http_compare_us(st->r.comm_us));
	json_object_set_new(o, "median_comm_us", http_compare_us(
	    tc->ncomm > 0 ? tc->comm_median_us : -1));
	json_object_set_new(o, "waited_in", st->waited_in != NULL ?
	    json_string(st->waited_in) : json_null());
	json_object_set_new(o, "says", json_string(says));
	json_object_set_new(o, "why", json_string(why));
	return (o);
}

/* The spread of n ranks' medians as JSON, or null for none. */
static json_t *
http_compare_spread(size_t n, int64_t median, int64_t min, int64_t max)
{
	if (n == 0)
		return (json_null());
	return (json_pack("{s:I,s:I,s:I,s:I,s:f}", "median_us",
	    (json_int_t)median, "min_us", (json_int_t)min, "max_us",
	    (json_int_t)max, "spread_us", (json_int_t)(max - min),
	    "spread_pct", http_compare_pct(max, median) -
	    http_compare_pct(min, median)));
}

/* GET /v1/jobs/J/windows/ID/compare: the ranks of the window compared. */
void
http_get_compare(struct coord *c, struct evhttp_request *req,
    const char *name, const char *idstr)
{
	struct traces_query	 q;
	struct traces_compare	 tc;
	struct refusal		 ref;
	json_t			*body, *ranks, *slow, *slowc, *ops, *step;
	int64_t			 cmed;
	size_t			 i;

	q.job = name;
	if (http_path_id(c, req, idstr, "window", &q.window) == -1)
		return;
	if (traces_compare(c, &q, &tc, &ref) == -1) {
		http_refused(c, req, &ref);
		return;
	}
	cmed = tc.ncomm > 0 ? tc.compute_median_us : -1;
	ranks = json_array();
	for (i = 0; i < tc.n && i < COMPARE_RANKS_SHOWN; i++)
		json_array_append_new(ranks, http_compare_rank(&tc.ranks[i],
		    tc.median_us, cmed));
	slow = json_array();
	for (i = 0; i < tc.nslowest; i++)
		json_array_append_new(slow, http_compare_rank(&tc.slowest[i],
		    tc.median_us, cmed));
	slowc = json_array();
	for (i = 0; i < tc.nslowest_compute; i++)
		json_array_append_new(slowc, http_compare_rank(
		    &tc.slowest_compute[i], tc.median_us, cmed));
	ops = json_array();
	for (i = 0; i < tc.nops; i++)
		json_array_append_new(ops, json_pack("{s:s,s:I,s:I,s:i,s:I,"
		    "s:i,s:I,s:I}", "name", tc.ops[i].name, "ranks",
		    (json_int_t)tc.ops[i].nranks, "max_us",
		    (json_int_t)tc.ops[i].max_us, "max_rank",
		    (int)tc.ops[i].max_rank, "min_us",
		    (json_int_t)tc.ops[i].min_us, "min_rank",
		    (int)tc.ops[i].min_rank, "mean_us",
		    (json_int_t)tc.ops[i].mean_us, "diff_us",
		    (json_int_t)(tc.ops[i].max_us - tc.ops[i].min_us)));
	step = http_compare_spread(tc.compared, tc.median_us, tc.min_us,
	    tc.max_us);
	body = json_pack("{s:s,s:I,s:{s:I,s:I,s:I,s:I,s:I,s:I},s:o,s:o,s:o,"
	    "s:b,s:o,s:o,s:o,s:o,s:o,s:b}", "job", name, "window",
	    (json_int_t)q.window, "counts", "compared", (json_int_t)tc.compared,
	    "with_comm", (json_int_t)tc.ncomm, "collected",
	    (json_int_t)tc.collected, "collect_failed", (json_int_t)tc.failed,
	    "pending", (json_int_t)tc.pending, "unread", (json_int_t)tc.unread,
	    "step", step, "comm", http_compare_spread(tc.ncomm,
	    tc.comm_median_us, tc.comm_min_us, tc.comm_max_us), "compute",
	    http_compare_spread(tc.ncomm, tc.compute_median_us,
	    tc.compute_min_us, tc.compute_max_us), "synchronous",
	    tc.synchronous, "straggler", http_compare_straggler(&tc),
	    "slowest", slow, "slowest_compute", slowc, "operators", ops,
	    "ranks", ranks, "ranks_cut", tc.n > COMPARE_RANKS_SHOWN);
	traces_compare_free(&tc);
	http_reply(c, req, 200, body);
}
