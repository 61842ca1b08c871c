/*
 * GET /v1/jobs/{job}/ranks (docs/admin-api.md): a job's ranks in rank order,
 * one page at a time (keyset: the ranks after a rank number, at most limit of
 * them), filtered by state, node and window, with or without each rank's
 * outcome of a window (summary_rank_outcome()), written as they are rendered.
 * The job's ranks sorted by number are kept beside it and rebuilt when ranks
 * were added; a page in progress holds only the job's name and the last rank
 * it wrote, so ranks that come or change meanwhile never make it skip or
 * repeat one.
 */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "clock.h"
#include "labels.h"
#include "http.h"
#include "log.h"
#include "model.h"
#include "names.h"

/* Ranks rendered per chunk of a page; scanned (not matching) per chunk. */
#define RANKS_CHUNK		256
#define RANKS_SCAN_MAX		65536

/* A page being written. */
struct ranks_page {
	char		 job[JOBID_MAX + 1];
	struct ranks_filter filter;
	int64_t		 after;		/* last rank written (or asked) */
	size_t		 left;		/* ranks still to write */
	size_t		 written;
	int		 begun;
	struct ranks_memo memo;
};

/* Adds s to buf as a JSON string (s is valid UTF-8: checked where it came
 * in), or null for NULL. */
void
ranks_json_string(struct evbuffer *buf, const char *s)
{
	const char	*p, *run;
	unsigned char	 ch;

	if (s == NULL) {
		evbuffer_add(buf, "null", 4);
		return;
	}
	evbuffer_add(buf, "\"", 1);
	for (p = run = s; *p != '\0'; p++) {
		ch = (unsigned char)*p;
		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		evbuffer_add(buf, run, (size_t)(p - run));
		switch (ch) {
		case '"': evbuffer_add(buf, "\\\"", 2); break;
		case '\\': evbuffer_add(buf, "\\\\", 2); break;
		case '\n': evbuffer_add(buf, "\\n", 2); break;
		case '\r': evbuffer_add(buf, "\\r", 2); break;
		case '\t': evbuffer_add(buf, "\\t", 2); break;
		default: evbuffer_add_printf(buf, "\\u%04x", ch); break;
		}
		run = p + 1;
	}
	evbuffer_add(buf, run, (size_t)(p - run));
	evbuffer_add(buf, "\"", 1);
}

/* Adds a wall clock time to buf as RFC 3339 text, null when unset. */
void
ranks_json_time(struct evbuffer *buf, int64_t ns)
{
	char	 t[40];

	if (ns <= 0) {
		evbuffer_add(buf, "null", 4);
		return;
	}
	clock_rfc3339(ns, t, sizeof(t));
	evbuffer_add_printf(buf, "\"%s\"", t);
}

/* Adds the rank's latest trace collection to buf, if it has one. */
static void
ranks_write_trace(struct evbuffer *buf, const struct rank *r)
{
	const struct trace_rec	*x;

	if (r->trace_window == 0 ||
	    (x = traces_find(r->job, r->trace_window, r->rank)) == NULL)
		return;
	evbuffer_add_printf(buf, ",\"trace\":{\"window\":%" PRIu32
	    ",\"state\":\"%s\"", x->window_id, names_event_kind(x->kind));
	if (x->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED) {
		evbuffer_add(buf, ",\"location\":", 12);
		ranks_json_string(buf, x->where);
		evbuffer_add_printf(buf, ",\"size\":%" PRIu64 ",\"sha256\":"
		    "\"%s\"}", x->size, x->sha256);
	} else {
		evbuffer_add(buf, ",\"error\":", 9);
		ranks_json_string(buf, x->where);
		evbuffer_add(buf, "}", 1);
	}
}

/*
 * Adds ,"labels":{...} to buf for canonical labels (NULL: {}): their bytes
 * need no escaping (common/labels.h).
 */
static void
ranks_write_labels(struct evbuffer *buf, const char *labels)
{
	const char	*p = labels, *eq, *end;

	evbuffer_add(buf, ",\"labels\":{", 11);
	while (p != NULL && *p != '\0' && (eq = strchr(p, '=')) != NULL) {
		end = strchr(eq, ',');
		evbuffer_add_printf(buf, "%s\"%.*s\":\"%.*s\"", p != labels ?
		    "," : "", (int)(eq - p), p, (int)(end != NULL ?
		    end - eq - 1 : (ptrdiff_t)strlen(eq + 1)), eq + 1);
		p = end != NULL ? end + 1 : NULL;
	}
	evbuffer_add(buf, "}", 1);
}

/*
 * Adds a rank to buf as status shows it, state as schedule_rank_state() gave it:
 * the fields of GET /v1/jobs/{job}'s ranks before they moved here, with
 * the rank's last COORD_RANK_EVENTS_MAX events.
 */
void
ranks_write(struct evbuffer *buf, const struct rank *r, int state,
    const char *outcome)
{
	const struct rank_event	*e;
	size_t			 i;
	int			 first = 1;

	evbuffer_add_printf(buf, "{\"rank\":%" PRId32 ",\"node\":", r->rank);
	ranks_json_string(buf, r->node[0] != '\0' ? r->node : NULL);
	evbuffer_add_printf(buf, ",\"pid\":%" PRId32, r->pid);
	if (r->uid >= 0)
		evbuffer_add_printf(buf, ",\"uid\":%" PRId64, r->uid);
	else
		evbuffer_add(buf, ",\"uid\":null", 11);
	ranks_write_labels(buf, r->labels);
	evbuffer_add_printf(buf, ",\"step\":%" PRId64 ",\"state\":\"%s\","
	    "\"window\":", r->step, schedule_rank_state_name(state));
	if (r->window_id != 0)
		evbuffer_add_printf(buf, "%" PRIu32, r->window_id);
	else
		evbuffer_add(buf, "null", 4);
	evbuffer_add(buf, ",\"output_dir\":", 14);
	ranks_json_string(buf, r->output_dir);
	evbuffer_add(buf, ",\"last_event\":", 14);
	if (r->last_event != 0)
		evbuffer_add_printf(buf, "\"%s\"",
		    names_event_kind(r->last_event));
	else
		evbuffer_add(buf, "null", 4);
	evbuffer_add(buf, ",\"last_event_time\":", 19);
	ranks_json_time(buf, r->last_event_ns);
	evbuffer_add(buf, ",\"arrived\":", 11);
	ranks_json_time(buf, r->arrived_ns);
	evbuffer_add(buf, ",\"left\":", 8);
	ranks_json_time(buf, r->gone_ns);
	if (r->error != NULL) {
		evbuffer_add(buf, ",\"error\":", 9);
		ranks_json_string(buf, r->error);
	}
	ranks_write_trace(buf, r);
	if (outcome != NULL)
		evbuffer_add_printf(buf, ",\"outcome\":\"%s\"", outcome);
	evbuffer_add(buf, ",\"events\":[", 11);
	i = r->nevents > COORD_RANK_EVENTS_MAX ?
	    r->nevents - COORD_RANK_EVENTS_MAX : 0;
	for (; i < r->nevents; i++) {
		e = &r->events[i];
		evbuffer_add_printf(buf, "%s{\"kind\":\"%s\",\"window\":%" PRIu32
		    ",\"step\":%" PRId64 ",\"time\":", first ? "" : ",",
		    names_event_kind(e->kind), e->window_id, e->step);
		first = 0;
		ranks_json_time(buf, e->time_ns);
		evbuffer_add(buf, "}", 1);
	}
	evbuffer_add(buf, "]}", 2);
}

/* Returns 1 if rank r (showing state) passes the filter. */
int
ranks_filter_match(const struct ranks_filter *f, const struct rank *r,
    int state)
{
	if (f->states != 0 && (f->states & (1U << state)) == 0)
		return (0);
	if (f->node[0] != '\0' && strcmp(f->node, r->node) != 0)
		return (0);
	if (f->window != 0 && r->window_id != f->window)
		return (0);
	if (f->has_select && !labels_selector_match(&f->select, r->labels))
		return (0);
	return (1);
}

/*
 * Reads a state filter: names of schedule_rank_state_name() separated by commas.
 * Returns 0, or -1 with why set.
 */
static int
ranks_parse_states(const char *v, uint32_t *mask, char *why, size_t len)
{
	char		 name[32];
	const char	*p = v, *end;
	size_t		 n;
	int		 s;

	*mask = 0;
	for (;;) {
		end = strchr(p, ',');
		n = end != NULL ? (size_t)(end - p) : strlen(p);
		for (s = 1; s <= RANKS_STATE_UNKNOWN; s++) {
			if (strlen(schedule_rank_state_name(s)) == n &&
			    strncmp(schedule_rank_state_name(s), p, n) == 0)
				break;
		}
		if (s > RANKS_STATE_UNKNOWN) {
			snprintf(name, sizeof(name), "%.*s", n > 24 ? 24 :
			    (int)n, p);
			snprintf(why, len, "state must be attached, armed, "
			    "profiling, done, skipped, failed, gone, observed, "
			    "observed_complete or unknown (several separated by "
			    "commas), not \"%s\"", name);
			return (-1);
		}
		*mask |= 1U << s;
		if (end == NULL)
			return (0);
		p = end + 1;
	}
}

/* Reads a decimal integer within [min, max].  Returns 0 or -1. */
int
ranks_parse_int(const char *v, long long min, long long max, long long *out)
{
	char		*end;
	long long	 n;

	if (*v == '\0' || (*v != '-' && (*v < '0' || *v > '9')))
		return (-1);
	/* "-0" is no rank number: not 0 (after=-0 would skip rank 0). */
	if (v[0] == '-' && v[1] == '0')
		return (-1);
	errno = 0;
	n = strtoll(v, &end, 10);
	if (*end != '\0' || errno != 0 || n < min || n > max)
		return (-1);
	*out = n;
	return (0);
}

/*
 * Refuses a query that evhttp would decode wrong: a '%' without two hex
 * digits (kept as it is) or %00 (a value cut short there).  Returns 0, or -1
 * with ref naming the parameter.
 */
static int
http_query_check(const char *query, struct refusal *ref)
{
	const char	*p, *key = query, *why;
	size_t		 klen;

	for (p = query; *p != '\0'; p++) {
		if (*p == '&')
			key = p + 1;
		if (*p != '%')
			continue;
		if (!isxdigit((unsigned char)p[1]) ||
		    !isxdigit((unsigned char)p[2]))
			why = "bad percent-encoding: '%' takes two hex digits";
		else if (p[1] == '0' && p[2] == '0')
			why = "a NUL byte (%00) in a query parameter";
		else
			continue;
		klen = strcspn(key, "=&");
		if (klen >= sizeof(ref->fieldbuf))
			klen = sizeof(ref->fieldbuf) - 1;
		snprintf(ref->fieldbuf, sizeof(ref->fieldbuf), "%.*s",
		    (int)klen, key);
		return (refusal_set(ref, 400, ref->fieldbuf, "%s", why));
	}
	return (0);
}

/*
 * Reads the query of req into q (caller clears it).  Returns 0, or -1 with
 * ref saying what to answer.
 */
int
http_query(struct evhttp_request *req, struct evkeyvalq *q,
    struct refusal *ref)
{
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	const char		*query;

	TAILQ_INIT(q);
	query = uri != NULL ? evhttp_uri_get_query(uri) : NULL;
	if (query != NULL && http_query_check(query, ref) == -1)
		return (-1);
	if (query != NULL && evhttp_parse_query_str(query, q) == -1)
		return (refusal_set(ref, 400, NULL, "malformed query "
		    "string"));
	return (0);
}

/*
 * Reads the query of GET .../ranks into p.  Returns 0, or -1 with ref saying
 * what to answer (400, the parameter at fault).
 */
static int
ranks_parse_query(struct evhttp_request *req, struct ranks_page *p,
    struct refusal *ref)
{
	struct evkeyvalq	 q;
	struct evkeyval		*kv;
	long long		 v;
	unsigned		 seen = 0, bit;
	char			 why[200];
	const char		*lwhy;
	int			 rc = -1;

	p->after = -1;
	p->left = COORD_RANKS_LIMIT_DEFAULT;
	if (http_query(req, &q, ref) == -1)
		return (-1);
	TAILQ_FOREACH(kv, &q, next) {
		if (strcmp(kv->key, "state") == 0)
			bit = 1;
		else if (strcmp(kv->key, "node") == 0)
			bit = 2;
		else if (strcmp(kv->key, "window") == 0)
			bit = 4;
		else if (strcmp(kv->key, "limit") == 0)
			bit = 8;
		else if (strcmp(kv->key, "after") == 0)
			bit = 16;
		else if (strcmp(kv->key, "label") == 0)
			bit = 32;
		else if (strcmp(kv->key, "outcome") == 0)
			bit = 64;
		else {
			snprintf(ref->fieldbuf, sizeof(ref->fieldbuf), "%s",
			    kv->key);
			refusal_set(ref, 400, ref->fieldbuf, "unknown "
			    "parameter (state, node, window, label, outcome, "
			    "limit and after are known)");
			goto out;
		}
		if (seen & bit) {
			refusal_set(ref, 400, NULL, "%s given twice",
			    kv->key);
			ref->field = bit == 1 ? "state" : bit == 2 ? "node" :
			    bit == 4 ? "window" : bit == 8 ? "limit" :
			    bit == 16 ? "after" : bit == 32 ? "label" :
			    "outcome";
			goto out;
		}
		seen |= bit;
		switch (bit) {
		case 1:
			if (ranks_parse_states(kv->value, &p->filter.states,
			    why, sizeof(why)) == -1) {
				refusal_set(ref, 400, "state", "%s", why);
				goto out;
			}
			break;
		case 2:
			if (*kv->value == '\0' ||
			    strlen(kv->value) >= sizeof(p->filter.node)) {
				refusal_set(ref, 400, "node", "node must be "
				    "1 to %d bytes", COORD_NODE_MAX - 1);
				goto out;
			}
			snprintf(p->filter.node, sizeof(p->filter.node), "%s",
			    kv->value);
			break;
		case 4:
			if (ranks_parse_int(kv->value, 1, UINT32_MAX,
			    &v) == -1) {
				refusal_set(ref, 400, "window", "window must "
				    "be a window id (a positive integer)");
				goto out;
			}
			p->filter.window = (uint32_t)v;
			break;
		case 8:
			if (ranks_parse_int(kv->value, 1,
			    COORD_RANKS_LIMIT_MAX, &v) == -1) {
				refusal_set(ref, 400, "limit", "limit must be "
				    "1 to %d", COORD_RANKS_LIMIT_MAX);
				goto out;
			}
			p->left = (size_t)v;
			break;
		case 16:
			if (ranks_parse_int(kv->value, -1, INT32_MAX,
			    &v) == -1) {
				refusal_set(ref, 400, "after", "after must be "
				    "a rank number (-1 to %d): the \"next\" of "
				    "the previous page", INT32_MAX);
				goto out;
			}
			p->after = v;
			break;
		case 32:
			if (labels_selector_parse(kv->value,
			    &p->filter.select, &lwhy) == -1) {
				refusal_set(ref, 400, "label", "%s (a "
				    "selector such as pp=3,tp in (0,1): "
				    "docs/labels.md)", lwhy);
				goto out;
			}
			p->filter.has_select = 1;
			break;
		case 64:
			if (ranks_parse_int(kv->value, 1, UINT32_MAX,
			    &v) == -1) {
				refusal_set(ref, 400, "outcome", "outcome must "
				    "be a window id (a positive integer)");
				goto out;
			}
			p->filter.outcome = (uint32_t)v;
			break;
		}
	}
	rc = 0;
out:
	evhttp_clear_headers(&q);
	return (rc);
}

/*
 * Writes the next part of a page: up to RANKS_CHUNK ranks after the last
 * written, then, once limit ranks are written or none is left, "next" (the
 * last rank written if a matching rank follows it, else null).
 */
static int
ranks_fill(struct stream *s, struct evbuffer *buf)
{
	struct ranks_page	*p = s->arg;
	struct coord		*c = s->coord;
	struct job		*job;
	struct rank		**v = NULL;
	const struct window	*w = NULL;
	const char		*outcome = NULL;
	size_t			 n = 0, i, rendered = 0, scanned = 0;
	int			 state;

	if ((job = schedule_job_find(c, p->job)) != NULL) {
		v = schedule_rank_index(job, &n);
		/* Found again for every chunk: it may be gone since. */
		if (p->filter.outcome != 0 && (w = schedule_window_find(job,
		    p->filter.outcome)) == NULL)
			n = 0;
	}
	if (!p->begun) {
		p->begun = 1;
		evbuffer_add(buf, "{\"job\":", 7);
		ranks_json_string(buf, p->job);
		evbuffer_add_printf(buf, ",\"revision\":%" PRIu64 ",\"limit\":"
		    "%zu,\"ranks\":[", journal_revision(c), p->left);
	}
	for (i = schedule_rank_index_after(v, n, p->after); i < n; i++) {
		if (rendered == RANKS_CHUNK || scanned == RANKS_SCAN_MAX)
			return (STREAM_MORE);
		scanned++;
		state = schedule_rank_state(c, v[i], &p->memo);
		if (!ranks_filter_match(&p->filter, v[i], state) || (w != NULL &&
		    (outcome = summary_rank_outcome(v[i], state, w)) == NULL))
			continue;
		if (p->left == 0) {
			/* One more matches: the next page has it. */
			evbuffer_add_printf(buf, "],\"next\":%" PRId64 "}\n",
			    p->after);
			return (STREAM_DONE);
		}
		if (p->written > 0)
			evbuffer_add(buf, ",", 1);
		ranks_write(buf, v[i], state, outcome);
		p->after = v[i]->rank;
		p->written++;
		p->left--;
		rendered++;
	}
	evbuffer_add(buf, "],\"next\":null}\n", 15);
	return (STREAM_DONE);
}

/* Frees a page. */
static void
ranks_release(struct stream *s)
{
	free(s->arg);
}

/*
 * Returns size zeroed bytes for a streamed answer about job name, or NULL
 * once it answered 404 (no such job) or 500.
 */
void *
http_job_stream_new(struct coord *c, struct evhttp_request *req,
    const char *name, size_t size)
{
	void	*p;

	if (schedule_job_find(c, name) == NULL) {
		http_error(c, req, 404, "job", "no job %s", name);
		return (NULL);
	}
	if ((p = calloc(1, size)) == NULL)
		http_error(c, req, 500, NULL, "out of memory");
	return (p);
}

/* GET /v1/jobs/J/ranks: the job's ranks, a page streamed in rank order. */
void
http_get_ranks(struct coord *c, struct evhttp_request *req, const char *name)
{
	struct ranks_page	*p;
	struct refusal		 ref;

	if ((p = http_job_stream_new(c, req, name, sizeof(*p))) == NULL)
		return;
	snprintf(p->job, sizeof(p->job), "%s", name);
	if (ranks_parse_query(req, p, &ref) == -1) {
		free(p);
		http_refused(c, req, &ref);
		return;
	}
	if (stream_start(c, req, "application/json", ranks_fill,
	    ranks_release, p) == NULL)
		free(p);
}
