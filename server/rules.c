/*
 * A job's rules: "when a rank straggles, profile it and N healthy peers for K
 * steps starting at the next multiple of R", at most once per interval and a
 * number of times per hour.  A job has none unless an operator adds one.
 *
 * This file holds them as data: parsed, checked, rendered, loaded and freed.
 * The rules, the job's own straggler thresholds and each rule's firings of
 * the last hour are one JSON document, stored in the job's row
 * (store_job.rules): a restart keeps them, and the hourly cap.  What rules
 * do (added, deleted and fired as changes) is rules_fire.c's.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "model.h"
#include "rules.h"

static const char *rule_keys[] = {
	"when", "peers", "steps", "roundup", "min_interval_s", "max_per_hour",
	"options", "output_subdir", "collect", NULL
};

/* The state a stored rule carries beside what an operator gives. */
static const char *rule_state_keys[] = {
	"id", "created", "fired", "attempt", "fired_total", "last_window",
	"last_ranks", NULL
};

/* Frees what rule r holds. */
void
rule_clear(struct rule *r)
{
	free(r->options);
	r->options = NULL;
	options_over_clear(&r->over);
}

/* Frees a job's rules. */
void
rules_free(struct rules *rs)
{
	size_t	 i;

	if (rs == NULL)
		return;
	for (i = 0; i < rs->n; i++)
		rule_clear(&rs->rule[i]);
	free(rs);
}

/* Returns a deep copy of rs (a new empty set for NULL), or NULL. */
struct rules *
rules_copy(const struct rules *rs)
{
	struct rules	*n;
	size_t		 i;

	if ((n = calloc(1, sizeof(*n))) == NULL)
		return (NULL);
	n->next_id = 1;
	if (rs == NULL)
		return (n);
	*n = *rs;
	for (i = 0; i < n->n; i++) {
		n->rule[i].options = NULL;
		options_over_init(&n->rule[i].over);
		if ((rs->rule[i].options != NULL &&
		    (n->rule[i].options = strdup(rs->rule[i].options)) ==
		    NULL) || options_over_copy(&n->rule[i].over,
		    &rs->rule[i].over) == -1) {
			n->n = i + 1;
			rules_free(n);
			return (NULL);
		}
	}
	return (n);
}

/* Returns 1 if key is one of keys. */
static int
rule_key_in(const char *key, const char **keys)
{
	for (; *keys != NULL; keys++)
		if (strcmp(key, *keys) == 0)
			return (1);
	return (0);
}

/*
 * Reads an optional integer of the rule within [min, max] into *out (left
 * as it is when absent).  Returns 0, or -1 with ref filled.
 */
int
rule_int(json_t *o, const char *key, long long min, long long max,
    int64_t *out, struct refusal *ref)
{
	json_t	*v = json_object_get(o, key);

	if (v == NULL)
		return (0);
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max)
		return (refusal_set(ref, 400, key, "%s must be an integer "
		    "from %lld to %lld", key, min, max));
	*out = json_integer_value(v);
	return (0);
}

/* Fills req with the window rule r makes on ranks (a rank list). */
void
rule_window_request(const struct rule *r, const char *ranks,
    struct window_request *req)
{
	memset(req, 0, sizeof(*req));
	req->has_in = 1;
	req->in = 0;
	req->has_round = 1;
	req->roundup = r->roundup;
	req->has_steps = 1;
	req->steps = r->steps;
	req->ranks = ranks;
	req->output_subdir = r->output_subdir[0] != '\0' ? r->output_subdir :
	    NULL;
	req->options = r->options != NULL ? &r->over : NULL;
	req->no_collect = r->no_collect;
}

/*
 * Checks the window rule r would make, with its output directory and then
 * its options (opts, a JSON object or NULL: read into r->over), as a
 * window's are checked.  Returns 0, or -1 with ref filled.
 */
static int
rule_check_window(struct rule *r, json_t *opts, struct refusal *ref)
{
	struct window_request	 req;
	struct window		*w;
	const char		*field, *why;

	rule_window_request(r, "0", &req);
	req.options = NULL;
	if (schedule_window_make(NULL, &req, &w, ref) == -1)
		return (-1);
	window_free(w);
	if (opts == NULL)
		return (0);
	if (options_over_parse(opts, &r->over, &field, &why) == -1)
		return (refusal_options(ref, field, why));
	rule_window_request(r, "0", &req);
	if (schedule_window_make(NULL, &req, &w, ref) == -1)
		return (-1);
	window_free(w);
	return (0);
}

/*
 * Reads a rule from o: what an operator gives (stored 0: every other key
 * refused) or a stored rule with its state.  Returns 0, or -1 with ref
 * filled (r's options then freed).
 */
int
rule_parse(json_t *o, int stored, struct rule *r, struct refusal *ref)
{
	json_t		*v;
	const char	*key;
	int64_t		 peers = RULE_PEERS_DEFAULT, per = RULE_PER_HOUR_DEFAULT;
	size_t		 i;

	memset(r, 0, sizeof(*r));
	options_over_init(&r->over);
	r->interval_s = RULE_INTERVAL_DEFAULT_S;
	r->roundup = 1;
	json_object_foreach(o, key, v) {
		if (!rule_key_in(key, rule_keys) &&
		    (!stored || !rule_key_in(key, rule_state_keys)))
			return (refusal_set(ref, 400, key, "unknown field %s",
			    key));
	}
	v = json_object_get(o, "when");
	if (!json_is_string(v) || strcmp(json_string_value(v),
	    "straggler") != 0)
		return (refusal_set(ref, 400, "when", "when must be "
		    "\"straggler\" (the only condition a rule knows)"));
	if (json_object_get(o, "steps") == NULL)
		return (refusal_set(ref, 400, "steps", "steps is required: "
		    "how many steps to profile"));
	if (rule_int(o, "peers", 0, RULE_PEERS_MAX, &peers, ref) == -1 ||
	    rule_int(o, "steps", 1, RULE_STEPS_MAX, &r->steps, ref) == -1 ||
	    rule_int(o, "roundup", 1, RULE_ROUNDUP_MAX, &r->roundup,
	    ref) == -1 ||
	    rule_int(o, "min_interval_s", RULE_INTERVAL_MIN_S,
	    RULE_INTERVAL_MAX_S, &r->interval_s, ref) == -1 ||
	    rule_int(o, "max_per_hour", 1, RULE_PER_HOUR_MAX, &per, ref) == -1)
		return (-1);
	r->peers = (int)peers;
	r->per_hour = (int)per;
	if ((v = json_object_get(o, "options")) != NULL) {
		if (!json_is_object(v))
			return (refusal_set(ref, 400, "options", "options "
			    "must be an object of profiler options"));
		r->options = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (r->options == NULL || strlen(r->options) >=
		    RULE_OPTIONS_MAX) {
			free(r->options);
			r->options = NULL;
			return (refusal_set(ref, 400, "options", "options "
			    "over %d bytes", RULE_OPTIONS_MAX - 1));
		}
	}
	if ((v = json_object_get(o, "output_subdir")) != NULL) {
		if (!json_is_string(v) || strlen(json_string_value(v)) >=
		    sizeof(r->output_subdir)) {
			free(r->options);
			return (refusal_set(ref, 400, "output_subdir",
			    "output_subdir must be a string under %zu bytes",
			    sizeof(r->output_subdir)));
		}
		snprintf(r->output_subdir, sizeof(r->output_subdir), "%s",
		    json_string_value(v));
	}
	if ((v = json_object_get(o, "collect")) != NULL) {
		if (!json_is_boolean(v)) {
			free(r->options);
			return (refusal_set(ref, 400, "collect", "collect must "
			    "be true or false"));
		}
		r->no_collect = json_is_false(v);
	}
	if (rule_check_window(r, json_object_get(o, "options"), ref) == -1) {
		rule_clear(r);
		return (-1);
	}
	if (!stored)
		return (0);
	r->id = (uint32_t)json_integer_value(json_object_get(o, "id"));
	r->created_ns = json_integer_value(json_object_get(o, "created"));
	r->attempt_ns = json_integer_value(json_object_get(o, "attempt"));
	r->fired_total = (uint64_t)json_integer_value(json_object_get(o,
	    "fired_total"));
	r->last_window = (uint32_t)json_integer_value(json_object_get(o,
	    "last_window"));
	if ((v = json_object_get(o, "last_ranks")) != NULL &&
	    json_is_string(v))
		snprintf(r->last_ranks, sizeof(r->last_ranks), "%s",
		    json_string_value(v));
	json_array_foreach(json_object_get(o, "fired"), i, v) {
		if (r->nfired < RULE_PER_HOUR_MAX && json_is_integer(v))
			r->fired[r->nfired++] = json_integer_value(v);
	}
	return (0);
}

/* Returns a rule as JSON: as given, then what it did (stored: the raw
 * clock values a restart reads back). */
json_t *
rule_json(const struct rule *r, int stored)
{
	json_t	*o, *a;
	size_t	 i;
	char	 t[40];

	o = json_pack("{s:I,s:s,s:i,s:I,s:I,s:I,s:i}", "id",
	    (json_int_t)r->id, "when", "straggler", "peers", r->peers,
	    "steps", (json_int_t)r->steps, "roundup", (json_int_t)r->roundup,
	    "min_interval_s", (json_int_t)r->interval_s, "max_per_hour",
	    r->per_hour);
	if (r->options != NULL)
		json_object_set_new(o, "options", json_loads(r->options, 0,
		    NULL));
	if (r->output_subdir[0] != '\0')
		json_object_set_new(o, "output_subdir",
		    json_string(r->output_subdir));
	if (r->no_collect)
		json_object_set_new(o, "collect", json_false());
	a = json_array();
	for (i = 0; i < r->nfired; i++) {
		if (stored)
			json_array_append_new(a, json_integer(r->fired[i]));
		else {
			clock_rfc3339(r->fired[i], t, sizeof(t));
			json_array_append_new(a, json_string(t));
		}
	}
	json_object_set_new(o, "fired", a);
	json_object_set_new(o, "fired_total",
	    json_integer((json_int_t)r->fired_total));
	json_object_set_new(o, "last_window", r->last_window ?
	    json_integer(r->last_window) : json_null());
	json_object_set_new(o, "last_ranks", r->last_ranks[0] ?
	    json_string(r->last_ranks) : json_null());
	if (stored) {
		json_object_set_new(o, "created", json_integer(r->created_ns));
		json_object_set_new(o, "attempt", json_integer(r->attempt_ns));
	} else if (r->created_ns > 0) {
		clock_rfc3339(r->created_ns, t, sizeof(t));
		json_object_set_new(o, "created", json_string(t));
	}
	return (o);
}

/* Reads the job's own thresholds into l. */
void
rules_own_limits(const struct job *job, struct rules_limits *l)
{
	straggler_own_thresholds(job, &l->lag, &l->drop);
	l->busy = straggler_own_busy(job);
	l->no_collect = job->no_collect;
	l->store_set = 1;
	snprintf(l->store, sizeof(l->store), "%s", job->trace_store);
}

/* Whether c may be in a trace store's bucket name (S3's rules). */
static int
rules_store_bucket_char(char c)
{
	return ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '.');
}

/* Whether c may be in a trace store's path or prefix. */
static int
rules_store_path_char(char c)
{
	return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '/');
}

/*
 * Checks a job's own trace store s: "s3://bucket[/prefix]" (a bucket of 3
 * to 63 of a-z 0-9 . -, a prefix of A-Z a-z 0-9 . _ - /) or an absolute
 * directory of those characters; no "..", no empty part, at most
 * RULES_STORE_MAX bytes.  Returns 0, or -1 with ref filled (400, why).
 */
int
rules_store_check(const char *s, struct refusal *ref)
{
	const char	*p = s, *part;
	size_t		 n, len = strlen(s);

	if (len == 0 || len > RULES_STORE_MAX)
		return (refusal_set(ref, 400, "store", "store must be 1 to %d "
		    "bytes", RULES_STORE_MAX));
	if (strncmp(s, "s3://", 5) == 0) {
		for (p = s + 5, n = 0; rules_store_bucket_char(*p); p++)
			n++;
		if (n < 3 || n > 63 || (*p != '\0' && *p != '/') ||
		    s[5] == '-' || s[5] == '.' || p[-1] == '-' || p[-1] == '.')
			return (refusal_set(ref, 400, "store", "store's bucket "
			    "must be 3 to 63 of a-z, 0-9, '.' and '-', from "
			    "and to a letter or digit"));
		if (*p == '\0')
			return (0);
		p++;			/* the prefix's parts */
	} else if (*s == '/')
		p = s + 1;
	else
		return (refusal_set(ref, 400, "store", "store must be "
		    "s3://bucket/prefix or an absolute directory"));
	for (part = p; ; p++) {
		if (*p != '\0' && *p != '/') {
			if (!rules_store_path_char(*p))
				return (refusal_set(ref, 400, "store", "store "
				    "may hold only A-Z, a-z, 0-9, '.', '_', "
				    "'-' and '/'"));
			continue;
		}
		if (p - part == 2 && strncmp(part, "..", 2) == 0)
			return (refusal_set(ref, 400, "store", "store may not "
			    "hold \"..\""));
		if (p == part)
			return (refusal_set(ref, 400, "store", "store may not "
			    "hold an empty part (\"//\" or a final '/')"));
		if (*p == '\0')
			return (0);
		part = p + 1;
	}
}

/* Sets the job's own thresholds.  Returns 0, or -1 out of memory. */
int
rules_set_limits(struct job *job, const struct rules_limits *l)
{
	if (straggler_set_thresholds(job, l->lag, l->drop) == -1 ||
	    straggler_set_busy(job, l->busy) == -1)
		return (-1);
	job->no_collect = l->no_collect != 0;
	snprintf(job->trace_store, sizeof(job->trace_store), "%s", l->store);
	return (0);
}

/* Adds thresholds l to o, null for each unset. */
static void
rules_limits_json(const struct rules_limits *l, json_t *o)
{
	json_object_set_new(o, "lag_steps", l->lag >= 0 ?
	    json_integer(l->lag) : json_null());
	json_object_set_new(o, "rate_drop_percent", l->drop >= 0 ?
	    json_integer(l->drop) : json_null());
	json_object_set_new(o, "busy_percent", l->busy >= 0 ?
	    json_integer(l->busy) : json_null());
	json_object_set_new(o, "collect", json_boolean(!l->no_collect));
	json_object_set_new(o, "trace_store", l->store[0] != '\0' ?
	    json_string(l->store) : json_null());
}

/* Returns the stored document of rules rs and thresholds l. */
char *
rules_render(const struct rules *rs, const struct rules_limits *l)
{
	json_t	*o, *a;
	char	*text;
	size_t	 i;

	o = json_object();
	rules_limits_json(l, o);
	json_object_set_new(o, "next_id", json_integer(rs != NULL ?
	    rs->next_id : 1));
	a = json_array();
	for (i = 0; rs != NULL && i < rs->n; i++)
		json_array_append_new(a, rule_json(&rs->rule[i], 1));
	json_object_set_new(o, "rules", a);
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return (text);
}

/* Returns the job's stored document (caller frees), NULL if it has none. */
char *
rules_dump(const struct job *job)
{
	struct rules_limits	 l;

	rules_own_limits(job, &l);
	if (job->rules == NULL && l.lag < 0 && l.drop < 0 && l.busy < 0 &&
	    !l.no_collect && l.store[0] == '\0')
		return (NULL);
	return (rules_render(job->rules, &l));
}

/*
 * Takes a stored document into the job (at start).  A document or rule that
 * does not parse is logged and left out.  Returns 0, or -1 out of memory.
 */
int
rules_load(struct job *job, const char *text)
{
	struct rules	*rs;
	struct refusal	 ref;
	json_t		*doc, *v;
	struct rules_limits l = { -1, -1, -1, 0, 0, "" };
	size_t		 i;

	if ((doc = json_loads(text, 0, NULL)) == NULL) {
		log_warnx("%s: job %s: stored rules do not parse, dropped",
		    __func__, job->name);
		return (0);
	}
	if (json_is_integer(v = json_object_get(doc, "lag_steps")))
		l.lag = json_integer_value(v);
	if (json_is_integer(v = json_object_get(doc, "rate_drop_percent")))
		l.drop = (int)json_integer_value(v);
	if (json_is_integer(v = json_object_get(doc, "busy_percent")))
		l.busy = (int)json_integer_value(v);
	l.no_collect = json_is_false(json_object_get(doc, "collect"));
	/* A store no longer allowed here is dropped, said. */
	if (json_is_string(v = json_object_get(doc, "trace_store"))) {
		if (rules_store_check(json_string_value(v), &ref) == 0)
			snprintf(l.store, sizeof(l.store), "%s",
			    json_string_value(v));
		else
			log_warnx("%s: job %s: stored trace store: %s, dropped",
			    __func__, job->name, ref.msg);
	}
	if ((l.lag >= 0 || l.drop >= 0 || l.busy >= 0 || l.no_collect ||
	    l.store[0] != '\0') &&
	    rules_set_limits(job, &l) == -1)
		goto fail;
	if ((rs = rules_copy(NULL)) == NULL)
		goto fail;
	if (json_is_integer(v = json_object_get(doc, "next_id")))
		rs->next_id = (uint32_t)json_integer_value(v);
	json_array_foreach(json_object_get(doc, "rules"), i, v) {
		if (rs->n == RULES_MAX)
			break;
		if (rule_parse(v, 1, &rs->rule[rs->n], &ref) == -1) {
			log_warnx("%s: job %s: a stored rule: %s, dropped",
			    __func__, job->name, ref.msg);
			continue;
		}
		rs->n++;
	}
	rules_free(job->rules);
	job->rules = rs;
	json_decref(doc);
	return (0);
fail:
	json_decref(doc);
	return (-1);
}

/* Returns the job's rules and own thresholds as GET /v1/jobs/J/rules shows
 * them. */
json_t *
rules_json(const struct job *job)
{
	json_t			*o, *a;
	struct rules_limits	 l;
	size_t			 i;

	rules_own_limits(job, &l);
	o = json_object();
	json_object_set_new(o, "job", json_string(job->name));
	rules_limits_json(&l, o);
	a = json_array();
	for (i = 0; job->rules != NULL && i < job->rules->n; i++)
		json_array_append_new(a, rule_json(&job->rules->rule[i], 0));
	json_object_set_new(o, "rules", a);
	return (o);
}

