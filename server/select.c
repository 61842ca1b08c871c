/*
 * Windows that name ranks by what they are, not by number (docs/labels.md):
 * a label selector (select), node names (nodes), one rank per distinct value
 * of a label (one_per) and the group a rank communicates in (group_of: the
 * ranks that share every label of that rank but one).  The coordinator
 * resolves them, from the live ranks of the job it knows now, into the rank
 * list the window carries: what reaches a rank stays a rank list, and its
 * per-step cost does not change.
 *
 * The window keeps what it was asked as its selector (a text: one
 * "field=value" line each of select, nodes, one_per and group, group_of
 * being the selector of its group as resolved when the window was made), and
 * a rank that attaches later and matches it is added to the list
 * (select_window_grow()): the ranks of the list stay, whatever came since,
 * and one_per adds a rank only for a value no rank of the list has.
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

/* The fields of a selector's text, in their order. */
static const char *const select_fields[] = {
	"select", "nodes", "one_per", "group", NULL
};

/* A selector, parsed once and matched against every rank of a job. */
struct select_spec {
	struct labels_selector	*sel;		/* NULL: any */
	struct labels_selector	*grp;		/* group_of's, NULL: any */
	const char		*nodes;		/* NULL: any */
	const char		*one_per;	/* NULL: every match */
};

/* Ranks in increasing order, as ranges. */
struct select_run {
	struct rank_range	 r[RANKS_MAX_RANGES];
	int			 n;
	int			 full;		/* a range did not fit */
	size_t			 count;
	size_t			 ranges;	/* all of them, kept or not */
	int32_t			 last;		/* the last rank added */
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

/* Whether the n bytes at p hold a control byte. */
static int
select_has_control(const char *p, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return (1);
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
		if (n == 0 || n >= COORD_NODE_MAX ||
		    select_has_control(p, n))
			return (refusal_set(ref, 400, "nodes", "nodes is "
			    "node names separated by commas, each 1 to %d "
			    "printable bytes", COORD_NODE_MAX - 1));
		if (++count > SELECT_NODES_MAX)
			return (refusal_set(ref, 400, "nodes", "more than "
			    "%d nodes", SELECT_NODES_MAX));
		if (e == NULL)
			return (0);
		p = e + 1;
	}
}

/* Adds rank (in increasing order) to s. */
static void
select_add(struct select_run *s, int32_t rank)
{
	s->count++;
	if (s->n > 0 && !s->full && rank == s->r[s->n - 1].hi + 1) {
		s->r[s->n - 1].hi = rank;
		return;
	}
	if (s->full && rank == s->last + 1) {
		s->last = rank;
		return;
	}
	s->ranges++;
	s->last = rank;
	if (s->full || s->n == RANKS_MAX_RANGES) {
		s->full = 1;
		return;
	}
	s->r[s->n].lo = s->r[s->n].hi = rank;
	s->n++;
}

/* Writes the n ranges of r as a rank list into out.  Returns 0, or -1 when
 * it does not fit len bytes. */
static int
select_render(const struct rank_range *r, int n, char *out, size_t len)
{
	size_t	 off = 0;
	int	 i, k;

	out[0] = '\0';
	for (i = 0; i < n; i++) {
		if (r[i].lo == r[i].hi)
			k = snprintf(out + off, len - off, "%s%" PRId32,
			    i > 0 ? "," : "", r[i].lo);
		else
			k = snprintf(out + off, len - off, "%s%" PRId32 "-%"
			    PRId32, i > 0 ? "," : "", r[i].lo, r[i].hi);
		if (k < 0 || (size_t)k >= len - off) {
			out[0] = '\0';
			return (-1);
		}
		off += (size_t)k;
	}
	return (0);
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

/* Frees what sp holds. */
static void
select_spec_free(struct select_spec *sp)
{
	free(sp->sel);
	free(sp->grp);
	memset(sp, 0, sizeof(*sp));
}

/* Parses text as a selector of labels into *selp (malloc'd).  Returns 0, or
 * -1 with ref saying why (field named field). */
static int
select_parse_labels(const char *text, struct labels_selector **selp,
    const char *field, struct refusal *ref)
{
	const char	*why;

	if ((*selp = malloc(sizeof(**selp))) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	if (labels_selector_parse(text, *selp, &why) == -1)
		return (refusal_set(ref, 400, field, "%s", why));
	return (0);
}

/*
 * Adds to s the ranks of job that sp picks, in increasing order: the live
 * ones, but with base (a window's list) every rank of base and only the
 * live ranks that are not in it, one_per then adding a rank only for a value
 * no rank of base has.  *live counts the live ranks.  Returns 0, or -1 with
 * *full set when one_per met more than SELECT_VALUES_MAX values.
 */
static int
select_run_job(struct job *job, const struct select_spec *sp,
    const struct rank_set *base, struct select_run *s, size_t *live,
    int *full)
{
	struct rank	**v;
	char		 have[LABELS_VALUE_MAX + 1];
	char		**seen = NULL;
	size_t		 n, i, nseen = 0;
	int		 in;

	*live = 0;
	*full = 0;
	if (sp->one_per != NULL &&
	    (seen = calloc(SELECT_VALUES_MAX, sizeof(*seen))) == NULL) {
		*full = 1;
		return (-1);
	}
	v = schedule_rank_index(job, &n);
	/* The values the list has already (it stays): a second pass adds. */
	for (i = 0; sp->one_per != NULL && base != NULL && i < n; i++)
		if (ranks_contains(base, v[i]->rank) &&
		    labels_value(v[i]->labels, sp->one_per, have,
		    sizeof(have)) == 0)
			(void)select_seen(seen, &nseen, have, full);
	for (i = 0; i < n; i++) {
		in = base != NULL && ranks_contains(base, v[i]->rank);
		if (v[i]->state == DYNPROF__V1__RANK_STATE__RANK_GONE || in)
			continue;
		(*live)++;
		if (sp->nodes != NULL && !select_node_in(sp->nodes,
		    v[i]->node))
			continue;
		if (sp->sel != NULL && !labels_selector_match(sp->sel,
		    v[i]->labels))
			continue;
		if (sp->grp != NULL && !labels_selector_match(sp->grp,
		    v[i]->labels))
			continue;
		if (sp->one_per != NULL && (labels_value(v[i]->labels,
		    sp->one_per, have, sizeof(have)) == -1 ||
		    select_seen(seen, &nseen, have, full)))
			continue;
		select_add(s, v[i]->rank);
	}
	for (i = 0; i < nseen; i++)
		free(seen[i]);
	free(seen);
	return (*full ? -1 : 0);
}

/* Appends "field=value\n" to the selector text at *buf (off bytes used). */
static void
select_text_add(char *buf, size_t len, size_t *off, const char *field,
    const char *value)
{
	int	 k;

	if (value == NULL || *off >= len)
		return;
	k = snprintf(buf + *off, len - *off, "%s=%s\n", field, value);
	if (k > 0)
		*off += (size_t)k;
}

/*
 * Resolves the ranks window request r of job name names by what they are
 * (r->select, r->nodes, r->one_per, r->group_of) into a rank list in out
 * (len bytes), and the selector the window keeps into *selector (caller
 * frees).  Returns 0 (out "" and *selector NULL when r names ranks by number
 * or not at all), or -1 with ref saying why: a bad or unsatisfiable
 * selection, or one that does not fit a window's rank list.
 */
int
select_window_ranks(struct coord *c, const char *name,
    const struct window_request *r, char *out, size_t len, char **selector,
    struct refusal *ref)
{
	struct select_run	 s;
	struct select_spec	 sp;
	struct job		*job;
	char			 group[LABELS_MAX];
	char			 text[LABELS_SELECTOR_MAX + LABELS_MAX +
				    SELECT_NODES_MAX * COORD_NODE_MAX + 64];
	size_t			 live, off = 0;
	uint64_t		 t0 = clock_mono_ns();
	int			 full, rc = -1;

	out[0] = '\0';
	*selector = NULL;
	memset(&sp, 0, sizeof(sp));
	if (r->select == NULL && r->nodes == NULL && r->one_per == NULL &&
	    !r->has_group)
		return (0);
	if (r->ranks != NULL)
		return (refusal_set(ref, 400, "ranks", "give ranks, or name "
		    "ranks by select, nodes, one_per and group_of: not both"));
	/* Selectors parsed once, here, then matched against every rank. */
	if (r->select != NULL && select_parse_labels(r->select, &sp.sel,
	    "select", ref) == -1)
		goto out;
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
	if (r->has_group && (select_group(job, r, group, sizeof(group),
	    ref) == -1 || select_parse_labels(group, &sp.grp, "group_of",
	    ref) == -1))
		goto out;
	sp.nodes = r->nodes;
	sp.one_per = r->one_per;
	memset(&s, 0, sizeof(s));
	if (select_run_job(job, &sp, NULL, &s, &live, &full) == -1) {
		if (full)
			refusal_set(ref, 400, "one_per", "more than %d distinct "
			    "values of %s", SELECT_VALUES_MAX, r->one_per);
		else
			refusal_set(ref, 500, NULL, "out of memory");
	} else if (s.count == 0)
		refusal_set(ref, 409, "select", "no live rank of job %s "
		    "matches (%zu live ranks): check the labels with GET "
		    "/v1/jobs/%s/ranks", name, live, name);
	else if (s.full || select_render(s.r, s.n, out, len) == -1)
		refusal_set(ref, 400, "select", "the selection is %zu ranks "
		    "in %zu ranges, more than a window's rank list holds (%d "
		    "ranges, %d bytes: its size in every node's shared "
		    "memory): narrow it, or split it over several windows",
		    s.count, s.ranges, RANKS_MAX_RANGES, SEG_RANKS_MAX - 1);
	else {
		select_text_add(text, sizeof(text), &off, "select", r->select);
		select_text_add(text, sizeof(text), &off, "nodes", r->nodes);
		select_text_add(text, sizeof(text), &off, "one_per",
		    r->one_per);
		select_text_add(text, sizeof(text), &off, "group",
		    r->has_group ? group : NULL);
		if ((*selector = strdup(text)) == NULL) {
			out[0] = '\0';
			refusal_set(ref, 500, NULL, "out of memory");
		} else
			rc = 0;
	}
out:
	c->metrics.select_last_ns = clock_mono_ns() - t0;
	select_spec_free(&sp);
	return (rc);
}

/*
 * Copies field (select, nodes, one_per or group) of a window's selector
 * text into buf (len bytes).  Returns 0, or -1 when the text has none.
 */
int
select_selector_field(const char *text, const char *field, char *buf,
    size_t len)
{
	const char	*p, *e;
	size_t		 n = strlen(field);

	for (p = text; p != NULL && *p != '\0'; p = e != NULL ? e + 1 : NULL) {
		e = strchr(p, '\n');
		if (strncmp(p, field, n) != 0 || p[n] != '=')
			continue;
		p += n + 1;
		snprintf(buf, len, "%.*s", (int)(e != NULL ? (size_t)(e - p) :
		    strlen(p)), p);
		return (0);
	}
	return (-1);
}

/* Parses a window's selector text into sp.  Returns 0, or -1 with ref
 * saying why. */
static int
select_spec_load(const char *text, struct select_spec *sp, char *nodes,
    char *one_per, struct refusal *ref)
{
	char		 buf[LABELS_SELECTOR_MAX];
	const char	*p, *e;
	size_t		 i, n;

	memset(sp, 0, sizeof(*sp));
	for (p = text; *p != '\0'; p = e + 1) {
		if ((e = strchr(p, '\n')) == NULL)
			return (refusal_set(ref, 400, "selector", "a line "
			    "without its end"));
		for (i = 0; select_fields[i] != NULL; i++) {
			n = strlen(select_fields[i]);
			if (strncmp(p, select_fields[i], n) == 0 &&
			    p[n] == '=')
				break;
		}
		if (select_fields[i] == NULL)
			return (refusal_set(ref, 400, "selector", "no field "
			    "%.*s", (int)(e - p > 32 ? 32 : e - p), p));
	}
	if (select_selector_field(text, "select", buf, sizeof(buf)) == 0 &&
	    select_parse_labels(buf, &sp->sel, "selector", ref) == -1)
		return (-1);
	if (select_selector_field(text, "group", buf, sizeof(buf)) == 0 &&
	    select_parse_labels(buf, &sp->grp, "selector", ref) == -1)
		return (-1);
	if (select_selector_field(text, "nodes", nodes, SELECT_NODES_MAX *
	    COORD_NODE_MAX) == 0) {
		if (select_nodes_check(nodes, ref) == -1)
			return (-1);
		sp->nodes = nodes;
	}
	if (select_selector_field(text, "one_per", one_per,
	    LABELS_KEY_MAX + 1) == 0) {
		if (!labels_key_valid(one_per))
			return (refusal_set(ref, 400, "selector", "one_per "
			    "is no label key"));
		sp->one_per = one_per;
	}
	if (sp->sel == NULL && sp->grp == NULL && sp->nodes == NULL &&
	    sp->one_per == NULL)
		return (refusal_set(ref, 400, "selector", "no field"));
	return (0);
}

/* Checks a stored window's selector text.  Returns 0, or -1 with ref
 * saying why. */
int
select_selector_check(const char *text, struct refusal *ref)
{
	struct select_spec	 sp;
	char			 nodes[SELECT_NODES_MAX * COORD_NODE_MAX];
	char			 one_per[LABELS_KEY_MAX + 1];
	int			 rc;

	rc = select_spec_load(text, &sp, nodes, one_per, ref);
	select_spec_free(&sp);
	return (rc);
}

/* Orders ranges by their first rank. */
static int
select_range_cmp(const void *a, const void *b)
{
	const struct rank_range	*x = a, *y = b;

	return (x->lo < y->lo ? -1 : x->lo > y->lo);
}

/*
 * Re-resolves window w of job (it has a selector) against the job's ranks
 * now: its list and the live ranks that match and are not in it yet (one_per
 * adds a rank only for a value no rank of its list has).  Returns 1 with the
 * new list in out (len bytes), 0 when nothing is added, or -1 with ref
 * saying why the list cannot grow (the list stays as it is).
 */
int
select_window_grow(struct coord *c, struct job *job, const struct window *w,
    char *out, size_t len, struct refusal *ref)
{
	struct select_run	 s;
	struct select_spec	 sp;
	struct rank_range	 all[2 * RANKS_MAX_RANGES];
	char			 nodes[SELECT_NODES_MAX * COORD_NODE_MAX];
	char			 one_per[LABELS_KEY_MAX + 1];
	size_t			 live;
	uint64_t		 t0 = clock_mono_ns();
	int			 full, i, n, rc = -1;

	if (w->selector == NULL || w->rankset.nranges == 0)
		return (0);
	if (select_spec_load(w->selector, &sp, nodes, one_per, ref) == -1)
		goto out;
	memset(&s, 0, sizeof(s));
	if (select_run_job(job, &sp, &w->rankset, &s, &live, &full) == -1) {
		refusal_set(ref, 400, "one_per", full ? "more than %d distinct "
		    "values of %s" : "out of memory", SELECT_VALUES_MAX,
		    sp.one_per);
		goto out;
	}
	if (s.count == 0) {
		rc = 0;
		goto out;
	}
	/* The list and the ranks added, as one sorted list of ranges. */
	memcpy(all, w->rankset.ranges, (size_t)w->rankset.nranges *
	    sizeof(*all));
	memcpy(all + w->rankset.nranges, s.r, (size_t)s.n * sizeof(*all));
	n = w->rankset.nranges + s.n;
	qsort(all, (size_t)n, sizeof(*all), select_range_cmp);
	for (i = 1, s.n = 1; i < n; i++) {
		if ((int64_t)all[i].lo <= (int64_t)all[s.n - 1].hi + 1) {
			if (all[i].hi > all[s.n - 1].hi)
				all[s.n - 1].hi = all[i].hi;
		} else
			all[s.n++] = all[i];
	}
	if (s.full || s.n > RANKS_MAX_RANGES ||
	    select_render(all, s.n, out, len) == -1)
		refusal_set(ref, 400, "select", "%zu more ranks would not fit "
		    "the window's rank list (%d ranges, %d bytes at most)",
		    s.count, RANKS_MAX_RANGES, SEG_RANKS_MAX - 1);
	else
		rc = 1;
out:
	c->metrics.select_last_ns = clock_mono_ns() - t0;
	select_spec_free(&sp);
	return (rc);
}
