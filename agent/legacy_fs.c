/*
 * Every path a legacy job's user controls, touched only through descriptors
 * (docs/legacy.md, "What each path trusts").  The legacy directory is opened
 * once; a job's directory is opened from it by name at each use, never
 * through a symbolic link, checked with fstat() (a directory, the one the
 * agent serves: same device and inode) and used through that descriptor
 * only.  As root, the agent acts in it as the directory's owner (its
 * file-system uid and gid): what it reads and writes there, and in the output
 * directory the job names, is what that owner could read and write.  No open
 * here blocks on a FIFO, follows a link at the last component, or reads a
 * file that is anything but a regular one.
 */

#include <sys/fsuid.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parts.h"
#include "parts_legacy.h"
#include "log.h"

/* Says what kind of file mode m is, for a status line. */
const char *
legacy_fs_kind(mode_t m)
{
	if (S_ISDIR(m))
		return ("a directory");
	if (S_ISFIFO(m))
		return ("a FIFO");
	if (S_ISLNK(m))
		return ("a symbolic link");
	if (S_ISSOCK(m))
		return ("a socket");
	if (S_ISREG(m))
		return ("a plain file");
	return ("not a regular file");
}

/*
 * Opens the job directory name of the legacy directory, never through a
 * link, and fills st.  Returns the descriptor, or -1 with why set and errno
 * the open's.
 */
int
legacy_fs_open_name(const struct legacy *l, const char *name,
    struct stat *st, char *why, size_t wlen)
{
	int	 fd, saved;

	fd = openat(l->root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		saved = errno;
		if ((errno == ELOOP || errno == ENOTDIR) &&
		    fstatat(l->root_fd, name, st, AT_SYMLINK_NOFOLLOW) == 0)
			snprintf(why, wlen, "%s", legacy_fs_kind(st->st_mode));
		else
			snprintf(why, wlen, "%s", strerror(saved));
		errno = saved;		/* ENOENT: gone already */
		return (-1);
	}
	if (fstat(fd, st) == -1 || !S_ISDIR(st->st_mode)) {
		snprintf(why, wlen, "not a directory");
		close(fd);
		return (-1);
	}
	return (fd);
}

/*
 * Opens lj's directory: the one the agent serves (same device, inode and
 * owner as when it was first seen).  Returns the descriptor, or -1 with why
 * set (and lj->check set: the legacy tick looks at the name again).
 */
int
legacy_fs_open(struct legacy *l, struct legacy_job *lj, char *why,
    size_t wlen)
{
	struct stat	 st;
	char		 what[128];
	int		 fd;

	if ((fd = legacy_fs_open_name(l, lj->name, &st, what,
	    sizeof(what))) == -1) {
		snprintf(why, wlen, "the job directory is %s", what);
		lj->check = 1;
		return (-1);
	}
	if (st.st_dev != lj->dev || st.st_ino != lj->ino ||
	    st.st_uid != lj->uid) {
		snprintf(why, wlen, "the job directory was replaced");
		lj->check = 1;
		close(fd);
		return (-1);
	}
	lj->gid = st.st_gid;
	return (fd);
}

/*
 * From now on the agent's file accesses are those of lj's directory's owner
 * (only when the agent runs as root and the owner is not root; otherwise
 * nothing changes).  Undone by legacy_fs_self(), also after a failure.
 * Returns 0, or -1 when the agent cannot act as that owner (a uid its user
 * namespace does not map): then nothing may be done there.
 */
int
legacy_fs_as(const struct legacy_job *lj)
{
	if (geteuid() != 0 || lj->uid == 0)
		return (0);
	(void)setfsgid(lj->gid);
	(void)setfsuid(lj->uid);
	/* Neither says whether it failed: a second call answers the value. */
	if ((uid_t)setfsuid(lj->uid) != lj->uid ||
	    (gid_t)setfsgid(lj->gid) != lj->gid)
		return (-1);
	return (0);
}

/* The agent's file accesses are its own again. */
void
legacy_fs_self(void)
{
	if (geteuid() != 0)
		return;
	(void)setfsuid(0);
	(void)setfsgid(getegid());
	if (setfsuid(0) != 0)
		fatalx("%s: cannot act as root again", __func__);
}

/*
 * Reads file name of directory dfd, a regular file with one link of at most
 * max bytes, into a NUL-terminated buffer (caller frees), never following a
 * link nor blocking on a FIFO.  Returns the buffer, or NULL with why set (""
 * when there is no such file).  st gets its status.
 */
char *
legacy_fs_read(int dfd, const char *name, size_t max, struct stat *st,
    char *why, size_t wlen)
{
	char	*buf;
	ssize_t	 n;
	size_t	 got = 0;
	int	 fd;

	why[0] = '\0';
	fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		if (errno != ENOENT)
			snprintf(why, wlen, "%s: %s", name, errno == ELOOP ?
			    "a symbolic link" : strerror(errno));
		return (NULL);
	}
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode) ||
	    st->st_nlink != 1 || (uint64_t)st->st_size > max) {
		snprintf(why, wlen, "%s: %s", name, !S_ISREG(st->st_mode) ?
		    legacy_fs_kind(st->st_mode) : st->st_nlink != 1 ?
		    "a hard link: not read" : "too large");
		close(fd);
		return (NULL);
	}
	if ((buf = malloc((size_t)st->st_size + 1)) == NULL) {
		snprintf(why, wlen, "%s: out of memory", name);
		close(fd);
		return (NULL);
	}
	while (got < (size_t)st->st_size && (n = read(fd, buf + got,
	    (size_t)st->st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return (buf);
}
