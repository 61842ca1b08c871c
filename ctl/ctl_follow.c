/*
 * dynprofctl's side of the event stream (GET /v1/jobs/{job}/events, see
 * docs/admin-api.md): a sink that cuts the answer into lines of JSON and
 * hands each to a function, the revision to resume from kept as lines go by,
 * and `status --follow`, which prints a job's events as they are committed.
 * A stream that ends (the coordinator restarted, a proxy cut it, it went
 * quiet past its heartbeats) is taken up again from the last revision seen.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

/* Cuts the body into lines (one longer than f->line is skipped); each
 * goes to the follower's function.  A ctl_sink_fn. */
int
ctl_follow_sink(void *arg, const char *data, size_t len)
{
	struct ctl_follow	*f = arg;
	json_t			*j, *v;
	size_t			 n;
	const char		*nl;
	int			 rc;

	while (len > 0) {
		nl = memchr(data, '\n', len);
		n = nl != NULL ? (size_t)(nl - data) : len;
		if (f->len + n < sizeof(f->line)) {
			memcpy(f->line + f->len, data, n);
			f->len += n;
		} else
			f->overlong = 1;
		data += n;
		len -= n;
		if (nl == NULL)
			break;
		data++;
		len--;
		f->line[f->len] = '\0';
		j = f->overlong ? NULL : json_loads(f->line, 0, NULL);
		f->len = 0;
		f->overlong = 0;
		if (j == NULL)
			continue;
		if (json_is_integer(v = json_object_get(j, "rev")) ||
		    json_is_integer(v = json_object_get(j, "revision")))
			f->since = (uint64_t)json_integer_value(v);
		if (strcmp(ctl_json_str(j, "type", ""), "dropped") == 0)
			f->gone = 1;
		rc = f->fn(f->arg, j);
		json_decref(j);
		if (rc != 0) {
			f->stopped = 1;
			return (-1);
		}
	}
	return (0);
}

/*
 * Reads the job's events from f->since until f->fn returns non-zero (0,
 * f->stopped set), the stream ends (0), or within timeout_ms nothing more
 * comes.  A revision no longer kept sets f->gone (0).  Returns CTL_EXIT_OK,
 * or the exit code of a request that failed (said on the error stream unless
 * ctl->quiet).
 */
int
ctl_follow_once(struct ctl *ctl, const char *job, struct ctl_follow *f,
    int timeout_ms)
{
	struct ctl_response	 res;
	char			 path[256], err[512];
	int			 rc;

	f->len = 0;
	f->overlong = 0;
	f->stopped = 0;
	f->gone = 0;
	snprintf(path, sizeof(path), "/v1/jobs/%s/events?follow=1&since=%"
	    PRIu64, job, f->since);
	rc = ctl_http_request(&ctl->conn, "GET", path, NULL, 0, timeout_ms,
	    ctl_follow_sink, f, &res, err, sizeof(err));
	if (rc == CTL_EXIT_REFUSED && f->stopped)
		rc = CTL_EXIT_OK;	/* the sink said: enough */
	else if (rc == CTL_EXIT_OK && res.status == 410)
		f->gone = 1;
	else if (rc == CTL_EXIT_OK && (res.status < 200 || res.status > 299)) {
		ctl_errx(ctl, "coordinator at %s: events: HTTP %d: %.200s",
		    ctl->url, res.status, res.len > 0 ? res.body : "");
		rc = CTL_EXIT_REFUSED;
	} else if (rc == CTL_EXIT_TIMEOUT)
		rc = CTL_EXIT_OK;	/* the caller's deadline */
	else if (rc != CTL_EXIT_OK && !ctl->quiet)
		ctl_errx(ctl, "coordinator at %s: events: %s", ctl->url, err);
	ctl_http_free(&res);
	return (rc);
}

/* Prints one line of the stream for a person (--json: as it came). */
int
ctl_follow_print(void *arg, json_t *j)
{
	struct ctl	*ctl = arg;
	const char	*type = ctl_json_str(j, "type", ""), *d;
	char		*text;

	if (strcmp(type, "heartbeat") == 0 || strcmp(type, "end") == 0)
		return (0);
	if (ctl->json) {
		if ((text = json_dumps(j, JSON_COMPACT |
		    JSON_PRESERVE_ORDER)) != NULL)
			fprintf(ctl->out, "%s\n", text);
		free(text);
	} else if (strcmp(type, "rank") == 0) {
		d = ctl_json_str(j, "kind", "?");
		fprintf(ctl->out, "%s rank %lld on %s: %s window %lld",
		    ctl_json_str(j, "time", "-"),
		    (long long)ctl_json_int(j, "rank", -1),
		    ctl_json_str(j, "node", "?"), d,
		    (long long)ctl_json_int(j, "window", 0));
		/* A trace's collection is after the window: no step. */
		if (strncmp(d, "collect", 7) != 0)
			fprintf(ctl->out, " at step %lld",
			    (long long)ctl_json_int(j, "step", -1));
		if ((d = ctl_json_str(j, "output_dir", NULL)) != NULL)
			fprintf(ctl->out, ": %s", d);
		if ((d = ctl_json_str(j, "error", NULL)) != NULL)
			fprintf(ctl->out, ": error: %s", d);
		fputc('\n', ctl->out);
	} else if (strcmp(type, "window") == 0) {
		fprintf(ctl->out, "%s window %lld ", ctl_json_str(j, "time",
		    "-"), (long long)ctl_json_int(j, "window", 0));
		/* A time window (while the job holds it): its times. */
		if ((d = ctl_json_str(j, "at", NULL)) != NULL)
			fprintf(ctl->out, "at %s for %lld ms", d,
			    (long long)ctl_json_int(j, "duration_ms", 0));
		else
			fprintf(ctl->out, "[%lld,%lld]",
			    (long long)ctl_json_int(j, "start_step", 0),
			    (long long)ctl_json_int(j, "stop_step", 0));
		fprintf(ctl->out, ": %s", ctl_json_str(j, "change", "?"));
		if ((d = ctl_json_str(j, "refused_reason", NULL)) != NULL)
			fprintf(ctl->out, ", refused by the nodes: %s", d);
		fprintf(ctl->out, ", generation %lld\n",
		    (long long)ctl_json_int(j, "generation", 0));
	}
	fflush(ctl->out);
	return (0);
}

/*
 * status --follow: after the status, the job's events as they are committed,
 * until interrupted (or timeout_ms, when not 0).  A stream that ends is taken
 * up again from the last revision seen; one that fell behind what the
 * coordinator keeps shows the status again, saying so, and goes on from its
 * revision.
 */
int
ctl_follow_status(struct ctl *ctl, const char *job, uint64_t since,
    int timeout_ms)
{
	struct ctl_follow	 f;
	int64_t			 deadline = 0, left;
	int			 rc, failures = 0;
	struct timespec		 pause = { 0, 500 * 1000000 };

	memset(&f, 0, sizeof(f));
	f.fn = ctl_follow_print;
	f.arg = ctl;
	f.since = since;
	if (timeout_ms > 0)
		deadline = ctl_now_ms() + timeout_ms;
	for (;;) {
		left = deadline > 0 ? deadline - ctl_now_ms() :
		    CTL_FOLLOW_SPAN_MS;
		if (left <= 0)
			return (CTL_EXIT_OK);
		rc = ctl_follow_once(ctl, job, &f, (int)left);
		if (rc == CTL_EXIT_REFUSED)
			return (rc);
		/*
		 * What happened meanwhile is not in the stream any more (the
		 * coordinator restarted, another leads): the status as it is
		 * now, then its events from there.
		 */
		if (f.gone) {
			ctl_errx(ctl, "events after revision %" PRIu64 " are no "
			    "longer kept: the status now, then its events",
			    f.since);
			if ((rc = ctl_status_show(ctl, job, &f.since)) !=
			    CTL_EXIT_OK)
				return (rc);
		}
		if (rc != CTL_EXIT_OK && ++failures > CTL_FOLLOW_RETRIES)
			return (rc);
		if (rc == CTL_EXIT_OK)
			failures = 0;
		else
			nanosleep(&pause, NULL);
	}
}
