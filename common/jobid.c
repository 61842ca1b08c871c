/* Checks of job ids and output subdirectories. */

#include <string.h>

#include "jobid.h"

_Static_assert(JOBID_MAX == 64, "jobid_valid() says the limit is 64");

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
