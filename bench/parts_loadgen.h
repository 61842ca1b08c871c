/*
 * dynprof-loadgen's parts (loadgen_conn.c, loadgen_fanout.c,
 * loadgen_failover.c, loadgen_progress.c, loadgen_tls.c) share this: the run
 * and its connections, and each part's entry points.  loadgen.c, at the top,
 * wires them: a part hands up what it must through lg->hooks, never calling
 * into loadgen.c.
 */

#ifndef DYNPROF_BENCH_PARTS_LOADGEN_H
#define DYNPROF_BENCH_PARTS_LOADGEN_H

#include <sys/types.h>

#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>
#include <openssl/ssl.h>

#include "dynprof.pb-c.h"
#include "failover.h"
#include "loadgen_http.h"

/* dynprof-loadgen: the heartbeat timer's slice (see loadgen_conn.c). */
#define LOADGEN_HB_TICK_MS	10
/* --mode failover: coordinators in --coordinator (whom each connection
 * dials next is common/failover.c's, as for agents), and how long the
 * failover may take. */
#define LOADGEN_COORDS_MAX	FAILOVER_ADDRS_MAX
#define LOADGEN_FAILOVER_MAX_S	120
/* --ranks: the ranks of one job a node holds (SEG_MAX_SLOTS). */
#define LOADGEN_RANKS_MAX	256
/* --mode progress: every connection's report, as often as an agent samples
 * its segment (the agent's default sample_ms), and the longest run. */
#define LOADGEN_PROGRESS_MS	500
#define LOADGEN_PROGRESS_MAX_S	600

struct event;
struct bufferevent;
struct evbuffer;

enum loadgen_conn_state {
	LOADGEN_CONNECTING,
	LOADGEN_HELLO_SENT,
	LOADGEN_READY,
	LOADGEN_DEAD,
};

enum loadgen_phase {
	LOADGEN_PHASE_CONNECT,
	LOADGEN_PHASE_FANOUT,
	LOADGEN_PHASE_EVENTS,
	LOADGEN_PHASE_FAILOVER,
	LOADGEN_PHASE_PROGRESS,
	LOADGEN_PHASE_DONE,
};

struct loadgen;
struct loadgen_conn;

/*
 * What the parts hand up, set by loadgen.c (no part calls into it): the end
 * of the run, its next phase, and what a connection tells --mode failover
 * (loadgen_failover.c).
 */
struct loadgen_hooks {
	/* Ends the run as failed, saying why. */
	void	(*fail)(struct loadgen *, const char *);
	/* Opens connections up to --concurrency; all ready: the next phase. */
	void	(*connect_more)(struct loadgen *);
	/* The events phase: its start, then (every event acknowledged) its
	 * status check. */
	void	(*events_start)(struct loadgen *);
	/* Prints the figures and ends the run. */
	void	(*finish)(struct loadgen *);
	/* A connection ended: 1 if the failover dials again, else 0. */
	int	(*lost)(struct loadgen_conn *);
	/* A hello about to go: the leader the connection lost. */
	void	(*hello)(struct loadgen_conn *, Dynprof__V1__Hello *);
	/* An Error frame (code, the leader it names). */
	void	(*error)(struct loadgen_conn *, int, const char *);
	/* A Welcome during the failover. */
	void	(*welcome)(struct loadgen_conn *, const Dynprof__V1__Welcome *);
	/* Events up to seq acknowledged during the failover. */
	void	(*acked)(struct loadgen_conn *, uint64_t);
};

struct loadgen_conn {
	struct loadgen		*lg;
	struct bufferevent	*bev;
	int			 idx;
	enum loadgen_conn_state	 state;
	uint64_t		 boot_id;
	uint64_t		 gen;		/* newest JobConfig generation */
	int			 trial;		/* the trial that saw gen first */
	uint64_t		 sent;		/* events sent: seq 1..sent */
	uint64_t		 acked;
	int64_t			 t_acked;	/* when its last event was acked */
	X509			*cert;		/* --tls-dir: its certificate */
	EVP_PKEY		*key;
	SSL_SESSION		*session;	/* --tls-sessions: offered */
	/* --mode failover */
	struct failover		 fo;		/* whom it dials (fo.cur), when */
	int			 back;		/* welcomed since the kill */
	int			 replayed;	/* every event acked since */
	struct event		*retry;
};

struct loadgen {
	const struct loadgen_hooks *hooks;	/* set by loadgen.c */
	struct event_base	*base;
	struct loadgen_http	*http;
	struct sockaddr_in	 coords[LOADGEN_COORDS_MAX];
	struct failover_addr	 coord_addrs[LOADGEN_COORDS_MAX];
	int			 ncoords;
	const char		*job;
	const char		*prefix;
	const char		*token;
	const char		*tls_dir;	/* NULL: plaintext */
	SSL_CTX			*tls_ctx;	/* checks the coordinator's */
	const char		*tls_sessions;	/* NULL: full handshakes */
	int			 resumed;	/* handshakes that resumed */
	int			 n;
	int			 nsrc;
	int			 changes;
	int			 events_per;	/* per connection, even */
	int			 ranks_per;	/* ranks per connection */
	int			 inflight;
	int			 concurrency;
	int			 do_fanout;
	int			 do_events;
	pid_t			 coord_pid;
	/* --store-pids: the store's processes (etcd's members), their CPU
	 * summed at the same moments as the coordinator's. */
	pid_t			 store_pids[LOADGEN_STORE_PIDS_MAX];
	int			 nstore_pids;
	double			 store_before;	/* CPU seconds, summed */
	double			 store_fanout;
	double			 store_events;
	struct loadgen_conn	*conns;
	int			 next_connect;
	int			 connecting;
	int			 ready;
	int			 dead;
	int			 errors_shown;
	int			 failed;
	enum loadgen_phase	 phase;
	struct event		*hb_ev;
	struct event		*trial_timer;
	struct evbuffer		*scratch;	/* one frame, to send directly */
	unsigned		 hb_ms;
	int			 hb_next;
	int64_t			 hb_last;
	double			 hb_credit;
	int64_t			 t_start;
	double			 connect_s;
	char			 uri[256];

	/* fanout */
	int			 trial;		/* -1: warm-up */
	uint64_t		 base_gen;
	int			 recv_count;
	int64_t			 t0;
	int64_t			 t_all;
	int64_t			 t_resp;
	uint64_t		 resp_gen;
	int			 resp_done;
	int			 applied_ok;	/* the metrics count applied pushes */
	uint64_t		 applied_base;	/* that count before the change */
	int			 status_applied; /* nodes the status shows at the
						    last generation */
	double			*fan_ms;
	double			*resp_ms;
	double			*applied_ms;
	int			 napplied;
	struct loadgen_proc	 proc_before;
	struct loadgen_proc	 proc_fanout;
	struct loadgen_proc	 self_before;	/* the loadgen's own CPU */
	struct loadgen_proc	 self_fanout;
	struct loadgen_proc	 self_events;

	/* failover */
	int			 do_failover;
	pid_t			 kill_pid;
	int64_t			 fo_t0;		/* the kill */
	int64_t			 fo_t_first;	/* first welcome after it */
	int64_t			 fo_t_back;	/* the last welcome */
	int			 fo_back;	/* connections welcomed again */
	int			 fo_replayed;	/* with every event acked */
	int			 fo_refused;	/* ERROR_NOT_LEADER answers */
	uint64_t		 fo_acked;	/* events acked before the kill */
	uint64_t		 fo_resent;	/* events sent again after it */
	int			 fo_killed;
	struct event		*fo_timer;

	/* events */
	int64_t			 ev_t0;
	int64_t			 ev_t_acked;
	int64_t			 ev_t_status;
	int			 conns_acked;
	uint64_t		 ack_msgs;
	int			 status_polls;
	struct loadgen_proc	 proc_events;

	/* --mode progress */
	int			 do_progress;
	int			 progress_s;	/* how long the ranks step */
	int			 progress_still;	/* % of connections whose
						 * ranks stay at step 1 */
	int64_t			 step;		/* every rank's, this report */
	uint64_t		 progress_msgs;
	int64_t			 pr_t0;		/* CPU read then: *_before */
	struct event		*pr_ev;
};

/* loadgen_conn.c */
int	 loadgen_conn_open(struct loadgen *, struct loadgen_conn *);
void	 loadgen_events_pump(struct loadgen_conn *);
void	 loadgen_heartbeat_cb(evutil_socket_t, short, void *);
int	 loadgen_send(struct loadgen_conn *, Dynprof__V1__AgentMessage *);

/* loadgen_progress.c */
void	 loadgen_progress_start(struct loadgen *);
void	 loadgen_progress_report(const struct loadgen *);
void	 loadgen_progress_free(struct loadgen *);

/* loadgen_fanout.c */
void	 loadgen_fanout_trial(struct loadgen *);
void	 loadgen_fanout_check(struct loadgen *);
void	 loadgen_trial_timeout_cb(evutil_socket_t, short, void *);

/* loadgen_failover.c */
int	 loadgen_parse_coords(struct loadgen *, const char *);
void	 loadgen_failover_start(struct loadgen *);
int	 loadgen_failover_lost(struct loadgen_conn *);
void	 loadgen_failover_error(struct loadgen_conn *, int, const char *);
void	 loadgen_failover_welcome(struct loadgen_conn *,
	    const Dynprof__V1__Welcome *);
void	 loadgen_failover_acked(struct loadgen_conn *, uint64_t);
void	 loadgen_failover_hello(struct loadgen_conn *, Dynprof__V1__Hello *);
void	 loadgen_failover_free(struct loadgen *);

/* loadgen_tls.c */
int	 loadgen_tls_load(struct loadgen *);
int	 loadgen_sessions_write(struct loadgen *);

#endif /* DYNPROF_BENCH_PARTS_LOADGEN_H */
