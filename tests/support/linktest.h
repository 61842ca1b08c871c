/*
 * The fixture of the agent's link tests (test_agent_link.c, test_agent_events.c):
 * the real dynprof-agent in a private directory and a fake coordinator on
 * 127.0.0.1 that the test drives message by message.  The checks are cmocka's.
 */

#ifndef DYNPROF_LINKTEST_H
#define DYNPROF_LINKTEST_H

#include <stdint.h>

#include "fakecoord.h"

#define LT_WAIT	5000	/* ms: every wait is bounded */

struct linktest {
	struct agentproc	 ap;
	struct fakecoord	 fc;
	char			 coord[64];	/* "127.0.0.1:PORT" of fc */
};

/* linktest.c */
int	 lt_setup(void **);
int	 lt_teardown(void **);
Dynprof__V1__AgentMessage *lt_start_connected(struct linktest *, const char *,
	    int);
Dynprof__V1__AgentMessage *lt_reaccept(struct linktest *, int);
void	 lt_expect_applied(struct linktest *, const char *, uint64_t);

#endif /* DYNPROF_LINKTEST_H */
