/*
 * Each job's collected traces (docs/traces.md): what the agents reported of
 * every rank's trace for every window, `collected` (where its archive is,
 * its size and sha256) or `collect_failed` (why), kept sorted by window and
 * rank.  The model's side only: the events that bring a record in are stored
 * as every rank event is (their detail, traces_detail(), is the record as
 * text), and the load rebuilds the records from them (traces_note()).  The
 * index (GET /v1/jobs/{job}/windows/{id}/traces) asks traces_list.c, the
 * comparison of the ranks (.../compare) traces_compare.c.
 *
 * A collected trace's record holds what the agent read of it, its summary
 * (common/tracesum.h), when it sent one: in the detail, its text form on a
 * second line, so that both stores keep it as they keep the detail.
 */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "log.h"
#include "tracesum.h"

/* A job's records, sorted by (window, rank). */
struct traces {
	struct trace_rec	*recs;
	size_t			 n;
	size_t			 cap;
};

/* Returns 1 if s is 64 lowercase hex digits. */
static int
traces_sha256_valid(const char *s)
{
	size_t	 i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return (0);
	return (s[64] == '\0');
}

/*
 * Checks what an agent reports of a collection and writes the event's
 * detail: "SIZE SHA256 WHERE", and "\n" and sum's text form if sum is not
 * NULL, for a collected trace, the reason for a failed one.  Returns 0, or
 * -1 with why set.
 */
int
traces_event_detail(int kind, uint64_t size, const char *sha256,
    const char *where, const char *error, const struct tracesum *sum,
    char *buf, size_t len, const char **why)
{
	char	 text[TRACESUM_TEXT_MAX];

	if (kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED) {
		if (error == NULL || *error == '\0')
			error = "no reason given";
		/* Cut at a whole UTF-8 character, as a rank's error is. */
		snprintf(buf, len, "%.*s", (int)valid_event_error_len(error),
		    error);
		return (0);
	}
	if (sha256 == NULL || !traces_sha256_valid(sha256)) {
		*why = "a collected event without a sha256";
		return (-1);
	}
	if (where == NULL || *where == '\0' || strlen(where) >= TRACES_WHERE_MAX ||
	    strchr(where, '\n') != NULL) {
		*why = "a collected event without a usable location";
		return (-1);
	}
	if (sum == NULL || tracesum_encode(sum, text, sizeof(text)) == -1)
		text[0] = '\0';
	if ((size_t)snprintf(buf, len, "%" PRIu64 " %s %s%s%s", size, sha256,
	    where, text[0] ? "\n" : "", text) >= len) {
		*why = "a collected event's location too long";
		return (-1);
	}
	return (0);
}

/*
 * Reads the detail of a collection event of kind (traces_event_detail()'s,
 * or a stored row's): a reason under COORD_EVENT_TEXT_MAX bytes, or "SIZE
 * SHA256 WHERE" with a location under TRACES_WHERE_MAX bytes, into *size,
 * sha (65 bytes), *where (in detail) and *where_len, and the summary's
 * text on the line after it into *sum (in detail; NULL: none, or one that
 * does not read: ignored).  Returns 0, or -1 with *why set.
 */
int
traces_detail_read(int kind, const char *detail, uint64_t *size, char *sha,
    const char **where, size_t *where_len, const char **sum,
    const char **why)
{
	struct tracesum		 ts;
	unsigned long long	 sz;
	const char		*nl, *w;
	int			 off = 0;

	*size = 0;
	sha[0] = '\0';
	*sum = NULL;
	*where = detail != NULL ? detail : "";
	*where_len = strlen(*where);
	if (kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECT_FAILED) {
		if (valid_event_error_len(*where) != strlen(*where)) {
			*why = "a reason longer than 4095 bytes";
			return (-1);
		}
		return (0);
	}
	if (kind != DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED) {
		*why = "not a collection";
		return (-1);
	}
	nl = strchr(*where, '\n');
	if (sscanf(*where, "%llu %64s %n", &sz, sha, &off) != 2 || off == 0 ||
	    !traces_sha256_valid(sha) || (*where)[off] == '\0' ||
	    (*where)[off] == '\n' || (nl != NULL && nl < *where + off) ||
	    (size_t)((nl != NULL ? nl : *where + strlen(*where)) -
	    (*where + off)) >= TRACES_WHERE_MAX) {
		sha[0] = '\0';
		*why = "a collected trace's detail does not read as SIZE "
		    "SHA256 WHERE";
		return (-1);
	}
	*size = sz;
	*where += off;
	*where_len = nl != NULL ? (size_t)(nl - *where) : strlen(*where);
	if (nl != NULL && tracesum_decode(nl + 1, &ts, &w) == 0)
		*sum = nl + 1;
	return (0);
}

/* Returns the index of (window, rank) in t, or where it would go (*found 0). */
static size_t
traces_search(const struct traces *t, uint32_t window, int32_t rank,
    int *found)
{
	size_t	 lo = 0, hi = t->n, mid;
	const struct trace_rec *x;

	*found = 0;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		x = &t->recs[mid];
		if (x->window_id < window ||
		    (x->window_id == window && x->rank < rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < t->n && t->recs[lo].window_id == window &&
	    t->recs[lo].rank == rank)
		*found = 1;
	return (lo);
}

/* Returns rank's record for window in job, or NULL. */
const struct trace_rec *
traces_find(const struct job *job, uint32_t window, int32_t rank)
{
	size_t	 i;
	int	 found;

	if (job->traces == NULL)
		return (NULL);
	i = traces_search(job->traces, window, rank, &found);
	return (found ? &job->traces->recs[i] : NULL);
}

/*
 * Takes a collected or collect_failed event of rank r (from node, at
 * time_ns) with its detail as traces_event_detail() wrote it, from an
 * agent or from the store: the rank's record for the window, replaced if it
 * had one.  Returns 0, or -1 (logged) if the detail does not read or the
 * job holds TRACES_PER_JOB_MAX records.
 */
int
traces_note(struct coord *c, struct job *job, struct rank *r, uint32_t window,
    int kind, const char *node, int64_t time_ns, const char *detail)
{
	struct traces		*t = job->traces;
	struct trace_rec	 rec, *n;
	char			 sha[65];
	const char		*where, *why, *sum;
	int			 found;
	size_t			 i, cap, where_len;

	(void)c;
	memset(&rec, 0, sizeof(rec));
	rec.window_id = window;
	rec.rank = r->rank;
	rec.kind = kind;
	rec.time_ns = time_ns;
	snprintf(rec.node, sizeof(rec.node), "%s", node != NULL ? node : "");
	if (traces_detail_read(kind, detail, &rec.size, sha, &where,
	    &where_len, &sum, &why) == -1) {
		log_warnx("%s: job %s rank %d window %u: %s", __func__,
		    job->name, r->rank, window, why);
		return (-1);
	}
	memcpy(rec.sha256, sha, sizeof(rec.sha256));
	if ((rec.where = strndup(where, where_len)) == NULL)
		return (-1);
	if (sum != NULL && (rec.sum = strdup(sum)) == NULL) {
		free(rec.where);
		return (-1);
	}
	if (t == NULL) {
		if ((t = calloc(1, sizeof(*t))) == NULL) {
			free(rec.where);
			free(rec.sum);
			return (-1);
		}
		job->traces = t;
	}
	i = traces_search(t, window, r->rank, &found);
	if (found) {
		free(t->recs[i].where);
		free(t->recs[i].sum);
		t->recs[i] = rec;
	} else {
		if (t->n >= TRACES_PER_JOB_MAX) {
			log_warnx("%s: job %s: %d traces kept already: rank %d "
			    "window %u not indexed", __func__, job->name,
			    TRACES_PER_JOB_MAX, r->rank, window);
			free(rec.where);
			free(rec.sum);
			return (-1);
		}
		if (t->n == t->cap) {
			cap = t->cap == 0 ? 64 : t->cap * 2;
			if ((n = reallocarray(t->recs, cap, sizeof(*n))) ==
			    NULL) {
				free(rec.where);
				free(rec.sum);
				return (-1);
			}
			t->recs = n;
			t->cap = cap;
		}
		memmove(&t->recs[i + 1], &t->recs[i],
		    (t->n - i) * sizeof(*t->recs));
		t->recs[i] = rec;
		t->n++;
	}
	if (window >= r->trace_window)
		r->trace_window = window;
	return (0);
}

/*
 * Writes the stored detail of rank's event of kind for window (a collected
 * or collect_failed one) into buf, as the event that brought it wrote it.
 * Returns buf, or NULL if job has no such record.
 */
const char *
traces_detail(const struct job *job, int32_t rank, uint32_t window, int kind,
    char *buf, size_t len)
{
	const struct trace_rec	*x = traces_find(job, window, rank);

	if (x == NULL || x->kind != kind)
		return (NULL);
	if (kind == DYNPROF__V1__EVENT_KIND__EVENT_COLLECTED)
		snprintf(buf, len, "%" PRIu64 " %s %s%s%s", x->size, x->sha256,
		    x->where, x->sum != NULL ? "\n" : "", x->sum != NULL ?
		    x->sum : "");
	else
		snprintf(buf, len, "%s", x->where);
	return (buf);
}

/* Frees job's records. */
void
traces_free(struct job *job)
{
	struct traces	*t = job->traces;
	size_t		 i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++) {
		free(t->recs[i].where);
		free(t->recs[i].sum);
	}
	free(t->recs);
	free(t);
	job->traces = NULL;
}
