/*
 * Fuzz target: the coordinator's handling of every AgentMessage after a hello
 * (server/link.c), LegacyStatus among them, with state, on the live
 * coordinator of fuzz_coord.c.
 *
 * Each input is a stream of AgentLink frames sent by node n1: every frame
 * that decodes as an AgentMessage goes through link_dispatch() as
 * link_read() would pass it, until the connection is closing; an
 * undecodable frame is skipped (the server would hang up) so that sequences
 * go on.  A Heartbeat lets the event loop run (the group commit, the acks).
 */

#include <stdint.h>

#include <event2/buffer.h>
#include <protobuf-c/protobuf-c.h>

#include "frame.h"
#include "fuzz_coord.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer			*in;
	ProtobufCMessage		*msg;
	Dynprof__V1__AgentMessage	*m;
	struct fuzz_peer		 p;
	const char			*why;
	int				 rc, kind;

	fuzz_coord_begin(&p, "fuzz_coord_dispatch");
	if ((in = evbuffer_new()) == NULL || evbuffer_add(in, data, size) == -1)
		fuzz_coord_fail("evbuffer");
	while (p.conn->state != CONN_CLOSING) {
		rc = frame_next(in, &dynprof__v1__agent_message__descriptor,
		    &msg, &why);
		if (rc == FRAME_UNDECODABLE)
			continue;
		if (rc != FRAME_READY)
			break;
		m = (Dynprof__V1__AgentMessage *)msg;
		kind = m->body_case;
		fuzz_coord_dispatch(&p, m);
		protobuf_c_message_free_unpacked(msg, NULL);
		if (kind == DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT)
			fuzz_coord_run(&p);
	}
	evbuffer_free(in);
	fuzz_coord_end(&p);
	return (0);
}
