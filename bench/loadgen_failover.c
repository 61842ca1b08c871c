/*
 * dynprof-loadgen --mode failover: the N connections up on the leader, the
 * leader is SIGKILLed (--kill-pid), and every connection goes on as a real
 * agent does (agent/upstream_addr.c): the next coordinator of --coordinator,
 * or the leader a follower names (ERROR_NOT_LEADER), at once, and after as
 * many attempts as coordinators an exponential backoff with jitter, at most
 * 500 ms while followers answer.  Measured from
 * the kill: the first welcome (a new leader serving) and the last (every
 * agent back).
 */

#include <arpa/inet.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "dynprof.pb-c.h"
#include "loadgen.h"

/* Parses --coordinator IPV4:PORT[,IPV4:PORT...].  Returns 0 or -1. */
int
loadgen_parse_coords(struct loadgen *lg, const char *list)
{
	char	 buf[512], host[256], *p, *next;
	int	 port;

	if (strlen(list) >= sizeof(buf))
		return (-1);
	snprintf(buf, sizeof(buf), "%s", list);
	for (p = buf; p != NULL; p = next) {
		if ((next = strchr(p, ',')) != NULL)
			*next++ = '\0';
		if (lg->ncoords == LOADGEN_COORDS_MAX ||
		    loadgen_parse_hostport(p, host, sizeof(host), &port) == -1 ||
		    inet_pton(AF_INET, host,
		    &lg->coords[lg->ncoords].sin_addr) != 1)
			return (-1);
		lg->coords[lg->ncoords].sin_family = AF_INET;
		lg->coords[lg->ncoords].sin_port = htons((uint16_t)port);
		lg->ncoords++;
	}
	return (0);
}

/* The failover did not end in time. */
static void
loadgen_failover_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;
	char		 msg[128];

	(void)fd;
	(void)what;
	snprintf(msg, sizeof(msg), "failover: %d of %d agents back after %d s",
	    lg->fo_back, lg->n, LOADGEN_FAILOVER_MAX_S);
	loadgen_fail(lg, msg);
}

/* Every connection is up on the leader: kill it, start the clock. */
void
loadgen_failover_start(struct loadgen *lg)
{
	struct timeval	 tv = { LOADGEN_FAILOVER_MAX_S, 0 };

	lg->phase = LOADGEN_PHASE_FAILOVER;
	if ((lg->fo_timer = evtimer_new(lg->base, loadgen_failover_timeout,
	    lg)) == NULL) {
		loadgen_fail(lg, "out of memory");
		return;
	}
	evtimer_add(lg->fo_timer, &tv);
	lg->fo_t0 = loadgen_now_ns();
	if (kill(lg->kill_pid, SIGKILL) == -1) {
		loadgen_fail(lg, "failover: cannot kill --kill-pid");
		return;
	}
	printf("failover: SIGKILL to the leader (pid %d), %d agents on it\n",
	    (int)lg->kill_pid, lg->n);
	fflush(stdout);
}

/* The retry timer of a connection: dials its coordinator again. */
static void
loadgen_failover_retry(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen_conn	*c = arg;

	(void)fd;
	(void)what;
	if (loadgen_conn_open(c->lg, c) == -1)
		loadgen_failover_lost(c);
}

/*
 * A connection ended during the failover: schedules the next attempt as the
 * agent would.  Returns 1 if it did (the run goes on), 0 if not in that phase.
 */
int
loadgen_failover_lost(struct loadgen_conn *c)
{
	struct loadgen	*lg = c->lg;
	struct timeval	 tv;
	int		 delay;

	if (lg->phase != LOADGEN_PHASE_FAILOVER)
		return (0);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	c->bev = NULL;
	c->state = LOADGEN_DEAD;
	if (c->backoff_ms == 0)
		c->backoff_ms = LOADGEN_BACKOFF_MIN_MS;
	/* As upstream_addr_failed(): the named leader, else the next; every
	 * attempt counts toward the round, a named leader's included. */
	if (c->follow)
		c->follow = 0;
	else
		c->coord_idx = (c->coord_idx + 1) % lg->ncoords;
	if (++c->tried < lg->ncoords)
		delay = (int)(random() % (LOADGEN_BACKOFF_MIN_MS + 1));
	else {
		c->tried = 0;
		if (c->heard_follower &&
		    c->backoff_ms > LOADGEN_FOLLOWER_BACKOFF_MS)
			c->backoff_ms = LOADGEN_FOLLOWER_BACKOFF_MS;
		c->heard_follower = 0;
		delay = c->backoff_ms / 2 +
		    (int)(random() % (c->backoff_ms / 2 + 1));
		c->backoff_ms *= 2;
		if (c->backoff_ms > LOADGEN_BACKOFF_MAX_MS)
			c->backoff_ms = LOADGEN_BACKOFF_MAX_MS;
	}
	if (c->retry == NULL &&
	    (c->retry = evtimer_new(lg->base, loadgen_failover_retry, c)) ==
	    NULL) {
		loadgen_fail(lg, "out of memory");
		return (1);
	}
	tv.tv_sec = delay / 1000;
	tv.tv_usec = (delay % 1000) * 1000;
	evtimer_add(c->retry, &tv);
	return (1);
}

/* An Error frame: a follower naming the leader sends the agent there. */
void
loadgen_failover_error(struct loadgen_conn *c, int code, const char *leader)
{
	struct loadgen	*lg = c->lg;
	char		 host[256];
	struct in_addr	 a;
	int		 port, i;

	if (lg->phase != LOADGEN_PHASE_FAILOVER ||
	    code != DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER)
		return;
	lg->fo_refused++;
	c->heard_follower = 1;
	if (leader == NULL || leader[0] == '\0' ||
	    loadgen_parse_hostport(leader, host, sizeof(host), &port) == -1 ||
	    inet_pton(AF_INET, host, &a) != 1)
		return;
	for (i = 0; i < lg->ncoords; i++) {
		if (lg->coords[i].sin_addr.s_addr == a.s_addr &&
		    lg->coords[i].sin_port == htons((uint16_t)port)) {
			c->coord_idx = i;
			c->follow = 1;
		}
	}
}

/* A welcome during the failover: one more agent back; all back: done. */
void
loadgen_failover_welcome(struct loadgen_conn *c)
{
	struct loadgen	*lg = c->lg;
	int64_t		 now;

	if (lg->phase != LOADGEN_PHASE_FAILOVER || c->back)
		return;
	c->back = 1;
	c->tried = 0;
	c->backoff_ms = LOADGEN_BACKOFF_MIN_MS;
	now = loadgen_now_ns();
	if (lg->fo_back++ == 0)
		lg->fo_t_first = now;
	if (lg->fo_back < lg->n)
		return;
	printf("failover: first agent welcomed by the new leader after %.0f ms, "
	    "all %d after %.0f ms (%d ERROR_NOT_LEADER answers)\n",
	    (lg->fo_t_first - lg->fo_t0) / 1e6, lg->n, (now - lg->fo_t0) / 1e6,
	    lg->fo_refused);
	printf("RESULT agents=%d failover_first_ms=%.0f failover_all_ms=%.0f "
	    "not_leader=%d\n", lg->n, (lg->fo_t_first - lg->fo_t0) / 1e6,
	    (now - lg->fo_t0) / 1e6, lg->fo_refused);
	fflush(stdout);
	lg->phase = LOADGEN_PHASE_DONE;
	event_base_loopbreak(lg->base);
}

/* Frees the failover's timers. */
void
loadgen_failover_free(struct loadgen *lg)
{
	int	 i;

	for (i = 0; i < lg->n; i++)
		if (lg->conns[i].retry != NULL)
			event_free(lg->conns[i].retry);
	if (lg->fo_timer != NULL)
		event_free(lg->fo_timer);
}
