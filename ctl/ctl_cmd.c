/*
 * The commands that talk to the coordinator: one request each, the answer shown
 * as a table, or as the coordinator's JSON with --json.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

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
