/* http.c: the MCP Streamable HTTP transport on libmicrohttpd (MCP
 * basic/transports, "Streamable HTTP"): one endpoint, /mcp, POST for
 * messages, DELETE to end a session, GET with Last-Event-ID to resume an SSE
 * answer (other GETs are 405: no standalone stream). A POST answers
 * application/json, or text/event-stream when its request produces
 * notifications: a tools/call with a progressToken streams each progress
 * event as it is sent (the call runs on a worker thread), the response last;
 * a batch that produced notifications sends them with its responses at the
 * end. Every SSE answer is a resumable stream (resume.c) whose event ids name
 * it. A 2026-07-28 request (modern.c) is served on the same endpoint without
 * a session, its routing headers handed to the dispatcher, its SSE answer
 * never resumable, and its connection's hangup cancels it. Owns the daemon
 * and each request's bounded body buffer; enforces the loopback Host/Origin
 * checks, the body limit and session validity before anything is
 * dispatched. Never writes an HTTP server of its own. */
#include "internal.h"
#include "../base/text.h"

#include <arpa/inet.h>
#include <stddef.h>
#include <errno.h>
#include <json-c/json.h>
#include <malloc.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../base/buf.h"
#include "../base/cleanup.h"
#include "../base/log.h"

#define MCP_PATH "/mcp"
/* Idle keep-alive connections hold a thread each; tool calls stay well under
 * a minute by design (DESIGN.md, MCP surface), so two minutes is generous. */
#define CONNECTION_TIMEOUT_S 120u
/* Each connection is a thread that may wait up to a minute in a tool call, so
 * the limit bounds threads; their stacks are kept small (STACK_BYTES) so the
 * limit costs little memory. serve raises RLIMIT_NOFILE to fit. */
#define CONNECTION_LIMIT 1024u
#define STACK_BYTES ((size_t)512 * 1024)
/* libmicrohttpd 0.9.75 cannot queue a reply while a body is arriving, so a
 * body without Content-Length that passes the limit is read and dropped, and
 * the 413 goes out at its end. Past this much dropped data the connection is
 * closed instead: a reset is better than reading forever. */
#define DISCARD_MAX_BYTES ((size_t)64 * 1024 * 1024)
/* How long stop waits for running requests: longer than any tool call may
 * take (DESIGN.md: a call must finish well inside ChatGPT's 60 s). */
#define STOP_WAIT_MS 70000
/* An answer at least this large is followed by malloc_trim once sent. */
#define LARGE_REPLY_BYTES ((size_t)1024 * 1024)

struct http_request {
	struct cp_buf body;
	int too_large;      /* the body passed max_body_bytes; the rest is discarded */
	size_t discarded;   /* bytes dropped since */
	int counted;        /* counted in server->http_active */
	int replied;        /* a reply was queued from the headers alone */
	size_t reserved;    /* bytes of server->body_budget this request holds */
	int over_budget;    /* the body did not fit the budget; the rest is discarded, 503 at the end */
	size_t reply_bytes; /* the JSON answer's size, so a large one gives its memory back */
};

/* Headers a reply may carry besides Content-Type. */
struct reply_headers {
	const char *session_id;
	const char *protocol_version;
	const char *allow;
	const char *retry_after; /* seconds */
	const char *www_authenticate;
	int close;      /* Connection: close (refusals: the peer gets no second try on this connection) */
	int unbuffered; /* X-Accel-Buffering: no on an SSE answer (MCP 2026-07-28 streamable-http,
	                   "Receiving Messages": proxies must pass events on at once) */
};

static enum MHD_Result queue_reply_type(struct MHD_Connection *conn, unsigned status, char *body,
                                        const char *content_type, const struct reply_headers *h)
{
	/* body is owned (malloc'd) and moves into the response; NULL = empty. */
	size_t len = body ? strlen(body) : 0;
	struct MHD_Response *resp = MHD_create_response_from_buffer(
	    len, body ? body : (void *)"", body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, body ? content_type : "text/plain; charset=utf-8");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (h && h->session_id)
		MHD_add_response_header(resp, "Mcp-Session-Id", h->session_id);
	if (h && h->protocol_version)
		MHD_add_response_header(resp, "MCP-Protocol-Version", h->protocol_version);
	if (h && h->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, h->allow);
	if (h && h->retry_after)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, h->retry_after);
	if (h && h->www_authenticate)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE, h->www_authenticate);
	if (h && h->close)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	enum MHD_Result r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result queue_reply(struct MHD_Connection *conn, unsigned status, char *body,
                                   const struct reply_headers *h)
{
	return queue_reply_type(conn, status, body, "application/json", h);
}

/* True when the client accepts text/event-stream (basic/transports: clients
 * send "Accept: application/json, text/event-stream"). */
static int accepts_sse(const char *accept)
{
	return accept && strcasestr(accept, "text/event-stream") != NULL;
}

/* An HTTP error whose body is a JSON-RPC error (id borrowed, may be NULL), so
 * clients that only read JSON-RPC still see why. */
static enum MHD_Result queue_rpc_error(struct MHD_Connection *conn, unsigned status, struct json_object *id, int code,
                                       const char *message, const struct reply_headers *h)
{
	_cleanup_json_ struct json_object *e = mcp_rpc_error_new(id, code, message);
	return queue_reply(conn, status, mcp_json_text(e), h);
}

static const char *header(struct MHD_Connection *conn, const char *name)
{
	return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, name);
}

static int content_type_is_json(const char *ct)
{
	/* "application/json" with optional parameters (RFC 9110 section 8.3.1). */
	if (!ct)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	size_t n = strlen("application/json");
	if (strncasecmp(ct, "application/json", n) != 0)
		return 0;
	ct += n;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

/* How much of an oversize body is read and dropped before the connection
 * is closed instead: twice the limit, at least DISCARD_MAX_BYTES. */
static size_t discard_max(const struct mcp_server *server)
{
	size_t twice = server->opts.max_body_bytes * 2;
	return twice > DISCARD_MAX_BYTES ? twice : DISCARD_MAX_BYTES;
}

static enum MHD_Result reply_too_large(struct mcp_server *server, struct MHD_Connection *conn)
{
	char size[32], text[200];
	mcp_format_size(server->opts.max_body_bytes, size, sizeof(size));
	snprintf(text, sizeof(text),
	         "request body exceeds the %s limit (CHAT2SBX_MAX_BODY_BYTES); send less data per call, for example "
	         "a large file in several writes",
	         size);
	log_warn("mcp", "refused a request body over %s", size);
	return queue_rpc_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, NULL, MCP_RPC_INVALID_REQUEST, text, NULL);
}

/* 503 with Retry-After: 1 for a body that does not fit the budget of
 * request bodies held at once (security review, defect 4). */
static enum MHD_Result reply_over_budget(struct MHD_Connection *conn)
{
	char size[32], text[200];
	mcp_format_size(MCP_BODY_BUDGET_BYTES, size, sizeof(size));
	snprintf(text, sizeof(text),
	         "server busy: other requests are sending %s of data at once; retry in a second or send less "
	         "data per call",
	         size);
	log_warn("mcp", "refused a request body: the %s budget of bodies held at once is spent", size);
	struct reply_headers h = {.retry_after = "1"};
	return queue_rpc_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, MCP_RPC_INTERNAL_ERROR, text, &h);
}

/* Gives back what req holds of the body budget, trimming the heap now and
 * then so RSS returns after large bodies (glibc malloc_trim). */
static void release_body(struct mcp_server *server, struct http_request *req)
{
	cp_buf_free(&req->body);
	if (req->reserved == 0)
		return;
	size_t n = req->reserved;
	req->reserved = 0;
	if (mcp_body_budget_release(&server->body_budget, n))
		malloc_trim(0);
}

/* Grows req's reservation to want bytes; -1 when the budget has no room. */
static int reserve_body(struct mcp_server *server, struct http_request *req, size_t want)
{
	if (want <= req->reserved)
		return 0;
	if (mcp_body_budget_reserve(&server->body_budget, want - req->reserved) < 0)
		return -1;
	req->reserved = want;
	return 0;
}

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

/* The Unix socket's peer check (issue 12): a peer of another uid is refused
 * whatever it sends. Returns 1 when fd's peer may not use the endpoint. */
static int unix_peer_refused(struct mcp_server *server, int fd)
{
	uid_t uid;
	pid_t pid = 0;
	if (mcp_peer_credentials(fd, &uid, &pid) < 0) {
		mcp_log_refusal(server, MCP_REFUSED_SOCKET,
		                "refused a connection on the MCP socket whose peer cannot be identified");
		return 1;
	}
	if (mcp_peer_uid_allowed(uid, geteuid()))
		return 0;
	char who[64] = "root";
	if (geteuid() != 0)
		snprintf(who, sizeof(who), "uid %u and root", (unsigned)geteuid());
	mcp_log_refusal(server, MCP_REFUSED_SOCKET,
	                "refused a connection on the MCP socket from uid %u (pid %d): only %s may use it",
	                (unsigned)uid, (int)pid, who);
	return 1;
}

/* Called by libmicrohttpd when a connection of either listener starts and
 * ends: the connection guard tracks it (its record is the socket context),
 * and a foreign peer of the Unix socket is cut off before a byte is read
 * (shutdown makes the connection's thread see the end at once). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	const struct mcp_listener *l = cls;
	struct mcp_server *server = l->server;
	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		mcp_conn_closed(server, *socket_context);
		*socket_context = NULL;
		return;
	}
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	if (l->is_unix && unix_peer_refused(server, ci->connect_fd)) {
		shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	*socket_context = mcp_conn_started(server, ci->connect_fd, l->is_unix);
}

/* The guard's record of conn (NULL when it has none). */
static struct mcp_conn *conn_record(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* Only loopback TCP peers (this host's clients) may use the port: a sandbox
 * reaching it through its bridge gateway, Host header forged or not, is
 * refused before anything else (security review, defect 2). Returns 1 and
 * queues 403 when the peer is not loopback. */
static int refuse_peer(struct mcp_server *server, struct MHD_Connection *conn, enum MHD_Result *ret)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *peer = ci ? ci->client_addr : NULL;
	size_t peer_len =
	    peer && peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	if (!mcp_peer_is_loopback(peer, peer_len)) {
		char addr[INET6_ADDRSTRLEN] = "unknown";
		if (peer && peer->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)peer)->sin_addr, addr, sizeof(addr));
		else if (peer && peer->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)peer)->sin6_addr, addr, sizeof(addr));
		mcp_log_refusal(server, MCP_REFUSED_PEER,
		                "refused a connection from %s: only loopback clients may use the endpoint", addr);
		struct reply_headers h = {.close = 1};
		*ret = queue_rpc_error(conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST,
		                       "forbidden: only loopback clients may use this MCP endpoint", &h);
		return 1;
	}
	return 0;
}

/* 401 for a TCP request without the right bearer token (RFC 6750 section
 * 3: WWW-Authenticate names the scheme, with no resource_metadata, so an
 * MCP client finds no OAuth server and starts no flow; /.well-known/... is
 * 404). The JSON-RPC body says where the token is and how to send it. */
static enum MHD_Result reply_unauthorized(struct mcp_server *server, struct MHD_Connection *conn,
                                          enum mcp_bearer_result why)
{
	static const char *const reasons[] = {
	    [MCP_BEARER_OK] = "",
	    [MCP_BEARER_MISSING] = "the request has no Authorization header",
	    [MCP_BEARER_MALFORMED] = "the Authorization header is not 'Bearer <token>'",
	    [MCP_BEARER_WRONG] = "the bearer token is not this server's",
	};
	char text[1200];
	snprintf(text, sizeof(text),
	         "unauthorized: %s. Send 'Authorization: Bearer <token>' with every request; the token is in %s "
	         "(print it with 'chat2sbx token')%s%s%s",
	         reasons[why], server->token_hint ? server->token_hint : "serve's state directory",
	         server->unix_path ? ". Local clients can use the Unix socket '" : "",
	         server->unix_path ? server->unix_path : "", server->unix_path ? "' instead, without a token" : "");
	mcp_log_refusal(server, MCP_REFUSED_TOKEN, "refused a request on the MCP port: %s", reasons[why]);
	struct reply_headers h = {.www_authenticate = why == MCP_BEARER_WRONG
	                                                  ? "Bearer realm=\"chat2sbx\", error=\"invalid_token\""
	                                                  : "Bearer realm=\"chat2sbx\"",
	                          .close = 1};
	return queue_rpc_error(conn, MHD_HTTP_UNAUTHORIZED, NULL, MCP_RPC_INVALID_REQUEST, text, &h);
}

/* Checks that need only the request line and headers; queues a reply and
 * returns 1 when the request is refused. Order: who the peer is (TCP:
 * loopback; Unix socket: its uid), the DNS-rebinding checks, the path (so
 * /.well-known/... is 404 for everyone), then the bearer token on TCP. */
static int refuse_early(const struct mcp_listener *l, struct MHD_Connection *conn, struct http_request *req,
                        const char *url, const char *method, enum MHD_Result *ret)
{
	struct mcp_server *server = l->server;
	if (l->is_unix) {
		const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!fi || unix_peer_refused(server, fi->connect_fd)) {
			struct reply_headers h = {.close = 1};
			*ret = queue_rpc_error(conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST,
			                       "forbidden: only the user serve runs as (and root) may use this socket",
			                       &h);
			return 1;
		}
	} else if (refuse_peer(server, conn, ret)) {
		return 1;
	}
	const char *host = header(conn, MHD_HTTP_HEADER_HOST);
	const char *origin = header(conn, "Origin");
	char text[512], clipped[320];
	/* basic/transports, "Security Warning": DNS-rebinding protection. */
	if (!mcp_host_allowed(host, server->host)) {
		snprintf(text, sizeof(text), "forbidden: Host '%s' is not a loopback name",
		         text_clip(host, 100, clipped, sizeof(clipped)));
		log_warn("mcp", "refused a request for Host '%s' (DNS-rebinding protection)", clipped);
		*ret = queue_rpc_error(conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST, text, NULL);
		return 1;
	}
	if (!mcp_origin_allowed(origin)) {
		snprintf(text, sizeof(text), "forbidden: Origin '%s' is not a loopback origin",
		         text_clip(origin, 100, clipped, sizeof(clipped)));
		log_warn("mcp", "refused a request from Origin '%s' (DNS-rebinding protection)", clipped);
		*ret = queue_rpc_error(conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST, text, NULL);
		return 1;
	}
	/* Only /mcp exists; in particular /.well-known/... is 404, never 401,
	 * which would start an OAuth flow in the tunnel (DESIGN.md). */
	if (strcmp(url, MCP_PATH) != 0) {
		*ret = queue_rpc_error(conn, MHD_HTTP_NOT_FOUND, NULL, MCP_RPC_INVALID_REQUEST,
		                       "not found: the MCP endpoint is " MCP_PATH, NULL);
		return 1;
	}
	if (!l->is_unix && server->bearer_token) {
		enum mcp_bearer_result b =
		    mcp_bearer_check(header(conn, MHD_HTTP_HEADER_AUTHORIZATION), server->bearer_token);
		if (b != MCP_BEARER_OK) {
			*ret = reply_unauthorized(server, conn, b);
			return 1;
		}
	}
	int resume = strcmp(method, MHD_HTTP_METHOD_GET) == 0 && header(conn, "Last-Event-ID");
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0 && strcmp(method, MHD_HTTP_METHOD_DELETE) != 0 && !resume) {
		/* basic/transports, "Listening for Messages from the Server": a
		 * server without a standalone SSE stream answers GET with 405; a
		 * GET with Last-Event-ID resumes a stream (handle_resume). */
		struct reply_headers h = {.allow = "POST, DELETE"};
		*ret = queue_rpc_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, MCP_RPC_INVALID_REQUEST,
		                       "method not allowed: use POST (or DELETE to end a session, or GET with "
		                       "Last-Event-ID to resume a stream)",
		                       &h);
		return 1;
	}
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return 0;
	if (!content_type_is_json(header(conn, MHD_HTTP_HEADER_CONTENT_TYPE))) {
		*ret = queue_rpc_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL, MCP_RPC_INVALID_REQUEST,
		                       "unsupported media type: POST a JSON-RPC message as application/json", NULL);
		return 1;
	}
	/* An announced oversize body is read and dropped, then refused with
	 * 413 at its end: a client that is still sending when the connection
	 * closes sees a transport error (EPIPE) instead of the JSON-RPC error
	 * (issue 18). Past the discard bound it is refused at once. */
	const char *cl = header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		errno = 0;
		char *end;
		unsigned long long n = strtoull(cl, &end, 10);
		if (errno == ERANGE || n > discard_max(server)) {
			*ret = reply_too_large(server, conn);
			return 1;
		}
		if (n > server->opts.max_body_bytes) {
			req->too_large = 1;
			return 0;
		}
		/* An announced body is reserved whole, before any of it is read. */
		if (reserve_body(server, req, (size_t)n) < 0) {
			*ret = reply_over_budget(conn);
			return 1;
		}
	}
	return 0;
}

static enum MHD_Result handle_delete(struct mcp_server *server, struct MHD_Connection *conn)
{
	/* basic/transports, "Session Management": DELETE ends a session; an
	 * unknown one is 404 like any other request carrying it. */
	const char *sid = header(conn, "Mcp-Session-Id");
	if (!sid)
		return queue_rpc_error(conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_INVALID_REQUEST,
		                       "DELETE needs the Mcp-Session-Id header of the session to end", NULL);
	if (!mcp_session_end(server->sessions, sid))
		return queue_rpc_error(conn, MHD_HTTP_NOT_FOUND, NULL, MCP_RPC_SESSION_NOT_FOUND,
		                       "session not found: it ended or expired", NULL);
	log_debug("mcp", "session %.8s… ended by DELETE", sid);
	return queue_reply(conn, MHD_HTTP_OK, NULL, NULL);
}

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

/* Queues 200 text/event-stream read from r (taken over). */
static enum MHD_Result queue_sse(struct MHD_Connection *conn, struct mcp_stream_reader *r,
                                 const struct reply_headers *h)
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

/* The notification sink of one POST: each notification is the stream's next
 * event (basic/transports, "Sending Messages to the Server"). */
struct sse_answer {
	struct mcp_stream *stream; /* the writer's reference */
	int events;                /* notifications appended (atomic) */
};

static void stream_notify(void *ctx, struct json_object *message)
{
	struct sse_answer *a = ctx;
	_cleanup_free_ char *json = mcp_json_text(message);
	if (json && mcp_stream_append(a->stream, json) == 0)
		__atomic_add_fetch(&a->events, 1, __ATOMIC_SEQ_CST);
}

/* Appends reply (borrowed, may be NULL) as the last event and ends the
 * stream: complete with it, abandoned without it. */
static void stream_finish(struct mcp_stream *stream, struct json_object *reply, int cancelled)
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
	struct sse_answer a = {.stream = job->stream};
	/* A 2026-07-28 request's routing headers were checked before the stream
	 * opened (handle_modern_post); its body alone says what it is now. */
	struct mcp_sink sink = {.notify = stream_notify, .ctx = &a, .owner = job->owner};
	_cleanup_json_ struct json_object *reply = mcp_dispatch_sink(server, job->msg, job->session_id, NULL, &sink);
	stream_finish(job->stream, reply, sink.cancelled);
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

/* True for a single tools/call whose params carry _meta.progressToken. */
static int wants_progress(struct json_object *value)
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
static int queue_stream(struct mcp_server *server, struct MHD_Connection *conn, struct json_object **value,
                        const char *sid, int plain, uint64_t owner, const struct reply_headers *h, enum MHD_Result *ret)
{
	struct stream_job *job = calloc(1, sizeof(*job));
	if (!job)
		return 0;
	job->owner = owner;
	if ((sid && !(job->session_id = strdup(sid))) ||
	    (plain ? mcp_stream_open_plain(server->resume, &job->stream, NULL)
	           : mcp_stream_open(server->resume, sid, &job->stream, NULL)) < 0) {
		free(job->session_id);
		free(job);
		return 0;
	}
	struct mcp_stream_reader *reader = mcp_stream_reader_new(job->stream);
	if (!reader) {
		mcp_stream_end(job->stream, MCP_STREAM_DISCARD);
		free(job->session_id);
		free(job);
		return 0;
	}
	job->server = server;
	job->msg = *value;
	pthread_mutex_lock(&server->http_lock);
	server->http_active++;
	pthread_mutex_unlock(&server->http_lock);
	pthread_t tid;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, STACK_BYTES);
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
	*ret = queue_sse(conn, reader, h);
	return 1;
}

/* GET with Last-Event-ID (basic/transports, "Resumability and
 * Redelivery"): replays the events of that stream after the id, then goes
 * on live while its request runs, then ends. The session rules are a POST's
 * (unknown session 404); an id that is malformed, unknown, expired, of
 * another session or whose events were dropped is 400 with a JSON-RPC error
 * saying which: not 404, which would tell a client with a live session to
 * initialize again (the spec names no status for this). */
static enum MHD_Result handle_resume(struct mcp_server *server, struct MHD_Connection *conn, const char *last_id)
{
	struct reply_headers h = {0};
	const char *version = header(conn, "MCP-Protocol-Version");
	if (mcp_modern_header(version)) {
		/* MCP 2026-07-28 streamable-http, "Backward Compatibility": no GET
		 * stream, and answers are not resumable. */
		struct reply_headers allow = {.allow = "POST"};
		return queue_rpc_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, MCP_RPC_INVALID_REQUEST,
		                       "method not allowed: MCP 2026-07-28 has no GET stream and its answers are not "
		                       "resumable; POST the request again",
		                       &allow);
	}
	if (version && !mcp_protocol_supported(version))
		return queue_rpc_error(conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_INVALID_REQUEST,
		                       "unsupported MCP-Protocol-Version; this server speaks 2026-07-28 (per-request "
		                       "_meta) and 2025-11-25, 2025-06-18, 2025-03-26 (after initialize)",
		                       NULL);
	h.protocol_version = version;
	const char *sid = header(conn, "Mcp-Session-Id");
	if (sid && !mcp_session_touch(server->sessions, sid))
		return queue_rpc_error(conn, MHD_HTTP_NOT_FOUND, NULL, MCP_RPC_SESSION_NOT_FOUND,
		                       "session not found: it ended or expired; send initialize without "
		                       "Mcp-Session-Id to start a new one",
		                       &h);
	struct mcp_stream_reader *reader = NULL;
	_cleanup_error_ struct cp_error *err = NULL;
	if (mcp_stream_resume(server->resume, last_id, sid, &reader, &err) < 0) {
		char word[80];
		log_info("mcp", "resume from event %s refused: %s", mcp_log_word(last_id, word, sizeof(word)),
		         cp_error_code_name(err->code));
		if (err->code == CP_ERR_INTERNAL)
			return queue_rpc_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, MCP_RPC_INTERNAL_ERROR,
			                       err->message, &h);
		return queue_rpc_error(conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_INVALID_REQUEST, err->message, &h);
	}
	char word[80];
	log_info("mcp", "resuming a stream after event %s", mcp_log_word(last_id, word, sizeof(word)));
	return queue_sse(conn, reader, &h);
}

/* The log line and audit record of a POST refused before dispatch (bad
 * JSON, unsupported version, unknown session): it is a request too. value
 * (borrowed) may be NULL. */
static void record_refused(struct mcp_server *server, struct json_object *value, const char *sid, const char *status,
                           const char *message)
{
	struct json_object *m = NULL;
	const char *method = json_object_is_type(value, json_type_array) ? "batch" : NULL;
	if (json_object_is_type(value, json_type_object) && json_object_object_get_ex(value, "method", &m) &&
	    json_object_is_type(m, json_type_string))
		method = json_object_get_string(m);
	struct mcp_request_info info;
	mcp_request_info_begin(&info, method, sid);
	mcp_request_info_fail(&info, status, message);
	mcp_request_done(server, &info, NULL);
}

static enum MHD_Result count_route_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	(void)kind;
	struct mcp_route_headers *h = cls;
	static const struct {
		const char *name;
		size_t value_off, count_off;
	} rows[] = {
	    {"MCP-Protocol-Version", offsetof(struct mcp_route_headers, protocol_version),
	     offsetof(struct mcp_route_headers, protocol_version_count)},
	    {"Mcp-Method", offsetof(struct mcp_route_headers, method),
	     offsetof(struct mcp_route_headers, method_count)},
	    {"Mcp-Name", offsetof(struct mcp_route_headers, name), offsetof(struct mcp_route_headers, name_count)},
	};
	for (size_t i = 0; key && i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (strcasecmp(key, rows[i].name) != 0) /* field names are case-insensitive (RFC 9110 5.1) */
			continue;
		unsigned *count = (unsigned *)((char *)h + rows[i].count_off);
		const char **slot = (const char **)((char *)h + rows[i].value_off);
		if ((*count)++ == 0)
			*slot = value ? value : "";
	}
	return MHD_YES;
}

/* The routing headers of conn's request (values borrowed from it). */
static void route_headers(struct MHD_Connection *conn, struct mcp_route_headers *h)
{
	memset(h, 0, sizeof(*h));
	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_route_header, h);
}

/* A 2026-07-28 POST (MCP 2026-07-28 basic/transports/streamable-http):
 * no session (an Mcp-Session-Id is ignored and none is minted: "Backward
 * Compatibility"), the routing headers checked against the body
 * (modern.c), the status each refusal names, and the connection watched so
 * that its peer's hangup cancels the call ("Cancellation"). A tools/call
 * with a progressToken streams its progress on a plain SSE answer, after
 * the checks passed (a refusal is never a 200 stream). *value is taken
 * over when streamed. */
static enum MHD_Result handle_modern_post(struct mcp_server *server, struct MHD_Connection *conn,
                                          struct http_request *req, struct json_object **value,
                                          const struct mcp_route_headers *rh)
{
	struct reply_headers h = {.unbuffered = 1};
	uint64_t owner = mcp_conn_watch_hangup(server, conn_record(conn));
	if (accepts_sse(header(conn, MHD_HTTP_HEADER_ACCEPT)) && wants_progress(*value)) {
		struct mcp_sink check = {.headers = rh, .check_only = 1};
		_cleanup_json_ struct json_object *refusal = mcp_dispatch_sink(server, *value, NULL, NULL, &check);
		if (refusal)
			return queue_reply(conn, check.http_status ? check.http_status : MHD_HTTP_OK,
			                   mcp_json_text(refusal), NULL);
		enum MHD_Result streamed;
		if (queue_stream(server, conn, value, NULL, 1, owner, &h, &streamed))
			return streamed;
	}
	struct mcp_sink sink = {.headers = rh, .owner = owner};
	_cleanup_json_ struct json_object *reply = mcp_dispatch_sink(server, *value, NULL, NULL, &sink);
	if (!reply && sink.cancelled)
		return MHD_NO; /* the client went away or cancelled: nothing to send */
	if (!reply)
		return queue_reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL);
	char *text = mcp_json_text(reply);
	req->reply_bytes = text ? strlen(text) : 0;
	return text ? queue_reply(conn, sink.http_status ? sink.http_status : MHD_HTTP_OK, text, NULL) : MHD_NO;
}

static enum MHD_Result handle_post(struct mcp_server *server, struct MHD_Connection *conn, struct http_request *req)
{
	if (req->too_large)
		return reply_too_large(server, conn);
	if (req->over_budget)
		return reply_over_budget(conn);

	_cleanup_json_ struct json_object *value = NULL;
	char why[300], text[320];
	if (mcp_json_parse_request(req->body.data, req->body.len, &value, why, sizeof(why)) < 0) {
		record_refused(server, NULL, header(conn, "Mcp-Session-Id"), "PARSE_ERROR", why);
		snprintf(text, sizeof(text), "parse error: %s", why);
		return queue_rpc_error(conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_PARSE_ERROR, text, NULL);
	}
	release_body(server, req);
	struct json_object *id = mcp_message_id(value);

	/* MCP 2026-07-28 basic/versioning, "Backward Compatibility": a request
	 * that declares 2026-07-28 is served statelessly; anything else takes
	 * the legacy path below exactly as before. */
	struct mcp_route_headers rh;
	route_headers(conn, &rh);
	if (mcp_modern_claimed(value, rh.protocol_version))
		return handle_modern_post(server, conn, req, &value, &rh);

	/* basic/transports, "Protocol Version Header": an unsupported version
	 * is 400; a missing one is served (the spec says assume 2025-03-26). */
	struct reply_headers h = {0};
	const char *version = header(conn, "MCP-Protocol-Version");
	if (version && !mcp_protocol_supported(version)) {
		char text[200];
		snprintf(text, sizeof(text),
		         "unsupported MCP-Protocol-Version '%.40s'; this server speaks 2026-07-28 (per-request _meta) "
		         "and 2025-11-25, 2025-06-18, 2025-03-26 (after initialize)",
		         version);
		record_refused(server, value, header(conn, "Mcp-Session-Id"), "INVALID_REQUEST", text);
		return queue_rpc_error(conn, MHD_HTTP_BAD_REQUEST, id, MCP_RPC_INVALID_REQUEST, text, NULL);
	}
	h.protocol_version = version;

	/* basic/transports, "Session Management": an unknown or ended session
	 * is 404, which tells the client to initialize again. No session id at
	 * all is served statelessly: ChatGPT drops it after initialize
	 * (DESIGN.md). An initialize needs no session, so a stale id on one is
	 * ignored rather than refused. */
	const char *sid = header(conn, "Mcp-Session-Id");
	if (sid && !mcp_session_touch(server->sessions, sid)) {
		if (!mcp_message_is_initialize(value)) {
			record_refused(server, value, sid, "SESSION_NOT_FOUND", "the session ended or expired");
			return queue_rpc_error(conn, MHD_HTTP_NOT_FOUND, id, MCP_RPC_SESSION_NOT_FOUND,
			                       "session not found: it ended or expired; send initialize without "
			                       "Mcp-Session-Id to start a new one",
			                       &h);
		}
		sid = NULL;
	}

	/* Batches only for 2025-03-26, and at most MCP_BATCH_MAX (issue 13). */
	if (json_object_is_type(value, json_type_array)) {
		char negotiated[16] = "";
		if (!version && sid)
			mcp_session_version(server->sessions, sid, negotiated, sizeof(negotiated));
		_cleanup_json_ struct json_object *refusal = mcp_batch_refusal(value, version ? version : negotiated);
		if (refusal) {
			struct json_object *e = json_object_object_get(refusal, "error");
			const char *msg = json_object_get_string(json_object_object_get(e, "message"));
			record_refused(server, value, sid, "INVALID_REQUEST", msg);
			return queue_reply(conn, MHD_HTTP_BAD_REQUEST, mcp_json_text(refusal), &h);
		}
	}

	/* A tools/call that asked for progress gets a live SSE stream. */
	enum MHD_Result streamed;
	if (accepts_sse(header(conn, MHD_HTTP_HEADER_ACCEPT)) && wants_progress(value) &&
	    queue_stream(server, conn, &value, sid, 0, 0, &h, &streamed))
		return streamed;

	_cleanup_free_ char *new_session = NULL;
	/* Notifications of any other POST (a batch) are collected on a stream
	 * and sent with the response at the end; none, and the stream is
	 * dropped for a plain JSON answer. */
	struct sse_answer a = {0};
	struct mcp_sink sink = {0};
	if (accepts_sse(header(conn, MHD_HTTP_HEADER_ACCEPT)) &&
	    mcp_stream_open(server->resume, sid, &a.stream, NULL) == 0) {
		sink.notify = stream_notify;
		sink.ctx = &a;
	}
	_cleanup_json_ struct json_object *reply = mcp_dispatch_sink(server, value, sid, &new_session, &sink);
	h.session_id = new_session;
	if (a.stream && (!reply || a.events == 0)) {
		mcp_stream_end(a.stream, MCP_STREAM_DISCARD);
		a.stream = NULL;
	}
	if (!reply && sink.cancelled) {
		/* basic/utilities/cancellation: a cancelled request gets no
		 * response; closing the connection sends nothing. */
		return MHD_NO;
	}
	if (!reply) /* only notifications or responses: 202, no body */
		return queue_reply(conn, MHD_HTTP_ACCEPTED, NULL, &h);
	if (!a.stream) {
		char *text = mcp_json_text(reply);
		req->reply_bytes = text ? strlen(text) : 0;
		return text ? queue_reply(conn, MHD_HTTP_OK, text, &h) : MHD_NO;
	}
	/* The response is the stream's last event. */
	struct mcp_stream_reader *reader = mcp_stream_reader_new(a.stream);
	stream_finish(a.stream, reply, 0);
	if (!reader)
		return MHD_NO;
	return queue_sse(conn, reader, &h);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
	(void)version;
	const struct mcp_listener *listener = cls;
	struct mcp_server *server = listener->server;
	struct http_request *req = *con_cls;

	if (!req) {
		/* First call: headers only. */
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		cp_buf_init(&req->body, server->opts.max_body_bytes);
		*con_cls = req;
		pthread_mutex_lock(&server->http_lock);
		int stopping = server->http_stopping;
		if (!stopping) {
			server->http_active++;
			req->counted = 1;
		}
		pthread_mutex_unlock(&server->http_lock);
		req->replied = 1;
		mcp_conn_headers_done(server, conn_record(conn));
		if (stopping)
			return queue_rpc_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, MCP_RPC_INTERNAL_ERROR,
			                       "the server is shutting down; retry shortly", NULL);
		enum MHD_Result r;
		if (refuse_early(listener, conn, req, url, method, &r)) {
			mcp_conn_handling(server, conn_record(conn));
			return r;
		}
		if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
			mcp_conn_handling(server, conn_record(conn));
		if (strcmp(method, MHD_HTTP_METHOD_DELETE) == 0)
			return handle_delete(server, conn);
		if (strcmp(method, MHD_HTTP_METHOD_GET) == 0)
			return handle_resume(server, conn, header(conn, "Last-Event-ID"));
		req->replied = 0;
		return MHD_YES;
	}
	if (req->replied) {
		/* libmicrohttpd skips the body after an early reply; should it
		 * still hand some over, it is dropped. */
		*upload_data_size = 0;
		return MHD_YES;
	}

	if (*upload_data_size > 0) {
		/* Body bytes: keep them while under the limit; past it, drop the
		 * buffer and discard the rest, then answer 413 at the end. */
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		mcp_conn_body(server, conn_record(conn), n);
		/* The budget counts what the buffer will hold, reserved BEFORE it
		 * grows: its capacity doubles (base/buf.c), so the allocation can
		 * be up to twice the bytes received (a body without
		 * Content-Length reserves as it arrives). */
		if (!req->too_large && !req->over_budget) {
			size_t cap = req->body.cap ? req->body.cap : 256;
			while (cap < req->body.len + n + 1)
				cap *= 2;
			if (n > req->body.max || req->body.len > req->body.max - n) {
				req->too_large = 1; /* 413 (before the budget: 503 would invite a retry) */
				release_body(server, req);
			} else if (reserve_body(server, req, cap) < 0) {
				req->over_budget = 1;
				release_body(server, req);
			} else if (cp_buf_append(&req->body, upload_data, n) < 0) {
				req->too_large = 1;
				release_body(server, req);
			}
		}
		if (req->too_large || req->over_budget) {
			req->discarded += n;
			if (req->discarded > discard_max(server)) {
				log_warn("mcp", "closed a connection streaming an oversize body");
				return MHD_NO;
			}
		}
		return MHD_YES;
	}
	mcp_conn_handling(server, conn_record(conn));
	return handle_post(server, conn, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)toe;
	struct mcp_server *server = cls;
	struct http_request *req = *con_cls;
	mcp_conn_idle(server, conn_record(conn)); /* the next request's headers are due */
	if (!req)
		return;
	if (req->counted) {
		pthread_mutex_lock(&server->http_lock);
		server->http_active--;
		pthread_cond_broadcast(&server->http_idle);
		pthread_mutex_unlock(&server->http_lock);
	}
	release_body(server, req);
	/* A large answer's pages go back to the system once it is sent. */
	if (req->reply_bytes >= LARGE_REPLY_BYTES)
		malloc_trim(0);
	free(req);
	*con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char text[512];
	vsnprintf(text, sizeof(text), fmt, ap);
	size_t n = strlen(text);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		text[--n] = '\0';
	log_warn("mcp", "libmicrohttpd: %s", text);
}

static int resolve_bind(const char *host, unsigned port, struct sockaddr_storage *ret_addr, struct cp_error **err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	int r = getaddrinfo(host, NULL, &hints, &ai);
	if (r != 0 || !ai)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "resolve bind address '%s': %s", host,
		                    gai_strerror(r));
	memset(ret_addr, 0, sizeof(*ret_addr));
	memcpy(ret_addr, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (ret_addr->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ret_addr)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ret_addr)->sin_port = htons((uint16_t)port);
	return 0;
}

/* libmicrohttpd reports a failed start only through its log; a bind of our
 * own on the same address recovers errno for a precise message. */
static int bind_failure(const struct mcp_server *server, const struct sockaddr_storage *addr, struct cp_error **err)
{
	socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	_cleanup_close_ int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd >= 0 && bind(fd, (const struct sockaddr *)addr, len) < 0) {
		if (errno == EADDRINUSE)
			return cp_error_set(err, CP_ERR_UNAVAILABLE,
			                    "port %u on %s is in use; stop the other server or set CHAT2SBX_PORT",
			                    server->opts.port, server->host);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "listen on %s port %u", server->host,
		                          server->opts.port);
	}
	return cp_error_set(err, CP_ERR_UNAVAILABLE, "listen on %s port %u: libmicrohttpd failed to start",
	                    server->host, server->opts.port);
}

/* The daemon options both listeners share. */
#define MCP_DAEMON_FLAGS                                                                                               \
	(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG | MHD_USE_ITC)

/* Starts the Unix socket listener on server->unix_path (issue 12): a
 * daemon of its own over a socket bound here, whose connections are checked
 * for their peer's uid as they start (on_unix_connection) and again per
 * request (refuse_early). */
static int listen_unix(struct mcp_server *server, struct cp_error **err)
{
	int fd = -1;
	if (mcp_unix_listen(server->unix_path, &fd, err) < 0)
		return -1;
	server->unix_listener = (struct mcp_listener){.server = server, .is_unix = 1};
	server->unix_daemon = MHD_start_daemon(
	    MCP_DAEMON_FLAGS, 0, NULL, NULL, on_request, &server->unix_listener, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log,
	    NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_CONNECTION, on_connection, &server->unix_listener,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, server, MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S,
	    MHD_OPTION_CONNECTION_LIMIT, CONNECTION_LIMIT, MHD_OPTION_THREAD_STACK_SIZE, STACK_BYTES, MHD_OPTION_END);
	if (!server->unix_daemon) {
		close(fd);
		unlink(server->unix_path);
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "listen on the MCP socket '%s': libmicrohttpd failed to start", server->unix_path);
	}
	server->unix_listening = 1;
	log_info("mcp", "listening on unix:%s (this user and root only)", server->unix_path);
	return 0;
}

/* Starts the Streamable HTTP listeners (see mcp.h; MCP basic/transports,
 * "Streamable HTTP"): TCP on opts.host:opts.port, and the Unix socket when
 * one is configured. Requests run on one thread per connection, so a slow
 * tool call blocks only its own connection. Fails with INVALID_ARGUMENT for
 * an unresolvable host, UNAVAILABLE naming the address when the port is
 * taken or a daemon cannot start, the socket's error (mcp_unix_listen),
 * CONFLICT when already listening; on failure nothing is left listening.
 * Returns at once. */
int mcp_server_listen(struct mcp_server *server, struct cp_error **err)
{
	if (server->daemon)
		return cp_error_set(err, CP_ERR_CONFLICT, "listen: the MCP server is already listening on port %u",
		                    server->port);
	struct sockaddr_storage addr;
	if (resolve_bind(server->host, server->opts.port, &addr, err) < 0)
		return -1;
	/* MHD_USE_ITC lets stop quiesce the daemon (close the listener) while
	 * running requests finish. */
	unsigned flags = MCP_DAEMON_FLAGS;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	server->tcp_listener = (struct mcp_listener){.server = server, .is_unix = 0};
	if (mcp_conn_guard_start(server) < 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "listen: cannot start the connection watchdog thread");
	server->daemon = MHD_start_daemon(
	    flags, (uint16_t)server->opts.port, NULL, NULL, on_request, &server->tcp_listener,
	    MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, server, MHD_OPTION_NOTIFY_CONNECTION, on_connection,
	    &server->tcp_listener, MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
	    CONNECTION_LIMIT, MHD_OPTION_THREAD_STACK_SIZE, STACK_BYTES, MHD_OPTION_END);
	if (!server->daemon) {
		mcp_conn_guard_stop(&server->guard);
		return bind_failure(server, &addr, err);
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
	server->port = info ? info->port : server->opts.port;
	if (server->unix_path && listen_unix(server, err) < 0) {
		MHD_stop_daemon(server->daemon);
		server->daemon = NULL;
		server->port = 0;
		mcp_conn_guard_stop(&server->guard);
		return -1;
	}
	log_info("mcp", "listening on http://%s%s%s:%u" MCP_PATH "%s", addr.ss_family == AF_INET6 ? "[" : "",
	         server->host, addr.ss_family == AF_INET6 ? "]" : "", server->port,
	         server->bearer_token ? " (bearer token required)" : " (NO TOKEN CHECK: CHAT2SBX_MCP_TOKEN=off)");
	return 0;
}

/* Stops the listeners (see mcp.h): closes the listening sockets at once
 * (removing the Unix socket's file),
 * answers requests that arrive on open connections with 503, waits up to
 * STOP_WAIT_MS for running requests to send their replies, then stops the
 * daemon (which closes every connection and joins its threads; alone it
 * would cut running requests off without a reply). No-op when not
 * listening. Blocks for as long as the longest running request. */
void mcp_server_stop(struct mcp_server *server)
{
	if (!server->daemon)
		return;
	pthread_mutex_lock(&server->http_lock);
	server->http_stopping = 1;
	pthread_mutex_unlock(&server->http_lock);
	MHD_socket fd = MHD_quiesce_daemon(server->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	if (server->unix_daemon) {
		fd = MHD_quiesce_daemon(server->unix_daemon);
		if (fd != MHD_INVALID_SOCKET)
			close(fd);
	}
	if (server->unix_listening) {
		unlink(server->unix_path); /* nobody can connect any more: say so to clients at once */
		server->unix_listening = 0;
	}

	struct timespec deadline;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += STOP_WAIT_MS / 1000;
	pthread_mutex_lock(&server->http_lock);
	while (server->http_active > 0)
		if (pthread_cond_timedwait(&server->http_idle, &server->http_lock, &deadline) == ETIMEDOUT) {
			log_warn("mcp", "stopping with %u requests still running", server->http_active);
			break;
		}
	pthread_mutex_unlock(&server->http_lock);

	/* Readers of running streams would block the daemon's join. */
	mcp_resume_shutdown(server->resume);
	MHD_stop_daemon(server->daemon);
	server->daemon = NULL;
	if (server->unix_daemon) {
		MHD_stop_daemon(server->unix_daemon);
		server->unix_daemon = NULL;
	}
	mcp_conn_guard_stop(&server->guard); /* every connection is closed now */
	server->port = 0;
	pthread_mutex_lock(&server->http_lock);
	server->http_stopping = 0;
	pthread_mutex_unlock(&server->http_lock);
}
