/* bash.c: bash, bash_poll, bash_stop. The helper owns the sessions and their
 * output; this file validates, clamps the yield (DESIGN.md, Bash contract),
 * bounds the answer, and turns a slow first snapshot into "running" so a
 * started command is never lost to the caller. */
#include <json-c/json.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../base/xjson.h"
#include "../policy/policy.h"
#include "../../template/helper/proto.h"
#include "tools_internal.h"

#define BASH_DEFAULT_YIELD_MS PROTO_DEFAULT_YIELD_MS
/* Time the helper gets beyond the yield to answer (ms). */
#define BASH_REPLY_MARGIN_MS 10000

/* tools_helper_call whose wait also ends when the client cancels the MCP
 * request (cancel may be NULL). */
static int helper_call_cancel(struct tools_app *app, struct cp_cancel *cancel, const char *sandbox_id,
                              const char *method, struct json_object *params, long timeout_ms, struct json_object **ret,
                              struct cp_error **err)
{
	struct helper_channel *ch = NULL;
	if (lifecycle_sandbox_channel(app->lc, sandbox_id, &ch, err) < 0)
		return -1;
	int r = helper_channel_call_cancel(ch, method, params, timeout_ms, cancel, ret, err);
	lifecycle_sandbox_release(app->lc, sandbox_id, ch); /* the end of the call counts as activity */
	if (r < 0 && (*err)->code == CP_ERR_UNAVAILABLE)
		cp_error_prefix(err, "sandbox '%s'", sandbox_id);
	return r;
}

int tools_helper_call(struct tools_app *app, const char *sandbox_id, const char *method, struct json_object *params,
                      long timeout_ms, struct json_object **ret, struct cp_error **err)
{
	return helper_call_cancel(app, NULL, sandbox_id, method, params, timeout_ms, ret, err);
}

/* A "running" snapshot of session_id with no output yet (owned). */
static struct json_object *running_snapshot(const char *session_id)
{
	struct json_object *res = xjson_object();
	xjson_add(res, "session_id", xjson_string(session_id));
	xjson_add(res, "status", xjson_string("running"));
	xjson_add(res, "output", xjson_string(""));
	xjson_add(res, "has_more_output", xjson_bool(1));
	return res;
}

/* yield_time_ms (the table bounds it to 0..60000, DESIGN.md's Bash
 * contract), clamped to the server's maximum. */
static int64_t yield_arg(struct tools_app *app, const struct mcp_args *args)
{
	return policy_yield_clamp(mcp_args_int(args, "yield_time_ms", -1), BASH_DEFAULT_YIELD_MS,
	                          app->cfg->max_yield_ms);
}

/* A bash snapshot's delivery range (proto.h, "Delivery and
 * acknowledgement"): the part of the session's output this answer carries.
 * Only the channel's acknowledgement needs it, so it is read here and
 * stripped from every snapshot before it leaves (finish); this file is the
 * one place that knows these fields. */
#define BASH_RANGE_START "output_start"
#define BASH_RANGE_END "output_end"

static int bash_delivery_range(struct json_object *result, const char **ret_key, int64_t *ret_start,
                               int64_t *ret_end)
{
	struct json_object *sid = NULL, *start = NULL, *end = NULL;
	if (!json_object_object_get_ex(result, "session_id", &sid) || !json_object_is_type(sid, json_type_string) ||
	    !json_object_object_get_ex(result, BASH_RANGE_START, &start) ||
	    !json_object_is_type(start, json_type_int) ||
	    !json_object_object_get_ex(result, BASH_RANGE_END, &end) || !json_object_is_type(end, json_type_int))
		return 0;
	*ret_key = json_object_get_string(sid);
	*ret_start = json_object_get_int64(start);
	*ret_end = json_object_get_int64(end);
	return *ret_start >= 0 && *ret_end > *ret_start;
}

const struct helper_receipts tool_bash_receipts = {
    .range = bash_delivery_range,
    .key_name = "session_id",
    .ack_method = "bash.ack",
    .nack_method = "bash.nack",
};

/* Checks that a snapshot is the one asked for and has the fields the
 * outputSchema promises, then adds sandbox_id. Takes res; on failure it is
 * put and *err says the helper's answer was malformed. */
static int finish(struct json_object *res, const char *sandbox_id, const char *session_id, struct json_object **ret,
                  struct cp_error **err)
{
	static const char *const statuses[] = {"running", "exited", "killed", "timed_out", "lost"};
	struct json_object *v = NULL;
	int ok = json_object_object_get_ex(res, "session_id", &v) && json_object_is_type(v, json_type_string) &&
	         strcmp(json_object_get_string(v), session_id) == 0 && json_object_object_get_ex(res, "output", &v) &&
	         json_object_is_type(v, json_type_string) && json_object_object_get_ex(res, "status", &v) &&
	         json_object_is_type(v, json_type_string);
	int known = 0;
	for (size_t i = 0; ok && i < sizeof(statuses) / sizeof(statuses[0]); i++)
		known |= strcmp(json_object_get_string(v), statuses[i]) == 0;
	if (!ok || !known) {
		json_object_put(res);
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "the helper of sandbox '%s' gave a malformed answer for session '%s'; "
		                    "try bash_poll, or destroy the sandbox if it persists",
		                    sandbox_id, session_id);
	}
	/* The delivery range is for the channel's acknowledgement only. */
	json_object_object_del(res, BASH_RANGE_START);
	json_object_object_del(res, BASH_RANGE_END);
	xjson_add(res, "sandbox_id", xjson_string(sandbox_id));
	*ret = res;
	return 0;
}

int tool_bash_run(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                  struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *sandbox_id = mcp_args_string(args, "sandbox_id", NULL);
	const char *command = mcp_args_string(args, "command", NULL), *cwd = mcp_args_string(args, "cwd", NULL);
	int64_t yield = yield_arg(app, args), timeout = mcp_args_int(args, "timeout_ms", 0);
	int64_t rows = mcp_args_int(args, "rows", 0), cols = mcp_args_int(args, "cols", 0);
	int interactive = mcp_args_bool(args, "interactive", 0), tty = mcp_args_bool(args, "tty", 0);
	int tail = mcp_args_bool(args, "tail", 0);
	if ((rows || cols) && !tty)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "arguments 'rows' and 'cols' size a terminal; they "
		                    "need tty: true");
	/* PROTO_COMMAND_MAX is in bytes of the encoded command, so not a
	 * maxLength (characters); the helper enforces the same limit. */
	if (strlen(command) > PROTO_COMMAND_MAX)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "argument 'command' is over 128 KiB; write a script with the write tool and run it");

	_cleanup_free_ char *session_id = NULL;
	if (id_new("bash_", &session_id, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session_id));
	xjson_add(p, "command", xjson_string(command));
	if (cwd)
		xjson_add(p, "cwd", xjson_string(cwd));
	if (timeout)
		xjson_add(p, "timeout_ms", xjson_int64(timeout));
	xjson_add(p, "yield_time_ms", xjson_int64(yield));
	xjson_add(p, "max_output_bytes", xjson_int64(app->cfg->max_output_chars));
	if (tail)
		xjson_add(p, "tail", xjson_bool(1));
	/* tty implies interactive: a terminal is read and written both ways. */
	if (interactive || tty)
		xjson_add(p, "interactive", xjson_bool(1));
	if (tty) {
		xjson_add(p, "tty", xjson_bool(1));
		if (rows)
			xjson_add(p, "rows", xjson_int64(rows));
		if (cols)
			xjson_add(p, "cols", xjson_int64(cols));
	}

	struct json_object *res = NULL;
	/* A long wait tells a client that asked for progress what is going on. */
	if (yield > 2000)
		mcp_call_progress(call, 0, 0, "command started; waiting for it to exit or for yield_time_ms");
	if (helper_call_cancel(app, call->cancel, sandbox_id, "bash.start", p, (long)yield + BASH_REPLY_MARGIN_MS, &res,
	                       err) < 0) {
		if (mcp_call_cancelled(call)) {
			/* notifications/cancelled: the wait ends, the command does not;
			 * the answer below is dropped by dispatch. */
			log_info("tools",
			         "bash in %s: request cancelled by the client; session %s keeps running (poll it "
			         "with bash_poll, end it with bash_stop)",
			         sandbox_id, session_id);
			cp_error_freep(err);
			res = running_snapshot(session_id);
		} else if ((*err)->code != CP_ERR_TIMEOUT) {
			return -1;
		} else {
			/* Started, but the first snapshot did not come back in time: keep
			 * the session and let the caller poll (nothing is lost). */
			log_warn("tools", "bash in %s: first snapshot of %s timed out; answering running", sandbox_id,
			         session_id);
			cp_error_freep(err);
			res = running_snapshot(session_id);
		}
	}
	return finish(res, sandbox_id, session_id, ret, err);
}

int tool_bash_poll(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *sandbox_id = mcp_args_string(args, "sandbox_id", NULL);
	const char *session_id = mcp_args_string(args, "session_id", NULL);
	int64_t yield = yield_arg(app, args);
	int tail = mcp_args_bool(args, "tail", 0);
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session_id));
	xjson_add(p, "yield_time_ms", xjson_int64(yield));
	xjson_add(p, "max_output_bytes", xjson_int64(app->cfg->max_output_chars));
	if (tail)
		xjson_add(p, "tail", xjson_bool(1));
	struct json_object *res = NULL;
	if (helper_call_cancel(app, call->cancel, sandbox_id, "bash.poll", p, (long)yield + BASH_REPLY_MARGIN_MS, &res,
	                       err) < 0) {
		if (mcp_call_cancelled(call))
			log_info("tools", "bash_poll in %s: request cancelled by the client; session %s keeps running",
			         sandbox_id, session_id);
		return -1;
	}
	return finish(res, sandbox_id, session_id, ret, err);
}

int tool_bash_stop(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *sandbox_id = mcp_args_string(args, "sandbox_id", NULL);
	const char *session_id = mcp_args_string(args, "session_id", NULL);
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session_id));
	xjson_add(p, "max_output_bytes", xjson_int64(app->cfg->max_output_chars));
	struct json_object *res = NULL;
	if (tools_helper_call(app, sandbox_id, "bash.stop", p, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	return finish(res, sandbox_id, session_id, ret, err);
}

int tool_bash_input(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *sandbox_id = mcp_args_string(args, "sandbox_id", NULL);
	const char *session_id = mcp_args_string(args, "session_id", NULL);
	struct json_object *data = mcp_args_value(args, "data"); /* text, NULs and all */
	int close_stdin = mcp_args_bool(args, "close", 0);
	if (!data && !close_stdin)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "give 'data' to write (end lines with \\n), 'close': true to end the input, or both");
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session_id));
	xjson_add(p, "data", data ? json_object_get(data) : xjson_string(""));
	xjson_add(p, "close", xjson_bool(close_stdin));
	struct json_object *res = NULL;
	if (tools_helper_call(app, sandbox_id, "bash.input", p, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	xjson_add(res, "sandbox_id", xjson_string(sandbox_id));
	*ret = res;
	return 0;
}

int tool_bash_list(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *sandbox_id = mcp_args_string(args, "sandbox_id", NULL);
	struct json_object *res = NULL;
	if (tools_helper_call(app, sandbox_id, "bash.list", NULL, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	xjson_add(res, "sandbox_id", xjson_string(sandbox_id));
	*ret = res;
	return 0;
}
