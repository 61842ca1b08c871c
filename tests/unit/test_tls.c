/*
 * common/tls.c: contexts loaded from deploy/tls/mkcerts.sh's files, reloads that
 * keep the old context on a bad file, and the node check of the coordinator
 * (SAN DNS name, else the CN) through real handshakes over memory BIOs.
 */

#include <sys/stat.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "log.h"
#include "tls.h"

static char	 dir[256];

static void
path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static int
sh(const char *fmt, ...)
{
	char	 cmd[4096];
	va_list	 ap;
	int	 rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return (WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
}

/* The certificates: mkcerts.sh's, plus one for node "cnonly" with no SAN. */
static int
setup(void **state)
{
	const char	*src = getenv("DYNPROF_SOURCE_DIR");

	(void)state;
	log_init("test_tls", LOG_LEVEL_QUIET);
	snprintf(dir, sizeof(dir), "/tmp/dynprof-test-tls.XXXXXX");
	if (mkdtemp(dir) == NULL || src == NULL)
		return (-1);
	if (sh("sh %s/deploy/tls/mkcerts.sh -o %s/c -c localhost -c 127.0.0.1 "
	    "n0 n1 >/dev/null", src, dir) != 0)
		return (-1);
	/* No extensions at all: the name is the CN's. */
	return (sh("cd %s/c && openssl req -new -newkey ec -pkeyopt "
	    "ec_paramgen_curve:P-256 -nodes -keyout cnonly.key -subj /CN=cnonly "
	    "-out cnonly.csr 2>/dev/null && openssl x509 -req -in cnonly.csr "
	    "-CA ca.crt -CAkey ca.key -CAserial ca.srl -days 30 -out cnonly.crt "
	    "2>/dev/null", dir));
}

static int
teardown(void **state)
{
	(void)state;
	sh("rm -rf %s", dir);
	return (0);
}

static int
load(struct tls *t, const char *role, int flags, const char *cert,
    const char *key, const char *ca)
{
	char	 c[512], k[512], a[512];

	path(c, sizeof(c), cert);
	path(k, sizeof(k), key);
	path(a, sizeof(a), ca != NULL ? ca : "");
	return (tls_load(t, role, flags, c, k, ca != NULL ? a : NULL));
}

static void
test_load(void **state)
{
	struct tls	 t;

	(void)state;
	assert_int_equal(load(&t, "agentlink", TLS_SERVER | TLS_VERIFY_PEER,
	    "c/coordinator.crt", "c/coordinator.key", "c/ca.crt"), 0);
	assert_non_null(t.ctx);
	assert_true(tls_expiry_seconds(&t) > 364 * 86400 &&
	    tls_expiry_seconds(&t) <= 365 * 86400);
	tls_clear(&t);
	/* A key of another certificate, a missing file, no CA to check with. */
	assert_int_equal(load(&t, "agentlink", TLS_SERVER, "c/n0.crt",
	    "c/n1.key", NULL), -1);
	assert_null(t.ctx);
	tls_clear(&t);
	assert_int_equal(load(&t, "agentlink", 0, "c/nothing.crt", "c/n0.key",
	    "c/ca.crt"), -1);
	tls_clear(&t);
	assert_int_equal(load(&t, "agentlink", TLS_VERIFY_PEER, "c/n0.crt",
	    "c/n0.key", NULL), -1);
	tls_clear(&t);
}

static void
test_reload(void **state)
{
	struct tls	 t;
	SSL_CTX		*old;
	char		 crt[512];
	FILE		*f;

	(void)state;
	assert_int_equal(sh("mkdir -p %s/r && cp %s/c/n0.crt %s/c/n0.key "
	    "%s/r/", dir, dir, dir, dir), 0);
	assert_int_equal(load(&t, "http", TLS_SERVER, "r/n0.crt", "r/n0.key",
	    NULL), 0);
	old = t.ctx;
	/* Broken: the context in use stays. */
	path(crt, sizeof(crt), "r/n0.crt");
	assert_non_null(f = fopen(crt, "w"));
	fputs("-----BEGIN CERTIFICATE-----\nbroken\n", f);
	fclose(f);
	assert_int_equal(tls_reload(&t), -1);
	assert_ptr_equal(t.ctx, old);
	/* A certificate whose key is not the file's: the same. */
	assert_int_equal(sh("cp %s/c/n1.crt %s/r/n0.crt", dir, dir), 0);
	assert_int_equal(tls_reload(&t), -1);
	assert_ptr_equal(t.ctx, old);
	/* A good new pair (30 days): a new context, its expiry. */
	assert_int_equal(sh("cp %s/c/cnonly.crt %s/r/n0.crt && cp "
	    "%s/c/cnonly.key %s/r/n0.key", dir, dir, dir, dir), 0);
	assert_int_equal(tls_reload(&t), 0);
	assert_ptr_not_equal(t.ctx, old);
	assert_true(tls_expiry_seconds(&t) <= 30 * 86400 &&
	    tls_expiry_seconds(&t) > 29 * 86400);
	tls_clear(&t);
}

/*
 * Handshakes a client of cert (a node's) with the coordinator over a BIO
 * pair; returns the server's SSL (the caller frees it) or NULL.
 */
static SSL *
handshake(struct tls *server, const char *cert, const char *host)
{
	struct tls	 client;
	SSL		*c, *s;
	BIO		*bc, *bs;
	char		 crt[64], key[64];
	int		 i, rc, rs = 0;

	snprintf(crt, sizeof(crt), "c/%s.crt", cert);
	snprintf(key, sizeof(key), "c/%s.key", cert);
	if (load(&client, "agentlink", TLS_VERIFY_PEER, crt, key, "c/ca.crt") ==
	    -1)
		return (NULL);
	c = tls_ssl_new(&client);
	s = tls_ssl_new(server);
	tls_clear(&client);
	if (c == NULL || s == NULL || BIO_new_bio_pair(&bc, 0, &bs, 0) != 1 ||
	    tls_client_expect(c, host) == -1)
		goto fail;
	SSL_set_bio(c, bc, bc);
	SSL_set_bio(s, bs, bs);
	SSL_set_connect_state(c);
	SSL_set_accept_state(s);
	for (i = 0; i < 100; i++) {
		rc = SSL_do_handshake(c);
		rs = SSL_do_handshake(s);
		if (rc == 1 && rs == 1)
			break;
		if ((rc <= 0 && SSL_get_error(c, rc) != SSL_ERROR_WANT_READ) ||
		    (rs <= 0 && SSL_get_error(s, rs) != SSL_ERROR_WANT_READ))
			goto fail;
	}
	if (rs != 1)
		goto fail;
	SSL_free(c);
	return (s);
fail:
	SSL_free(c);
	SSL_free(s);
	return (NULL);
}

static void
test_peer_names(void **state)
{
	struct tls	 server;
	SSL		*s;
	char		 why[256];

	(void)state;
	assert_int_equal(load(&server, "agentlink", TLS_SERVER |
	    TLS_VERIFY_PEER, "c/coordinator.crt", "c/coordinator.key",
	    "c/ca.crt"), 0);
	/* The SAN names n0, and only n0. */
	assert_non_null(s = handshake(&server, "n0", "127.0.0.1"));
	assert_int_equal(tls_peer_names(s, "n0", why, sizeof(why)), 1);
	assert_int_equal(tls_peer_names(s, "n1", why, sizeof(why)), 0);
	assert_string_equal(why, "the client certificate (CN n0) does not "
	    "name node n1");
	assert_int_equal(tls_peer_names(s, "n", why, sizeof(why)), 0);
	assert_int_equal(tls_peer_names(s, "N0", why, sizeof(why)), 0);
	assert_int_equal(tls_peer_names(s, "*", why, sizeof(why)), 0);
	SSL_free(s);
	/* No SAN: the CN. */
	assert_non_null(s = handshake(&server, "cnonly", "localhost"));
	assert_int_equal(tls_peer_names(s, "cnonly", why, sizeof(why)), 1);
	assert_int_equal(tls_peer_names(s, "n0", why, sizeof(why)), 0);
	SSL_free(s);
	/* The coordinator's name is checked: an address or a name it lacks. */
	assert_null(handshake(&server, "n0", "127.0.0.2"));
	assert_null(handshake(&server, "n0", "coord.example"));
	assert_non_null(s = handshake(&server, "n0", "localhost"));
	SSL_free(s);
	/* A node's certificate cannot serve as the coordinator's (clientAuth). */
	tls_clear(&server);
	assert_int_equal(load(&server, "agentlink", TLS_SERVER |
	    TLS_VERIFY_PEER, "c/n1.crt", "c/n1.key", "c/ca.crt"), 0);
	assert_null(handshake(&server, "n0", "n1"));
	tls_clear(&server);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_peer_names),
	};

	return (cmocka_run_group_tests(tests, setup, teardown));
}
