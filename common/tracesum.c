/*
 * A rank's trace summary's one text form, and its checks (tracesum.h):
 *
 *	sum1 FORMAT FILES EVENTS STEPS_SEEN STEPS OPS[ ERROR]
 *
 * FORMAT "-" for none; STEPS "-" or STEP:DUR_US,... by step; OPS "-" or
 * TOTAL_US:COUNT:NAME,... busiest first, the name with '%', ',' and every
 * byte at or below a space or at 0x7f as %XX; ERROR the rest of the line.
 * One line, under TRACESUM_TEXT_MAX bytes: the least busy operators are
 * left out of one that would not fit.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracesum.h"
#include "utf8.h"

/* An append to buf (len) at *off; returns -1 once it no longer fits. */
static int __attribute__((format(printf, 4, 5)))
tracesum_put(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	if (*off >= len)
		return (-1);
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *off)
		return (-1);
	*off += (size_t)n;
	return (0);
}

static int
tracesum_escaped(unsigned char ch)
{
	return (ch <= ' ' || ch == 0x7f || ch == '%' || ch == ',');
}

/* Writes s's text form with its first nops operators into buf. */
static int
tracesum_encode_ops(const struct tracesum *s, uint32_t nops, char *buf,
    size_t len)
{
	const unsigned char	*p;
	size_t			 off = 0;
	uint32_t		 i;
	int			 rc;

	rc = tracesum_put(buf, len, &off, "sum1 %s %" PRIu64 " %" PRIu64
	    " %" PRIu64 " ", s->format[0] ? s->format : "-", s->files,
	    s->events, s->steps_seen);
	for (i = 0; rc == 0 && i < s->nsteps; i++)
		rc = tracesum_put(buf, len, &off, "%s%" PRId64 ":%" PRId64,
		    i ? "," : "", s->steps[i].step, s->steps[i].dur_us);
	if (rc == 0 && s->nsteps == 0)
		rc = tracesum_put(buf, len, &off, "-");
	rc |= tracesum_put(buf, len, &off, " ");
	for (i = 0; rc == 0 && i < nops; i++) {
		rc = tracesum_put(buf, len, &off, "%s%" PRId64 ":%" PRIu64 ":",
		    i ? "," : "", s->ops[i].total_us, s->ops[i].count);
		for (p = (const unsigned char *)s->ops[i].name;
		    rc == 0 && *p != '\0'; p++)
			rc = tracesum_escaped(*p) ? tracesum_put(buf, len,
			    &off, "%%%02X", *p) : tracesum_put(buf, len, &off,
			    "%c", *p);
	}
	if (rc == 0 && nops == 0)
		rc = tracesum_put(buf, len, &off, "-");
	if (rc == 0 && s->error[0] != '\0')
		rc = tracesum_put(buf, len, &off, " %s", s->error);
	return (rc == 0 ? 0 : -1);
}

/*
 * Writes s's text form into buf (len bytes; TRACESUM_TEXT_MAX always
 * serves, the least busy operators left out if need be).  Returns 0, or -1
 * if even none of them fits.
 */
int
tracesum_encode(const struct tracesum *s, char *buf, size_t len)
{
	uint32_t	 nops = s->nops <= TRACESUM_OPS_MAX ? s->nops :
			    TRACESUM_OPS_MAX;

	for (;;) {
		if (tracesum_encode_ops(s, nops, buf, len) == 0)
			return (0);
		if (nops == 0)
			return (-1);
		nops--;
	}
}

/* Reads a decimal number, not negative, at *p; moves *p past it. */
static int
tracesum_num(const char **p, int64_t *v)
{
	char		*end;
	long long	 x;

	if (!(**p >= '0' && **p <= '9'))
		return (-1);
	x = strtoll(*p, &end, 10);
	if (end == *p || x < 0)
		return (-1);
	*v = x;
	*p = end;
	return (0);
}

static int
tracesum_hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	if (ch >= 'A' && ch <= 'F')
		return (ch - 'A' + 10);
	return (-1);
}

/* Reads "A:B" (two numbers) at *p into v; moves *p past it. */
static int
tracesum_pair(const char **p, int64_t v[2])
{
	if (tracesum_num(p, &v[0]) == -1 || *(*p)++ != ':' ||
	    tracesum_num(p, &v[1]) == -1)
		return (-1);
	return (0);
}

/* Reads a step's "STEP:DUR_US" at *p into s; moves *p past it. */
static int
tracesum_read_step(const char **p, struct tracesum *s)
{
	int64_t	 v[2];

	if (s->nsteps >= TRACESUM_STEPS_MAX || tracesum_pair(p, v) == -1)
		return (-1);
	s->steps[s->nsteps].step = v[0];
	s->steps[s->nsteps++].dur_us = v[1];
	return (0);
}

/* Reads an operator's "TOTAL_US:COUNT:NAME" (NAME %XX-escaped) at *p into
 * s; moves *p past it. */
static int
tracesum_read_op(const char **p, struct tracesum *s)
{
	struct tracesum_op	*op;
	int64_t			 v[2];
	size_t			 n;
	int			 h, l;

	if (s->nops >= TRACESUM_OPS_MAX || tracesum_pair(p, v) == -1 ||
	    *(*p)++ != ':')
		return (-1);
	op = &s->ops[s->nops];
	op->total_us = v[0];
	op->count = (uint64_t)v[1];
	for (n = 0; **p != '\0' && **p != ',' && **p != ' '; n++) {
		if (n >= TRACESUM_NAME_MAX)
			return (-1);
		if (**p == '%') {
			if ((h = tracesum_hex((*p)[1])) == -1 ||
			    (l = tracesum_hex((*p)[2])) == -1)
				return (-1);
			op->name[n] = (char)(h << 4 | l);
			*p += 3;
		} else
			op->name[n] = *(*p)++;
	}
	s->nops++;
	return (0);
}

/* Reads a list at *p, "-" (none) or items item() reads separated by ',',
 * into s; moves *p past it. */
static int
tracesum_list(const char **p, struct tracesum *s,
    int (*item)(const char **, struct tracesum *))
{
	if (**p == '-') {
		(*p)++;
		return (0);
	}
	for (;;) {
		if (item(p, s) == -1)
			return (-1);
		if (**p != ',')
			return (0);
		(*p)++;
	}
}

/*
 * Reads text (tracesum_encode()'s form) into s, and checks it as
 * tracesum_check() does.  Returns 0, or -1 with *why set.
 */
int
tracesum_decode(const char *text, struct tracesum *s, const char **why)
{
	const char	*p = text;
	int64_t		 v[3];
	size_t		 n;
	int		 i;

	memset(s, 0, sizeof(*s));
	*why = "a trace summary that does not read";
	if (strncmp(p, "sum1 ", 5) != 0 || strlen(text) >= TRACESUM_TEXT_MAX)
		return (-1);
	p += 5;
	n = strcspn(p, " ");
	if (n == 0 || n >= sizeof(s->format))
		return (-1);
	if (!(n == 1 && *p == '-'))
		memcpy(s->format, p, n);
	p += n;
	for (i = 0; i < 3; i++) {
		if (*p++ != ' ' || tracesum_num(&p, &v[i]) == -1)
			return (-1);
	}
	s->files = (uint64_t)v[0];
	s->events = (uint64_t)v[1];
	s->steps_seen = (uint64_t)v[2];
	if (*p++ != ' ' || tracesum_list(&p, s, tracesum_read_step) == -1 ||
	    *p++ != ' ' || tracesum_list(&p, s, tracesum_read_op) == -1)
		return (-1);
	if (*p == ' ')
		snprintf(s->error, sizeof(s->error), "%s", p + 1);
	else if (*p != '\0')
		return (-1);
	return (tracesum_check(s, why));
}

/*
 * Checks s as it came from outside (an agent's message, a stored row):
 * steps by step, none twice, durations and totals not negative, names and
 * the error valid UTF-8 without control characters, the format [a-z0-9_-].
 * Returns 0, or -1 with *why set.
 */
int
tracesum_check(struct tracesum *s, const char **why)
{
	const char	*p;
	uint32_t	 i;

	s->format[sizeof(s->format) - 1] = '\0';
	s->error[sizeof(s->error) - 1] = '\0';
	for (p = s->format; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '_' || *p == '-')) {
			*why = "a trace summary's format is not [a-z0-9_-]";
			return (-1);
		}
	if (s->nsteps > TRACESUM_STEPS_MAX || s->nops > TRACESUM_OPS_MAX) {
		*why = "a trace summary over its bounds";
		return (-1);
	}
	for (i = 0; i < s->nsteps; i++)
		if (s->steps[i].dur_us < 0 || s->steps[i].step < 0 ||
		    (i > 0 && s->steps[i].step <= s->steps[i - 1].step)) {
			*why = "a trace summary's steps out of order";
			return (-1);
		}
	if (s->steps_seen < s->nsteps)
		s->steps_seen = s->nsteps;
	for (i = 0; i < s->nops; i++) {
		s->ops[i].name[TRACESUM_NAME_MAX] = '\0';
		if (s->ops[i].total_us < 0 || s->ops[i].name[0] == '\0' ||
		    !utf8_valid(s->ops[i].name, strlen(s->ops[i].name))) {
			*why = "a trace summary's operator without a usable "
			    "name";
			return (-1);
		}
		for (p = s->ops[i].name; *p != '\0'; p++)
			if ((unsigned char)*p < ' ' || *p == 0x7f) {
				*why = "a control character in a trace "
				    "summary's operator";
				return (-1);
			}
	}
	for (p = s->error; *p != '\0'; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f) {
			*why = "a control character in a trace summary's error";
			return (-1);
		}
	if (!utf8_valid(s->error, strlen(s->error))) {
		*why = "a trace summary's error is not UTF-8";
		return (-1);
	}
	return (0);
}

/*
 * Copies the name of srclen bytes at src into dst (len bytes, at most
 * TRACESUM_NAME_MAX of them kept) as tracesum_check() takes it: a control
 * character, and every byte of a name that is not UTF-8, becomes '?', and
 * a cut never splits a character.
 */
void
tracesum_name(char *dst, size_t len, const char *src, size_t srclen)
{
	size_t	 i, n;
	int	 ascii;

	if (len == 0)
		return;
	n = srclen < len - 1 ? srclen : len - 1;
	if (n > TRACESUM_NAME_MAX)
		n = TRACESUM_NAME_MAX;
	ascii = !utf8_valid(src, srclen);
	for (i = 0; i < n; i++) {
		dst[i] = src[i];
		if ((unsigned char)dst[i] < ' ' || dst[i] == 0x7f ||
		    (ascii && (unsigned char)dst[i] >= 0x80))
			dst[i] = '?';
	}
	dst[n] = '\0';
	utf8_cut_partial(dst);
}

static int
tracesum_cmp_i64(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

/* The median of s's steps' durations (the lower one of two), or -1. */
int64_t
tracesum_step_median(const struct tracesum *s)
{
	int64_t		 d[TRACESUM_STEPS_MAX];
	uint32_t	 i;

	if (s->nsteps == 0)
		return (-1);
	for (i = 0; i < s->nsteps; i++)
		d[i] = s->steps[i].dur_us;
	qsort(d, s->nsteps, sizeof(d[0]), tracesum_cmp_i64);
	return (d[(s->nsteps - 1) / 2]);
}
