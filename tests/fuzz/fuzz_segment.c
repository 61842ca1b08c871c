/*
 * Fuzz target: a segment file's bytes, as every process that maps one checks
 * them (common/segment.c).  segment_validate() must refuse anything whose sizes
 * and offsets do not fit the bytes; what it accepts is then read without a
 * mapping, through a struct segment pointing into an aligned copy, the way the
 * agent, the library and dynprofctl read a mapped one: the config under its
 * seqlock, made safe and judged window by window as the library does
 * (lib/window.c), and every slot, its event log the agent's way (the root once,
 * each entry's output directory rebuilt on it: agent/segments.c).
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jobid.h"
#include "libdynprof.h"
#include "segment.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct seg_config	 fuzz_config;
static struct seg_slot		 fuzz_slot;

/* Reads slot's log as events_read_log() does: every string stays bounded. */
static void
fuzz_read_log(const struct seg_slot *slot)
{
	struct seg_log_entry	 e;
	char			 root[SEG_PATH_MAX], dir[SEG_PATH_MAX];
	uint32_t		 inc, head, seq, first;

	head = slotlog_head(slot, &inc);
	if (segment_slot_root(slot, inc, root, sizeof(root)) == -1)
		return;
	if (strlen(root) >= sizeof(root))
		abort();
	first = head > SEG_LOG_ENTRIES ? head - SEG_LOG_ENTRIES + 1 : 1;
	for (seq = first; seq <= head && seq != 0; seq++) {
		if (slotlog_read(slot, inc, seq, &e) != 0)
			continue;
		if (strlen(e.text) >= sizeof(e.text))
			abort();
		(void)slotlog_dir(&e, root, dir, sizeof(dir));
		if (strlen(dir) >= sizeof(dir))
			abort();
	}
}

static void
fuzz_read(const uint8_t *data, size_t size, const struct seg_layout *lay)
{
	struct segment	 seg;
	uint8_t		*copy;
	const char	*why;
	uint32_t	 i;

	/* mmap gives page alignment; 64 is what the layout asks for. */
	if ((copy = aligned_alloc(64, (size + 63) / 64 * 64)) == NULL)
		return;
	memcpy(copy, data, size);
	memset(&seg, 0, sizeof(seg));
	seg.hdr = (struct seg_header *)copy;
	seg.size = size;
	seg.nslots = lay->nslots;
	seg.config = (struct seg_config *)(copy + lay->config_offset);
	seg.slots = (struct seg_slot *)(copy + lay->slots_offset);
	/*
	 * An odd sequence number is a writer mid-update: readers spin through
	 * their bounded retries and give up (SEG_ETORN).  Make them even, or
	 * every input would spin; the torn path is the stress test's.
	 */
	atomic_fetch_and(&seg.hdr->seq, ~1U);
	if (segment_read_config(&seg, &fuzz_config, NULL) == SEG_OK) {
		if (fuzz_config.nwindows > SEG_MAX_WINDOWS)
			abort();
		window_config_sanitize(&fuzz_config);
		for (i = 0; i < fuzz_config.nwindows; i++) {
			if (window_check(&fuzz_config.windows[i], &why))
				(void)window_targets(&fuzz_config.windows[i],
				    (int32_t)i);
			(void)window_is_cancelled(&fuzz_config,
			    fuzz_config.windows[i].id);
		}
	}
	for (i = 0; i < seg.nslots; i++) {
		atomic_fetch_and(&seg.slots[i].seq, ~1U);
		if (segment_slot_read(&seg, (int)i, &fuzz_slot) == SEG_OK &&
		    (strlen(fuzz_slot.output_dir) >= SEG_PATH_MAX ||
		    strlen(fuzz_slot.error) >= SEG_ERROR_MAX ||
		    strlen(fuzz_slot.output_root) >= SEG_PATH_MAX))
			abort();
		fuzz_read_log(&seg.slots[i]);
	}
	if (segment_slot_read(&seg, (int)seg.nslots, &fuzz_slot) !=
	    SEG_ESIZE || segment_slot_read(&seg, -1, &fuzz_slot) != SEG_ESIZE)
		abort();
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seg_layout	 lay;
	int			 rc;

	rc = segment_check(data, size, &lay);
	if (segment_strerror(rc) == NULL || rc != segment_validate(data, size))
		abort();
	if (rc == SEG_OK)
		fuzz_read(data, size, &lay);
	return (0);
}
