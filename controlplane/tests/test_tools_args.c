/* test_tools_args.c: tool argument validation happens before anything runs:
 * each bad call is INVALID_ARGUMENT naming the argument (no engine, no
 * registry needed: the handlers must fail before touching either). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <json-c/json.h>
#include <string.h>

#include "tools/args.h"
#include "tools/tools_internal.h"

static void expect_invalid(mcp_tool_handler h, const char *args_json, const char *needle)
{
	struct json_object *args = json_tokener_parse(args_json);
	cr_assert_not_null(args, "bad test json %s", args_json);
	struct config cfg = {.max_yield_ms = 30000, .max_output_chars = 60000};
	struct tools_app app = {.cfg = &cfg};
	struct mcp_call call = {.app = &app, .tool = "t"};
	struct json_object *res = NULL;
	struct cp_error *err = NULL;
	cr_expect_lt(h(&call, args, &res, &err), 0, "%s accepted", args_json);
	cr_assert_not_null(err, "%s", args_json);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT, "%s: %s", args_json, err->message);
	cr_expect(strstr(err->message, needle) != NULL, "%s: message '%s' lacks '%s'", args_json, err->message, needle);
	cp_error_free(err);
	json_object_put(res);
	json_object_put(args);
}

Test(tools_args, bash_validation)
{
	expect_invalid(tool_bash_run, "{\"command\":\"ls\"}", "'sandbox_id' is required");
	expect_invalid(tool_bash_run, "{\"sandbox_id\":42,\"command\":\"ls\"}", "must be a string, not an integer");
	expect_invalid(tool_bash_run, "{\"sandbox_id\":\"nope\",\"command\":\"ls\"}", "not a valid id");
	expect_invalid(tool_bash_run, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\"}", "'command' is required");
	expect_invalid(tool_bash_run, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"command\":42}",
	               "'command' must be a string");
	expect_invalid(tool_bash_run, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"command\":\"\"}", "empty");
	expect_invalid(tool_bash_run,
	               "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"command\":\"ls\",\"yield_time_ms\":\"5\"}",
	               "'yield_time_ms' must be an integer");
	expect_invalid(tool_bash_run,
	               "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"command\":\"ls\",\"timeout_ms\":0}",
	               "'timeout_ms' is 0");
	expect_invalid(tool_bash_run, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"command\":\"ls\",\"cmd\":1}",
	               "unknown argument 'cmd'");
	expect_invalid(tool_bash_poll, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\"}", "'session_id' is required");
	expect_invalid(tool_bash_stop, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"session_id\":\"x\"}",
	               "not a valid id");
}

Test(tools_args, files_and_sandbox_validation)
{
	expect_invalid(tool_files_read, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\"}", "'path' is required");
	expect_invalid(tool_files_read, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"path\":\"a\",\"offset\":0}",
	               "'offset' is 0");
	expect_invalid(tool_files_read, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"path\":\"\"}", "empty");
	expect_invalid(tool_files_write, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"path\":\"a\"}",
	               "'content' is required");
	expect_invalid(
	    tool_files_write,
	    "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"path\":\"a\",\"content\":\"\",\"create_dirs\":1}",
	    "true or false");
	expect_invalid(tool_sandbox_create, "{\"memory\":512}", "'memory' must be a string");
	expect_invalid(tool_sandbox_create, "{\"workspace_id\":\"sbx_abcdefghijklmnopqrst\"}", "not a valid id");
	expect_invalid(tool_sandbox_get, "{}", "'sandbox_id' is required");
	expect_invalid(tool_sandbox_destroy, "{\"sandbox_id\":null}", "'sandbox_id' is required");
	expect_invalid(tool_sandbox_list, "{\"all\":true}", "unknown argument");
}

Test(tools_args, sandbox_expose_validation)
{
	expect_invalid(tool_sandbox_expose, "{\"port\":8000}", "'sandbox_id' is required");
	expect_invalid(tool_sandbox_expose, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\"}", "'port' is required");
	expect_invalid(tool_sandbox_expose, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"port\":0}",
	               "'port' is 0; it must be in 1..65535");
	expect_invalid(tool_sandbox_expose, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"port\":70000}",
	               "'port' is 70000; it must be in 1..65535");
	expect_invalid(tool_sandbox_expose, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"port\":\"8000\"}",
	               "'port' must be an integer");
	expect_invalid(tool_sandbox_expose, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"port\":80.5}",
	               "'port' must be an integer");
	expect_invalid(tool_sandbox_expose,
	               "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"port\":80,\"host_port\":9000}",
	               "unknown argument 'host_port'");
}

Test(tools_args, sandbox_export_and_destroy_force_validation)
{
	expect_invalid(tool_sandbox_export, "{}", "'sandbox_id' is required");
	expect_invalid(tool_sandbox_export, "{\"sandbox_id\":\"nope\"}", "not a valid id");
	expect_invalid(tool_sandbox_export, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"message\":7}",
	               "'message' must be a string");
	expect_invalid(tool_sandbox_export, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"ref\":\"main\"}",
	               "unknown argument 'ref'");
	char big[1200] = "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"message\":\"";
	size_t n = strlen(big);
	memset(big + n, 'm', 1001);
	strcpy(big + n + 1001, "\"}");
	expect_invalid(tool_sandbox_export, big, "at most 1000 bytes");
	expect_invalid(tool_sandbox_destroy, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"force\":\"yes\"}",
	               "true or false");
}

Test(tools_args, integers_accept_whole_doubles)
{
	struct json_object *args = json_tokener_parse("{\"n\":1000.0,\"m\":1.5}");
	int64_t v = 0;
	struct cp_error *err = NULL;
	cr_expect_eq(tool_args_int(args, "n", 0, 0, 5000, &v, &err), 0);
	cr_expect_eq(v, 1000);
	cr_expect_lt(tool_args_int(args, "m", 0, 0, 5000, &v, &err), 0);
	cp_error_free(err);
	json_object_put(args);
}

Test(tools_args, table_is_complete)
{
	size_t n = 0;
	const struct mcp_tool *t = tools_table(&n);
	const char *want[] = {"sandbox_create", "sandbox_list",   "sandbox_get", "sandbox_destroy", "sandbox_export",
	                      "sandbox_expose", "workspace_list", "bash",        "bash_poll",       "bash_stop",
	                      "bash_input",     "bash_list",      "read",        "write",           "edit",
	                      "apply_patch",    "search",         "list"};
	cr_assert_eq(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n; i++) {
		cr_expect_str_eq(t[i].name, want[i]);
		struct json_object *in = json_tokener_parse(t[i].input_schema);
		cr_expect_not_null(in, "%s input schema is not JSON", t[i].name);
		json_object_put(in);
		struct json_object *out = json_tokener_parse(t[i].output_schema);
		cr_expect_not_null(out, "%s output schema is not JSON", t[i].name);
		json_object_put(out);
		cr_expect_not_null(t[i].handler);
	}
	/* Annotations that ChatGPT relies on (DESIGN.md, MCP surface). */
	for (size_t i = 0; i < n; i++) {
		int ro = !!(t[i].hints & MCP_HINT_READ_ONLY), de = !!(t[i].hints & MCP_HINT_DESTRUCTIVE);
		const char *name = t[i].name;
		int want_ro = !strcmp(name, "sandbox_list") || !strcmp(name, "sandbox_get") ||
		              !strcmp(name, "workspace_list") || !strcmp(name, "read") || !strcmp(name, "bash_poll") ||
		              !strcmp(name, "bash_list") || !strcmp(name, "search") || !strcmp(name, "list");
		int want_de = !strcmp(name, "sandbox_destroy") || !strcmp(name, "bash_stop") ||
		              !strcmp(name, "write") || !strcmp(name, "edit") || !strcmp(name, "apply_patch");
		cr_expect_eq(ro, want_ro, "%s readOnlyHint", name);
		cr_expect_eq(de, want_de, "%s destructiveHint", name);
	}
	cr_expect(strstr(tools_instructions, "sandbox_create") && strstr(tools_instructions, "bash_poll") &&
	          strstr(tools_instructions, "sandbox_destroy"));
	const char *destroy = strstr(tools_instructions, "sandbox_destroy");
	cr_expect_lt(destroy - tools_instructions, 512, "the workflow fits in the first 512 characters");
}

Test(tools_args, nul_characters_are_refused_except_in_content)
{
	expect_invalid(tool_files_write,
	               "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"path\":\"a\\u0000b\",\"content\":\"x\"}",
	               "'path' contains a NUL character");
	expect_invalid(tool_sandbox_get, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\\u0000x\"}",
	               "'sandbox_id' contains a NUL character");
	expect_invalid(tool_bash_run, "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\",\"command\":\"ls\\u0000rm\"}",
	               "'command' contains a NUL character");
	struct json_object *args = json_tokener_parse("{\"content\":\"a\\u0000b\"}");
	const char *text = NULL;
	size_t len = 0;
	struct cp_error *err = NULL;
	cr_expect_eq(tool_args_text(args, "content", 1, &text, &len, &err), 0);
	cr_expect_eq(len, 3);
	json_object_put(args);
	expect_invalid(tool_sandbox_list, "{\"x\":1}", "this tool takes no arguments");
}

/* Every MCP request leaves one audit row through the server's request hook
 * (action = the tool for tools/call, the method otherwise); the served
 * table's handlers write none themselves, so a tool call is never counted
 * twice. */
Test(tools_args, calls_are_audited)
{
	char dir[] = "/tmp/c2s-audit-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[64];
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct store *store = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0);
	struct config cfg = {.max_yield_ms = 30000, .max_output_chars = 60000};
	struct tools_app app = {.cfg = &cfg, .store = store};
	size_t n = 0;
	const struct mcp_tool *t = tools_table(&n);
	const struct mcp_tool *bash = NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, "bash"))
			bash = &t[i];
	cr_assert_not_null(bash);
	struct mcp_call call = {.app = &app, .tool = "bash"};
	struct json_object *args = json_tokener_parse("{\"command\":\"ls\"}"), *res = NULL;
	cr_expect_lt(bash->handler(&call, args, &res, &err), 0);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	json_object_put(args);
	int64_t count = -1;
	cr_assert_eq(store_audit_count(store, "bash", &count, NULL), 0);
	cr_expect_eq(count, 0, "a handler alone writes no audit row");
	struct mcp_request_record rec = {.method = "tools/call",
	                                 .tool = "bash",
	                                 .session = "0123abcd",
	                                 .status = cp_error_code_name(err->code),
	                                 .message = err->message,
	                                 .duration_ms = 3};
	tools_audit_request(&app, &rec);
	cp_error_free(err);
	err = NULL;
	struct mcp_request_record ping = {.method = "ping", .status = "ok"};
	tools_audit_request(&app, &ping);
	tools_audit_request(NULL, &ping); /* no app: nothing, no crash */
	cr_assert_eq(store_audit_count(store, "bash", &count, &err), 0);
	cr_expect_eq(count, 1);
	cr_assert_eq(store_audit_count(store, "ping", &count, &err), 0);
	cr_expect_eq(count, 1);
	store_free(store);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}
