/*
 * The model rebuilt from the store at start: store_load() hands each row to
 * one of the functions here, which checks it with the rules the API and the
 * agents are held to (valid.c) and puts it in place.  A row that breaks them
 * was written by something else: it is quarantined, that is logged, counted
 * (dynprof_store_rows_quarantined) and left in the store, never served nor
 * weighed against a new window.  The generation counter never goes back:
 * it starts at least at the highest generation any job row holds, whatever
 * the counter's own row says or whether it reads at all.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "jobid.h"
#include "log.h"
#include "model.h"
#include "store.h"
#include "store_row.h"

/* What one load (or one change, load_change()) keeps while the rows come
 * in. */
struct load {
	struct coord	*c;
	uint64_t	 floor;		/* the highest generation of a job row */
	int		 meta_bad;	/* the counter's row did not read */
	int		 change;	/* rows over a model that holds some */
	size_t		 nbad;
	struct log_limit ll;
	struct log_limit *lim;		/* ll, or the coordinator's */
};

/* Returns the index of a table's name in row_table_names. */
static int
load_table(const char *table)
{
	int	 t;

	for (t = 0; t < ROW_TABLES; t++)
		if (strcmp(row_table_names[t], table) == 0)
			return (t);
	return (ROW_META);
}

/* Quarantines a row of table named key: logged (limited), counted. */
static int
load_bad(void *arg, const char *table, const char *key, const char *why)
{
	struct load	*ld = arg;
	char		 shown[96];
	size_t		 i;
	int		 t = load_table(table);

	/* A key from the store may hold anything: shown printable. */
	for (i = 0; key[i] != '\0' && i < sizeof(shown) - 1; i++)
		shown[i] = (unsigned char)key[i] < 0x20 ||
		    (unsigned char)key[i] >= 0x7f ? '?' : key[i];
	shown[i] = '\0';
	ld->c->metrics.rows_quarantined[t]++;
	ld->nbad++;
	if (t == ROW_META)
		ld->meta_bad = 1;
	log_limited(ld->lim, LOG_LEVEL_QUIET, "load: %s row %s%s quarantined "
	    "(not served): %s", table, shown, key[i] != '\0' ? "..." : "",
	    why);
	return (0);
}

/* Quarantines a row refused by valid.c. */
static int
load_refused(struct load *ld, const char *table, const char *job,
    long long id, const struct refusal *ref)
{
	char	 key[160], why[sizeof(ref->msg) + 64];

	snprintf(key, sizeof(key), "%.*s/%lld", JOBID_MAX + 16,
	    job != NULL ? job : "", id);
	snprintf(why, sizeof(why), "%s: %s", ref->field != NULL ? ref->field :
	    "row", ref->msg);
	return (load_bad(ld, table, key, why));
}

/* Takes the generation counter. */
static void
load_generation(void *arg, uint64_t gen)
{
	struct load	*ld = arg;

	if (!valid_generation(gen)) {
		load_bad(ld, "meta", "generation", "generation beyond 2^53");
		return;
	}
	ld->c->generation = gen;
}

/* Takes a job's own fields; a row that breaks the rules is quarantined. */
static int
load_job(void *arg, const struct store_job *row)
{
	struct load	*ld = arg;
	struct coord	*c = ld->c;
	struct job	*job;
	struct options	 defaults;
	struct refusal	 ref;

	/* Agents may hold this generation, whatever else the row says. */
	if (valid_generation(row->generation) && row->generation > ld->floor)
		ld->floor = row->generation;
	memset(&ref, 0, sizeof(ref));
	options_init(&defaults);
	if (valid_job_row(row, &defaults, &ref) == -1 ||
	    schedule_job_find(c, row->name) != NULL) {
		if (ref.code == 0)
			refusal_set(&ref, 400, "job", "a second row");
		options_clear(&defaults);
		return (load_refused(ld, "jobs", row->name, 0, &ref));
	}
	if ((job = schedule_job_get(c, row->name)) == NULL) {
		options_clear(&defaults);
		return (-1);
	}
	job->generation = row->generation;
	job->next_window_id = row->next_window_id;
	if (row->config != NULL)
		job->config_json = strdup(row->config);
	options_clear(&job->defaults);
	job->defaults = defaults;
	job->created_ns = row->created_ns;
	if (row->rules != NULL && rules_load(job, row->rules) == -1)
		return (-1);
	return (0);
}

/*
 * Takes what named the ranks of a stored window (select.c) into w, checked:
 * a selector resolves to ranks a list holds, never to none.  Returns 0, or
 * -1 with ref saying why.
 */
static int
load_window_selector(const struct store_window *row, struct window *w,
    struct refusal *ref)
{
	if (row->selector == NULL)
		return (0);
	if (w->rankset.nranges == 0)
		return (refusal_set(ref, 400, "selector", "a selector with no "
		    "rank list"));
	if (select_selector_check(row->selector, ref) == -1)
		return (-1);
	if ((w->selector = strdup(row->selector)) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	return (0);
}

/* Takes a window row's trace store (PUT .../trace-store's when it was made)
 * into w.  Returns 0, or -1 with ref filled. */
static int
load_window_store(const struct store_window *row, struct window *w,
    struct refusal *ref)
{
	if (row->trace_store == NULL)
		return (0);
	if (rules_store_check(row->trace_store, ref) == -1)
		return (-1);
	if ((w->trace_store = strdup(row->trace_store)) == NULL)
		return (refusal_set(ref, 500, NULL, "out of memory"));
	return (0);
}

/* Takes a window of a known job; one that breaks the rules is quarantined. */
static int
load_window(void *arg, const struct store_window *row)
{
	struct load	*ld = arg;
	struct job	*job;
	struct window	*w;
	struct refusal	 ref;

	if ((job = schedule_job_find(ld->c, row->job)) == NULL) {
		refusal_set(&ref, 400, "job", "no job row");
		return (load_refused(ld, "windows", row->job, row->id, &ref));
	}
	/* Its id is not handed out again, whether it is served or not. */
	if (row->id != UINT32_MAX && row->id >= job->next_window_id)
		job->next_window_id = row->id + 1;
	if ((w = window_new()) == NULL)
		return (-1);
	memset(&ref, 0, sizeof(ref));
	if (valid_window_row(row, w, &ref) == -1 ||
	    load_window_selector(row, w, &ref) == -1 ||
	    load_window_store(row, w, &ref) == -1 ||
	    schedule_window_find(job, row->id) != NULL) {
		if (ref.code == 0)
			refusal_set(&ref, 400, "id", "a second row");
		window_free(w);
		return (load_refused(ld, "windows", row->job, row->id, &ref));
	}
	schedule_window_insert(job, w);
	return (0);
}

/* Takes a rank of a known job; one that breaks the rules is quarantined. */
static int
load_rank(void *arg, const struct store_rank *row)
{
	struct load	*ld = arg;
	struct job	*job;
	struct rank	*r;
	struct refusal	 ref;

	if (valid_rank_row(row, &ref) == -1)
		return (load_refused(ld, "ranks", row->job, row->rank, &ref));
	/* A job nobody scheduled has no row but its ranks': made again from
	 * them (its ranks keep their labels, which only an attach brings),
	 * within the bound on such jobs; reaped as before once no node
	 * serves it. */
	if ((job = schedule_job_peer(ld->c, row->job, "the store")) == NULL)
		return (0);
	/* Past a budget: refused, counted (schedule_rank_take()). */
	if ((r = schedule_rank_take(ld->c, job, row->rank, NULL)) == NULL)
		return (0);
	if (row->node != NULL)
		snprintf(r->node, sizeof(r->node), "%s", row->node);
	r->pid = row->pid;
	r->native = row->pid != 0 ||
	    (row->state != DYNPROF__V1__RANK_STATE__RANK_OBSERVED &&
	    row->state != DYNPROF__V1__RANK_STATE__RANK_OBSERVED_COMPLETE);
	r->step = row->step;
	r->state = row->state;
	r->window_id = row->window_id;
	schedule_rank_set_string(ld->c, r, &r->output_dir, row->output_dir);
	r->last_event = row->last_event;
	r->last_event_ns = row->last_event_ns;
	r->arrived_ns = row->arrived_ns;
	r->gone_ns = row->gone_ns;
	if (row->owner > 0)
		r->uid = row->owner - 1;
	/* Gone in a store of before these times: it went before now, which
	 * is all the windows made since need. */
	if (row->state == DYNPROF__V1__RANK_STATE__RANK_GONE &&
	    r->gone_ns == 0)
		r->gone_ns = clock_wall_ns();
	schedule_rank_set_string(ld->c, r, &r->error, row->error);
	schedule_rank_set_labels(ld->c, r, NULL, row->labels);
	return (0);
}

/* Takes an event of a rank of a known job, into its history. */
static int
load_event(void *arg, const char *name, int32_t rank,
    const struct rank_event *ev, const char *node, const char *detail)
{
	struct load	*ld = arg;
	struct job	*job;
	struct rank	*r;
	struct refusal	 ref;
	const char	*why, *where, *sum;
	char		 sha[65];
	uint64_t	 size;
	size_t		 where_len;
	int		 collect;

	if (valid_event_row(name, rank, ev, &ref) == -1)
		return (load_refused(ld, "events", name, rank, &ref));
	/* A collection's detail read before the event is taken: a row
	 * quarantined is neither in the rank's history nor in the counts. */
	collect = ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED ||
	    ev->kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED;
	if (collect && traces_detail_read(ev->kind, detail, &size, sha,
	    &where, &where_len, &sum, &why) == -1) {
		(void)refusal_set(&ref, 400, "detail", "%s", why);
		return (load_refused(ld, "events", name, rank, &ref));
	}
	if ((job = schedule_job_find(ld->c, name)) == NULL)
		return (0);
	/* A change may repeat what the model holds (a snapshot of the job's
	 * history, a batch written again): the first one kept, as a load
	 * keeps it. */
	if (ld->change && (r = schedule_rank_find(job, rank)) != NULL &&
	    schedule_rank_has_event(r, ev->window_id, ev->kind))
		return (0);
	if ((r = schedule_rank_take(ld->c, job, rank, NULL)) == NULL ||
	    schedule_rank_add_event(ld->c, r, ev, NULL) == -1)
		return (0);
	/* A collection's record comes back from its detail (traces.c). */
	if (collect && traces_note(ld->c, job, r, ev->window_id, ev->kind,
	    node, ev->time_ns, detail) == -1)
		return (load_bad(ld, "events", name, "a collected trace's "
		    "detail does not read"));
	return (0);
}

/* Takes the highest committed event seq of a node's agent process. */
static int
load_agent(void *arg, const char *name, uint64_t boot_id, uint64_t seq)
{
	struct load	*ld = arg;
	struct node	*n;
	struct refusal	 ref;

	if (valid_agent_row(name, &ref) == -1)
		return (load_refused(ld, "agents", name, 0, &ref));
	if ((n = schedule_node_get(ld->c, name)) == NULL)
		return (-1);
	n->boot_id = boot_id;
	n->acked_seq = n->seen_seq = seq;
	return (0);
}

/* Takes a batch of nodes' rows as the leader wrote it (a follower's
 * copy). */
static int
load_nodes(void *arg, const char *name, const char *text)
{
	struct load	*ld = arg;
	const char	*why;

	/* Counted with the agents' rows: nodes' too. */
	if (nodeview_take(ld->c, text, &why) == -1)
		return (load_bad(ld, "agents", name, why));
	return (0);
}

/*
 * Takes a job's row over the one the model holds (a change): its own
 * fields replaced, its windows and ranks kept; a job the model does not
 * hold is loaded.
 */
static int
load_job_change(void *arg, const struct store_job *row)
{
	struct load	*ld = arg;
	struct job	*job;
	struct window	*w;
	struct options	 defaults;
	struct refusal	 ref;
	char		*config = NULL;

	if ((job = schedule_job_find(ld->c, row->name)) == NULL)
		return (load_job(arg, row));
	if (valid_generation(row->generation) && row->generation > ld->floor)
		ld->floor = row->generation;
	memset(&ref, 0, sizeof(ref));
	options_init(&defaults);
	if (valid_job_row(row, &defaults, &ref) == -1) {
		options_clear(&defaults);
		return (load_refused(ld, "jobs", row->name, 0, &ref));
	}
	if (row->config != NULL && (config = strdup(row->config)) == NULL) {
		options_clear(&defaults);
		return (-1);
	}
	job->generation = row->generation;
	job->next_window_id = row->next_window_id;
	TAILQ_FOREACH(w, &job->windows, entry)
		if (w->id != UINT32_MAX && w->id >= job->next_window_id)
			job->next_window_id = w->id + 1;
	free(job->config_json);
	job->config_json = config;
	options_clear(&job->defaults);
	job->defaults = defaults;
	job->created_ns = row->created_ns;
	if (row->rules != NULL)
		return (rules_load(job, row->rules));
	rules_free(job->rules);
	job->rules = NULL;
	return (0);
}

/* Takes a window's row over the one the model holds (a change). */
static int
load_window_change(void *arg, const struct store_window *row)
{
	struct load	*ld = arg;
	struct job	*job;
	struct window	*old = NULL;
	int		 rc;

	/* A new job's first window comes before the job's row, which the
	 * same commit holds (change.c puts it last): the job is made here,
	 * its row taken over it next. */
	if ((job = schedule_job_find(ld->c, row->job)) == NULL &&
	    jobid_valid(row->job, NULL) &&
	    (job = schedule_job_get(ld->c, row->job)) == NULL)
		return (-1);
	if (job != NULL && (old = schedule_window_find(job, row->id)) != NULL)
		TAILQ_REMOVE(&job->windows, old, entry);
	rc = load_window(arg, row);
	if (old == NULL)
		return (rc);
	/* Refused (quarantined) or out of memory: the one before stays. */
	if (schedule_window_find(job, row->id) == NULL)
		schedule_window_insert(job, old);
	else
		window_free(old);
	return (rc);
}

/*
 * A row gone from the store (a change): a job's (forgotten whole, its
 * windows gone before it), a window's; a job's batches of events are
 * deleted once a snapshot of its history holds them (kept), or with the
 * job if nobody scheduled it (only a load says what is left of it).
 */
static int
load_gone(void *arg, int table, const char *name, uint32_t id)
{
	struct load	*ld = arg;
	struct job	*job;
	struct window	*w;

	if ((job = schedule_job_find(ld->c, name)) == NULL)
		return (0);
	switch (table) {
	case ROW_JOBS:
		(void)jobs_forget(ld->c, job, ld->c->generation);
		return (0);
	case ROW_WINDOWS:
		if ((w = schedule_window_find(job, id)) != NULL) {
			TAILQ_REMOVE(&job->windows, w, entry);
			window_free(w);
		}
		return (0);
	case ROW_EVENTS:
		return (schedule_job_unscheduled(job) ? -1 : 0);
	}
	return (-1);
}

/* Takes a view row of the leader (a follower's copy): the stragglers'
 * judgement of a batch of jobs, or legacy reports of a batch of nodes. */
static int
load_view(void *arg, const char *kind, const char *name, const char *text)
{
	struct load	*ld = arg;
	const char	*why = "an unknown kind";
	int		 rc = -1;

	if (strcmp(kind, STORE_VIEW_STRAG) == 0) {
		if ((rc = stragview_take(ld->c, name, text, &why)) == -1)
			return (load_bad(ld, "jobs", name, why));
	} else if (strcmp(kind, STORE_VIEW_LEGACY) == 0) {
		if ((rc = legacyview_take(ld->c, name, text, &why)) == -1)
			return (load_bad(ld, "agents", name, why));
	}
	return (rc == 0 ? 0 : load_bad(ld, "agents", name, why));
}

/* Takes a journal entry the store keeps (journal_load.c checks it). */
static int
load_journal(void *arg, const struct store_journal *sj)
{
	struct load	*ld = arg;

	return (journal_load_take(ld->c, sj));
}

/* Makes a load of c's store and its loader (a follower's: with nodes). */
static void
load_init(struct load *ld, struct store_loader *l, struct coord *c)
{
	memset(ld, 0, sizeof(*ld));
	ld->c = c;
	memset(l, 0, sizeof(*l));
	l->arg = ld;
	l->bad = load_bad;
	l->generation = load_generation;
	l->job = load_job;
	l->window = load_window;
	l->rank = load_rank;
	l->event = load_event;
	l->agent = load_agent;
	l->journal = load_journal;
	l->nodes = load_nodes;
	l->view = load_view;
}

/*
 * Rebuilds the coordinator's model from its store, at start; a follower's
 * copy (copy set) with the nodes as the leader last wrote them
 * (nodeview.c).
 */
static int
load_run(struct coord *c, int copy)
{
	struct load		 ld;
	struct store_loader	 l;
	int			 rc;

	load_init(&ld, &l, c);
	ld.lim = &ld.ll;
	if (!copy) {
		l.nodes = NULL;
		l.view = NULL;
	}
	memset(c->metrics.rows_quarantined, 0,
	    sizeof(c->metrics.rows_quarantined));
	rc = store_load(c->store, &l);
	if (rc == 0) {
		journal_load_end(c);
		journal_rebuild(c);	/* a store that keeps none (SQLite) */
	} else
		journal_load_free(c);
	if (ld.meta_bad || ld.floor > c->generation) {
		log_warnx("load: the generation counter reads %llu%s; the "
		    "highest a job holds is %llu: counting on from %llu",
		    (unsigned long long)c->generation, ld.meta_bad ?
		    " (its row is quarantined)" : "",
		    (unsigned long long)ld.floor, (unsigned long long)
		    (ld.floor > c->generation ? ld.floor : c->generation));
		if (ld.floor > c->generation)
			c->generation = ld.floor;
	}
	if (ld.nbad > 0)
		log_warnx("load: %zu stored rows quarantined: not served, left "
		    "in the store (dynprof_store_rows_quarantined)", ld.nbad);
	return (rc);
}

/* Rebuilds the coordinator's model from its store, at start or to lead. */
int
load_model(struct coord *c)
{
	return (load_run(c, 0));
}

/* Rebuilds a follower's copy of the model, with the leader's nodes. */
int
load_model_copy(struct coord *c)
{
	return (load_run(c, 1));
}

/*
 * Applies to a follower's copy what one key of the store holds now, as a
 * watch of the store told of it at revision rev (value NULL: deleted):
 * rows over those of the model, events not held yet, the event stream's
 * entries in the order of their revisions (published by the caller:
 * journal_load_publish()).  Returns what store_apply() does: 0 or 1, or
 * -1 if it cannot be applied alone (what it changed may be half done: the
 * caller loads the copy again whole).
 */
int
load_change(struct coord *c, const char *key, const char *value, size_t len,
    int64_t rev)
{
	struct load		 ld;
	struct store_loader	 l;
	int			 rc;

	load_init(&ld, &l, c);
	l.job = load_job_change;
	l.window = load_window_change;
	l.gone = load_gone;
	ld.change = 1;
	ld.lim = &c->log_load;
	rc = store_apply(c->store, key, value, len, rev, &l);
	if (rc != -1 && journal_load_merge(c) == -1)
		rc = -1;
	if (rc == -1)
		journal_load_free(c);
	if (ld.floor > c->generation)
		c->generation = ld.floor;
	return (rc);
}
