/*
 * Lock files: flock(2) on DIR/NAME, held until the process ends (the kernel
 * drops it on any exit, SIGKILL included), with the holder's pid inside for
 * the message the next one prints.
 */

#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pidlock.h"

/* The most a lock file's pid line is read of. */
#define PIDLOCK_TEXT_MAX	32

/* Reads the pid a lock file names; 0 if it names none. */
static long
pidlock_holder(int fd)
{
	char	 text[PIDLOCK_TEXT_MAX];
	char	*end;
	ssize_t	 n;
	long	 pid;

	if ((n = pread(fd, text, sizeof(text) - 1, 0)) <= 0)
		return (0);
	text[n] = '\0';
	pid = strtol(text, &end, 10);
	if (end == text || (*end != '\n' && *end != '\0') || pid <= 0)
		return (0);
	return (pid);
}

/*
 * Opens the lock file path, ours: a file another user put there first (in a
 * directory they may write, such as a group's --shm-dir), a link or anything
 * not a regular file is removed and made again, so that nobody keeps the
 * daemon from starting by holding a lock of their own.  Returns the
 * descriptor or -1 logged.
 */
static int
pidlock_open(const char *what, const char *dir, const char *path)
{
	struct stat	 st;
	int		 fd, tries;

	for (tries = 0; tries < 3; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC, 0600);
		/* A link (ELOOP), another's file we may not write (EACCES). */
		if (fd == -1 && errno != ELOOP && errno != EACCES)
			break;
		if (fd != -1 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid() && st.st_nlink == 1)
			return (fd);
		if (fd != -1)
			close(fd);
		if (lstat(path, &st) == -1) {
			if (errno == ENOENT)
				continue;
			break;
		}
		log_warnx("%s %s: %s is not this user's lock file (%s, uid %u, "
		    "mode %04o, %u links): replaced", what, dir, path,
		    S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISREG(st.st_mode) ?
		    "a file" : "not a regular file", (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777), (unsigned)st.st_nlink);
		if (unlink(path) == -1 && errno != ENOENT)
			break;
		/* Made anew, unless someone is there first again. */
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd != -1)
			return (fd);
		if (errno != EEXIST)
			break;
	}
	log_warn("%s %s: %s", what, dir, path);
	return (-1);
}

/*
 * Takes the lock on DIR/NAME, creating DIR (mode 0700, one level) and the
 * file if missing, and writes this process's pid into it.  Returns the
 * descriptor to keep open (close-on-exec), or -1 logged, naming what (e.g.
 * "state directory") and the holder's pid when another process has it.
 */
int
pidlock_take(const char *what, const char *dir, const char *name)
{
	char	 path[PATH_MAX], text[PIDLOCK_TEXT_MAX];
	long	 pid;
	int	 fd, n;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path)) {
		log_warnx("%s %s: path too long", what, dir);
		return (-1);
	}
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		log_warn("%s %s", what, dir);
		return (-1);
	}
	if ((fd = pidlock_open(what, dir, path)) == -1)
		return (-1);
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK)
			log_warn("%s %s: flock %s", what, dir, path);
		else if ((pid = pidlock_holder(fd)) != 0)
			log_warnx("%s %s is in use by pid %ld (it holds %s)",
			    what, dir, pid, path);
		else
			log_warnx("%s %s is in use by another process (it "
			    "holds %s)", what, dir, path);
		close(fd);
		return (-1);
	}
	/* The pid is for the message only: a full tmpfs keeps the lock. */
	n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) == -1 || pwrite(fd, text, (size_t)n, 0) != n)
		log_warn("%s %s: cannot write the pid into %s", what, dir,
		    path);
	return (fd);
}
