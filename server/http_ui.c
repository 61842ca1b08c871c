/*
 * The status page (docs/admin-api.md, "Status page"): its files, compiled in
 * by server/ui/embed.cmake and served at /ui/, and what only it needs from
 * the API, a job's ranks aggregated by node for its heat map:
 *
 *	GET /ui/, /ui/FILE		the page's HTML, CSS and JavaScript
 *	GET /v1/jobs/J/nodes		the job's nodes, one row each
 *
 * The files hold no data: every datum the page shows comes from /v1 with the
 * token the user gives it, so the page shows exactly what the token may read.
 */

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

/* What every file of the page is sent with: nothing but this coordinator
 * may feed it scripts, styles or data, nor frame it; no Referer leaves it. */
static const char *http_ui_headers[][2] = {
	{ "Content-Security-Policy", "default-src 'none'; script-src 'self'; "
	    "style-src 'self' 'unsafe-inline'; connect-src 'self'; "
	    "img-src 'self'; base-uri 'none'; form-action 'self'; "
	    "frame-ancestors 'none'" },
	{ "X-Content-Type-Options", "nosniff" },
	{ "Referrer-Policy", "no-referrer" },
	{ "Cache-Control", "no-cache" },
};

/* Rows of GET /v1/jobs/J/nodes, in this order. */
static const char *http_ui_node_fields[] = {
	"node", "state", "applied_generation", "ranks", "min_step",
	"max_step", "stragglers", "attached", "armed", "profiling", "done",
	"skipped", "failed", "gone", "observed", "observed_complete", "unknown",
	"busy_ranks", "busy_max_us", NULL
};

/* Rows written per chunk of GET /v1/jobs/J/nodes. */
#define HTTP_UI_NODES_CHUNK	1000

/* One node of a job, its ranks counted. */
struct http_ui_node {
	char		 name[COORD_NODE_MAX];
	uint32_t	 ranks;
	uint32_t	 states[RANKS_STATE_UNKNOWN + 1];	/* as shown */
	int64_t		 min_step, max_step;
};

/*
 * Serves a file of the page: path "/ui" or "/ui/..." ("/ui/" is
 * index.html).  Answers every request whose path starts with /ui.
 */
void
http_ui_route(struct coord *c, struct evhttp_request *req, const char *path)
{
	enum evhttp_cmd_type	 cmd = evhttp_request_get_command(req);
	struct evkeyvalq	*out = evhttp_request_get_output_headers(req);
	const struct ui_file	*f;
	struct evbuffer		*buf;
	const char		*name;
	size_t			 i;

	if (strcmp(path, "/ui") == 0) {
		evhttp_add_header(out, "Location", "/ui/");
		c->metrics.http_codes[301]++;
		http_send_reply(req, 301, "Moved Permanently", NULL);
		return;
	}
	name = path + strlen("/ui/");
	if (*name == '\0')
		name = "index.html";
	for (f = ui_files; f->name != NULL; f++)
		if (strcmp(f->name, name) == 0)
			break;
	if (f->name == NULL) {
		http_error(c, req, 404, NULL, "no such file of the status page");
		return;
	}
	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		http_method_not_allowed(c, req, "GET, HEAD");
		return;
	}
	if ((buf = evbuffer_new()) == NULL) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	evbuffer_add_reference(buf, f->data, f->len, NULL, NULL);
	evhttp_add_header(out, "Content-Type", f->type);
	for (i = 0; i < sizeof(http_ui_headers) / sizeof(http_ui_headers[0]);
	    i++)
		evhttp_add_header(out, http_ui_headers[i][0],
		    http_ui_headers[i][1]);
	c->metrics.http_codes[200]++;
	http_send_reply(req, 200, "OK", buf);
	evbuffer_free(buf);
}

/* Returns the FNV-1a hash of a node name. */
static uint32_t
http_ui_hash(const char *s)
{
	uint32_t	 h = 2166136261u;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return (h);
}

/* Orders nodes by name, for qsort(). */
static int
http_ui_node_cmp(const void *a, const void *b)
{
	return (strcmp(((const struct http_ui_node *)a)->name,
	    ((const struct http_ui_node *)b)->name));
}

/*
 * Counts the job's ranks by node into *nodesp (caller frees), in one pass
 * with a table of node names, each by the state it shows (schedule_rank_state(): a
 * lost node's are unknown, as in the summary).  Returns how many nodes, or
 * -1 out of memory.
 */
static ssize_t
http_ui_count_nodes(struct coord *c, struct job *job,
    struct http_ui_node **nodesp)
{
	struct http_ui_node	*nodes;
	struct rank		*r;
	struct ranks_memo	 memo;
	size_t			*slot, cap = 16, n = 0, h, i;
	int			 state;

	while (cap < job->nranks * 2)
		cap *= 2;
	nodes = calloc(job->nranks + 1, sizeof(*nodes));
	slot = calloc(cap, sizeof(*slot));	/* index + 1, 0 empty */
	if (nodes == NULL || slot == NULL) {
		free(nodes);
		free(slot);
		return (-1);
	}
	memset(&memo, 0, sizeof(memo));
	TAILQ_FOREACH(r, &job->ranks, entry) {
		if (r->node[0] == '\0')
			continue;
		for (h = http_ui_hash(r->node) & (cap - 1); slot[h] != 0 &&
		    strcmp(nodes[slot[h] - 1].name, r->node) != 0;
		    h = (h + 1) & (cap - 1))
			;
		if (slot[h] == 0) {
			memcpy(nodes[n].name, r->node, sizeof(nodes[n].name));
			nodes[n].min_step = nodes[n].max_step = -1;
			slot[h] = ++n;
		}
		i = slot[h] - 1;
		nodes[i].ranks++;
		state = schedule_rank_state(c, r, &memo);
		if (state >= 0 && state <= RANKS_STATE_UNKNOWN)
			nodes[i].states[state]++;
		if (r->step >= 0 && state != RANKS_STATE_UNKNOWN &&
		    state != DYNPROF__V1__RANK_STATE__RANK_GONE) {
			if (nodes[i].min_step < 0 || r->step < nodes[i].min_step)
				nodes[i].min_step = r->step;
			if (r->step > nodes[i].max_step)
				nodes[i].max_step = r->step;
		}
	}
	free(slot);
	if (n > 1)
		qsort(nodes, n, sizeof(*nodes), http_ui_node_cmp);
	*nodesp = nodes;
	return ((ssize_t)n);
}

/* A GET /v1/jobs/J/nodes being written. */
struct http_ui_nodes {
	char			 job[JOBID_MAX + 1];
	char			*head;		/* the object before "nodes" */
	struct http_ui_node	*nodes;
	size_t			 n, next;
};

/*
 * Writes the next rows of a nodes answer (the head first): at most
 * HTTP_UI_NODES_CHUNK, whether each node is connected, what it applied and
 * its ranks flagged and busy as the last straggler tick counted them
 * (straggler.c) looked up as they are written.
 */
static int
http_ui_nodes_fill(struct stream *s, struct evbuffer *buf)
{
	struct http_ui_nodes	*a = s->arg;
	const struct http_ui_node *u;
	struct node		*n;
	const struct node_job	*nj;
	json_t			*js;
	char			*text;
	size_t			 end;

	if (a->head != NULL) {
		/* An object: its closing brace replaced by the rows. */
		evbuffer_add(buf, a->head, strlen(a->head) - 1);
		evbuffer_add_printf(buf, ",\"nodes\":[");
		free(a->head);
		a->head = NULL;
	}
	end = a->next + HTTP_UI_NODES_CHUNK < a->n ? a->next +
	    HTTP_UI_NODES_CHUNK : a->n;
	for (; a->next < end; a->next++) {
		u = &a->nodes[a->next];
		n = schedule_node_find(s->coord, u->name);
		nj = n != NULL ? schedule_node_job(n, a->job, 0) : NULL;
		js = json_string(u->name);
		text = js != NULL ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
		json_decref(js);
		evbuffer_add_printf(buf, "%s[%s,\"%s\",%llu,%u,%lld,%lld,%u,%u,"
		    "%u,%u,%u,%u,%u,%u,%u,%u,%u,%u,%u]", a->next > 0 ? "," : "",
		    text ? text : "\"\"", n != NULL ? link_node_state(n) :
		    "lost",
		    nj != NULL ? (unsigned long long)nj->applied : 0ULL,
		    u->ranks, (long long)u->min_step, (long long)u->max_step,
		    nj != NULL ? nj->strag_ranks : 0,
		    u->states[DYNPROF__V1__RANK_STATE__RANK_ATTACHED],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_ARMED],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_PROFILING],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_DONE],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_SKIPPED],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_FAILED],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_GONE],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_OBSERVED],
		    u->states[DYNPROF__V1__RANK_STATE__RANK_OBSERVED_COMPLETE],
		    u->states[RANKS_STATE_UNKNOWN],
		    nj != NULL ? nj->busy_ranks : 0,
		    nj != NULL ? nj->busy_max_us : 0);
		free(text);
	}
	if (a->next < a->n)
		return (STREAM_MORE);
	evbuffer_add_printf(buf, "]}\n");
	return (STREAM_DONE);
}

/* Frees a nodes answer. */
static void
http_ui_nodes_release(struct stream *s)
{
	struct http_ui_nodes	*a = s->arg;

	free(a->head);
	free(a->nodes);
	free(a);
}

/*
 * GET /v1/jobs/J/nodes: the job's ranks aggregated by node, one row per node
 * in name order (fields: http_ui_node_fields), for the page's heat map.  One
 * pass over the ranks, then the rows streamed, HTTP_UI_NODES_CHUNK at a time.
 */
void
http_get_job_nodes(struct coord *c, struct evhttp_request *req,
    const char *name)
{
	struct job		*job;
	struct http_ui_nodes	*a;
	json_t			*head, *fields;
	ssize_t			 n;
	int64_t			 lag;
	int			 drop, k;

	if ((job = schedule_job_find(c, name)) == NULL) {
		http_error(c, req, 404, "job", "no job %s", name);
		return;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (n = http_ui_count_nodes(c, job, &a->nodes)) == -1) {
		free(a);
		http_error(c, req, 500, NULL, "out of memory");
		return;
	}
	a->n = (size_t)n;
	snprintf(a->job, sizeof(a->job), "%s", job->name);
	straggler_thresholds(c, job, &lag, &drop);
	fields = json_array();
	for (k = 0; http_ui_node_fields[k] != NULL; k++)
		json_array_append_new(fields,
		    json_string(http_ui_node_fields[k]));
	head = json_pack("{s:s,s:I,s:I,s:I,s:i,s:o}", "job", job->name,
	    "median_step", (json_int_t)straggler_median_step(job), "lag_steps",
	    (json_int_t)lag, "busy_median_us",
	    (json_int_t)straggler_busy_median_us(job), "busy_percent",
	    straggler_busy(c, job), "fields", fields);
	a->head = json_dumps(head, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(head);
	if (a->head == NULL) {
		free(a->nodes);
		free(a);
		http_error(c, req, 500, NULL, "out of memory");
		return;
	}
	if (stream_start(c, req, "application/json", http_ui_nodes_fill,
	    http_ui_nodes_release, a) == NULL) {
		free(a->head);
		free(a->nodes);
		free(a);
	}
}
