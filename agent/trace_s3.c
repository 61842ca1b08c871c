/*
 * The uploader child's requests to an S3-compatible store (trace_upload.c
 * forks it): an archive put in one PUT, or, over --upload-part-size, as a
 * multipart upload (CreateMultipartUpload, one UploadPart per part,
 * CompleteMultipartUpload; AbortMultipartUpload when a step fails, so that
 * the store drops the parts it holds).  Every request is signed by libcurl
 * (CURLOPT_AWS_SIGV4) with its payload's sha256 in x-amz-content-sha256: the
 * packer's for a single PUT, each part's hashed here before it is sent (the
 * file read twice, 64 KiB at a time: memory does not grow with a part).
 * Query strings are written in SigV4's canonical form (sorted, every key with
 * '=', values that need no escaping), which libcurl signs as written.
 */

#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "parts.h"

#define S3_CONNECT_MS		10000
#define S3_EMPTY_SHA256	\
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* One request's body (from the archive, or from memory) and answer. */
struct s3_io {
	int		 fd;
	uint64_t	 off, left;	/* the file's range still to send */
	const char	*mem;		/* else this */
	char		 body[1024];	/* the start of the answer */
	size_t		 nbody;
	char		 etag[128];	/* its ETag header */
};

/* curl reads the body. */
static size_t
s3_read_cb(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct s3_io	*io = arg;
	size_t		 want = size * nmemb;
	ssize_t		 n;

	if (want > io->left)
		want = (size_t)io->left;
	if (want == 0)
		return (0);
	if (io->mem != NULL) {
		memcpy(buf, io->mem + io->off, want);
		n = (ssize_t)want;
	} else
		while ((n = pread(io->fd, buf, want, (off_t)io->off)) == -1 &&
		    errno == EINTR)
			;
	if (n <= 0)
		return (CURL_READFUNC_ABORT);	/* the file shrank */
	io->off += (uint64_t)n;
	io->left -= (uint64_t)n;
	return ((size_t)n);
}

/* curl hands over the answer: its start kept, for an error's reason. */
static size_t
s3_write_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct s3_io	*io = arg;
	size_t		 n = size * nmemb, room;

	room = sizeof(io->body) - 1 - io->nbody;
	if (n < room)
		room = n;
	memcpy(io->body + io->nbody, data, room);
	io->nbody += room;
	io->body[io->nbody] = '\0';
	return (n);
}

/* curl hands over each header line: the ETag kept. */
static size_t
s3_header_cb(char *data, size_t size, size_t nmemb, void *arg)
{
	struct s3_io	*io = arg;
	size_t		 n = size * nmemb, len;
	const char	*v;

	if (n > 5 && strncasecmp(data, "etag:", 5) == 0) {
		for (v = data + 5, len = n - 5; len > 0 && (*v == ' ' ||
		    *v == '\t'); v++, len--)
			;
		while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' ||
		    v[len - 1] == ' '))
			len--;
		if (len < sizeof(io->etag))
			snprintf(io->etag, sizeof(io->etag), "%.*s", (int)len, v);
	}
	return (n);
}

/* The text of an S3 answer's tag, or "". */
static void
s3_tag(const char *body, const char *tag, char *out, size_t len)
{
	char		 open[32];
	const char	*p, *e;

	out[0] = '\0';
	snprintf(open, sizeof(open), "<%s>", tag);
	if ((p = strstr(body, open)) == NULL)
		return;
	p += strlen(open);
	if ((e = strchr(p, '<')) == NULL)
		return;
	snprintf(out, len, "%.*s", (int)(e - p), p);
}

/*
 * One signed request: method at url, its body io's (len bytes, whose sha256
 * is given).  Returns 0 on an answer 200 (204: an abort) that holds no S3
 * error (a CompleteMultipartUpload may fail in a 200), else -1 with why.
 */
static int
s3_request(CURL *curl, const struct upload_conf *c, const char *method,
    const char *url, struct s3_io *io, uint64_t len, const char *sha256,
    char *why, size_t wlen)
{
	struct curl_slist	*hdr = NULL;
	char			 line[2200], sigv4[128], code[64], msg[160];
	long			 http = 0;
	CURLcode		 cc;

	io->left = len;
	io->nbody = 0;
	io->body[0] = '\0';
	io->etag[0] = '\0';
	curl_easy_reset(curl);
	snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", c->region);
	snprintf(line, sizeof(line), "x-amz-content-sha256: %s", sha256);
	hdr = curl_slist_append(hdr, line);
	if (c->session_token[0] != '\0') {
		snprintf(line, sizeof(line), "x-amz-security-token: %s",
		    c->session_token);
		hdr = curl_slist_append(hdr, line);
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (strcmp(method, "PUT") == 0) {
		curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE,
		    (curl_off_t)len);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(curl, CURLOPT_POST, 1L);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)len);
		hdr = curl_slist_append(hdr, "Content-Type: application/xml");
	} else
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(curl, CURLOPT_READFUNCTION, s3_read_cb);
	curl_easy_setopt(curl, CURLOPT_READDATA, io);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, s3_write_cb);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, io);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, s3_header_cb);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, io);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4);
	curl_easy_setopt(curl, CURLOPT_USERNAME, c->access_key);
	curl_easy_setopt(curl, CURLOPT_PASSWORD, c->secret_key);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, (long)S3_CONNECT_MS);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, (long)c->stall_s);
	if (c->rate > 0)
		curl_easy_setopt(curl, CURLOPT_MAX_SEND_SPEED_LARGE,
		    (curl_off_t)c->rate);
	cc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &http);
	curl_slist_free_all(hdr);
	if (cc != CURLE_OK) {
		snprintf(why, wlen, "%s", curl_easy_strerror(cc));
		return (-1);
	}
	s3_tag(io->body, "Code", code, sizeof(code));
	if ((http == 200 || http == 204) && strstr(io->body, "<Error>") == NULL)
		return (0);
	s3_tag(io->body, "Message", msg, sizeof(msg));
	snprintf(why, wlen, "HTTP %ld%s%s%s%s", http, code[0] != '\0' ? ": " :
	    "", code, msg[0] != '\0' ? ": " : "", msg);
	return (-1);
}

/* The sha256 (hex) of len bytes of memory. */
static int
s3_hash_mem(const char *p, size_t len, char hex[65])
{
	unsigned char	 out[EVP_MAX_MD_SIZE];
	unsigned int	 mdlen = 0, i;

	if (EVP_Digest(p, len, out, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		return (-1);
	for (i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	return (0);
}

/* Returns 1 if an upload id may go into a query string as it is. */
static int
s3_id_ok(const char *id)
{
	const char	*p;

	if (*id == '\0')
		return (0);
	for (p = id; *p != '\0'; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && strchr("-._~", *p) == NULL)
			return (0);
	return (1);
}

/*
 * The parts of fd (size bytes) put at url as a multipart upload.  Returns
 * 0, or -1 with why (the upload aborted: said too if that failed).
 */
static int
s3_multipart(CURL *curl, const struct upload_conf *c, int fd, uint64_t size,
    const char *url, char *why, size_t wlen)
{
	struct s3_io	 io;
	char		 id[256], u[4096], sha[65], step[300], abort_why[200];
	char		 (*etags)[128] = NULL;
	char		*xml = NULL;
	uint64_t	 nparts, i, off, len, got;
	size_t		 xlen = 0, xcap;
	int		 rc = -1;

	nparts = (size + c->part_size - 1) / c->part_size;
	if (nparts > UPLOAD_PARTS_MAX) {
		snprintf(why, wlen, "the archive needs %llu parts of %llu bytes, "
		    "over S3's %d: raise --upload-part-size",
		    (unsigned long long)nparts,
		    (unsigned long long)c->part_size, UPLOAD_PARTS_MAX);
		return (-1);
	}
	memset(&io, 0, sizeof(io));
	io.fd = fd;
	snprintf(u, sizeof(u), "%s?uploads=", url);
	if (s3_request(curl, c, "POST", u, &io, 0, S3_EMPTY_SHA256, step,
	    sizeof(step)) == -1) {
		snprintf(why, wlen, "create multipart upload: %s", step);
		return (-1);
	}
	s3_tag(io.body, "UploadId", id, sizeof(id));
	if (!s3_id_ok(id)) {
		snprintf(why, wlen, "create multipart upload: no usable "
		    "UploadId in the answer");
		return (-1);
	}
	xcap = 128 + (size_t)nparts * 200;
	if ((etags = calloc((size_t)nparts, sizeof(*etags))) == NULL ||
	    (xml = malloc(xcap)) == NULL) {
		snprintf(why, wlen, "out of memory");
		goto abort;
	}
	for (i = 0; i < nparts; i++) {
		off = i * c->part_size;
		len = size - off < c->part_size ? size - off : c->part_size;
		if (trace_pack_sha256(fd, off, len, sha, &got) == -1) {
			snprintf(why, wlen, "part %llu: the archive does not "
			    "read back", (unsigned long long)i + 1);
			goto abort;
		}
		snprintf(u, sizeof(u), "%s?partNumber=%llu&uploadId=%s", url,
		    (unsigned long long)i + 1, id);
		io.mem = NULL;
		io.off = off;
		if (s3_request(curl, c, "PUT", u, &io, len, sha, step,
		    sizeof(step)) == -1) {
			snprintf(why, wlen, "part %llu of %llu: %s",
			    (unsigned long long)i + 1,
			    (unsigned long long)nparts, step);
			goto abort;
		}
		if (io.etag[0] == '\0' || strpbrk(io.etag, "<>&") != NULL) {
			snprintf(why, wlen, "part %llu: no usable ETag in the "
			    "answer", (unsigned long long)i + 1);
			goto abort;
		}
		snprintf(etags[i], sizeof(etags[i]), "%s", io.etag);
	}
	xlen = (size_t)snprintf(xml, xcap, "<CompleteMultipartUpload>");
	for (i = 0; i < nparts; i++)
		xlen += (size_t)snprintf(xml + xlen, xcap - xlen, "<Part>"
		    "<PartNumber>%llu</PartNumber><ETag>%s</ETag></Part>",
		    (unsigned long long)i + 1, etags[i]);
	xlen += (size_t)snprintf(xml + xlen, xcap - xlen,
	    "</CompleteMultipartUpload>");
	if (s3_hash_mem(xml, xlen, sha) == -1) {
		snprintf(why, wlen, "sha256 unavailable");
		goto abort;
	}
	snprintf(u, sizeof(u), "%s?uploadId=%s", url, id);
	io.mem = xml;
	io.off = 0;
	if (s3_request(curl, c, "POST", u, &io, xlen, sha, step,
	    sizeof(step)) == -1) {
		snprintf(why, wlen, "complete multipart upload: %s", step);
		goto abort;
	}
	rc = 0;
	goto done;
abort:
	snprintf(u, sizeof(u), "%s?uploadId=%s", url, id);
	io.mem = NULL;
	if (s3_request(curl, c, "DELETE", u, &io, 0, S3_EMPTY_SHA256,
	    abort_why, sizeof(abort_why)) == -1) {
		len = strlen(why);
		snprintf(why + len, wlen - len, " (abort: %s)", abort_why);
	}
done:
	free(etags);
	free(xml);
	return (rc);
}

/*
 * Puts fd (a regular file of size bytes, whose sha256 is given) at url: in
 * one PUT, or in parts over c->part_size.  Returns 0, or -1 with why.
 */
int
trace_s3_put(const struct upload_conf *c, int fd, uint64_t size,
    const char *url, const char *sha256, char *why, size_t wlen)
{
	struct s3_io	 io;
	CURL		*curl;
	int		 rc;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (curl = curl_easy_init()) == NULL) {
		snprintf(why, wlen, "curl: cannot start");
		return (-1);
	}
	if (size > c->part_size)
		rc = s3_multipart(curl, c, fd, size, url, why, wlen);
	else {
		memset(&io, 0, sizeof(io));
		io.fd = fd;
		rc = s3_request(curl, c, "PUT", url, &io, size, sha256, why,
		    wlen);
	}
	curl_easy_cleanup(curl);
	return (rc);
}
