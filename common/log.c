/* Logging to stderr with levels, in the manner of OpenBSD's log.c. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"

static const char	*log_procname = "dynprof";
static int		 log_level = LOG_LEVEL_INFO;

static void	 log_vwrite(const char *, const char *, va_list, int)
		    __attribute__((format(printf, 2, 0)));
static void	 log_write_line(int, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

/* Sets the program name put before every line and the level. */
void
log_init(const char *procname, int level)
{
	log_procname = procname;
	log_level = level;
}

/* Changes the level: LOG_LEVEL_QUIET, _INFO or _DEBUG. */
void
log_setlevel(int level)
{
	log_level = level;
}

/* Returns the current level. */
int
log_getlevel(void)
{
	return (log_level);
}

/* Writes one timestamped line to stderr, with strerror(errnum) if not 0. */
static void
log_vwrite(const char *level, const char *fmt, va_list ap, int errnum)
{
	struct tm	 tm;
	char		 stamp[32], msg[2048];
	int64_t		 ns = clock_wall_ns();
	time_t		 sec = (time_t)(ns / 1000000000);
	long		 ms = (long)(ns % 1000000000) / 1000000;

	gmtime_r(&sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (errnum != 0)
		fprintf(stderr, "%s.%03ldZ %s %s: %s: %s\n", stamp,
		    ms, log_procname, level, msg,
		    strerror(errnum));
	else
		fprintf(stderr, "%s.%03ldZ %s %s: %s\n", stamp,
		    ms, log_procname, level, msg);
	fflush(stderr);
}

/* Logs a warning followed by strerror(errno). */
void
log_warn(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite("warning", fmt, ap, saved);
	va_end(ap);
	errno = saved;
}

/* Logs a warning. */
void
log_warnx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite("warning", fmt, ap, 0);
	va_end(ap);
}

/* Logs an informational line unless quiet. */
void
log_info(const char *fmt, ...)
{
	va_list	 ap;

	if (log_level < LOG_LEVEL_INFO)
		return;
	va_start(ap, fmt);
	log_vwrite("info", fmt, ap, 0);
	va_end(ap);
}

/* Logs a debugging line when verbose. */
void
log_debug(const char *fmt, ...)
{
	va_list	 ap;

	if (log_level < LOG_LEVEL_DEBUG)
		return;
	va_start(ap, fmt);
	log_vwrite("debug", fmt, ap, 0);
	va_end(ap);
}

/* The limiters' shared budget (log.h). */
static uint64_t		 log_global_start_ns;
static unsigned		 log_global_lines;
static unsigned long	 log_global_dropped;

/*
 * Logs a line at level (LOG_LEVEL_QUIET for a warning, _INFO, _DEBUG) unless its
 * source or the process has used up this interval's lines; counts it otherwise.
 */
void
log_limited(struct log_limit *ll, int level, const char *fmt, ...)
{
	va_list		 ap;
	char		 msg[2048];
	uint64_t	 now = clock_mono_ns();

	if (log_level < level)
		return;
	if (ll->start_ns == 0 || now - ll->start_ns >= LOG_LIMIT_INTERVAL_NS) {
		ll->start_ns = now;
		ll->lines = 0;
	}
	if (log_global_start_ns == 0 ||
	    now - log_global_start_ns >= LOG_LIMIT_INTERVAL_NS) {
		log_global_start_ns = now;
		log_global_lines = 0;
	}
	if (ll->lines >= LOG_LIMIT_LINES ||
	    log_global_lines >= LOG_LIMIT_GLOBAL) {
		ll->held++;
		log_global_dropped++;
		return;
	}
	ll->lines++;
	log_global_lines++;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (ll->held > 0) {
		log_write_line(level, "%s (%lu similar lines held back)", msg,
		    ll->held);
		ll->held = 0;
	} else
		log_write_line(level, "%s", msg);
}

/* Returns how many limited lines this process has held back in all. */
unsigned long
log_limited_dropped(void)
{
	return (log_global_dropped);
}

/* Writes one line at level through log_vwrite(). */
static void
log_write_line(int level, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite(level == LOG_LEVEL_QUIET ? "warning" :
	    level == LOG_LEVEL_INFO ? "info" : "debug", fmt, ap, 0);
	va_end(ap);
}

/* Logs an error with strerror(errno) and exits: start-up failures only. */
void
fatal(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite("fatal", fmt, ap, saved);
	va_end(ap);
	exit(2);
}

/* Logs an error and exits: start-up failures and broken invariants only. */
void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	log_vwrite("fatal", fmt, ap, 0);
	va_end(ap);
	exit(2);
}
