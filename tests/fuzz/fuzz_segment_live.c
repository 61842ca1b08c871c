/*
 * Fuzz target: the readers of a live segment while someone else scribbles on
 * it.  A real segment (job "fzlive", in a private directory under /dev/shm
 * when there is one) is mapped twice: once by the code under test, once by a
 * mutator thread that flips random bytes of the header, the config and the
 * slots while each input runs, as a buggy or hostile process sharing the
 * segment could.  The readers, which checked the sizes once when they mapped
 * it, must never crash, never read outside the mapping and never hand out
 * what does not fit its buffer:
 *
 *	segment_read_config()	the config under its seqlock (at most
 *				SEG_MAX_WINDOWS windows, strings terminated)
 *	segment_slot_read()	a slot the input names (strings terminated)
 *	ranks_check_slot()	the agent's check of a rank event's slot
 *	dynprof_step_begin/end	the library's step functions, through a real
 *				handle (dynprof_open()) holding a slot of it
 *
 * Input: byte 0 how many bytes the mutator flips (0-255), byte 1 where
 * (header, config, slots, anywhere), bytes 2-3 the slot index read,
 * bytes 4-7 the first step, bytes 0-7 seed the flips, the rest the config
 * written before the run
 * (as segment_write_config() writes one: raw bytes, no checks).
 * Each input starts from the segment's own header, as created.  The readers
 * run while the thread flips, then once more after its last flip: that run
 * sees the same bytes whenever the input is replayed.
 */

#include <sys/mman.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "dynprof.h"
#include "fuzzdir.h"
#include "segment.h"

int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_JOB	"fzlive"
#define FUZZ_CLEAN	1000		/* inputs between output cleanups */

static struct segment		 fuzz_seg;	/* the agent's mapping */
static uint8_t			*fuzz_map;	/* the mutator's mapping */
static size_t			 fuzz_size;
static struct seg_header	 fuzz_pristine;
static struct seg_config	 fuzz_cfg, fuzz_in;
static struct seg_slot		 fuzz_slot;
static dynprof_t		*fuzz_h;
static char			 fuzz_dir[128], fuzz_out[192];
static unsigned			 fuzz_inputs;

/* The mutator: flips `budget` bytes of region `where` for each input. */
static pthread_t		 fuzz_thread;
static pthread_mutex_t		 fuzz_mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t		 fuzz_cv = PTHREAD_COND_INITIALIZER;
static unsigned			 fuzz_gen, fuzz_done, fuzz_budget, fuzz_where;
static uint64_t			 fuzz_rnd;
static int			 fuzz_quit;

static void
fuzz_fail(const char *what)
{
	fprintf(stderr, "fuzz_segment_live: %s\n", what);
	abort();
}

static uint64_t
fuzz_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (*s * 0x2545f4914f6cdd1dULL);
}

/* One flip: a bit, a byte, or a 32-bit word set to an extreme. */
static void
fuzz_flip(uint64_t *s, unsigned where)
{
	uint64_t	 r = fuzz_random(s);
	size_t		 off, lo = 0, span = fuzz_size;
	uint32_t	 v;

	switch (where % 4) {
	case 0:
		span = sizeof(struct seg_header);
		break;
	case 1:
		lo = fuzz_seg.hdr->config_offset == 0 ? 0 :
		    fuzz_pristine.config_offset;
		span = 1024;	/* generation, nwindows, the first window */
		break;
	case 2:
		lo = fuzz_pristine.slots_offset;
		span = 2 * sizeof(struct seg_slot);
		break;
	}
	off = lo + (size_t)(r >> 16) % span;
	if (off >= fuzz_size)
		return;
	switch (r & 7) {
	case 0:
	case 1:
	case 2:
		fuzz_map[off] ^= (uint8_t)(1u << ((r >> 3) & 7));
		break;
	case 3:
	case 4:
		fuzz_map[off] = (uint8_t)(r >> 8);
		break;
	default:
		off &= ~(size_t)3;
		if (off + 4 > fuzz_size)
			return;
		v = (r & 1) ? 0xffffffffu : (r & 2) ? 0x80000000u : 0;
		memcpy(fuzz_map + off, &v, sizeof(v));
		break;
	}
}

static void *
fuzz_mutator(void *arg)
{
	unsigned	 gen = 0, n, i, where;
	uint64_t	 s;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&fuzz_mtx);
		while (gen == fuzz_gen && !fuzz_quit)
			pthread_cond_wait(&fuzz_cv, &fuzz_mtx);
		if (fuzz_quit) {
			pthread_mutex_unlock(&fuzz_mtx);
			return (NULL);
		}
		gen = fuzz_gen;
		n = fuzz_budget;
		where = fuzz_where;
		s = fuzz_rnd;
		pthread_mutex_unlock(&fuzz_mtx);
		for (i = 0; i < n; i++) {
			fuzz_flip(&s, where);
			/* Spread the flips over the readers' run. */
			for (volatile unsigned k = (unsigned)(s & 255); k > 0; k--)
				;
		}
		pthread_mutex_lock(&fuzz_mtx);
		fuzz_done = gen;
		pthread_cond_broadcast(&fuzz_cv);
		pthread_mutex_unlock(&fuzz_mtx);
	}
}

/* Every reader once: segment_read_config(), segment_slot_read() of slot idx,
 * ranks_check_slot() of an event naming it, a step of the library. */
static void
fuzz_readers(int idx, int64_t step)
{
	Dynprof__V1__RankEvent	 ev = DYNPROF__V1__RANK_EVENT__INIT;
	uint32_t		 gen_seq;
	int			 rc;

	if (segment_read_config(&fuzz_seg, &fuzz_cfg, &gen_seq) == SEG_OK &&
	    fuzz_cfg.nwindows > SEG_MAX_WINDOWS)
		fuzz_fail("more windows than a schedule holds");
	rc = segment_slot_read(&fuzz_seg, idx, &fuzz_slot);
	if (rc == SEG_OK &&
	    (memchr(fuzz_slot.output_dir, '\0', SEG_PATH_MAX) == NULL ||
	    memchr(fuzz_slot.error, '\0', SEG_ERROR_MAX) == NULL))
		fuzz_fail("a slot read hands out an unterminated string");
	ev.job = FUZZ_JOB;
	ev.slot = (uint32_t)idx;
	ev.rank = 0;
	ev.pid = (int32_t)getpid();
	(void)ranks_check_slot(&fuzz_seg, &ev, getpid());
	(void)dynprof_step_begin(fuzz_h, step);
	(void)dynprof_step_end(fuzz_h, step);
}

static int
fuzz_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (ftw->level > 0)
		remove(path);
	return (0);
}

static void
fuzz_cleanup(void)
{
	pthread_mutex_lock(&fuzz_mtx);
	fuzz_quit = 1;
	pthread_cond_signal(&fuzz_cv);
	pthread_mutex_unlock(&fuzz_mtx);
	pthread_join(fuzz_thread, NULL);
	/* The scribbles may leave it unreadable: restore before the close. */
	memcpy(fuzz_seg.hdr, &fuzz_pristine, sizeof(fuzz_pristine));
	dynprof_close(fuzz_h);
	munmap(fuzz_map, fuzz_size);
	segment_close(&fuzz_seg);
	nftw(fuzz_dir, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);
	rmdir(fuzz_dir);
}

static void
fuzz_setup(void)
{
	struct dynprof_params	 p;
	int			 fd;

	if (fuzzdir_make(fuzz_dir, sizeof(fuzz_dir), "dpfuzz-live") == -1)
		fuzz_fail("mkdtemp");
	snprintf(fuzz_out, sizeof(fuzz_out), "%s/out", fuzz_dir);
	if (segment_open(&fuzz_seg, fuzz_dir, FUZZ_JOB, SEG_CREATE, 0600) !=
	    SEG_OK)
		fuzz_fail("segment_open");
	memcpy(&fuzz_pristine, fuzz_seg.hdr, sizeof(fuzz_pristine));
	fuzz_size = fuzz_seg.size;
	if ((fd = open(fuzz_seg.path, O_RDWR)) == -1 ||
	    (fuzz_map = mmap(NULL, fuzz_size, PROT_READ | PROT_WRITE,
	    MAP_SHARED, fd, 0)) == MAP_FAILED)
		fuzz_fail("mmap");
	close(fd);
	dynprof_params_init(&p);
	p.job = FUZZ_JOB;
	p.rank = 0;
	p.shm_dir = fuzz_dir;
	p.output_root = fuzz_out;
	p.agent_socket = "/nonexistent/dynprof-fuzz.sock";
	if (dynprof_open(&p, &fuzz_h) != DYNPROF_OK)
		fuzz_fail("dynprof_open");
	if (pthread_create(&fuzz_thread, NULL, fuzz_mutator, NULL) != 0)
		fuzz_fail("pthread_create");
	atexit(fuzz_cleanup);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t		 step32;
	int64_t			 step;
	int			 idx, i;
	unsigned		 gen;

	if (fuzz_h == NULL)
		fuzz_setup();
	if (size < 8)
		return (0);
	if (++fuzz_inputs % FUZZ_CLEAN == 0)
		nftw(fuzz_out, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);

	/* A fresh header, then the input's config, as the agent writes it. */
	memcpy(fuzz_seg.hdr, &fuzz_pristine, offsetof(struct seg_header, seq));
	atomic_store(&fuzz_seg.hdr->seq, 0);
	memset(&fuzz_in, 0, sizeof(fuzz_in));
	memcpy(&fuzz_in, data + 8, size - 8 < sizeof(fuzz_in) ? size - 8 :
	    sizeof(fuzz_in));
	segment_write_config(&fuzz_seg, &fuzz_in);

	/* The flips: which bytes, and what to, follow from the input alone. */
	pthread_mutex_lock(&fuzz_mtx);
	fuzz_budget = data[0];
	fuzz_where = data[1];
	memcpy(&fuzz_rnd, data, sizeof(fuzz_rnd));
	fuzz_rnd ^= 0x9e3779b97f4a7c15ULL;
	gen = ++fuzz_gen;
	pthread_cond_signal(&fuzz_cv);
	pthread_mutex_unlock(&fuzz_mtx);

	idx = (data[2] | data[3] << 8) % 512 - 1;
	memcpy(&step32, data + 4, sizeof(step32));
	step = step32 % 100000;
	/* While the bytes change under the readers... */
	for (i = 0; i < 4; i++)
		fuzz_readers(idx, step + i);
	/* ...and once they are all changed: the same corruption each time the
	 * input runs, so that what this finds replays. */
	pthread_mutex_lock(&fuzz_mtx);
	while (fuzz_done != gen)
		pthread_cond_wait(&fuzz_cv, &fuzz_mtx);
	pthread_mutex_unlock(&fuzz_mtx);
	fuzz_readers(idx, step + 4);
	return (0);
}
