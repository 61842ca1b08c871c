/*
 * A handle's log: what the library says goes to the callback the user gave
 * at open, if any; the library itself never writes to stderr.
 */

#include <stdarg.h>
#include <stdio.h>

#include "libdynprof.h"

/* Passes a message to the handle's log callback, if it has one. */
void
handle_log(const struct dynprof *h, enum dynprof_log_level level,
    const char *fmt, ...)
{
	char	 buf[1024];
	va_list	 ap;

	if (h == NULL || h->on_log == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	h->on_log(h->arg, level, buf);
}
