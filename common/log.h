/*
 * Logging for the daemons and tools: one line per message on stderr, with a level.
 * Never used by libdynprof, which never prints (it has a log callback instead).
 */

#ifndef DYNPROF_LOG_H
#define DYNPROF_LOG_H

#include <stdarg.h>
#include <stdint.h>

#define LOG_LEVEL_QUIET		0	/* warnings and errors only */
#define LOG_LEVEL_INFO		1	/* the default */
#define LOG_LEVEL_DEBUG		2

void	 log_init(const char *, int);
void	 log_setlevel(int);
int	 log_getlevel(void);
void	 log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	 log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
/*
 * Lines a peer or a local user can trigger go through a limiter: each source (a
 * peer, a directory, a job) holds one, and writes at most LOG_LIMIT_LINES lines per
 * LOG_LIMIT_INTERVAL_NS; all limiters together write at most LOG_LIMIT_GLOBAL lines
 * per interval, so ten thousand sources cannot flood the log either.  Lines held
 * back are counted: the source's next line says how many of its own were, and
 * log_limited_dropped() gives the process's total (for /metrics).  A zeroed
 * struct is ready to use.
 */
#define LOG_LIMIT_INTERVAL_NS	(10ULL * 1000000000ULL)
#define LOG_LIMIT_LINES		5
#define LOG_LIMIT_GLOBAL	100

struct log_limit {
	uint64_t	 start_ns;	/* start of this source's interval */
	unsigned	 lines;		/* lines written in it */
	unsigned long	 held;		/* lines held back since the last written */
};

void	 log_limited(struct log_limit *, int, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
unsigned long	 log_limited_dropped(void);
void	 fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	 fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif /* DYNPROF_LOG_H */
