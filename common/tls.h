/*
 * TLS for the daemons: an OpenSSL context built from a certificate, its key and
 * a CA file, rebuilt on SIGHUP.  A reload that fails keeps the context in use;
 * connections made after a good reload use the new one, those made before keep
 * theirs (SSL_CTX is reference counted, each SSL holds its own).
 */

#ifndef DYNPROF_TLS_H
#define DYNPROF_TLS_H

#include <stdint.h>

struct bufferevent;
struct ssl_st;
struct ssl_ctx_st;
struct ssl_session_st;

/* tls_load() flags. */
#define TLS_SERVER		0x1	/* accepts; else connects */
#define TLS_VERIFY_PEER		0x2	/* the peer must show a certificate of ca */

/* OpenSSL's session ticket keys: a name, an HMAC key and an AES key. */
#define TLS_TICKET_KEYS_LEN	80

struct tls {
	struct ssl_ctx_st	*ctx;
	const char		*role;		/* "agentlink", "http": logs, metrics */
	int			 flags;
	char			*cert;		/* the files, reread on reload */
	char			*key;
	char			*ca;		/* NULL: no peer certificate asked */
	int64_t			 not_after;	/* the certificate's, Unix seconds */
	/* Session resumption (tls_ticket_keys(), tls_handshake_done()). */
	int			 has_ticket_keys;	/* a server's, kept */
	unsigned char		 ticket_keys[TLS_TICKET_KEYS_LEN];
	struct ssl_session_st	*session;	/* a client's last, offered */
	uint64_t		 handshakes;	/* done on this side */
	uint64_t		 resumed;	/* of those, a session resumed */
};

/* tls.c */
int		 tls_load(struct tls *, const char *, int, const char *,
		    const char *, const char *);
int		 tls_reload(struct tls *);
void		 tls_clear(struct tls *);
struct ssl_st	*tls_ssl_new(struct tls *);
int		 tls_client_expect(struct ssl_st *, const char *);
int		 tls_peer_names(struct ssl_st *, const char *, char *, size_t);
int		 tls_bev_error(struct bufferevent *, char *, size_t);
int64_t		 tls_expiry_seconds(const struct tls *);
int		 tls_ticket_keys(struct tls *, const char *);
int		 tls_handshake_done(struct tls *, struct ssl_st *);

#endif /* DYNPROF_TLS_H */
