/* refusal.c: the log line of a refused connection or request (http.c's peer,
 * socket and token checks, conn_guard.c's slow and flooding connections),
 * rate-limited per kind so a flood of bad requests cannot flood the log.
 * Owns nothing but the counters in struct mcp_server; never refuses anything
 * itself. */
#include "internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "../base/log.h"

/* Logs a refused connection or request, at most once per interval with the
 * number refused since, so a flood of bad requests cannot flood the log. */
#define MCP_AUTH_LOG_INTERVAL_MS 10000
void mcp_log_refusal(struct mcp_server *server, enum mcp_refusal kind, const char *fmt, ...)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	pthread_mutex_lock(&server->auth_log_lock);
	unsigned long n = ++server->refusals[kind].count;
	int due =
	    server->refusals[kind].last_ms == 0 || now - server->refusals[kind].last_ms >= MCP_AUTH_LOG_INTERVAL_MS;
	if (due) {
		server->refusals[kind].last_ms = now;
		server->refusals[kind].count = 0;
	}
	pthread_mutex_unlock(&server->auth_log_lock);
	if (!due)
		return;
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (n > 1)
		log_warn("mcp", "%s (%lu refusals since the last such line)", text, n);
	else
		log_warn("mcp", "%s", text);
}
