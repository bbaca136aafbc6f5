/* test_mcp_modern.c: MCP 2026-07-28 beside the legacy revisions (mcp/modern.c,
 * mcp/route_headers.c and the parts of dispatch.c and stdio.c they touch):
 * which messages are 2026-07-28 ones, the per-request _meta checks and their
 * error codes and HTTP statuses, the routing headers against the body (the
 * attacks a proxy-facing server must refuse), server/discover, results and
 * cache hints, removed methods, cancellation by connection owner and over
 * stdio. No network: the HTTP side is in test_mcp_http.c. */
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

static int runs;                             /* calls of the "count" tool */
static int waits_cancelled, waits_completed; /* how the last wait_cancel_ms wait ended */

static int mtool_echo(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)err;
	struct json_object *ms;
	if (json_object_object_get_ex(args, "progress", NULL))
		mcp_call_progress(call, 1, 0, "started");
	if (json_object_object_get_ex(args, "wait_cancel_ms", &ms))
		tool_test_wait_cancel(call, json_object_get_int(ms), &waits_cancelled, &waits_completed);
	struct json_object *copy = NULL;
	json_object_deep_copy(args, &copy, NULL);
	*ret_result = copy;
	return 0;
}

static int mtool_count(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                       struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)err;
	__atomic_add_fetch(&runs, 1, __ATOMIC_SEQ_CST);
	*ret_result = json_object_new_object();
	return 0;
}

static int mtool_fail(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)ret_result;
	return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox 'sbx_gone' not found; call sandbox_list");
}

static const struct mcp_tool mtools[] = {
    {"echo", "Echo", "Returns its arguments.", test_tool_args, NULL, MCP_HINT_READ_ONLY, mtool_echo},
    {"count", "Count", "Counts its runs.", test_tool_args, NULL, MCP_HINT_DESTRUCTIVE, mtool_count},
    {"fail", "Fail", "Always fails.", test_tool_args, NULL, MCP_HINT_DESTRUCTIVE, mtool_fail},
};

static struct mcp_server *mserver;

static void msetup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	struct mcp_server_options o = {.name = "chat2sbx-test",
	                               .version = "9.8.7",
	                               .instructions = "Create a sandbox first.",
	                               .max_body_bytes = 65536};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, mtools, 3, NULL, &mserver, &err), 0);
	runs = 0;
}

static void mteardown(void)
{
	mcp_server_free(mserver);
	mserver = NULL;
}

TestSuite(mcp_modern, .init = msetup, .fini = mteardown, .timeout = 20);

#define META                                                                                                           \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                       \
	"\"io.modelcontextprotocol/clientCapabilities\":{},"                                                           \
	"\"io.modelcontextprotocol/clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}"

/* Dispatches text with the given routing headers (NULL: stdio, no header
 * layer); *ret_status (may be NULL) gets the HTTP status the reply asks for. */
static struct json_object *send_h(const char *text, const struct mcp_route_headers *h, unsigned *ret_status)
{
	struct json_object *msg = json_tokener_parse(text);
	cr_assert_not_null(msg, "test input is not JSON: %s", text);
	struct mcp_sink sink = {.headers = h};
	struct json_object *r = mcp_dispatch_sink(mserver, msg, NULL, NULL, &sink);
	json_object_put(msg);
	if (ret_status)
		*ret_status = sink.http_status ? sink.http_status : 200;
	return r;
}

static struct json_object *send(const char *text)
{
	return send_h(text, NULL, NULL);
}

/* Headers as a conforming HTTP client sends them. */
static struct mcp_route_headers hdrs(const char *method, const char *name)
{
	struct mcp_route_headers h = {.protocol_version = "2026-07-28", .protocol_version_count = 1};
	if (method) {
		h.method = method;
		h.method_count = 1;
	}
	if (name) {
		h.name = name;
		h.name_count = 1;
	}
	return h;
}

static void assert_error(struct json_object *r, int code, int id)
{
	cr_assert_not_null(r);
	cr_assert_eq(geti(r, "error.code"), code, "got %s", json_object_to_json_string(r));
	cr_assert_eq(geti(r, "id"), id, "the error carries the request's id: %s", json_object_to_json_string(r));
	cr_assert_null(get(r, "result"));
}

/* The name in result._meta["io.modelcontextprotocol/serverInfo"] (the key
 * holds dots, so get() cannot walk to it), NULL when absent. */
static const char *server_info_name(struct json_object *r)
{
	struct json_object *info = json_object_object_get(get(r, "result._meta"), "io.modelcontextprotocol/serverInfo");
	return gets(info, "name");
}

Test(mcp_modern, which_messages_are_modern)
{
	struct json_object *m;
	/* the envelope claims it */
	m = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}");
	cr_assert(mcp_modern_claimed(m, NULL));
	json_object_put(m);
	/* a revision nobody knows: modern, so it gets the revision's error */
	m = json_tokener_parse("{\"id\":1,\"method\":\"x\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
	                       "protocolVersion\":\"1900-01-01\"}}}");
	cr_assert(mcp_modern_claimed(m, NULL));
	json_object_put(m);
	/* a legacy revision in _meta: legacy, unless the header says 2026-07-28 */
	m = json_tokener_parse("{\"id\":1,\"method\":\"ping\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
	                       "protocolVersion\":\"2025-11-25\"}}}");
	cr_assert_not(mcp_modern_claimed(m, NULL));
	cr_assert_not(mcp_modern_claimed(m, "2025-11-25"));
	cr_assert(mcp_modern_claimed(m, "2026-07-28"));
	json_object_put(m);
	/* no envelope: the header decides; only 2026-07-28 itself counts */
	m = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
	cr_assert_not(mcp_modern_claimed(m, NULL));
	cr_assert_not(mcp_modern_claimed(m, "2025-06-18"));
	cr_assert_not(mcp_modern_claimed(m, "2027-01-01"));
	cr_assert(mcp_modern_claimed(m, " 2026-07-28\t"));
	cr_assert_not(mcp_modern_claimed(m, "2026-07-28x"));
	json_object_put(m);
	m = json_tokener_parse("[1]");
	cr_assert_not(mcp_modern_claimed(m, "2026-07-28"));
	json_object_put(m);
}

Test(mcp_modern, discover_describes_the_server)
{
	struct json_object *r =
	    send("{\"jsonrpc\":\"2.0\",\"id\":\"d\",\"method\":\"server/discover\",\"params\":{" META "}}");
	cr_assert_str_eq(gets(r, "id"), "d");
	cr_assert_str_eq(gets(r, "result.resultType"), "complete");
	struct json_object *v = get(r, "result.supportedVersions");
	cr_assert_eq(json_object_array_length(v), 4);
	const char *want[] = {"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"};
	for (size_t i = 0; i < 4; i++)
		cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(v, i)), want[i]);
	cr_assert_not_null(get(r, "result.capabilities.tools"));
	cr_assert_null(get(r, "result.capabilities.logging"), "nothing is ever logged to a 2026-07-28 client");
	cr_assert_null(get(r, "result.capabilities.extensions"));
	cr_assert_str_eq(gets(r, "result.instructions"), "Create a sandbox first.");
	cr_assert_eq(geti(r, "result.ttlMs"), 3600000);
	cr_assert_str_eq(gets(r, "result.cacheScope"), "public");
	struct json_object *info = json_object_object_get(get(r, "result._meta"), "io.modelcontextprotocol/serverInfo");
	cr_assert_str_eq(server_info_name(r), "chat2sbx-test");
	cr_assert_str_eq(gets(info, "version"), "9.8.7");
	cr_assert_null(get(r, "result.serverInfo"), "serverInfo lives in _meta (spec PR 3002)");
	json_object_put(r);
}

Test(mcp_modern, a_missing_or_malformed_meta_field_is_invalid_params_400)
{
	static const struct {
		const char *params;
		const char *expect; /* a word of the message */
	} cases[] = {
	    {"{}", "no params._meta"},
	    {"{\"_meta\":{\"io.modelcontextprotocol/clientCapabilities\":{}}}",
	     "lacks io.modelcontextprotocol/protocolVersion"},
	    {"{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}",
	     "lacks io.modelcontextprotocol/clientCapabilities"},
	    {"{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":7,\"io.modelcontextprotocol/"
	     "clientCapabilities\":{}}}",
	     "must be a string"},
	    {"{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
	     "clientCapabilities\":[]}}",
	     "ClientCapabilities"},
	    {"{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
	     "clientCapabilities\":{},\"io.modelcontextprotocol/clientInfo\":{\"name\":\"x\"}}}",
	     "Implementation"},
	    {"{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
	     "clientCapabilities\":{},\"io.modelcontextprotocol/logLevel\":\"loud\"}}",
	     "emergency"},
	    {"{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
	     "clientCapabilities\":{},\"progressToken\":1.5}}",
	     "string or an integer"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text),
		         "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"server/discover\",\"params\":%s}", i,
		         cases[i].params);
		struct mcp_route_headers h = hdrs("server/discover", NULL);
		unsigned status;
		struct json_object *r = send_h(text, &h, &status);
		assert_error(r, -32602, (int)i);
		cr_assert_eq(status, 400, "case %zu", i);
		cr_assert(strstr(gets(r, "error.message"), cases[i].expect), "case %zu: %s", i,
		          gets(r, "error.message"));
		cr_assert_not_null(get(r, "error.data"), "case %zu names the key", i);
		json_object_put(r);
	}
	/* clientInfo is optional (a SHOULD): served without it */
	struct json_object *r = send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
	                             "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
	                             "\"io.modelcontextprotocol/clientCapabilities\":{}}}}");
	cr_assert_not_null(get(r, "result.tools"));
	json_object_put(r);
	/* a 2026-07-28 header over a body without _meta is the same refusal */
	struct mcp_route_headers h = hdrs("tools/list", NULL);
	unsigned status;
	r = send_h("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", &h, &status);
	assert_error(r, -32602, 2);
	cr_assert_eq(status, 400);
	cr_assert_eq(json_object_array_length(get(r, "error.data.missing")), 2);
	json_object_put(r);
}

Test(mcp_modern, an_unsupported_revision_lists_what_is_served)
{
	const char *versions[] = {"v999.0.0", "1900-01-01", "2027-01-01"};
	for (size_t i = 0; i < 3; i++) {
		char text[512];
		snprintf(text, sizeof(text),
		         "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"server/discover\",\"params\":{\"_meta\":{"
		         "\"io.modelcontextprotocol/protocolVersion\":\"%s\",\"io.modelcontextprotocol/"
		         "clientCapabilities\":{}}}}",
		         versions[i]);
		struct mcp_route_headers h = hdrs("server/discover", NULL);
		h.protocol_version = versions[i];
		unsigned status;
		struct json_object *r = send_h(text, &h, &status);
		assert_error(r, -32022, 3);
		cr_assert_eq(status, 400);
		cr_assert_str_eq(gets(r, "error.data.requested"), versions[i]);
		struct json_object *sup = get(r, "error.data.supported");
		cr_assert_eq(json_object_array_length(sup), 4);
		cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(sup, 0)), "2026-07-28");
		json_object_put(r);
	}
}

Test(mcp_modern, a_legacy_revision_in_meta_keeps_the_legacy_answer)
{
	struct json_object *r = send("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\",\"params\":{\"_meta\":{"
	                             "\"io.modelcontextprotocol/protocolVersion\":\"2025-11-25\"}}}");
	cr_assert_not_null(get(r, "result"));
	cr_assert_null(get(r, "result.resultType"), "a legacy answer is untouched: %s", json_object_to_json_string(r));
	json_object_put(r);
	/* and the legacy methods still answer without any _meta */
	r = send("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}");
	cr_assert_not_null(get(r, "result.tools"));
	cr_assert_null(get(r, "result.ttlMs"));
	cr_assert_null(get(r, "result.resultType"));
	json_object_put(r);
}

Test(mcp_modern, removed_and_unknown_methods_are_404_method_not_found)
{
	const char *methods[] = {
	    "initialize",           "ping",      "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
	    "subscriptions/listen", "tasks/get", "no/such"};
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		char text[512];
		snprintf(text, sizeof(text),
		         "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"%s\",\"params\":{" META ",\"taskId\":\"t1\"}}",
		         i, methods[i]);
		struct mcp_route_headers h = hdrs(methods[i], "t1");
		unsigned status;
		struct json_object *r = send_h(text, &h, &status);
		assert_error(r, -32601, (int)i);
		cr_assert_eq(status, 404, "%s", methods[i]);
		json_object_put(r);
	}
	struct json_object *r = send("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\",\"params\":{" META "}}");
	cr_assert(strstr(gets(r, "error.message"), "removed ping"), "%s", gets(r, "error.message"));
	json_object_put(r);
}

Test(mcp_modern, tools_list_is_the_legacy_list_with_cache_hints)
{
	struct json_object *legacy = send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	struct json_object *modern =
	    send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" META "}}");
	cr_assert_str_eq(gets(modern, "result.resultType"), "complete");
	cr_assert_eq(geti(modern, "result.ttlMs"), 3600000);
	cr_assert_str_eq(gets(modern, "result.cacheScope"), "public");
	cr_assert_str_eq(json_object_to_json_string(get(modern, "result.tools")),
	                 json_object_to_json_string(get(legacy, "result.tools")));
	json_object_put(legacy);
	json_object_put(modern);
	/* the empty lists the legacy revisions answer, cacheable too */
	const char *lists[][2] = {{"prompts/list", "prompts"},
	                          {"resources/list", "resources"},
	                          {"resources/templates/list", "resourceTemplates"}};
	for (size_t i = 0; i < 3; i++) {
		char text[512];
		snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"%s\",\"params\":{" META "}}",
		         lists[i][0]);
		struct json_object *r = send(text);
		char path[64];
		snprintf(path, sizeof(path), "result.%s", lists[i][1]);
		cr_assert_eq(json_object_array_length(get(r, path)), 0);
		cr_assert_eq(geti(r, "result.ttlMs"), 3600000);
		cr_assert_str_eq(gets(r, "result.resultType"), "complete");
		json_object_put(r);
	}
}

Test(mcp_modern, tools_call_results_keep_their_content)
{
	struct json_object *legacy = send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
	                                  "\"name\":\"echo\",\"arguments\":{\"x\":[1,\"two\"]}}}");
	struct json_object *modern = send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
	                                  "\"name\":\"echo\",\"arguments\":{\"x\":[1,\"two\"]}," META "}}");
	cr_assert_str_eq(gets(modern, "result.resultType"), "complete");
	const char *keys[] = {"content", "structuredContent", "isError"};
	for (size_t i = 0; i < 3; i++) {
		char path[64];
		snprintf(path, sizeof(path), "result.%s", keys[i]);
		cr_assert_str_eq(json_object_to_json_string(get(modern, path)),
		                 json_object_to_json_string(get(legacy, path)), "%s", keys[i]);
	}
	cr_assert_str_eq(server_info_name(modern), "chat2sbx-test");
	cr_assert_null(get(legacy, "result._meta"), "the legacy answer is untouched");
	json_object_put(legacy);
	json_object_put(modern);
	/* a tool's failure stays an isError result (in-band, status 200) */
	struct mcp_route_headers h = hdrs("tools/call", "fail");
	unsigned status;
	struct json_object *r = send_h("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
	                               "\"fail\"," META "}}",
	                               &h, &status);
	cr_assert_eq(status, 200);
	cr_assert(json_object_get_boolean(get(r, "result.isError")));
	cr_assert_str_eq(gets(r, "result.resultType"), "complete");
	json_object_put(r);
	/* an unknown tool: -32602 in-band, as for the legacy revisions */
	h = hdrs("tools/call", "nope");
	r = send_h("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"," META "}}",
	           &h, &status);
	assert_error(r, -32602, 3);
	cr_assert_eq(status, 200);
	json_object_put(r);
}

Test(mcp_modern, prompts_and_resources_are_not_found)
{
	struct mcp_route_headers h = hdrs("resources/read", "file:///etc/passwd");
	unsigned status;
	struct json_object *r =
	    send_h("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":"
	           "\"file:///etc/passwd\"," META "}}",
	           &h, &status);
	assert_error(r, -32602, 1);
	cr_assert_str_eq(gets(r, "error.data.uri"), "file:///etc/passwd");
	cr_assert_eq(status, 200);
	json_object_put(r);
	h = hdrs("prompts/get", "p");
	r = send_h("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"prompts/get\",\"params\":{\"name\":\"p\"," META "}}", &h,
	           &status);
	assert_error(r, -32602, 2);
	json_object_put(r);
	r = send("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"completion/complete\",\"params\":{" META "}}");
	cr_assert_eq(json_object_array_length(get(r, "result.completion.values")), 0);
	json_object_put(r);
}

/* ---- routing headers (streamable-http, "Server Validation") ---- */

static void assert_mismatch(const char *text, const struct mcp_route_headers *h, const char *word)
{
	unsigned status;
	struct json_object *r = send_h(text, h, &status);
	cr_assert_not_null(r);
	cr_assert_eq(geti(r, "error.code"), -32020, "%s", json_object_to_json_string(r));
	cr_assert_eq(status, 400);
	if (word)
		cr_assert(strstr(gets(r, "error.message"), word), "%s", gets(r, "error.message"));
	json_object_put(r);
}

#define CALL_COUNT "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"count\"," META "}}"

Test(mcp_modern, headers_that_contradict_the_body_are_refused_before_anything_runs)
{
	struct mcp_route_headers h;
	/* a proxy sees a read-only tool in Mcp-Name, the body runs another */
	h = hdrs("tools/call", "echo");
	assert_mismatch(CALL_COUNT, &h, "Mcp-Name header value 'echo' does not match body value 'count'");
	/* Mcp-Method says tools/list */
	h = hdrs("tools/list", "count");
	assert_mismatch(CALL_COUNT, &h, "Mcp-Method");
	/* values are case-sensitive */
	h = hdrs("TOOLS/CALL", "count");
	assert_mismatch(CALL_COUNT, &h, NULL);
	h = hdrs("tools/call", "Count");
	assert_mismatch(CALL_COUNT, &h, NULL);
	/* required headers missing */
	h = hdrs("tools/call", NULL);
	assert_mismatch(CALL_COUNT, &h, "Mcp-Name header is missing");
	h = hdrs(NULL, "count");
	assert_mismatch(CALL_COUNT, &h, "Mcp-Method header is missing");
	h = hdrs("tools/call", "count");
	h.protocol_version = NULL;
	h.protocol_version_count = 0;
	assert_mismatch(CALL_COUNT, &h, "MCP-Protocol-Version header is missing");
	/* a header twice: which copy would a load balancer read? */
	h = hdrs("tools/call", "count");
	h.name_count = 2;
	assert_mismatch(CALL_COUNT, &h, "appears 2 times");
	h = hdrs("tools/call", "count");
	h.method_count = 3;
	assert_mismatch(CALL_COUNT, &h, "appears 3 times");
	/* the version header against the body, before the version gate */
	h = hdrs("tools/call", "count");
	h.protocol_version = "2025-11-25";
	assert_mismatch(CALL_COUNT, &h, "MCP-Protocol-Version");
	/* bytes a header may not hold, and a malformed sentinel */
	h = hdrs("tools/call", "co\x01unt");
	assert_mismatch(CALL_COUNT, &h, "outside visible ASCII");
	h = hdrs("tools/call", "=?base64?!!!?=");
	assert_mismatch(CALL_COUNT, &h, "not valid Base64");
	h = hdrs("tools/call", "=?base64?Y29\x00?=");
	assert_mismatch(CALL_COUNT, &h, NULL);
	cr_assert_eq(runs, 0, "no refused request ran its tool");

	/* what must be accepted: whitespace around values, the sentinel */
	unsigned status;
	h = hdrs(" tools/call\t", "  count  ");
	struct json_object *r = send_h(CALL_COUNT, &h, &status);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(r));
	json_object_put(r);
	h = hdrs("tools/call", "=?base64?Y291bnQ=?=");
	r = send_h(CALL_COUNT, &h, &status);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(r));
	json_object_put(r);
	h = hdrs("tools/call", "=?base64?Y291bnQ?="); /* padding left out */
	r = send_h(CALL_COUNT, &h, &status);
	cr_assert_eq(status, 200, "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert_eq(runs, 3);
	/* a sentinel hiding another name is a mismatch like any other */
	h = hdrs("tools/call", "=?base64?ZWNobw==?="); /* "echo" */
	assert_mismatch(CALL_COUNT, &h, "'echo'");
	cr_assert_eq(runs, 3);
}

Test(mcp_modern, a_header_mismatch_comes_before_the_version_gate)
{
	/* header 2026-07-28, body v999: HeaderMismatch, not UnsupportedProtocolVersion */
	struct mcp_route_headers h = hdrs("server/discover", NULL);
	assert_mismatch("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"server/discover\",\"params\":{\"_meta\":{"
	                "\"io.modelcontextprotocol/protocolVersion\":\"v999.0.0\","
	                "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
	                &h, NULL);
	/* a missing version header comes after it: an unknown revision is named as such */
	h = hdrs("server/discover", NULL);
	h.protocol_version = NULL;
	h.protocol_version_count = 0;
	unsigned status;
	struct json_object *r =
	    send_h("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"server/discover\",\"params\":{\"_meta\":{"
	           "\"io.modelcontextprotocol/protocolVersion\":\"v999.0.0\","
	           "\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
	           &h, &status);
	assert_error(r, -32022, 7);
	json_object_put(r);
	/* over stdio there are no headers to check */
	r = send(CALL_COUNT);
	cr_assert_not_null(get(r, "result"));
	json_object_put(r);
}

Test(mcp_modern, route_header_decoding)
{
	char why[300], *v = NULL;
	cr_assert_eq(mcp_route_header_decode(" \tplain value \t", &v, why, sizeof(why)), 0);
	cr_assert_str_eq(v, "plain value");
	free(v);
	cr_assert_eq(mcp_route_header_decode("=?base64?SGVsbG8sIOS4lueVjA==?=", &v, why, sizeof(why)), 0);
	cr_assert_str_eq(v, "Hello, \xe4\xb8\x96\xe7\x95\x8c");
	free(v);
	cr_assert_eq(mcp_route_header_decode("=?base64?IHBhZGRlZCA=?=", &v, why, sizeof(why)), 0);
	cr_assert_str_eq(v, " padded ");
	free(v);
	cr_assert_eq(mcp_route_header_decode("=?base64?"
	                                     "?=",
	                                     &v, why, sizeof(why)),
	             0); /* empty */
	cr_assert_str_eq(v, "");
	free(v);
	const char *bad[] = {"=?base64?QQ=Q?=", "=?base64?Q===?=", "=?base64?QQQQQ?=", "=?base64?AA==?=" /* NUL */,
	                     "caf\xc3\xa9"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(mcp_route_header_decode(bad[i], &v, why, sizeof(why)), -1, "%s", bad[i]);
	/* not a sentinel: taken literally */
	cr_assert_eq(mcp_route_header_decode("=?base64?", &v, why, sizeof(why)), 0);
	cr_assert_str_eq(v, "=?base64?");
	free(v);
}

Test(mcp_modern, a_batch_may_not_hold_a_modern_request)
{
	struct json_object *batch =
	    json_tokener_parse("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	                       "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
	                       "\"name\":\"count\"," META "}}]");
	struct json_object *r = mcp_batch_refusal(batch, "2025-03-26");
	cr_assert_not_null(r);
	cr_assert_eq(geti(r, "error.code"), -32600);
	json_object_put(r);
	r = mcp_dispatch_value(mserver, batch, NULL, NULL);
	cr_assert_eq(geti(r, "error.code"), -32600, "%s", json_object_to_json_string(r));
	json_object_put(r);
	json_object_put(batch);
	cr_assert_eq(runs, 0);
}

/* ---- cancellation ---- */

struct bg_call {
	uint64_t owner;
	struct json_object *reply;
	int cancelled;
};

static void *bg_call_main(void *arg)
{
	struct bg_call *bg = arg;
	struct json_object *msg =
	    json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"tools/call\",\"params\":{"
	                       "\"name\":\"echo\",\"arguments\":{\"wait_cancel_ms\":5000}," META "}}");
	struct mcp_sink sink = {.owner = bg->owner};
	bg->reply = mcp_dispatch_sink(mserver, msg, NULL, NULL, &sink);
	bg->cancelled = sink.cancelled;
	json_object_put(msg);
	return NULL;
}

Test(mcp_modern, an_owned_call_ends_with_its_connection_only)
{
	struct bg_call bg = {.owner = 42};
	pthread_t th;
	pthread_create(&th, NULL, bg_call_main, &bg);
	/* Until the call is on record as in flight (however slow the machine). */
	for (int registered = 0; !registered; usleep(5000)) {
		pthread_mutex_lock(&mserver->inflight_lock);
		registered = mserver->inflight != NULL;
		pthread_mutex_unlock(&mserver->inflight_lock);
	}
	/* another client naming the same request id cannot cancel it */
	struct json_object *id = json_object_new_string("w");
	cr_assert_eq(mcp_cancel_request(mserver, NULL, id), 0);
	json_object_put(id);
	cr_assert_eq(mcp_cancel_owner(mserver, 41), 0);
	cr_assert_eq(mcp_cancel_owner(mserver, 42), 1);
	pthread_join(th, NULL);
	cr_assert_null(bg.reply, "a cancelled call gets no response");
	cr_assert(bg.cancelled);
	cr_assert_eq(mcp_cancel_owner(mserver, 0), 0);
}

/* ---- stdio (basic/transports/stdio: _meta only, no header layer) ---- */

static char *stdio_exchange(const char *first, const char *rest, int pause_ms)
{
	return mcp_test_stdio_exchange(mserver, first, rest, pause_ms, NULL);
}

Test(mcp_modern, stdio_serves_both_generations)
{
	char *out = stdio_exchange(
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" META "}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{"
	    "\"progress\":1},\"_meta\":{\"progressToken\":\"p\",\"io.modelcontextprotocol/"
	    "protocolVersion\":\"2026-07-28\","
	    "\"io.modelcontextprotocol/clientCapabilities\":{}}}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{" META "}}\n",
	    NULL, 0);
	int seen = 0, progress = 0;
	for (char *save = NULL, *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct json_object *r = json_tokener_parse(line);
		cr_assert_not_null(r, "%s", line);
		if (gets(r, "method")) {
			cr_assert_str_eq(gets(r, "method"), "notifications/progress");
			cr_assert_str_eq(gets(r, "params.progressToken"), "p");
			progress = 1;
		} else {
			int id = geti(r, "id");
			seen |= 1 << id;
			if (id == 1)
				cr_assert_str_eq(gets(r, "result.resultType"), "complete");
			if (id == 2)
				cr_assert_str_eq(gets(r, "result.resultType"), "complete");
			if (id == 3)
				cr_assert_str_eq(gets(r, "result.protocolVersion"), "2025-06-18");
			if (id == 4)
				cr_assert_null(get(r, "result.resultType"));
			if (id == 5)
				cr_assert_eq(geti(r, "error.code"), -32601);
		}
		json_object_put(r);
	}
	cr_assert_eq(seen, 0x3e, "%s", out);
	cr_assert(progress);
	free(out);
}

Test(mcp_modern, stdio_cancels_a_modern_call_by_notification)
{
	__atomic_store_n(&waits_cancelled, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&waits_completed, 0, __ATOMIC_SEQ_CST);
	char *out = stdio_exchange(
	    "{\"jsonrpc\":\"2.0\",\"id\":\"c\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{"
	    "\"wait_cancel_ms\":5000}," META "}}\n",
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c\"," META "}}\n",
	    200);
	/* The tool saw the cancellation, rather than waiting its 5 s out. */
	while (!__atomic_load_n(&waits_cancelled, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&waits_completed, __ATOMIC_SEQ_CST))
		usleep(10000);
	cr_assert(waits_cancelled && !waits_completed);
	cr_assert_null(strstr(out, "\"id\":\"c\""), "a cancelled call was answered: %s", out);
	free(out);
}
