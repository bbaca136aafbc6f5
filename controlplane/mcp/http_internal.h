/* http_internal.h: what the Streamable HTTP transport's files share
 * (http.c: the daemon and the request routing; sse.c: the SSE answers and
 * their resumption; http_reply.c: queuing a reply). Private to mcp/. */
#ifndef CP_MCP_HTTP_INTERNAL_H
#define CP_MCP_HTTP_INTERNAL_H

#include <json-c/json.h>
#include <microhttpd.h>
#include <stdint.h>

#include "internal.h"

/* Each connection (and each streaming call's worker) is a thread; their
 * stacks are kept small so the connection limit costs little memory. */
#define MCP_HTTP_STACK_BYTES ((size_t)512 * 1024)

/* The one endpoint (basic/transports, "Streamable HTTP"). */
#define MCP_PATH "/mcp"

/* Headers a reply may carry besides Content-Type. */
struct mcp_http_headers {
	const char *session_id;
	const char *protocol_version;
	const char *allow;
	const char *retry_after; /* seconds */
	const char *www_authenticate;
	int close;      /* Connection: close (refusals: the peer gets no second try on this connection) */
	int unbuffered; /* X-Accel-Buffering: no on an SSE answer (MCP 2026-07-28 streamable-http,
	                   "Receiving Messages": proxies must pass events on at once) */
};

/* http.c: libmicrohttpd's callbacks (cls is the struct mcp_listener the
 * daemon was started for; on_completed's is the server). */
void mcp_http_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe);
enum MHD_Result mcp_http_on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                    const char *version, const char *upload_data, size_t *upload_data_size,
                                    void **con_cls);
void mcp_http_on_completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe);

/* http_reply.c */

/* Queues status with body (owned, malloc'd; moves into the response; NULL
 * = empty text/plain) as content_type, with the headers of h (borrowed, may
 * be NULL), Cache-Control: no-store always. MHD_NO when libmicrohttpd
 * cannot (the connection is then closed). */
enum MHD_Result mcp_http_reply_type(struct MHD_Connection *conn, unsigned status, char *body, const char *content_type,
                                    const struct mcp_http_headers *h);
/* mcp_http_reply_type as application/json. */
enum MHD_Result mcp_http_reply(struct MHD_Connection *conn, unsigned status, char *body,
                               const struct mcp_http_headers *h);
/* An HTTP error whose body is a JSON-RPC error (id borrowed, may be NULL),
 * so clients that only read JSON-RPC still see why. */
enum MHD_Result mcp_http_rpc_error(struct MHD_Connection *conn, unsigned status, struct json_object *id, int code,
                                   const char *message, const struct mcp_http_headers *h);
/* The request header name (borrowed from libmicrohttpd), NULL when absent. */
const char *mcp_http_header(struct MHD_Connection *conn, const char *name);
/* True when the client accepts text/event-stream (basic/transports: clients
 * send "Accept: application/json, text/event-stream"). */
int mcp_http_accepts_sse(const char *accept);

/* pages.c: the owner's page paths (mcp.h, MCP_PAGE_PREFIX). */

/* Hands conn's request for url (a page path; borrowed) to the server's page
 * handler and queues its reply. body (borrowed, may be NULL) is a POST's
 * body, len bytes. refusal_status, when not 0, is mcp/'s refusal with
 * refusal (its words); the handler only words it. MHD_NO when nothing
 * could be queued. */
enum MHD_Result mcp_page_answer(struct mcp_server *server, struct MHD_Connection *conn, int is_unix, const char *url,
                                const char *method, const char *body, size_t len, unsigned refusal_status,
                                const char *refusal);

/* oauth_paths.c */

/* The OAuth paths a client tries after a 401 (MCP basic/authorization). */
enum mcp_oauth_path {
	MCP_OAUTH_NONE,
	MCP_OAUTH_METADATA,  /* RFC 9728 / RFC 8414 / OpenID discovery, any of their URL forms */
	MCP_OAUTH_REGISTER,  /* /register (RFC 7591) */
	MCP_OAUTH_AUTHORIZE, /* /authorize */
	MCP_OAUTH_TOKEN,     /* /token */
};
/* Which OAuth path url (borrowed, without its query; NULL allowed) is:
 * /.well-known/{oauth-protected-resource,oauth-authorization-server,
 * openid-configuration} alone or followed by /..., any path ending in
 * /.well-known/ and one of those names, /register, /authorize, /token;
 * MCP_OAUTH_NONE for anything else. Pure. */
enum mcp_oauth_path mcp_oauth_path_of(const char *url);
/* Writes into buf (size bytes, always terminated, clipped) the sentence
 * that tells a client of this listener how to get in: on the Unix socket
 * that no token is needed; on TCP without a token check that none is
 * needed; otherwise how to send the bearer token, the file it is in
 * (server->token_hint, never the token) and the socket that needs none. */
void mcp_auth_hint(const struct mcp_server *server, int is_unix, char *buf, size_t size);
/* Queues the answer to OAuth path (not MCP_OAUTH_NONE) on conn: 404 for
 * the metadata paths, 400 for the others, each with an OAuth error object
 * ({"error": "invalid_request", "error_description": "this MCP server does
 * not use OAuth: ... <mcp_auth_hint>"}) and Connection: close, whatever
 * the method and without reading a body; logs one rate-limited line. */
enum MHD_Result mcp_oauth_reply(struct mcp_server *server, struct MHD_Connection *conn, enum mcp_oauth_path path,
                                int is_unix);

/* sse.c */

/* The notification sink of one POST: each notification is the stream's
 * next event (basic/transports, "Sending Messages to the Server"). With
 * resume set and no stream yet, the first notification opens the
 * resumable stream (resume.c) under open_lock: a POST that sends none
 * never makes one (issue 27), and event ids exist only on a stream that
 * carries events ("Resumability and Redelivery"). */
struct mcp_sse_answer {
	struct mcp_stream *stream; /* the writer's reference; NULL until opened */
	int events;                /* notifications appended (atomic) */
	struct mcp_resume *resume; /* where a stream is opened lazily; NULL: never */
	const char *session_id;    /* borrowed: the session the stream belongs to */
	pthread_mutex_t open_lock; /* guards stream while resume is set */
};
/* mcp_sink.notify for a struct mcp_sse_answer (ctx): appends message as the
 * next event, opening the stream first when it is lazy and not open yet (a
 * stream that cannot be opened drops the notification: the answer is then
 * plain JSON). */
void mcp_sse_notify(void *ctx, struct json_object *message);
/* Appends reply (borrowed, may be NULL) as the last event and ends the
 * stream: complete with it, abandoned without it or when cancelled. */
void mcp_sse_finish(struct mcp_stream *stream, struct json_object *reply, int cancelled);
/* Queues 200 text/event-stream read from r (taken over) with h's session,
 * version and buffering headers. The connection's thread blocks reading it. */
enum MHD_Result mcp_sse_queue(struct MHD_Connection *conn, struct mcp_stream_reader *r,
                              const struct mcp_http_headers *h);
/* True for a single tools/call whose params carry _meta.progressToken. */
int mcp_sse_wants_progress(struct json_object *value);
/* Answers *value (taken over on success) as a live SSE stream, the call run
 * on a worker thread counted as a running request: resumable, or for a
 * 2026-07-28 request (plain) one without event ids whose call owner's hangup
 * cancels. sid borrowed (NULL stateless). Returns 1 and sets *ret when it
 * did; 0 (value untouched) to fall back to the buffered answer. */
int mcp_sse_queue_call(struct mcp_server *server, struct MHD_Connection *conn, struct json_object **value,
                       const char *sid, int plain, uint64_t owner, const struct mcp_http_headers *h,
                       enum MHD_Result *ret);
/* Answers a GET with Last-Event-ID last_id (borrowed; basic/transports,
 * "Resumability and Redelivery"): replays that stream after the id, then
 * goes on live while its request runs. Refusals as JSON-RPC errors: 405 for
 * a 2026-07-28 request, 404 for an unknown session, 400 for an id that is
 * malformed, unknown, expired, of another session or whose events were
 * dropped. */
enum MHD_Result mcp_sse_resume(struct mcp_server *server, struct MHD_Connection *conn, const char *last_id);

#endif
