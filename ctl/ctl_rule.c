/*
 * dynprofctl rule, stragglers, collect and trace-store: a job's rules
 * (profile its stragglers on purpose), its stragglers, whether its windows
 * are collected and where, over /v1/jobs/J/rules, /stragglers, /collect and
 * /trace-store.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* A rule's bounds, the coordinator's (server/rules.c), which checks them
 * again. */
#define CTL_RULE_PEERS_MAX	16
#define CTL_RULE_STEPS_MAX	100000
#define CTL_RULE_ROUNDUP_MAX	1000000000
#define CTL_RULE_INTERVAL_MAX_S	86400
#define CTL_RULE_PER_HOUR_MAX	60

/* The flags of rule add: each a body key and its bounds. */
static const struct {
	const char	*flag;
	const char	*key;
	int64_t		 min, max;
} ctl_rule_flags[] = {
	{ "--peers", "peers", 0, CTL_RULE_PEERS_MAX },
	{ "--steps", "steps", 1, CTL_RULE_STEPS_MAX },
	{ "--roundup", "roundup", 1, CTL_RULE_ROUNDUP_MAX },
	{ "--interval", "min_interval_s", 1, CTL_RULE_INTERVAL_MAX_S },
	{ "--max-per-hour", "max_per_hour", 1, CTL_RULE_PER_HOUR_MAX },
};

#define CTL_RULE_NFLAGS	(sizeof(ctl_rule_flags) / sizeof(ctl_rule_flags[0]))

/* Appends "%" to a number in buf. */
static void
ctl_rule_pct(char *buf, size_t len)
{
	size_t	 n = strlen(buf);

	if (n + 1 < len) {
		buf[n] = '%';
		buf[n + 1] = '\0';
	}
}

/* Prints the rules of a job as a table, with its own thresholds. */
static void
ctl_rule_table(FILE *f, json_t *doc)
{
	struct ctl_table	 t;
	json_t			*rules, *r;
	const char		*row[CTL_TABLE_COLS];
	char			 c[8][32];
	size_t			 i;

	if (!ctl_cell_int(c[0], sizeof(c[0]), doc, "lag_steps", 1)[0])
		snprintf(c[0], sizeof(c[0]), "the default");
	if (ctl_cell_int(c[1], sizeof(c[1]), doc, "rate_drop_percent", 1)[0])
		ctl_rule_pct(c[1], sizeof(c[1]));
	else
		snprintf(c[1], sizeof(c[1]), "the default");
	fprintf(f, "job %s: straggler lag %s, rate drop %s%s\n",
	    ctl_json_str(doc, "job", "?"), c[0], c[1],
	    json_is_false(json_object_get(doc, "collect")) ?
	    "; its windows are not collected" : "");
	if (json_is_string(json_object_get(doc, "trace_store")))
		fprintf(f, "its windows' trace store: %s\n",
		    ctl_json_str(doc, "trace_store", "?"));
	rules = json_object_get(doc, "rules");
	if (!json_is_array(rules) || json_array_size(rules) == 0) {
		fprintf(f, "no rules\n");
		return;
	}
	ctl_table_head(&t, "ID", "PEERS", "STEPS", "ROUNDUP", "INTERVAL_S",
	    "MAX/HOUR", "FIRED", "LAST_WINDOW", "LAST_RANKS", NULL);
	json_array_foreach(rules, i, r) {
		row[0] = ctl_cell_int(c[0], sizeof(c[0]), r, "id", 0);
		row[1] = ctl_cell_int(c[1], sizeof(c[1]), r, "peers", 0);
		row[2] = ctl_cell_int(c[2], sizeof(c[2]), r, "steps", 0);
		row[3] = ctl_cell_int(c[3], sizeof(c[3]), r, "roundup", 0);
		row[4] = ctl_cell_int(c[4], sizeof(c[4]), r, "min_interval_s",
		    0);
		row[5] = ctl_cell_int(c[5], sizeof(c[5]), r, "max_per_hour", 0);
		row[6] = ctl_cell_int(c[6], sizeof(c[6]), r, "fired_total", 0);
		row[7] = ctl_cell_int(c[7], sizeof(c[7]), r, "last_window", 0);
		row[8] = ctl_json_str(r, "last_ranks", "");
		ctl_table_add(&t, row);
	}
	ctl_table_print(f, &t, "");
}

/* Reads rule add's flags after JOB into a POST body (caller decrefs), or
 * NULL said why. */
static json_t *
ctl_rule_body(struct ctl *ctl, int argc, char **argv)
{
	json_t		*body, *opts;
	const char	*key;
	int64_t		 v;
	size_t		 k;
	int		 i;
	char		 err[256];

	body = json_pack("{s:s}", "when", "straggler");
	opts = json_object();
	for (i = 3; i < argc; i += 2) {
		if (i + 1 == argc) {
			ctl_errx(ctl, "rule add: %s needs a value", argv[i]);
			goto fail;
		}
		if (strcmp(argv[i], "--option") == 0) {
			if (ctl_option_parse(opts, argv[i + 1], err,
			    sizeof(err)) == -1) {
				ctl_errx(ctl, "rule add: %s", err);
				goto fail;
			}
			continue;
		}
		for (k = 0; k < CTL_RULE_NFLAGS; k++)
			if (strcmp(argv[i], ctl_rule_flags[k].flag) == 0)
				break;
		key = k < CTL_RULE_NFLAGS ? ctl_rule_flags[k].key :
		    strcmp(argv[i], "--output-subdir") == 0 ?
		    "output_subdir" : NULL;
		if (key == NULL) {
			ctl_errx(ctl, "rule add: unknown flag %s", argv[i]);
			goto fail;
		}
		/* Only --option adds up; another flag twice is a mistake. */
		if (json_object_get(body, key) != NULL) {
			ctl_errx(ctl, "rule add: %s given twice", argv[i]);
			goto fail;
		}
		if (k == CTL_RULE_NFLAGS) {
			json_object_set_new(body, key, json_string(argv[i + 1]));
			continue;
		}
		if (ctl_parse_int64(argv[i + 1], ctl_rule_flags[k].min,
		    ctl_rule_flags[k].max, &v) == -1) {
			ctl_errx(ctl, "rule add: %s must be an integer from "
			    "%lld to %lld, not \"%s\"", argv[i],
			    (long long)ctl_rule_flags[k].min,
			    (long long)ctl_rule_flags[k].max, argv[i + 1]);
			goto fail;
		}
		json_object_set_new(body, ctl_rule_flags[k].key,
		    json_integer(v));
	}
	if (json_object_get(body, "steps") == NULL) {
		ctl_errx(ctl, "rule add: --steps K is required");
		goto fail;
	}
	if (json_object_size(opts) > 0)
		json_object_set(body, "options", opts);
	json_decref(opts);
	return (body);
fail:
	json_decref(opts);
	json_decref(body);
	return (NULL);
}

/* Sends one request of rule or stragglers; prints the answer with print, or
 * raw with --json. */
static int
ctl_rule_send(struct ctl *ctl, const char *method, const char *path,
    json_t *body, void (*print)(FILE *, json_t *))
{
	struct ctl_response	 res;
	json_t			*doc;
	char			*text = NULL;
	int			 rc;

	if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL)
		return (CTL_EXIT_REFUSED);
	rc = ctl_call(ctl, method, path, text, text ? strlen(text) : 0, &doc,
	    &res);
	free(text);
	if (rc != CTL_EXIT_OK)
		return (rc);
	if (ctl->json)
		fprintf(ctl->out, "%.*s%s", (int)res.len, res.body,
		    res.len > 0 && res.body[res.len - 1] == '\n' ? "" : "\n");
	else
		print(ctl->out, doc);
	ctl_http_free(&res);
	json_decref(doc);
	return (CTL_EXIT_OK);
}

/* Prints a rule just added. */
static void
ctl_rule_added(FILE *f, json_t *doc)
{
	fprintf(f, "rule %lld of job %s: on a straggler, profile it and %lld "
	    "peers for %lld steps from the next multiple of %lld; at most "
	    "every %lld s, %lld an hour\n",
	    (long long)ctl_json_int(doc, "id", 0), ctl_json_str(doc, "job", "?"),
	    (long long)ctl_json_int(doc, "peers", 0),
	    (long long)ctl_json_int(doc, "steps", 0),
	    (long long)ctl_json_int(doc, "roundup", 0),
	    (long long)ctl_json_int(doc, "min_interval_s", 0),
	    (long long)ctl_json_int(doc, "max_per_hour", 0));
}

/* Prints a rule just deleted. */
static void
ctl_rule_deleted(FILE *f, json_t *doc)
{
	fprintf(f, "rule %lld of job %s deleted\n",
	    (long long)ctl_json_int(doc, "id", 0), ctl_json_str(doc, "job", "?"));
}

/* dynprofctl rule list|add|delete JOB ... */
int
ctl_cmd_rule(struct ctl *ctl, int argc, char **argv)
{
	json_t	*body;
	char	 path[160];
	int64_t	 id;
	int	 rc;

	if (argc < 3) {
		ctl_errx(ctl, "rule: say list, add or delete, and JOB");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[2]) == -1)
		return (CTL_EXIT_REFUSED);
	snprintf(path, sizeof(path), "/v1/jobs/%s/rules", argv[2]);
	if (strcmp(argv[1], "list") == 0 && argc == 3)
		return (ctl_rule_send(ctl, "GET", path, NULL, ctl_rule_table));
	if (strcmp(argv[1], "add") == 0) {
		if ((body = ctl_rule_body(ctl, argc, argv)) == NULL)
			return (CTL_USAGE);
		rc = ctl_rule_send(ctl, "POST", path, body, ctl_rule_added);
		json_decref(body);
		return (rc);
	}
	if (strcmp(argv[1], "delete") == 0 && argc == 4) {
		if (ctl_parse_int64(argv[3], 1, UINT32_MAX, &id) == -1) {
			ctl_errx(ctl, "rule delete: ID must be a rule id (a "
			    "positive integer), not \"%s\"", argv[3]);
			return (CTL_USAGE);
		}
		snprintf(path, sizeof(path), "/v1/jobs/%s/rules/%lld", argv[2],
		    (long long)id);
		return (ctl_rule_send(ctl, "DELETE", path, NULL,
		    ctl_rule_deleted));
	}
	ctl_errx(ctl, "rule: say list JOB, add JOB --steps K ..., or delete "
	    "JOB ID");
	return (CTL_USAGE);
}

/* Writes number v into c to two decimals, "-" when it is not one; returns
 * c. */
static const char *
ctl_cell_num(char *c, size_t len, json_t *v)
{
	if (json_is_number(v))
		snprintf(c, len, "%.2f", json_number_value(v));
	else
		snprintf(c, len, "-");
	return (c);
}

/* Prints a job's stragglers: the medians, then the worst ranks. */
static void
ctl_stragglers_table(FILE *f, json_t *doc)
{
	struct ctl_table	 t;
	json_t			*ranks, *r, *reasons, *v;
	const char		*row[CTL_TABLE_COLS];
	char			 c[8][32], why[48];
	size_t			 i, k, off;
	int64_t			 judged, nodes, nobusy;

	judged = ctl_json_int(doc, "ranks_judged", 0);
	nodes = ctl_json_int(doc, "nodes", 0);
	fprintf(f, "job %s: median step %lld, %lld of %lld rank%s straggle "
	    "on %lld node%s (lag over %lld steps or rate %lld%% under the "
	    "job's)\n", ctl_json_str(doc, "job", "?"),
	    (long long)ctl_json_int(doc, "median_step", -1),
	    (long long)ctl_json_int(doc, "ranks", 0), (long long)judged,
	    judged == 1 ? "" : "s", (long long)nodes, nodes == 1 ? "" : "s",
	    (long long)ctl_json_int(doc, "lag_steps", 0),
	    (long long)ctl_json_int(doc, "rate_drop_percent", 0));
	nobusy = ctl_json_int(doc, "no_busy", 0);
	fprintf(f, "busy time (step begin to its first collective): %lld "
	    "rank%s give it, median %s ms; %lld over it by %lld%% (busy), "
	    "%lld risen as much against their own (busy_change)\n",
	    (long long)ctl_json_int(doc, "busy_ranks", 0),
	    ctl_json_int(doc, "busy_ranks", 0) == 1 ? "" : "s",
	    ctl_cell_num(c[5], sizeof(c[5]), json_object_get(doc,
	    "busy_median_ms")), (long long)ctl_json_int(doc, "busy", 0),
	    (long long)ctl_json_int(doc, "busy_percent", 0),
	    (long long)ctl_json_int(doc, "busy_change", 0));
	if (nobusy > 0) {
		fprintf(f, "%lld judged rank%s give no busy time (judged by lag "
		    "and rate only):", (long long)nobusy, nobusy == 1 ? "" :
		    "s");
		json_array_foreach(json_object_get(doc, "no_busy_ranks"), i, v)
			fprintf(f, " %lld", (long long)json_integer_value(v));
		fprintf(f, "%s\n", (size_t)nobusy > json_array_size(
		    json_object_get(doc, "no_busy_ranks")) ? " ..." : "");
	}
	if (json_is_object(v = json_object_get(doc, "last_arriver")))
		fprintf(f, "last to arrive at the collective: rank %lld, at "
		    "%lld of the last %lld steps judged (%.0f%%), %s ms after "
		    "the median%s\n", (long long)ctl_json_int(v, "rank", -1),
		    (long long)ctl_json_int(v, "steps", 0),
		    (long long)ctl_json_int(v, "of", 0),
		    100.0 * json_number_value(json_object_get(v, "share")),
		    ctl_cell_num(c[7], sizeof(c[7]), json_object_get(v,
		    "late_ms")), json_is_true(json_object_get(v, "flagged")) ?
		    " (last)" : ", under half: not flagged");
	ranks = json_object_get(doc, "worst_ranks");
	if (json_array_size(ranks) == 0)
		return;
	ctl_table_head(&t, "RANK", "NODE", "STEP", "LAG", "RATE", "BUSY_MS",
	    "X_MEDIAN", "SCORE", "WHY", NULL);
	json_array_foreach(ranks, i, r) {
		why[0] = '\0';
		off = 0;
		reasons = json_object_get(r, "reasons");
		json_array_foreach(reasons, k, v)
			if (off < sizeof(why))
				off += (size_t)snprintf(why + off, sizeof(why) -
				    off, "%s%s", k ? "," : "",
				    json_string_value(v));
		ctl_cell_num(c[4], sizeof(c[4]), json_object_get(r, "rate"));
		row[0] = ctl_cell_int(c[0], sizeof(c[0]), r, "rank", 0);
		row[1] = ctl_json_str(r, "node", "");
		row[2] = ctl_cell_int(c[2], sizeof(c[2]), r, "step", -1);
		row[3] = ctl_cell_int(c[3], sizeof(c[3]), r, "lag", INT64_MIN);
		row[4] = c[4];
		row[5] = ctl_cell_num(c[5], sizeof(c[5]),
		    json_object_get(r, "busy_ms"));
		row[6] = ctl_cell_num(c[6], sizeof(c[6]),
		    json_object_get(r, "busy_over_median"));
		row[7] = ctl_cell_num(c[7], sizeof(c[7]),
		    json_object_get(r, "busy_score"));
		row[8] = why;
		ctl_table_add(&t, row);
	}
	ctl_table_print(f, &t, "");
}

/* dynprofctl stragglers JOB [--lag N|default] [--rate-drop P|default]
 * [--busy P|default] */
int
ctl_cmd_stragglers(struct ctl *ctl, int argc, char **argv)
{
	json_t		*body;
	char		 path[160];
	const char	*key;
	int64_t		 v;
	int		 i, rc;

	if (argc < 2) {
		ctl_errx(ctl, "stragglers: missing JOB");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[1]) == -1)
		return (CTL_EXIT_REFUSED);
	snprintf(path, sizeof(path), "/v1/jobs/%s/stragglers", argv[1]);
	if (argc == 2)
		return (ctl_rule_send(ctl, "GET", path, NULL,
		    ctl_stragglers_table));
	body = json_object();
	for (i = 2; i < argc; i += 2) {
		key = strcmp(argv[i], "--lag") == 0 ? "lag_steps" :
		    strcmp(argv[i], "--rate-drop") == 0 ? "rate_drop_percent" :
		    strcmp(argv[i], "--busy") == 0 ? "busy_percent" : NULL;
		if (key == NULL || i + 1 == argc) {
			ctl_errx(ctl, "stragglers: %s %s", argv[i], key == NULL ?
			    "is not a flag (--lag, --rate-drop, --busy)" :
			    "needs a value");
			json_decref(body);
			return (CTL_USAGE);
		}
		if (strcmp(argv[i + 1], "default") == 0)
			json_object_set_new(body, key, json_null());
		else if (ctl_parse_int64(argv[i + 1], 1, INT64_MAX, &v) == 0)
			json_object_set_new(body, key, json_integer(v));
		else {
			ctl_errx(ctl, "stragglers: %s must be a positive "
			    "integer or \"default\", not \"%s\"", argv[i],
			    argv[i + 1]);
			json_decref(body);
			return (CTL_USAGE);
		}
	}
	rc = ctl_rule_send(ctl, "PUT", path, body, ctl_stragglers_table);
	json_decref(body);
	return (rc);
}

/* Prints a job's collect setting just set. */
static void
ctl_collect_set(FILE *f, json_t *doc)
{
	fprintf(f, "job %s: its windows made from now on are %scollected\n",
	    ctl_json_str(doc, "job", "?"), json_is_false(json_object_get(doc,
	    "collect")) ? "not " : "");
}

/* dynprofctl collect JOB on|off */
int
ctl_cmd_collect(struct ctl *ctl, int argc, char **argv)
{
	json_t	*body;
	char	 path[160];
	int	 rc, on;

	if (argc != 3 || ((on = strcmp(argv[2], "on") == 0) == 0 &&
	    strcmp(argv[2], "off") != 0)) {
		ctl_errx(ctl, "collect: say JOB on or JOB off");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[1]) == -1)
		return (CTL_EXIT_REFUSED);
	snprintf(path, sizeof(path), "/v1/jobs/%s/collect", argv[1]);
	body = json_pack("{s:b}", "collect", on);
	rc = ctl_rule_send(ctl, "PUT", path, body, ctl_collect_set);
	json_decref(body);
	return (rc);
}

/* Prints a job's trace store just set. */
static void
ctl_store_set(FILE *f, json_t *doc)
{
	const char	*s = json_string_value(json_object_get(doc, "store"));

	fprintf(f, "job %s: its windows made from now on are collected into "
	    "%s\n", ctl_json_str(doc, "job", "?"), s != NULL ? s :
	    "the agents' --trace-store");
}

/* dynprofctl trace-store JOB URL|DIR|none */
int
ctl_cmd_trace_store(struct ctl *ctl, int argc, char **argv)
{
	json_t	*body;
	char	 path[160];
	int	 rc;

	if (argc != 3) {
		ctl_errx(ctl, "trace-store: say JOB and s3://BUCKET/PREFIX, an "
		    "absolute directory, or none");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[1]) == -1)
		return (CTL_EXIT_REFUSED);
	snprintf(path, sizeof(path), "/v1/jobs/%s/trace-store", argv[1]);
	body = json_pack("{s:o}", "store", strcmp(argv[2], "none") == 0 ?
	    json_null() : json_string(argv[2]));
	rc = ctl_rule_send(ctl, "PUT", path, body, ctl_store_set);
	json_decref(body);
	return (rc);
}
