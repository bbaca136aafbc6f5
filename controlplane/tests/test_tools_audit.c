/* test_tools_audit.c: the audit row of a tool call (tools/audit.c) through
 * the MCP dispatcher with a real registry: a tool that changes something is
 * put on record before it runs and its row finished after (one row per
 * call); when the registry cannot write, such a call is refused with the
 * reason and its handler never runs, while read-only tools go on (issue 13,
 * "a state change that cannot be recorded is not made"). */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "mcp/mcp.h"
#include "tool_test.h"
#include "store/store_internal.h"
#include "tools/tools.h"

static int n_look, n_change;

static int tool_look(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret,
                     struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)err;
	n_look++;
	*ret = json_object_new_object();
	return 0;
}

static int tool_change(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret,
                       struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	n_change++;
	if (json_object_object_get_ex(args, "fail", NULL))
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox 'sbx_gone' not found");
	*ret = json_tokener_parse("{\"sandbox_id\":\"sbx_made\"}");
	return 0;
}

static const struct mcp_tool atools[] = {
    {"look", NULL, "Looks.", test_tool_args, NULL, MCP_HINT_READ_ONLY, tool_look},
    {"change", NULL, "Changes.", test_tool_args, NULL, MCP_HINT_DESTRUCTIVE, tool_change},
};

static char dir[64], db[128];
static struct store *store;
static struct tools_app app;
static struct mcp_server *server;

static void setup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	n_look = n_change = 0;
	snprintf(dir, sizeof(dir), "/tmp/c2s-audit-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0, "%s", err ? err->message : "");
	tools_audit_batching_start(store); /* as serve runs it: request rows queued */
	app = (struct tools_app){.store = store};
	struct mcp_server_options o = {
	    .on_request = tools_audit_request, .before_call = tools_audit_gate, .on_request_ctx = &app};
	cr_assert_eq(mcp_server_new(&o, atools, 2, NULL, &server, &err), 0);
}

static void teardown(void)
{
	mcp_server_free(server);
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(tools_audit, .init = setup, .fini = teardown);

/* Calls tool with arguments (JSON text) as a request of revision (its
 * per-request _meta; NULL = a 2025 request without it); returns the
 * result's first text (owned) and sets *ret_is_error. */
static char *call_at(const char *revision, const char *tool, const char *args, int *ret_is_error)
{
	char req[768], meta[256] = "";
	if (revision)
		snprintf(meta, sizeof(meta),
		         ",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"%s\","
		         "\"io.modelcontextprotocol/clientCapabilities\":{}}",
		         revision);
	snprintf(req, sizeof(req),
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":%"
	         "s%s}}",
	         tool, args, meta);
	char *out = mcp_dispatch_text(server, req, strlen(req), NULL, NULL);
	cr_assert_not_null(out);
	store_audit_flush(store); /* the writer's next pass, before the test changes the registry */
	struct json_object *r = json_tokener_parse(out), *res, *v, *content;
	free(out);
	cr_assert(json_object_object_get_ex(r, "result", &res), "a tool result, not a protocol error");
	*ret_is_error = json_object_object_get_ex(res, "isError", &v) && json_object_get_boolean(v);
	cr_assert(json_object_object_get_ex(res, "content", &content));
	char *text =
	    strdup(json_object_get_string(json_object_object_get(json_object_array_get_idx(content, 0), "text")));
	json_object_put(r);
	return text;
}

/* The same as a 2025 request (no per-request _meta). */
static char *call(const char *tool, const char *args, int *ret_is_error)
{
	return call_at(NULL, tool, args, ret_is_error);
}

/* The number of audit rows matching where (SQL over the audit table). */
static int64_t rows(const char *where)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM audit WHERE %s", where);
	store_audit_flush(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	cr_assert_eq(store_prepare(store, &st, sql, "count audit rows", NULL), 0, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	return sqlite3_column_int64(st, 0);
}

static void registry_writable(int yes)
{
	struct cp_error *err = NULL;
	cr_assert_eq(store_exec(store, yes ? "PRAGMA query_only = 0" : "PRAGMA query_only = 1", "test", &err), 0);
}

Test(tools_audit, a_change_has_one_row_finished_after_it_ran)
{
	int is_error;
	free(call("change", "{}", &is_error));
	cr_assert_not(is_error);
	free(call("change", "{\"sandbox_id\":\"sbx_gone\",\"fail\":1}", &is_error));
	cr_assert(is_error);
	free(call("look", "{}", &is_error));
	cr_assert_eq(n_change, 2);
	cr_assert_eq(rows("1"), 3, "one row per call, the gate's row finished in place");
	cr_assert_eq(rows("action = 'change' AND status = 'ok' AND sandbox_id = 'sbx_made'"), 1,
	             "the result's sandbox is filled in when the row is finished");
	cr_assert_eq(rows("action = 'change' AND status = 'NOT_FOUND' AND sandbox_id = 'sbx_gone' AND message = "
	                  "'sandbox ''sbx_gone'' not found'"),
	             1);
	cr_assert_eq(rows("status = 'started'"), 0);
	cr_assert_eq(rows("action = 'look' AND status = 'ok'"), 1);
}

Test(tools_audit, a_change_that_cannot_be_recorded_is_not_made)
{
	registry_writable(0);
	int is_error;
	char *text = call("change", "{\"sandbox_id\":\"sbx_1\"}", &is_error);
	cr_assert(is_error);
	cr_assert_eq(n_change, 0, "the handler must not run when its row cannot be written");
	cr_assert_not_null(strstr(text, "change was not run: its audit row could not be written"), "%s", text);
	cr_assert_not_null(strstr(text, "Free space"), "the error says what to do: %s", text);
	free(text);

	/* read-only calls go on; their rows are missed, not the call */
	text = call("look", "{}", &is_error);
	cr_assert_not(is_error, "%s", text);
	free(text);
	cr_assert_eq(n_look, 1);

	registry_writable(1);
	free(call("change", "{}", &is_error));
	cr_assert_not(is_error);
	cr_assert_eq(n_change, 1);
	cr_assert_eq(rows("1"), 1, "only the call made while the registry could write is on record");
	cr_assert_eq(rows("action = 'change' AND status = 'ok'"), 1);
}

Test(tools_audit, finish_of_a_missing_row_is_not_found)
{
	struct audit_record a = {.status = "ok"};
	struct cp_error *err = NULL;
	cr_assert_lt(store_audit_finish(store, 999, &a, &err), 0);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_free(err);
}

/* The gate holds for every revision: a 2026-07-28 tools/call (per-request
 * _meta, no session) is put on record first and refused when it cannot be. */
Test(tools_audit, a_2026_07_28_call_passes_the_same_gate)
{
	int is_error;
	registry_writable(0);
	char *text = call_at("2026-07-28", "change", "{\"sandbox_id\":\"sbx_1\"}", &is_error);
	cr_assert(is_error);
	cr_assert_eq(n_change, 0, "the handler must not run when its row cannot be written");
	cr_assert_not_null(strstr(text, "change was not run: its audit row could not be written"), "%s", text);
	free(text);
	registry_writable(1);
	free(call_at("2026-07-28", "change", "{}", &is_error));
	cr_assert_not(is_error);
	cr_assert_eq(n_change, 1);
	cr_assert_eq(rows("action = 'change' AND status = 'ok' AND sandbox_id = 'sbx_made'"), 1);
	cr_assert_eq(rows("status = 'started'"), 0);
}
