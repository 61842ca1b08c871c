/*
 * A job's rules inside (rules.c, rules_fire.c): what a rule is and the
 * functions the two share.  The rest of the coordinator sees model.h's
 * rules_*() operations, and the admin API (http_rules.c) a rule's JSON, which
 * is its stored form too: rule_parse() makes the struct rule it hands to
 * rules_add(), rule_json() renders the one it gets back.
 */

#ifndef DYNPROF_RULES_H
#define DYNPROF_RULES_H

#include <jansson.h>

#include "model.h"

#define RULES_MAX		8	/* rules of one job */
#define RULE_PEERS_MAX		16	/* healthy peers profiled beside */
#define RULE_PEERS_DEFAULT	2
#define RULE_STEPS_MAX		100000	/* steps of a rule's window */
#define RULE_ROUNDUP_MAX	1000000000LL
#define RULE_INTERVAL_MIN_S	1	/* between two firings of a rule */
#define RULE_INTERVAL_MAX_S	86400
#define RULE_INTERVAL_DEFAULT_S	600
#define RULE_PER_HOUR_MAX	60	/* firings of a rule in an hour */
#define RULE_PER_HOUR_DEFAULT	4
#define RULE_HOUR_NS		(3600LL * 1000000000LL)
#define RULE_OPTIONS_MAX	4096	/* a rule's options, as JSON text */

struct rule {
	uint32_t	 id;
	int		 peers;
	int64_t		 steps;
	int64_t		 roundup;
	int64_t		 interval_s;
	int		 per_hour;
	char		*options;		/* JSON object text, or NULL */
	struct options_over over;		/* options, as laid over */
	char		 output_subdir[SEG_SUBDIR_MAX];
	int		 no_collect;		/* "collect": false: its
						 * windows' traces are not
						 * collected */
	int64_t		 created_ns;
	/* what it did: wall clock, so that a restart keeps the caps */
	int64_t		 fired[RULE_PER_HOUR_MAX];	/* the last hour's */
	size_t		 nfired;
	int64_t		 attempt_ns;		/* last firing tried */
	uint64_t	 fired_total;
	uint32_t	 last_window;
	char		 last_ranks[SEG_RANKS_MAX];
};

struct rules {
	uint32_t	 next_id;
	struct rule	 rule[RULES_MAX];
	size_t		 n;
	uint64_t	 refused;		/* firings the schedule refused */
};

/* A job's own straggler thresholds, -1 each it does not set
 * (RULES_LIMIT_KEEP: rules_set_thresholds() leaves it as it is). */
#define RULES_LIMIT_KEEP	(-2)
#define RULES_STORE_MAX		255	/* a job's trace store's length */
struct rules_limits {
	int64_t		 lag;
	int		 drop;
	int		 busy;
	int		 no_collect;		/* the job's "collect": false
						 * (PUT /v1/jobs/J/collect) */
	int		 store_set;		/* rules_set_thresholds(): take
						 * store (else keep the job's) */
	char		 store[RULES_STORE_MAX + 1];	/* the job's trace
						 * store, "" the agents' own
						 * (PUT /v1/jobs/J/trace-store) */
};

/* rules.c: a job's rules as data */
void	 rule_clear(struct rule *);
struct rules *rules_copy(const struct rules *);
int	 rule_int(json_t *, const char *, long long, long long, int64_t *,
	    struct refusal *);
void	 rule_window_request(const struct rule *, const char *,
	    struct window_request *);
int	 rule_parse(json_t *, int, struct rule *, struct refusal *);
json_t	*rule_json(const struct rule *, int);
void	 rules_own_limits(const struct job *, struct rules_limits *);
int	 rules_set_limits(struct job *, const struct rules_limits *);
char	*rules_render(const struct rules *, const struct rules_limits *);

#endif /* DYNPROF_RULES_H */
