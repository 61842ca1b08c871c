/*
 * The shared memory segment: creation, validation, the config seqlock and the rank
 * slot table.  Linked into libdynprof and both daemons, so it never logs, never
 * aborts and keeps errno for the caller.
 */

#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobid.h"
#include "segment.h"

/* How often a reader retries a read torn by a writer before giving up. */
#define SEGMENT_READ_RETRIES	1000

/* The bytes of a slot before its event log: its state. */
#define SEGMENT_SLOT_STATE	offsetof(struct seg_slot, log)

#define SEGMENT_ALIGN(x, a)	(((x) + (a) - 1) / (a) * (a))

#define SEGMENT_CONFIG_OFFSET	sizeof(struct seg_header)
#define SEGMENT_SLOTS_OFFSET	SEGMENT_ALIGN(SEGMENT_CONFIG_OFFSET + \
				    sizeof(struct seg_config), 64)
#define SEGMENT_SIZE		(SEGMENT_SLOTS_OFFSET + \
				    SEG_MAX_SLOTS * sizeof(struct seg_slot))

static inline void
segment_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/*
 * Builds "<dir>/dynprof.<job>" into buf.  dir NULL or "" is the default.  The job
 * id is checked first: nothing is built from an invalid one.
 */
int
segment_path(char *buf, size_t len, const char *dir, const char *job)
{
	int	 n;

	if (!jobid_valid(job, NULL))
		return (SEG_EJOB);
	if (dir == NULL || *dir == '\0')
		dir = SEG_DEFAULT_DIR;
	n = snprintf(buf, len, "%s/%s%s", dir, SEG_PREFIX, job);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return (SEG_ESYS);
	}
	return (SEG_OK);
}

static uint64_t
segment_get64(const unsigned char *p, size_t off)
{
	uint64_t	 v;

	memcpy(&v, p + off, sizeof(v));
	return (v);
}

static uint32_t
segment_get32(const unsigned char *p, size_t off)
{
	uint32_t	 v;

	memcpy(&v, p + off, sizeof(v));
	return (v);
}

/*
 * Checks that the len bytes at buf start with a header this code understands and
 * that every size and offset in it fits the layout and len.  Reads nothing beyond
 * len, makes no assumption about the alignment of buf.  Returns SEG_OK or the
 * SEG_E* code saying what is wrong.
 */
int
segment_validate(const void *buf, size_t len)
{
	const unsigned char	*p = buf;
	uint64_t		 segment_size, end;
	uint32_t		 header_size, config_offset, config_size;
	uint32_t		 slots_offset, slot_size, nslots;
	char			 job[SEG_JOB_MAX + 1];

	if (buf == NULL || len < sizeof(uint64_t))
		return (SEG_ESIZE);
	if (segment_get64(p, offsetof(struct seg_header, magic)) != SEG_MAGIC)
		return (SEG_EMAGIC);
	if (len < offsetof(struct seg_header, header_size) + sizeof(uint32_t))
		return (SEG_ESIZE);
	if (segment_get32(p, offsetof(struct seg_header, version)) !=
	    SEG_VERSION)
		return (SEG_EVERSION);
	header_size = segment_get32(p, offsetof(struct seg_header, header_size));
	if (header_size != sizeof(struct seg_header) ||
	    len < sizeof(struct seg_header))
		return (SEG_ESIZE);

	segment_size = segment_get64(p, offsetof(struct seg_header,
	    segment_size));
	config_offset = segment_get32(p, offsetof(struct seg_header,
	    config_offset));
	config_size = segment_get32(p, offsetof(struct seg_header, config_size));
	slots_offset = segment_get32(p, offsetof(struct seg_header,
	    slots_offset));
	slot_size = segment_get32(p, offsetof(struct seg_header, slot_size));
	nslots = segment_get32(p, offsetof(struct seg_header, nslots));

	if (segment_size != len)
		return (SEG_ESIZE);
	if (config_size != sizeof(struct seg_config) ||
	    slot_size != sizeof(struct seg_slot))
		return (SEG_ESIZE);
	if (nslots == 0 || nslots > SEG_MAX_SLOTS)
		return (SEG_ESIZE);
	if (config_offset < header_size || config_offset % 8 != 0 ||
	    slots_offset % 64 != 0)
		return (SEG_ESIZE);
	/* 64-bit sums of 32-bit values cannot overflow. */
	if ((uint64_t)config_offset + config_size > slots_offset)
		return (SEG_ESIZE);
	end = (uint64_t)slots_offset + (uint64_t)nslots * slot_size;
	if (end > segment_size)
		return (SEG_ESIZE);

	memcpy(job, p + offsetof(struct seg_header, job), sizeof(job));
	if (memchr(job, '\0', sizeof(job)) == NULL || !jobid_valid(job, NULL))
		return (SEG_EJOB);
	return (SEG_OK);
}

static void
segment_init(void *base, const char *job)
{
	struct seg_header	*hdr = base;
	struct seg_slot		*slots;
	struct timespec		 ts;
	uint32_t		 i;

	/* ftruncate() gave zeros: set only what is not zero. */
	hdr->magic = SEG_MAGIC;
	hdr->version = SEG_VERSION;
	hdr->header_size = sizeof(struct seg_header);
	hdr->segment_size = SEGMENT_SIZE;
	hdr->config_offset = SEGMENT_CONFIG_OFFSET;
	hdr->config_size = sizeof(struct seg_config);
	hdr->slots_offset = SEGMENT_SLOTS_OFFSET;
	hdr->slot_size = sizeof(struct seg_slot);
	hdr->nslots = SEG_MAX_SLOTS;
	snprintf(hdr->job, sizeof(hdr->job), "%s", job);
	clock_gettime(CLOCK_REALTIME, &ts);
	hdr->created_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	atomic_store(&hdr->seq, 0);
	atomic_store(&hdr->agent_pid, 0);
	atomic_store(&hdr->generation, 0);

	slots = (struct seg_slot *)((char *)base + SEGMENT_SLOTS_OFFSET);
	for (i = 0; i < SEG_MAX_SLOTS; i++) {
		atomic_store(&slots[i].pid, 0);
		atomic_store(&slots[i].seq, 0);
		atomic_store(&slots[i].step, -1);
		slots[i].rank = -1;
		slots[i].state = SEG_RANK_FREE;
	}
}

/*
 * Creates the segment complete under a temporary name in dir, then links it into
 * place.  Returns SEG_OK, or SEG_ESYS with errno EEXIST when another process
 * linked its own first.
 */
static int
segment_create(const char *dir, const char *path, const char *job, mode_t mode)
{
	char		 tmp[4096];
	struct timespec	 ts;
	void		*base;
	int		 fd, n, saved;

	if (dir == NULL || *dir == '\0')
		dir = SEG_DEFAULT_DIR;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(tmp, sizeof(tmp), "%s/.%s%s.%ld.%lx", dir, SEG_PREFIX, job,
	    (long)getpid(), (unsigned long)ts.tv_nsec);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return (SEG_ESYS);
	}
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    mode & 0777);
	if (fd == -1)
		return (SEG_ESYS);
	/* The umask must not narrow a group-shared mode. */
	if (fchmod(fd, mode & 0777) == -1 ||
	    ftruncate(fd, (off_t)SEGMENT_SIZE) == -1)
		goto fail;
	base = mmap(NULL, SEGMENT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	    0);
	if (base == MAP_FAILED)
		goto fail;
	segment_init(base, job);
	munmap(base, SEGMENT_SIZE);
	close(fd);
	fd = -1;

	if (link(tmp, path) == -1)
		goto fail;
	unlink(tmp);
	return (SEG_OK);

fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlink(tmp);
	errno = saved;
	return (SEG_ESYS);
}

/* Maps the existing segment at path and validates it. */
static int
segment_map(struct segment *seg, const char *path, int flags)
{
	struct stat	 st;
	void		*base;
	int		 fd, rc, saved, rdonly = (flags & SEG_RDONLY) != 0;

	fd = open(path, (rdonly ? O_RDONLY : O_RDWR) | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return (errno == ENOENT ? SEG_ENOENT : SEG_ESYS);
	if (fstat(fd, &st) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return (SEG_ESYS);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return (SEG_EMAGIC);
	}
	if (st.st_size < (off_t)sizeof(uint64_t) ||
	    (uint64_t)st.st_size > SIZE_MAX / 2) {
		close(fd);
		return (SEG_ESIZE);
	}
	base = mmap(NULL, (size_t)st.st_size, rdonly ? PROT_READ :
	    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	saved = errno;
	close(fd);
	if (base == MAP_FAILED) {
		errno = saved;
		return (SEG_ESYS);
	}
	if ((rc = segment_validate(base, (size_t)st.st_size)) != SEG_OK) {
		munmap(base, (size_t)st.st_size);
		return (rc);
	}
	seg->hdr = base;
	seg->size = (size_t)st.st_size;
	seg->config = (struct seg_config *)((char *)base +
	    seg->hdr->config_offset);
	seg->slots = (struct seg_slot *)((char *)base + seg->hdr->slots_offset);
	return (SEG_OK);
}

/*
 * Opens the segment of job in dir (NULL: the default), creating it with mode if
 * flags has SEG_CREATE and it does not exist; SEG_RDONLY maps it read-only.
 * Returns SEG_OK and fills seg, or a SEG_E* code (SEG_ESYS keeps errno).
 */
int
segment_open(struct segment *seg, const char *dir, const char *job, int flags,
    mode_t mode)
{
	int	 rc, tries;

	memset(seg, 0, sizeof(*seg));
	if ((rc = segment_path(seg->path, sizeof(seg->path), dir, job)) != SEG_OK)
		return (rc);
	snprintf(seg->job, sizeof(seg->job), "%s", job);

	if ((flags & SEG_RDONLY) && (flags & SEG_CREATE)) {
		errno = EINVAL;
		return (SEG_ESYS);
	}
	for (tries = 0; tries < 3; tries++) {
		rc = segment_map(seg, seg->path, flags);
		if (rc != SEG_ENOENT || !(flags & SEG_CREATE))
			break;
		rc = segment_create(dir, seg->path, job, mode);
		if (rc == SEG_ESYS && errno == EEXIST)
			continue;	/* someone else won: open theirs */
		if (rc != SEG_OK)
			break;
	}
	if (rc == SEG_OK && strcmp(seg->hdr->job, job) != 0) {
		segment_close(seg);
		return (SEG_EJOB);
	}
	return (rc);
}

/* Unmaps the segment.  The file stays. */
void
segment_close(struct segment *seg)
{
	if (seg->hdr != NULL)
		munmap(seg->hdr, seg->size);
	seg->hdr = NULL;
	seg->config = NULL;
	seg->slots = NULL;
	seg->size = 0;
}

/* Removes the segment file of job in dir. */
int
segment_unlink(const char *dir, const char *job)
{
	char	 path[4096];
	int	 rc;

	if ((rc = segment_path(path, sizeof(path), dir, job)) != SEG_OK)
		return (rc);
	if (unlink(path) == -1)
		return (errno == ENOENT ? SEG_ENOENT : SEG_ESYS);
	return (SEG_OK);
}

/* Names a SEG_E* code. */
const char *
segment_strerror(int code)
{
	switch (code) {
	case SEG_OK:
		return ("success");
	case SEG_EJOB:
		return ("invalid job id");
	case SEG_ESYS:
		return ("system call failed");
	case SEG_EMAGIC:
		return ("not a dynprof segment (bad magic)");
	case SEG_EVERSION:
		return ("segment has another layout version");
	case SEG_ESIZE:
		return ("segment truncated or its sizes do not match the layout");
	case SEG_ENOSLOT:
		return ("every rank slot is taken");
	case SEG_ENOENT:
		return ("no such segment");
	case SEG_ETORN:
		return ("config kept changing while being read");
	default:
		return ("unknown error");
	}
}

/*
 * Writes a new config under the seqlock (the agent, the only writer of the config,
 * calls this).  Readers that overlap the copy see an odd or changed sequence
 * number and retry.
 */
void
segment_write_config(struct segment *seg, const struct seg_config *cfg)
{
	struct seg_header	*hdr = seg->hdr;
#ifndef SEGMENT_TEST_NO_SEQLOCK
	uint32_t		 s;

	s = atomic_load_explicit(&hdr->seq, memory_order_relaxed);
	atomic_store_explicit(&hdr->seq, s + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	memcpy(seg->config, cfg, sizeof(*cfg));
	atomic_store_explicit(&hdr->seq, s + 2, memory_order_release);
#else
	/* Test-only build: no seqlock, so the stress test can see torn reads. */
	memcpy(seg->config, cfg, sizeof(*cfg));
#endif
	atomic_store_explicit(&hdr->generation, cfg->generation,
	    memory_order_relaxed);
}

/*
 * Copies the config consistently into out.  If seqp is not NULL, stores the
 * (even) sequence number the copy belongs to.  Returns SEG_OK, or SEG_ETORN when
 * the writer kept the config changing for every one of the bounded retries.
 */
int
segment_read_config(const struct segment *seg, struct seg_config *out,
    uint32_t *seqp)
{
	struct seg_header	*hdr = seg->hdr;
	uint32_t		 s1, s2;
	int			 i;

	for (i = 0; i < SEGMENT_READ_RETRIES; i++) {
		s1 = atomic_load_explicit(&hdr->seq, memory_order_acquire);
		if (s1 & 1) {
			segment_cpu_relax();
			continue;
		}
		memcpy(out, seg->config, sizeof(*out));
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&hdr->seq, memory_order_relaxed);
		if (s1 == s2) {
			if (out->nwindows > SEG_MAX_WINDOWS)
				out->nwindows = SEG_MAX_WINDOWS;
			if (seqp != NULL)
				*seqp = s1;
			return (SEG_OK);
		}
		segment_cpu_relax();
	}
	return (SEG_ETORN);
}

/* Starts an update of a slot's state fields: its sequence number goes odd. */
void
segment_slot_update_begin(struct seg_slot *slot)
{
	uint32_t	 s;

	/* A writer that died mid-update left it odd: keep it odd. */
	s = atomic_load_explicit(&slot->seq, memory_order_relaxed);
	atomic_store_explicit(&slot->seq, (s & ~1U) + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

/* Ends an update of a slot's state fields: its sequence number goes even. */
void
segment_slot_update_end(struct seg_slot *slot)
{
	uint32_t	 s;

	s = atomic_load_explicit(&slot->seq, memory_order_relaxed);
	atomic_store_explicit(&slot->seq, s + 1, memory_order_release);
}

static void
segment_slot_reset(struct seg_slot *slot, int32_t rank)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	segment_slot_update_begin(slot);
	atomic_store_explicit(&slot->step, -1, memory_order_relaxed);
	slot->rank = rank;
	slot->state = SEG_RANK_ATTACHED;
	slot->window_id = 0;
	slot->last_event = 0;
	slot->start_step = 0;
	slot->stop_step = 0;
	slot->event_step = -1;
	slot->event_time_ns = 0;
	slot->attach_time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	slot->generation = 0;
	slot->reason = 0;
	slot->rank_seq = 0;
	memset(slot->output_dir, 0, sizeof(slot->output_dir));
	memset(slot->error, 0, sizeof(slot->error));
	/*
	 * A new log: the head goes back to 0 before the incarnation changes, so
	 * a reader that sees the new incarnation never pairs it with the old
	 * head.  log_acked is the agent's: an old incarnation's cursor there
	 * reads as "nothing acknowledged" for the new one.
	 */
	atomic_store_explicit(&slot->log_head, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->log_lost, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&slot->incarnation, 1, memory_order_release);
	segment_slot_update_end(slot);
}

/*
 * Claims a slot for pid (atomically) and initialises it for rank in state
 * ATTACHED.  In order of preference: a free slot whose event log the
 * coordinator has committed entirely; a free slot with events not yet
 * committed (they are lost); the slot of a process that is gone.  Returns the
 * slot index or SEG_ENOSLOT.
 */
int
segment_slot_claim(struct segment *seg, pid_t pid, int32_t rank)
{
	uint32_t	 i, n = seg->hdr->nslots;
	int32_t		 expected;
	int		 pass;

	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < n; i++) {
			expected = atomic_load_explicit(&seg->slots[i].pid,
			    memory_order_relaxed);
			if (pass < 2 && expected != 0)
				continue;
			if (pass == 0 && !slotlog_settled(&seg->slots[i]))
				continue;
			if (pass == 2 && (expected == 0 ||
			    segment_pid_alive(expected)))
				continue;
			if (atomic_compare_exchange_strong(&seg->slots[i].pid,
			    &expected, (int32_t)pid)) {
				segment_slot_reset(&seg->slots[i], rank);
				return ((int)i);
			}
		}
	}
	return (SEG_ENOSLOT);
}

/* Frees slot idx if pid still holds it, leaving its state GONE. */
void
segment_slot_release(struct segment *seg, int idx, pid_t pid)
{
	struct seg_slot	*slot;
	int32_t		 expected = (int32_t)pid;

	if (idx < 0 || (uint32_t)idx >= seg->hdr->nslots)
		return;
	slot = &seg->slots[idx];
	if (atomic_load_explicit(&slot->pid, memory_order_relaxed) != pid)
		return;
	segment_slot_update_begin(slot);
	slot->state = SEG_RANK_GONE;
	slot->last_pid = (int32_t)pid;
	segment_slot_update_end(slot);
	atomic_compare_exchange_strong(&slot->pid, &expected, 0);
}

/*
 * Copies slot idx consistently into out: its state, up to its event log (read
 * with slotlog_read()), which stays untouched in out.  Returns SEG_OK, SEG_ETORN when its rank
 * kept updating it, or SEG_ESIZE for an index out of range.
 */
int
segment_slot_read(const struct segment *seg, int idx, struct seg_slot *out)
{
	const struct seg_slot	*slot;
	const size_t		 off = offsetof(struct seg_slot, rank);
	uint32_t		 s1, s2;
	int			 i;

	if (idx < 0 || (uint32_t)idx >= seg->hdr->nslots)
		return (SEG_ESIZE);
	slot = &seg->slots[idx];
	for (i = 0; i < SEGMENT_READ_RETRIES; i++) {
		s1 = atomic_load_explicit(&slot->seq, memory_order_acquire);
		if (s1 & 1) {
			segment_cpu_relax();
			continue;
		}
		atomic_store_explicit(&out->pid, atomic_load_explicit(&slot->pid,
		    memory_order_relaxed), memory_order_relaxed);
		atomic_store_explicit(&out->step, atomic_load_explicit(
		    &slot->step, memory_order_relaxed), memory_order_relaxed);
		memcpy((char *)out + off, (const char *)slot + off,
		    SEGMENT_SLOT_STATE - off);
		atomic_thread_fence(memory_order_acquire);
		s2 = atomic_load_explicit(&slot->seq, memory_order_relaxed);
		if (s1 == s2) {
			atomic_store_explicit(&out->seq, s1,
			    memory_order_relaxed);
			out->output_dir[sizeof(out->output_dir) - 1] = '\0';
			out->error[sizeof(out->error) - 1] = '\0';
			return (SEG_OK);
		}
		segment_cpu_relax();
	}
	return (SEG_ETORN);
}

/*
 * Frees the slots of processes that are gone.  For each, the caller's process
 * holds the slot (its pid in place of the dead one, so that no rank claims it
 * meanwhile) while cb (if not NULL) runs with a copy of the slot's state and its
 * index: cb may read the slot's log and append to it for the dead writer.  Then
 * the slot is left free in state GONE, like a slot its rank released.  Returns
 * the number of slots freed.
 */
int
segment_reclaim_dead(struct segment *seg, void (*cb)(const struct seg_slot *,
    int, void *), void *arg)
{
	struct seg_slot	*copy, *slot;
	uint32_t	 i;
	int32_t		 pid, self = (int32_t)getpid(), held;
	int		 n = 0;

	if ((copy = malloc(sizeof(*copy))) == NULL)
		return (0);
	for (i = 0; i < seg->hdr->nslots; i++) {
		slot = &seg->slots[i];
		pid = atomic_load_explicit(&slot->pid, memory_order_acquire);
		if (pid == 0 || pid == self || segment_pid_alive(pid))
			continue;
		held = pid;
		if (!atomic_compare_exchange_strong(&slot->pid, &held, self))
			continue;
		/*
		 * Nobody writes a dead process's slot: a plain copy is
		 * consistent, even if it died in the middle of an update.
		 */
		memcpy(copy, slot, SEGMENT_SLOT_STATE);
		atomic_store_explicit(&copy->pid, pid, memory_order_relaxed);
		copy->output_dir[sizeof(copy->output_dir) - 1] = '\0';
		copy->error[sizeof(copy->error) - 1] = '\0';
		if (cb != NULL)
			cb(copy, (int)i, arg);
		segment_slot_update_begin(slot);
		slot->state = SEG_RANK_GONE;
		slot->last_pid = pid;
		segment_slot_update_end(slot);
		held = self;
		if (atomic_compare_exchange_strong(&slot->pid, &held, 0))
			n++;
	}
	free(copy);
	return (n);
}

/* Returns 1 if a process with this pid exists (or may: EPERM), else 0. */
int
segment_pid_alive(pid_t pid)
{
	if (pid <= 0)
		return (0);
	if (kill(pid, 0) == 0)
		return (1);
	return (errno != ESRCH);
}
