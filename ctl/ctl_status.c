/*
 * A job's status as dynprofctl prints it: the summary, then its ranks read
 * page by page into one table (--json: the summary as it came).
 */

#include <stdio.h>

#include "ctl.h"

/* Adds a page of ranks to the status table. */
static int
ctl_status_page(void *arg, json_t *page)
{
	ctl_table_rank_rows(arg, page);
	return (0);
}

/*
 * Prints the job's status: the summary and its ranks (--json: the summary
 * as it came), and gives the summary's revision in *rev.  Returns an exit
 * code.
 */
int
ctl_status_show(struct ctl *ctl, const char *job, uint64_t *rev)
{
	struct ctl_table	 t;
	json_t			*doc;
	char			 path[128];
	int			 rc;

	snprintf(path, sizeof(path), "/v1/jobs/%s", job);
	if ((rc = ctl_get(ctl, path, &doc)) != CTL_EXIT_OK) {
		if (rc == CTL_EXIT_REFUSED)
			ctl_check_missing_job(ctl, job);
		return (rc);
	}
	if (!ctl->json) {
		ctl_table_init(&t, 8);
		rc = ctl_ranks_pages(ctl, job, "", ctl_status_page, &t);
		if (rc == CTL_EXIT_OK)
			ctl_table_status(ctl->out, doc, &t);
		ctl_table_clear(&t);
	}
	fflush(ctl->out);
	*rev = (uint64_t)ctl_json_int(doc, "revision", 0);
	json_decref(doc);
	return (rc);
}
