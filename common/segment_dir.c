/*
 * Which directory holds a user's segments (docs/segments.md): the segment
 * directory itself when nobody but that user may write it, else the user's own
 * directory in it, "dynprof-u<uid>", which nobody else may write.  A name in a
 * directory others may write can be taken first by anyone; a directory only
 * its owner may write cannot: no other user can squat a job's name there.
 * The ranks open (and make) their own; the agent makes it for a rank that
 * cannot, or takes it back from whoever took its name, as root.  Like
 * segment.c it never logs, never aborts and keeps errno for the caller.
 */

#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "segment.h"

/* Only its owner may write it. */
#define SEGMENT_DIR_PRIVATE(m)	(((m) & (S_IWGRP | S_IWOTH)) == 0)

/* Builds "dynprof-u<uid>" into buf. */
static void
segment_dir_name(char *buf, size_t len, uid_t uid)
{
	snprintf(buf, len, "%s%u", SEG_USERDIR_PREFIX, (unsigned)uid);
}

/*
 * The mode of a user's directory for segments of mode: the owner's, and the
 * group may enter and read (never write) when the segments are group-shared,
 * so that an agent of that group reaches them.
 */
static mode_t
segment_dir_mode(mode_t mode)
{
	return (0700 | ((mode & 0060) ? 0050 : 0));
}

/*
 * Gives the directory name in dfd, just made by this process, the mode of a
 * user's directory: the umask must not narrow it (the agent's group enters).
 */
static void
segment_dir_chmod(int dfd, const char *name, mode_t mode)
{
	struct stat	 st;
	int		 fd;

	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &st) == 0 && st.st_uid == geteuid())
		(void)fchmod(fd, segment_dir_mode(mode) | (st.st_mode & S_ISGID));
	close(fd);
}

/*
 * Opens the segment directory dir (NULL: the default) into *dfd (O_PATH) and
 * tells whether it holds uid's segments itself (*own): only when nobody but
 * uid may write it.
 */
static int
segment_dir_top(const char *dir, uid_t uid, int *dfd, int *own,
    struct seg_dir *out)
{
	struct stat	 st;
	int		 saved;

	if ((*dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return (errno == ENOENT ? SEG_ENOENT : SEG_ESYS);
	if (fstat(*dfd, &st) == -1) {
		saved = errno;
		close(*dfd);
		*dfd = -1;
		errno = saved;
		return (SEG_ESYS);
	}
	*own = SEGMENT_DIR_PRIVATE(st.st_mode) && st.st_uid == uid;
	out->setgid = (st.st_mode & S_ISGID) != 0;
	return (SEG_OK);
}

/*
 * Opens the directory of uid's segments in the segment directory dir (NULL:
 * the default) into out: out->fd (O_PATH, the caller closes it), out->path.
 * With create, a missing user's directory is made (this process's own, so
 * only when uid is its euid).  Returns SEG_OK; SEG_ENOENT (nothing there,
 * and not asked to make it); SEG_EOWNER when the name is held by anything but
 * a directory of uid's that nobody else may write (out->st says what: a
 * squatter's directory, file or link); SEG_ESYS with errno.
 */
int
segment_dir_open(struct seg_dir *out, const char *dir, uid_t uid, int create,
    mode_t mode)
{
	struct stat	 st;
	char		 name[32];
	int		 dfd, fd, own = 0, rc, tries;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (dir == NULL || *dir == '\0')
		dir = SEG_DEFAULT_DIR;
	if ((rc = segment_dir_top(dir, uid, &dfd, &own, out)) != SEG_OK)
		return (rc);
	if (own) {
		snprintf(out->path, sizeof(out->path), "%s", dir);
		out->fd = dfd;
		return (SEG_OK);
	}
	segment_dir_name(name, sizeof(name), uid);
	if ((size_t)snprintf(out->path, sizeof(out->path), "%s/%s", dir, name) >=
	    sizeof(out->path)) {
		errno = ENAMETOOLONG;
		rc = SEG_ESYS;
		goto out;
	}
	for (tries = 0; tries < 2; tries++) {
		fd = openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd != -1 || errno != ENOENT || !create || uid != geteuid())
			break;
		if (mkdirat(dfd, name, segment_dir_mode(mode)) == 0)
			segment_dir_chmod(dfd, name, mode);
		else if (errno != EEXIST) {
			rc = SEG_ESYS;
			goto out;
		}
	}
	if (fd == -1) {
		if (errno == ENOENT) {
			rc = SEG_ENOENT;
			goto out;
		}
		/* A link, a file, anything but a directory: not uid's. */
		if ((errno != ENOTDIR && errno != ELOOP) ||
		    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			rc = SEG_ESYS;
			goto out;
		}
		rc = SEG_EOWNER;
		goto refused;
	}
	if (fstat(fd, &st) == -1) {
		rc = SEG_ESYS;
		close(fd);
		goto out;
	}
	if (st.st_uid != uid || !SEGMENT_DIR_PRIVATE(st.st_mode)) {
		close(fd);
		rc = SEG_EOWNER;
		goto refused;
	}
	out->fd = fd;
	rc = SEG_OK;
	goto out;
refused:
	out->st = st;
out:
	close(dfd);
	return (rc);
}

/*
 * Gives the new directory name (in dfd, made by this process) to uid and gid
 * (-1: keep its group) with the mode of a user's directory.  Returns 0, or -1
 * with errno (EPERM: this process may not give it away).
 */
static int
segment_dir_give(int dfd, const char *name, uid_t uid, gid_t gid, mode_t mode)
{
	struct stat	 st;
	int		 fd;

	if ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return (-1);
	if (fstat(fd, &st) == -1)
		goto fail;
	if (st.st_uid != geteuid()) {
		errno = EPERM;		/* not the one this process made */
		goto fail;
	}
	/* A setgid segment directory's group stays: the agent's. */
	if (fchown(fd, uid, gid) == -1 || fchmod(fd, segment_dir_mode(mode) |
	    (st.st_mode & S_ISGID)) == -1)
		goto fail;
	close(fd);
	return (0);
fail:
	return (segment_close_fd(fd, -1));
}

/*
 * For the agent: makes uid's directory in the segment directory dir, owned by
 * uid (and gid, unless dir is setgid: then its group), or takes its name back
 * from whoever holds it.  The directory is made complete under a random name
 * and put in place with one rename: when the name is taken, the two are
 * exchanged (RENAME_EXCHANGE), so that at no moment is the name free for
 * another user to take; what held it stays beside, as
 * ".dynprof-u<uid>.<owner>.<random>", and *holder says whose it was (else
 * SEG_NOUID).  Needs root (CAP_CHOWN, and CAP_FOWNER in a sticky directory it
 * does not own).  An agent that may not give a directory away renames aside
 * what holds the name, if it may (in its own directory), and leaves the making
 * to the rank.  Returns SEG_OK when the directory is uid's now or the rank may
 * make it, else SEG_ESYS with errno.
 */
int
segment_dir_make(const char *dir, uid_t uid, gid_t gid, mode_t mode,
    uid_t *holder)
{
	struct seg_dir	 sd;
	struct stat	 st;
	uint64_t	 r = 0;
	char		 name[32], tmp[96], aside[96];
	int		 dfd, own = 0, rc, saved, tries;

	*holder = SEG_NOUID;
	rc = segment_dir_open(&sd, dir, uid, 0, mode);
	if (rc == SEG_OK) {
		close(sd.fd);
		return (SEG_OK);
	}
	/* Only a missing or taken user's directory. */
	if (rc != SEG_ENOENT && rc != SEG_EOWNER)
		return (rc);
	if (dir == NULL || *dir == '\0')
		dir = SEG_DEFAULT_DIR;
	if (segment_dir_top(dir, uid, &dfd, &own, &sd) != SEG_OK)
		return (SEG_ESYS);
	segment_dir_name(name, sizeof(name), uid);
	/* Unguessable, or at worst not known in advance (early at boot). */
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
		r = (uint64_t)clock_mono_ns() ^ ((uint64_t)getpid() << 40);
	snprintf(tmp, sizeof(tmp), ".%s.new.%016llx", name,
	    (unsigned long long)r);
	if (mkdirat(dfd, tmp, 0700) == -1)
		goto fail;
	if (segment_dir_give(dfd, tmp, uid, sd.setgid ? (gid_t)-1 : gid,
	    mode) == -1) {
		saved = errno;
		(void)unlinkat(dfd, tmp, AT_REMOVEDIR);
		if (saved != EPERM) {
			errno = saved;
			goto fail;
		}
		/* Not allowed to give it away: the rank makes its own. */
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			*holder = st.st_uid;
			snprintf(aside, sizeof(aside), ".%s.%u.%016llx", name,
			    (unsigned)st.st_uid, (unsigned long long)r);
			if (renameat(dfd, name, dfd, aside) == -1 &&
			    errno != ENOENT)
				goto fail;
		}
		close(dfd);
		return (SEG_OK);
	}
	for (tries = 0; tries < 3; tries++) {
		if (renameat2(dfd, tmp, dfd, name, RENAME_NOREPLACE) == 0)
			break;
		if (errno != EEXIST)
			goto fail_tmp;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;	/* gone meanwhile: try again */
		if (renameat2(dfd, tmp, dfd, name, RENAME_EXCHANGE) == -1) {
			if (errno == ENOENT)
				continue;
			goto fail_tmp;
		}
		/* tmp names what held it now: keep it beside, named. */
		*holder = st.st_uid;
		snprintf(aside, sizeof(aside), ".%s.%u.%016llx", name,
		    (unsigned)st.st_uid, (unsigned long long)r);
		(void)renameat(dfd, tmp, dfd, aside);
		break;
	}
	if (tries == 3) {
		errno = EAGAIN;
		goto fail_tmp;
	}
	close(dfd);
	return (SEG_OK);
fail_tmp:
	saved = errno;
	(void)unlinkat(dfd, tmp, AT_REMOVEDIR);
	errno = saved;
fail:
	return (segment_close_fd(dfd, SEG_ESYS));
}
