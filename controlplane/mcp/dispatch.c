/* dispatch.c: JSON-RPC 2.0 message dispatch for MCP: validates the envelope,
 * hands a 2026-07-28 request to modern.c, routes any other method through
 * the legacy method table, answers the lifecycle and utility methods itself
 * and hands tools/list to tool_schema.c and tools/call to tool_call.c.
 * Transport-independent: no sockets, no HTTP status codes; the only state it
 * touches is the session table (initialize creates one when asked). */
#include "internal.h"
#include "../base/text.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

struct rpc_request {
	struct mcp_server *server;
	struct json_object *id;     /* borrowed; NULL for a notification */
	struct json_object *params; /* borrowed; an object or NULL */
	const char *session_id;
	char **ret_new_session;
	struct mcp_sink *sink;         /* may be NULL */
	struct mcp_request_info *info; /* what the log line and audit row say */
};

/* A method handler returns the whole response (owned), or NULL when it has
 * nothing to send (notifications). */
typedef struct json_object *(*rpc_method_fn)(const struct rpc_request *req);

static struct json_object *method_initialize(const struct rpc_request *req)
{
	/* basic/lifecycle, "Version Negotiation": echo a version we support,
	 * otherwise answer with the latest we support and let the client
	 * decide whether to disconnect. */
	const char *version = MCP_PROTOCOL_LATEST;
	struct json_object *v;
	if (req->params && json_object_object_get_ex(req->params, "protocolVersion", &v) &&
	    json_object_is_type(v, json_type_string) && mcp_protocol_supported(json_object_get_string(v)))
		version = json_object_get_string(v);

	struct mcp_server *server = req->server;
	struct json_object *result = xjson_object();
	xjson_add(result, "protocolVersion", xjson_string(version));

	struct json_object *caps = xjson_object();
	struct json_object *tools = xjson_object();
	xjson_add(tools, "listChanged", xjson_bool(0));
	xjson_add(caps, "tools", tools);
	xjson_add(caps, "logging", xjson_object());
	xjson_add(result, "capabilities", caps);

	struct json_object *info = xjson_object();
	xjson_add(info, "name", xjson_string(server->name));
	xjson_add(info, "version", xjson_string(server->version));
	xjson_add(result, "serverInfo", info);
	if (server->instructions)
		xjson_add(result, "instructions", xjson_string(server->instructions));

	if (req->ret_new_session) {
		_cleanup_error_ struct cp_error *err = NULL;
		char *sid = NULL;
		if (mcp_session_create(server->sessions, version, &sid, &err) < 0) {
			json_object_put(result);
			log_error("mcp", "initialize: %s", err->message);
			return mcp_rpc_error_new(req->id, MCP_RPC_INTERNAL_ERROR, err->message);
		}
		*req->ret_new_session = sid; /* ownership moves to the transport */
	}
	return mcp_rpc_result_new(req->id, result);
}

static struct json_object *method_empty(const struct rpc_request *req)
{
	return mcp_rpc_result_new(req->id, xjson_object());
}

static struct json_object *method_set_level(const struct rpc_request *req)
{
	/* server/utilities/logging: level is one of the RFC 5424 names. */
	static const char *const levels[] = {"debug", "info",     "notice", "warning",
	                                     "error", "critical", "alert",  "emergency"};
	struct json_object *v;
	if (req->params && json_object_object_get_ex(req->params, "level", &v) &&
	    json_object_is_type(v, json_type_string))
		for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
			if (strcmp(json_object_get_string(v), levels[i]) == 0)
				return method_empty(req);
	return mcp_rpc_error_new(req->id, MCP_RPC_INVALID_PARAMS,
	                         "logging/setLevel needs params.level, one of debug, info, notice, warning, "
	                         "error, critical, alert, emergency");
}

static struct json_object *empty_list(const struct rpc_request *req, const char *key)
{
	return mcp_rpc_result_new(req->id, mcp_empty_list_result(key));
}

static struct json_object *method_resources_list(const struct rpc_request *req)
{
	return empty_list(req, "resources");
}

static struct json_object *method_resource_templates_list(const struct rpc_request *req)
{
	return empty_list(req, "resourceTemplates");
}

static struct json_object *method_prompts_list(const struct rpc_request *req)
{
	return empty_list(req, "prompts");
}

static struct json_object *method_complete(const struct rpc_request *req)
{
	return mcp_rpc_result_new(req->id, mcp_empty_completion_result());
}

static struct json_object *method_tools_list(const struct rpc_request *req)
{
	return mcp_tools_list(req->server, req->id);
}

static struct json_object *method_tools_call(const struct rpc_request *req)
{
	return mcp_tools_call(req->server, req->id, req->params, req->session_id, req->sink, req->info);
}

/* The method table, as redis's command table: one row per method we answer. */
static const struct {
	const char *name;
	rpc_method_fn fn;
} methods[] = {
    {"initialize", method_initialize},
    {"ping", method_empty},
    {"tools/list", method_tools_list},
    {"tools/call", method_tools_call},
    {"logging/setLevel", method_set_level},
    {"resources/list", method_resources_list},
    {"resources/templates/list", method_resource_templates_list},
    {"prompts/list", method_prompts_list},
    {"completion/complete", method_complete},
};

/* The id a reply to value should carry: the request's id when it is a string
 * or a number (JSON-RPC 2.0 section 4; MCP basic "Requests": never null),
 * NULL otherwise. value and the result are borrowed. */
struct json_object *mcp_message_id(struct json_object *value)
{
	struct json_object *id;
	if (!json_object_is_type(value, json_type_object) || !json_object_object_get_ex(value, "id", &id))
		return NULL;
	if (json_object_is_type(id, json_type_string) || json_object_is_type(id, json_type_int) ||
	    json_object_is_type(id, json_type_double))
		return id;
	return NULL;
}

/* True when value is a single initialize request (MCP basic/lifecycle,
 * "Initialization"). value is borrowed. */
int mcp_message_is_initialize(struct json_object *value)
{
	struct json_object *m;
	return json_object_is_type(value, json_type_object) && json_object_object_get_ex(value, "method", &m) &&
	       json_object_is_type(m, json_type_string) && strcmp(json_object_get_string(m), "initialize") == 0 &&
	       mcp_message_id(value) != NULL;
}

/* notifications/cancelled (MCP basic/utilities/cancellation): marks the
 * in-flight tools/call with params.requestId on the same session (or, for a
 * stateless sender, one without a session) as cancelled, so its response is
 * never sent. Unknown or finished requests are ignored, as the spec asks. */
static void notification_cancelled(struct mcp_server *server, struct json_object *params, const char *session_id)
{
	struct json_object *rid;
	if (!params || !json_object_is_type(params, json_type_object) ||
	    !json_object_object_get_ex(params, "requestId", &rid) ||
	    !(json_object_is_type(rid, json_type_string) || json_object_is_type(rid, json_type_int)))
		return;
	if (mcp_cancel_request(server, session_id, rid))
		log_debug("mcp", "request %.40s cancelled by the client", json_object_to_json_string(rid));
}

/* Marks the in-flight tools/call with request_id (borrowed) of session_id
 * (NULL = stateless) as cancelled; returns how many were marked. */
int mcp_cancel_request(struct mcp_server *server, const char *session_id, struct json_object *request_id)
{
	const char *want = json_object_to_json_string_ext(request_id, JSON_C_TO_STRING_PLAIN);
	int n = 0;
	pthread_mutex_lock(&server->inflight_lock);
	for (struct mcp_inflight *f = server->inflight; f; f = f->next) {
		int same_session =
		    session_id ? f->session_id && strcmp(f->session_id, session_id) == 0 : !f->session_id;
		/* A 2026-07-28 call over HTTP ends only with its own connection:
		 * ids are the client's, so another client could name the same. */
		if (same_session && !f->owner && strcmp(f->id_text, want) == 0) {
			cp_cancel_fire(&f->cancel);
			n++;
		}
	}
	pthread_mutex_unlock(&server->inflight_lock);
	return n;
}

int mcp_cancel_owner(struct mcp_server *server, uint64_t owner)
{
	int n = 0;
	if (!owner)
		return 0;
	pthread_mutex_lock(&server->inflight_lock);
	for (struct mcp_inflight *f = server->inflight; f; f = f->next)
		if (f->owner == owner) {
			cp_cancel_fire(&f->cancel);
			n++;
		}
	pthread_mutex_unlock(&server->inflight_lock);
	return n;
}

/* A refusal of a 2026-07-28 message's JSON-RPC envelope is 400 over HTTP
 * (MCP 2026-07-28 basic/transports/streamable-http: a request the server
 * cannot accept gets an HTTP error status); sink may be NULL. */
static struct json_object *modern_bad_envelope(struct mcp_sink *sink, int modern, struct json_object *reply)
{
	if (modern && sink)
		sink->http_status = 400;
	return reply;
}

static struct json_object *dispatch_object_info(struct mcp_server *server, struct json_object *msg,
                                                const char *session_id, char **ret_new_session, struct mcp_sink *sink,
                                                struct mcp_request_info *info)
{
	struct json_object *method, *params = NULL, *version, *id_raw;
	int has_id = json_object_object_get_ex(msg, "id", &id_raw);
	int has_method = json_object_object_get_ex(msg, "method", &method);
	struct json_object *id = mcp_message_id(msg);

	/* A response sent to us (we never send requests to the client): ignore
	 * it, as basic/transports says for POSTed responses (202, no body). */
	if (!has_method &&
	    (json_object_object_get_ex(msg, "result", NULL) || json_object_object_get_ex(msg, "error", NULL)))
		return NULL;

	const struct mcp_route_headers *headers = sink ? sink->headers : NULL;
	int modern = mcp_modern_claimed(msg, headers ? headers->protocol_version : NULL);
	if (modern) {
		info->revision = MCP_PROTOCOL_MODERN;
		if (sink)
			sink->modern = 1;
	}

	/* JSON-RPC 2.0 section 4 and 5: an invalid request is answered even
	 * without an id; we keep the id whenever it was readable. */
	if (!json_object_object_get_ex(msg, "jsonrpc", &version) || !json_object_is_type(version, json_type_string) ||
	    strcmp(json_object_get_string(version), "2.0") != 0)
		return modern_bad_envelope(
		    sink, modern,
		    mcp_rpc_error_new(id, MCP_RPC_INVALID_REQUEST, "invalid request: \"jsonrpc\" must be \"2.0\""));
	if (!has_method || !json_object_is_type(method, json_type_string))
		return modern_bad_envelope(
		    sink, modern,
		    mcp_rpc_error_new(id, MCP_RPC_INVALID_REQUEST, "invalid request: \"method\" must be a string"));
	/* A NUL would make "ping\u0000x" act as ping (issue 13). */
	if (strlen(json_object_get_string(method)) != (size_t)json_object_get_string_len(method))
		return modern_bad_envelope(
		    sink, modern,
		    mcp_rpc_error_new(id, MCP_RPC_INVALID_REQUEST,
		                      "invalid request: \"method\" contains a NUL character (\\u0000)"));
	if (has_id && !id)
		return modern_bad_envelope(sink, modern,
		                           mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST,
		                                             "invalid request: \"id\" must be a string or an integer"));

	const char *name = json_object_get_string(method);
	if (!has_id) {
		/* Notifications (notifications/initialized, notifications/cancelled,
		 * ...) never get a reply (JSON-RPC 2.0 section 4.1). A 2026-07-28
		 * client over HTTP cancels by closing its stream, never by
		 * notification (MCP 2026-07-28 basic/patterns/cancellation). */
		log_debug("mcp", "notification %s", name);
		if (strcmp(name, "notifications/cancelled") == 0 && !(modern && headers) &&
		    json_object_object_get_ex(msg, "params", &params))
			notification_cancelled(server, params, session_id);
		return NULL;
	}

	if (json_object_object_get_ex(msg, "params", &params) && params &&
	    !json_object_is_type(params, json_type_object))
		return modern_bad_envelope(
		    sink, modern,
		    mcp_rpc_error_new(id, MCP_RPC_INVALID_PARAMS, "invalid params: \"params\" must be an object"));

	if (modern)
		return mcp_modern_dispatch(server, id, name, params, sink, info);
	if (sink && sink->check_only)
		return NULL;

	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		if (strcmp(methods[i].name, name) != 0)
			continue;
		struct rpc_request req = {server, id, params, session_id, ret_new_session, sink, info};
		return methods[i].fn(&req);
	}
	char clipped[320];
	_cleanup_free_ char *text = xasprintf("method '%s' not found", text_clip(name, 100, clipped, sizeof(clipped)));
	return mcp_rpc_error_new(id, MCP_RPC_METHOD_NOT_FOUND, text);
}

/* One message with its log line and audit record (reqlog.c): every request
 * and notification, never a response sent to us. */
static struct json_object *dispatch_object(struct mcp_server *server, struct json_object *msg, const char *session_id,
                                           char **ret_new_session, struct mcp_sink *sink)
{
	struct json_object *m = NULL;
	int has_method = json_object_object_get_ex(msg, "method", &m);
	if (!has_method &&
	    (json_object_object_get_ex(msg, "result", NULL) || json_object_object_get_ex(msg, "error", NULL)))
		return NULL; /* a response: nothing to log or answer */
	struct mcp_request_info info;
	mcp_request_info_begin(&info, json_object_is_type(m, json_type_string) ? json_object_get_string(m) : NULL,
	                       session_id);
	int cancelled_before = sink ? sink->cancelled : 0;
	struct json_object *reply = dispatch_object_info(server, msg, session_id, ret_new_session, sink, &info);
	if (!session_id && ret_new_session && *ret_new_session && !info.session[0])
		snprintf(info.session, sizeof(info.session), "%.8s", *ret_new_session); /* initialize made it */
	if (!reply && sink && sink->cancelled && !cancelled_before)
		mcp_request_info_fail(&info, "CANCELLED", "the client cancelled the request; no response was sent");
	if (!reply && sink && sink->check_only)
		return NULL; /* it passed its checks; its log line comes when it runs */
	mcp_request_done(server, &info, reply);
	return reply;
}

struct json_object *mcp_batch_refusal(struct json_object *value, const char *version)
{
	if (!json_object_is_type(value, json_type_array))
		return NULL;
	char text[300];
	if (version && *version && strcmp(version, "2025-03-26") != 0) {
		snprintf(text, sizeof(text),
		         "invalid request: JSON-RPC batches are not part of MCP %.20s (revisions from 2025-06-18 on "
		         "removed them); send one message per request",
		         version);
		return mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST, text);
	}
	size_t n = json_object_array_length(value);
	/* A 2026-07-28 message stands alone (MCP 2026-07-28
	 * basic/transports/streamable-http, "Sending Messages": one request per
	 * POST), whatever revision the batch says it is. */
	for (size_t i = 0; i < n; i++)
		if (mcp_modern_claimed(json_object_array_get_idx(value, i), NULL))
			return mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST,
			                         "invalid request: a JSON-RPC batch may not hold a 2026-07-28 request "
			                         "(one with io.modelcontextprotocol/protocolVersion in params._meta); "
			                         "send one message per request");
	if (n > MCP_BATCH_MAX) {
		snprintf(text, sizeof(text),
		         "invalid request: a batch may hold at most %d messages and this one holds %zu; send them in "
		         "smaller batches or one per request",
		         MCP_BATCH_MAX, n);
		return mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST, text);
	}
	return NULL;
}

static struct json_object *dispatch_batch(struct mcp_server *server, struct json_object *batch, const char *session_id,
                                          char **ret_new_session, struct mcp_sink *sink)
{
	size_t n = json_object_array_length(batch);
	if (n == 0)
		return mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST, "invalid request: empty batch");
	struct json_object *too_many = mcp_batch_refusal(batch, NULL); /* the cap holds on every path */
	if (too_many)
		return too_many;
	struct json_object *replies = xjson_array();
	for (size_t i = 0; i < n; i++) {
		/* Only the first initialize of a batch may create a session. */
		char **new_session = ret_new_session && !*ret_new_session ? ret_new_session : NULL;
		struct json_object *msg = json_object_array_get_idx(batch, i);
		struct json_object *r =
		    json_object_is_type(msg, json_type_object)
		        ? dispatch_object(server, msg, session_id, new_session, sink)
		        : mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST,
		                            "invalid request: a batch element must be a JSON-RPC object");
		if (r)
			xjson_append(replies, r);
	}
	if (json_object_array_length(replies) == 0) {
		json_object_put(replies);
		return NULL;
	}
	return replies;
}

/* Dispatches one parsed JSON value: an object (one message), an array (a
 * JSON-RPC 2.0 section 6 batch, as the 2025-03-26 revision allows) or
 * anything else (-32600, id null). Arguments as mcp_dispatch; returns an
 * owned reply (object or array) or NULL when nothing is to be sent. Blocks
 * for as long as the tool handlers it calls. */
struct json_object *mcp_dispatch_value(struct mcp_server *server, struct json_object *value, const char *session_id,
                                       char **ret_new_session)
{
	return mcp_dispatch_sink(server, value, session_id, ret_new_session, NULL);
}

/* As mcp_dispatch_value, with the transport's notification sink (may be
 * NULL): tool handlers send progress through it while they run, and
 * sink->cancelled is set when the client cancelled a request of value (the
 * transport then sends no response for it). */
struct json_object *mcp_dispatch_sink(struct mcp_server *server, struct json_object *value, const char *session_id,
                                      char **ret_new_session, struct mcp_sink *sink)
{
	if (json_object_is_type(value, json_type_array))
		return dispatch_batch(server, value, session_id, ret_new_session, sink);
	if (!json_object_is_type(value, json_type_object))
		return mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST, "invalid request: expected a JSON-RPC object");
	return dispatch_object(server, value, session_id, ret_new_session, sink);
}

/* Dispatches one JSON-RPC message (JSON-RPC 2.0 sections 4-5; MCP
 * 2025-11-25 basic, basic/lifecycle, server/tools, server/utilities). msg is
 * borrowed; the reply is owned by the caller, NULL for a notification or a
 * response. session_id is borrowed and may be NULL (stateless). When
 * ret_new_session is not NULL, an initialize creates a session and stores its
 * owned id there. Blocks for as long as a tool handler runs. */
struct json_object *mcp_dispatch(struct mcp_server *server, struct json_object *msg, const char *session_id,
                                 char **ret_new_session)
{
	if (json_object_is_type(msg, json_type_array))
		return mcp_rpc_error_new(NULL, MCP_RPC_INVALID_REQUEST, "invalid request: expected a JSON-RPC object");
	return mcp_dispatch_value(server, msg, session_id, ret_new_session);
}

/* Dispatches raw bytes body[0..len) (borrowed): -32700 with id null when they
 * are not one JSON value (JSON-RPC 2.0 section 5.1), a batch answered by an
 * array, anything else as mcp_dispatch. Returns the owned reply text (one
 * line) or NULL when nothing is to be sent. Blocks while tools run. */
char *mcp_dispatch_text(struct mcp_server *server, const char *body, size_t len, const char *session_id,
                        char **ret_new_session)
{
	_cleanup_json_ struct json_object *value = NULL;
	_cleanup_json_ struct json_object *reply = NULL;
	char why[300], text[320];
	if (mcp_json_parse_request(body, len, &value, why, sizeof(why)) < 0) {
		snprintf(text, sizeof(text), "parse error: %s", why);
		reply = mcp_rpc_error_new(NULL, MCP_RPC_PARSE_ERROR, text);
	} else
		reply = mcp_dispatch_value(server, value, session_id, ret_new_session);
	return reply ? mcp_json_text(reply) : NULL;
}
