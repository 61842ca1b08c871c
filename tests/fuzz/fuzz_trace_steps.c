/*
 * Fuzz target: a rank's trace as the agent reads it while packing it
 * (agent/trace_steps.c), and the summary's text form (common/tracesum.c).
 * The first byte picks the file's name (a torch trace, gzipped or not, a
 * trace_view.json, trace.json) and the chunk size; the rest is the file.
 * What the reader gives must pass tracesum_check(), encode under
 * TRACESUM_TEXT_MAX and decode to itself; the input read as a summary's
 * text either fails or passes the check too.
 */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "tracesum.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *const fuzz_names[] = { "r/a.pt.trace.json",
    "a.pt.trace.json.gz", "ASCEND_PROFILER_OUTPUT/trace_view.json",
    "trace.json" };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct trace_steps	*t;
	struct tracesum			 s, back;
	char				 text[TRACESUM_TEXT_MAX], again[TRACESUM_TEXT_MAX];
	char				*copy;
	const char			*why;
	size_t				 chunk, off, n;

	if (size < 1)
		return (0);
	if (t == NULL && (t = trace_steps_new()) == NULL)
		abort();
	if (trace_steps_begin(t, fuzz_names[data[0] & 3]) != 1)
		abort();
	chunk = 1 + (data[0] >> 2) * 17;
	for (off = 1; off < size; off += n) {
		n = size - off < chunk ? size - off : chunk;
		trace_steps_feed(t, data + off, n);
	}
	trace_steps_result(t, &s);
	if (tracesum_check(&s, &why) != 0 ||
	    tracesum_encode(&s, text, sizeof(text)) != 0 ||
	    tracesum_decode(text, &back, &why) != 0 ||
	    tracesum_encode(&back, again, sizeof(again)) != 0 ||
	    strcmp(text, again) != 0)
		abort();
	/* The input as a stored summary's text. */
	if ((copy = malloc(size)) == NULL)
		return (0);
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = '\0';
	if (tracesum_decode(copy, &s, &why) == 0 &&
	    (tracesum_check(&s, &why) != 0 ||
	    tracesum_encode(&s, text, sizeof(text)) != 0))
		abort();
	free(copy);
	return (0);
}
