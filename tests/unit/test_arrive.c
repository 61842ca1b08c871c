/*
 * The judgement of arrivals (server/arrive.c) on arrivals recorded from real
 * runs: four ranks of PyTorch DDP over gloo (tests/support/ddp_rank.py, 20 ms
 * of compute a step, four agents on one machine), each rank's arrival at a
 * step's gradient all-reduce (its mark, us from the first) as its slot kept
 * it, for the steps every rank kept (the stride grew to 16 as the ring
 * filled in under 2 s); then a node's clock set off, a rank that stops
 * marking, a job that goes back, and reports not to be believed.
 */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "model.h"

#define RANKS		4
#define PERCENT		30	/* the coordinator's default */
#define BUSY_US		20700	/* the runs' median busy time */
#define NOW_US		1700000000000000LL	/* the coordinator's clock */

/* Rank 2 computing 1.5 times longer throughout. */
static const int64_t slowed[][1 + RANKS] = {
	{ 2, 145, 0, 9122, 594 },
	{ 3, 36404, 62550, 45370, 36598 },
	{ 4, 85797, 91475, 96552, 85138 },
	{ 5, 122635, 124427, 131031, 120319 },
	{ 6, 154792, 153449, 164051, 156077 },
	{ 7, 189102, 189697, 201245, 190473 },
	{ 8, 225884, 225202, 236773, 227437 },
	{ 9, 259194, 260008, 271584, 260767 },
	{ 10, 293893, 293914, 305451, 294564 },
	{ 11, 335449, 334721, 345578, 333384 },
	{ 12, 372304, 372304, 381256, 372768 },
	{ 13, 406178, 404014, 413754, 404661 },
	{ 14, 437255, 438251, 447405, 436903 },
	{ 15, 471352, 472784, 482117, 470617 },
	{ 16, 505933, 504640, 515294, 506513 },
	{ 17, 537777, 539348, 549154, 538512 },
	{ 18, 572154, 571511, 581244, 572771 },
	{ 19, 608981, 609841, 623536, 609719 },
	{ 20, 647918, 647292, 656532, 646061 },
	{ 21, 680817, 680794, 689781, 681375 },
	{ 22, 714458, 714647, 723090, 713869 },
	{ 23, 747708, 747200, 757054, 748338 },
	{ 24, 785000, 783545, 794501, 785669 },
	{ 25, 822141, 822141, 831331, 822641 },
	{ 26, 854560, 855188, 866054, 853814 },
	{ 27, 892457, 893027, 901143, 891445 },
	{ 28, 925977, 926428, 936975, 926010 },
	{ 29, 962339, 961704, 970842, 963434 },
	{ 30, 995157, 995702, 1003337, 994470 },
	{ 31, 1028052, 1028739, 1038103, 1027350 },
	{ 32, 1061743, 1061046, 1071103, 1061835 },
	{ 33, 1096449, 1095315, 1106621, 1095972 },
	{ 34, 1133390, 1133840, 1142504, 1134465 },
	{ 36, 1201415, 1202229, 1209585, 1200751 },
	{ 40, 1345595, 1345085, 1347389, 1344677 },
	{ 48, 1610123, 1611272, 1618517, 1610676 },
	{ 64, 2180158, 2179325, 2188529, 2178754 },
	{ 80, 2749044, 2748468, 2759024, 2748510 },
	{ 96, 3340804, 3341353, 3351785, 3340803 },
	{ 112, 3909061, 3908454, 3918266, 3904557 },
};

/* Nobody slowed. */
static const int64_t balanced[][1 + RANKS] = {
	{ 2, 3153, 551, 0, 1057 },
	{ 3, 29956, 30337, 29362, 28881 },
	{ 4, 53446, 56454, 56995, 53474 },
	{ 5, 79593, 79918, 80559, 79913 },
	{ 6, 103144, 103798, 108792, 104536 },
	{ 7, 136555, 137855, 138971, 137099 },
	{ 8, 164909, 163619, 164267, 165567 },
	{ 9, 187762, 188402, 189808, 189132 },
	{ 10, 216634, 217306, 218786, 218078 },
	{ 11, 244133, 245973, 245324, 244718 },
	{ 12, 268522, 269096, 270197, 269716 },
	{ 13, 293103, 292510, 294086, 293666 },
	{ 14, 316690, 316189, 317434, 317948 },
	{ 15, 343212, 343897, 342444, 341373 },
	{ 16, 366023, 367987, 367312, 366718 },
	{ 17, 393010, 392463, 394311, 393710 },
	{ 18, 419989, 416472, 421795, 420702 },
	{ 19, 445133, 444459, 444481, 445865 },
	{ 20, 469338, 468636, 468743, 468039 },
	{ 21, 491323, 491992, 493313, 492546 },
	{ 22, 517401, 516825, 516278, 516316 },
	{ 23, 539209, 539730, 543016, 540363 },
	{ 24, 575171, 575864, 578114, 576520 },
	{ 25, 608441, 608989, 610177, 609656 },
	{ 26, 633994, 633378, 632255, 632708 },
	{ 27, 657237, 656006, 656518, 657790 },
	{ 28, 681112, 679822, 680290, 680943 },
	{ 29, 703225, 704756, 704194, 703711 },
	{ 30, 728741, 728204, 727009, 727540 },
	{ 31, 752731, 753747, 753249, 754581 },
	{ 32, 777645, 778911, 777007, 778392 },
	{ 33, 804645, 805779, 806404, 805223 },
	{ 34, 829836, 830970, 831554, 830501 },
	{ 36, 894493, 896352, 895734, 894986 },
	{ 40, 994362, 993701, 992541, 993154 },
	{ 48, 1215923, 1215316, 1214224, 1214891 },
	{ 64, 1620898, 1621449, 1622667, 1622102 },
	{ 96, 2476945, 2476253, 2476183, 2486457 },
	{ 128, 3368211, 3368727, 3371932, 3368730 },
	{ 160, 4275911, 4276910, 4276434, 4275429 },
};

/* A job of RANKS ranks as the coordinator holds it. */
struct job_arrivals {
	struct rank_arrive	 ra[RANKS];
	struct arrive_rank	 r[RANKS];
	struct arrive_job	 aj;
};

static void
job_init(struct job_arrivals *j)
{
	int	 i;

	memset(j, 0, sizeof(*j));
	for (i = 0; i < RANKS; i++) {
		j->r[i].ra = &j->ra[i];
		j->r[i].rank = i;
	}
	arrive_job_reset(&j->aj);
}

/* Rank i's arrivals rows [from, to) of rec as its agent sends them, its node
 * off_us behind the coordinator's clock and estimated so. */
static void
feed(struct job_arrivals *j, const int64_t (*rec)[1 + RANKS], size_t from,
    size_t to, int i, int64_t off_us)
{
	int64_t	 steps[64], us[64];
	size_t	 k, n = 0;

	for (k = from; k < to && n < 64; k++, n++) {
		steps[n] = rec[k][0];
		us[n] = NOW_US - off_us + rec[k][1 + i];
	}
	assert_int_equal(arrive_rank_take(&j->ra[i], steps, us, n, off_us,
	    NOW_US, INT64_MAX / 2), n);
}

/* Feeds every rank rows [from, to) and judges them. */
static int
tick(struct job_arrivals *j, const int64_t (*rec)[1 + RANKS], size_t from,
    size_t to)
{
	int	 i;

	for (i = 0; i < RANKS; i++)
		feed(j, rec, from, to, i, 0);
	return (arrive_judge(&j->aj, j->r, RANKS, PERCENT, BUSY_US, 0));
}

#define NSLOWED		(sizeof(slowed) / sizeof(slowed[0]))
#define NBALANCED	(sizeof(balanced) / sizeof(balanced[0]))

/* Rank 2, 1.5 times slower, is last at nearly every step: flagged once 16
 * steps were judged, with its share and how late it came. */
static void
test_slowed_rank_last(void **state)
{
	struct job_arrivals	 j;
	size_t			 k;

	(void)state;
	job_init(&j);
	/* Ticks of 5 steps, as the agents' reports bring them. */
	for (k = 0; k + 5 <= 15; k += 5) {
		assert_int_equal(tick(&j, slowed, k, k + 5), 5);
		assert_false(j.aj.flagged);
	}
	assert_int_equal(tick(&j, slowed, 15, 20), 5);
	assert_true(j.aj.flagged);
	assert_int_equal(j.aj.rank, 2);
	assert_true(j.aj.share > 0.9f);
	assert_true(j.aj.late_avg_us > 7000 && j.aj.late_avg_us < 13000);
	for (k = 20; k < NSLOWED; k += 10)
		assert_int_equal(tick(&j, slowed, k, k + 10), 10);
	assert_true(j.aj.flagged && j.aj.rank == 2);
	assert_int_equal(j.aj.n, NSLOWED);
	assert_int_equal(j.aj.steps, NSLOWED);
	/* Nothing new: nothing judged twice. */
	assert_int_equal(tick(&j, slowed, 0, 0), 0);
	assert_int_equal(j.aj.steps, NSLOWED);
}

/* Nobody slowed: the last rank comes within noise of the others, under the
 * gate (30% of the median busy time) nearly always; nobody is flagged. */
static void
test_balanced_flags_nobody(void **state)
{
	struct job_arrivals	 j;
	size_t			 k;

	(void)state;
	job_init(&j);
	for (k = 0; k < NBALANCED; k += 4) {
		tick(&j, balanced, k, k + 4 < NBALANCED ? k + 4 : NBALANCED);
		assert_false(j.aj.flagged);
	}
	assert_int_equal(j.aj.steps, NBALANCED);
	assert_true(j.aj.count <= 2);
}

/* Judges the balanced run with each rank i's node off[i] behind the
 * coordinator's clock, its arrivals moved by est[i] (NULL: not moved). */
static void
judge_offset(struct job_arrivals *j, const int64_t *off, const int64_t *est)
{
	int64_t	 steps[NBALANCED], us[NBALANCED];
	size_t	 n;
	int	 i;

	job_init(j);
	for (i = 0; i < RANKS; i++) {
		for (n = 0; n < NBALANCED; n++) {
			steps[n] = balanced[n][0];
			us[n] = NOW_US - off[i] + balanced[n][1 + i];
		}
		arrive_rank_take(&j->ra[i], steps, us, n, est != NULL ?
		    est[i] : 0, NOW_US, INT64_MAX / 2);
	}
	arrive_judge(&j->aj, j->r, RANKS, PERCENT, BUSY_US, 0);
}

/*
 * Rank 2's node is 5 s behind the coordinator, rank 0's 3 s ahead: their
 * clocks estimated from their reports (sent on their clocks, received 80 to
 * 400 us later), the arrivals judge as on one clock.  Uncorrected, rank 0
 * (3 s ahead) would be last at every step.
 */
static void
test_clock_offsets(void **state)
{
	struct job_arrivals	 j;
	struct arrive_clock	 ck[RANKS];
	int64_t			 off[RANKS] = { -3000000, 0, 5000000, 0 };
	int64_t			 est[RANKS], delay;
	int			 i, k;

	(void)state;
	memset(ck, 0, sizeof(ck));
	for (i = 0; i < RANKS; i++)
		for (k = 0; k < 20; k++) {
			delay = 80 + (k * 97 + i * 31) % 320;
			est[i] = arrive_clock_note(&ck[i], NOW_US - off[i] -
			    delay, NOW_US);
		}
	for (i = 0; i < RANKS; i++) {
		assert_true(est[i] - off[i] >= 80 && est[i] - off[i] <= 120);
	}
	/* A report sent at a time not believed leaves the estimate. */
	assert_int_equal(arrive_clock_note(&ck[0], 0, NOW_US), est[0]);
	assert_int_equal(arrive_clock_note(&ck[0], NOW_US - 2 * 86400000000LL,
	    NOW_US), est[0]);

	judge_offset(&j, off, est);
	assert_false(j.aj.flagged);

	/* Without the estimate. */
	judge_offset(&j, off, NULL);
	assert_true(j.aj.flagged && j.aj.rank == 0);
}

/*
 * A step waits for every rank's arrival: one whose agent reports later is
 * judged then (a rank with none at all does not mark: it is not waited for).  A rank that stopped marking (its newest arrival older than
 * all the freshest rank keeps) is left out, and the others go on.
 */
static void
test_late_report_and_stopped_rank(void **state)
{
	struct job_arrivals	 j;
	int			 i;

	(void)state;
	job_init(&j);
	for (i = 0; i < RANKS; i++)
		feed(&j, slowed, 0, i != 3 ? 10 : 4, i, 0);
	assert_int_equal(arrive_judge(&j.aj, j.r, RANKS, PERCENT, BUSY_US, 0), 4);
	feed(&j, slowed, 4, 10, 3, 0);
	assert_int_equal(arrive_judge(&j.aj, j.r, RANKS, PERCENT, BUSY_US, 0), 6);
	/* Rank 3 stops; the others go on past what rank 0 keeps. */
	for (i = 0; i < 3; i++)
		feed(&j, slowed, 10, 10 + ARRIVE_KEEP, i, 0);
	assert_int_equal(arrive_judge(&j.aj, j.r, RANKS, PERCENT, BUSY_US, 0),
	    ARRIVE_KEEP);
	assert_true(j.aj.flagged && j.aj.rank == 2);
}

/*
 * The job goes back (restarted from a checkpoint, every rank at step 2
 * again): what it judged is forgotten and its steps judged anew.  A rank
 * whose steps go back starts its own arrivals over.
 */
static void
test_job_goes_back(void **state)
{
	struct job_arrivals	 j;

	(void)state;
	job_init(&j);
	assert_int_equal(tick(&j, slowed, 0, 30), ARRIVE_KEEP);
	assert_true(j.aj.flagged);
	assert_int_equal(tick(&j, balanced, 0, 10), 10);
	assert_int_equal(j.aj.n, 10);
	assert_false(j.aj.flagged);
	assert_int_equal(j.ra[0].n, 10);
}

/*
 * Reports not to be believed: steps out of range, times far from the
 * coordinator's, none at all; two ranks judge (the later is last when well
 * after), one does not.
 */
static void
test_bad_reports_and_few_ranks(void **state)
{
	struct rank_arrive	 ra[2];
	struct arrive_rank	 r[2] = { { &ra[0], 7 }, { &ra[1], 9 } };
	struct arrive_job	 aj;
	int64_t			 steps[3] = { -5, 10, 11 };
	int64_t			 us[3] = { NOW_US, NOW_US - 3 * 86400000000LL,
				    INT64_MAX };
	int64_t			 s, t;
	int			 k;

	(void)state;
	memset(ra, 0, sizeof(ra));
	assert_int_equal(arrive_rank_take(&ra[0], steps, us, 3, 0, NOW_US,
	    1000), 0);
	steps[0] = 2000;
	us[0] = NOW_US;
	assert_int_equal(arrive_rank_take(&ra[0], steps, us, 1, 0, NOW_US,
	    1000), 0);
	assert_int_equal(ra[0].n, 0);
	arrive_job_reset(&aj);
	assert_int_equal(arrive_judge(&aj, r, 2, PERCENT, BUSY_US, 0), 0);
	assert_int_equal(aj.rank, -1);
	assert_int_equal(arrive_judge(&aj, NULL, 0, PERCENT, BUSY_US, 0), 0);
	for (k = 0; k < ARRIVE_WINDOW; k++) {
		s = k;
		t = NOW_US + k * 30000;
		arrive_rank_take(&ra[0], &s, &t, 1, 0, NOW_US, 1000);
		/* Rank 9 comes 7 ms after rank 7 (over 30% of 20.7 ms). */
		t += 7000;
		arrive_rank_take(&ra[1], &s, &t, 1, 0, NOW_US, 1000);
		assert_int_equal(arrive_judge(&aj, r, 2, PERCENT, BUSY_US, 0), 1);
		assert_int_equal(aj.flagged, k + 1 >= ARRIVE_MIN_STEPS);
	}
	assert_int_equal(aj.rank, 9);
	assert_int_equal(aj.count, ARRIVE_WINDOW);
	assert_int_equal(aj.late_avg_us, 7000);
	/* Within the gate (5 ms): judged, nobody last; the share falls and
	 * the flag goes once rank 9 is last at half of the window or less. */
	for (k = ARRIVE_WINDOW; k < 2 * ARRIVE_WINDOW; k++) {
		s = k;
		t = NOW_US + k * 30000;
		arrive_rank_take(&ra[0], &s, &t, 1, 0, NOW_US, 1000);
		t += 5000;
		arrive_rank_take(&ra[1], &s, &t, 1, 0, NOW_US, 1000);
		arrive_judge(&aj, r, 2, PERCENT, BUSY_US, 0);
		assert_int_equal(aj.flagged, k - ARRIVE_WINDOW + 1 <
		    ARRIVE_WINDOW / 2);
	}
	/* One rank judges nothing. */
	arrive_job_reset(&aj);
	assert_int_equal(arrive_judge(&aj, r, 1, PERCENT, BUSY_US, 0), 0);
}

/*
 * The README's example (examples/torch_ddp.py), four ranks on two cores,
 * nobody slowed, as dynprofctl stragglers showed it: steps of 102 ms, busy
 * times of 0.8 ms, one rank (0) last at nearly every step by 2.3 ms, which
 * passes the gate of 1 ms (ARRIVE_SLACK_US over 30% of 0.8 ms).  Under the
 * floor the coordinator gives, 5% of the step time the ranks' marks show,
 * nobody is last; without it, rank 0 is flagged.  Then the job's ranks go:
 * nobody is last, whatever the window held.
 */
static void
test_floor_and_ranks_gone(void **state)
{
	static const int64_t jitter[RANKS] = { 2300, 0, 150, 90 };
	struct job_arrivals	 j, f;
	int64_t			 s, t, floor_us;
	int			 i, k;

	(void)state;
	job_init(&j);
	job_init(&f);
	for (k = 0; k < ARRIVE_WINDOW; k++) {
		for (i = 0; i < RANKS; i++) {
			s = k + 1;
			t = NOW_US + k * 102000 + jitter[(i + (k % 7 == 0)) %
			    RANKS];
			arrive_rank_take(&j.ra[i], &s, &t, 1, 0, NOW_US,
			    INT64_MAX / 2);
			arrive_rank_take(&f.ra[i], &s, &t, 1, 0, NOW_US,
			    INT64_MAX / 2);
		}
		arrive_judge(&j.aj, j.r, RANKS, PERCENT, 800, 0);
		floor_us = arrive_rank_step_us(&f.ra[1]) * 5 / 100;
		arrive_judge(&f.aj, f.r, RANKS, PERCENT, 800, floor_us);
		assert_false(f.aj.flagged);
	}
	assert_true(arrive_rank_step_us(&f.ra[1]) > 101800 &&
	    arrive_rank_step_us(&f.ra[1]) < 102200);
	/* The first step, judged before two marks gave a step time. */
	assert_int_equal(f.aj.count, 1);
	assert_true(j.aj.flagged);
	assert_int_equal(j.aj.rank, 0);
	assert_true(j.aj.late_avg_us > 1000 && j.aj.late_avg_us < 5100);
	/* One rank left marking: nobody is last. */
	for (i = 1; i < RANKS; i++)
		arrive_rank_reset(&j.ra[i]);
	assert_int_equal(arrive_judge(&j.aj, j.r, RANKS, PERCENT, 800, 0), 0);
	assert_false(j.aj.flagged);
	assert_int_equal(j.aj.rank, -1);
	assert_int_equal(j.aj.n, 0);
	/* Every rank gone. */
	assert_int_equal(arrive_judge(&f.aj, f.r, 0, PERCENT, 800, 0), 0);
	assert_int_equal(f.aj.rank, -1);
	assert_true(arrive_rank_step_us(&f.ra[0]) > 101800);
	arrive_rank_reset(&f.ra[0]);
	assert_int_equal(arrive_rank_step_us(&f.ra[0]), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slowed_rank_last),
		cmocka_unit_test(test_balanced_flags_nobody),
		cmocka_unit_test(test_clock_offsets),
		cmocka_unit_test(test_late_report_and_stopped_rank),
		cmocka_unit_test(test_job_goes_back),
		cmocka_unit_test(test_bad_reports_and_few_ranks),
		cmocka_unit_test(test_floor_and_ranks_gone),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
