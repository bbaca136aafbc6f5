/* resume.c: the event buffer behind resumable SSE streams (MCP 2025-11-25
 * and 2025-06-18 basic/transports, "Resumability and Redelivery"). Every
 * SSE answer is a stream with a random 64-bit key; its events carry ids
 * "<key>-<seq>" (globally unique, and they name their stream). A stream's
 * events are kept while it runs and for keep_ms after it ends, bounded in
 * count, bytes per stream and bytes in all, so a client that lost the
 * connection can GET them again with Last-Event-ID. Readers (the POST's own
 * response, a resuming GET) each have a cursor; a reader of a running stream
 * waits for its next event. A 2026-07-28 answer is a plain stream: the same
 * events without ids, never listed, so never resumable (MCP 2026-07-28
 * basic/transports/streamable-http, "Receiving Messages"). Owns the streams
 * and their events; knows no HTTP. */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"

struct resume_event {
	STAILQ_ENTRY(resume_event) link;
	uint64_t seq;
	size_t len;
	char text[]; /* "id: KEY-SEQ\ndata: JSON\n\n" */
};

struct mcp_stream {
	struct mcp_resume *table;
	TAILQ_ENTRY(mcp_stream) link; /* the table's list, oldest first; only while listed */
	int listed;
	char key[MCP_STREAM_KEY_LEN + 1];
	char *session_id;                   /* NULL for a stateless request */
	STAILQ_HEAD(, resume_event) events; /* oldest first */
	uint64_t next_seq;                  /* the seq of the next event appended (the first is 1) */
	size_t bytes;                       /* of the events kept */
	int done;                           /* no event will be added */
	int abandoned;                      /* ended without its response (cancelled) */
	int64_t ended_ms;                   /* monotonic, when done */
	int refs;                           /* writer + readers + the table's listing; under the table's lock */
	int plain;                          /* never resumable: not listed, events without an id line */
};

struct mcp_stream_reader {
	struct mcp_stream *stream;
	uint64_t next_seq; /* the next event to hand out */
	size_t offset;     /* bytes of it already handed out */
};

struct mcp_resume {
	struct mcp_resume_limits lim;
	pthread_mutex_t lock;
	pthread_cond_t changed;           /* any stream got an event or ended */
	TAILQ_HEAD(, mcp_stream) streams; /* listed ones, oldest first */
	size_t count;
	size_t bytes;
	int closing; /* the server stops: readers end now */
};

struct mcp_resume *mcp_resume_new(const struct mcp_resume_limits *lim)
{
	struct mcp_resume *t = xcalloc(1, sizeof(*t));
	t->lim = *lim;
	TAILQ_INIT(&t->streams);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->changed, NULL);
	return t;
}

static void stream_free_locked(struct mcp_stream *s)
{
	struct resume_event *e;
	while ((e = STAILQ_FIRST(&s->events))) {
		STAILQ_REMOVE_HEAD(&s->events, link);
		free(e);
	}
	free(s->session_id);
	free(s);
}

static void unref_locked(struct mcp_stream *s)
{
	if (--s->refs == 0)
		stream_free_locked(s);
}

/* Takes s off the table; the table's reference is the caller's to drop. */
static void unlink_locked(struct mcp_resume *t, struct mcp_stream *s)
{
	TAILQ_REMOVE(&t->streams, s, link);
	s->listed = 0;
	t->count--;
	t->bytes -= s->bytes;
}

static void unlist_locked(struct mcp_resume *t, struct mcp_stream *s)
{
	if (!s->listed)
		return;
	unlink_locked(t, s);
	unref_locked(s);
}

/* Drops ended streams past keep_ms, then ended streams oldest first while
 * the table is over its count or byte bounds. Running streams stay: the
 * connection limit bounds them, the per-stream bound their bytes. */
static void expire_locked(struct mcp_resume *t, int64_t now)
{
	for (struct mcp_stream *s = TAILQ_FIRST(&t->streams), *next; s; s = next) {
		next = TAILQ_NEXT(s, link);
		if (s->done && now - s->ended_ms >= t->lim.keep_ms)
			unlist_locked(t, s);
	}
	for (struct mcp_stream *s = TAILQ_FIRST(&t->streams), *next;
	     s && (t->count > t->lim.max_streams || t->bytes > t->lim.max_bytes); s = next) {
		next = TAILQ_NEXT(s, link);
		if (s->done)
			unlist_locked(t, s);
	}
}

void mcp_resume_free(struct mcp_resume *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->lock);
	while (!TAILQ_EMPTY(&t->streams))
		unlist_locked(t, TAILQ_FIRST(&t->streams));
	pthread_mutex_unlock(&t->lock);
	pthread_cond_destroy(&t->changed);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

void mcp_resume_shutdown(struct mcp_resume *t)
{
	pthread_mutex_lock(&t->lock);
	t->closing = 1;
	pthread_cond_broadcast(&t->changed);
	pthread_mutex_unlock(&t->lock);
}

int mcp_stream_open(struct mcp_resume *t, const char *session_id, struct mcp_stream **ret, struct cp_error **err)
{
	unsigned char raw[MCP_STREAM_KEY_LEN / 2];
	size_t got = 0;
	while (got < sizeof(raw)) {
		ssize_t r = getrandom(raw + got, sizeof(raw) - got, 0);
		if (r < 0 && errno != EINTR)
			return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "open an SSE stream: getrandom");
		if (r > 0)
			got += (size_t)r;
	}
	struct mcp_stream *s = xcalloc(1, sizeof(*s));
	s->session_id = xstrdup(session_id);
	STAILQ_INIT(&s->events);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(s->key + 2 * i, 3, "%02x", raw[i]);
	s->table = t;
	s->next_seq = 1;
	s->refs = 2; /* the writer and the listing */
	pthread_mutex_lock(&t->lock);
	s->listed = 1;
	TAILQ_INSERT_TAIL(&t->streams, s, link);
	t->count++;
	expire_locked(t, clock_monotonic_ms());
	pthread_mutex_unlock(&t->lock);
	*ret = s;
	return 0;
}

struct mcp_stream *mcp_stream_open_plain(struct mcp_resume *t)
{
	struct mcp_stream *s = xcalloc(1, sizeof(*s));
	STAILQ_INIT(&s->events);
	s->table = t;
	s->next_seq = 1;
	s->refs = 1; /* the writer; never listed */
	s->plain = 1;
	return s;
}

const char *mcp_stream_key(const struct mcp_stream *s)
{
	return s->key;
}

int mcp_stream_append(struct mcp_stream *s, const char *json)
{
	struct mcp_resume *t = s->table;
	size_t jl = strlen(json);
	pthread_mutex_lock(&t->lock);
	if (s->done) {
		pthread_mutex_unlock(&t->lock);
		return -1;
	}
	uint64_t seq = s->next_seq++;
	char head[64];
	int hn = s->plain ? snprintf(head, sizeof(head), "data: ")
	                  : snprintf(head, sizeof(head), "id: %s-%" PRIu64 "\ndata: ", s->key, seq);
	struct resume_event *e = xmalloc(sizeof(*e) + (size_t)hn + jl + 3);
	e->seq = seq;
	e->len = (size_t)hn + jl + 2;
	memcpy(e->text, head, (size_t)hn);
	memcpy(e->text + hn, json, jl);
	memcpy(e->text + hn + jl, "\n\n", 3);
	STAILQ_INSERT_TAIL(&s->events, e, link);
	s->bytes += e->len;
	if (s->listed)
		t->bytes += e->len;
	/* Bounded per stream: the oldest events go first (a resume that needs
	 * them is refused as such); the newest always stays. */
	while (s->bytes > t->lim.max_stream_bytes && STAILQ_FIRST(&s->events) != e) {
		struct resume_event *old = STAILQ_FIRST(&s->events);
		STAILQ_REMOVE_HEAD(&s->events, link);
		s->bytes -= old->len;
		if (s->listed)
			t->bytes -= old->len;
		free(old);
	}
	pthread_cond_broadcast(&t->changed);
	pthread_mutex_unlock(&t->lock);
	return 0;
}

void mcp_stream_end(struct mcp_stream *s, enum mcp_stream_end how)
{
	struct mcp_resume *t = s->table;
	pthread_mutex_lock(&t->lock);
	if (!s->done) {
		s->done = 1;
		s->ended_ms = clock_monotonic_ms();
	}
	if (how == MCP_STREAM_ABANDONED)
		s->abandoned = 1;
	if (how == MCP_STREAM_DISCARD && s->listed) {
		unlink_locked(t, s);
		s->refs--; /* the table's; the caller's reference, dropped below, keeps s */
	}
	pthread_cond_broadcast(&t->changed);
	unref_locked(s);
	pthread_mutex_unlock(&t->lock);
}

static struct mcp_stream_reader *reader_new_locked(struct mcp_stream *s, uint64_t next_seq)
{
	struct mcp_stream_reader *r = xcalloc(1, sizeof(*r));
	r->stream = s;
	r->next_seq = next_seq;
	s->refs++;
	return r;
}

struct mcp_stream_reader *mcp_stream_reader_new(struct mcp_stream *s)
{
	pthread_mutex_lock(&s->table->lock);
	struct mcp_stream_reader *r = reader_new_locked(s, 1);
	pthread_mutex_unlock(&s->table->lock);
	return r;
}

/* "KEY-SEQ" → key and seq; 0 when malformed. */
static int parse_event_id(const char *id, char key[MCP_STREAM_KEY_LEN + 1], uint64_t *ret_seq)
{
	if (!id || strlen(id) < MCP_STREAM_KEY_LEN + 2 || id[MCP_STREAM_KEY_LEN] != '-')
		return 0;
	for (size_t i = 0; i < MCP_STREAM_KEY_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return 0;
	const char *num = id + MCP_STREAM_KEY_LEN + 1;
	if (*num < '0' || *num > '9')
		return 0;
	errno = 0;
	char *end;
	unsigned long long seq = strtoull(num, &end, 10);
	if (errno || *end)
		return 0;
	memcpy(key, id, MCP_STREAM_KEY_LEN);
	key[MCP_STREAM_KEY_LEN] = '\0';
	*ret_seq = seq;
	return 1;
}

int mcp_stream_resume(struct mcp_resume *t, const char *last_event_id, const char *session_id,
                      struct mcp_stream_reader **ret, struct cp_error **err)
{
	char key[MCP_STREAM_KEY_LEN + 1];
	uint64_t seq = 0;
	if (!parse_event_id(last_event_id, key, &seq))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "Last-Event-ID is not an event id of this server (expected KEY-N as sent in an "
		                    "SSE 'id:' line)");
	pthread_mutex_lock(&t->lock);
	expire_locked(t, clock_monotonic_ms());
	struct mcp_stream *s;
	TAILQ_FOREACH (s, &t->streams, link) {
		if (strcmp(s->key, key) == 0)
			break;
	}
	/* Another session's stream is refused as unknown (MUST NOT replay on a
	 * different stream, and never to another client); a stateless one is
	 * found by its unguessable key alone. */
	if (s && s->session_id && (!session_id || strcmp(s->session_id, session_id) != 0))
		s = NULL;
	int r = 0;
	if (!s)
		r = cp_error_set(err, CP_ERR_NOT_FOUND,
		                 "event '%.40s' is unknown or its stream expired: events are kept %lld s after their "
		                 "stream ends; call the tool again (a bash session can be polled with bash_poll)",
		                 last_event_id, (long long)(t->lim.keep_ms / 1000));
	else if (seq >= s->next_seq)
		r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "event '%.40s' was never sent on its stream",
		                 last_event_id);
	else if (!STAILQ_EMPTY(&s->events) && STAILQ_FIRST(&s->events)->seq > seq + 1)
		r = cp_error_set(err, CP_ERR_LIMIT,
		                 "the events after '%.40s' are no longer kept (over the %zu KiB a stream keeps); call "
		                 "the tool again",
		                 last_event_id, t->lim.max_stream_bytes / 1024);
	else
		*ret = reader_new_locked(s, seq + 1);
	pthread_mutex_unlock(&t->lock);
	return r;
}

ssize_t mcp_stream_read(struct mcp_stream_reader *r, char *buf, size_t max)
{
	struct mcp_stream *s = r->stream;
	struct mcp_resume *t = s->table;
	pthread_mutex_lock(&t->lock);
	ssize_t n;
	for (;;) {
		struct resume_event *e = STAILQ_FIRST(&s->events);
		if (e && e->seq > r->next_seq) {
			n = -1; /* the events this reader needs were dropped */
			break;
		}
		while (e && e->seq < r->next_seq)
			e = STAILQ_NEXT(e, link);
		if (e) {
			size_t k = e->len - r->offset < max ? e->len - r->offset : max;
			memcpy(buf, e->text + r->offset, k);
			r->offset += k;
			if (r->offset == e->len) {
				r->next_seq++;
				r->offset = 0;
			}
			n = (ssize_t)k;
			break;
		}
		if (s->done) {
			n = s->abandoned ? -1 : 0;
			break;
		}
		if (t->closing) {
			n = -1;
			break;
		}
		pthread_cond_wait(&t->changed, &t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return n;
}

void mcp_stream_reader_free(struct mcp_stream_reader *r)
{
	if (!r)
		return;
	struct mcp_resume *t = r->stream->table;
	pthread_mutex_lock(&t->lock);
	unref_locked(r->stream);
	pthread_mutex_unlock(&t->lock);
	free(r);
}

size_t mcp_resume_count(struct mcp_resume *t, size_t *ret_bytes)
{
	pthread_mutex_lock(&t->lock);
	expire_locked(t, clock_monotonic_ms());
	size_t n = t->count;
	if (ret_bytes)
		*ret_bytes = t->bytes;
	pthread_mutex_unlock(&t->lock);
	return n;
}
