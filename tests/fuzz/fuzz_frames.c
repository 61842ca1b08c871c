/*
 * Fuzz target: AgentLink frames (common/frame.c) and the protobuf messages in
 * them, as both daemons read them off a TCP stream.  The bytes go into an
 * evbuffer in two parts (a frame split across reads); frame_next() takes frames
 * off until it wants more or the stream is broken, once as the coordinator reads
 * (AgentMessage) and once as the agent reads (CoordinatorMessage).  What decodes
 * is packed again (it must be), and a pushed JobConfig goes through the agent's
 * checks (apply_jobconfig(), which decides what ranks will trust).  The
 * coordinator's checks of an AgentMessage need a live struct coord and
 * connection, so they are not reached here.
 */

#include <stdint.h>
#include <stdlib.h>

#include <event2/buffer.h>
#include <protobuf-c/protobuf-c.h>

#include "agent.h"
#include "frame.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct seg_config	 fuzz_config;

/* Packs msg again: a decoded message must always encode. */
static void
fuzz_repack(const ProtobufCMessage *msg)
{
	uint8_t	*buf;
	size_t	 len, n;

	len = protobuf_c_message_get_packed_size(msg);
	if ((buf = malloc(len + 1)) == NULL)
		return;
	n = protobuf_c_message_pack(msg, buf);
	if (n != len)
		abort();
	free(buf);
}

static void
fuzz_coordinator_message(const Dynprof__V1__CoordinatorMessage *m)
{
	const char	*why;

	if (m->body_case == DYNPROF__V1__COORDINATOR_MESSAGE__BODY_CONFIG &&
	    m->config != NULL)
		(void)apply_jobconfig(m->config, &fuzz_config, &why);
}

/* Takes every frame off the bytes, decoding each as desc. */
static void
fuzz_stream(const uint8_t *data, size_t size,
    const ProtobufCMessageDescriptor *desc)
{
	struct evbuffer		*in;
	ProtobufCMessage	*msg;
	const char		*why;
	size_t			 half = size / 2;
	int			 part, rc;

	if ((in = evbuffer_new()) == NULL)
		return;
	for (part = 0; part < 2; part++) {
		if (evbuffer_add(in, data + (part ? half : 0),
		    part ? size - half : half) == -1)
			break;
		while ((rc = frame_next(in, desc, &msg, &why)) == FRAME_READY) {
			fuzz_repack(msg);
			if (desc == &dynprof__v1__coordinator_message__descriptor)
				fuzz_coordinator_message(
				    (Dynprof__V1__CoordinatorMessage *)msg);
			protobuf_c_message_free_unpacked(msg, NULL);
		}
		if (rc != FRAME_MORE)
			break;		/* the daemon closes the stream */
	}
	evbuffer_free(in);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_stream(data, size, &dynprof__v1__agent_message__descriptor);
	fuzz_stream(data, size, &dynprof__v1__coordinator_message__descriptor);
	return (0);
}
