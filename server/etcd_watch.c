/*
 * A watch of one key, or of a range of keys, in etcd: /v3/watch through the
 * JSON gateway, one POST whose answer is a stream of JSON objects, one a
 * line ({"result": {"created": true}}, then {"result": {"events": [...]}}),
 * read on the coordinator's loop (etcd_stream_async()).  The watcher's
 * callback gets each event, and the stream's start and end, from the loop,
 * never from inside curl: what it does (free the watch, campaign) is safe.
 * A stream that ended is not made again here: its owner makes a new one
 * from the revision it knows (etcd_watch_revision()).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "etcd.h"
#include "log.h"

/* A line of the stream longer than this ends it: a watch of one key gets a
 * few hundred bytes an event. */
#define ETCD_WATCH_LINE_MAX	(4 * 1024 * 1024)

struct etcd_watch {
	struct etcd	*e;
	struct etcd_req	*req;		/* the stream, NULL once it ended */
	size_t		 which;		/* its endpoint */
	char		*line;		/* a line being read */
	size_t		 len;
	size_t		 cap;
	json_t		*pending;	/* results read, not yet delivered */
	int		 created;	/* etcd said the watch is on */
	int		 told_created;
	int		 ended;		/* the stream ended (or must) */
	int		 told_ended;
	int		 in_fn;		/* fn runs */
	int		 freed;		/* fn freed the watch */
	int64_t		 rev;		/* the last revision seen */
	struct event	*deliver;	/* hands pending to fn, on the loop */
	etcd_watch_fn	 fn;
	void		*arg;
};

static void	etcd_watch_release(struct etcd_watch *);

/*
 * Calls the watcher's fn.  Returns 0, or -1 if fn freed the watch (then
 * freed here, once fn returned).
 */
static int
etcd_watch_tell(struct etcd_watch *w, int type, const char *key,
    const char *value, size_t vlen, const json_t *kv)
{
	w->in_fn = 1;
	w->fn(w->arg, type, key, value, vlen, kv);
	w->in_fn = 0;
	if (!w->freed)
		return (0);
	etcd_watch_release(w);
	return (-1);
}

/* Delivers what the stream read, then its end, from the loop. */
static void
etcd_watch_deliver(evutil_socket_t fd, short what, void *arg)
{
	struct etcd_watch	*w = arg;
	json_t			*res, *ev, *kv, *type;
	char			*key, *value;
	size_t			 vlen, i;
	int			 rc = 0;

	(void)fd;
	(void)what;
	if (w->created && !w->told_created) {
		w->told_created = 1;
		if (etcd_watch_tell(w, ETCD_WATCH_CREATED, NULL, NULL, 0,
		    NULL) == -1)
			return;
	}
	while (rc == 0 && (res = json_array_get(w->pending, 0)) != NULL) {
		json_incref(res);
		json_array_remove(w->pending, 0);
		json_array_foreach(json_object_get(res, "events"), i, ev) {
			kv = json_object_get(ev, "kv");
			/* A put's type is left out: the enum's zero. */
			type = json_object_get(ev, "type");
			key = etcd_unb64(json_object_get(kv, "key"), NULL);
			value = etcd_unb64(json_object_get(kv, "value"), &vlen);
			if (key != NULL && value != NULL)
				rc = etcd_watch_tell(w, json_is_string(type) &&
				    strcmp(json_string_value(type), "DELETE") ==
				    0 ? ETCD_WATCH_DELETE : ETCD_WATCH_PUT, key,
				    value, vlen, kv);
			free(key);
			free(value);
			if (rc == -1)
				break;
		}
		json_decref(res);
	}
	if (rc == 0 && w->ended && !w->told_ended) {
		w->told_ended = 1;
		etcd_watch_tell(w, ETCD_WATCH_ENDED, NULL, NULL, 0, NULL);
	}
}

/* Takes one line of the stream.  Returns 0, or -1 to end it. */
static int
etcd_watch_line(struct etcd_watch *w, const char *line, size_t len)
{
	json_t	*j, *res;
	int64_t	 rev;

	if ((j = json_loadb(line, len, 0, NULL)) == NULL) {
		log_warnx("%s: %s: not a JSON line", __func__,
		    w->e->endpoints[w->which]);
		return (-1);
	}
	if ((res = json_object_get(j, "result")) == NULL) {
		log_warnx("%s: %s: %.200s", __func__, w->e->endpoints[w->which],
		    line);
		json_decref(j);
		return (-1);
	}
	if ((rev = etcd_int(json_object_get(res, "header"), "revision")) >
	    w->rev)
		w->rev = rev;
	if (json_is_true(json_object_get(res, "canceled"))) {
		/* Compacted past the start, or refused: the owner starts
		 * again from what it reads now. */
		log_info("%s: %s: watch canceled (compact revision %lld)",
		    __func__, w->e->endpoints[w->which],
		    (long long)etcd_int(res, "compact_revision"));
		json_decref(j);
		return (-1);
	}
	if (json_is_true(json_object_get(res, "created")))
		w->created = 1;
	if (json_array_size(json_object_get(res, "events")) > 0)
		json_array_append(w->pending, res);
	json_decref(j);
	return (0);
}

/* Bytes of the stream, from inside curl: cut into lines, parsed, queued. */
static int
etcd_watch_chunk(void *arg, const char *data, size_t len)
{
	struct etcd_watch	*w = arg;
	const char		*nl;
	size_t			 n, cap;
	char			*p;

	while (len > 0) {
		nl = memchr(data, '\n', len);
		n = nl != NULL ? (size_t)(nl - data) : len;
		if (w->len + n + 1 > ETCD_WATCH_LINE_MAX)
			goto end;
		if (w->len + n + 1 > w->cap) {
			cap = w->cap == 0 ? 1024 : w->cap;
			while (cap < w->len + n + 1)
				cap *= 2;
			if ((p = realloc(w->line, cap)) == NULL)
				goto end;
			w->line = p;
			w->cap = cap;
		}
		memcpy(w->line + w->len, data, n);
		w->len += n;
		if (nl == NULL)
			break;
		if (w->len > 0 && etcd_watch_line(w, w->line, w->len) == -1)
			goto end;
		w->len = 0;
		data += n + 1;
		len -= n + 1;
	}
	if (w->created || json_array_size(w->pending) > 0)
		event_active(w->deliver, EV_TIMEOUT, 1);
	return (0);
end:
	w->ended = 1;
	event_active(w->deliver, EV_TIMEOUT, 1);
	return (-1);
}

/* The stream ended (etcd_stream_async()'s done, from the loop). */
static void
etcd_watch_done(void *arg, int rc, json_t *ans)
{
	struct etcd_watch	*w = arg;
	struct etcd		*e = w->e;

	(void)rc;
	json_decref(ans);
	w->req = NULL;
	w->ended = 1;
	log_debug("%s: %s", __func__, e->error);
	/* The next stream, and the next request, try another member. */
	if (e->cur == w->which)
		e->cur = (w->which + 1) % e->nendpoints;
	event_active(w->deliver, EV_TIMEOUT, 1);
}

/*
 * Watches key (the keys from key to range_end if not NULL) from revision
 * from_rev (0: from now) on the endpoint that answered last: fn(arg, type,
 * key, value, its length, the whole kv) for every event, ETCD_WATCH_CREATED
 * once etcd has the watch, ETCD_WATCH_ENDED once the stream is gone (then
 * only etcd_watch_free()).  Returns the watch, or NULL (out of memory, no
 * loop).
 */
struct etcd_watch *
etcd_watch_new(struct etcd *e, const char *key, const char *range_end,
    int64_t from_rev, etcd_watch_fn fn, void *arg)
{
	struct etcd_watch	*w;
	json_t			*req;

	if (e->base == NULL || (w = calloc(1, sizeof(*w))) == NULL)
		return (NULL);
	w->e = e;
	w->fn = fn;
	w->arg = arg;
	w->which = e->cur;
	w->rev = from_rev > 0 ? from_rev - 1 : 0;
	if ((w->pending = json_array()) == NULL ||
	    (w->deliver = event_new(e->base, -1, 0, etcd_watch_deliver, w)) ==
	    NULL)
		goto fail;
	req = json_pack("{s:o}", "key", etcd_b64(key, strlen(key)));
	if (req != NULL && range_end != NULL)
		json_object_set_new(req, "range_end", etcd_b64(range_end,
		    strlen(range_end)));
	if (req != NULL && from_rev > 0)
		json_object_set_new(req, "start_revision",
		    etcd_int_json(from_rev));
	if (req == NULL)
		goto fail;
	if ((w->req = etcd_stream_async(e, w->which, "/v3/watch",
	    json_pack("{s:o}", "create_request", req), etcd_watch_chunk,
	    etcd_watch_done, w)) == NULL)
		goto fail;
	return (w);
fail:
	etcd_watch_free(w);
	return (NULL);
}

/* Returns the last revision the watch saw (its start's, less one, before). */
int64_t
etcd_watch_revision(const struct etcd_watch *w)
{
	return (w->rev);
}

/* Frees the watch and its stream. */
static void
etcd_watch_release(struct etcd_watch *w)
{
	etcd_stream_cancel(w->req);
	if (w->deliver != NULL)
		event_free(w->deliver);
	json_decref(w->pending);
	free(w->line);
	free(w);
}

/*
 * Ends the watch: its callback is not called again.  From its callback too
 * (freed once the callback returns).
 */
void
etcd_watch_free(struct etcd_watch *w)
{
	if (w == NULL)
		return;
	if (w->in_fn) {
		w->freed = 1;
		return;
	}
	etcd_watch_release(w);
}
