/*
 * dynprof-loadgen --mode failover: the N connections up on the leader, each
 * sends its events (--events over its --ranks); once half of all of them
 * are acknowledged the leader is SIGKILLed (--kill-pid), and every
 * connection goes on as a real agent does, by common/failover.c's rule (the
 * agent's own): the next coordinator, the leader a follower names, the
 * leader it lost said in its hello, jitter, backoff.  Welcomed again, it
 * replays every event not acknowledged (the new leader's Welcome may say
 * more were committed).  Measured from the kill: the first welcome (a new
 * leader serving), the last (every agent back), every event acknowledged
 * again, and each connection's ERROR_NOT_LEADER answers (max and mean).
 */

#include <arpa/inet.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "dynprof.pb-c.h"
#include "parts_loadgen.h"

/* Parses --coordinator IPV4:PORT[,IPV4:PORT...].  Returns 0 or -1. */
int
loadgen_parse_coords(struct loadgen *lg, const char *list)
{
	const char	*why;
	int		 i, n;

	if ((n = failover_parse(lg->coord_addrs, list, &why)) == -1)
		return (-1);
	for (i = 0; i < n; i++) {
		if (inet_pton(AF_INET, lg->coord_addrs[i].host,
		    &lg->coords[i].sin_addr) != 1)
			return (-1);
		lg->coords[i].sin_family = AF_INET;
		lg->coords[i].sin_port = htons((uint16_t)atoi(
		    lg->coord_addrs[i].port));
	}
	lg->ncoords = n;
	return (0);
}

/* The failover did not end in time. */
static void
loadgen_failover_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct loadgen	*lg = arg;
	char		 msg[160];

	(void)fd;
	(void)what;
	snprintf(msg, sizeof(msg), "failover: %d of %d agents back, %d with "
	    "every event acknowledged, after %d s", lg->fo_back, lg->n,
	    lg->fo_replayed, LOADGEN_FAILOVER_MAX_S);
	lg->hooks->fail(lg, msg);
}

/* Half the events acknowledged: kill the leader, start the clock. */
static void
loadgen_failover_kill(struct loadgen *lg)
{
	struct timespec	 wall;
	struct tm	 tm;
	char		 stamp[32];

	lg->fo_killed = 1;
	lg->fo_t0 = loadgen_now_ns();
	/* The coordinators' logs say when, in UTC: the kill's moment beside
	 * them. */
	clock_gettime(CLOCK_REALTIME, &wall);
	gmtime_r(&wall.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	if (kill(lg->kill_pid, SIGKILL) == -1) {
		lg->hooks->fail(lg, "failover: cannot kill --kill-pid");
		return;
	}
	printf("failover: SIGKILL to the leader (pid %d) at %s.%03ldZ, %d "
	    "agents on it, %llu of %llu events acknowledged\n",
	    (int)lg->kill_pid, stamp, wall.tv_nsec / 1000000, lg->n,
	    (unsigned long long)lg->fo_acked,
	    (unsigned long long)lg->n * (unsigned long long)lg->events_per);
	fflush(stdout);
}

/* Every connection is up on the leader: its events go, then the kill. */
void
loadgen_failover_start(struct loadgen *lg)
{
	struct timeval	 tv = { LOADGEN_FAILOVER_MAX_S, 0 };
	int		 i;

	lg->phase = LOADGEN_PHASE_FAILOVER;
	if ((lg->fo_timer = evtimer_new(lg->base, loadgen_failover_timeout,
	    lg)) == NULL) {
		lg->hooks->fail(lg, "out of memory");
		return;
	}
	evtimer_add(lg->fo_timer, &tv);
	for (i = 0; i < lg->n; i++)
		loadgen_events_pump(&lg->conns[i]);
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
	int		 delay, ready = c->state == LOADGEN_READY;

	if (lg->phase != LOADGEN_PHASE_FAILOVER || !lg->fo_killed)
		return (0);
	if (c->bev != NULL)
		bufferevent_free(c->bev);
	c->bev = NULL;
	c->state = LOADGEN_DEAD;
	if (ready)
		c->back = c->replayed = 0;
	delay = failover_ended(&c->fo, ready, (uint32_t)random());
	if (c->retry == NULL &&
	    (c->retry = evtimer_new(lg->base, loadgen_failover_retry, c)) ==
	    NULL) {
		lg->hooks->fail(lg, "out of memory");
		return (1);
	}
	tv.tv_sec = delay / 1000;
	tv.tv_usec = (delay % 1000) * 1000;
	evtimer_add(c->retry, &tv);
	return (1);
}

/* What a hello says of the failover: the leader this connection lost. */
void
loadgen_failover_hello(struct loadgen_conn *c, Dynprof__V1__Hello *h)
{
	if (c->lg->ncoords > 0)
		h->failed_leader = (char *)failover_lost_leader(&c->fo);
}

/* An Error frame: a follower naming the leader sends the agent there. */
void
loadgen_failover_error(struct loadgen_conn *c, int code, const char *leader)
{
	struct loadgen	*lg = c->lg;

	if (lg->phase != LOADGEN_PHASE_FAILOVER ||
	    code != DYNPROF__V1__ERROR_CODE__ERROR_NOT_LEADER)
		return;
	lg->fo_refused++;
	failover_not_leader(&c->fo, leader);
}

/* Prints the failover's figures and ends the run. */
static void
loadgen_failover_done(struct loadgen *lg)
{
	uint32_t	 max = 0;
	uint64_t	 sum = 0;
	int64_t		 now = loadgen_now_ns();
	int		 i;

	for (i = 0; i < lg->n; i++) {
		sum += lg->conns[i].fo.not_leader;
		if (lg->conns[i].fo.not_leader > max)
			max = lg->conns[i].fo.not_leader;
	}
	printf("failover: first agent welcomed by the new leader after %.0f ms, "
	    "all %d after %.0f ms, every event acknowledged after %.0f ms "
	    "(%llu sent again); ERROR_NOT_LEADER answers %d (per agent max "
	    "%u, mean %.2f)\n", (lg->fo_t_first - lg->fo_t0) / 1e6, lg->n,
	    (lg->fo_t_back - lg->fo_t0) / 1e6, (now - lg->fo_t0) / 1e6,
	    (unsigned long long)lg->fo_resent, lg->fo_refused, max,
	    (double)sum / lg->n);
	printf("RESULT agents=%d ranks=%d events=%llu acked_at_kill=%llu "
	    "failover_first_ms=%.0f failover_all_ms=%.0f "
	    "failover_replayed_ms=%.0f replayed=%llu not_leader=%d "
	    "not_leader_max=%u not_leader_mean=%.2f\n", lg->n,
	    lg->n * lg->ranks_per,
	    (unsigned long long)lg->n * (unsigned long long)lg->events_per,
	    (unsigned long long)lg->fo_acked,
	    (lg->fo_t_first - lg->fo_t0) / 1e6,
	    (lg->fo_t_back - lg->fo_t0) / 1e6, (now - lg->fo_t0) / 1e6,
	    (unsigned long long)lg->fo_resent, lg->fo_refused, max,
	    (double)sum / lg->n);
	fflush(stdout);
	lg->phase = LOADGEN_PHASE_DONE;
	event_base_loopbreak(lg->base);
}

/*
 * An agent back after the failover: done once every event of its own is
 * acknowledged again (the failover ends with the last agent's), else its
 * events go on.
 */
static void
loadgen_failover_replay(struct loadgen_conn *c)
{
	struct loadgen	*lg = c->lg;

	if (!c->replayed && c->acked >= (uint64_t)lg->events_per) {
		c->replayed = 1;
		if (++lg->fo_replayed == lg->n && lg->fo_back == lg->n)
			loadgen_failover_done(lg);
		return;
	}
	loadgen_events_pump(c);
}

/*
 * Events up to seq acknowledged: before the kill, half of all of them
 * acknowledged is the moment to kill; after, every one of a connection's
 * acknowledged again is its end.
 */
void
loadgen_failover_acked(struct loadgen_conn *c, uint64_t seq)
{
	struct loadgen	*lg = c->lg;

	if (!lg->fo_killed) {
		lg->fo_acked += seq - c->acked;
		c->acked = seq;
		loadgen_events_pump(c);
		if (2 * lg->fo_acked >= (uint64_t)lg->n *
		    (uint64_t)lg->events_per)
			loadgen_failover_kill(lg);
		return;
	}
	c->acked = seq;
	if (c->back)
		loadgen_failover_replay(c);
	else
		loadgen_events_pump(c);
}

/*
 * A welcome during the failover: one more agent back, its events not
 * acknowledged sent again (from what the Welcome says committed).
 */
void
loadgen_failover_welcome(struct loadgen_conn *c, const Dynprof__V1__Welcome *w)
{
	struct loadgen	*lg = c->lg;
	int64_t		 now;

	if (lg->phase != LOADGEN_PHASE_FAILOVER || !lg->fo_killed || c->back)
		return;
	c->back = 1;
	failover_welcomed(&c->fo);
	if (w->agent_boot_id == c->boot_id && w->acked_seq > c->acked &&
	    w->acked_seq <= c->sent)
		c->acked = w->acked_seq;
	c->sent = c->acked;	/* the rest again, as an agent replays */
	lg->fo_resent += (uint64_t)lg->events_per - c->acked;
	now = loadgen_now_ns();
	if (lg->fo_back++ == 0)
		lg->fo_t_first = now;
	if (lg->fo_back == lg->n)
		lg->fo_t_back = now;
	loadgen_failover_replay(c);
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
