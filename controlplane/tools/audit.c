/* audit.c: every tool call that reaches a handler leaves one row in the
 * audit table (tool, sandbox, status, duration, error message), written
 * here so no handler can forget it and mcp/ stays free of SQL. The table
 * served to mcp/ is the tool table with this wrapper as every handler. */
#include <json-c/json.h>
#include <pthread.h>
#include <string.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "tools_internal.h"

static struct mcp_tool audited_table[64];
static size_t audited_n;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const struct mcp_tool *real_tool(const char *name)
{
	size_t n = 0;
	const struct mcp_tool *t = tools_table_plain(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	return NULL;
}

static int audited(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                   struct cp_error **err)
{
	const struct mcp_tool *tool = real_tool(call->tool);
	if (!tool)
		return cp_error_set(err, CP_ERR_INTERNAL, "tool '%s' has no handler", call->tool);
	int64_t t0 = clock_monotonic_ms();
	int r = tool->handler(call, args, ret, err);
	struct tools_app *app = call->app;
	if (!app || !app->store)
		return r;
	struct json_object *v = NULL;
	const char *sandbox_id = NULL;
	if (json_object_object_get_ex(args, "sandbox_id", &v) && json_object_is_type(v, json_type_string))
		sandbox_id = json_object_get_string(v);
	else if (r == 0 && *ret && json_object_object_get_ex(*ret, "sandbox_id", &v) &&
	         json_object_is_type(v, json_type_string))
		sandbox_id = json_object_get_string(v); /* sandbox_create names its new sandbox */
	const char *target = NULL;
	if (r == 0 && *ret && json_object_object_get_ex(*ret, "approval_id", &v) &&
	    json_object_is_type(v, json_type_string))
		target = json_object_get_string(v);
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = "mcp",
	                         .action = tool->name,
	                         .sandbox_id = sandbox_id,
	                         .target = target,
	                         .status = r < 0 ? cp_error_code_name((*err)->code) : "ok",
	                         .duration_ms = clock_monotonic_ms() - t0,
	                         .message = r < 0 ? (*err)->message : NULL};
	struct cp_error *e = NULL;
	if (store_audit_insert(app->store, &a, &e) < 0) {
		log_warn("tools", "audit of %s: %s", tool->name, e->message);
		cp_error_free(e);
	}
	return r;
}

static void build(void)
{
	size_t n = 0;
	const struct mcp_tool *t = tools_table_plain(&n);
	for (size_t i = 0; i < n && i < sizeof(audited_table) / sizeof(audited_table[0]); i++) {
		audited_table[i] = t[i];
		audited_table[i].handler = audited;
	}
	audited_n = n;
}

const struct mcp_tool *tools_table(size_t *ret_n)
{
	pthread_once(&once, build);
	*ret_n = audited_n;
	return audited_table;
}
