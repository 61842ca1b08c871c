/*
 * The coordinators an agent may talk to (--coordinator A:P[,B:P...]), one of
 * them the leader: whom it dials next and when is common/failover.c's rule,
 * shared with the load generator; here, what the agent says about it.
 */

#include <stdio.h>
#include <string.h>

#include "parts.h"
#include "log.h"

/* The address the agent connects to now, as the operator wrote it. */
const char *
upstream_addr_text(const struct agent *a)
{
	if (a->up.fo.naddrs == 0)
		return (a->opts.coordinator);
	return (failover_text(&a->up.fo));
}

/*
 * A follower answered ERROR_NOT_LEADER naming leader (HOST:PORT, "" none
 * known): the agent goes there next if it is one of its coordinators.
 */
void
upstream_addr_not_leader(struct agent *a, const char *leader)
{
	char		 was[sizeof(a->up.fo.addrs[0].text)];

	snprintf(was, sizeof(was), "%s", upstream_addr_text(a));
	switch (failover_not_leader(&a->up.fo, leader)) {
	case FAILOVER_FOLLOW:
		log_info("coordinator %s is a follower: the leader is %s", was,
		    upstream_addr_text(a));
		break;
	case FAILOVER_NO_LEADER:
		log_info("coordinator %s is a follower and knows no leader yet",
		    was);
		break;
	case FAILOVER_NOT_AN_ADDRESS:
		log_warnx("coordinator %s named a leader that is no address: "
		    "\"%.100s\"", was, leader);
		break;
	case FAILOVER_NOT_LISTED:
		log_warnx("coordinator %s names the leader %.100s, which is not "
		    "in --coordinator: add it there for this agent to follow",
		    was, leader);
		break;
	}
}
