/*
 * --legacy-shm: a window written straight into the shared-memory record
 * MindSpore 2.4-2.6 read at every step (docs/legacy.md), as well as into the
 * file, so that it reaches the ranks at their next step instead of up to one
 * poll later.  The agent never creates such a record: it writes only into one
 *
 *	- named DynamicProfileShm + 10 digits (the framework's %Y%m%d%H) in
 *	  LEGACY_SHM_DIR, a regular file (opened without following a link nor
 *	  blocking), with one link, writable by nobody but its owner, of
 *	  exactly the size of the dialect's record;
 *	- owned by the job's user (the owner of the framework's config, else of
 *	  the job's directory);
 *	- created while the agent served the job (ctime no earlier than when the
 *	  directory was first seen, less LEGACY_SHM_SLACK_S), so never a record
 *	  left by an earlier job;
 *	- mapped by a live process;
 *	- holding what this job's poller copies from its file: all zeros (not
 *	  polled yet), the framework's own config as first read, the last file
 *	  or record the agent wrote for the job; a record that holds anything
 *	  else is another job's, or the file was edited by hand since;
 *	- the only one that passes all of the above (the name says only the
 *	  hour: two jobs of one user on a node in one hour share it, and then
 *	  the agent keeps to the file).
 *
 * The record is the framework's struct, native byte order (little endian on
 * every platform MindSpore ships for): int32 fields then one-byte booleans,
 * is_valid last.  Everything but start_step is written first, then
 * start_step, which is what makes a rank act: a rank that sees the new start
 * sees the rest of the window too.
 */

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "parts.h"
#include "parts_legacy.h"
#include "log.h"

#define LEGACY_SHM_PREFIX	"DynamicProfileShm"
#define LEGACY_SHM_SLACK_S	5

/* A record's field: "i" int32, "?" bool, with its default. */
struct legacy_shm_field {
	const char	*key;
	char		 type;
	int		 def;
};

/*
 * The record's fields that are not options (those come from the options
 * table, in the dialect's column): the window's steps and the framework's
 * own, as MindSpore 2.4-2.6 default them.
 */
static const struct legacy_shm_field legacy_shm_others[] = {
	{ "start_step", 'i', -1 }, { "stop_step", 'i', -1 },
	{ "activities", 'i', 0 }, { "export_type", 'i', 0 },
	{ "profile_memory", '?', 0 }, { "mstx", '?', 0 },
};

#define NITEMS(x)	(sizeof(x) / sizeof((x)[0]))
#define LEGACY_SHM_FIELDS_MAX	(LEGACY_SHM_RECORD_MAX / 2)

/*
 * The record layout of dialect dl into f (ending with a NULL key), from its
 * descriptor's field names: an option's type and default from the options
 * table, the others from legacy_shm_others.  Returns 0, or -1 when it has
 * none, or names a field nobody types.
 */
static int
legacy_shm_layout(const struct legacy_dialect *dl, struct legacy_shm_field *f)
{
	const struct options_row *r;
	const char *const *k;
	size_t		 n = 0, i;

	if (dl == NULL || dl->shm == NULL)
		return (-1);
	for (k = dl->shm; *k != NULL; k++) {
		if (n + 1 >= LEGACY_SHM_FIELDS_MAX)
			return (-1);
		f[n].key = *k;
		if ((r = options_find(dl->id, *k)) != NULL) {
			f[n].type = r->type == OPTIONS_BOOL ? '?' : 'i';
			f[n].def = (int)r->def;
		} else {
			for (i = 0; i < NITEMS(legacy_shm_others); i++)
				if (strcmp(legacy_shm_others[i].key, *k) == 0)
					break;
			if (i == NITEMS(legacy_shm_others))
				return (-1);
			f[n] = legacy_shm_others[i];
		}
		n++;
	}
	f[n].key = NULL;
	return (0);
}

/*
 * Packs o, the window as written into the file, into rec in layout f, with
 * is_valid last.  Returns the record's size.  A field of another type than
 * the framework's would be reset to its default by it: the default here too.
 */
static size_t
legacy_shm_pack(const struct legacy_shm_field *f, json_t *o, uint8_t *rec)
{
	json_t	*v;
	int32_t	 i32;
	size_t	 n = 0;

	for (; f->key != NULL; f++) {
		v = json_object_get(o, f->key);
		if (f->type == 'i') {
			i32 = json_is_integer(v) ? (int32_t)json_integer_value(v) :
			    f->def;
			memcpy(rec + n, &i32, sizeof(i32));
			n += sizeof(i32);
		} else
			rec[n++] = json_is_boolean(v) ? json_is_true(v) : f->def;
	}
	rec[n++] = 1;		/* is_valid */
	return (n);
}

/*
 * Whether the record rec (size bytes) holds what this job's poller would
 * have copied there: nothing yet, the framework's own config, or the last
 * record the agent wrote.
 */
static int
legacy_shm_ours(const struct legacy_job *lj, const struct legacy_shm_field *f,
    const uint8_t *rec, size_t size)
{
	uint8_t	 base[LEGACY_SHM_RECORD_MAX];
	size_t	 i;

	for (i = 0; i < size && rec[i] == 0; i++)
		;
	if (i == size)
		return (1);
	if ((lj->shm_last_len == size &&
	    memcmp(rec, lj->shm_last, size) == 0) ||
	    (lj->file_rec_len == size && memcmp(rec, lj->file_rec, size) == 0))
		return (1);
	return (lj->base != NULL && legacy_shm_pack(f, lj->base, base) == size &&
	    memcmp(rec, base, size) == 0);
}

/* Whether name is DynamicProfileShm followed by 10 digits. */
static int
legacy_shm_name(const char *name)
{
	size_t	 plen = strlen(LEGACY_SHM_PREFIX), i;

	if (strncmp(name, LEGACY_SHM_PREFIX, plen) != 0 ||
	    strlen(name) != plen + 10)
		return (0);
	for (i = plen; name[i] != '\0'; i++)
		if (name[i] < '0' || name[i] > '9')
			return (0);
	return (1);
}

/* The uid of the job's user: the framework's config's owner, else the dir's. */
static uid_t
legacy_shm_uid(const struct legacy_job *lj)
{
	return (lj->framework_seen && lj->framework_uid != 0 ?
	    lj->framework_uid : lj->uid);
}

/*
 * Finds the job's record of size bytes in dir by the rules above.  Returns an
 * open descriptor, or -1 with why saying why none is used.
 */
static int
legacy_shm_find(const struct legacy_job *lj, const struct legacy_shm_field *f,
    size_t size, char *why, size_t wlen, char *found, size_t flen)
{
	const char	*dir = LEGACY_SHM_DIR;
	uint8_t		 cur[LEGACY_SHM_RECORD_MAX];
	char		 path[PATH_MAX];
	struct dirent	*de;
	struct stat	 st;
	uid_t		 uid = legacy_shm_uid(lj);
	DIR		*d;
	int		 fd = -1, n = 0, seen = 0, nfd;

	snprintf(why, wlen, "no DynamicProfileShm record of the job's");
	if ((d = opendir(dir)) == NULL)
		return (-1);
	while (n++ < LEGACY_SCAN_MAX && (de = readdir(d)) != NULL) {
		if (!legacy_shm_name(de->d_name) || (size_t)snprintf(path,
		    sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		nfd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (nfd == -1)
			continue;
		if (fstat(nfd, &st) == -1 || !S_ISREG(st.st_mode) ||
		    st.st_nlink != 1 || (uint64_t)st.st_size != size ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
			close(nfd);
			continue;
		}
		if (st.st_uid != uid) {
			snprintf(why, wlen, "%s is not the job's user's: not "
			    "written", de->d_name);
			close(nfd);
			continue;
		}
		if (st.st_ctim.tv_sec + LEGACY_SHM_SLACK_S < lj->seen_wall ||
		    pread(nfd, cur, size, 0) != (ssize_t)size ||
		    !procmaps_in_use(st.st_dev, st.st_ino, path, 0)) {
			close(nfd);
			continue;
		}
		if (!legacy_shm_ours(lj, f, cur, size)) {
			snprintf(why, wlen, "%s holds another window than this "
			    "job's file: not written", de->d_name);
			close(nfd);
			continue;
		}
		if (seen++ > 0) {
			snprintf(why, wlen, "two DynamicProfileShm records of "
			    "the job's user this hour: not written");
			close(nfd);
			break;
		}
		fd = nfd;
		snprintf(found, flen, "%s", de->d_name);
	}
	closedir(d);
	if (seen > 1 && fd != -1) {
		close(fd);
		fd = -1;
	}
	return (fd);
}

/*
 * Writes window o (as rendered for the file) into the job's shared-memory
 * record, if --legacy-shm is on and dialect dl (the job's) has one; is_file:
 * o was just written into the file too.  Appends what it did to note.
 * Returns 1 if written, else 0.
 */
int
legacy_shm_write(const struct agent *a, struct legacy_job *lj,
    const struct legacy_dialect *dl, void *o, int is_file, char *note,
    size_t nlen)
{
	struct legacy_shm_field f[LEGACY_SHM_FIELDS_MAX];
	uint8_t		 rec[LEGACY_SHM_RECORD_MAX];
	char		 why[LEGACY_REASON_MAX], name[NAME_MAX + 1];
	size_t		 size, off = strlen(note);
	int		 fd, ok;

	if (!a->opts.legacy_shm || legacy_shm_layout(dl, f) == -1)
		return (0);
	size = legacy_shm_pack(f, o, rec);
	fd = legacy_shm_find(lj, f, size, why, sizeof(why), name, sizeof(name));
	if (is_file) {
		/* What the poller copies next: ours too from now on. */
		memcpy(lj->file_rec, rec, size);
		lj->file_rec_len = size;
	}
	if (fd == -1) {
		snprintf(note + off, nlen - off, "%s%s", off > 0 ? "; " : "",
		    why);
		return (0);
	}
	ok = pwrite(fd, rec + 4, size - 4, 4) == (ssize_t)(size - 4) &&
	    pwrite(fd, rec, 4, 0) == 4;
	if (!ok)
		log_limited(&lj->log, LOG_LEVEL_QUIET, "legacy job %s: %s: %s",
		    lj->name, name, strerror(errno));
	else {
		memcpy(lj->shm_last, rec, size);
		lj->shm_last_len = size;
	}
	close(fd);
	snprintf(note + off, nlen - off, "%s%s %s", off > 0 ? "; " : "",
	    ok ? "also written to" : "cannot write", name);
	return (ok);
}
