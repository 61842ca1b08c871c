/*
 * Logging for the daemons and tools: one line per message on stderr, with a level.
 * Never used by libdynprof, which never prints (it has a log callback instead).
 */

#ifndef DYNPROF_LOG_H
#define DYNPROF_LOG_H

#include <stdarg.h>

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
void	 fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	 fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif /* DYNPROF_LOG_H */
