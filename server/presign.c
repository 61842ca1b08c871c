/*
 * Short-lived presigned GET URLs for the traces an agent put into an
 * S3-compatible store (docs/traces.md): the traces index hands them out, so
 * that dynprofctl fetch and the page download an archive with no storage
 * credentials of their own.  AWS Signature Version 4 in the query string
 * (X-Amz-Algorithm ... X-Amz-Signature), the payload UNSIGNED-PAYLOAD, only
 * the host header signed; the coordinator's credentials are those of its
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN),
 * read once at start (presign_open()).  libcurl signs requests, not URLs
 * for someone else to use: the chain of HMACs is written here, checked
 * against botocore's by tests/support/s3.py.
 */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "presign.h"

/* Lowercase hex of n bytes. */
static void
presign_hex(const unsigned char *p, size_t n, char *out)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* out = HMAC-SHA256(key, msg); 32 bytes. */
static int
presign_hmac(const unsigned char *key, size_t klen, const char *msg,
    unsigned char out[32])
{
	unsigned int	 len = 0;

	return (HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg,
	    strlen(msg), out, &len) != NULL && len == 32 ? 0 : -1);
}

/* Writes s into out percent-encoded as SigV4 wants (RFC 3986 unreserved). */
static int
presign_encode(const char *s, char *out, size_t len)
{
	size_t	 n = 0;

	for (; *s != '\0'; s++) {
		if (n + 4 > len)
			return (-1);
		if (isalnum((unsigned char)*s) || strchr("-._~", *s) != NULL)
			out[n++] = *s;
		else
			n += (size_t)snprintf(out + n, len - n, "%%%02X",
			    (unsigned char)*s);
	}
	out[n] = '\0';
	return (0);
}

/* Returns 1 if s holds only characters a key of ours has, and no "..". */
static int
presign_key_ok(const char *s)
{
	const char	*p;

	if (*s == '\0' || *s == '/')
		return (0);
	for (p = s; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && strchr("._-/", *p) == NULL)
			return (0);
	return (strstr(s, "..") == NULL && strstr(s, "//") == NULL);
}

/*
 * Fills p from the coordinator's flags (endpoint, region, ttl) and its
 * environment's credentials.  Returns 0, or -1 with why.
 */
int
presign_open(struct presign *p, const char *endpoint, const char *region,
    uint32_t ttl_s, char *why, size_t wlen)
{
	const char	*e, *host;
	size_t		 n;

	memset(p, 0, sizeof(*p));
	if (strncmp(endpoint, "http://", 7) == 0)
		host = endpoint + 7;
	else if (strncmp(endpoint, "https://", 8) == 0)
		host = endpoint + 8;
	else {
		snprintf(why, wlen, "--s3-endpoint %s: not http:// or https://",
		    endpoint);
		return (-1);
	}
	n = strlen(endpoint);
	while (n > 0 && endpoint[n - 1] == '/')
		n--;
	if (n >= sizeof(p->endpoint) || (size_t)(host - endpoint) >= n ||
	    memchr(host, '/', n - (size_t)(host - endpoint)) != NULL) {
		snprintf(why, wlen, "--s3-endpoint %s: scheme://host[:port] "
		    "only", endpoint);
		return (-1);
	}
	snprintf(p->endpoint, sizeof(p->endpoint), "%.*s", (int)n, endpoint);
	/* The Host header curl (or a browser) sends: the port only if not
	 * the scheme's own. */
	n = strcspn(host, "/");
	snprintf(p->host, sizeof(p->host), "%.*s", (int)n, host);
	if ((strncmp(endpoint, "https://", 8) == 0 &&
	    (n = strlen(p->host)) > 4 && strcmp(p->host + n - 4, ":443") == 0) ||
	    (strncmp(endpoint, "http://", 7) == 0 &&
	    (n = strlen(p->host)) > 3 && strcmp(p->host + n - 3, ":80") == 0))
		p->host[strrchr(p->host, ':') - p->host] = '\0';
	if (region == NULL || *region == '\0')
		region = (e = getenv("AWS_REGION")) != NULL && *e != '\0' ? e :
		    "us-east-1";
	if (!presign_key_ok(region) || strchr(region, '/') != NULL ||
	    strlen(region) >= sizeof(p->region)) {
		snprintf(why, wlen, "--s3-region %s: not a region", region);
		return (-1);
	}
	snprintf(p->region, sizeof(p->region), "%s", region);
	if ((e = getenv("AWS_ACCESS_KEY_ID")) == NULL || *e == '\0' ||
	    strlen(e) >= sizeof(p->key) ||
	    presign_encode(e, p->key, sizeof(p->key)) == -1 ||
	    (e = getenv("AWS_SECRET_ACCESS_KEY")) == NULL || *e == '\0' ||
	    strlen(e) + 4 >= sizeof(p->secret)) {
		snprintf(why, wlen, "--s3-endpoint: no credentials (set "
		    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)");
		return (-1);
	}
	snprintf(p->secret, sizeof(p->secret), "AWS4%s", e);
	if ((e = getenv("AWS_SESSION_TOKEN")) != NULL && *e != '\0' &&
	    presign_encode(e, p->token, sizeof(p->token)) == -1) {
		snprintf(why, wlen, "AWS_SESSION_TOKEN: too long");
		return (-1);
	}
	p->ttl_s = ttl_s;
	p->on = 1;
	return (0);
}

/*
 * Writes into url a GET URL of location (s3://bucket/key) signed at now
 * (unix seconds), valid p->ttl_s seconds.  Returns 0, or -1 (no presigning
 * configured, or not a location to sign).
 */
int
presign_url(const struct presign *p, const char *location, time_t now,
    char *url, size_t len)
{
	unsigned char	 k[32], k2[32], h[32];
	char		 date[17], day[9], path[1100], query[3000];
	char		 creq[4600], sts[256], sig[65], hash[65];
	const char	*key;
	struct tm	 tm;
	int		 n;

	if (!p->on || strncmp(location, "s3://", 5) != 0 ||
	    strlen(location) >= sizeof(path) - 2 ||
	    !presign_key_ok(location + 5) ||
	    (key = strchr(location + 5, '/')) == NULL || key[1] == '\0' ||
	    gmtime_r(&now, &tm) == NULL)
		return (-1);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
	strftime(day, sizeof(day), "%Y%m%d", &tm);
	snprintf(path, sizeof(path), "/%s", location + 5);
	n = snprintf(query, sizeof(query), "X-Amz-Algorithm=AWS4-HMAC-SHA256"
	    "&X-Amz-Credential=%s%%2F%s%%2F%s%%2Fs3%%2Faws4_request"
	    "&X-Amz-Date=%s&X-Amz-Expires=%u%s%s&X-Amz-SignedHeaders=host",
	    p->key, day, p->region, date, p->ttl_s,
	    p->token[0] != '\0' ? "&X-Amz-Security-Token=" : "", p->token);
	if (n < 0 || (size_t)n >= sizeof(query))
		return (-1);
	n = snprintf(creq, sizeof(creq), "GET\n%s\n%s\nhost:%s\n\nhost\n"
	    "UNSIGNED-PAYLOAD", path, query, p->host);
	if (n < 0 || (size_t)n >= sizeof(creq) ||
	    EVP_Digest(creq, (size_t)n, h, NULL, EVP_sha256(), NULL) != 1)
		return (-1);
	presign_hex(h, 32, hash);
	snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/"
	    "aws4_request\n%s", date, day, p->region, hash);
	if (presign_hmac((const unsigned char *)p->secret, strlen(p->secret),
	    day, k) == -1 || presign_hmac(k, 32, p->region, k2) == -1 ||
	    presign_hmac(k2, 32, "s3", k) == -1 ||
	    presign_hmac(k, 32, "aws4_request", k2) == -1 ||
	    presign_hmac(k2, 32, sts, h) == -1)
		return (-1);
	presign_hex(h, 32, sig);
	n = snprintf(url, len, "%s%s?%s&X-Amz-Signature=%s", p->endpoint, path,
	    query, sig);
	return (n < 0 || (size_t)n >= len ? -1 : 0);
}
