/*
 * The admin API's index of a window's traces (docs/admin-api.md):
 *
 *	GET /v1/jobs/J/windows/ID/traces	per rank: its archive's location,
 *						size, sha256, node and state;
 *						with --s3-endpoint, a presigned
 *						URL of an s3:// location
 *
 * What is in it is traces.c's (traces_list()); this file only writes it.
 */

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/http.h>
#include <jansson.h>

#include "http.h"
#include "model.h"
#include "names.h"

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
