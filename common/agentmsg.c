/* The AgentLink messages an agent sends, filled in one place (agentmsg.h). */

#include "agentmsg.h"
#include "version.h"

/*
 * Hello of this protocol version from node with token (NULL: none), the
 * agent's version string, and the generation applied of each of n jobs.
 */
Dynprof__V1__AgentMessage *
agentmsg_hello(struct agentmsg *am, const char *node, const char *token,
    const char *version, Dynprof__V1__JobGeneration **applied, size_t n)
{
	Dynprof__V1__Hello	*h = &am->u.hello;

	dynprof__v1__agent_message__init(&am->m);
	dynprof__v1__hello__init(h);
	h->protocol_version = PROTOCOL_VERSION;
	h->node = (char *)node;
	h->token = (char *)(token != NULL ? token : "");
	h->agent_version = (char *)version;
	h->n_applied = n;
	h->applied = applied;
	am->m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_HELLO;
	am->m.hello = h;
	return (&am->m);
}

/* A heartbeat sent at wall-clock time now_ns. */
Dynprof__V1__AgentMessage *
agentmsg_heartbeat(struct agentmsg *am, int64_t now_ns)
{
	Dynprof__V1__Heartbeat	*hb = &am->u.heartbeat;

	dynprof__v1__agent_message__init(&am->m);
	dynprof__v1__heartbeat__init(hb);
	hb->time_unix_ns = now_ns;
	am->m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_HEARTBEAT;
	am->m.heartbeat = hb;
	return (&am->m);
}

/* Job is on this node, which holds generation applied of its schedule. */
Dynprof__V1__AgentMessage *
agentmsg_subscribe(struct agentmsg *am, const char *job, uint64_t applied)
{
	Dynprof__V1__Subscribe	*s = &am->u.subscribe;

	dynprof__v1__agent_message__init(&am->m);
	dynprof__v1__subscribe__init(s);
	s->job = (char *)job;
	s->applied_generation = applied;
	am->m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_SUBSCRIBE;
	am->m.subscribe = s;
	return (&am->m);
}

/* Job is no longer on this node. */
Dynprof__V1__AgentMessage *
agentmsg_unsubscribe(struct agentmsg *am, const char *job)
{
	Dynprof__V1__Unsubscribe	*u = &am->u.unsubscribe;

	dynprof__v1__agent_message__init(&am->m);
	dynprof__v1__unsubscribe__init(u);
	u->job = (char *)job;
	am->m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_UNSUBSCRIBE;
	am->m.unsubscribe = u;
	return (&am->m);
}

/* This node now holds generation of job's schedule. */
Dynprof__V1__AgentMessage *
agentmsg_applied(struct agentmsg *am, const char *job, uint64_t generation)
{
	Dynprof__V1__Applied	*ap = &am->u.applied;

	dynprof__v1__agent_message__init(&am->m);
	dynprof__v1__applied__init(ap);
	ap->job = (char *)job;
	ap->generation = generation;
	am->m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_APPLIED;
	am->m.applied = ap;
	return (&am->m);
}

/* The agent stops cleanly: its stream closes next. */
Dynprof__V1__AgentMessage *
agentmsg_goodbye(struct agentmsg *am)
{
	dynprof__v1__agent_message__init(&am->m);
	dynprof__v1__goodbye__init(&am->u.goodbye);
	am->m.body_case = DYNPROF__V1__AGENT_MESSAGE__BODY_GOODBYE;
	am->m.goodbye = &am->u.goodbye;
	return (&am->m);
}
