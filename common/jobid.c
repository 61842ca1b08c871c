/* Checks of job ids, rank lists and output subdirectories. */

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "jobid.h"

/*
 * Returns 1 if id is a valid job id: 1-64 characters of [A-Za-z0-9._-], not
 * starting with '.'.  Otherwise returns 0 and, if why is not NULL, the reason.
 */
int
jobid_valid(const char *id, const char **why)
{
	const char	*p;
	const char	*dummy;

	if (why == NULL)
		why = &dummy;
	if (id == NULL || *id == '\0') {
		*why = "job id is empty";
		return (0);
	}
	if (*id == '.') {
		*why = "job id starts with '.'";
		return (0);
	}
	for (p = id; *p != '\0'; p++) {
		if (p - id >= JOBID_MAX) {
			*why = "job id is longer than 64 characters";
			return (0);
		}
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		    *p == '-')
			continue;
		*why = "job id has a character outside [A-Za-z0-9._-]";
		return (0);
	}
	return (1);
}

/*
 * Returns 1 if s may name an output subdirectory: empty, or a relative path of
 * printable characters with no ".." component, shorter than 256 bytes.
 */
int
subdir_valid(const char *s, const char **why)
{
	const char	*p, *comp;
	const char	*dummy;
	size_t		 len;

	if (why == NULL)
		why = &dummy;
	if (s == NULL || *s == '\0')
		return (1);
	if (strlen(s) >= 256) {
		*why = "output subdirectory is 256 bytes or longer";
		return (0);
	}
	if (*s == '/') {
		*why = "output subdirectory is an absolute path";
		return (0);
	}
	for (p = s; *p != '\0'; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == '\\') {
			*why = "output subdirectory has a control character "
			    "or backslash";
			return (0);
		}
	}
	for (comp = s; *comp != '\0'; comp += len) {
		while (*comp == '/')
			comp++;
		len = strcspn(comp, "/");
		if (len == 2 && comp[0] == '.' && comp[1] == '.') {
			*why = "output subdirectory has a '..' component";
			return (0);
		}
	}
	return (1);
}

static int
ranks_number(const char **pp, int32_t *out)
{
	const char	*p = *pp;
	long		 v = 0;

	if (*p < '0' || *p > '9')
		return (-1);
	while (*p >= '0' && *p <= '9') {
		v = v * 10 + (*p - '0');
		if (v > INT32_MAX)
			return (-1);
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

	if (why == NULL)
		why = &dummy;
	memset(set, 0, sizeof(*set));
	if (s == NULL || *s == '\0' || strcmp(s, "all") == 0)
		return (0);
	for (;;) {
		while (*p == ' ')
			p++;
		if (ranks_number(&p, &r.lo) == -1) {
			*why = "ranks: expected a rank number";
			return (-1);
		}
		r.hi = r.lo;
		while (*p == ' ')
			p++;
		if (*p == '-') {
			p++;
			while (*p == ' ')
				p++;
			if (ranks_number(&p, &r.hi) == -1) {
				*why = "ranks: expected a rank number after '-'";
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
