/* bash.c: bash, bash_poll, bash_stop, bash_input, bash_list. The helper owns
 * the sessions and their output; this file reads the arguments (one reader),
 * clamps the yield (DESIGN.md, Bash contract), bounds the answer, turns a
 * slow first snapshot into "running" so a started command is never lost to
 * the caller, and owns a snapshot's delivery range (tool_bash_receipts). */
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

/* The arguments of the bash tools, read in one place (bash_args_read):
 * borrowed from the call's arguments; one the caller left out is NULL, 0
 * or false. */
struct bash_args {
	const char *sandbox_id;
	const char *session_id; /* BASH_ARGS_SESSION */
	/* BASH_ARGS_WAIT; yield is clamped (policy_yield_clamp) */
	int64_t yield;
	int tail;
	/* BASH_ARGS_START; tty implies interactive */
	const char *command, *cwd;
	int64_t timeout, rows, cols;
	int interactive, tty;
	/* BASH_ARGS_INPUT; data is the text as given, NULs and all */
	struct json_object *data;
	int close;
};

/* The groups of arguments a bash tool declares beside sandbox_id, as the
 * table (table.c) groups them; mcp_args_* asserts a name is declared. */
enum {
	BASH_ARGS_SESSION = 1 << 0, /* session_id */
	BASH_ARGS_WAIT = 1 << 1,    /* yield_time_ms, tail */
	BASH_ARGS_START = 1 << 2,   /* command, cwd, timeout_ms, interactive, tty, rows, cols */
	BASH_ARGS_INPUT = 1 << 3,   /* data, close */
};

/* Reads the argument groups in want into *ret, after mcp/ checked them
 * against the table: yield_time_ms (the table bounds it to 0..60000,
 * DESIGN.md's Bash contract) is clamped to the server's maximum, and what
 * the table cannot say is checked here: rows/cols need tty, the command's
 * encoded size is at most PROTO_COMMAND_MAX (the helper enforces the same
 * limit). INVALID_ARGUMENT in *err otherwise. */
static int bash_args_read(struct tools_app *app, const struct mcp_args *args, unsigned want, struct bash_args *ret,
                          struct cp_error **err)
{
	struct bash_args a = {.sandbox_id = mcp_args_string(args, "sandbox_id", NULL)};
	if (want & BASH_ARGS_SESSION)
		a.session_id = mcp_args_string(args, "session_id", NULL);
	if (want & BASH_ARGS_WAIT) {
		a.yield = policy_yield_clamp(mcp_args_int(args, "yield_time_ms", -1), BASH_DEFAULT_YIELD_MS,
		                             app->cfg->max_yield_ms);
		a.tail = mcp_args_bool(args, "tail", 0);
	}
	if (want & BASH_ARGS_START) {
		a.command = mcp_args_string(args, "command", NULL);
		a.cwd = mcp_args_string(args, "cwd", NULL);
		a.timeout = mcp_args_int(args, "timeout_ms", 0);
		a.rows = mcp_args_int(args, "rows", 0);
		a.cols = mcp_args_int(args, "cols", 0);
		a.tty = mcp_args_bool(args, "tty", 0);
		a.interactive = mcp_args_bool(args, "interactive", 0) || a.tty;
	}
	if (want & BASH_ARGS_INPUT) {
		a.data = mcp_args_value(args, "data");
		a.close = mcp_args_bool(args, "close", 0);
	}
	if ((a.rows || a.cols) && !a.tty)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "arguments 'rows' and 'cols' size a terminal; they "
		                    "need tty: true");
	/* PROTO_COMMAND_MAX is in bytes of the encoded command, so not a
	 * maxLength (characters). */
	if (a.command && strlen(a.command) > PROTO_COMMAND_MAX)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "argument 'command' is over 128 KiB; write a script with the write tool and run it");
	*ret = a;
	return 0;
}

/* The helper params every snapshot request shares (bash.start, bash.poll,
 * bash.stop: proto.h): how much output one answer may carry and, with
 * wait, how long to wait and whether to keep head and tail. Adds to p. */
static void snapshot_params(struct tools_app *app, const struct bash_args *a, int wait, struct json_object *p)
{
	if (wait)
		xjson_add(p, "yield_time_ms", xjson_int64(a->yield));
	xjson_add(p, "max_output_bytes", xjson_int64(app->cfg->max_output_chars));
	if (wait && a->tail)
		xjson_add(p, "tail", xjson_bool(1));
}

/* A bash snapshot's delivery range (proto.h, "Delivery and
 * acknowledgement"): the part of the session's output this answer carries.
 * Only the channel's acknowledgement needs it, so it is read here and
 * stripped from every snapshot before it leaves (finish); this file is the
 * one place that knows these fields. */
#define BASH_RANGE_START "output_start"
#define BASH_RANGE_END "output_end"

static int bash_delivery_range(struct json_object *result, const char **ret_key, int64_t *ret_start, int64_t *ret_end)
{
	struct json_object *sid = NULL, *start = NULL, *end = NULL;
	if (!json_object_object_get_ex(result, "session_id", &sid) || !json_object_is_type(sid, json_type_string) ||
	    !json_object_object_get_ex(result, BASH_RANGE_START, &start) ||
	    !json_object_is_type(start, json_type_int) || !json_object_object_get_ex(result, BASH_RANGE_END, &end) ||
	    !json_object_is_type(end, json_type_int))
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
	struct bash_args a;
	if (bash_args_read(app, args, BASH_ARGS_WAIT | BASH_ARGS_START, &a, err) < 0)
		return -1;

	_cleanup_free_ char *session_id = NULL;
	if (id_new("bash_", &session_id, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session_id));
	xjson_add(p, "command", xjson_string(a.command));
	if (a.cwd)
		xjson_add(p, "cwd", xjson_string(a.cwd));
	if (a.timeout)
		xjson_add(p, "timeout_ms", xjson_int64(a.timeout));
	snapshot_params(app, &a, 1, p);
	/* tty implies interactive: a terminal is read and written both ways. */
	if (a.interactive)
		xjson_add(p, "interactive", xjson_bool(1));
	if (a.tty) {
		xjson_add(p, "tty", xjson_bool(1));
		if (a.rows)
			xjson_add(p, "rows", xjson_int64(a.rows));
		if (a.cols)
			xjson_add(p, "cols", xjson_int64(a.cols));
	}

	struct json_object *res = NULL;
	/* A long wait tells a client that asked for progress what is going on. */
	if (a.yield > 2000)
		mcp_call_progress(call, 0, 0, "command started; waiting for it to exit or for yield_time_ms");
	if (helper_call_cancel(app, call->cancel, a.sandbox_id, "bash.start", p, (long)a.yield + BASH_REPLY_MARGIN_MS,
	                       &res, err) < 0) {
		if (mcp_call_cancelled(call)) {
			/* notifications/cancelled: the wait ends, the command does not;
			 * the answer below is dropped by dispatch. */
			log_info("tools",
			         "bash in %s: request cancelled by the client; session %s keeps running (poll it "
			         "with bash_poll, end it with bash_stop)",
			         a.sandbox_id, session_id);
			cp_error_freep(err);
			res = running_snapshot(session_id);
		} else if ((*err)->code != CP_ERR_TIMEOUT) {
			return -1;
		} else {
			/* Started, but the first snapshot did not come back in time: keep
			 * the session and let the caller poll (nothing is lost). */
			log_warn("tools", "bash in %s: first snapshot of %s timed out; answering running", a.sandbox_id,
			         session_id);
			cp_error_freep(err);
			res = running_snapshot(session_id);
		}
	}
	return finish(res, a.sandbox_id, session_id, ret, err);
}

int tool_bash_poll(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	struct bash_args a;
	if (bash_args_read(app, args, BASH_ARGS_SESSION | BASH_ARGS_WAIT, &a, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(a.session_id));
	snapshot_params(app, &a, 1, p);
	struct json_object *res = NULL;
	if (helper_call_cancel(app, call->cancel, a.sandbox_id, "bash.poll", p, (long)a.yield + BASH_REPLY_MARGIN_MS,
	                       &res, err) < 0) {
		if (mcp_call_cancelled(call))
			log_info("tools", "bash_poll in %s: request cancelled by the client; session %s keeps running",
			         a.sandbox_id, a.session_id);
		return -1;
	}
	return finish(res, a.sandbox_id, a.session_id, ret, err);
}

int tool_bash_stop(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	struct bash_args a;
	if (bash_args_read(app, args, BASH_ARGS_SESSION, &a, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(a.session_id));
	snapshot_params(app, &a, 0, p);
	struct json_object *res = NULL;
	if (tools_helper_call(app, a.sandbox_id, "bash.stop", p, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	return finish(res, a.sandbox_id, a.session_id, ret, err);
}

int tool_bash_input(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	struct bash_args a;
	if (bash_args_read(app, args, BASH_ARGS_SESSION | BASH_ARGS_INPUT, &a, err) < 0)
		return -1;
	if (!a.data && !a.close)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "give 'data' to write (end lines with \\n), 'close': true to end the input, or both");
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(a.session_id));
	xjson_add(p, "data", a.data ? json_object_get(a.data) : xjson_string(""));
	xjson_add(p, "close", xjson_bool(a.close));
	struct json_object *res = NULL;
	if (tools_helper_call(app, a.sandbox_id, "bash.input", p, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	xjson_add(res, "sandbox_id", xjson_string(a.sandbox_id));
	*ret = res;
	return 0;
}

int tool_bash_list(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	struct bash_args a;
	if (bash_args_read(app, args, 0, &a, err) < 0)
		return -1;
	struct json_object *res = NULL;
	if (tools_helper_call(app, a.sandbox_id, "bash.list", NULL, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	xjson_add(res, "sandbox_id", xjson_string(a.sandbox_id));
	*ret = res;
	return 0;
}
