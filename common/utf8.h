/*
 * UTF-8 checks for strings that end up in JSON: jansson refuses a string that
 * is not valid UTF-8, so one from outside is checked where it comes in.
 */

#ifndef DYNPROF_UTF8_H
#define DYNPROF_UTF8_H

#include <stddef.h>

/* utf8.c */
int	 utf8_valid(const char *, size_t);
void	 utf8_cut_partial(char *);

#endif /* DYNPROF_UTF8_H */
