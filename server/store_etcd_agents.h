/*
 * The etcd store's agent rows: each node's highest committed event seq,
 * written once per commit for all the agents it acknowledges, as one value
 * (or a few, each under ESB_VALUE_MAX), instead of one key and one put per
 * agent (10,000 of them a commit, 80 txns one after the other):
 *
 *	PREFIX agbatch/FENCE/SEQ	{"agents": [[node, boot_id, seq], ...]}
 *
 * deflated like an event batch (store_etcd_batch.h), FENCE and SEQ as
 * there: key order is commit order.  A node's row is the one written last
 * (the highest mod revision, which also orders it against the key of its
 * own, PREFIX agents/NODE, of the layout before).  Every ESA_SNAP_VALUES
 * values, a commit with nothing else in flight writes a snapshot instead:
 * every node's row the store knows committed, then deletes the values
 * before it and the keys of the layout before: what a new leader reads
 * stays within about two snapshots.
 */

#ifndef DYNPROF_STORE_ETCD_AGENTS_H
#define DYNPROF_STORE_ETCD_AGENTS_H

#include <stddef.h>
#include <stdint.h>

#include "store_etcd_batch.h"

/* Values written since the last snapshot before the next is one. */
#define ESA_SNAP_VALUES	32

/* One node's row. */
struct esa_row {
	char		*node;
	uint64_t	 boot_id;
	uint64_t	 seq;
	int64_t		 rev;		/* on load: its mod revision */
};

/* Rows in the order they came. */
struct esa_rows {
	struct esa_row	*v;
	size_t		 n, cap;
};

/* The agent rows of the store. */
struct esa {
	struct esa_rows	 open;		/* the open transaction's */
	struct esa_row	*known;		/* committed: by node, open
					 * addressing, a power of 2 */
	size_t		 cap, n;
	uint64_t	 values;	/* written since the last snapshot */
};

/* What esa_decode() hands each row to: node, boot id, seq. */
typedef int	(*esa_row_fn)(void *, const char *, uint64_t, uint64_t);

/* store_etcd_agents.c */
int	 esa_add(struct esa *, const char *, uint64_t, uint64_t);
int	 esa_flush(struct esa *, struct esa_rows *, int, uint64_t *,
	    int64_t, esb_put_fn, void *);
int	 esa_known(struct esa *, const char *, uint64_t, uint64_t, int64_t);
void	 esa_landed(struct esa *, const struct esa_rows *);
void	 esa_rows_clear(struct esa_rows *);
void	 esa_forget(struct esa *);
int	 esa_decode(const char *, const char *, size_t, esa_row_fn,
	    esb_bad_fn, void *);

#endif /* DYNPROF_STORE_ETCD_AGENTS_H */
