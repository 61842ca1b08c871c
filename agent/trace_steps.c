/*
 * A rank's trace read as it is packed (trace_pack.c), for its summary
 * (common/tracesum.h): each step's duration and the busiest operators.
 * Read are the Chrome trace event files the profilers write, by name:
 *
 *	*.pt.trace.json[.gz]	torch.profiler (Kineto, or the autograd
 *				profiler's export: a bare array of events)
 *	trace_view.json		torch_npu and MindSpore on Ascend
 *				(ASCEND_PROFILER_OUTPUT/)
 *	trace.json		dynprof's simulated ranks (examples/)
 *
 * Steps are the complete ("ph": "X") events named ProfilerStep#N; the
 * operators are the other complete events of category cpu_op, kernel,
 * gpu_memcpy, gpu_memset (or none, as the autograd export and Ascend's
 * hardware tasks have), summed by name.  A step's time in collectives is
 * how long within it some complete event of communication (of any category,
 * named as tracesum_comm_name() says) was open, on any thread or stream:
 * the union of those spans of its file, kept merged (at most
 * TRACE_STEPS_COMM_MAX disjoint ones; past that a step they may reach says
 * -1, not known), measured over the step once its file has ended.
 *
 * The JSON is read by yajl's streaming parser in the packer's chunks, so
 * memory is bounded whatever the trace's size: a string or number token
 * over TRACE_STEPS_TOKEN_MAX, nesting deeper than TRACE_STEPS_DEPTH_MAX,
 * or more than TRACE_STEPS_NAMES_MAX operators' names are refused or left
 * out (and said), never buffered.  A gzip file is inflated as it comes.
 * A file that is not JSON or ends early gives the summary's error (its
 * name and the byte); what it held before counts.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_parse.h>
#include <zlib.h>

#include "parts.h"
#include "tracesum.h"
#include "utf8.h"

#define TRACE_STEPS_TOKEN_MAX	(1024 * 1024)	/* bytes of a string */
#define TRACE_STEPS_NUMBER_MAX	64		/* bytes of a number */
#define TRACE_STEPS_DEPTH_MAX	64
#define TRACE_STEPS_NAMES_MAX	4096		/* operators summed */
#define TRACE_STEPS_INFLATE	(64 * 1024)
#define TRACE_STEPS_JSON_MAX	(64ULL << 30)	/* bytes read in all */
#define TRACE_STEPS_PREFIX	"ProfilerStep#"
#define TRACE_STEPS_COMM_MAX	65536		/* disjoint spans, 1 MiB */
#define TRACE_STEPS_COMM_NAMES	64		/* collectives summed */

/* An operator summed by name. */
struct trace_steps_op {
	char		 name[TRACESUM_NAME_MAX + 1];
	int64_t		 total_us;
	uint64_t	 count;
};

/* A time span, [lo, hi) in whole microseconds of its file's clock. */
struct trace_steps_span {
	int64_t		 lo, hi;
};

/* Where a kept step is: its file (by number) and its span. */
struct trace_steps_at {
	uint64_t	 file;
	int64_t		 lo;
	int		 has_ts;
};

/* The complete event being read. */
struct trace_steps_event {
	char		 name[TRACESUM_NAME_MAX + 1];
	size_t		 name_len;	/* as it was, before the cut */
	char		 ph[4];
	char		 cat[24];
	int		 has_cat;
	double		 dur;
	int		 has_dur;
	double		 ts;
	int		 has_ts;
};

enum trace_steps_key {
	KEY_OTHER,
	KEY_NAME,
	KEY_PH,
	KEY_CAT,
	KEY_DUR,
	KEY_TS,
	KEY_TRACE_EVENTS
};

struct trace_steps {
	yajl_handle		 h;
	z_stream		 z;
	int			 gz;		/* the file is gzip */
	int			 failed;	/* this file: the rest ignored */
	const char		*file;		/* being read */
	uint64_t		 file_bytes;	/* of JSON, this file */
	uint64_t		 json_bytes;	/* of JSON, every file */
	/* The token scan (trace_steps_scan()). */
	int			 in_str, esc;
	size_t			 run;
	int			 depth;
	int			 events_depth;	/* where events are: 0 none */
	int			 top_map;	/* the document is an object */
	enum trace_steps_key	 key;
	int			 in_event;
	struct trace_steps_event ev;
	struct tracesum		 sum;		/* steps, counts, error */
	struct trace_steps_op	*ops;		/* open addressing */
	size_t			 nops;
	uint64_t		 ops_dropped;
	struct trace_steps_at	 at[TRACESUM_STEPS_MAX];	/* sum's steps' */
	struct trace_steps_span	*comm;		/* this file's, by time */
	size_t			 ncomm;
	int64_t			 comm_lost_from; /* a span left out began */
	struct trace_steps_op	 comm_ops[TRACE_STEPS_COMM_NAMES];
	size_t			 ncomm_ops;
	unsigned char		 zbuf[TRACE_STEPS_INFLATE];
};

/* Notes why the file is not read further (the first error is kept). */
static void
trace_steps_fail(struct trace_steps *t, const char *what)
{
	char	*p;

	t->failed = 1;
	if (t->sum.error[0] != '\0')
		return;
	snprintf(t->sum.error, sizeof(t->sum.error), "%s: %s at byte %llu",
	    t->file, what, (unsigned long long)t->file_bytes);
	/* One line: yajl's messages end in a newline, names hold anything. */
	for (p = t->sum.error; *p != '\0'; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			*p = ' ';
	utf8_cut_partial(t->sum.error);
	if (!utf8_valid(t->sum.error, strlen(t->sum.error)))
		snprintf(t->sum.error, sizeof(t->sum.error), "a file whose "
		    "name is not UTF-8: %s at byte %llu", what,
		    (unsigned long long)t->file_bytes);
}

static uint64_t
trace_steps_hash(const char *s)
{
	uint64_t	 h = 1469598103934665603ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return (h);
}

/* Adds dur_us to the operator name's total. */
static void
trace_steps_op_add(struct trace_steps *t, const char *name, int64_t dur_us)
{
	size_t	 i, cap = TRACE_STEPS_NAMES_MAX * 2;

	for (i = trace_steps_hash(name) % cap; t->ops[i].name[0] != '\0';
	    i = (i + 1) % cap)
		if (strcmp(t->ops[i].name, name) == 0)
			break;
	if (t->ops[i].name[0] == '\0') {
		if (t->nops >= TRACE_STEPS_NAMES_MAX) {
			t->ops_dropped++;
			return;
		}
		snprintf(t->ops[i].name, sizeof(t->ops[i].name), "%s", name);
		t->nops++;
	}
	t->ops[i].total_us += dur_us;
	t->ops[i].count++;
}

/* Keeps step's duration and where it is (at): the first
 * TRACESUM_STEPS_MAX steps by number. */
static void
trace_steps_step_add(struct trace_steps *t, int64_t step, int64_t dur_us,
    const struct trace_steps_at *at)
{
	struct tracesum	*s = &t->sum;
	uint32_t	 i;

	for (i = 0; i < s->nsteps && s->steps[i].step < step; i++)
		;
	if (i < s->nsteps && s->steps[i].step == step) {
		if (dur_us > s->steps[i].dur_us) {
			s->steps[i].dur_us = dur_us;	/* the longest span */
			t->at[i] = *at;
		}
		return;
	}
	s->steps_seen++;
	if (i >= TRACESUM_STEPS_MAX)
		return;
	if (s->nsteps == TRACESUM_STEPS_MAX)
		s->nsteps--;
	memmove(&s->steps[i + 1], &s->steps[i], (s->nsteps - i) *
	    sizeof(s->steps[0]));
	memmove(&t->at[i + 1], &t->at[i], (s->nsteps - i) * sizeof(t->at[0]));
	s->steps[i].step = step;
	s->steps[i].dur_us = dur_us;
	s->steps[i].comm_us = -1;
	t->at[i] = *at;
	s->nsteps++;
}

/* Returns the index of the first of t's spans that ends after us. */
static size_t
trace_steps_comm_find(const struct trace_steps *t, int64_t us)
{
	size_t	 lo = 0, hi = t->ncomm, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (t->comm[mid].hi <= us)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo);
}

/* Adds [lo, hi) to the union of the file's spans in collectives. */
static void
trace_steps_comm_add(struct trace_steps *t, int64_t lo, int64_t hi)
{
	size_t	 j, k;

	if (hi <= lo)
		return;
	/* The spans it touches, [j, k): merged into one. */
	for (j = k = trace_steps_comm_find(t, lo - 1); k < t->ncomm &&
	    t->comm[k].lo <= hi; k++) {
		if (t->comm[k].lo < lo)
			lo = t->comm[k].lo;
		if (t->comm[k].hi > hi)
			hi = t->comm[k].hi;
	}
	if (k == j) {
		if (t->ncomm == TRACE_STEPS_COMM_MAX) {
			if (lo < t->comm_lost_from)
				t->comm_lost_from = lo;
			return;
		}
		memmove(&t->comm[j + 1], &t->comm[j], (t->ncomm - j) *
		    sizeof(t->comm[0]));
		t->ncomm++;
		k = j + 1;
	}
	t->comm[j].lo = lo;
	t->comm[j].hi = hi;
	memmove(&t->comm[j + 1], &t->comm[k], (t->ncomm - k) *
	    sizeof(t->comm[0]));
	t->ncomm -= k - j - 1;
}

/* The time within [lo, hi) of the file's spans in collectives. */
static int64_t
trace_steps_comm_within(const struct trace_steps *t, int64_t lo, int64_t hi)
{
	size_t	 i;
	int64_t	 sum = 0;

	for (i = trace_steps_comm_find(t, lo); i < t->ncomm &&
	    t->comm[i].lo < hi; i++)
		sum += (t->comm[i].hi < hi ? t->comm[i].hi : hi) -
		    (t->comm[i].lo > lo ? t->comm[i].lo : lo);
	return (sum);
}

/* The file being read has ended: its steps' time in collectives measured,
 * its spans forgotten. */
static void
trace_steps_comm_settle(struct trace_steps *t)
{
	struct tracesum	*s = &t->sum;
	int64_t		 hi;
	uint32_t	 i;

	for (i = 0; i < s->nsteps; i++) {
		if (t->at[i].file != s->files)
			continue;
		hi = t->at[i].lo + s->steps[i].dur_us;
		s->steps[i].comm_us = !t->at[i].has_ts ||
		    hi > t->comm_lost_from ? -1 :
		    trace_steps_comm_within(t, t->at[i].lo, hi);
	}
	t->ncomm = 0;
	t->comm_lost_from = INT64_MAX;
}

/* Adds dur_us to the collective name's total. */
static void
trace_steps_comm_op_add(struct trace_steps *t, const char *name,
    int64_t dur_us)
{
	size_t	 i;

	for (i = 0; i < t->ncomm_ops; i++)
		if (strcmp(t->comm_ops[i].name, name) == 0)
			break;
	if (i == t->ncomm_ops) {
		if (i == TRACE_STEPS_COMM_NAMES)
			return;
		memcpy(t->comm_ops[i].name, name, sizeof(t->comm_ops[i].name));
		t->ncomm_ops++;
	}
	t->comm_ops[i].total_us += dur_us;
	t->comm_ops[i].count++;
}

/* Returns 1 if an event of category cat counts as an operator. */
static int
trace_steps_op_cat(const struct trace_steps_event *e)
{
	static const char *const cats[] = { "cpu_op", "kernel", "Kernel",
	    "gpu_memcpy", "gpu_memset", "Memcpy", "Memset", NULL };
	size_t	 i;

	if (!e->has_cat)
		return (1);
	for (i = 0; cats[i] != NULL; i++)
		if (strcmp(e->cat, cats[i]) == 0)
			return (1);
	return (0);
}

/* An event has ended: a step, an operator, or nothing of ours. */
static void
trace_steps_event_end(struct trace_steps *t)
{
	struct trace_steps_event	*e = &t->ev;
	struct trace_steps_at		 at;
	const char			*p;
	char				*end;
	long long			 n;
	int64_t				 dur;

	if (strcmp(e->ph, "X") != 0 || !e->has_dur || !(e->dur >= 0) ||
	    e->dur > 1e15 || e->name[0] == '\0')
		return;
	t->sum.events++;
	dur = (int64_t)(e->dur + 0.5);
	/* A time the spans of a file can be measured in, whole us. */
	at.file = t->sum.files;
	at.has_ts = e->has_ts && e->ts >= -1e15 && e->ts <= 1e15;
	at.lo = at.has_ts ? (int64_t)(e->ts + (e->ts < 0 ? -0.5 : 0.5)) : 0;
	if (strncmp(e->name, TRACE_STEPS_PREFIX,
	    sizeof(TRACE_STEPS_PREFIX) - 1) == 0) {
		p = e->name + sizeof(TRACE_STEPS_PREFIX) - 1;
		/* Kineto repeats the step on the GPU's timeline. */
		if (*p < '0' || *p > '9' || strcmp(e->cat,
		    "gpu_user_annotation") == 0)
			return;
		n = strtoll(p, &end, 10);
		if (*end == '\0' && n >= 0 && e->name_len == strlen(e->name))
			trace_steps_step_add(t, n, dur, &at);
		return;
	}
	if (tracesum_comm_name(e->name)) {
		trace_steps_comm_op_add(t, e->name, dur);
		if (at.has_ts)
			trace_steps_comm_add(t, at.lo, at.lo + dur);
	}
	if (trace_steps_op_cat(e))
		trace_steps_op_add(t, e->name, dur);
}

static int
trace_steps_cb_null(void *ctx)
{
	((struct trace_steps *)ctx)->key = KEY_OTHER;
	return (1);
}

static int
trace_steps_cb_bool(void *ctx, int v)
{
	(void)v;
	return (trace_steps_cb_null(ctx));
}

static int
trace_steps_cb_number(void *ctx, const char *s, size_t len)
{
	struct trace_steps	*t = ctx;
	char			 buf[TRACE_STEPS_NUMBER_MAX + 1];

	if (t->in_event && t->depth == t->events_depth + 1 &&
	    (t->key == KEY_DUR || t->key == KEY_TS) && len < sizeof(buf)) {
		memcpy(buf, s, len);
		buf[len] = '\0';
		if (t->key == KEY_DUR) {
			t->ev.dur = strtod(buf, NULL);
			t->ev.has_dur = 1;
		} else {
			t->ev.ts = strtod(buf, NULL);
			t->ev.has_ts = 1;
		}
	}
	t->key = KEY_OTHER;
	return (1);
}

static int
trace_steps_cb_string(void *ctx, const unsigned char *s, size_t len)
{
	struct trace_steps	*t = ctx;
	struct trace_steps_event *e = &t->ev;

	if (t->in_event && t->depth == t->events_depth + 1) {
		switch (t->key) {
		case KEY_NAME:
			tracesum_name(e->name, sizeof(e->name),
			    (const char *)s, len);
			e->name_len = len;
			break;
		case KEY_PH:
			snprintf(e->ph, sizeof(e->ph), "%.*s", (int)(len <
			    sizeof(e->ph) ? len : sizeof(e->ph) - 1), s);
			break;
		case KEY_CAT:
			snprintf(e->cat, sizeof(e->cat), "%.*s", (int)(len <
			    sizeof(e->cat) ? len : sizeof(e->cat) - 1), s);
			e->has_cat = 1;
			break;
		case KEY_DUR:		/* a string where a number was due */
		case KEY_TS:
			break;
		default:
			break;
		}
	}
	t->key = KEY_OTHER;
	return (1);
}

/* A map or array opens: depth bounded; an event or the events begin. */
static int
trace_steps_open(struct trace_steps *t, int map)
{
	int	 events_here;

	if (t->depth >= TRACE_STEPS_DEPTH_MAX) {
		trace_steps_fail(t, "nested over 64 deep");
		return (0);
	}
	if (t->depth == 0 && map)
		t->top_map = 1;
	/* The events: the document's array, or its "traceEvents". */
	events_here = !map && t->events_depth == 0 && ((t->depth == 0) ||
	    (t->depth == 1 && t->top_map && t->key == KEY_TRACE_EVENTS));
	t->depth++;
	t->key = KEY_OTHER;
	if (events_here)
		t->events_depth = t->depth;
	else if (map && t->events_depth != 0 &&
	    t->depth == t->events_depth + 1) {
		memset(&t->ev, 0, sizeof(t->ev));
		t->in_event = 1;
	}
	return (1);
}

static int
trace_steps_close(struct trace_steps *t)
{
	if (t->in_event && t->depth == t->events_depth + 1) {
		trace_steps_event_end(t);
		t->in_event = 0;
	}
	if (t->depth == t->events_depth)
		t->events_depth = 0;
	t->depth--;
	t->key = KEY_OTHER;
	return (1);
}

static int
trace_steps_cb_start_map(void *ctx)
{
	return (trace_steps_open(ctx, 1));
}

static int
trace_steps_cb_start_array(void *ctx)
{
	return (trace_steps_open(ctx, 0));
}

static int
trace_steps_cb_end(void *ctx)
{
	return (trace_steps_close(ctx));
}

static int
trace_steps_cb_key(void *ctx, const unsigned char *k, size_t len)
{
	struct trace_steps	*t = ctx;

#define KEY_IS(s)	(len == sizeof(s) - 1 && memcmp(k, s, len) == 0)
	t->key = KEY_OTHER;
	if (t->in_event && t->depth == t->events_depth + 1) {
		if (KEY_IS("name"))
			t->key = KEY_NAME;
		else if (KEY_IS("ph"))
			t->key = KEY_PH;
		else if (KEY_IS("cat"))
			t->key = KEY_CAT;
		else if (KEY_IS("dur"))
			t->key = KEY_DUR;
		else if (KEY_IS("ts"))
			t->key = KEY_TS;
	} else if (t->depth == 1 && t->top_map && KEY_IS("traceEvents"))
		t->key = KEY_TRACE_EVENTS;
#undef KEY_IS
	return (1);
}

static const yajl_callbacks trace_steps_callbacks = {
	trace_steps_cb_null,
	trace_steps_cb_bool,
	NULL,
	NULL,
	trace_steps_cb_number,
	trace_steps_cb_string,
	trace_steps_cb_start_map,
	trace_steps_cb_key,
	trace_steps_cb_end,
	trace_steps_cb_start_array,
	trace_steps_cb_end
};

/* A new reader for one rank's trace.  Returns it, or NULL. */
struct trace_steps *
trace_steps_new(void)
{
	struct trace_steps	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return (NULL);
	if ((t->ops = calloc(TRACE_STEPS_NAMES_MAX * 2,
	    sizeof(*t->ops))) == NULL || (t->comm = calloc(
	    TRACE_STEPS_COMM_MAX, sizeof(*t->comm))) == NULL) {
		free(t->ops);
		free(t);
		return (NULL);
	}
	t->sum.comm_read = 1;
	t->comm_lost_from = INT64_MAX;
	return (t);
}

/* Ends the file being read, if any. */
static void
trace_steps_close_file(struct trace_steps *t)
{
	if (t->file != NULL)
		trace_steps_comm_settle(t);
	if (t->h != NULL)
		yajl_free(t->h);
	t->h = NULL;
	if (t->gz)
		inflateEnd(&t->z);
	t->gz = 0;
	t->file = NULL;
}

/* Frees t. */
void
trace_steps_free(struct trace_steps *t)
{
	if (t == NULL)
		return;
	trace_steps_close_file(t);
	free(t->ops);
	free(t->comm);
	free(t);
}

/* The format of a file named name (its last component), or NULL. */
static const char *
trace_steps_format(const char *name, int *gz)
{
	size_t	 n = strlen(name);

	*gz = 0;
#define ENDS(s)	(n >= sizeof(s) - 1 && strcmp(name + n - sizeof(s) + 1, s) == 0)
	if (ENDS(".pt.trace.json"))
		return ("kineto");
	if (ENDS(".pt.trace.json.gz")) {
		*gz = 1;
		return ("kineto");
	}
#undef ENDS
	if (strcmp(name, "trace_view.json") == 0)
		return ("ascend");
	if (strcmp(name, "trace.json") == 0)
		return ("dynprof");
	return (NULL);
}

/*
 * A file of the trace begins, path its name in the archive: returns 1 if
 * it is one t reads (then trace_steps_feed() its bytes, and
 * trace_steps_end() at its end), else 0.
 */
int
trace_steps_begin(struct trace_steps *t, const char *path)
{
	const char	*base = strrchr(path, '/'), *fmt;
	int		 gz;

	trace_steps_close_file(t);
	base = base != NULL ? base + 1 : path;
	if ((fmt = trace_steps_format(base, &gz)) == NULL)
		return (0);
	t->file = path;
	t->failed = 0;
	t->file_bytes = 0;
	t->in_str = t->esc = 0;
	t->run = 0;
	t->depth = t->events_depth = t->top_map = t->in_event = 0;
	t->key = KEY_OTHER;
	if (t->sum.format[0] == '\0')
		snprintf(t->sum.format, sizeof(t->sum.format), "%s", fmt);
	t->sum.files++;
	if (gz) {
		memset(&t->z, 0, sizeof(t->z));
		if (inflateInit2(&t->z, 16 + MAX_WBITS) != Z_OK) {
			trace_steps_fail(t, "zlib unavailable");
			return (1);
		}
		t->gz = 1;
	}
	if ((t->h = yajl_alloc(&trace_steps_callbacks, NULL, t)) == NULL) {
		trace_steps_fail(t, "out of memory");
		return (1);
	}
	(void)yajl_config(t->h, yajl_dont_validate_strings, 1);
	return (1);
}

/*
 * Scans len bytes of JSON for tokens over their bound before yajl sees
 * them (yajl buffers a token split across chunks whole).  Returns 0, or -1
 * (the file failed).
 */
static int
trace_steps_scan(struct trace_steps *t, const unsigned char *p, size_t len)
{
	size_t	 i;

	for (i = 0; i < len; i++) {
		if (t->in_str) {
			if (t->esc)
				t->esc = 0;
			else if (p[i] == '\\')
				t->esc = 1;
			else if (p[i] == '"') {
				t->in_str = 0;
				t->run = 0;
				continue;
			}
			if (++t->run > TRACE_STEPS_TOKEN_MAX) {
				t->file_bytes += i;
				trace_steps_fail(t, "a string over 1 MiB");
				return (-1);
			}
			continue;
		}
		switch (p[i]) {
		case '"':
			t->in_str = 1;
			t->run = 0;
			break;
		case '{': case '}': case '[': case ']': case ',': case ':':
		case ' ': case '\t': case '\n': case '\r':
			t->run = 0;
			break;
		default:
			if (++t->run > TRACE_STEPS_NUMBER_MAX) {
				t->file_bytes += i;
				trace_steps_fail(t, "a token over 64 bytes");
				return (-1);
			}
		}
	}
	return (0);
}

/* Parses len bytes of the file's JSON. */
static void
trace_steps_json(struct trace_steps *t, const unsigned char *p, size_t len)
{
	unsigned char	*msg;
	char		 what[128];
	yajl_status	 st;

	if (t->json_bytes + len > TRACE_STEPS_JSON_MAX) {
		trace_steps_fail(t, "over 64 GiB of JSON in the trace");
		return;
	}
	if (trace_steps_scan(t, p, len) == -1)
		return;
	st = yajl_parse(t->h, p, len);
	if (st == yajl_status_ok) {
		t->file_bytes += len;
		t->json_bytes += len;
		return;
	}
	t->file_bytes += yajl_get_bytes_consumed(t->h);
	if (st == yajl_status_client_canceled) {
		t->failed = 1;		/* the callback said why */
		return;
	}
	msg = yajl_get_error(t->h, 0, NULL, 0);
	snprintf(what, sizeof(what), "not JSON (%.*s)", msg != NULL ?
	    (int)strcspn((const char *)msg, "\n") : 13, msg != NULL ?
	    (const char *)msg : "a parse error");
	if (msg != NULL)
		yajl_free_error(t->h, msg);
	trace_steps_fail(t, what);
}

/* Reads len bytes of the file begun by trace_steps_begin(). */
void
trace_steps_feed(struct trace_steps *t, const void *buf, size_t len)
{
	int	 zr;

	if (t->file == NULL || t->failed || len == 0)
		return;
	if (!t->gz) {
		trace_steps_json(t, buf, len);
		return;
	}
	t->z.next_in = (unsigned char *)(uintptr_t)buf;
	t->z.avail_in = (uInt)len;
	while (!t->failed && t->z.avail_in > 0) {
		t->z.next_out = t->zbuf;
		t->z.avail_out = sizeof(t->zbuf);
		zr = inflate(&t->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END) {
			trace_steps_fail(t, "not gzip");
			return;
		}
		trace_steps_json(t, t->zbuf, sizeof(t->zbuf) - t->z.avail_out);
		if (zr == Z_STREAM_END)
			break;		/* what follows the stream: ignored */
	}
}

/* The file begun by trace_steps_begin() has ended. */
void
trace_steps_end(struct trace_steps *t)
{
	yajl_status	 st;

	if (t->file == NULL)
		return;
	if (!t->failed) {
		st = yajl_complete_parse(t->h);
		if (st != yajl_status_ok)
			trace_steps_fail(t, t->file_bytes == 0 ? "empty" :
			    "truncated");
	}
	trace_steps_close_file(t);
}

static int
trace_steps_op_cmp(const void *a, const void *b)
{
	const struct trace_steps_op *x = a, *y = b;

	if (x->total_us != y->total_us)
		return (x->total_us > y->total_us ? -1 : 1);
	return (strcmp(x->name, y->name));
}

/*
 * Fills sum with what t read: the steps, the TRACESUM_OPS_MAX busiest
 * operators, the first error.  Reorders t's operators: call it last.
 */
void
trace_steps_result(struct trace_steps *t, struct tracesum *sum)
{
	size_t	 i, n = 0, cap = TRACE_STEPS_NAMES_MAX * 2;

	trace_steps_end(t);
	*sum = t->sum;
	for (i = 0; i < cap; i++)
		if (t->ops[i].name[0] != '\0')
			t->ops[n++] = t->ops[i];
	qsort(t->ops, n, sizeof(*t->ops), trace_steps_op_cmp);
	for (i = 0; i < n && i < TRACESUM_OPS_MAX; i++) {
		memcpy(sum->ops[i].name, t->ops[i].name,
		    sizeof(sum->ops[i].name));
		sum->ops[i].total_us = t->ops[i].total_us;
		sum->ops[i].count = t->ops[i].count;
	}
	sum->nops = (uint32_t)i;
	for (i = 0; i < t->ncomm_ops; i++)
		if (i == 0 || t->comm_ops[i].total_us > sum->comm_op.total_us) {
			memcpy(sum->comm_op.name, t->comm_ops[i].name,
			    sizeof(sum->comm_op.name));
			sum->comm_op.total_us = t->comm_ops[i].total_us;
			sum->comm_op.count = t->comm_ops[i].count;
		}
	if (t->ops_dropped > 0 && sum->error[0] == '\0')
		snprintf(sum->error, sizeof(sum->error), "over %d operators' "
		    "names: %llu events of the others left out",
		    TRACE_STEPS_NAMES_MAX, (unsigned long long)t->ops_dropped);
	memset(t->ops, 0, cap * sizeof(*t->ops));
	t->nops = 0;
}
