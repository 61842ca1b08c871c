/*
 * The library on a linktest's agent: the parameters of a rank opening a job
 * in the agent's --shm-dir, announcing itself on the agent's socket.
 */

#include "linklib.h"

/* Fills p for rank 0 of job on lt's agent, logging to on_log with arg. */
void
linklib_params(struct dynprof_params *p, const struct linktest *lt,
    const char *job, dynprof_log_fn on_log, void *arg)
{
	dynprof_params_init(p);
	p->job = job;
	p->rank = 0;
	p->shm_dir = lt->ap.shm;
	p->agent_socket = lt->ap.sock;
	p->on_log = on_log;
	p->arg = arg;
}
