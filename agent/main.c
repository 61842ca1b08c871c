/*
 * dynprof-agent's main(): everything else is in the dpagent library, which the
 * tests and fuzz targets link as it is.
 */

#include <signal.h>
#include <stddef.h>

#include "agent.h"
#include "log.h"

/* Runs one agent: from the flags to SIGTERM.  Exits 0, 1 (bad flags) or 2. */
int
main(int argc, char **argv)
{
	struct agent	*a;
	int		 rc;

	log_init("dynprof-agent", LOG_LEVEL_INFO);
	signal(SIGPIPE, SIG_IGN);
	if (guard_install() == -1)
		fatalx("cannot guard against truncated segments");
	if ((a = agent_new(argc, argv, &rc)) == NULL)
		return (rc);
	rc = agent_start(a) == -1 ? 2 : agent_run(a);
	agent_free(a);
	return (rc);
}
