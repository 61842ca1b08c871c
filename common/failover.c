/*
 * The coordinators an agent may talk to, --coordinator A:P[,B:P...], one of
 * them the leader, and the rule by which it moves between them:
 *
 * - connected and welcomed, it stays;
 * - its link ended: the next address of the list, within a random spread
 *   (FAILOVER_SPREAD_MS) so that a cluster's agents do not all dial at the
 *   same millisecond; the lost leader is remembered and said in the next
 *   hellos (Hello.failed_leader), so that a follower still naming it holds
 *   the hello until etcd names the next leader instead of sending the agent
 *   back to it;
 * - a follower's ERROR_NOT_LEADER naming the leader: there next, within
 *   FAILOVER_FOLLOW_JITTER_MS, but only if it is one of the listed
 *   addresses (a coordinator never sends an agent anywhere its operator did
 *   not name);
 * - anything else (refused, no leader named): the next address;
 * - every attempt, a named leader's included, counts toward a round of as
 *   many attempts as addresses; a round over, an exponential backoff with
 *   jitter from FAILOVER_BACKOFF_MIN_MS to FAILOVER_BACKOFF_MAX_MS, at most
 *   FAILOVER_FOLLOWER_BACKOFF_MS while followers answer.
 *
 * No clock and no randomness of its own: the caller gives a random number
 * and schedules the delay returned.
 */

#include <string.h>

#include "addr.h"
#include "failover.h"

/* Splits one HOST:PORT (HOST may be [v6]) of len bytes into ad. */
static int
failover_addr_split(struct failover_addr *ad, const char *s, size_t len)
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
 * FAILOVER_ADDRS_MAX).  Returns how many, or -1 with why set.
 */
int
failover_parse(struct failover_addr *addrs, const char *list,
    const char **why)
{
	const char	*s = list, *comma;
	size_t		 len;
	int		 n = 0;

	for (;;) {
		comma = strchr(s, ',');
		len = comma != NULL ? (size_t)(comma - s) : strlen(s);
		if (n == FAILOVER_ADDRS_MAX) {
			*why = "more than 8 coordinators";
			return (-1);
		}
		if (failover_addr_split(&addrs[n], s, len) == -1) {
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

/* Starts f on the n addresses (the caller's, kept while f is), at the
 * first. */
void
failover_init(struct failover *f, const struct failover_addr *addrs, int n)
{
	memset(f, 0, sizeof(*f));
	f->addrs = addrs;
	f->naddrs = n;
	f->lost = -1;
	f->backoff_ms = FAILOVER_BACKOFF_MIN_MS;
}

/* The address to dial now, as the operator wrote it ("" with none). */
const char *
failover_text(const struct failover *f)
{
	return (f->naddrs > 0 ? f->addrs[f->cur].text : "");
}

/* The leader whose link ended since the last welcome ("" none): what the
 * next hello says it could not keep (Hello.failed_leader). */
const char *
failover_lost_leader(const struct failover *f)
{
	return (f->lost >= 0 ? f->addrs[f->lost].text : "");
}

/*
 * The link or attempt at the current address ended (ready: it had been
 * welcomed), r a random number.  Moves to the address to dial next and
 * returns in how many milliseconds.
 */
int
failover_ended(struct failover *f, int ready, uint32_t r)
{
	int	 jitter = FAILOVER_BACKOFF_MIN_MS, delay;

	if (f->naddrs == 0)
		return (FAILOVER_BACKOFF_MAX_MS);
	if (ready) {
		/* A failover starts: its answers counted from here. */
		f->lost = f->cur;
		f->tries = 0;
		f->backoff_ms = FAILOVER_BACKOFF_MIN_MS;
		f->not_leader = 0;
		f->heard_follower = 0;
		jitter = FAILOVER_SPREAD_MS;
	}
	if (f->follow) {
		f->follow = 0;
		jitter = FAILOVER_FOLLOW_JITTER_MS;
	} else if (f->naddrs > 1)
		f->cur = (f->cur + 1) % f->naddrs;
	if (++f->tries < f->naddrs || (ready && f->naddrs == 1))
		return ((int)(r % (uint32_t)(jitter + 1)));
	f->tries = 0;
	if (f->heard_follower && f->backoff_ms > FAILOVER_FOLLOWER_BACKOFF_MS)
		f->backoff_ms = FAILOVER_FOLLOWER_BACKOFF_MS;
	f->heard_follower = 0;
	delay = f->backoff_ms / 2 + (int)(r % (uint32_t)(f->backoff_ms / 2 +
	    1));
	f->backoff_ms *= 2;
	if (f->backoff_ms > FAILOVER_BACKOFF_MAX_MS)
		f->backoff_ms = FAILOVER_BACKOFF_MAX_MS;
	return (delay);
}

/*
 * A follower answered ERROR_NOT_LEADER naming leader (HOST:PORT, "" or NULL:
 * none known).  Counts it; makes the leader the next address if listed.
 */
enum failover_named
failover_not_leader(struct failover *f, const char *leader)
{
	struct failover_addr	 l;
	int			 i;

	f->not_leader++;
	f->heard_follower = 1;
	if (leader == NULL || leader[0] == '\0')
		return (FAILOVER_NO_LEADER);
	if (failover_addr_split(&l, leader, strlen(leader)) == -1)
		return (FAILOVER_NOT_AN_ADDRESS);
	for (i = 0; i < f->naddrs; i++) {
		if (strcmp(f->addrs[i].host, l.host) == 0 &&
		    strcmp(f->addrs[i].port, l.port) == 0) {
			f->cur = i;
			f->follow = 1;
			return (FAILOVER_FOLLOW);
		}
	}
	return (FAILOVER_NOT_LISTED);
}

/* Welcomed at the current address: the failover, if one ran, is over. */
void
failover_welcomed(struct failover *f)
{
	f->tries = 0;
	f->follow = 0;
	f->heard_follower = 0;
	f->lost = -1;
	f->backoff_ms = FAILOVER_BACKOFF_MIN_MS;
}
