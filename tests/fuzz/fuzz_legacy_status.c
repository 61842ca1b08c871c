/*
 * Fuzz target: one LegacyStatus (server/legacy.c) an input, as node n1 sends
 * it to the live coordinator of fuzz_coord.c.
 *
 * The input's bytes are the message itself (no frame, no AgentMessage
 * around it), so that every mutation lands in its fields: the job, the
 * dialect, the error and output directory, up to and past 64 windows of any
 * state, removed.  A message that does not decode is what the coordinator
 * would hang up on: nothing to fuzz.  What n1 said stays in the coordinator
 * after its connection closed, until its next hello (the next input's:
 * legacy_forget_node()), so the admin API's check after every
 * $FUZZ_ADMIN_EVERY-th input (fuzz_coord.c), before each rebuild and at exit
 * renders it in the job's status, which must answer 200 with JSON.
 */

#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "fuzz_coord.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Dynprof__V1__AgentMessage	 m = DYNPROF__V1__AGENT_MESSAGE__INIT;
	Dynprof__V1__LegacyStatus	*ls;
	struct fuzz_peer		 p;

	if ((ls = dynprof__v1__legacy_status__unpack(NULL, size, data)) ==
	    NULL)
		return (0);
	fuzz_coord_begin(&p, "fuzz_legacy_status");
	m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_LEGACY;
	m.legacy = ls;
	fuzz_coord_dispatch(&p, &m);
	fuzz_coord_run(&p);
	dynprof__v1__legacy_status__free_unpacked(ls, NULL);
	fuzz_coord_end(&p);
	return (0);
}
