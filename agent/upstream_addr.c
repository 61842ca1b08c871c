/*
 * The coordinators an agent may talk to: --coordinator A:P[,B:P...], one of
 * them the leader.  The agent connects to the current one; when it cannot
 * reach it, it tries the next in turn (backing off once per round); when a
 * follower answers ERROR_NOT_LEADER naming the leader, the agent goes there,
 * but only if the leader is one of the addresses it was given: a coordinator
 * never sends an agent anywhere its operator did not name.
 */

#include <stdio.h>
#include <string.h>

#include "addr.h"
#include "agent.h"
#include "log.h"

/* Splits one HOST:PORT (HOST may be [v6]) of len bytes into ad. */
static int
upstream_addr_split(struct upstream_addr *ad, const char *s, size_t len)
{
	if (len >= sizeof(ad->text) || addr_split(s, len, ad->host,
	    sizeof(ad->host), ad->port, sizeof(ad->port)) != ADDR_OK)
		return (-1);
	memcpy(ad->text, s, len);
	ad->text[len] = '\0';
	return (0);
}

/*
 * Parses a comma-separated list of HOST:PORT into addrs (at most
 * UPSTREAM_ADDRS_MAX).  Returns how many, or -1 with why set.
 */
int
upstream_addrs_parse(const char *list, struct upstream_addr *addrs,
    const char **why)
{
	const char	*s = list, *comma;
	size_t		 len;
	int		 n = 0;

	for (;;) {
		comma = strchr(s, ',');
		len = comma != NULL ? (size_t)(comma - s) : strlen(s);
		if (n == UPSTREAM_ADDRS_MAX) {
			*why = "more than 8 coordinators";
			return (-1);
		}
		if (upstream_addr_split(&addrs[n], s, len) == -1) {
			*why = "not HOST:PORT[,HOST:PORT...] (numeric port)";
			return (-1);
		}
		n++;
		if (comma == NULL)
			break;
		s = comma + 1;
	}
	return (n);
}

/* The address the agent connects to now, as the operator wrote it. */
const char *
upstream_addr_text(const struct agent *a)
{
	if (a->up.naddrs == 0)
		return (a->opts.coordinator);
	return (a->up.addrs[a->up.cur].text);
}

/*
 * The attempt at the current address ended without a welcome.  Moves on: to
 * the leader a follower just named (upstream_addr_leader() made it current),
 * else to the next address.  Every attempt, a named leader's included, counts
 * toward the round: returns 1 when the round is over (the agent backs off),
 * 0 when the next attempt is due at once.  So followers that still name a
 * dead leader (until its lease ends) cost backoffs, not a busy loop; capped
 * while followers answer, so the new leader is found soon after it leads.
 */
int
upstream_addr_failed(struct agent *a)
{
	struct upstream	*up = &a->up;

	if (up->follow)
		up->follow = 0;
	else if (up->naddrs > 1)
		up->cur = (up->cur + 1) % up->naddrs;
	if (++up->tries < up->naddrs)
		return (0);
	up->tries = 0;
	/* A follower answered this round: a leader is being elected (within
	 * a lease), so keep asking at least every AGENT_FOLLOWER_BACKOFF_MS. */
	if (up->heard_follower && up->backoff_ms > AGENT_FOLLOWER_BACKOFF_MS)
		up->backoff_ms = AGENT_FOLLOWER_BACKOFF_MS;
	up->heard_follower = 0;
	return (1);
}

/*
 * A follower named the leader (HOST:PORT, "" unknown): makes it the current
 * address if it is one of ours.  Returns 1 if the agent should go there at
 * once, 0 if it should try the next address after its backoff.
 */
int
upstream_addr_leader(struct agent *a, const char *leader)
{
	struct upstream		*up = &a->up;
	struct upstream_addr	 l;
	int			 i;

	up->heard_follower = 1;
	if (leader == NULL || leader[0] == '\0') {
		log_info("coordinator %s is a follower and knows no leader yet",
		    upstream_addr_text(a));
		return (0);
	}
	if (upstream_addr_split(&l, leader, strlen(leader)) == -1) {
		log_warnx("coordinator %s named a leader that is no address: "
		    "\"%.100s\"", upstream_addr_text(a), leader);
		return (0);
	}
	for (i = 0; i < up->naddrs; i++) {
		if (strcmp(up->addrs[i].host, l.host) == 0 &&
		    strcmp(up->addrs[i].port, l.port) == 0) {
			log_info("coordinator %s is a follower: the leader is "
			    "%s", upstream_addr_text(a), up->addrs[i].text);
			up->cur = i;
			return (1);
		}
	}
	log_warnx("coordinator %s names the leader %.100s, which is not in "
	    "--coordinator: add it there for this agent to follow",
	    upstream_addr_text(a), leader);
	return (0);
}
