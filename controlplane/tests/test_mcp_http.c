/* test_mcp_http.c: the Streamable HTTP transport (mcp/http.c) end to end on
 * 127.0.0.1 with a random port, driven by libcurl: sessions, status codes,
 * DNS-rebinding checks, the body limit, concurrent tool calls, SSE answers
 * with progress and cancellation. */
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
#include "tool_test.h"

static int waits_cancelled, waits_completed; /* how the last wait_cancel_ms wait ended */

static int htool_echo(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)err;
	struct json_object *ms;
	if (json_object_object_get_ex(args, "sleep_ms", &ms))
		usleep((useconds_t)json_object_get_int(ms) * 1000);
	if (json_object_object_get_ex(args, "progress", NULL)) {
		mcp_call_progress(call, 1, 2, "half");
		mcp_call_progress(call, 2, 2, NULL);
	}
	if (json_object_object_get_ex(args, "sleep_after_ms", &ms)) {
		mcp_call_progress(call, 1, 0, "before the sleep");
		usleep((useconds_t)json_object_get_int(ms) * 1000);
	}
	/* wait_cancel_ms: wait that long unless the request is cancelled. */
	if (json_object_object_get_ex(args, "wait_cancel_ms", &ms)) {
		for (int i = 0; i < json_object_get_int(ms) / 10 && !mcp_call_cancelled(call); i++)
			usleep(10000);
		__atomic_store_n(mcp_call_cancelled(call) ? &waits_cancelled : &waits_completed, 1, __ATOMIC_SEQ_CST);
	}
	struct json_object *copy = NULL;
	json_object_deep_copy(args, &copy, NULL);
	*ret_result = copy;
	return 0;
}

static int htool_fail(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)args;
	(void)ret_result;
	return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox 'sbx_gone' not found");
}

static const struct mcp_tool htools[] = {
    {"echo", "Echo", "Returns its arguments.", test_tool_args, NULL, MCP_HINT_READ_ONLY, htool_echo},
    {"fail", "Fail", "Always fails.", test_tool_args, NULL, MCP_HINT_DESTRUCTIVE, htool_fail},
};

static struct mcp_server *hserver;
static char base_url[64];

static void hsetup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct mcp_server_options o = {.host = "127.0.0.1",
	                               .port = 0,
	                               .name = "chat2sbx-test",
	                               .version = "0.0.1",
	                               .max_body_bytes = 1024,
	                               .max_sessions = 8,
	                               .session_idle_ms = 60000};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, htools, 2, NULL, &hserver, &err), 0);
	cr_assert_eq(mcp_server_listen(hserver, &err), 0, "%s", err ? err->message : "");
	cr_assert_gt(mcp_server_port(hserver), 0);
	snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%u", mcp_server_port(hserver));
}

static void hteardown(void)
{
	mcp_server_free(hserver);
	hserver = NULL;
	curl_global_cleanup();
}

TestSuite(mcp_http, .init = hsetup, .fini = hteardown, .timeout = 20);

struct hreply {
	long status;
	char *body;
	size_t len;
	char session[128];
	char proto[64];
	char ctype[128];
	char allow[64];
	char accel[16];
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct hreply *r = arg;
	char *p = realloc(r->body, r->len + size * n + 1);
	cr_assert_not_null(p);
	memcpy(p + r->len, data, size * n);
	r->len += size * n;
	p[r->len] = '\0';
	r->body = p;
	return size * n;
}

static void copy_header(const char *line, size_t len, const char *name, char *dst, size_t dst_size)
{
	size_t n = strlen(name);
	if (len <= n + 1 || strncasecmp(line, name, n) != 0 || line[n] != ':')
		return;
	const char *v = line + n + 1;
	while (*v == ' ')
		v++;
	size_t vlen = (size_t)(line + len - v);
	while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
		vlen--;
	snprintf(dst, dst_size, "%.*s", (int)vlen, v);
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct hreply *r = arg;
	copy_header(data, size * n, "Mcp-Session-Id", r->session, sizeof(r->session));
	copy_header(data, size * n, "MCP-Protocol-Version", r->proto, sizeof(r->proto));
	copy_header(data, size * n, "Content-Type", r->ctype, sizeof(r->ctype));
	copy_header(data, size * n, "Allow", r->allow, sizeof(r->allow));
	copy_header(data, size * n, "X-Accel-Buffering", r->accel, sizeof(r->accel));
	return size * n;
}

struct upload {
	const char *data;
	size_t len, off;
};

static size_t on_read(char *buf, size_t size, size_t n, void *arg)
{
	struct upload *u = arg;
	size_t k = size * n < u->len - u->off ? size * n : u->len - u->off;
	memcpy(buf, u->data + u->off, k);
	u->off += k;
	return k;
}

/* One request. headers is NULL-terminated; unless it sets one, POSTs carry
 * Content-Type: application/json and the MCP Accept header. chunked sends
 * the body without a Content-Length. */
static void hreq_ex(struct hreply *r, const char *method, const char *path, const char *body,
                    const char *const *headers, int chunked)
{
	memset(r, 0, sizeof(*r));
	CURL *c = curl_easy_init();
	char url[256];
	snprintf(url, sizeof(url), "%s%s", base_url, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	struct curl_slist *hl = NULL;
	int has_ct = 0;
	for (size_t i = 0; headers && headers[i]; i++) {
		hl = curl_slist_append(hl, headers[i]);
		if (strncasecmp(headers[i], "Content-Type:", 13) == 0)
			has_ct = 1;
	}
	struct upload up = {body, body ? strlen(body) : 0, 0};
	if (body) {
		if (!has_ct)
			hl = curl_slist_append(hl, "Content-Type: application/json");
		hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		if (chunked) {
			curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
			curl_easy_setopt(c, CURLOPT_READDATA, &up);
			hl = curl_slist_append(hl, "Transfer-Encoding: chunked");
		} else {
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
		}
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	CURLcode rc = curl_easy_perform(c);
	cr_assert_eq(rc, CURLE_OK, "%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	cr_assert(r->ctype[0], "%s %s: every response has a Content-Type", method, path);
}

static void hreq(struct hreply *r, const char *method, const char *path, const char *body, const char *const *headers)
{
	hreq_ex(r, method, path, body, headers, 0);
}

static struct json_object *hjson(const struct hreply *r)
{
	cr_assert_not_null(r->body, "empty body, status %ld", r->status);
	struct json_object *o = json_tokener_parse(r->body);
	cr_assert_not_null(o, "not JSON: %s", r->body);
	cr_assert(strncmp(r->ctype, "application/json", 16) == 0, "content type %s", r->ctype);
	return o;
}

static int rpc_code(const struct hreply *r)
{
	struct json_object *o = hjson(r), *e, *code;
	cr_assert(json_object_object_get_ex(o, "error", &e) && json_object_object_get_ex(e, "code", &code), "%s",
	          r->body);
	int v = json_object_get_int(code);
	json_object_put(o);
	return v;
}

#define INIT_BODY                                                                                                      \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","      \
	"\"capabilities\":{},\"clientInfo\":{\"name\":\"test\",\"version\":\"1\"}}}"
#define ECHO_BODY                                                                                                      \
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":"         \
	"{\"x\":1}}}"

static void free_reply(struct hreply *r)
{
	free(r->body);
	r->body = NULL;
}

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
	const char *paths[] = {"/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource/mcp",
	                       "/", "/mcp/extra"};
	for (size_t i = 0; i < 4; i++) {
		hreq(&r, "GET", paths[i], NULL, NULL);
		cr_assert_eq(r.status, 404, "%s", paths[i]);
		free_reply(&r);
	}
	hreq(&r, "POST", "/.well-known/oauth-authorization-server", ECHO_BODY, NULL);
	cr_assert_eq(r.status, 404);
	free_reply(&r);
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

static void *echo_slow(void *arg)
{
	struct hreply *r = arg;
	hreq(r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":"
	     "{\"sleep_ms\":300}}}",
	     NULL);
	return NULL;
}

Test(mcp_http, tool_calls_run_concurrently)
{
	struct hreply r[2];
	pthread_t th[2];
	int64_t start = clock_monotonic_ms();
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, echo_slow, &r[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	int64_t ms = clock_monotonic_ms() - start;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(r[i].status, 200);
		free_reply(&r[i]);
	}
	cr_assert_lt(ms, 600, "two 300 ms calls took %lld ms", (long long)ms);
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

Test(mcp_http, progress_comes_as_sse_events_before_the_result)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	     "\"_meta\":{\"progressToken\":\"tok\"},\"arguments\":{\"progress\":true}}}",
	     NULL);
	cr_assert_eq(r.status, 200);
	cr_assert(strncmp(r.ctype, "text/event-stream", 17) == 0, "content type %s", r.ctype);
	/* Three events: progress 1/2, progress 2/2, the response; each with its
	 * own id and one data line. */
	char ids[3][32] = {{0}};
	struct json_object *msgs[3] = {0};
	int n = 0;
	char *save = NULL;
	for (char *ev = strtok_r(r.body, "\n", &save); ev; ev = strtok_r(NULL, "\n", &save)) {
		if (strncmp(ev, "id: ", 4) == 0) {
			cr_assert_lt(n, 3, "%s", ev);
			snprintf(ids[n], sizeof(ids[n]), "%s", ev + 4);
		} else {
			cr_assert(strncmp(ev, "data: ", 6) == 0, "unexpected line %s", ev);
			cr_assert(ids[n][0], "data before id");
			msgs[n] = json_tokener_parse(ev + 6);
			cr_assert_not_null(msgs[n], "%s", ev);
			n++;
		}
	}
	cr_assert_eq(n, 3);
	cr_assert(strcmp(ids[0], ids[1]) != 0 && strcmp(ids[1], ids[2]) != 0 && strcmp(ids[0], ids[2]) != 0);
	for (int i = 0; i < 2; i++) {
		struct json_object *m, *p, *v;
		cr_assert(json_object_object_get_ex(msgs[i], "method", &m));
		cr_assert_str_eq(json_object_get_string(m), "notifications/progress");
		cr_assert(json_object_object_get_ex(msgs[i], "params", &p));
		cr_assert(json_object_object_get_ex(p, "progressToken", &v));
		cr_assert_str_eq(json_object_get_string(v), "tok");
		cr_assert(json_object_object_get_ex(p, "progress", &v));
		cr_assert_eq(json_object_get_int(v), i + 1);
		cr_assert(json_object_object_get_ex(p, "total", &v));
		cr_assert(json_object_object_get_ex(p, "message", &v) == (i == 0));
		cr_assert(!json_object_object_get_ex(msgs[i], "id", NULL));
	}
	struct json_object *id;
	cr_assert(json_object_object_get_ex(msgs[2], "result", NULL));
	cr_assert(json_object_object_get_ex(msgs[2], "id", &id));
	cr_assert_eq(json_object_get_int(id), 9);
	for (int i = 0; i < 3; i++)
		json_object_put(msgs[i]);
	free_reply(&r);

	/* Without a progressToken the same call answers plain JSON. */
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	     "\"arguments\":{\"progress\":true}}}",
	     NULL);
	cr_assert_eq(r.status, 200);
	json_object_put(hjson(&r));
	free_reply(&r);
}

struct cancel_call {
	CURLcode rc;
	long status;
	struct hreply r;
	const char *body; /* NULL: the plain waiting call */
};

static void *post_waiting_call(void *arg)
{
	struct cancel_call *cc = arg;
	memset(&cc->r, 0, sizeof(cc->r));
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"method\":\"tools/call\",\"params\":{"
	                           "\"name\":\"echo\",\"arguments\":{\"wait_cancel_ms\":5000}}}";
	CURL *c = curl_easy_init();
	char url[256];
	snprintf(url, sizeof(url), "%s/mcp", base_url);
	struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, cc->body ? cc->body : body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &cc->r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	cc->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &cc->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	return NULL;
}

Test(mcp_http, a_cancelled_request_gets_no_response)
{
	struct cancel_call cc = {0};
	pthread_t th;
	int64_t start = clock_monotonic_ms();
	pthread_create(&th, NULL, post_waiting_call, &cc);
	usleep(300 * 1000);
	/* A cancel for another id (and one that is malformed) changes nothing. */
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c-2\"}}", NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	hreq(&r, "POST", "/mcp", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{}}", NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c-1\","
	     "\"reason\":\"user\"}}",
	     NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	pthread_join(th, NULL);
	int64_t ms = clock_monotonic_ms() - start;
	cr_assert_neq(cc.rc, CURLE_OK, "a cancelled call was answered (status %ld): %s", cc.status,
	              cc.r.body ? cc.r.body : "");
	cr_assert_null(cc.r.body);
	cr_assert_lt(ms, 2500, "the handler saw the cancellation late (%lld ms)", (long long)ms);
}

struct live_reply {
	struct hreply r;
	int64_t start, first_progress_ms, end_ms;
};

static size_t on_live_body(char *data, size_t size, size_t n, void *arg)
{
	struct live_reply *lr = arg;
	size_t k = on_body(data, size, n, &lr->r);
	if (!lr->first_progress_ms && strstr(lr->r.body, "notifications/progress"))
		lr->first_progress_ms = clock_monotonic_ms() - lr->start;
	return k;
}

Test(mcp_http, progress_events_are_sent_while_the_call_runs)
{
	static const char body[] = "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/call\",\"params\":{"
	                           "\"name\":\"echo\",\"_meta\":{\"progressToken\":1},\"arguments\":{"
	                           "\"sleep_after_ms\":600}}}";
	struct live_reply lr;
	memset(&lr, 0, sizeof(lr));
	CURL *c = curl_easy_init();
	char url[256];
	snprintf(url, sizeof(url), "%s/mcp", base_url);
	struct curl_slist *hl = curl_slist_append(NULL, "Content-Type: application/json");
	hl = curl_slist_append(hl, "Accept: application/json, text/event-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_live_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &lr);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &lr.r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	lr.start = clock_monotonic_ms();
	CURLcode rc = curl_easy_perform(c);
	lr.end_ms = clock_monotonic_ms() - lr.start;
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	cr_assert_eq(rc, CURLE_OK);
	cr_assert(strncmp(lr.r.ctype, "text/event-stream", 17) == 0, "content type %s", lr.r.ctype);
	cr_assert(strstr(lr.r.body, "\"id\":11"), "%s", lr.r.body);
	cr_assert_gt(lr.first_progress_ms, 0);
	cr_assert_lt(lr.first_progress_ms, 400, "progress came at %lld ms", (long long)lr.first_progress_ms);
	cr_assert_geq(lr.end_ms, 550);
	free_reply(&lr.r);
}

Test(mcp_http, a_cancelled_streaming_call_ends_without_its_response)
{
	struct cancel_call cc = {.body = "{\"jsonrpc\":\"2.0\",\"id\":\"c-1\",\"method\":\"tools/call\",\"params\":{"
	                                 "\"name\":\"echo\",\"_meta\":{\"progressToken\":2},\"arguments\":{"
	                                 "\"progress\":1,\"wait_cancel_ms\":5000}}}"};
	pthread_t th;
	int64_t start = clock_monotonic_ms();
	pthread_create(&th, NULL, post_waiting_call, &cc);
	usleep(300 * 1000);
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":\"c-1\"}}", NULL);
	cr_assert_eq(r.status, 202);
	free_reply(&r);
	pthread_join(th, NULL);
	cr_assert_lt(clock_monotonic_ms() - start, 2500);
	cr_assert_not_null(cc.r.body, "the progress events were sent");
	cr_assert(strstr(cc.r.body, "notifications/progress"), "%s", cc.r.body);
	cr_assert_null(strstr(cc.r.body, "\"result\""), "a cancelled call was answered: %s", cc.r.body);
	free_reply(&cc.r);
}

/* ---- resumption (basic/transports, "Resumability and Redelivery") ---- */

/* The "id: " values of body's events, in order; returns how many. */
static int event_ids(const char *body, char ids[][64], int max)
{
	int n = 0;
	for (const char *p = body; (p = strstr(p, "id: ")) && n < max; p += 4) {
		if (p != body && p[-1] != '\n')
			continue;
		size_t len = strcspn(p + 4, "\n");
		snprintf(ids[n++], 64, "%.*s", (int)len, p + 4);
	}
	return n;
}

Test(mcp_http, a_get_with_last_event_id_replays_the_rest_of_the_stream)
{
	struct hreply r;
	hreq(&r, "POST", "/mcp",
	     "{\"jsonrpc\":\"2.0\",\"id\":\"r-1\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	     "\"_meta\":{\"progressToken\":\"t\"},\"arguments\":{\"progress\":true}}}",
	     NULL);
	cr_assert_eq(r.status, 200);
	char ids[4][64];
	cr_assert_eq(event_ids(r.body, ids, 4), 3, "%s", r.body);
	/* Ids name their stream: one key, then the sequence. */
	cr_assert_eq(strncmp(ids[0], ids[2], 17), 0, "%s %s", ids[0], ids[2]);
	const char *rest = strstr(r.body, ids[1]) - 4; /* "id: <second>..." */
	char header[96];
	snprintf(header, sizeof(header), "Last-Event-ID: %s", ids[0]);
	struct hreply g;
	hreq(&g, "GET", "/mcp", NULL, (const char *const[]){"Accept: text/event-stream", header, NULL});
	cr_assert_eq(g.status, 200, "%s", g.body);
	cr_assert(strncmp(g.ctype, "text/event-stream", 17) == 0);
	cr_assert_str_eq(g.body, rest, "the events after the first, exactly once");
	free_reply(&g);

	/* After the last event: an empty stream that ends at once. */
	snprintf(header, sizeof(header), "Last-Event-ID: %s", ids[2]);
	hreq(&g, "GET", "/mcp", NULL, (const char *const[]){"Accept: text/event-stream", header, NULL});
	cr_assert_eq(g.status, 200);
	cr_assert(g.len == 0, "%s", g.body ? g.body : "");
	free_reply(&g);

	/* Unknown, malformed: 400 with a JSON-RPC error saying so. */
	hreq(&g, "GET", "/mcp", NULL,
	     (const char *const[]){"Accept: text/event-stream", "Last-Event-ID: 0123456789abcdef-1", NULL});
	cr_assert_eq(g.status, 400);
	cr_assert_not_null(strstr(g.body, "unknown or its stream expired"), "%s", g.body);
	free_reply(&g);
	hreq(&g, "GET", "/mcp", NULL, (const char *const[]){"Accept: text/event-stream", "Last-Event-ID: 42", NULL});
	cr_assert_eq(g.status, 400);
	free_reply(&g);
	/* A session that ended: 404, as for a POST. */
	hreq(&g, "GET", "/mcp", NULL,
	     (const char *const[]){"Accept: text/event-stream", header, "Mcp-Session-Id: nosuchsession", NULL});
	cr_assert_eq(g.status, 404);
	free_reply(&g);
	free_reply(&r);
}

/* ---- MCP 2026-07-28 on the same endpoint ---- */

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
