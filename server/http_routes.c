/*
 * The admin API's route table (docs/admin-api.md): method, path pattern,
 * role and handler of every endpoint, one resource file each; the two
 * answers of no resource (/healthz, /metrics) are here.  http.c routes
 * through the table it is given (http_listen()), knowing no handler.
 */

#include <stddef.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <jansson.h>

#include "http.h"
#include "leader.h"
#include "metrics.h"

/* GET /healthz: alive, and the role it plays. */
static void
http_routes_healthz(struct coord *c, struct evhttp_request *req)
{
	http_reply(c, req, 200, json_pack("{s:s,s:s}", "status", "ok",
	    "role", leader_role(c)));
}

/* GET /metrics: the counters, as Prometheus text. */
static void
http_routes_metrics(struct coord *c, struct evhttp_request *req)
{
	struct evbuffer	*buf;

	c->metrics.http_codes[200]++;
	if ((buf = evbuffer_new()) == NULL) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	metrics_render(c, buf);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4");
	http_send_reply(req, 200, "OK", buf);
	evbuffer_free(buf);
}

/* The routes, in the order a path's methods are listed in a 405's Allow. */
#define GET	EVHTTP_REQ_GET
#define PUT	EVHTTP_REQ_PUT
#define POST	EVHTTP_REQ_POST
#define DELETE	EVHTTP_REQ_DELETE
#define NONE	HTTP_ROLE_NONE
#define VIEWER	HTTP_ROLE_VIEWER
#define OPERATOR HTTP_ROLE_OPERATOR
/* HTTP_REPLICA: a follower serves the read from its copy (replica.c). */
const struct http_route http_routes[] = {
	{ GET, "/healthz", NONE, HTTP_LOCAL, NULL, .h0 = http_routes_healthz },
	/* It names every job: with tokens, the viewer's at least. */
	{ GET, "/metrics", VIEWER, HTTP_LOCAL, "missing or wrong bearer token: "
	    "/metrics names jobs, give a scraper the viewer token",
	    .h0 = http_routes_metrics },
	/* The page's files: a follower's page reads its own copy. */
	{ 0, "/ui", NONE, HTTP_REPLICA, NULL, .hpath = http_ui_route },
	{ 0, "/ui/*", NONE, HTTP_REPLICA, NULL, .hpath = http_ui_route },
	{ GET, "/v1/jobs", VIEWER, HTTP_REPLICA, NULL,
	    .h0 = http_get_jobs },
	{ GET, "/v1/nodes", VIEWER, HTTP_REPLICA, NULL,
	    .h0 = http_get_nodes },
	{ GET, "/v1/jobs/{job}", VIEWER, HTTP_REPLICA, NULL,
	    .h1 = http_get_job },
	{ DELETE, "/v1/jobs/{job}", OPERATOR, 0, NULL, .h1 = http_delete_job },
	{ GET, "/v1/jobs/{job}/ranks", VIEWER, HTTP_REPLICA, NULL,
	    .h1 = http_get_ranks },
	{ GET, "/v1/jobs/{job}/events", VIEWER, HTTP_REPLICA, NULL,
	    .h1 = http_get_events },
	{ GET, "/v1/jobs/{job}/config", VIEWER, HTTP_REPLICA, NULL,
	    .h1 = http_get_config },
	{ PUT, "/v1/jobs/{job}/config", OPERATOR, 0, NULL,
	    .h1 = http_put_config },
	{ POST, "/v1/jobs/{job}/windows", OPERATOR, 0, NULL,
	    .h1 = http_post_window },
	{ DELETE, "/v1/jobs/{job}/windows/{id}", OPERATOR, 0, NULL,
	    .h2 = http_delete_window },
	{ GET, "/v1/jobs/{job}/windows/{id}/traces", VIEWER, 0, NULL,
	    .h2 = http_get_traces },
	{ GET, "/v1/jobs/{job}/windows/{id}/compare", VIEWER, 0, NULL,
	    .h2 = http_get_compare },
	{ GET, "/v1/jobs/{job}/nodes", VIEWER, HTTP_REPLICA, NULL,
	    .h1 = http_get_job_nodes },
	{ GET, "/v1/jobs/{job}/stragglers", VIEWER, HTTP_REPLICA, NULL,
	    .h1 = http_get_stragglers },
	{ PUT, "/v1/jobs/{job}/stragglers", OPERATOR, 0, NULL,
	    .h1 = http_put_stragglers },
	{ PUT, "/v1/jobs/{job}/collect", OPERATOR, 0, NULL,
	    .h1 = http_put_collect },
	{ PUT, "/v1/jobs/{job}/trace-store", OPERATOR, 0, NULL,
	    .h1 = http_put_trace_store },
	{ GET, "/v1/jobs/{job}/rules", VIEWER, HTTP_REPLICA, NULL,
	    .h1 = http_get_rules },
	{ POST, "/v1/jobs/{job}/rules", OPERATOR, 0, NULL,
	    .h1 = http_post_rule },
	{ DELETE, "/v1/jobs/{job}/rules/{id}", OPERATOR, 0, NULL,
	    .h2 = http_delete_rule },
};
#undef GET
#undef PUT
#undef POST
#undef DELETE
#undef NONE
#undef VIEWER
#undef OPERATOR
const size_t http_routes_count = sizeof(http_routes) / sizeof(http_routes[0]);
