/*
 * The AgentLink messages an agent sends (proto/dynprof.proto), filled in one
 * place: the agent, the tests' fake agent and the load generator each build
 * them here and frame them their own way.  A struct agentmsg holds the
 * message and its body; the strings stay the caller's.
 */

#ifndef DYNPROF_AGENTMSG_H
#define DYNPROF_AGENTMSG_H

#include <stddef.h>
#include <stdint.h>

#include "dynprof.pb-c.h"

struct agentmsg {
	Dynprof__V1__AgentMessage	 m;
	union {
		Dynprof__V1__Hello	 hello;
		Dynprof__V1__Heartbeat	 heartbeat;
		Dynprof__V1__Subscribe	 subscribe;
		Dynprof__V1__Unsubscribe unsubscribe;
		Dynprof__V1__Applied	 applied;
		Dynprof__V1__Goodbye	 goodbye;
	} u;
};

/* agentmsg.c */
Dynprof__V1__AgentMessage *agentmsg_hello(struct agentmsg *, const char *,
	    const char *, const char *, Dynprof__V1__JobGeneration **, size_t);
Dynprof__V1__AgentMessage *agentmsg_heartbeat(struct agentmsg *, int64_t);
Dynprof__V1__AgentMessage *agentmsg_subscribe(struct agentmsg *,
	    const char *, uint64_t);
Dynprof__V1__AgentMessage *agentmsg_unsubscribe(struct agentmsg *,
	    const char *);
Dynprof__V1__AgentMessage *agentmsg_applied(struct agentmsg *, const char *,
	    uint64_t);
Dynprof__V1__AgentMessage *agentmsg_goodbye(struct agentmsg *);

#endif /* DYNPROF_AGENTMSG_H */
