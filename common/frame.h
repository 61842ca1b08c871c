/*
 * AgentLink framing, as gRPC frames messages: one flag byte (0, uncompressed), a
 * 4-byte big-endian length, then that many bytes of protobuf.
 */

#ifndef DYNPROF_FRAME_H
#define DYNPROF_FRAME_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct iovec;
struct ProtobufCMessage;

#define FRAME_HEADER_LEN	5
#define FRAME_MAX_LEN		(4U * 1024 * 1024)	/* payload limit, docs/design.md */

/* frame_pull() results. */
#define FRAME_MORE		0	/* no whole frame buffered yet */
#define FRAME_READY		1	/* *len bytes at *payload */
#define FRAME_BAD		-1	/* *why says why; close the connection */
#define FRAME_UNDECODABLE	-2	/* a whole frame that is not the message */

struct ProtobufCMessageDescriptor;

/* frame.c */
int	 frame_socket_tune(int);
int	 frame_put(struct evbuffer *, const struct ProtobufCMessage *);
int	 frame_put_parts(struct evbuffer *, const struct iovec *, int);
int	 frame_pull(struct evbuffer *, uint8_t **, size_t *, const char **);
int	 frame_next(struct evbuffer *, const struct ProtobufCMessageDescriptor *,
	    struct ProtobufCMessage **, const char **);

#endif /* DYNPROF_FRAME_H */
