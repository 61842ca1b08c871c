/*
 * One request to the coordinator and its answer checked: errors said on the
 * error stream as dynprofctl says them (a refusal as the coordinator gave it,
 * which token a 401 wants), the answer's JSON handed back, and the ranks of a
 * job read page by page.  Every command stands on this.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* Prints "dynprofctl: message" on the error stream, after any progress line. */
void
ctl_errx(struct ctl *ctl, const char *fmt, ...)
{
	va_list	 ap;

	if (ctl->line_open) {
		fputc('\n', ctl->out);
		fflush(ctl->out);
		ctl->line_open = 0;
	}
	fprintf(ctl->err, "dynprofctl: ");
	va_start(ap, fmt);
	vfprintf(ctl->err, fmt, ap);
	va_end(ap);
	fprintf(ctl->err, "\n");
}

/* Parses a whole decimal integer within [min, max]; 0 ok, -1 not. */
int
ctl_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char		*end;
	long long	 v;

	if (s == NULL || *s == '\0')
		return (-1);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return (-1);
	*out = v;
	return (0);
}

/* Prints a body as it came, with a final newline. */
void
ctl_print_raw(struct ctl *ctl, const struct ctl_response *res)
{
	fwrite(res->body, 1, res->len, ctl->out);
	if (res->len == 0 || res->body[res->len - 1] != '\n')
		fputc('\n', ctl->out);
}

/*
 * Says, after a 401, which tokens the request takes: a read either the
 * operator's or the viewer's, a write only the operator's.
 */
static void
ctl_token_hint(struct ctl *ctl, const char *method)
{
	const char	*which = strcmp(method, "GET") == 0 ?
			    "the operator (admin) or the viewer token" :
			    "the operator (admin) token";

	if (ctl->conn.token == NULL)
		ctl_errx(ctl, "this coordinator wants a token; this request "
		    "takes %s: --token-file F or DYNPROF_TOKEN", which);
	else
		ctl_errx(ctl, "the token given is not one this coordinator "
		    "knows; this request takes %s", which);
}

/*
 * Sends one request and checks the answer.  Returns CTL_EXIT_OK with the
 * parsed body in *doc (caller decrefs; doc may be NULL) and, if res is not
 * NULL, the raw answer (caller frees).  Any other code has been reported on
 * the error stream: an error answer as the coordinator gave it.
 */
int
ctl_call(struct ctl *ctl, const char *method, const char *path,
    const char *body, size_t bodylen, json_t **doc, struct ctl_response *res)
{
	struct ctl_response	 r;
	json_t			*j;
	json_error_t		 jerr;
	char			 err[512];
	const char		*msg, *field;
	int			 rc;

	if (doc != NULL)
		*doc = NULL;
	rc = ctl_http_request(&ctl->conn, method, path, body, bodylen,
	    ctl->timeout_ms, NULL, NULL, &r, err, sizeof(err));
	if ((rc == CTL_EXIT_UNREACHABLE || rc == CTL_EXIT_TIMEOUT) &&
	    ctl->quiet)
		return (rc);
	if (rc == CTL_EXIT_TIMEOUT || rc == CTL_EXIT_REFUSED) {
		ctl_errx(ctl, "coordinator at %s: %s", ctl->url, err);
		return (rc);
	}
	if (rc != CTL_EXIT_OK) {
		ctl_errx(ctl, "cannot reach coordinator at %s: %s%s", ctl->url,
		    err, strcmp(ctl->url, CTL_DEFAULT_URL) == 0 ? " (the "
		    "default address: give --coordinator URL or set "
		    "DYNPROF_COORDINATOR)" : "");
		return (rc);
	}
	j = json_loadb(r.body, r.len, JSON_DECODE_ANY, &jerr);
	if (r.status < 200 || r.status > 299) {
		msg = ctl_json_str(j, "error", NULL);
		field = ctl_json_str(j, "field", NULL);
		if (ctl->json && j != NULL)
			ctl_print_raw(ctl, &r);
		if (msg != NULL && field != NULL)
			ctl_errx(ctl, "coordinator refused: %s (field %s)", msg,
			    field);
		else if (msg != NULL)
			ctl_errx(ctl, "coordinator refused: %s", msg);
		else
			ctl_errx(ctl, "coordinator answered HTTP %d: %.200s",
			    r.status, r.len > 0 ? r.body : "(empty body)");
		if (r.status == 401)
			ctl_token_hint(ctl, method);
		json_decref(j);
		ctl_http_free(&r);
		return (CTL_EXIT_REFUSED);
	}
	if (j == NULL) {
		ctl_errx(ctl, "coordinator at %s sent bad JSON: %s (line %d)",
		    ctl->url, jerr.text, jerr.line);
		ctl_http_free(&r);
		return (CTL_EXIT_REFUSED);
	}
	if (doc != NULL)
		*doc = j;
	else
		json_decref(j);
	if (res != NULL)
		*res = r;
	else
		ctl_http_free(&r);
	return (CTL_EXIT_OK);
}

/* GETs path: prints the raw answer with --json, else gives the document. */
int
ctl_get(struct ctl *ctl, const char *path, json_t **doc)
{
	struct ctl_response	 res;
	int			 rc;

	rc = ctl_call(ctl, "GET", path, NULL, 0, doc, &res);
	if (rc != CTL_EXIT_OK)
		return (rc);
	if (ctl->json)
		ctl_print_raw(ctl, &res);
	ctl_http_free(&res);
	return (CTL_EXIT_OK);
}

/* Checks a job id given on the command line before it goes into a path. */
int
ctl_check_job(struct ctl *ctl, const char *job)
{
	const char	*why;

	if (!jobid_valid(job, &why)) {
		ctl_errx(ctl, "invalid job id \"%s\": %s", job, why);
		return (-1);
	}
	return (0);
}

/*
 * Reads the ranks of job page by page (GET /v1/jobs/{job}/ranks?query, in
 * rank order), handing each page to fn(arg, page); fn returns 0, or -1 to
 * stop.  Returns CTL_EXIT_OK, or the exit code of a request that failed.
 */
int
ctl_ranks_pages(struct ctl *ctl, const char *job, const char *query,
    int (*fn)(void *, json_t *), void *arg)
{
	json_t		*page, *next;
	char		 path[512];
	long long	 after = -1;
	int		 rc;

	for (;;) {
		snprintf(path, sizeof(path), "/v1/jobs/%s/ranks?limit=%d&"
		    "after=%lld%s%s", job, CTL_PAGE_LIMIT, after,
		    *query != '\0' ? "&" : "", query);
		if ((rc = ctl_call(ctl, "GET", path, NULL, 0, &page, NULL)) !=
		    CTL_EXIT_OK)
			return (rc);
		if (fn(arg, page) == -1) {
			json_decref(page);
			return (CTL_EXIT_OK);
		}
		next = json_object_get(page, "next");
		if (!json_is_integer(next) ||
		    json_integer_value(next) <= after) {
			json_decref(page);
			return (CTL_EXIT_OK);
		}
		after = json_integer_value(next);
		json_decref(page);
	}
}
