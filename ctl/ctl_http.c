/*
 * dynprofctl's HTTP client, on libcurl: one request at a time with a deadline
 * over the whole exchange, http:// and https:// (a CA, a client certificate),
 * 307/308 redirects followed only to the coordinators the user named, bodies
 * handed to a sink as they arrive, and errors a person can act on
 * ("Connection refused").  Blocking is right for a command line tool that
 * does one thing and exits.
 */

#include <sys/socket.h>

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "ctl.h"
#include "version.h"

/* Milliseconds on the monotonic clock. */
int64_t
ctl_now_ms(void)
{
	return (clock_mono_ms());
}

/*
 * Parses "http[s]://host[:port][/base]" or "host[:port]" (IPv6 literals in
 * brackets).  The port defaults to 80 (443 for https) as in any URL.  Returns
 * 0, or -1 with the reason.
 */
int
ctl_url_parse(const char *url, struct ctl_url *u, const char **why)
{
	const char	*p, *hend, *pstart, *slash, *q;
	size_t		 hlen, plen, blen;

	memset(u, 0, sizeof(*u));
	if (url == NULL || *url == '\0') {
		*why = "empty URL";
		return (-1);
	}
	p = url;
	if (strncasecmp(p, "https://", 8) == 0) {
		u->https = 1;
		p += 8;
	} else if (strncasecmp(p, "http://", 7) == 0)
		p += 7;
	else if (strstr(p, "://") != NULL) {
		*why = "only http:// and https:// URLs are supported";
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
	if (strpbrk(u->host, " \t\r\n@,") != NULL) {
		*why = "bad character in host";
		return (-1);
	}
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
		snprintf(u->port, sizeof(u->port), "%s",
		    u->https ? "443" : "80");
	if ((q = strpbrk(slash, "?#")) != NULL) {
		*why = *q == '#' ? "a fragment in the coordinator URL "
		    "(a token goes in --token-file or DYNPROF_TOKEN)" :
		    "a query in the coordinator URL";
		return (-1);
	}
	blen = strlen(slash);
	while (blen > 0 && slash[blen - 1] == '/')
		blen--;
	/* The status page's address (.../ui/) names its coordinator. */
	if (blen >= 3 && strncmp(slash + blen - 3, "/ui", 3) == 0)
		blen -= 3;
	if (blen >= sizeof(u->base)) {
		*why = "URL path too long";
		return (-1);
	}
	if (strpbrk(slash, " \t\r\n") != NULL) {
		*why = "white space in the URL path";
		return (-1);
	}
	memcpy(u->base, slash, blen);
	u->base[blen] = '\0';
	return (0);
}

/*
 * Parses a comma-separated list of coordinator URLs into conn->urls (at most
 * CTL_URLS_MAX).  Returns 0, or -1 with the reason.
 */
int
ctl_urls_parse(const char *list, struct ctl_conn *conn, const char **why)
{
	char		 one[1024];
	const char	*p = list, *comma;
	size_t		 n;

	conn->nurls = 0;
	if (list == NULL || *list == '\0') {
		*why = "empty URL";
		return (-1);
	}
	for (;;) {
		comma = strchr(p, ',');
		n = comma != NULL ? (size_t)(comma - p) : strlen(p);
		if (n >= sizeof(one)) {
			*why = "URL too long";
			return (-1);
		}
		if (conn->nurls == CTL_URLS_MAX) {
			*why = "more than 8 coordinators";
			return (-1);
		}
		memcpy(one, p, n);
		one[n] = '\0';
		if (ctl_url_parse(one, &conn->urls[conn->nurls], why) == -1)
			return (-1);
		conn->nurls++;
		if (comma == NULL)
			return (0);
		p = comma + 1;
	}
}

/* Writes the URL of path on coordinator u into buf; -1 if too long. */
static int
ctl_http_url(const struct ctl_url *u, const char *path, char *buf,
    size_t len)
{
	int	 v6 = strchr(u->host, ':') != NULL, n;

	n = snprintf(buf, len, "%s://%s%s%s:%s%s%s", u->https ? "https" :
	    "http", v6 ? "[" : "", u->host, v6 ? "]" : "", u->port, u->base,
	    path);
	return (n < 0 || (size_t)n >= len ? -1 : 0);
}

/*
 * Returns 1 if url (a redirect's target) is on one of the coordinators in
 * conn: same scheme, host and port.  A redirect elsewhere would hand the
 * token and the request to a server the user never named.
 */
static int
ctl_http_allowed(const struct ctl_conn *conn, const char *url)
{
	CURLU		*h;
	char		*scheme = NULL, *host = NULL, *port = NULL;
	const struct ctl_url	*u;
	const char	*hp;
	size_t		 i, hl;
	int		 ok = 0;

	if ((h = curl_url()) == NULL)
		return (0);
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) !=
	    CURLUE_OK)
		goto out;
	/* IPv6 literals come back in brackets. */
	hp = host;
	hl = strlen(host);
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		hp++;
		hl -= 2;
	}
	for (i = 0; i < conn->nurls && !ok; i++) {
		u = &conn->urls[i];
		ok = strcasecmp(scheme, u->https ? "https" : "http") == 0 &&
		    strlen(u->host) == hl &&
		    strncasecmp(u->host, hp, hl) == 0 &&
		    strcmp(port, u->port) == 0;
	}
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(h);
	return (ok);
}

/* One transfer's state, seen by the write callback. */
struct ctl_http_xfer {
	CURL		*curl;
	ctl_sink_fn	 sink;		/* NULL: every body into res */
	void		*arg;
	struct ctl_response *res;
	size_t		 cap;
	int		 status;	/* 0 until the headers are in */
	int		 too_large;
	int		 sink_failed;
	int		 sank;		/* part of the body went to the sink */
	int64_t		 answer_by;	/* no status line by then: give up
					   (0: the request's deadline) */
	int		 no_answer;	/* gave up so */
};

/*
 * Where a failed attempt leaves the request: done (an answer, or a write the
 * server may have received, which is never sent twice), to be asked of the
 * next coordinator listed (nothing reached the server, or a GET got no
 * answer), or that and every one again after a pause (a redirect's target,
 * the old leader, is gone: the others will name the new one soon).
 */
enum ctl_http_next {
	CTL_NEXT_NONE,
	CTL_NEXT_URL,
	CTL_NEXT_ROUND
};

/* Gives up a transfer whose status line has not come by x->answer_by. */
static int
ctl_http_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
    curl_off_t ultotal, curl_off_t ulnow)
{
	struct ctl_http_xfer	*x = arg;
	long			 code = 0;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (x->answer_by == 0 || ctl_now_ms() < x->answer_by)
		return (0);
	curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 0)
		return (0);
	x->no_answer = 1;
	return (1);
}

/*
 * Takes a piece of the body: a 2xx body goes to the sink if there is one,
 * any other (an error, a redirect) is kept in res, CTL_BODY_MAX at most.
 */
static size_t
ctl_http_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct ctl_http_xfer	*x = arg;
	struct ctl_response	*res = x->res;
	size_t			 len = size * nmemb, ncap;
	long			 code = 0;
	char			*nb;

	if (x->status == 0) {
		curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
		x->status = (int)code;
	}
	if (x->sink != NULL && x->status >= 200 && x->status <= 299) {
		x->sank = 1;
		if (x->sink(x->arg, data, len) == -1) {
			x->sink_failed = 1;
			return (0);
		}
		return (len);
	}
	if (len > CTL_BODY_MAX - res->len) {
		x->too_large = 1;
		return (0);
	}
	if (res->len + len + 1 > x->cap) {
		ncap = x->cap == 0 ? 65536 : x->cap;
		while (ncap < res->len + len + 1)
			ncap *= 2;
		if ((nb = realloc(res->body, ncap)) == NULL) {
			x->too_large = 1;
			return (0);
		}
		res->body = nb;
		x->cap = ncap;
	}
	memcpy(res->body + res->len, data, len);
	res->len += len;
	res->body[res->len] = '\0';
	return (len);
}

/* What answers on a port, from the first bytes it sends to an HTTP request. */
enum ctl_port_kind {
	CTL_PORT_UNKNOWN,
	CTL_PORT_HTTP,		/* an HTTP server: the admin API, plain */
	CTL_PORT_TLS,		/* a TLS alert or handshake */
	CTL_PORT_AGENTS,	/* a frame: the coordinator's agent port */
};

/*
 * Asks u's host and port what speaks there, for a message about a failed
 * request: connects, sends an HTTP request line, and reads the first bytes
 * of the answer (a TLS alert, an agent port's frame).  At most a second.
 */
static enum ctl_port_kind
ctl_http_probe(const struct ctl_url *u)
{
	static const char	 req[] = "GET / HTTP/1.0\r\n\r\n";
	struct addrinfo		 hints, *res = NULL, *ai;
	struct pollfd		 pfd;
	unsigned char		 head[8];
	enum ctl_port_kind	 kind = CTL_PORT_UNKNOWN;
	int64_t			 deadline = ctl_now_ms() + 1000;
	ssize_t			 n;
	int			 fd = -1, left;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(u->host, u->port, &hints, &res) != 0)
		return (kind);
	for (ai = res; ai != NULL && fd == -1; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd != -1 && connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	if (fd == -1)
		return (kind);
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) ==
	    (ssize_t)sizeof(req) - 1) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		left = (int)(deadline - ctl_now_ms());
		if (left > 0 && poll(&pfd, 1, left) == 1 &&
		    (n = recv(fd, head, sizeof(head), 0)) > 0) {
			if (head[0] == 0x15 || head[0] == 0x16)
				kind = CTL_PORT_TLS;
			else if (head[0] == 0x00)
				kind = CTL_PORT_AGENTS;
			else if (n >= 5 && memcmp(head, "HTTP/", 5) == 0)
				kind = CTL_PORT_HTTP;
		}
	}
	close(fd);
	return (kind);
}

/* Says why a transfer failed; returns the exit code that goes with it. */
static int
ctl_http_error(CURL *curl, CURLcode cc, const struct ctl_conn *conn,
    const struct ctl_url *u, const char *ebuf, int timeout_ms, char *err,
    size_t errlen)
{
	const char	*detail = ebuf[0] != '\0' ? ebuf :
			    curl_easy_strerror(cc);
	enum ctl_port_kind kind;
	long		 oserr = 0;
	size_t		 n;

	switch (cc) {
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(err, errlen, "no answer within %d.%03d s",
		    timeout_ms / 1000, timeout_ms % 1000);
		return (CTL_EXIT_TIMEOUT);
	case CURLE_COULDNT_RESOLVE_HOST:
		snprintf(err, errlen, "cannot resolve %s", u->host);
		return (CTL_EXIT_UNREACHABLE);
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &oserr);
		snprintf(err, errlen, "%s", oserr != 0 ?
		    strerror((int)oserr) : detail);
		return (CTL_EXIT_UNREACHABLE);
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_WEIRD_SERVER_REPLY:
		snprintf(err, errlen, "not an HTTP answer");
		break;
	case CURLE_GOT_NOTHING:
		snprintf(err, errlen, "the connection closed without an "
		    "answer");
		break;
	case CURLE_PARTIAL_FILE:
		snprintf(err, errlen, "truncated HTTP answer (body shorter "
		    "than Content-Length)");
		return (CTL_EXIT_UNREACHABLE);
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
		snprintf(err, errlen, "connection lost: %s", detail);
		break;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
		snprintf(err, errlen, "TLS: %s", detail);
		return (CTL_EXIT_UNREACHABLE);
	case CURLE_SSL_CONNECT_ERROR:
		snprintf(err, errlen, "TLS: %s", detail);
		break;
	default:
		snprintf(err, errlen, "%s", detail);
		return (CTL_EXIT_UNREACHABLE);
	}
	/*
	 * The connection broke in the exchange.  Plain HTTP to a TLS port looks
	 * so; and TLS 1.3 servers refuse a missing client certificate after
	 * the handshake, so that shows as a lost connection too: say what to
	 * try.
	 */
	n = strlen(err);
	if (strstr(detail, "wrong version number") != NULL)
		kind = CTL_PORT_HTTP;
	else if (cc == CURLE_WEIRD_SERVER_REPLY || cc == CURLE_GOT_NOTHING ||
	    cc == CURLE_UNSUPPORTED_PROTOCOL ||
	    cc == CURLE_SSL_CONNECT_ERROR)
		kind = ctl_http_probe(u);
	else
		kind = CTL_PORT_UNKNOWN;
	if (kind == CTL_PORT_AGENTS)
		snprintf(err + n, errlen - n, " (port %s is the coordinator's "
		    "agent port, which speaks framed protobuf; dynprofctl "
		    "talks to its admin API, the --http port, 7879 by "
		    "default)", u->port);
	else if (u->https && kind == CTL_PORT_HTTP)
		snprintf(err + n, errlen - n, " (port %s speaks plain HTTP: "
		    "http://%s:%s)", u->port, u->host, u->port);
	else if (!u->https)
		snprintf(err + n, errlen - n, kind == CTL_PORT_TLS ?
		    " (port %s speaks TLS: an https:// coordinator)" :
		    " (an https:// coordinator?)", u->port);
	else if (conn->cert == NULL)
		snprintf(err + n, errlen - n, " (%sthe coordinator wants a "
		    "client certificate: --cert F --key F)",
		    strstr(detail, "certificate required") != NULL ? "" :
		    "if ");
	return (CTL_EXIT_UNREACHABLE);
}

/*
 * Sets up the handle for one request: TLS files, headers, method and body.
 * Returns 0 or -1 (out of memory).
 */
static int
ctl_http_setup(CURL *curl, const struct ctl_conn *conn, const char *method,
    const char *body, size_t bodylen, int timeout_ms, struct curl_slist **hdrs)
{
	struct curl_slist	*l = NULL, *n;
	char			 auth[32 + 1024];

	*hdrs = NULL;
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	/* A stream that stays open (the events) is gone once quiet past its
	 * heartbeats. */
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)CTL_STALL_S);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_USERAGENT,
	    "dynprofctl/" DYNPROF_VERSION_STRING);
	/* Redirects are followed by hand: see ctl_http_allowed(). */
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(curl, CURLOPT_NETRC, (long)CURL_NETRC_IGNORED);
	/* Straight to the coordinator, as before: no http_proxy from the
	 * environment sees the token. */
	curl_easy_setopt(curl, CURLOPT_PROXY, "");
	if (conn->cacert != NULL)
		curl_easy_setopt(curl, CURLOPT_CAINFO, conn->cacert);
	if (conn->cert != NULL)
		curl_easy_setopt(curl, CURLOPT_SSLCERT, conn->cert);
	if (conn->key != NULL)
		curl_easy_setopt(curl, CURLOPT_SSLKEY, conn->key);

	if ((n = curl_slist_append(l, "Accept: application/json")) == NULL)
		goto fail;
	l = n;
	/* No "Expect: 100-continue" wait before a large body. */
	if ((n = curl_slist_append(l, "Expect:")) == NULL)
		goto fail;
	l = n;
	/* Without a body, no Content-Type (not curl's form default). */
	if ((n = curl_slist_append(l, body != NULL ?
	    "Content-Type: application/json" : "Content-Type:")) == NULL)
		goto fail;
	l = n;
	if (conn->token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
		    conn->token);
		if ((n = curl_slist_append(l, auth)) == NULL)
			goto fail;
		l = n;
	}
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, l);
	*hdrs = l;

	if (strcmp(method, "GET") != 0)
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL || strcmp(method, "GET") != 0) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)bodylen);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS,
		    body != NULL ? body : "");
	}
	return (0);
fail:
	curl_slist_free_all(l);
	return (-1);
}

/*
 * Says in err why the request failed at url (prefixed with its host and
 * port when named says so), and where that leaves it in *next.
 */
static int
ctl_http_failed(CURL *curl, CURLcode cc, const struct ctl_conn *conn,
    const char *method, const char *url, int hop, int timeout_ms,
    const struct ctl_http_xfer *x, const char *ebuf, int *next, char *err,
    size_t errlen)
{
	struct ctl_url	 u;
	const char	*why;
	char		 one[512];
	long		 sent = 0;
	int		 rc;

	if (ctl_url_parse(url, &u, &why) == -1)
		u = conn->urls[0];
	if (cc == CURLE_ABORTED_BY_CALLBACK && x->no_answer) {
		snprintf(one, sizeof(one), "no answer within %d.%03d s",
		    CTL_ANSWER_MS / 1000, CTL_ANSWER_MS % 1000);
		rc = CTL_EXIT_TIMEOUT;
	} else
		rc = ctl_http_error(curl, cc, conn, &u, ebuf, timeout_ms, one,
		    sizeof(one));
	/* Nothing of the request went out: any method may go elsewhere. */
	curl_easy_getinfo(curl, CURLINFO_REQUEST_SIZE, &sent);
	if (x->sank)
		/* The sink has part of this answer: its caller resumes it (an
		 * event stream from the last revision), never the same request
		 * again. */
		*next = CTL_NEXT_NONE;
	else if (cc == CURLE_COULDNT_CONNECT ||
	    cc == CURLE_COULDNT_RESOLVE_HOST || sent == 0)
		*next = CTL_NEXT_URL;
	else if (strcmp(method, "GET") == 0 &&
	    (rc == CTL_EXIT_TIMEOUT || rc == CTL_EXIT_UNREACHABLE))
		*next = CTL_NEXT_URL;
	else
		*next = CTL_NEXT_NONE;
	if (*next == CTL_NEXT_URL && hop > 0)
		*next = CTL_NEXT_ROUND;
	/* Name the one that failed: a redirect's target, or one of several. */
	if (hop > 0 || conn->nurls > 1)
		snprintf(err, errlen, "%s:%s: %s", u.host, u.port, one);
	else
		snprintf(err, errlen, "%s", one);
	return (rc);
}

/*
 * Sends one request to coordinator u and follows its 307/308 redirects to
 * the coordinators in conn, all by deadline.  Returns as ctl_http_request(),
 * and in *next whether another coordinator may be asked.
 */
static int
ctl_http_one(const struct ctl_conn *conn, const struct ctl_url *u,
    const char *method, const char *path, const char *body, size_t bodylen,
    int timeout_ms, int64_t deadline, ctl_sink_fn sink, void *arg,
    struct ctl_response *res, int *next, char *err, size_t errlen)
{
	struct ctl_http_xfer	 x;
	struct curl_slist	*hdrs = NULL;
	CURL			*curl;
	CURLcode		 cc;
	char			 url[2048], ebuf[CURL_ERROR_SIZE];
	char			*to;
	long			 code;
	int			 hops, rc, several = conn->nurls > 1;
	int64_t			 left;

	memset(res, 0, sizeof(*res));
	*next = CTL_NEXT_NONE;
	if (ctl_http_url(u, path, url, sizeof(url)) == -1) {
		snprintf(err, errlen, "URL too long");
		return (CTL_EXIT_REFUSED);
	}
	if ((curl = curl_easy_init()) == NULL) {
		snprintf(err, errlen, "cannot start libcurl");
		return (CTL_EXIT_UNREACHABLE);
	}
	if (ctl_http_setup(curl, conn, method, body, bodylen, timeout_ms,
	    &hdrs) == -1) {
		snprintf(err, errlen, "out of memory");
		rc = CTL_EXIT_UNREACHABLE;
		goto out;
	}
	for (hops = 0;; hops++) {
		memset(&x, 0, sizeof(x));
		x.curl = curl;
		x.sink = sink;
		x.arg = arg;
		x.res = res;
		ctl_http_free(res);
		ebuf[0] = '\0';
		/* Redirects share the one deadline. */
		left = deadline - ctl_now_ms();
		if (left < 1)
			left = 1;
		curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)left);
		/* With others to ask, none is waited for long. */
		if (several) {
			curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
			    (long)(left < CTL_CONNECT_MS ? left :
			    CTL_CONNECT_MS));
			if (strcmp(method, "GET") == 0 && left > CTL_ANSWER_MS)
				x.answer_by = ctl_now_ms() + CTL_ANSWER_MS;
		}
		curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION,
		    ctl_http_progress);
		curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &x);
		curl_easy_setopt(curl, CURLOPT_URL, url);
		curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, ebuf);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ctl_http_write);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &x);
		cc = curl_easy_perform(curl);
		if (cc == CURLE_WRITE_ERROR && x.too_large) {
			snprintf(err, errlen, "answer larger than %d bytes",
			    CTL_BODY_MAX);
			rc = CTL_EXIT_UNREACHABLE;
			goto out;
		}
		if (cc == CURLE_WRITE_ERROR && x.sink_failed) {
			snprintf(err, errlen, "cannot write the answer out");
			rc = CTL_EXIT_REFUSED;
			goto out;
		}
		if (cc != CURLE_OK) {
			rc = ctl_http_failed(curl, cc, conn, method, url, hops,
			    timeout_ms, &x, ebuf, next, err, errlen);
			goto out;
		}
		code = 0;
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
		res->status = (int)code;
		if (code != 307 && code != 308)
			break;
		to = NULL;
		curl_easy_getinfo(curl, CURLINFO_REDIRECT_URL, &to);
		if (to == NULL)
			break;	/* no Location: shown as the answer it is */
		if (hops == CTL_REDIRECTS_MAX) {
			snprintf(err, errlen, "more than %d redirects, the "
			    "last to %.300s", CTL_REDIRECTS_MAX, to);
			rc = CTL_EXIT_REFUSED;
			goto out;
		}
		if (!ctl_http_allowed(conn, to)) {
			snprintf(err, errlen, "redirected to %.300s, which is "
			    "not one of the coordinators given (--coordinator "
			    "or DYNPROF_COORDINATOR): not followed", to);
			rc = CTL_EXIT_REFUSED;
			goto out;
		}
		snprintf(url, sizeof(url), "%s", to);
	}
	if (res->body == NULL && (res->body = strdup("")) == NULL) {
		snprintf(err, errlen, "out of memory");
		rc = CTL_EXIT_UNREACHABLE;
		goto out;
	}
	rc = CTL_EXIT_OK;
out:
	if (rc != CTL_EXIT_OK)
		ctl_http_free(res);
	curl_easy_cleanup(curl);
	curl_slist_free_all(hdrs);
	return (rc);
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
 * to the coordinators in conn, in order, and reads the answer within
 * timeout_ms in all.  The next one is asked when nothing reached the one
 * before (refused, no connection within CTL_CONNECT_MS) or, for a GET, when
 * it gave no answer within CTL_ANSWER_MS; a write that may have reached a
 * server is never sent again.  While a redirect's target is gone (a leader
 * that died, its followers still naming it), they are all asked again after
 * a pause growing from CTL_BACKOFF_MS to CTL_BACKOFF_MAX_MS, until the
 * deadline.  With a sink, a 2xx body goes there as it arrives and res->body
 * stays empty.  Returns CTL_EXIT_OK with res filled (caller frees with
 * ctl_http_free), else CTL_EXIT_UNREACHABLE, CTL_EXIT_TIMEOUT or
 * CTL_EXIT_REFUSED (a redirect not followed) with the reason in err, naming
 * the coordinator that failed when several were given or one redirected.
 */
int
ctl_http_request(const struct ctl_conn *conn, const char *method,
    const char *path, const char *body, size_t bodylen, int timeout_ms,
    ctl_sink_fn sink, void *arg, struct ctl_response *res, char *err,
    size_t errlen)
{
	struct timespec	 ts;
	size_t		 i;
	int		 rc = CTL_EXIT_UNREACHABLE, next, again;
	int64_t		 deadline, left, pause = CTL_BACKOFF_MS;

	memset(res, 0, sizeof(*res));
	snprintf(err, errlen, "no coordinator given");
	deadline = ctl_now_ms() + timeout_ms;
	for (;;) {
		again = 0;
		for (i = 0; i < conn->nurls; i++) {
			if (i > 0 && ctl_now_ms() >= deadline)
				return (rc);
			rc = ctl_http_one(conn, &conn->urls[i], method, path,
			    body, bodylen, timeout_ms, deadline, sink, arg, res,
			    &next, err, errlen);
			if (rc == CTL_EXIT_OK || next == CTL_NEXT_NONE)
				return (rc);
			if (next == CTL_NEXT_ROUND)
				again = 1;
		}
		left = deadline - ctl_now_ms();
		if (!again || left <= 0)
			return (rc);
		if (pause > left)
			pause = left;
		ts.tv_sec = pause / 1000;
		ts.tv_nsec = (pause % 1000) * 1000000;
		nanosleep(&ts, NULL);
		pause = pause * 2 > CTL_BACKOFF_MAX_MS ? CTL_BACKOFF_MAX_MS :
		    pause * 2;
	}
}
