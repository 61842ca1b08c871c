/*
 * The agent's trace reader (agent/trace_steps.c) and the summary's text form
 * (common/tracesum.c): the steps and operators of torch.profiler's two JSON
 * forms (Kineto's object, the autograd export's array), whatever the chunks
 * the packer cuts them into; gzip; hostile traces (not JSON, truncated,
 * nested deep, a string of 300 MiB, gzip that is not) each give their
 * reason and keep what came before; memory stays bounded on 512 MiB of
 * events and on one 300 MiB string.
 */

#include <sys/resource.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "agent.h"
#include "dynprof.pb-c.h"
#include "tracesum.h"

static const char kineto[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0}],\n"
    "\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
    "\"ProfilerStep#7\", \"pid\": 1, \"tid\": 1, \"ts\": 10.5, "
    "\"dur\": 2000.4, \"args\": {\"name\": \"ProfilerStep#99\", "
    "\"dur\": 1}},\n"
    "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": "
    "\"ProfilerStep#7\", \"ts\": 11, \"dur\": 999999},\n"
    "{\"name\": \"aten::mm\", \"ph\": \"X\", \"cat\": \"cpu_op\", "
    "\"dur\": 300, \"args\": {\"Input Dims\": [[2, 2], [2, 2]]}},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"volta_sgemm\", "
    "\"dur\": 1e3},\n"
    "{\"ph\": \"X\", \"cat\": \"python_function\", \"name\": \"big\", "
    "\"dur\": 99999},\n"
    "{\"ph\": \"i\", \"cat\": \"cpu_op\", \"name\": \"instant\", "
    "\"dur\": 5},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": "
    "\"ProfilerStep#8\", \"ts\": 3000, \"dur\": 1500},\n"
    "{\"name\": \"aten::mm\", \"ph\": \"X\", \"cat\": \"cpu_op\", "
    "\"dur\": 200}\n"
    "], \"traceName\": \"x\", \"ProfilerStep#1\": {\"ph\": \"X\"}}\n";

static const char autograd[] =
    "[{\"name\": \"ProfilerStep#0\", \"ph\": \"X\", \"ts\": 128, "
    "\"dur\": 10768, \"tid\": 1, \"pid\": \"CPU functions\", "
    "\"args\": {}}, {\"name\": \"aten::addmm\", \"ph\": \"X\", "
    "\"ts\": 201, \"dur\": 81, \"tid\": 1, \"pid\": \"CPU functions\", "
    "\"args\": {}}, {\"name\": \"ProfilerStep#1\", \"ph\": \"X\", "
    "\"ts\": 10932, \"dur\": 10463}]";

/*
 * Two steps and the spans of communication a DDP job leaves (gloo's on its
 * own thread, c10d's launch on the main one, an NCCL kernel on a stream,
 * overlapping), HCCL's and MindSpore's names, a span that starts before
 * its step is listed, one that runs past its step's end, and compute that
 * only looks like a collective (aten::broadcast_tensors, BroadcastTo).
 */
static const char comm[] =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"name\": \"ProfilerStep#1\", \"tid\": 1, "
    "\"ts\": 1000, \"dur\": 10000},\n"
    "{\"ph\": \"X\", \"name\": \"c10d::allreduce_\", \"tid\": 1, "
    "\"ts\": 1900, \"dur\": 200},\n"
    "{\"ph\": \"X\", \"name\": \"gloo:all_reduce\", \"tid\": 3, "
    "\"ts\": 2000.4, \"dur\": 6000},\n"
    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
    "\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\", \"ts\": 7000, "
    "\"dur\": 2000},\n"
    "{\"ph\": \"X\", \"name\": \"aten::broadcast_tensors\", "
    "\"ts\": 9500, \"dur\": 500},\n"
    "{\"ph\": \"X\", \"name\": \"BroadcastTo-op3\", "
    "\"ts\": 9500, \"dur\": 500},\n"
    "{\"ph\": \"X\", \"name\": \"hcom_allReduce__571_1\", "
    "\"ts\": 20000, \"dur\": 3000},\n"
    "{\"ph\": \"X\", \"name\": \"Default/Send-op1\", "
    "\"ts\": 12000, \"dur\": 500},\n"
    "{\"ph\": \"X\", \"name\": \"ProfilerStep#2\", \"tid\": 1, "
    "\"ts\": 11000, \"dur\": 10000}\n"
    "]}\n";

/* Reads the len bytes at p as file name, in chunks of chunk bytes. */
static void
read_as(const char *name, const char *p, size_t len, size_t chunk,
    struct tracesum *sum)
{
	struct trace_steps	*t;
	size_t			 off, n;

	assert_non_null(t = trace_steps_new());
	assert_int_equal(trace_steps_begin(t, name), 1);
	for (off = 0; off < len; off += n) {
		n = len - off < chunk ? len - off : chunk;
		trace_steps_feed(t, p + off, n);
	}
	trace_steps_result(t, sum);
	trace_steps_free(t);
}

static void
check_kineto(const struct tracesum *s)
{
	assert_string_equal(s->format, "kineto");
	assert_string_equal(s->error, "");
	assert_int_equal(s->nsteps, 2);
	assert_int_equal(s->steps[0].step, 7);
	assert_int_equal(s->steps[0].dur_us, 2000);
	assert_int_equal(s->steps[1].step, 8);
	assert_int_equal(s->steps[1].dur_us, 1500);
	/* kernel 1000, aten::mm 500 (twice); python_function not counted. */
	assert_int_equal(s->nops, 2);
	assert_string_equal(s->ops[0].name, "volta_sgemm");
	assert_int_equal(s->ops[0].total_us, 1000);
	assert_string_equal(s->ops[1].name, "aten::mm");
	assert_int_equal(s->ops[1].total_us, 500);
	assert_int_equal(s->ops[1].count, 2);
}

static void
test_kineto_any_chunks(void **state)
{
	struct tracesum	 s;
	size_t		 chunk;

	(void)state;
	for (chunk = 1; chunk <= sizeof(kineto); chunk++) {
		read_as("d/host_1.123.pt.trace.json", kineto,
		    sizeof(kineto) - 1, chunk, &s);
		check_kineto(&s);
	}
}

static void
test_autograd_array(void **state)
{
	struct tracesum	 s;
	char		 text[TRACESUM_TEXT_MAX];
	struct tracesum	 back;
	const char	*why = NULL;

	(void)state;
	read_as("x.pt.trace.json", autograd, sizeof(autograd) - 1, 7, &s);
	assert_string_equal(s.error, "");
	assert_int_equal(s.nsteps, 2);
	assert_int_equal(s.steps[0].dur_us, 10768);
	assert_int_equal(s.steps[1].dur_us, 10463);
	assert_int_equal(s.nops, 1);
	assert_string_equal(s.ops[0].name, "aten::addmm");
	/* The text form and back. */
	assert_int_equal(tracesum_encode(&s, text, sizeof(text)), 0);
	assert_int_equal(tracesum_decode(text, &back, &why), 0);
	assert_int_equal(back.nsteps, 2);
	assert_int_equal(back.steps[1].step, 1);
	assert_string_equal(back.ops[0].name, "aten::addmm");
	assert_int_equal(tracesum_step_median(&back), 10463);
}

static void
test_gzip(void **state)
{
	struct tracesum	 s;
	z_stream	 z;
	unsigned char	 gz[4096];

	(void)state;
	memset(&z, 0, sizeof(z));
	assert_int_equal(deflateInit2(&z, 9, Z_DEFLATED, 16 + MAX_WBITS, 8,
	    Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (unsigned char *)(uintptr_t)kineto;
	z.avail_in = sizeof(kineto) - 1;
	z.next_out = gz;
	z.avail_out = sizeof(gz);
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	read_as("a.pt.trace.json.gz", (const char *)gz, z.total_out, 13, &s);
	deflateEnd(&z);
	check_kineto(&s);
	/* Not gzip at all. */
	read_as("b.pt.trace.json.gz", kineto, sizeof(kineto) - 1, 100, &s);
	assert_non_null(strstr(s.error, "b.pt.trace.json.gz: not gzip"));
}

static void
test_hostile(void **state)
{
	struct tracesum	 s;
	const char	*bad_name = "[{\"name\": \"a\\u0001\xff\", \"ph\": "
			    "\"X\", \"dur\": 5}]";
	char		*deep;
	size_t		 i;

	(void)state;
	/* Truncated: what came before counts. */
	read_as("t.pt.trace.json", kineto, 600, 64, &s);
	assert_non_null(strstr(s.error, "t.pt.trace.json: truncated"));
	assert_int_equal(s.nsteps, 1);
	assert_int_equal(s.steps[0].step, 7);
	/* Not JSON. */
	read_as("n.pt.trace.json", "\x7f" "ELF\x01\x02", 6, 64, &s);
	assert_non_null(strstr(s.error, "n.pt.trace.json: not JSON"));
	assert_int_equal(s.nsteps, 0);
	read_as("e.pt.trace.json", "", 0, 64, &s);
	assert_non_null(strstr(s.error, "e.pt.trace.json: empty"));
	/* Deep nesting. */
	assert_non_null(deep = malloc(100000));
	for (i = 0; i < 100000; i++)
		deep[i] = '[';
	read_as("d.pt.trace.json", deep, 100000, 4096, &s);
	assert_non_null(strstr(s.error, "nested over 64 deep"));
	free(deep);
	/* A name that is not UTF-8, control characters: '?'. */
	read_as("u.pt.trace.json", bad_name, strlen(bad_name), 64, &s);
	assert_string_equal(s.error, "");
	assert_int_equal(s.nops, 1);
	assert_string_equal(s.ops[0].name, "a??");
}

/* The process's peak RSS in KiB. */
static long
peak_kib(void)
{
	struct rusage	 ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_maxrss);
}

static void
test_memory_bound(void **state)
{
	struct trace_steps	*t;
	struct tracesum		 s;
	char			*chunk, ev[256];
	size_t			 off = 0, n, total = 0;
	long			 before;
	int			 i = 0;

	(void)state;
	assert_non_null(chunk = malloc(64 * 1024));
	assert_non_null(t = trace_steps_new());
	before = peak_kib();
	assert_int_equal(trace_steps_begin(t, "big.pt.trace.json"), 1);
	trace_steps_feed(t, "{\"traceEvents\": [", 17);
	/* 512 MiB of events, 100,000 names: the ones past the bound out. */
	while (total < (512u << 20)) {
		n = (size_t)snprintf(ev, sizeof(ev), "%s{\"ph\": \"X\", \"cat\": "
		    "\"cpu_op\", \"name\": \"%s%d\", \"dur\": 3, \"args\": "
		    "{\"x\": [1, 2, 3]}}", i ? "," : "", i % 1000 ? "op" :
		    "ProfilerStep#", i % 1000 ? i % 100000 : i / 1000);
		if (off + n > 64 * 1024) {
			trace_steps_feed(t, chunk, off);
			total += off;
			off = 0;
		}
		memcpy(chunk + off, ev, n);
		off += n;
		i++;
	}
	trace_steps_feed(t, chunk, off);
	trace_steps_feed(t, "]}", 2);
	trace_steps_result(t, &s);
	assert_int_equal(s.steps_seen, (uint64_t)(i + 999) / 1000);
	assert_int_equal(s.nsteps, TRACESUM_STEPS_MAX);
	assert_non_null(strstr(s.error, "over 4096 operators' names"));
	/* The reader's own memory is allocated before: 16 MiB is slack. */
	assert_true(peak_kib() - before < 16 * 1024);

	/* One string of 300 MiB: refused, not buffered. */
	memset(chunk, 'a', 64 * 1024);
	assert_int_equal(trace_steps_begin(t, "s.pt.trace.json"), 1);
	trace_steps_feed(t, "[{\"name\": \"", 11);
	for (total = 0; total < (300u << 20); total += 64 * 1024)
		trace_steps_feed(t, chunk, 64 * 1024);
	trace_steps_result(t, &s);
	assert_true(peak_kib() - before < 16 * 1024);
	assert_non_null(strstr(s.error, "a string over 1 MiB"));
	trace_steps_free(t);
	free(chunk);
}

static void
test_comm_any_chunks(void **state)
{
	struct tracesum	 s, back;
	char		 text[TRACESUM_TEXT_MAX];
	const char	*why;
	size_t		 chunk;

	(void)state;
	for (chunk = 1; chunk <= sizeof(comm); chunk++) {
		read_as("r.pt.trace.json", comm, sizeof(comm) - 1, chunk, &s);
		assert_string_equal(s.error, "");
		assert_int_equal(s.comm_read, 1);
		assert_int_equal(s.nsteps, 2);
		/* [1900, 9000): the union, not the 8200 us of their sum. */
		assert_int_equal(s.steps[0].comm_us, 7100);
		/* Send 500, hcom's first 1000 us: the rest is past the step. */
		assert_int_equal(s.steps[1].comm_us, 1500);
		assert_string_equal(s.comm_op.name, "gloo:all_reduce");
		assert_int_equal(s.comm_op.total_us, 6000);
		assert_int_equal(s.comm_op.count, 1);
	}
	assert_int_equal(tracesum_comm_median(&s), 1500);
	assert_int_equal(tracesum_compute_median(&s), 2900);
	/* The text form and back. */
	assert_int_equal(tracesum_encode(&s, text, sizeof(text)), 0);
	assert_non_null(strstr(text, "sum2 kineto 1 9 2 1:10000:7100,"
	    "2:10000:1500 "));
	assert_int_equal(tracesum_decode(text, &back, &why), 0);
	assert_int_equal(back.comm_read, 1);
	assert_int_equal(back.steps[0].comm_us, 7100);
	assert_string_equal(back.comm_op.name, "gloo:all_reduce");
}

static void
test_comm_names(void **state)
{
	static const char *const yes[] = { "gloo:all_reduce", "gloo:barrier",
	    "nccl:all_gather", "ncclKernel_AllReduce_RING_LL_Sum_float",
	    "c10d::allreduce_", "c10d::broadcast_", "record_param_comms",
	    "HcclAllReduce", "hcom_allReduce__571_1", "AllGather-op2",
	    "ReduceScatter", "all_to_all", "Default/network/Broadcast-op7",
	    "Send-op1", "Receive-op2", "gloo:send", "isend", "barrier", NULL };
	static const char *const no[] = { "aten::broadcast_tensors",
	    "aten::all_reduce_hypothetical", "BroadcastTo-op3",
	    "aten::addmm", "ProfilerStep#3", "Optimizer.step#SGD.step",
	    "sendmail", "DistributedDataParallel.forward", "Memcpy HtoD",
	    "autograd::engine::evaluate_function: AddmmBackward0", NULL };
	size_t	 i;

	(void)state;
	for (i = 0; yes[i] != NULL; i++)
		if (!tracesum_comm_name(yes[i]))
			fail_msg("%s: not taken for communication", yes[i]);
	for (i = 0; no[i] != NULL; i++)
		if (tracesum_comm_name(no[i]))
			fail_msg("%s: taken for communication", no[i]);
}

/* Past TRACE_STEPS_COMM_MAX disjoint spans: the steps a span left out may
 * reach say "not known", the others keep theirs. */
static void
test_comm_bound(void **state)
{
	struct tracesum	 s;
	char		*buf;
	size_t		 off = 0, cap = 8 << 20;
	int		 i;

	(void)state;
	assert_non_null(buf = malloc(cap));
	off += (size_t)snprintf(buf + off, cap - off, "[{\"ph\": \"X\", "
	    "\"name\": \"ProfilerStep#1\", \"ts\": 0, \"dur\": 10}, "
	    "{\"ph\": \"X\", \"name\": \"ProfilerStep#2\", \"ts\": 400000, "
	    "\"dur\": 10}, {\"ph\": \"X\", \"name\": \"gloo:send\", "
	    "\"ts\": 2, \"dur\": 3}");
	for (i = 0; i < 65535; i++)
		off += (size_t)snprintf(buf + off, cap - off, ", {\"ph\": "
		    "\"X\", \"name\": \"gloo:recv\", \"ts\": %d, \"dur\": 1}",
		    1000 + 2 * i);
	off += (size_t)snprintf(buf + off, cap - off, ", {\"ph\": \"X\", "
	    "\"name\": \"gloo:recv\", \"ts\": 400001, \"dur\": 5}]");
	assert_true(off < cap);
	read_as("b.pt.trace.json", buf, off, 65536, &s);
	free(buf);
	assert_int_equal(s.nsteps, 2);
	assert_int_equal(s.steps[0].comm_us, 3);
	assert_int_equal(s.steps[1].comm_us, -1);
	assert_int_equal(tracesum_comm_median(&s), 3);
}

/* A summary of an agent before the time in collectives (sum1, or a
 * message without comm_read) still reads, with nothing of it known. */
static void
test_text_comm(void **state)
{
	struct tracesum	 s;
	const char	*why;
	char		 text[TRACESUM_TEXT_MAX];

	(void)state;
	assert_int_equal(tracesum_decode("sum1 kineto 1 2 2 4:10,5:12 "
	    "7:1:aten::mm", &s, &why), 0);
	assert_int_equal(s.comm_read, 0);
	assert_int_equal(s.steps[1].comm_us, -1);
	assert_int_equal(tracesum_comm_median(&s), -1);
	assert_int_equal(tracesum_compute_median(&s), -1);
	assert_int_equal(tracesum_step_median(&s), 10);
	assert_int_equal(tracesum_encode(&s, text, sizeof(text)), 0);
	assert_string_equal(text, "sum1 kineto 1 2 2 4:10,5:12 7:1:aten::mm");
	assert_int_equal(tracesum_decode("sum2 kineto 1 2 2 4:10:3,5:12:? - "
	    "9:2:gloo:all_reduce", &s, &why), 0);
	assert_int_equal(s.steps[0].comm_us, 3);
	assert_int_equal(s.steps[1].comm_us, -1);
	assert_int_equal(tracesum_compute_median(&s), 7);
	assert_int_equal(tracesum_encode(&s, text, sizeof(text)), 0);
	assert_string_equal(text, "sum2 kineto 1 2 2 4:10:3,5:12:? - "
	    "9:2:gloo:all_reduce");
	/* More in collectives than the step lasted; a step without it. */
	assert_int_equal(tracesum_decode("sum2 kineto 1 2 1 4:10:11 - -", &s,
	    &why), -1);
	assert_int_equal(tracesum_decode("sum2 kineto 1 2 1 4:10 - -", &s,
	    &why), -1);
	assert_int_equal(tracesum_decode("sum2 kineto 1 2 1 4:10:1 - - late",
	    &s, &why), 0);
	assert_string_equal(s.error, "late");
	assert_int_equal(s.comm_op.name[0], '\0');
	/* Without comm_read, what the steps say of it is not taken. */
	memset(&s, 0, sizeof(s));
	s.nsteps = 1;
	s.steps[0].dur_us = 10;
	s.steps[0].comm_us = 0;
	snprintf(s.comm_op.name, sizeof(s.comm_op.name), "gloo:all_reduce");
	assert_int_equal(tracesum_check(&s, &why), 0);
	assert_int_equal(s.steps[0].comm_us, -1);
	assert_int_equal(s.comm_op.name[0], '\0');
}

/* RankEvent.trace_summary of an agent before comm_read (its steps' comm_us
 * 0 on the wire) is taken with nothing known of it; one of now goes
 * through the wire and back whole. */
static void
test_pb_comm(void **state)
{
	Dynprof__V1__TraceSummary	 pb, *back;
	Dynprof__V1__StepTime		 steps[TRACESUM_STEPS_MAX];
	Dynprof__V1__StepTime		*stepp[TRACESUM_STEPS_MAX];
	Dynprof__V1__OpTime		 ops[TRACESUM_OPS_MAX], comm_op;
	Dynprof__V1__OpTime		*opp[TRACESUM_OPS_MAX];
	struct tracesum			 s, got;
	const char			*why;
	uint8_t				 buf[4096];
	size_t				 len;

	(void)state;
	assert_int_equal(tracesum_decode("sum2 kineto 1 2 2 4:10:3,5:12:? - "
	    "9:2:gloo:all_reduce", &s, &why), 0);
	tracesum_to_pb(&s, &pb, steps, stepp, ops, opp, &comm_op);
	len = dynprof__v1__trace_summary__get_packed_size(&pb);
	assert_true(len < sizeof(buf));
	dynprof__v1__trace_summary__pack(&pb, buf);
	assert_non_null(back = dynprof__v1__trace_summary__unpack(NULL, len,
	    buf));
	assert_int_equal(tracesum_from_pb(back, &got, &why), 0);
	assert_int_equal(got.comm_read, 1);
	assert_int_equal(got.steps[0].comm_us, 3);
	assert_int_equal(got.steps[1].comm_us, -1);
	assert_string_equal(got.comm_op.name, "gloo:all_reduce");
	dynprof__v1__trace_summary__free_unpacked(back, NULL);
	/* As an agent before it packs it: no comm_read, no comm_op. */
	s.comm_read = 0;
	tracesum_to_pb(&s, &pb, steps, stepp, ops, opp, &comm_op);
	assert_null(pb.comm_op);
	len = dynprof__v1__trace_summary__get_packed_size(&pb);
	dynprof__v1__trace_summary__pack(&pb, buf);
	assert_non_null(back = dynprof__v1__trace_summary__unpack(NULL, len,
	    buf));
	assert_int_equal(tracesum_from_pb(back, &got, &why), 0);
	assert_int_equal(got.comm_read, 0);
	assert_int_equal(got.nsteps, 2);
	assert_int_equal(got.steps[0].comm_us, -1);
	assert_int_equal(tracesum_step_median(&got), 10);
	assert_int_equal(tracesum_compute_median(&got), -1);
	dynprof__v1__trace_summary__free_unpacked(back, NULL);
}

static void
test_text_hostile(void **state)
{
	struct tracesum	 s;
	const char	*why;
	char		 text[TRACESUM_TEXT_MAX];
	uint32_t	 i;

	(void)state;
	assert_int_equal(tracesum_decode("sum1 kineto 1 2 2 5:10,4:10 -", &s,
	    &why), -1);
	assert_int_equal(tracesum_decode("sum1 KINETO 1 2 0 - -", &s, &why),
	    -1);
	assert_int_equal(tracesum_decode("sum1 kineto 1 2 0 - 1:1:a%0Ab", &s,
	    &why), -1);
	assert_int_equal(tracesum_decode("sum1 kineto 1 2 0 - 1:1:a%zz", &s,
	    &why), -1);
	assert_int_equal(tracesum_decode("sum1 kineto 1 2 1 3:-4 -", &s,
	    &why), -1);
	assert_int_equal(tracesum_decode("sum1 - 0 0 0 - - why not", &s,
	    &why), 0);
	assert_string_equal(s.error, "why not");
	/* Names all escaped: the least busy left out, never over the bound. */
	memset(&s, 0, sizeof(s));
	s.nops = TRACESUM_OPS_MAX;
	for (i = 0; i < s.nops; i++) {
		memset(s.ops[i].name, ',', TRACESUM_NAME_MAX);
		s.ops[i].total_us = 100 - i;
	}
	assert_int_equal(tracesum_encode(&s, text, sizeof(text)), 0);
	assert_int_equal(tracesum_decode(text, &s, &why), 0);
	assert_true(s.nops > 0 && s.nops < TRACESUM_OPS_MAX);
	assert_int_equal(s.ops[0].total_us, 100);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kineto_any_chunks),
		cmocka_unit_test(test_autograd_array),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_text_hostile),
		cmocka_unit_test(test_comm_any_chunks),
		cmocka_unit_test(test_comm_names),
		cmocka_unit_test(test_comm_bound),
		cmocka_unit_test(test_text_comm),
		cmocka_unit_test(test_pb_comm),
		cmocka_unit_test(test_memory_bound),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
