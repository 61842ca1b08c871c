/*
 * Token files (the admin token, the agent token): read the same way by the
 * coordinator, the agent and dynprofctl, so that they never disagree on what
 * a file says.
 */

#ifndef DYNPROF_TOKEN_H
#define DYNPROF_TOKEN_H

#include <stddef.h>

#define TOKEN_MAX	1023		/* bytes of a token */
#define TOKEN_FILE_MAX	4096		/* bytes of its file, whitespace too */

/* token.c */
int	 token_read(const char *, char *, size_t, const char **);
int	 token_equal(const char *, const char *);

#endif /* DYNPROF_TOKEN_H */
