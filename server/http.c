/*
 * The admin API of docs/admin-api.md, with evhttp and jansson.  Every handler
 * checks every field before it changes anything; a change is committed to the
 * store before it is answered and before it is pushed.
 */

#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <jansson.h>

#include "coord.h"
#include "log.h"
#include "store.h"
#include "utf8.h"

#include <openssl/ssl.h>

#define HTTP_COUNT_MAX	1000000000LL		/* in_steps, steps, roundup */

static void	 http_conn_active(struct coord *, struct evhttp_connection *);
static struct bufferevent *http_tls_bev(struct event_base *, void *);
static void	 http_vformat(char *, size_t, const char *, va_list)
		    __attribute__((format(printf, 3, 0)));
static void	 http_error(struct coord *, struct evhttp_request *, int,
		    const char *, const char *, ...)
		    __attribute__((format(printf, 5, 6)));

/* Sends buf (JSON text) as the answer. */
static void
http_send_json(struct coord *c, struct evhttp_request *req, int code,
    struct evbuffer *buf)
{
	const char	*reason;

	if (code >= 100 && code < 600)
		c->metrics.http_codes[code]++;
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	switch (code) {
	case 200: reason = "OK"; break;
	case 201: reason = "Created"; break;
	case 400: reason = "Bad Request"; break;
	case 401: reason = "Unauthorized"; break;
	case 403: reason = "Forbidden"; break;
	case 404: reason = "Not Found"; break;
	case 405: reason = "Method Not Allowed"; break;
	case 409: reason = "Conflict"; break;
	case 413: reason = "Payload Too Large"; break;
	default: reason = "Error"; break;
	}
	evhttp_send_reply(req, code, reason, buf);
}

/* Sends body (consumed) as the answer. */
static void
http_reply(struct coord *c, struct evhttp_request *req, int code, json_t *body)
{
	struct evbuffer	*buf;
	char		*text;

	if ((buf = evbuffer_new()) == NULL) {
		json_decref(body);
		evhttp_send_error(req, 500, NULL);
		return;
	}
	text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(body);
	if (text != NULL) {
		evbuffer_add(buf, text, strlen(text));
		evbuffer_add(buf, "\n", 1);
		free(text);
	}
	http_send_json(c, req, code, buf);
	evbuffer_free(buf);
}

/*
 * Formats a message into buf.  One cut short must not end inside a UTF-8
 * character (a key of the body may be quoted in it): jansson refuses such a
 * string, and the answer would carry no "error".
 */
static void
http_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	if (vsnprintf(buf, len, fmt, ap) >= (int)len)
		utf8_cut_partial(buf);
}

static void
http_error(struct coord *c, struct evhttp_request *req, int code,
    const char *field, const char *fmt, ...)
{
	json_t	*body;
	char	 msg[512];
	va_list	 ap;

	va_start(ap, fmt);
	http_vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	body = json_object();
	json_object_set_new(body, "error", json_string(msg));
	if (field != NULL)
		json_object_set_new(body, "field", json_string(field));
	log_debug("%s: %d %s%s%s", __func__, code, msg, field ? ": " : "",
	    field ? field : "");
	http_reply(c, req, code, body);
}

static json_t *
http_time(int64_t ns)
{
	char	 buf[40];

	if (ns <= 0)
		return (json_null());
	coord_rfc3339(ns, buf, sizeof(buf));
	return (json_string(buf));
}

static json_t *
http_window_json(const struct job *job, const struct window *w)
{
	json_t	*o = json_object();

	json_object_set_new(o, "id", json_integer(w->id));
	json_object_set_new(o, "start_step", json_integer(w->start_step));
	json_object_set_new(o, "stop_step", json_integer(w->stop_step));
	json_object_set_new(o, "ranks", json_string(w->ranks));
	json_object_set_new(o, "options", options_to_json(&w->options));
	json_object_set_new(o, "output_subdir", json_string(w->output_subdir));
	json_object_set_new(o, "state",
	    json_string(schedule_window_state(job, w)));
	json_object_set_new(o, "created", http_time(w->created_ns));
	return (o);
}

/*
 * Reads the request body as a JSON object.  On failure answers the request
 * and returns NULL.
 */
static json_t *
http_body(struct coord *c, struct evhttp_request *req)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	size_t		 len = evbuffer_get_length(in);
	json_error_t	 err;
	json_t		*obj;

	if (len > COORD_HTTP_BODY_MAX) {
		http_error(c, req, 413, NULL, "body over 1 MiB");
		return (NULL);
	}
	if (len == 0) {
		http_error(c, req, 400, NULL, "empty body: a JSON object is "
		    "expected");
		return (NULL);
	}
	obj = json_loadb((const char *)evbuffer_pullup(in, (ev_ssize_t)len),
	    len, JSON_REJECT_DUPLICATES, &err);
	if (obj == NULL) {
		http_error(c, req, 400, NULL, "malformed JSON: %s (line %d, "
		    "column %d)", err.text, err.line, err.column);
		return (NULL);
	}
	if (!json_is_object(obj)) {
		json_decref(obj);
		http_error(c, req, 400, NULL, "the body must be a JSON object");
		return (NULL);
	}
	return (obj);
}

/* Answers the request with what ref says. */
static void
http_refused(struct coord *c, struct evhttp_request *req,
    const struct refusal *ref)
{
	http_error(c, req, ref->code, ref->field, "%s", ref->msg);
}

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
		return (change_refuse(ref, 400, key, "%s must be an integer",
		    key));
	iv = json_integer_value(v);
	if (iv < min || iv > max)
		return (change_refuse(ref, 400, key, "%s must be between %lld "
		    "and %lld", key, min, max));
	*out = iv;
	return (1);
}

static int
http_job_id(struct coord *c, struct evhttp_request *req, const char *id)
{
	const char	*why;

	if (!jobid_valid(id, &why)) {
		http_error(c, req, 400, "job", "%s", why);
		return (-1);
	}
	return (0);
}

static void
http_get_jobs(struct coord *c, struct evhttp_request *req)
{
	json_t		*body, *list, *o;
	struct job	*job;
	struct sub	*s;
	size_t		 n, nodes;

	list = json_array();
	TAILQ_FOREACH(job, &c->jobs, entry) {
		n = 0;
		nodes = 0;
		{
			struct window	*w;

			TAILQ_FOREACH(w, &job->windows, entry)
				n++;
		}
		TAILQ_FOREACH(s, &job->subs, job_entry)
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
	body = json_object();
	json_object_set_new(body, "jobs", list);
	http_reply(c, req, 200, body);
}

static const char *
http_rank_state(struct coord *c, const struct rank *r)
{
	struct node	*n;

	if (r->node[0] != '\0' && ((n = schedule_node_find(c, r->node)) ==
	    NULL || n->conn == NULL))
		return ("unknown");
	return (schedule_rank_state_name(r->state));
}

static json_t *
http_rank_json(struct coord *c, const struct rank *r)
{
	json_t	*o, *events, *e;
	size_t	 i;

	o = json_object();
	json_object_set_new(o, "rank", json_integer(r->rank));
	json_object_set_new(o, "node", r->node[0] ? json_string(r->node) :
	    json_null());
	json_object_set_new(o, "pid", json_integer(r->pid));
	json_object_set_new(o, "step", json_integer(r->step));
	json_object_set_new(o, "state", json_string(http_rank_state(c, r)));
	json_object_set_new(o, "window", r->window_id ?
	    json_integer(r->window_id) : json_null());
	json_object_set_new(o, "output_dir", r->output_dir ?
	    json_string(r->output_dir) : json_null());
	json_object_set_new(o, "last_event", r->last_event ?
	    json_string(schedule_event_kind_name(r->last_event)) :
	    json_null());
	json_object_set_new(o, "last_event_time", http_time(r->last_event_ns));
	if (r->error != NULL)
		json_object_set_new(o, "error", json_string(r->error));
	events = json_array();
	i = r->nevents > COORD_RANK_EVENTS_MAX ?
	    r->nevents - COORD_RANK_EVENTS_MAX : 0;
	for (; i < r->nevents; i++) {
		e = json_object();
		json_object_set_new(e, "kind",
		    json_string(schedule_event_kind_name(r->events[i].kind)));
		json_object_set_new(e, "window",
		    json_integer(r->events[i].window_id));
		json_object_set_new(e, "step", json_integer(r->events[i].step));
		json_object_set_new(e, "time", http_time(r->events[i].time_ns));
		json_array_append_new(events, e);
	}
	json_object_set_new(o, "events", events);
	return (o);
}

static int
http_rank_cmp(const void *a, const void *b)
{
	const struct rank	*x = *(struct rank *const *)a;
	const struct rank	*y = *(struct rank *const *)b;

	return (x->rank < y->rank ? -1 : x->rank > y->rank);
}

/*
 * Sends body with a "ranks" array added, written one rank at a time, so that
 * a job of many ranks never has its whole status as JSON objects in memory.
 */
static void
http_reply_ranks(struct coord *c, struct evhttp_request *req, json_t *body,
    struct job *job)
{
	struct evbuffer	*buf;
	struct rank	**sorted = NULL, *r;
	json_t		*o;
	char		*text;
	size_t		 i = 0, n;

	text = json_dumps(body, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(body);
	if (job->nranks > 0)
		sorted = calloc(job->nranks, sizeof(*sorted));
	if (text == NULL || (buf = evbuffer_new()) == NULL ||
	    (job->nranks > 0 && sorted == NULL)) {
		free(text);
		free(sorted);
		http_error(c, req, 500, NULL, "out of memory");
		return;
	}
	/* text is an object: replace its closing brace. */
	evbuffer_add(buf, text, strlen(text) - 1);
	free(text);
	evbuffer_add_printf(buf, ",\"ranks\":[");
	TAILQ_FOREACH(r, &job->ranks, entry)
		sorted[i++] = r;
	if (i > 1)
		qsort(sorted, i, sizeof(*sorted), http_rank_cmp);
	for (n = i, i = 0; i < n; i++) {
		o = http_rank_json(c, sorted[i]);
		if ((text = json_dumps(o, JSON_COMPACT |
		    JSON_PRESERVE_ORDER)) != NULL) {
			if (i > 0)
				evbuffer_add(buf, ",", 1);
			evbuffer_add(buf, text, strlen(text));
			free(text);
		}
		json_decref(o);
	}
	evbuffer_add_printf(buf, "]}\n");
	free(sorted);
	http_send_json(c, req, 200, buf);
	evbuffer_free(buf);
}

static void
http_get_job(struct coord *c, struct evhttp_request *req, const char *name)
{
	struct job	*job;
	struct window	*w;
	struct node	*n;
	struct node_job	*nj;
	json_t		*body, *arr, *o, *cfg;

	if ((job = schedule_job_find(c, name)) == NULL) {
		http_error(c, req, 404, "job", "no job %s", name);
		return;
	}
	body = json_object();
	json_object_set_new(body, "job", json_string(job->name));
	json_object_set_new(body, "generation",
	    json_integer((json_int_t)job->generation));
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
	arr = json_array();
	TAILQ_FOREACH(w, &job->windows, entry)
		json_array_append_new(arr, http_window_json(job, w));
	json_object_set_new(body, "windows", arr);
	arr = json_array();
	TAILQ_FOREACH(n, &c->nodes, entry) {
		if ((nj = schedule_node_job(n, job->name, 0)) == NULL)
			continue;
		o = json_object();
		json_object_set_new(o, "node", json_string(n->name));
		json_object_set_new(o, "state",
		    json_string(link_node_state(n)));
		json_object_set_new(o, "applied_generation",
		    json_integer((json_int_t)nj->applied));
		json_array_append_new(arr, o);
	}
	json_object_set_new(body, "nodes", arr);
	http_reply_ranks(c, req, body, job);
}

static void
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
	"options", "output_subdir", NULL
};

/*
 * Checks a POST windows body and reads it: the steps it asks for into r, the
 * ranks, output directory and options (over defaults, NULL for none) into a new
 * *wp (caller frees).  Needs no coordinator, so that it can be fuzzed alone.
 * Returns 0, or -1 with ref saying what to answer (*wp NULL).
 */
int
http_window_parse(const void *jv, const struct options *defaults,
    struct window_request *r, struct window **wp, struct refusal *ref)
{
	json_t		*body = (json_t *)jv, *v;
	struct window	*w = NULL;
	const char	*key, *why, *field;
	int		 i;

	*wp = NULL;
	memset(r, 0, sizeof(*r));
	json_object_foreach(body, key, v) {
		for (i = 0; http_window_keys[i] != NULL; i++)
			if (strcmp(key, http_window_keys[i]) == 0)
				break;
		if (http_window_keys[i] == NULL)
			return (change_refuse(ref, 400, key, "unknown field %s "
			    "(profiler options go in \"options\")", key));
	}
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
	if (r->has_start && r->has_in)
		return (change_refuse(ref, 400, "in_steps", "give start_step or "
		    "in_steps, not both"));
	if (!r->has_start && !r->has_in)
		return (change_refuse(ref, 400, "start_step", "start_step or "
		    "in_steps is required"));
	if (r->has_stop && r->has_steps)
		return (change_refuse(ref, 400, "steps", "give stop_step or "
		    "steps, not both"));
	if (!r->has_stop && !r->has_steps)
		return (change_refuse(ref, 400, "stop_step", "stop_step or steps "
		    "is required"));
	if (r->has_in && r->in == 0 && !r->has_round)
		return (change_refuse(ref, 400, "in_steps", "in_steps must be at "
		    "least 1 unless roundup is given"));
	if ((w = window_new()) == NULL)
		return (change_refuse(ref, 500, NULL, "out of memory"));
	if ((v = json_object_get(body, "ranks")) != NULL) {
		if (!json_is_string(v)) {
			change_refuse(ref, 400, "ranks", "ranks must be a "
			    "string such as \"0-7,16\"");
			goto fail;
		}
		if (strlen(json_string_value(v)) >= SEG_RANKS_MAX) {
			change_refuse(ref, 400, "ranks", "ranks longer than "
			    "%d bytes", SEG_RANKS_MAX - 1);
			goto fail;
		}
		if (ranks_parse(json_string_value(v), &w->rankset, &why) ==
		    -1) {
			change_refuse(ref, 400, "ranks", "%s", why);
			goto fail;
		}
		if (strcmp(json_string_value(v), "all") != 0)
			snprintf(w->ranks, sizeof(w->ranks), "%s",
			    json_string_value(v));
	}
	if ((v = json_object_get(body, "output_subdir")) != NULL) {
		if (!json_is_string(v)) {
			change_refuse(ref, 400, "output_subdir",
			    "output_subdir must be a string");
			goto fail;
		}
		if (!subdir_valid(json_string_value(v), &why)) {
			change_refuse(ref, 400, "output_subdir", "%s", why);
			goto fail;
		}
		snprintf(w->output_subdir, sizeof(w->output_subdir), "%s",
		    json_string_value(v));
	}
	options_clear(&w->options);
	if (defaults != NULL && options_copy(&w->options, defaults) == -1) {
		change_refuse(ref, 500, NULL, "out of memory");
		goto fail;
	}
	if ((v = json_object_get(body, "options")) != NULL &&
	    options_parse(v, &w->options, &field, &why) == -1) {
		if (field != NULL && strcmp(field, "options") != 0) {
			snprintf(ref->fieldbuf, sizeof(ref->fieldbuf),
			    "options.%s", field);
			field = ref->fieldbuf;
		} else
			field = "options";
		change_refuse(ref, 400, field, "%s: %s", field, why);
		goto fail;
	}
	*wp = w;
	return (0);
fail:
	window_free(w);
	return (-1);
}

/* POST /v1/jobs/J/windows: adds a window. */
static void
http_post_window(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	json_t			*body, *reply;
	struct job		*job;
	struct window		*w;
	struct window_request	 r;
	struct refusal		 ref;

	if ((body = http_body(c, req)) == NULL)
		return;
	job = schedule_job_find(c, name);
	if (http_window_parse(body, job != NULL ? &job->defaults : NULL, &r,
	    &w, &ref) == -1 ||
	    change_window_add(c, name, &r, w, &job, &ref) == -1) {
		http_refused(c, req, &ref);
		json_decref(body);
		return;
	}
	reply = http_window_json(job, w);
	json_object_set_new(reply, "job", json_string(job->name));
	json_object_set_new(reply, "generation",
	    json_integer((json_int_t)job->generation));
	http_reply(c, req, 201, reply);
	json_decref(body);
}

/* DELETE /v1/jobs/J/windows/ID: cancels a window. */
static void
http_delete_window(struct coord *c, struct evhttp_request *req,
    const char *name, const char *idstr)
{
	struct job	*job;
	struct refusal	 ref;
	json_t		*reply;
	char		*end;
	unsigned long	 id;

	errno = 0;
	id = strtoul(idstr, &end, 10);
	if (*idstr < '0' || *idstr > '9' || *end != '\0' || errno != 0 ||
	    id == 0 || id > UINT32_MAX) {
		http_error(c, req, 400, "id", "window id must be a positive "
		    "integer");
		return;
	}
	if (change_window_cancel(c, name, (uint32_t)id, &job, &ref) == -1) {
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
		return (change_refuse(ref, 400, "start_step", "start_step must be "
		    "-1 (no window) or above 0"));
	if (*start > 0 && *stop < *start)
		return (change_refuse(ref, 400, "stop_step", "stop_step %" PRId64
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
		change_refuse(ref, 400, field, "%s: %s", field ? field :
		    "options", why);
		json_decref(opts);
		return (-1);
	}
	json_decref(opts);
	return (0);
}

/* PUT /v1/jobs/J/config: sets the job's config and maybe a window. */
static void
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
		json_object_set_new(reply, "window", http_window_json(job, w));
	else
		json_object_set_new(reply, "window", json_null());
	http_reply(c, req, 200, reply);
out:
	options_clear(&defaults);
	json_decref(body);
}

static void
http_get_nodes(struct coord *c, struct evhttp_request *req)
{
	json_t		*body, *list, *o, *jobs;
	struct node	*n;
	struct node_job	*nj;

	list = json_array();
	TAILQ_FOREACH(n, &c->nodes, entry) {
		o = json_object();
		json_object_set_new(o, "node", json_string(n->name));
		json_object_set_new(o, "state",
		    json_string(link_node_state(n)));
		json_object_set_new(o, "address", n->address[0] ?
		    json_string(n->address) : json_null());
		json_object_set_new(o, "connected_since",
		    http_time(n->connected_ns));
		json_object_set_new(o, "last_seen", http_time(n->last_seen_ns));
		jobs = json_object();
		TAILQ_FOREACH(nj, &n->jobs, entry)
			json_object_set_new(jobs, nj->job,
			    json_integer((json_int_t)nj->applied));
		json_object_set_new(o, "jobs", jobs);
		json_array_append_new(list, o);
	}
	body = json_object();
	json_object_set_new(body, "nodes", list);
	http_reply(c, req, 200, body);
}

/*
 * Checks the bearer token against the roles (docs/admin-api.md): with no
 * token configured every request passes; otherwise a request needs a known
 * token, and anything but GET and HEAD the operator token.  Both are always
 * compared, in constant time.  Returns 0 (allowed), 401 or 403.
 */
static int
http_authorized(struct coord *c, struct evhttp_request *req)
{
	enum evhttp_cmd_type	 cmd = evhttp_request_get_command(req);
	const char		*h, *t;
	int			 operator = 0, viewer = 0;

	if (c->conf.admin_token == NULL && c->conf.viewer_token == NULL)
		return (0);
	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0)
		return (401);
	for (t = h + 7; *t == ' '; t++)
		;
	if (c->conf.admin_token != NULL)
		operator = coord_token_equal(t, c->conf.admin_token);
	if (c->conf.viewer_token != NULL)
		viewer = coord_token_equal(t, c->conf.viewer_token);
	if (operator)
		return (0);
	if (!viewer)
		return (401);
	return (cmd == EVHTTP_REQ_GET || cmd == EVHTTP_REQ_HEAD ? 0 : 403);
}

/* Splits path into at most n segments after the leading "/"; returns count. */
static int
http_split(char *path, char **seg, int n)
{
	int	 count = 0;
	char	*p = path;

	if (*p != '/')
		return (-1);
	p++;
	while (*p != '\0') {
		if (count == n)
			return (-1);
		seg[count++] = p;
		p = strchr(p, '/');
		if (p == NULL)
			break;
		*p++ = '\0';
		if (*p == '\0')
			break;	/* a trailing slash */
	}
	return (count);
}

/*
 * Answers a method the path does not take: 405 with the Allow header (allow:
 * the methods it takes) and a JSON body.
 */
static void
http_method_not_allowed(struct coord *c, struct evhttp_request *req,
    const char *allow)
{
	evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
	    allow);
	http_error(c, req, 405, NULL, "method not allowed here (allowed: %s)",
	    allow);
}

/*
 * Admin connections are bounded: at most --http-max-conns open (beyond it the
 * least recently active idle one is closed to make room, so that a new client
 * such as a health check is served while others hold connections open), and
 * each request must arrive whole within --http-timeout-ms of the accept or of
 * the connection's previous request (evhttp's own timeout is per read, which
 * one byte at a time defeats).  evhttp 2.1 has no hook per connection but the
 * bufferevent callback: a connection is tracked from there and taken in
 * (adopted) right after evhttp has set it up.
 */
struct http_conn {
	struct coord			*coord;
	struct bufferevent		*bev;
	struct evhttp_connection	*evcon;		/* NULL until adopted */
	uint64_t			 since_ms;	/* accept, last request */
	TAILQ_ENTRY(http_conn)		 entry;
};

/* Creates the bufferevent of a new admin connection (TLS with
 * --http-tls-cert) and tracks it. */
static struct bufferevent *
http_new_bev(struct event_base *base, void *arg)
{
	struct coord		*c = arg;
	struct bufferevent	*bev;
	struct http_conn	*hc;

	if (c->http_tls.ctx != NULL)
		bev = http_tls_bev(base, arg);
	else
		bev = bufferevent_socket_new(base, -1, 0);
	if (bev == NULL)
		return (NULL);
	if ((hc = calloc(1, sizeof(*hc))) == NULL) {
		bufferevent_free(bev);
		return (NULL);
	}
	hc->coord = c;
	hc->bev = bev;
	hc->since_ms = coord_mono_ms();
	TAILQ_INSERT_TAIL(&c->http_pending, hc, entry);
	c->nhttp_conns++;
	event_active(c->http_adopt, EV_TIMEOUT, 1);
	return (bev);
}

static void
http_conn_closed(struct evhttp_connection *evcon, void *arg)
{
	struct http_conn	*hc = arg;
	struct coord		*c = hc->coord;

	evhttp_connection_set_closecb(evcon, NULL, NULL);
	TAILQ_REMOVE(&c->http_conns, hc, entry);
	c->nhttp_conns--;
	free(hc);
	if (c->http_paused && c->http_listener != NULL &&
	    c->nhttp_conns <= c->conf.http_max_conns) {
		c->http_paused = 0;
		evconnlistener_enable(c->http_listener);
	}
}

/* Returns 1 if the connection is not writing an answer. */
static int
http_conn_idle(const struct http_conn *hc)
{
	return (evbuffer_get_length(bufferevent_get_output(hc->bev)) == 0);
}

/*
 * Takes the new connections in (evhttp has set their callbacks, whose
 * argument is the connection), then closes the least recently active idle
 * ones over the cap; if all are busy, stops accepting until one closes.
 */
static void
http_adopt_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord		*c = arg;
	struct http_conn	*hc, *next;
	void			*evcon;

	(void)fd;
	(void)what;
	while ((hc = TAILQ_FIRST(&c->http_pending)) != NULL) {
		TAILQ_REMOVE(&c->http_pending, hc, entry);
		bufferevent_getcb(hc->bev, NULL, NULL, NULL, &evcon);
		if (evcon == NULL) {		/* evhttp did not take it */
			bufferevent_free(hc->bev);
			c->nhttp_conns--;
			free(hc);
			continue;
		}
		hc->evcon = evcon;
		evhttp_connection_set_closecb(hc->evcon, http_conn_closed, hc);
		TAILQ_INSERT_TAIL(&c->http_conns, hc, entry);
	}
	for (hc = TAILQ_FIRST(&c->http_conns); hc != NULL &&
	    c->nhttp_conns > c->conf.http_max_conns; hc = next) {
		next = TAILQ_NEXT(hc, entry);
		if (!http_conn_idle(hc))
			continue;
		c->metrics.http_evicted++;
		log_debug("%s: %zu admin connections, over %zu: closing the "
		    "least recently active", __func__, c->nhttp_conns,
		    c->conf.http_max_conns);
		evhttp_connection_free(hc->evcon);	/* http_conn_closed() */
	}
	if (c->nhttp_conns > c->conf.http_max_conns && !c->http_paused) {
		log_warnx("%s: %zu admin connections, all busy: not accepting "
		    "until one closes", __func__, c->nhttp_conns);
		c->http_paused = 1;
		evconnlistener_disable(c->http_listener);
	}
}

/* Closes the connections whose request did not arrive whole in time. */
static void
http_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct coord		*c = arg;
	struct http_conn	*hc, *next;
	uint64_t		 now = coord_mono_ms();

	(void)fd;
	(void)what;
	for (hc = TAILQ_FIRST(&c->http_conns); hc != NULL; hc = next) {
		next = TAILQ_NEXT(hc, entry);
		if (now - hc->since_ms < c->conf.http_timeout_ms)
			break;		/* oldest first: the rest is younger */
		if (!http_conn_idle(hc))
			continue;	/* evhttp's write timeout bounds it */
		c->metrics.http_timeouts++;
		log_debug("%s: admin connection without a whole request in "
		    "%u ms: closed", __func__, c->conf.http_timeout_ms);
		evhttp_connection_free(hc->evcon);	/* http_conn_closed() */
	}
}

/* A whole request arrived on evcon: its deadline starts over. */
static void
http_conn_active(struct coord *c, struct evhttp_connection *evcon)
{
	struct http_conn	*hc;

	TAILQ_FOREACH_REVERSE(hc, &c->http_conns, http_connq, entry) {
		if (hc->evcon == evcon) {
			hc->since_ms = coord_mono_ms();
			TAILQ_REMOVE(&c->http_conns, hc, entry);
			TAILQ_INSERT_TAIL(&c->http_conns, hc, entry);
			return;
		}
	}
}

/*
 * Keeps the HTTP cap under the descriptors the process may open, less a
 * reserve for agents, the store and logs.
 */
static void
http_cap_fit(struct coord *c)
{
	struct rlimit	 rl;
	size_t		 room;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur == RLIM_INFINITY)
		return;
	room = (size_t)rl.rlim_cur / 2;
	if (rl.rlim_cur > COORD_FD_RESERVE &&
	    (size_t)rl.rlim_cur - COORD_FD_RESERVE < room)
		room = (size_t)rl.rlim_cur - COORD_FD_RESERVE;
	if (room == 0)
		room = 1;
	if (c->conf.http_max_conns > room) {
		log_warnx("%s: --http-max-conns %zu lowered to %zu of the %llu "
		    "descriptors allowed, the rest kept for agents",
		    __func__, c->conf.http_max_conns, room,
		    (unsigned long long)rl.rlim_cur);
		c->conf.http_max_conns = room;
	}
}

static void
http_route(struct evhttp_request *req, void *arg)
{
	struct coord			*c = arg;
	const struct evhttp_uri		*uri = evhttp_request_get_evhttp_uri(req);
	enum evhttp_cmd_type		 cmd = evhttp_request_get_command(req);
	struct evbuffer			*buf;
	const char			*p, *allow = "GET";
	char				 path[512], *seg[6];
	int				 n;

	p = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	if (p == NULL || strlen(p) >= sizeof(path)) {
		http_error(c, req, 404, NULL, "no such endpoint");
		return;
	}
	snprintf(path, sizeof(path), "%s", p);
	http_conn_active(c, evhttp_request_get_connection(req));
	if (strcmp(path, "/healthz") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			goto method;
		http_reply(c, req, 200, json_pack("{s:s}", "status", "ok"));
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			goto method;
		c->metrics.http_codes[200]++;
		if ((buf = evbuffer_new()) == NULL) {
			evhttp_send_error(req, 500, NULL);
			return;
		}
		metrics_render(c, buf);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", "text/plain; version=0.0.4");
		evhttp_send_reply(req, 200, "OK", buf);
		evbuffer_free(buf);
		return;
	}
	n = http_split(path, seg, 6);
	if (n < 2 || strcmp(seg[0], "v1") != 0) {
		http_error(c, req, 404, NULL, "no such endpoint");
		return;
	}
	switch (http_authorized(c, req)) {
	case 401:
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer");
		http_error(c, req, 401, NULL, "missing or wrong bearer token");
		return;
	case 403:
		http_error(c, req, 403, NULL, "the viewer token may only read: "
		    "this request needs the operator token");
		return;
	}
	if (n == 2 && strcmp(seg[1], "jobs") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			goto method;
		http_get_jobs(c, req);
	} else if (n == 2 && strcmp(seg[1], "nodes") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			goto method;
		http_get_nodes(c, req);
	} else if (n >= 3 && strcmp(seg[1], "jobs") == 0) {
		if (http_job_id(c, req, seg[2]) == -1)
			return;
		if (n == 3) {
			if (cmd != EVHTTP_REQ_GET)
				goto method;
			http_get_job(c, req, seg[2]);
		} else if (n == 4 && strcmp(seg[3], "config") == 0) {
			allow = "GET, PUT";
			if (cmd == EVHTTP_REQ_GET)
				http_get_config(c, req, seg[2]);
			else if (cmd == EVHTTP_REQ_PUT)
				http_put_config(c, req, seg[2]);
			else
				goto method;
		} else if (n == 4 && strcmp(seg[3], "windows") == 0) {
			allow = "POST";
			if (cmd != EVHTTP_REQ_POST)
				goto method;
			http_post_window(c, req, seg[2]);
		} else if (n == 5 && strcmp(seg[3], "windows") == 0) {
			allow = "DELETE";
			if (cmd != EVHTTP_REQ_DELETE)
				goto method;
			http_delete_window(c, req, seg[2], seg[4]);
		} else
			http_error(c, req, 404, NULL, "no such endpoint");
	} else
		http_error(c, req, 404, NULL, "no such endpoint");
	return;
method:
	http_method_not_allowed(c, req, allow);
}

/*
 * HTTPS: each admin connection gets an OpenSSL bufferevent of the context
 * loaded now (a SIGHUP reload serves the connections made after it).
 */
static struct bufferevent *
http_tls_bev(struct event_base *base, void *arg)
{
	struct coord		*c = arg;
	struct bufferevent	*bev, *pair[2];
	SSL			*ssl;

	if ((ssl = tls_ssl_new(&c->http_tls)) != NULL) {
		bev = bufferevent_openssl_socket_new(base, -1, ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
		if (bev != NULL)
			return (bev);
		SSL_free(ssl);
	}
	/*
	 * Out of memory.  evhttp would serve plaintext on a NULL: hand it one
	 * end of a pair whose other end is gone, which serves nothing; evhttp
	 * times the connection out and closes the socket.
	 */
	log_warnx("%s: cannot set up TLS for an admin connection", __func__);
	if (bufferevent_pair_new(base, 0, pair) == -1)
		return (NULL);
	bufferevent_free(pair[1]);
	return (pair[0]);
}

/* Serves the admin API on addr ("HOST:PORT").  Returns 0 or -1. */
int
http_listen(struct coord *c, const char *addr)
{
	struct evconnlistener		*l;
	struct sockaddr_storage		 ss;
	socklen_t			 len = sizeof(ss), slen = sizeof(ss);
	struct timeval			 sweep = { 0, 250000 };

	memset(&ss, 0, sizeof(ss));
	if (coord_parse_addr(addr, &ss, &len) == -1)
		return (-1);
	if ((c->http = evhttp_new(c->base)) == NULL)
		return (-1);
	evhttp_set_max_body_size(c->http, COORD_HTTP_BODY_MAX);
	evhttp_set_max_headers_size(c->http, 64 * 1024);
	evhttp_set_timeout(c->http, 30);
	/* Every method evhttp knows reaches http_route(), which answers the
	 * ones a path does not take with 405 and Allow (evhttp's own answer
	 * would be a 501 in HTML). */
	evhttp_set_allowed_methods(c->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	evhttp_set_gencb(c->http, http_route, c);
	evhttp_set_bevcb(c->http, http_new_bev, c);
	TAILQ_INIT(&c->http_conns);
	TAILQ_INIT(&c->http_pending);
	http_cap_fit(c);
	c->http_adopt = event_new(c->base, -1, 0, http_adopt_cb, c);
	c->http_sweep = event_new(c->base, -1, EV_PERSIST, http_sweep_cb, c);
	if (c->http_adopt == NULL || c->http_sweep == NULL ||
	    event_add(c->http_sweep, &sweep) == -1)
		return (-1);
	/* Before any read of a connection it adopts. */
	event_priority_set(c->http_adopt, 0);
	l = evconnlistener_new_bind(c->base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE |
	    LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
	    (struct sockaddr *)&ss, (int)len);
	if (l == NULL) {
		log_warn("%s: cannot listen on %s", __func__, addr);
		return (-1);
	}
	evconnlistener_set_error_cb(l, coord_accept_error);
	if (evhttp_bind_listener(c->http, l) == NULL) {
		evconnlistener_free(l);
		return (-1);
	}
	c->http_listener = l;
	if (getsockname(evconnlistener_get_fd(l), (struct sockaddr *)&ss,
	    &slen) == 0)
		c->http_port = ntohs(ss.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&ss)->sin6_port :
		    ((struct sockaddr_in *)&ss)->sin_port);
	return (0);
}

/* Stops serving the admin API. */
void
http_close(struct coord *c)
{
	struct http_conn	*hc;

	c->http_listener = NULL;	/* evhttp_free() frees it first */
	if (c->http != NULL)
		evhttp_free(c->http);	/* http_conn_closed() for each */
	c->http = NULL;
	while ((hc = TAILQ_FIRST(&c->http_pending)) != NULL) {
		TAILQ_REMOVE(&c->http_pending, hc, entry);
		free(hc);
	}
	while ((hc = TAILQ_FIRST(&c->http_conns)) != NULL) {
		TAILQ_REMOVE(&c->http_conns, hc, entry);
		free(hc);
	}
	if (c->http_adopt != NULL)
		event_free(c->http_adopt);
	if (c->http_sweep != NULL)
		event_free(c->http_sweep);
	c->http_adopt = c->http_sweep = NULL;
}
