/*
 * Presigned GET URLs of traces in an S3-compatible store (presign.c).
 */

#ifndef DYNPROF_PRESIGN_H
#define DYNPROF_PRESIGN_H

#include <stdint.h>
#include <time.h>

#define PRESIGN_TTL_S	900	/* --presign-ttl default */

/* Where and as whom to sign; on == 0: no --s3-endpoint, nothing signed. */
struct presign {
	int		 on;
	char		 endpoint[512];	/* scheme://host[:port] */
	char		 host[300];	/* the Host header it gets */
	char		 region[64];
	char		 key[300];	/* the access key, encoded */
	char		 secret[300];	/* "AWS4" and the secret key */
	char		 token[3000];	/* the session token, encoded; "" none */
	uint32_t	 ttl_s;
};

int	 presign_open(struct presign *, const char *, const char *, uint32_t,
	    char *, size_t);
int	 presign_url(const struct presign *, const char *, time_t, char *,
	    size_t);

#endif /* DYNPROF_PRESIGN_H */
