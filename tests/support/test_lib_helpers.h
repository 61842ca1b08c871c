/*
 * Helpers shared by the library and segment tests: temporary directories, a
 * config builder, and callbacks that record what the library asked of them.
 */

#ifndef TEST_LIB_HELPERS_H
#define TEST_LIB_HELPERS_H

#include <sys/stat.h>

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dynprof.h"
#include "segment.h"

/* A fresh directory under $TMPDIR (or /tmp); the caller removes it. */
static inline char *
tl_tmpdir(void)
{
	const char	*base = getenv("TMPDIR");
	char		*p;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if (asprintf(&p, "%s/dynprof-test-XXXXXX", base) == -1)
		return (NULL);
	if (mkdtemp(p) == NULL) {
		free(p);
		return (NULL);
	}
	return (p);
}

static inline int
tl_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return (remove(path));
}

/* rm -rf dir, and frees it. */
static inline void
tl_rmtree(char *dir)
{
	if (dir == NULL)
		return;
	nftw(dir, tl_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* Monotonic milliseconds. */
static inline long long
tl_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* Sets window i of cfg (and nwindows to at least i + 1), options unset. */
static inline void
tl_window(struct seg_config *cfg, int i, uint32_t id, int64_t start,
    int64_t stop, const char *ranks)
{
	struct seg_window	*w = &cfg->windows[i];

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->start_step = start;
	w->stop_step = stop;
	snprintf(w->ranks, sizeof(w->ranks), "%s", ranks != NULL ? ranks : "");
	w->options.aicore_metrics = -1;
	w->options.profiler_level = -1;
	w->options.profile_framework = -1;
	w->options.analyse_mode = -1;
	w->options.data_simplification = 1;
	if (cfg->nwindows < (uint32_t)i + 1)
		cfg->nwindows = (uint32_t)i + 1;
}

/* Publishes cfg as its next generation, as the agent does. */
static inline void
tl_push(struct segment *seg, struct seg_config *cfg)
{
	cfg->generation++;
	segment_write_config(seg, cfg);
}

/* One call the library made to a callback. */
struct tl_call {
	char			 what;		/* 's' start, 'p' stop */
	struct dynprof_window	 window;
	int			 reason;
	int			 profiler_level;
	char			 fwopts[128];
	char			 output_dir[1024];
	int			 dir_existed;
	int			 info_rc;	/* dynprof_window_info()'s, */
	struct dynprof_window_info info; /* from the callback (handle set) */
};

#define TL_MAX_CALLS	64
#define TL_MAX_LOGS	256

struct tl_recorder {
	struct tl_call	 calls[TL_MAX_CALLS];
	int		 ncalls;
	int		 fail_start;	/* the start callback fails */
	int		 fail_stop;	/* the stop callback fails */
	char		 logs[TL_MAX_LOGS][256];
	int		 nlogs;
	dynprof_t	*const *handle;	/* set: each call asks the library
					   about its window */
};

/* Asks the library about call c's window, as a callback can. */
static inline void
tl_window_info(const struct tl_recorder *r, struct tl_call *c)
{
	if (r->handle == NULL || *r->handle == NULL)
		return;
	c->info.version = DYNPROF_WINDOW_INFO_VERSION;
	c->info_rc = dynprof_window_info(*r->handle, c->window.id, &c->info);
}

static inline int
tl_on_start(void *arg, const struct dynprof_window *w,
    const struct dynprof_options *o, const char *fwopts, const char *dir,
    char *err, size_t errlen)
{
	struct tl_recorder	*r = arg;
	struct tl_call		*c;
	struct stat		 st;

	if (r->ncalls < TL_MAX_CALLS) {
		c = &r->calls[r->ncalls++];
		memset(c, 0, sizeof(*c));
		c->what = 's';
		c->window = *w;
		tl_window_info(r, c);
		c->profiler_level = o->profiler_level;
		snprintf(c->fwopts, sizeof(c->fwopts), "%s", fwopts);
		snprintf(c->output_dir, sizeof(c->output_dir), "%s", dir);
		c->dir_existed = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	}
	if (r->fail_start) {
		snprintf(err, errlen, "profiler refused to start");
		return (-1);
	}
	return (0);
}

static inline int
tl_on_stop(void *arg, const struct dynprof_window *w,
    enum dynprof_stop_reason reason, const char *dir, char *err, size_t errlen)
{
	struct tl_recorder	*r = arg;
	struct tl_call		*c;

	if (r->ncalls < TL_MAX_CALLS) {
		c = &r->calls[r->ncalls++];
		memset(c, 0, sizeof(*c));
		c->what = 'p';
		c->window = *w;
		tl_window_info(r, c);
		c->reason = (int)reason;
		snprintf(c->output_dir, sizeof(c->output_dir), "%s", dir);
	}
	if (r->fail_stop) {
		snprintf(err, errlen, "profiler refused to stop");
		return (-1);
	}
	return (0);
}

static inline void
tl_on_log(void *arg, enum dynprof_log_level level, const char *msg)
{
	struct tl_recorder	*r = arg;

	(void)level;
	if (r->nlogs < TL_MAX_LOGS)
		snprintf(r->logs[r->nlogs++], sizeof(r->logs[0]), "%s", msg);
}

/* Returns 1 if a log line holds needle. */
static inline int
tl_logged(const struct tl_recorder *r, const char *needle)
{
	int	 i;

	for (i = 0; i < r->nlogs; i++)
		if (strstr(r->logs[i], needle) != NULL)
			return (1);
	return (0);
}

/* Params for a test handle: job, rank, dirs, recording callbacks. */
static inline void
tl_params(struct dynprof_params *p, const char *dir, const char *job, int rank,
    struct tl_recorder *r)
{
	static char	 root[4096];
	static char	 sock[4096];

	dynprof_params_init(p);
	snprintf(root, sizeof(root), "%s/out", dir);
	snprintf(sock, sizeof(sock), "%s/no-agent.sock", dir);
	p->job = job;
	p->rank = rank;
	p->shm_dir = dir;
	p->output_root = root;
	p->agent_socket = sock;
	p->on_start = tl_on_start;
	p->on_stop = tl_on_stop;
	p->on_log = tl_on_log;
	p->arg = r;
}

#endif /* TEST_LIB_HELPERS_H */
