/*
 * The commands that talk to the coordinator: one request each, the answer shown
 * as a table, or as the coordinator's JSON with --json.
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
static void
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

/* A command without arguments that GETs path and shows it with table. */
static int
ctl_list(struct ctl *ctl, int argc, char **argv, const char *path,
    void (*table)(FILE *, json_t *))
{
	json_t	*doc;
	int	 rc;

	if (argc != 1) {
		ctl_errx(ctl, "%s: unexpected argument %s", argv[0], argv[1]);
		return (CTL_USAGE);
	}
	if ((rc = ctl_get(ctl, path, &doc)) != CTL_EXIT_OK)
		return (rc);
	if (!ctl->json)
		table(ctl->out, doc);
	json_decref(doc);
	return (CTL_EXIT_OK);
}

/* dynprofctl jobs */
int
ctl_cmd_jobs(struct ctl *ctl, int argc, char **argv)
{
	return (ctl_list(ctl, argc, argv, "/v1/jobs", ctl_table_jobs));
}

/* dynprofctl nodes */
int
ctl_cmd_nodes(struct ctl *ctl, int argc, char **argv)
{
	return (ctl_list(ctl, argc, argv, "/v1/nodes", ctl_table_nodes));
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

/* Adds a page of ranks to the status table. */
static int
ctl_status_page(void *arg, json_t *page)
{
	ctl_table_rank_rows(arg, page);
	return (0);
}

/*
 * Prints the job's status: the summary and its ranks (--json: the summary
 * as it came), and gives the summary's revision in *rev.  Returns an exit
 * code.
 */
int
ctl_status_show(struct ctl *ctl, const char *job, uint64_t *rev)
{
	struct ctl_table	 t;
	json_t			*doc;
	char			 path[128];
	int			 rc;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	if ((rc = ctl_get(ctl, path, &doc)) != CTL_EXIT_OK) {
		if (rc == CTL_EXIT_REFUSED)
			ctl_check_missing_job(ctl, job);
		return (rc);
	}
	if (!ctl->json) {
		ctl_table_init(&t, 8);
		rc = ctl_ranks_pages(ctl, job, "", ctl_status_page, &t);
		if (rc == CTL_EXIT_OK)
			ctl_table_status(ctl->out, doc, &t);
		ctl_table_clear(&t);
	}
	fflush(ctl->out);
	*rev = (uint64_t)ctl_json_int(doc, "revision", 0);
	json_decref(doc);
	return (rc);
}

/* dynprofctl status JOB [--follow] */
int
ctl_cmd_status(struct ctl *ctl, int argc, char **argv)
{
	uint64_t	 rev;
	int		 rc, follow = 0;

	if (argc == 3 && strcmp(argv[2], "--follow") == 0)
		follow = 1;
	else if (argc != 2) {
		ctl_errx(ctl, argc < 2 ? "status: missing JOB" :
		    "status: unexpected argument %s", argv[argc - 1]);
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[1]) == -1)
		return (CTL_EXIT_REFUSED);
	rc = ctl_status_show(ctl, argv[1], &rev);
	if (rc == CTL_EXIT_OK && follow)
		rc = ctl_follow_status(ctl, argv[1], rev, 0);
	return (rc);
}

/* Reads a whole file ("-": standard input), at most CTL_FILE_MAX bytes. */
static char *
ctl_read_file(struct ctl *ctl, const char *path, size_t *lenp)
{
	FILE	*f;
	char	*buf, *nbuf;
	size_t	 len = 0, cap = 65536, n;

	f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
	if (f == NULL) {
		ctl_errx(ctl, "cannot read %s: %s", path, strerror(errno));
		return (NULL);
	}
	if ((buf = malloc(cap)) == NULL)
		goto fail;
	for (;;) {
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
		if (len == cap) {
			if (cap >= CTL_FILE_MAX) {
				ctl_errx(ctl, "%s: larger than %d bytes", path,
				    CTL_FILE_MAX);
				goto fail2;
			}
			if ((nbuf = realloc(buf, cap * 2)) == NULL)
				goto fail;
			buf = nbuf;
			cap *= 2;
		}
	}
	if (ferror(f)) {
		ctl_errx(ctl, "cannot read %s: %s", path, strerror(errno));
		goto fail2;
	}
	if (f != stdin)
		fclose(f);
	*lenp = len;
	return (buf);
fail:
	ctl_errx(ctl, "cannot read %s: out of memory", path);
fail2:
	free(buf);
	if (f != stdin)
		fclose(f);
	return (NULL);
}

static int
ctl_config_set(struct ctl *ctl, const char *job, const char *file)
{
	struct ctl_response	 res;
	json_t			*doc, *check, *w;
	json_error_t		 jerr;
	char			 path[128], wbuf[512];
	char			*body;
	size_t			 len;
	int			 rc;

	if ((body = ctl_read_file(ctl, file, &len)) == NULL)
		return (CTL_EXIT_REFUSED);
	/* Sent as it is; only make sure it is JSON, to say so here. */
	check = json_loadb(body, len, JSON_DECODE_ANY, &jerr);
	if (check == NULL) {
		ctl_errx(ctl, "%s: not JSON: %s (line %d)",
		    strcmp(file, "-") == 0 ? "standard input" : file,
		    jerr.text, jerr.line);
		free(body);
		return (CTL_EXIT_REFUSED);
	}
	json_decref(check);
	snprintf(path, sizeof(path), "/v1/jobs/%s/config", job);
	rc = ctl_call(ctl, "PUT", path, body, len, &doc, &res);
	free(body);
	if (rc != CTL_EXIT_OK)
		return (rc);
	if (ctl->json)
		ctl_print_raw(ctl, &res);
	else {
		w = json_object_get(doc, "window");
		if (json_is_object(w)) {
			ctl_format_window(wbuf, sizeof(wbuf), w);
			fprintf(ctl->out, "job %s generation %lld: %s\n", job,
			    (long long)ctl_json_int(doc, "generation", 0),
			    wbuf);
		} else
			fprintf(ctl->out, "job %s generation %lld: config "
			    "stored, no new window\n", job,
			    (long long)ctl_json_int(doc, "generation", 0));
	}
	ctl_http_free(&res);
	json_decref(doc);
	return (CTL_EXIT_OK);
}

/* dynprofctl config get JOB | config set JOB FILE */
int
ctl_cmd_config(struct ctl *ctl, int argc, char **argv)
{
	json_t	*doc;
	char	 path[128];
	int	 rc;

	if (argc >= 2 && strcmp(argv[1], "get") == 0) {
		if (argc != 3) {
			ctl_errx(ctl, "config get: %s", argc < 3 ?
			    "missing JOB" : "too many arguments");
			return (CTL_USAGE);
		}
		if (ctl_check_job(ctl, argv[2]) == -1)
			return (CTL_EXIT_REFUSED);
		snprintf(path, sizeof(path), "/v1/jobs/%s/config", argv[2]);
		if ((rc = ctl_get(ctl, path, &doc)) != CTL_EXIT_OK)
			return (rc);
		if (!ctl->json)
			json_dumpf(doc, ctl->out, JSON_INDENT(4) |
			    JSON_ENCODE_ANY);
		if (!ctl->json)
			fputc('\n', ctl->out);
		json_decref(doc);
		return (CTL_EXIT_OK);
	}
	if (argc >= 2 && strcmp(argv[1], "set") == 0) {
		if (argc != 4) {
			ctl_errx(ctl, "config set: %s", argc < 4 ?
			    "missing JOB or FILE" : "too many arguments");
			return (CTL_USAGE);
		}
		if (ctl_check_job(ctl, argv[2]) == -1)
			return (CTL_EXIT_REFUSED);
		return (ctl_config_set(ctl, argv[2], argv[3]));
	}
	ctl_errx(ctl, "config: say get or set");
	return (CTL_USAGE);
}

/* dynprofctl cancel JOB WINDOW */
int
ctl_cmd_cancel(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_response	 res;
	json_t			*doc;
	char			 path[160];
	int64_t			 id;
	int			 rc;

	if (argc != 3) {
		ctl_errx(ctl, "cancel: %s", argc < 3 ? "missing JOB or WINDOW" :
		    "too many arguments");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[1]) == -1)
		return (CTL_EXIT_REFUSED);
	if (ctl_parse_int64(argv[2], 1, UINT32_MAX, &id) == -1) {
		ctl_errx(ctl, "cancel: WINDOW must be a window id (a positive "
		    "integer), not \"%s\"", argv[2]);
		return (CTL_USAGE);
	}
	snprintf(path, sizeof(path), "/v1/jobs/%s/windows/%lld", argv[1],
	    (long long)id);
	rc = ctl_call(ctl, "DELETE", path, NULL, 0, &doc, &res);
	if (rc != CTL_EXIT_OK)
		return (rc);
	if (ctl->json)
		ctl_print_raw(ctl, &res);
	else
		fprintf(ctl->out, "window %lld of job %s: %s (generation "
		    "%lld)\n", (long long)id, argv[1],
		    ctl_json_str(doc, "state", "cancelled"),
		    (long long)ctl_json_int(doc, "generation", 0));
	ctl_http_free(&res);
	json_decref(doc);
	return (CTL_EXIT_OK);
}

/* dynprofctl forget JOB [--force] */
int
ctl_cmd_forget(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_response	 res;
	json_t			*doc;
	const char		*job = NULL;
	char			 path[160];
	int			 i, force = 0, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--force") == 0)
			force = 1;
		else if (argv[i][0] == '-' || job != NULL) {
			ctl_errx(ctl, "forget: %s \"%s\"", argv[i][0] == '-' ?
			    "unknown option" : "one JOB only, not also",
			    argv[i]);
			return (CTL_USAGE);
		} else
			job = argv[i];
	}
	if (job == NULL) {
		ctl_errx(ctl, "forget: missing JOB");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, job) == -1)
		return (CTL_EXIT_REFUSED);
	snprintf(path, sizeof(path), "/v1/jobs/%s%s", job, force ?
	    "?force=1" : "");
	rc = ctl_call(ctl, "DELETE", path, NULL, 0, &doc, &res);
	if (rc != CTL_EXIT_OK) {
		if (rc == CTL_EXIT_REFUSED)
			ctl_check_missing_job(ctl, job);
		return (rc);
	}
	if (ctl->json)
		ctl_print_raw(ctl, &res);
	else
		fprintf(ctl->out, "job %s forgotten (generation %lld)\n", job,
		    (long long)ctl_json_int(doc, "generation", 0));
	ctl_http_free(&res);
	json_decref(doc);
	return (CTL_EXIT_OK);
}
