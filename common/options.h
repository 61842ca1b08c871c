/*
 * The profiler options: one table, a row per typed option, that every
 * component reads instead of spelling the options out.  A row gives the
 * option's name, its type, range, default, the names of its values, and its
 * key in each configuration dialect; its field has the same name in every
 * structure that carries it (a layer), so a layer's offsets come from the
 * same rows.  Any other key of a window's options is a framework option,
 * passed through as JSON.
 */

#ifndef DYNPROF_OPTIONS_H
#define DYNPROF_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

enum options_type {
	OPTIONS_BOOL,			/* false or true, 0 or 1 */
	OPTIONS_INT,			/* min..max, -1 (unset) included */
};

/*
 * The configuration formats an option is named in: a column each.  The
 * MindSpore and torch_npu ones are the profiler_config.json files those
 * frameworks poll (docs/legacy.md).
 */
enum options_dialect {
	OPTIONS_DYNPROF,		/* the admin API, dynprofctl, the store */
	OPTIONS_MS24,			/* MindSpore 2.4's profiler_config.json */
	OPTIONS_MS25,			/* MindSpore 2.5's */
	OPTIONS_MS26,			/* MindSpore 2.6's */
	OPTIONS_MS27,			/* MindSpore 2.7's */
	OPTIONS_TORCH_NPU,		/* torch_npu's dynamic_profile */
	OPTIONS_NDIALECTS
};

/*
 * The rows, in the order of MindSpore 2.4's profiler_config.json (after
 * start_step and stop_step).  Columns: the field (and dynprof's name), type,
 * min, max, default, the names of the values 0.. (comma separated, NULL: plain
 * numbers), then one column per dialect after OPTIONS_DYNPROF, a pair
 * (key, form): the key (NULL: the dialect has no such key; "a.b": key b of
 * the object at key a) and how the values 0.. are written there: NULL as they
 * are (a JSON number or boolean), else one element per value, comma
 * separated, a number written as a JSON number (the dialect numbers them
 * otherwise) or a name written as a string.  A value with a form but no
 * element (unset, -1) is left out: the framework's own then.  A new dialect is
 * a new column here (and a descriptor in agent/legacy_dialect.c).
 */
#define OPTIONS_AIC_NAMES						\
	"ArithmeticUtilization,PipeUtilization,Memory,MemoryL0,"	\
	"ResourceConflictRatio,MemoryUB"
/* MindSpore 2.5-2.7's numbers of the same metrics (their _convert_aic_metrics). */
#define OPTIONS_AIC_MS25	"1,0,2,3,5,4"
#define OPTIONS_LEVEL_NAMES	"Level0,Level1,Level2"
#define OPTIONS_ROWS(X, a)						\
	X(a, aicore_metrics, OPTIONS_INT, -1, 5, -1, NULL,		\
	    ("aicore_metrics", NULL),					\
	    ("aicore_metrics", OPTIONS_AIC_MS25),			\
	    ("aic_metrics", OPTIONS_AIC_MS25),				\
	    ("aic_metrics", OPTIONS_AIC_NAMES),				\
	    ("experimental_config.aic_metrics", OPTIONS_AIC_NAMES))	\
	X(a, profiler_level, OPTIONS_INT, -1, 2, -1, OPTIONS_LEVEL_NAMES,\
	    ("profiler_level", NULL), ("profiler_level", NULL),		\
	    ("profiler_level", NULL),					\
	    ("profiler_level", OPTIONS_LEVEL_NAMES),			\
	    ("experimental_config.profiler_level", OPTIONS_LEVEL_NAMES))\
	X(a, profile_framework, OPTIONS_INT, -1, 1, -1, "time,all",	\
	    ("profile_framework", NULL), (NULL, NULL), (NULL, NULL),	\
	    (NULL, NULL), (NULL, NULL))					\
	X(a, analyse_mode, OPTIONS_INT, -1, 1, -1, "sync,async",	\
	    ("analyse_mode", NULL), ("analyse_mode", NULL),		\
	    ("analyse_mode", NULL), ("analyse_mode", NULL), (NULL, NULL))\
	X(a, profile_communication, OPTIONS_BOOL, 0, 1, 0, NULL,	\
	    ("profile_communication", NULL), (NULL, NULL), (NULL, NULL),\
	    (NULL, NULL), (NULL, NULL))					\
	X(a, parallel_strategy, OPTIONS_BOOL, 0, 1, 0, NULL,		\
	    ("parallel_strategy", NULL), ("parallel_strategy", NULL),	\
	    ("parallel_strategy", NULL), ("parallel_strategy", NULL),	\
	    (NULL, NULL))						\
	X(a, with_stack, OPTIONS_BOOL, 0, 1, 0, NULL,			\
	    ("with_stack", NULL), ("with_stack", NULL),			\
	    ("with_stack", NULL), ("with_stack", NULL),			\
	    ("with_stack", NULL))					\
	X(a, data_simplification, OPTIONS_BOOL, 0, 1, 1, NULL,		\
	    ("data_simplification", NULL),				\
	    ("data_simplification", NULL),				\
	    ("data_simplification", NULL),				\
	    ("data_simplification", NULL),				\
	    ("experimental_config.data_simplification", NULL))

#define OPTIONS_COUNT_ROW(a, ...)	+1
#define OPTIONS_N	(0 OPTIONS_ROWS(OPTIONS_COUNT_ROW, _))

#define OPTIONS_UNSET	-1		/* an OPTIONS_INT row not set */

/* options_value_form(): how a value is written in a dialect. */
#define OPTIONS_FORM_NONE	-1	/* left out: no element for it */
#define OPTIONS_FORM_PLAIN	0	/* as it is: a number or boolean */
#define OPTIONS_FORM_NAME	1	/* as a string, its name */
#define OPTIONS_FORM_NUMBER	2	/* as the dialect's own number */

struct options_row {
	const char		*name;		/* dynprof's, and the field's */
	enum options_type	 type;
	int64_t			 min, max;
	int64_t			 def;
	const char		*values;	/* "time,all", or NULL */
	const char		*keys[OPTIONS_NDIALECTS];
	const char		*forms[OPTIONS_NDIALECTS];	/* value forms, or NULL */
};

/*
 * Where a layer keeps each row: offset and size of the field (1: unsigned, 4:
 * int32_t or int, 8: int64_t).  Define one with
 *	const struct options_layer x = OPTIONS_LAYER("name", struct type);
 * where the type has a field named after every row.
 */
struct options_field {
	uint16_t		 off;
	uint8_t			 size;
};
struct options_layer {
	const char		*name;
	struct options_field	 fields[OPTIONS_N];
};
#define OPTIONS_FIELD(T, field, ...)					\
	{ offsetof(T, field), sizeof(((T *)0)->field) },
#define OPTIONS_LAYER(name, T)	{ name, { OPTIONS_ROWS(OPTIONS_FIELD, T) } }

/* options.c */
extern const struct options_row		options_table[OPTIONS_N];
extern const struct options_layer	options_seg;	/* struct seg_options */
extern const struct options_layer	options_lib;	/* struct dynprof_options */

const struct options_row *options_find(enum options_dialect, const char *);
const char *options_dialect_name(enum options_dialect);
int	 options_dialect_find(const char *, enum options_dialect *);
int	 options_dialect_ranks(enum options_dialect);
int	 options_value_name(const struct options_row *, enum options_dialect,
	    int64_t, char *, size_t);
int	 options_value_form(const struct options_row *, enum options_dialect,
	    int64_t, char *, size_t, int64_t *);
size_t	 options_index(const struct options_row *);
int	 options_in_range(const struct options_row *, int64_t);
int	 options_bool_text(const char *, int *);
int64_t	 options_get(const struct options_layer *, size_t, const void *);
void	 options_set(const struct options_layer *, size_t, void *, int64_t);
void	 options_defaults(const struct options_layer *, void *);
const struct options_row *options_check(const struct options_layer *,
	    const void *);
void	 options_convert(const struct options_layer *, void *,
	    const struct options_layer *, const void *);

/* options_proto.c, in the daemons only */
extern const struct options_layer	options_proto;	/* ProfilerOptions */

#endif /* DYNPROF_OPTIONS_H */
