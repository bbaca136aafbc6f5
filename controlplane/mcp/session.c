/* session.c: the MCP session table (basic/transports, "Session Management").
 * Owns every session record: a random id, the negotiated protocol version and
 * the time of last use, in least-recently-used order under one mutex. Idle
 * sessions expire lazily on each access; the count is capped by evicting the
 * least recently used. Holds nothing a tool handler needs. */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/random.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"

#define SESSION_ID_BYTES 16 /* 128 bits, shown as 32 hex characters */

struct session {
	TAILQ_ENTRY(session) link; /* most recently used first */
	char id[2 * SESSION_ID_BYTES + 1];
	char protocol_version[16];
	int64_t last_used_ms;
};

struct mcp_session_table {
	pthread_mutex_t lock;
	TAILQ_HEAD(session_list, session) list;
	size_t count;
	size_t max;
	long idle_ms;
};

/* Creates an empty session table (MCP basic/transports, "Session
 * Management") holding at most max_sessions (at least 1) sessions, each
 * expiring idle_ms after its last use. Returns an owned table, never NULL. */
struct mcp_session_table *mcp_session_table_new(size_t max_sessions, long idle_ms)
{
	struct mcp_session_table *t = xcalloc(1, sizeof(*t));
	TAILQ_INIT(&t->list);
	pthread_mutex_init(&t->lock, NULL);
	t->max = max_sessions ? max_sessions : 1;
	t->idle_ms = idle_ms;
	return t;
}

/* Frees the table and every session in it (the server side of ending all
 * sessions, basic/transports "Session Management"); accepts NULL. No request
 * may be using the table any more. */
void mcp_session_table_free(struct mcp_session_table *t)
{
	if (!t)
		return;
	struct session *s;
	while ((s = TAILQ_FIRST(&t->list))) {
		TAILQ_REMOVE(&t->list, s, link);
		free(s);
	}
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct session *oldest_locked(struct mcp_session_table *t)
{
	return TAILQ_LAST(&t->list, session_list);
}

static void remove_locked(struct mcp_session_table *t, struct session *s)
{
	TAILQ_REMOVE(&t->list, s, link);
	t->count--;
	free(s);
}

/* The list is in order of last use, so the expired ones are at the tail. */
static void expire_locked(struct mcp_session_table *t, int64_t now)
{
	struct session *s;
	while ((s = oldest_locked(t)) && now - s->last_used_ms >= t->idle_ms) {
		log_debug("mcp", "session %.8s… expired after %ld ms idle", s->id, t->idle_ms);
		remove_locked(t, s);
	}
}

static struct session *find_locked(struct mcp_session_table *t, const char *id)
{
	struct session *s;
	TAILQ_FOREACH (s, &t->list, link) {
		if (strcmp(s->id, id) == 0)
			return s;
	}
	return NULL;
}

static int random_bytes(unsigned char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(buf + got, n - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)r;
	}
	return 0;
}

/* Creates a session (basic/transports, "Session Management": a globally
 * unique, cryptographically secure id of visible ASCII) and records
 * protocol_version (borrowed). Evicts the least recently used session when
 * the table is full. Returns 0 and an owned id in *ret_id; INTERNAL in *err
 * when the kernel's random source fails. Does not block (except on
 * the table's mutex, held only for list edits). */
int mcp_session_create(struct mcp_session_table *t, const char *protocol_version, char **ret_id, struct cp_error **err)
{
	unsigned char raw[SESSION_ID_BYTES];
	int r = random_bytes(raw, sizeof(raw));
	if (r < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, -r, "create session: getrandom");
	struct session *s = xcalloc(1, sizeof(*s));
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(s->id + 2 * i, 3, "%02x", raw[i]);
	snprintf(s->protocol_version, sizeof(s->protocol_version), "%s", protocol_version ? protocol_version : "");
	char *copy = xstrdup(s->id);

	/* The clock is read under the lock so the list stays in order of use. */
	pthread_mutex_lock(&t->lock);
	int64_t now = clock_now_ms();
	s->last_used_ms = now;
	expire_locked(t, now);
	for (struct session *old; t->count >= t->max && (old = oldest_locked(t));) {
		log_debug("mcp", "session %.8s… evicted: %zu sessions is the cap", old->id, t->max);
		remove_locked(t, old);
	}
	TAILQ_INSERT_HEAD(&t->list, s, link);
	t->count++;
	pthread_mutex_unlock(&t->lock);
	*ret_id = copy;
	return 0;
}

/* Marks the session id (borrowed) as used now. Returns 1 when it is live, 0
 * when it is unknown, ended or expired (the transport answers 404:
 * basic/transports, "Session Management"). */
int mcp_session_touch(struct mcp_session_table *t, const char *id)
{
	pthread_mutex_lock(&t->lock);
	int64_t now = clock_now_ms();
	expire_locked(t, now);
	struct session *s = find_locked(t, id);
	if (s) {
		s->last_used_ms = now;
		TAILQ_REMOVE(&t->list, s, link);
		TAILQ_INSERT_HEAD(&t->list, s, link);
	}
	pthread_mutex_unlock(&t->lock);
	return s != NULL;
}

/* Copies the protocol revision session id (borrowed) negotiated at its
 * initialize into buf (always terminated; "" when none was recorded).
 * Returns 1 when the session is live, 0 otherwise. Does not touch it. */
int mcp_session_version(struct mcp_session_table *t, const char *id, char *buf, size_t size)
{
	pthread_mutex_lock(&t->lock);
	struct session *s = find_locked(t, id);
	if (size)
		snprintf(buf, size, "%s", s ? s->protocol_version : "");
	pthread_mutex_unlock(&t->lock);
	return s != NULL;
}

/* Ends the session id (borrowed), as an HTTP DELETE asks
 * (basic/transports, "Session Management"). Returns 1 when it was live, 0
 * when it was unknown. */
int mcp_session_end(struct mcp_session_table *t, const char *id)
{
	pthread_mutex_lock(&t->lock);
	expire_locked(t, clock_now_ms());
	struct session *s = find_locked(t, id);
	int found = s != NULL;
	if (s)
		remove_locked(t, s);
	pthread_mutex_unlock(&t->lock);
	return found;
}

/* Number of live sessions (basic/transports, "Session Management"; expired
 * ones are dropped first). For tests and status output. Does not block. */
size_t mcp_session_count(struct mcp_session_table *t)
{
	pthread_mutex_lock(&t->lock);
	expire_locked(t, clock_now_ms());
	size_t n = t->count;
	pthread_mutex_unlock(&t->lock);
	return n;
}
