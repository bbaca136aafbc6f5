/* internal.h: what the files of mcp/ share and nobody else sees: the server
 * struct, the session table, JSON-RPC reply builders and the loopback checks.
 * Tests may include it; other layers use mcp.h only. */
#ifndef CP_MCP_INTERNAL_H
#define CP_MCP_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp.h"

struct json_object;
struct MHD_Daemon;

/* MCP basic/lifecycle "Version Negotiation": newest first. */
#define MCP_PROTOCOL_LATEST "2025-11-25"
extern const char *const mcp_protocol_versions[];
extern const size_t mcp_protocol_versions_count;

/* JSON-RPC 2.0 section 5.1 error codes, plus the session code the MCP
 * TypeScript SDK uses for an unknown session. */
enum mcp_rpc_code {
	MCP_RPC_PARSE_ERROR = -32700,
	MCP_RPC_INVALID_REQUEST = -32600,
	MCP_RPC_METHOD_NOT_FOUND = -32601,
	MCP_RPC_INVALID_PARAMS = -32602,
	MCP_RPC_INTERNAL_ERROR = -32603,
	MCP_RPC_SESSION_NOT_FOUND = -32001,
};

struct mcp_session_table;

/* A transport's notification sink for one incoming message, and what the
 * dispatcher reports back about it. */
struct mcp_sink {
	void (*notify)(void *ctx, struct json_object *message); /* message borrowed; may be NULL */
	void *ctx;
	int cancelled; /* out: a request of the message was cancelled; send no response */
};

/* A tools/call in progress, so notifications/cancelled can find it. */
struct mcp_inflight {
	struct mcp_inflight *next;
	char *session_id; /* NULL when stateless */
	char *id_text;    /* the request id as JSON text */
	int cancelled;    /* atomic */
};

struct mcp_server {
	struct mcp_server_options opts; /* string fields point at the copies below */
	char *host;
	char *name;
	char *version;
	char *instructions;
	const struct mcp_tool *tools; /* borrowed */
	size_t n_tools;
	char *tools_list_json; /* the tools/list result, built once at start */
	void *app;             /* borrowed */
	struct mcp_session_table *sessions;
	struct MHD_Daemon *daemon; /* NULL when not listening */
	unsigned port;
	/* HTTP requests in progress, so stop can let them finish. */
	pthread_mutex_t http_lock;
	pthread_cond_t http_idle; /* signalled when http_active drops */
	unsigned http_active;
	int http_stopping; /* new requests get 503 */
	pthread_mutex_t inflight_lock;
	struct mcp_inflight *inflight; /* tools/call requests being answered */
	uint64_t sse_event_id;         /* last SSE event id sent (atomic) */
};

/* protocol.c */
int mcp_protocol_supported(const char *version);
struct json_object *mcp_rpc_error_new(struct json_object *id, int code, const char *message);
struct json_object *mcp_rpc_result_new(struct json_object *id, struct json_object *result);
char *mcp_json_text(struct json_object *obj);
int mcp_json_parse(const char *text, size_t len, struct json_object **ret_value);
void mcp_format_size(size_t bytes, char *buf, size_t size);

/* dispatch.c */
struct json_object *mcp_dispatch_value(struct mcp_server *server, struct json_object *value, const char *session_id,
                                       char **ret_new_session);
struct json_object *mcp_dispatch_sink(struct mcp_server *server, struct json_object *value, const char *session_id,
                                      char **ret_new_session, struct mcp_sink *sink);
int mcp_cancel_request(struct mcp_server *server, const char *session_id, struct json_object *request_id);
int mcp_message_is_initialize(struct json_object *value);
struct json_object *mcp_message_id(struct json_object *value);

/* tools.c */
int mcp_tools_list_build(const struct mcp_tool *tools, size_t n_tools, char **ret_json, struct cp_error **err);
struct json_object *mcp_tools_list(struct mcp_server *server, struct json_object *id);
struct json_object *mcp_tools_call(struct mcp_server *server, struct json_object *id, struct json_object *params,
                                   const char *session_id, struct mcp_sink *sink);

/* session.c */
struct mcp_session_table *mcp_session_table_new(size_t max_sessions, long idle_ms);
void mcp_session_table_free(struct mcp_session_table *table);
int mcp_session_create(struct mcp_session_table *table, const char *protocol_version, char **ret_id,
                       struct cp_error **err);
int mcp_session_touch(struct mcp_session_table *table, const char *id);
int mcp_session_end(struct mcp_session_table *table, const char *id);
size_t mcp_session_count(struct mcp_session_table *table);

/* loopback.c */
int mcp_host_allowed(const char *host_header, const char *bind_host);
int mcp_origin_allowed(const char *origin);

#endif
