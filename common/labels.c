/* Rank labels and the selectors that pick ranks by them (labels.h). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"

struct label {
	char	 key[LABELS_KEY_MAX + 1];
	char	 value[LABELS_VALUE_MAX + 1];
};

/* Whether c may stand in a key (first: as its first byte). */
static int
labels_key_char(char c, int first)
{
	if (c >= 'a' && c <= 'z')
		return (1);
	if (first)
		return (0);
	return ((c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-');
}

/* Whether c may stand in a value. */
static int
labels_value_char(char c)
{
	return ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' ||
	    c == '-');
}

/*
 * Whether key is a label's key: 1 to LABELS_KEY_MAX bytes of a-z 0-9 _ . -,
 * a letter first.
 */
int
labels_key_valid(const char *key)
{
	size_t	 n;

	for (n = 0; key[n] != '\0'; n++)
		if (n == LABELS_KEY_MAX || !labels_key_char(key[n], n == 0))
			return (0);
	return (n > 0);
}

/* Skips spaces at *pp. */
static void
labels_space(const char **pp)
{
	while (**pp == ' ' || **pp == '\t')
		(*pp)++;
}

/*
 * Reads a key (or, value set, a value) at *pp into out (max bytes at most),
 * advancing *pp.  Returns 0, or -1 with *why set.
 */
static int
labels_word(const char **pp, char *out, size_t max, int value,
    const char **why)
{
	const char	*p = *pp;
	size_t		 n = 0;

	labels_space(&p);
	while (*p != '\0' && (value ? labels_value_char(*p) :
	    labels_key_char(*p, n == 0))) {
		if (n == max) {
			*why = value ? "labels: a value longer than 64 bytes" :
			    "labels: a key longer than 32 bytes";
			return (-1);
		}
		out[n++] = *p++;
	}
	out[n] = '\0';
	if (n == 0) {
		*why = value ? "labels: a value is empty or has a character "
		    "other than A-Z a-z 0-9 _ . : -" : "labels: a key is empty, "
		    "does not start with a-z, or has a character other than "
		    "a-z 0-9 _ . -";
		return (-1);
	}
	labels_space(&p);
	*pp = p;
	return (0);
}

static int
labels_cmp(const void *a, const void *b)
{
	return (strcmp(((const struct label *)a)->key,
	    ((const struct label *)b)->key));
}

/*
 * Checks the labels in text ("" or NULL: none) and writes their canonical
 * form into out (len bytes).  Returns 0, or -1 with *why (if why is not NULL)
 * saying what is wrong; out is then "".
 */
int
labels_canon(const char *text, char *out, size_t len, const char **why)
{
	struct label	 l[LABELS_COUNT_MAX];
	const char	*p = text != NULL ? text : "", *w = NULL;
	size_t		 n = 0, i, off = 0, k;

	if (len > 0)
		out[0] = '\0';
	labels_space(&p);
	while (*p != '\0') {
		if (n == LABELS_COUNT_MAX) {
			w = "labels: more than 16";
			goto bad;
		}
		if (labels_word(&p, l[n].key, LABELS_KEY_MAX, 0, &w) == -1)
			goto bad;
		if (*p++ != '=') {
			w = "labels: a label is not key=value";
			goto bad;
		}
		if (labels_word(&p, l[n].value, LABELS_VALUE_MAX, 1, &w) == -1)
			goto bad;
		n++;
		if (*p == ',')
			p++;
		else if (*p != '\0') {
			w = "labels: labels are separated by commas";
			goto bad;
		}
	}
	qsort(l, n, sizeof(l[0]), labels_cmp);
	for (i = 0; i < n; i++) {
		if (i > 0 && strcmp(l[i].key, l[i - 1].key) == 0) {
			w = "labels: a key given twice";
			goto bad;
		}
		k = strlen(l[i].key) + 1 + strlen(l[i].value) + (i > 0);
		if (off + k + 1 > len || off + k + 1 > LABELS_MAX) {
			w = "labels: longer than 255 bytes in all";
			goto bad;
		}
		off += (size_t)snprintf(out + off, len - off, "%s%s=%s",
		    i > 0 ? "," : "", l[i].key, l[i].value);
	}
	return (0);
bad:
	if (len > 0)
		out[0] = '\0';
	if (why != NULL)
		*why = w;
	return (-1);
}

/*
 * Copies the value of key in canonical labels into out (len bytes).  Returns
 * 0, or -1 if the key is not there.
 */
int
labels_value(const char *canon, const char *key, char *out, size_t len)
{
	const char	*p = canon, *e, *v;
	size_t		 klen = strlen(key), vlen;

	while (p != NULL && *p != '\0') {
		e = strchr(p, ',');
		v = strchr(p, '=');
		if (v != NULL && (e == NULL || v < e) && (size_t)(v - p) == klen &&
		    strncmp(p, key, klen) == 0) {
			vlen = e != NULL ? (size_t)(e - v - 1) : strlen(v + 1);
			if (vlen >= len)
				return (-1);
			memcpy(out, v + 1, vlen);
			out[vlen] = '\0';
			return (0);
		}
		p = e != NULL ? e + 1 : NULL;
	}
	return (-1);
}

/* A selector's operators. */
enum labels_op { LABELS_HAS, LABELS_EQ, LABELS_NE, LABELS_IN, LABELS_NOTIN };

/*
 * Reads one term of a selector at *pp: its key, operator and values (into
 * vals, NUL-separated, *nvals of them).  Returns 0, or -1 with *why set.
 */
static int
labels_term(const char **pp, char *key, enum labels_op *op,
    char vals[LABELS_COUNT_MAX][LABELS_VALUE_MAX + 1], size_t *nvals,
    const char **why)
{
	const char	*p = *pp;
	int		 neg = 0;

	*nvals = 0;
	if (labels_word(&p, key, LABELS_KEY_MAX, 0, why) == -1)
		return (-1);
	if (*p == ',' || *p == '\0') {
		*op = LABELS_HAS;
		*pp = p;
		return (0);
	}
	if (p[0] == '!' && p[1] == '=') {
		*op = LABELS_NE;
		p += 2;
	} else if (p[0] == '=') {
		*op = LABELS_EQ;
		p += p[1] == '=' ? 2 : 1;
	} else if (strncmp(p, "in", 2) == 0 || (neg = strncmp(p, "notin",
	    5) == 0)) {
		*op = neg ? LABELS_NOTIN : LABELS_IN;
		p += neg ? 5 : 2;
		labels_space(&p);
		if (*p++ != '(') {
			*why = "selector: \"in\" takes a list: key in (a,b)";
			return (-1);
		}
		for (;;) {
			if (*nvals == LABELS_COUNT_MAX) {
				*why = "selector: more than 16 values in a list";
				return (-1);
			}
			if (labels_word(&p, vals[*nvals], LABELS_VALUE_MAX, 1,
			    why) == -1)
				return (-1);
			(*nvals)++;
			if (*p == ')')
				break;
			if (*p++ != ',') {
				*why = "selector: a list is (a,b,...)";
				return (-1);
			}
		}
		p++;
		labels_space(&p);
		*pp = p;
		return (0);
	} else {
		*why = "selector: a term is key, key=value, key!=value, "
		    "key in (a,b) or key notin (a,b)";
		return (-1);
	}
	if (labels_word(&p, vals[0], LABELS_VALUE_MAX, 1, why) == -1)
		return (-1);
	*nvals = 1;
	*pp = p;
	return (0);
}

/*
 * Parses selector sel into out.  Returns 0, or -1 with *why saying what is
 * wrong.
 */
int
labels_selector_parse(const char *sel, struct labels_selector *out,
    const char **why)
{
	const char	*p = sel != NULL ? sel : "";
	enum labels_op	 op;
	size_t		 nvals;

	out->nterms = 0;
	if (strlen(p) >= LABELS_SELECTOR_MAX) {
		*why = "selector: longer than 511 bytes";
		return (-1);
	}
	labels_space(&p);
	if (*p == '\0') {
		*why = "selector: empty";
		return (-1);
	}
	while (*p != '\0') {
		if (out->nterms == LABELS_COUNT_MAX) {
			*why = "selector: more than 16 terms";
			return (-1);
		}
		if (labels_term(&p, out->t[out->nterms].key, &op,
		    out->t[out->nterms].vals, &nvals, why) == -1)
			return (-1);
		out->t[out->nterms].op = op;
		out->t[out->nterms].nvals = (int)nvals;
		out->nterms++;
		if (*p == ',')
			p++;
		else if (*p != '\0') {
			*why = "selector: terms are separated by commas";
			return (-1);
		}
	}
	return (0);
}

/* Whether canonical labels canon (NULL: none) match s: 1 or 0. */
int
labels_selector_match(const struct labels_selector *s, const char *canon)
{
	const struct labels_term	*t;
	char				 have[LABELS_VALUE_MAX + 1];
	int				 i, k, found, in;

	for (i = 0; i < s->nterms; i++) {
		t = &s->t[i];
		found = canon != NULL && labels_value(canon, t->key, have,
		    sizeof(have)) == 0;
		for (in = 0, k = 0; found && !in && k < t->nvals; k++)
			in = strcmp(have, t->vals[k]) == 0;
		switch (t->op) {
		case LABELS_HAS:
			if (!found)
				return (0);
			break;
		case LABELS_EQ:
		case LABELS_IN:
			if (!in)
				return (0);
			break;
		default:			/* LABELS_NE, LABELS_NOTIN */
			if (in)
				return (0);
			break;
		}
	}
	return (1);
}
