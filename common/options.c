/*
 * The profiler options' table (options.h) and the loops over it that every
 * layer shares: look a key up in a dialect, check a value, read and write a
 * layer's field, set defaults, convert from one layer to another.  No JSON
 * here: the library links this too.
 */

#include <string.h>
#include <strings.h>

#include "dynprof.h"
#include "options.h"
#include "segment.h"

#define OPTIONS_ROW(a, field, type, min, max, def, values, ms24, ms25,	\
	    ms26, ms27, tnpu, tnpu_names)					\
	{ #field, type, min, max, def, values,				\
	    { #field, ms24, ms25, ms26, ms27, tnpu },			\
	    { values, NULL, NULL, NULL, NULL, tnpu_names } },

/* Each dialect's name, as a job's dynprof.dialect file and status name it. */
static const char *const options_dialects[OPTIONS_NDIALECTS] = {
	[OPTIONS_DYNPROF] = "dynprof",
	[OPTIONS_MS24] = "mindspore-2.4",
	[OPTIONS_MS25] = "mindspore-2.5",
	[OPTIONS_MS26] = "mindspore-2.6",
	[OPTIONS_MS27] = "mindspore-2.7",
	[OPTIONS_TORCH_NPU] = "torch_npu",
};

const struct options_row options_table[OPTIONS_N] = {
	OPTIONS_ROWS(OPTIONS_ROW, _)
};

const struct options_layer options_seg =
    OPTIONS_LAYER("segment", struct seg_options);
const struct options_layer options_lib =
    OPTIONS_LAYER("library", struct dynprof_options);

/* Returns the row whose key in dialect d is key, or NULL. */
const struct options_row *
options_find(enum options_dialect d, const char *key)
{
	size_t	 i;

	for (i = 0; i < OPTIONS_N; i++) {
		if (options_table[i].keys[d] != NULL &&
		    strcmp(options_table[i].keys[d], key) == 0)
			return (&options_table[i]);
	}
	return (NULL);
}

/* Returns dialect d's name ("mindspore-2.4"), or "unknown". */
const char *
options_dialect_name(enum options_dialect d)
{
	if ((unsigned)d >= OPTIONS_NDIALECTS)
		return ("unknown");
	return (options_dialects[d]);
}

/* Finds the dialect named name.  Returns 0 with *d set, or -1. */
int
options_dialect_find(const char *name, enum options_dialect *d)
{
	size_t	 i;

	for (i = 0; i < OPTIONS_NDIALECTS; i++) {
		if (strcmp(options_dialects[i], name) == 0) {
			*d = (enum options_dialect)i;
			return (0);
		}
	}
	return (-1);
}

/*
 * Copies into buf (size bytes) the name value v of row r is written as in
 * dialect d.  Returns 0, or -1 when d writes it as a number, or v has no name
 * there (unset, out of range), or the name does not fit.
 */
int
options_value_name(const struct options_row *r, enum options_dialect d,
    int64_t v, char *buf, size_t size)
{
	const char	*p;
	size_t		 len;
	int64_t		 i;

	if ((unsigned)d >= OPTIONS_NDIALECTS || (p = r->forms[d]) == NULL ||
	    v < 0)
		return (-1);
	for (i = 0; i < v && p != NULL; i++)
		if ((p = strchr(p, ',')) != NULL)
			p++;
	if (p == NULL || (len = strcspn(p, ",")) == 0 || len >= size)
		return (-1);
	memcpy(buf, p, len);
	buf[len] = '\0';
	return (0);
}

/* Returns the index of row r in options_table. */
size_t
options_index(const struct options_row *r)
{
	return ((size_t)(r - options_table));
}

/* Returns 1 if v is a value of row r. */
int
options_in_range(const struct options_row *r, int64_t v)
{
	return (v >= r->min && v <= r->max);
}

/*
 * Reads a boolean as a person writes it: true, yes, on, 1 or false, no, off,
 * 0 (any case).  Returns 0 with *v set, or -1.
 */
int
options_bool_text(const char *s, int *v)
{
	if (strcasecmp(s, "true") == 0 || strcmp(s, "1") == 0 ||
	    strcasecmp(s, "yes") == 0 || strcasecmp(s, "on") == 0)
		*v = 1;
	else if (strcasecmp(s, "false") == 0 || strcmp(s, "0") == 0 ||
	    strcasecmp(s, "no") == 0 || strcasecmp(s, "off") == 0)
		*v = 0;
	else
		return (-1);
	return (0);
}

/* Returns row i's value in base, a structure of layer l. */
int64_t
options_get(const struct options_layer *l, size_t i, const void *base)
{
	const char	*p = (const char *)base + l->fields[i].off;
	uint8_t		 u8;
	int32_t		 i32;
	int64_t		 i64;

	switch (l->fields[i].size) {
	case 1:
		memcpy(&u8, p, sizeof(u8));
		return (u8);
	case 4:
		memcpy(&i32, p, sizeof(i32));
		return (i32);
	default:
		memcpy(&i64, p, sizeof(i64));
		return (i64);
	}
}

/* Sets row i in base, a structure of layer l, to v (a boolean to 0 or 1). */
void
options_set(const struct options_layer *l, size_t i, void *base, int64_t v)
{
	char	*p = (char *)base + l->fields[i].off;
	uint8_t	 u8;
	int32_t	 i32;

	if (options_table[i].type == OPTIONS_BOOL)
		v = v != 0;
	switch (l->fields[i].size) {
	case 1:
		u8 = (uint8_t)v;
		memcpy(p, &u8, sizeof(u8));
		break;
	case 4:
		i32 = (int32_t)v;
		memcpy(p, &i32, sizeof(i32));
		break;
	default:
		memcpy(p, &v, sizeof(v));
		break;
	}
}

/* Sets every row of base, a structure of layer l, to its default. */
void
options_defaults(const struct options_layer *l, void *base)
{
	size_t	 i;

	for (i = 0; i < OPTIONS_N; i++)
		options_set(l, i, base, options_table[i].def);
}

/*
 * Checks the integer rows of base, a structure of layer l, against their
 * ranges (booleans are read as != 0).  Returns the first row out of range, or
 * NULL.
 */
const struct options_row *
options_check(const struct options_layer *l, const void *base)
{
	size_t	 i;

	for (i = 0; i < OPTIONS_N; i++) {
		if (options_table[i].type == OPTIONS_INT &&
		    !options_in_range(&options_table[i],
		    options_get(l, i, base)))
			return (&options_table[i]);
	}
	return (NULL);
}

/* Copies every row from src (of layer from) to dst (of layer to). */
void
options_convert(const struct options_layer *to, void *dst,
    const struct options_layer *from, const void *src)
{
	size_t	 i;

	for (i = 0; i < OPTIONS_N; i++)
		options_set(to, i, dst, options_get(from, i, src));
}
