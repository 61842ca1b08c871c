/*
 * The node name rule (proto/dynprof.proto, Hello.node): 1 to NODENAME_MAX
 * bytes of UTF-8, no byte at or below 0x20, no 0x7f, no '"' and no '\'.
 */

#include <string.h>

#include "nodename.h"
#include "utf8.h"

/* Returns 1 if name is a valid node name, else 0 with *why (if not NULL). */
int
nodename_valid(const char *name, const char **why)
{
	const char	*p, *reason = NULL;

	if (name == NULL || *name == '\0' || strlen(name) > NODENAME_MAX)
		reason = "node name empty or over 127 bytes";
	else {
		for (p = name; *p != '\0' && reason == NULL; p++)
			if ((unsigned char)*p <= 0x20 || *p == 0x7f ||
			    *p == '"' || *p == '\\')
				reason = "node name has a space, quote or "
				    "control character";
		if (reason == NULL && !utf8_valid(name, strlen(name)))
			reason = "node name is not valid UTF-8";
	}
	if (reason != NULL && why != NULL)
		*why = reason;
	return (reason == NULL);
}
