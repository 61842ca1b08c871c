/*
 * Helpers of the coordinator's tests: the real binary, a tiny HTTP client, and
 * the cmocka fixture and checks the tests share.
 */

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fakeagent.h"
#include "test_coord_util.h"

#define TC_START_TIMEOUT_MS	10000
#define TC_HTTP_TIMEOUT_MS	10000

/* Returns a monotonic clock in milliseconds. */
long long
tc_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Returns how many descriptors a process has open, or -1. */
int
tc_fd_count(pid_t pid)
{
	char		 path[64];
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if ((d = opendir(path)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return (n);
}

/* Sends an event of job from fa and waits for its commit, else fails. */
void
tc_event(struct fakeagent *fa, int kind, const char *job, int rank,
    uint32_t window, int64_t step)
{
	assert_int_equal(fa_event_commit(fa, kind, job, rank, window, step,
	    5000), 0);
}

/* Returns the value of the /metrics line "name value", or -1. */
long long
tc_metric(struct tc_coord *tc, const char *name)
{
	struct tc_reply	 r;
	char		 pat[128];
	const char	*p;
	long long	 v = -1;

	if (tc_http(tc->http_port, "GET", "/metrics", NULL, NULL, &r) == -1)
		return (-1);
	snprintf(pat, sizeof(pat), "\n%s ", name);
	if (r.body != NULL && (p = strstr(r.body, pat)) != NULL)
		v = strtoll(p + strlen(pat), NULL, 10);
	tc_reply_free(&r);
	return (v);
}

static const char *
tc_binary(void)
{
	static char	 path[512];
	const char	*b = getenv("DYNPROF_BUILD_DIR");

	snprintf(path, sizeof(path), "%s/server/dynprof-coordinator",
	    b != NULL ? b : ".");
	return (path);
}

/* Makes the test's private directory.  Returns 0 or -1. */
int
tc_setup_dir(struct tc_coord *tc)
{
	memset(tc, 0, sizeof(*tc));
	tc->pid = -1;
	snprintf(tc->dir, sizeof(tc->dir), "/tmp/dynprof-coord-test.XXXXXX");
	if (mkdtemp(tc->dir) == NULL)
		return (-1);
	snprintf(tc->state, sizeof(tc->state), "%s/state", tc->dir);
	snprintf(tc->ready, sizeof(tc->ready), "%s/ready", tc->dir);
	snprintf(tc->log, sizeof(tc->log), "%s/coordinator.log", tc->dir);
	return (0);
}

/* Writes contents to dir/name; path (if not NULL) gets the full path. */
int
tc_write_file(struct tc_coord *tc, const char *name, const char *contents,
    char *path, size_t pathlen)
{
	char	 p[512];
	FILE	*f;

	snprintf(p, sizeof(p), "%s/%s", tc->dir, name);
	if ((f = fopen(p, "w")) == NULL)
		return (-1);
	fputs(contents, f);
	if (fclose(f) == EOF)
		return (-1);
	if (path != NULL)
		snprintf(path, pathlen, "%s", p);
	return (0);
}

static pid_t
tc_spawn(const char *const *argv, const char *log, int nofile)
{
	struct rlimit	 rl;
	pid_t		 pid;
	int		 fd;

	if ((pid = fork()) == -1)
		return (-1);
	if (pid == 0) {
		if (nofile > 0) {
			rl.rlim_cur = rl.rlim_max = (rlim_t)nofile;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
		if (log != NULL && (fd = open(log, O_WRONLY | O_CREAT |
		    O_APPEND, 0644)) != -1) {
			dup2(fd, 2);
			dup2(fd, 1);
			close(fd);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return (pid);
}

static int
tc_wait(pid_t pid, int timeout_ms, int *status)
{
	long long	 deadline = tc_now_ms() + timeout_ms;
	pid_t		 r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return (0);
		if (r == -1 && errno != EINTR)
			return (-1);
		if (tc_now_ms() > deadline)
			return (-1);
		usleep(10000);
	}
}

static int
tc_exit_code(int status)
{
	if (WIFEXITED(status))
		return (WEXITSTATUS(status));
	if (WIFSIGNALED(status))
		return (128 + WTERMSIG(status));
	return (-1);
}

/*
 * Starts the coordinator on 127.0.0.1 port 0 (both ports) with the test's
 * state directory and ready file, plus extra arguments (NULL-terminated, may be
 * NULL); waits for the ready file.  Returns 0 or -1.
 */
int
tc_start(struct tc_coord *tc, const char *const *extra)
{
	const char	*argv[40];
	long long	 deadline;
	FILE		*f;
	int		 n = 0, status;
	char		 line[128];

	argv[n++] = tc_binary();
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--http";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--state-dir";
	argv[n++] = tc->state;
	argv[n++] = "--ready-file";
	argv[n++] = tc->ready;
	while (extra != NULL && *extra != NULL && n < 38)
		argv[n++] = *extra++;
	argv[n] = NULL;
	unlink(tc->ready);
	tc->agent_port = tc->http_port = 0;
	if ((tc->pid = tc_spawn(argv, tc->log, tc->nofile)) == -1)
		return (-1);
	deadline = tc_now_ms() + TC_START_TIMEOUT_MS;
	while (tc_now_ms() < deadline) {
		if ((f = fopen(tc->ready, "r")) != NULL) {
			while (fgets(line, sizeof(line), f) != NULL) {
				sscanf(line, "agent_port=%d", &tc->agent_port);
				sscanf(line, "http_port=%d", &tc->http_port);
			}
			fclose(f);
			if (tc->agent_port > 0 && tc->http_port > 0)
				return (0);
		}
		if (waitpid(tc->pid, &status, WNOHANG) == tc->pid) {
			tc->pid = -1;
			return (-1);
		}
		usleep(10000);
	}
	tc_stop(tc, SIGKILL);
	return (-1);
}

/* Sends sig and waits for the exit.  Returns the exit code (128+N if killed
 * by signal N), or -1. */
int
tc_stop(struct tc_coord *tc, int sig)
{
	int	 status;

	if (tc->pid <= 0)
		return (-1);
	kill(tc->pid, sig);
	if (tc_wait(tc->pid, 10000, &status) == -1) {
		kill(tc->pid, SIGKILL);
		tc_wait(tc->pid, 10000, &status);
		tc->pid = -1;
		return (-1);
	}
	tc->pid = -1;
	return (tc_exit_code(status));
}

static int
tc_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return (remove(path));
}

/* Kills the coordinator if still running and removes the directory. */
void
tc_cleanup(struct tc_coord *tc)
{
	if (tc->pid > 0)
		tc_stop(tc, SIGKILL);
	if (tc->dir[0] != '\0')
		nftw(tc->dir, tc_rm, 16, FTW_DEPTH | FTW_PHYS);
	tc->dir[0] = '\0';
}

/* Runs the coordinator with argv (argv[0] ignored) and returns its exit code. */
int
tc_run_exit(const char *const *args, int timeout_ms)
{
	return (tc_run_exit_log(args, timeout_ms, "/dev/null"));
}

/* As tc_run_exit(), its output appended to log. */
int
tc_run_exit_log(const char *const *args, int timeout_ms, const char *log)
{
	const char	*argv[40];
	pid_t		 pid;
	int		 n = 0, status;

	argv[n++] = tc_binary();
	while (args != NULL && *args != NULL && n < 39)
		argv[n++] = *args++;
	argv[n] = NULL;
	if ((pid = tc_spawn(argv, log, 0)) == -1)
		return (-1);
	if (tc_wait(pid, timeout_ms, &status) == -1) {
		kill(pid, SIGKILL);
		tc_wait(pid, 10000, &status);
		return (-1);
	}
	return (tc_exit_code(status));
}

/*
 * Decodes a chunked body in place (the coordinator streams long answers).
 * Returns 0, or -1 if it is not well formed.
 */
static int
tc_dechunk(char *body)
{
	char		*in = body, *out = body, *end;
	unsigned long	 n;

	for (;;) {
		n = strtoul(in, &end, 16);
		if (end == in || strncmp(end, "\r\n", 2) != 0)
			return (-1);
		in = end + 2;
		if (n == 0)
			break;
		if (strlen(in) < n + 2 || strncmp(in + n, "\r\n", 2) != 0)
			return (-1);
		memmove(out, in, n);
		out += n;
		in += n + 2;
	}
	*out = '\0';
	return (0);
}

/* Connects to 127.0.0.1:port over TCP.  Returns the socket, or -1. */
int
tc_connect(int port)
{
	struct sockaddr_in	 sin;
	int			 fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return (-1);
	}
	return (fd);
}

/* Sends raw bytes as a request to port and reads the whole answer. */
int
tc_http_raw(int port, const char *req, size_t reqlen, struct tc_reply *r)
{
	struct pollfd		 pfd;
	long long		 deadline = tc_now_ms() + TC_HTTP_TIMEOUT_MS;
	char			*buf = NULL, *nb, *body;
	size_t			 len = 0, cap = 0, off = 0;
	ssize_t			 n;
	int			 fd, left;

	memset(r, 0, sizeof(*r));
	if ((fd = tc_connect(port)) == -1)
		return (-1);
	while (off < reqlen) {
		n = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;	/* the server may answer (413) and close */
		off += (size_t)n;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		left = (int)(deadline - tc_now_ms());
		if (left <= 0)
			goto fail;
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, left) <= 0)
			goto fail;
		if (cap - len < 65536) {
			if ((nb = realloc(buf, cap + 65536 + 1)) == NULL)
				goto fail;
			buf = nb;
			cap += 65536;
		}
		n = recv(fd, buf + len, cap - len, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf == NULL)
		return (-1);
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1) {
		free(buf);
		return (-1);
	}
	body = strstr(buf, "\r\n\r\n");
	r->body = strdup(body != NULL ? body + 4 : "");
	r->head = body != NULL ? strndup(buf, (size_t)(body - buf)) :
	    strdup(buf);
	free(buf);
	if (r->body != NULL && r->head != NULL &&
	    strcasestr(r->head, "\r\nTransfer-Encoding: chunked") != NULL &&
	    tc_dechunk(r->body) == -1) {
		tc_reply_free(r);
		return (-1);
	}
	if (r->body != NULL)
		r->json = json_loads(r->body, 0, NULL);
	return (0);
fail:
	close(fd);
	free(buf);
	return (-1);
}

/* Sends one request (body and token may be NULL).  Returns 0 or -1. */
int
tc_http(int port, const char *method, const char *path, const char *body,
    const char *token, struct tc_reply *r)
{
	char	*req;
	char	 auth[300] = "";
	size_t	 blen = body != NULL ? strlen(body) : 0;
	int	 len, rc;

	if (token != NULL)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s\r\n",
		    token);
	if ((req = malloc(blen + 1024)) == NULL)
		return (-1);
	len = snprintf(req, 1024, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n%s\r\n", method, path,
	    blen, auth);
	if (blen > 0)
		memcpy(req + len, body, blen);
	rc = tc_http_raw(port, req, (size_t)len + blen, r);
	free(req);
	return (rc);
}

/*
 * Sends one request (body may be NULL) and expects status.  Returns 0, or -1
 * after printing the request and the answer (r is filled either way when an
 * answer came: free it with tc_reply_free()).
 */
int
tc_expect(struct tc_coord *tc, const char *method, const char *path,
    const char *body, int status, struct tc_reply *r)
{
	if (tc_http(tc->http_port, method, path, body, NULL, r) == -1) {
		fprintf(stderr, "%s %s: no answer\n", method, path);
		return (-1);
	}
	if (r->status == status)
		return (0);
	fprintf(stderr, "%s %s %s -> %d, not %d: %s\n", method, path,
	    body != NULL ? body : "", r->status, status,
	    r->body != NULL ? r->body : "");
	return (-1);
}

/*
 * Stops the coordinator with SIGTERM, as a test's teardown: a clean stop
 * exits 0 (and, under ASan, with no leak or error) and its directory goes;
 * otherwise the log stays and where it is is printed.  Returns 0 or -1.
 */
int
tc_finish(struct tc_coord *tc)
{
	int	 rc = 0;

	if (tc->pid > 0)
		rc = tc_stop(tc, SIGTERM);
	if (rc != 0) {
		fprintf(stderr, "coordinator exited %d, log in %s\n", rc,
		    tc->log);
		return (-1);
	}
	tc_cleanup(tc);
	return (0);
}

/*
 * A cmocka teardown: stops the coordinator of the fixture in *state (a
 * struct whose first member is its struct tc_coord) with tc_finish() and
 * frees the fixture.  Returns 0 if the coordinator exited 0.
 */
int
tc_teardown(void **state)
{
	struct tc_coord	*tc = *state;
	int		 rc;

	rc = tc_finish(tc);
	free(*state);
	return (rc);
}

/*
 * A cmocka setup: starts a coordinator that takes agents with the token
 * "agent-secret", heartbeats every hb ms and has the flags of more (NULL:
 * none; 8 at most), into *state (a struct tc_coord, as tc_teardown() frees
 * it).  Returns 0 or -1.
 */
int
tc_setup_agents_args(void **state, const char *hb, const char *const *more)
{
	struct tc_coord	*tc;
	char		 tok[512];
	const char	*extra[16] = { "-q", "--agent-token-file", tok,
	    "--heartbeat-ms", hb };
	int		 n = 5;

	while (more != NULL && *more != NULL && n < 13)
		extra[n++] = *more++;
	extra[n] = NULL;
	if ((tc = calloc(1, sizeof(*tc))) == NULL)
		return (-1);
	if (tc_setup_dir(tc) == -1 ||
	    tc_write_file(tc, "agent.token", "agent-secret\n", tok,
	    sizeof(tok)) == -1 || tc_start(tc, extra) == -1) {
		tc_cleanup(tc);
		free(tc);
		return (-1);
	}
	*state = tc;
	return (0);
}

/* A cmocka setup: tc_setup_agents_args() with no more flags. */
int
tc_setup_agents_hb(void **state, const char *hb)
{
	return (tc_setup_agents_args(state, hb, NULL));
}

/* A cmocka setup: tc_setup_agents_hb() with heartbeats every second. */
int
tc_setup_agents(void **state)
{
	return (tc_setup_agents_hb(state, "1000"));
}

/* Sends a request and checks its status; returns the reply (caller frees). */
struct tc_reply
tc_req(struct tc_coord *tc, const char *method, const char *path,
    const char *body, int status)
{
	struct tc_reply	 r;

	assert_int_equal(tc_expect(tc, method, path, body, status, &r), 0);
	return (r);
}

/* Sends a request whose answer is only its status, and checks that. */
void
tc_call(struct tc_coord *tc, const char *method, const char *path,
    const char *body, int status)
{
	struct tc_reply	 r = tc_req(tc, method, path, body, status);

	tc_reply_free(&r);
}

/*
 * Polls GET path for 5 s at most until the value at jpath is want (a string
 * if wants is not NULL, else the integer wanti; *goti: the last integer seen).
 * Returns 0, or -1 if it never was.
 */
static int
tc_poll(struct tc_coord *tc, const char *path, const char *jpath,
    const char *wants, long long wanti, long long *goti)
{
	long long	 deadline = tc_now_ms() + 5000;
	struct tc_reply	 r;
	int		 ok;

	*goti = -999;
	while (tc_now_ms() < deadline) {
		assert_int_equal(tc_http(tc->http_port, "GET", path, NULL, NULL,
		    &r), 0);
		if (wants != NULL)
			ok = r.json != NULL &&
			    strcmp(tc_str(r.json, jpath), wants) == 0;
		else {
			*goti = r.json != NULL ? tc_int(r.json, jpath) : -999;
			ok = *goti == wanti;
		}
		tc_reply_free(&r);
		if (ok)
			return (0);
		usleep(20000);
	}
	return (-1);
}

/* Polls GET path until the string at jpath is want, else fails the test. */
void
tc_wait_str(struct tc_coord *tc, const char *path, const char *jpath,
    const char *want)
{
	long long	 got;

	if (tc_poll(tc, path, jpath, want, 0, &got) == -1)
		fail_msg("%s: %s never became %s", path, jpath, want);
}

/* Polls GET path until the integer at jpath is want, else fails the test. */
void
tc_wait_int(struct tc_coord *tc, const char *path, const char *jpath,
    long long want)
{
	long long	 got;

	if (tc_poll(tc, path, jpath, NULL, want, &got) == -1)
		fail_msg("%s: %s is %lld, never %lld", path, jpath, got, want);
}

/* Frees a reply. */
void
tc_reply_free(struct tc_reply *r)
{
	free(r->body);
	free(r->head);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

static json_t *
tc_path(json_t *v, const char *path)
{
	char	 key[128];
	size_t	 n;
	char	*end;
	long	 i;

	while (v != NULL && *path != '\0') {
		n = strcspn(path, ".");
		if (n >= sizeof(key))
			return (NULL);
		memcpy(key, path, n);
		key[n] = '\0';
		path += n;
		if (*path == '.')
			path++;
		if (json_is_array(v)) {
			i = strtol(key, &end, 10);
			if (*end != '\0')
				return (NULL);
			v = json_array_get(v, (size_t)i);
		} else
			v = json_object_get(v, key);
	}
	return (v);
}

/* Returns the integer at a dotted path ("windows.0.id"), or -999 if none. */
long long
tc_int(json_t *v, const char *path)
{
	v = tc_path(v, path);
	return (json_is_integer(v) ? json_integer_value(v) : -999);
}

/*
 * Checks the integers of v that want names ("targeted=8 started=4": each at
 * prefix.name, prefix NULL: at name), failing at the first that differs.
 */
void
tc_assert_ints(json_t *v, const char *prefix, const char *want)
{
	char		 path[128], name[64];
	long long	 got, n;
	int		 used;

	while (sscanf(want, " %63[^=]=%lld%n", name, &n, &used) == 2) {
		snprintf(path, sizeof(path), "%s%s%s", prefix != NULL ?
		    prefix : "", prefix != NULL ? "." : "", name);
		if ((got = tc_int(v, path)) != n)
			fail_msg("%s: %lld, want %lld", path, got, n);
		want += used;
	}
	assert_int_equal(strspn(want, " "), strlen(want));
}

/* Returns window id's object in a summary's windows, or NULL. */
json_t *
tc_window(json_t *doc, long long id)
{
	json_t	*w;
	size_t	 i;

	json_array_foreach(json_object_get(doc, "windows"), i, w) {
		if (tc_int(w, "id") == id)
			return (w);
	}
	return (NULL);
}

/* Returns the string at a dotted path, or "" if none. */
const char *
tc_str(json_t *v, const char *path)
{
	v = tc_path(v, path);
	return (json_is_string(v) ? json_string_value(v) : "");
}

/*
 * Starts dynprofctl with args (NULL ended) against tc, its output into
 * out.  Returns its pid.
 */
pid_t
tc_ctl_start(struct tc_coord *tc, const char *out, const char *const *args)
{
	const char	*argv[24], *b = getenv("DYNPROF_BUILD_DIR");
	char		 bin[512], url[64];
	pid_t		 pid;
	int		 n = 0, fd;

	snprintf(bin, sizeof(bin), "%s/ctl/dynprofctl", b != NULL ? b : ".");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", tc->http_port);
	argv[n++] = bin;
	argv[n++] = "--coordinator";
	argv[n++] = url;
	while (*args != NULL && n < 23)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		if ((fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600)) ==
		    -1 || dup2(fd, 1) == -1 || dup2(fd, 2) == -1)
			_exit(127);
		unsetenv("DYNPROF_TOKEN");
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	return (pid);
}

/* Waits TC_CTL_WAIT_MS at most for dynprofctl; returns its exit code. */
int
tc_ctl_wait(pid_t pid)
{
	long long	 deadline = tc_now_ms() + TC_CTL_WAIT_MS;
	int		 status;

	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (tc_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return (-1);
		}
		usleep(20000);
	}
	return (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* Returns the text of file path (caller frees). */
char *
tc_slurp(const char *path)
{
	FILE	*f = fopen(path, "r");
	char	*buf = calloc(1, 65536);
	size_t	 n;

	assert_non_null(f);
	assert_non_null(buf);
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return (buf);
}
