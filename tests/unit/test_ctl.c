/*
 * dynprofctl's parts: trace arguments and --option typing, the status table
 * built from a JSON document, progress counting for trace --wait.  Its HTTP
 * client is in test_ctl_http.c.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl.h"
#include "when.h"

static json_t *
load(const char *text)
{
	json_error_t	 e;
	json_t		*j;

	j = json_loads(text, 0, &e);
	if (j == NULL)
		fail_msg("bad test JSON: %s (line %d)", e.text, e.line);
	return (j);
}

/* Runs a formatter into a string; caller frees. */
static char *
render(void (*fn)(FILE *, json_t *), json_t *doc)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f;

	f = open_memstream(&buf, &len);
	assert_non_null(f);
	fn(f, doc);
	fclose(f);
	return (buf);
}

/* Renders the JSON text with fn and checks the output is exactly want. */
static void
expect_render(void (*fn)(FILE *, json_t *), const char *text, const char *want)
{
	json_t	*doc;
	char	*out;

	doc = load(text);
	out = render(fn, doc);
	if (strcmp(out, want) != 0)
		fail_msg("got:\n%s\nwant:\n%s", out, want);
	free(out);
	json_decref(doc);
}

static void
test_option_typing(void **state)
{
	json_t	*o, *want;
	char	 err[256];

	(void)state;
	o = json_object();
	assert_int_equal(ctl_option_parse(o, "profiler_level=1", err,
	    sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "aicore_metrics=-1", err,
	    sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "with_stack=true", err,
	    sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "data_simplification=0", err,
	    sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "profile_communication=Yes", err,
	    sizeof(err)), 0);
	/* Other keys: JSON when it parses, else a string. */
	assert_int_equal(ctl_option_parse(o, "activities=[\"CPU\",\"NPU\"]",
	    err, sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "record_shapes=true", err,
	    sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "export_type=text", err,
	    sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "depth=12", err, sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "quoted=\"12\"", err,
	    sizeof(err)), 0);
	assert_int_equal(ctl_option_parse(o, "empty=", err, sizeof(err)), 0);
	want = load("{\"profiler_level\": 1, \"aicore_metrics\": -1,"
	    " \"with_stack\": true, \"data_simplification\": false,"
	    " \"profile_communication\": true,"
	    " \"activities\": [\"CPU\", \"NPU\"], \"record_shapes\": true,"
	    " \"export_type\": \"text\", \"depth\": 12, \"quoted\": \"12\","
	    " \"empty\": \"\"}");
	assert_true(json_equal(o, want));
	json_decref(want);

	/* Typed fields refuse what MindSpore would reset. */
	assert_int_equal(ctl_option_parse(o, "analyse_mode=sync", err,
	    sizeof(err)), -1);
	assert_string_equal(err, "--option analyse_mode=sync: analyse_mode "
	    "takes an integer (-1 for unset)");
	assert_int_equal(ctl_option_parse(o, "parallel_strategy=2", err,
	    sizeof(err)), -1);
	assert_string_equal(err, "--option parallel_strategy=2: "
	    "parallel_strategy takes true or false");
	assert_int_equal(ctl_option_parse(o, "profile_framework=1.5", err,
	    sizeof(err)), -1);
	assert_int_equal(ctl_option_parse(o, "profiler_level=2", err,
	    sizeof(err)), -1);
	assert_string_equal(err, "--option profiler_level given twice");
	assert_int_equal(ctl_option_parse(o, "noequals", err, sizeof(err)),
	    -1);
	assert_string_equal(err, "--option noequals: expected KEY=VALUE");
	assert_int_equal(ctl_option_parse(o, "=1", err, sizeof(err)), -1);
	assert_int_equal(ctl_option_parse(o, "start_step=5", err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "--start"));
	json_decref(o);
}

static int
parse(const char *line, struct ctl_trace_args *a, char *err, size_t errlen)
{
	char	*copy, *argv[32], *tok, *save;
	int	 argc = 0, rc;

	copy = strdup(line);
	for (tok = strtok_r(copy, " ", &save); tok != NULL && argc < 31;
	    tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	rc = ctl_trace_parse(argc, argv, a, err, errlen);
	/* a's strings point into copy: callers only look at its numbers. */
	free(copy);
	return (rc);
}

static void
check_body(const char *line, const char *want)
{
	struct ctl_trace_args	 a;
	json_t			*body, *w;
	char			 err[256];
	char			*copy, *argv[32], *tok, *save;
	int			 argc = 0;

	copy = strdup(line);
	for (tok = strtok_r(copy, " ", &save); tok != NULL && argc < 31;
	    tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	if (ctl_trace_parse(argc, argv, &a, err, sizeof(err)) != 0)
		fail_msg("%s: %s", line, err);
	body = ctl_trace_body(&a);
	w = load(want);
	if (!json_equal(body, w)) {
		char *got = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
		fail_msg("%s: got %s", line, got);
	}
	json_decref(w);
	json_decref(body);
	ctl_trace_args_free(&a);
	free(copy);
}

static void
check_refused(const char *line, const char *want)
{
	struct ctl_trace_args	 a;
	char			 err[256];

	if (parse(line, &a, err, sizeof(err)) == 0) {
		ctl_trace_args_free(&a);
		fail_msg("%s: accepted", line);
	}
	if (strcmp(err, want) != 0)
		fail_msg("%s: got \"%s\", want \"%s\"", line, err, want);
}

static void
test_trace_args(void **state)
{
	struct ctl_trace_args	 a;
	char			 err[256];

	(void)state;
	check_body("trace J --start 160 --stop 164",
	    "{\"start_step\": 160, \"stop_step\": 164}");
	check_body("trace --in=20 J --steps=5 --roundup 100 --ranks 0-3,9 "
	    "--option profiler_level=1 --option activities=[\"CPU\"] "
	    "--output-subdir run1/a",
	    "{\"in_steps\": 20, \"steps\": 5, \"roundup\": 100,"
	    " \"ranks\": \"0-3,9\", \"output_subdir\": \"run1/a\","
	    " \"options\": {\"profiler_level\": 1, \"activities\": [\"CPU\"]}}");
	check_body("trace 36199_0 --in 0 --roundup 10 --steps 10",
	    "{\"in_steps\": 0, \"steps\": 10, \"roundup\": 10}");
	check_refused("trace 36199_0 --in 0 --steps 10", "--in 0 would "
	    "start at the step the ranks are in, which they have begun "
	    "already: --in 1 is the soonest (--in 0 goes with --roundup R: "
	    "the next multiple of R)");
	check_body("trace J --start 5 --steps 1 --force --new",
	    "{\"start_step\": 5, \"steps\": 1, \"force\": true}");
	check_body("trace J --start 0 --stop 0",
	    "{\"start_step\": 0, \"stop_step\": 0}");

	assert_int_equal(parse("trace J --start 5 --steps 2 --wait --timeout "
	    "2.5", &a, err, sizeof(err)), 0);
	assert_true(a.wait);
	assert_true(a.have_timeout);
	assert_true(a.timeout > 2.49 && a.timeout < 2.51);
	ctl_trace_args_free(&a);

	check_refused("trace --start 5 --steps 2", "missing JOB");
	check_refused("trace J K --start 5 --steps 2", "unexpected argument K");
	check_refused("trace ../x --start 5 --steps 2",
	    "invalid job id \"../x\": job id starts with '.'");
	check_refused("trace J --steps 2", "say when: --start N or --in N");
	check_refused("trace J --start 1 --in 2 --steps 2",
	    "--start and --in exclude each other");
	check_refused("trace J --start 1", "say how long: --steps M or --stop N");
	check_refused("trace J --start 1 --steps 2 --stop 3",
	    "--steps and --stop exclude each other");
	check_refused("trace J --start 10 --stop 9",
	    "--stop 9 is before --start 10");
	check_refused("trace J --start -1 --stop 9",
	    "--start -1: expected an integer >= 0");
	check_refused("trace J --start 1x --stop 9",
	    "--start 1x: expected an integer >= 0");
	check_refused("trace J --start 1 --start 2 --stop 9",
	    "--start given twice");
	check_refused("trace J --start 1 --steps 0",
	    "--steps 0: expected an integer >= 1");
	check_refused("trace J --in -1 --steps 2",
	    "--in -1: expected an integer >= 0");
	check_refused("trace J --start 1 --steps 2 --ranks 3-1",
	    "--ranks 3-1: ranks: range ends before it starts");
	check_refused("trace J --start 1 --steps 2 --output-subdir /abs",
	    "--output-subdir /abs: output subdirectory is an absolute path");
	check_refused("trace J --start 1 --steps 2 --output-subdir a/../..",
	    "--output-subdir a/../..: output subdirectory has a '..' "
	    "component");
	check_refused("trace J --start 1 --steps 2 --timeout 5",
	    "--timeout goes with --wait");
	check_refused("trace J --start 1 --steps 2 --wait --timeout -1",
	    "--timeout -1: expected a number of seconds > 0");
	check_refused("trace J --start 1 --steps 2 --bogus", "unknown flag --bogus");
	check_refused("trace J --start 1 --steps", "--steps needs a value");
	check_refused("trace J --start 1 --steps 2 --option x",
	    "--option x: expected KEY=VALUE");

	/* Time windows: --at and --for (--duration), --tolerance. */
	check_body("trace J --at +30s --for 10s",
	    "{\"at\": \"+30s\", \"duration_ms\": 10000}");
	check_body("trace J --at 2026-12-05T12:00:00Z --duration 1500ms "
	    "--tolerance 250ms --nodes n1",
	    "{\"at\": \"2026-12-05T12:00:00Z\", \"duration_ms\": 1500,"
	    " \"tolerance_ms\": 250, \"nodes\": \"n1\"}");
	check_refused("trace J --at +30s", "say how long: --for 10s (or "
	    "--duration)");
	check_refused("trace J --at +30s --for 1s --start 5",
	    "--at (a time window) takes no steps: no --start, --in, --stop, "
	    "--steps, --roundup or --force");
	check_refused("trace J --at noon --for 1s", "--at noon: not RFC 3339 "
	    "(2026-12-05T12:00:00Z) nor +30s");
	check_refused("trace J --at +30s --for 10x",
	    "--for 10x: a unit that is not ms, s, m or h");
	check_refused("trace J --start 1 --steps 2 --for 1s",
	    "--for and --tolerance go with --at");
}

/* Times and durations of time windows (common/when.c). */
static void
test_when(void **state)
{
	int64_t		 t, ms;
	const char	*why;

	(void)state;
	assert_int_equal(when_parse_at("2026-12-05T12:00:00Z", 0, &t, &why), 0);
	assert_true(t == 1796472000LL * 1000000000);
	assert_int_equal(when_parse_at("2026-12-05T13:30:00.25+01:30", 0, &t,
	    &why), 0);
	assert_true(t == 1796472000LL * 1000000000 + 250000000);
	assert_int_equal(when_parse_at("+1500ms", 1000, &t, &why), 0);
	assert_true(t == 1000 + 1500LL * 1000000);
	assert_int_equal(when_parse_at("+2m", 0, &t, &why), 0);
	assert_true(t == 120LL * 1000000000);
	assert_int_equal(when_parse_at("2026-02-30T00:00:00Z", 0, &t, &why),
	    -1);
	assert_string_equal(why, "no such date");
	assert_int_equal(when_parse_at("2026-12-05T12:00:00", 0, &t, &why),
	    -1);
	assert_string_equal(why, "a time without its zone (Z or +HH:MM)");
	assert_int_equal(when_parse_at("2200-01-01T00:00:00Z", 0, &t, &why),
	    -1);
	assert_int_equal(when_parse_at("+99999999999999999999s", 0, &t, &why),
	    -1);
	assert_string_equal(why, "longer than a year");
	assert_int_equal(when_parse_duration_ms("10", &ms, &why), 0);
	assert_true(ms == 10000);
	assert_int_equal(when_parse_duration_ms("1h", &ms, &why), 0);
	assert_true(ms == 3600000);
	assert_int_equal(when_parse_duration_ms("-1s", &ms, &why), -1);
	assert_int_equal(when_parse_duration_ms("", &ms, &why), -1);
}

/* A job's summary as docs/admin-api.md describes it. */
static const char *summary_doc =
    "{\"job\": \"J\", \"generation\": 7, \"revision\": 40,"
    " \"progress\": {\"ranks_alive\": 5, \"min_step\": 140, \"max_step\": 141},"
    " \"rank_counts\": {\"total\": 6, \"attached\": 0, \"armed\": 1,"
    "  \"profiling\": 1, \"done\": 1, \"skipped\": 1, \"failed\": 1,"
    "  \"gone\": 1, \"unknown\": 0},"
    " \"steps\": {\"ranks\": 5, \"min\": 140, \"median\": 141, \"max\": 141},"
    " \"node_counts\": {\"total\": 3, \"connected\": 2, \"lost\": 1,"
    "  \"applied_current\": 2, \"applied_behind\": 1, \"oldest_applied\": 6},"
    " \"windows\": ["
    "  {\"id\": 2, \"start_step\": 100, \"stop_step\": 101, \"ranks\": \"\","
    "   \"state\": \"done\", \"rank_counts\": {\"targeted\": 6, \"started\": 6,"
    "   \"stopped\": 6, \"skipped\": 0, \"failed\": 0, \"gone\": 0,"
    "   \"missed\": 0, \"finished\": 6}},"
    "  {\"id\": 3, \"start_step\": 160, \"stop_step\": 164, \"ranks\": \"0-3,9\","
    "   \"state\": \"running\", \"rank_counts\": {\"targeted\": 5,"
    "   \"started\": 2, \"stopped\": 1, \"skipped\": 1, \"failed\": 1,"
    "   \"gone\": 1, \"missed\": 0, \"finished\": 4}},"
    "  {\"id\": 4, \"start_step\": 200, \"stop_step\": 200, \"ranks\": \"\","
    "   \"state\": \"scheduled\"}]}";

/* A page of GET /v1/jobs/J/ranks. */
static const char *page_doc =
    "{\"job\": \"J\", \"limit\": 1000, \"ranks\": ["
    "  {\"rank\": 0, \"node\": \"n1\", \"uid\": 1001, \"step\": 140,"
    "   \"state\": \"profiling\", \"labels\": {\"pp\": \"0\", \"tp\": \"1\"},"
    "   \"window\": 3, \"output_dir\": \"/o/rank0_start160_stop164\","
    "   \"events\": [{\"kind\": \"started\", \"window\": 3}]},"
    "  {\"rank\": 1, \"node\": \"n1\", \"uid\": 0, \"step\": 141,"
    "   \"state\": \"done\","
    "   \"window\": 3, \"output_dir\": \"/o/rank1_start160_stop164\"},"
    "  {\"rank\": 2, \"node\": \"node-long-name\", \"step\": 141,"
    "   \"state\": \"failed\", \"window\": 3, \"error\": \"disk full\"},"
    "  {\"rank\": 3, \"node\": \"n2\", \"state\": \"gone\"},"
    "  {\"rank\": 9, \"node\": \"n2\", \"step\": 141, \"state\": \"skipped\","
    "   \"window\": 3, \"events\": [{\"kind\": \"skipped\", \"window\": 3}]},"
    "  {\"rank\": 12, \"node\": \"n2\", \"step\": 141, \"state\": \"armed\"}],"
    " \"next\": null}";

/* Renders a summary and a page of ranks (NULL: none) as status does. */
static char *
render_status(const char *summary, const char *page)
{
	struct ctl_table	 t;
	json_t			*doc, *pg;
	char			*buf = NULL;
	size_t			 len = 0;
	FILE			*f;

	doc = load(summary);
	ctl_table_init(&t, 8);
	if (page != NULL) {
		pg = load(page);
		ctl_table_rank_rows(&t, pg);
		json_decref(pg);
	}
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	ctl_table_status(f, doc, &t);
	fclose(f);
	ctl_table_clear(&t);
	json_decref(doc);
	return (buf);
}

/* Checks status's output for a summary and a page. */
static void
expect_status(const char *summary, const char *page, const char *want)
{
	char	*out = render_status(summary, page);

	if (strcmp(out, want) != 0)
		fail_msg("got:\n%s\nwant:\n%s", out, want);
	free(out);
}

static void
test_status_table(void **state)
{
	char	*out;

	(void)state;
	expect_status(summary_doc, page_doc,
	    "job J generation 7: 6 ranks on 3 nodes (1 lost), steps 140-141, "
	    "window 3 [160,164]: 1 armed, 1 profiling, 1 done, 1 skipped, "
	    "1 failed, 1 gone\n"
	    "RANK  NODE            UID   STEP  STATE      WINDOW  LABELS     "
	    "OUTPUT\n"
	    "0     n1              1001  140   profiling  3       pp=0,tp=1  "
	    "/o/rank0_start160_stop164\n"
	    "1     n1              0     141   done       3       -          "
	    "/o/rank1_start160_stop164\n"
	    "2     node-long-name  -     141   failed     3       -          "
	    "error: disk full\n"
	    "3     n2              -     -     gone       -       -          -\n"
	    "9     n2              -     141   skipped    3       -          -\n"
	    "12    n2              -     141   armed      -       -          -\n"
	    "\n"
	    "windows:\n"
	    "  ID  WHEN     STATE      RANKS  TARGETED  STARTED  STOPPED  "
	    "FINISHED\n"
	    "  2   100-101  done       all    6         6        6        6\n"
	    "  3   160-164  running    0-3,9  5         2        1        "
	    "4 (1 failed, 1 skipped, 1 gone, 0 missed)\n"
	    "  4   200-200  scheduled  all    -         -        -        -\n"
	    "\n"
	    "nodes: 2 connected, 1 lost; 2 applied generation 7, 1 behind "
	    "(oldest 6)\n");

	/* A job nobody has reported on yet. */
	expect_status(
	    "{\"job\": \"new\", \"generation\": 1, \"progress\": null,"
	    " \"rank_counts\": {\"total\": 0}, \"node_counts\": {\"total\": 0},"
	    " \"windows\": [{\"id\": 1, \"start_step\": 5, \"stop_step\": 6,"
	    " \"state\": \"scheduled\", \"rank_counts\": {\"targeted\": 0}}]}",
	    "{\"ranks\": [], \"next\": null}",
	    "job new generation 1: no ranks reported yet, window 1 [5,6]\n"
	    "\n"
	    "windows:\n"
	    "  ID  WHEN  STATE      RANKS  TARGETED  STARTED  STOPPED  "
	    "FINISHED\n"
	    "  1   5-6   scheduled  all    0         -        -        -\n");

	/* Time windows: the steps their ranks ran them at, once known. */
	expect_status(
	    "{\"job\": \"t\", \"generation\": 3, \"progress\": null,"
	    " \"rank_counts\": {\"total\": 0}, \"node_counts\": {\"total\": 0},"
	    " \"windows\": [{\"id\": 1, \"start_step\": 0, \"stop_step\": 0,"
	    " \"at\": \"T1\", \"duration_ms\": 1500, \"state\": \"done\","
	    " \"rank_counts\": {\"targeted\": 0}, \"ran\": {\"first_start\":"
	    " \"T2\", \"last_stop\": \"T3\", \"start_step\": 46,"
	    " \"stop_step\": 75}}, {\"id\": 2, \"start_step\": 0,"
	    " \"stop_step\": 0, \"at\": \"T4\", \"duration_ms\": 20,"
	    " \"state\": \"running\", \"rank_counts\": {\"targeted\": 0},"
	    " \"ran\": {\"first_start\": \"T5\", \"last_stop\": null,"
	    " \"start_step\": 80, \"stop_step\": null}}, {\"id\": 3,"
	    " \"start_step\": 0, \"stop_step\": 0, \"at\": \"T6\","
	    " \"duration_ms\": 5, \"state\": \"done\", \"rank_counts\":"
	    " {\"targeted\": 0}, \"ran\": {\"first_start\": \"T7\","
	    " \"last_stop\": \"T8\", \"start_step\": null,"
	    " \"stop_step\": null}}]}",
	    "{\"ranks\": [], \"next\": null}",
	    "job t generation 3: no ranks reported yet, window 2 [at T4, 20 ms]\n"
	    "\n"
	    "windows:\n"
	    "  ID  WHEN                            STATE    RANKS  TARGETED  "
	    "STARTED  STOPPED  FINISHED\n"
	    "  1   at T1 for 1500 ms, steps 46-75  done     all    0         "
	    "-        -        -\n"
	    "  2   at T4 for 20 ms, from step 80   running  all    0         "
	    "-        -        -\n"
	    "  3   at T6 for 5 ms                  done     all    0         "
	    "-        -        -\n");

	/* Junk where objects should be: no crash, placeholders. */
	out = render_status("{\"job\": 5, \"rank_counts\": [1],"
	    " \"windows\": {}, \"node_counts\": null}",
	    "{\"ranks\": [1, {\"rank\": \"x\"}]}");
	assert_non_null(strstr(out, "job ? generation 0: no ranks reported "
	    "yet, no windows\n"));
	free(out);
}

static void
test_jobs_nodes_tables(void **state)
{
	(void)state;
	expect_render(ctl_table_jobs,
	    "{\"jobs\": [{\"job\": \"J\", \"generation\": 7,"
	    " \"windows\": 3, \"pending_windows\": 1, \"ranks\": 12,"
	    " \"nodes\": 3, \"max_step\": 141},"
	    " {\"job\": \"other\", \"generation\": 1, \"windows\": [{}],"
	    " \"ranks\": 0, \"nodes\": 0, \"max_step\": -1}]}",
	    "JOB    GENERATION  WINDOWS  PENDING  RANKS  NODES  MAX_STEP\n"
	    "J      7           3        1        12     3      141\n"
	    "other  1           1        -        0      0      -\n");

	expect_render(ctl_table_jobs, "{\"jobs\": []}", "no jobs\n");

	expect_render(ctl_table_nodes,
	    "{\"nodes\": [{\"node\": \"n1\", \"state\": \"connected\","
	    " \"address\": \"127.0.0.1:4000\", \"connected_since\": \"T1\","
	    " \"last_seen\": \"T2\", \"jobs\": {\"J\": 7, \"K\": 2}}]}",
	    "NODE  STATE      ADDRESS         CONNECTED_SINCE  LAST_SEEN  "
	    "CLOCK_OFFSET  JOBS (APPLIED GENERATION)\n"
	    "n1    connected  127.0.0.1:4000  T1               T2         "
	    "-             J:7,K:2\n");
	/* The agents' clock offsets, and the worst under the table. */
	expect_render(ctl_table_nodes,
	    "{\"nodes\": [{\"node\": \"n1\", \"state\": \"connected\","
	    " \"address\": null, \"connected_since\": \"T1\","
	    " \"last_seen\": \"T2\", \"clock_offset_ms\": -2512,"
	    " \"jobs\": {}}], \"worst_clock_offset\": {\"node\": \"n1\","
	    " \"offset_ms\": -2512}}",
	    "NODE  STATE      ADDRESS  CONNECTED_SINCE  LAST_SEEN  "
	    "CLOCK_OFFSET  JOBS (APPLIED GENERATION)\n"
	    "n1    connected  -        T1               T2         "
	    "-2512 ms      -\n"
	    "worst clock offset: -2512 ms (node n1)\n");
}

static void
test_window_line(void **state)
{
	json_t	*w;
	char	 buf[128];

	(void)state;
	w = load("{\"id\": 3, \"start_step\": 160, \"stop_step\": 164,"
	    " \"ranks\": \"0-3,9\"}");
	ctl_format_window(buf, sizeof(buf), w);
	assert_string_equal(buf, "window 3: steps 160-164 on ranks 0-3,9");
	json_object_set_new(w, "ranks", json_string("7"));
	ctl_format_window(buf, sizeof(buf), w);
	assert_string_equal(buf, "window 3: steps 160-164 on rank 7");
	json_object_del(w, "ranks");
	ctl_format_window(buf, sizeof(buf), w);
	assert_string_equal(buf, "window 3: steps 160-164 on all ranks");
	json_decref(w);
}

static void
test_progress(void **state)
{
	struct ctl_progress	 p;
	json_t			*doc;
	char			 line[256];

	(void)state;
	doc = load(summary_doc);
	assert_int_equal(ctl_progress_count(doc, 3, &p), 1);
	assert_int_equal(p.targeted, 5);
	assert_int_equal(p.started, 2);
	assert_int_equal(p.stopped, 1);
	assert_int_equal(p.skipped, 1);
	assert_int_equal(p.failed, 1);
	assert_int_equal(p.gone, 1);
	assert_int_equal(p.finished, 4);
	assert_int_equal(p.max_step, 141);
	assert_false(p.window_done);
	ctl_progress_format(&p, 3, line, sizeof(line));
	assert_int_equal(p.nodes_lost, 1);
	assert_string_equal(line, "window 3: 5 targeted, 2 started, 1 stopped, "
	    "1 skipped, 1 failed, 1 gone, 1 node lost (job at step 141)");
	assert_int_equal(ctl_progress_count(doc, 2, &p), 1);
	assert_true(p.window_done);
	assert_int_equal(p.finished, 6);

	/* A window the document does not have, or without counts. */
	assert_int_equal(ctl_progress_count(doc, 99, &p), 0);
	assert_int_equal(ctl_progress_count(doc, 4, &p), 1);
	assert_int_equal(p.targeted, 0);
	json_decref(doc);

	/* Cancelled, with ranks that never acted on it. */
	doc = load("{\"windows\": [{\"id\": 5, \"state\": \"cancelled\","
	    " \"rank_counts\": {\"targeted\": 2, \"started\": 1, \"missed\": 1,"
	    " \"finished\": 1}}]}");
	assert_int_equal(ctl_progress_count(doc, 5, &p), 1);
	assert_true(p.window_cancelled);
	ctl_progress_format(&p, 5, line, sizeof(line));
	assert_string_equal(line, "window 5: 2 targeted, 1 started, 0 stopped, "
	    "0 skipped, 0 failed, 1 missed, window cancelled");
	json_decref(doc);

	/* Nobody yet. */
	doc = load("{\"windows\": []}");
	assert_int_equal(ctl_progress_count(doc, 1, &p), 0);
	assert_int_equal(p.targeted, 0);
	ctl_progress_format(&p, 1, line, sizeof(line));
	assert_string_equal(line, "window 1: waiting for targeted ranks to "
	    "report");
	json_decref(doc);
}

/* Keeps the types of the lines it is given; stops at "stop". */
static int
follow_seen(void *arg, json_t *j)
{
	json_t	*seen = arg;

	json_array_append_new(seen, json_string(ctl_json_str(j, "type", "?")));
	return (strcmp(ctl_json_str(j, "type", ""), "stop") == 0);
}

/* Hands text to the event stream's sink. */
static int
feed(struct ctl_follow *f, const char *text)
{
	return (ctl_follow_sink(f, text, strlen(text)));
}

/*
 * status --follow's lines for a person: a rank's start says its step, the
 * collection of its trace (after the window) none.
 */
static void
test_follow_print(void **state)
{
	static const char *const ev[][2] = {
		{ "{\"type\":\"rank\",\"time\":\"T\",\"rank\":1,\"node\":"
		  "\"n1\",\"kind\":\"started\",\"window\":2,\"step\":82,"
		  "\"output_dir\":\"/o/r1\"}",
		  "T rank 1 on n1: started window 2 at step 82: /o/r1\n" },
		{ "{\"type\":\"rank\",\"time\":\"T\",\"rank\":1,\"node\":"
		  "\"n1\",\"kind\":\"collected\",\"window\":2,\"step\":0,"
		  "\"output_dir\":\"/s/rank-1.tar.zst\"}",
		  "T rank 1 on n1: collected window 2: /s/rank-1.tar.zst\n" },
		{ "{\"type\":\"rank\",\"time\":\"T\",\"rank\":0,\"node\":"
		  "\"n1\",\"kind\":\"collect_failed\",\"window\":2,"
		  "\"step\":0,\"error\":\"disk full\"}",
		  "T rank 0 on n1: collect_failed window 2: error: disk full\n" },
	};
	struct ctl	 ctl;
	json_t		*j;
	char		*buf = NULL;
	size_t		 len = 0, i;

	(void)state;
	for (i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		memset(&ctl, 0, sizeof(ctl));
		ctl.out = open_memstream(&buf, &len);
		assert_non_null(ctl.out);
		j = load(ev[i][0]);
		assert_int_equal(ctl_follow_print(&ctl, j), 0);
		json_decref(j);
		fclose(ctl.out);
		assert_string_equal(buf, ev[i][1]);
		free(buf);
		buf = NULL;
	}
}

static void
test_follow_lines(void **state)
{
	static const char	 text[] =
	    "{\"type\":\"heartbeat\",\"revision\":5}\n"
	    "{\"rev\":6,\"type\":\"rank\",\"rank\":1}\n"
	    "not json\n"
	    "{\"rev\":7,\"type\":\"window\"}\n";
	struct ctl_follow	*f;
	json_t			*seen;
	char			*big;
	size_t			 i;

	(void)state;
	f = calloc(1, sizeof(*f));
	seen = json_array();
	f->fn = follow_seen;
	f->arg = seen;
	/* Byte by byte: lines are whole whatever the pieces. */
	for (i = 0; i < sizeof(text) - 1; i++)
		assert_int_equal(ctl_follow_sink(f, text + i, 1), 0);
	assert_int_equal(json_array_size(seen), 3);
	assert_string_equal(json_string_value(json_array_get(seen, 1)),
	    "rank");
	assert_int_equal(f->since, 7);
	assert_false(f->gone);
	/* A line longer than the buffer is skipped, the next one read. */
	big = malloc(sizeof(f->line) + 100);
	memset(big, 'x', sizeof(f->line) + 99);
	big[sizeof(f->line) + 99] = '\n';
	assert_int_equal(ctl_follow_sink(f, big, sizeof(f->line) + 100), 0);
	free(big);
	assert_int_equal(feed(f, "{\"type\":\"dropped\",\"revision\":9}\n"),
	    0);
	assert_int_equal(json_array_size(seen), 4);
	assert_true(f->gone);
	assert_int_equal(f->since, 9);
	/* The function says enough: the transfer stops there. */
	assert_int_equal(feed(f, "{\"type\":\"stop\"}\n{\"rev\":10}\n"), -1);
	assert_true(f->stopped);
	assert_int_equal(json_array_size(seen), 5);
	json_decref(seen);
	free(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_option_typing),
		cmocka_unit_test(test_trace_args),
		cmocka_unit_test(test_when),
		cmocka_unit_test(test_status_table),
		cmocka_unit_test(test_jobs_nodes_tables),
		cmocka_unit_test(test_window_line),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_follow_lines),
		cmocka_unit_test(test_follow_print),
	};

	return (cmocka_run_group_tests_name("ctl", tests, NULL, NULL));
}
