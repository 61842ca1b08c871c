/*
 * The addresses the coordinator listens on: "HOST:PORT" parsed, and judged
 * loopback or not (coord_check_exposure() in coord.c).
 */

#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "coord_addr.h"
#include "log.h"

/*
 * Parses "HOST:PORT" or "[V6]:PORT" (port 0 allowed, HOST a name or a
 * number) into ss.  Returns 0, or -1 with the reason logged.
 */
int
coord_parse_addr(const char *addr, struct sockaddr_storage *ss,
    socklen_t *sslen)
{
	struct addrinfo	 hints, *res;
	char		 host[256], port[16];
	int		 rc;

	switch (addr_split(addr, strlen(addr), host, sizeof(host), port,
	    sizeof(port))) {
	case ADDR_NO_PORT:
		log_warnx("%s: %s: expected HOST:PORT", __func__, addr);
		return (-1);
	case ADDR_BAD_PORT:
		log_warnx("%s: bad port %s: expected 0 to %d", addr,
		    strrchr(addr, ':') + 1, COORD_PORT_MAX);
		return (-1);
	case ADDR_BAD_HOST:
		log_warnx("%s: %s: bad host", __func__, addr);
		return (-1);
	case ADDR_OK:
		break;
	}
	if (strtol(port, NULL, 10) > COORD_PORT_MAX) {
		log_warnx("%s: bad port %s: expected 0 to %d", addr, port,
		    COORD_PORT_MAX);
		return (-1);
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		log_warnx("%s: %s: %s", __func__, host, gai_strerror(rc));
		return (-1);
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	return (0);
}

/*
 * Returns 1 if addr ("HOST:PORT") names a loopback address, 0 if another, -1
 * (logged) if it is no address.
 */
int
coord_is_loopback(const char *addr)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof(ss);
	const uint8_t		*a6;

	memset(&ss, 0, sizeof(ss));
	if (coord_parse_addr(addr, &ss, &len) == -1)
		return (-1);
	if (ss.ss_family == AF_INET)
		return ((ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >>
		    24) == 127);
	if (ss.ss_family == AF_INET6) {
		a6 = ((struct sockaddr_in6 *)&ss)->sin6_addr.s6_addr;
		return (IN6_IS_ADDR_LOOPBACK(
		    &((struct sockaddr_in6 *)&ss)->sin6_addr) ||
		    (IN6_IS_ADDR_V4MAPPED(
		    &((struct sockaddr_in6 *)&ss)->sin6_addr) && a6[12] == 127));
	}
	return (0);
}
