/*
 * The ranks' side: a unix datagram socket on which libdynprof sends one RankEvent
 * per datagram.  The sender's pid comes from the kernel (SO_PASSCRED, so every
 * datagram carries SCM_CREDENTIALS); a datagram is believed only if that pid
 * holds the slot it names, and then it only says "read my slot's log": the
 * events themselves are taken from there (docs/events.md), so a datagram lost
 * on a full socket loses nothing.  A slot held from another pid namespace,
 * where the kernel's pid means nothing, is proved by its token instead, and
 * the pidfd the rank sends along is kept to notice its exit
 * (docs/containers.md).
 */

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "parts.h"
#include "clock.h"
#include "jobid.h"
#include "log.h"

#define RANKS_BATCH	64	/* datagrams read per wakeup */
#define RANKS_LOG_BURST	32	/* bad datagrams logged per RANKS_LOG_MS */
#define RANKS_LOG_MS	10000
#define RANKS_FDS_MAX	4	/* fds read per datagram: a rank sends one */

/*
 * Whether to log one more bad datagram: a process that sends garbage in a loop
 * must not flood the log.  Every one is counted in the stats regardless.
 */
static int
ranks_log_ok(struct agent *a)
{
	int64_t	 now = clock_mono_ms();

	if (now - a->rank_log_start >= RANKS_LOG_MS) {
		if (a->rank_log_suppressed > 0)
			log_warnx("%llu more bad datagrams not logged",
			    (unsigned long long)a->rank_log_suppressed);
		a->rank_log_start = now;
		a->rank_log_count = 0;
		a->rank_log_suppressed = 0;
	}
	if (a->rank_log_count < RANKS_LOG_BURST) {
		a->rank_log_count++;
		return (1);
	}
	a->rank_log_suppressed++;
	return (0);
}

/*
 * Checks that pid holds the slot the event names, for the rank the slot holds,
 * or held it last: an event of a freed (GONE) slot from the pid that freed it,
 * and not newer than the last event it wrote there, is good too.  Returns 0
 * or -1.
 */
int
ranks_check_slot(const struct segment *seg, const Dynprof__V1__RankEvent *ev,
    pid_t pid)
{
	return (ranks_check_sender(seg, ev, pid, NULL) == 0 ? 0 : -1);
}

/*
 * Whether the sender holds the slot: in this pid namespace, the kernel's pid
 * (pid, 0 when the sender is not visible here) must be the event's and the
 * holder's; in another, where pids are not comparable, the event must carry
 * the slot's token and the holder's pid.
 */
static int
ranks_is_holder(const Dynprof__V1__RankEvent *ev, pid_t pid, int32_t holder,
    uint64_t ns, uint64_t token)
{
	if (ns == segment_pidns())
		return (pid > 0 && ev->pid == pid && holder == pid);
	return (ns != 0 && ev->slot_token == token && ev->pid == holder);
}

/*
 * ranks_check_slot(), which also sets *incp (if not NULL) to the incarnation
 * the sender holds, 0 for a slot it freed.  Returns 0, -1, or RANKS_FOREIGN
 * when the slot's holder is in this pid namespace and the event claims a pid
 * other than the kernel's.
 */
int
ranks_check_sender(const struct segment *seg, const Dynprof__V1__RankEvent *ev,
    pid_t pid, uint32_t *incp)
{
	struct seg_slot	 s;
	int32_t		 holder;
	uint64_t	 ns;

	if (incp != NULL)
		*incp = 0;
	if (ev->slot >= seg->nslots ||
	    segment_slot_read(seg, (int)ev->slot, &s) != SEG_OK)
		return (-1);
	if (s.rank != ev->rank)
		return (-1);
	holder = atomic_load_explicit(&s.pid, memory_order_relaxed);
	ns = atomic_load_explicit(&s.pidns, memory_order_relaxed);
	if (holder != 0 && ns == segment_pidns() && ev->pid != pid)
		return (RANKS_FOREIGN);
	if (holder != 0 && ranks_is_holder(ev, pid, holder, ns, s.token)) {
		if (incp != NULL)
			*incp = atomic_load_explicit(&s.incarnation,
			    memory_order_relaxed);
		return (0);
	}
	/*
	 * A rank that closes sends its last events (stopped, detached) and frees
	 * its slot at once: they are read here after the slot is free.  The slot
	 * keeps the pid that freed it and how many events it had sent.
	 */
	if (holder == 0 && s.state == SEG_RANK_GONE &&
	    ranks_is_holder(ev, pid, s.last_pid, s.last_pidns, s.token) &&
	    ev->rank_seq <= s.rank_seq)
		return (0);
	return (-1);
}

/*
 * Decodes one datagram sent by pid and checks what needs no segment: a valid
 * job id and the sender's own pid.  Returns RANKS_OK, RANKS_UNDECODABLE,
 * RANKS_BAD_JOB (*why says why) or RANKS_FOREIGN (it claims another pid: the
 * pid of another namespace, maybe, which only its slot can tell).
 * *evp is the event for all but RANKS_UNDECODABLE (caller frees it with
 * dynprof__v1__rank_event__free_unpacked()), NULL then.
 */
int
ranks_decode(const uint8_t *buf, size_t len, pid_t pid,
    Dynprof__V1__RankEvent **evp, const char **why)
{
	Dynprof__V1__RankEvent	*ev;

	*evp = ev = dynprof__v1__rank_event__unpack(NULL, len, buf);
	if (ev == NULL)
		return (RANKS_UNDECODABLE);
	if (!jobid_valid(ev->job, why))
		return (RANKS_BAD_JOB);
	if (ev->pid != pid)
		return (RANKS_FOREIGN);
	return (RANKS_OK);
}

struct ranks_check_ctx {
	const struct segment		*seg;
	const Dynprof__V1__RankEvent	*ev;
	pid_t				 pid;
	uint32_t			 inc;
};

struct ranks_wake_ctx {
	struct agent		*a;
	struct agent_job	*j;
	int			 slot;
};

/* ranks_check_sender() under the guard. */
static int
ranks_check_cb(void *arg)
{
	struct ranks_check_ctx	*ctx = arg;

	return (ranks_check_sender(ctx->seg, ctx->ev, ctx->pid, &ctx->inc));
}

/* Forwards a slot's new log entries, under the guard. */
static int
ranks_wake_cb(void *arg)
{
	struct ranks_wake_ctx	*ctx = arg;

	return (events_read_log(ctx->a, ctx->j, ctx->slot));
}

/* Logs a datagram that claims a pid other than its sender's, and counts it. */
static void
ranks_log_foreign(struct agent *a, const Dynprof__V1__RankEvent *ev, pid_t pid)
{
	a->stats.foreign_datagrams++;
	if (ranks_log_ok(a))
		log_warnx("ranks_handle: datagram from pid %ld claims pid %d: "
		    "dropped", (long)pid, ev->pid);
}

/*
 * A rank asks for its directory of segments (RankEvent.make_dir): made for
 * the uid and gid the kernel gave, taken back from whoever holds its name
 * (docs/segments.md).  Nobody can ask for another uid's.
 */
static void
ranks_make_dir(struct agent *a, const struct ucred *cred)
{
	uid_t	 holder;

	if (segment_dir_make(a->opts.shm_dir, cred->uid, cred->gid,
	    a->opts.shm_mode, &holder) != SEG_OK) {
		log_limited(&a->dir_limit, LOG_LEVEL_QUIET, "%s: directory of "
		    "uid %u in %s: %s", __func__, (unsigned)cred->uid,
		    a->opts.shm_dir, strerror(errno));
		return;
	}
	a->stats.dirs_made++;
	if (holder == SEG_NOUID)
		return;
	a->stats.dirs_taken_back++;
	log_limited(&a->dir_limit, LOG_LEVEL_QUIET, "%s: %s/%s%u was held by "
	    "uid %u: moved aside, made again for uid %u", __func__,
	    a->opts.shm_dir, SEG_USERDIR_PREFIX, (unsigned)cred->uid,
	    (unsigned)holder, (unsigned)cred->uid);
}

/*
 * Decodes and checks one datagram of the sender the kernel names in cred;
 * from a rank that holds the slot it names, in a segment of its uid, it is a
 * wakeup: the new entries of that slot's log are forwarded, and the pidfd it
 * came with (pidfd, -1: none; always consumed) is kept.
 */
static void
ranks_handle(struct agent *a, const uint8_t *buf, size_t len,
    const struct ucred *cred, int pidfd)
{
	pid_t			 pid = cred->pid;
	struct ranks_check_ctx	 cctx;
	struct ranks_wake_ctx	 wctx;
	Dynprof__V1__RankEvent	*ev;
	struct agent_job	*j;
	const char		*why;
	int			 rc, foreign = 0;

	switch (ranks_decode(buf, len, pid, &ev, &why)) {
	case RANKS_UNDECODABLE:
		a->stats.bad_datagrams++;
		if (ranks_log_ok(a))
			log_warnx("%s: undecodable datagram from pid %ld "
			    "(%zu bytes)", __func__, (long)pid, len);
		goto out;
	case RANKS_BAD_JOB:
		a->stats.bad_datagrams++;
		if (ranks_log_ok(a))
			log_warnx("%s: datagram from pid %ld: job: %s", __func__,
			    (long)pid, why);
		goto out;
	case RANKS_FOREIGN:
		/* Another pid namespace's pid?  Only its slot can say. */
		foreign = 1;
		break;
	}
	if (ev->make_dir) {
		ranks_make_dir(a, cred);
		goto out;
	}
	/* Only the segment of the sender's own uid: nobody speaks for another. */
	if ((j = segments_get_uid(a, cred->uid, ev->job, 0)) == NULL) {
		if (foreign) {
			ranks_log_foreign(a, ev, pid);
			goto out;
		}
		a->stats.foreign_datagrams++;
		if (ranks_log_ok(a))
			log_warnx("%s: datagram from pid %ld for job %s, which "
			    "has no segment here: dropped", __func__, (long)pid,
			    ev->job);
		goto out;
	}
	cctx.seg = &j->seg;
	cctx.ev = ev;
	cctx.pid = pid;
	if (guard_call(ranks_check_cb, &cctx, &rc) == -1) {
		segments_drop_faulted(a);
		goto out;
	}
	if (rc == RANKS_FOREIGN || (rc == -1 && foreign && pid > 0)) {
		ranks_log_foreign(a, ev, pid);
		goto out;
	}
	if (rc != 0) {
		a->stats.foreign_datagrams++;
		if (ranks_log_ok(a))
			log_warnx("%s: pid %ld (%d in the datagram) does not "
			    "hold slot %u of job %s for rank %d: dropped",
			    __func__, (long)pid, ev->pid, ev->slot, ev->job,
			    ev->rank);
		goto out;
	}
	if (cctx.inc != 0) {
		j->slot_uid[ev->slot] = cred->uid;
		j->slot_uid_inc[ev->slot] = cctx.inc;
	}
	if (cctx.inc != 0 && pidfd != -1) {
		segments_keep_pidfd(a, j, (int)ev->slot, cctx.inc, pidfd);
		pidfd = -1;
	}
	/* The datagram only wakes us up: the events are in the slot's log. */
	segments_rank_seen(a, j);
	wctx.a = a;
	wctx.j = j;
	wctx.slot = (int)ev->slot;
	if (guard_call(ranks_wake_cb, &wctx, NULL) == -1)
		segments_drop_faulted(a);
out:
	if (pidfd != -1)
		close(pidfd);
	if (ev != NULL)
		dynprof__v1__rank_event__free_unpacked(ev, NULL);
}

/*
 * The fds of an SCM_RIGHTS message: the first of the datagram is kept as the
 * sender's pidfd (the one kept so far, kept, else -1), the others closed.
 * Returns the fd kept.
 */
static int
ranks_take_fds(struct cmsghdr *c, int kept)
{
	int	 fd;
	size_t	 k, nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

	for (k = 0; k < nfd; k++) {
		memcpy(&fd, CMSG_DATA(c) + k * sizeof(int), sizeof(fd));
		if (kept == -1)
			kept = fd;
		else
			close(fd);
	}
	return (kept);
}

/* Reads up to RANKS_BATCH datagrams with their senders' credentials. */
static void
ranks_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct agent	*a = arg;
	uint8_t		 buf[AGENT_DGRAM_MAX];
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(struct ucred)) +
				    CMSG_SPACE(RANKS_FDS_MAX * sizeof(int))];
	}		 cbuf;
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*c;
	struct ucred	 cred;
	ssize_t		 n;
	int		 i, have_cred, pidfd;

	(void)what;
	for (i = 0; i < RANKS_BATCH; i++) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
		if (n == -1) {
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != EINTR)
				log_warn("%s: recvmsg", __func__);
			return;
		}
		have_cred = 0;
		pidfd = -1;
		for (c = CMSG_FIRSTHDR(&msg); c != NULL;
		    c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level == SOL_SOCKET &&
			    c->cmsg_type == SCM_CREDENTIALS &&
			    c->cmsg_len >= CMSG_LEN(sizeof(cred))) {
				memcpy(&cred, CMSG_DATA(c), sizeof(cred));
				have_cred = 1;
			} else if (c->cmsg_level == SOL_SOCKET &&
			    c->cmsg_type == SCM_RIGHTS)
				pidfd = ranks_take_fds(c, pidfd);
		}
		/* pid 0: a sender this agent's pid namespace cannot see. */
		if (!have_cred || cred.pid < 0) {
			if (pidfd != -1)
				close(pidfd);
			a->stats.bad_datagrams++;
			if (ranks_log_ok(a))
				log_warnx("%s: datagram without credentials "
				    "dropped", __func__);
			continue;
		}
		if ((msg.msg_flags & MSG_TRUNC) || (size_t)n > sizeof(buf)) {
			a->stats.bad_datagrams++;
			if (ranks_log_ok(a))
				log_warnx("%s: oversized datagram (%zd bytes) "
				    "from pid %ld dropped", __func__, n,
				    (long)cred.pid);
			if (pidfd != -1)
				close(pidfd);
			continue;
		}
		ranks_handle(a, buf, (size_t)n, &cred, pidfd);
	}
}

/* Creates the socket's directory if missing, with the segments' access. */
static int
ranks_mkdir(const char *path, mode_t mode)
{
	char		 dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct stat	 st;
	mode_t		 dmode;

	strcpy(dir, path);
	dirname(dir);
	if (stat(dir, &st) == 0)
		return (0);
	/* Search permission wherever the socket can be written. */
	dmode = (mode & 0770) | ((mode & 0060) ? 0010 : 0) | 0700;
	if (mkdir(dir, dmode) == -1 && errno != EEXIST) {
		log_warn("%s: mkdir %s", __func__, dir);
		return (-1);
	}
	return (0);
}

/*
 * Binds the socket at --socket.  A socket file left by a dead agent is replaced;
 * one that answers belongs to a live agent, and this one refuses to start.
 */
int
ranks_open(struct agent *a)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	int			 fd, probe, on = 1;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(a->opts.socket_path) >= sizeof(sun.sun_path)) {
		log_warnx("%s: socket path too long", __func__);
		return (-1);
	}
	strcpy(sun.sun_path, a->opts.socket_path);
	if (ranks_mkdir(a->opts.socket_path, a->opts.shm_mode) == -1)
		return (-1);
	if (lstat(sun.sun_path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_warnx("%s: %s exists and is not a socket", __func__,
			    sun.sun_path);
			return (-1);
		}
		probe = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (probe != -1 && connect(probe, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0) {
			close(probe);
			log_warnx("%s: another agent serves %s", __func__,
			    sun.sun_path);
			return (-1);
		}
		if (probe != -1)
			close(probe);
		unlink(sun.sun_path);
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		log_warn("%s: socket", __func__);
		return (-1);
	}
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == -1) {
		log_warn("%s: SO_PASSCRED", __func__);
		close(fd);
		return (-1);
	}
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		log_warn("%s: bind %s", __func__, sun.sun_path);
		close(fd);
		return (-1);
	}
	/* Ranks need write access: the same as the segments get. */
	if (chmod(sun.sun_path, a->opts.shm_mode & 0666) == -1)
		log_warn("%s: chmod %s", __func__, sun.sun_path);
	a->rank_fd = fd;
	a->rank_ev = event_new(a->base, fd, EV_READ | EV_PERSIST, ranks_read_cb,
	    a);
	if (a->rank_ev == NULL || event_add(a->rank_ev, NULL) == -1) {
		log_warnx("%s: cannot watch the socket", __func__);
		return (-1);
	}
	return (0);
}

/* Closes and removes the socket. */
void
ranks_close(struct agent *a)
{
	if (a->rank_ev != NULL)
		event_free(a->rank_ev);
	a->rank_ev = NULL;
	if (a->rank_fd != -1) {
		close(a->rank_fd);
		unlink(a->opts.socket_path);
	}
	a->rank_fd = -1;
}
