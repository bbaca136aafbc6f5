/* test_tools_args.c: every tool's arguments are checked against its
 * declaration in the table before its handler runs: each bad call is
 * INVALID_ARGUMENT in one shape naming the argument (no engine, no registry
 * needed). What handlers still check (combinations of arguments) fails
 * before they touch either. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tools_internal.h"

static const struct mcp_tool *find_tool(const char *name)
{
	size_t n = 0;
	const struct mcp_tool *t = tools_table(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i].name, name))
			return &t[i];
	cr_assert_fail("no tool %s", name);
	return NULL;
}

/* Checks args_json against tool's declaration; returns the error (caller
 * frees) or NULL when accepted. */
static struct cp_error *check(const char *tool, const char *args_json)
{
	struct json_object *args = json_tokener_parse(args_json);
	cr_assert_not_null(args, "bad test json %s", args_json);
	struct mcp_args *a = NULL;
	struct cp_error *err = NULL;
	int r = mcp_args_check(find_tool(tool)->args, args, &a, &err);
	cr_assert((r < 0) == (err != NULL));
	mcp_args_free(a);
	json_object_put(args);
	return err;
}

static void expect_invalid(const char *tool, const char *args_json, const char *needle)
{
	struct cp_error *err = check(tool, args_json);
	cr_assert_not_null(err, "%s %s accepted", tool, args_json);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT, "%s: %s", args_json, err->message);
	cr_expect(strstr(err->message, needle) != NULL, "%s: message '%s' lacks '%s'", args_json, err->message, needle);
	cp_error_free(err);
}

static void expect_valid(const char *tool, const char *args_json)
{
	struct cp_error *err = check(tool, args_json);
	cr_expect_null(err, "%s %s refused: %s", tool, args_json, err ? err->message : "");
	cp_error_free(err);
}

/* Runs tool's handler on checked args; it must fail with INVALID_ARGUMENT
 * naming needle before it reaches the engine or the registry (neither is
 * there). */
static void expect_handler_refuses(const char *tool, const char *args_json, const char *needle)
{
	struct json_object *args = json_tokener_parse(args_json);
	struct config cfg = {.max_yield_ms = 30000, .max_output_chars = 60000};
	struct tools_app app = {.cfg = &cfg};
	struct mcp_call call = {.app = &app, .tool = tool};
	struct mcp_args *a = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_args_check(find_tool(tool)->args, args, &a, &err), 0, "%s", err ? err->message : "");
	struct json_object *res = NULL;
	cr_expect_lt(find_tool(tool)->handler(&call, a, &res, &err), 0, "%s accepted", args_json);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cr_expect(strstr(err->message, needle) != NULL, "'%s' lacks '%s'", err->message, needle);
	cp_error_free(err);
	json_object_put(res);
	mcp_args_free(a);
	json_object_put(args);
}

#define SBX "\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\""

Test(tools_args, bash_validation)
{
	expect_invalid("bash", "{\"command\":\"ls\"}", "'sandbox_id' is required");
	expect_invalid("bash", "{\"sandbox_id\":42,\"command\":\"ls\"}", "must be a string like 'sbx_…'");
	expect_invalid("bash", "{\"sandbox_id\":42,\"command\":\"ls\"}", ", not an integer");
	expect_invalid("bash", "{\"sandbox_id\":\"nope\",\"command\":\"ls\"}", "not a valid id");
	expect_invalid("bash", "{" SBX "}", "'command' is required");
	expect_invalid("bash", "{" SBX ",\"command\":42}", "'command' must be a string");
	expect_invalid("bash", "{" SBX ",\"command\":\"\"}", "'command' is empty");
	expect_invalid("bash", "{" SBX ",\"command\":\"ls\",\"yield_time_ms\":\"5\"}",
	               "'yield_time_ms' must be an integer");
	expect_invalid("bash", "{" SBX ",\"command\":\"ls\",\"yield_time_ms\":60001}", "'yield_time_ms' is 60001");
	expect_valid("bash", "{" SBX ",\"command\":\"ls\",\"yield_time_ms\":60000}");
	expect_invalid("bash", "{" SBX ",\"command\":\"ls\",\"timeout_ms\":0}", "'timeout_ms' is 0");
	expect_invalid("bash", "{" SBX ",\"command\":\"ls\",\"timeout_ms\":604800001}", "it must be in 1..604800000");
	expect_invalid("bash", "{" SBX ",\"command\":\"ls\",\"cmd\":1}", "unknown argument 'cmd'");
	expect_invalid("bash_poll", "{" SBX "}", "'session_id' is required");
	expect_invalid("bash_stop", "{" SBX ",\"session_id\":\"x\"}", "not a valid id");
	expect_invalid("bash_stop", "{" SBX ",\"session_id\":\"x\"}", "use the session_id a bash call returned");
	/* Combinations stay with the handler. */
	expect_handler_refuses("bash", "{" SBX ",\"command\":\"ls\",\"rows\":30}", "need tty: true");
	expect_handler_refuses("bash_input", "{" SBX ",\"session_id\":\"bash_abcdefghijklmnopqrst\"}",
	                       "give 'data' to write");
}

Test(tools_args, files_and_sandbox_validation)
{
	expect_invalid("read", "{" SBX "}", "'path' is required");
	expect_invalid("read", "{" SBX ",\"path\":\"a\",\"offset\":0}", "'offset' is 0");
	expect_invalid("read", "{" SBX ",\"path\":\"\"}", "'path' is empty");
	expect_invalid("read", "{" SBX ",\"path\":\"\"}", "give a file path relative to /workspace or absolute");
	expect_invalid("write", "{" SBX ",\"path\":\"a\"}", "'content' is required");
	expect_invalid("write", "{" SBX ",\"path\":\"a\",\"content\":\"\",\"create_dirs\":1}", "true or false");
	expect_valid("write", "{" SBX ",\"path\":\"a\",\"content\":\"\"}");
	expect_invalid("sandbox_create", "{\"memory\":512}", "'memory' must be a string");
	expect_invalid("sandbox_create", "{\"workspace_id\":\"sbx_abcdefghijklmnopqrst\"}", "not a valid id");
	expect_invalid("sandbox_create", "{\"workspace_mode\":\"copy\"}", "one of 'managed', 'clone', 'direct'");
	expect_invalid("sandbox_create", "{\"pids_limit\":5}", "'pids_limit' is 5; it must be in 16..32768");
	expect_invalid("sandbox_create", "{\"network\":\"off\"}", "'network' must be true or false");
	expect_invalid("sandbox_create", "{\"node\":7}", "'node' must be a string");
	expect_invalid("sandbox_create", "{\"node\":\"\"}", "'node'");
	expect_invalid("sandbox_create", "{\"cpus\":true}", "'cpus' must be a number");
	expect_valid("sandbox_create", "{\"cpus\":\"1.5\"}"); /* the earlier form; policy judges the text */
	expect_valid("sandbox_create", "{\"cpus\":1.5,\"workspace_id\":null,\"memory\":null}");
	expect_invalid("sandbox_get", "{}", "'sandbox_id' is required");
	expect_invalid("sandbox_destroy", "{\"sandbox_id\":null}", "'sandbox_id' is required");
	expect_invalid("sandbox_list", "{\"all\":true}", "unknown argument");
	expect_invalid("apply_patch", "{" SBX ",\"patch\":\"p\",\"expected_sha256\":[{\"path\":\"a\"}]}",
	               "expected_sha256[0] is not an object with exactly the strings 'path' and 'sha256'");
	expect_invalid("apply_patch", "{" SBX ",\"patch\":\"p\",\"expected_sha256\":\"x\"}",
	               "'expected_sha256' must be an array");
	expect_invalid("apply_patch", "{" SBX ",\"patch\":\"p\",\"expected_sha256\":{\"a\":1}}", "names 'a'");
	expect_valid("apply_patch", "{" SBX ",\"patch\":\"p\",\"expected_sha256\":{\"a\":\"f00\"}}");
	expect_valid("apply_patch",
	             "{" SBX ",\"patch\":\"p\",\"expected_sha256\":[{\"path\":\"a\",\"sha256\":\"f\"}]}");
}

Test(tools_args, sandbox_expose_validation)
{
	expect_invalid("sandbox_expose", "{\"port\":8000}", "'sandbox_id' is required");
	expect_invalid("sandbox_expose", "{" SBX "}", "'port' is required");
	expect_invalid("sandbox_expose", "{" SBX ",\"port\":0}", "'port' is 0; it must be in 1..65535");
	expect_invalid("sandbox_expose", "{" SBX ",\"port\":70000}", "'port' is 70000; it must be in 1..65535");
	expect_invalid("sandbox_expose", "{" SBX ",\"port\":70000}", "give the TCP port the server inside the sandbox");
	expect_invalid("sandbox_expose", "{" SBX ",\"port\":\"8000\"}", "'port' must be an integer");
	expect_invalid("sandbox_expose", "{" SBX ",\"port\":80.5}", "'port' must be an integer");
	expect_invalid("sandbox_expose", "{" SBX ",\"port\":1e300}", "'port' is 9223372036854775807");
	expect_valid("sandbox_expose", "{" SBX ",\"port\":8000.0}"); /* 8000.0 is an integer too */
	expect_invalid("sandbox_expose", "{" SBX ",\"port\":80,\"host_port\":9000}", "unknown argument 'host_port'");
}

Test(tools_args, sandbox_export_and_destroy_force_validation)
{
	expect_invalid("sandbox_export", "{}", "'sandbox_id' is required");
	expect_invalid("sandbox_export", "{\"sandbox_id\":\"nope\"}", "not a valid id");
	expect_invalid("sandbox_export", "{" SBX ",\"message\":7}", "'message' must be a string");
	expect_invalid("sandbox_export", "{" SBX ",\"ref\":\"main\"}", "unknown argument 'ref'");
	char big[4200] = "{" SBX ",\"message\":\"";
	size_t n = strlen(big);
	memset(big + n, 'm', 1001);
	strcpy(big + n + 1001, "\"}");
	expect_invalid("sandbox_export", big, "is 1001 characters long; it must be at most 1000 characters");
	big[n + 1000] = '"';
	strcpy(big + n + 1001, "}");
	expect_valid("sandbox_export", big);
	/* maxLength counts characters, as JSON Schema does: 1000 of 'é' (2000 bytes) fit. */
	for (size_t i = 0; i < 1000; i++)
		memcpy(big + n + 2 * i, "\xc3\xa9", 2);
	strcpy(big + n + 2000, "\"}");
	expect_valid("sandbox_export", big);
	expect_invalid("sandbox_destroy", "{" SBX ",\"force\":\"yes\"}", "true or false");
}

Test(tools_args, nul_characters_are_refused_except_in_content)
{
	expect_invalid("write", "{" SBX ",\"path\":\"a\\u0000b\",\"content\":\"x\"}",
	               "'path' contains a NUL character");
	expect_invalid("sandbox_get", "{\"sandbox_id\":\"sbx_abcdefghijklmnopqrst\\u0000x\"}",
	               "'sandbox_id' contains a NUL character");
	expect_invalid("bash", "{" SBX ",\"command\":\"ls\\u0000rm\"}", "'command' contains a NUL character");
	expect_invalid("sandbox_export", "{" SBX ",\"message\":\"a\\u0000b\"}", "'message' contains a NUL character");
	expect_invalid("sandbox_create", "{\"cpus\":\"1\\u0000\"}", "'cpus' contains a NUL character");
	expect_invalid("apply_patch",
	               "{" SBX ",\"patch\":\"p\",\"expected_sha256\":[{\"path\":\"a\\u0000b\",\"sha256\":\"f\"}]}",
	               "NUL character");
	expect_valid("write", "{" SBX ",\"path\":\"a\",\"content\":\"a\\u0000b\"}");
	expect_valid("edit", "{" SBX ",\"path\":\"a\",\"old_string\":\"a\\u0000\",\"new_string\":\"\\u0000\"}");
	expect_invalid("sandbox_list", "{\"x\":1}", "this tool takes no arguments");

	/* A handler reads the content with its NULs. */
	struct json_object *args = json_tokener_parse("{" SBX ",\"path\":\"a\",\"content\":\"a\\u0000b\"}");
	struct mcp_args *a = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_args_check(find_tool("write")->args, args, &a, &err), 0);
	size_t len = 0;
	cr_expect_eq(memcmp(mcp_args_string(a, "content", &len), "a\0b", 3), 0);
	cr_expect_eq(len, 3);
	cr_expect_eq(mcp_args_bool(a, "create_dirs", 7), 7, "not given: the default");
	mcp_args_free(a);
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
		cr_expect_not_null(t[i].output, "%s has an outputSchema", t[i].name);
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
	const struct mcp_tool *bash = find_tool("bash");
	struct mcp_call call = {.app = &app, .tool = "bash"};
	struct json_object *args = json_tokener_parse("{" SBX ",\"command\":\"ls\",\"rows\":3}"), *res = NULL;
	struct mcp_args *a = NULL;
	cr_assert_eq(mcp_args_check(bash->args, args, &a, &err), 0);
	cr_expect_lt(bash->handler(&call, a, &res, &err), 0);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	mcp_args_free(a);
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
