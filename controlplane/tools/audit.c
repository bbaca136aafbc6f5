/* audit.c: the audit half of the per-request record: every MCP request
 * (initialize, tools/list, ping, tools/call, notifications ...) leaves
 * exactly one row in the audit table, written from the record mcp/reqlog.c
 * hands to the server's request hook, so mcp/ stays free of SQL and no
 * handler can forget it. A tool that changes something is put on record
 * before it runs (the call gate) and its row finished after. Rows hold names, ids, codes and bounded error
 * messages only: never arguments, outputs or credentials. */
#include <stdatomic.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "tools_internal.h"

/* The table served to mcp/ is the plain one: auditing happens per request
 * (tools_audit_request), not per handler. */
const struct mcp_tool *tools_table(size_t *ret_n)
{
	return tools_table_plain(ret_n);
}

/* Audit rows that could not be written since the last line said so. */
static atomic_ulong missed;
static atomic_llong missed_logged_ms;

static void audit_missed(const char *action, const struct cp_error *e)
{
	unsigned long n = atomic_fetch_add(&missed, 1) + 1;
	int64_t now = clock_monotonic_ms();
	long long last = atomic_load(&missed_logged_ms);
	if (last && now - last < 10000)
		return;
	if (!atomic_compare_exchange_strong(&missed_logged_ms, &last, now))
		return;
	atomic_fetch_sub(&missed, n);
	log_warn("tools",
	         "%lu audit row(s) could not be written (the last, of %s: %s); read-only calls went on, calls "
	         "that change something are refused until the registry can write",
	         n, action, e ? e->message : "unknown");
}

void tools_audit_batching_start(struct store *store)
{
	struct store_audit_batching b = {.max_rows = TOOLS_AUDIT_BATCH_ROWS,
	                                 .delay_ms = TOOLS_AUDIT_BATCH_MS,
	                                 .bound = TOOLS_AUDIT_QUEUE_MAX,
	                                 .missed = audit_missed};
	store_audit_batching_start(store, &b);
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
	/* Neither the request's row nor a call's finish holds up its answer:
	 * both are queued (tools_audit_batching_start); a change was put on
	 * record by the gate before it ran. */
	struct cp_error *e = NULL;
	if (store_audit_append(app->store, rec->ticket > 0 ? rec->ticket : 0, &a, &e) < 0) {
		audit_missed(a.action, e);
		cp_error_free(e);
	}
}

int tools_audit_gate(void *ctx, const struct mcp_request_record *rec, int64_t *ret_ticket, struct cp_error **err)
{
	struct tools_app *app = ctx;
	*ret_ticket = 0;
	if (!app || !app->store)
		return 0;
	const char *action = rec->tool ? rec->tool : rec->method;
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = "mcp",
	                         .action = action,
	                         .sandbox_id = rec->sandbox_id,
	                         .status = "started",
	                         .method = rec->method,
	                         .session = rec->session};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_audit_insert_id(app->store, &a, ret_ticket, &e) < 0) {
		audit_missed(action, e);
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "%s was not run: its audit row could not be written (%s). chat2sbx makes a change "
		                    "only once it is on record; read-only tools still work. Free space on the disk "
		                    "holding the state directory ('chat2sbx status' shows DISK) and call again",
		                    action, e->message);
	}
	return 0;
}
