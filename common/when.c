/*
 * Parses a time window's start and duration (when.h).  Pure functions: the
 * caller gives now.  Every number is bounded before it is multiplied, so no
 * text overflows.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "when.h"

/* The longest duration either parses: a year, in ms. */
#define WHEN_SPAN_MAX_MS	(366LL * 86400 * 1000)

/* Reads exactly n digits at *s into *v and moves *s.  Returns 0 or -1. */
static int
when_digits(const char **s, int n, int *v)
{
	int	 i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*s)[i]))
			return (-1);
		*v = *v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	return (0);
}

/*
 * Parses "N" + unit (ms, s, m, h; none: s) into ms, N from 0 to
 * WHEN_SPAN_MAX_MS in ms.  Returns 0, or -1 with *why.
 */
static int
when_span_ms(const char *s, int64_t *ms, const char **why)
{
	int64_t		 n = 0, unit;
	const char	*p = s;

	if (!isdigit((unsigned char)*p)) {
		*why = "not a number followed by ms, s, m or h";
		return (-1);
	}
	while (isdigit((unsigned char)*p)) {
		n = n * 10 + (*p++ - '0');
		if (n > WHEN_SPAN_MAX_MS) {
			*why = "longer than a year";
			return (-1);
		}
	}
	if (strcmp(p, "ms") == 0)
		unit = 1;
	else if (*p == '\0' || strcmp(p, "s") == 0)
		unit = 1000;
	else if (strcmp(p, "m") == 0)
		unit = 60000;
	else if (strcmp(p, "h") == 0)
		unit = 3600000;
	else {
		*why = "a unit that is not ms, s, m or h";
		return (-1);
	}
	if (n > WHEN_SPAN_MAX_MS / unit) {
		*why = "longer than a year";
		return (-1);
	}
	*ms = n * unit;
	return (0);
}

/* Parses a duration ("10s", "1500ms", "2m", "1h", "10") into *ms. */
int
when_parse_duration_ms(const char *s, int64_t *ms, const char **why)
{
	return (when_span_ms(s, ms, why));
}

/*
 * Parses RFC 3339 "YYYY-MM-DDTHH:MM:SS[.fff...](Z|+HH:MM|-HH:MM)" (a space
 * or 't' for 'T', 'z' for 'Z') into ns since the epoch.  Returns 0, or -1
 * with *why.
 */
static int
when_rfc3339(const char *s, int64_t *out, const char **why)
{
	struct tm	 tm;
	int		 y, mo, d, h, mi, sec, oh, om, sign, digits = 0;
	int64_t		 frac = 0, t;
	time_t		 tt;

	*why = "not RFC 3339 (2026-12-05T12:00:00Z) nor +30s";
	if (when_digits(&s, 4, &y) == -1 || *s++ != '-' ||
	    when_digits(&s, 2, &mo) == -1 || *s++ != '-' ||
	    when_digits(&s, 2, &d) == -1 ||
	    (*s != 'T' && *s != 't' && *s != ' ') || !*s++ ||
	    when_digits(&s, 2, &h) == -1 || *s++ != ':' ||
	    when_digits(&s, 2, &mi) == -1 || *s++ != ':' ||
	    when_digits(&s, 2, &sec) == -1)
		return (-1);
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return (-1);
		for (; isdigit((unsigned char)*s); s++)
			if (digits++ < 9)
				frac = frac * 10 + (*s - '0');
		for (; digits < 9; digits++)
			frac *= 10;
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
		oh = om = 0;
		sign = 1;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if (when_digits(&s, 2, &oh) == -1 || *s++ != ':' ||
		    when_digits(&s, 2, &om) == -1 || oh > 23 || om > 59)
			return (-1);
	} else {
		*why = "a time without its zone (Z or +HH:MM)";
		return (-1);
	}
	if (*s != '\0')
		return (-1);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 ||
	    mi > 59 || sec > 60) {
		*why = "a date or time out of range";
		return (-1);
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((tt = timegm(&tm)) == (time_t)-1 || tm.tm_mday != d) {
		*why = "no such date";
		return (-1);
	}
	t = (int64_t)tt - sign * (oh * 3600 + om * 60);
	if (t < 0 || t >= WHEN_MAX_NS / 1000000000) {
		*why = "a time before 1970 or after 2099";
		return (-1);
	}
	*out = t * 1000000000 + frac;
	return (0);
}

/*
 * Parses a start: RFC 3339, or "+" and a span after now_ns (the wall clock,
 * ns).  Returns 0 with *out_ns, or -1 with *why.
 */
int
when_parse_at(const char *s, int64_t now_ns, int64_t *out_ns,
    const char **why)
{
	int64_t	 ms;

	if (s == NULL || *s == '\0') {
		*why = "empty";
		return (-1);
	}
	if (*s == '+') {
		if (when_span_ms(s + 1, &ms, why) == -1)
			return (-1);
		*out_ns = now_ns + ms * 1000000;
		return (0);
	}
	return (when_rfc3339(s, out_ns, why));
}
