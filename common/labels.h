/*
 * Rank labels: "pp=3,tp=1,dp=12", what a rank says it is in its job's
 * parallel layout (docs/labels.md).  Checked by the library at open, again by
 * the agent (the segment is the rank's to write) and by the coordinator (the
 * network's): at most LABELS_COUNT_MAX labels, a key of 1-32 bytes of
 * [a-z0-9_.-] starting with a letter, a value of 1-64 bytes of
 * [A-Za-z0-9_.:-], no key twice.  The canonical text has the labels sorted by
 * key, separated by commas, without spaces.
 *
 * A selector picks ranks by their labels: terms joined by commas, each
 * "key=value", "key!=value", "key in (v1,v2)", "key notin (v1,v2)" or a bare
 * "key" (the label is there); a rank matches when every term holds.
 */

#ifndef DYNPROF_LABELS_H
#define DYNPROF_LABELS_H

#include <stddef.h>

#define LABELS_MAX		256	/* the canonical text, NUL included */
#define LABELS_COUNT_MAX	16
#define LABELS_KEY_MAX		32
#define LABELS_VALUE_MAX	64
#define LABELS_SELECTOR_MAX	512	/* a selector's text, NUL included */

/* A selector parsed once, to match many ranks (labels_selector_parse()). */
struct labels_term {
	char	 key[LABELS_KEY_MAX + 1];
	int	 op;			/* enum labels_op, labels.c */
	int	 nvals;
	char	 vals[LABELS_COUNT_MAX][LABELS_VALUE_MAX + 1];
};
struct labels_selector {
	int			 nterms;
	struct labels_term	 t[LABELS_COUNT_MAX];
};

/* labels.c */
int	 labels_canon(const char *, char *, size_t, const char **);
int	 labels_value(const char *, const char *, char *, size_t);
int	 labels_selector_parse(const char *, struct labels_selector *,
	    const char **);
int	 labels_selector_match(const struct labels_selector *, const char *);
int	 labels_key_valid(const char *);

#endif /* DYNPROF_LABELS_H */
