/*
 * A small blocking HTTP/1.1 client: one request per connection, a deadline over
 * the whole exchange, and errors a person can act on ("Connection refused").
 * Blocking is right for a command line tool that does one thing and exits.
 */

#include <sys/socket.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "version.h"

/* Milliseconds on the monotonic clock. */
int64_t
ctl_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static int
ctl_http_remaining(int64_t deadline)
{
	int64_t	 left;

	left = deadline - ctl_now_ms();
	if (left < 0)
		return (0);
	return ((int)left);
}

/*
 * Parses "http://host[:port][/base]" or "host[:port]" (IPv6 literals in
 * brackets).  The port defaults to 80 as in any http URL.  Returns 0, or -1
 * with the reason.
 */
int
ctl_url_parse(const char *url, struct ctl_url *u, const char **why)
{
	const char	*p, *hend, *pstart, *slash;
	size_t		 hlen, plen, blen;

	memset(u, 0, sizeof(*u));
	if (url == NULL || *url == '\0') {
		*why = "empty URL";
		return (-1);
	}
	p = url;
	if (strncasecmp(p, "https://", 8) == 0) {
		*why = "https is not supported yet: use http://";
		return (-1);
	}
	if (strncasecmp(p, "http://", 7) == 0)
		p += 7;
	else if (strstr(p, "://") != NULL) {
		*why = "only http:// URLs are supported";
		return (-1);
	}
	slash = p + strcspn(p, "/?#");
	if (*p == '[') {
		hend = memchr(p, ']', slash - p);
		if (hend == NULL) {
			*why = "unterminated '[' in host";
			return (-1);
		}
		hlen = hend - (p + 1);
		memcpy(u->host, p + 1, hlen < sizeof(u->host) ? hlen : 0);
		pstart = hend + 1;
		if (pstart < slash && *pstart != ':') {
			*why = "junk after ']' in host";
			return (-1);
		}
	} else {
		hend = memchr(p, ':', slash - p);
		if (hend == NULL)
			hend = slash;
		hlen = hend - p;
		if (hlen < sizeof(u->host))
			memcpy(u->host, p, hlen);
		pstart = hend;
	}
	if (hlen == 0) {
		*why = "no host in URL";
		return (-1);
	}
	if (hlen >= sizeof(u->host)) {
		*why = "host name too long";
		return (-1);
	}
	u->host[hlen] = '\0';
	if (pstart < slash && *pstart == ':') {
		pstart++;
		plen = slash - pstart;
		if (plen == 0 || plen > 5 ||
		    strspn(pstart, "0123456789") < plen) {
			*why = "bad port in URL";
			return (-1);
		}
		memcpy(u->port, pstart, plen);
		u->port[plen] = '\0';
		if (atoi(u->port) < 1 || atoi(u->port) > 65535) {
			*why = "port out of range in URL";
			return (-1);
		}
	} else
		snprintf(u->port, sizeof(u->port), "80");
	if (*slash == '?' || *slash == '#') {
		*why = "a query or fragment in the coordinator URL";
		return (-1);
	}
	blen = strlen(slash);
	while (blen > 0 && slash[blen - 1] == '/')
		blen--;
	if (blen >= sizeof(u->base)) {
		*why = "URL path too long";
		return (-1);
	}
	memcpy(u->base, slash, blen);
	u->base[blen] = '\0';
	return (0);
}

/* Connects to one address before the deadline: the fd, or -1 with errno. */
static int
ctl_http_connect_one(const struct addrinfo *ai, int64_t deadline)
{
	struct pollfd	 pfd;
	socklen_t	 len;
	int		 fd, flags, error, n;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
	    ai->ai_protocol);
	if (fd == -1)
		return (-1);
	flags = fcntl(fd, F_GETFL);
	if (flags == -1 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
		goto fail;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return (fd);
	if (errno != EINPROGRESS)
		goto fail;
	pfd.fd = fd;
	pfd.events = POLLOUT;
	do
		n = poll(&pfd, 1, ctl_http_remaining(deadline));
	while (n == -1 && errno == EINTR);
	if (n == -1)
		goto fail;
	if (n == 0) {
		errno = ETIMEDOUT;
		goto fail;
	}
	len = sizeof(error);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == -1)
		goto fail;
	if (error != 0) {
		errno = error;
		goto fail;
	}
	return (fd);
fail:
	error = errno;
	close(fd);
	errno = error;
	return (-1);
}

/* Waits for fd to be ready for events; 0 ready, -1 with errno (ETIMEDOUT). */
static int
ctl_http_wait(int fd, short events, int64_t deadline)
{
	struct pollfd	 pfd;
	int		 n;

	pfd.fd = fd;
	pfd.events = events;
	for (;;) {
		n = poll(&pfd, 1, ctl_http_remaining(deadline));
		if (n > 0)
			return (0);
		if (n == 0) {
			errno = ETIMEDOUT;
			return (-1);
		}
		if (errno != EINTR)
			return (-1);
	}
}

static int
ctl_http_send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	ssize_t	 n;

	while (len > 0) {
		if (ctl_http_wait(fd, POLLOUT, deadline) == -1)
			return (-1);
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return (-1);
		}
		buf += n;
		len -= n;
	}
	return (0);
}

/* Decodes a chunked body in place; returns its length or -1. */
static long
ctl_http_dechunk(char *body, size_t len)
{
	size_t		 in = 0, out = 0, n;
	char		*end;
	unsigned long	 size;

	for (;;) {
		if (in >= len)
			return (-1);
		errno = 0;
		size = strtoul(body + in, &end, 16);
		if (end == body + in || errno != 0)
			return (-1);
		n = (size_t)(end - body);
		end = memmem(body + n, len - n, "\r\n", 2);
		if (end == NULL)
			return (-1);
		in = (size_t)(end - body) + 2;
		if (size == 0)
			return ((long)out);
		if (size > len - in)
			return (-1);
		memmove(body + out, body + in, size);
		out += size;
		in += size;
		if (len - in < 2 || memcmp(body + in, "\r\n", 2) != 0)
			return (-1);
		in += 2;
	}
}

/* What the status line and headers of an answer say. */
struct ctl_http_head {
	int	 status;
	size_t	 hlen;		/* up to and with the blank line */
	size_t	 clen;
	int	 have_clen;
	int	 chunked;
};

/* Parses the status line and the headers; 0, or -1 with the reason. */
static int
ctl_http_head(const char *buf, size_t len, struct ctl_http_head *h,
    const char **why)
{
	const char	*hend, *line, *eol, *v;

	memset(h, 0, sizeof(*h));
	hend = memmem(buf, len, "\r\n\r\n", 4);
	if (hend == NULL) {
		*why = "truncated HTTP answer (no end of headers)";
		return (-1);
	}
	h->hlen = (size_t)(hend - buf) + 4;
	if (len < 12 || strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ' ||
	    sscanf(buf + 9, "%3d", &h->status) != 1 || h->status < 100 ||
	    h->status > 599) {
		*why = "not an HTTP answer";
		return (-1);
	}
	line = memmem(buf, h->hlen, "\r\n", 2) + 2;
	while (line < hend + 2) {
		eol = memmem(line, hend + 2 - line, "\r\n", 2);
		if (eol == NULL)
			break;
		if ((size_t)(eol - line) > 15 &&
		    strncasecmp(line, "Content-Length:", 15) == 0) {
			v = line + 15;
			while (*v == ' ' || *v == '\t')
				v++;
			if (sscanf(v, "%zu", &h->clen) != 1) {
				*why = "bad Content-Length";
				return (-1);
			}
			h->have_clen = 1;
		} else if ((size_t)(eol - line) > 18 &&
		    strncasecmp(line, "Transfer-Encoding:", 18) == 0) {
			v = line + 18;
			while (*v == ' ' || *v == '\t')
				v++;
			if (strncasecmp(v, "chunked", 7) == 0)
				h->chunked = 1;
		}
		line = eol + 2;
	}
	return (0);
}

/*
 * Returns 1 once buf holds a whole answer with a Content-Length body, so that
 * a server keeping the connection open does not make us wait for its end.
 */
static int
ctl_http_complete(const char *buf, size_t len)
{
	struct ctl_http_head	 h;
	const char		*why;

	return (ctl_http_head(buf, len, &h, &why) == 0 && !h.chunked &&
	    h.have_clen && len - h.hlen >= h.clen);
}

/*
 * Parses a whole HTTP/1.x answer (status line, headers, body; Content-Length,
 * chunked, or up to the end).  Returns 0 with res filled (body copied and
 * NUL-terminated), or -1 with the reason.
 */
int
ctl_http_parse_response(const char *buf, size_t len, struct ctl_response *res,
    const char **why)
{
	struct ctl_http_head	 h;
	size_t			 blen;
	long			 dl;

	memset(res, 0, sizeof(*res));
	if (ctl_http_head(buf, len, &h, why) == -1)
		return (-1);
	blen = len - h.hlen;
	if (!h.chunked && h.have_clen) {
		if (h.clen > blen) {
			*why = "truncated HTTP answer (body shorter than "
			    "Content-Length)";
			return (-1);
		}
		blen = h.clen;
	}
	res->body = malloc(blen + 1);
	if (res->body == NULL) {
		*why = "out of memory";
		return (-1);
	}
	memcpy(res->body, buf + h.hlen, blen);
	res->body[blen] = '\0';
	if (h.chunked) {
		dl = ctl_http_dechunk(res->body, blen);
		if (dl < 0) {
			ctl_http_free(res);
			*why = "bad chunked encoding in HTTP answer";
			return (-1);
		}
		blen = (size_t)dl;
		res->body[blen] = '\0';
	}
	res->len = blen;
	res->status = h.status;
	return (0);
}

/* Frees the body of an answer. */
void
ctl_http_free(struct ctl_response *res)
{
	free(res->body);
	res->body = NULL;
	res->len = 0;
}

/*
 * Sends one request (method, path under the URL's base, optional body as JSON)
 * and reads the whole answer within timeout_ms.  Returns CTL_EXIT_OK with res
 * filled, CTL_EXIT_UNREACHABLE or CTL_EXIT_TIMEOUT with the reason in err.
 */
int
ctl_http_request(const struct ctl_url *u, const char *token,
    const char *method, const char *path, const char *body, size_t bodylen,
    int timeout_ms, struct ctl_response *res, char *err, size_t errlen)
{
	struct addrinfo	 hints, *ai0 = NULL, *ai;
	char		*req = NULL, *buf = NULL, *nbuf;
	const char	*why;
	size_t		 len = 0, cap = 0;
	int64_t		 deadline;
	ssize_t		 n;
	int		 fd = -1, rc, saved = 0, r, hlen;

	memset(res, 0, sizeof(*res));
	deadline = ctl_now_ms() + timeout_ms;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(u->host, u->port, &hints, &ai0);
	if (r != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", u->host,
		    gai_strerror(r));
		return (CTL_EXIT_UNREACHABLE);
	}
	for (ai = ai0; ai != NULL; ai = ai->ai_next) {
		fd = ctl_http_connect_one(ai, deadline);
		if (fd != -1)
			break;
		saved = errno;
	}
	freeaddrinfo(ai0);
	if (fd == -1) {
		snprintf(err, errlen, "%s", strerror(saved));
		return (CTL_EXIT_UNREACHABLE);
	}

	hlen = asprintf(&req, "%s %s%s HTTP/1.1\r\n"
	    "Host: %s%s%s:%s\r\n"
	    "User-Agent: dynprofctl/%s\r\n"
	    "Accept: application/json\r\n"
	    "Connection: close\r\n"
	    "%s%s%s"
	    "Content-Length: %zu\r\n"
	    "%s"
	    "\r\n",
	    method, u->base, path,
	    strchr(u->host, ':') != NULL ? "[" : "", u->host,
	    strchr(u->host, ':') != NULL ? "]" : "", u->port,
	    DYNPROF_VERSION_STRING,
	    token != NULL ? "Authorization: Bearer " : "",
	    token != NULL ? token : "", token != NULL ? "\r\n" : "",
	    bodylen,
	    body != NULL ? "Content-Type: application/json\r\n" : "");
	if (hlen == -1) {
		req = NULL;
		snprintf(err, errlen, "out of memory");
		rc = CTL_EXIT_UNREACHABLE;
		goto out;
	}
	if (ctl_http_send_all(fd, req, (size_t)hlen, deadline) == -1 ||
	    (bodylen > 0 && ctl_http_send_all(fd, body, bodylen,
	    deadline) == -1))
		goto ioerr;

	for (;;) {
		if (cap - len < 65536) {
			if (cap >= CTL_BODY_MAX) {
				snprintf(err, errlen, "answer larger than %d "
				    "bytes", CTL_BODY_MAX);
				rc = CTL_EXIT_UNREACHABLE;
				goto out;
			}
			cap = cap == 0 ? 65536 * 2 : cap * 2;
			nbuf = realloc(buf, cap);
			if (nbuf == NULL) {
				snprintf(err, errlen, "out of memory");
				rc = CTL_EXIT_UNREACHABLE;
				goto out;
			}
			buf = nbuf;
		}
		if (ctl_http_wait(fd, POLLIN, deadline) == -1)
			goto ioerr;
		n = recv(fd, buf + len, cap - len - 1, 0);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			goto ioerr;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (ctl_http_complete(buf, len))
			break;	/* even if the server keeps it open */
	}
	if (ctl_http_parse_response(buf, len, res, &why) == -1) {
		snprintf(err, errlen, "%s", why);
		rc = CTL_EXIT_UNREACHABLE;
		goto out;
	}
	rc = CTL_EXIT_OK;
	goto out;

ioerr:
	if (errno == ETIMEDOUT) {
		snprintf(err, errlen, "no answer within %d.%03d s",
		    timeout_ms / 1000, timeout_ms % 1000);
		rc = CTL_EXIT_TIMEOUT;
	} else {
		snprintf(err, errlen, "%s", strerror(errno));
		rc = CTL_EXIT_UNREACHABLE;
	}
out:
	free(req);
	free(buf);
	if (fd != -1)
		close(fd);
	return (rc);
}
