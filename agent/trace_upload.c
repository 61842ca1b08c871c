/*
 * --trace-upload s3://bucket/prefix: an archive the packer put into the
 * local trace store copied into an S3-compatible object store as
 * <prefix>/<job>/window-<id>/rank-<N>.tar.zst (docs/traces.md): one PUT, or
 * parts over --upload-part-size, signed by libcurl (trace_s3.c), at most
 * --upload-rate bytes a second, in a child at nice 19 and idle I/O (as
 * trace_pack.c's): the agent's loop only waits for its end.  The file is read in curl's buffer
 * (64 KiB): memory does not grow with the archive.  A store that takes or
 * answers nothing for --upload-stall seconds (one that accepted the
 * connection and hangs, too) is given up by the child (the caller tries
 * again later).
 *
 * Credentials: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and
 * AWS_SESSION_TOKEN) from the agent's environment, else --s3-credentials
 * FILE, in the AWS shared credentials format, a regular file only its owner
 * (root or the agent's user) may read or write.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parts.h"
#include "file.h"
#include "log.h"

#define UPLOAD_CRED_MAX		(64 * 1024)

/* What the child reports. */
struct upload_result {
	int		 ok;
	long		 http;
	char		 why[256];
};

/* Returns 1 if s holds only characters safe in a key's path, and no "..". */
static int
upload_name_ok(const char *s)
{
	const char	*p;

	for (p = s; *p != '\0'; p++)
		if (!isalnum((unsigned char)*p) && strchr("._-/", *p) == NULL)
			return (0);
	return (strstr(s, "..") == NULL && strstr(s, "//") == NULL);
}

/* Takes "key = value" of the credentials file text into c. */
static void
upload_cred_line(struct upload_conf *c, char *line)
{
	char	*eq, *k, *v, *e;

	if ((eq = strchr(line, '=')) == NULL)
		return;
	*eq = '\0';
	for (k = line; isspace((unsigned char)*k); k++)
		;
	for (e = eq; e > k && isspace((unsigned char)e[-1]); e--)
		e[-1] = '\0';
	for (v = eq + 1; isspace((unsigned char)*v); v++)
		;
	for (e = v + strlen(v); e > v && isspace((unsigned char)e[-1]); e--)
		e[-1] = '\0';
	if (strcmp(k, "aws_access_key_id") == 0)
		snprintf(c->access_key, sizeof(c->access_key), "%s", v);
	else if (strcmp(k, "aws_secret_access_key") == 0)
		snprintf(c->secret_key, sizeof(c->secret_key), "%s", v);
	else if (strcmp(k, "aws_session_token") == 0)
		snprintf(c->session_token, sizeof(c->session_token), "%s", v);
}

/* Reads the [default] profile of a credentials file.  Returns 0 or -1. */
static int
upload_cred_file(struct upload_conf *c, const char *path, char *why,
    size_t wlen)
{
	struct stat	 st;
	const char	*err;
	char		*text, *line, *save;
	size_t		 len;
	int		 in_default = 1;

	if ((text = file_read(path, FILE_NOFOLLOW, UPLOAD_CRED_MAX, &len, &st,
	    &err)) == NULL) {
		snprintf(why, wlen, "--s3-credentials %s: %s", path, err);
		return (-1);
	}
	if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
	    (st.st_mode & 077) != 0) {
		file_free(text, len);
		snprintf(why, wlen, "--s3-credentials %s: must belong to root "
		    "(or the agent's user) and be readable by its owner only "
		    "(mode 0600 or 0400)", path);
		return (-1);
	}
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "\r#;")] = '\0';
		if (line[0] == '[') {
			in_default = strncmp(line, "[default]", 9) == 0;
			continue;
		}
		if (in_default)
			upload_cred_line(c, line);
	}
	file_free(text, len);
	return (0);
}

/*
 * Sets c's bucket and prefix from u, "s3://BUCKET[/PREFIX]" (what, as it
 * was given, names it in why): --trace-upload's, or a job's own store (the
 * endpoint and credentials stay --trace-upload's).  Returns 0, or -1 with
 * why.
 */
int
trace_upload_retarget(struct upload_conf *c, const char *u, const char *what,
    char *why, size_t wlen)
{
	const char	*slash;
	size_t		 n;

	if (strncmp(u, "s3://", 5) != 0) {
		snprintf(why, wlen, "%s %s: not s3://BUCKET[/PREFIX]", what, u);
		return (-1);
	}
	u += 5;
	slash = strchr(u, '/');
	n = slash != NULL ? (size_t)(slash - u) : strlen(u);
	if (n < 3 || n >= sizeof(c->bucket)) {
		snprintf(why, wlen, "%s: a bucket of 3 to 63 characters", what);
		return (-1);
	}
	memcpy(c->bucket, u, n);
	c->bucket[n] = '\0';
	c->prefix[0] = '\0';
	if (slash != NULL)
		snprintf(c->prefix, sizeof(c->prefix), "%s", slash + 1);
	n = strlen(c->prefix);
	while (n > 0 && c->prefix[n - 1] == '/')
		c->prefix[--n] = '\0';
	if (!upload_name_ok(c->bucket) || strchr(c->bucket, '/') != NULL ||
	    !upload_name_ok(c->prefix) || c->prefix[0] == '/') {
		snprintf(why, wlen, "%s: the bucket and prefix may hold "
		    "letters, digits and ._-/ only, no \"..\" nor \"//\"", what);
		return (-1);
	}
	return (0);
}

/*
 * Reads the agent's --trace-upload, --s3-endpoint, --s3-region,
 * --s3-credentials, --upload-rate, --upload-stall and --upload-part-size
 * into c, with the credentials.
 * Returns 0, or -1 with why.
 */
int
trace_upload_conf(const struct agent_options *o, struct upload_conf *c,
    char *why, size_t wlen)
{
	const char	*u = o->trace_upload, *e;
	size_t		 n;

	memset(c, 0, sizeof(*c));
	if (trace_upload_retarget(c, u, "--trace-upload", why, wlen) == -1)
		return (-1);
	snprintf(c->region, sizeof(c->region), "%s", o->s3_region[0] != '\0' ?
	    o->s3_region : (e = getenv("AWS_REGION")) != NULL && *e != '\0' ?
	    e : "us-east-1");
	if (!upload_name_ok(c->region) || strchr(c->region, '/') != NULL) {
		snprintf(why, wlen, "--s3-region %s: not a region", c->region);
		return (-1);
	}
	if (o->s3_endpoint[0] != '\0')
		snprintf(c->endpoint, sizeof(c->endpoint), "%s", o->s3_endpoint);
	else
		snprintf(c->endpoint, sizeof(c->endpoint),
		    "https://s3.%s.amazonaws.com", c->region);
	n = strlen(c->endpoint);
	while (n > 0 && c->endpoint[n - 1] == '/')
		c->endpoint[--n] = '\0';
	if (strncmp(c->endpoint, "http://", 7) != 0 &&
	    strncmp(c->endpoint, "https://", 8) != 0) {
		snprintf(why, wlen, "--s3-endpoint %s: not http:// or https://",
		    c->endpoint);
		return (-1);
	}
	c->rate = o->upload_rate;
	c->stall_s = o->upload_stall_s > 0 ? o->upload_stall_s :
	    AGENT_UPLOAD_STALL_S;
	c->part_size = o->upload_part_size > 0 ? o->upload_part_size :
	    AGENT_UPLOAD_PART_SIZE;
	if ((e = getenv("AWS_ACCESS_KEY_ID")) != NULL && *e != '\0') {
		snprintf(c->access_key, sizeof(c->access_key), "%s", e);
		if ((e = getenv("AWS_SECRET_ACCESS_KEY")) != NULL)
			snprintf(c->secret_key, sizeof(c->secret_key), "%s", e);
		if ((e = getenv("AWS_SESSION_TOKEN")) != NULL)
			snprintf(c->session_token, sizeof(c->session_token),
			    "%s", e);
	} else if (o->s3_credentials[0] != '\0' &&
	    upload_cred_file(c, o->s3_credentials, why, wlen) == -1)
		return (-1);
	if (c->access_key[0] == '\0' || c->secret_key[0] == '\0' ||
	    strchr(c->access_key, ':') != NULL) {
		snprintf(why, wlen, "--trace-upload: no credentials (set "
		    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give "
		    "--s3-credentials FILE)");
		return (-1);
	}
	return (0);
}

/* Writes where path (<job>/window-<id>/rank-<N>.tar.zst) goes: s3://... */
void
trace_upload_location(const struct upload_conf *c, const char *path,
    char *buf, size_t len)
{
	snprintf(buf, len, "s3://%s/%s%s%s", c->bucket, c->prefix,
	    c->prefix[0] != '\0' ? "/" : "", path);
}

/* The child: puts the archive fd (its sha256 given) at url. */
static void __attribute__((noreturn))
upload_child(const struct upload_conf *c, int fd, const char *url,
    const char *sha256, int res_fd)
{
	struct upload_result	 r;
	struct stat		 st;

	trace_pack_lower();
	memset(&r, 0, sizeof(r));
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		snprintf(r.why, sizeof(r.why), "the archive is no file");
	else if (trace_s3_put(c, fd, (uint64_t)st.st_size, url, sha256, r.why,
	    sizeof(r.why)) == 0)
		r.ok = 1;
	trace_pack_child_exit(res_fd, &r, sizeof(r));
}

/*
 * Starts putting store_fd's path (<job>/window-<id>/rank-<N>.tar.zst, whose
 * sha256 is given) into the object store c names.  Returns 0 with up filled
 * (up->fd becomes readable when the child ends: then trace_upload_finish()),
 * or -1 with why.
 */
int
trace_upload_start(struct trace_upload *up, const struct upload_conf *c,
    int store_fd, const char *path, const char *sha256, char *why,
    size_t wlen)
{
	char	 url[sizeof(c->endpoint) + sizeof(c->bucket) +
	    sizeof(c->prefix) + 300];
	int	 fd, pipefd[2];
	pid_t	 pid;

	up->fd = -1;
	if (!upload_name_ok(path)) {
		snprintf(why, wlen, "%s: not a name to upload", path);
		return (-1);
	}
	snprintf(url, sizeof(url), "%s/%s/%s%s%s", c->endpoint, c->bucket,
	    c->prefix, c->prefix[0] != '\0' ? "/" : "", path);
	if ((fd = openat(store_fd, path, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		snprintf(why, wlen, "%s: %s", path, strerror(errno));
		return (-1);
	}
	if (pipe2(pipefd, O_CLOEXEC) == -1) {
		snprintf(why, wlen, "pipe: %s", strerror(errno));
		close(fd);
		return (-1);
	}
	if ((pid = fork()) == -1) {
		snprintf(why, wlen, "fork: %s", strerror(errno));
		close(fd);
		close(pipefd[0]);
		close(pipefd[1]);
		return (-1);
	}
	if (pid == 0) {
		close(pipefd[0]);
		trace_pack_keep_fds(fd, pipefd[1], -1);
		upload_child(c, fd, url, sha256, pipefd[1]);
	}
	close(fd);
	close(pipefd[1]);
	up->pid = pid;
	up->fd = pipefd[0];
	return (0);
}

/*
 * Ends up once up->fd is readable: reads the child's result and reaps it.
 * Returns 0 if the object store took the archive, else -1 with why.
 */
int
trace_upload_finish(struct trace_upload *up, char *why, size_t wlen)
{
	struct upload_result	 r;
	size_t			 got;
	int			 status;

	memset(&r, 0, sizeof(r));
	got = trace_pack_child_result(up->fd, &r, sizeof(r));
	close(up->fd);
	up->fd = -1;
	while (waitpid(up->pid, &status, 0) == -1 && errno == EINTR)
		;
	r.why[sizeof(r.why) - 1] = '\0';
	if (got != sizeof(r)) {
		snprintf(why, wlen, "the uploader died%s",
		    WIFSIGNALED(status) ? " of a signal" : "");
		return (-1);
	}
	if (!r.ok) {
		snprintf(why, wlen, "%s", r.why);
		return (-1);
	}
	return (0);
}

/* Stops up's child (the agent is going away). */
void
trace_upload_abort(struct trace_upload *up)
{
	if (up->fd == -1)
		return;
	(void)kill(up->pid, SIGKILL);
	while (waitpid(up->pid, NULL, 0) == -1 && errno == EINTR)
		;
	close(up->fd);
	up->fd = -1;
}
