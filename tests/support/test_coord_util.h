/*
 * Helpers of the coordinator's tests: start the real dynprof-coordinator on
 * 127.0.0.1 with port 0 and a private state directory, read its ports from the
 * ready file, and talk HTTP to it over a plain socket.  tc_teardown(), tc_req()
 * and tc_wait_*() are cmocka's: whatever links test_coord_util.c links cmocka.
 */

#ifndef DYNPROF_TEST_COORD_UTIL_H
#define DYNPROF_TEST_COORD_UTIL_H

#include <sys/types.h>

#include <stdint.h>

#include <jansson.h>

struct fakeagent;

struct tc_coord {
	pid_t	 pid;
	int	 agent_port;
	int	 http_port;
	char	 dir[256];		/* mkdtemp: state/, ready, tokens */
	char	 state[320];
	char	 ready[320];
	char	 log[320];
	int	 nofile;		/* > 0: RLIMIT_NOFILE of the coordinator */
};

struct tc_reply {
	int	 status;
	char	*body;
	char	*head;			/* status line and headers */
	json_t	*json;			/* NULL unless the body is JSON */
};

/* test_coord_util.c */
int	 tc_setup_dir(struct tc_coord *);
int	 tc_start(struct tc_coord *, const char *const *);
int	 tc_stop(struct tc_coord *, int);
void	 tc_cleanup(struct tc_coord *);
int	 tc_write_file(struct tc_coord *, const char *, const char *, char *,
	    size_t);
int	 tc_http(int, const char *, const char *, const char *, const char *,
	    struct tc_reply *);
int	 tc_connect(int);
int	 tc_http_raw(int, const char *, size_t, struct tc_reply *);
int	 tc_expect(struct tc_coord *, const char *, const char *,
	    const char *, int, struct tc_reply *);
int	 tc_finish(struct tc_coord *);
int	 tc_teardown(void **);
int	 tc_setup_agents_args(void **, const char *, const char *const *);
int	 tc_setup_agents_hb(void **, const char *);
int	 tc_setup_agents_args(void **, const char *, const char *const *);
int	 tc_setup_agents(void **);
struct tc_reply tc_req(struct tc_coord *, const char *, const char *,
	    const char *, int);
void	 tc_call(struct tc_coord *, const char *, const char *, const char *,
	    int);
void	 tc_wait_str(struct tc_coord *, const char *, const char *,
	    const char *);
void	 tc_wait_int(struct tc_coord *, const char *, const char *, long long);
void	 tc_reply_free(struct tc_reply *);
long long tc_int(json_t *, const char *);
void	 tc_assert_ints(json_t *, const char *, const char *);
const char *tc_str(json_t *, const char *);
json_t	*tc_window(json_t *, long long);
long long tc_now_ms(void);
int	 tc_fd_count(pid_t);
long long tc_metric(struct tc_coord *, const char *);
void	 tc_event(struct fakeagent *, int, const char *, int, uint32_t,
	    int64_t);
int	 tc_run_exit(const char *const *, int);
/* dynprofctl run against the coordinator, waited for this long at most. */
#define TC_CTL_WAIT_MS	20000
pid_t	 tc_ctl_start(struct tc_coord *, const char *, const char *const *);
int	 tc_ctl_wait(pid_t);
char	*tc_slurp(const char *);
int	 tc_run_exit_log(const char *const *, int, const char *);

#endif /* DYNPROF_TEST_COORD_UTIL_H */
