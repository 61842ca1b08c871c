/*
 * dynprofctl fetch: a window's collected traces brought to this machine
 * (docs/traces.md).  The index (GET /v1/jobs/J/windows/W/traces) says where
 * each rank's archive is; each is copied into DIR as rank-N.tar.zst while
 * its sha256 is computed, written as .rank-N.tar.zst.part and renamed into
 * place only when the hash is the one the agent reported.  A location is a
 * path (the shared trace store, mounted here too), an http(s) URL, or
 * s3://bucket/key, read from --s3-endpoint with the operator's own
 * credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY) when both are
 * given, each request signed by libcurl (CURLOPT_AWS_SIGV4), else from the
 * presigned URL the index gives beside it (a coordinator with
 * --s3-endpoint).
 *
 * A location is what an agent said, and neither it nor the coordinator is
 * trusted here: a path must name a regular file (a FIFO, a device or a
 * directory is refused without blocking on it), no archive is written past
 * the size the agent reported, and a download that stalls is given up.
 *
 * A checked archive is then unpacked into DIR/rank-N/ (ctl_unpack.c), the
 * archive kept beside it: it is what the hash speaks for, and what a user
 * hands on.  --no-unpack keeps the archives only.
 */

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "ctl.h"
#include "ranklist.h"

/* A download under this many bytes/s for this long is given up. */
#define CTL_FETCH_LOW_SPEED	1L
#define CTL_FETCH_LOW_SPEED_S	30L	/* --stall's default */

/* One archive being written. */
struct ctl_fetch_out {
	int		 fd;
	EVP_MD_CTX	*md;
	uint64_t	 bytes;
	uint64_t	 limit;		/* the size the agent reported */
	long		 stall_s;	/* under 1 byte/s this long: given up */
	int		 failed;	/* a write or the hash failed */
	int		 over;		/* more bytes than the limit came */
};

/* Writes len bytes of an archive and hashes them.  Returns 0 or -1. */
static int
ctl_fetch_put(struct ctl_fetch_out *o, const void *buf, size_t len)
{
	const char	*p = buf;
	ssize_t		 n;
	size_t		 left = len;

	if (len > o->limit - o->bytes) {
		o->over = 1;
		return (o->failed = -1);
	}
	if (EVP_DigestUpdate(o->md, buf, len) != 1)
		return (o->failed = -1);
	while (left > 0) {
		if ((n = write(o->fd, p, left)) == -1) {
			if (errno == EINTR)
				continue;
			return (o->failed = -1);
		}
		p += n;
		left -= (size_t)n;
	}
	o->bytes += len;
	return (0);
}

/* curl's write callback: into the archive. */
static size_t
ctl_fetch_curl_write(char *data, size_t size, size_t nmemb, void *arg)
{
	return (ctl_fetch_put(arg, data, size * nmemb) == 0 ? size * nmemb :
	    0);
}

/* Copies the archive at path (a file this machine reads).  0 or -1, why. */
static int
ctl_fetch_file(const char *path, struct ctl_fetch_out *o, char *why,
    size_t len)
{
	char		 buf[1 << 16];
	struct stat	 st;
	ssize_t		 n;
	int		 fd;

	/* O_NONBLOCK: a FIFO's open does not wait for a writer. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY)) == -1) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return (-1);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s: %s", path, S_ISREG(st.st_mode) ?
		    strerror(errno) : "not a regular file");
		close(fd);
		return (-1);
	}
	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 || ctl_fetch_put(o, buf, (size_t)n) == -1) {
			snprintf(why, len, "%s: %s", path, strerror(errno));
			close(fd);
			return (-1);
		}
	}
	close(fd);
	return (0);
}

/* Where and how to read s3:// locations. */
struct ctl_fetch_s3 {
	const char	*endpoint;	/* NULL: no --s3-endpoint */
	const char	*region;
	const char	*key;
	const char	*secret;
	const char	*token;		/* NULL: none */
};

/* The sha256 of an empty body: what a GET signs as its payload. */
#define CTL_FETCH_EMPTY_SHA256 \
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* Downloads the archive at url (signed for s3 unless NULL).  Returns 0, or
 * -1 with why. */
static int
ctl_fetch_url(struct ctl *ctl, const char *url, const struct ctl_fetch_s3 *s3,
    struct ctl_fetch_out *o, char *why, size_t len)
{
	CURL			*curl;
	CURLcode		 cc;
	struct curl_slist	*hdr = NULL;
	char			 sigv4[128], line[2200];
	long			 status = 0;

	if ((curl = curl_easy_init()) == NULL) {
		snprintf(why, len, "curl_easy_init failed");
		return (-1);
	}
	if (s3 != NULL) {
		snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", s3->region);
		hdr = curl_slist_append(hdr, "x-amz-content-sha256: "
		    CTL_FETCH_EMPTY_SHA256);
		if (s3->token != NULL) {
			snprintf(line, sizeof(line), "x-amz-security-token: %s",
			    s3->token);
			hdr = curl_slist_append(hdr, line);
		}
		curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4);
		curl_easy_setopt(curl, CURLOPT_USERNAME, s3->key);
		curl_easy_setopt(curl, CURLOPT_PASSWORD, s3->secret);
	}
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ctl_fetch_curl_write);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, o);
	curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, CTL_FETCH_LOW_SPEED);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, o->stall_s);
	curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)o->limit);
	if (ctl->conn.cacert != NULL)
		curl_easy_setopt(curl, CURLOPT_CAINFO, ctl->conn.cacert);
	cc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(curl);
	curl_slist_free_all(hdr);
	if (cc != CURLE_OK) {
		snprintf(why, len, "%s: %s (HTTP %ld)", url,
		    curl_easy_strerror(cc), status);
		return (-1);
	}
	return (0);
}

/* How fetch was asked to fetch. */
struct ctl_fetch_opts {
	long		 stall_s;	/* under 1 byte/s this long: given up */
	int		 unpack;	/* 0: --no-unpack */
	int		 force;		/* replace an existing DIR/rank-N */
};

/*
 * Fetches one rank's archive (entry e of the index) into dirfd as
 * rank-N.tar.zst, checked against its sha256, and unpacks it into rank-N/
 * unless --no-unpack.  Returns 0, or -1 (said).
 */
static int
ctl_fetch_one(struct ctl *ctl, int dirfd, const char *dir, json_t *e,
    const struct ctl_fetch_s3 *s3, const struct ctl_fetch_opts *opts)
{
	struct ctl_fetch_out	 o = { -1, NULL, 0, 0, opts->stall_s, 0, 0 };
	const char		*where = ctl_json_str(e, "location", "");
	const char		*want = ctl_json_str(e, "sha256", "");
	const char		*signed_url = ctl_json_str(e, "url", "");
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen = 0, i;
	char			 name[64], part[80], got[65], why[1024];
	char			 url[2048];
	long long		 rank = ctl_json_int(e, "rank", -1);
	long long		 size = ctl_json_int(e, "size", -1);
	size_t			 files = 0;
	int			 rc = -1;

	snprintf(name, sizeof(name), "rank-%lld.tar.zst", rank);
	snprintf(part, sizeof(part), ".%s.part", name);
	why[0] = '\0';
	if (size < 0) {
		ctl_errx(ctl, "fetch: rank %lld: no size in the index", rank);
		return (-1);
	}
	o.limit = (uint64_t)size;
	(void)unlinkat(dirfd, part, 0);
	if ((o.fd = openat(dirfd, part, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0644)) == -1) {
		ctl_errx(ctl, "fetch: rank %lld: %s/%s: %s", rank, dir, part,
		    strerror(errno));
		return (-1);
	}
	if ((o.md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(o.md, EVP_sha256(), NULL) != 1)
		snprintf(why, sizeof(why), "cannot hash");
	else if (where[0] == '/')
		(void)ctl_fetch_file(where, &o, why, sizeof(why));
	else if (strncmp(where, "http://", 7) == 0 ||
	    strncmp(where, "https://", 8) == 0)
		(void)ctl_fetch_url(ctl, where, NULL, &o, why, sizeof(why));
	else if (strncmp(where, "s3://", 5) == 0 &&
	    (s3->endpoint == NULL || s3->key == NULL) &&
	    (strncmp(signed_url, "http://", 7) == 0 ||
	    strncmp(signed_url, "https://", 8) == 0))
		(void)ctl_fetch_url(ctl, signed_url, NULL, &o, why,
		    sizeof(why));
	else if (strncmp(where, "s3://", 5) == 0 && s3->endpoint == NULL)
		snprintf(why, sizeof(why), "%s: give the object store's "
		    "--s3-endpoint (or $DYNPROF_S3_ENDPOINT)", where);
	else if (strncmp(where, "s3://", 5) == 0 && s3->key == NULL)
		snprintf(why, sizeof(why), "%s: no credentials (set "
		    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", where);
	else if (strncmp(where, "s3://", 5) == 0) {
		snprintf(url, sizeof(url), "%s/%s", s3->endpoint, where + 5);
		(void)ctl_fetch_url(ctl, url, s3, &o, why, sizeof(why));
	} else
		snprintf(why, sizeof(why), "a location this dynprofctl cannot "
		    "read: %s", where);
	if (o.over)
		snprintf(why, sizeof(why), "%s: more than the %llu bytes the "
		    "agent reported: not kept", where, (unsigned long long)size);
	else if (why[0] == '\0' && o.failed)
		snprintf(why, sizeof(why), "%s/%s: %s", dir, part,
		    strerror(errno));
	if (why[0] == '\0' && (fsync(o.fd) == -1 ||
	    EVP_DigestFinal_ex(o.md, md, &mdlen) != 1 || mdlen != 32))
		snprintf(why, sizeof(why), "%s/%s: %s", dir, part,
		    strerror(errno));
	close(o.fd);
	EVP_MD_CTX_free(o.md);
	if (why[0] == '\0') {
		for (i = 0; i < mdlen; i++)
			snprintf(got + 2 * i, 3, "%02x", md[i]);
		if (strcmp(got, want) != 0)
			snprintf(why, sizeof(why), "sha256 mismatch: %s has "
			    "%s, the agent reported %s: not kept", where, got,
			    want);
		else if (o.bytes != o.limit)
			snprintf(why, sizeof(why), "size mismatch: %llu bytes, "
			    "the agent reported %lld: not kept",
			    (unsigned long long)o.bytes, size);
		else if (renameat(dirfd, part, dirfd, name) == -1)
			snprintf(why, sizeof(why), "%s/%s: %s", dir, name,
			    strerror(errno));
		else
			rc = 0;
	}
	if (rc == -1) {
		(void)unlinkat(dirfd, part, 0);
		ctl_errx(ctl, "fetch: rank %lld: %s", rank, why);
		return (-1);
	}
	if (opts->unpack && ctl_unpack_rank(ctl, dirfd, dir, name, rank,
	    opts->force, &files, why, sizeof(why)) == -1) {
		ctl_errx(ctl, "fetch: rank %lld: %s/%s: %s: not unpacked", rank,
		    dir, name, why);
		return (-1);
	}
	if (!ctl->json && opts->unpack)
		fprintf(ctl->out, "rank %lld: %s/%s, %llu bytes, sha256 %s "
		    "checked, unpacked into %s/rank-%lld/ (%zu files)\n", rank,
		    dir, name, (unsigned long long)o.bytes, got, dir, rank,
		    files);
	else if (!ctl->json)
		fprintf(ctl->out, "rank %lld: %s/%s, %llu bytes, sha256 %s "
		    "checked\n", rank, dir, name,
		    (unsigned long long)o.bytes, got);
	return (0);
}

/*
 * dynprofctl fetch JOB WINDOW [--out DIR] [--ranks LIST] [--s3-endpoint URL]
 * [--s3-region R] [--stall S] [--no-unpack] [--force]
 */
int
ctl_cmd_fetch(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_fetch_s3 s3;
	struct ctl_fetch_opts opts = { CTL_FETCH_LOW_SPEED_S, 1, 0 };
	struct rank_set	 only;
	const char	*dir = ".", *ranks = NULL, *why, *state;
	json_t		*doc, *e;
	char		 path[200];
	int64_t		 id, v;
	size_t		 i;
	int		 a, rc, dirfd, nok = 0, nbad = 0, nmissing = 0;

	memset(&s3, 0, sizeof(s3));
	s3.endpoint = getenv("DYNPROF_S3_ENDPOINT");
	s3.region = getenv("AWS_REGION");
	if (s3.region == NULL || *s3.region == '\0')
		s3.region = "us-east-1";
	s3.key = getenv("AWS_ACCESS_KEY_ID");
	s3.secret = getenv("AWS_SECRET_ACCESS_KEY");
	s3.token = getenv("AWS_SESSION_TOKEN");
	if (s3.key != NULL && (*s3.key == '\0' || s3.secret == NULL))
		s3.key = NULL;
	if (s3.token != NULL && *s3.token == '\0')
		s3.token = NULL;
	for (a = 3; a < argc; a++) {
		if (strcmp(argv[a], "--s3-endpoint") == 0 && a + 1 < argc)
			s3.endpoint = argv[++a];
		else if (strcmp(argv[a], "--s3-region") == 0 && a + 1 < argc)
			s3.region = argv[++a];
		else if ((strcmp(argv[a], "--out") == 0 ||
		    strcmp(argv[a], "-o") == 0) && a + 1 < argc)
			dir = argv[++a];
		else if (strcmp(argv[a], "--ranks") == 0 && a + 1 < argc)
			ranks = argv[++a];
		else if (strcmp(argv[a], "--stall") == 0 && a + 1 < argc) {
			if (ctl_parse_int64(argv[++a], 1, 3600, &v) == -1) {
				ctl_errx(ctl, "fetch: --stall: seconds from 1 to "
				    "3600, not \"%s\"", argv[a]);
				return (CTL_USAGE);
			}
			opts.stall_s = (long)v;
		} else if (strcmp(argv[a], "--no-unpack") == 0)
			opts.unpack = 0;
		else if (strcmp(argv[a], "--force") == 0)
			opts.force = 1;
		else {
			ctl_errx(ctl, "fetch: unexpected argument %s", argv[a]);
			return (CTL_USAGE);
		}
	}
	if (argc < 3) {
		ctl_errx(ctl, "fetch: missing JOB or WINDOW");
		return (CTL_USAGE);
	}
	if (ctl_check_job(ctl, argv[1]) == -1)
		return (CTL_EXIT_REFUSED);
	if (ctl_parse_int64(argv[2], 1, UINT32_MAX, &id) == -1) {
		ctl_errx(ctl, "fetch: WINDOW must be a window id (a positive "
		    "integer), not \"%s\"", argv[2]);
		return (CTL_USAGE);
	}
	if (ranks != NULL && ranks_parse(ranks, &only, &why) == -1) {
		ctl_errx(ctl, "fetch: --ranks %s: %s", ranks, why);
		return (CTL_USAGE);
	}
	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		ctl_errx(ctl, "fetch: %s: %s", dir, strerror(errno));
		return (CTL_EXIT_REFUSED);
	}
	if ((dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		ctl_errx(ctl, "fetch: %s: %s", dir, strerror(errno));
		return (CTL_EXIT_REFUSED);
	}
	snprintf(path, sizeof(path), "/v1/jobs/%s/windows/%lld/traces",
	    argv[1], (long long)id);
	if ((rc = ctl_get(ctl, path, &doc)) != CTL_EXIT_OK) {
		close(dirfd);
		return (rc);
	}
	json_array_foreach(json_object_get(doc, "traces"), i, e) {
		if (ranks != NULL && !ranks_contains(&only,
		    (int32_t)ctl_json_int(e, "rank", -1)))
			continue;
		state = ctl_json_str(e, "state", "");
		if (strcmp(state, "collected") == 0) {
			if (ctl_fetch_one(ctl, dirfd, dir, e, &s3, &opts) == 0)
				nok++;
			else
				nbad++;
		} else {
			nmissing++;
			ctl_errx(ctl, "fetch: rank %lld: %s%s%s",
			    (long long)ctl_json_int(e, "rank", -1), state,
			    json_object_get(e, "error") != NULL ? ": " : "",
			    ctl_json_str(e, "error", ""));
		}
	}
	json_decref(doc);
	close(dirfd);
	if (!ctl->json)
		fprintf(ctl->out, "window %lld of job %s: %d traces fetched "
		    "into %s, %d failed, %d not collected\n", (long long)id,
		    argv[1], nok, dir, nbad, nmissing);
	return (nbad > 0 || nmissing > 0 || nok == 0 ? CTL_EXIT_REFUSED :
	    CTL_EXIT_OK);
}
