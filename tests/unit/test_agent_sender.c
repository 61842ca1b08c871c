/*
 * Who may wake the agent about a slot, and who may take a slot from a process
 * that looks gone, when pids of several pid namespaces share a segment
 * (docs/containers.md).  A holder in another namespace is made by writing
 * another namespace's inode into its slot.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"
#include "unit_util.h"

#define T_JOB		"sender-1"
#define T_OTHER_NS	0x7777ULL	/* no namespace of this test's */
#define T_DEAD		(getpid() + 100000)

struct t {
	char		 dir[64];
	struct segment	 seg;
};

/* A segment in a directory of its own. */
static int
setup(void **state)
{
	struct t	*t = calloc(1, sizeof(*t));

	assert_non_null(t);
	assert_int_equal(unit_tmpdir(t->dir, sizeof(t->dir)), 0);
	assert_int_equal(segment_open(&t->seg, t->dir, T_JOB, SEG_CREATE, 0600),
	    SEG_OK);
	*state = t;
	return (0);
}

/* Removes the segment and its directory. */
static int
teardown(void **state)
{
	struct t	*t = *state;

	segment_close(&t->seg);
	segment_unlink(t->dir, T_JOB);
	rmdir(t->dir);
	free(t);
	return (0);
}

/* An attached event of rank for slot, from pid, carrying token. */
static void
event(Dynprof__V1__RankEvent *ev, int slot, int32_t rank, int32_t pid,
    uint64_t token)
{
	dynprof__v1__rank_event__init(ev);
	ev->kind = DYNPROF__V1__EVENT_KIND__EVENT_ATTACHED;
	ev->job = (char *)T_JOB;
	ev->slot = (uint32_t)slot;
	ev->rank = rank;
	ev->pid = pid;
	ev->rank_seq = 1;
	ev->slot_token = token;
}

/* The holder in this namespace: the kernel's pid decides, as always. */
static void
test_same_namespace(void **state)
{
	struct t		*t = *state;
	Dynprof__V1__RankEvent	 ev;
	uint64_t		 token;
	uint32_t		 inc;
	int			 idx;

	idx = segment_slot_claim(&t->seg, getpid(), 3, NULL);
	assert_true(idx >= 0);
	token = t->seg.slots[idx].token;
	assert_int_equal(atomic_load(&t->seg.slots[idx].pidns), segment_pidns());
	event(&ev, idx, 3, getpid(), 0);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, getpid(), &inc), 0);
	assert_int_equal(inc, atomic_load(&t->seg.slots[idx].incarnation));
	/* The token alone proves nothing here: the pid must be the kernel's. */
	event(&ev, idx, 3, getpid(), token);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 0, &inc),
	    RANKS_FOREIGN);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, getpid() + 1, &inc),
	    RANKS_FOREIGN);
	event(&ev, idx, 3, getpid() + 1, token);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, getpid() + 1, &inc),
	    -1);
}

/* A holder in another namespace: its token decides, whatever the pid seen. */
static void
test_other_namespace(void **state)
{
	struct t		*t = *state;
	Dynprof__V1__RankEvent	 ev;
	uint64_t		 token;
	uint32_t		 inc;
	int			 idx;

	idx = segment_slot_claim(&t->seg, 1, 4, NULL);
	assert_true(idx >= 0);
	atomic_store(&t->seg.slots[idx].pidns, T_OTHER_NS);
	token = t->seg.slots[idx].token;
	assert_true(token != 0);
	/* Not visible here (0), or seen under another number (an ancestor). */
	event(&ev, idx, 4, 1, token);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 0, &inc), 0);
	assert_true(inc != 0);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 4242, &inc), 0);
	/* A spoof: the right slot, rank and pid, not the token. */
	event(&ev, idx, 4, 1, token ^ 1);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 0, &inc), -1);
	assert_int_equal(inc, 0);
	event(&ev, idx, 4, 1, 0);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 0, &inc), -1);
	/* The token, another pid than the holder's. */
	event(&ev, idx, 4, 2, token);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 0, &inc), -1);

	/* Freed: its last events are still its own, by the token. */
	segment_slot_release(&t->seg, idx, 1);
	assert_int_equal(atomic_load(&t->seg.slots[idx].pidns), 0);
	assert_int_equal(t->seg.slots[idx].last_pidns, T_OTHER_NS);
	t->seg.slots[idx].rank_seq = 2;
	event(&ev, idx, 4, 1, token);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 0, &inc), 0);
	assert_int_equal(inc, 0);
	event(&ev, idx, 4, 1, token ^ 1);
	assert_int_equal(ranks_check_sender(&t->seg, &ev, 0, &inc), -1);
}

/*
 * A pid of another namespace is never judged by kill(): neither the agent's
 * default judge nor a rank looking for a slot takes it; a dead holder of this
 * namespace is taken, and a claim in progress (pidns 0) is left alone.
 */
static void
test_never_judged_across(void **state)
{
	struct t	*t = *state;
	uint32_t	 i;

	for (i = 0; i < t->seg.nslots; i++)
		assert_int_equal(segment_slot_claim(&t->seg, T_DEAD, (int32_t)i,
		    NULL), (int)i);
	for (i = 0; i < t->seg.nslots; i++)
		atomic_store(&t->seg.slots[i].pidns, T_OTHER_NS);
	assert_int_equal(segment_slot_dead(&t->seg.slots[0]), 0);
	assert_int_equal(segment_reclaim_dead(&t->seg, NULL, NULL), 0);
	assert_int_equal(segment_slot_claim(&t->seg, getpid(), 999, NULL),
	    SEG_ENOSLOT);
	atomic_store(&t->seg.slots[7].pidns, 0);		/* claiming */
	assert_int_equal(segment_reclaim_dead(&t->seg, NULL, NULL), 0);
	assert_int_equal(segment_slot_claim(&t->seg, getpid(), 999, NULL),
	    SEG_ENOSLOT);
	atomic_store(&t->seg.slots[5].pidns, segment_pidns());
	assert_int_equal(segment_slot_dead(&t->seg.slots[5]), 1);
	assert_int_equal(segment_slot_claim(&t->seg, getpid(), 999, NULL), 5);
	atomic_store(&t->seg.slots[9].pidns, segment_pidns());
	assert_int_equal(segment_reclaim_dead(&t->seg, NULL, NULL), 1);
	assert_int_equal(t->seg.slots[9].last_pidns, segment_pidns());
	assert_int_equal(atomic_load(&t->seg.slots[9].pid), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_same_namespace, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_other_namespace, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_never_judged_across, setup,
		    teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
