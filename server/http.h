/* The admin API (docs/admin-api.md): its listener, routes and resources. */

#ifndef DYNPROF_HTTP_H
#define DYNPROF_HTTP_H

#include "labels.h"
#include "model.h"

/* http.c */
int	 http_listen(struct coord *, const char *, const struct http_route *,
	    size_t);
void	 http_close(struct coord *);
int	 http_is_viewer(struct coord *, struct evhttp_request *);
int	 http_path_id(struct coord *, struct evhttp_request *, const char *,
	    const char *, uint32_t *);
void	 http_conn_noread(struct evhttp_connection *);
void	 http_send_reply(struct evhttp_request *, int, const char *,
	    struct evbuffer *);
void	 http_send_json(struct coord *, struct evhttp_request *, int,
	    struct evbuffer *);
void	 http_reply(struct coord *, struct evhttp_request *, int,
	    struct json_t *);
void	 http_error(struct coord *, struct evhttp_request *, int, const char *,
	    const char *, ...) __attribute__((format(printf, 5, 6)));
void	 http_refused(struct coord *, struct evhttp_request *,
	    const struct refusal *);
struct json_t *http_body(struct coord *, struct evhttp_request *);
void	 http_method_not_allowed(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_conn_stream(struct coord *, struct evhttp_connection *,
	    void (*)(void *), void *);
void	 http_conn_hold(struct coord *, struct evhttp_request *, int);

/* http_routes.c */
extern const struct http_route http_routes[];
extern const size_t http_routes_count;

int	 http_hold(struct coord *, struct evhttp_request *, int,
	    const char *, struct evbuffer *);
void	 http_hold_committed(struct coord *, struct change_commit *, int);

/* stream.c */
struct stream	*stream_start(struct coord *, struct evhttp_request *,
		    const char *, int (*)(struct stream *, struct evbuffer *),
		    void (*)(struct stream *), void *);
void	 stream_wake(struct stream *);
void	 stream_abort(struct stream *);
void	 stream_end(struct stream *);
void	 stream_conn_closed(void *);
void	 stream_free(struct stream *);
void	 stream_free_all(struct coord *);

/* http_forget.c */
void	 http_delete_job(struct coord *, struct evhttp_request *,
	    const char *);

/* http_jobs.c */
void	 http_get_jobs(struct coord *, struct evhttp_request *);
void	 http_get_job(struct coord *, struct evhttp_request *, const char *);
void	 http_get_config(struct coord *, struct evhttp_request *, const char *);
void	 http_post_window(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_delete_window(struct coord *, struct evhttp_request *,
	    const char *, const char *);
void	 http_put_config(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_get_nodes(struct coord *, struct evhttp_request *);
int	 http_window_parse(const void *, struct window_request *,
	    struct options_over *, struct refusal *);
int	 http_config_parse(const void *, int64_t *, int64_t *, struct options *,
	    struct refusal *);

/* http_ranks.c */
/* Which ranks a listing (or a count) takes: 0 or "" for any. */
struct ranks_filter {
	uint32_t	 states;		/* bit (1 << state) */
	char		 node[COORD_NODE_MAX];
	uint32_t	 window;
	uint32_t	 outcome;	/* the window each rank's outcome is
					 * of: the ranks it counts, 0 none */
	int		 has_select;	/* select: the labels to match */
	struct labels_selector select;
};
void	 http_get_ranks(struct coord *, struct evhttp_request *,
	    const char *);
void	*http_job_stream_new(struct coord *, struct evhttp_request *,
	    const char *, size_t);
struct evkeyvalq;
int	 http_query(struct evhttp_request *, struct evkeyvalq *,
	    struct refusal *);
void	 ranks_json_string(struct evbuffer *, const char *);
void	 ranks_json_time(struct evbuffer *, int64_t);
void	 ranks_write(struct evbuffer *, const struct rank *, int,
	    const char *);
int	 ranks_filter_match(const struct ranks_filter *, const struct rank *,
	    int);
int	 ranks_parse_int(const char *, long long, long long, long long *);

/* http_events.c */
void	 http_get_events(struct coord *, struct evhttp_request *,
	    const char *);
void	 events_wake(struct coord *);

/* http_ui.c, and the page's files (server/ui/embed.cmake) */
struct ui_file {
	const char		*name;		/* NULL ends ui_files[] */
	const char		*type;		/* Content-Type */
	const unsigned char	*data;
	size_t			 len;
};
extern const struct ui_file ui_files[];
void	 http_ui_route(struct coord *, struct evhttp_request *, const char *);
void	 http_get_job_nodes(struct coord *, struct evhttp_request *,
	    const char *);

/* http_traces.c */
void	 http_get_traces(struct coord *, struct evhttp_request *,
	    const char *, const char *);
void	 http_get_compare(struct coord *, struct evhttp_request *,
	    const char *, const char *);
void	 http_put_collect(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_put_trace_store(struct coord *, struct evhttp_request *,
	    const char *);

/* http_rules.c */
void	 http_get_stragglers(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_put_stragglers(struct coord *, struct evhttp_request *,
	    const char *);
void	 http_get_rules(struct coord *, struct evhttp_request *, const char *);
void	 http_post_rule(struct coord *, struct evhttp_request *, const char *);
void	 http_delete_rule(struct coord *, struct evhttp_request *,
	    const char *, const char *);

#endif /* DYNPROF_HTTP_H */
