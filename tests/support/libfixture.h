/*
 * The fixture of the library's window tests (test_lib_window.c,
 * test_lib_handle.c): a real segment in a private directory whose config the
 * test writes as the agent does, and the real library opened on it as one
 * rank, its callbacks recording every call.  The checks are cmocka's.
 */

#ifndef DYNPROF_LIBFIXTURE_H
#define DYNPROF_LIBFIXTURE_H

#include "libdynprof.h"
#include "test_lib_helpers.h"

struct lib_fixture {
	char			*dir;
	struct segment		 agent;		/* the agent's view */
	struct seg_config	 cfg;
	struct tl_recorder	 rec;
	dynprof_t		*h;
};

/* libfixture.c */
int	 lf_setup(void **);
int	 lf_teardown(void **);
void	 lf_push(struct lib_fixture *);
void	 lf_open_rank(struct lib_fixture *, int);
void	 lf_one_window(struct lib_fixture *, int64_t, int64_t);
void	 lf_steps(struct lib_fixture *, int64_t, int64_t);
int	 lf_run_window(struct lib_fixture *, int64_t, int64_t, int64_t);
struct seg_slot lf_slot_of(struct lib_fixture *);
void	 lf_assert_call(const struct tl_call *, char, uint32_t, int64_t,
	    int64_t);
void	 lf_assert_ran(struct lib_fixture *, int, uint32_t, int64_t, int64_t);
void	 lf_assert_skipped(struct lib_fixture *, uint32_t);

#endif /* DYNPROF_LIBFIXTURE_H */
