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
 * Downloads run through one curl multi handle, at most --jobs at once, in
 * this one thread; a copy from a path is made in the same loop, one after
 * the other.  A checked archive is then unpacked into DIR/rank-N/
 * (ctl_unpack.c) as soon as it is complete, the archive kept beside it: it
 * is what the hash speaks for, and what a user hands on.  --no-unpack keeps
 * the archives only.  On a terminal a progress bar says how far it got.
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

#define CTL_FETCH_JOBS		4	/* --jobs's default: downloads at once */
#define CTL_FETCH_JOBS_MAX	64

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

/* How fetch was asked to fetch. */
struct ctl_fetch_opts {
	long		 stall_s;	/* under 1 byte/s this long: given up */
	int		 unpack;	/* 0: --no-unpack */
	int		 force;		/* replace an existing DIR/rank-N */
	int		 jobs;		/* --jobs: downloads at once */
};

/* One rank being fetched. */
struct ctl_fetch_rank {
	struct ctl_fetch_out	 o;
	json_t			*e;		/* its entry in the index */
	long long		 rank;
	long long		 size;
	CURL			*curl;		/* NULL: not a download */
	struct curl_slist	*hdr;
	const char		*url;		/* what curl reads */
	char			 s3url[2048];
	char			 name[64];
	char			 part[80];
	char			 why[1024];
};

/* The whole fetch: the ranks, and what the progress bar shows. */
struct ctl_fetch {
	struct ctl		*ctl;
	int			 dirfd;
	const char		*dir;
	const struct ctl_fetch_s3	*s3;
	const struct ctl_fetch_opts	*opts;
	struct ctl_fetch_rank	*ranks;
	size_t			 nranks;
	uint64_t		 total;		/* bytes the index gives */
	uint64_t		 done_bytes;	/* of ranks no longer running */
	int			 nok;
	int			 nbad;
	int64_t			 t0_ms;
	int64_t			 drawn_ms;	/* the bar last drawn */
};

#define CTL_FETCH_BAR_MS	100	/* the progress bar at most this often */

/* Clears the progress bar before a line is printed. */
static void
ctl_fetch_bar_clear(struct ctl *ctl)
{
	if (!ctl->line_open)
		return;
	fputs("\r\033[K", ctl->out);
	fflush(ctl->out);
	ctl->line_open = 0;
}

/* Writes n bytes into buf as "12.3 MiB". */
static void
ctl_fetch_human(double n, char *buf, size_t len)
{
	static const char	*unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	size_t			 u = 0;

	while (n >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		n /= 1024;
		u++;
	}
	snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", n, unit[u]);
}

/* Draws the progress bar on a terminal, at most every CTL_FETCH_BAR_MS
 * unless force. */
static void
ctl_fetch_bar(struct ctl_fetch *f, int force)
{
	struct ctl	*ctl = f->ctl;
	uint64_t	 bytes = f->done_bytes;
	int64_t		 now = ctl_now_ms();
	double		 s;
	char		 done[32], total[32], rate[32];
	size_t		 i;

	if (!ctl->tty || ctl->json || f->nranks == 0 ||
	    (!force && now - f->drawn_ms < CTL_FETCH_BAR_MS))
		return;
	f->drawn_ms = now;
	for (i = 0; i < f->nranks; i++)
		if (f->ranks[i].curl != NULL)
			bytes += f->ranks[i].o.bytes;
	s = (double)(now - f->t0_ms) / 1000;
	ctl_fetch_human((double)bytes, done, sizeof(done));
	ctl_fetch_human((double)f->total, total, sizeof(total));
	ctl_fetch_human(s > 0 ? (double)bytes / s : 0, rate, sizeof(rate));
	fprintf(ctl->out, "\rfetching: %s of %s, %d/%zu ranks done, %d failed, "
	    "%s/s\033[K", done, total, f->nok, f->nranks, f->nbad, rate);
	fflush(ctl->out);
	ctl->line_open = 1;
}

/* Sets up the download of r->url (signed for s3 unless NULL) as r->curl.
 * Returns 0, or -1 with r->why. */
static int
ctl_fetch_url(struct ctl_fetch *f, struct ctl_fetch_rank *r,
    const struct ctl_fetch_s3 *s3)
{
	CURL			*curl;
	char			 sigv4[128], line[2200];

	if ((curl = curl_easy_init()) == NULL) {
		snprintf(r->why, sizeof(r->why), "curl_easy_init failed");
		return (-1);
	}
	if (s3 != NULL) {
		snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3", s3->region);
		r->hdr = curl_slist_append(r->hdr, "x-amz-content-sha256: "
		    CTL_FETCH_EMPTY_SHA256);
		if (s3->token != NULL) {
			snprintf(line, sizeof(line), "x-amz-security-token: %s",
			    s3->token);
			r->hdr = curl_slist_append(r->hdr, line);
		}
		curl_easy_setopt(curl, CURLOPT_HTTPHEADER, r->hdr);
		curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4);
		curl_easy_setopt(curl, CURLOPT_USERNAME, s3->key);
		curl_easy_setopt(curl, CURLOPT_PASSWORD, s3->secret);
	}
	curl_easy_setopt(curl, CURLOPT_URL, r->url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, ctl_fetch_curl_write);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r->o);
	curl_easy_setopt(curl, CURLOPT_PRIVATE, r);
	curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, CTL_FETCH_LOW_SPEED);
	curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, r->o.stall_s);
	curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)r->o.limit);
	if (f->ctl->conn.cacert != NULL)
		curl_easy_setopt(curl, CURLOPT_CAINFO, f->ctl->conn.cacert);
	r->curl = curl;
	return (0);
}

/*
 * Starts fetching rank r (entry r->e of the index) into dirfd as
 * .rank-N.tar.zst.part, hashed as it is written: a path is copied here and
 * now, a URL is left in r->curl for the caller to run.  Returns 0, or -1
 * with r->why (ctl_fetch_end says it).
 */
static int
ctl_fetch_begin(struct ctl_fetch *f, struct ctl_fetch_rank *r)
{
	const struct ctl_fetch_s3 *s3 = f->s3;
	const char		*where = ctl_json_str(r->e, "location", "");
	const char		*signed_url = ctl_json_str(r->e, "url", "");

	snprintf(r->name, sizeof(r->name), "rank-%lld.tar.zst", r->rank);
	snprintf(r->part, sizeof(r->part), ".%s.part", r->name);
	(void)unlinkat(f->dirfd, r->part, 0);
	if ((r->o.fd = openat(f->dirfd, r->part, O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0644)) == -1) {
		snprintf(r->why, sizeof(r->why), "%s/%s: %s", f->dir, r->part,
		    strerror(errno));
		return (-1);
	}
	if ((r->o.md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(r->o.md, EVP_sha256(), NULL) != 1)
		snprintf(r->why, sizeof(r->why), "cannot hash");
	else if (where[0] == '/')
		(void)ctl_fetch_file(where, &r->o, r->why, sizeof(r->why));
	else if (strncmp(where, "http://", 7) == 0 ||
	    strncmp(where, "https://", 8) == 0) {
		r->url = where;
		(void)ctl_fetch_url(f, r, NULL);
	} else if (strncmp(where, "s3://", 5) == 0 &&
	    (s3->endpoint == NULL || s3->key == NULL) &&
	    (strncmp(signed_url, "http://", 7) == 0 ||
	    strncmp(signed_url, "https://", 8) == 0)) {
		r->url = signed_url;
		(void)ctl_fetch_url(f, r, NULL);
	} else if (strncmp(where, "s3://", 5) == 0 && s3->endpoint == NULL)
		snprintf(r->why, sizeof(r->why), "%s: give the object store's "
		    "--s3-endpoint (or $DYNPROF_S3_ENDPOINT)", where);
	else if (strncmp(where, "s3://", 5) == 0 && s3->key == NULL)
		snprintf(r->why, sizeof(r->why), "%s: no credentials (set "
		    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)", where);
	else if (strncmp(where, "s3://", 5) == 0) {
		snprintf(r->s3url, sizeof(r->s3url), "%s/%s", s3->endpoint,
		    where + 5);
		r->url = r->s3url;
		(void)ctl_fetch_url(f, r, s3);
	} else
		snprintf(r->why, sizeof(r->why), "a location this dynprofctl "
		    "cannot read: %s", where);
	return (r->why[0] == '\0' ? 0 : -1);
}

/*
 * Ends rank r's fetch (its download done with cc, or its copy made): checks
 * its size and sha256, renames it into place as rank-N.tar.zst and unpacks
 * it into rank-N/ unless --no-unpack; says how it went.  Returns 0 or -1.
 */
static int
ctl_fetch_end(struct ctl_fetch *f, struct ctl_fetch_rank *r, CURLcode cc)
{
	struct ctl		*ctl = f->ctl;
	const char		*where = ctl_json_str(r->e, "location", "");
	const char		*want = ctl_json_str(r->e, "sha256", "");
	const char		*dir = f->dir;
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen = 0, i;
	char			*why = r->why, got[65];
	size_t			 len = sizeof(r->why), files = 0;
	long			 status = 0;
	int			 rc = -1;

	got[0] = '\0';
	if (r->curl != NULL) {
		curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &status);
		if (cc != CURLE_OK && why[0] == '\0' && !r->o.over)
			snprintf(why, len, "%s: %s (HTTP %ld)", r->url,
			    curl_easy_strerror(cc), status);
		curl_easy_cleanup(r->curl);
		curl_slist_free_all(r->hdr);
		r->curl = NULL;
		r->hdr = NULL;
	}
	f->done_bytes += r->o.bytes;
	if (r->o.over)
		snprintf(why, len, "%s: more than the %llu bytes the agent "
		    "reported: not kept", where, (unsigned long long)r->size);
	else if (why[0] == '\0' && r->o.failed)
		snprintf(why, len, "%s/%s: %s", dir, r->part, strerror(errno));
	if (why[0] == '\0' && (fsync(r->o.fd) == -1 ||
	    EVP_DigestFinal_ex(r->o.md, md, &mdlen) != 1 || mdlen != 32))
		snprintf(why, len, "%s/%s: %s", dir, r->part, strerror(errno));
	if (r->o.fd != -1)
		close(r->o.fd);
	r->o.fd = -1;
	EVP_MD_CTX_free(r->o.md);
	r->o.md = NULL;
	if (why[0] == '\0') {
		for (i = 0; i < mdlen; i++)
			snprintf(got + 2 * i, 3, "%02x", md[i]);
		if (strcmp(got, want) != 0)
			snprintf(why, len, "sha256 mismatch: %s has %s, the "
			    "agent reported %s: not kept", where, got, want);
		else if (r->o.bytes != r->o.limit)
			snprintf(why, len, "size mismatch: %llu bytes, the "
			    "agent reported %lld: not kept",
			    (unsigned long long)r->o.bytes, r->size);
		else if (renameat(f->dirfd, r->part, f->dirfd, r->name) == -1)
			snprintf(why, len, "%s/%s: %s", dir, r->name,
			    strerror(errno));
		else
			rc = 0;
	}
	ctl_fetch_bar_clear(ctl);
	if (rc == -1) {
		(void)unlinkat(f->dirfd, r->part, 0);
		ctl_errx(ctl, "fetch: rank %lld: %s", r->rank, why);
		return (-1);
	}
	if (f->opts->unpack && ctl_unpack_rank(ctl, f->dirfd, dir, r->name,
	    r->rank, f->opts->force, &files, why, len) == -1) {
		ctl_fetch_bar_clear(ctl);
		ctl_errx(ctl, "fetch: rank %lld: %s/%s: %s: not unpacked",
		    r->rank, dir, r->name, why);
		return (-1);
	}
	ctl_fetch_bar_clear(ctl);
	if (!ctl->json && f->opts->unpack)
		fprintf(ctl->out, "rank %lld: %s/%s, %llu bytes, sha256 %s "
		    "checked, unpacked into %s/rank-%lld/ (%zu files)\n",
		    r->rank, dir, r->name, (unsigned long long)r->o.bytes, got,
		    dir, r->rank, files);
	else if (!ctl->json)
		fprintf(ctl->out, "rank %lld: %s/%s, %llu bytes, sha256 %s "
		    "checked\n", r->rank, dir, r->name,
		    (unsigned long long)r->o.bytes, got);
	return (0);
}

/* Ends rank r and counts how it went; the bar redrawn. */
static void
ctl_fetch_count(struct ctl_fetch *f, struct ctl_fetch_rank *r, CURLcode cc)
{
	if (ctl_fetch_end(f, r, cc) == 0)
		f->nok++;
	else
		f->nbad++;
	ctl_fetch_bar(f, 0);
}

/*
 * Fetches every rank of f: downloads through one curl multi handle, at most
 * --jobs at once, each checked and unpacked as it completes; copies from a
 * path made one after the other in this loop.  Returns 0, or -1 if curl
 * itself failed (said; the ranks not done counted failed).
 */
static int
ctl_fetch_run(struct ctl_fetch *f)
{
	struct ctl_fetch_rank	*r;
	CURLM			*multi;
	CURLMsg			*msg;
	CURLMcode		 mc = CURLM_OK;
	size_t			 next = 0, i;
	char			*priv;
	int			 running = 0, still, left;

	if ((multi = curl_multi_init()) == NULL) {
		ctl_errx(f->ctl, "fetch: curl_multi_init failed");
		f->nbad += (int)f->nranks;
		return (-1);
	}
	f->t0_ms = ctl_now_ms();
	ctl_fetch_bar(f, 1);
	while (next < f->nranks || running > 0) {
		while (running < f->opts->jobs && next < f->nranks) {
			r = &f->ranks[next++];
			if (ctl_fetch_begin(f, r) == -1 || r->curl == NULL)
				ctl_fetch_count(f, r, CURLE_OK);
			else if ((mc = curl_multi_add_handle(multi, r->curl)) !=
			    CURLM_OK) {
				snprintf(r->why, sizeof(r->why), "%s: %s",
				    r->url, curl_multi_strerror(mc));
				ctl_fetch_count(f, r, CURLE_OK);
			} else
				running++;
		}
		if ((mc = curl_multi_perform(multi, &still)) != CURLM_OK)
			break;
		while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			priv = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
			    &priv);
			r = (struct ctl_fetch_rank *)(void *)priv;
			curl_multi_remove_handle(multi, r->curl);
			running--;
			ctl_fetch_count(f, r, msg->data.result);
		}
		ctl_fetch_bar(f, 0);
		if (running > 0 && (mc = curl_multi_poll(multi, NULL, 0,
		    CTL_FETCH_BAR_MS, NULL)) != CURLM_OK)
			break;
	}
	if (mc != CURLM_OK) {
		ctl_fetch_bar_clear(f->ctl);
		ctl_errx(f->ctl, "fetch: %s", curl_multi_strerror(mc));
		for (i = 0; i < next; i++)
			if ((r = &f->ranks[i])->curl != NULL) {
				curl_multi_remove_handle(multi, r->curl);
				snprintf(r->why, sizeof(r->why), "%s: %s",
				    r->url, curl_multi_strerror(mc));
				ctl_fetch_count(f, r, CURLE_OK);
			}
		f->nbad += (int)(f->nranks - next);
	}
	curl_multi_cleanup(multi);
	ctl_fetch_bar_clear(f->ctl);
	return (mc == CURLM_OK ? 0 : -1);
}

/*
 * dynprofctl fetch JOB WINDOW [--out DIR] [--ranks LIST] [--jobs N]
 * [--s3-endpoint URL] [--s3-region R] [--stall S] [--no-unpack] [--force]
 */
int
ctl_cmd_fetch(struct ctl *ctl, int argc, char **argv)
{
	struct ctl_fetch_s3 s3;
	struct ctl_fetch_opts opts = { CTL_FETCH_LOW_SPEED_S, 1, 0,
			    CTL_FETCH_JOBS };
	struct ctl_fetch f;
	struct ctl_fetch_rank *r;
	struct rank_set	 only;
	const char	*dir = ".", *ranks = NULL, *why, *state;
	json_t		*doc, *e, *list;
	char		 path[200];
	int64_t		 id, v;
	size_t		 i;
	int		 a, rc, dirfd, nmissing = 0;

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
		} else if (strcmp(argv[a], "--jobs") == 0 && a + 1 < argc) {
			if (ctl_parse_int64(argv[++a], 1, CTL_FETCH_JOBS_MAX,
			    &v) == -1) {
				ctl_errx(ctl, "fetch: --jobs: downloads at once, "
				    "from 1 to %d, not \"%s\"",
				    CTL_FETCH_JOBS_MAX, argv[a]);
				return (CTL_USAGE);
			}
			opts.jobs = (int)v;
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
	memset(&f, 0, sizeof(f));
	f.ctl = ctl;
	f.dirfd = dirfd;
	f.dir = dir;
	f.s3 = &s3;
	f.opts = &opts;
	list = json_object_get(doc, "traces");
	if ((f.ranks = calloc(json_array_size(list) + 1,
	    sizeof(*f.ranks))) == NULL) {
		ctl_errx(ctl, "fetch: %s", strerror(errno));
		json_decref(doc);
		close(dirfd);
		return (CTL_EXIT_REFUSED);
	}
	json_array_foreach(list, i, e) {
		if (ranks != NULL && !ranks_contains(&only,
		    (int32_t)ctl_json_int(e, "rank", -1)))
			continue;
		state = ctl_json_str(e, "state", "");
		if (strcmp(state, "collected") == 0 &&
		    ctl_json_int(e, "size", -1) < 0) {
			f.nbad++;
			ctl_errx(ctl, "fetch: rank %lld: no size in the index",
			    (long long)ctl_json_int(e, "rank", -1));
		} else if (strcmp(state, "collected") == 0) {
			r = &f.ranks[f.nranks++];
			r->e = e;
			r->rank = ctl_json_int(e, "rank", -1);
			r->size = ctl_json_int(e, "size", -1);
			r->o.fd = -1;
			r->o.limit = (uint64_t)r->size;
			r->o.stall_s = opts.stall_s;
			f.total += r->o.limit;
		} else {
			nmissing++;
			ctl_errx(ctl, "fetch: rank %lld: %s%s%s",
			    (long long)ctl_json_int(e, "rank", -1), state,
			    json_object_get(e, "error") != NULL ? ": " : "",
			    ctl_json_str(e, "error", ""));
		}
	}
	(void)ctl_fetch_run(&f);
	free(f.ranks);
	json_decref(doc);
	close(dirfd);
	if (!ctl->json)
		fprintf(ctl->out, "window %lld of job %s: %d traces fetched "
		    "into %s, %d failed, %d not collected\n", (long long)id,
		    argv[1], f.nok, dir, f.nbad, nmissing);
	return (f.nbad > 0 || nmissing > 0 || f.nok == 0 ? CTL_EXIT_REFUSED :
	    CTL_EXIT_OK);
}
