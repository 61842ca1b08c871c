/*
 * UTF-8 as jansson takes it (RFC 3629): no overlong forms, no surrogates,
 * nothing above U+10FFFF.
 */

#include <string.h>

#include "utf8.h"

/* Returns 1 if the len bytes at s are valid UTF-8 holding no NUL, else 0. */
int
utf8_valid(const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, need, k;
	unsigned int		 cp, min;

	while (i < len) {
		if (p[i] == 0)
			return (0);
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if (p[i] >= 0xc2 && p[i] <= 0xdf) {
			need = 1;
			cp = p[i] & 0x1f;
			min = 0x80;
		} else if (p[i] >= 0xe0 && p[i] <= 0xef) {
			need = 2;
			cp = p[i] & 0x0f;
			min = 0x800;
		} else if (p[i] >= 0xf0 && p[i] <= 0xf4) {
			need = 3;
			cp = p[i] & 0x07;
			min = 0x10000;
		} else
			return (0);	/* a continuation byte, 0xc0, 0xc1, 0xf5+ */
		if (len - i - 1 < need)
			return (0);
		for (k = 1; k <= need; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return (0);
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return (0);
		i += need + 1;
	}
	return (1);
}

/*
 * Cuts a string that snprintf() may have cut short so that it does not end
 * inside a UTF-8 character.
 */
void
utf8_cut_partial(char *buf)
{
	size_t		 n = strlen(buf), i, need;
	unsigned char	 ch;

	for (i = n; i > 0 && n - i < 4; i--) {
		ch = (unsigned char)buf[i - 1];
		if ((ch & 0xc0) == 0x80)
			continue;		/* a continuation byte */
		if (ch >= 0xc0) {
			need = ch >= 0xf0 ? 4 : ch >= 0xe0 ? 3 : 2;
			if (n - (i - 1) < need)
				buf[i - 1] = '\0';
		}
		return;
	}
}
