/*
 * Windows that name ranks by what they are, not by number (docs/labels.md):
 * a label selector (select), node names (nodes), one rank per distinct value
 * of a label (one_per) and the group a rank communicates in (group_of: the
 * ranks that share every label of that rank but one).  The coordinator
 * resolves them, from the live ranks of the job it knows now, into the rank
 * list the window carries: what reaches a rank stays a rank list, and its
 * per-step cost does not change.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "labels.h"
#include "model.h"
#include "ranklist.h"

#define SELECT_NODES_MAX	64	/* names in nodes */
#define SELECT_VALUES_MAX	4096	/* distinct values one_per tracks */

struct select_run {
	char		 text[SEG_RANKS_MAX];
	size_t		 len;
	int		 ranges;
	int		 full;		/* a range did not fit */
	int32_t		 lo, hi;	/* the open range, lo -1: none */
	size_t		 count;
};

/* Whether node is one of the comma-separated names in list. */
static int
select_node_in(const char *list, const char *node)
{
	const char	*p = list, *e;
	size_t		 n = strlen(node);

	while (*p != '\0') {
		e = strchr(p, ',');
		if ((size_t)((e != NULL ? e : p + strlen(p)) - p) == n &&
		    strncmp(p, node, n) == 0)
			return (1);
		if (e == NULL)
			break;
		p = e + 1;
	}
	return (0);
}

/* Checks nodes: 1 to SELECT_NODES_MAX names, none empty or too long. */
static int
select_nodes_check(const char *list, struct refusal *ref)
{
	const char	*p = list, *e;
	size_t		 n;
	int		 count = 0;

	for (;;) {
		e = strchr(p, ',');
		n = (size_t)((e != NULL ? e : p + strlen(p)) - p);
		if (n == 0 || n >= COORD_NODE_MAX)
			return (refusal_set(ref, 400, "nodes", "nodes is "
			    "node names separated by commas, each 1 to %d "
			    "bytes", COORD_NODE_MAX - 1));
		if (++count > SELECT_NODES_MAX)
			return (refusal_set(ref, 400, "nodes", "more than "
			    "%d nodes", SELECT_NODES_MAX));
		if (e == NULL)
			return (0);
		p = e + 1;
	}
}

/* Closes the open range of s into its text. */
static void
select_flush(struct select_run *s)
{
	char	 buf[32];
	int	 n;

	if (s->lo < 0)
		return;
	if (s->lo == s->hi)
		n = snprintf(buf, sizeof(buf), "%s%" PRId32, s->len ? "," : "",
		    s->lo);
	else
		n = snprintf(buf, sizeof(buf), "%s%" PRId32 "-%" PRId32,
		    s->len ? "," : "", s->lo, s->hi);
	if (s->ranges == RANKS_MAX_RANGES || s->len + (size_t)n >=
	    sizeof(s->text))
		s->full = 1;
	else {
		memcpy(s->text + s->len, buf, (size_t)n + 1);
		s->len += (size_t)n;
		s->ranges++;
	}
	s->lo = -1;
}

/* Adds rank (in increasing order) to s. */
static void
select_add(struct select_run *s, int32_t rank)
{
	s->count++;
	if (s->lo >= 0 && rank == s->hi + 1) {
		s->hi = rank;
		return;
	}
	select_flush(s);
	s->lo = s->hi = rank;
}

/*
 * The selector of group_of: the labels of rank (canonical) but key vary, as
 * equality terms, into out.  Returns 0, or -1 with ref saying why.
 */
static int
select_group(struct job *job, const struct window_request *r, char *out,
    size_t len, struct refusal *ref)
{
	struct rank	**v;
	const char	*p, *e;
	size_t		 n, i, off = 0, k;
	char		 have[LABELS_VALUE_MAX + 1];

	v = schedule_rank_index(job, &n);
	for (i = 0; i < n && v[i]->rank != r->group_rank; i++)
		;
	if (i == n || v[i]->labels == NULL)
		return (refusal_set(ref, 409, "group_of", "rank %" PRId32
		    " of job %s %s", r->group_rank, job->name, i == n ?
		    "is not known" : "has no labels"));
	if (labels_value(v[i]->labels, r->group_vary, have,
	    sizeof(have)) == -1)
		return (refusal_set(ref, 409, "group_of", "rank %" PRId32
		    " has no label %s (its labels: %s)", r->group_rank,
		    r->group_vary, v[i]->labels));
	out[0] = '\0';
	for (p = v[i]->labels; p != NULL && *p != '\0'; p = e != NULL ?
	    e + 1 : NULL) {
		e = strchr(p, ',');
		k = e != NULL ? (size_t)(e - p) : strlen(p);
		if (strncmp(p, r->group_vary, strlen(r->group_vary)) == 0 &&
		    p[strlen(r->group_vary)] == '=')
			continue;
		off += (size_t)snprintf(out + off, len - off, "%s%.*s",
		    off > 0 ? "," : "", (int)k, p);
	}
	if (off == 0)
		snprintf(out, len, "%s", r->group_vary);	/* any of it */
	return (0);
}

/* Whether v (a value of one_per's label) was seen; adds it if not. */
static int
select_seen(char **seen, size_t *nseen, const char *v, int *full)
{
	size_t	 i;

	for (i = 0; i < *nseen; i++)
		if (strcmp(seen[i], v) == 0)
			return (1);
	if (*nseen == SELECT_VALUES_MAX || (seen[*nseen] = strdup(v)) ==
	    NULL) {
		*full = 1;
		return (1);
	}
	(*nseen)++;
	return (0);
}

/*
 * Resolves the ranks window request r of job name names by what they are
 * (r->select, r->nodes, r->one_per, r->group_of) into a rank list in out
 * (len bytes).  Returns 0 (out "" when r names ranks by number or not at
 * all), or -1 with ref saying why: a bad or unsatisfiable selection, or one
 * that does not fit a window's rank list.
 */
int
select_window_ranks(struct coord *c, const char *name,
    const struct window_request *r, char *out, size_t len,
    struct refusal *ref)
{
	struct select_run	 s;
	struct labels_selector	*sel = NULL, *grp = NULL;
	struct job		*job;
	struct rank		**v;
	char			 group[LABELS_MAX], have[LABELS_VALUE_MAX + 1];
	char			**seen = NULL;
	const char		*why;
	size_t			 n, i, nseen = 0, live = 0;
	uint64_t		 t0 = clock_mono_ns();
	int			 full = 0, rc = -1;

	out[0] = '\0';
	if (r->select == NULL && r->nodes == NULL && r->one_per == NULL &&
	    !r->has_group)
		return (0);
	if (r->ranks != NULL)
		return (refusal_set(ref, 400, "ranks", "give ranks, or name "
		    "ranks by select, nodes, one_per and group_of: not both"));
	/* Selectors parsed once, here, then matched against every rank. */
	if (r->select != NULL) {
		if ((sel = malloc(sizeof(*sel))) == NULL)
			return (refusal_set(ref, 500, NULL, "out of memory"));
		if (labels_selector_parse(r->select, sel, &why) == -1) {
			refusal_set(ref, 400, "select", "%s", why);
			goto out;
		}
	}
	if (r->nodes != NULL && select_nodes_check(r->nodes, ref) == -1)
		goto out;
	if (r->one_per != NULL && !labels_key_valid(r->one_per)) {
		refusal_set(ref, 400, "one_per", "one_per is a label's key, "
		    "such as pp");
		goto out;
	}
	if (r->has_group && !labels_key_valid(r->group_vary)) {
		refusal_set(ref, 400, "group_of", "group_of's vary is a label's "
		    "key, such as tp");
		goto out;
	}
	if ((job = schedule_job_find(c, name)) == NULL) {
		refusal_set(ref, 409, "select", "job %s has no ranks yet: "
		    "select, nodes, one_per and group_of name ranks the "
		    "coordinator knows", name);
		goto out;
	}
	if (r->has_group && select_group(job, r, group, sizeof(group),
	    ref) == -1)
		goto out;
	if ((r->one_per != NULL &&
	    (seen = calloc(SELECT_VALUES_MAX, sizeof(*seen))) == NULL) ||
	    (r->has_group && ((grp = malloc(sizeof(*grp))) == NULL ||
	    labels_selector_parse(group, grp, &why) == -1))) {
		refusal_set(ref, 500, NULL, "out of memory");
		goto out;
	}
	memset(&s, 0, sizeof(s));
	s.lo = -1;
	v = schedule_rank_index(job, &n);
	for (i = 0; i < n; i++) {
		if (v[i]->state == DYNPROF__V1__RANK_STATE__RANK_GONE)
			continue;
		live++;
		if (r->nodes != NULL && !select_node_in(r->nodes, v[i]->node))
			continue;
		if (sel != NULL && !labels_selector_match(sel, v[i]->labels))
			continue;
		if (grp != NULL && !labels_selector_match(grp, v[i]->labels))
			continue;
		if (r->one_per != NULL && (labels_value(v[i]->labels,
		    r->one_per, have, sizeof(have)) == -1 ||
		    select_seen(seen, &nseen, have, &full)))
			continue;
		select_add(&s, v[i]->rank);
	}
	select_flush(&s);
	if (full)
		refusal_set(ref, 400, "one_per", "more than %d distinct "
		    "values of %s", SELECT_VALUES_MAX, r->one_per);
	else if (s.count == 0)
		refusal_set(ref, 409, "select", "no live rank of job %s "
		    "matches (%zu live ranks): check the labels with GET "
		    "/v1/jobs/%s/ranks", name, live, name);
	else if (s.full)
		refusal_set(ref, 400, "select", "the selection is %zu ranks "
		    "that do not fit a window's rank list (%d ranges, %d "
		    "bytes at most): narrow it", s.count, RANKS_MAX_RANGES,
		    SEG_RANKS_MAX - 1);
	else {
		snprintf(out, len, "%s", s.text);
		rc = 0;
	}
out:
	c->metrics.select_last_ns = clock_mono_ns() - t0;
	free(sel);
	free(grp);
	for (i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	return (rc);
}
