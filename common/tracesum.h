/*
 * A rank's trace summary (docs/traces.md, "Compared across ranks"): what the
 * agent read out of a collected trace (its steps' durations and their time
 * in collectives, the busiest operators), small and bounded, and its one text form.  The agent keeps it
 * in its queue file in that form and sends it with the rank's `collected`
 * event (RankEvent.trace_summary); the coordinator stores it, in that form,
 * in the event's detail, and compares the ranks of a window from it.
 */

#ifndef DYNPROF_TRACESUM_H
#define DYNPROF_TRACESUM_H

#include <stddef.h>
#include <stdint.h>

#define TRACESUM_STEPS_MAX	32	/* steps kept, the first ones */
#define TRACESUM_OPS_MAX	12	/* operators kept, the busiest */
#define TRACESUM_NAME_MAX	80	/* bytes of an operator's name */
#define TRACESUM_FORMAT_MAX	16
#define TRACESUM_ERROR_MAX	160
#define TRACESUM_TEXT_MAX	2560	/* its text form, the NUL included */

struct tracesum_step {
	int64_t		 step;		/* N of ProfilerStep#N */
	int64_t		 dur_us;
	int64_t		 comm_us;	/* within it in collectives; -1 not
					 * known (or comm_read 0) */
};

struct tracesum_op {
	char		 name[TRACESUM_NAME_MAX + 1];
	int64_t		 total_us;	/* inclusive: nested operators count
					 * in their callers too */
	uint64_t	 count;
};

struct tracesum {
	char			 format[TRACESUM_FORMAT_MAX];	/* "" none read */
	char			 error[TRACESUM_ERROR_MAX];	/* why not read */
	uint64_t		 files;		/* trace files read */
	uint64_t		 events;	/* complete events seen */
	uint64_t		 steps_seen;	/* nsteps or more */
	uint32_t		 nsteps;
	struct tracesum_step	 steps[TRACESUM_STEPS_MAX];	/* by step */
	uint32_t		 nops;
	struct tracesum_op	 ops[TRACESUM_OPS_MAX];	/* busiest first */
	int			 comm_read;	/* steps' comm_us, comm_op read
						 * (0: an agent before them) */
	struct tracesum_op	 comm_op;	/* the busiest collective; name
						 * "" none */
};

/* tracesum.c */
int	 tracesum_encode(const struct tracesum *, char *, size_t);
int	 tracesum_decode(const char *, struct tracesum *, const char **);
int	 tracesum_check(struct tracesum *, const char **);
void	 tracesum_name(char *, size_t, const char *, size_t);
int64_t	 tracesum_step_median(const struct tracesum *);
int64_t	 tracesum_comm_median(const struct tracesum *);
int64_t	 tracesum_compute_median(const struct tracesum *);
int	 tracesum_comm_name(const char *);

/* tracesum_pb.c: RankEvent.trace_summary */
struct Dynprof__V1__TraceSummary;
struct Dynprof__V1__StepTime;
struct Dynprof__V1__OpTime;
void	 tracesum_to_pb(const struct tracesum *,
	    struct Dynprof__V1__TraceSummary *, struct Dynprof__V1__StepTime *,
	    struct Dynprof__V1__StepTime **, struct Dynprof__V1__OpTime *,
	    struct Dynprof__V1__OpTime **, struct Dynprof__V1__OpTime *);
int	 tracesum_from_pb(const struct Dynprof__V1__TraceSummary *,
	    struct tracesum *, const char **);

#endif /* DYNPROF_TRACESUM_H */
