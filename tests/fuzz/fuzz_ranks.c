/*
 * Fuzz target: a rank's datagram as the agent reads it (agent/ranks.c): the
 * bytes are decoded and checked by ranks_decode() as if the kernel said pid
 * FUZZ_PID sent them, and what passes is checked against a real segment by
 * ranks_check_slot(), as the agent does before it believes an event.  The
 * segment (slot 0 held by FUZZ_PID for rank 3, slot 1 left GONE by rank 5)
 * lives in a private directory made at the first input and removed at exit.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_JOB	"fuzzjob"
#define FUZZ_PID	4242

static struct segment	 fuzz_seg;
static char		 fuzz_dir[64];
static int		 fuzz_ready;

static void
fuzz_cleanup(void)
{
	segment_close(&fuzz_seg);
	segment_unlink(fuzz_dir, FUZZ_JOB);
	rmdir(fuzz_dir);
}

static void
fuzz_setup(void)
{
	int	 gone;

	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/dpfuzz.XXXXXX",
	    getenv("TMPDIR") != NULL ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(fuzz_dir) == NULL ||
	    segment_open(&fuzz_seg, fuzz_dir, FUZZ_JOB, SEG_CREATE,
	    0600) != SEG_OK) {
		perror("fuzz_ranks: segment");
		abort();
	}
	atexit(fuzz_cleanup);
	/* Slot 0: rank 3, held by this process.  Slot 1: rank 5, gone. */
	if (segment_slot_claim(&fuzz_seg, FUZZ_PID, 3, NULL) != 0 ||
	    (gone = segment_slot_claim(&fuzz_seg, FUZZ_PID + 1, 5, NULL)) != 1)
		abort();
	segment_slot_release(&fuzz_seg, gone, FUZZ_PID + 1);
	fuzz_ready = 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Dynprof__V1__RankEvent	*ev;
	const char		*why = NULL;
	int			 rc;

	if (!fuzz_ready)
		fuzz_setup();
	if (size > AGENT_DGRAM_MAX)
		return (0);	/* the agent drops these unread */
	rc = ranks_decode(data, size, FUZZ_PID, &ev, &why);
	if (rc == RANKS_UNDECODABLE) {
		if (ev != NULL)
			abort();
		return (0);
	}
	if (rc == RANKS_BAD_JOB && why == NULL)
		abort();
	/* The agent looks the job's segment up: only this one is served. */
	if (rc == RANKS_OK && strcmp(ev->job, FUZZ_JOB) == 0)
		(void)ranks_check_slot(&fuzz_seg, ev, FUZZ_PID);
	dynprof__v1__rank_event__free_unpacked(ev, NULL);
	return (0);
}
