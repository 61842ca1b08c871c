/*
 * What every listener of the coordinator (AgentLink, the admin API) does when
 * an accept fails.
 */

#include <errno.h>
#include <string.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>

#include "listener.h"
#include "log.h"

/* Turns a listener paused on EMFILE back on. */
static void
listener_accept_resume(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	evconnlistener_enable(arg);
}

/*
 * A listener's accept failed.  Out of descriptors (or memory): stop accepting
 * for a second rather than spin on a listener that stays readable.
 */
void
listener_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval	 tv = { 1, 0 };
	int		 err = EVUTIL_SOCKET_ERROR();

	(void)arg;
	if (err == EMFILE || err == ENFILE || err == ENOBUFS ||
	    err == ENOMEM) {
		log_warnx("%s: %s: not accepting for a second", __func__,
		    evutil_socket_error_to_string(err));
		evconnlistener_disable(l);
		if (event_base_once(evconnlistener_get_base(l), -1, EV_TIMEOUT,
		    listener_accept_resume, l, &tv) == -1)
			evconnlistener_enable(l);
		return;
	}
	log_warnx("%s: accept: %s", __func__,
	    evutil_socket_error_to_string(err));
}
