/*
 * A token file holds one token, trailing whitespace (a newline) allowed.  A
 * token that does not fit is refused, never cut: a cut token would differ
 * from the one the other side reads.
 */

#include <string.h>

#include "file.h"
#include "token.h"

/*
 * Reads the token in the file at path into buf (len at least TOKEN_MAX + 1).
 * Returns 0, or -1 with *why saying what is wrong (buf then empty).  The file
 * must be a regular file (file_read(): a FIFO would block) of at most
 * TOKEN_FILE_MAX bytes, the token at most TOKEN_MAX bytes without control
 * characters.
 */
int
token_read(const char *path, char *buf, size_t len, const char **why)
{
	char		*tmp;
	size_t		 size, got, i;

	if (len > 0)
		buf[0] = '\0';
	if (len < TOKEN_MAX + 1) {
		*why = "no room for a token";
		return (-1);
	}
	if ((tmp = file_read(path, 0, TOKEN_FILE_MAX, &size, NULL, why)) ==
	    NULL) {
		if (strcmp(*why, "larger than the bound") == 0)
			*why = "file longer than 4096 bytes";
		return (-1);
	}
	got = size;
	while (got > 0 && (tmp[got - 1] == '\n' || tmp[got - 1] == '\r' ||
	    tmp[got - 1] == ' ' || tmp[got - 1] == '\t'))
		got--;
	if (got == 0)
		*why = "empty token";
	else if (got > TOKEN_MAX)
		*why = "token longer than 1023 bytes";
	else {
		for (i = 0; i < got; i++)
			if ((unsigned char)tmp[i] < 0x20 || tmp[i] == 0x7f)
				break;
		if (i < got)
			*why = "control character in the token (one line only)";
		else {
			memcpy(buf, tmp, got);
			buf[got] = '\0';
		}
	}
	file_free(tmp, size);
	return (buf[0] != '\0' ? 0 : -1);
}

/* Compares two tokens in time that does not depend on where they differ. */
int
token_equal(const char *a, const char *b)
{
	size_t		 la = strlen(a), lb = strlen(b), i;
	unsigned char	 d = 0;

	if (la != lb)
		return (0);
	for (i = 0; i < la; i++)
		d |= (unsigned char)a[i] ^ (unsigned char)b[i];
	return (d == 0);
}
