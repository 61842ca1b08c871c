/*
 * dynprof-loadgen with --tls-dir: the client context, a key and certificate
 * issued to each connection by the CA before the clock starts, and with
 * --tls-sessions the sessions read before the run and written after it.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent_ssl.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "parts_loadgen.h"


/* Adds extension nid (value as openssl.cnf writes it) to x. */
static int
loadgen_tls_ext(X509 *x, X509 *ca, int nid, const char *value)
{
	X509V3_CTX	 v3;
	X509_EXTENSION	*ext;
	int		 rc;

	X509V3_set_ctx(&v3, ca, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value)) == NULL)
		return (-1);
	rc = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return (rc == 1 ? 0 : -1);
}

/* Issues connection c's key and certificate (node PREFIX-I), signed by ca. */
static int
loadgen_tls_issue(struct loadgen_conn *c, X509 *ca, EVP_PKEY *cakey)
{
	char	 node[128], san[160];
	X509	*x;

	snprintf(node, sizeof(node), "%s-%d", c->lg->prefix, c->idx);
	snprintf(san, sizeof(san), "DNS:%s", node);
	if ((c->key = EVP_EC_gen("P-256")) == NULL ||
	    (c->cert = x = X509_new()) == NULL)
		return (-1);
	if (X509_set_version(x, 2) != 1 ||
	    ASN1_INTEGER_set(X509_get_serialNumber(x), c->idx + 1) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 86400) == NULL ||
	    X509_set_pubkey(x, c->key) != 1 ||
	    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN",
	    MBSTRING_ASC, (const unsigned char *)node, -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
	    loadgen_tls_ext(x, ca, NID_subject_alt_name, san) == -1 ||
	    loadgen_tls_ext(x, ca, NID_ext_key_usage, "clientAuth") == -1 ||
	    X509_sign(x, cakey, EVP_sha256()) == 0)
		return (-1);
	return (0);
}

/* The value of hex digit ch, -1 if it is none. */
static int
loadgen_hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	if (ch >= 'a' && ch <= 'f')
		return (ch - 'a' + 10);
	return (-1);
}

/*
 * --tls-sessions: each line "INDEX HEX" is connection INDEX's session, DER in
 * hex.  Reads the file if there is one.  Returns 0 or -1.
 */
static int
loadgen_sessions_read(struct loadgen *lg)
{
	FILE			*f;
	unsigned char		*der = NULL;
	const unsigned char	*p;
	char			*line = NULL, *hex;
	size_t			 cap = 0, len;
	long			 idx;
	int			 hi, lo, rc = 0;

	if ((f = fopen(lg->tls_sessions, "r")) == NULL)
		return (errno == ENOENT ? 0 : -1);
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		idx = strtol(line, &hex, 10);
		if (idx < 0 || idx >= lg->n || *hex++ != ' ' ||
		    (der = malloc(strlen(hex) / 2 + 1)) == NULL) {
			rc = -1;
			break;
		}
		for (len = 0; (hi = loadgen_hexval(hex[0])) != -1 &&
		    (lo = loadgen_hexval(hex[1])) != -1; hex += 2)
			der[len++] = (unsigned char)(hi << 4 | lo);
		p = der;
		SSL_SESSION_free(lg->conns[idx].session);
		if ((lg->conns[idx].session = d2i_SSL_SESSION(NULL, &p,
		    (long)len)) == NULL)
			rc = -1;
		free(der);
	}
	free(line);
	fclose(f);
	return (rc);
}

/* Writes the session each live TLS connection holds.  Returns 0 or -1. */
int
loadgen_sessions_write(struct loadgen *lg)
{
	FILE		*f;
	SSL_SESSION	*sess;
	unsigned char	*der, *p;
	int		 i, j, len;

	if ((f = fopen(lg->tls_sessions, "w")) == NULL)
		return (-1);
	for (i = 0; i < lg->n; i++) {
		if (lg->conns[i].bev == NULL || (sess = SSL_get1_session(
		    bufferevent_openssl_get_ssl(lg->conns[i].bev))) == NULL)
			continue;
		if ((len = i2d_SSL_SESSION(sess, NULL)) > 0 &&
		    (der = malloc((size_t)len)) != NULL) {
			p = der;
			i2d_SSL_SESSION(sess, &p);
			fprintf(f, "%d ", i);
			for (j = 0; j < len; j++)
				fprintf(f, "%02x", der[j]);
			fputc('\n', f);
			free(der);
		}
		SSL_SESSION_free(sess);
	}
	return (fclose(f) == 0 ? 0 : -1);
}

/* The client context and every connection's certificate, before the clock. */
int
loadgen_tls_load(struct loadgen *lg)
{
	char		 path[PATH_MAX];
	FILE		*f;
	X509		*ca = NULL;
	EVP_PKEY	*cakey = NULL;
	int		 i, rc = -1;

	snprintf(path, sizeof(path), "%s/ca.crt", lg->tls_dir);
	if ((f = fopen(path, "r")) != NULL) {
		ca = PEM_read_X509(f, NULL, NULL, NULL);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/ca.key", lg->tls_dir);
	if ((f = fopen(path, "r")) != NULL) {
		cakey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
		fclose(f);
	}
	if (ca == NULL || cakey == NULL) {
		fprintf(stderr, "loadgen: %s: no ca.crt and ca.key\n",
		    lg->tls_dir);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/ca.crt", lg->tls_dir);
	if ((lg->tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(lg->tls_ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_load_verify_locations(lg->tls_ctx, path, NULL) != 1)
		goto out;
	SSL_CTX_set_verify(lg->tls_ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(lg->tls_ctx, SSL_MODE_RELEASE_BUFFERS);
	for (i = 0; i < lg->n; i++)
		if (loadgen_tls_issue(&lg->conns[i], ca, cakey) == -1) {
			fprintf(stderr, "loadgen: cannot issue certificate %d\n",
			    i);
			goto out;
		}
	if (lg->tls_sessions != NULL && loadgen_sessions_read(lg) == -1) {
		fprintf(stderr, "loadgen: %s: cannot read the sessions\n",
		    lg->tls_sessions);
		goto out;
	}
	rc = 0;
out:
	X509_free(ca);
	EVP_PKEY_free(cakey);
	return (rc);
}
