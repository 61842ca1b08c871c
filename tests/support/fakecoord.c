/*
 * A fake coordinator and an agent runner for the agent's tests and benchmark.
 * Blocking sockets and poll() with deadlines: every wait is bounded.
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fakecoord.h"

#define FC_STASH_MAX	1024

static void	 ap_forget(struct agentproc *, pid_t);

/* Messages fc_expect() passed over, given back in order by later calls. */
static Dynprof__V1__AgentMessage *fc_stash[FC_STASH_MAX];
static int fc_nstash;

/* Returns the monotonic clock in milliseconds. */
int64_t
ap_now_ms(void)
{
	return (clock_mono_ms());
}

/* Listens on 127.0.0.1 on a port the kernel picks. */
int
fc_listen(struct fakecoord *fc)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 on = 1;

	memset(fc, 0, sizeof(*fc));
	fc->fd = -1;
	if ((fc->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	setsockopt(fc->lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fc->lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fc->lfd, 8) == -1 ||
	    getsockname(fc->lfd, (struct sockaddr *)&sin, &len) == -1)
		return (-1);
	fc->port = ntohs(sin.sin_port);
	return (0);
}

/* Drops the current stream (if any) and waits for the agent's next one. */
int
fc_accept(struct fakecoord *fc, int timeout_ms)
{
	struct pollfd	 pfd = { fc->lfd, POLLIN, 0 };
	int		 on = 1;

	fc_drop(fc);
	if (poll(&pfd, 1, timeout_ms) != 1)
		return (-1);
	if ((fc->fd = accept4(fc->lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		return (-1);
	setsockopt(fc->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	return (0);
}

/* Closes the current stream, as a coordinator that goes away. */
void
fc_drop(struct fakecoord *fc)
{
	int	 i;

	if (fc->fd != -1)
		close(fc->fd);
	fc->fd = -1;
	fc->len = 0;
	for (i = 0; i < fc_nstash; i++)
		dynprof__v1__agent_message__free_unpacked(fc_stash[i], NULL);
	fc_nstash = 0;
}

/* Closes everything. */
void
fc_close(struct fakecoord *fc)
{
	fc_drop(fc);
	if (fc->lfd > 0)
		close(fc->lfd);
	fc->lfd = -1;
	free(fc->buf);
	fc->buf = NULL;
	fc->cap = 0;
}

/* Reads more bytes; 1 read, 0 timeout, -1 closed or error. */
static int
fc_fill(struct fakecoord *fc, int64_t deadline)
{
	struct pollfd	 pfd;
	ssize_t		 n;
	int		 left;

	if (fc->fd == -1)
		return (-1);
	left = (int)(deadline - ap_now_ms());
	if (left < 0)
		left = 0;
	pfd.fd = fc->fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, left) != 1)
		return (0);
	if (fc->cap - fc->len < 65536) {
		fc->cap = fc->cap * 2 + 65536;
		if ((fc->buf = realloc(fc->buf, fc->cap)) == NULL)
			abort();
	}
	n = read(fc->fd, fc->buf + fc->len, fc->cap - fc->len);
	if (n <= 0)
		return (-1);
	fc->len += (size_t)n;
	return (1);
}

/* The next message the agent sent, or NULL on timeout or a closed stream. */
Dynprof__V1__AgentMessage *
fc_recv(struct fakecoord *fc, int timeout_ms)
{
	Dynprof__V1__AgentMessage	*m;
	int64_t				 deadline = ap_now_ms() + timeout_ms;
	uint32_t			 be, n;

	for (;;) {
		if (fc->len >= 5) {
			memcpy(&be, fc->buf + 1, 4);
			n = ntohl(be);
			if (fc->len >= 5 + (size_t)n) {
				m = dynprof__v1__agent_message__unpack(NULL, n,
				    fc->buf + 5);
				memmove(fc->buf, fc->buf + 5 + n,
				    fc->len - 5 - n);
				fc->len -= 5 + n;
				return (m);
			}
		}
		if (fc_fill(fc, deadline) != 1)
			return (NULL);
	}
}

/*
 * The next message of type body_case (DYNPROF__V1__AGENT_MESSAGE__BODY_*).
 * Heartbeats are discarded; other messages are kept for later calls, in order.
 */
Dynprof__V1__AgentMessage *
fc_expect(struct fakecoord *fc, int body_case, int timeout_ms)
{
	Dynprof__V1__AgentMessage	*m;
	int64_t				 deadline = ap_now_ms() + timeout_ms;
	int				 i, left;

	for (i = 0; i < fc_nstash; i++) {
		if ((int)fc_stash[i]->body_case != body_case)
			continue;
		m = fc_stash[i];
		memmove(&fc_stash[i], &fc_stash[i + 1],
		    (size_t)(fc_nstash - i - 1) * sizeof(fc_stash[0]));
		fc_nstash--;
		return (m);
	}
	for (;;) {
		left = (int)(deadline - ap_now_ms());
		if (left < 0)
			return (NULL);
		if ((m = fc_recv(fc, left)) == NULL)
			return (NULL);
		if ((int)m->body_case == body_case)
			return (m);
		if (m->body_case != DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT &&
		    fc_nstash < FC_STASH_MAX)
			fc_stash[fc_nstash++] = m;
		else
			dynprof__v1__agent_message__free_unpacked(m, NULL);
	}
}

/* Whether the agent closes the stream within timeout_ms (data is discarded). */
int
fc_closed(struct fakecoord *fc, int timeout_ms)
{
	int64_t	 deadline = ap_now_ms() + timeout_ms;
	int	 rc;

	while ((rc = fc_fill(fc, deadline)) == 1)
		fc->len = 0;
	return (rc == -1);
}

int
fc_send_raw(struct fakecoord *fc, const void *buf, size_t len)
{
	const uint8_t	*p = buf;
	ssize_t		 n;

	while (len > 0) {
		n = send(fc->fd, p, len, MSG_NOSIGNAL);
		if (n <= 0)
			return (-1);
		p += n;
		len -= (size_t)n;
	}
	return (0);
}

/* Frames and sends one message. */
int
fc_send(struct fakecoord *fc, const Dynprof__V1__CoordinatorMessage *m)
{
	uint8_t		*buf;
	size_t		 len;
	uint32_t	 be;
	int		 rc;

	len = dynprof__v1__coordinator_message__get_packed_size(m);
	if ((buf = malloc(5 + len)) == NULL)
		return (-1);
	buf[0] = 0;
	be = htonl((uint32_t)len);
	memcpy(buf + 1, &be, 4);
	dynprof__v1__coordinator_message__pack(m, buf + 5);
	rc = fc_send_raw(fc, buf, 5 + len);
	free(buf);
	return (rc);
}

int
fc_welcome(struct fakecoord *fc, uint32_t heartbeat_ms, uint64_t acked,
    uint64_t boot_id)
{
	Dynprof__V1__CoordinatorMessage	 m =
	    DYNPROF__V1__COORDINATOR_MESSAGE__INIT;
	Dynprof__V1__Welcome		 w = DYNPROF__V1__WELCOME__INIT;

	w.protocol_version = 1;
	w.heartbeat_ms = heartbeat_ms;
	w.acked_seq = acked;
	w.agent_boot_id = boot_id;
	m.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_WELCOME;
	m.welcome = &w;
	return (fc_send(fc, &m));
}

/* Pushes job's config at generation gen: one window [start, stop], or none. */
int
fc_push(struct fakecoord *fc, const char *job, uint64_t gen, uint32_t id,
    int64_t start, int64_t stop)
{
	Dynprof__V1__CoordinatorMessage	 m =
	    DYNPROF__V1__COORDINATOR_MESSAGE__INIT;
	Dynprof__V1__JobConfig		 jc = DYNPROF__V1__JOB_CONFIG__INIT;
	Dynprof__V1__Window		 w = DYNPROF__V1__WINDOW__INIT;
	Dynprof__V1__Window		*wp = &w;

	jc.job = (char *)job;
	jc.generation = gen;
	if (id != 0) {
		w.id = id;
		w.start_step = start;
		w.stop_step = stop;
		w.state = DYNPROF__V1__WINDOW_STATE__WINDOW_SCHEDULED;
		jc.n_windows = 1;
		jc.windows = &wp;
	}
	m.body_case = DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG;
	m.config = &jc;
	return (fc_send(fc, &m));
}

/* The build tree: $DYNPROF_BUILD_DIR (set by CTest), else the current dir's parent. */
const char *
ap_build_dir(void)
{
	const char	*b = getenv("DYNPROF_BUILD_DIR");

	return (b != NULL ? b : "..");
}

/* Makes the private directory: DIR/shm, DIR/agent.sock, DIR/agent.log, ... */
int
ap_setup(struct agentproc *ap)
{
	char	 tmpl[] = "/tmp/dynprof-agent-test.XXXXXX";

	memset(ap, 0, sizeof(*ap));
	if (mkdtemp(tmpl) == NULL)
		return (-1);
	snprintf(ap->dir, sizeof(ap->dir), "%s", tmpl);
	snprintf(ap->sock, sizeof(ap->sock), "%s/run/agent.sock", ap->dir);
	snprintf(ap->shm, sizeof(ap->shm), "%s/shm", ap->dir);
	snprintf(ap->log, sizeof(ap->log), "%s/agent.log", ap->dir);
	snprintf(ap->ready, sizeof(ap->ready), "%s/ready", ap->dir);
	if (mkdir(ap->shm, 0700) == -1)
		return (-1);
	setenv("DYNPROF_SHM_DIR", ap->shm, 1);
	setenv("DYNPROF_AGENT_SOCKET", ap->sock, 1);
	return (0);
}

/* Forks and execs argv with stdout and stderr appended to the agent's log. */
pid_t
ap_spawn(struct agentproc *ap, const char *const *argv)
{
	pid_t	 pid;
	int	 fd;

	pid = fork();
	if (pid == -1)
		return (-1);
	if (pid == 0) {
		fd = open(ap->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd != -1) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (ap->nchildren < AP_MAX_CHILDREN)
		ap->children[ap->nchildren++] = pid;
	return (pid);
}

/*
 * Starts the agent with the private socket, shm dir and ready file, -v, and the
 * extra arguments (NULL-terminated); waits (bounded: 30 s, for a sanitized
 * agent starting on a loaded machine) until it is serving.
 */
int
ap_start(struct agentproc *ap, const char *const *extra)
{
	const char	*argv[64];
	char		 bin[512];
	int		 n = 0, i;
	int64_t		 deadline;
	struct stat	 st;

	snprintf(bin, sizeof(bin), "%s/agent/dynprof-agent", ap_build_dir());
	argv[n++] = bin;
	argv[n++] = "--socket";
	argv[n++] = ap->sock;
	argv[n++] = "--shm-dir";
	argv[n++] = ap->shm;
	argv[n++] = "--ready-file";
	argv[n++] = ap->ready;
	argv[n++] = "-v";
	for (i = 0; extra != NULL && extra[i] != NULL && n < 63; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	unlink(ap->ready);
	if ((ap->pid = ap_spawn(ap, argv)) == -1)
		return (-1);
	deadline = ap_now_ms() + 30000;
	while (ap_now_ms() < deadline) {
		if (stat(ap->ready, &st) == 0)
			return (0);
		if (waitpid(ap->pid, NULL, WNOHANG) == ap->pid) {
			ap_forget(ap, ap->pid);
			ap->pid = 0;
			return (-1);
		}
		usleep(5000);
	}
	return (-1);
}

static void
ap_forget(struct agentproc *ap, pid_t pid)
{
	int	 i;

	for (i = 0; i < ap->nchildren; i++)
		if (ap->children[i] == pid)
			ap->children[i] = 0;
}

/* Sends sig to a child and waits (bounded) for it; returns its wait status. */
int
ap_kill_child(struct agentproc *ap, pid_t pid, int sig, int timeout_ms)
{
	int64_t	 deadline = ap_now_ms() + timeout_ms;
	int	 status;

	if (pid <= 0)
		return (-1);
	kill(pid, sig);
	while (ap_now_ms() < deadline) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			ap_forget(ap, pid);
			return (status);
		}
		usleep(2000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ap_forget(ap, pid);
	return (-1);
}

/* Sends sig to the agent and waits (bounded) for it; returns its wait status. */
int
ap_stop(struct agentproc *ap, int sig, int timeout_ms)
{
	int	 status;

	status = ap_kill_child(ap, ap->pid, sig, timeout_ms);
	ap->pid = 0;
	return (status);
}

/* How many lines of the agent's log contain needle. */
int
ap_log_count(struct agentproc *ap, const char *needle)
{
	FILE	*f;
	char	 line[8192];
	int	 n = 0;

	if ((f = fopen(ap->log, "r")) == NULL)
		return (0);
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, needle) != NULL)
			n++;
	fclose(f);
	return (n);
}

/*
 * The times of day, in ms, that the first max lines containing needle were
 * logged at (their "YYYY-MM-DDTHH:MM:SS.mmmZ" prefix).  Returns how many.
 */
int
ap_log_times(struct agentproc *ap, const char *needle, int64_t *ms, int max)
{
	FILE	*f;
	char	 line[8192];
	int	 h, m, sec, milli, n = 0;

	if ((f = fopen(ap->log, "r")) == NULL)
		return (0);
	while (n < max && fgets(line, sizeof(line), f) != NULL) {
		if (strstr(line, needle) == NULL ||
		    sscanf(line, "%*d-%*d-%*dT%d:%d:%d.%dZ", &h, &m, &sec,
		    &milli) != 4)
			continue;
		ms[n++] = ((int64_t)h * 3600 + m * 60 + sec) * 1000 + milli;
	}
	fclose(f);
	return (n);
}

/* Waits until at least count lines contain needle; 0 or -1 on timeout. */
int
ap_log_wait(struct agentproc *ap, const char *needle, int count, int timeout_ms)
{
	int64_t	 deadline = ap_now_ms() + timeout_ms;

	while (ap_now_ms() < deadline) {
		if (ap_log_count(ap, needle) >= count)
			return (0);
		usleep(5000);
	}
	fprintf(stderr, "timed out waiting for \"%s\" x%d in %s\n", needle,
	    count, ap->log);
	return (-1);
}

static int
ap_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return (0);
}

/* Kills the agent and every child, shows the log if asked, removes the dir. */
void
ap_cleanup(struct agentproc *ap)
{
	int	 i;

	for (i = 0; i < ap->nchildren; i++) {
		if (ap->children[i] > 0) {
			kill(ap->children[i], SIGKILL);
			waitpid(ap->children[i], NULL, 0);
		}
	}
	ap->nchildren = 0;
	ap->pid = 0;
	/* CTest shows this only when the test fails. */
	if (ap->log[0] != '\0') {
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "tail -n 40 %s >&2", ap->log);
		if (system(cmd) == -1)
			perror("system");
	}
	if (ap->dir[0] != '\0')
		nftw(ap->dir, ap_rm, 16, FTW_DEPTH | FTW_PHYS);
	ap->dir[0] = '\0';
}

/* Sends len bytes as one datagram to the agent's socket, as a rank would. */
int
ap_send_dgram(struct agentproc *ap, const void *buf, size_t len)
{
	struct sockaddr_un	 sun;
	int			 fd, rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(ap->sock) >= sizeof(sun.sun_path))
		return (-1);
	memcpy(sun.sun_path, ap->sock, strlen(ap->sock) + 1);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return (-1);
	rc = sendto(fd, buf, len, 0, (struct sockaddr *)&sun, sizeof(sun)) ==
	    (ssize_t)len ? 0 : -1;
	close(fd);
	return (rc);
}

/* Packs ev and sends it as one datagram. */
int
ap_send_event(struct agentproc *ap, const Dynprof__V1__RankEvent *ev)
{
	uint8_t	 buf[8192];
	size_t	 len;

	len = dynprof__v1__rank_event__get_packed_size(ev);
	if (len > sizeof(buf))
		return (-1);
	dynprof__v1__rank_event__pack(ev, buf);
	return (ap_send_dgram(ap, buf, len));
}

/*
 * Starts the agent connected to fc as node n1, sampling every sample_ms
 * milliseconds, and answers its hello (heartbeat 60 s).  Returns 0 or -1.
 */
int
ap_start_connected(struct agentproc *ap, struct fakecoord *fc,
    const char *sample_ms, int timeout_ms)
{
	Dynprof__V1__AgentMessage	*m;
	char				 coord[64];
	const char			*extra[] = { "--coordinator", coord,
	    "--node", "n1", "--sample-interval", sample_ms, NULL };

	snprintf(coord, sizeof(coord), "127.0.0.1:%d", fc->port);
	if (ap_start(ap, extra) == -1 || fc_accept(fc, timeout_ms) == -1)
		return (-1);
	m = fc_expect(fc, DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO, timeout_ms);
	if (m == NULL)
		return (-1);
	dynprof__v1__agent_message__free_unpacked(m, NULL);
	return (fc_welcome(fc, 60000, 0, 0));
}
