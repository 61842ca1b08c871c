/*
 * A token file holds one token, trailing whitespace (a newline) allowed.  A
 * token that does not fit is refused, never cut: a cut token would differ
 * from the one the other side reads.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "token.h"

/*
 * Reads the token in the file at path into buf (len at least TOKEN_MAX + 1).
 * Returns 0, or -1 with *why saying what is wrong (buf then empty).  The file
 * must be a regular file (a FIFO would block) of at most TOKEN_FILE_MAX
 * bytes, the token at most TOKEN_MAX bytes without control characters.
 */
int
token_read(const char *path, char *buf, size_t len, const char **why)
{
	char		 tmp[TOKEN_FILE_MAX + 1];
	struct stat	 st;
	ssize_t		 n;
	size_t		 got = 0, i;
	int		 fd;

	if (len > 0)
		buf[0] = '\0';
	if (len < TOKEN_MAX + 1) {
		*why = "no room for a token";
		return (-1);
	}
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1) {
		*why = strerror(errno);
		return (-1);
	}
	if (fstat(fd, &st) == -1) {
		*why = strerror(errno);
		close(fd);
		return (-1);
	}
	if (!S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		close(fd);
		return (-1);
	}
	while (got < sizeof(tmp)) {
		n = read(fd, tmp + got, sizeof(tmp) - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			*why = strerror(errno);
			close(fd);
			return (-1);
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (got > TOKEN_FILE_MAX) {
		*why = "file longer than 4096 bytes";
		return (-1);
	}
	while (got > 0 && (tmp[got - 1] == '\n' || tmp[got - 1] == '\r' ||
	    tmp[got - 1] == ' ' || tmp[got - 1] == '\t'))
		got--;
	if (got == 0) {
		*why = "empty token";
		return (-1);
	}
	if (got > TOKEN_MAX) {
		*why = "token longer than 1023 bytes";
		return (-1);
	}
	for (i = 0; i < got; i++) {
		if ((unsigned char)tmp[i] < 0x20 || tmp[i] == 0x7f) {
			*why = "control character in the token (one line only)";
			return (-1);
		}
	}
	memcpy(buf, tmp, got);
	buf[got] = '\0';
	return (0);
}
