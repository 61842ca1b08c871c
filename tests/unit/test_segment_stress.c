/*
 * Seqlock stress: one writer process rewrites the config as fast as it can while
 * three reader processes read it and check a checksum over every read they are
 * given.  Zero torn reads may be accepted.
 *
 * Built twice.  The second build compiles segment.c with SEGMENT_TEST_NO_SEQLOCK
 * (the writer skips the seqlock): there the same readers must DETECT torn reads,
 * which proves the checksum can catch what the seqlock prevents.
 */

#include <sys/mman.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_lib_helpers.h"

#define NREADERS	3
#define NPATTERNS	4
#ifdef SEGMENT_TEST_NO_SEQLOCK
#define READ_MS		10000	/* at most: stops at the first torn read */
#else
#define READ_MS		2000
#endif

struct shared {
	_Atomic int		 stop_writer;
	_Atomic int		 torn_seen;
	_Atomic uint64_t	 writes;
	uint64_t		 ok[NREADERS];
	uint64_t		 torn[NREADERS];	/* accepted, checksum wrong */
	uint64_t		 etorn[NREADERS];	/* refused by the reader */
};

/* Checksum of the windows of a config: 64-bit words, position-weighted. */
static uint32_t
checksum(const struct seg_config *cfg)
{
	const unsigned char	*p = (const unsigned char *)cfg->windows;
	uint64_t		 h = 1469598103934665603ULL, w;
	size_t			 i;

	for (i = 0; i + 8 <= sizeof(cfg->windows); i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 1099511628211ULL;
	}
	return ((uint32_t)(h ^ (h >> 32)));
}

static void
make_pattern(struct seg_config *cfg, int k)
{
	unsigned char	*p = (unsigned char *)cfg->windows;
	size_t		 i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < sizeof(cfg->windows); i++)
		p[i] = (unsigned char)(k * 67 + i * 13 + (i >> 8));
	cfg->nwindows = SEG_MAX_WINDOWS;
	cfg->pad = checksum(cfg);
}

static long long
tl_now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

static void
writer(const char *dir, struct shared *sh)
{
	static struct seg_config pats[NPATTERNS];
	struct segment	 seg;
	uint64_t	 n = 0;
	long long	 gap_end;
	unsigned	 seed = (unsigned)getpid();
	int		 k, burst;

	if (segment_open(&seg, dir, "stress", 0, 0) != SEG_OK)
		_exit(1);
	for (k = 0; k < NPATTERNS; k++)
		make_pattern(&pats[k], k);
	/*
	 * Bursts of back-to-back writes with short random gaps: a writer that
	 * never pauses starves every reader (each copy overlaps a write), and
	 * then nothing is tested.  Reads overlapping a burst's first write are
	 * the case the seqlock exists for.
	 */
	while (!atomic_load_explicit(&sh->stop_writer, memory_order_relaxed)) {
		burst = 1 + rand_r(&seed) % 8;
		while (burst-- > 0) {
			pats[n % NPATTERNS].generation = n + 1;
			segment_write_config(&seg, &pats[n % NPATTERNS]);
			n++;
		}
		gap_end = tl_now_ns() + rand_r(&seed) % 40000;
		while (tl_now_ns() < gap_end)
			;
	}
	atomic_store(&sh->writes, n);
	segment_close(&seg);
	_exit(0);
}

static void
reader(const char *dir, struct shared *sh, int id)
{
	static struct seg_config out;
	struct segment	 seg;
	long long	 end;
	int		 rc, i;

	if (segment_open(&seg, dir, "stress", 0, 0) != SEG_OK)
		_exit(1);
	end = tl_now_ms() + READ_MS;
	while (tl_now_ms() < end) {
		for (i = 0; i < 64; i++) {
			rc = segment_read_config(&seg, &out, NULL);
			if (rc == SEG_ETORN) {
				sh->etorn[id]++;
				continue;
			}
			if (rc != SEG_OK)
				_exit(2);
			if (out.generation == 0)
				continue;	/* before the first write */
			sh->ok[id]++;
			if (checksum(&out) != out.pad) {
				sh->torn[id]++;
				atomic_store(&sh->torn_seen, 1);
			}
		}
#ifdef SEGMENT_TEST_NO_SEQLOCK
		if (atomic_load(&sh->torn_seen))
			break;
#endif
	}
	segment_close(&seg);
	_exit(0);
}

static void
test_seqlock_stress(void **state)
{
	struct shared	*sh;
	struct segment	 seg;
	char		*dir;
	pid_t		 wpid, rpids[NREADERS];
	uint64_t	 ok = 0, torn = 0, etorn = 0;
	int		 i, status;

	(void)state;
	dir = tl_tmpdir();
	assert_non_null(dir);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	assert_int_equal(segment_open(&seg, dir, "stress", SEG_CREATE, 0600),
	    SEG_OK);

	wpid = fork();
	assert_true(wpid >= 0);
	if (wpid == 0)
		writer(dir, sh);
	for (i = 0; i < NREADERS; i++) {
		rpids[i] = fork();
		if (rpids[i] == 0)
			reader(dir, sh, i);
	}
	for (i = 0; i < NREADERS; i++) {
		if (rpids[i] < 0)
			continue;
		waitpid(rpids[i], &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			rpids[i] = -1;
	}
	atomic_store(&sh->stop_writer, 1);
	waitpid(wpid, &status, 0);

	for (i = 0; i < NREADERS; i++) {
		ok += sh->ok[i];
		torn += sh->torn[i];
		etorn += sh->etorn[i];
	}
	print_message("writes %llu, reads accepted %llu, torn accepted %llu, "
	    "refused after retries %llu\n", (unsigned long long)sh->writes,
	    (unsigned long long)ok, (unsigned long long)torn,
	    (unsigned long long)etorn);

	segment_close(&seg);
	segment_unlink(dir, "stress");
	tl_rmtree(dir);

	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (i = 0; i < NREADERS; i++)
		assert_true(rpids[i] > 0);
	assert_true(sh->writes > 0);
#ifdef SEGMENT_TEST_NO_SEQLOCK
	/* Without the seqlock the checksum must catch torn reads. */
	assert_true(torn > 0);
#else
	assert_true(ok >= 100 * NREADERS);
	assert_int_equal(torn, 0);
#endif
	munmap(sh, sizeof(*sh));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seqlock_stress),
	};

	return (cmocka_run_group_tests_name("segment_stress", tests, NULL,
	    NULL));
}
