/*
 * The etcd store's event batches: the events of one job that one commit
 * stores, as one value under one key, instead of one key (and one guarded
 * put) per event.
 *
 *	PREFIX evbatch/JOB/FENCE/SEQ	ESB_MAGIC, JOB (a packed string), then
 *					records: a byte (ESB_EVENT,
 *					ESB_JOURNAL, ESB_RANK), a varint
 *					length, the record
 *
 * A record is packed by store_row.c's rules (row_pack(): varints, NUL-ended
 * strings) from a row's own field table, less its first field (the job,
 * which the batch names): an event is its revision in the event stream (0:
 * none, as in a rewritten history), then its row's fields (ROW_EVENTS); a
 * rank row is ROW_RANKS's fields; a journal entry that is no stored event
 * (a process's attach or detach, a window's change, a job's floor) is
 * esb_journal_fields'.  A follower reads a batch in place, without a parse
 * of JSON nor an allocation per event (bench/README.md, "the follower's
 * apply of a batch").  A batch of a coordinator before this layout is a JSON
 * object (first byte '{'):
 *
 *	{"job": J, "events": [[rank, window, kind, step, time_ns, node,
 *	 detail], ...], "ranks": [row, ...], "revs": [rev, ...],
 *	 "journal": [[rev, type, what, rank, window, step, stop, time_ns,
 *	 generation, node, detail], ...]}
 *
 * and is read as well, so that a store an older leader wrote loads.
 *
 * FENCE is the writing leader's fencing token (unique to its leadership),
 * SEQ counts its batches: a key is never written twice with another value,
 * so a txn sent again lands once.  The value is stored deflated (zlib)
 * when that is smaller.  A value stays under ESB_VALUE_MAX bytes (one txn
 * under etcd's request limit); a job's events past it go to the next SEQ.
 * The dedupe by (job, rank, window, kind) is the model's
 * (schedule_rank_has_event(), rebuilt on load); the load drops a repeat all
 * the same, keeping the earliest.  A rank's row is the one of the last
 * batch (in key order: commit order) that holds it, and the last in it.
 *
 * The event stream's revisions (store.h, struct store_journal) ride in the
 * same value as what they speak of, so that both land or neither.
 */

#ifndef DYNPROF_STORE_ETCD_BATCH_H
#define DYNPROF_STORE_ETCD_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "store_row.h"

struct json_t;
struct rank_event;
struct store_event_row;
struct store_journal;
struct store_rank;

/* Bytes of one batch value, before deflate: base64 and the txn around it
 * stay under ETCD_TXN_BYTES_MAX. */
#define ESB_VALUE_MAX	(640 * 1024)
#define ESB_JOBS_MAX	64	/* jobs with a batch open at once */
#define ESB_ZLEVEL	1	/* zlib's fastest: most of the gain */
/* The packed layout's first bytes (no JSON nor zlib starts with a NUL);
 * bump its last when a record's meaning changes. */
#define ESB_MAGIC	"\0DPB1"
#define ESB_EVENT	1	/* a record's kind */
#define ESB_JOURNAL	2
#define ESB_RANK	3
/* A deflated value is refused past this, inflated. */
#define ESB_INFLATED_MAX	(4 * ESB_VALUE_MAX)

/* Bytes being written (JSON text, or a batch's packed records), n items. */
struct esb_text {
	char		*text;
	size_t		 len, cap;
	size_t		 n;
};

/* One job's batch being filled. */
struct esb_job {
	char		*job;
	struct esb_text	 events;
	struct esb_text	 ranks;
	struct esb_text	 journal;
};

/* An event the open transaction holds: (job, rank, window, kind), its job
 * an index into the transaction's job names; job 0 is an empty slot. */
struct esb_key {
	uint32_t	 job;		/* 1 + index, 0: empty */
	int32_t		 rank;
	uint32_t	 window_id;
	int32_t		 kind;
};

/* The events the open transaction holds, whatever batch took them. */
struct esb_seen {
	char		**jobs;
	size_t		 njobs;
	size_t		 last;		/* the job named last */
	struct esb_key	*keys;		/* open addressing, a power of 2 */
	size_t		 cap, n;
};

/* The open transaction's batches. */
struct esb {
	struct esb_job	 jobs[ESB_JOBS_MAX];
	size_t		 njobs;
	uint64_t	 seq;		/* batches written under this fence */
	struct esb_seen	 seen;
};

/* What esb_flush() hands each finished value to: key (relative to the
 * prefix) and value text.  Returns 0 or -1. */
typedef int	(*esb_put_fn)(void *, const char *, const char *, size_t);
/* What esb_decode() hands each event to, decoded and checked. */
typedef int	(*esb_event_fn)(void *, const struct store_event_row *);
/* ... and each journal entry that is no event (its strings the value's). */
typedef int	(*esb_journal_fn)(void *, const struct store_journal *);
/* ... and each rank row, decoded and checked (its strings the value's). */
typedef int	(*esb_rank_fn)(void *, const struct store_rank *);
/* ... and each it refuses: the key and why. */
typedef int	(*esb_bad_fn)(void *, const char *, const char *);

/* store_etcd_batch.c */
int	 esb_reserve(struct esb_text *, size_t);
int	 esb_quote(struct esb_text *, const char *);
int	 esb_num(struct esb_text *, int64_t, char);
int	 esb_put_deflated(const char *, const struct esb_text *, esb_put_fn,
	    void *);
struct json_t	*esb_parse(const char *, size_t, int *);
int	 esb_unpack(struct row *, enum row_table, const char *, const char *,
	    const struct json_t *, const char **);
int	 esb_add(struct esb *, const char *, int32_t, const struct rank_event *,
	    const char *, const char *, uint64_t, int64_t, esb_put_fn, void *);
int	 esb_add_journal(struct esb *, const struct store_journal *, int64_t,
	    esb_put_fn, void *);
int	 esb_add_rank(struct esb *, const struct store_rank *, int64_t,
	    esb_put_fn, void *);
int	 esb_flush(struct esb *, int64_t, esb_put_fn, void *);
size_t	 esb_bytes(const struct esb *);
void	 esb_clear(struct esb *);
int	 esb_seen(struct esb *, const char *, int32_t, uint32_t, int);
void	 esb_seen_clear(struct esb *);
int	 esb_decode(const char *, const char *, size_t, esb_event_fn,
	    esb_rank_fn, esb_journal_fn, esb_bad_fn, void *);

#endif /* DYNPROF_STORE_ETCD_BATCH_H */
