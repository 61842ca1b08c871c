/*
 * The shared memory segment: creation, validation and the config seqlock (the
 * rank slot table is segment_slot.c's).  Linked into libdynprof and both
 * daemons, so it never logs, never aborts and keeps errno for the caller.
 */

#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "jobid.h"
#include "segment.h"

#define SEGMENT_ALIGN(x, a)	(((x) + (a) - 1) / (a) * (a))

#define SEGMENT_CONFIG_OFFSET	sizeof(struct seg_header)
#define SEGMENT_SLOTS_OFFSET	SEGMENT_ALIGN(SEGMENT_CONFIG_OFFSET + \
				    sizeof(struct seg_config), 64)
#define SEGMENT_SIZE		(SEGMENT_SLOTS_OFFSET + \
				    SEG_MAX_SLOTS * sizeof(struct seg_slot))

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

/* Reads an unaligned 64-bit field at off. */
static uint64_t
segment_get64(const unsigned char *p, size_t off)
{
	uint64_t	 v;

	memcpy(&v, p + off, sizeof(v));
	return (v);
}

/* Reads an unaligned 32-bit field at off. */
static uint32_t
segment_get32(const unsigned char *p, size_t off)
{
	uint32_t	 v;

	memcpy(&v, p + off, sizeof(v));
	return (v);
}

/*
 * Checks the header in the avail bytes at p against the layout and a file of
 * filesize bytes, reading each field exactly once, and fills out (if not NULL)
 * with the values it checked.
 */
static int
segment_check_header(const unsigned char *p, size_t avail, uint64_t filesize,
    struct seg_layout *out)
{
	uint64_t		 segment_size, end;
	uint32_t		 header_size, config_offset, config_size;
	uint32_t		 slots_offset, slot_size, nslots;
	char			 job[SEG_JOB_MAX + 1];

	if (p == NULL || avail < sizeof(uint64_t))
		return (SEG_ESIZE);
	if (segment_get64(p, offsetof(struct seg_header, magic)) != SEG_MAGIC)
		return (SEG_EMAGIC);
	if (avail < offsetof(struct seg_header, header_size) + sizeof(uint32_t))
		return (SEG_ESIZE);
	if (segment_get32(p, offsetof(struct seg_header, version)) !=
	    SEG_VERSION)
		return (SEG_EVERSION);
	header_size = segment_get32(p, offsetof(struct seg_header, header_size));
	if (header_size != sizeof(struct seg_header) ||
	    avail < sizeof(struct seg_header) ||
	    filesize < sizeof(struct seg_header))
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

	if (segment_size != filesize)
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
	if (out != NULL) {
		out->segment_size = segment_size;
		out->config_offset = config_offset;
		out->slots_offset = slots_offset;
		out->nslots = nslots;
		memcpy(out->job, job, sizeof(out->job));
	}
	return (SEG_OK);
}

/*
 * Checks that the len bytes at buf start with a header this code understands and
 * that every size and offset in it fits the layout and len, and fills out (if
 * not NULL) with the checked values: use those, never the header's fields again.
 * Reads nothing beyond len, makes no assumption about the alignment of buf.
 * Returns SEG_OK or the SEG_E* code saying what is wrong.
 */
int
segment_check(const void *buf, size_t len, struct seg_layout *out)
{
	return (segment_check_header(buf, len, len, out));
}

/* segment_check() without the copy. */
int
segment_validate(const void *buf, size_t len)
{
	return (segment_check_header(buf, len, len, NULL));
}

/*
 * Whether a segment file owned by owner with permissions mode may be used by
 * this process: never one others may write; with SEG_ONLYUID in flags, only
 * one owned by trusted; for a writer, only one owned by this process's euid,
 * root, trusted (SEG_NOUID: none) or, with SEG_ANYOWNER in flags, anyone.  A
 * reader (SEG_RDONLY) acts on nothing it reads.
 */
int
segment_owner_ok(uid_t owner, mode_t mode, uid_t trusted, int flags)
{
	if (mode & S_IWOTH)
		return (0);
	if (flags & SEG_ONLYUID)
		return (owner == trusted);
	if (flags & (SEG_RDONLY | SEG_ANYOWNER))
		return (1);
	return (owner == geteuid() || owner == 0 ||
	    (trusted != SEG_NOUID && owner == trusted));
}

/* Writes the header and the empty slot table of a new segment at base. */
static void
segment_init(void *base, const char *job)
{
	struct seg_header	*hdr = base;
	struct seg_slot		*slots;
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
	hdr->created_ns = clock_wall_ns();
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
 * Creates the segment complete under a temporary name in the directory dfd, its
 * space reserved before the first touch (a full tmpfs is an error here, never
 * a SIGBUS later), then links it into place as name, or, with replace, renames
 * it over the stale file there.  Others never get write permission.  Returns
 * SEG_OK, or SEG_ESYS with errno (EEXIST when another process linked its own
 * first, ENOSPC when the space is not there); the temporary file never stays.
 */
static int
segment_create(int dfd, const char *name, const char *job, mode_t mode,
    int replace)
{
	char		 tmp[256];
	void		*base;
	int		 fd, n, saved, rc;

	mode &= 0775;
	n = snprintf(tmp, sizeof(tmp), ".%s%s.%ld.%lx", SEG_PREFIX, job,
	    (long)getpid(), (unsigned long)(clock_mono_ns() % 1000000000));
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return (SEG_ESYS);
	}
	fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode);
	if (fd == -1)
		return (SEG_ESYS);
	/* The umask must not narrow a group-shared mode. */
	if (fchmod(fd, mode) == -1)
		goto fail;
	/*
	 * ftruncate() alone makes a sparse file: on a full tmpfs the first touch
	 * of a page would be a SIGBUS.  Reserve every page first.
	 */
	if ((rc = posix_fallocate(fd, 0, (off_t)SEGMENT_SIZE)) != 0) {
		errno = rc;
		goto fail;
	}
	base = mmap(NULL, SEGMENT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	    0);
	if (base == MAP_FAILED)
		goto fail;
	segment_init(base, job);
	munmap(base, SEGMENT_SIZE);
	close(fd);
	fd = -1;

	if (replace) {
		if (renameat(dfd, tmp, dfd, name) == -1)
			goto fail;
		return (SEG_OK);
	}
	if (linkat(dfd, tmp, dfd, name, 0) == -1)
		goto fail;
	unlinkat(dfd, tmp, 0);
	return (SEG_OK);

fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlinkat(dfd, tmp, 0);
	errno = saved;
	return (SEG_ESYS);
}

/*
 * Whether the file name in dfd, which this process may not open as it asked
 * (EACCES), is one the ownership rule refuses anyway: then SEG_EOWNER says
 * so, not the permission.
 */
static int
segment_refused(int dfd, const char *name, int flags, uid_t trusted)
{
	struct stat	 st;

	if (errno == EACCES && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !segment_owner_ok(st.st_uid, st.st_mode, trusted, flags))
		return (SEG_EOWNER);
	return (SEG_ESYS);
}

/*
 * Takes a user's shared lock on the segment fd (st: its fstat), the name in
 * dfd still naming it.  The last user holds the exclusive lock only while it
 * removes the file (segment_close_last()): waited for a bounded time (200 ms),
 * and once the file is gone, SEG_ENOENT, so that the caller makes a new one.
 */
static int
segment_use(int fd, int dfd, const char *name, const struct stat *st)
{
	struct stat	 now;
	int		 tries;

	for (tries = 0; flock(fd, LOCK_SH | LOCK_NB) == -1; tries++) {
		if ((errno != EWOULDBLOCK && errno != EINTR) || tries == 200)
			return (SEG_ESYS);
		usleep(1000);
	}
	if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == -1 ||
	    now.st_dev != st->st_dev || now.st_ino != st->st_ino)
		return (SEG_ENOENT);
	return (SEG_OK);
}

/*
 * Maps the existing segment name in the directory dfd: the file must pass the
 * ownership rule, its header (read with pread(), never through the mapping)
 * must pass the checks, and the checked copy goes into seg.
 */
static int
segment_map(struct segment *seg, int dfd, const char *name, int flags,
    uid_t trusted)
{
	struct seg_layout	 lay;
	struct stat		 st;
	unsigned char		 hbuf[sizeof(struct seg_header)];
	void			*base;
	ssize_t			 n;
	int			 fd, rc, rdonly = (flags & SEG_RDONLY) != 0;

	/* O_NONBLOCK: a FIFO planted at the name must not stall the opener. */
	fd = openat(dfd, name, (rdonly ? O_RDONLY : O_RDWR) | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK);
	if (fd == -1)
		return (errno == ENOENT ? SEG_ENOENT :
		    segment_refused(dfd, name, flags, trusted));
	if (fstat(fd, &st) == -1)
		goto fail_errno;
	if (!S_ISREG(st.st_mode)) {
		rc = SEG_EMAGIC;
		goto fail;
	}
	if (!segment_owner_ok(st.st_uid, st.st_mode, trusted, flags)) {
		rc = SEG_EOWNER;
		goto fail;
	}
	if (st.st_size < (off_t)sizeof(uint64_t) ||
	    (uint64_t)st.st_size > SIZE_MAX / 2) {
		rc = SEG_ESIZE;
		goto fail;
	}
	if ((n = pread(fd, hbuf, sizeof(hbuf), 0)) == -1)
		goto fail_errno;
	if ((rc = segment_check_header(hbuf, (size_t)n, (uint64_t)st.st_size,
	    &lay)) != SEG_OK)
		goto fail;
	if ((flags & SEG_USE) && (rc = segment_use(fd, dfd, name, &st)) !=
	    SEG_OK)
		goto fail;
	base = mmap(NULL, (size_t)st.st_size, rdonly ? PROT_READ :
	    PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		goto fail_errno;
	if (flags & (SEG_KEEPFD | SEG_USE))
		seg->fd = fd;
	else
		close(fd);
	seg->hdr = base;
	seg->size = (size_t)st.st_size;
	seg->nslots = lay.nslots;
	seg->config_offset = lay.config_offset;
	seg->slots_offset = lay.slots_offset;
	seg->config = (struct seg_config *)((char *)base + lay.config_offset);
	seg->slots = (struct seg_slot *)((char *)base + lay.slots_offset);
	seg->uid = st.st_uid;
	seg->dev = st.st_dev;
	seg->ino = st.st_ino;
	if (strcmp(lay.job, seg->job) != 0) {
		segment_close(seg);
		return (SEG_EJOB);
	}
	return (SEG_OK);

fail_errno:
	rc = SEG_ESYS;
fail:
	return (segment_close_fd(fd, rc));
}

/*
 * Replaces the stale segment name in dfd (path for its mappings; refused as stale: another layout version,
 * not a segment, wrong sizes) by a new one, if it is this process's own and no
 * live process maps it.  The stale file is locked while it is judged and
 * replaced, so that of two processes that found it stale only the first
 * replaces it and the second opens the new one.  Returns SEG_OK when path now
 * names a good segment (replaced here or by someone else), else SEG_ESYS with
 * errno EBUSY (a live process maps it), EPERM (another user's), EINVAL (not a
 * regular file) or what failed.
 */
static int
segment_replace(int dfd, const char *name, const char *path, const char *job,
    mode_t mode)
{
	unsigned char	 hbuf[sizeof(struct seg_header)];
	struct stat	 st, now;
	ssize_t		 n;
	int		 fd, rc, tries;

	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK)) == -1)
		return (errno == ENOENT ? SEG_OK : SEG_ESYS);
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if (st.st_uid != geteuid()) {
		errno = EPERM;
		goto fail;
	}
	for (tries = 0; tries < 200; tries++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK && errno != EINTR)
			goto fail;
		usleep(5000);	/* bounded: 1 s at most */
	}
	if (tries == 200) {
		errno = EWOULDBLOCK;
		goto fail;
	}
	/* Someone replaced it while this process waited: theirs is good. */
	if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == -1 ||
	    now.st_dev != st.st_dev ||
	    now.st_ino != st.st_ino) {
		close(fd);
		return (SEG_OK);
	}
	if (fstat(fd, &st) == -1)
		goto fail;
	n = pread(fd, hbuf, sizeof(hbuf), 0);
	if (n >= 0 && segment_check_header(hbuf, (size_t)n,
	    (uint64_t)st.st_size, NULL) == SEG_OK) {
		close(fd);
		return (SEG_OK);
	}
	if (procmaps_in_use(st.st_dev, st.st_ino, path, 1)) {
		errno = EBUSY;
		goto fail;
	}
	rc = segment_create(dfd, name, job, mode, 1);
	return (segment_close_fd(fd, rc));

fail:
	return (segment_close_fd(fd, SEG_ESYS));
}

/* Closes fd keeping errno (why a SEG_ESYS failed, the caller's).  Returns
 * rc. */
int
segment_close_fd(int fd, int rc)
{
	int	 saved = errno;

	close(fd);
	errno = saved;
	return (rc);
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
	return (segment_open_trusting(seg, dir, job, flags, mode, SEG_NOUID));
}

/*
 * segment_open() that also trusts segments owned by uid (the agent's user).
 * The segment is the one of this process's uid: in dir itself when only this
 * uid may write there, else in its own directory in dir, made with SEG_CREATE
 * (segment_dir_open()).  With SEG_CREATE, a stale segment at the job's name
 * (another layout version, not a segment, wrong sizes) that is this process's
 * own and that no live process maps is replaced: seg->replaced says what it
 * was.
 */
int
segment_open_trusting(struct segment *seg, const char *dir, const char *job,
    int flags, mode_t mode, uid_t trusted)
{
	return (segment_open_uid(seg, dir, geteuid(), job, flags, mode,
	    trusted));
}

/*
 * segment_open_trusting() of uid's segment of job (SEG_CREATE makes uid's
 * directory only when uid is this process's): what a reader (dynprofctl local)
 * uses to look at another user's.
 */
int
segment_open_uid(struct segment *seg, const char *dir, uid_t uid,
    const char *job, int flags, mode_t mode, uid_t trusted)
{
	struct seg_dir	 sd;
	int		 rc;

	memset(seg, 0, sizeof(*seg));
	seg->fd = -1;
	if (dir == NULL || *dir == '\0')
		dir = SEG_DEFAULT_DIR;
	if ((rc = segment_path(seg->path, sizeof(seg->path), dir, job)) != SEG_OK)
		return (rc);
	if ((rc = segment_dir_open(&sd, dir, uid, (flags & SEG_CREATE) &&
	    uid == geteuid(), mode)) != SEG_OK)
		return (rc == SEG_ENOENT && (flags & SEG_CREATE) ?
		    (errno = ENOENT, SEG_ESYS) : rc);
	rc = segment_open_at(seg, sd.fd, sd.path, job, flags, mode, trusted);
	return (segment_close_fd(sd.fd, rc));
}

/*
 * segment_open_trusting() of the segment of job in the directory open as dfd,
 * whose path is dir (for seg->path, the messages and the mappings' check).
 * Every name is looked up in dfd: the directory cannot be swapped under it.
 */
int
segment_open_at(struct segment *seg, int dfd, const char *dir, const char *job,
    int flags, mode_t mode, uid_t trusted)
{
	char	 name[sizeof(SEG_PREFIX) + SEG_JOB_MAX];
	int	 rc, tries, stale = 0;

	memset(seg, 0, sizeof(*seg));
	seg->fd = -1;
	seg->flags = flags;
	if ((rc = segment_path(seg->path, sizeof(seg->path), dir, job)) != SEG_OK)
		return (rc);
	snprintf(seg->job, sizeof(seg->job), "%s", job);
	snprintf(name, sizeof(name), "%s%s", SEG_PREFIX, job);

	if ((flags & SEG_RDONLY) && (flags & SEG_CREATE)) {
		errno = EINVAL;
		return (SEG_ESYS);
	}
	for (tries = 0; tries < 3; tries++) {
		rc = segment_map(seg, dfd, name, flags, trusted);
		if (!(flags & SEG_CREATE))
			break;
		if (rc == SEG_ENOENT) {
			rc = segment_create(dfd, name, job, mode, 0);
			if (rc == SEG_ESYS && errno == EEXIST)
				continue;	/* someone else won: open theirs */
			if (rc != SEG_OK)
				break;
			continue;
		}
		if ((rc == SEG_EVERSION || rc == SEG_EMAGIC || rc == SEG_ESIZE) &&
		    stale == 0) {
			stale = rc;
			/* Not replaced: the stale code stands, errno says why. */
			if (segment_replace(dfd, name, seg->path, job, mode) !=
			    SEG_OK)
				break;
			seg->replaced = stale;
			continue;
		}
		break;
	}
	if (rc != SEG_OK)
		seg->replaced = 0;
	return (rc);
}

/* Unmaps the segment.  The file stays. */
void
segment_close(struct segment *seg)
{
	if (seg->hdr != NULL)
		munmap(seg->hdr, seg->size);
	if ((seg->flags & (SEG_KEEPFD | SEG_USE)) && seg->fd != -1)
		close(seg->fd);
	seg->fd = -1;
	seg->hdr = NULL;
	seg->config = NULL;
	seg->slots = NULL;
	seg->size = 0;
}

/*
 * Removes the file of a user's segment (SEG_USE) when this user is its last
 * and no agent ever served it: nobody else holds the shared lock (an agent
 * serving it holds one too), the header says no agent served it (an agent
 * restarting adopts a segment it served, with the events in its slots' logs),
 * and the name still names the file.  The mapping stays; the caller is done
 * with the segment (its shared lock is gone, even if the file stays).  A rank
 * run where no agent is leaves nothing in the directory.  Returns 1 if it
 * removed the file.
 */
int
segment_unlink_unused(struct segment *seg)
{
	struct stat	 now;

	if (!(seg->flags & SEG_USE) || seg->fd == -1 || seg->hdr == NULL ||
	    atomic_load(&seg->hdr->served) != 0)
		return (0);
	/* Another user's shared lock refuses it (this one's is dropped). */
	if (flock(seg->fd, LOCK_EX | LOCK_NB) == -1)
		return (0);
	/* An agent sets served holding its shared lock: not since. */
	if (atomic_load(&seg->hdr->served) != 0 ||
	    stat(seg->path, &now) == -1 || now.st_dev != seg->dev ||
	    now.st_ino != seg->ino || unlink(seg->path) == -1) {
		(void)flock(seg->fd, LOCK_UN);
		return (0);
	}
	(void)flock(seg->fd, LOCK_UN);
	return (1);
}

/* Removes the segment file of job in dir, this process's uid's. */
int
segment_unlink(const char *dir, const char *job)
{
	struct seg_dir	 sd;
	char		 name[sizeof(SEG_PREFIX) + SEG_JOB_MAX];
	int		 rc;

	if (!jobid_valid(job, NULL))
		return (SEG_EJOB);
	if ((rc = segment_dir_open(&sd, dir, geteuid(), 0, 0)) != SEG_OK)
		return (rc);
	snprintf(name, sizeof(name), "%s%s", SEG_PREFIX, job);
	rc = unlinkat(sd.fd, name, 0) == -1 ? (errno == ENOENT ? SEG_ENOENT :
	    SEG_ESYS) : SEG_OK;
	return (segment_close_fd(sd.fd, rc));
}

/*
 * Why a stale segment was not replaced, from the errno segment_open() left:
 * for the log line of the process that was refused.
 */
const char *
segment_kept_why(int err)
{
	switch (err) {
	case EBUSY:
		return ("a live process maps it");
	case EPERM:
		return ("it belongs to another user");
	case EINVAL:
		return ("it is not a regular file");
	default:
		return (strerror(err));
	}
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
	case SEG_EOWNER:
		return ("segment, or this user's directory of segments, owned "
		    "by an untrusted user or writable by others");
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
