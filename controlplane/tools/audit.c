/* audit.c: the audit half of the per-request record: every MCP request
 * (initialize, tools/list, ping, tools/call, notifications ...) leaves
 * exactly one row in the audit table, written from the record mcp/reqlog.c
 * hands to the server's request hook, so mcp/ stays free of SQL and no
 * handler can forget it. Rows hold names, ids, codes and bounded error
 * messages only: never arguments, outputs or credentials. */
#include <string.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "tools_internal.h"

/* The table served to mcp/ is the plain one: auditing happens per request
 * (tools_audit_request), not per handler. */
const struct mcp_tool *tools_table(size_t *ret_n)
{
	return tools_table_plain(ret_n);
}

void tools_audit_request(void *ctx, const struct mcp_request_record *rec)
{
	struct tools_app *app = ctx;
	if (!app || !app->store || !rec)
		return;
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = "mcp",
	                         .action = rec->tool ? rec->tool : rec->method,
	                         .sandbox_id = rec->sandbox_id,
	                         .target = rec->target,
	                         .status = rec->status ? rec->status : "ok",
	                         .duration_ms = rec->duration_ms,
	                         .message = rec->message,
	                         .method = rec->method,
	                         .session = rec->session};
	struct cp_error *e = NULL;
	if (store_audit_insert(app->store, &a, &e) < 0) {
		log_warn("tools", "audit of %s: %s", a.action, e->message);
		cp_error_free(e);
	}
}
