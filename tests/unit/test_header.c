/*
 * The public header compiles alone, twice included, under -std=c99 -pedantic
 * -Wall -Wextra -Werror, and the program links against libdynprof.so.
 */
#include "dynprof.h"
#include "dynprof.h"

#include <stddef.h>

/*
 * The layouts programs were built against: struct dynprof_window is passed
 * to callbacks and filled by dynprof_active_window(), so it never grows (its
 * news go to struct dynprof_window_info, versioned).
 */
typedef char window_layout[(sizeof(struct dynprof_window) == 24 &&
    offsetof(struct dynprof_window, start_step) == 8 &&
    offsetof(struct dynprof_window, stop_step) == 16) ? 1 : -1];
typedef char window_info_v1_layout[(offsetof(struct dynprof_window_info,
    duration_ns) == 48 && sizeof(struct dynprof_window_info) == 56) ? 1 : -1];

int
main(void)
{
	struct dynprof_params	 p;
	struct dynprof_fast_state fs;
	struct dynprof_stats	 st;
	struct dynprof_window_info wi;

	dynprof_params_init(&p);
	dynprof_get_fast_state(NULL, &fs);
	dynprof_get_stats(NULL, &st);
	if (p.version != DYNPROF_PARAMS_VERSION || p.rank != -1 ||
	    p.shm_mode != -1 || st.events_sent != 0)
		return (1);
	if (dynprof_step_begin(NULL, 1) != DYNPROF_EINVAL)
		return (1);
	wi.version = DYNPROF_WINDOW_INFO_VERSION;
	if (dynprof_window_info(NULL, 1, &wi) != DYNPROF_EINVAL)
		return (1);
	return (dynprof_version()[0] == '0' ? 0 : 1);
}
