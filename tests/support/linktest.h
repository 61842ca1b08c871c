/*
 * The fixture of the agent's tests against a fake coordinator (test_agent_link.c,
 * test_agent_events.c, test_agent_ranks.c, test_segsafe*.c): the real
 * dynprof-agent in a private directory, a fake coordinator on 127.0.0.1 that
 * the test drives message by message, and where rank processes (rankproc)
 * log and write.  A test whose fixture holds more embeds a struct linktest
 * and calls lt_init() and lt_cleanup() itself.  The checks are cmocka's.
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
	char			 ranklog[400];	/* rankproc's log, in ap.dir */
	char			 rankbin[512];	/* the rankproc binary */
	char			 out[400];	/* the ranks' output root */
};

/* linktest.c */
int	 lt_init(struct linktest *);
void	 lt_cleanup(struct linktest *);
void	 lt_ranks(struct linktest *);
int	 lt_setup(void **);
int	 lt_setup_ranks(void **);
int	 lt_teardown(void **);
Dynprof__V1__AgentMessage *lt_start_connected(struct linktest *, const char *,
	    int);
Dynprof__V1__AgentMessage *lt_reaccept(struct linktest *, int);
void	 lt_expect_applied(struct linktest *, const char *, uint64_t);

#endif /* DYNPROF_LINKTEST_H */
