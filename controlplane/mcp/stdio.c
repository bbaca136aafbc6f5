/* stdio.c: the MCP stdio transport (basic/transports, "stdio"): one JSON-RPC
 * message per line in, one per line out. Owns the line buffer (bounded by
 * max_body_bytes) and the writer lock. Tool calls run on their own threads
 * (at most STDIO_MAX_CALLS at once) so a long bash call does not hold up a
 * sandbox_list; everything else is answered in order on the reading thread.
 * Writes nothing but protocol messages to out_fd (logs go to stderr). */
#include "internal.h"

#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/buf.h"
#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"

#define STDIO_MAX_CALLS 16
#define STDIO_READ_CHUNK 65536

struct stdio_ctx {
	struct mcp_server *server;
	int out_fd;
	pthread_mutex_t write_lock; /* one response is one uninterrupted line */
	pthread_mutex_t lock;       /* guards in_flight and write_errno */
	pthread_cond_t changed;
	unsigned in_flight;
	int write_errno;
	char version[16]; /* the revision initialize negotiated; "" before (read loop only) */
};

struct stdio_call {
	struct stdio_ctx *ctx;
	struct json_object *msg; /* owned by the call's thread */
};

static void write_reply(struct stdio_ctx *ctx, struct json_object *reply)
{
	if (!reply)
		return;
	_cleanup_free_ char *text = mcp_json_text(reply);
	_cleanup_free_ char *line = xasprintf("%s\n", text);
	size_t n = strlen(line);
	int failed = 0;
	pthread_mutex_lock(&ctx->write_lock);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(ctx->out_fd, line + off, n - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			failed = w < 0 ? errno : EIO;
			break;
		}
		off += (size_t)w;
	}
	pthread_mutex_unlock(&ctx->write_lock);
	if (failed) {
		pthread_mutex_lock(&ctx->lock);
		if (!ctx->write_errno)
			ctx->write_errno = failed;
		pthread_mutex_unlock(&ctx->lock);
	}
}

/* A handler's notification (progress) is a line of its own before the
 * response (basic/transports, "stdio"). */
static void stdio_notify(void *ctx, struct json_object *message)
{
	write_reply(ctx, message);
}

static void *call_thread(void *arg)
{
	struct stdio_call *call = arg;
	struct stdio_ctx *ctx = call->ctx;
	struct mcp_sink sink = {.notify = stdio_notify, .ctx = ctx};
	_cleanup_json_ struct json_object *reply = mcp_dispatch_sink(ctx->server, call->msg, NULL, NULL, &sink);
	write_reply(ctx, reply);
	json_object_put(call->msg);
	free(call);
	pthread_mutex_lock(&ctx->lock);
	ctx->in_flight--;
	pthread_cond_broadcast(&ctx->changed);
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

static int is_tool_call(struct json_object *msg)
{
	struct json_object *m;
	return json_object_is_type(msg, json_type_object) && json_object_object_get_ex(msg, "method", &m) &&
	       json_object_is_type(m, json_type_string) && strcmp(json_object_get_string(m), "tools/call") == 0 &&
	       mcp_message_id(msg) != NULL;
}

/* Runs a tools/call on its own thread; falls back to answering inline when
 * a thread cannot be started. Takes ownership of msg. */
static void start_call(struct stdio_ctx *ctx, struct json_object *msg)
{
	pthread_mutex_lock(&ctx->lock);
	while (ctx->in_flight >= STDIO_MAX_CALLS)
		pthread_cond_wait(&ctx->changed, &ctx->lock);
	ctx->in_flight++;
	pthread_mutex_unlock(&ctx->lock);

	struct stdio_call *call = xmalloc(sizeof(*call));
	pthread_t tid;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (call) {
		*call = (struct stdio_call){ctx, msg};
		if (pthread_create(&tid, &attr, call_thread, call) == 0) {
			pthread_attr_destroy(&attr);
			return;
		}
		free(call);
	}
	pthread_attr_destroy(&attr);
	struct mcp_sink sink = {.notify = stdio_notify, .ctx = ctx};
	_cleanup_json_ struct json_object *reply = mcp_dispatch_sink(ctx->server, msg, NULL, NULL, &sink);
	write_reply(ctx, reply);
	json_object_put(msg);
	pthread_mutex_lock(&ctx->lock);
	ctx->in_flight--;
	pthread_mutex_unlock(&ctx->lock);
}

static void handle_line(struct stdio_ctx *ctx, const char *line, size_t len)
{
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	if (len == 0)
		return;
	struct json_object *msg = NULL;
	char why[300], text[320];
	if (mcp_json_parse_request(line, len, &msg, why, sizeof(why)) < 0) {
		snprintf(text, sizeof(text), "parse error: %s",
		         strcmp(why, "the body is not valid JSON") ? why : "the line is not valid JSON");
		_cleanup_json_ struct json_object *e = mcp_rpc_error_new(NULL, MCP_RPC_PARSE_ERROR, text);
		write_reply(ctx, e);
		return;
	}
	_cleanup_json_ struct json_object *refusal = mcp_batch_refusal(msg, ctx->version);
	if (refusal) {
		write_reply(ctx, refusal);
		json_object_put(msg);
		return;
	}
	if (is_tool_call(msg)) {
		start_call(ctx, msg);
		return;
	}
	/* stdio has no sessions: initialize creates none, but its revision
	 * decides whether batches are allowed. */
	_cleanup_json_ struct json_object *reply = mcp_dispatch_value(ctx->server, msg, NULL, NULL);
	struct json_object *result, *pv;
	if (mcp_message_is_initialize(msg) && json_object_object_get_ex(reply, "result", &result) &&
	    json_object_object_get_ex(result, "protocolVersion", &pv))
		snprintf(ctx->version, sizeof(ctx->version), "%s", json_object_get_string(pv));
	write_reply(ctx, reply);
	json_object_put(msg);
}

static void line_too_long(struct stdio_ctx *ctx)
{
	char size[32], text[128];
	mcp_format_size(ctx->server->opts.max_body_bytes, size, sizeof(size));
	snprintf(text, sizeof(text), "request exceeds the %s limit; send less data per call", size);
	log_warn("mcp", "stdio: refused a message over %s", size);
	_cleanup_json_ struct json_object *e = mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST, text);
	write_reply(ctx, e);
}

static int read_loop(struct stdio_ctx *ctx, int in_fd, struct cp_error **err)
{
	_cleanup_free_ char *chunk = xmalloc(STDIO_READ_CHUNK);
	struct cp_buf line;
	cp_buf_init(&line, ctx->server->opts.max_body_bytes);
	int overflow = 0, r = 0;
	for (;;) {
		pthread_mutex_lock(&ctx->lock);
		int werr = ctx->write_errno;
		pthread_mutex_unlock(&ctx->lock);
		if (werr) {
			r = cp_error_set_errno(err, CP_ERR_UNAVAILABLE, werr, "stdio: write a reply");
			break;
		}
		if (ctx->server->stdio_stop)
			break;
		ssize_t n = read(in_fd, chunk, STDIO_READ_CHUNK);
		if (n < 0 && errno == EINTR)
			continue; /* a stop signal: the check above ends the loop */
		if (n < 0) {
			r = cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "stdio: read a request");
			break;
		}
		if (n == 0) { /* EOF: a last line without its newline still counts */
			if (!overflow && line.len)
				handle_line(ctx, line.data, line.len);
			break;
		}
		for (const char *p = chunk, *end = chunk + n; p < end;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *stop = nl ? nl : end;
			if (!overflow && cp_buf_append(&line, p, (size_t)(stop - p)) < 0) {
				overflow = 1;
				cp_buf_free(&line);
			}
			p = stop;
			if (!nl)
				break;
			p++;
			if (overflow)
				line_too_long(ctx);
			else
				handle_line(ctx, line.data, line.len);
			overflow = 0;
			cp_buf_free(&line);
		}
	}
	cp_buf_free(&line);
	return r;
}

void mcp_server_stop_stdio(struct mcp_server *server)
{
	server->stdio_stop = 1;
}

/* Serves newline-delimited JSON-RPC on in_fd/out_fd (borrowed) until EOF
 * (see mcp.h; MCP basic/transports, "stdio": messages are single lines, the
 * server writes nothing else to stdout). Blocks; at EOF waits for running
 * tool calls to answer. Fails with UNAVAILABLE when reading in_fd or writing
 * out_fd fails (the client went away). Needs SIGPIPE ignored by the process
 * so a closed out_fd is an error here rather than a signal. */
int mcp_server_serve_stdio(struct mcp_server *server, int in_fd, int out_fd, struct cp_error **err)
{
	struct stdio_ctx ctx = {.server = server, .out_fd = out_fd};
	pthread_mutex_init(&ctx.write_lock, NULL);
	pthread_mutex_init(&ctx.lock, NULL);
	pthread_cond_init(&ctx.changed, NULL);
	log_info("mcp", "serving MCP on stdio");

	int r = read_loop(&ctx, in_fd, err);

	pthread_mutex_lock(&ctx.lock);
	while (ctx.in_flight > 0)
		pthread_cond_wait(&ctx.changed, &ctx.lock);
	pthread_mutex_unlock(&ctx.lock);
	pthread_cond_destroy(&ctx.changed);
	pthread_mutex_destroy(&ctx.lock);
	pthread_mutex_destroy(&ctx.write_lock);
	return r;
}
