/*
 * common/tls.c: contexts loaded from deploy/tls/mkcerts.sh's files, reloads that
 * keep the old context on a bad file, the node check of the coordinator (SAN
 * DNS name, else the CN) and session resumption with ticket keys kept in a
 * file, through real handshakes over memory BIOs.
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
 * Handshakes client with server over a BIO pair, the client then reading what
 * the server sent after it (TLS 1.3's session tickets); returns the server's
 * SSL (the caller frees it) or NULL.
 */
static SSL *
handshake_with(struct tls *server, struct tls *client, const char *host)
{
	SSL		*c, *s;
	BIO		*bc, *bs;
	char		 b;
	int		 i, rc, rs = 0;

	c = tls_ssl_new(client);
	s = tls_ssl_new(server);
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
	if (rs != 1 || SSL_read(c, &b, 1) > 0)
		goto fail;
	SSL_free(c);
	return (s);
fail:
	SSL_free(c);
	SSL_free(s);
	return (NULL);
}

/* A node's client context, of certificate cert.  Returns 0 or -1. */
static int
client_load(struct tls *client, const char *cert)
{
	char	 crt[64], key[64];

	snprintf(crt, sizeof(crt), "c/%s.crt", cert);
	snprintf(key, sizeof(key), "c/%s.key", cert);
	return (load(client, "agentlink", TLS_VERIFY_PEER, crt, key,
	    "c/ca.crt"));
}

/*
 * Handshakes a client of cert (a node's) with the coordinator over a BIO
 * pair; returns the server's SSL (the caller frees it) or NULL.
 */
static SSL *
handshake(struct tls *server, const char *cert, const char *host)
{
	struct tls	 client;
	SSL		*s;

	if (client_load(&client, cert) == -1)
		return (NULL);
	s = handshake_with(server, &client, host);
	tls_clear(&client);
	return (s);
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

/* The coordinator's AgentLink context with the ticket keys of file. */
static int
server_load(struct tls *server, const char *file)
{
	char	 keys[512];

	path(keys, sizeof(keys), file);
	if (load(server, "agentlink", TLS_SERVER | TLS_VERIFY_PEER,
	    "c/coordinator.crt", "c/coordinator.key", "c/ca.crt") == -1)
		return (-1);
	return (tls_ticket_keys(server, keys));
}

static void
test_ticket_keys(void **state)
{
	struct tls	 server, again, client;
	unsigned char	 first[TLS_TICKET_KEYS_LEN];
	struct stat	 st;
	char		 keys[512], why[256];
	SSL		*s;

	(void)state;
	/* Made 0600 at the first start, the same keys read at the next. */
	path(keys, sizeof(keys), "keys");
	assert_int_equal(server_load(&server, "keys"), 0);
	assert_int_equal(stat(keys, &st), 0);
	assert_int_equal(st.st_size, TLS_TICKET_KEYS_LEN);
	assert_int_equal(st.st_mode & 0777, 0600);
	memcpy(first, server.ticket_keys, sizeof(first));
	assert_int_equal(server_load(&again, "keys"), 0);
	assert_memory_equal(again.ticket_keys, first, sizeof(first));

	/* A client's session from the first resumes with the second (a
	 * restart); the node check holds on the resumed session. */
	assert_int_equal(client_load(&client, "n0"), 0);
	assert_non_null(s = handshake_with(&server, &client, "127.0.0.1"));
	assert_int_equal(tls_handshake_done(&server, s), 0);
	SSL_free(s);
	assert_non_null(client.session);
	assert_non_null(s = handshake_with(&again, &client, "127.0.0.1"));
	assert_int_equal(tls_handshake_done(&again, s), 1);
	assert_true(again.handshakes == 1 && again.resumed == 1);
	assert_int_equal(tls_peer_names(s, "n0", why, sizeof(why)), 1);
	assert_int_equal(tls_peer_names(s, "n1", why, sizeof(why)), 0);
	SSL_free(s);
	tls_clear(&again);

	/* Other keys (the file lost): a full handshake, which works. */
	assert_int_equal(server_load(&again, "other-keys"), 0);
	assert_non_null(s = handshake_with(&again, &client, "127.0.0.1"));
	assert_int_equal(tls_handshake_done(&again, s), 0);
	SSL_free(s);
	tls_clear(&again);

	/* A reload of the client forgets its session (its old certificate);
	 * one of the server keeps the keys. */
	assert_int_equal(tls_reload(&client), 0);
	assert_null(client.session);
	assert_int_equal(tls_reload(&server), 0);
	assert_non_null(s = handshake_with(&server, &client, "127.0.0.1"));
	SSL_free(s);
	assert_non_null(s = handshake_with(&server, &client, "127.0.0.1"));
	assert_int_equal(tls_handshake_done(&server, s), 1);
	SSL_free(s);
	tls_clear(&client);
	tls_clear(&server);

	/* Readable by others, or of another size: refused. */
	assert_int_equal(chmod(keys, 0640), 0);
	assert_int_equal(server_load(&server, "keys"), -1);
	tls_clear(&server);
	assert_int_equal(chmod(keys, 0600), 0);
	assert_int_equal(truncate(keys, TLS_TICKET_KEYS_LEN - 1), 0);
	assert_int_equal(server_load(&server, "keys"), -1);
	tls_clear(&server);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_peer_names),
		cmocka_unit_test(test_ticket_keys),
	};

	return (cmocka_run_group_tests(tests, setup, teardown));
}
