/* Helpers shared by the fuzz targets that keep files (fuzzdir.c). */

#ifndef DYNPROF_FUZZDIR_H
#define DYNPROF_FUZZDIR_H

#include <stddef.h>

int	 fuzzdir_make(char *, size_t, const char *);

#endif /* DYNPROF_FUZZDIR_H */
