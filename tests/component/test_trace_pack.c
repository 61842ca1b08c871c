/*
 * A trace directory packed into the shared-directory store (agent/trace_pack.c)
 * through the real child process, read back with the real tar and zstd and
 * hashed with sha256sum: what is packed is the directory's own files, never
 * what a symbolic link or a name points at outside it; bounds fail the
 * archive; nothing half-written is left under the final name.  As root the
 * directory belongs to another uid and a root-only file inside is left out.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent.h"

#define OWNER	1001	/* the rank's user when the test runs as root */

struct fixture {
	char	 base[128];	/* holds secret, trace/, store/, out/ */
	char	 trace[160];
	char	 store[160];
	char	 out[160];
	uid_t	 uid;
};

static void
sh(const char *fmt, ...)
{
	char	 cmd[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* The first line of a command's output, trailing newline cut. */
static void
sh_out(char *buf, size_t len, const char *fmt, ...)
{
	char	 cmd[1024];
	FILE	*f;
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	assert_non_null(f = popen(cmd, "r"));
	buf[0] = '\0';
	if (fgets(buf, (int)len, f) == NULL)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	assert_int_equal(pclose(f), 0);
}

static void
put(const char *dir, const char *name, const char *text)
{
	char	 p[512];
	FILE	*f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_non_null(f = fopen(p, "w"));
	fputs(text, f);
	fclose(f);
}

static int
setup(void **state)
{
	struct fixture	*fx;

	fx = calloc(1, sizeof(*fx));
	snprintf(fx->base, sizeof(fx->base), "/tmp/dp-trace-pack-XXXXXX");
	if (mkdtemp(fx->base) == NULL)
		return (-1);
	chmod(fx->base, 0755);
	snprintf(fx->trace, sizeof(fx->trace), "%s/trace", fx->base);
	snprintf(fx->store, sizeof(fx->store), "%s/store", fx->base);
	snprintf(fx->out, sizeof(fx->out), "%s/out", fx->base);
	mkdir(fx->trace, 0755);
	mkdir(fx->store, 0755);
	mkdir(fx->out, 0755);
	fx->uid = getuid();
	*state = fx;
	return (0);
}

static int
teardown(void **state)
{
	struct fixture	*fx = *state;
	char		 cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx->base);
	if (system(cmd) != 0)
		return (-1);
	free(fx);
	return (0);
}

/*
 * A trace: two files, a nested one, a file whose name starts with "..", and
 * three ways out of it: a link to a file beside it, a link to /etc and a
 * link to a directory beside it.  Plus a FIFO, which must not block.
 */
static void
make_trace(struct fixture *fx)
{
	char	 p[512];

	put(fx->base, "secret", "SECRET-OUTSIDE\n");
	snprintf(p, sizeof(p), "%s/outside", fx->base);
	mkdir(p, 0755);
	put(p, "inner", "SECRET-OUTSIDE-DIR\n");
	put(fx->trace, "rank0.pt.trace.json", "{\"traceEvents\":[]}\n");
	put(fx->trace, "..data", "dotdot-looking but inside\n");
	snprintf(p, sizeof(p), "%s/plugins", fx->trace);
	mkdir(p, 0755);
	put(p, "step.json", "{\"step\":3}\n");
	snprintf(p, sizeof(p), "%s/escape", fx->trace);
	assert_int_equal(symlink("../secret", p), 0);
	snprintf(p, sizeof(p), "%s/etc", fx->trace);
	assert_int_equal(symlink("/etc", p), 0);
	snprintf(p, sizeof(p), "%s/plugins/up", fx->trace);
	assert_int_equal(symlink("../../outside", p), 0);
	snprintf(p, sizeof(p), "%s/fifo", fx->trace);
	assert_int_equal(mkfifo(p, 0644), 0);
	if (getuid() == 0) {
		/*
		 * The rank's user owns it all, and what the links point at
		 * (so only not following them keeps it out).  Inside, a
		 * root-only file, and another user's file the rank's user
		 * could read, packed with the rank's trace all the same.
		 */
		sh("chown -hR %d:%d '%s' '%s/secret' '%s/outside'", OWNER,
		    OWNER, fx->trace, fx->base, fx->base);
		put(fx->trace, "root-only", "ROOT-ONLY\n");
		snprintf(p, sizeof(p), "%s/root-only", fx->trace);
		chmod(p, 0600);
		put(fx->trace, "other-user", "OTHER-USER\n");
		sh("chown 4242:4242 '%s/other-user'", fx->trace);
		/* Root could read it, its owner cannot: not packed. */
		put(fx->trace, "no-read", "NO-READ\n");
		sh("chown %d:%d '%s/no-read' && chmod 0 '%s/no-read'", OWNER,
		    OWNER, fx->trace, fx->trace);
		fx->uid = OWNER;
	}
}

/* Adds big.bin, bytes of random, to the trace. */
static void
make_big(struct fixture *fx, long bytes)
{
	sh("head -c %ld /dev/urandom > '%s/big.bin'", bytes, fx->trace);
	if (getuid() == 0)
		sh("chown %d:%d '%s/big.bin'", OWNER, OWNER, fx->trace);
}

/*
 * Packs fx->trace as job-1's window 3, rank 7, once unchanged for settle
 * seconds; fills r, returns finish's.
 */
static int
pack_settled(struct fixture *fx, uint64_t max, int settle,
    struct trace_pack_result *r)
{
	struct trace_pack	 tp;
	struct pollfd		 pfd;
	char			 why[256];
	int			 sfd, tfd, rc;

	assert_true((sfd = open(fx->store, O_RDONLY | O_DIRECTORY)) != -1);
	assert_true((tfd = open(fx->trace, O_RDONLY | O_DIRECTORY)) != -1);
	rc = trace_pack_start(&tp, sfd, "job-1", 3, 7, tfd, fx->trace,
	    fx->uid, max, settle, why, sizeof(why));
	if (rc != 0)
		fail_msg("trace_pack_start: %s", why);
	assert_string_equal(tp.path, "job-1/window-3/rank-7.tar.zst");
	/* The caller's loop waits on tp.fd; here, poll with a deadline. */
	pfd.fd = tp.fd;
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 60000), 1);
	rc = trace_pack_finish(&tp, r);
	assert_int_equal(tp.fd, -1);
	close(sfd);
	close(tfd);
	return (rc);
}

static int
pack(struct fixture *fx, uint64_t max, struct trace_pack_result *r)
{
	return (pack_settled(fx, max, 0, r));
}

static void
test_pack_not_followed(void **state)
{
	struct fixture			*fx = *state;
	struct trace_pack_result	 r;
	struct stat			 st;
	char				 arch[256], line[256];

	make_trace(fx);
	if (pack(fx, TRACE_PACK_MAX_BYTES, &r) != 0)
		fail_msg("pack: %s", r.why);
	snprintf(arch, sizeof(arch), "%s/job-1/window-3/rank-7.tar.zst",
	    fx->store);
	assert_int_equal(stat(arch, &st), 0);
	assert_int_equal((uint64_t)st.st_size, r.size);
	sh_out(line, sizeof(line), "sha256sum '%s' | cut -d' ' -f1", arch);
	assert_string_equal(line, r.sha256);
	/* Nothing half-written is left beside it. */
	sh("test ! -e '%s/job-1/window-3/.rank-7.tar.zst.part'", fx->store);
	/* Three files; escape, etc, up, fifo, as root 3 more: left out. */
	assert_int_equal(r.files, 3);
	assert_int_equal(r.skipped, getuid() == 0 ? 7 : 4);
	/* Real tar and zstd read it; no entry is absolute or climbs. */
	sh("tar --zstd -tf '%s' | grep -q '^plugins/step.json$'", arch);
	sh("! tar --zstd -tf '%s' | grep -E '^/|(^|/)\\.\\.(/|$)'", arch);
	sh("cd '%s' && tar --zstd -xf '%s'", fx->out, arch);
	sh("cmp '%s/rank0.pt.trace.json' '%s/rank0.pt.trace.json'", fx->trace,
	    fx->out);
	sh("cmp '%s/..data' '%s/..data'", fx->trace, fx->out);
	sh("cmp '%s/plugins/step.json' '%s/plugins/step.json'", fx->trace,
	    fx->out);
	sh("test ! -e '%s/escape' && test ! -L '%s/escape'", fx->out, fx->out);
	sh("test ! -e '%s/etc' && test ! -e '%s/plugins/up'", fx->out, fx->out);
	sh("test ! -e '%s/fifo' && test ! -e '%s/root-only'", fx->out,
	    fx->out);
	sh("test ! -e '%s/other-user' && test ! -e '%s/no-read'", fx->out,
	    fx->out);
	/* Nothing from outside, in the archive's bytes or the tree. */
	sh("! zstd -dc '%s' | grep -q -e SECRET -e ROOT-ONLY -e OTHER-USER "
	    "-e NO-READ", arch);
	sh("! grep -rq -e SECRET -e ROOT-ONLY -e OTHER-USER '%s'", fx->out);
}

static void
test_pack_over_bound(void **state)
{
	struct fixture			*fx = *state;
	struct trace_pack_result	 r;

	make_trace(fx);
	make_big(fx, 100000);
	assert_int_equal(pack(fx, 50000, &r), -1);
	assert_non_null(strstr(r.why, "over 50000 bytes"));
	/* No archive under its name, no temporary one. */
	sh("test -z \"$(ls -A '%s/job-1/window-3')\"", fx->store);
}

static void
test_pack_wrong_owner(void **state)
{
	struct fixture			*fx = *state;
	struct trace_pack_result	 r;

	make_trace(fx);
	fx->uid = fx->uid == 0 ? 4242 : 0;	/* not the directory's owner */
	assert_int_equal(pack(fx, TRACE_PACK_MAX_BYTES, &r), -1);
	assert_non_null(strstr(r.why, "is not uid"));
	sh("test -z \"$(ls -A '%s/job-1/window-3')\"", fx->store);
}

/*
 * A trace changed within the settle time is not packed; once it has been
 * still that long, it is.  A change deep inside counts.
 */
static void
test_pack_settle(void **state)
{
	struct fixture			*fx = *state;
	struct trace_pack_result	 r;
	int				 i;

	make_trace(fx);
	sh("sleep 2.2");
	sh("echo more >> '%s/plugins/step.json'", fx->trace);
	assert_int_equal(pack_settled(fx, TRACE_PACK_MAX_BYTES, 2, &r), -1);
	assert_int_equal(r.unsettled, 1);
	assert_non_null(strstr(r.why, "still changing"));
	sh("test -z \"$(ls -A '%s/job-1/window-3')\"", fx->store);
	/* Still for 2 s: packed (a loaded machine may need a few tries). */
	for (i = 0; i < 20; i++) {
		sh("sleep 0.5");
		if (pack_settled(fx, TRACE_PACK_MAX_BYTES, 2, &r) == 0)
			break;
		assert_int_equal(r.unsettled, 1);
	}
	assert_int_equal(r.ok, 1);
	sh("test -s '%s/job-1/window-3/rank-7.tar.zst'", fx->store);
}

/*
 * The packer holds none of the caller's descriptors: a pipe's write end the
 * caller closes while a large trace is packed is closed at once, not when the
 * packer ends (as a coordinator link the agent closes must be).
 */
static void
test_pack_fds(void **state)
{
	struct fixture			*fx = *state;
	struct trace_pack		 tp;
	struct trace_pack_result	 r;
	struct pollfd			 pfd;
	char				 why[256];
	int				 sfd, tfd, p[2];

	make_trace(fx);
	make_big(fx, 200000000);
	assert_true((sfd = open(fx->store, O_RDONLY | O_DIRECTORY)) != -1);
	assert_true((tfd = open(fx->trace, O_RDONLY | O_DIRECTORY)) != -1);
	assert_int_equal(pipe(p), 0);		/* not close-on-exec */
	assert_int_equal(trace_pack_start(&tp, sfd, "job-1", 3, 7, tfd,
	    fx->trace, fx->uid, TRACE_PACK_MAX_BYTES, 0, why, sizeof(why)), 0);
	close(p[1]);
	/* Closed as soon as the packer has started (it closes them first). */
	pfd.fd = p[0];
	pfd.events = POLLIN;
	assert_int_equal(poll(&pfd, 1, 30000), 1);
	assert_true(pfd.revents & POLLHUP);
	/*
	 * ... while it still packs 200 MB at nice 19: its result not sent
	 * yet.  A packer holding the pipe would close it only at its end,
	 * its result sent before.
	 */
	pfd.fd = tp.fd;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	assert_int_equal(trace_pack_finish(&tp, &r), 0);
	close(p[0]);
	close(sfd);
	close(tfd);
}

/* A packer killed in the middle leaves nothing under any name. */
static void
test_pack_abort(void **state)
{
	struct fixture		*fx = *state;
	struct trace_pack	 tp;
	char			 why[256];
	int			 sfd, tfd;

	make_trace(fx);
	make_big(fx, 20000000);
	assert_true((sfd = open(fx->store, O_RDONLY | O_DIRECTORY)) != -1);
	assert_true((tfd = open(fx->trace, O_RDONLY | O_DIRECTORY)) != -1);
	assert_int_equal(trace_pack_start(&tp, sfd, "job-1", 3, 7, tfd,
	    fx->trace, fx->uid, TRACE_PACK_MAX_BYTES, 0, why, sizeof(why)), 0);
	trace_pack_abort(&tp);
	assert_int_equal(tp.fd, -1);
	sh("test -z \"$(ls -A '%s/job-1/window-3')\"", fx->store);
	/* A bad job id makes nothing at all. */
	assert_int_equal(trace_pack_start(&tp, sfd, "../x", 3, 7, tfd,
	    fx->trace, fx->uid, TRACE_PACK_MAX_BYTES, 0, why, sizeof(why)), -1);
	sh("test ! -e '%s/x'", fx->base);
	close(sfd);
	close(tfd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pack_not_followed, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pack_over_bound, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pack_wrong_owner, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pack_settle, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pack_fds, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_pack_abort, setup,
		    teardown),
	};

	return (cmocka_run_group_tests(tests, NULL, NULL));
}
