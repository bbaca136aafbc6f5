/* sse.c: the SSE answers of the Streamable HTTP transport (MCP
 * basic/transports, "Streamable HTTP"). Every SSE answer is a stream of
 * resume.c: a tools/call that asked for progress runs on a worker thread
 * whose notifications are the stream's events as they are sent, the
 * response last; a GET with Last-Event-ID reads a stream again from where
 * the client lost it ("Resumability and Redelivery"). A 2026-07-28 answer
 * is a plain stream (no ids, never resumable), unbuffered, cancelled by its
 * connection's hangup. The connection's thread blocks in the reader
 * callback for the next event (libmicrohttpd runs a thread per connection). */
#include "http_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"

/* Every SSE answer is a resumable stream (resume.c): the POST's own
 * response reads it from its first event; a GET with Last-Event-ID reads it
 * again from where the client lost it. The connection's thread blocks in
 * reader_cb for the next event (thread per connection, so it may). */
static ssize_t reader_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	ssize_t n = mcp_stream_read(cls, buf, max);
	/* A cancelled request's stream ends without its response, as an error. */
	return n > 0 ? n : n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void reader_free_cb(void *cls)
{
	mcp_stream_reader_free(cls);
}

enum MHD_Result mcp_sse_queue(struct MHD_Connection *conn, struct mcp_stream_reader *r,
                              const struct mcp_http_headers *h)
{
	struct MHD_Response *resp =
	    MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, reader_cb, r, reader_free_cb);
	if (!resp) {
		mcp_stream_reader_free(r);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (h && h->session_id)
		MHD_add_response_header(resp, "Mcp-Session-Id", h->session_id);
	if (h && h->protocol_version)
		MHD_add_response_header(resp, "MCP-Protocol-Version", h->protocol_version);
	if (h && h->unbuffered)
		MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

void mcp_sse_notify(void *ctx, struct json_object *message)
{
	struct mcp_sse_answer *a = ctx;
	if (a->resume) {
		pthread_mutex_lock(&a->open_lock);
		if (!a->stream && mcp_stream_open(a->resume, a->session_id, &a->stream, NULL) < 0)
			a->stream = NULL;
		pthread_mutex_unlock(&a->open_lock);
	}
	if (!a->stream)
		return;
	_cleanup_free_ char *json = mcp_json_text(message);
	if (mcp_stream_append(a->stream, json) == 0)
		__atomic_add_fetch(&a->events, 1, __ATOMIC_SEQ_CST);
}

void mcp_sse_finish(struct mcp_stream *stream, struct json_object *reply, int cancelled)
{
	_cleanup_free_ char *text = reply && !cancelled ? mcp_json_text(reply) : NULL;
	int ok = text && mcp_stream_append(stream, text) == 0;
	mcp_stream_end(stream, ok ? MCP_STREAM_COMPLETE : MCP_STREAM_ABANDONED);
}

/* A tools/call that asked for progress runs on a worker thread, so its
 * events go out while it runs; the response is the last event. */
struct stream_job {
	struct mcp_server *server;
	struct mcp_stream *stream;
	struct json_object *msg; /* owned */
	char *session_id;        /* NULL when stateless */
	uint64_t owner;          /* a 2026-07-28 request's connection serial (its hangup cancels), else 0 */
};

static void *stream_worker(void *arg)
{
	struct stream_job *job = arg;
	struct mcp_server *server = job->server;
	struct mcp_sse_answer a = {.stream = job->stream};
	/* A 2026-07-28 request's routing headers were checked before the stream
	 * opened (handle_modern_post); its body alone says what it is now. */
	struct mcp_sink sink = {.notify = mcp_sse_notify, .ctx = &a, .owner = job->owner};
	_cleanup_json_ struct json_object *reply = mcp_dispatch_sink(server, job->msg, job->session_id, NULL, &sink);
	mcp_sse_finish(job->stream, reply, sink.cancelled);
	json_object_put(job->msg);
	free(job->session_id);
	free(job);
	/* The worker counts as a running request, so stop waits for it. */
	pthread_mutex_lock(&server->http_lock);
	server->http_active--;
	pthread_cond_broadcast(&server->http_idle);
	pthread_mutex_unlock(&server->http_lock);
	return NULL;
}

int mcp_sse_wants_progress(struct json_object *value)
{
	struct json_object *m, *params, *meta;
	return json_object_is_type(value, json_type_object) && mcp_message_id(value) &&
	       json_object_object_get_ex(value, "method", &m) && json_object_is_type(m, json_type_string) &&
	       strcmp(json_object_get_string(m), "tools/call") == 0 &&
	       json_object_object_get_ex(value, "params", &params) && json_object_is_type(params, json_type_object) &&
	       json_object_object_get_ex(params, "_meta", &meta) && json_object_is_type(meta, json_type_object) &&
	       json_object_object_get_ex(meta, "progressToken", NULL);
}

/* Answers *value (taken over on success) as a live SSE stream: resumable,
 * or for a 2026-07-28 request (plain) one without event ids whose call
 * owner's hangup cancels. Returns 1 and sets *ret when it did; 0 to fall
 * back to the buffered answer. */
int mcp_sse_queue_call(struct mcp_server *server, struct MHD_Connection *conn, struct json_object **value,
                       const char *sid, int plain, uint64_t owner, const struct mcp_http_headers *h,
                       enum MHD_Result *ret)
{
	struct stream_job *job = xcalloc(1, sizeof(*job));
	job->owner = owner;
	job->session_id = xstrdup(sid);
	if (plain)
		job->stream = mcp_stream_open_plain(server->resume);
	else if (mcp_stream_open(server->resume, sid, &job->stream, NULL) < 0) {
		free(job->session_id);
		free(job);
		return 0;
	}
	struct mcp_stream_reader *reader = mcp_stream_reader_new(job->stream);
	job->server = server;
	job->msg = *value;
	pthread_mutex_lock(&server->http_lock);
	server->http_active++;
	pthread_mutex_unlock(&server->http_lock);
	pthread_t tid;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, MCP_HTTP_STACK_BYTES);
	int started = pthread_create(&tid, &attr, stream_worker, job) == 0;
	pthread_attr_destroy(&attr);
	if (!started) {
		pthread_mutex_lock(&server->http_lock);
		server->http_active--;
		pthread_cond_broadcast(&server->http_idle);
		pthread_mutex_unlock(&server->http_lock);
		mcp_stream_reader_free(reader);
		mcp_stream_end(job->stream, MCP_STREAM_DISCARD);
		free(job->session_id);
		free(job); /* the caller keeps value */
		return 0;
	}
	*value = NULL; /* the worker owns it now */
	*ret = mcp_sse_queue(conn, reader, h);
	return 1;
}

/* GET with Last-Event-ID (basic/transports, "Resumability and
 * Redelivery"): replays the events of that stream after the id, then goes
 * on live while its request runs, then ends. The session rules are a POST's
 * (unknown session 404); an id that is malformed, unknown, expired, of
 * another session or whose events were dropped is 400 with a JSON-RPC error
 * saying which: not 404, which would tell a client with a live session to
 * initialize again (the spec names no status for this). */
enum MHD_Result mcp_sse_resume(struct mcp_server *server, struct MHD_Connection *conn, const char *last_id)
{
	struct mcp_http_headers h = {0};
	const char *version = mcp_http_header(conn, "MCP-Protocol-Version");
	if (mcp_modern_header(version)) {
		/* MCP 2026-07-28 streamable-http, "Backward Compatibility": no GET
		 * stream, and answers are not resumable. */
		struct mcp_http_headers allow = {.allow = "POST"};
		return mcp_http_rpc_error(
		    conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, MCP_RPC_INVALID_REQUEST,
		    "method not allowed: MCP 2026-07-28 has no GET stream and its answers are not "
		    "resumable; POST the request again",
		    &allow);
	}
	if (version && !mcp_protocol_supported(version))
		return mcp_http_rpc_error(
		    conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_INVALID_REQUEST,
		    "unsupported MCP-Protocol-Version; this server speaks 2026-07-28 (per-request "
		    "_meta) and 2025-11-25, 2025-06-18, 2025-03-26 (after initialize)",
		    NULL);
	h.protocol_version = version;
	const char *sid = mcp_http_header(conn, "Mcp-Session-Id");
	if (sid && !mcp_session_touch(server->sessions, sid))
		return mcp_http_rpc_error(conn, MHD_HTTP_NOT_FOUND, NULL, MCP_RPC_SESSION_NOT_FOUND,
		                          "session not found: it ended or expired; send initialize without "
		                          "Mcp-Session-Id to start a new one",
		                          &h);
	struct mcp_stream_reader *reader = NULL;
	_cleanup_error_ struct cp_error *err = NULL;
	if (mcp_stream_resume(server->resume, last_id, sid, &reader, &err) < 0) {
		char word[80];
		log_info("mcp", "resume from event %s refused: %s", mcp_log_word(last_id, word, sizeof(word)),
		         cp_error_code_name(err->code));
		return mcp_http_rpc_error(conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_INVALID_REQUEST, err->message, &h);
	}
	char word[80];
	log_info("mcp", "resuming a stream after event %s", mcp_log_word(last_id, word, sizeof(word)));
	return mcp_sse_queue(conn, reader, &h);
}
