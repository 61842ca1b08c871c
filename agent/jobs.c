/*
 * The jobs this agent serves, as data: which one is whose, whether a job's
 * name is subscribed, who runs in a slot, which windows a segment was given.
 * Nothing here maps, writes or sends anything: segments.c does, and every
 * part that needs to look a job up (events.c, collect.c, legacy.c) does it
 * here, below segments.c.
 */

#include <sys/types.h>

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "parts.h"

/* Finds the job served in uid's segment, or NULL. */
struct agent_job *
jobs_find_uid(struct agent *a, uid_t uid, const char *job)
{
	struct agent_job	*j;

	TAILQ_FOREACH(j, &a->jobs, entry)
		if (j->uid == uid && strcmp(j->name, job) == 0)
			return (j);
	return (NULL);
}

/* Finds the job served in the agent's own segment, or NULL. */
struct agent_job *
jobs_find(struct agent *a, const char *job)
{
	return (jobs_find_uid(a, geteuid(), job));
}

/* Whether any user's segment of job name is subscribed. */
int
jobs_subscribed(struct agent *a, const char *name)
{
	struct agent_job	*s;

	TAILQ_FOREACH(s, &a->jobs, entry)
		if (s->subscribed && strcmp(s->name, name) == 0)
			return (1);
	return (0);
}

/*
 * Whether another job of j's name (another user's segment) is subscribed;
 * with before, only one before j in the list counts.
 */
int
jobs_sibling_subscribed(struct agent *a, const struct agent_job *j,
    int before)
{
	struct agent_job	*s;

	TAILQ_FOREACH(s, &a->jobs, entry) {
		if (s == j && before)
			break;
		if (s != j && s->subscribed && strcmp(s->name, j->name) == 0)
			return (1);
	}
	return (0);
}

/*
 * The uid the rank in slot idx of j runs as: the kernel's, from a believed
 * datagram of the incarnation it holds; else the segment's owner, who made
 * it (only that uid and root may create files in a user's directory).
 */
uid_t
jobs_rank_uid(const struct agent_job *j, int idx)
{
	uint32_t	 inc;

	if (idx < 0 || idx >= SEG_MAX_SLOTS || (uint32_t)idx >= j->seg.nslots)
		return (j->uid);
	inc = atomic_load_explicit(&j->seg.slots[idx].incarnation,
	    memory_order_relaxed);
	if (j->slot_uid_inc[idx] != 0 && j->slot_uid_inc[idx] == inc)
		return (j->slot_uid[idx]);
	return (j->uid);
}

/* Notes the windows of cfg as given to j's segment by this agent. */
void
jobs_note_windows(struct agent_job *j, const struct seg_config *cfg)
{
	uint32_t	 i, n = cfg->nwindows;

	if (n > SEG_MAX_WINDOWS)
		n = SEG_MAX_WINDOWS;
	for (i = 0; i < n; i++)
		if (!jobs_window_known(j, cfg->windows[i].id))
			j->windows_known[j->nwindows_known++ %
			    AGENT_WINDOWS_KNOWN] = cfg->windows[i].id;
}

/*
 * Returns 1 if window id is one of the last AGENT_WINDOWS_KNOWN windows
 * j's segment was given.
 */
int
jobs_window_known(const struct agent_job *j, uint32_t id)
{
	uint32_t	 i, n = j->nwindows_known < AGENT_WINDOWS_KNOWN ?
			    j->nwindows_known : AGENT_WINDOWS_KNOWN;

	for (i = 0; i < n; i++)
		if (j->windows_known[i] == id)
			return (1);
	return (0);
}
