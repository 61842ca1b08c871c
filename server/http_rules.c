/*
 * The admin API's stragglers and rules of a job (docs/admin-api.md):
 *
 *	GET /v1/jobs/J/stragglers	the job's stragglers, all kept
 *	PUT /v1/jobs/J/stragglers	the job's own thresholds
 *	GET /v1/jobs/J/rules		the job's rules
 *	POST /v1/jobs/J/rules		adds a rule
 *	DELETE /v1/jobs/J/rules/ID	deletes one
 *
 * What a rule does is rules.c's; a change is stored before it is answered.
 */

#include <stdlib.h>
#include <string.h>

#include <event2/http.h>
#include <jansson.h>

#include "http.h"
#include "log.h"
#include "model.h"
#include "rules.h"

/* Answers the job's stragglers: thresholds, medians and every rank kept. */
static void
http_stragglers_reply(struct coord *c, struct evhttp_request *req,
    struct job *job)
{
	json_t	*body;

	body = straggler_json_all(c, job);
	json_object_set_new(body, "job", json_string(job->name));
	http_reply(c, req, 200, body);
}

/* GET /v1/jobs/J/stragglers: the job's stragglers. */
void
http_get_stragglers(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	struct job	*job;

	if ((job = schedule_job_find(c, name)) == NULL)
		http_error(c, req, 404, "job", "no job %s", name);
	else
		http_stragglers_reply(c, req, job);
}

/* GET /v1/jobs/J/rules: the job's rules and own thresholds. */
void
http_get_rules(struct coord *c, struct evhttp_request *req, const char *name)
{
	struct job	*job;

	if ((job = schedule_job_find(c, name)) == NULL)
		http_error(c, req, 404, "job", "no job %s", name);
	else
		http_reply(c, req, 200, rules_json(job));
}

/* Fills l with "as they are": a PUT sets only what it names. */
static void
http_rules_keep(struct rules_limits *l)
{
	l->lag = l->drop = l->busy = l->no_collect = RULES_LIMIT_KEEP;
	l->store_set = 0;
}

/*
 * Reads the thresholds a PUT stragglers body gives into l: lag_steps,
 * rate_drop_percent and busy_percent, null for the coordinator's (-1),
 * absent for as they are (RULES_LIMIT_KEEP).  Returns 0, or -1 with ref
 * filled.
 */
static int
http_thresholds_parse(json_t *body, struct rules_limits *l,
    struct refusal *ref)
{
	static const struct {
		const char	*key;
		long long	 max;
	} keys[] = {
		{ "lag_steps", COORD_WINDOW_STEP_MAX },
		{ "rate_drop_percent", 100 },
		{ "busy_percent", 1000 },
	};
	const char	*key;
	json_t		*v;
	int64_t		 val[3] = { RULES_LIMIT_KEEP, RULES_LIMIT_KEEP,
			    RULES_LIMIT_KEEP };
	size_t		 i;

	json_object_foreach(body, key, v) {
		for (i = 0; i < 3 && strcmp(key, keys[i].key) != 0; i++)
			;
		if (i == 3)
			return (refusal_set(ref, 400, key, "unknown field %s "
			    "(lag_steps, rate_drop_percent, busy_percent)",
			    key));
		if (json_is_null(v))
			val[i] = -1;
		else if (rule_int(body, key, 1, keys[i].max, &val[i],
		    ref) == -1)
			return (-1);
	}
	http_rules_keep(l);
	l->lag = val[0];
	l->drop = (int)val[1];
	l->busy = (int)val[2];
	return (0);
}

/* PUT /v1/jobs/J/stragglers: the job's own thresholds. */
void
http_put_stragglers(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	struct refusal		 ref;
	struct rules_limits	 l;
	struct job		*job;
	json_t			*body;

	if ((body = http_body(c, req)) == NULL)
		return;
	/* No job is said before what is wrong with the thresholds. */
	if (schedule_job_find(c, name) == NULL)
		http_error(c, req, 404, "job", "no job %s", name);
	else if (http_thresholds_parse(body, &l, &ref) == -1 ||
	    rules_set_thresholds(c, name, &l, &ref) == -1)
		http_refused(c, req, &ref);
	else if ((job = schedule_job_find(c, name)) != NULL)
		http_stragglers_reply(c, req, job);
	json_decref(body);
}

/* Reads PUT .../collect's "collect" into l.  Returns 0, or -1 with ref. */
static int
http_collect_parse(json_t *v, struct rules_limits *l, struct refusal *ref)
{
	if (!json_is_boolean(v))
		return (refusal_set(ref, 400, "collect", "collect must be true or "
		    "false"));
	l->no_collect = json_is_false(v);
	return (0);
}

/* Reads PUT .../trace-store's "store" into l: a string, or null for the
 * agents' own ("").  Returns 0, or -1 with ref. */
static int
http_store_parse(json_t *v, struct rules_limits *l, struct refusal *ref)
{
	l->store_set = 1;
	l->store[0] = '\0';
	if (json_is_string(v) && json_string_length(v) >= sizeof(l->store))
		return (refusal_set(ref, 400, "store", "store must be 1 to %d "
		    "bytes", RULES_STORE_MAX));
	if (!json_is_string(v) && !json_is_null(v))
		return (refusal_set(ref, 400, "store", "store must be a string "
		    "or null"));
	if (json_is_string(v) && (snprintf(l->store, sizeof(l->store), "%s",
	    json_string_value(v)) < 0 || strlen(l->store) !=
	    json_string_length(v)))
		return (refusal_set(ref, 400, "store", "store may not hold a "
		    "NUL"));
	if (json_is_string(v) && l->store[0] == '\0')
		return (refusal_set(ref, 400, "store", "store must be 1 to %d "
		    "bytes (null for the agents' own)", RULES_STORE_MAX));
	return (0);
}

/*
 * PUT /v1/jobs/J/collect and /v1/jobs/J/trace-store: a body of field alone
 * (another is refused), read by parse into the job's thresholds (the others
 * as they are) and set.  Answers the job and the field as given.
 */
static void
http_rules_put_one(struct coord *c, struct evhttp_request *req,
    const char *name, const char *field,
    int (*parse)(json_t *, struct rules_limits *, struct refusal *))
{
	struct refusal		 ref;
	struct rules_limits	 l;
	const char		*key;
	json_t			*body, *v;

	if ((body = http_body(c, req)) == NULL)
		return;
	json_object_foreach(body, key, v)
		if (strcmp(key, field) != 0) {
			http_error(c, req, 400, key, "unknown field %s", key);
			json_decref(body);
			return;
		}
	v = json_object_get(body, field);
	http_rules_keep(&l);
	if (parse(v, &l, &ref) == -1 ||
	    rules_set_thresholds(c, name, &l, &ref) == -1)
		http_refused(c, req, &ref);
	else
		http_reply(c, req, 200, json_pack("{s:s,s:O}", "job", name,
		    field, v));
	json_decref(body);
}

/* PUT /v1/jobs/J/collect: whether the job's windows are collected. */
void
http_put_collect(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	http_rules_put_one(c, req, name, "collect", http_collect_parse);
}

/* PUT /v1/jobs/J/trace-store: the job's own trace store, null the agents'. */
void
http_put_trace_store(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	http_rules_put_one(c, req, name, "store", http_store_parse);
}

/* POST /v1/jobs/J/rules: adds a rule. */
void
http_post_rule(struct coord *c, struct evhttp_request *req, const char *name)
{
	struct refusal		 ref;
	struct rule		 r;
	const struct rule	*added;
	json_t			*body, *out;

	if ((body = http_body(c, req)) == NULL)
		return;
	if (rule_parse(body, 0, &r, &ref) == -1 ||
	    rules_add(c, name, &r, &added, &ref) == -1)
		http_refused(c, req, &ref);
	else {
		out = rule_json(added, 0);
		json_object_set_new(out, "job", json_string(name));
		http_reply(c, req, 201, out);
	}
	json_decref(body);
}

/* DELETE /v1/jobs/J/rules/ID: deletes a rule. */
void
http_delete_rule(struct coord *c, struct evhttp_request *req,
    const char *name, const char *idstr)
{
	struct refusal	 ref;
	uint32_t	 id;

	if (http_path_id(c, req, idstr, "rule", &id) == -1)
		return;
	if (rules_delete(c, name, id, &ref) == -1) {
		http_refused(c, req, &ref);
		return;
	}
	http_reply(c, req, 200, json_pack("{s:s,s:I,s:b}", "job", name, "id",
	    (json_int_t)id, "deleted", 1));
}
