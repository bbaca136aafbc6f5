/* export.c: sandbox_export, and how saved clone work appears in the other
 * management answers (the export a destroy saved, unsaved work). The model
 * can save; only the person brings work home (`chat2sbx export apply`), so
 * every answer names the exact command to give them. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "tools_internal.h"

void tools_export_fill(struct json_object *o, const struct export_record *x)
{
	xjson_add(o, "export_id", xjson_string(x->id));
	xjson_add(o, "kind", xjson_string(x->kind));
	xjson_add(o, "reason", xjson_string(x->reason));
	xjson_add(o, "refs", xjson_int64(x->refs));
	xjson_add(o, "commits_ahead", xjson_int64(x->commits));
	xjson_add(o, "dirty_files", xjson_int64(x->dirty_files));
	xjson_add(o, "bytes", xjson_int64(x->bytes));
	char when[40];
	xjson_add(o, "created_at", xjson_string(clock_format_rfc3339(x->created_at_ms, when, sizeof(when))));
	if (x->message)
		xjson_add(o, "message", xjson_string(x->message));
}

struct json_object *tools_export_json(const struct export_record *x)
{
	struct json_object *o = xjson_object();
	tools_export_fill(o, x);
	char cmd[200];
	if (!strcmp(x->kind, "git"))
		snprintf(cmd, sizeof(cmd), "chat2sbx export apply %s", x->id);
	else if (!strcmp(x->kind, "tar"))
		snprintf(cmd, sizeof(cmd), "chat2sbx export apply %s --to DIR", x->id);
	else
		snprintf(cmd, sizeof(cmd), "chat2sbx export show %s", x->id);
	xjson_add(o, "command", xjson_string(cmd));
	return o;
}

void tools_sandbox_add_saved(struct tools_app *app, struct json_object *o, const struct sandbox_record *s, int unsaved)
{
	if (unsaved == LIFECYCLE_UNSAVED_UNKNOWN)
		xjson_add(o, "unsaved_work", xjson_string("unknown"));
	else if (unsaved != LIFECYCLE_UNSAVED_NONE)
		xjson_add(o, "unsaved_work", xjson_bool(unsaved == LIFECYCLE_UNSAVED_YES));
	struct export_record x = {0};
	struct cp_error *e = NULL;
	if (store_export_last(app->store, s->id, &x, &e) == 0) {
		xjson_add(o, "last_export", tools_export_json(&x));
		export_record_clear(&x);
	}
	cp_error_free(e);
}

int tool_sandbox_export(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                        struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *id = mcp_args_string(args, "sandbox_id", NULL), *message = mcp_args_string(args, "message", NULL);
	/* A tool call like any other: it holds the sandbox (expiry waits) and
	 * counts as activity. */
	struct helper_channel *ch = NULL;
	if (lifecycle_sandbox_channel(app->lc, id, &ch, err) < 0)
		return -1;
	struct lifecycle_export_options o = {.reason = "checkpoint", .message = message, .actor = "mcp", .channel = ch};
	struct lifecycle_export_result res = {0};
	int r = lifecycle_export_save(app->lc, id, &o, &res, err);
	lifecycle_sandbox_release(app->lc, id, ch);
	if (r < 0)
		return -1;
	if (res.not_clone) {
		lifecycle_export_result_clear(&res);
		return cp_error_set(
		    err, CP_ERR_INVALID_ARGUMENT,
		    "sandbox '%s' does not work on a private clone: its /workspace is a directory on the "
		    "host already (managed or direct mode), so there is nothing to export",
		    id);
	}
	struct json_object *out = tools_export_json(&res.export);
	xjson_add(out, "sandbox_id", xjson_string(id));
	xjson_add(out, "saved", xjson_bool(res.saved));
	_cleanup_free_ char *msg = NULL;
	const struct export_record *x = &res.export;
	if (!res.saved)
		msg = xasprintf(
		    "Nothing changed since export %s; it already holds this state. The person can bring it home "
		    "with: %s %s",
		    x->id, !strcmp(x->kind, "none") ? "(nothing to bring home)" : "chat2sbx export apply",
		    !strcmp(x->kind, "none") ? "" : x->id);
	else if (!strcmp(x->kind, "none"))
		msg = xasprintf("Saved %s: nothing is new since the sandbox was made (no commit, branch or change).",
		                x->id);
	else
		msg = xasprintf(
		    "Saved %s: %lld branch(es)/tag(s), %lld commit(s) not in the approved repository, %lld "
		    "uncommitted or untracked file(s). Nothing was written to the user's machine: ask the person "
		    "to run `%s` to bring it into their repository (under refs/remotes/chat2sbx/%s/).",
		    x->id, (long long)x->refs, (long long)x->commits, (long long)x->dirty_files,
		    !strcmp(x->kind, "tar") ? "chat2sbx export apply ID --to DIR" : "chat2sbx export apply ID", id);
	xjson_add(out, "message", xjson_string(msg));
	lifecycle_export_result_clear(&res);
	*ret = out;
	return 0;
}
