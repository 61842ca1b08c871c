/*
 * The profiler options' table (options.h) and the loops over it that every
 * layer shares: look a key up in a dialect, check a value, read and write a
 * layer's field, set defaults, convert from one layer to another.  No JSON
 * here: the library links this too.
 */

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dynprof.h"
#include "options.h"
#include "segment.h"

/* A dialect's column (key, form): its key, its form. */
#define OPTIONS_KEY(key, form)	key
#define OPTIONS_FORM(key, form)	form
#define OPTIONS_ROW(a, field, type, min, max, def, values, ms24, ms25,	\
	    ms26, ms27, tnpu)						\
	{ #field, type, min, max, def, values,				\
	    { #field, OPTIONS_KEY ms24, OPTIONS_KEY ms25, OPTIONS_KEY ms26,	\
	    OPTIONS_KEY ms27, OPTIONS_KEY tnpu },			\
	    { values, OPTIONS_FORM ms24, OPTIONS_FORM ms25,		\
	    OPTIONS_FORM ms26, OPTIONS_FORM ms27, OPTIONS_FORM tnpu } },

/*
 * Each dialect's name, as a job's dynprof.dialect file and status name it,
 * and whether its file can target ranks (else every rank reads it alike).
 */
static const struct {
	const char	*name;
	int		 ranks;
} options_dialects[OPTIONS_NDIALECTS] = {
	[OPTIONS_DYNPROF] = { "dynprof", 1 },
	[OPTIONS_MS24] = { "mindspore-2.4", 0 },
	[OPTIONS_MS25] = { "mindspore-2.5", 0 },
	[OPTIONS_MS26] = { "mindspore-2.6", 0 },
	[OPTIONS_MS27] = { "mindspore-2.7", 0 },
	[OPTIONS_TORCH_NPU] = { "torch_npu", 1 },
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
	return (options_dialects[d].name);
}

/* Returns 1 if dialect d can target ranks. */
int
options_dialect_ranks(enum options_dialect d)
{
	return ((unsigned)d < OPTIONS_NDIALECTS && options_dialects[d].ranks);
}

/* Finds the dialect named name.  Returns 0 with *d set, or -1. */
int
options_dialect_find(const char *name, enum options_dialect *d)
{
	size_t	 i;

	for (i = 0; i < OPTIONS_NDIALECTS; i++) {
		if (strcmp(options_dialects[i].name, name) == 0) {
			*d = (enum options_dialect)i;
			return (0);
		}
	}
	return (-1);
}

/*
 * How value v of row r is written in dialect d.  Returns OPTIONS_FORM_PLAIN
 * (the dialect has no form for it: as it is), OPTIONS_FORM_NAME (buf, size
 * bytes, holds its name), OPTIONS_FORM_NUMBER (*num holds the dialect's
 * number for it), or OPTIONS_FORM_NONE (the form has no element for v:
 * unset, out of range, or a name that does not fit).
 */
int
options_value_form(const struct options_row *r, enum options_dialect d,
    int64_t v, char *buf, size_t size, int64_t *num)
{
	const char	*p;
	char		 el[64], *end;
	size_t		 len;
	int64_t		 i;
	long long	 n;

	if ((unsigned)d >= OPTIONS_NDIALECTS || (p = r->forms[d]) == NULL)
		return (OPTIONS_FORM_PLAIN);
	if (v < 0)
		return (OPTIONS_FORM_NONE);
	for (i = 0; i < v && p != NULL; i++)
		if ((p = strchr(p, ',')) != NULL)
			p++;
	if (p == NULL || (len = strcspn(p, ",")) == 0 || len >= sizeof(el))
		return (OPTIONS_FORM_NONE);
	memcpy(el, p, len);
	el[len] = '\0';
	if ((el[0] >= '0' && el[0] <= '9') || el[0] == '-') {
		n = strtoll(el, &end, 10);
		if (*end != '\0')
			return (OPTIONS_FORM_NONE);
		*num = n;
		return (OPTIONS_FORM_NUMBER);
	}
	if (len >= size)
		return (OPTIONS_FORM_NONE);
	memcpy(buf, el, len + 1);
	return (OPTIONS_FORM_NAME);
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
	int64_t	 num;

	return (options_value_form(r, d, v, buf, size, &num) ==
	    OPTIONS_FORM_NAME ? 0 : -1);
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
