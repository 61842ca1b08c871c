/*
 * Fuzz target: rank labels and selectors (common/labels.c), as a rank's
 * DYNPROF_LABELS (read by the library, the agent and the coordinator) and a
 * selector in an admin request or a window are.  The input is split at its
 * first newline: labels before, a selector after.  What labels_canon()
 * accepts must fit LABELS_MAX, hold only the characters a label may have,
 * parse again to itself, and give every key's value back; a buffer too short
 * is refused, never overrun.  What labels_selector_parse() accepts matches
 * (or not) every set of labels without reading past them.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_TEXT_MAX	2048

/* Checks canon, accepted by labels_canon(): the invariants above. */
static void
fuzz_labels_canon(const char *canon)
{
	char		 again[LABELS_MAX], key[LABELS_KEY_MAX + 2];
	char		 val[LABELS_VALUE_MAX + 1], small[16];
	const char	*p, *eq, *end;
	size_t		 n = strlen(canon), klen, vlen;

	if (n >= LABELS_MAX ||
	    strspn(canon, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789_.:-=,") != n)
		abort();
	if (labels_canon(canon, again, sizeof(again), NULL) != 0 ||
	    strcmp(canon, again) != 0)
		abort();
	/* Too short a buffer: refused, "" written, nothing past it. */
	memset(small, 'x', sizeof(small));
	if (labels_canon(canon, small, 8, NULL) == 0 ? n >= 8 :
	    small[0] != '\0' || small[8] != 'x')
		abort();
	for (p = canon; *p != '\0'; p = *end == ',' ? end + 1 : end) {
		end = p + strcspn(p, ",");
		if ((eq = memchr(p, '=', (size_t)(end - p))) == NULL)
			abort();
		klen = (size_t)(eq - p);
		vlen = (size_t)(end - eq - 1);
		if (klen == 0 || klen > LABELS_KEY_MAX || vlen == 0 ||
		    vlen > LABELS_VALUE_MAX)
			abort();
		memcpy(key, p, klen);
		key[klen] = '\0';
		if (!labels_key_valid(key) ||
		    labels_value(canon, key, val, sizeof(val)) != 0 ||
		    strlen(val) != vlen || memcmp(val, eq + 1, vlen) != 0)
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct labels_selector	*sel;
	char			 text[FUZZ_TEXT_MAX + 1], canon[LABELS_MAX];
	char			*nl, *selector = NULL;
	const char		*why = NULL;
	int			 ok, m;

	if (size > FUZZ_TEXT_MAX)
		return (0);
	memcpy(text, data, size);
	text[size] = '\0';
	if ((nl = strchr(text, '\n')) != NULL) {
		*nl = '\0';
		selector = nl + 1;
	}
	ok = labels_canon(text, canon, sizeof(canon), &why) == 0;
	if (ok)
		fuzz_labels_canon(canon);
	else if (why == NULL || canon[0] != '\0')
		abort();
	(void)labels_key_valid(text);
	if (selector == NULL)
		return (0);
	if ((sel = malloc(sizeof(*sel))) == NULL)
		return (0);
	why = NULL;
	if (labels_selector_parse(selector, sel, &why) == 0) {
		if (sel->nterms < 1 || sel->nterms > LABELS_COUNT_MAX)
			abort();
		m = labels_selector_match(sel, ok ? canon : NULL);
		if (m != 0 && m != 1)
			abort();
		(void)labels_selector_match(sel, NULL);
		(void)labels_selector_match(sel, "");
	} else if (why == NULL)
		abort();
	free(sel);
	return (0);
}
