/*
 * dynprofctl's checks of what an operator asks for before it is sent: a job
 * that is not there (a typo: the jobs there are named, the nearest
 * suggested), ranks the job does not have.  The coordinator judges the rest.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/*
 * The edit distance of a and b (insertions, deletions, substitutions and
 * swaps of two neighbours each count 1): "mpl" is 1 from "mlp".  Job ids are
 * at most JOBID_MAX bytes; longer strings count as far.
 */
int
ctl_check_distance(const char *a, const char *b)
{
	int	 d[JOBID_MAX + 2][JOBID_MAX + 2];
	size_t	 la = strlen(a), lb = strlen(b), i, j;
	int	 best, v;

	if (la > JOBID_MAX || lb > JOBID_MAX)
		return (JOBID_MAX * 2);
	for (i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if ((v = d[i - 1][j] + 1) < best)
				best = v;
			if ((v = d[i][j - 1] + 1) < best)
				best = v;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] &&
			    (v = d[i - 2][j - 2] + 1) < best)
				best = v;
			d[i][j] = best;
		}
	}
	return (d[la][lb]);
}

/*
 * Fills buf with the jobs of list (GET /v1/jobs) other than job, for a
 * message about job: "jobs there are: a, b; did you mean a?", or "no other
 * job is there".  At most 10 are named; the nearest within 2 edits is
 * suggested.
 */
void
ctl_check_jobs_hint(json_t *list, const char *job, char *buf, size_t len)
{
	json_t		*o;
	const char	*name, *near = NULL;
	size_t		 i, off, n = 0;
	int		 d, nearest = 3;

	snprintf(buf, len, "jobs there are: ");
	off = strlen(buf);
	json_array_foreach(json_object_get(list, "jobs"), i, o) {
		name = ctl_json_str(o, "job", "");
		if (strcmp(name, job) == 0)
			continue;
		d = ctl_check_distance(job, name);
		if (d < nearest && d < (int)strlen(job)) {
			nearest = d;
			near = name;
		}
		if (n++ < 10 && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
			    n > 1 ? ", " : "", name);
	}
	if (n == 0) {
		snprintf(buf, len, "no other job is there");
		return;
	}
	if (n > 10 && off < len)
		off += (size_t)snprintf(buf + off, len - off, " and %zu more",
		    n - 10);
	if (near != NULL && off < len)
		snprintf(buf + off, len - off, "; did you mean %s?", near);
}

/* Returns the entry of job in list (GET /v1/jobs), or NULL. */
static json_t *
ctl_check_find(json_t *list, const char *job)
{
	json_t	*o;
	size_t	 i;

	json_array_foreach(json_object_get(list, "jobs"), i, o)
		if (strcmp(ctl_json_str(o, "job", ""), job) == 0)
			return (o);
	return (NULL);
}

/*
 * After a request about job failed, says which jobs there are when job is
 * not one of them.
 */
void
ctl_check_missing_job(struct ctl *ctl, const char *job)
{
	json_t	*list;
	char	 hint[1024];
	int	 quiet = ctl->quiet;

	ctl->quiet = 1;
	if (ctl_call(ctl, "GET", "/v1/jobs", NULL, 0, &list, NULL) ==
	    CTL_EXIT_OK) {
		if (ctl_check_find(list, job) == NULL) {
			ctl_check_jobs_hint(list, job, hint, sizeof(hint));
			ctl_errx(ctl, "%s", hint);
		}
		json_decref(list);
	}
	ctl->quiet = quiet;
}

/* The highest rank of a page of a job's ranks, into *(int64_t *)arg. */
static int
ctl_check_rank_page(void *arg, json_t *page)
{
	int64_t	*max = arg, r;
	json_t	*o;
	size_t	 i;

	json_array_foreach(json_object_get(page, "ranks"), i, o) {
		r = ctl_json_int(o, "rank", -1);
		if (r > *max)
			*max = r;
	}
	return (0);
}

/*
 * Checks a trace before it is sent.  With --wait, its job must be there
 * (else refused naming the jobs there are, unless --new: waiting on a typo
 * times out).  Ranks it names beyond the job's highest known rank are
 * warned about, and refused with --wait.  --force skips the checks.
 * Returns CTL_EXIT_OK to go on, else the exit code.
 */
int
ctl_check_trace(struct ctl *ctl, const struct ctl_trace_args *a)
{
	struct rank_set	 rs;
	json_t		*list;
	const char	*why;
	char		 hint[1024];
	int64_t		 max = -1, hi = -1;
	int		 rc, i;

	if (a->force)
		return (CTL_EXIT_OK);
	if (a->wait && !a->new) {
		if ((rc = ctl_call(ctl, "GET", "/v1/jobs", NULL, 0, &list,
		    NULL)) != CTL_EXIT_OK)
			return (rc);
		if (ctl_check_find(list, a->job) == NULL) {
			ctl_check_jobs_hint(list, a->job, hint, sizeof(hint));
			json_decref(list);
			ctl_errx(ctl, "trace: no job %s on the coordinator (%s)"
			    "; to wait on a window of a job whose ranks have "
			    "not started yet, give --new", a->job, hint);
			return (CTL_EXIT_REFUSED);
		}
		json_decref(list);
	}
	if (a->ranks == NULL || ranks_parse(a->ranks, &rs, &why) == -1 ||
	    rs.nranges == 0)
		return (CTL_EXIT_OK);
	for (i = 0; i < rs.nranges; i++)
		if (rs.ranges[i].hi > hi)
			hi = rs.ranges[i].hi;
	ctl->quiet = 1;		/* a job not there yet: nothing to compare */
	rc = ctl_ranks_pages(ctl, a->job, "", ctl_check_rank_page, &max);
	ctl->quiet = 0;
	if (rc != CTL_EXIT_OK || max < 0 || hi <= max)
		return (CTL_EXIT_OK);
	ctl_errx(ctl, "trace: --ranks %s: the highest rank job %s has is %lld"
	    "; rank %lld is not one of its ranks%s", a->ranks, a->job,
	    (long long)max, (long long)hi, a->wait ? " (--force waits for "
	    "it anyway)" : " yet");
	return (a->wait ? CTL_EXIT_REFUSED : CTL_EXIT_OK);
}

/*
 * After a window was made: when it is its job's first and the job has no
 * rank (the window made the job, a typo perhaps) and --new did not say so, a
 * notice naming the jobs there are.
 */
void
ctl_check_new_job(struct ctl *ctl, const struct ctl_trace_args *a, json_t *w)
{
	json_t	*list, *o;
	char	 hint[1024];

	if (a->new || a->force || ctl_json_int(w, "id", 0) != 1)
		return;
	ctl->quiet = 1;
	if (ctl_call(ctl, "GET", "/v1/jobs", NULL, 0, &list, NULL) ==
	    CTL_EXIT_OK) {
		o = ctl_check_find(list, a->job);
		if (o != NULL && ctl_json_int(o, "ranks", 0) == 0) {
			ctl_check_jobs_hint(list, a->job, hint, sizeof(hint));
			ctl_errx(ctl, "trace: job %s is new: no rank of it has "
			    "reported; the window waits for them (%s)", a->job,
			    hint);
		}
		json_decref(list);
	}
	ctl->quiet = 0;
}
