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
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1) {
		log_warn("%s %s: %s", what, dir, path);
		return (-1);
	}
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
