/* OpenSSL contexts for AgentLink and the admin API: build, reload, check names. */

#include <sys/random.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "file.h"
#include "log.h"
#include "tls.h"

/* Bytes of a certificate, key or CA file: a bundle of a few hundred CAs. */
#define TLS_FILE_MAX		(4 * 1024 * 1024)

/* Session resumption is scoped to this: any constant will do. */
#define TLS_SESSION_CONTEXT	"dynprof"
/* How long a server's session ticket may be resumed: TLS 1.3's most. */
#define TLS_SESSION_SECONDS	(7 * 86400)

/* Says why the last OpenSSL call failed, from its error queue, and empties it. */
static void
tls_queue_why(char *buf, size_t len)
{
	unsigned long	 e = ERR_peek_last_error();
	const char	*r;

	if (e == 0)
		snprintf(buf, len, "unknown OpenSSL error");
	else if ((r = ERR_reason_error_string(e)) != NULL)
		snprintf(buf, len, "%s", r);
	else
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
}

/* Returns the notAfter of the context's certificate in Unix seconds, 0 if none. */
static int64_t
tls_not_after(SSL_CTX *ctx)
{
	X509		*x = SSL_CTX_get0_certificate(ctx);
	const ASN1_TIME	*t;
	struct tm	 tm;

	if (x == NULL || (t = X509_get0_notAfter(x)) == NULL)
		return (0);
	memset(&tm, 0, sizeof(tm));
	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return (0);
	return ((int64_t)timegm(&tm));
}

/*
 * A client's context: keeps a copy of the last session the server gave (TLS
 * 1.3 sends its tickets after the handshake), to offer it on the next
 * connection.  A copy: OpenSSL marks the session of a connection that ends
 * without close_notify (a coordinator gone) not resumable.
 */
static int
tls_new_session_cb(SSL *ssl, SSL_SESSION *sess)
{
	struct tls	*t = SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl));
	SSL_SESSION	*copy;

	if (t == NULL || (copy = SSL_SESSION_dup(sess)) == NULL)
		return (0);
	SSL_SESSION_free(t->session);
	t->session = copy;
	return (0);
}

/* A server's context resumes with t's ticket keys, for a week.  Returns 0 or
 * -1. */
static int
tls_use_ticket_keys(struct tls *t, SSL_CTX *ctx)
{
	SSL_CTX_set_timeout(ctx, TLS_SESSION_SECONDS);
	return (SSL_CTX_set_tlsext_ticket_keys(ctx, t->ticket_keys,
	    sizeof(t->ticket_keys)) == 1 ? 0 : -1);
}

/* Sets up session resumption: tickets for a server (tls_ticket_keys()), a
 * kept session for a client.  Returns 0 or -1. */
static int
tls_build_sessions(struct tls *t, SSL_CTX *ctx)
{
	if (!(t->flags & TLS_SERVER)) {
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
		    SSL_SESS_CACHE_NO_INTERNAL_STORE);
		SSL_CTX_sess_set_new_cb(ctx, tls_new_session_cb);
		return (SSL_CTX_set_app_data(ctx, t) == 1 ? 0 : -1);
	}
	return (t->has_ticket_keys ? tls_use_ticket_keys(t, ctx) : 0);
}

/* Keys are not encrypted: no password is asked (never of a terminal). */
static int
tls_no_password(char *buf, int size, int rwflag, void *arg)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)arg;
	return (-1);
}

/*
 * Reads the PEM file at path into a memory BIO (file_read(): a FIFO there
 * would block the loop on SIGHUP).  Returns the BIO (caller frees it and
 * *data with file_free()), or NULL with the reason in why.
 */
static BIO *
tls_file_bio(const char *what, const char *path, char **data, size_t *len,
    char *why, size_t whylen)
{
	const char	*e;
	BIO		*bio;

	if ((*data = file_read(path, 0, TLS_FILE_MAX, len, NULL, &e)) ==
	    NULL) {
		snprintf(why, whylen, "%s %s: %s", what, path, e);
		return (NULL);
	}
	if ((bio = BIO_new_mem_buf(*data, (int)*len)) == NULL) {
		file_free(*data, *len);
		*data = NULL;
		snprintf(why, whylen, "%s %s: out of memory", what, path);
	}
	return (bio);
}

/* Frees what tls_file_bio() made. */
static void
tls_file_bio_free(BIO *bio, char *data, size_t len)
{
	BIO_free(bio);
	file_free(data, len);
}

/* Says what is wrong with file path (what: "certificate", ...) in why. */
static void
tls_file_why(const char *what, const char *path, char *why, size_t len)
{
	char	 e[256];

	tls_queue_why(e, sizeof(e));
	snprintf(why, len, "%s %s: %s", what, path, e);
}

/* Loads the certificate and its chain from t->cert (as
 * SSL_CTX_use_certificate_chain_file()).  Returns 0, or -1 with why. */
static int
tls_use_cert(struct tls *t, SSL_CTX *ctx, char *why, size_t len)
{
	X509	*x;
	BIO	*bio;
	char	*data;
	size_t	 dlen;
	int	 rc = -1;

	if ((bio = tls_file_bio("certificate", t->cert, &data, &dlen, why,
	    len)) == NULL)
		return (-1);
	if ((x = PEM_read_bio_X509_AUX(bio, NULL, tls_no_password, NULL)) ==
	    NULL || SSL_CTX_use_certificate(ctx, x) != 1) {
		tls_file_why("certificate", t->cert, why, len);
		goto out;
	}
	X509_free(x);
	SSL_CTX_clear_chain_certs(ctx);
	while ((x = PEM_read_bio_X509(bio, NULL, tls_no_password, NULL)) !=
	    NULL) {
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			tls_file_why("certificate", t->cert, why, len);
			goto out;
		}
	}
	/* The end of the file reads as "no start line": not an error. */
	if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE) {
		tls_file_why("certificate", t->cert, why, len);
		goto out;
	}
	ERR_clear_error();
	rc = 0;
out:
	tls_file_bio_free(bio, data, dlen);
	return (rc);
}

/* Loads the private key from t->key.  Returns 0, or -1 with why. */
static int
tls_use_key(struct tls *t, SSL_CTX *ctx, char *why, size_t len)
{
	EVP_PKEY	*k;
	BIO		*bio;
	char		*data;
	size_t		 dlen;
	int		 rc = 0;

	if ((bio = tls_file_bio("key", t->key, &data, &dlen, why, len)) ==
	    NULL)
		return (-1);
	if ((k = PEM_read_bio_PrivateKey(bio, NULL, tls_no_password,
	    NULL)) == NULL || SSL_CTX_use_PrivateKey(ctx, k) != 1) {
		tls_file_why("key", t->key, why, len);
		rc = -1;
	}
	EVP_PKEY_free(k);
	tls_file_bio_free(bio, data, dlen);
	return (rc);
}

/*
 * Trusts the CAs of t->ca (certificates and CRLs, as
 * SSL_CTX_load_verify_locations()); a server also names them to its clients
 * (SSL_load_client_CA_file()).  Returns 0, or -1 with why.
 */
static int
tls_use_ca(struct tls *t, SSL_CTX *ctx, char *why, size_t len)
{
	STACK_OF(X509_INFO)	*infos;
	X509_INFO		*xi;
	X509_STORE		*store = SSL_CTX_get_cert_store(ctx);
	BIO			*bio;
	char			*data;
	size_t			 dlen;
	int			 i, certs = 0, rc = -1;

	if ((bio = tls_file_bio("CA", t->ca, &data, &dlen, why, len)) == NULL)
		return (-1);
	if ((infos = PEM_X509_INFO_read_bio(bio, NULL, tls_no_password,
	    NULL)) == NULL) {
		tls_file_why("CA", t->ca, why, len);
		goto out;
	}
	for (i = 0; i < sk_X509_INFO_num(infos); i++) {
		xi = sk_X509_INFO_value(infos, i);
		if (xi->x509 != NULL) {
			if (X509_STORE_add_cert(store, xi->x509) != 1 ||
			    ((t->flags & TLS_SERVER) &&
			    SSL_CTX_add_client_CA(ctx, xi->x509) != 1)) {
				tls_file_why("CA", t->ca, why, len);
				goto out;
			}
			certs++;
		}
		if (xi->crl != NULL && X509_STORE_add_crl(store, xi->crl) != 1) {
			tls_file_why("CA", t->ca, why, len);
			goto out;
		}
	}
	if (certs == 0) {
		snprintf(why, len, "CA %s: no certificate in it", t->ca);
		goto out;
	}
	ERR_clear_error();
	rc = 0;
out:
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	tls_file_bio_free(bio, data, dlen);
	return (rc);
}

/* Builds a context from t's files, or NULL with the reason in why. */
static SSL_CTX *
tls_build(struct tls *t, char *why, size_t len)
{
	SSL_CTX	*ctx;
	char	 e[256];
	int	 mode;

	ERR_clear_error();
	ctx = SSL_CTX_new((t->flags & TLS_SERVER) ? TLS_server_method() :
	    TLS_client_method());
	if (ctx == NULL) {
		tls_queue_why(e, sizeof(e));
		snprintf(why, len, "cannot make a context: %s", e);
		return (NULL);
	}
	/* 1.3 when both ends have it, 1.2 at least. */
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto fail_ctx;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	/* A peer gone without close_notify is an end of stream, as libevent
	 * expects; AgentLink's framing tells a cut message. */
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	/* Thousands of idle agent links: no buffers kept between reads. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	/* Each file read into memory first (file_read()), none opened by
	 * OpenSSL: a FIFO put there must not block the loop. */
	if (tls_use_cert(t, ctx, why, len) == -1 ||
	    tls_use_key(t, ctx, why, len) == -1)
		goto fail;
	if (SSL_CTX_check_private_key(ctx) != 1) {
		tls_queue_why(e, sizeof(e));
		snprintf(why, len, "key %s does not match certificate %s: %s",
		    t->key, t->cert, e);
		goto fail;
	}
	if (t->ca != NULL && tls_use_ca(t, ctx, why, len) == -1)
		goto fail;
	if (t->flags & TLS_VERIFY_PEER) {
		mode = SSL_VERIFY_PEER;
		if (t->flags & TLS_SERVER)
			mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
		SSL_CTX_set_verify(ctx, mode, NULL);
	}
	if ((t->flags & TLS_SERVER) && SSL_CTX_set_session_id_context(ctx,
	    (const unsigned char *)TLS_SESSION_CONTEXT,
	    sizeof(TLS_SESSION_CONTEXT) - 1) != 1)
		goto fail_ctx;
	if (tls_build_sessions(t, ctx) == -1)
		goto fail_ctx;
	return (ctx);

fail_ctx:
	tls_queue_why(e, sizeof(e));
	snprintf(why, len, "cannot set up the context: %s", e);
fail:
	SSL_CTX_free(ctx);
	return (NULL);
}

/* Logs the loaded certificate's lifetime: a warning once expired or close. */
static void
tls_log_expiry(const struct tls *t, const char *verb)
{
	int64_t	 left = tls_expiry_seconds(t);

	if (left <= 0)
		log_warnx("%s: %s certificate %s has expired (%lld s ago)",
		    t->role, verb, t->cert, (long long)-left);
	else if (left < 7 * 86400)
		log_warnx("%s: %s certificate %s, it expires in %lld s",
		    t->role, verb, t->cert, (long long)left);
	else
		log_info("%s: %s certificate %s, it expires in %lld days",
		    t->role, verb, t->cert, (long long)(left / 86400));
}

/* strdup() that passes NULL through. */
static char *
tls_strdup(const char *s)
{
	return (s != NULL ? strdup(s) : NULL);
}

/*
 * Loads the context of role ("agentlink", "http": a static string) from cert,
 * key and ca (ca NULL: none).  flags: TLS_SERVER, TLS_VERIFY_PEER (needs ca).
 * Returns 0, or -1 with the reason logged; tls_clear() frees either way.
 */
int
tls_load(struct tls *t, const char *role, int flags, const char *cert,
    const char *key, const char *ca)
{
	char	 why[1024];

	memset(t, 0, sizeof(*t));
	t->role = role;
	t->flags = flags;
	t->cert = tls_strdup(cert);
	t->key = tls_strdup(key);
	t->ca = tls_strdup(ca);
	if (t->cert == NULL || t->key == NULL || (ca != NULL && t->ca == NULL)) {
		log_warnx("%s: %s: out of memory", __func__, role);
		return (-1);
	}
	if ((flags & TLS_VERIFY_PEER) && ca == NULL) {
		log_warnx("%s: %s: checking the peer needs a CA file", __func__,
		    role);
		return (-1);
	}
	if ((t->ctx = tls_build(t, why, sizeof(why))) == NULL) {
		log_warnx("%s: %s: %s", __func__, role, why);
		return (-1);
	}
	t->not_after = tls_not_after(t->ctx);
	tls_log_expiry(t, "loaded");
	return (0);
}

/*
 * Rebuilds the context from the same files.  On any error the context in use
 * stays and the reason is logged; returns 0 or -1.
 */
int
tls_reload(struct tls *t)
{
	SSL_CTX	*ctx;
	char	 why[1024];

	if (t->ctx == NULL)
		return (0);
	if ((ctx = tls_build(t, why, sizeof(why))) == NULL) {
		log_warnx("%s: %s: keeping the certificate in use: %s",
		    __func__, t->role, why);
		return (-1);
	}
	SSL_CTX_free(t->ctx);
	t->ctx = ctx;
	t->not_after = tls_not_after(ctx);
	/* A client's session holds its old certificate: not offered again. */
	SSL_SESSION_free(t->session);
	t->session = NULL;
	tls_log_expiry(t, "reloaded");
	return (0);
}

/* Frees the context (live connections keep theirs) and the file names. */
void
tls_clear(struct tls *t)
{
	SSL_CTX_free(t->ctx);
	SSL_SESSION_free(t->session);
	free(t->cert);
	free(t->key);
	free(t->ca);
	memset(t, 0, sizeof(*t));
}

/*
 * Returns a new SSL of the current context, NULL (logged) out of memory.  A
 * client's offers the session its last connection was given.
 */
SSL *
tls_ssl_new(struct tls *t)
{
	SSL		*ssl;
	SSL_SESSION	*copy = NULL;
	char		 e[256];

	if ((ssl = SSL_new(t->ctx)) == NULL) {
		tls_queue_why(e, sizeof(e));
		log_warnx("%s: %s: %s", __func__, t->role, e);
		return (NULL);
	}
	if (t->session != NULL && ((copy = SSL_SESSION_dup(t->session)) ==
	    NULL || SSL_set_session(ssl, copy) != 1)) {
		ERR_clear_error();
		SSL_SESSION_free(t->session);
		t->session = NULL;
	}
	SSL_SESSION_free(copy);
	return (ssl);
}

/*
 * A client's side: the peer's certificate must name host, an IP address
 * (checked against its IP SANs) or a DNS name (also sent as SNI).  Returns 0
 * or -1.
 */
int
tls_client_expect(SSL *ssl, const char *host)
{
	X509_VERIFY_PARAM	*p = SSL_get0_param(ssl);
	unsigned char		 addr[16];

	if (inet_pton(AF_INET, host, addr) == 1 ||
	    inet_pton(AF_INET6, host, addr) == 1)
		return (X509_VERIFY_PARAM_set1_ip_asc(p, host) == 1 ? 0 : -1);
	X509_VERIFY_PARAM_set_hostflags(p,
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (SSL_set1_host(ssl, host) != 1 ||
	    SSL_set_tlsext_host_name(ssl, host) != 1)
		return (-1);
	return (0);
}

/*
 * A server's side, after the handshake: returns 1 if the peer's verified
 * certificate names name exactly (a SAN DNS name, else the subject CN; no
 * wildcard, case counts), else 0 with the reason in why.
 */
int
tls_peer_names(SSL *ssl, const char *name, char *why, size_t len)
{
	X509	*x = SSL_get0_peer_certificate(ssl);
	long	 v = SSL_get_verify_result(ssl);
	char	 cn[256], *matched = NULL;
	int	 same;

	if (x == NULL) {
		snprintf(why, len, "no client certificate");
		return (0);
	}
	if (v != X509_V_OK) {
		snprintf(why, len, "client certificate not verified: %s",
		    X509_verify_cert_error_string(v));
		return (0);
	}
	/* A resumed session's certificate was checked when it began. */
	if (SSL_session_reused(ssl) &&
	    X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		snprintf(why, len, "client certificate of the resumed session "
		    "has expired");
		return (0);
	}
	/* DNS names compare without case; node names do not. */
	if (X509_check_host(x, name, strlen(name),
	    X509_CHECK_FLAG_NO_WILDCARDS, &matched) == 1) {
		same = matched != NULL && strcmp(matched, name) == 0;
		OPENSSL_free(matched);
		if (same)
			return (1);
	}
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x),
	    NID_commonName, cn, sizeof(cn)) < 0)
		snprintf(cn, sizeof(cn), "(none)");
	snprintf(why, len, "the client certificate (CN %s) does not name "
	    "node %s", cn, name);
	return (0);
}

/* Returns 1 if OpenSSL error e says the peer's bytes are no TLS at all (a
 * plaintext agent, an HTTP request), else 0. */
static int
tls_not_tls(unsigned long e)
{
	if (ERR_GET_LIB(e) != ERR_LIB_SSL)
		return (0);
	switch (ERR_GET_REASON(e)) {
	case SSL_R_WRONG_VERSION_NUMBER:
	case SSL_R_HTTP_REQUEST:
	case SSL_R_HTTPS_PROXY_REQUEST:
	case SSL_R_PACKET_LENGTH_TOO_LONG:
	case SSL_R_RECORD_LENGTH_MISMATCH:
	case SSL_R_UNKNOWN_PROTOCOL:
		return (1);
	}
	return (0);
}

/*
 * Says why the TLS stream of an OpenSSL bufferevent failed: its OpenSSL error
 * (libevent queues SSL_get_error()'s code beside it: skipped) and the check of
 * the peer's certificate.  Empties the bufferevent's errors.  Returns 1, or 0
 * if there was nothing to say.
 */
int
tls_bev_error(struct bufferevent *bev, char *buf, size_t len)
{
	SSL		*ssl = bufferevent_openssl_get_ssl(bev);
	unsigned long	 err, best = 0;
	const char	*r;
	char		 e[256];
	long		 v;

	while ((err = bufferevent_get_openssl_error(bev)) != 0)
		if (best == 0 || ERR_GET_LIB(best) == 0)
			best = err;
	e[0] = '\0';
	if (best != 0 && tls_not_tls(best)) {
		/* Bytes that are no TLS record: say what that means. */
		snprintf(e, sizeof(e), "%s (%s)", ssl != NULL &&
		    SSL_is_server(ssl) ? "a plaintext peer on the TLS port: its "
		    "first bytes are no TLS record" : "the peer answered in "
		    "plaintext, not TLS", ERR_reason_error_string(best));
	} else if (best != 0 && ERR_GET_LIB(best) != 0) {
		if ((r = ERR_reason_error_string(best)) != NULL)
			snprintf(e, sizeof(e), "%s", r);
		else
			ERR_error_string_n(best, e, sizeof(e));
	} else if (best == SSL_ERROR_SYSCALL)
		snprintf(e, sizeof(e), "the peer closed or reset the connection");
	else if (best != 0)
		snprintf(e, sizeof(e), "TLS error %lu", best);
	v = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
	if (v != X509_V_OK)
		snprintf(buf, len, "%s%speer certificate: %s", e,
		    e[0] != '\0' ? ": " : "", X509_verify_cert_error_string(v));
	else if (e[0] != '\0')
		snprintf(buf, len, "%s", e);
	else
		return (0);
	return (1);
}

/* Returns the seconds until the certificate expires (negative: past). */
int64_t
tls_expiry_seconds(const struct tls *t)
{
	return (t->not_after - (int64_t)time(NULL));
}

/*
 * A server's session ticket keys, kept in the file path (mode 0600, made with
 * random keys if missing) so that the tickets given before a restart resume
 * after it; they stay across reloads.  Anyone who reads them can forge a
 * session, so a file others may read, or of another size, is refused.
 * Returns 0, or -1 with the reason logged.
 */
int
tls_ticket_keys(struct tls *t, const char *path)
{
	unsigned char	 k[TLS_TICKET_KEYS_LEN];
	struct stat	 st;
	char		 tmp[PATH_MAX], *data;
	const char	*why;
	size_t		 len;
	int		 fd, made = 0;

	/* Read by file_read(): a FIFO there must not hold the start. */
	if ((data = file_read(path, FILE_NOFOLLOW, sizeof(k), &len, &st,
	    &why)) == NULL && errno == ENOENT) {
		if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >=
		    sizeof(tmp) || getrandom(k, sizeof(k), 0) != sizeof(k))
			goto fail;
		unlink(tmp);
		if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC, 0600)) == -1)
			goto fail;
		if (write(fd, k, sizeof(k)) != sizeof(k) || fsync(fd) == -1) {
			close(fd);
			unlink(tmp);
			goto fail;
		}
		if (close(fd) == -1 || rename(tmp, path) == -1) {
			unlink(tmp);
			goto fail;
		}
		made = 1;
	} else if (data == NULL && errno != EINVAL && errno != EFBIG) {
		log_warnx("%s: %s: %s: %s", __func__, t->role, path, why);
		return (-1);
	} else {
		if (data != NULL)
			memcpy(k, data, len);
		file_free(data, len);
		if (data == NULL || len != sizeof(k) ||
		    (st.st_mode & 077) != 0 || st.st_uid != geteuid()) {
			log_warnx("%s: %s: %s: not a file of %zu bytes of this "
			    "user, mode 0600 (remove it: a new one is made)%s%s",
			    __func__, t->role, path, sizeof(k),
			    data == NULL ? ": " : "", data == NULL ? why : "");
			explicit_bzero(k, sizeof(k));
			return (-1);
		}
	}
	memcpy(t->ticket_keys, k, sizeof(k));
	explicit_bzero(k, sizeof(k));
	t->has_ticket_keys = 1;
	if (t->ctx != NULL && tls_use_ticket_keys(t, t->ctx) == -1) {
		ERR_clear_error();
		log_warnx("%s: %s: OpenSSL refused the ticket keys", __func__,
		    t->role);
		return (-1);
	}
	log_info("%s: session tickets resume across restarts: keys %s %s",
	    t->role, made ? "made in" : "read from", path);
	return (0);

fail:
	log_warn("%s: %s: %s", __func__, t->role, path);
	explicit_bzero(k, sizeof(k));
	return (-1);
}

/*
 * Counts a finished handshake of t's, and whether it resumed a session.
 * Returns 1 if it did, else 0.
 */
int
tls_handshake_done(struct tls *t, SSL *ssl)
{
	t->handshakes++;
	if (!SSL_session_reused(ssl))
		return (0);
	t->resumed++;
	return (1);
}
