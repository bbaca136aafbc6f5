/* tool_call.c: runs tools/call over the caller's tool table (MCP
 * server/tools), the same path for every tool: lookup → check the arguments
 * against the tool's declaration (tool_args.c) → the call gate (audit) →
 * handler → a tool result, and tells reqlog.c what the call did.
 * Knows nothing of what a tool does: no Docker, no SQL, no policy. */
#include "internal.h"
#include "../base/text.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

static const struct mcp_tool *tool_find(const struct mcp_server *server, const char *name)
{
	for (size_t i = 0; i < server->n_tools; i++)
		if (strcmp(server->tools[i].name, name) == 0)
			return &server->tools[i];
	return NULL;
}

static struct json_object *text_content(const char *text)
{
	struct json_object *item = xjson_object();
	xjson_add(item, "type", xjson_string("text"));
	xjson_add(item, "text", xjson_string(text));
	struct json_object *content = xjson_array();
	xjson_append(content, item);
	return content;
}

/* MCP server/tools, "Error Handling": a tool execution error is a result
 * with isError: true, so the model sees the message and can act on it. */
/* An error result carries the message as text and no structuredContent: an
 * error shape would not match the tool's outputSchema, and clients such as the
 * official TypeScript SDK validate structuredContent even when isError is
 * true (MCP server/tools, "Error Handling"). */
static struct json_object *tool_error_result(const struct cp_error *e)
{
	struct json_object *result = xjson_object();
	xjson_add(result, "content", text_content(e->message));
	xjson_add(result, "isError", xjson_bool(true));
	return result;
}

static struct json_object *tool_success_result(struct json_object *value)
{
	const char *text = xjson_text(value, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	struct json_object *result = xjson_object();
	xjson_add(result, "content", text_content(text));
	xjson_add(result, "structuredContent", value); /* the result takes value's reference */
	xjson_add(result, "isError", xjson_bool(false));
	return result;
}

/* A string member of o, or NULL; one with a NUL inside counts as absent
 * (NULL), since as a C string it would act as a shorter name (issue 13:
 * "bash\u0000x" must not run bash). */
static const char *string_field(struct json_object *o, const char *key)
{
	struct json_object *v;
	if (o && json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) &&
	    strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v))
		return json_object_get_string(v);
	return NULL;
}

static struct json_object *invalid_params(struct json_object *id, const char *tool, struct mcp_request_info *info,
                                          const char *text)
{
	if (info)
		mcp_log_word(tool, info->tool, sizeof(info->tool));
	return mcp_rpc_error_new(id, MCP_RPC_INVALID_PARAMS, text);
}

/* Sends notifications/progress for call (see mcp.h; MCP
 * basic/utilities/progress). */
void mcp_call_progress(const struct mcp_call *call, double progress, double total, const char *message)
{
	if (!call || !call->progress_token || !call->notify || mcp_call_cancelled(call))
		return;
	struct json_object *params = xjson_object();
	xjson_add(params, "progressToken", json_object_get(call->progress_token));
	xjson_add(params, "progress", xjson_double(progress));
	if (total > 0)
		xjson_add(params, "total", xjson_double(total));
	if (message)
		xjson_add(params, "message", xjson_string(message));
	_cleanup_json_ struct json_object *n = xjson_object();
	xjson_add(n, "jsonrpc", xjson_string("2.0"));
	xjson_add(n, "method", xjson_string("notifications/progress"));
	xjson_add(n, "params", params);
	call->notify(call->notify_ctx, n);
}

int mcp_call_cancelled(const struct mcp_call *call)
{
	return call && cp_cancel_fired(call->cancel);
}

/* Registers a tools/call so notifications/cancelled (or, for owner != 0,
 * its HTTP connection's hangup) can find it. */
static struct mcp_inflight *inflight_add(struct mcp_server *server, const char *session_id, struct json_object *id,
                                         uint64_t owner)
{
	struct mcp_inflight *f = xcalloc(1, sizeof(*f));
	f->owner = owner;
	f->id_text = xstrdup(xjson_text(id, JSON_C_TO_STRING_PLAIN));
	f->session_id = xstrdup(session_id);
	cp_cancel_init(&f->cancel);
	pthread_mutex_lock(&server->inflight_lock);
	f->next = server->inflight;
	server->inflight = f;
	pthread_mutex_unlock(&server->inflight_lock);
	return f;
}

static void inflight_remove(struct mcp_server *server, struct mcp_inflight *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&server->inflight_lock);
	for (struct mcp_inflight **p = &server->inflight; *p; p = &(*p)->next)
		if (*p == f) {
			*p = f->next;
			break;
		}
	pthread_mutex_unlock(&server->inflight_lock);
	cp_cancel_destroy(&f->cancel);
	free(f->id_text);
	free(f->session_id);
	free(f);
}

/* params._meta.progressToken when it is a string or an integer (borrowed). */
static struct json_object *progress_token(struct json_object *params)
{
	struct json_object *meta, *tok;
	if (json_object_object_get_ex(params, "_meta", &meta) && json_object_is_type(meta, json_type_object) &&
	    json_object_object_get_ex(meta, "progressToken", &tok) &&
	    (json_object_is_type(tok, json_type_string) || json_object_is_type(tok, json_type_int)))
		return tok;
	return NULL;
}

/* Answers tools/call (MCP server/tools, "Calling Tools" and "Error
 * Handling"): malformed params or an unknown tool are JSON-RPC -32602
 * errors; a handler's failure is a result with isError: true. id and params
 * are borrowed (params may be NULL); session_id may be NULL. Returns an owned
 * response and fills info (may be NULL) with the tool, sandbox, approval and
 * status for the request's log line and audit row (reqlog.c). Blocks for as
 * long as the handler.
 * sink (may be NULL) takes the handler's progress notifications; a request
 * the client cancelled meanwhile gets no response: NULL, sink->cancelled set. */
struct json_object *mcp_tools_call(struct mcp_server *server, struct json_object *id, struct json_object *params,
                                   const char *session_id, struct mcp_sink *sink, struct mcp_request_info *info)
{
	if (!params)
		return invalid_params(id, NULL, info, "tools/call needs params {name, arguments}");
	const char *name = string_field(params, "name");
	if (!name)
		return invalid_params(id, NULL, info, "tools/call needs params.name, a string without NUL characters");
	char text[256];
	const struct mcp_tool *tool = tool_find(server, name);
	if (!tool) {
		char clipped[320];
		snprintf(text, sizeof(text), "unknown tool '%s'; call tools/list to see the available tools",
		         text_clip(name, 100, clipped, sizeof(clipped)));
		return invalid_params(id, name, info, text);
	}

	_cleanup_json_ struct json_object *empty = NULL;
	struct json_object *args;
	if (!json_object_object_get_ex(params, "arguments", &args) || !args)
		args = empty = xjson_object();
	else if (!json_object_is_type(args, json_type_object)) {
		char clipped[320];
		snprintf(text, sizeof(text), "tools/call '%s': params.arguments must be an object",
		         text_clip(name, 100, clipped, sizeof(clipped)));
		return invalid_params(id, name, info, text);
	}

	/* Arguments are checked before anything runs, also the gate: a call
	 * that cannot run is not put on record as started. */
	struct mcp_args *checked = NULL;
	_cleanup_error_ struct cp_error *arg_err = NULL;
	if (mcp_args_check(tool->args, args, &checked, &arg_err) < 0) {
		if (info) {
			mcp_log_word(tool->name, info->tool, sizeof(info->tool));
			const char *sandbox = string_field(args, "sandbox_id");
			if (sandbox)
				mcp_log_word(sandbox, info->sandbox, sizeof(info->sandbox));
			mcp_request_info_fail(info, cp_error_code_name(arg_err->code), arg_err->message);
		}
		return mcp_rpc_result_new(id, tool_error_result(arg_err));
	}

	if (server->opts.before_call && !(tool->hints & MCP_HINT_READ_ONLY)) {
		/* A call that changes something runs only once it is on record. */
		struct mcp_request_record so_far = {.method = "tools/call",
		                                    .tool = tool->name,
		                                    .sandbox_id = string_field(args, "sandbox_id"),
		                                    .session = info && info->session[0] ? info->session : NULL};
		int64_t ticket = 0;
		_cleanup_error_ struct cp_error *gate_err = NULL;
		if (server->opts.before_call(server->opts.on_request_ctx, &so_far, &ticket, &gate_err) < 0) {
			if (!gate_err)
				cp_error_set(&gate_err, CP_ERR_INTERNAL,
				             "tool '%s' was refused without a reason; this is a "
				             "server bug",
				             tool->name);
			if (info) {
				mcp_log_word(tool->name, info->tool, sizeof(info->tool));
				if (so_far.sandbox_id)
					mcp_log_word(so_far.sandbox_id, info->sandbox, sizeof(info->sandbox));
				mcp_request_info_fail(info, cp_error_code_name(gate_err->code), gate_err->message);
			}
			mcp_args_free(checked);
			return mcp_rpc_result_new(id, tool_error_result(gate_err));
		}
		if (info)
			info->ticket = ticket;
	}

	struct mcp_inflight *inflight = inflight_add(server, session_id, id, sink ? sink->owner : 0);
	struct mcp_call call = {
	    .app = server->app,
	    .session_id = session_id,
	    .tool = tool->name,
	    .progress_token = progress_token(params),
	    .notify = sink ? sink->notify : NULL,
	    .notify_ctx = sink ? sink->ctx : NULL,
	    .cancel = inflight ? &inflight->cancel : NULL,
	};
	struct json_object *value = NULL;
	_cleanup_error_ struct cp_error *err = NULL;
	int r = tool->handler(&call, checked, &value, &err);
	mcp_args_free(checked);
	int cancelled = mcp_call_cancelled(&call);
	inflight_remove(server, inflight);
	if (r >= 0 && !json_object_is_type(value, json_type_object)) {
		cp_error_set(&err, CP_ERR_INTERNAL, "tool '%s' returned no result object; this is a server bug",
		             tool->name);
		r = -1;
	}
	if (r < 0 && !err)
		cp_error_set(&err, CP_ERR_INTERNAL, "tool '%s' failed without saying why; this is a server bug",
		             tool->name);

	struct json_object *result;
	if (r < 0) {
		if (value)
			json_object_put(value);
		result = tool_error_result(err);
	} else {
		result = tool_success_result(value);
	}
	if (info) {
		/* The record (reqlog.c): the sandbox named in the arguments or, for
		 * sandbox_create, in the result; an approval the result names. */
		struct json_object *sc = NULL;
		if (r >= 0)
			json_object_object_get_ex(result, "structuredContent", &sc);
		const char *sandbox = string_field(args, "sandbox_id");
		mcp_log_word(tool->name, info->tool, sizeof(info->tool));
		if (sandbox || (sandbox = string_field(sc, "sandbox_id")))
			mcp_log_word(sandbox, info->sandbox, sizeof(info->sandbox));
		if (string_field(sc, "approval_id"))
			mcp_log_word(string_field(sc, "approval_id"), info->target, sizeof(info->target));
		if (cancelled)
			mcp_request_info_fail(info, "CANCELLED",
			                      "the client cancelled the request; no response was sent (work the tool "
			                      "started goes on: a bash session can be polled)");
		else if (r < 0)
			mcp_request_info_fail(info, cp_error_code_name(err->code), err->message);
	}
	if (cancelled) {
		/* basic/utilities/cancellation: no response for a cancelled request. */
		json_object_put(result);
		if (sink)
			sink->cancelled = 1;
		return NULL;
	}
	return mcp_rpc_result_new(id, result);
}
