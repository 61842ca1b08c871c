/*
 * Test helpers for the agent: a fake coordinator (a blocking AgentLink peer on
 * 127.0.0.1 that the test drives message by message) and a runner for the real
 * dynprof-agent binary in a private temporary directory.
 */

#ifndef DYNPROF_FAKECOORD_H
#define DYNPROF_FAKECOORD_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "dynprof.pb-c.h"

struct fakecoord {
	int		 lfd;		/* listening */
	int		 fd;		/* the agent's stream, -1 if none */
	int		 port;
	uint8_t		*buf;		/* bytes read, not yet decoded */
	size_t		 len;
	size_t		 cap;
};

int	 fc_listen(struct fakecoord *);
int	 fc_accept(struct fakecoord *, int);
void	 fc_drop(struct fakecoord *);
void	 fc_close(struct fakecoord *);
Dynprof__V1__AgentMessage *fc_recv(struct fakecoord *, int);
Dynprof__V1__AgentMessage *fc_expect(struct fakecoord *, int, int);
int	 fc_send(struct fakecoord *, const Dynprof__V1__CoordinatorMessage *);
int	 fc_send_raw(struct fakecoord *, const void *, size_t);
int	 fc_welcome(struct fakecoord *, uint32_t, uint64_t, uint64_t);
int	 fc_push(struct fakecoord *, const char *, uint64_t, uint32_t, int64_t,
	    int64_t);
int	 fc_closed(struct fakecoord *, int);

/* A dynprof-agent started by a test, with everything under one mkdtemp dir. */
#define AP_MAX_CHILDREN	32
struct agentproc {
	pid_t		 pid;
	char		 dir[256];
	char		 sock[320];
	char		 shm[320];
	char		 log[320];
	char		 ready[320];
	pid_t		 children[AP_MAX_CHILDREN];	/* killed at cleanup */
	int		 nchildren;
};

int64_t	 ap_now_ms(void);
int	 ap_setup(struct agentproc *);
int	 ap_start(struct agentproc *, const char *const *);
int	 ap_start_connected(struct agentproc *, struct fakecoord *, const char *,
	    int);
int	 ap_stop(struct agentproc *, int, int);
int	 ap_kill_child(struct agentproc *, pid_t, int, int);
int	 ap_log_count(struct agentproc *, const char *);
int	 ap_log_wait(struct agentproc *, const char *, int, int);
int	 ap_log_times(struct agentproc *, const char *, int64_t *, int);
void	 ap_cleanup(struct agentproc *);
pid_t	 ap_spawn(struct agentproc *, const char *const *);
const char *ap_build_dir(void);
int	 ap_send_dgram(struct agentproc *, const void *, size_t);
int	 ap_send_event(struct agentproc *, const Dynprof__V1__RankEvent *);

#endif /* DYNPROF_FAKECOORD_H */
