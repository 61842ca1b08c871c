/* Rank lists such as "0-7,16": parsed once, then asked whether they hold a rank. */

#include <stdint.h>
#include <string.h>

#include "ranklist.h"

/* What a rank number over INT32_MAX is told. */
#define RANKLIST_RANGE_WHY \
	"ranks: a rank number out of range (0 to 2147483647)"

/*
 * Reads a decimal rank number at *pp, advancing *pp.  Returns 0, -1 if there
 * is none, or -2 if it is over INT32_MAX.
 */
static int
ranklist_number(const char **pp, int32_t *out)
{
	const char	*p = *pp;
	long		 v = 0;

	if (*p < '0' || *p > '9')
		return (-1);
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p - '0');
		if (v > INT32_MAX)
			return (-2);
		p++;
	}
	*out = (int32_t)v;
	*pp = p;
	return (0);
}

/*
 * Parses a rank list: "" or "all" for every rank, else comma-separated ranks and
 * inclusive ranges, "0-7,16".  Returns 0, or -1 with the reason.
 */
int
ranks_parse(const char *s, struct rank_set *set, const char **why)
{
	const char	*p = s;
	const char	*dummy;
	struct rank_range r;
	int		 rc;

	if (why == NULL)
		why = &dummy;
	memset(set, 0, sizeof(*set));
	if (s == NULL || *s == '\0' || strcmp(s, "all") == 0)
		return (0);
	for (;;) {
		while (*p == ' ')
			p++;
		if ((rc = ranklist_number(&p, &r.lo)) != 0) {
			*why = rc == -2 ? RANKLIST_RANGE_WHY :
			    "ranks: expected a rank number";
			return (-1);
		}
		r.hi = r.lo;
		while (*p == ' ')
			p++;
		if (*p == '-') {
			p++;
			while (*p == ' ')
				p++;
			if ((rc = ranklist_number(&p, &r.hi)) != 0) {
				*why = rc == -2 ? RANKLIST_RANGE_WHY :
				    "ranks: expected a rank number after '-'";
				return (-1);
			}
			if (r.hi < r.lo) {
				*why = "ranks: range ends before it starts";
				return (-1);
			}
			while (*p == ' ')
				p++;
		}
		if (set->nranges == RANKS_MAX_RANGES) {
			*why = "ranks: more than 64 ranges";
			return (-1);
		}
		set->ranges[set->nranges++] = r;
		if (*p == '\0')
			return (0);
		if (*p != ',') {
			*why = "ranks: expected ',' or '-'";
			return (-1);
		}
		p++;
	}
}

/* Returns 1 if the set holds rank (an empty set holds every rank). */
int
ranks_contains(const struct rank_set *set, int32_t rank)
{
	int	 i;

	if (set->nranges == 0)
		return (1);
	for (i = 0; i < set->nranges; i++)
		if (rank >= set->ranges[i].lo && rank <= set->ranges[i].hi)
			return (1);
	return (0);
}
