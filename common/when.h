/*
 * Times and durations as people write them, for time windows: a start "at"
 * as RFC 3339 ("2026-12-05T12:00:00Z", "2026-12-05T13:00:00.250+01:00") or
 * relative to now ("+30s", "+500ms", "+2m", "+1h", "+0s"), and a duration
 * ("10s", "1500ms", "2m", "1h"; a bare number is seconds).  Parsed by the
 * coordinator (a request's "at") and dynprofctl (--for).
 */

#ifndef DYNPROF_WHEN_H
#define DYNPROF_WHEN_H

#include <stdint.h>

/* The latest time either parses: 2100-01-01T00:00:00Z, in ns. */
#define WHEN_MAX_NS	(4102444800LL * 1000000000LL)

/* when.c */
int	 when_parse_at(const char *, int64_t, int64_t *, const char **);
int	 when_parse_duration_ms(const char *, int64_t *, const char **);

#endif /* DYNPROF_WHEN_H */
