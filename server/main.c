/*
 * dynprof-coordinator's main(): everything else is in the dpcoord library,
 * which tests and fuzz targets link.
 */

#include <sys/resource.h>

#include <signal.h>
#include <stdlib.h>

#include <event2/event.h>

#include "coord.h"
#include "log.h"

/* Raises the open file limit to its hard limit: one descriptor per agent. */
static void
main_raise_nofile(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Runs the coordinator until a signal stops it. */
int
main(int argc, char **argv)
{
	struct coord	*c;
	int		 rc = COORD_EXIT_OK;

	log_init("dynprof-coordinator", LOG_LEVEL_INFO);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (COORD_EXIT_RUNTIME);
	if (coord_parse_args(c, argc, argv) == -1) {
		free(c->conf.admin_token);
		free(c->conf.agent_token);
		free(c->conf.viewer_token);
		free(c);
		return (COORD_EXIT_USAGE);
	}
	signal(SIGPIPE, SIG_IGN);
	main_raise_nofile();
	if (coord_start(c) == -1)
		rc = COORD_EXIT_RUNTIME;
	else if (event_base_dispatch(c->base) == -1) {
		log_warnx("%s: event loop failed", __func__);
		rc = COORD_EXIT_RUNTIME;
	}
	coord_stop(c);
	free(c);
	log_info("stopped");
	return (rc);
}
