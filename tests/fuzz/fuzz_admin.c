/*
 * Fuzz target: the admin API's request bodies (server/http.c), read as the
 * coordinator reads them (json_loadb, duplicates refused), then checked by the
 * two parsers that turn a body into a change or a 4xx answer:
 * http_window_parse() (POST /v1/jobs/J/windows) with the window
 * schedule_window_make() makes of it (with and without a job's default
 * options under it) and http_config_parse() (PUT /v1/jobs/J/config).
 * A refusal must name a 4xx or 500 status and give a message that encodes as
 * the JSON string of the answer; accepted options must round-trip through the
 * text the store keeps.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "coord.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The answer the coordinator would send for ref must be JSON. */
static void
fuzz_check_refusal(const struct refusal *ref)
{
	json_t	*s;

	if (ref->code != 400 && ref->code != 500)
		abort();
	if ((s = json_string(ref->msg)) == NULL)
		abort();	/* the answer would have no "error" */
	json_decref(s);
	if (ref->field != NULL && (s = json_string(ref->field)) != NULL)
		json_decref(s);
}

/* Options as stored (options_dump) must load back the same. */
static void
fuzz_roundtrip(const struct options *o)
{
	struct options	 back;
	char		*text, *again;

	if ((text = options_dump(o)) == NULL)
		return;
	options_init(&back);
	if (options_load(text, &back) == -1)
		abort();
	if ((again = options_dump(&back)) == NULL || strcmp(text, again) != 0)
		abort();
	free(again);
	free(text);
	options_clear(&back);
}

static void
fuzz_window(json_t *body, const struct options *defaults)
{
	struct window_request	 r;
	struct options_over	 ov;
	struct refusal	 ref;
	struct window		*w = NULL;

	if (http_window_parse(body, &r, &ov, &ref) == -1 ||
	    schedule_window_make(defaults, &r, &w, &ref) == -1) {
		if (w != NULL)
			abort();
		fuzz_check_refusal(&ref);
		options_over_clear(&ov);
		return;
	}
	if ((!r.has_start && !r.has_in) || (!r.has_stop && !r.has_steps))
		abort();
	fuzz_roundtrip(&w->options);
	window_free(w);
	options_over_clear(&ov);
}

static void
fuzz_config(json_t *body)
{
	struct refusal	 ref;
	struct options		 defaults;
	int64_t			 start, stop;

	options_init(&defaults);
	if (http_config_parse(body, &start, &stop, &defaults, &ref) == -1)
		fuzz_check_refusal(&ref);
	else {
		if (start > 0 && stop < start)
			abort();
		fuzz_roundtrip(&defaults);
	}
	options_clear(&defaults);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct options	 defaults;
	json_error_t	 err;
	json_t		*body, *fw;

	if (size == 0 || size > COORD_HTTP_BODY_MAX)
		return (0);		/* answered before any parse */
	body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
	    &err);
	if (body == NULL)
		return (0);
	if (!json_is_object(body)) {
		json_decref(body);
		return (0);
	}
	fuzz_window(body, NULL);
	/* A job whose PUT config set defaults, framework options included. */
	options_init(&defaults);
	defaults.profiler_level = 1;
	defaults.with_stack = 1;
	if ((fw = json_pack("{s:i, s:s}", "mstx", 1, "record_shapes", "yes")) !=
	    NULL) {
		defaults.fwopts = json_dumps(fw, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(fw);
	}
	fuzz_window(body, &defaults);
	options_clear(&defaults);
	fuzz_config(body);
	json_decref(body);
	return (0);
}
