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
 * dispatched. Never writes an HTTP server of its own. The SSE answers are
 * sse.c's, the listeners http_listen.c's, queuing a reply http_reply.c's.
 * Paths under /ui go, after the peer and DNS-rebinding checks and without
 * the bearer token (the page has its own login), to the owner's page
 * handler the application registered (pages.c; issue 26). */
#include "internal.h"
#include "http_internal.h"
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
#include "../base/xalloc.h"

/* libmicrohttpd 0.9.75 cannot queue a reply while a body is arriving, so a
 * body without Content-Length that passes the limit is read and dropped, and
 * the 413 goes out at its end. Past this much dropped data the connection is
 * closed instead: a reset is better than reading forever. */
#define DISCARD_MAX_BYTES ((size_t)64 * 1024 * 1024)
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
	int page;           /* a POST to the owner's page: its form body is kept up to MCP_PAGE_BODY_MAX */
	size_t reply_bytes; /* the JSON answer's size, so a large one gives its memory back */
};

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
	return mcp_http_rpc_error(conn, MHD_HTTP_CONTENT_TOO_LARGE, NULL, MCP_RPC_INVALID_REQUEST, text, NULL);
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
	struct mcp_http_headers h = {.retry_after = "1"};
	return mcp_http_rpc_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, MCP_RPC_INTERNAL_ERROR, text, &h);
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
void mcp_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
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
 * queues 403 when the peer is not loopback: worded by the page's handler
 * for a page path (page set; url and method borrowed), a JSON-RPC error
 * otherwise. */
static int refuse_peer(struct mcp_server *server, struct MHD_Connection *conn, int page, const char *url,
                       const char *method, enum MHD_Result *ret)
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
		struct mcp_http_headers h = {.close = 1};
		*ret = page ? mcp_page_answer(server, conn, 0, url, method, NULL, 0, MHD_HTTP_FORBIDDEN,
		                              "forbidden: only this machine's own clients may use this page")
		            : mcp_http_rpc_error(conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST,
		                                 "forbidden: only loopback clients may use this MCP endpoint", &h);
		return 1;
	}
	return 0;
}

/* 401 for a TCP request without the right bearer token (RFC 6750 section
 * 3: WWW-Authenticate names the scheme, with no resource_metadata, so an
 * MCP client finds no OAuth server; one that starts a flow anyway gets the
 * same hint from every OAuth path, oauth_paths.c). The JSON-RPC body says
 * where the token is and how to send it; error_description says it in
 * RFC 6750's character set, without the path. */
static enum MHD_Result reply_unauthorized(struct mcp_server *server, struct MHD_Connection *conn,
                                          enum mcp_bearer_result why)
{
	static const char *const reasons[] = {
	    [MCP_BEARER_OK] = "",
	    [MCP_BEARER_MISSING] = "the request has no Authorization header",
	    [MCP_BEARER_MALFORMED] = "the Authorization header is not 'Bearer <token>'",
	    [MCP_BEARER_WRONG] = "the bearer token is not this server's",
	};
	char hint[1100], text[1200];
	mcp_auth_hint(server, 0, hint, sizeof(hint));
	snprintf(text, sizeof(text), "unauthorized: %s. %s", reasons[why], hint);
	mcp_log_refusal(server, MCP_REFUSED_TOKEN, "refused a request on the MCP port: %s", reasons[why]);
#define UNAUTHORIZED_DESCRIPTION "error_description=\"send the bearer token that 'chat2sbx token' prints\""
	struct mcp_http_headers h = {
	    .www_authenticate = why == MCP_BEARER_WRONG
	                            ? "Bearer realm=\"chat2sbx\", error=\"invalid_token\", " UNAUTHORIZED_DESCRIPTION
	                            : "Bearer realm=\"chat2sbx\", " UNAUTHORIZED_DESCRIPTION,
	    .close = 1};
#undef UNAUTHORIZED_DESCRIPTION
	return mcp_http_rpc_error(conn, MHD_HTTP_UNAUTHORIZED, NULL, MCP_RPC_INVALID_REQUEST, text, &h);
}

/* Checks that need only the request line and headers; queues a reply and
 * returns 1 when the request is refused. Order: who the peer is (TCP:
 * loopback; Unix socket: its uid), the DNS-rebinding checks, the path (so
 * the OAuth paths answer where the token is, /.well-known/... still 404,
 * for everyone), then the bearer token on TCP. */
static int refuse_early(const struct mcp_listener *l, struct MHD_Connection *conn, struct http_request *req,
                        const char *url, const char *method, enum MHD_Result *ret)
{
	struct mcp_server *server = l->server;
	/* The owner's page answers its own refusals, so that each carries its
	 * security headers (issue 26). */
	int page = server->page_fn && mcp_page_path(url);
	if (l->is_unix) {
		const union MHD_ConnectionInfo *fi = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!fi || unix_peer_refused(server, fi->connect_fd)) {
			struct mcp_http_headers h = {.close = 1};
			*ret = mcp_http_rpc_error(
			    conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST,
			    "forbidden: only the user serve runs as (and root) may use this socket", &h);
			return 1;
		}
	} else if (refuse_peer(server, conn, page, url, method, ret)) {
		return 1;
	}
	const char *host = mcp_http_header(conn, MHD_HTTP_HEADER_HOST);
	const char *origin = mcp_http_header(conn, "Origin");
	char text[512], clipped[320];
	/* basic/transports, "Security Warning": DNS-rebinding protection. */
	if (!mcp_host_allowed(host, server->host)) {
		snprintf(text, sizeof(text), "forbidden: Host '%s' is not a loopback name",
		         text_clip(host, 100, clipped, sizeof(clipped)));
		log_warn("mcp", "refused a request for Host '%s' (DNS-rebinding protection)", clipped);
		*ret = page ? mcp_page_answer(server, conn, l->is_unix, url, method, NULL, 0, MHD_HTTP_FORBIDDEN, text)
		            : mcp_http_rpc_error(conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST, text, NULL);
		return 1;
	}
	if (!mcp_origin_allowed(origin)) {
		snprintf(text, sizeof(text), "forbidden: Origin '%s' is not a loopback origin",
		         text_clip(origin, 100, clipped, sizeof(clipped)));
		log_warn("mcp", "refused a request from Origin '%s' (DNS-rebinding protection)", clipped);
		*ret = page ? mcp_page_answer(server, conn, l->is_unix, url, method, NULL, 0, MHD_HTTP_FORBIDDEN, text)
		            : mcp_http_rpc_error(conn, MHD_HTTP_FORBIDDEN, NULL, MCP_RPC_INVALID_REQUEST, text, NULL);
		return 1;
	}
	if (page) {
		/* A GET (or anything but POST) is answered from its headers; a
		 * POST's form body is read first, up to MCP_PAGE_BODY_MAX. */
		if (strcmp(method, MHD_HTTP_METHOD_POST) != 0) {
			*ret = mcp_page_answer(server, conn, l->is_unix, url, method, NULL, 0, 0, NULL);
			return 1;
		}
		const char *cl = mcp_http_header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > MCP_PAGE_BODY_MAX) {
			*ret =
			    mcp_page_answer(server, conn, l->is_unix, url, method, NULL, 0, MHD_HTTP_CONTENT_TOO_LARGE,
			                    "the form is larger than the page's forms ever are; reload the page");
			return 1;
		}
		req->page = 1;
		return 0;
	}
	/* Only /mcp exists; /.well-known/... is 404, never 401, which would
	 * start an OAuth flow in the tunnel (DESIGN.md). A client that tries
	 * OAuth anyway is told where the token is (oauth_paths.c). */
	enum mcp_oauth_path oauth = mcp_oauth_path_of(url);
	if (oauth != MCP_OAUTH_NONE) {
		*ret = mcp_oauth_reply(server, conn, oauth, l->is_unix);
		return 1;
	}
	if (strcmp(url, MCP_PATH) != 0) {
		*ret = mcp_http_rpc_error(conn, MHD_HTTP_NOT_FOUND, NULL, MCP_RPC_INVALID_REQUEST,
		                          "not found: the MCP endpoint is " MCP_PATH, NULL);
		return 1;
	}
	if (!l->is_unix && server->bearer_token) {
		enum mcp_bearer_result b =
		    mcp_bearer_check(mcp_http_header(conn, MHD_HTTP_HEADER_AUTHORIZATION), server->bearer_token);
		if (b != MCP_BEARER_OK) {
			*ret = reply_unauthorized(server, conn, b);
			return 1;
		}
	}
	int resume = strcmp(method, MHD_HTTP_METHOD_GET) == 0 && mcp_http_header(conn, "Last-Event-ID");
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0 && strcmp(method, MHD_HTTP_METHOD_DELETE) != 0 && !resume) {
		/* basic/transports, "Listening for Messages from the Server": a
		 * server without a standalone SSE stream answers GET with 405; a
		 * GET with Last-Event-ID resumes a stream (handle_resume). */
		struct mcp_http_headers h = {.allow = "POST, DELETE"};
		*ret = mcp_http_rpc_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, MCP_RPC_INVALID_REQUEST,
		                          "method not allowed: use POST (or DELETE to end a session, or GET with "
		                          "Last-Event-ID to resume a stream)",
		                          &h);
		return 1;
	}
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return 0;
	if (!content_type_is_json(mcp_http_header(conn, MHD_HTTP_HEADER_CONTENT_TYPE))) {
		*ret = mcp_http_rpc_error(conn, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, NULL, MCP_RPC_INVALID_REQUEST,
		                          "unsupported media type: POST a JSON-RPC message as application/json", NULL);
		return 1;
	}
	/* An announced oversize body is read and dropped, then refused with
	 * 413 at its end: a client that is still sending when the connection
	 * closes sees a transport error (EPIPE) instead of the JSON-RPC error
	 * (issue 18). Past the discard bound it is refused at once. */
	const char *cl = mcp_http_header(conn, MHD_HTTP_HEADER_CONTENT_LENGTH);
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
	const char *sid = mcp_http_header(conn, "Mcp-Session-Id");
	if (!sid)
		return mcp_http_rpc_error(conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_INVALID_REQUEST,
		                          "DELETE needs the Mcp-Session-Id header of the session to end", NULL);
	if (!mcp_session_end(server->sessions, sid))
		return mcp_http_rpc_error(conn, MHD_HTTP_NOT_FOUND, NULL, MCP_RPC_SESSION_NOT_FOUND,
		                          "session not found: it ended or expired", NULL);
	log_debug("mcp", "session %.8s… ended by DELETE", sid);
	return mcp_http_reply(conn, MHD_HTTP_OK, NULL, NULL);
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
	struct mcp_http_headers h = {.unbuffered = 1};
	uint64_t owner = mcp_conn_watch_hangup(server, conn_record(conn));
	if (mcp_http_accepts_sse(mcp_http_header(conn, MHD_HTTP_HEADER_ACCEPT)) && mcp_sse_wants_progress(*value)) {
		struct mcp_sink check = {.headers = rh, .check_only = 1};
		_cleanup_json_ struct json_object *refusal = mcp_dispatch_sink(server, *value, NULL, NULL, &check);
		if (refusal)
			return mcp_http_reply(conn, check.http_status ? check.http_status : MHD_HTTP_OK,
			                      mcp_json_text(refusal), NULL);
		enum MHD_Result streamed;
		if (mcp_sse_queue_call(server, conn, value, NULL, 1, owner, &h, &streamed))
			return streamed;
	}
	struct mcp_sink sink = {.headers = rh, .owner = owner};
	_cleanup_json_ struct json_object *reply = mcp_dispatch_sink(server, *value, NULL, NULL, &sink);
	if (!reply && sink.cancelled)
		return MHD_NO; /* the client went away or cancelled: nothing to send */
	if (!reply)
		return mcp_http_reply(conn, MHD_HTTP_ACCEPTED, NULL, NULL);
	char *text = mcp_json_text(reply);
	req->reply_bytes = text ? strlen(text) : 0;
	return text ? mcp_http_reply(conn, sink.http_status ? sink.http_status : MHD_HTTP_OK, text, NULL) : MHD_NO;
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
		record_refused(server, NULL, mcp_http_header(conn, "Mcp-Session-Id"), "PARSE_ERROR", why);
		snprintf(text, sizeof(text), "parse error: %s", why);
		return mcp_http_rpc_error(conn, MHD_HTTP_BAD_REQUEST, NULL, MCP_RPC_PARSE_ERROR, text, NULL);
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
	struct mcp_http_headers h = {0};
	const char *version = mcp_http_header(conn, "MCP-Protocol-Version");
	if (version && !mcp_protocol_supported(version)) {
		char text[200];
		snprintf(text, sizeof(text),
		         "unsupported MCP-Protocol-Version '%.40s'; this server speaks 2026-07-28 (per-request _meta) "
		         "and 2025-11-25, 2025-06-18, 2025-03-26 (after initialize)",
		         version);
		record_refused(server, value, mcp_http_header(conn, "Mcp-Session-Id"), "INVALID_REQUEST", text);
		return mcp_http_rpc_error(conn, MHD_HTTP_BAD_REQUEST, id, MCP_RPC_INVALID_REQUEST, text, NULL);
	}
	h.protocol_version = version;

	/* basic/transports, "Session Management": an unknown or ended session
	 * is 404, which tells the client to initialize again. No session id at
	 * all is served statelessly: ChatGPT drops it after initialize
	 * (DESIGN.md). An initialize needs no session, so a stale id on one is
	 * ignored rather than refused. */
	const char *sid = mcp_http_header(conn, "Mcp-Session-Id");
	if (sid && !mcp_session_touch(server->sessions, sid)) {
		if (!mcp_message_is_initialize(value)) {
			record_refused(server, value, sid, "SESSION_NOT_FOUND", "the session ended or expired");
			return mcp_http_rpc_error(conn, MHD_HTTP_NOT_FOUND, id, MCP_RPC_SESSION_NOT_FOUND,
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
			return mcp_http_reply(conn, MHD_HTTP_BAD_REQUEST, mcp_json_text(refusal), &h);
		}
	}

	/* A tools/call that asked for progress gets a live SSE stream. */
	enum MHD_Result streamed;
	if (mcp_http_accepts_sse(mcp_http_header(conn, MHD_HTTP_HEADER_ACCEPT)) && mcp_sse_wants_progress(value) &&
	    mcp_sse_queue_call(server, conn, &value, sid, 0, 0, &h, &streamed))
		return streamed;

	_cleanup_free_ char *new_session = NULL;
	/* Notifications of any other POST (a batch) are collected on a stream,
	 * opened by the first of them, and sent with the response at the end;
	 * none, and there is no stream: a plain JSON answer. */
	struct mcp_sse_answer a = {.open_lock = PTHREAD_MUTEX_INITIALIZER};
	struct mcp_sink sink = {0};
	if (mcp_http_accepts_sse(mcp_http_header(conn, MHD_HTTP_HEADER_ACCEPT))) {
		a.resume = server->resume;
		a.session_id = sid;
		sink.notify = mcp_sse_notify;
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
		return mcp_http_reply(conn, MHD_HTTP_ACCEPTED, NULL, &h);
	if (!a.stream) {
		char *text = mcp_json_text(reply);
		req->reply_bytes = text ? strlen(text) : 0;
		return text ? mcp_http_reply(conn, MHD_HTTP_OK, text, &h) : MHD_NO;
	}
	/* The response is the stream's last event. */
	struct mcp_stream_reader *reader = mcp_stream_reader_new(a.stream);
	mcp_sse_finish(a.stream, reply, 0);
	if (!reader)
		return MHD_NO;
	return mcp_sse_queue(conn, reader, &h);
}

enum MHD_Result mcp_http_on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                    const char *version, const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
	(void)version;
	const struct mcp_listener *listener = cls;
	struct mcp_server *server = listener->server;
	struct http_request *req = *con_cls;

	if (!req) {
		/* First call: headers only. */
		req = xcalloc(1, sizeof(*req));
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
			return mcp_http_rpc_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, MCP_RPC_INTERNAL_ERROR,
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
			return mcp_sse_resume(server, conn, mcp_http_header(conn, "Last-Event-ID"));
		req->replied = 0;
		return MHD_YES;
	}
	if (req->replied) {
		/* libmicrohttpd skips the body after an early reply; should it
		 * still hand some over, it is dropped. */
		*upload_data_size = 0;
		return MHD_YES;
	}

	if (req->page) {
		/* A page form: kept whole up to MCP_PAGE_BODY_MAX, then dropped. */
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (n > 0) {
			mcp_conn_body(server, conn_record(conn), n);
			if (req->too_large || n > MCP_PAGE_BODY_MAX - req->body.len ||
			    cp_buf_append(&req->body, upload_data, n) < 0) {
				req->too_large = 1;
				cp_buf_free(&req->body);
				req->discarded += n;
				return req->discarded > discard_max(server) ? MHD_NO : MHD_YES;
			}
			return MHD_YES;
		}
		mcp_conn_handling(server, conn_record(conn));
		if (req->too_large)
			return mcp_page_answer(server, conn, listener->is_unix, url, method, NULL, 0,
			                       MHD_HTTP_CONTENT_TOO_LARGE,
			                       "the form is larger than the page's forms ever are; reload the page");
		return mcp_page_answer(server, conn, listener->is_unix, url, method, req->body.data, req->body.len, 0,
		                       NULL);
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

void mcp_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
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
