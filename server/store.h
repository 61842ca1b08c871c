/*
 * The coordinator's persistent state behind a small interface, so that another
 * store (etcd) can take SQLite's place.  Every write happens inside
 * store_begin()/store_commit(); a change is answered or pushed only after
 * store_commit() returned 0.
 */

#ifndef DYNPROF_STORE_H
#define DYNPROF_STORE_H

#include <stdint.h>

struct coord;
struct job;
struct window;
struct rank;
struct rank_event;
struct store;

/* store.c */
struct store	*store_open(const char *, const char **);	/* caller frees */
void		 store_close(struct store *);
int		 store_load(struct store *, struct coord *);
int		 store_begin(struct store *);
int		 store_commit(struct store *);
void		 store_rollback(struct store *);
int		 store_put_generation(struct store *, uint64_t);
int		 store_put_job(struct store *, const struct job *);
int		 store_put_window(struct store *, const char *,
		    const struct window *);
int		 store_put_rank(struct store *, const char *,
		    const struct rank *);
int		 store_put_event(struct store *, const char *, int32_t,
		    const struct rank_event *, const char *, const char *);
int		 store_forget_job(struct store *, const char *);
int		 store_put_agent(struct store *, const char *, uint64_t,
		    uint64_t);

#endif /* DYNPROF_STORE_H */
