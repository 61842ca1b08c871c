/*
 * A fake agent for the coordinator's tests and benchmark: speaks the real
 * AgentLink protocol (common/frame.h framing, protobuf-c messages) over a
 * blocking TCP socket, one call per message, with bounded waits.
 */

#ifndef DYNPROF_FAKEAGENT_H
#define DYNPROF_FAKEAGENT_H

#include <stddef.h>
#include <stdint.h>

#include "dynprof.pb-c.h"

struct evbuffer;

struct fakeagent {
	int		 fd;
	struct evbuffer	*in;		/* bytes received, not yet decoded */
	struct evbuffer	*cork;		/* fa_cork(): frames held until fa_flush() */
	int		 eof;
	uint64_t	 boot_id;
	uint64_t	 next_seq;
};

typedef Dynprof__V1__CoordinatorMessage fa_msg;

#define FA_PROGRESS_MAX	256	/* ranks in one Progress: SEG_MAX_SLOTS */

/* fakeagent.c */
int	 fa_connect(struct fakeagent *, int);
void	 fa_close(struct fakeagent *);
int	 fa_send(struct fakeagent *, const Dynprof__V1__AgentMessage *);
int	 fa_send_raw(struct fakeagent *, const void *, size_t);
int	 fa_cork(struct fakeagent *);
int	 fa_flush(struct fakeagent *);
int	 fa_hello(struct fakeagent *, const char *, const char *, uint32_t,
	    const char *, uint64_t);
fa_msg	*fa_recv(struct fakeagent *, int);
fa_msg	*fa_recv_type(struct fakeagent *, int, int);
int	 fa_handshake(struct fakeagent *, int, const char *, const char *);
int	 fa_subscribe(struct fakeagent *, const char *, uint64_t);
int	 fa_expect_empty(struct fakeagent *, const char *, int);
int	 fa_applied(struct fakeagent *, const char *, uint64_t);
int	 fa_heartbeat(struct fakeagent *);
void	 fa_rank_event(Dynprof__V1__RankEvent *, int, const char *, int32_t,
	    uint32_t, int64_t);
int	 fa_event(struct fakeagent *, uint64_t, int, const char *, int32_t,
	    uint32_t, int64_t, const char *);
int	 fa_attach_labels(struct fakeagent *, const char *, int32_t,
	    const char *);
int	 fa_event_text(struct fakeagent *, uint64_t, int, const char *, int32_t,
	    const char *, const char *);
int	 fa_progress(struct fakeagent *, const char *, int32_t, int64_t,
	    int64_t, int);
int	 fa_progress_steps(struct fakeagent *, const char *, int32_t,
	    const int64_t *, int);
int	 fa_progress_busy(struct fakeagent *, const char *, int32_t,
	    const int64_t *, const uint32_t *, int);
#define FA_ARRIVE_MAX		32		/* arrivals a rank, a Progress */
#define FA_ARRIVE_STEP_US	30000		/* between two steps */
int	 fa_progress_arrive(struct fakeagent *, const char *, int32_t,
	    const int64_t *, const uint32_t *, int, int64_t, int,
	    const int64_t *);
int	 fa_wait_ack(struct fakeagent *, uint64_t, int);
int	 fa_collected(struct fakeagent *, const char *, int32_t, uint32_t,
	    uint64_t, const char *, const char *, int);
int	 fa_wait_closed(struct fakeagent *, int);
void	 fa_free(fa_msg *);
int	 fa_join(struct fakeagent *, int, const char *, const char *,
	    const char *);
int	 fa_event_commit(struct fakeagent *, int, const char *, int32_t,
	    uint32_t, int64_t, int);

#endif /* DYNPROF_FAKEAGENT_H */
