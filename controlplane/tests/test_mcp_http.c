/* test_mcp_http.c: the Streamable HTTP transport (mcp/http.c) end to end on
 * 127.0.0.1 with a random port, driven by libcurl (mcp_http_fixture.h):
 * sessions, status codes, DNS-rebinding checks, the body limit, concurrent
 * tool calls, the 2026-07-28 requests; the SSE answers are test_mcp_sse.c's. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "mcp/mcp.h"

#include "mcp_http_fixture.h"

TestSuite(mcp_http, .init = hsetup, .fini = hteardown, .timeout = 20);

Test(mcp_http, initialize_returns_a_session)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp", INIT_BODY, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_eq(strlen(r.session), 32, "session id '%s'", r.session);
	struct json_object *o = hjson(&r), *v;
	cr_assert(json_object_object_get_ex(o, "result", &v) && json_object_object_get_ex(v, "protocolVersion", &v));
	cr_assert_str_eq(json_object_get_string(v), "2025-06-18");
	json_object_put(o);

	char sid_header[200];
	snprintf(sid_header, sizeof(sid_header), "Mcp-Session-Id: %s", r.session);
	free_reply(&r);
	const char *h[] = {sid_header, "MCP-Protocol-Version: 2025-06-18", NULL};
	hreq(&r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", h);
	cr_assert_eq(r.status, 202);
	cr_assert_eq(r.len, 0);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}", h);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert_str_eq(r.proto, "2025-06-18");
	cr_assert(strstr(r.body, "\"readOnlyHint\":true"));
	free_reply(&r);
}

Test(mcp_http, unknown_session_is_404_with_the_id)
{
	struct hreply r;
	const char *h[] = {"Mcp-Session-Id: 0123456789abcdef0123456789abcdef", NULL};
	hreq(&r, "POST", "/mcp", ECHO_BODY, h);
	cr_assert_eq(r.status, 404);
	struct json_object *o = hjson(&r), *id;
	cr_assert(json_object_object_get_ex(o, "id", &id));
	cr_assert_eq(json_object_get_int(id), 7, "%s", r.body);
	json_object_put(o);
	free_reply(&r);

	/* an initialize with a stale id starts a new session instead */
	hreq(&r, "POST", "/mcp", INIT_BODY, h);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(strlen(r.session), 32);
	free_reply(&r);
}

Test(mcp_http, no_session_is_served_statelessly)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp", ECHO_BODY, (const char *const[]){"Accept:", NULL});
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "\"structuredContent\":{\"x\":1}"), "%s", r.body);
	cr_assert_eq(r.session[0], '\0');
	free_reply(&r);

	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{\"name\":\"fail\",\"arguments\":{}}}",
	     NULL);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "\"isError\":true"), "%s", r.body);
	free_reply(&r);
}

Test(mcp_http, get_is_405)
{
	struct hreply r;
	hreq(&r, "GET", "/mcp", NULL, (const char *const[]){"Accept: text/event-stream", NULL});
	cr_assert_eq(r.status, 405);
	cr_assert_str_eq(r.allow, "POST, DELETE");
	free_reply(&r);
}

Test(mcp_http, delete_ends_a_session)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp", INIT_BODY, NULL);
	char sid_header[200];
	snprintf(sid_header, sizeof(sid_header), "Mcp-Session-Id: %s", r.session);
	free_reply(&r);
	const char *h[] = {sid_header, NULL};
	hreq(&r, "DELETE", "/mcp", NULL, h);
	cr_assert_eq(r.status, 200);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", ECHO_BODY, h);
	cr_assert_eq(r.status, 404);
	cr_assert_eq(rpc_code(&r), -32001);
	free_reply(&r);
	hreq(&r, "DELETE", "/mcp", NULL, h);
	cr_assert_eq(r.status, 404);
	free_reply(&r);
}

Test(mcp_http, dns_rebinding_is_refused)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp", ECHO_BODY, (const char *const[]){"Host: evil.example", NULL});
	cr_assert_eq(r.status, 403);
	cr_assert_eq(rpc_code(&r), -32600);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", ECHO_BODY, (const char *const[]){"Origin: http://evil.example", NULL});
	cr_assert_eq(r.status, 403);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", ECHO_BODY,
	     (const char *const[]){"Host: localhost:18788", "Origin: http://localhost:5173", NULL});
	cr_assert_eq(r.status, 200);
	free_reply(&r);
}

Test(mcp_http, body_over_the_limit_is_413)
{
	char body[2048];
	snprintf(body, sizeof(body),
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"pad\":\"%01900d\"}}", 0);
	struct hreply r;
	for (int chunked = 0; chunked < 2; chunked++) {
		hreq_ex(&r, "POST", "/mcp", body, NULL, chunked);
		cr_assert_eq(r.status, 413, "chunked=%d", chunked);
		cr_assert_eq(rpc_code(&r), -32600);
		cr_assert(strstr(r.body, "request body exceeds the 1 KiB limit"), "%s", r.body);
		free_reply(&r);
	}

	/* a large body announced by Content-Length is read and dropped, then refused,
	 * so the client gets the 413 and not a broken pipe (issue 18) */
	size_t big_len = 3 * 1024 * 1024;
	char *big = malloc(big_len + 1);
	memset(big, ' ', big_len);
	big[big_len] = '\0';
	big[0] = '{';
	big[big_len - 1] = '}';
	hreq(&r, "POST", "/mcp", big, NULL);
	cr_assert_eq(r.status, 413);
	free_reply(&r);
	free(big);

	/* the server still answers afterwards */
	hreq(&r, "POST", "/mcp", ECHO_BODY, NULL);
	cr_assert_eq(r.status, 200);
	free_reply(&r);
}

Test(mcp_http, other_paths_are_404)
{
	struct hreply r;
	const char *paths[] = {"/", "/mcp/extra", "/.well-known/security.txt"};
	for (size_t i = 0; i < 3; i++) {
		hreq(&r, "GET", paths[i], NULL, NULL);
		cr_assert_eq(r.status, 404, "%s", paths[i]);
		free_reply(&r);
	}
}

/* Without a token check (CHAT2SBX_MCP_TOKEN=off) the OAuth paths still
 * answer no OAuth, and say that no token is needed (test_mcp_auth.c has
 * them with the token). */
Test(mcp_http, oauth_paths_without_a_token_check_say_none_is_needed)
{
	struct hreply r;
	const char *paths[] = {"/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp",
	                       "/register", "/token"};
	for (size_t i = 0; i < 4; i++) {
		int metadata = strstr(paths[i], "/.well-known/") != NULL;
		hreq(&r, "GET", paths[i], NULL, NULL);
		cr_assert_eq(r.status, metadata ? 404 : 400, "%s", paths[i]);
		cr_assert(strstr(r.body, "does not use OAuth") && strstr(r.body, "without a token"), "%s", r.body);
		free_reply(&r);
		hreq(&r, "POST", paths[i], ECHO_BODY, NULL);
		cr_assert_eq(r.status, metadata ? 404 : 400, "%s", paths[i]);
		cr_assert_null(strstr(r.body, "\"result\""), "never dispatched: %s", r.body);
		free_reply(&r);
	}
}

Test(mcp_http, notifications_and_responses_are_202)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", NULL);
	cr_assert_eq(r.status, 202);
	cr_assert_eq(r.len, 0);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}", NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
}

Test(mcp_http, protocol_version_header)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp", ECHO_BODY, (const char *const[]){"MCP-Protocol-Version: 2024-01-01", NULL});
	cr_assert_eq(r.status, 400);
	cr_assert_eq(rpc_code(&r), -32600);
	cr_assert(strstr(r.body, "\"id\":7"), "%s", r.body);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", ECHO_BODY, (const char *const[]){"MCP-Protocol-Version: 2025-03-26", NULL});
	cr_assert_eq(r.status, 200);
	cr_assert_str_eq(r.proto, "2025-03-26");
	free_reply(&r);
}

Test(mcp_http, bad_content_type_and_bad_json)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp", ECHO_BODY, (const char *const[]){"Content-Type: text/plain", NULL});
	cr_assert_eq(r.status, 415);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", ECHO_BODY,
	     (const char *const[]){"Content-Type: application/json; charset=utf-8", NULL});
	cr_assert_eq(r.status, 200);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", "{\"jsonrpc\":", NULL);
	cr_assert_eq(r.status, 400);
	cr_assert_eq(rpc_code(&r), -32700);
	cr_assert(strstr(r.body, "\"id\":null"), "%s", r.body);
	free_reply(&r);
}

/* POSTs tools/call of echo with the arguments args (a JSON object's text) into *r. */
static void call_echo(struct hreply *r, const char *args)
{
	char body[256];
	snprintf(body, sizeof(body),
	         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	         "\"arguments\":%s}}",
	         args);
	hreq(r, "POST", "/mcp", body, NULL);
}

static void *echo_slow(void *arg)
{
	call_echo(arg, "{\"sleep_ms\":300}");
	return NULL;
}

static void *echo_meet(void *arg)
{
	call_echo(arg, "{\"meet\":2}");
	return NULL;
}

Test(mcp_http, tool_calls_run_concurrently)
{
	/* Each call waits inside the tool until the other is there too: served
	 * one after another, neither would ever see the other. */
	struct hreply r[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, echo_meet, &r[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(r[i].status, 200);
		cr_expect(strstr(r[i].body, "\"met\":true") != NULL, "call %d: %s", i, r[i].body);
		free_reply(&r[i]);
	}
}

Test(mcp_http, busy_port_names_the_address)
{
	struct mcp_server_options o = {.host = "127.0.0.1", .port = mcp_server_port(hserver)};
	struct mcp_server *other = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, htools, 2, NULL, &other, &err), 0);
	cr_assert_lt(mcp_server_listen(other, &err), 0);
	cr_assert_eq(err->code, CP_ERR_UNAVAILABLE);
	char want[128];
	snprintf(want, sizeof(want), "port %u on 127.0.0.1 is in use", mcp_server_port(hserver));
	cr_assert(strstr(err->message, want), "%s", err->message);
	cp_error_free(err);
	mcp_server_free(other);
}

Test(mcp_http, stop_waits_for_running_calls)
{
	struct hreply r;
	pthread_t th;
	pthread_create(&th, NULL, echo_slow, &r);
	usleep(100 * 1000); /* the call is now sleeping in the handler */
	int64_t start = clock_monotonic_ms();
	mcp_server_stop(hserver);
	int64_t ms = clock_monotonic_ms() - start;
	pthread_join(th, NULL);
	cr_assert_eq(r.status, 200);
	cr_assert_gt(ms, 100, "stop returned after %lld ms, before the call ended", (long long)ms);
	cr_assert_eq(mcp_server_port(hserver), 0);
	free_reply(&r);
}

/* ---- SSE answers, progress, cancellation ---- */

#define M_META                                                                                                         \
	"\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","                                       \
	"\"io.modelcontextprotocol/clientCapabilities\":{}}"

Test(mcp_http, a_modern_request_is_served_without_a_session)
{
	struct hreply r;
	const char *h[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: server/discover",
	                   "Mcp-Session-Id: not-a-session-of-ours", NULL};
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{" M_META "}}", h);
	cr_assert_eq(r.status, 200, "an unknown Mcp-Session-Id is ignored, not 404: %s", r.body);
	cr_assert_eq(r.session[0], '\0', "no session is minted or echoed");
	cr_assert(strstr(r.body, "\"resultType\":\"complete\""), "%s", r.body);
	cr_assert(strstr(r.body, "\"supportedVersions\":[\"2026-07-28\""), "%s", r.body);
	free_reply(&r);
	/* a legacy client on the same endpoint at the same time: unchanged */
	hreq(&r, "POST", "/mcp", INIT_BODY, NULL);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(strlen(r.session), 32);
	cr_assert_null(strstr(r.body, "resultType"));
	free_reply(&r);
}

Test(mcp_http, modern_refusals_carry_the_status_the_revision_names)
{
	static const struct {
		const char *body;
		const char *headers[4];
		long status;
		int code;
	} cases[] = {
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
	     {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list", NULL},
	     400,
	     -32602},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
	     "protocolVersion\":\"v999.0.0\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
	     {"MCP-Protocol-Version: v999.0.0", "Mcp-Method: tools/list", NULL},
	     400,
	     -32022},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" M_META "}}",
	     {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: prompts/list", NULL},
	     400,
	     -32020},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"fail\"," M_META "}}",
	     {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: echo", NULL},
	     400,
	     -32020},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"," M_META "}}",
	     {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: echo", NULL},
	     200,
	     0},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{" M_META "}}",
	     {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: ping", NULL},
	     404,
	     -32601},
	    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"nope\"," M_META "}}",
	     {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: nope", NULL},
	     200,
	     -32602},
	    {"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" M_META "}}",
	     {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list", NULL},
	     400,
	     -32600},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hreply r;
		hreq(&r, "POST", "/mcp", cases[i].body, cases[i].headers);
		cr_assert_eq(r.status, cases[i].status, "case %zu: %ld %s", i, r.status, r.body);
		if (cases[i].code)
			cr_assert_eq(rpc_code(&r), cases[i].code, "case %zu: %s", i, r.body);
		cr_assert(strstr(r.body, "\"id\":1"), "case %zu: the reply carries the id: %s", i, r.body);
		free_reply(&r);
	}
}

Test(mcp_http, a_routing_header_sent_twice_is_refused)
{
	struct hreply r;
	const char *h[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: echo",
	                   "mcp-name: fail", NULL};
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"," M_META "}}", h);
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_eq(rpc_code(&r), -32020);
	cr_assert(strstr(r.body, "appears 2 times"), "%s", r.body);
	free_reply(&r);
}

Test(mcp_http, a_modern_progress_stream_is_plain_and_unbuffered)
{
	struct hreply r;
	const char *h[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: echo", NULL};
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{"
	     "\"progress\":true},\"_meta\":{\"progressToken\":\"p\",\"io.modelcontextprotocol/protocolVersion\":"
	     "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
	     h);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strncmp(r.ctype, "text/event-stream", 17) == 0, "%s", r.ctype);
	cr_assert_str_eq(r.accel, "no");
	cr_assert(strstr(r.body, "notifications/progress"), "%s", r.body);
	cr_assert(strstr(r.body, "\"resultType\":\"complete\""), "%s", r.body);
	cr_assert_null(strstr(r.body, "id: "), "2026-07-28 events carry no ids: %s", r.body);
	cr_assert(strncmp(r.body, "data: ", 6) == 0, "%s", r.body);
	free_reply(&r);
	/* the same request with a header that contradicts the body: 400 JSON, never a 200 stream */
	const char *bad[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: fail", NULL};
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{"
	     "\"progress\":true},\"_meta\":{\"progressToken\":\"p\",\"io.modelcontextprotocol/protocolVersion\":"
	     "\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
	     bad);
	cr_assert_eq(r.status, 400, "%s", r.body);
	cr_assert_eq(rpc_code(&r), -32020);
	free_reply(&r);
	/* a GET stream does not exist at 2026-07-28, resumable or not */
	hreq(&r, "GET", "/mcp", NULL,
	     (const char *const[]){"Accept: text/event-stream", "MCP-Protocol-Version: 2026-07-28",
	                           "Last-Event-ID: 0123456789abcdef-1", NULL});
	cr_assert_eq(r.status, 405, "%s", r.body);
	free_reply(&r);
}

/* POSTs body and gives up after timeout_ms, closing the connection. */
static void post_and_hang_up(const char *body, const char *const *headers, long timeout_ms)
{
	CURL *c = curl_easy_init();
	char url[256];
	snprintf(url, sizeof(url), "%s/mcp", base_url);
	struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	for (size_t i = 0; headers && headers[i]; i++)
		hl = curl_slist_append(hl, headers[i]);
	struct hreply r = {0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	cr_assert_eq(curl_easy_perform(c), CURLE_OPERATION_TIMEDOUT);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	free(r.body);
}

/* Waits up to ms for *flag. */
static int wait_flag(int *flag, int ms)
{
	for (int i = 0; i < ms / 10 && !__atomic_load_n(flag, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	return __atomic_load_n(flag, __ATOMIC_SEQ_CST);
}

Test(mcp_http, a_modern_client_that_hangs_up_cancels_its_call)
{
	const char *h[] = {"MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call", "Mcp-Name: echo", NULL};
	/* a JSON answer and a progress stream alike */
	const char *bodies[] = {
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{"
	    "\"wait_cancel_ms\":8000}," M_META "}}",
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{"
	    "\"wait_cancel_ms\":8000,\"progress\":1},\"_meta\":{\"progressToken\":1,\"io.modelcontextprotocol/"
	    "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}",
	};
	for (size_t i = 0; i < 2; i++) {
		waits_cancelled = waits_completed = 0;
		post_and_hang_up(bodies[i], h, 400);
		cr_assert(wait_flag(&waits_cancelled, 3000), "case %zu: the call did not see the hangup", i);
		cr_assert_eq(waits_completed, 0);
	}
	/* a 2025 client's hangup is not a cancellation (its stream stays resumable) */
	waits_cancelled = waits_completed = 0;
	post_and_hang_up("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	                 "\"arguments\":{\"wait_cancel_ms\":1500}}}",
	                 (const char *const[]){"MCP-Protocol-Version: 2025-06-18", NULL}, 300);
	cr_assert(wait_flag(&waits_completed, 4000), "the legacy call ran to its end");
	cr_assert_eq(waits_cancelled, 0);
}
