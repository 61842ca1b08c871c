/*
 * DELETE /v1/jobs/J (docs/admin-api.md): forgets a job, its windows, ranks
 * and events.  What forgetting does is change.c's (change_job_forget());
 * this reads the request.
 */

#include <string.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "http.h"
#include "model.h"

/*
 * Reads DELETE /v1/jobs/J's query into r: force=1 (or true) lets a job with
 * a window running go.  Returns 0, or -1 with ref saying what to answer.
 */
static int
http_forget_parse(struct evhttp_request *req, struct job_forget_request *r,
    struct refusal *ref)
{
	struct evkeyvalq	 q;
	struct evkeyval		*kv;
	int			 rc = 0;

	if (http_query(req, &q, ref) == -1)
		return (-1);
	TAILQ_FOREACH(kv, &q, next) {
		if (strcmp(kv->key, "force") != 0) {
			snprintf(ref->fieldbuf, sizeof(ref->fieldbuf), "%s",
			    kv->key);
			rc = refusal_set(ref, 400, ref->fieldbuf, "unknown "
			    "parameter (force is known)");
			break;
		}
		if (strcmp(kv->value, "1") == 0 ||
		    strcmp(kv->value, "true") == 0)
			r->force = 1;
		else if (strcmp(kv->value, "0") == 0 ||
		    strcmp(kv->value, "false") == 0)
			r->force = 0;
		else {
			rc = refusal_set(ref, 400, "force", "force is 1, "
			    "true, 0 or false");
			break;
		}
	}
	evhttp_clear_headers(&q);
	return (rc);
}

/* DELETE /v1/jobs/J: forgets the job. */
void
http_delete_job(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	struct job_forget_request	 r = { .job = name };
	struct refusal			 ref;
	json_t				*reply;

	if (http_forget_parse(req, &r, &ref) == -1 ||
	    change_job_forget(c, &r, &ref) == -1) {
		http_refused(c, req, &ref);
		return;
	}
	reply = json_object();
	json_object_set_new(reply, "job", json_string(name));
	json_object_set_new(reply, "state", json_string("forgotten"));
	json_object_set_new(reply, "generation",
	    json_integer((json_int_t)c->generation));
	http_reply(c, req, 200, reply);
}
