/*
 * A rank's trace summary's one text form, and its checks (tracesum.h):
 *
 *	sum2 FORMAT FILES EVENTS STEPS_SEEN STEPS OPS COMM_OP[ ERROR]
 *	sum1 FORMAT FILES EVENTS STEPS_SEEN STEPS OPS[ ERROR]
 *
 * FORMAT "-" for none; STEPS "-" or STEP:DUR_US:COMM_US,... by step (COMM_US
 * '?' not known); OPS "-" or TOTAL_US:COUNT:NAME,... busiest first, the name
 * with '%', ',' and every byte at or below a space or at 0x7f as %XX;
 * COMM_OP "-" or one TOTAL_US:COUNT:NAME; ERROR the rest of the line.  sum1
 * is a summary without the time in collectives (comm_read 0: an agent
 * before it, kept in a queue file or a store), its steps STEP:DUR_US.  One
 * line, under TRACESUM_TEXT_MAX bytes: the least busy operators are left
 * out of one that would not fit.
 */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* Appends sep and op's "TOTAL_US:COUNT:NAME" (NAME %XX-escaped). */
static int
tracesum_put_op(char *buf, size_t len, size_t *off, const char *sep,
    const struct tracesum_op *op)
{
	const unsigned char	*p;
	int			 rc;

	rc = tracesum_put(buf, len, off, "%s%" PRId64 ":%" PRIu64 ":", sep,
	    op->total_us, op->count);
	for (p = (const unsigned char *)op->name; rc == 0 && *p != '\0'; p++)
		rc = tracesum_escaped(*p) ? tracesum_put(buf, len, off,
		    "%%%02X", *p) : tracesum_put(buf, len, off, "%c", *p);
	return (rc);
}

/* Writes s's text form with its first nops operators into buf. */
static int
tracesum_encode_ops(const struct tracesum *s, uint32_t nops, char *buf,
    size_t len)
{
	size_t			 off = 0;
	uint32_t		 i;
	int			 rc;

	rc = tracesum_put(buf, len, &off, "sum%d %s %" PRIu64 " %" PRIu64
	    " %" PRIu64 " ", s->comm_read ? 2 : 1, s->format[0] ? s->format :
	    "-", s->files, s->events, s->steps_seen);
	for (i = 0; rc == 0 && i < s->nsteps; i++) {
		rc = tracesum_put(buf, len, &off, "%s%" PRId64 ":%" PRId64,
		    i ? "," : "", s->steps[i].step, s->steps[i].dur_us);
		if (rc == 0 && s->comm_read && s->steps[i].comm_us < 0)
			rc = tracesum_put(buf, len, &off, ":?");
		else if (rc == 0 && s->comm_read)
			rc = tracesum_put(buf, len, &off, ":%" PRId64,
			    s->steps[i].comm_us);
	}
	if (rc == 0 && s->nsteps == 0)
		rc = tracesum_put(buf, len, &off, "-");
	rc |= tracesum_put(buf, len, &off, " ");
	for (i = 0; rc == 0 && i < nops; i++)
		rc = tracesum_put_op(buf, len, &off, i ? "," : "", &s->ops[i]);
	if (rc == 0 && nops == 0)
		rc = tracesum_put(buf, len, &off, "-");
	if (rc == 0 && s->comm_read && s->comm_op.name[0] != '\0')
		rc = tracesum_put_op(buf, len, &off, " ", &s->comm_op);
	else if (rc == 0 && s->comm_read)
		rc = tracesum_put(buf, len, &off, " -");
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

/* Reads a step's "STEP:DUR_US" (sum1), "STEP:DUR_US:COMM_US" (sum2) at *p
 * into s; moves *p past it. */
static int
tracesum_read_step(const char **p, struct tracesum *s)
{
	struct tracesum_step	*st;
	int64_t			 v[2];

	if (s->nsteps >= TRACESUM_STEPS_MAX || tracesum_pair(p, v) == -1)
		return (-1);
	st = &s->steps[s->nsteps++];
	st->step = v[0];
	st->dur_us = v[1];
	st->comm_us = -1;
	if (!s->comm_read)
		return (0);
	if (*(*p)++ != ':')
		return (-1);
	if (**p == '?') {
		(*p)++;
		return (0);
	}
	return (tracesum_num(p, &st->comm_us));
}

/* Reads "TOTAL_US:COUNT:NAME" (NAME %XX-escaped) at *p into op; moves *p
 * past it. */
static int
tracesum_read_op_into(const char **p, struct tracesum_op *op)
{
	int64_t			 v[2];
	size_t			 n;
	int			 h, l;

	if (tracesum_pair(p, v) == -1 || *(*p)++ != ':')
		return (-1);
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
	return (0);
}

/* Reads an operator at *p into s; moves *p past it. */
static int
tracesum_read_op(const char **p, struct tracesum *s)
{
	if (s->nops >= TRACESUM_OPS_MAX ||
	    tracesum_read_op_into(p, &s->ops[s->nops]) == -1)
		return (-1);
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
	if ((strncmp(p, "sum1 ", 5) != 0 && strncmp(p, "sum2 ", 5) != 0) ||
	    strlen(text) >= TRACESUM_TEXT_MAX)
		return (-1);
	s->comm_read = p[3] == '2';
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
	if (s->comm_read && (*p++ != ' ' || (*p == '-' ? (p++, 0) :
	    tracesum_read_op_into(&p, &s->comm_op)) == -1))
		return (-1);
	if (*p == ' ')
		snprintf(s->error, sizeof(s->error), "%s", p + 1);
	else if (*p != '\0')
		return (-1);
	return (tracesum_check(s, why));
}

/* Checks an operator as it came from outside.  Returns 0, or -1 with *why
 * set. */
static int
tracesum_check_op(struct tracesum_op *op, const char **why)
{
	const char	*p;

	op->name[TRACESUM_NAME_MAX] = '\0';
	if (op->total_us < 0 || op->name[0] == '\0' ||
	    !utf8_valid(op->name, strlen(op->name))) {
		*why = "a trace summary's operator without a usable name";
		return (-1);
	}
	for (p = op->name; *p != '\0'; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f) {
			*why = "a control character in a trace summary's "
			    "operator";
			return (-1);
		}
	return (0);
}

/*
 * Checks s as it came from outside (an agent's message, a stored row):
 * steps by step, none twice, durations and totals not negative, a step's
 * time in collectives -1 (not known) up to its duration (all -1 without
 * comm_read, and no comm_op then), names and the error valid UTF-8 without
 * control characters, the format [a-z0-9_-].
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
	for (i = 0; i < s->nsteps; i++) {
		if (s->steps[i].dur_us < 0 || s->steps[i].step < 0 ||
		    (i > 0 && s->steps[i].step <= s->steps[i - 1].step)) {
			*why = "a trace summary's steps out of order";
			return (-1);
		}
		if (!s->comm_read)
			s->steps[i].comm_us = -1;
		else if (s->steps[i].comm_us < -1 ||
		    s->steps[i].comm_us > s->steps[i].dur_us) {
			*why = "a trace summary's step with more time in "
			    "collectives than it lasted";
			return (-1);
		}
	}
	if (s->steps_seen < s->nsteps)
		s->steps_seen = s->nsteps;
	for (i = 0; i < s->nops; i++)
		if (tracesum_check_op(&s->ops[i], why) == -1)
			return (-1);
	if (!s->comm_read)
		memset(&s->comm_op, 0, sizeof(s->comm_op));
	else if (s->comm_op.name[0] != '\0' &&
	    tracesum_check_op(&s->comm_op, why) == -1)
		return (-1);
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

/* The median (the lower one of two) of the n values at d, which it sorts;
 * -1 for none. */
static int64_t
tracesum_median(int64_t *d, uint32_t n)
{
	if (n == 0)
		return (-1);
	qsort(d, n, sizeof(d[0]), tracesum_cmp_i64);
	return (d[(n - 1) / 2]);
}

/* The median of s's steps' durations (the lower one of two), or -1. */
int64_t
tracesum_step_median(const struct tracesum *s)
{
	int64_t		 d[TRACESUM_STEPS_MAX];
	uint32_t	 i;

	for (i = 0; i < s->nsteps && i < TRACESUM_STEPS_MAX; i++)
		d[i] = s->steps[i].dur_us;
	return (tracesum_median(d, i));
}

/* The median of s's steps' time in collectives (compute 0) or their compute
 * time (compute 1: duration less that), of the steps where it is known, or
 * -1. */
static int64_t
tracesum_comm_split(const struct tracesum *s, int compute)
{
	int64_t		 d[TRACESUM_STEPS_MAX];
	uint32_t	 i, n = 0;

	for (i = 0; i < s->nsteps && i < TRACESUM_STEPS_MAX; i++)
		if (s->steps[i].comm_us >= 0)
			d[n++] = compute ? s->steps[i].dur_us -
			    s->steps[i].comm_us : s->steps[i].comm_us;
	return (tracesum_median(d, n));
}

/* The median of s's steps' time in collectives, or -1 (not known). */
int64_t
tracesum_comm_median(const struct tracesum *s)
{
	return (tracesum_comm_split(s, 0));
}

/* The median of s's steps' compute time (duration less the time in
 * collectives), or -1 (not known). */
int64_t
tracesum_compute_median(const struct tracesum *s)
{
	return (tracesum_comm_split(s, 1));
}

/* Returns 1 if word (lowercase) is in the n bytes at s as a word: between
 * characters that are not letters. */
static int
tracesum_has_word(const char *s, size_t n, const char *word)
{
	size_t	 i, k, wl = strlen(word);

	for (i = 0; i + wl <= n; i++) {
		if (i > 0 && ((s[i - 1] >= 'a' && s[i - 1] <= 'z') ||
		    (s[i - 1] >= 'A' && s[i - 1] <= 'Z')))
			continue;
		for (k = 0; k < wl; k++)
			if ((s[i + k] | 0x20) != word[k])
				break;
		if (k == wl && !((s[i + k] >= 'a' && s[i + k] <= 'z') ||
		    (s[i + k] >= 'A' && s[i + k] <= 'Z')))
			return (1);
	}
	return (0);
}

/*
 * Returns 1 if an event named name is communication between ranks (a
 * collective, or a send or receive), else 0; docs/traces.md ("Time in
 * collectives") lists them:
 *
 *	gloo:*, nccl* (nccl:all_reduce, ncclKernel_*, ncclDevKernel_*),
 *	c10d::*, hccl* and hcom_* (Ascend's HCCL), record_param_comms;
 *	any other name but aten::'s holding, case and '_' ignored, allreduce,
 *	allgather, reducescatter, alltoall, barrier, or broadcast not followed
 *	by a letter (not BroadcastTo, broadcast_tensors), or the word send,
 *	recv, isend, irecv, sendrecv or receive.
 */
int
tracesum_comm_name(const char *name)
{
	static const char *const prefixes[] = { "gloo:", "nccl", "c10d::",
	    "hccl", "hcom_", "record_param_comms", NULL };
	static const char *const subs[] = { "allreduce", "allgather",
	    "reducescatter", "alltoall", "barrier", NULL };
	static const char *const words[] = { "send", "recv", "isend", "irecv",
	    "sendrecv", "receive", NULL };
	char		 low[TRACESUM_NAME_MAX + 1];
	const char	*b;
	size_t		 i, n = 0, k;

	if (strncmp(name, "aten::", 6) == 0)
		return (0);
	for (i = 0; prefixes[i] != NULL; i++)
		if (strncasecmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return (1);
	for (i = 0; name[i] != '\0' && n < sizeof(low) - 1; i++)
		if (name[i] != '_')
			low[n++] = (char)((name[i] >= 'A' && name[i] <= 'Z') ?
			    name[i] | 0x20 : name[i]);
	low[n] = '\0';
	for (i = 0; subs[i] != NULL; i++)
		if (strstr(low, subs[i]) != NULL)
			return (1);
	for (b = low; (b = strstr(b, "broadcast")) != NULL; b += 9)
		if (!(b[9] >= 'a' && b[9] <= 'z'))
			return (1);
	n = strlen(name);
	for (k = 0; words[k] != NULL; k++)
		if (tracesum_has_word(name, n, words[k]))
			return (1);
	return (0);
}
