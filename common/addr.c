/*
 * "HOST:PORT" split at its last colon (so "[V6]:PORT" splits too), the host
 * without its brackets: the one rule the coordinator, the agent, dynprofctl
 * and the load generator read an address by.
 */

#include <string.h>

#include "addr.h"

/*
 * Splits the len bytes at s into host (hostlen bytes, brackets of "[V6]"
 * taken off) and port (portlen bytes: one or more digits, no sign).  Returns
 * ADDR_OK, or what is wrong (host and port then undefined), the port judged
 * before the host.
 */
enum addr_fault
addr_split(const char *s, size_t len, char *host, size_t hostlen, char *port,
    size_t portlen)
{
	const char	*colon = NULL, *p;
	size_t		 hlen, plen, i;

	for (p = s; p < s + len; p++)
		if (*p == ':')
			colon = p;
	if (colon == NULL)
		return (ADDR_NO_PORT);
	hlen = (size_t)(colon - s);
	plen = len - hlen - 1;
	if (plen == 0 || plen >= portlen)
		return (ADDR_BAD_PORT);
	for (i = 0; i < plen; i++)
		if (colon[1 + i] < '0' || colon[1 + i] > '9')
			return (ADDR_BAD_PORT);
	if (hlen >= 2 && s[0] == '[' && s[hlen - 1] == ']') {
		s++;
		hlen -= 2;
	}
	if (hlen == 0 || hlen >= hostlen)
		return (ADDR_BAD_HOST);
	memcpy(host, s, hlen);
	host[hlen] = '\0';
	memcpy(port, colon + 1, plen);
	port[plen] = '\0';
	return (ADDR_OK);
}

/*
 * Returns 1 if the NUL-terminated addresses a and b name the same host and
 * port as written ("[::1]:80" and "::1:80" alike), 0 if not or if either
 * does not split.
 */
int
addr_same(const char *a, const char *b)
{
	char	 ha[256], pa[16], hb[256], pb[16];

	if (addr_split(a, strlen(a), ha, sizeof(ha), pa, sizeof(pa)) !=
	    ADDR_OK || addr_split(b, strlen(b), hb, sizeof(hb), pb,
	    sizeof(pb)) != ADDR_OK)
		return (0);
	return (strcmp(ha, hb) == 0 && strcmp(pa, pb) == 0);
}
