/*
 * A job's rules: "when a rank straggles, profile it and N healthy peers for K
 * steps starting at the next multiple of R", at most once per interval and a
 * number of times per hour.  A job has none unless an operator adds one.
 *
 * A rule fires from the housekeeping timer, after the stragglers are judged
 * (straggler.c): it makes a window through change_window_add(), the path of
 * an operator's window, so that it is stored, pushed and shown as any other.
 * The rules, the job's own straggler thresholds and each rule's firings of
 * the last hour are one JSON document, stored in the job's row
 * (store_job.rules): a restart keeps them, and the hourly cap.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "clock.h"
#include "log.h"
#include "model.h"

#define RULES_MAX		8	/* rules of one job */
#define RULE_PEERS_MAX		16	/* healthy peers profiled beside */
#define RULE_PEERS_DEFAULT	2
#define RULE_STEPS_MAX		100000	/* steps of a rule's window */
#define RULE_ROUNDUP_MAX	1000000000LL
#define RULE_INTERVAL_MIN_S	1	/* between two firings of a rule */
#define RULE_INTERVAL_MAX_S	86400
#define RULE_INTERVAL_DEFAULT_S	600
#define RULE_PER_HOUR_MAX	60	/* firings of a rule in an hour */
#define RULE_PER_HOUR_DEFAULT	4
#define RULE_HOUR_NS		(3600LL * 1000000000LL)
#define RULE_OPTIONS_MAX	4096	/* a rule's options, as JSON text */

struct rule {
	uint32_t	 id;
	int		 peers;
	int64_t		 steps;
	int64_t		 roundup;
	int64_t		 interval_s;
	int		 per_hour;
	char		*options;		/* JSON object text, or NULL */
	struct options_over over;		/* options, as laid over */
	char		 output_subdir[SEG_SUBDIR_MAX];
	int64_t		 created_ns;
	/* what it did: wall clock, so that a restart keeps the caps */
	int64_t		 fired[RULE_PER_HOUR_MAX];	/* the last hour's */
	size_t		 nfired;
	int64_t		 attempt_ns;		/* last firing tried */
	uint64_t	 fired_total;
	uint32_t	 last_window;
	char		 last_ranks[SEG_RANKS_MAX];
};

struct rules {
	uint32_t	 next_id;
	struct rule	 rule[RULES_MAX];
	size_t		 n;
	uint64_t	 refused;		/* firings the schedule refused */
};

static const char *rule_keys[] = {
	"when", "peers", "steps", "roundup", "min_interval_s", "max_per_hour",
	"options", "output_subdir", NULL
};

/* The state a stored rule carries beside what an operator gives. */
static const char *rule_state_keys[] = {
	"id", "created", "fired", "attempt", "fired_total", "last_window",
	"last_ranks", NULL
};

/* Frees what rule r holds. */
static void
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
static struct rules *
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
static int
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
static void
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
	if (change_window_make(NULL, &req, &w, ref) == -1)
		return (-1);
	window_free(w);
	if (opts == NULL)
		return (0);
	if (options_over_parse(opts, &r->over, &field, &why) == -1)
		return (refusal_options(ref, field, why));
	rule_window_request(r, "0", &req);
	if (change_window_make(NULL, &req, &w, ref) == -1)
		return (-1);
	window_free(w);
	return (0);
}

/*
 * Reads a rule from o: what an operator gives (stored 0: every other key
 * refused) or a stored rule with its state.  Returns 0, or -1 with ref
 * filled (r's options then freed).
 */
static int
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
static json_t *
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

/* A job's own straggler thresholds, -1 each it does not set. */
struct rules_limits {
	int64_t		 lag;
	int		 drop;
	int		 busy;
};

/* Reads the job's own thresholds into l. */
static void
rules_own_limits(const struct job *job, struct rules_limits *l)
{
	straggler_own_thresholds(job, &l->lag, &l->drop);
	l->busy = straggler_own_busy(job);
}

/* Sets the job's own thresholds.  Returns 0, or -1 out of memory. */
static int
rules_set_limits(struct job *job, const struct rules_limits *l)
{
	if (straggler_set_thresholds(job, l->lag, l->drop) == -1 ||
	    straggler_set_busy(job, l->busy) == -1)
		return (-1);
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
}

/* Returns the stored document of rules rs and thresholds l. */
static char *
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
	if (job->rules == NULL && l.lag < 0 && l.drop < 0 && l.busy < 0)
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
	struct rules_limits l = { -1, -1, -1 };
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
	if ((l.lag >= 0 || l.drop >= 0 || l.busy >= 0) &&
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

/*
 * Stores rules rs (taken) and thresholds as job name's, then puts them in
 * memory.  Returns 0 with the job in *jobp, or -1 with ref filled (rs freed).
 */
static int
rules_publish(struct coord *c, const char *name, struct rules *rs,
    const struct rules_limits *l, struct job **jobp, struct refusal *ref)
{
	char	*text;
	int	 rc;

	if ((text = rules_render(rs, l)) == NULL) {
		rules_free(rs);
		return (refusal_set(ref, 500, NULL, "out of memory"));
	}
	rc = change_rules_set(c, name, text, jobp, ref);
	free(text);
	if (rc == -1 || rules_set_limits(*jobp, l) == -1) {
		rules_free(rs);
		return (rc == -1 ? -1 : refusal_set(ref, 500, NULL,
		    "out of memory"));
	}
	rules_free((*jobp)->rules);
	(*jobp)->rules = rs;
	return (0);
}

/*
 * Adds the rule body gives to job name (creating the job).  Returns 0 with
 * the rule as JSON in *out (caller frees), or -1 with ref filled.
 */
int
rules_add(struct coord *c, const char *name, json_t *body, json_t **out,
    struct refusal *ref)
{
	struct job	*job = schedule_job_find(c, name);
	struct rules	*rs;
	struct rule	 r;
	struct rules_limits l = { -1, -1, -1 };

	if (rule_parse(body, 0, &r, ref) == -1)
		return (-1);
	if (job != NULL && job->rules != NULL && job->rules->n == RULES_MAX) {
		rule_clear(&r);
		return (refusal_set(ref, 409, NULL, "job %s has %d rules, "
		    "the most a job holds", name, RULES_MAX));
	}
	if ((rs = rules_copy(job != NULL ? job->rules : NULL)) == NULL) {
		rule_clear(&r);
		return (refusal_set(ref, 500, NULL, "out of memory"));
	}
	r.id = rs->next_id++;
	r.created_ns = clock_wall_ns();
	rs->rule[rs->n++] = r;
	if (job != NULL)
		rules_own_limits(job, &l);
	if (rules_publish(c, name, rs, &l, &job, ref) == -1)
		return (-1);
	*out = rule_json(&job->rules->rule[job->rules->n - 1], 0);
	log_info("%s: job %s rule %u added", __func__, name, r.id);
	return (0);
}

/* Deletes rule id of job name.  Returns 0, or -1 with ref filled. */
int
rules_delete(struct coord *c, const char *name, uint32_t id,
    struct refusal *ref)
{
	struct job	*job = schedule_job_find(c, name);
	struct rules	*rs;
	struct rules_limits l;
	size_t		 i;

	if (job == NULL)
		return (refusal_set(ref, 404, "job", "no job %s", name));
	for (i = 0; job->rules != NULL && i < job->rules->n; i++)
		if (job->rules->rule[i].id == id)
			break;
	if (job->rules == NULL || i == job->rules->n)
		return (refusal_set(ref, 404, "id", "job %s has no rule %"
		    PRIu32, name, id));
	if ((rs = rules_copy(job->rules)) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	rule_clear(&rs->rule[i]);
	memmove(&rs->rule[i], &rs->rule[i + 1], (rs->n - i - 1) *
	    sizeof(rs->rule[0]));
	rs->n--;
	rules_own_limits(job, &l);
	if (rules_publish(c, name, rs, &l, &job, ref) == -1)
		return (-1);
	log_info("%s: job %s rule %" PRIu32 " deleted", __func__, name, id);
	return (0);
}

/*
 * Sets the straggler thresholds of job name from body: lag_steps,
 * rate_drop_percent and busy_percent, null for the coordinator's, absent for
 * as they are.  Returns 0, or -1 with ref filled.
 */
int
rules_set_thresholds(struct coord *c, const char *name, json_t *body,
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
	struct job		*job = schedule_job_find(c, name);
	struct rules		*rs;
	struct rules_limits	 l;
	const char		*key;
	json_t			*v;
	int64_t			 val[3];
	size_t			 i;

	if (job == NULL)
		return (refusal_set(ref, 404, "job", "no job %s", name));
	rules_own_limits(job, &l);
	val[0] = l.lag;
	val[1] = l.drop;
	val[2] = l.busy;
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
	l.lag = val[0];
	l.drop = (int)val[1];
	l.busy = (int)val[2];
	if ((rs = rules_copy(job->rules)) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	return (rules_publish(c, name, rs, &l, &job, ref));
}

/* Keeps the firings of the last hour before now. */
static void
rule_expire(struct rule *r, int64_t now)
{
	size_t	 i = 0;

	while (i < r->nfired && now - r->fired[i] >= RULE_HOUR_NS)
		i++;
	memmove(r->fired, r->fired + i, (r->nfired - i) * sizeof(r->fired[0]));
	r->nfired -= i;
}

/*
 * Writes into buf the worst straggler and up to peers healthy ranks (alive,
 * not straggling, the nearest the median step), in rank order.
 */
static void
rule_pick(struct job *job, const struct straggler_entry *worst, int peers,
    char *buf, size_t len)
{
	struct rank	*r, *best[RULE_PEERS_MAX];
	int32_t		 pick[RULE_PEERS_MAX + 1], t;
	int64_t		 med = straggler_median_step(job), d;
	int		 n = 0, i, j, np;
	size_t		 off = 0;

	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (peers == 0 || r->pace.straggling || r->step < 0 ||
		    r->rank == worst->rank || r->pace.ref_ms == 0 ||
		    r->state == DYNPROF__V1__RANK_STATE__RANK_GONE)
			continue;
		/* Into the nearest peers found so far, nearest (then lowest
		 * rank) first. */
		d = llabs(r->step - med);
		for (i = n; i > 0 && (llabs(best[i - 1]->step - med) > d ||
		    (llabs(best[i - 1]->step - med) == d &&
		    best[i - 1]->rank > r->rank)); i--)
			;
		if (i >= peers)
			continue;
		for (j = n < peers ? n : peers - 1; j > i; j--)
			best[j] = best[j - 1];
		best[i] = r;
		if (n < peers)
			n++;
	}
	pick[0] = worst->rank;
	for (i = 0; i < n; i++)
		pick[i + 1] = best[i]->rank;
	np = n + 1;
	for (i = 1; i < np; i++)
		for (j = i; j > 0 && pick[j - 1] > pick[j]; j--) {
			t = pick[j];
			pick[j] = pick[j - 1];
			pick[j - 1] = t;
		}
	buf[0] = '\0';
	for (i = 0; i < np && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%" PRId32,
		    i > 0 ? "," : "", pick[i]);
}

/* Fires rule r of job once: its window on the worst straggler and peers. */
static void
rule_fire(struct coord *c, struct job *job, struct rule *r,
    const struct straggler_entry *worst, int64_t now)
{
	struct window_request	 req;
	struct window		*w;
	struct refusal		 ref;
	struct rule		 prev;
	char			 ranks[SEG_RANKS_MAX], last[48];

	rule_pick(job, worst, r->peers, ranks, sizeof(ranks));
	r->attempt_ns = now;
	rule_window_request(r, ranks, &req);
	/* Counted before the change, so that the window's change stores it
	 * (the window takes the job's next id); taken back if the schedule
	 * refuses. */
	prev = *r;
	r->fired[r->nfired++] = now;
	r->fired_total++;
	r->last_window = job->next_window_id;
	snprintf(r->last_ranks, sizeof(r->last_ranks), "%s", ranks);
	if (change_window_add(c, job->name, &req, &w, &job, &ref) == -1) {
		r->nfired = prev.nfired;
		r->fired_total = prev.fired_total;
		r->last_window = prev.last_window;
		memcpy(r->last_ranks, prev.last_ranks, sizeof(r->last_ranks));
		job->rules->refused++;
		log_info("%s: job %s rule %u on rank %d: no window: %s",
		    __func__, job->name, r->id, worst->rank, ref.msg);
		return;
	}
	last[0] = '\0';
	if (worst->reasons & STRAGGLER_LAST)
		snprintf(last, sizeof(last), ", last to arrive at %.0f%% of "
		    "steps", (double)worst->last_share * 100.0);
	log_info("%s: job %s rule %u: rank %d on %s straggles (step %" PRId64
	    ", %" PRId64 " behind, busy %.2fx the median%s%s): window %u [%"
	    PRId64 ", %" PRId64 "] on ranks %s", __func__, job->name, r->id,
	    worst->rank, worst->node, worst->step, worst->lag,
	    (double)worst->busy_over, worst->reasons & STRAGGLER_BUSY_CHANGE ?
	    ", risen against its own" : "", last, w->id, w->start_step,
	    w->stop_step, ranks);
}

/* Fires the rules of every job that has a straggler, within their caps:
 * called by the housekeeping timer after the stragglers are judged. */
void
rules_tick(struct coord *c)
{
	struct job			*job;
	struct rule			*r;
	const struct straggler_entry	*list;
	int64_t				 now = clock_wall_ns();
	size_t				 i;

	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->rules == NULL || straggler_list(job, &list) == 0)
			continue;
		for (i = 0; i < job->rules->n; i++) {
			r = &job->rules->rule[i];
			rule_expire(r, now);
			if (r->attempt_ns > 0 && now - r->attempt_ns <
			    r->interval_s * 1000000000LL)
				continue;
			if (r->nfired >= (size_t)r->per_hour)
				continue;
			rule_fire(c, job, r, &list[0], now);
		}
	}
}

/* Appends the rules' metrics to buf. */
void
rules_metrics(struct coord *c, struct evbuffer *buf)
{
	const struct job	*job;
	uint64_t		 n;
	size_t			 i;

	evbuffer_add_printf(buf,
	    "# HELP dynprof_rule_firings_total Windows a job's rules made "
	    "for its stragglers.\n"
	    "# TYPE dynprof_rule_firings_total counter\n");
	TAILQ_FOREACH(job, &c->jobs, entry) {
		if (job->rules == NULL)
			continue;
		for (n = 0, i = 0; i < job->rules->n; i++)
			n += job->rules->rule[i].fired_total;
		evbuffer_add_printf(buf,
		    "dynprof_rule_firings_total{job=\"%s\"} %llu\n", job->name,
		    (unsigned long long)n);
	}
	evbuffer_add_printf(buf,
	    "# HELP dynprof_rule_refused_total Firings of a job's rules the "
	    "schedule refused (an overlap, a full schedule).\n"
	    "# TYPE dynprof_rule_refused_total counter\n");
	TAILQ_FOREACH(job, &c->jobs, entry)
		if (job->rules != NULL)
			evbuffer_add_printf(buf,
			    "dynprof_rule_refused_total{job=\"%s\"} %llu\n",
			    job->name, (unsigned long long)job->rules->refused);
}
