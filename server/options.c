/*
 * A window's and a job's profiler options: defaults, copy, parse from the
 * admin API's JSON, and the text form the store keeps.
 */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"
#include "model.h"

/* Sets options to the table's defaults (nothing set, MindSpore's). */
void
options_init(struct options *o)
{
	memset(o, 0, sizeof(*o));
	options_defaults(&options_coord, o);
}

/* Frees what options holds. */
void
options_clear(struct options *o)
{
	free(o->fwopts);
	o->fwopts = NULL;
}

/* Copies src into dst (dst must be cleared).  Returns 0 or -1. */
int
options_copy(struct options *dst, const struct options *src)
{
	*dst = *src;
	dst->fwopts = NULL;
	if (src->fwopts != NULL && (dst->fwopts = strdup(src->fwopts)) == NULL)
		return (-1);
	return (0);
}

/* Where struct options keeps each row of the options table. */
const struct options_layer options_coord =
    OPTIONS_LAYER("coordinator", struct options);

/*
 * Applies a JSON object of profiler options onto o: typed MindSpore keys are
 * checked and set, every other key is kept as a framework option.  On error
 * returns -1 with *field (the key) and *why set; o is then unchanged.
 */
int
options_parse(const void *jv, struct options *o, const char **field,
    const char **why)
{
	const json_t	*obj = jv;
	json_t		*fw, *value;
	struct options	 n;
	const struct options_row *r;
	const char	*key;
	char		*text;
	json_int_t	 iv;

	if (!json_is_object(obj)) {
		*field = NULL;
		*why = "options must be a JSON object";
		return (-1);
	}
	n = *o;
	if (o->fwopts != NULL)
		fw = json_loads(o->fwopts, 0, NULL);
	else
		fw = NULL;
	if (fw == NULL || !json_is_object(fw)) {
		json_decref(fw);
		fw = json_object();
	}
	json_object_foreach((json_t *)obj, key, value) {
		if ((r = options_find(OPTIONS_DYNPROF, key)) == NULL) {
			if (strcmp(key, "start_step") == 0 ||
			    strcmp(key, "stop_step") == 0) {
				*field = key;
				*why = "steps are not options";
				goto fail;
			}
			json_object_set(fw, key, value);
			continue;
		}
		*field = r->name;
		if (r->type == OPTIONS_BOOL) {
			if (!json_is_boolean(value)) {
				*why = "must be true or false";
				goto fail;
			}
			iv = json_is_true(value);
		} else {
			if (!json_is_integer(value)) {
				*why = "must be an integer";
				goto fail;
			}
			iv = json_integer_value(value);
			if (!options_in_range(r, iv)) {
				*why = "out of range";
				goto fail;
			}
		}
		options_set(&options_coord, options_index(r), &n, iv);
	}
	n.fwopts = NULL;
	if (json_object_size(fw) > 0) {
		text = json_dumps(fw, JSON_COMPACT | JSON_SORT_KEYS);
		if (text == NULL) {
			*field = NULL;
			*why = "framework options cannot be encoded";
			goto fail;
		}
		if (strlen(text) >= SEG_FWOPTS_MAX) {
			free(text);
			*field = "options";
			*why = "framework options over 4095 bytes of JSON";
			goto fail;
		}
		n.fwopts = text;
	}
	json_decref(fw);
	free(o->fwopts);
	*o = n;
	return (0);
fail:
	json_decref(fw);
	return (-1);
}

/* Returns options as a new JSON object: typed keys and framework keys. */
void *
options_to_json(const struct options *o)
{
	json_t		*obj, *fw;
	size_t		 i;
	int64_t		 v;

	obj = json_object();
	for (i = 0; i < OPTIONS_N; i++) {
		v = options_get(&options_coord, i, o);
		json_object_set_new(obj, options_table[i].name,
		    options_table[i].type == OPTIONS_BOOL ? json_boolean(v) :
		    json_integer(v));
	}
	if (o->fwopts != NULL &&
	    (fw = json_loads(o->fwopts, 0, NULL)) != NULL) {
		if (json_is_object(fw))
			json_object_update_missing(obj, fw);
		json_decref(fw);
	}
	return (obj);
}

/* Returns options as compact JSON text; caller frees. */
char *
options_dump(const struct options *o)
{
	json_t	*obj = options_to_json(o);
	char	*text;

	text = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(obj);
	return (text);
}

/* Reads options back from options_dump() text.  Returns 0 or -1. */
int
options_load(const char *text, struct options *o)
{
	json_t		*obj;
	const char	*field, *why;
	int		 rc;

	options_clear(o);
	options_init(o);
	if ((obj = json_loads(text, 0, NULL)) == NULL)
		return (-1);
	rc = options_parse(obj, o, &field, &why);
	json_decref(obj);
	return (rc);
}

_Static_assert(OPTIONS_N <= 32, "options_over.given has a bit per row");

/* Sets ov to lay nothing over. */
void
options_over_init(struct options_over *ov)
{
	options_init(&ov->o);
	ov->given = 0;
}

/* Frees what ov holds; it lays nothing over then. */
void
options_over_clear(struct options_over *ov)
{
	options_clear(&ov->o);
	options_over_init(ov);
}

/* Copies src into dst (dst must be cleared).  Returns 0 or -1. */
int
options_over_copy(struct options_over *dst, const struct options_over *src)
{
	dst->given = src->given;
	return (options_copy(&dst->o, &src->o));
}

/*
 * Reads a JSON object of profiler options into ov (cleared): the typed rows
 * it gives and its framework options, checked as options_parse() checks
 * them.  Returns 0, or -1 with *field and *why set as options_parse() sets
 * them.
 */
int
options_over_parse(const void *jv, struct options_over *ov,
    const char **field, const char **why)
{
	const struct options_row *r;
	const char	*key;
	json_t		*value;

	options_over_init(ov);
	if (options_parse(jv, &ov->o, field, why) == -1)
		return (-1);
	json_object_foreach((json_t *)jv, key, value) {
		if ((r = options_find(OPTIONS_DYNPROF, key)) != NULL)
			ov->given |= 1U << options_index(r);
	}
	return (0);
}

/*
 * Lays ov over o: the rows ov gives replace o's, its framework options are
 * merged into o's.  Returns 0, or -1 with *why set (o then partly laid): the
 * framework options merged are too long (*field "options").
 */
int
options_over_apply(struct options *o, const struct options_over *ov,
    const char **field, const char **why)
{
	json_t		*fw;
	size_t		 i;
	int		 rc;

	for (i = 0; i < OPTIONS_N; i++)
		if (ov->given & (1U << i))
			options_set(&options_coord, i, o,
			    options_get(&options_coord, i, &ov->o));
	if (ov->o.fwopts == NULL)
		return (0);
	*field = "options";
	if ((fw = json_loads(ov->o.fwopts, 0, NULL)) == NULL) {
		*why = "framework options do not parse";
		return (-1);
	}
	/* Only framework keys, checked already: the merge's length is what
	 * can fail, named "options" (not a key of fw, freed here). */
	if ((rc = options_parse(fw, o, field, why)) == -1)
		*field = "options";
	json_decref(fw);
	return (rc);
}
