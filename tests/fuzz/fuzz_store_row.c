/*
 * Fuzz target: the etcd store's row decoder (server/store_row.c) and the
 * checks load.c makes of what it decodes (server/valid.c), as the
 * coordinator reads a key and its value back at start.  The input is a
 * table (its first byte, modulo the tables), a key under the store's prefix
 * up to the first newline, then the value.  A row that decodes and passes
 * the checks must hold what the API would hold (a window's steps in order
 * and in range, a rank list that parses, a subdirectory that is one) and
 * must come back the same through the encoder under the same key; a
 * refusal must say why in a message the status (JSON) can carry.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord.h"
#include "store_row.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* A refusal's message must be a JSON string, as the log and /metrics
 * carry it. */
static void
fuzz_refused(const struct refusal *ref)
{
	json_t	*s;

	if (ref->code != 400 || (s = json_string(ref->msg)) == NULL)
		abort();
	json_decref(s);
}

/* Checks an accepted row as load.c would take it; returns 1 if accepted. */
static int
fuzz_check(struct row *row)
{
	struct window	*w;
	struct options	 o;
	struct refusal	 ref;
	int		 ok;

	memset(&ref, 0, sizeof(ref));
	switch (row->table) {
	case ROW_META:
		return (valid_generation(row->u.meta.generation));
	case ROW_JOBS:
		options_init(&o);
		ok = valid_job_row(&row->u.job, &o, &ref) == 0;
		options_clear(&o);
		if (ok && (row->u.job.generation > COORD_GENERATION_MAX ||
		    row->u.job.next_window_id == 0))
			abort();
		break;
	case ROW_WINDOWS:
		if ((w = window_new()) == NULL)
			return (0);
		ok = valid_window_row(&row->u.window, w, &ref) == 0;
		if (ok && (w->start_step < 0 || w->start_step > w->stop_step ||
		    w->stop_step > COORD_WINDOW_STEP_MAX || w->id == 0 ||
		    !subdir_valid(w->output_subdir, NULL) ||
		    ranks_parse(w->ranks, &w->rankset, NULL) == -1 ||
		    strcmp(w->ranks, "all") == 0))
			abort();
		window_free(w);
		break;
	case ROW_RANKS:
		ok = valid_rank_row(&row->u.rank, &ref) == 0;
		if (ok && (row->u.rank.rank < 0 ||
		    !valid_step(row->u.rank.step) ||
		    (row->u.rank.error != NULL &&
		    strlen(row->u.rank.error) >= COORD_EVENT_TEXT_MAX)))
			abort();
		break;
	case ROW_EVENTS: {
		struct rank_event	 ev = { row->u.event.kind,
		    row->u.event.window_id, row->u.event.step,
		    row->u.event.time_ns };

		ok = valid_event_row(row->u.event.job, row->u.event.rank, &ev,
		    &ref) == 0;
		break;
	}
	case ROW_AGENTS:
		ok = valid_agent_row(row->u.agent.node, &ref) == 0;
		break;
	default:
		abort();
	}
	if (!ok)
		fuzz_refused(&ref);
	return (ok);
}

/* Returns a row as the store writes it (caller frees), or NULL. */
static char *
fuzz_encode(const struct row *row)
{
	json_t	*obj;
	char	*text;

	if ((obj = row_encode(row->table, &row->u)) == NULL)
		return (NULL);
	text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(obj);
	return (text);
}

/* An accepted row, written as the store writes it, must decode under its
 * key and write the same again. */
static void
fuzz_roundtrip(const struct row *row, const char *key)
{
	struct row	 back;
	char		*text, *again;
	const char	*why;

	if ((text = fuzz_encode(row)) == NULL)
		return;
	if (row_decode(&back, row->table, key, text, strlen(text), &why) == -1)
		abort();
	if ((again = fuzz_encode(&back)) != NULL && strcmp(again, text) != 0)
		abort();
	free(again);
	row_clear(&back);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct row	 row;
	const uint8_t	*nl;
	const char	*why = NULL;
	char		 key[1024];
	size_t		 klen;
	enum row_table	 t;

	if (size < 1)
		return (0);
	t = (enum row_table)(data[0] % ROW_TABLES);
	data++;
	size--;
	if ((nl = memchr(data, '\n', size)) == NULL)
		return (0);
	klen = (size_t)(nl - data);
	if (klen >= sizeof(key) || memchr(data, '\0', klen) != NULL)
		return (0);
	memcpy(key, data, klen);
	key[klen] = '\0';
	size -= klen + 1;
	if (row_decode(&row, t, key, (const char *)nl + 1, size, &why) == -1) {
		if (why == NULL)
			abort();
		return (0);
	}
	if (row.obj == NULL || !json_is_object(row.obj))
		abort();
	if (fuzz_check(&row))
		fuzz_roundtrip(&row, key);
	row_clear(&row);
	return (0);
}
