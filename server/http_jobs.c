/*
 * The admin API's handlers (docs/admin-api.md): jobs, their windows and
 * config, and nodes, in JSON with jansson.  A handler checks every field,
 * calls one operation of change.c and renders its answer: a change is
 * committed to the store before it is answered and pushed.
 */

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <jansson.h>

#include "http.h"
#include "link.h"
#include "log.h"
#include "model.h"
#include "names.h"
#include "clock.h"
#include "when.h"

#define HTTP_COUNT_MAX	1000000000LL		/* in_steps, steps, roundup */

/*
 * Reads an optional integer field within [min, max].  Returns 0 if absent,
 * 1 if read, -1 with ref filled (400).
 */
static int
http_int_field(json_t *obj, const char *key, long long min, long long max,
    int64_t *out, struct refusal *ref)
{
	json_t		*v = json_object_get(obj, key);
	json_int_t	 iv;

	if (v == NULL)
		return (0);
	if (!json_is_integer(v))
		return (refusal_set(ref, 400, key, "%s must be an integer",
		    key));
	iv = json_integer_value(v);
	if (iv < min || iv > max)
		return (refusal_set(ref, 400, key, "%s must be between %lld "
		    "and %lld", key, min, max));
	*out = iv;
	return (1);
}

/* Orders jobs or nodes by name (each begins with it). */
_Static_assert(offsetof(struct job, name) == 0 &&
    offsetof(struct node, name) == 0, "http_name_cmp() reads the name first");
static int
http_name_cmp(const void *a, const void *b)
{
	return (strcmp(*(const char * const *)a, *(const char * const *)b));
}

/* Returns the jobs (or with nodes set the nodes) in name order, *n of them,
 * or NULL out of memory (caller frees). */
static void **
http_by_name(struct coord *c, int nodes, size_t *n)
{
	struct job	*job;
	struct node	*node;
	void		**v;
	size_t		 i = 0;

	*n = 0;
	if (nodes)
		TAILQ_FOREACH(node, &c->nodes, entry)
			(*n)++;
	else
		TAILQ_FOREACH(job, &c->jobs, entry)
			(*n)++;
	if ((v = calloc(*n + 1, sizeof(*v))) == NULL)
		return (NULL);
	if (nodes)
		TAILQ_FOREACH(node, &c->nodes, entry)
			v[i++] = node;
	else
		TAILQ_FOREACH(job, &c->jobs, entry)
			v[i++] = job;
	qsort(v, *n, sizeof(*v), http_name_cmp);
	return (v);
}

/*
 * GET /v1/jobs: every job with its generation, windows and nodes counted,
 * in name order (a follower's copy holds them in another: docs/ha.md).
 */
void
http_get_jobs(struct coord *c, struct evhttp_request *req)
{
	json_t		*body, *list, *o;
	struct job	*job;
	struct window	*w;
	struct serving	 it;
	struct node_job	*nj;
	void		**v;
	size_t		 n, nodes, njobs, i;

	if ((v = http_by_name(c, 0, &njobs)) == NULL) {
		http_error(c, req, 500, NULL, "out of memory");
		return;
	}
	list = json_array();
	for (i = 0; i < njobs; i++) {
		job = v[i];
		n = 0;
		nodes = 0;
		TAILQ_FOREACH(w, &job->windows, entry)
			n++;
		memset(&it, 0, sizeof(it));
		while (schedule_serving_next(c, job, &it, &nj) != NULL)
			nodes++;
		o = json_object();
		json_object_set_new(o, "job", json_string(job->name));
		json_object_set_new(o, "generation",
		    json_integer((json_int_t)job->generation));
		json_object_set_new(o, "windows", json_integer((json_int_t)n));
		json_object_set_new(o, "pending_windows",
		    json_integer(schedule_pending_count(job)));
		json_object_set_new(o, "ranks",
		    json_integer((json_int_t)job->nranks));
		json_object_set_new(o, "nodes", json_integer((json_int_t)nodes));
		json_object_set_new(o, "max_step",
		    json_integer(schedule_job_max_step(c, job)));
		json_array_append_new(list, o);
	}
	free(v);
	body = json_object();
	json_object_set_new(body, "jobs", list);
	http_reply(c, req, 200, body);
}

/*
 * GET /v1/jobs/J: the job's summary, of a size that does not grow with its
 * ranks or nodes (summary.c); its ranks are listed by GET /v1/jobs/J/ranks.
 */
void
http_get_job(struct coord *c, struct evhttp_request *req, const char *name)
{
	struct job	*job;
	json_t		*body, *o, *cfg;

	if ((job = schedule_job_find(c, name)) == NULL) {
		http_error(c, req, 404, "job", "no job %s", name);
		return;
	}
	body = json_object();
	json_object_set_new(body, "job", json_string(job->name));
	json_object_set_new(body, "generation",
	    json_integer((json_int_t)job->generation));
	json_object_set_new(body, "revision",
	    json_integer((json_int_t)journal_revision(c)));
	cfg = job->config_json ? json_loads(job->config_json, 0, NULL) : NULL;
	json_object_set_new(body, "config", cfg ? cfg : json_null());
	o = json_object();
	json_object_set_new(o, "ranks_alive",
	    json_integer(schedule_job_ranks_alive(c, job)));
	json_object_set_new(o, "min_step",
	    json_integer(schedule_job_min_step(c, job)));
	json_object_set_new(o, "max_step",
	    json_integer(schedule_job_max_step(c, job)));
	json_object_set_new(body, "progress", o);
	if (summary_add(c, job, body) == -1) {
		json_decref(body);
		http_error(c, req, 500, NULL, "out of memory");
		return;
	}
	legacy_job_json(c, job->name, body);
	json_object_set_new(body, "stragglers", straggler_json(c, job));
	http_reply(c, req, 200, body);
}

/* GET /v1/jobs/J/config: the last config PUT, as stored. */
void
http_get_config(struct coord *c, struct evhttp_request *req, const char *name)
{
	struct job	*job;
	json_t		*cfg;

	if ((job = schedule_job_find(c, name)) == NULL) {
		http_error(c, req, 404, "job", "no job %s", name);
		return;
	}
	if (job->config_json == NULL ||
	    (cfg = json_loads(job->config_json, 0, NULL)) == NULL) {
		http_error(c, req, 404, "job", "job %s has no stored config",
		    name);
		return;
	}
	http_reply(c, req, 200, cfg);
}

static const char *http_window_keys[] = {
	"start_step", "stop_step", "in_steps", "steps", "roundup", "ranks",
	"select", "nodes", "one_per", "group_of", "options", "output_subdir",
	"force", "collect", "at", "duration_ms", "tolerance_ms", NULL
};

/*
 * Reads a time window's "at" (RFC 3339, or "+30s" from now on the
 * coordinator's clock), "duration_ms" and "tolerance_ms" into r, refusing
 * steps beside them; change.c judges the times.  Returns 0, or -1 with ref.
 */
static int
http_window_at(json_t *body, struct window_request *r, struct refusal *ref)
{
	static const char	*steps[] = { "start_step", "stop_step",
				    "in_steps", "steps", "roundup", "force" };
	json_t			*v = json_object_get(body, "at");
	const char		*why;
	size_t			 i;

	if (v == NULL) {
		if (json_object_get(body, "duration_ms") != NULL ||
		    json_object_get(body, "tolerance_ms") != NULL)
			return (refusal_set(ref, 400, "duration_ms",
			    "duration_ms and tolerance_ms go with at"));
		return (0);
	}
	if (!json_is_string(v))
		return (refusal_set(ref, 400, "at", "at must be a string: "
		    "RFC 3339 (\"2026-12-05T12:00:00Z\") or \"+30s\""));
	if (when_parse_at(json_string_value(v), clock_wall_ns(),
	    &r->at_unix_ns, &why) == -1)
		return (refusal_set(ref, 400, "at", "at %.64s: %s",
		    json_string_value(v), why));
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (json_object_get(body, steps[i]) != NULL)
			return (refusal_set(ref, 400, steps[i], "a time window "
			    "(at) takes no %s", steps[i]));
	r->has_at = 1;
	if ((r->has_duration = http_int_field(body, "duration_ms", 0,
	    INT64_MAX / 2, &r->duration_ms, ref)) == -1 ||
	    (r->has_tolerance = http_int_field(body, "tolerance_ms", 0,
	    INT64_MAX / 2, &r->tolerance_ms, ref)) == -1)
		return (-1);
	return (0);
}

/*
 * Reads what names a window's ranks by what they are (docs/labels.md):
 * "select", "nodes", "one_per" (strings) and "group_of" ({"rank": N, "vary":
 * "tp"}).  select.c judges their values.  Returns 0, or -1 with ref.
 */
static int
http_window_named(json_t *body, struct window_request *r,
    struct refusal *ref)
{
	static const char	*keys[] = { "select", "nodes", "one_per" };
	const char		**dst[] = { &r->select, &r->nodes, &r->one_per };
	json_t			*v, *rank, *vary;
	size_t			 i;

	for (i = 0; i < 3; i++) {
		if ((v = json_object_get(body, keys[i])) == NULL)
			continue;
		if (!json_is_string(v))
			return (refusal_set(ref, 400, keys[i], "%s must be a "
			    "string", keys[i]));
		*dst[i] = json_string_value(v);
	}
	if ((v = json_object_get(body, "group_of")) == NULL)
		return (0);
	rank = json_object_get(v, "rank");
	vary = json_object_get(v, "vary");
	if (!json_is_object(v) || json_object_size(v) != 2 ||
	    !json_is_integer(rank) || json_integer_value(rank) < 0 ||
	    json_integer_value(rank) > INT32_MAX || !json_is_string(vary))
		return (refusal_set(ref, 400, "group_of", "group_of is "
		    "{\"rank\": N, \"vary\": \"tp\"}: the ranks that share "
		    "every label of rank N but vary"));
	r->has_group = 1;
	r->group_rank = (int32_t)json_integer_value(rank);
	r->group_vary = json_string_value(vary);
	return (0);
}

/* Reads a window's steps (start_step or in_steps, stop_step or steps,
 * roundup, force) into r.  Returns 0, or -1 with ref. */
static int
http_window_steps(json_t *body, struct window_request *r, struct refusal *ref)
{
	json_t		*v;

	if ((r->has_start = http_int_field(body, "start_step", 0,
	    COORD_WINDOW_STEP_MAX, &r->start, ref)) == -1 ||
	    (r->has_stop = http_int_field(body, "stop_step", 0,
	    COORD_WINDOW_STEP_MAX, &r->stop, ref)) == -1 ||
	    (r->has_in = http_int_field(body, "in_steps", 0,
	    HTTP_COUNT_MAX, &r->in, ref)) == -1 ||
	    (r->has_steps = http_int_field(body, "steps", 1,
	    HTTP_COUNT_MAX, &r->steps, ref)) == -1 ||
	    (r->has_round = http_int_field(body, "roundup", 1,
	    HTTP_COUNT_MAX, &r->roundup, ref)) == -1)
		return (-1);
	if ((v = json_object_get(body, "force")) != NULL) {
		if (!json_is_boolean(v))
			return (refusal_set(ref, 400, "force", "force must "
			    "be true or false"));
		r->force = json_is_true(v);
	}
	if (r->has_start && r->has_in)
		return (refusal_set(ref, 400, "in_steps", "give start_step or "
		    "in_steps, not both"));
	if (!r->has_start && !r->has_in)
		return (refusal_set(ref, 400, "start_step", "start_step or "
		    "in_steps (or at, for a time window) is required"));
	if (r->has_stop && r->has_steps)
		return (refusal_set(ref, 400, "steps", "give stop_step or "
		    "steps, not both"));
	if (!r->has_stop && !r->has_steps)
		return (refusal_set(ref, 400, "stop_step", "stop_step or steps "
		    "is required"));
	if (r->has_in && r->in == 0 && !r->has_round)
		return (refusal_set(ref, 400, "in_steps", "in_steps must be at "
		    "least 1 unless roundup is given"));
	return (0);
}

/*
 * Checks a POST windows body and reads it into r: its steps, and its ranks
 * and output directory (pointing into the body) and options (into ov, which
 * the caller clears), for change_window_add() to make.  Needs no coordinator,
 * so that it can be fuzzed alone.  Returns 0, or -1 with ref saying what to
 * answer.
 */
int
http_window_parse(const void *jv, struct window_request *r,
    struct options_over *ov, struct refusal *ref)
{
	json_t		*body = (json_t *)jv, *v;
	const char	*key, *field, *why;
	int		 i;

	memset(r, 0, sizeof(*r));
	options_over_init(ov);
	json_object_foreach(body, key, v) {
		for (i = 0; http_window_keys[i] != NULL; i++)
			if (strcmp(key, http_window_keys[i]) == 0)
				break;
		if (http_window_keys[i] == NULL)
			return (refusal_set(ref, 400, key, "unknown field %s "
			    "(profiler options go in \"options\")", key));
	}
	if (http_window_at(body, r, ref) == -1)
		return (-1);
	if (!r->has_at && http_window_steps(body, r, ref) == -1)
		return (-1);
	if ((v = json_object_get(body, "ranks")) != NULL) {
		if (!json_is_string(v))
			return (refusal_set(ref, 400, "ranks", "ranks must be "
			    "a string such as \"0-7,16\""));
		r->ranks = json_string_value(v);
	}
	if (http_window_named(body, r, ref) == -1)
		return (-1);
	if ((v = json_object_get(body, "output_subdir")) != NULL) {
		if (!json_is_string(v))
			return (refusal_set(ref, 400, "output_subdir",
			    "output_subdir must be a string"));
		r->output_subdir = json_string_value(v);
	}
	if ((v = json_object_get(body, "collect")) != NULL) {
		if (!json_is_boolean(v))
			return (refusal_set(ref, 400, "collect", "collect must "
			    "be true or false"));
		r->no_collect = json_is_false(v);
	}
	if ((v = json_object_get(body, "options")) != NULL) {
		if (options_over_parse(v, ov, &field, &why) == -1)
			return (refusal_options(ref, field, why));
		r->options = ov;
	}
	return (0);
}

/* POST /v1/jobs/J/windows: adds a window. */
void
http_post_window(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	json_t			*body, *reply;
	struct job		*job;
	struct window		*w;
	struct window_request	 r;
	struct options_over	 ov;
	struct refusal		 ref;

	if ((body = http_body(c, req)) == NULL)
		return;
	if (http_window_parse(body, &r, &ov, &ref) == -1 ||
	    change_window_add(c, name, &r, &w, &job, &ref) == -1) {
		http_refused(c, req, &ref);
		goto out;
	}
	reply = summary_window_status(job, w, NULL);
	if (w->start_unix_ns != 0)
		json_object_set_new(reply, "clock_warnings",
		    summary_clock_warnings(c, job, w));
	json_object_set_new(reply, "job", json_string(job->name));
	json_object_set_new(reply, "generation",
	    json_integer((json_int_t)job->generation));
	http_reply(c, req, 201, reply);
out:
	options_over_clear(&ov);
	json_decref(body);
}

/* DELETE /v1/jobs/J/windows/ID: cancels a window. */
void
http_delete_window(struct coord *c, struct evhttp_request *req,
    const char *name, const char *idstr)
{
	struct job	*job;
	struct refusal	 ref;
	json_t		*reply;
	uint32_t	 id;

	if (http_path_id(c, req, idstr, "window", &id) == -1)
		return;
	if (change_window_cancel(c, name, id, &job, &ref) == -1) {
		http_refused(c, req, &ref);
		return;
	}
	reply = json_object();
	json_object_set_new(reply, "id", json_integer((json_int_t)id));
	json_object_set_new(reply, "state", json_string("cancelled"));
	json_object_set_new(reply, "generation",
	    json_integer((json_int_t)job->generation));
	http_reply(c, req, 200, reply);
}


/*
 * Checks a PUT config body and reads it: its window's steps into *start and
 * *stop (-1: none) and its options over *defaults.  Needs no coordinator, so
 * that it can be fuzzed alone.  Returns 0, or -1 with ref saying what to answer.
 */
int
http_config_parse(const void *jv, int64_t *start, int64_t *stop,
    struct options *defaults, struct refusal *ref)
{
	json_t		*body = (json_t *)jv, *opts;
	const char	*field, *why;

	*start = *stop = -1;
	if (http_int_field(body, "start_step", -1, COORD_WINDOW_STEP_MAX, start,
	    ref) == -1 || http_int_field(body, "stop_step", -1, COORD_WINDOW_STEP_MAX,
	    stop, ref) == -1)
		return (-1);
	if (*start == 0)
		return (refusal_set(ref, 400, "start_step", "start_step must be "
		    "-1 (no window) or above 0"));
	if (*start > 0 && *stop < *start)
		return (refusal_set(ref, 400, "stop_step", "stop_step %" PRId64
		    " is before start_step %" PRId64, *stop, *start));
	opts = json_deep_copy(body);
	json_object_del(opts, "start_step");
	json_object_del(opts, "stop_step");
	if (options_parse(opts, defaults, &field, &why) == -1) {
		/* field may point into opts: keep a copy. */
		if (field != NULL) {
			snprintf(ref->fieldbuf, sizeof(ref->fieldbuf), "%s",
			    field);
			field = ref->fieldbuf;
		}
		refusal_set(ref, 400, field, "%s: %s", field ? field :
		    "options", why);
		json_decref(opts);
		return (-1);
	}
	json_decref(opts);
	return (0);
}

/* PUT /v1/jobs/J/config: sets the job's config and maybe a window. */
void
http_put_config(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	json_t			*body, *reply;
	struct job		*job;
	struct window		*w;
	struct options		 defaults;
	struct refusal		 ref;
	char			*text;
	int64_t			 start, stop;

	options_init(&defaults);
	if ((body = http_body(c, req)) == NULL)
		return;
	if (http_config_parse(body, &start, &stop, &defaults, &ref) == -1) {
		http_refused(c, req, &ref);
		goto out;
	}
	if ((text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER)) ==
	    NULL) {
		http_error(c, req, 500, NULL, "out of memory");
		goto out;
	}
	if (change_config_set(c, name, text, &defaults, start, stop, &job, &w,
	    &ref) == -1) {
		http_refused(c, req, &ref);
		goto out;
	}
	reply = json_object();
	json_object_set_new(reply, "job", json_string(job->name));
	json_object_set_new(reply, "generation",
	    json_integer((json_int_t)job->generation));
	if (w != NULL)
		json_object_set_new(reply, "window", summary_window_status(job, w, NULL));
	else
		json_object_set_new(reply, "window", json_null());
	http_reply(c, req, 200, reply);
out:
	options_clear(&defaults);
	json_decref(body);
}

/* GET /v1/nodes: every node, its state and the generations it applied, in
 * name order. */
void
http_get_nodes(struct coord *c, struct evhttp_request *req)
{
	json_t		*body, *list, *o, *jobs;
	struct node	*n, *worst = NULL;
	struct node_job	*nj;
	void		**v;
	size_t		 nn, i;

	if ((v = http_by_name(c, 1, &nn)) == NULL) {
		http_error(c, req, 500, NULL, "out of memory");
		return;
	}
	list = json_array();
	for (i = 0; i < nn; i++) {
		n = v[i];
		o = json_object();
		json_object_set_new(o, "node", json_string(n->name));
		json_object_set_new(o, "state",
		    json_string(link_node_state(n)));
		json_object_set_new(o, "address", n->address[0] ?
		    json_string(n->address) : json_null());
		json_object_set_new(o, "connected_since",
		    summary_time(n->connected_ns));
		json_object_set_new(o, "last_seen", summary_time(n->last_seen_ns));
		/* Whole ms, as a follower has them (nodeview.c). */
		json_object_set_new(o, "clock_offset_ms",
		    n->agent_offset_known ? json_integer(n->agent_offset_ns /
		    1000000) : json_null());
		if (n->agent_offset_known && (worst == NULL ||
		    llabs(n->agent_offset_ns / 1000000) >
		    llabs(worst->agent_offset_ns / 1000000)))
			worst = n;
		jobs = json_object();
		TAILQ_FOREACH(nj, &n->jobs, entry)
			json_object_set_new(jobs, nj->job,
			    json_integer((json_int_t)nj->applied));
		json_object_set_new(o, "jobs", jobs);
		json_array_append_new(list, o);
	}
	free(v);
	body = json_object();
	json_object_set_new(body, "nodes", list);
	/* The node whose clock is furthest from ours, as its agent says. */
	o = json_object();
	json_object_set_new(o, "node", worst != NULL ?
	    json_string(worst->name) : json_null());
	json_object_set_new(o, "offset_ms", worst != NULL ?
	    json_integer(worst->agent_offset_ns / 1000000) : json_null());
	json_object_set_new(body, "worst_clock_offset", o);
	http_reply(c, req, 200, body);
}
