/* tools.h: the MCP tool table (one row per tool: name, description, declared
 * arguments and result fields, annotations, handler) and the application
 * context handlers receive. Every call takes the same path in mcp/
 * (tool_call.c): lookup → check against the declaration → audit gate →
 * handler → reply. One file per family: sandbox.c, bash.c, files.c. */
#ifndef CP_TOOLS_H
#define CP_TOOLS_H

#include <stddef.h>

#include "../config/config.h"
#include "../lifecycle/lifecycle.h"
#include "../mcp/mcp.h"
#include "../store/store.h"

struct tools_app {
	const struct config *cfg; /* borrowed */
	struct store *store;      /* borrowed */
	struct lifecycle *lc;     /* borrowed */
};

/* The tool table served to mcp/ (static storage) and its length. */
const struct mcp_tool *tools_table(size_t *ret_n);

/* The request rows of tools_audit_request are written in batches (issue 27):
 * at most TOOLS_AUDIT_BATCH_MS after the request, or once
 * TOOLS_AUDIT_BATCH_ROWS wait; past TOOLS_AUDIT_QUEUE_MAX waiting rows a
 * request writes them itself. */
#define TOOLS_AUDIT_BATCH_ROWS 64
#define TOOLS_AUDIT_BATCH_MS 5
#define TOOLS_AUDIT_QUEUE_MAX 4096
/* Starts store's audit writer with those bounds, its failures counted and
 * logged as tools_audit_request's (serve calls it once after opening the
 * store; store_free writes what waits). Without it every row is written at
 * once. */
void tools_audit_batching_start(struct store *store);
/* The MCP server's request hook (mcp_server_options.on_request, ctx = the
 * struct tools_app): one audit row per JSON-RPC request (action = the tool
 * for tools/call, the method otherwise; method, session prefix, sandbox,
 * approval, status, duration, bounded error message). A call the gate put on
 * record (rec->ticket) has its row finished; any other request gets a new
 * row. Both are queued when the store's writer runs
 * (tools_audit_batching_start), written at once otherwise. A failed write
 * cannot fail the request any more (it has run): it is counted, and the log
 * says how many rows were missed (at most one line per 10 s). Blocks only
 * without the writer (the store's lock and its busy timeout) or when the
 * queue is full (one transaction). */
void tools_audit_request(void *ctx, const struct mcp_request_record *rec);
/* The MCP server's call gate (mcp_server_options.before_call, ctx = the
 * struct tools_app), run before every tool that is not read-only: writes
 * the call's audit row with status "started" and returns its id as the
 * ticket. When the row cannot be written (a full disk, a read-only
 * registry) the call is refused with UNAVAILABLE, saying why and what to do,
 * and nothing is changed (issue 13). */
int tools_audit_gate(void *ctx, const struct mcp_request_record *rec, int64_t *ret_ticket, struct cp_error **err);
/* The same table with the plain handlers (table.c). The first call fills
 * the descriptions that name a setting's default from config.c's table;
 * call it once before threads share the table (serve does, at start). */
const struct mcp_tool *tools_table_plain(size_t *ret_n);

/* How helper channels acknowledge bash output (tools/bash.c): a bash
 * snapshot's delivery range (output_start/output_end, proto.h "Delivery and
 * acknowledgement") is acknowledged with bash.ack or bash.nack. Give it to
 * lifecycle_channel_receipts_set wherever a lifecycle is made. Static. */
extern const struct helper_receipts tool_bash_receipts;

/* initialize's instructions: the workflow in a few lines; the first 512
 * characters stand alone (DESIGN.md, MCP surface). */
extern const char tools_instructions[];

/* Adds a workspace's fields (id, mode, state, paths, sandbox, times) to o,
 * an object the caller owns: the same shape workspace_list answers, so the
 * CLI's `workspace list --json` matches the tool. */
struct json_object;
void tools_workspace_fill(struct json_object *o, const struct workspace_record *w);

/* Adds an export's fields (export_id, kind, reason, refs, commits_ahead,
 * dirty_files, bytes, created_at, message when set) to o, an object the
 * caller owns: the same names the tools answer, so `chat2sbx export list
 * --json` reads like sandbox_export (tools/export.c). */
void tools_export_fill(struct json_object *o, const struct export_record *x);

#endif
