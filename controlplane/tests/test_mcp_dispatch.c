/* test_mcp_dispatch.c: JSON-RPC framing and MCP method dispatch (mcp/dispatch.c,
 * mcp/tool_call.c, mcp/tool_schema.c, mcp/protocol.c), the session table, the loopback checks and the
 * stdio transport, over a fake two-tool table. No network. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "mcp/internal.h"
#include "mcp/mcp.h"
#include "tool_test.h"
#include "mcp_test.h"

static int dtool_echo(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)err;
	struct json_object *ms;
	if (json_object_object_get_ex(args, "sleep_ms", &ms))
		usleep((useconds_t)json_object_get_int(ms) * 1000);
	if (json_object_object_get_ex(args, "progress", NULL))
		mcp_call_progress(call, 1, 0, "started");
	struct json_object *copy = NULL;
	json_object_deep_copy(args, &copy, NULL);
	if (json_object_object_get_ex(args, "meet", &ms))
		json_object_object_add(copy, "met", json_object_new_boolean(tool_test_meet(json_object_get_int(ms))));
	*ret_result = copy;
	return 0;
}

static int dtool_fail(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)ret_result;
	return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox 'sbx_gone' not found; call sandbox_list");
}

static const struct mcp_arg fail_args[] = {{.name = "sandbox_id", .type = MCP_ARG_STRING}, {0}};

static const struct mcp_tool dtools[] = {
    {"echo", "Echo", "Returns its arguments.", test_tool_args, test_tool_out, MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
     dtool_echo},
    {"fail", "Fail", "Always fails.", fail_args, NULL, MCP_HINT_DESTRUCTIVE | MCP_HINT_OPEN_WORLD, dtool_fail},
};

static struct mcp_server *dserver;

static void dsetup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	struct mcp_server_options o = {.host = "127.0.0.1",
	                               .name = "chat2sbx-test",
	                               .version = "1.2.3",
	                               .instructions = "Create a sandbox first.",
	                               .max_body_bytes = 4096,
	                               .max_sessions = 3,
	                               .session_idle_ms = 1000};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, dtools, 2, NULL, &dserver, &err), 0);
}

static void dteardown(void)
{
	mcp_server_free(dserver);
	dserver = NULL;
	clock_set_fake_ms(-1);
}

TestSuite(mcp_dispatch, .init = dsetup, .fini = dteardown);

/* Sends text, returns the parsed reply (NULL when there was none). */
static struct json_object *rpc(const char *text)
{
	char *out = mcp_dispatch_text(dserver, text, strlen(text), NULL, NULL);
	if (!out)
		return NULL;
	struct json_object *r = json_tokener_parse(out);
	cr_assert_not_null(r, "reply is not JSON: %s", out);
	free(out);
	return r;
}

static void assert_error(struct json_object *r, int code)
{
	cr_assert_not_null(r);
	cr_assert_str_eq(gets(r, "jsonrpc"), "2.0");
	cr_assert_eq(geti(r, "error.code"), code, "got %s", json_object_to_json_string(r));
	cr_assert_null(get(r, "result"));
}

Test(mcp_dispatch, initialize_echoes_each_supported_version)
{
	const char *versions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
	for (size_t i = 0; i < 3; i++) {
		char req[256];
		snprintf(req, sizeof(req),
		         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
		         "\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}",
		         versions[i]);
		struct json_object *r = rpc(req);
		cr_assert_str_eq(gets(r, "result.protocolVersion"), versions[i]);
		cr_assert_eq(geti(r, "id"), 1);
		json_object_put(r);
	}
}

Test(mcp_dispatch, initialize_unknown_version_gets_latest)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"initialize\",\"params\":"
	                            "{\"protocolVersion\":\"2024-11-05\",\"capabilities\":{}}}");
	cr_assert_str_eq(gets(r, "result.protocolVersion"), "2025-11-25");
	cr_assert_str_eq(gets(r, "id"), "a");
	cr_assert_str_eq(gets(r, "result.serverInfo.name"), "chat2sbx-test");
	cr_assert_str_eq(gets(r, "result.serverInfo.version"), "1.2.3");
	cr_assert_str_eq(gets(r, "result.instructions"), "Create a sandbox first.");
	struct json_object *lc = get(r, "result.capabilities.tools.listChanged");
	cr_assert(json_object_is_type(lc, json_type_boolean) && !json_object_get_boolean(lc));
	cr_assert(json_object_is_type(get(r, "result.capabilities.logging"), json_type_object));
	json_object_put(r);

	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\"}");
	cr_assert_str_eq(gets(r, "result.protocolVersion"), "2025-11-25");
	json_object_put(r);
}

Test(mcp_dispatch, initialize_creates_a_session_only_when_asked)
{
	const char *req = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	                  "\"2025-06-18\"}}";
	char *sid = NULL;
	char *out = mcp_dispatch_text(dserver, req, strlen(req), NULL, &sid);
	cr_assert_not_null(out);
	cr_assert_not_null(sid);
	cr_assert_eq(strlen(sid), 32);
	cr_assert_eq(strspn(sid, "0123456789abcdef"), 32);
	cr_assert(mcp_session_touch(dserver->sessions, sid));
	cr_assert_eq(mcp_session_count(dserver->sessions), 1);
	free(out);
	free(sid);

	out = mcp_dispatch_text(dserver, req, strlen(req), NULL, NULL);
	cr_assert_eq(mcp_session_count(dserver->sessions), 1);
	free(out);
}

Test(mcp_dispatch, ping_and_empty_lists)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	cr_assert(json_object_is_type(get(r, "result"), json_type_object));
	cr_assert_eq(json_object_object_length(get(r, "result")), 0);
	json_object_put(r);

	const char *lists[][2] = {{"resources/list", "result.resources"},
	                          {"resources/templates/list", "result.resourceTemplates"},
	                          {"prompts/list", "result.prompts"},
	                          {"completion/complete", "result.completion.values"}};
	for (size_t i = 0; i < 4; i++) {
		char req[160];
		snprintf(req, sizeof(req), "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"%s\",\"params\":{}}",
		         lists[i][0]);
		r = rpc(req);
		struct json_object *a = get(r, lists[i][1]);
		cr_assert(json_object_is_type(a, json_type_array), "%s", lists[i][0]);
		cr_assert_eq(json_object_array_length(a), 0);
		json_object_put(r);
	}

	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"warning\"}}");
	cr_assert(json_object_is_type(get(r, "result"), json_type_object));
	json_object_put(r);
	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"loud\"}}");
	assert_error(r, -32602);
	json_object_put(r);
}

Test(mcp_dispatch, tools_list_has_schemas_and_all_annotations)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	struct json_object *tools = get(r, "result.tools");
	cr_assert_eq(json_object_array_length(tools), 2);

	cr_assert_str_eq(gets(tools, "0.name"), "echo");
	cr_assert_str_eq(gets(tools, "0.title"), "Echo");
	cr_assert_str_eq(gets(tools, "0.description"), "Returns its arguments.");
	cr_assert_str_eq(gets(tools, "0.inputSchema.type"), "object");
	cr_assert_str_eq(gets(tools, "0.outputSchema.type"), "object");
	const char *hints[] = {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"};
	int echo_bits[] = {1, 0, 1, 0}, fail_bits[] = {0, 1, 0, 1};
	for (size_t i = 0; i < 4; i++) {
		char p[64];
		snprintf(p, sizeof(p), "0.annotations.%s", hints[i]);
		struct json_object *h = get(tools, p);
		cr_assert(json_object_is_type(h, json_type_boolean), "%s", p);
		cr_assert_eq(json_object_get_boolean(h), echo_bits[i], "%s", p);
		snprintf(p, sizeof(p), "1.annotations.%s", hints[i]);
		h = get(tools, p);
		cr_assert(json_object_is_type(h, json_type_boolean), "%s", p);
		cr_assert_eq(json_object_get_boolean(h), fail_bits[i], "%s", p);
	}
	cr_assert_str_eq(gets(tools, "1.name"), "fail");
	/* Optional, so advertised as nullable (tool_schema.c). */
	cr_assert_str_eq(gets(tools, "1.inputSchema.properties.sandbox_id.type.0"), "string");
	cr_assert_str_eq(gets(tools, "1.inputSchema.properties.sandbox_id.type.1"), "null");
	cr_assert_null(get(tools, "1.inputSchema.properties.sandbox_id.anyOf"));
	cr_assert_null(get(tools, "1.outputSchema"));
	json_object_put(r);
}

Test(mcp_dispatch, tools_call_success)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
	                            "\"echo\",\"arguments\":{\"sandbox_id\":\"sbx_1\",\"n\":[1,2]}}}");
	cr_assert_eq(geti(r, "id"), 9);
	struct json_object *res = get(r, "result");
	cr_assert_not_null(res, "%s", json_object_to_json_string(r));
	cr_assert_eq(json_object_get_boolean(get(res, "isError")), 0);
	cr_assert(json_object_is_type(get(res, "isError"), json_type_boolean));
	cr_assert_str_eq(gets(res, "content.0.type"), "text");
	struct json_object *text = json_tokener_parse(gets(res, "content.0.text"));
	cr_assert(json_object_equal(text, get(res, "structuredContent")));
	cr_assert_str_eq(gets(res, "structuredContent.sandbox_id"), "sbx_1");
	cr_assert_eq(geti(res, "structuredContent.n.1"), 2);
	json_object_put(text);
	json_object_put(r);

	/* arguments may be absent */
	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}");
	cr_assert_eq(json_object_object_length(get(r, "result.structuredContent")), 0);
	json_object_put(r);
}

Test(mcp_dispatch, tools_call_handler_error_is_a_result)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{\"name\":"
	                            "\"fail\",\"arguments\":{\"sandbox_id\":\"sbx_gone\"}}}");
	cr_assert_null(get(r, "error"));
	cr_assert_str_eq(gets(r, "id"), "x");
	cr_assert_eq(json_object_get_boolean(get(r, "result.isError")), 1);
	cr_assert_str_eq(gets(r, "result.content.0.type"), "text");
	cr_assert_str_eq(gets(r, "result.content.0.text"), "sandbox 'sbx_gone' not found; call sandbox_list");
	cr_assert_null(get(r, "result.structuredContent"), "an error must not claim to match the outputSchema");
	json_object_put(r);
}

Test(mcp_dispatch, tools_call_unknown_tool)
{
	struct json_object *r = rpc(
	    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\",\"arguments\":{}}}");
	assert_error(r, -32602);
	cr_assert_eq(geti(r, "id"), 4);
	cr_assert(strstr(gets(r, "error.message"), "unknown tool 'nope'; call tools/list"));
	json_object_put(r);
}

Test(mcp_dispatch, tools_call_bad_params)
{
	const char *bad[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[\"echo\"]}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":\"echo\"}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":7}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/"
	    "call\",\"params\":{\"name\":\"echo\",\"arguments\":\"x\"}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":[1]}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *r = rpc(bad[i]);
		assert_error(r, -32602);
		cr_assert_eq(geti(r, "id"), 1, "%s", bad[i]);
		json_object_put(r);
	}
}

Test(mcp_dispatch, parse_error_has_null_id)
{
	const char *bad[] = {"{\"jsonrpc\":\"2.0\",\"id\":1,", "not json", "{} extra", "", "   ", "{\"a\":1,}"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *r = rpc(bad[i]);
		assert_error(r, -32700);
		struct json_object *id;
		cr_assert(json_object_object_get_ex(r, "id", &id), "id must be present");
		cr_assert_null(id, "id must be null for '%s'", bad[i]);
		json_object_put(r);
	}
}

Test(mcp_dispatch, invalid_request_keeps_its_id)
{
	struct json_object *r = rpc("{\"id\":7,\"method\":\"ping\"}");
	assert_error(r, -32600);
	cr_assert_eq(geti(r, "id"), 7);
	json_object_put(r);

	r = rpc("{\"jsonrpc\":\"1.0\",\"id\":\"s\",\"method\":\"ping\"}");
	assert_error(r, -32600);
	cr_assert_str_eq(gets(r, "id"), "s");
	json_object_put(r);

	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":42}");
	assert_error(r, -32600);
	cr_assert_eq(geti(r, "id"), 8);
	json_object_put(r);

	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":{\"x\":1},\"method\":\"ping\"}");
	assert_error(r, -32600);
	json_object_put(r);

	r = rpc("5");
	assert_error(r, -32600);
	json_object_put(r);

	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\",\"params\":3}");
	assert_error(r, -32602);
	cr_assert_eq(geti(r, "id"), 11);
	json_object_put(r);
}

Test(mcp_dispatch, unknown_method)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"sampling/createMessage\"}");
	assert_error(r, -32601);
	cr_assert_eq(geti(r, "id"), 12);
	json_object_put(r);
}

Test(mcp_dispatch, notifications_and_responses_get_no_reply)
{
	cr_assert_null(rpc("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	cr_assert_null(
	    rpc("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}}"));
	cr_assert_null(rpc("{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}"));
	cr_assert_null(rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"));
	cr_assert_null(rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"m\"}}"));
}

Test(mcp_dispatch, batch)
{
	struct json_object *r =
	    rpc("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
	        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":"
	        "{\"a\":1}}},"
	        "3]");
	cr_assert(json_object_is_type(r, json_type_array));
	cr_assert_eq(json_object_array_length(r), 3);
	cr_assert_eq(geti(r, "0.id"), 1);
	cr_assert_eq(geti(r, "1.id"), 2);
	cr_assert_eq(geti(r, "1.result.structuredContent.a"), 1);
	cr_assert_eq(geti(r, "2.error.code"), -32600);
	json_object_put(r);

	r = rpc("[]");
	cr_assert(json_object_is_type(r, json_type_object));
	assert_error(r, -32600);
	json_object_put(r);

	cr_assert_null(rpc("[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]"));
}

Test(mcp_dispatch, dispatch_object_api)
{
	struct json_object *msg = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	struct json_object *r = mcp_dispatch(dserver, msg, NULL, NULL);
	cr_assert_eq(geti(r, "id"), 1);
	json_object_put(r);
	json_object_put(msg);
	msg = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	cr_assert_null(mcp_dispatch(dserver, msg, NULL, NULL));
	json_object_put(msg);
}

static int dtool_dummy(const struct mcp_call *c, const struct mcp_args *a, struct json_object **r, struct cp_error **e)
{
	(void)c;
	(void)a;
	(void)r;
	(void)e;
	return 0;
}

Test(mcp_dispatch, malformed_tool_table_is_refused)
{
	static const struct mcp_arg inverted[] = {
	    {.name = "n", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_MIN | MCP_ARG_MAX, .min = 5, .max = 1}, {0}};
	static const struct mcp_arg twice[] = {
	    {.name = "n", .type = MCP_ARG_STRING}, {.name = "n", .type = MCP_ARG_BOOLEAN}, {0}};
	struct mcp_tool bad_range[] = {{"t", NULL, "d", inverted, NULL, 0, dtool_dummy}};
	struct mcp_tool bad_names[] = {{"t", NULL, "d", twice, NULL, 0, dtool_dummy}};
	struct mcp_tool dup[] = {{"t", NULL, "d", NULL, NULL, 0, dtool_dummy},
	                         {"t", NULL, "d", NULL, NULL, 0, dtool_dummy}};
	struct mcp_tool *tables[] = {bad_range, bad_names, dup};
	size_t sizes[] = {1, 1, 2};
	for (size_t i = 0; i < 3; i++) {
		struct mcp_server *s = NULL;
		struct cp_error *err = NULL;
		cr_assert_lt(mcp_server_new(NULL, tables[i], sizes[i], NULL, &s, &err), 0);
		cr_assert_null(s);
		cr_assert_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cr_assert(strstr(err->message, "tool"), "%s", err->message);
		cp_error_free(err);
	}
}

Test(mcp_dispatch, sessions_expire_and_are_capped)
{
	clock_set_fake_ms(1000000);
	struct mcp_session_table *t = dserver->sessions; /* cap 3, idle 1000 ms */
	char *ids[4];
	for (int i = 0; i < 3; i++) {
		struct cp_error *err = NULL;
		cr_assert_eq(mcp_session_create(t, "2025-11-25", &ids[i], &err), 0);
		clock_set_fake_ms(1000000 + 10 * (i + 1));
	}
	cr_assert(mcp_session_touch(t, ids[0])); /* ids[1] is now the least recently used */
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_session_create(t, "2025-11-25", &ids[3], &err), 0);
	cr_assert_eq(mcp_session_count(t), 3);
	cr_assert_not(mcp_session_touch(t, ids[1]));
	cr_assert(mcp_session_touch(t, ids[0]));
	cr_assert(mcp_session_touch(t, ids[2]));

	cr_assert(mcp_session_end(t, ids[2]));
	cr_assert_not(mcp_session_end(t, ids[2]));
	cr_assert_not(mcp_session_touch(t, ids[2]));

	clock_set_fake_ms(1000000 + 30 + 999);
	cr_assert(mcp_session_touch(t, ids[3]));
	clock_set_fake_ms(1000000 + 30 + 1000 + 999 + 1);
	cr_assert_eq(mcp_session_count(t), 0);
	cr_assert_not(mcp_session_touch(t, ids[3]));
	for (int i = 0; i < 4; i++)
		free(ids[i]);
}

Test(mcp_dispatch, loopback_host_and_origin)
{
	const char *good_hosts[] = {"127.0.0.1", "127.0.0.1:18788", "localhost", "LocalHost:1",
	                            "[::1]",     "[::1]:80",        NULL};
	const char *bad_hosts[] = {"evil.example",
	                           "evil.example:18788",
	                           "127.0.0.1.evil.example",
	                           "localhost:",
	                           "localhost:80:80",
	                           "[::1",
	                           "[::1]x",
	                           "::1",
	                           "",
	                           "127.0.0.2",
	                           "0.0.0.0",
	                           NULL};
	for (size_t i = 0; good_hosts[i]; i++)
		cr_assert(mcp_host_allowed(good_hosts[i], "127.0.0.1"), "%s", good_hosts[i]);
	for (size_t i = 0; bad_hosts[i]; i++)
		cr_assert_not(mcp_host_allowed(bad_hosts[i], "127.0.0.1"), "%s", bad_hosts[i]);
	cr_assert(mcp_host_allowed(NULL, "127.0.0.1"));
	cr_assert(mcp_host_allowed("10.0.0.5:18788", "10.0.0.5"));
	cr_assert_not(mcp_host_allowed("0.0.0.0:1", "0.0.0.0"));

	const char *good_origins[] = {"http://localhost:5173", "http://127.0.0.1",       "http://[::1]:3000",
	                              "https://localhost",     "http://localhost:3000/", NULL};
	const char *bad_origins[] = {"http://evil.example",
	                             "null",
	                             "http://localhost.evil.example",
	                             "file://",
	                             "http://127.0.0.1:80/path",
	                             "localhost",
	                             "",
	                             NULL};
	for (size_t i = 0; good_origins[i]; i++)
		cr_assert(mcp_origin_allowed(good_origins[i]), "%s", good_origins[i]);
	for (size_t i = 0; bad_origins[i]; i++)
		cr_assert_not(mcp_origin_allowed(bad_origins[i]), "%s", bad_origins[i]);
	cr_assert(mcp_origin_allowed(NULL));
}

/* ---- stdio ---- */

/* Feeds input on a pipe, collects stdout. Returns the output (caller
 * frees) and the elapsed time. */
static char *stdio_exchange(const char *input, long *ret_ms)
{
	return mcp_test_stdio_exchange(dserver, input, NULL, 0, ret_ms);
}

Test(mcp_dispatch, stdio_lines)
{
	const char *input =
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
	    "\n"
	    "not json\r\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":"
	    "{\"s\":\"line\\nbreak\"}}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}"; /* last line without newline */
	long ms;
	char *out = stdio_exchange(input, &ms);
	int lines = 0, saw[4] = {0};
	for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *r = json_tokener_parse(line);
		cr_assert_not_null(r, "not one JSON line: %s", line);
		struct json_object *id = get(r, "id");
		if (!id) {
			cr_assert_eq(geti(r, "error.code"), -32700);
			saw[0] = 1;
		} else {
			saw[json_object_get_int(id)] = 1;
		}
		json_object_put(r);
		lines++;
	}
	cr_assert_eq(lines, 4, "got: %s", out);
	cr_assert(saw[0] && saw[1] && saw[2] && saw[3]);
	cr_assert_eq(mcp_session_count(dserver->sessions), 0, "stdio creates no sessions");
	free(out);
}

Test(mcp_dispatch, stdio_tool_calls_overlap_and_long_lines_are_refused)
{
	char big[6000];
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	char *input = NULL;
	cr_assert_gt(asprintf(&input,
	                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	                      "\"arguments\":{\"meet\":2}}}\n"
	                      "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	                      "\"arguments\":{\"meet\":2}}}\n"
	                      "{\"pad\":\"%s\"}\n"
	                      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n",
	                      big),
	             0);
	long ms;
	char *out = stdio_exchange(input, &ms);
	/* Each call waited inside the tool for the other: they overlapped. */
	cr_assert(strstr(out, "\"met\":true") && !strstr(out, "\"met\":false"), "%s", out);
	cr_assert(strstr(out, "exceeds the 4 KiB limit"), "%s", out);
	cr_assert(strstr(out, "\"id\":1"));
	cr_assert(strstr(out, "\"id\":2"));
	cr_assert(strstr(out, "\"id\":3"));
	free(out);
	free(input);
}

Test(mcp_dispatch, progress_helpers_are_null_safe)
{
	struct mcp_call plain = {.tool = "t"};
	mcp_call_progress(NULL, 1, 2, "x");
	mcp_call_progress(&plain, 1, 2, "x"); /* no token, no sink: nothing happens */
	cr_assert_eq(mcp_call_cancelled(NULL), 0);
	cr_assert_eq(mcp_call_cancelled(&plain), 0);
	/* Dispatched without a sink, a progressToken is ignored. */
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":"
	                            "\"echo\",\"_meta\":{\"progressToken\":3},\"arguments\":{\"progress\":1}}}");
	cr_assert_eq(geti(r, "id"), 4);
	cr_assert_not_null(get(r, "result"));
	json_object_put(r);
}

Test(mcp_dispatch, stdio_progress_lines_come_before_the_response)
{
	const char *input = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	                    "\"_meta\":{\"progressToken\":77},\"arguments\":{\"progress\":true}}}\n";
	long ms;
	char *out = stdio_exchange(input, &ms);
	char *nl = strchr(out, '\n');
	cr_assert_not_null(nl, "%s", out);
	*nl = '\0';
	struct json_object *n = json_tokener_parse(out);
	cr_assert_not_null(n, "%s", out);
	cr_assert_str_eq(gets(n, "method"), "notifications/progress");
	cr_assert_eq(geti(n, "params.progressToken"), 77);
	cr_assert_eq(geti(n, "params.progress"), 1);
	cr_assert_null(get(n, "params.total"));
	cr_assert_str_eq(gets(n, "params.message"), "started");
	json_object_put(n);
	struct json_object *r = json_tokener_parse(nl + 1);
	cr_assert_not_null(r, "%s", nl + 1);
	cr_assert_eq(geti(r, "id"), 5);
	cr_assert_not_null(get(r, "result"));
	json_object_put(r);
	free(out);
}
