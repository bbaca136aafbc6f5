/* modern.c: MCP 2026-07-28, the stateless revision, served beside the
 * handshake-based ones on the same endpoint and on stdio (MCP 2026-07-28
 * basic/versioning, "Backward Compatibility with Initialization-Based
 * Versions": a dual-era server serves a request that carries the
 * per-request _meta statelessly, and an initialize selects the legacy
 * revisions). Decides which messages are 2026-07-28 requests, checks each
 * one's _meta and, over HTTP, its routing headers in the order the
 * revision's errors need, answers server/discover and the list and read
 * methods, and gives every result its resultType, the server's identity and
 * the cache hints. Holds no state: a request stands alone (basic,
 * "Statelessness"). Never touches a socket, a session or a legacy answer. */
#include "internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "../base/text.h"
#include "../base/xjson.h"

/* Per-request protocol fields (MCP 2026-07-28 basic, "_meta"). */
#define META_PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT_INFO "io.modelcontextprotocol/clientInfo"
#define META_LOG_LEVEL "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO "io.modelcontextprotocol/serverInfo"

/* Cache hints (MCP 2026-07-28 server/utilities/caching; changelog, minor
 * change 5): the tool list, the empty prompt and resource lists and what
 * server/discover says change only with the serve binary and hold nothing
 * of the caller's, so any cache may keep them ("public") for an hour. */
#define CACHE_TTL_MS 3600000
#define CACHE_SCOPE "public"

/* True when the MCP-Protocol-Version header value (borrowed, may be NULL)
 * names 2026-07-28, optional whitespace around it aside (RFC 9110 5.5).
 * Pure. */
int mcp_modern_header(const char *value)
{
	if (!value)
		return 0;
	while (*value == ' ' || *value == '\t')
		value++;
	size_t n = strlen(MCP_PROTOCOL_MODERN);
	if (strncmp(value, MCP_PROTOCOL_MODERN, n) != 0)
		return 0;
	for (value += n; *value == ' ' || *value == '\t'; value++)
		;
	return *value == '\0';
}

/* params._meta (borrowed) when params is an object with an object _meta. */
static struct json_object *request_meta(struct json_object *params)
{
	struct json_object *meta;
	if (json_object_is_type(params, json_type_object) && json_object_object_get_ex(params, "_meta", &meta) &&
	    json_object_is_type(meta, json_type_object))
		return meta;
	return NULL;
}

/* Whether msg (borrowed) is to be served as a 2026-07-28 message (MCP
 * 2026-07-28 basic/versioning, "Backward Compatibility": a request carrying
 * the per-request _meta is served statelessly; an initialize or a request
 * without it keeps the legacy behaviour). It is when its params._meta holds
 * io.modelcontextprotocol/protocolVersion naming anything but a legacy
 * revision we serve (an unknown one is answered with the revision's
 * UnsupportedProtocolVersionError, so a later revision's client learns what
 * we speak), or when protocol_header (the MCP-Protocol-Version header,
 * borrowed, NULL on stdio) says 2026-07-28. The body decides first, as the
 * official v2 SDK's server classifier does (core-internal
 * inboundClassification.ts); a legacy revision named in _meta under a
 * 2026-07-28 header is modern, so the mismatch is answered. Pure. */
int mcp_modern_claimed(struct json_object *msg, const char *protocol_header)
{
	if (!json_object_is_type(msg, json_type_object))
		return 0;
	int header_modern = mcp_modern_header(protocol_header);
	struct json_object *params = NULL, *pv;
	json_object_object_get_ex(msg, "params", &params);
	struct json_object *meta = request_meta(params);
	if (!meta || !json_object_object_get_ex(meta, META_PROTOCOL_VERSION, &pv))
		return header_modern;
	if (json_object_is_type(pv, json_type_string) && mcp_protocol_supported(json_object_get_string(pv)))
		return header_modern;
	return 1;
}

/* An error reply for id (borrowed) with data (owned, may be NULL). */
static struct json_object *error_with_data(struct json_object *id, int code, const char *message,
                                           struct json_object *data)
{
	struct json_object *reply = mcp_rpc_error_new(id, code, message);
	if (data)
		xjson_add(json_object_object_get(reply, "error"), "data", data);
	return reply;
}

/* A refusal of the request before its method ran: the error, and the HTTP
 * status the revision names for it set on sink (may be NULL). */
static struct json_object *refuse(struct mcp_sink *sink, unsigned status, struct json_object *id, int code,
                                  const char *message, struct json_object *data)
{
	if (sink)
		sink->http_status = status;
	return error_with_data(id, code, message, data);
}

/* Every revision the endpoint serves, newest first: 2026-07-28 per request,
 * the legacy ones through initialize (basic/versioning shows a dual-era
 * server listing both kinds in UnsupportedProtocolVersionError). */
static struct json_object *supported_versions(void)
{
	struct json_object *a = xjson_array();
	xjson_append(a, xjson_string(MCP_PROTOCOL_MODERN));
	for (size_t i = 0; i < mcp_protocol_versions_count; i++)
		xjson_append(a, xjson_string(mcp_protocol_versions[i]));
	return a;
}

static int is_implementation(struct json_object *o)
{
	struct json_object *v;
	return json_object_is_type(o, json_type_object) && json_object_object_get_ex(o, "name", &v) &&
	       json_object_is_type(v, json_type_string) && json_object_object_get_ex(o, "version", &v) &&
	       json_object_is_type(v, json_type_string);
}

static int is_log_level(struct json_object *v)
{
	/* server/utilities/logging: the RFC 5424 severities. */
	static const char *const levels[] = {"debug", "info",     "notice", "warning",
	                                     "error", "critical", "alert",  "emergency"};
	if (!json_object_is_type(v, json_type_string))
		return 0;
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (strcmp(json_object_get_string(v), levels[i]) == 0)
			return 1;
	return 0;
}

/* Checks params (borrowed, may be NULL) as MCP 2026-07-28 basic "_meta",
 * "Per-request protocol fields" demands: protocolVersion a string and
 * clientCapabilities an object on every request, clientInfo (optional) an
 * Implementation, logLevel (optional) a logging level, progressToken
 * (optional) a string or an integer. Returns 0, or -1 with why and *ret_data
 * (owned: the missing keys, or the key and its problem) for the -32602
 * reply a malformed request gets. */
static int envelope_check(struct json_object *params, char *why, size_t why_size, struct json_object **ret_data)
{
	static const char *const required[] = {META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES};
	struct json_object *meta = request_meta(params), *v;
	struct json_object *missing = xjson_array();
	for (size_t i = 0; i < 2; i++)
		if (!meta || !json_object_object_get_ex(meta, required[i], NULL))
			xjson_append(missing, xjson_string(required[i]));
	size_t n_missing = json_object_array_length(missing);
	if (n_missing > 0) {
		char lack[200];
		snprintf(lack, sizeof(lack), "lacks %s", json_object_get_string(json_object_array_get_idx(missing, 0)));
		snprintf(why, why_size,
		         "invalid params: a 2026-07-28 request carries %s and %s in params._meta; this one %s",
		         META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES,
		         !meta            ? "has no params._meta object"
		         : n_missing == 2 ? "has neither"
		                          : lack);
		struct json_object *data = xjson_object();
		xjson_add(data, "missing", missing);
		*ret_data = data;
		return -1;
	}
	json_object_put(missing);
	const char *key = NULL, *problem = NULL;
	if (!json_object_is_type(json_object_object_get(meta, META_PROTOCOL_VERSION), json_type_string))
		key = META_PROTOCOL_VERSION, problem = "must be a string naming a protocol revision";
	else if (!json_object_is_type(json_object_object_get(meta, META_CLIENT_CAPABILITIES), json_type_object))
		key = META_CLIENT_CAPABILITIES, problem = "must be an object (ClientCapabilities)";
	else if (json_object_object_get_ex(meta, META_CLIENT_INFO, &v) && !is_implementation(v))
		key = META_CLIENT_INFO, problem = "must be an object with string name and version (Implementation)";
	else if (json_object_object_get_ex(meta, META_LOG_LEVEL, &v) && !is_log_level(v))
		key = META_LOG_LEVEL, problem = "must be one of debug, info, notice, warning, error, critical, alert, "
		                                "emergency";
	else if (json_object_object_get_ex(meta, "progressToken", &v) && !json_object_is_type(v, json_type_string) &&
	         !json_object_is_type(v, json_type_int))
		key = "progressToken", problem = "must be a string or an integer";
	if (!key)
		return 0;
	snprintf(why, why_size, "invalid params: params._meta[\"%s\"] %s", key, problem);
	struct json_object *data = xjson_object();
	xjson_add(data, "key", xjson_string(key));
	xjson_add(data, "problem", xjson_string(problem));
	*ret_data = data;
	return -1;
}

/* The body field each method's Mcp-Name header mirrors (MCP 2026-07-28
 * basic/transports/streamable-http, "Standard Request Headers"; the tasks
 * rows from the Tasks extension's HTTP binding, as the v2 SDK's
 * MCP_NAME_HEADER_SOURCE has them). NULL for a method without one. */
static const char *name_source(const char *method)
{
	static const struct {
		const char *method, *field;
	} rows[] = {
	    {"tools/call", "name"},  {"prompts/get", "name"},    {"resources/read", "uri"},
	    {"tasks/get", "taskId"}, {"tasks/update", "taskId"}, {"tasks/cancel", "taskId"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (strcmp(rows[i].method, method) == 0)
			return rows[i].field;
	return NULL;
}

/* A string member of params (borrowed), or NULL; one with a NUL inside
 * counts as absent, as everywhere in mcp/ (issue 13). */
static const char *param_string(struct json_object *params, const char *key)
{
	struct json_object *v;
	if (json_object_is_type(params, json_type_object) && json_object_object_get_ex(params, key, &v) &&
	    json_object_is_type(v, json_type_string) &&
	    strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v))
		return json_object_get_string(v);
	return NULL;
}

/* Adds the cache hints to result (borrowed). */
static void add_cache_hints(struct json_object *result)
{
	xjson_add(result, "ttlMs", xjson_int64(CACHE_TTL_MS));
	xjson_add(result, "cacheScope", xjson_string(CACHE_SCOPE));
}

/* A result holding key: an empty array, with the cache hints. */
static struct json_object *empty_list(struct json_object *id, const char *key)
{
	struct json_object *result = mcp_empty_list_result(key);
	add_cache_hints(result);
	return mcp_rpc_result_new(id, result);
}

struct modern_request {
	struct mcp_server *server;
	struct json_object *id;     /* borrowed */
	const char *method;         /* borrowed */
	struct json_object *params; /* borrowed; an object or NULL */
	struct mcp_sink *sink;      /* may be NULL */
	struct mcp_request_info *info;
};

typedef struct json_object *(*modern_fn)(const struct modern_request *req);

/* server/discover (MCP 2026-07-28 server/discover, "DiscoverResult"; the
 * schema's DiscoverResult also makes ttlMs and cacheScope required). The
 * capabilities are what the handlers below honour: tools, and the empty
 * prompt and resource lists and completions the legacy revisions answer
 * too; no listChanged or subscribe (nothing changes while serve runs), no
 * logging (nothing is ever logged to the client), no extensions. */
static struct json_object *m_discover(const struct modern_request *req)
{
	struct json_object *caps = xjson_object();
	struct json_object *tools = xjson_object();
	xjson_add(tools, "listChanged", xjson_bool(0));
	xjson_add(caps, "tools", tools);
	struct json_object *prompts = xjson_object();
	xjson_add(prompts, "listChanged", xjson_bool(0));
	xjson_add(caps, "prompts", prompts);
	struct json_object *resources = xjson_object();
	xjson_add(resources, "subscribe", xjson_bool(0));
	xjson_add(resources, "listChanged", xjson_bool(0));
	xjson_add(caps, "resources", resources);
	xjson_add(caps, "completions", xjson_object());

	struct json_object *result = xjson_object();
	xjson_add(result, "supportedVersions", supported_versions());
	xjson_add(result, "capabilities", caps);
	if (req->server->instructions)
		xjson_add(result, "instructions", xjson_string(req->server->instructions));
	add_cache_hints(result);
	return mcp_rpc_result_new(req->id, result);
}

/* tools/list: the legacy answer's tools, in the same fixed order (server/tools,
 * "Capabilities": a deterministic order), with the cache hints. */
static struct json_object *m_tools_list(const struct modern_request *req)
{
	struct json_object *reply = mcp_tools_list(req->server, req->id), *result;
	if (json_object_object_get_ex(reply, "result", &result))
		add_cache_hints(result);
	return reply;
}

static struct json_object *m_tools_call(const struct modern_request *req)
{
	return mcp_tools_call(req->server, req->id, req->params, NULL, req->sink, req->info);
}

static struct json_object *m_prompts_list(const struct modern_request *req)
{
	return empty_list(req->id, "prompts");
}

static struct json_object *m_resources_list(const struct modern_request *req)
{
	return empty_list(req->id, "resources");
}

static struct json_object *m_resource_templates_list(const struct modern_request *req)
{
	return empty_list(req->id, "resourceTemplates");
}

/* prompts/get: there are no prompts, so every name is unknown (an invalid
 * params error, as for an unknown tool: server/prompts, "Error Handling"). */
static struct json_object *m_prompts_get(const struct modern_request *req)
{
	const char *name = param_string(req->params, "name");
	char text[300], clipped[200];
	if (!name)
		return mcp_rpc_error_new(req->id, MCP_RPC_INVALID_PARAMS, "prompts/get needs params.name, a string");
	snprintf(text, sizeof(text), "unknown prompt '%s': this server has no prompts (prompts/list is empty)",
	         text_clip(name, 100, clipped, sizeof(clipped)));
	return mcp_rpc_error_new(req->id, MCP_RPC_INVALID_PARAMS, text);
}

/* resources/read: there are no resources, so every URI is not found: -32602
 * with the URI in data (MCP 2026-07-28 server/resources, "Error Handling";
 * changelog, minor change 6). */
static struct json_object *m_resources_read(const struct modern_request *req)
{
	const char *uri = param_string(req->params, "uri");
	if (!uri)
		return mcp_rpc_error_new(req->id, MCP_RPC_INVALID_PARAMS, "resources/read needs params.uri, a string");
	struct json_object *data = xjson_object();
	xjson_add(data, "uri", xjson_string(uri));
	return error_with_data(req->id, MCP_RPC_INVALID_PARAMS,
	                       "Resource not found: this server has no resources (resources/list is empty)", data);
}

/* completion/complete: nothing to complete (server/utilities/completion). */
static struct json_object *m_complete(const struct modern_request *req)
{
	return mcp_rpc_result_new(req->id, mcp_empty_completion_result());
}

/* The 2026-07-28 method table, as redis's command table. */
static const struct {
	const char *name;
	modern_fn fn;
} modern_methods[] = {
    {"server/discover", m_discover},
    {"tools/list", m_tools_list},
    {"tools/call", m_tools_call},
    {"prompts/list", m_prompts_list},
    {"prompts/get", m_prompts_get},
    {"resources/list", m_resources_list},
    {"resources/templates/list", m_resource_templates_list},
    {"resources/read", m_resources_read},
    {"completion/complete", m_complete},
};

/* Why a method we do not answer at 2026-07-28 is absent; NULL when it is
 * simply unknown. */
static const char *absent_reason(const char *method)
{
	static const struct {
		const char *method, *reason;
	} rows[] = {
	    /* changelog, major change 2 */
	    {"initialize", "MCP 2026-07-28 has no initialize handshake: every request carries its version in "
	                   "params._meta (send initialize without it to speak a 2025 revision)"},
	    /* changelog, major change 5 */
	    {"ping", "MCP 2026-07-28 removed ping"},
	    {"logging/setLevel", "MCP 2026-07-28 removed logging/setLevel (the level is per request: "
	                         "io.modelcontextprotocol/logLevel in params._meta)"},
	    /* changelog, major change 4 */
	    {"resources/subscribe", "MCP 2026-07-28 replaced resources/subscribe with subscriptions/listen"},
	    {"resources/unsubscribe", "MCP 2026-07-28 replaced resources/unsubscribe with subscriptions/listen"},
	    {"subscriptions/listen", "this server sends no change notifications: server/discover declares no "
	                             "listChanged or subscribe capability (the tool list is fixed per serve version)"},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (strcmp(rows[i].method, method) == 0)
			return rows[i].reason;
	if (strncmp(method, "tasks/", 6) == 0)
		return "this server does not offer the Tasks extension (server/discover declares no "
		       "io.modelcontextprotocol/tasks); a long bash returns a session_id to poll with bash_poll";
	return NULL;
}

/* Gives the result of reply (borrowed, may be NULL or an error) what every
 * 2026-07-28 result carries: resultType "complete" (basic, "ResultType")
 * and the server's identity in _meta (basic, "Per-response protocol
 * fields"). The result's own members are left as they are. */
static void complete_result(struct mcp_server *server, struct json_object *reply)
{
	struct json_object *result, *meta;
	if (!reply || !json_object_object_get_ex(reply, "result", &result) ||
	    !json_object_is_type(result, json_type_object))
		return;
	if (!json_object_object_get_ex(result, "resultType", NULL))
		xjson_add(result, "resultType", xjson_string("complete"));
	if (!json_object_object_get_ex(result, "_meta", &meta) || !json_object_is_type(meta, json_type_object)) {
		meta = xjson_object();
		xjson_add(result, "_meta", meta);
	}
	struct json_object *info = xjson_object();
	xjson_add(info, "name", xjson_string(server->name));
	xjson_add(info, "version", xjson_string(server->version));
	xjson_add(meta, META_SERVER_INFO, info);
}

/* The routing-header rungs before the version gate: a header that is there
 * and says something else than the body (MCP 2026-07-28
 * basic/transports/streamable-http, "Protocol Version Header": a version
 * mismatch is HeaderMismatch; "Server Validation" for Mcp-Method). Over
 * stdio there are none. Returns NULL or the refusal. */
static struct json_object *header_mismatch(const struct modern_request *req, const char *claim)
{
	const struct mcp_route_headers *h = req->sink ? req->sink->headers : NULL;
	char why[600];
	if (!h)
		return NULL;
	if (h->protocol_version && mcp_route_header_check("MCP-Protocol-Version", h->protocol_version,
	                                                  h->protocol_version_count, claim, 0, why, sizeof(why)) < 0)
		return refuse(req->sink, 400, req->id, MCP_RPC_HEADER_MISMATCH, why, NULL);
	if (h->method &&
	    mcp_route_header_check("Mcp-Method", h->method, h->method_count, req->method, 0, why, sizeof(why)) < 0)
		return refuse(req->sink, 400, req->id, MCP_RPC_HEADER_MISMATCH, why, NULL);
	return NULL;
}

/* The presence rungs after the version gate: MCP-Protocol-Version and
 * Mcp-Method on every request, Mcp-Name mirroring params.name or params.uri
 * where the method has one ("Standard Request Headers": required; "Server
 * Validation": missing is a HeaderMismatch too). */
static struct json_object *header_missing(const struct modern_request *req, const char *claim)
{
	const struct mcp_route_headers *h = req->sink ? req->sink->headers : NULL;
	char why[600];
	if (!h)
		return NULL;
	if (mcp_route_header_check("MCP-Protocol-Version", h->protocol_version, h->protocol_version_count, claim, 0,
	                           why, sizeof(why)) < 0 ||
	    mcp_route_header_check("Mcp-Method", h->method, h->method_count, req->method, 0, why, sizeof(why)) < 0)
		return refuse(req->sink, 400, req->id, MCP_RPC_HEADER_MISMATCH, why, NULL);
	const char *field = name_source(req->method);
	const char *want = field ? param_string(req->params, field) : NULL;
	if (want && mcp_route_header_check("Mcp-Name", h->name, h->name_count, want, 1, why, sizeof(why)) < 0)
		return refuse(req->sink, 400, req->id, MCP_RPC_HEADER_MISMATCH, why, NULL);
	return NULL;
}

/* Serves one 2026-07-28 request whose JSON-RPC envelope dispatch.c already
 * checked (id a string or integer, method a string without NUL, params an
 * object or absent; all borrowed). The order of the checks is the order of
 * the revision's errors, each with the HTTP status it names (set on sink,
 * which may be NULL):
 *   1. params._meta: a missing or malformed per-request field is -32602,
 *      400 (basic, "Per-request protocol fields");
 *   2. a routing header that contradicts the body is -32020, 400
 *      (streamable-http, "Protocol Version Header", "Server Validation");
 *   3. a revision we do not serve is -32022, 400, with data {supported,
 *      requested} (basic/versioning, "Protocol Version Negotiation"; the
 *      shape the v2 SDK and the AI SDK read to retry or to give up);
 *   4. a required routing header that is missing, or an Mcp-Name that does
 *      not match the body (after its Base64 sentinel is decoded), is
 *      -32020, 400;
 *   5. a method this revision does not have (removed ones included) is
 *      -32601, 404 (streamable-http, "Protocol Version Header");
 *   6. the method; its own errors are in-band (200), as is a tool's.
 * Steps 2 and 4 apply over HTTP only (sink->headers); stdio has no header
 * layer. Returns the owned reply, NULL when the client cancelled a tool call
 * (sink->cancelled). Blocks for as long as a tool handler. */
struct json_object *mcp_modern_dispatch(struct mcp_server *server, struct json_object *id, const char *method,
                                        struct json_object *params, struct mcp_sink *sink,
                                        struct mcp_request_info *info)
{
	struct modern_request req = {server, id, method, params, sink, info};
	char why[600];
	struct json_object *data = NULL, *refusal;
	if (envelope_check(params, why, sizeof(why), &data) < 0)
		return refuse(sink, 400, id, MCP_RPC_INVALID_PARAMS, why, data);
	const char *claim = json_object_get_string(json_object_object_get(request_meta(params), META_PROTOCOL_VERSION));
	if ((refusal = header_mismatch(&req, claim)))
		return refusal;
	if (strcmp(claim, MCP_PROTOCOL_MODERN) != 0) {
		char clipped[80];
		data = xjson_object();
		xjson_add(data, "supported", supported_versions());
		xjson_add(data, "requested", xjson_string(claim));
		snprintf(why, sizeof(why),
		         "Unsupported protocol version '%s': per-request _meta is served at %s; the 2025 revisions "
		         "(%s, %s, %s) start with initialize",
		         text_clip(claim, 40, clipped, sizeof(clipped)), MCP_PROTOCOL_MODERN, mcp_protocol_versions[0],
		         mcp_protocol_versions[1], mcp_protocol_versions[2]);
		return refuse(sink, 400, id, MCP_RPC_UNSUPPORTED_VERSION, why, data);
	}
	if ((refusal = header_missing(&req, claim)))
		return refusal;
	if (sink && sink->check_only)
		return NULL;
	for (size_t i = 0; i < sizeof(modern_methods) / sizeof(modern_methods[0]); i++) {
		if (strcmp(modern_methods[i].name, method) != 0)
			continue;
		struct json_object *reply = modern_methods[i].fn(&req);
		complete_result(server, reply);
		return reply;
	}
	char clipped[320];
	const char *reason = absent_reason(method);
	if (reason)
		snprintf(why, sizeof(why), "method '%s' not found: %s", method, reason);
	else
		snprintf(why, sizeof(why), "method '%s' not found", text_clip(method, 100, clipped, sizeof(clipped)));
	return refuse(sink, 404, id, MCP_RPC_METHOD_NOT_FOUND, why, NULL);
}
