/*
 * The one reader of configured files (file.h): opened with O_NONBLOCK (a FIFO
 * with no writer opens at once instead of waiting for one), checked with
 * fstat() to be a regular file before any read, bounded, read into memory.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"

/*
 * Reads the regular file at path, at most max bytes, into a new buffer with a
 * NUL after its bytes (caller frees, with file_free() for secrets); *lenp
 * gets its length, *st (if not NULL) what fstat() said.  flags: FILE_NOFOLLOW.
 * Returns NULL with *why saying what is wrong (strerror()'s text, "not a
 * regular file", "larger than the bound") and errno set (open()'s, EINVAL
 * not a regular file, EFBIG over max).
 */
char *
file_read(const char *path, int flags, size_t max, size_t *lenp,
    struct stat *st, const char **why)
{
	struct stat	 sb;
	char		*buf, *nbuf;
	size_t		 got = 0, cap;
	ssize_t		 n;
	int		 fd, saved;

	*lenp = 0;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
	    ((flags & FILE_NOFOLLOW) ? O_NOFOLLOW : 0))) == -1) {
		*why = errno == ELOOP && (flags & FILE_NOFOLLOW) ?
		    "a symbolic link" : strerror(errno);
		return (NULL);
	}
	if (fstat(fd, &sb) == -1) {
		saved = errno;
		close(fd);
		*why = strerror(saved);
		return (NULL);
	}
	if (st != NULL)
		*st = sb;
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		*why = "not a regular file";
		errno = EINVAL;
		return (NULL);
	}
	if (sb.st_size < 0 || (size_t)sb.st_size > max) {
		close(fd);
		*why = "larger than the bound";
		errno = EFBIG;
		return (NULL);
	}
	/* Sized by the file; a file that grows meanwhile is read to the
	 * bound + 1, to tell it is over. */
	cap = (size_t)sb.st_size + 1;
	if ((buf = malloc(cap + 1)) == NULL) {
		close(fd);
		*why = strerror(ENOMEM);
		return (NULL);
	}
	for (;;) {
		if (got == cap) {
			if (cap > max) {
				file_free(buf, got);
				close(fd);
				*why = "larger than the bound";
				errno = EFBIG;
				return (NULL);
			}
			cap = cap > max / 2 ? max + 1 : cap * 2;
			if ((nbuf = realloc(buf, cap + 1)) == NULL) {
				file_free(buf, got);
				close(fd);
				*why = strerror(ENOMEM);
				return (NULL);
			}
			buf = nbuf;
		}
		n = read(fd, buf + got, cap - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			saved = errno;
			file_free(buf, got);
			close(fd);
			*why = strerror(saved);
			return (NULL);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got > max) {
		file_free(buf, got);
		*why = "larger than the bound";
		errno = EFBIG;
		return (NULL);
	}
	buf[got] = '\0';
	*lenp = got;
	return (buf);
}

/* Clears and frees a buffer of file_read() (len its length; NULL is fine). */
void
file_free(char *buf, size_t len)
{
	if (buf == NULL)
		return;
	explicit_bzero(buf, len);
	free(buf);
}
