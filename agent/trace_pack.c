/*
 * A rank's finished trace directory packed into one tar + zstd archive in a
 * shared-directory trace store (docs/traces.md), as
 * <store>/<job>/window-<id>/rank-<N>.tar.zst, with its size and sha256.
 *
 * The packing runs in a child process, so a slow or large directory never
 * holds the agent's event loop: trace_pack_start() forks it and hands back a
 * descriptor that becomes readable when it ends, trace_pack_end() reads
 * its result and trace_pack_place() renames the archive into place (the
 * caller notes what it packed in between: collect.c).  The child runs at nice 19
 * and in the idle I/O class, so a training process on the node is served
 * first, and reads the directory acting as its owner (file-system uid and
 * gid): what it packs is what that owner could read.  It walks the directory
 * through descriptors only (openat with O_NOFOLLOW, relative to the directory
 * it came from), so neither a symbolic link nor a name leads outside it:
 * links, FIFOs, sockets, devices, hard-linked files and files of another
 * owner are left out and counted.  Bytes and entries are bounded; what goes
 * past a bound fails the archive instead of truncating it silently.
 */

#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/openat2.h>
#include <openssl/evp.h>

#include "parts.h"
#include "jobid.h"

#define TRACE_PACK_DEPTH	32	/* directories deep */
#define TRACE_PACK_ENTRIES	65536	/* entries in one archive */
#define TRACE_PACK_CHUNK	(64 * 1024)
#define IOPRIO_WHO_PROCESS	1
#define IOPRIO_CLASS_IDLE	3
#define IOPRIO_CLASS_SHIFT	13

/* What the child walks and writes with. */
struct trace_pack_walk {
	struct archive		*a;
	EVP_MD_CTX		*md;
	int			 out_fd;
	uid_t			 uid;
	uint64_t		 max_bytes;
	struct trace_pack_result *r;
	struct trace_steps	*steps;		/* NULL: the trace not read */
	char			 buf[TRACE_PACK_CHUNK];
};

/* Sets why; a long path is cut, as it may be. */
static void __attribute__((format(printf, 3, 4)))
trace_pack_why(char *why, size_t len, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

/* libarchive's writer: the compressed bytes to the file and the digest. */
static la_ssize_t
trace_pack_write_cb(struct archive *a, void *arg, const void *buf, size_t len)
{
	struct trace_pack_walk	*w = arg;
	const char		*p = buf;
	size_t			 done = 0;
	ssize_t			 n;

	while (done < len) {
		n = write(w->out_fd, p + done, len - done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			archive_set_error(a, errno, "write: %s", strerror(errno));
			return (-1);
		}
		done += (size_t)n;
	}
	if (EVP_DigestUpdate(w->md, buf, len) != 1) {
		archive_set_error(a, EIO, "sha256 update failed");
		return (-1);
	}
	w->r->size += len;
	return ((la_ssize_t)len);
}

/* Counts an entry left out, and says the first one's name and why. */
static void
trace_pack_skip(struct trace_pack_walk *w, const char *path, const char *why)
{
	w->r->skipped++;
	if (w->r->first_skipped[0] == '\0')
		trace_pack_why(w->r->first_skipped, sizeof(w->r->first_skipped),
		    "%s: %s", path, why);
}

/* Writes one header: path, type, permissions (owner's bits kept), mtime. */
static int
trace_pack_header(struct trace_pack_walk *w, const char *path,
    const struct stat *st, unsigned int type, int64_t size)
{
	struct archive_entry	*e;
	int			 rc;

	if ((e = archive_entry_new()) == NULL)
		return (-1);
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, type == AE_IFDIR ? 0755 :
	    (st->st_mode & 0100) ? 0755 : 0644);
	archive_entry_set_size(e, size);
	archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	rc = archive_write_header(w->a, e);
	archive_entry_free(e);
	return (rc == ARCHIVE_OK ? 0 : -1);
}

/* Copies the regular file fd (st) as path into the archive. */
static int
trace_pack_file(struct trace_pack_walk *w, int fd, const char *path,
    const struct stat *st)
{
	uint64_t	 left = (uint64_t)st->st_size;
	ssize_t		 n;
	int		 reading;

	if (w->r->bytes_in + left > w->max_bytes) {
		trace_pack_why(w->r->why, sizeof(w->r->why),
		    "the trace is over %llu bytes (at %s)",
		    (unsigned long long)w->max_bytes, path);
		return (-1);
	}
	if (trace_pack_header(w, path, st, AE_IFREG, st->st_size) == -1)
		goto archive_err;
	/* Read as it is packed: one pass over the file (trace_steps.c). */
	reading = w->steps != NULL && trace_steps_begin(w->steps, path);
	/*
	 * The size in the header is the one fstat gave: a file still growing
	 * is cut there, a file shrunk is padded by libarchive.
	 */
	while (left > 0) {
		n = read(fd, w->buf, left < sizeof(w->buf) ? left :
		    sizeof(w->buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			trace_pack_why(w->r->why, sizeof(w->r->why), "%s: read: %s",
			    path, strerror(errno));
			return (-1);
		}
		if (n == 0)
			break;
		if (archive_write_data(w->a, w->buf, (size_t)n) != n)
			goto archive_err;
		if (reading)
			trace_steps_feed(w->steps, w->buf, (size_t)n);
		left -= (uint64_t)n;
		w->r->bytes_in += (uint64_t)n;
	}
	if (reading)
		trace_steps_end(w->steps);
	w->r->files++;
	return (0);

archive_err:
	trace_pack_why(w->r->why, sizeof(w->r->why), "%s: %s", path,
	    archive_error_string(w->a) ? archive_error_string(w->a) :
	    "archive error");
	return (-1);
}

/*
 * Packs directory dfd (already checked: a directory of w->uid) as prefix,
 * recursively; takes ownership of dfd.  Returns 0, or -1 with r->why set.
 */
static int
trace_pack_dir(struct trace_pack_walk *w, int dfd, const char *prefix,
    int depth)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 st;
	char		 path[1024];
	int		 fd, rc = 0;

	if ((d = fdopendir(dfd)) == NULL) {
		trace_pack_why(w->r->why, sizeof(w->r->why), "%s: %s",
		    prefix[0] ? prefix : ".", strerror(errno));
		close(dfd);
		return (-1);
	}
	while (rc == 0 && (errno = 0, de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(path, sizeof(path), "%s%s%s", prefix,
		    prefix[0] ? "/" : "", de->d_name) >= (int)sizeof(path)) {
			trace_pack_skip(w, de->d_name, "path too long");
			continue;
		}
		if (++w->r->entries > TRACE_PACK_ENTRIES) {
			trace_pack_why(w->r->why, sizeof(w->r->why),
			    "the trace has over %d entries", TRACE_PACK_ENTRIES);
			rc = -1;
			break;
		}
		/*
		 * O_NOFOLLOW | O_NONBLOCK | O_NOCTTY: a link is refused
		 * (ELOOP), a FIFO never blocks the open, a tty is not taken;
		 * fstat on the descriptor then says what was really opened.
		 */
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd == -1) {
			trace_pack_skip(w, path, errno == ELOOP ?
			    "a symbolic link" : strerror(errno));
			continue;
		}
		if (fstat(fd, &st) == -1) {
			trace_pack_skip(w, path, strerror(errno));
			close(fd);
			continue;
		}
		if (st.st_uid != w->uid) {
			trace_pack_skip(w, path, "another user's");
			close(fd);
		} else if (S_ISDIR(st.st_mode)) {
			if (depth + 1 >= TRACE_PACK_DEPTH) {
				trace_pack_skip(w, path, "too deep");
				close(fd);
				continue;
			}
			if (trace_pack_header(w, path, &st, AE_IFDIR, 0) == -1) {
				trace_pack_why(w->r->why, sizeof(w->r->why), "%s: %s",
				    path, archive_error_string(w->a));
				close(fd);
				rc = -1;
				break;
			}
			rc = trace_pack_dir(w, fd, path, depth + 1);
		} else if (!S_ISREG(st.st_mode)) {
			trace_pack_skip(w, path, "not a regular file");
			close(fd);
		} else if (st.st_nlink != 1) {
			trace_pack_skip(w, path, "a hard link");
			close(fd);
		} else {
			rc = trace_pack_file(w, fd, path, &st);
			close(fd);
		}
	}
	if (rc == 0 && de == NULL && errno != 0) {
		trace_pack_why(w->r->why, sizeof(w->r->why), "%s: readdir: %s",
		    prefix[0] ? prefix : ".", strerror(errno));
		rc = -1;
	}
	closedir(d);
	return (rc);
}

/*
 * Packs directory src_fd (a directory owned by uid) into out_fd as tar +
 * zstd, filling r (size and sha256 of what was written, and r->sum, what
 * trace_steps.c read of its trace files).  Takes ownership of neither
 * descriptor.  Returns 0, or -1 with r->why set.
 */
int
trace_pack_write(int src_fd, int out_fd, uid_t uid, uint64_t max_bytes,
    struct trace_pack_result *r)
{
	struct trace_pack_walk	*w;
	unsigned char		 md[EVP_MAX_MD_SIZE];
	unsigned int		 mdlen = 0, i;
	struct stat		 st;
	int			 dfd, rc = -1;

	memset(r, 0, sizeof(*r));
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		trace_pack_why(r->why, sizeof(r->why), "out of memory");
		return (-1);
	}
	w->out_fd = out_fd;
	w->uid = uid;
	w->max_bytes = max_bytes;
	w->r = r;
	/* Without memory for it the trace is packed all the same. */
	if ((w->steps = trace_steps_new()) == NULL)
		snprintf(r->sum.error, sizeof(r->sum.error), "not read: out of "
		    "memory");
	if ((w->md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1) {
		trace_pack_why(r->why, sizeof(r->why), "sha256 unavailable");
		goto out;
	}
	if ((w->a = archive_write_new()) == NULL ||
	    archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK ||
	    archive_write_add_filter_zstd(w->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w->a, 1) != ARCHIVE_OK ||
	    archive_write_open2(w->a, w, NULL, trace_pack_write_cb, NULL,
	    NULL) != ARCHIVE_OK) {
		trace_pack_why(r->why, sizeof(r->why), "libarchive: %s",
		    w->a && archive_error_string(w->a) ?
		    archive_error_string(w->a) : "cannot write tar + zstd");
		goto out;
	}
	/* Its own open file: a dup would share the caller's offset. */
	if ((dfd = openat(src_fd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		trace_pack_why(r->why, sizeof(r->why), "the trace directory: %s",
		    strerror(errno));
		goto out;
	}
	if (fstat(dfd, &st) == -1 || st.st_uid != uid) {
		trace_pack_why(r->why, sizeof(r->why),
		    "the trace directory is not uid %u's", (unsigned int)uid);
		close(dfd);
		goto out;
	}
	if (trace_pack_dir(w, dfd, "", 0) == -1)
		goto out;
	if (archive_write_close(w->a) != ARCHIVE_OK) {
		trace_pack_why(r->why, sizeof(r->why), "libarchive: %s",
		    archive_error_string(w->a));
		goto out;
	}
	if (EVP_DigestFinal_ex(w->md, md, &mdlen) != 1 || mdlen != 32) {
		trace_pack_why(r->why, sizeof(r->why), "sha256 final failed");
		goto out;
	}
	for (i = 0; i < mdlen; i++)
		snprintf(r->sha256 + 2 * i, 3, "%02x", md[i]);
	if (w->steps != NULL)
		trace_steps_result(w->steps, &r->sum);
	rc = 0;
out:
	trace_steps_free(w->steps);
	if (w->a != NULL)
		archive_write_free(w->a);	/* closes too, after a failure */
	EVP_MD_CTX_free(w->md);
	free(w);
	return (rc);
}

/* The later of st's change and modification times, in ns. */
static int64_t
trace_pack_stamp(const struct stat *st)
{
	int64_t	 m, c;

	m = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	c = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	return (m > c ? m : c);
}

/*
 * The newest change under directory dfd (its own included), walked as the
 * packing walks it (no link followed, bounded), into *newest; *seen counts
 * the entries.  Takes ownership of dfd.
 */
static void
trace_pack_newest(int dfd, int depth, int64_t *newest, uint64_t *seen)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 st;
	int		 fd;

	if (fstat(dfd, &st) == 0 && trace_pack_stamp(&st) > *newest)
		*newest = trace_pack_stamp(&st);
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)) != NULL && ++*seen <= TRACE_PACK_ENTRIES) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    fstatat(dirfd(d), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (trace_pack_stamp(&st) > *newest)
			*newest = trace_pack_stamp(&st);
		if (S_ISDIR(st.st_mode) && depth + 1 < TRACE_PACK_DEPTH &&
		    (fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) != -1)
			trace_pack_newest(fd, depth + 1, newest, seen);
	}
	closedir(d);
}

/*
 * Says whether directory src_fd has not changed for settle_s seconds (1), or
 * has (0, with r->why and r->unsettled set): a trace still being written is
 * not packed; the caller tries again later.
 */
int
trace_pack_settled(int src_fd, int settle_s, struct trace_pack_result *r)
{
	struct timespec	 now;
	int64_t		 newest = 0, age;
	uint64_t	 seen = 0;
	int		 dfd;

	if ((dfd = openat(src_fd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		trace_pack_why(r->why, sizeof(r->why), "the trace directory: %s",
		    strerror(errno));
		return (0);
	}
	trace_pack_newest(dfd, 0, &newest, &seen);
	clock_gettime(CLOCK_REALTIME, &now);
	age = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - newest;
	if (age >= (int64_t)settle_s * 1000000000)
		return (1);
	r->unsettled = 1;
	trace_pack_why(r->why, sizeof(r->why),
	    "still changing: %lld ms ago, under %d s",
	    (long long)(age / 1000000), settle_s);
	return (0);
}

/* mkdirat name in dfd unless there, then opens it (no link followed). */
static int
trace_pack_mkdir(int dfd, const char *name)
{
	if (mkdirat(dfd, name, 0755) == -1 && errno != EEXIST)
		return (-1);
	return (openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC));
}

/*
 * A child of the agent (a packer, an uploader) closes every descriptor but
 * stdio and these three (-1: none): holding the agent's sockets for as long
 * as it works would keep a closed coordinator link or a replaced listener
 * open behind the agent's back.
 */
void
trace_pack_keep_fds(int a, int b, int c)
{
	int	 keep[3] = { a, b, c }, t, i, j, from = 3;

	for (i = 0; i < 3; i++)
		for (j = i + 1; j < 3; j++)
			if (keep[j] < keep[i]) {
				t = keep[i];
				keep[i] = keep[j];
				keep[j] = t;
			}
	for (i = 0; i < 3; i++) {
		if (keep[i] < from)
			continue;
		if (keep[i] > from)
			(void)close_range((unsigned int)from,
			    (unsigned int)keep[i] - 1, 0);
		from = keep[i] + 1;
	}
	(void)close_range((unsigned int)from, ~0U, 0);
}

/* A child of the agent ends: writes its result (len bytes) to res_fd. */
void
trace_pack_child_exit(int res_fd, const void *r, size_t len)
{
	const char	*p = r;
	ssize_t		 n;

	while (len > 0 && ((n = write(res_fd, p, len)) > 0 ||
	    (n == -1 && errno == EINTR)))
		if (n > 0) {
			p += n;
			len -= (size_t)n;
		}
	_exit(0);
}

/* Reads a child's result (len bytes) from fd.  Returns the bytes read. */
size_t
trace_pack_child_result(int fd, void *r, size_t len)
{
	char	*p = r;
	size_t	 got = 0;
	ssize_t	 n;

	while (got < len && ((n = read(fd, p + got, len - got)) > 0 ||
	    (n == -1 && errno == EINTR)))
		if (n > 0)
			got += (size_t)n;
	return (got);
}

/* A child of the agent: never outlives it, at nice 19 and idle I/O. */
void
trace_pack_lower(void)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	(void)setpriority(PRIO_PROCESS, 0, 19);
	(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0,
	    IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT);
}

/*
 * Opens the trace directory path, acting as its owner.  Its components may be
 * links the owner made, but no procfs magic link (/proc/PID/root, /cwd, /fd/N)
 * is followed: through one a root process, which keeps CAP_SYS_PTRACE while
 * acting as a user, reaches another mount namespace's files that the user
 * itself may not.  Returns the descriptor, or -1 (errno set).
 */
static int
trace_pack_open_dir(const char *path)
{
	struct open_how	 how;
	long		 fd;

	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC;
	how.resolve = RESOLVE_NO_MAGICLINKS;
	fd = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	if (fd == -1 && errno == ENOSYS) {
		/* Before Linux 5.6: no path through /proc at all. */
		if (strncmp(path, "/proc/", 6) == 0) {
			errno = EPERM;
			return (-1);
		}
		return (open(path, (int)how.flags));
	}
	return ((int)fd);
}

/* The child: low priority, acting as the owner, packs and reports. */
static void __attribute__((noreturn))
trace_pack_child(int src_fd, const char *src_path, int out_fd, int res_fd,
    uid_t uid, uint64_t max_bytes, int settle_s)
{
	struct trace_pack_result	 r;
	struct stat			 st;
	gid_t				 gid;

	trace_pack_lower();
	memset(&r, 0, sizeof(r));
	/*
	 * The group to act as: the directory's (its owner checked again
	 * when opened as that owner, below).
	 */
	if ((src_fd != -1 ? fstat(src_fd, &st) : stat(src_path, &st)) == -1) {
		trace_pack_why(r.why, sizeof(r.why), "%s: %s", src_path,
		    strerror(errno));
		goto report;
	}
	gid = st.st_gid;
	if (geteuid() == 0 && uid != 0) {
		(void)setfsgid(gid);
		(void)setfsuid(uid);
		if ((uid_t)setfsuid(uid) != uid ||
		    (gid_t)setfsgid(gid) != gid) {
			trace_pack_why(r.why, sizeof(r.why),
			    "cannot act as uid %u", (unsigned int)uid);
			goto report;
		}
	}
	if (src_fd == -1 && (src_fd = trace_pack_open_dir(src_path)) == -1) {
		trace_pack_why(r.why, sizeof(r.why), "%s: %s", src_path,
		    errno == ELOOP ? "a symbolic link, or through /proc" :
		    strerror(errno));
		goto report;
	}
	if (settle_s > 0 && !trace_pack_settled(src_fd, settle_s, &r))
		goto report;
	if (trace_pack_write(src_fd, out_fd, uid, max_bytes, &r) == 0 &&
	    fsync(out_fd) == -1)
		trace_pack_why(r.why, sizeof(r.why), "fsync: %s", strerror(errno));
	else if (r.why[0] == '\0')
		r.ok = 1;
report:
	trace_pack_child_exit(res_fd, &r, sizeof(r));
}

/*
 * Starts packing directory src_fd (owned by uid; the caller keeps the
 * descriptor), or with src_fd -1 the directory src_path opened by the child
 * acting as uid, into store_fd's <job>/window-<window>/rank-<rank>.tar.zst, at
 * most max_bytes of files, once nothing in it changed for settle_s seconds
 * (else the result says unsettled, and nothing is written).  The archive is written as a hidden temporary
 * file beside its final name.  Returns 0 with tp filled (tp->fd becomes
 * readable when the child ends: then trace_pack_finish()), or -1 with why.
 */
int
trace_pack_start(struct trace_pack *tp, int store_fd, const char *job,
    uint32_t window, uint32_t rank, int src_fd, const char *src_path,
    uid_t uid, uint64_t max_bytes, int settle_s, char *why, size_t wlen)
{
	char	 name[64];
	int	 jfd = -1, pipefd[2] = { -1, -1 }, out_fd = -1;
	pid_t	 pid;

	memset(tp, 0, sizeof(*tp));
	tp->fd = tp->dir_fd = -1;
	if (!jobid_valid(job, NULL)) {
		trace_pack_why(why, wlen, "bad job id");
		return (-1);
	}
	if ((jfd = trace_pack_mkdir(store_fd, job)) == -1) {
		trace_pack_why(why, wlen, "%s: %s", job, strerror(errno));
		goto fail;
	}
	snprintf(name, sizeof(name), "window-%u", window);
	if ((tp->dir_fd = trace_pack_mkdir(jfd, name)) == -1) {
		trace_pack_why(why, wlen, "%s/%s: %s", job, name, strerror(errno));
		goto fail;
	}
	close(jfd);
	jfd = -1;
	snprintf(tp->name, sizeof(tp->name), "rank-%u.tar.zst", rank);
	/* One agent packs a rank: a fixed name, so a crashed try's goes. */
	snprintf(tp->tmp, sizeof(tp->tmp), ".rank-%u.tar.zst.part", rank);
	snprintf(tp->path, sizeof(tp->path), "%s/%s/%s", job, name, tp->name);
	(void)unlinkat(tp->dir_fd, tp->tmp, 0);
	if ((out_fd = openat(tp->dir_fd, tp->tmp, O_WRONLY | O_CREAT |
	    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)) == -1) {
		trace_pack_why(why, wlen, "%s: %s", tp->tmp, strerror(errno));
		goto fail;
	}
	if (pipe2(pipefd, O_CLOEXEC) == -1) {
		trace_pack_why(why, wlen, "pipe: %s", strerror(errno));
		goto fail;
	}
	if ((pid = fork()) == -1) {
		trace_pack_why(why, wlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		close(pipefd[0]);
		trace_pack_keep_fds(src_fd, out_fd, pipefd[1]);
		trace_pack_child(src_fd, src_path, out_fd, pipefd[1], uid,
		    max_bytes, settle_s);
	}
	close(pipefd[1]);
	close(out_fd);
	tp->pid = pid;
	tp->fd = pipefd[0];
	return (0);
fail:
	if (out_fd != -1) {
		close(out_fd);
		(void)unlinkat(tp->dir_fd, tp->tmp, 0);
	}
	if (pipefd[0] != -1) {
		close(pipefd[0]);
		close(pipefd[1]);
	}
	if (jfd != -1)
		close(jfd);
	if (tp->dir_fd != -1)
		close(tp->dir_fd);
	tp->dir_fd = -1;
	return (-1);
}

/*
 * Ends tp once tp->fd is readable (or blocks until it is): reads the child's
 * result into r and reaps it.  Returns 0 with r filled and the archive whole
 * under its temporary name (then trace_pack_place()), or -1 with r->why set
 * and the temporary file removed.
 */
int
trace_pack_end(struct trace_pack *tp, struct trace_pack_result *r)
{
	const char	*why;
	size_t		 got;
	int		 status;

	memset(r, 0, sizeof(*r));
	got = trace_pack_child_result(tp->fd, r, sizeof(*r));
	close(tp->fd);
	tp->fd = -1;
	while (waitpid(tp->pid, &status, 0) == -1 && errno == EINTR)
		;
	if (got != sizeof(*r)) {
		memset(r, 0, sizeof(*r));
		trace_pack_why(r->why, sizeof(r->why), "the packer died%s",
		    WIFSIGNALED(status) ? " of a signal" : "");
	}
	r->why[sizeof(r->why) - 1] = '\0';
	r->first_skipped[sizeof(r->first_skipped) - 1] = '\0';
	r->sha256[sizeof(r->sha256) - 1] = '\0';
	if (tracesum_check(&r->sum, &why) == -1) {
		memset(&r->sum, 0, sizeof(r->sum));
		snprintf(r->sum.error, sizeof(r->sum.error), "not read: %s",
		    why);
	}
	if (r->ok)
		return (0);
	(void)unlinkat(tp->dir_fd, tp->tmp, 0);
	close(tp->dir_fd);
	tp->dir_fd = -1;
	return (-1);
}

/*
 * Renames the archive trace_pack_end() left under its temporary name into
 * place.  Returns 0, or -1 with r->ok cleared, r->why set and the temporary
 * file removed.
 */
int
trace_pack_place(struct trace_pack *tp, struct trace_pack_result *r)
{
	if (renameat(tp->dir_fd, tp->tmp, tp->dir_fd, tp->name) == -1) {
		r->ok = 0;
		trace_pack_why(r->why, sizeof(r->why), "rename: %s",
		    strerror(errno));
		(void)unlinkat(tp->dir_fd, tp->tmp, 0);
	}
	close(tp->dir_fd);
	tp->dir_fd = -1;
	return (r->ok ? 0 : -1);
}

/* trace_pack_end(), then trace_pack_place().  Returns 0, or -1. */
int
trace_pack_finish(struct trace_pack *tp, struct trace_pack_result *r)
{
	if (trace_pack_end(tp, r) == -1)
		return (-1);
	return (trace_pack_place(tp, r));
}

/* Stops tp's child (the agent is going away): kills, reaps, cleans up. */
void
trace_pack_abort(struct trace_pack *tp)
{
	if (tp->fd == -1 && tp->dir_fd == -1)
		return;
	if (tp->fd != -1) {
		(void)kill(tp->pid, SIGKILL);
		while (waitpid(tp->pid, NULL, 0) == -1 && errno == EINTR)
			;
		close(tp->fd);
		tp->fd = -1;
	}
	(void)unlinkat(tp->dir_fd, tp->tmp, 0);
	close(tp->dir_fd);
	tp->dir_fd = -1;
}

/*
 * The sha256 (lowercase hex) of fd's bytes from off, len of them or to its
 * end (len UINT64_MAX), read 64 KiB at a time; *got says how many.  Returns
 * 0, or -1 (a read failed, or the file ended before len).
 */
int
trace_pack_sha256(int fd, uint64_t off, uint64_t len, char hex[65],
    uint64_t *got)
{
	EVP_MD_CTX	*md;
	unsigned char	 buf[65536], out[EVP_MAX_MD_SIZE];
	unsigned int	 mdlen = 0, i;
	ssize_t		 n = 0;
	size_t		 want;
	int		 rc = -1;

	*got = 0;
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1)
		goto done;
	while (*got < len) {
		want = len - *got < sizeof(buf) ? (size_t)(len - *got) :
		    sizeof(buf);
		while ((n = pread(fd, buf, want, (off_t)(off + *got))) == -1 &&
		    errno == EINTR)
			;
		if (n <= 0 || EVP_DigestUpdate(md, buf, (size_t)n) != 1)
			break;
		*got += (uint64_t)n;
	}
	if (n < 0 || (len != UINT64_MAX && *got != len))
		goto done;
	if (EVP_DigestFinal_ex(md, out, &mdlen) == 1 && mdlen == 32) {
		for (i = 0; i < mdlen; i++)
			snprintf(hex + 2 * i, 3, "%02x", out[i]);
		rc = 0;
	}
done:
	EVP_MD_CTX_free(md);
	return (rc);
}
