/*
 * A rank's trace summary (tracesum.h) to and from its AgentLink form,
 * RankEvent.trace_summary (proto/dynprof.proto).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynprof.pb-c.h"
#include "tracesum.h"

/*
 * Fills pb (and its arrays, steps and ops, each as long as s's, and
 * comm_op) from s; the strings point into s.  Frees nothing: pb lives as
 * long as s, the arrays and comm_op.
 */
void
tracesum_to_pb(const struct tracesum *s, Dynprof__V1__TraceSummary *pb,
    Dynprof__V1__StepTime *steps, Dynprof__V1__StepTime **stepp,
    Dynprof__V1__OpTime *ops, Dynprof__V1__OpTime **opp,
    Dynprof__V1__OpTime *comm_op)
{
	uint32_t	 i;

	dynprof__v1__trace_summary__init(pb);
	pb->format = (char *)s->format;
	pb->error = (char *)s->error;
	pb->files = s->files;
	pb->events = s->events;
	pb->steps_seen = s->steps_seen;
	for (i = 0; i < s->nsteps && i < TRACESUM_STEPS_MAX; i++) {
		dynprof__v1__step_time__init(&steps[i]);
		steps[i].step = s->steps[i].step;
		steps[i].dur_us = s->steps[i].dur_us;
		steps[i].comm_us = s->comm_read ? s->steps[i].comm_us : 0;
		stepp[i] = &steps[i];
	}
	pb->n_steps = i;
	pb->steps = stepp;
	for (i = 0; i < s->nops && i < TRACESUM_OPS_MAX; i++) {
		dynprof__v1__op_time__init(&ops[i]);
		ops[i].name = (char *)s->ops[i].name;
		ops[i].total_us = s->ops[i].total_us;
		ops[i].count = s->ops[i].count;
		opp[i] = &ops[i];
	}
	pb->n_ops = i;
	pb->ops = opp;
	pb->comm_read = s->comm_read != 0;
	if (s->comm_read && s->comm_op.name[0] != '\0') {
		dynprof__v1__op_time__init(comm_op);
		comm_op->name = (char *)s->comm_op.name;
		comm_op->total_us = s->comm_op.total_us;
		comm_op->count = s->comm_op.count;
		pb->comm_op = comm_op;
	}
}

/*
 * Reads pb, from a peer, into s and checks it (tracesum_check()).
 * Returns 0, or -1 with *why set.
 */
int
tracesum_from_pb(const Dynprof__V1__TraceSummary *pb, struct tracesum *s,
    const char **why)
{
	size_t	 i;

	memset(s, 0, sizeof(*s));
	if (pb->n_steps > TRACESUM_STEPS_MAX || pb->n_ops > TRACESUM_OPS_MAX) {
		*why = "a trace summary over its bounds";
		return (-1);
	}
	if ((pb->format != NULL && strlen(pb->format) >= sizeof(s->format)) ||
	    (pb->error != NULL && strlen(pb->error) >= sizeof(s->error))) {
		*why = "a trace summary's format or error too long";
		return (-1);
	}
	snprintf(s->format, sizeof(s->format), "%s", pb->format != NULL ?
	    pb->format : "");
	snprintf(s->error, sizeof(s->error), "%s", pb->error != NULL ?
	    pb->error : "");
	s->files = pb->files;
	s->events = pb->events;
	s->steps_seen = pb->steps_seen;
	for (i = 0; i < pb->n_steps; i++) {
		s->steps[i].step = pb->steps[i]->step;
		s->steps[i].dur_us = pb->steps[i]->dur_us;
		s->steps[i].comm_us = pb->steps[i]->comm_us;
	}
	s->nsteps = (uint32_t)pb->n_steps;
	for (i = 0; i < pb->n_ops; i++) {
		if (pb->ops[i]->name == NULL ||
		    strlen(pb->ops[i]->name) > TRACESUM_NAME_MAX) {
			*why = "a trace summary's operator name too long";
			return (-1);
		}
		snprintf(s->ops[i].name, sizeof(s->ops[i].name), "%s",
		    pb->ops[i]->name);
		s->ops[i].total_us = pb->ops[i]->total_us;
		s->ops[i].count = pb->ops[i]->count;
	}
	s->nops = (uint32_t)pb->n_ops;
	s->comm_read = pb->comm_read;
	if (pb->comm_read && pb->comm_op != NULL &&
	    pb->comm_op->name != NULL && pb->comm_op->name[0] != '\0') {
		if (strlen(pb->comm_op->name) > TRACESUM_NAME_MAX) {
			*why = "a trace summary's operator name too long";
			return (-1);
		}
		snprintf(s->comm_op.name, sizeof(s->comm_op.name), "%s",
		    pb->comm_op->name);
		s->comm_op.total_us = pb->comm_op->total_us;
		s->comm_op.count = pb->comm_op->count;
	}
	return (tracesum_check(s, why));
}
