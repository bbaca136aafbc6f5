/* conn_guard.c: slow and many connections cannot hold the endpoint (issue
 * 13). libmicrohttpd's own timeout is an idle timeout, so a client that
 * sends one header byte every few seconds keeps its connection, and its
 * thread, forever. Here every connection has a phase: waiting for a
 * request's headers (at most MCP_HEADER_DEADLINE_MS after the connection
 * opened or the previous request ended), receiving a body (after a grace
 * period, at least MCP_BODY_MIN_BYTES_PER_S on average), or being handled
 * (no deadline: tool calls bound themselves). A watchdog thread cuts the
 * connections past their deadline (shutdown of a dup of the socket, so a
 * reused descriptor number is never hit). Loopback peers all share one
 * address, so instead of a per-address cap, TCP connections that have not
 * yet sent their first request's headers are capped: a new one past the
 * cap pushes out the oldest, so a flood of idle connections cannot keep a
 * client that sends its headers at once from being served. The same thread
 * notices a peer that hangs up while its 2026-07-28 request is handled: for
 * that revision a closed connection cancels the request (MCP 2026-07-28
 * basic/patterns/cancellation, "Transport-specific cancellation"). */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "../base/xalloc.h"

#define WATCHDOG_PERIOD_MS 500

struct mcp_conn {
	LIST_ENTRY(mcp_conn) link; /* in the guard's conns */
	int fd;                    /* our own dup of the connection's socket, -1 when none */
	int is_unix;
	enum { CONN_WAITING, CONN_BODY, CONN_HANDLING } phase;
	int fresh;        /* no request of it has sent its headers yet */
	int cut;          /* shut down by the guard */
	int64_t since_ms; /* monotonic: when the phase began */
	size_t body_bytes;
	uint64_t serial;  /* unique for the server's life; never 0 */
	int watch_hangup; /* a 2026-07-28 request is being handled: its peer's hangup cancels it */
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Under g->lock. */
static void cut_locked(struct mcp_conn_guard *g, struct mcp_conn *c)
{
	if (c->cut || c->fd < 0)
		return;
	shutdown(c->fd, SHUT_RDWR);
	c->cut = 1;
	if (c->fresh && !c->is_unix)
		g->fresh_tcp--;
	c->fresh = 0;
}

/* The phase's deadline has passed: headers too slow, or a body below the
 * minimum rate after its grace period. Pure. */
int mcp_conn_overdue(int phase_body, int64_t elapsed_ms, size_t body_bytes, const struct mcp_conn_limits *lim)
{
	if (!phase_body)
		return elapsed_ms > lim->header_deadline_ms;
	if (elapsed_ms <= lim->body_grace_ms)
		return 0;
	double want = (double)(elapsed_ms - lim->body_grace_ms) / 1000.0 * (double)lim->body_min_bytes_per_s;
	return (double)body_bytes < want;
}

/* True when the peer of fd has closed its side or the connection broke.
 * A 2026-07-28 client sends nothing more after its request, so the end of
 * its input is its hangup (poll(2): POLLRDHUP). Does not block. */
static int peer_gone(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLRDHUP};
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

#define HANGUPS_PER_PASS 64

/* One watchdog pass: overdue connections cut, hung-up 2026-07-28 peers'
 * calls cancelled. */
static long watchdog_pass(void *arg)
{
	struct mcp_server *server = arg;
	struct mcp_conn_guard *g = &server->guard;
	pthread_mutex_lock(&g->lock);
	int64_t now = now_ms();
	unsigned slow = 0;
	uint64_t hung_up[HANGUPS_PER_PASS];
	size_t n_hung_up = 0;
	struct mcp_conn *c;
	LIST_FOREACH (c, &g->conns, link) {
		if (c->watch_hangup && !c->cut && c->fd >= 0 && n_hung_up < HANGUPS_PER_PASS && peer_gone(c->fd))
			hung_up[n_hung_up++] = c->serial; /* again each pass: the call may register later */
		if (c->cut || c->phase == CONN_HANDLING)
			continue;
		if (mcp_conn_overdue(c->phase == CONN_BODY, now - c->since_ms, c->body_bytes, &g->limits)) {
			cut_locked(g, c);
			slow++;
		}
	}
	pthread_mutex_unlock(&g->lock);
	/* Outside the guard's lock: cancelling wakes the call's waits. */
	for (size_t i = 0; i < n_hung_up; i++)
		if (mcp_cancel_owner(server, hung_up[i]))
			log_debug("mcp", "a 2026-07-28 client hung up: its tool call is cancelled");
	if (slow)
		mcp_log_refusal(server, MCP_REFUSED_SLOW,
		                "closed %u connection(s) that sent no complete request headers within %lld ms, or "
		                "a body slower than %zu bytes/s",
		                slow, (long long)g->limits.header_deadline_ms, g->limits.body_min_bytes_per_s);
	return -1; /* every WATCHDOG_PERIOD_MS */
}

void mcp_conn_guard_init(struct mcp_conn_guard *g, const struct mcp_conn_limits *lim)
{
	memset(g, 0, sizeof(*g));
	g->limits = *lim;
	LIST_INIT(&g->conns);
	pthread_mutex_init(&g->lock, NULL);
}

int mcp_conn_guard_start(struct mcp_server *server)
{
	struct mcp_conn_guard *g = &server->guard;
	if (g->watchdog)
		return 0;
	g->watchdog = periodic_start("connection watchdog", 0, WATCHDOG_PERIOD_MS, watchdog_pass, server);
	return g->watchdog ? 0 : -1;
}

void mcp_conn_guard_stop(struct mcp_conn_guard *g)
{
	periodic_stop(g->watchdog);
	g->watchdog = NULL;
}

void mcp_conn_guard_destroy(struct mcp_conn_guard *g)
{
	mcp_conn_guard_stop(g);
	pthread_mutex_destroy(&g->lock);
}

struct mcp_conn *mcp_conn_started(struct mcp_server *server, int fd, int is_unix)
{
	struct mcp_conn_guard *g = &server->guard;
	struct mcp_conn *c = xcalloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	c->is_unix = is_unix;
	c->phase = CONN_WAITING;
	c->fresh = 1;
	c->since_ms = now_ms();
	int pushed_out = 0;
	pthread_mutex_lock(&g->lock);
	c->serial = ++g->next_serial;
	if (!is_unix) {
		/* Past the cap, the oldest connection still without headers goes. */
		while (g->fresh_tcp >= g->limits.max_fresh_tcp) {
			struct mcp_conn *oldest = NULL;
			struct mcp_conn *o;
			LIST_FOREACH (o, &g->conns, link)
				if (!o->is_unix && o->fresh && !o->cut && (!oldest || o->since_ms <= oldest->since_ms))
					oldest = o;
			if (!oldest)
				break;
			cut_locked(g, oldest);
			pushed_out++;
		}
		g->fresh_tcp++;
	}
	LIST_INSERT_HEAD(&g->conns, c, link);
	pthread_mutex_unlock(&g->lock);
	if (pushed_out)
		mcp_log_refusal(server, MCP_REFUSED_FLOOD,
		                "%u connections were open without sending a request; closed the oldest to make room",
		                g->limits.max_fresh_tcp);
	return c;
}

void mcp_conn_closed(struct mcp_server *server, struct mcp_conn *c)
{
	if (!c)
		return;
	struct mcp_conn_guard *g = &server->guard;
	pthread_mutex_lock(&g->lock);
	if (c->fresh && !c->cut && !c->is_unix)
		g->fresh_tcp--;
	LIST_REMOVE(c, link);
	pthread_mutex_unlock(&g->lock);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

/* Moves c to phase (headers arrived, body bytes, handling, idle again). */
static void set_phase(struct mcp_server *server, struct mcp_conn *c, int phase, size_t add_bytes, int reset)
{
	if (!c)
		return;
	struct mcp_conn_guard *g = &server->guard;
	pthread_mutex_lock(&g->lock);
	if (c->fresh && phase != CONN_WAITING) {
		c->fresh = 0;
		if (!c->cut && !c->is_unix)
			g->fresh_tcp--;
	}
	if (reset || (int)c->phase != phase) {
		c->since_ms = now_ms();
		c->body_bytes = 0;
	}
	c->phase = phase;
	c->body_bytes += add_bytes;
	if (phase == CONN_WAITING)
		c->watch_hangup = 0; /* the request was answered */
	pthread_mutex_unlock(&g->lock);
}

void mcp_conn_headers_done(struct mcp_server *server, struct mcp_conn *c)
{
	set_phase(server, c, CONN_BODY, 0, 1);
}

void mcp_conn_body(struct mcp_server *server, struct mcp_conn *c, size_t n)
{
	set_phase(server, c, CONN_BODY, n, 0);
}

void mcp_conn_handling(struct mcp_server *server, struct mcp_conn *c)
{
	set_phase(server, c, CONN_HANDLING, 0, 0);
}

void mcp_conn_idle(struct mcp_server *server, struct mcp_conn *c)
{
	set_phase(server, c, CONN_WAITING, 0, 1);
}

uint64_t mcp_conn_watch_hangup(struct mcp_server *server, struct mcp_conn *c)
{
	if (!c)
		return 0;
	struct mcp_conn_guard *g = &server->guard;
	pthread_mutex_lock(&g->lock);
	c->watch_hangup = 1;
	uint64_t serial = c->serial;
	pthread_mutex_unlock(&g->lock);
	return serial;
}
