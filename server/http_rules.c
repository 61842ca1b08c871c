/*
 * The admin API's stragglers and rules of a job (docs/admin-api.md):
 *
 *	GET /v1/jobs/J/stragglers	the job's stragglers, all kept
 */

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <jansson.h>

#include "coord.h"
#include "log.h"

/* GET /v1/jobs/J/stragglers: the thresholds, medians and every rank kept. */
static void
http_get_stragglers(struct coord *c, struct evhttp_request *req,
    struct job *job)
{
	json_t	*body;

	body = straggler_json_all(c, job);
	json_object_set_new(body, "job", json_string(job->name));
	http_reply(c, req, 200, body);
}

/*
 * Routes /v1/jobs/J/stragglers and /v1/jobs/J/rules[/ID] (seg: the path's
 * n segments, the job id checked).
 */
void
http_rules_route(struct coord *c, struct evhttp_request *req, char **seg,
    int n)
{
	enum evhttp_cmd_type	 cmd = evhttp_request_get_command(req);
	struct job		*job;

	if (n != 4 || strcmp(seg[3], "stragglers") != 0) {
		http_error(c, req, 404, NULL, "no such endpoint");
		return;
	}
	if (cmd != EVHTTP_REQ_GET) {
		http_method_not_allowed(c, req, "GET");
		return;
	}
	if ((job = schedule_job_find(c, seg[2])) == NULL) {
		http_error(c, req, 404, "job", "no job %s", seg[2]);
		return;
	}
	http_get_stragglers(c, req, job);
}
