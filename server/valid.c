/*
 * The rules a window, a job, a rank, an event and an agent's row obey, in
 * one place for every way they come in: the admin API (http_jobs.c,
 * schedule.c), the agents (link_dispatch.c) and the store at start
 * (load.c).  A stored row is held to the rules the API and the agents were
 * held to when it was written: one that breaks them was written by
 * something else, and load.c quarantines it (docs/admin-api.md).
 */

#include <inttypes.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "model.h"
#include "nodename.h"
#include "store.h"
#include "utf8.h"

/* Returns 1 if step is one a rank can report: -1 (before the first step) or
 * 0 to COORD_STEP_MAX. */
int
valid_step(int64_t step)
{
	return (step >= -1 && step <= COORD_STEP_MAX);
}

/* Returns 1 if gen is a generation the counter may hold. */
int
valid_generation(uint64_t gen)
{
	return (gen <= COORD_GENERATION_MAX);
}

/* Checks a window's steps: 0 <= start <= stop <= COORD_WINDOW_STEP_MAX. */
int
valid_window_steps(int64_t start, int64_t stop, struct refusal *ref)
{
	if (start < 0 || start > COORD_WINDOW_STEP_MAX)
		return (refusal_set(ref, 400, "start_step", "start_step must "
		    "be between 0 and %lld", COORD_WINDOW_STEP_MAX));
	if (start > stop)
		return (refusal_set(ref, 400, "stop_step", "start_step %"
		    PRId64 " is after stop_step %" PRId64, start, stop));
	if (stop > COORD_WINDOW_STEP_MAX)
		return (refusal_set(ref, 400, "stop_step", "steps beyond %lld",
		    COORD_WINDOW_STEP_MAX));
	return (0);
}

/*
 * Checks a stored time window: its start and stop on the wall clock, in
 * order and within COORD_TIME_MAX_NS, no steps, a tolerance within
 * COORD_TOLERANCE_MAX_MS.  Returns 0, or -1 with ref filled.
 */
int
valid_window_times(int64_t start_ns, int64_t stop_ns, int64_t tolerance_ms,
    int64_t start_step, int64_t stop_step, struct refusal *ref)
{
	if (start_ns <= 0 || stop_ns <= start_ns || stop_ns > COORD_TIME_MAX_NS)
		return (refusal_set(ref, 400, "at", "times out of order or "
		    "range"));
	if (start_step != 0 || stop_step != 0)
		return (refusal_set(ref, 400, "start_step", "a time window "
		    "with steps"));
	if (tolerance_ms < 0 || tolerance_ms > COORD_TOLERANCE_MAX_MS)
		return (refusal_set(ref, 400, "tolerance_ms", "tolerance_ms "
		    "out of range"));
	return (0);
}

/*
 * Checks a window's rank list (NULL, "" or "all": every rank) and sets w's
 * from it ("all" kept as "").  Returns 0, or -1 with ref filled.
 */
int
valid_window_ranks(struct window *w, const char *text, struct refusal *ref)
{
	const char	*why;

	if (text == NULL)
		text = "";
	if (strlen(text) >= SEG_RANKS_MAX)
		return (refusal_set(ref, 400, "ranks", "ranks longer than %d "
		    "bytes", SEG_RANKS_MAX - 1));
	if (ranks_parse(text, &w->rankset, &why) == -1)
		return (refusal_set(ref, 400, "ranks", "%s", why));
	snprintf(w->ranks, sizeof(w->ranks), "%s", strcmp(text, "all") == 0 ?
	    "" : text);
	return (0);
}

/* Checks a window's output subdirectory (NULL: none) and sets w's. */
int
valid_window_subdir(struct window *w, const char *text, struct refusal *ref)
{
	const char	*why;

	if (text == NULL)
		text = "";
	if (!utf8_valid(text, strlen(text)))
		return (refusal_set(ref, 400, "output_subdir", "output "
		    "subdirectory is not valid UTF-8"));
	if (!subdir_valid(text, &why))
		return (refusal_set(ref, 400, "output_subdir", "%s", why));
	snprintf(w->output_subdir, sizeof(w->output_subdir), "%s", text);
	return (0);
}

/* Returns 1 if ns is a wall clock time a row may hold: 0 (unset) or after. */
static int
valid_time(int64_t ns)
{
	return (ns >= 0);
}

/*
 * Checks a stored window row with the API's rules and fills w (from
 * window_new()) from it.  Returns 0, or -1 with ref saying why.
 */
int
valid_window_row(const struct store_window *row, struct window *w,
    struct refusal *ref)
{
	const char	*why;

	if (!jobid_valid(row->job, &why))
		return (refusal_set(ref, 400, "job", "%s", why));
	if (row->id == 0 || row->id == UINT32_MAX)
		return (refusal_set(ref, 400, "id", "window id %u", row->id));
	if ((row->start_unix_ns != 0 ? valid_window_times(row->start_unix_ns,
	    row->stop_unix_ns, row->tolerance_ms, row->start_step,
	    row->stop_step, ref) : valid_window_steps(row->start_step,
	    row->stop_step, ref)) == -1 ||
	    valid_window_ranks(w, row->ranks, ref) == -1 ||
	    valid_window_subdir(w, row->output_subdir, ref) == -1)
		return (-1);
	if (row->options != NULL && options_load(row->options,
	    &w->options) == -1)
		return (refusal_set(ref, 400, "options", "options do not "
		    "parse"));
	if (row->state != WINDOW_STATE_SCHEDULED &&
	    row->state != WINDOW_STATE_CANCELLED)
		return (refusal_set(ref, 400, "state", "state %d", row->state));
	if (row->finished != 0 && row->finished != 1)
		return (refusal_set(ref, 400, "finished", "finished %d",
		    row->finished));
	if (!valid_time(row->created_ns) || !valid_time(row->ended_ns))
		return (refusal_set(ref, 400, "created", "negative time"));
	if (row->refused_reason != NULL && (strlen(row->refused_reason) >=
	    COORD_LEGACY_TEXT_MAX || !utf8_valid(row->refused_reason,
	    strlen(row->refused_reason))))
		return (refusal_set(ref, 400, "refused_reason", "a reason "
		    "over %d bytes or not UTF-8", COORD_LEGACY_TEXT_MAX - 1));
	if (!valid_generation(row->generation) ||
	    !valid_generation(row->ended_generation))
		return (refusal_set(ref, 400, "generation", "generation past "
		    "%llu", (unsigned long long)COORD_GENERATION_MAX));
	if (row->refused_reason != NULL) {
		w->refused = 1;
		if (row->refused_reason[0] != '\0' && (w->refused_why =
		    strdup(row->refused_reason)) == NULL)
			return (refusal_set(ref, 500, NULL, "out of memory"));
	}
	w->id = row->id;
	w->start_step = row->start_step;
	w->stop_step = row->stop_step;
	w->start_unix_ns = row->start_unix_ns;
	w->stop_unix_ns = row->stop_unix_ns;
	w->tolerance_ms = row->tolerance_ms;
	w->state = row->state;
	w->finished = row->finished;
	w->no_collect = row->no_collect != 0;
	w->created_ns = row->created_ns;
	w->ended_ns = row->ended_ns;
	w->created_gen = row->generation;
	w->ended_gen = row->ended_generation;
	return (0);
}

/*
 * Checks a stored job row (its own fields; its rules are rules_load()'s,
 * which drops a rule that does not parse) and reads its defaults into *o.
 * Returns 0, or -1 with ref saying why.
 */
int
valid_job_row(const struct store_job *row, struct options *o,
    struct refusal *ref)
{
	json_t		*cfg;
	const char	*why;
	int		 object;

	if (!jobid_valid(row->name, &why))
		return (refusal_set(ref, 400, "job", "%s", why));
	if (!valid_generation(row->generation))
		return (refusal_set(ref, 400, "generation", "generation %"
		    PRIu64 " beyond %llu", row->generation,
		    (unsigned long long)COORD_GENERATION_MAX));
	if (row->next_window_id == 0 || row->next_window_id == UINT32_MAX)
		return (refusal_set(ref, 400, "next_window_id", "next window "
		    "id %u", row->next_window_id));
	if (!valid_time(row->created_ns))
		return (refusal_set(ref, 400, "created", "negative time"));
	if (row->config != NULL) {
		cfg = json_loads(row->config, 0, NULL);
		object = json_is_object(cfg);
		json_decref(cfg);
		if (!object)
			return (refusal_set(ref, 400, "config", "config is no "
			    "JSON object"));
	}
	if (row->defaults != NULL && options_load(row->defaults, o) == -1)
		return (refusal_set(ref, 400, "defaults", "options do not "
		    "parse"));
	return (0);
}

/*
 * Checks a rank event's output directory or error as an agent sends it:
 * valid UTF-8, and an output directory shorter than COORD_EVENT_TEXT_MAX
 * (no path is longer).  Returns NULL, or why the event is refused.  An
 * error longer than that is cut by valid_event_error().
 */
const char *
valid_event_text(const char *output_dir, const char *error)
{
	if (output_dir != NULL) {
		if (strlen(output_dir) >= COORD_EVENT_TEXT_MAX)
			return ("output_dir longer than a path may be");
		if (!utf8_valid(output_dir, strlen(output_dir)))
			return ("output_dir is not valid UTF-8");
	}
	if (error != NULL && !utf8_valid(error, strlen(error)))
		return ("error is not valid UTF-8");
	return (NULL);
}

/*
 * Returns the length error is kept at: all of it, or its first bytes under
 * COORD_EVENT_TEXT_MAX up to the last whole UTF-8 character (error is valid
 * UTF-8).
 */
size_t
valid_event_error_len(const char *error)
{
	size_t	 n = strlen(error);

	if (n < COORD_EVENT_TEXT_MAX)
		return (n);
	n = COORD_EVENT_TEXT_MAX - 1;
	/* Back over continuation bytes to the start of the cut character. */
	while (n > 0 && ((unsigned char)error[n] & 0xc0) == 0x80)
		n--;
	return (n);
}

/* Checks a stored rank row with the agents' rules.  Returns 0 or -1. */
int
valid_rank_row(const struct store_rank *row, struct refusal *ref)
{
	const char	*why;

	if (!jobid_valid(row->job, &why))
		return (refusal_set(ref, 400, "job", "%s", why));
	if (row->rank < 0)
		return (refusal_set(ref, 400, "rank", "negative rank"));
	if (row->node != NULL && row->node[0] != '\0' &&
	    !nodename_valid(row->node, &why))
		return (refusal_set(ref, 400, "node", "%s", why));
	if (row->pid < 0)
		return (refusal_set(ref, 400, "pid", "negative pid"));
	if (!valid_step(row->step))
		return (refusal_set(ref, 400, "step", "step out of range"));
	if (row->state < DYNPROF__V1__RANK_STATE__RANK_ATTACHED ||
	    row->state > RANKS_STATE_LAST)
		return (refusal_set(ref, 400, "state", "state %d",
		    row->state));
	if (row->last_event < 0 ||
	    row->last_event > EVENT_KIND_LAST)
		return (refusal_set(ref, 400, "last_event", "event kind %d",
		    row->last_event));
	if ((why = valid_event_text(row->output_dir, row->error)) != NULL)
		return (refusal_set(ref, 400, "output_dir", "%s", why));
	if (row->error != NULL &&
	    valid_event_error_len(row->error) != strlen(row->error))
		return (refusal_set(ref, 400, "error", "error longer than "
		    "%d bytes", COORD_EVENT_TEXT_MAX - 1));
	if (!valid_time(row->arrived_ns) || !valid_time(row->gone_ns))
		return (refusal_set(ref, 400, "time", "negative time"));
	if (row->owner < 0 || row->owner > (int64_t)UINT32_MAX + 1)
		return (refusal_set(ref, 400, "owner", "owner is no uid + 1"));
	return (0);
}

/* Checks a stored event of a rank.  Returns 0 or -1. */
int
valid_event_row(const char *job, int32_t rank, const struct rank_event *ev,
    struct refusal *ref)
{
	const char	*why;

	if (!jobid_valid(job, &why))
		return (refusal_set(ref, 400, "job", "%s", why));
	if (rank < 0)
		return (refusal_set(ref, 400, "rank", "negative rank"));
	if (ev->kind <= 0 ||
	    ev->kind > EVENT_KIND_LAST)
		return (refusal_set(ref, 400, "kind", "event kind %d",
		    ev->kind));
	if (!valid_step(ev->step))
		return (refusal_set(ref, 400, "step", "step out of range"));
	return (0);
}

/* Checks a stored agent's row: its node's name.  Returns 0 or -1. */
int
valid_agent_row(const char *node, struct refusal *ref)
{
	const char	*why;

	if (!nodename_valid(node, &why))
		return (refusal_set(ref, 400, "node", "%s", why));
	return (0);
}
