/*
 * Rank labels and selectors (common/labels.c): the canonical form, every bound
 * refused with its reason, values looked up, and selectors matched against a
 * layout of labels.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "labels.h"

/* Asserts that text is taken, as want. */
static void
assert_canon(const char *text, const char *want)
{
	char		 out[LABELS_MAX];
	const char	*why = NULL;

	assert_int_equal(labels_canon(text, out, sizeof(out), &why), 0);
	assert_null(why);
	assert_string_equal(out, want);
}

/* Asserts that text is refused with a reason that holds want. */
static void
assert_bad(const char *text, const char *want)
{
	char		 out[LABELS_MAX] = "x";
	const char	*why = NULL;

	assert_int_equal(labels_canon(text, out, sizeof(out), &why), -1);
	assert_non_null(why);
	if (strstr(why, want) == NULL)
		fail_msg("\"%s\": \"%s\" does not say \"%s\"", text, why, want);
	assert_string_equal(out, "");
}

static void
test_canon(void **state)
{
	(void)state;
	assert_canon(NULL, "");
	assert_canon("", "");
	assert_canon("  ", "");
	assert_canon("pp=3", "pp=3");
	assert_canon("tp=1,pp=3,dp=12", "dp=12,pp=3,tp=1");
	assert_canon(" pp = 3 , tp=1 ", "pp=3,tp=1");
	assert_canon("node=n-117.cluster:0,local_rank=7",
	    "local_rank=7,node=n-117.cluster:0");
	assert_canon("pp=3,", "pp=3");
}

static void
test_refused(void **state)
{
	char	 big[400];
	int	 i, off = 0;

	(void)state;
	assert_bad("pp", "not key=value");
	assert_bad("pp=", "value is empty");
	assert_bad("=3", "key is empty");
	assert_bad("PP=3", "key is empty");
	assert_bad("3p=3", "key is empty");
	assert_bad("pp=3;tp=1", "separated by commas");
	assert_bad("pp=a b", "separated by commas");
	assert_bad("pp=3,pp=4", "given twice");
	assert_bad("pp=\xc3\xa9", "value is empty");
	assert_bad("abcdefghijabcdefghijabcdefghijabc=1", "longer than 32");
	assert_bad("k=abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij"
	    "abcdefghijabcde", "longer than 64");
	for (i = 0; i < 17; i++)
		off += snprintf(big + off, sizeof(big) - (size_t)off,
		    "%sk%02d=1", i ? "," : "", i);
	assert_bad(big, "more than 16");
	off = 0;
	for (i = 0; i < 5; i++)
		off += snprintf(big + off, sizeof(big) - (size_t)off,
		    "%sk%d=%060d", i ? "," : "", i, i);
	assert_bad(big, "longer than 255");
}

static void
test_value(void **state)
{
	char	 v[LABELS_VALUE_MAX + 1];

	(void)state;
	assert_int_equal(labels_value("dp=12,pp=3,tp=1", "pp", v, sizeof(v)),
	    0);
	assert_string_equal(v, "3");
	assert_int_equal(labels_value("dp=12,pp=3,tp=1", "tp", v, sizeof(v)),
	    0);
	assert_string_equal(v, "1");
	assert_int_equal(labels_value("dp=12,pp=3,tp=1", "p", v, sizeof(v)),
	    -1);
	assert_int_equal(labels_value("dp=12,pp=3", "pp=3", v, sizeof(v)), -1);
	assert_int_equal(labels_value("", "pp", v, sizeof(v)), -1);
	assert_int_equal(labels_value("dp=12", "dp", v, 2), -1);
}

static void
test_key_valid(void **state)
{
	(void)state;
	assert_int_equal(labels_key_valid("pp"), 1);
	assert_int_equal(labels_key_valid("local_rank"), 1);
	assert_int_equal(labels_key_valid("abcdefghijabcdefghijabcdefghijab"), 1);
	assert_int_equal(labels_key_valid("abcdefghijabcdefghijabcdefghijabc"),
	    0);
	assert_int_equal(labels_key_valid(""), 0);
	assert_int_equal(labels_key_valid("3p"), 0);
	assert_int_equal(labels_key_valid("pp=1"), 0);
	assert_int_equal(labels_key_valid("pp in"), 0);
	assert_int_equal(labels_key_valid("Pp"), 0);
}

/* Whether canonical labels canon match selector sel: 1 or 0, -1 for a bad
 * selector (its reason in *why if why is not NULL). */
static int
match_why(const char *canon, const char *sel, const char **why)
{
	static struct labels_selector	 s;
	const char			*w;

	if (labels_selector_parse(sel, &s, &w) == -1) {
		if (why != NULL)
			*why = w;
		return (-1);
	}
	return (labels_selector_match(&s, canon));
}

static int
labels_match(const char *canon, const char *sel)
{
	return (match_why(canon, sel, NULL));
}

/* 0 for a good selector, -1 with *why for a bad one. */
static int
labels_selector_check(const char *sel, const char **why)
{
	return (match_why(NULL, sel, why) == -1 ? -1 : 0);
}

static void
test_match(void **state)
{
	const char	*r = "dp=12,pp=3,tp=1";

	(void)state;
	assert_int_equal(labels_match(r, "pp=3"), 1);
	assert_int_equal(labels_match(r, "pp==3"), 1);
	assert_int_equal(labels_match(r, "pp=4"), 0);
	assert_int_equal(labels_match(r, "pp=3,tp=1"), 1);
	assert_int_equal(labels_match(r, "pp=3,tp=2"), 0);
	assert_int_equal(labels_match(r, "pp=3, tp in (0,1)"), 1);
	assert_int_equal(labels_match(r, "tp in (0, 2)"), 0);
	assert_int_equal(labels_match(r, "tp notin (0,2)"), 1);
	assert_int_equal(labels_match(r, "tp notin (1)"), 0);
	assert_int_equal(labels_match(r, "pp!=4"), 1);
	assert_int_equal(labels_match(r, "pp!=3"), 0);
	assert_int_equal(labels_match(r, "ep!=3"), 1);
	assert_int_equal(labels_match(r, "dp"), 1);
	assert_int_equal(labels_match(r, "ep"), 0);
	assert_int_equal(labels_match(r, "ep=0"), 0);
	assert_int_equal(labels_match(NULL, "pp=3"), 0);
	assert_int_equal(labels_match(NULL, "pp!=3"), 1);
}

static void
test_selector_refused(void **state)
{
	const char	*why = NULL;

	(void)state;
	assert_int_equal(labels_selector_check("", &why), -1);
	assert_non_null(strstr(why, "empty"));
	assert_int_equal(labels_selector_check("pp>3", &why), -1);
	assert_non_null(strstr(why, "a term is"));
	assert_int_equal(labels_selector_check("pp in 3", &why), -1);
	assert_non_null(strstr(why, "takes a list"));
	assert_int_equal(labels_selector_check("pp in (3", &why), -1);
	assert_non_null(strstr(why, "a list is"));
	assert_int_equal(labels_selector_check("pp=3 tp=1", &why), -1);
	assert_non_null(strstr(why, "separated by commas"));
	assert_int_equal(labels_match("pp=3", "pp=("), -1);
	assert_int_equal(labels_selector_check("pp=3,tp in (0,1)", &why), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canon),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_value),
		cmocka_unit_test(test_key_valid),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_selector_refused),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
