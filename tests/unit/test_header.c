/*
 * The public header compiles alone, twice included, under -std=c99 -pedantic
 * -Wall -Wextra -Werror, and the program links against libdynprof.so.
 */
#include "dynprof.h"
#include "dynprof.h"

int
main(void)
{
	struct dynprof_params	 p;
	struct dynprof_fast_state fs;
	struct dynprof_stats	 st;

	dynprof_params_init(&p);
	dynprof_get_fast_state(NULL, &fs);
	dynprof_get_stats(NULL, &st);
	if (p.version != DYNPROF_PARAMS_VERSION || p.rank != -1 ||
	    p.shm_mode != -1 || st.events_sent != 0)
		return (1);
	if (dynprof_step_begin(NULL, 1) != DYNPROF_EINVAL)
		return (1);
	return (dynprof_version()[0] == '0' ? 0 : 1);
}
