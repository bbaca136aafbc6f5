/* reqlog.c: one structured line per JSON-RPC message (method, tool, sandbox,
 * session, status, duration) on stderr, and the same record handed to the
 * server's request hook (the audit row, written by tools/ so mcp/ stays free
 * of SQL). Owns no state; never logs a whole payload, a full session id or
 * any client text that is not cut to a safe alphabet (issue 5, "Logs"). */
#include "internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "../base/text.h"

/* Client-chosen words in a log line are cut and reduced to a safe alphabet,
 * so a crafted name can neither forge a second line nor flood the log.
 * Returns buf, or "-" for NULL or empty s. */
const char *mcp_log_word(const char *s, char *buf, size_t size)
{
	if (!s || !*s || size == 0)
		return "-";
	size_t i = 0;
	for (; s[i] && i + 1 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		buf[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		                 c == '-' || c == '.' || c == '/'
		             ? (char)c
		             : '?';
	}
	buf[i] = '\0';
	return buf;
}

/* JSON-RPC error codes as the status word of a log line. */
static const char *rpc_code_name(int code)
{
	switch (code) {
	case MCP_RPC_PARSE_ERROR: return "PARSE_ERROR";
	case MCP_RPC_INVALID_REQUEST: return "INVALID_REQUEST";
	case MCP_RPC_METHOD_NOT_FOUND: return "METHOD_NOT_FOUND";
	case MCP_RPC_INVALID_PARAMS: return "INVALID_PARAMS";
	case MCP_RPC_SESSION_NOT_FOUND: return "SESSION_NOT_FOUND";
	default: return "INTERNAL_ERROR";
	}
}

/* Records the method (borrowed text, cut) and session (first 8 characters)
 * of a message in info. */
void mcp_request_info_begin(struct mcp_request_info *info, const char *method, const char *session_id)
{
	memset(info, 0, sizeof(*info));
	info->start_ms = clock_monotonic_ms();
	mcp_log_word(method, info->method, sizeof(info->method));
	if (!method)
		snprintf(info->method, sizeof(info->method), "-");
	if (session_id)
		snprintf(info->session, sizeof(info->session), "%.8s", session_id);
}

/* Sets the status (static text) and message (copied, cut) unless already set. */
void mcp_request_info_fail(struct mcp_request_info *info, const char *status, const char *message)
{
	if (info->status)
		return;
	info->status = status;
	if (message)
		text_clip(message, 300, info->message, sizeof(info->message));
}

/* Derives the status from reply (borrowed, may be NULL) when the handler
 * set none: a JSON-RPC error's code and message, else "ok". */
static void status_from_reply(struct mcp_request_info *info, struct json_object *reply)
{
	struct json_object *e, *v;
	if (info->status)
		return;
	if (reply && json_object_object_get_ex(reply, "error", &e) && json_object_is_type(e, json_type_object)) {
		int code = json_object_object_get_ex(e, "code", &v) ? json_object_get_int(v) : MCP_RPC_INTERNAL_ERROR;
		const char *msg = json_object_object_get_ex(e, "message", &v) ? json_object_get_string(v) : NULL;
		mcp_request_info_fail(info, rpc_code_name(code), msg);
		return;
	}
	info->status = "ok";
}

/* The request lines of one connection are rate-limited (issue 13): a
 * token bucket per thread, and libmicrohttpd runs each connection on its own
 * thread (stdio: its reader and call threads). Past it lines are counted,
 * and the next line that goes out says how many were not written. */
#define REQLOG_BURST 50.0
#define REQLOG_PER_S 20.0
static __thread double bucket_tokens = -1;
static __thread int64_t bucket_ms;
static __thread unsigned long bucket_dropped;

static int line_allowed(unsigned long *ret_dropped)
{
	int64_t now = clock_monotonic_ms();
	if (bucket_tokens < 0) {
		bucket_tokens = REQLOG_BURST;
		bucket_ms = now;
	}
	bucket_tokens += (double)(now - bucket_ms) * REQLOG_PER_S / 1000.0;
	if (bucket_tokens > REQLOG_BURST)
		bucket_tokens = REQLOG_BURST;
	bucket_ms = now;
	if (bucket_tokens < 1.0) {
		bucket_dropped++;
		return 0;
	}
	bucket_tokens -= 1.0;
	*ret_dropped = bucket_dropped;
	bucket_dropped = 0;
	return 1;
}

/* Ends a message's record: logs one info line (component "mcp", event
 * "request"; at most REQLOG_PER_S a second per connection after a burst)
 * and calls the server's request hook, which writes the audit row whether
 * the line was logged or not. reply is borrowed. */
void mcp_request_done(struct mcp_server *server, struct mcp_request_info *info, struct json_object *reply)
{
	status_from_reply(info, reply);
	struct mcp_request_record rec = {
	    .method = info->method,
	    .tool = info->tool[0] ? info->tool : NULL,
	    .sandbox_id = info->sandbox[0] ? info->sandbox : NULL,
	    .target = info->target[0] ? info->target : NULL,
	    .session = info->session[0] ? info->session : NULL,
	    .status = info->status,
	    .message = info->message[0] ? info->message : NULL,
	    .duration_ms = (long long)(clock_monotonic_ms() - info->start_ms),
	    .ticket = info->ticket,
	};
	struct log_field f[] = {
	    {.key = "method", .str = rec.method},       {.key = "tool", .str = rec.tool},
	    {.key = "sandbox", .str = rec.sandbox_id},  {.key = "session", .str = rec.session},
	    {.key = "status", .str = rec.status},       {.key = "duration_ms", .num = rec.duration_ms, .is_num = 1},
	    {.key = "revision", .str = info->revision},
	};
	/* The revision is named only for a 2026-07-28 request: the lines of the
	 * legacy revisions stay as they were. */
	size_t n_fields = sizeof(f) / sizeof(f[0]) - (info->revision ? 0 : 1);
	unsigned long dropped = 0;
	if (line_allowed(&dropped)) {
		if (dropped)
			log_warn("mcp",
			         "%lu request lines of this connection were not logged (more than %.0f a second); "
			         "the audit table has every request",
			         dropped, REQLOG_PER_S);
		log_fields(LOG_LEVEL_INFO, "mcp", "request", f, n_fields);
	}
	if (server->opts.on_request)
		server->opts.on_request(server->opts.on_request_ctx, &rec);
}
