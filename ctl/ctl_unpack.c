/*
 * dynprofctl fetch's unpacking: a rank's checked archive (tar + zstd, as the
 * agent packs it, docs/traces.md) unpacked into DIR/rank-N/.
 *
 * The archive comes from a store others can write, so its entries are
 * trusted no more than a stranger's tar file: it is unpacked into a fresh
 * DIR/.rank-N.XXXXXX and renamed to rank-N only when every entry went in, an
 * entry with '..', an absolute path or a path through a symbolic link fails
 * the rank (libarchive's ARCHIVE_EXTRACT_SECURE_* checks, and a path under a
 * link this code left out), only regular files and directories are written
 * (links, devices, FIFOs are left out and said), no owner is restored and no
 * setuid, setgid or sticky bit, and the entries and bytes are bounded.  An
 * existing DIR/rank-N is replaced only with --force.
 */

#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

#define CTL_UNPACK_ENTRIES	65536	/* the agent packs no more */
#define CTL_UNPACK_BYTES	(64ULL << 30)	/* unpacked, per rank */
#define CTL_UNPACK_SKIPPED	1024	/* links left out, remembered */
#define CTL_UNPACK_CHUNK	(64 * 1024)

/* One archive being unpacked. */
struct ctl_unpack {
	struct archive	*in;
	struct archive	*out;
	uint64_t	 bytes;		/* file bytes written */
	size_t		 entries;
	size_t		 files;
	size_t		 nskipped;
	char		*skipped[CTL_UNPACK_SKIPPED];	/* normalized names */
	char		 buf[CTL_UNPACK_CHUNK];
};

/* nftw's callback: one name removed. */
static int
ctl_unpack_rm_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return (0);
}

/* Removes path and what is under it, links not followed. */
static void
ctl_unpack_rm(const char *path)
{
	(void)nftw(path, ctl_unpack_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* path without "." and empty components, in norm (len bytes).  0 or -1. */
static int
ctl_unpack_norm(const char *path, char *norm, size_t len)
{
	const char	*p = path, *end;
	size_t		 n, at = 0;

	norm[0] = '\0';
	while (*p != '\0') {
		if ((end = strchr(p, '/')) == NULL)
			end = p + strlen(p);
		n = (size_t)(end - p);
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (at + n + 2 > len)
				return (-1);
			if (at > 0)
				norm[at++] = '/';
			memcpy(norm + at, p, n);
			at += n;
			norm[at] = '\0';
		}
		p = *end == '/' ? end + 1 : end;
	}
	return (0);
}

/* Whether norm lies under a link left out (a path written through it). */
static const char *
ctl_unpack_under_skipped(const struct ctl_unpack *u, const char *norm)
{
	size_t	 i, n;

	for (i = 0; i < u->nskipped; i++) {
		n = strlen(u->skipped[i]);
		if (strncmp(norm, u->skipped[i], n) == 0 && norm[n] == '/')
			return (u->skipped[i]);
	}
	return (NULL);
}

/* Writes the data of the current entry.  0, or -1 with why. */
static int
ctl_unpack_data(struct ctl_unpack *u, const char *name, char *why,
    size_t len)
{
	la_ssize_t	 n;

	while ((n = archive_read_data(u->in, u->buf, sizeof(u->buf))) != 0) {
		if (n < 0) {
			snprintf(why, len, "entry %s: %s", name,
			    archive_error_string(u->in));
			return (-1);
		}
		if ((uint64_t)n > CTL_UNPACK_BYTES - u->bytes) {
			snprintf(why, len, "more than %llu bytes unpacked "
			    "(at entry %s)", CTL_UNPACK_BYTES, name);
			return (-1);
		}
		if (archive_write_data(u->out, u->buf, (size_t)n) != n) {
			snprintf(why, len, "entry %s: %s", name,
			    archive_error_string(u->out));
			return (-1);
		}
		u->bytes += (uint64_t)n;
	}
	return (0);
}

/*
 * Unpacks every entry of u->in into the current directory.  Returns 0, or
 * -1 with why.  What is left out is said on ctl's error stream.
 */
static int
ctl_unpack_entries(struct ctl *ctl, struct ctl_unpack *u, long long rank,
    char *why, size_t len)
{
	struct archive_entry	*e;
	const char		*name, *link;
	char			 norm[PATH_MAX];
	mode_t			 type;
	int			 rc;

	for (;;) {
		if ((rc = archive_read_next_header(u->in, &e)) == ARCHIVE_EOF)
			return (0);
		if (rc < ARCHIVE_WARN) {
			snprintf(why, len, "%s", archive_error_string(u->in));
			return (-1);
		}
		if (++u->entries > CTL_UNPACK_ENTRIES) {
			snprintf(why, len, "more than %d entries",
			    CTL_UNPACK_ENTRIES);
			return (-1);
		}
		name = archive_entry_pathname(e);
		if (name == NULL || ctl_unpack_norm(name, norm,
		    sizeof(norm)) == -1) {
			snprintf(why, len, "an entry without a name, or one "
			    "too long");
			return (-1);
		}
		if ((link = ctl_unpack_under_skipped(u, norm)) != NULL) {
			snprintf(why, len, "entry %s: under %s, a link left "
			    "out", name, link);
			return (-1);
		}
		type = archive_entry_filetype(e);
		if ((type != AE_IFREG && type != AE_IFDIR) ||
		    archive_entry_hardlink(e) != NULL) {
			ctl_errx(ctl, "fetch: rank %lld: entry %s left out: "
			    "not a regular file nor a directory", rank, name);
			if (u->nskipped == CTL_UNPACK_SKIPPED) {
				snprintf(why, len, "more than %d entries "
				    "that are not regular files nor "
				    "directories", CTL_UNPACK_SKIPPED);
				return (-1);
			}
			if ((u->skipped[u->nskipped] = strdup(norm)) == NULL) {
				snprintf(why, len, "%s", strerror(errno));
				return (-1);
			}
			u->nskipped++;
			continue;
		}
		/* No owner, no setuid, setgid nor sticky bit, none for all. */
		archive_entry_set_perm(e, type == AE_IFDIR ? 0755 :
		    archive_entry_perm(e) & 0755);
		archive_entry_set_uid(e, getuid());
		archive_entry_set_gid(e, getgid());
		if (archive_write_header(u->out, e) != ARCHIVE_OK) {
			snprintf(why, len, "entry %s: %s", name,
			    archive_error_string(u->out));
			return (-1);
		}
		if (type == AE_IFREG) {
			if (ctl_unpack_data(u, name, why, len) == -1)
				return (-1);
			u->files++;
		}
		if (archive_write_finish_entry(u->out) != ARCHIVE_OK) {
			snprintf(why, len, "entry %s: %s", name,
			    archive_error_string(u->out));
			return (-1);
		}
	}
}

/* Reads the archive fd into the directory tmpfd.  0, or -1 with why. */
static int
ctl_unpack_into(struct ctl *ctl, struct ctl_unpack *u, int fd, int tmpfd,
    long long rank, char *why, size_t len)
{
	int	 cwd, rc = -1;

	if ((u->in = archive_read_new()) == NULL ||
	    (u->out = archive_write_disk_new()) == NULL) {
		snprintf(why, len, "cannot allocate a libarchive reader");
		return (-1);
	}
	/* ARCHIVE_WARN: zstd(1) does it, libarchive built without libzstd. */
	if (archive_read_support_filter_zstd(u->in) < ARCHIVE_WARN ||
	    archive_read_support_format_tar(u->in) != ARCHIVE_OK ||
	    archive_write_disk_set_options(u->out,
	    ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS |
	    ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_TIME) !=
	    ARCHIVE_OK || archive_read_open_fd(u->in, fd,
	    CTL_UNPACK_CHUNK) != ARCHIVE_OK) {
		snprintf(why, len, "not tar + zstd: %s",
		    archive_error_string(u->in) ? archive_error_string(u->in) :
		    "cannot read it");
		return (-1);
	}
	/* libarchive writes relative to the working directory. */
	if ((cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fchdir(tmpfd) == -1) {
		snprintf(why, len, "%s", strerror(errno));
		if (cwd != -1)
			close(cwd);
		return (-1);
	}
	rc = ctl_unpack_entries(ctl, u, rank, why, len);
	if (archive_write_close(u->out) != ARCHIVE_OK && rc == 0) {
		snprintf(why, len, "%s", archive_error_string(u->out));
		rc = -1;
	}
	if (fchdir(cwd) == -1 && rc == 0) {
		snprintf(why, len, "%s", strerror(errno));
		rc = -1;
	}
	close(cwd);
	return (rc);
}

int
ctl_unpack_rank(struct ctl *ctl, int dirfd, const char *dir,
    const char *archive, long long rank, int force, size_t *files,
    char *why, size_t len)
{
	struct ctl_unpack	*u;
	struct stat		 st;
	char			 tmp[PATH_MAX], tmpname[64], name[32];
	int			 fd = -1, tmpfd = -1, rc = -1;
	size_t			 i;

	snprintf(name, sizeof(name), "rank-%lld", rank);
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) >=
	    sizeof(tmp)) {
		snprintf(why, len, "%s: name too long", dir);
		return (-1);
	}
	/* Said before the work; the rename below refuses a late one too. */
	if (!force && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		snprintf(why, len, "%s/%s exists: not written into (--force "
		    "replaces it)", dir, name);
		return (-1);
	}
	if ((u = calloc(1, sizeof(*u))) == NULL) {
		snprintf(why, len, "%s", strerror(errno));
		return (-1);
	}
	if (mkdtemp(tmp) == NULL) {
		snprintf(why, len, "%s: %s", tmp, strerror(errno));
		free(u);
		return (-1);
	}
	snprintf(tmpname, sizeof(tmpname), "%s", strrchr(tmp, '/') + 1);
	if ((fd = openat(dirfd, archive, O_RDONLY | O_CLOEXEC |
	    O_NOFOLLOW)) == -1 || (tmpfd = openat(dirfd, tmpname,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		snprintf(why, len, "%s", strerror(errno));
	else if (fchmod(tmpfd, 0755) == -1)
		snprintf(why, len, "%s: %s", tmp, strerror(errno));
	else if (ctl_unpack_into(ctl, u, fd, tmpfd, rank, why, len) == 0) {
		if (renameat2(dirfd, tmpname, dirfd, name,
		    RENAME_NOREPLACE) == 0)
			rc = 0;
		else if (errno != EEXIST)
			snprintf(why, len, "%s/%s: %s", dir, name,
			    strerror(errno));
		else if (!force)
			snprintf(why, len, "%s/%s exists: not written into "
			    "(--force replaces it)", dir, name);
		else if (renameat2(dirfd, tmpname, dirfd, name,
		    RENAME_EXCHANGE) == -1)
			snprintf(why, len, "%s/%s: %s", dir, name,
			    strerror(errno));
		else
			rc = 0;		/* tmp is the old one now */
	}
	if (u->in != NULL)
		archive_read_free(u->in);
	if (u->out != NULL)
		archive_write_free(u->out);
	if (fd != -1)
		close(fd);
	if (tmpfd != -1)
		close(tmpfd);
	ctl_unpack_rm(tmp);
	*files = u->files;
	for (i = 0; i < u->nskipped; i++)
		free(u->skipped[i]);
	free(u);
	return (rc);
}
