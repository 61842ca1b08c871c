/*
 * The profiler options' table (common/options.c) and the coordinator's
 * options (server/options.c): every type parsed, range edges, defaults,
 * MindSpore 2.4's keys, the layers' fields, and round trips through JSON and
 * the store's text.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "coord.h"
#include "dynprof.h"
#include "options.h"

/* Every layer that carries the options, with a structure of it. */
static const struct options_layer *const layers[] = {
	&options_coord, &options_seg, &options_proto, &options_lib,
};
#define NLAYERS	(sizeof(layers) / sizeof(layers[0]))

/* Parses text as JSON into o; returns options_parse()'s result. */
static int
parse(const char *text, struct options *o, const char **field,
    const char **why)
{
	static char	 key[128];
	json_t		*j;
	int		 rc;

	j = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(j);
	*field = *why = NULL;
	rc = options_parse(j, o, field, why);
	/* *field is a key of j: keep a copy past j. */
	if (*field != NULL) {
		snprintf(key, sizeof(key), "%s", *field);
		*field = key;
	}
	json_decref(j);
	return (rc);
}

/* Checks every row of base, of layer l, against want, in the table's order. */
static void
assert_rows(const struct options_layer *l, const void *base,
    const int64_t *want)
{
	size_t	 i;

	for (i = 0; i < OPTIONS_N; i++)
		assert_int_equal(options_get(l, i, base), want[i]);
}

/* Rows: names unique, defaults in range, both dialects' keys found. */
static void
test_table(void **state)
{
	const struct options_row	*r;
	size_t				 i, j;

	(void)state;
	assert_int_equal(OPTIONS_N, 8);
	for (i = 0; i < OPTIONS_N; i++) {
		r = &options_table[i];
		assert_true(options_in_range(r, r->def));
		assert_int_equal(options_index(r), i);
		assert_ptr_equal(options_find(OPTIONS_DYNPROF, r->name), r);
		assert_string_equal(r->keys[OPTIONS_DYNPROF], r->name);
		assert_non_null(r->keys[OPTIONS_MS24]);
		assert_ptr_equal(options_find(OPTIONS_MS24,
		    r->keys[OPTIONS_MS24]), r);
		if (r->type == OPTIONS_BOOL) {
			assert_int_equal(r->min, 0);
			assert_int_equal(r->max, 1);
			assert_null(r->values);
		} else
			assert_int_equal(r->min, OPTIONS_UNSET);
		for (j = 0; j < i; j++)
			assert_string_not_equal(options_table[j].name, r->name);
	}
	/* MindSpore 2.4's keys are dynprof's, in its file's order. */
	r = options_find(OPTIONS_MS24, "profile_framework");
	assert_non_null(r);
	assert_int_equal(r->type, OPTIONS_INT);
	assert_string_equal(r->values, "time,all");
	assert_string_equal(options_table[0].keys[OPTIONS_MS24],
	    "aicore_metrics");
	assert_string_equal(options_table[OPTIONS_N - 1].keys[OPTIONS_MS24],
	    "data_simplification");
	assert_null(options_find(OPTIONS_MS24, "start_step"));
	assert_null(options_find(OPTIONS_DYNPROF, "output_subdir"));
	assert_null(options_find(OPTIONS_DYNPROF, "Profile_Framework"));
	assert_null(options_find(OPTIONS_DYNPROF, ""));
}

/*
 * The dialects of the frameworks' own files (docs/legacy.md): names round
 * trip, every key found back, value names only where a dialect writes names.
 */
static void
test_dialects(void **state)
{
	static const char *const names[] = { "dynprof", "mindspore-2.4",
	    "mindspore-2.5", "mindspore-2.6", "mindspore-2.7", "torch_npu" };
	/* Value v of the row at torch_npu's key, named in dialect d (NULL: no
	 * name: out of range, unset, or a dialect of numbers). */
	static const struct {
		const char		*key;
		enum options_dialect	 d;
		int64_t			 v;
		const char		*name;
	} names_of[] = {
		{ "experimental_config.profiler_level", OPTIONS_TORCH_NPU, 0,
		    "Level0" },
		{ "experimental_config.profiler_level", OPTIONS_TORCH_NPU, 2,
		    "Level2" },
		{ "experimental_config.profiler_level", OPTIONS_TORCH_NPU, 3,
		    NULL },
		{ "experimental_config.profiler_level", OPTIONS_TORCH_NPU, -1,
		    NULL },
		{ "experimental_config.profiler_level", OPTIONS_MS24, 1, NULL },
		{ "experimental_config.aic_metrics", OPTIONS_TORCH_NPU, 0,
		    "ArithmeticUtilization" },
		{ "experimental_config.aic_metrics", OPTIONS_TORCH_NPU, 5,
		    "MemoryUB" },
		{ "experimental_config.aic_metrics", OPTIONS_TORCH_NPU, 6, NULL },
		{ "with_stack", OPTIONS_TORCH_NPU, 1, NULL },
	};
	const struct options_row	*r;
	enum options_dialect		 d;
	char				 buf[64], tiny[4];
	size_t				 i, k;

	(void)state;
	assert_int_equal(OPTIONS_NDIALECTS, 6);
	for (k = 0; k < OPTIONS_NDIALECTS; k++) {
		assert_string_equal(options_dialect_name(k), names[k]);
		assert_int_equal(options_dialect_find(names[k], &d), 0);
		assert_int_equal(d, k);
		for (i = 0; i < OPTIONS_N; i++) {
			r = &options_table[i];
			if (r->keys[k] != NULL)
				assert_ptr_equal(options_find(k, r->keys[k]), r);
			if (r->keys[k] == NULL)
				assert_null(r->forms[k]);
		}
	}
	assert_string_equal(options_dialect_name(OPTIONS_NDIALECTS), "unknown");
	assert_int_equal(options_dialect_find("mindspore-2.8", &d), -1);
	assert_int_equal(options_dialect_find("", &d), -1);

	/* Renamed in 2.6, gone after 2.4, nested and named in torch_npu. */
	assert_non_null(options_find(OPTIONS_MS26, "aic_metrics"));
	assert_null(options_find(OPTIONS_MS26, "aicore_metrics"));
	assert_null(options_find(OPTIONS_MS25, "profile_framework"));
	assert_null(options_find(OPTIONS_MS25, "profile_communication"));
	for (i = 0; i < sizeof(names_of) / sizeof(names_of[0]); i++) {
		r = options_find(OPTIONS_TORCH_NPU, names_of[i].key);
		assert_non_null(r);
		assert_int_equal(options_value_name(r, names_of[i].d,
		    names_of[i].v, buf, sizeof(buf)), names_of[i].name != NULL ?
		    0 : -1);
		if (names_of[i].name != NULL)
			assert_string_equal(buf, names_of[i].name);
	}
	r = options_find(OPTIONS_TORCH_NPU, "experimental_config.profiler_level");
	assert_int_equal(options_value_name(r, OPTIONS_TORCH_NPU, 1, tiny,
	    sizeof(tiny)), -1);
}

/*
 * What each framework receives for each value: its own numbering or names,
 * as its code converts them (MindSpore 2.4's Profiler numbers the metrics as
 * dynprof does; 2.5-2.7's _convert_aic_metrics: 0 Pipe, 1 Arithmetic, 2
 * Memory, 3 MemoryL0, 4 MemoryUB, 5 ResourceConflictRatio; 2.7 and torch_npu
 * take the names), so that what was requested is what each profiles.
 */
static void
test_dialect_forms(void **state)
{
	static const char *const meant[] = { "ArithmeticUtilization",
	    "PipeUtilization", "Memory", "MemoryL0", "ResourceConflictRatio",
	    "MemoryUB" };
	static const char *const ms24[] = { "ArithmeticUtilization",
	    "PipeUtilization", "Memory", "MemoryL0", "ResourceConflictRatio",
	    "MemoryUB" };
	static const char *const ms25[] = { "PipeUtilization",
	    "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB",
	    "ResourceConflictRatio" };
	static const char *const levels[] = { "Level0", "Level1", "Level2" };
	const struct options_row	*aic, *lvl;
	enum options_dialect		 d;
	const char			*got;
	char				 buf[64];
	int64_t				 v, num;
	int				 form;

	(void)state;
	aic = &options_table[0];
	lvl = &options_table[1];
	assert_string_equal(aic->name, "aicore_metrics");
	assert_string_equal(lvl->name, "profiler_level");
	for (d = OPTIONS_MS24; d < OPTIONS_NDIALECTS; d++) {
		for (v = 0; v < 6; v++) {
			form = options_value_form(aic, d, v, buf, sizeof(buf),
			    &num);
			if (d == OPTIONS_MS24) {
				assert_int_equal(form, OPTIONS_FORM_PLAIN);
				got = ms24[v];
			} else if (d == OPTIONS_MS25 || d == OPTIONS_MS26) {
				assert_int_equal(form, OPTIONS_FORM_NUMBER);
				assert_true(num >= 0 && num < 6);
				got = ms25[num];
			} else {
				assert_int_equal(form, OPTIONS_FORM_NAME);
				got = buf;
			}
			assert_string_equal(got, meant[v]);
		}
		/* Unset: the framework's own (left out where it has a form). */
		assert_int_equal(options_value_form(aic, d, -1, buf,
		    sizeof(buf), &num), d == OPTIONS_MS24 ? OPTIONS_FORM_PLAIN :
		    OPTIONS_FORM_NONE);
		for (v = 0; v < 3; v++) {
			form = options_value_form(lvl, d, v, buf, sizeof(buf),
			    &num);
			if (d == OPTIONS_MS27 || d == OPTIONS_TORCH_NPU) {
				/* 2.7 warns that integers will go. */
				assert_int_equal(form, OPTIONS_FORM_NAME);
				assert_string_equal(buf, levels[v]);
			} else
				assert_int_equal(form, OPTIONS_FORM_PLAIN);
		}
	}
	assert_false(options_dialect_ranks(OPTIONS_MS24));
	assert_false(options_dialect_ranks(OPTIONS_MS27));
	assert_true(options_dialect_ranks(OPTIONS_TORCH_NPU));
	assert_false(options_dialect_ranks(OPTIONS_NDIALECTS));
}

/* Each row's range: min and max in, one past either out. */
static void
test_ranges(void **state)
{
	static const struct {
		const char	*name;
		int64_t		 min, max;
	} want[] = {
		{ "aicore_metrics", -1, 5 },
		{ "profiler_level", -1, 2 },
		{ "profile_framework", -1, 1 },
		{ "analyse_mode", -1, 1 },
		{ "profile_communication", 0, 1 },
		{ "parallel_strategy", 0, 1 },
		{ "with_stack", 0, 1 },
		{ "data_simplification", 0, 1 },
	};
	const struct options_row	*r;
	size_t				 i;

	(void)state;
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		r = options_find(OPTIONS_DYNPROF, want[i].name);
		assert_non_null(r);
		assert_true(options_in_range(r, want[i].min));
		assert_true(options_in_range(r, want[i].max));
		assert_false(options_in_range(r, want[i].min - 1));
		assert_false(options_in_range(r, want[i].max + 1));
		assert_false(options_in_range(r, INT64_MIN));
		assert_false(options_in_range(r, INT64_MAX));
	}
}

/* Booleans as people write them. */
static void
test_bool_text(void **state)
{
	static const char *const yes[] = { "true", "TRUE", "1", "yes", "Yes",
	    "on", "ON" };
	static const char *const no[] = { "false", "False", "0", "no", "NO",
	    "off", "Off" };
	static const char *const bad[] = { "", "2", "-1", "tru", "y", "n",
	    "true ", " 1", "01" };
	size_t	 i;
	int	 v;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		v = -1;
		assert_int_equal(options_bool_text(yes[i], &v), 0);
		assert_int_equal(v, 1);
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		v = -1;
		assert_int_equal(options_bool_text(no[i], &v), 0);
		assert_int_equal(v, 0);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(options_bool_text(bad[i], &v), -1);
}

/* Fields: the sizes each layer keeps, get and set, defaults, conversions. */
static void
test_layers(void **state)
{
	struct options			 co, co2;
	struct seg_options		 so;
	Dynprof__V1__ProfilerOptions	 po;
	struct dynprof_options		 lo;
	void				*bases[NLAYERS];
	const struct options_row	*r;
	size_t				 i, l;

	(void)state;
	bases[0] = &co;
	bases[1] = &so;
	bases[2] = &po;
	bases[3] = &lo;
	for (i = 0; i < OPTIONS_N; i++) {
		assert_int_equal(options_coord.fields[i].size, 4);
		assert_int_equal(options_seg.fields[i].size,
		    options_table[i].type == OPTIONS_BOOL ? 1 : 4);
		assert_int_equal(options_proto.fields[i].size, 4);
		assert_int_equal(options_lib.fields[i].size, sizeof(int));
	}
	assert_int_equal(options_lib.fields[0].off,
	    offsetof(struct dynprof_options, aicore_metrics));
	assert_int_equal(options_seg.fields[OPTIONS_N - 1].off,
	    offsetof(struct seg_options, data_simplification));

	/* Defaults, then each row's extremes, in every layer. */
	for (l = 0; l < NLAYERS; l++) {
		memset(bases[l], 0x55, l == 0 ? sizeof(co) : l == 1 ?
		    sizeof(so) : l == 2 ? sizeof(po) : sizeof(lo));
		options_defaults(layers[l], bases[l]);
		for (i = 0; i < OPTIONS_N; i++) {
			assert_int_equal(options_get(layers[l], i, bases[l]),
			    options_table[i].def);
			options_set(layers[l], i, bases[l],
			    options_table[i].min);
			assert_int_equal(options_get(layers[l], i, bases[l]),
			    options_table[i].min);
			options_set(layers[l], i, bases[l],
			    options_table[i].max);
			assert_int_equal(options_get(layers[l], i, bases[l]),
			    options_table[i].max);
		}
		assert_null(options_check(layers[l], bases[l]));
	}
	assert_int_equal(so.aicore_metrics, 5);
	assert_int_equal(so.with_stack, 1);
	assert_int_equal(lo.data_simplification, 1);

	/* A boolean is 0 or 1 whatever it is given. */
	r = options_find(OPTIONS_DYNPROF, "with_stack");
	options_set(&options_seg, options_index(r), &so, 256);
	assert_int_equal(so.with_stack, 1);
	po.with_stack = 7;
	options_convert(&options_seg, &so, &options_proto, &po);
	assert_int_equal(so.with_stack, 1);

	/* The first integer out of range is found; booleans never are. */
	dynprof__v1__profiler_options__init(&po);
	options_defaults(&options_proto, &po);
	po.parallel_strategy = 3;
	assert_null(options_check(&options_proto, &po));
	po.profiler_level = 3;
	po.analyse_mode = -2;
	r = options_check(&options_proto, &po);
	assert_non_null(r);
	assert_string_equal(r->name, "profiler_level");
	po.profiler_level = -1;
	assert_string_equal(options_check(&options_proto, &po)->name,
	    "analyse_mode");

	/* The coordinator's, through protobuf and the segment to the library,
	 * and back. */
	options_init(&co);
	co.aicore_metrics = 3;
	co.profiler_level = 2;
	co.profile_framework = 0;
	co.profile_communication = 1;
	co.data_simplification = 0;
	dynprof__v1__profiler_options__init(&po);
	memset(&so, 0, sizeof(so));
	options_convert(&options_proto, &po, &options_coord, &co);
	options_convert(&options_seg, &so, &options_proto, &po);
	options_convert(&options_lib, &lo, &options_seg, &so);
	assert_rows(&options_lib, &lo, (const int64_t []){ 3, 2, 0, -1, 1, 0, 0,
	    0 });
	options_init(&co2);
	options_convert(&options_coord, &co2, &options_lib, &lo);
	assert_memory_equal(&co, &co2, sizeof(co));
}

/* Defaults: nothing set, data_simplification on, no framework options. */
static void
test_init(void **state)
{
	struct options	 o;
	char		*text;

	(void)state;
	options_init(&o);
	assert_int_equal(o.aicore_metrics, -1);
	assert_int_equal(o.profiler_level, -1);
	assert_int_equal(o.profile_framework, -1);
	assert_int_equal(o.analyse_mode, -1);
	assert_int_equal(o.profile_communication, 0);
	assert_int_equal(o.parallel_strategy, 0);
	assert_int_equal(o.with_stack, 0);
	assert_int_equal(o.data_simplification, 1);
	assert_null(o.fwopts);
	text = options_dump(&o);
	assert_string_equal(text, "{\"aicore_metrics\":-1,\"analyse_mode\":-1,"
	    "\"data_simplification\":true,\"parallel_strategy\":false,"
	    "\"profile_communication\":false,\"profile_framework\":-1,"
	    "\"profiler_level\":-1,\"with_stack\":false}");
	free(text);
}

/* Each type parsed, edges and refusals with the key and the reason. */
static void
test_parse(void **state)
{
	static const struct {
		const char	*json;
		const char	*field;
		const char	*why;
	} bad[] = {
		{ "[]", NULL, "options must be a JSON object" },
		{ "{\"aicore_metrics\":6}", "aicore_metrics", "out of range" },
		{ "{\"aicore_metrics\":-2}", "aicore_metrics", "out of range" },
		{ "{\"profiler_level\":3}", "profiler_level", "out of range" },
		{ "{\"profile_framework\":2}", "profile_framework",
		    "out of range" },
		{ "{\"analyse_mode\":-2}", "analyse_mode", "out of range" },
		{ "{\"analyse_mode\":1.0}", "analyse_mode",
		    "must be an integer" },
		{ "{\"profiler_level\":\"1\"}", "profiler_level",
		    "must be an integer" },
		{ "{\"profiler_level\":true}", "profiler_level",
		    "must be an integer" },
		{ "{\"with_stack\":1}", "with_stack", "must be true or false" },
		{ "{\"data_simplification\":null}", "data_simplification",
		    "must be true or false" },
		{ "{\"start_step\":1}", "start_step", "steps are not options" },
		{ "{\"stop_step\":1}", "stop_step", "steps are not options" },
	};
	struct options	 o;
	const char	*field, *why;
	char		 big[SEG_FWOPTS_MAX + 32];
	size_t		 i;

	(void)state;
	options_init(&o);
	assert_int_equal(parse("{\"aicore_metrics\":5,\"profiler_level\":0,"
	    "\"profile_framework\":1,\"analyse_mode\":-1,"
	    "\"profile_communication\":true,\"parallel_strategy\":true,"
	    "\"with_stack\":true,\"data_simplification\":false}", &o, &field,
	    &why), 0);
	assert_rows(&options_coord, &o, (const int64_t []){ 5, 0, 1, -1, 1, 1, 1,
	    0 });
	assert_null(o.fwopts);

	/* A refusal leaves the options as they were. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].json, &o, &field, &why), -1);
		if (bad[i].field == NULL)
			assert_null(field);
		else
			assert_string_equal(field, bad[i].field);
		assert_string_equal(why, bad[i].why);
		assert_int_equal(o.aicore_metrics, 5);
		assert_int_equal(o.with_stack, 1);
	}

	/* Other keys are framework options, merged and sorted. */
	assert_int_equal(parse("{\"record_shapes\":true,\"depth\":3}", &o,
	    &field, &why), 0);
	assert_string_equal(o.fwopts, "{\"depth\":3,\"record_shapes\":true}");
	assert_int_equal(parse("{\"depth\":4,\"with_stack\":false}", &o,
	    &field, &why), 0);
	assert_string_equal(o.fwopts, "{\"depth\":4,\"record_shapes\":true}");
	assert_int_equal(o.with_stack, 0);
	memset(big, 'x', sizeof(big));
	memcpy(big, "{\"k\":\"", 6);
	memcpy(big + sizeof(big) - 3, "\"}", 3);
	assert_int_equal(parse(big, &o, &field, &why), -1);
	assert_string_equal(field, "options");
	assert_string_equal(why, "framework options over 4095 bytes of JSON");
	assert_string_equal(o.fwopts, "{\"depth\":4,\"record_shapes\":true}");
	options_clear(&o);
	assert_null(o.fwopts);
}

/* To JSON and the store's text and back: the same options. */
static void
test_round_trip(void **state)
{
	struct options	 o, back, copy;
	const char	*field, *why;
	json_t		*j;
	char		*text, *again;
	size_t		 i;

	(void)state;
	options_init(&o);
	assert_int_equal(parse("{\"aicore_metrics\":0,\"profiler_level\":2,"
	    "\"analyse_mode\":1,\"parallel_strategy\":true,"
	    "\"activities\":[\"CPU\",\"NPU\"],\"export\":\"text\"}", &o,
	    &field, &why), 0);
	j = options_to_json(&o);
	assert_int_equal(json_object_size(j), OPTIONS_N + 2);
	for (i = 0; i < OPTIONS_N; i++)
		assert_non_null(json_object_get(j, options_table[i].name));
	assert_int_equal(json_integer_value(json_object_get(j,
	    "profiler_level")), 2);
	assert_true(json_is_true(json_object_get(j, "parallel_strategy")));
	assert_true(json_is_false(json_object_get(j, "with_stack")));
	assert_true(json_is_array(json_object_get(j, "activities")));
	json_decref(j);

	text = options_dump(&o);
	assert_non_null(text);
	options_init(&back);
	assert_int_equal(options_load(text, &back), 0);
	again = options_dump(&back);
	assert_string_equal(text, again);
	assert_string_equal(back.fwopts, o.fwopts);
	assert_int_equal(back.analyse_mode, 1);
	free(again);
	free(text);

	assert_int_equal(options_copy(&copy, &back), 0);
	assert_ptr_not_equal(copy.fwopts, back.fwopts);
	assert_string_equal(copy.fwopts, back.fwopts);
	assert_int_equal(copy.profiler_level, 2);
	options_clear(&copy);
	options_clear(&back);
	options_clear(&o);

	/* Text that is not options leaves the defaults. */
	assert_int_equal(options_load("{\"with_stack\":3}", &back), -1);
	assert_int_equal(options_load("not json", &back), -1);
	assert_int_equal(back.data_simplification, 1);
	options_clear(&back);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_dialects),
		cmocka_unit_test(test_dialect_forms),
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_bool_text),
		cmocka_unit_test(test_layers),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_round_trip),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
