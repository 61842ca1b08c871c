/*
 * The agents' events taken in: read into one batch (a transaction the store
 * keeps open across reads), and finished at one point, intake_flush(): the
 * batch's rows stored and committed, its agents acknowledged once it is
 * (the layer above's, hooks->events_commit: link_dispatch.c).  Whoever needs
 * every event read so far judged or stored calls it first; a change finds
 * no batch open (change_publish()).
 */

#include "model.h"
#include "store.h"

/* Opens the batch of events, or joins the open one.  Returns 0 or -1. */
int
intake_begin(struct coord *c)
{
	return (store_batch_begin(c->store));
}

/*
 * Finishes the open batch of events, if any: ended, then stored, committed
 * and acknowledged by the hook; whatever the hook did, its transaction is
 * over.  A NULL store (one that failed to open) has none.
 */
void
intake_flush(struct coord *c)
{
	if (!store_batch_open(c->store))
		return;
	store_batch_end(c->store);
	if (c->hooks != NULL && c->hooks->events_commit != NULL)
		c->hooks->events_commit(c);
	store_rollback(c->store);
}
