/*
 * Files the daemons and dynprofctl read at start or on SIGHUP (certificates,
 * keys, CAs, ticket keys, tokens, configs): read whole into memory by one
 * reader that cannot block.  A FIFO (or a device) put at such a path would
 * otherwise hold a daemon in open() or read() for good: at start, or in its
 * event loop on SIGHUP.
 */

#ifndef DYNPROF_FILE_H
#define DYNPROF_FILE_H

#include <sys/stat.h>

#include <stddef.h>

/* file_read() flags. */
#define FILE_NOFOLLOW	0x1	/* a symbolic link at path is refused */

/* file.c */
char	*file_read(const char *, int, size_t, size_t *, struct stat *,
	    const char **);
void	 file_free(char *, size_t);

#endif /* DYNPROF_FILE_H */
