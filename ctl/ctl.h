/*
 * dynprofctl: the operator's command line over the coordinator's admin API
 * (docs/admin-api.md), plus `local`, which reads this node's segment directly.
 */

#ifndef DYNPROF_CTL_H
#define DYNPROF_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "jobid.h"

/* Exit codes, said in --help. */
#define CTL_EXIT_OK		0
#define CTL_EXIT_REFUSED	1	/* refused by the coordinator, bad usage,
					   a redirect not followed */
#define CTL_EXIT_UNREACHABLE	2	/* cannot reach the coordinator */
#define CTL_EXIT_TIMEOUT	3	/* --wait --timeout, or no answer in time */
#define CTL_USAGE		-1	/* a command's bad arguments: main prints
					   its usage and exits 1 */

#define CTL_DEFAULT_URL		"http://127.0.0.1:7879"
#define CTL_HTTP_TIMEOUT_MS	10000	/* one request, connect to last byte */
#define CTL_BODY_MAX		(64 * 1024 * 1024)
#define CTL_FILE_MAX		(16 * 1024 * 1024)
#define CTL_URLS_MAX		8	/* coordinators in --coordinator */
#define CTL_REDIRECTS_MAX	4	/* 307/308 hops of one request */
/* With several coordinators listed, one that cannot be reached or does not
 * answer is passed over for the next: */
#define CTL_CONNECT_MS		2000	/* a connection to one of them */
#define CTL_ANSWER_MS		2500	/* the headers of a GET's answer */
#define CTL_BACKOFF_MS		100	/* between rounds while a redirect's */
#define CTL_BACKOFF_MAX_MS	1000	/* target (the old leader) is gone */

/* A coordinator's address, from --coordinator or DYNPROF_COORDINATOR. */
struct ctl_url {
	int	 https;
	char	 host[256];
	char	 port[8];
	char	 base[512];		/* path prefix without the trailing '/' */
};

/*
 * How to reach the coordinators: the first URL is asked, the others when it
 * cannot be reached; a 307/308 redirect is followed only to one of them.
 */
struct ctl_conn {
	struct ctl_url	 urls[CTL_URLS_MAX];
	size_t		 nurls;
	char		*token;		/* NULL: none */
	const char	*cacert;	/* NULL: the system's CAs */
	const char	*cert;		/* client certificate, NULL: none */
	const char	*key;		/* its key, NULL: in cert */
};

/*
 * Where the body of a 2xx answer goes as it arrives (a command that streams);
 * returns 0, or -1 to stop the transfer.
 */
typedef int	(*ctl_sink_fn)(void *, const char *, size_t);

/* What every command gets: the global flags. */
struct ctl {
	const char	*url;		/* as the user gave it, for messages */
	struct ctl_conn	 conn;
	int		 json;		/* --json: print the coordinator's JSON */
	int		 timeout_ms;	/* one HTTP request */
	int		 tty;		/* stdout is a terminal */
	int		 quiet;		/* ctl_call: no message when unreachable */
	int		 line_open;	/* a progress line waits for its newline */
	FILE		*out;
	FILE		*err;
};

/* An HTTP answer: the body is NUL-terminated, caller frees with ctl_http_free. */
struct ctl_response {
	int	 status;
	char	*body;
	size_t	 len;
};

/* ctl_call.c */
#define CTL_PAGE_LIMIT		10000	/* ranks asked for in one page */
void	 ctl_errx(struct ctl *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 ctl_parse_int64(const char *, int64_t, int64_t, int64_t *);
int	 ctl_call(struct ctl *, const char *, const char *, const char *,
	    size_t, json_t **, struct ctl_response *);
void	 ctl_print_raw(struct ctl *, const struct ctl_response *);
int	 ctl_get(struct ctl *, const char *, json_t **);
int	 ctl_check_job(struct ctl *, const char *);
int	 ctl_ranks_pages(struct ctl *, const char *, const char *,
	    int (*)(void *, json_t *), void *);

/* ctl_status.c */
int	 ctl_status_show(struct ctl *, const char *, uint64_t *);

/* ctl_cmd.c */
int	 ctl_cmd_jobs(struct ctl *, int, char **);
int	 ctl_cmd_nodes(struct ctl *, int, char **);
int	 ctl_cmd_status(struct ctl *, int, char **);
int	 ctl_cmd_config(struct ctl *, int, char **);
int	 ctl_cmd_cancel(struct ctl *, int, char **);
int	 ctl_cmd_forget(struct ctl *, int, char **);

/* ctl_compare.c */
int	 ctl_cmd_compare(struct ctl *, int, char **);

/* ctl_fetch.c */
int	 ctl_cmd_fetch(struct ctl *, int, char **);

/* ctl_unpack.c */
/* Unpacks DIR's checked archive (a name in dirfd) into DIR/rank-N/; the
 * files unpacked in *files.  0, or -1 with why. */
int	 ctl_unpack_rank(struct ctl *, int, const char *, const char *,
	    long long, int, size_t *, char *, size_t);

/* ctl_check.c */
int	 ctl_check_distance(const char *, const char *);
void	 ctl_check_jobs_hint(json_t *, const char *, char *, size_t);
void	 ctl_check_missing_job(struct ctl *, const char *);

/* ctl_rule.c */
int	 ctl_cmd_rule(struct ctl *, int, char **);
int	 ctl_cmd_stragglers(struct ctl *, int, char **);
int	 ctl_cmd_collect(struct ctl *, int, char **);
int	 ctl_cmd_trace_store(struct ctl *, int, char **);

/* ctl_http.c */
int64_t	 ctl_now_ms(void);
int	 ctl_url_parse(const char *, struct ctl_url *, const char **);
int	 ctl_urls_parse(const char *, struct ctl_conn *, const char **);
int	 ctl_http_request(const struct ctl_conn *, const char *, const char *,
	    const char *, size_t, int, ctl_sink_fn, void *,
	    struct ctl_response *, char *, size_t);
void	 ctl_http_free(struct ctl_response *);

/* ctl_trace.c */
struct ctl_trace_args {
	const char	*job;
	int		 have_start, have_in, have_steps, have_stop;
	int		 have_roundup;
	int64_t		 start, in, steps, stop, roundup;
	const char	*ranks;
	const char	*named[3];	/* --select, --nodes, --one-per */
	int		 have_group;	/* --group-of RANK:KEY */
	int64_t		 group_rank;
	const char	*group_vary;
	const char	*output_subdir;
	json_t		*options;	/* owned */
	int		 wait;
	int		 new;		/* --new: a job not started yet */
	int		 force;		/* --force: no checks */
	int		 no_collect;	/* --no-collect */
	int		 have_timeout;
	double		 timeout;	/* seconds */
	const char	*at;		/* --at: a time window's start */
	int		 have_for, have_tolerance;
	int64_t		 for_ms;	/* --for (--duration) */
	int64_t		 tolerance_ms;	/* --tolerance */
};
int	 ctl_option_parse(json_t *, const char *, char *, size_t);
int	 ctl_trace_parse(int, char **, struct ctl_trace_args *, char *,
	    size_t);
void	 ctl_trace_args_free(struct ctl_trace_args *);
json_t	*ctl_trace_body(const struct ctl_trace_args *);
int	 ctl_cmd_trace(struct ctl *, int, char **);
int	 ctl_check_trace(struct ctl *, const struct ctl_trace_args *);
void	 ctl_check_new_job(struct ctl *, const struct ctl_trace_args *,
	    json_t *);

/* How the targeted ranks of one window are doing. */
struct ctl_progress {
	int	 targeted;
	int	 started;
	int	 stopped;
	int	 skipped;
	int	 failed;
	int	 observed;	/* a legacy job's: its trace seen begun */
	int	 observed_complete; /* and complete, which ends the window */
	int	 gone;		/* gone before finishing the window */
	int	 missed;	/* never acted on it: it ended first */
	int	 finished;	/* stopped, skipped, failed, observed complete,
				 * gone or missed */
	int	 window_cancelled;
	int	 window_done;	/* the coordinator finished the window */
	int	 legacy;	/* agents serve the job from its directory */
	int64_t	 max_step;	/* -1: none reported */
	int	 nodes_lost;	/* of the job's nodes, lost now */
	int	 nodes_left;	/* of the job's nodes, left (said goodbye) */
	char	 created[48];	/* the window's times, RFC 3339, "" unknown */
	char	 ended[48];
};
int	 ctl_progress_count(json_t *, uint32_t, struct ctl_progress *);
void	 ctl_progress_format(const struct ctl_progress *, uint32_t, char *,
	    size_t);

/* ctl_table.c */
#define CTL_TABLE_COLS	10

/* Rows of cells, printed with every column as wide as its widest cell. */
struct ctl_table {
	int	  ncols;
	size_t	  nrows;
	size_t	  cap;
	char	**cells;		/* nrows * ncols, each malloc'd */
};
void	 ctl_table_init(struct ctl_table *, int);
void	 ctl_table_head(struct ctl_table *, const char *, ...);
void	 ctl_table_add(struct ctl_table *, const char **);
void	 ctl_table_print(FILE *, struct ctl_table *, const char *);
void	 ctl_table_clear(struct ctl_table *);
void	 ctl_table_status(FILE *, json_t *, struct ctl_table *);
void	 ctl_table_rank_rows(struct ctl_table *, json_t *);
void	 ctl_table_jobs(FILE *, json_t *);
void	 ctl_table_nodes(FILE *, json_t *);
void	 ctl_format_window(char *, size_t, json_t *);
void	 ctl_window_when(char *, size_t, json_t *);
const char *ctl_json_str(json_t *, const char *, const char *);
int64_t	 ctl_json_int(json_t *, const char *, int64_t);
const char *ctl_cell_int(char *, size_t, json_t *, const char *, int64_t);

/* ctl_follow.c */
#define CTL_FOLLOW_SPAN_MS	600000	/* one events request at most */
#define CTL_FOLLOW_RETRIES	20	/* requests failing in a row */
#define CTL_STALL_S		15	/* no byte for this long: gone (the
					   stream writes a heartbeat a
					   heartbeat interval) */
/* Reading the event stream: each line goes to fn(arg, line), which returns
 * 0 to go on; since is the revision of the last line seen. */
struct ctl_follow {
	int		(*fn)(void *, json_t *);
	void		*arg;
	uint64_t	 since;
	int		 stopped;	/* fn said enough */
	int		 gone;		/* since is no longer kept */
	int		 overlong;
	size_t		 len;
	char		 line[64 * 1024];
};
int	 ctl_follow_sink(void *, const char *, size_t);
int	 ctl_follow_print(void *, json_t *);
int	 ctl_follow_once(struct ctl *, const char *, struct ctl_follow *, int);
int	 ctl_follow_status(struct ctl *, const char *, uint64_t, int);

/* ctl_local.c */
int	 ctl_cmd_local(struct ctl *, int, char **);

#endif /* DYNPROF_CTL_H */
