/*
 * A refused request or change, as the model says it: a status, the field at
 * fault and a message.  The admin API renders it (http_refused()); the model
 * knows no protocol.
 */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "refusal.h"
#include "utf8.h"

/* Fills ref with the answer to a refused request or change.  Returns -1. */
int
refusal_set(struct refusal *ref, int code, const char *field,
    const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	/* Cut short, a message must not end inside a UTF-8 character: it
	 * would not be valid JSON text. */
	if (vsnprintf(ref->msg, sizeof(ref->msg), fmt, ap) >=
	    (int)sizeof(ref->msg))
		utf8_cut_partial(ref->msg);
	va_end(ap);
	ref->code = code;
	ref->field = field;
	return (-1);
}

/*
 * Fills ref with the refusal of a window's options, field and why as
 * options_parse() set them (field may be a key of the body: copied).
 * Returns -1.
 */
int
refusal_options(struct refusal *ref, const char *field, const char *why)
{
	if (field != NULL && strcmp(field, "options") != 0) {
		snprintf(ref->fieldbuf, sizeof(ref->fieldbuf), "options.%s",
		    field);
		field = ref->fieldbuf;
	} else
		field = "options";
	return (refusal_set(ref, 400, field, "%s: %s", field, why));
}
