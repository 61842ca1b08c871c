/*
 * The admin API's index of a window's traces (docs/admin-api.md):
 *
 *	GET /v1/jobs/J/windows/ID/traces	per rank: its archive's location,
 *						size, sha256, node and state;
 *						with --s3-endpoint, a presigned
 *						URL of an s3:// location
 *	GET /v1/jobs/J/windows/ID/compare	the ranks side by side: step
 *						times, their median and spread,
 *						the slowest ranks, the
 *						operators that differ most
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

/* One rank of the comparison as JSON. */
static json_t *
http_compare_rank(const struct compare_rank *r, int64_t median)
{
	json_t		*o, *steps;
	uint32_t	 i;

	o = json_pack("{s:i,s:s?,s:I,s:I,s:I,s:f}", "rank", (int)r->rank,
	    "node", r->node != NULL && r->node[0] != '\0' ? r->node : NULL,
	    "steps_read", (json_int_t)r->nsteps, "median_us",
	    (json_int_t)r->median_us, "offset_us", (json_int_t)(r->median_us >=
	    0 && median >= 0 ? r->median_us - median : 0), "offset_pct",
	    r->median_us >= 0 ? http_compare_pct(r->median_us, median) : 0.0);
	if (o == NULL || r->sum == NULL)
		return (o);
	steps = json_array();
	for (i = 0; i < r->sum->nsteps; i++)
		json_array_append_new(steps, json_pack("{s:I,s:I}", "step",
		    (json_int_t)r->sum->steps[i].step, "dur_us",
		    (json_int_t)r->sum->steps[i].dur_us));
	json_object_set_new(o, "steps", steps);
	json_object_set_new(o, "format", json_string(r->sum->format));
	if (r->sum->error[0] != '\0')
		json_object_set_new(o, "error", json_string(r->sum->error));
	return (o);
}

/* GET /v1/jobs/J/windows/ID/compare: the ranks of the window compared. */
void
http_get_compare(struct coord *c, struct evhttp_request *req,
    const char *name, const char *idstr)
{
	struct traces_query	 q;
	struct traces_compare	 tc;
	struct refusal		 ref;
	json_t			*body, *ranks, *slow, *ops, *step;
	size_t			 i;

	q.job = name;
	if (http_path_id(c, req, idstr, "window", &q.window) == -1)
		return;
	if (traces_compare(c, &q, &tc, &ref) == -1) {
		http_refused(c, req, &ref);
		return;
	}
	ranks = json_array();
	for (i = 0; i < tc.n && i < COMPARE_RANKS_SHOWN; i++)
		json_array_append_new(ranks, http_compare_rank(&tc.ranks[i],
		    tc.median_us));
	slow = json_array();
	for (i = 0; i < tc.nslowest; i++)
		json_array_append_new(slow, http_compare_rank(&tc.slowest[i],
		    tc.median_us));
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
	if (tc.compared > 0)
		step = json_pack("{s:I,s:I,s:I,s:I,s:f}", "median_us",
		    (json_int_t)tc.median_us, "min_us", (json_int_t)tc.min_us,
		    "max_us", (json_int_t)tc.max_us, "spread_us",
		    (json_int_t)(tc.max_us - tc.min_us), "spread_pct",
		    http_compare_pct(tc.max_us, tc.median_us) -
		    http_compare_pct(tc.min_us, tc.median_us));
	else
		step = json_null();
	body = json_pack("{s:s,s:I,s:{s:I,s:I,s:I,s:I,s:I},s:o,s:o,s:o,s:o,"
	    "s:b}", "job", name, "window", (json_int_t)q.window, "counts",
	    "compared", (json_int_t)tc.compared, "collected",
	    (json_int_t)tc.collected, "collect_failed", (json_int_t)tc.failed,
	    "pending", (json_int_t)tc.pending, "unread", (json_int_t)tc.unread,
	    "step", step, "slowest", slow, "operators", ops, "ranks", ranks,
	    "ranks_cut", tc.n > COMPARE_RANKS_SHOWN);
	traces_compare_free(&tc);
	http_reply(c, req, 200, body);
}
