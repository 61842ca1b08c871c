/*
 * Rank events: each is appended to the event log of the rank's slot, which the
 * agent reads and acknowledges once the coordinator committed it
 * (docs/events.md); the slot also keeps the last state, under the slot's
 * seqlock.  Then one nanopb-encoded RankEvent goes to the node's agent per unix
 * datagram, only to wake it up: sending never blocks, and when no agent takes
 * the datagram the agent finds the event in the log later.  Each datagram
 * carries the slot's token and a pidfd of this process, which name it to an
 * agent in another pid namespace (docs/containers.md).
 */

#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pb_encode.h>

#include "clock.h"
#include "dynprof.pb.h"
#include "libdynprof.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434	/* every architecture but alpha */
#endif

_Static_assert(EVENT_ATTACHED == dynprof_v1_EventKind_EVENT_ATTACHED &&
    EVENT_STARTED == dynprof_v1_EventKind_EVENT_STARTED &&
    EVENT_STOPPED == dynprof_v1_EventKind_EVENT_STOPPED &&
    EVENT_SKIPPED == dynprof_v1_EventKind_EVENT_SKIPPED &&
    EVENT_FAILED == dynprof_v1_EventKind_EVENT_FAILED &&
    EVENT_DETACHED == dynprof_v1_EventKind_EVENT_DETACHED &&
    EVENT_FAILED == SEG_EVENT_FAILED, "event kinds match the proto");
_Static_assert((int)DYNPROF_STOP_COMPLETED ==
    dynprof_v1_StopReason_STOP_COMPLETED &&
    (int)DYNPROF_STOP_CANCELLED == dynprof_v1_StopReason_STOP_CANCELLED &&
    (int)DYNPROF_STOP_CLOSED == dynprof_v1_StopReason_STOP_CLOSED,
    "stop reasons match the proto");
_Static_assert(sizeof(((dynprof_v1_RankEvent *)0)->output_dir) ==
    SEG_PATH_MAX && sizeof(((dynprof_v1_RankEvent *)0)->error) ==
    SEG_ERROR_MAX && sizeof(((dynprof_v1_RankEvent *)0)->job) ==
    SEG_JOB_MAX + 1, "nanopb sizes match the segment's");

/*
 * Prepares the datagram socket to the agent at path, and a pidfd of this
 * process to pass along (none on a kernel before 5.3 or when it is refused:
 * the agent then knows the rank by its pid only, as before).  Returns
 * DYNPROF_OK, DYNPROF_EPATH when path does not fit a unix socket address, or
 * DYNPROF_ESYS.
 */
int
report_open(struct dynprof *h, const char *path)
{
	long	 fd;

	if (h->pidfd == -1 && (fd = syscall(SYS_pidfd_open, h->pid, 0)) >= 0)
		h->pidfd = (int)fd;
	else if (h->pidfd == -1)
		handle_log(h, DYNPROF_LOG_INFO, "%s: no pidfd (%s): an agent in "
		    "another pid namespace cannot tell when this rank exits",
		    __func__, strerror(errno));
	memset(&h->agent_addr, 0, sizeof(h->agent_addr));
	h->agent_addr.sun_family = AF_UNIX;
	if (path == NULL || *path == '\0' ||
	    strlen(path) >= sizeof(h->agent_addr.sun_path))
		return (DYNPROF_EPATH);
	memcpy(h->agent_addr.sun_path, path, strlen(path));
	h->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->sock == -1)
		return (DYNPROF_ESYS);
	return (DYNPROF_OK);
}

/* Closes the socket to the agent. */
void
report_close(struct dynprof *h)
{
	if (h->sock != -1)
		close(h->sock);
	h->sock = -1;
	if (h->pidfd != -1)
		close(h->pidfd);
	h->pidfd = -1;
}

/*
 * Sends len bytes of buf to the agent, with this process's pidfd when it has
 * one; never blocks.  When a datagram with the pidfd is refused for any
 * reason but the agent's absence or a full socket, it is sent again without:
 * if that goes (a security module forbids passing the pidfd, say), the pidfd
 * is dropped for good.  Returns what sendmsg() does.
 */
static ssize_t
report_send(struct dynprof *h, const uint8_t *buf, size_t len)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	}		 cbuf;
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*c;
	ssize_t		 n;
	int		 saved;

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = (void *)buf;
	iov.iov_len = len;
	msg.msg_name = &h->agent_addr;
	msg.msg_namelen = sizeof(h->agent_addr);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (h->pidfd != -1) {
		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &h->pidfd, sizeof(int));
	}
	n = sendmsg(h->sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n != -1 || h->pidfd == -1 || errno == ENOENT ||
	    errno == ECONNREFUSED || errno == EAGAIN || errno == EWOULDBLOCK)
		return (n);
	saved = errno;
	msg.msg_control = NULL;
	msg.msg_controllen = 0;
	if ((n = sendmsg(h->sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL)) == -1)
		return (n);
	handle_log(h, DYNPROF_LOG_WARNING, "%s: a datagram with this rank's "
	    "pidfd is refused (%s): sent without it from now on", __func__,
	    strerror(saved));
	close(h->pidfd);
	h->pidfd = -1;
	return (n);
}

/*
 * Asks the agent to make this process's segment directory, or to take its name
 * back from another user (RankEvent.make_dir): the agent learns the uid from
 * the kernel.  Returns 0 when the datagram went, -1 with errno (no agent).
 */
int
report_make_dir(struct dynprof *h, const char *job)
{
	dynprof_v1_RankEvent	 ev = dynprof_v1_RankEvent_init_zero;
	uint8_t			 buf[dynprof_v1_RankEvent_size];
	pb_ostream_t		 os;

	if (h->sock == -1) {
		errno = ENOTCONN;
		return (-1);
	}
	snprintf(ev.job, sizeof(ev.job), "%s", job);
	ev.rank = h->rank;
	ev.pid = (int32_t)h->pid;
	ev.make_dir = true;
	os = pb_ostream_from_buffer(buf, sizeof(buf));
	if (!pb_encode(&os, dynprof_v1_RankEvent_fields, &ev)) {
		errno = EINVAL;
		return (-1);
	}
	return (report_send(h, buf, os.bytes_written) ==
	    (ssize_t)os.bytes_written ? 0 : -1);
}

/* Copies src (NULL: "") into dst, cut to len - 1 bytes. */
static void
report_copy(char *dst, size_t len, const char *src)
{
	if (src == NULL)
		src = "";
	snprintf(dst, len, "%s", src);
}

/*
 * Appends the event to the slot's log, where the agent reads it (the datagram
 * only wakes the agent up).  The text kept is what the coordinator keeps: the
 * error of a failed event, the output directory of the others (relative to
 * the slot's output_root, written at the claim).  It never
 * blocks: when the agent has not acknowledged the oldest entry the ring
 * overwrites it, and the first such loss is logged.
 */
static void
report_log(struct dynprof *h, const dynprof_v1_RankEvent *ev)
{
	struct seg_log_entry	 entry, *e = &entry;

	/* A slot taken from this rank (it claims another at its next slow
	 * step) is its new holder's log: never write there. */
	if (atomic_load_explicit(&h->slot->pid, memory_order_relaxed) != h->pid)
		return;
	e->kind = (uint32_t)ev->kind;
	e->window_id = ev->window_id;
	e->reason = (uint32_t)ev->reason;
	e->start_step = ev->start_step;
	e->stop_step = ev->stop_step;
	e->step = ev->step;
	e->generation = ev->generation;
	e->time_ns = ev->time_unix_ns;
	e->rank_seq = ev->rank_seq;
	e->pid = ev->pid;
	if (ev->kind == dynprof_v1_EventKind_EVENT_FAILED)
		report_copy(e->text, sizeof(e->text), ev->error);
	else if (slotlog_set_dir(e, h->output_root, ev->output_dir) == -1)
		handle_log(h, DYNPROF_LOG_ERROR, "%s: output directory %s is "
		    "not a short path under %s: the agent gets it cut",
		    __func__, ev->output_dir, h->output_root);
	if (slotlog_append(h->slot, e) && h->log_overwritten++ == 0)
		handle_log(h, DYNPROF_LOG_WARNING, "%s: no agent acknowledged "
		    "the last %d events: the oldest is overwritten", __func__,
		    SEG_LOG_ENTRIES);
}

/*
 * Writes the event into the rank's slot under the slot's seqlock.  A detached
 * event only sets the state (GONE) and the sequence number: the slot keeps the
 * last window's event (which window, its steps, how it ended, its output
 * directory), so that an agent which was away re-reports that final state.
 */
static void
report_slot(struct dynprof *h, const dynprof_v1_RankEvent *ev)
{
	struct seg_slot		*slot = h->slot;

	report_log(h, ev);
	segment_slot_update_begin(slot);
	slot->state = h->state;
	slot->rank_seq = ev->rank_seq;
	if (ev->kind == dynprof_v1_EventKind_EVENT_DETACHED) {
		segment_slot_update_end(slot);
		return;
	}
	slot->window_id = ev->window_id;
	slot->last_event = (uint32_t)ev->kind;
	slot->start_step = ev->start_step;
	slot->stop_step = ev->stop_step;
	slot->event_step = ev->step;
	slot->event_time_ns = ev->time_unix_ns;
	slot->generation = ev->generation;
	slot->reason = (uint32_t)ev->reason;
	memcpy(slot->output_dir, ev->output_dir, sizeof(slot->output_dir));
	memcpy(slot->error, ev->error, sizeof(slot->error));
	segment_slot_update_end(slot);
}

/*
 * Reports an event of this rank: kind, the window concerned (or NULL), the rank's
 * step, the stop reason (0 unless stopped) and an error message (or NULL).  The
 * output directory is the handle's current one for started and stopped events.
 * h->state must already be the state after the event.
 */
void
report_event(struct dynprof *h, int kind, const struct seg_window *w,
    int64_t step, uint32_t reason, const char *error)
{
	dynprof_v1_RankEvent	 ev = dynprof_v1_RankEvent_init_zero;
	uint8_t			 buf[dynprof_v1_RankEvent_size];
	pb_ostream_t		 os;

	ev.kind = (dynprof_v1_EventKind)kind;
	report_copy(ev.job, sizeof(ev.job), h->seg.job);
	ev.rank = h->rank;
	ev.pid = (int32_t)h->pid;
	ev.slot = (uint32_t)h->slot_index;
	ev.slot_token = h->slot->token;
	if (w != NULL) {
		ev.window_id = w->id;
		ev.start_step = w->start_step;
		ev.stop_step = w->stop_step;
	}
	ev.step = step;
	if (kind == EVENT_STARTED || kind == EVENT_STOPPED ||
	    (kind == EVENT_FAILED && w != NULL))
		report_copy(ev.output_dir, sizeof(ev.output_dir),
		    h->output_dir);
	ev.reason = (dynprof_v1_StopReason)reason;
	report_copy(ev.error, sizeof(ev.error), error);
	ev.generation = h->cfg->generation;
	ev.time_unix_ns = clock_wall_ns();
	ev.rank_seq = ++h->rank_seq;

	report_slot(h, &ev);

	os = pb_ostream_from_buffer(buf, sizeof(buf));
	if (!pb_encode(&os, dynprof_v1_RankEvent_fields, &ev)) {
		handle_log(h, DYNPROF_LOG_ERROR, "%s: cannot encode event: %s",
		    __func__, PB_GET_ERROR(&os));
		h->stats.events_dropped++;
		return;
	}
	if (h->sock == -1 || report_send(h, buf, os.bytes_written) !=
	    (ssize_t)os.bytes_written) {
		if (h->stats.events_dropped++ == 0)
			handle_log(h, DYNPROF_LOG_INFO, "%s: no agent at %s (%s): "
			    "events are kept in the slot only", __func__,
			    h->agent_addr.sun_path, h->sock == -1 ? "no socket" :
			    strerror(errno));
		return;
	}
	h->stats.events_sent++;
}
