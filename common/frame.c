/* AgentLink framing on libevent buffers. */

#include <sys/socket.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <string.h>

#include <event2/buffer.h>
#include <protobuf-c/protobuf-c.h>

#include "frame.h"

/* Appends the header of a frame of len bytes.  Returns 0 or -1. */
static int
frame_put_header(struct evbuffer *out, size_t len)
{
	uint32_t	 be;
	uint8_t		 hdr[FRAME_HEADER_LEN];

	hdr[0] = 0;
	be = htonl((uint32_t)len);
	memcpy(hdr + 1, &be, sizeof(be));
	return (evbuffer_add(out, hdr, sizeof(hdr)));
}

/*
 * Appends msg to out as one frame.  Returns 0, or -1 if the message is over the
 * limit or the buffer cannot grow.
 */
int
frame_put(struct evbuffer *out, const struct ProtobufCMessage *msg)
{
	struct evbuffer_iovec	 vec;
	size_t			 len;

	len = protobuf_c_message_get_packed_size(msg);
	if (len > FRAME_MAX_LEN)
		return (-1);
	if (frame_put_header(out, len) == -1)
		return (-1);
	if (len == 0)
		return (0);
	if (evbuffer_reserve_space(out, len, &vec, 1) != 1)
		return (-1);
	protobuf_c_message_pack(msg, vec.iov_base);
	vec.iov_len = len;
	if (evbuffer_commit_space(out, &vec, 1) == -1)
		return (-1);
	return (0);
}

/*
 * Appends one frame whose payload is the n pieces of iov, in order: a message
 * packed already, in parts.  Returns 0, or -1 if the payload is over the limit
 * or the buffer cannot grow.
 */
int
frame_put_parts(struct evbuffer *out, const struct iovec *iov, int n)
{
	size_t	 len = 0;
	int	 i;

	for (i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (len > FRAME_MAX_LEN)
		return (-1);
	if (frame_put_header(out, len) == -1)
		return (-1);
	for (i = 0; i < n; i++)
		if (iov[i].iov_len > 0 &&
		    evbuffer_add(out, iov[i].iov_base, iov[i].iov_len) == -1)
			return (-1);
	return (0);
}

/*
 * Looks for one whole frame at the front of in.  On FRAME_READY, *payload points
 * to *len contiguous bytes inside in: decode them, then evbuffer_drain(in,
 * FRAME_HEADER_LEN + *len).  On FRAME_BAD, *why names the problem.
 */
int
frame_pull(struct evbuffer *in, uint8_t **payload, size_t *len,
    const char **why)
{
	uint8_t		 hdr[FRAME_HEADER_LEN];
	uint32_t	 be, n;

	if (evbuffer_get_length(in) < FRAME_HEADER_LEN)
		return (FRAME_MORE);
	if (evbuffer_copyout(in, hdr, sizeof(hdr)) != sizeof(hdr))
		return (FRAME_MORE);
	if (hdr[0] != 0) {
		*why = "frame flag is not 0 (compressed or not a frame)";
		return (FRAME_BAD);
	}
	memcpy(&be, hdr + 1, sizeof(be));
	n = ntohl(be);
	if (n > FRAME_MAX_LEN) {
		*why = "frame length over the 4 MiB limit";
		return (FRAME_BAD);
	}
	if (evbuffer_get_length(in) < FRAME_HEADER_LEN + (size_t)n)
		return (FRAME_MORE);
	*payload = evbuffer_pullup(in, FRAME_HEADER_LEN + (ssize_t)n);
	if (*payload == NULL) {
		*why = "out of memory";
		return (FRAME_BAD);
	}
	*payload += FRAME_HEADER_LEN;
	*len = n;
	return (FRAME_READY);
}

/*
 * Takes the next whole frame off in and decodes it as a message of type desc.
 * FRAME_READY: *msg is the message (caller frees it with
 * protobuf_c_message_free_unpacked()).  FRAME_MORE: nothing taken yet.
 * FRAME_BAD: the stream is broken (*why says how).  FRAME_UNDECODABLE: a frame
 * was taken but is not such a message.  Either failure should close the stream.
 */
int
frame_next(struct evbuffer *in, const struct ProtobufCMessageDescriptor *desc,
    struct ProtobufCMessage **msg, const char **why)
{
	uint8_t	*payload;
	size_t	 len;
	int	 rc;

	if ((rc = frame_pull(in, &payload, &len, why)) != FRAME_READY)
		return (rc);
	*msg = protobuf_c_message_unpack(desc, NULL, len, payload);
	evbuffer_drain(in, FRAME_HEADER_LEN + len);
	if (*msg == NULL) {
		*why = "message does not decode";
		return (FRAME_UNDECODABLE);
	}
	return (FRAME_READY);
}

/*
 * Sets what every AgentLink TCP stream wants: TCP_NODELAY, because frames are
 * small and a push must not wait behind an unacknowledged heartbeat (Nagle).
 * Returns 0, or -1 with errno.
 */
int
frame_socket_tune(int fd)
{
	int	 one = 1;

	return (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)));
}
