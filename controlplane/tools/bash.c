/* bash.c: bash, bash_poll, bash_stop. The helper owns the sessions and their
 * output; this file validates, clamps the yield (DESIGN.md, Bash contract),
 * bounds the answer, and turns a slow first snapshot into "running" so a
 * started command is never lost to the caller. */
#include <json-c/json.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../policy/policy.h"
#include "../../template/helper/proto.h"
#include "args.h"
#include "tools_internal.h"

#define BASH_DEFAULT_YIELD_MS PROTO_DEFAULT_YIELD_MS
/* Time the helper gets beyond the yield to answer (ms). */
#define BASH_REPLY_MARGIN_MS 10000
/* A command longer than this is refused (bytes): the kernel's limit on one
 * exec argument (MAX_ARG_STRLEN, 32 pages) less the terminating NUL. */
#define BASH_MAX_COMMAND_BYTES PROTO_COMMAND_MAX

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
	struct json_object *res = json_object_new_object();
	json_object_object_add(res, "session_id", json_object_new_string(session_id));
	json_object_object_add(res, "status", json_object_new_string("running"));
	json_object_object_add(res, "output", json_object_new_string(""));
	json_object_object_add(res, "has_more_output", json_object_new_boolean(1));
	return res;
}

static int yield_arg(struct tools_app *app, struct json_object *args, int64_t *ret, struct cp_error **err)
{
	int64_t requested;
	if (tool_args_int(args, "yield_time_ms", -1, 0, 3600000, &requested, err) < 0)
		return -1;
	*ret = policy_yield_clamp(requested, BASH_DEFAULT_YIELD_MS, app->cfg->max_yield_ms);
	return 0;
}

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
	json_object_object_del(res, "output_start");
	json_object_object_del(res, "output_end");
	json_object_object_add(res, "sandbox_id", json_object_new_string(sandbox_id));
	*ret = res;
	return 0;
}

int tool_bash_run(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                  struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "command",     "cwd", "yield_time_ms",
	                                    "timeout_ms", "interactive", "tty", "rows",
	                                    "cols",       "tail",        NULL};
	const char *sandbox_id = NULL, *command = NULL, *cwd = NULL;
	int64_t yield = 0, timeout = 0, rows = 0, cols = 0;
	int interactive = 0, tty = 0, tail = 0;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 || tool_args_bool(args, "tail", 0, &tail, err) < 0 ||
	    tool_args_string(args, "command", 1, &command, err) < 0 ||
	    tool_args_string(args, "cwd", 0, &cwd, err) < 0 || yield_arg(app, args, &yield, err) < 0 ||
	    tool_args_int(args, "timeout_ms", 0, 1, INT64_C(7) * 24 * 3600 * 1000, &timeout, err) < 0 ||
	    tool_args_bool(args, "interactive", 0, &interactive, err) < 0 ||
	    tool_args_bool(args, "tty", 0, &tty, err) < 0 || tool_args_int(args, "rows", 0, 1, 1000, &rows, err) < 0 ||
	    tool_args_int(args, "cols", 0, 1, 1000, &cols, err) < 0)
		return -1;
	if ((rows || cols) && !tty)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "arguments 'rows' and 'cols' size a terminal; they "
		                    "need tty: true");
	if (!*command)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument 'command' is empty; give a shell command");
	if (strlen(command) > BASH_MAX_COMMAND_BYTES)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "argument 'command' is over 128 KiB; write a script with the write tool and run it");

	_cleanup_free_ char *session_id = NULL;
	if (id_new("bash_", &session_id, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = json_object_new_object();
	json_object_object_add(p, "session_id", json_object_new_string(session_id));
	json_object_object_add(p, "command", json_object_new_string(command));
	if (cwd)
		json_object_object_add(p, "cwd", json_object_new_string(cwd));
	if (timeout)
		json_object_object_add(p, "timeout_ms", json_object_new_int64(timeout));
	json_object_object_add(p, "yield_time_ms", json_object_new_int64(yield));
	json_object_object_add(p, "max_output_bytes", json_object_new_int(app->cfg->max_output_chars));
	if (tail)
		json_object_object_add(p, "tail", json_object_new_boolean(1));
	/* tty implies interactive: a terminal is read and written both ways. */
	if (interactive || tty)
		json_object_object_add(p, "interactive", json_object_new_boolean(1));
	if (tty) {
		json_object_object_add(p, "tty", json_object_new_boolean(1));
		if (rows)
			json_object_object_add(p, "rows", json_object_new_int64(rows));
		if (cols)
			json_object_object_add(p, "cols", json_object_new_int64(cols));
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

static int session_args(struct json_object *args, const char *const *known, const char **sandbox_id,
                        const char **session_id, struct cp_error **err)
{
	if (tool_args_sandbox(args, known, sandbox_id, err) < 0 ||
	    tool_args_id(args, "session_id", "bash_", "use the session_id a bash call returned", session_id, err) < 0)
		return -1;
	return 0;
}

int tool_bash_poll(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "session_id", "yield_time_ms", "tail", NULL};
	const char *sandbox_id = NULL, *session_id = NULL;
	int64_t yield = 0;
	int tail = 0;
	if (session_args(args, known, &sandbox_id, &session_id, err) < 0 || yield_arg(app, args, &yield, err) < 0 ||
	    tool_args_bool(args, "tail", 0, &tail, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = json_object_new_object();
	json_object_object_add(p, "session_id", json_object_new_string(session_id));
	json_object_object_add(p, "yield_time_ms", json_object_new_int64(yield));
	json_object_object_add(p, "max_output_bytes", json_object_new_int(app->cfg->max_output_chars));
	if (tail)
		json_object_object_add(p, "tail", json_object_new_boolean(1));
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

int tool_bash_stop(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "session_id", NULL};
	const char *sandbox_id = NULL, *session_id = NULL;
	if (session_args(args, known, &sandbox_id, &session_id, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = json_object_new_object();
	json_object_object_add(p, "session_id", json_object_new_string(session_id));
	json_object_object_add(p, "max_output_bytes", json_object_new_int(app->cfg->max_output_chars));
	struct json_object *res = NULL;
	if (tools_helper_call(app, sandbox_id, "bash.stop", p, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	return finish(res, sandbox_id, session_id, ret, err);
}

int tool_bash_input(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "session_id", "data", "close", NULL};
	const char *sandbox_id = NULL, *session_id = NULL, *data = NULL;
	int close_stdin = 0;
	if (session_args(args, known, &sandbox_id, &session_id, err) < 0 ||
	    tool_args_text(args, "data", 0, &data, NULL, err) < 0 ||
	    tool_args_bool(args, "close", 0, &close_stdin, err) < 0)
		return -1;
	if (!data && !close_stdin)
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "give 'data' to write (end lines with \\n), 'close': true to end the input, or both");
	_cleanup_json_ struct json_object *p = json_object_new_object();
	json_object_object_add(p, "session_id", json_object_new_string(session_id));
	struct json_object *d = NULL;
	if (data && json_object_object_get_ex(args, "data", &d))
		json_object_object_add(p, "data", json_object_get(d));
	else
		json_object_object_add(p, "data", json_object_new_string(""));
	json_object_object_add(p, "close", json_object_new_boolean(close_stdin));
	struct json_object *res = NULL;
	if (tools_helper_call(app, sandbox_id, "bash.input", p, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	json_object_object_add(res, "sandbox_id", json_object_new_string(sandbox_id));
	*ret = res;
	return 0;
}

int tool_bash_list(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                   struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", NULL};
	const char *sandbox_id = NULL;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0)
		return -1;
	struct json_object *res = NULL;
	if (tools_helper_call(app, sandbox_id, "bash.list", NULL, BASH_REPLY_MARGIN_MS, &res, err) < 0)
		return -1;
	json_object_object_add(res, "sandbox_id", json_object_new_string(sandbox_id));
	*ret = res;
	return 0;
}
