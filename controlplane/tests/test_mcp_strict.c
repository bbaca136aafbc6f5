/* test_mcp_strict.c: what the request path refuses since issue 13: NaN and
 * Infinity, numbers json-c cannot hold exactly, keys with a NUL or given
 * twice, names with a NUL, batches of the revisions that removed them and
 * batches past the cap; and the connection guard's deadlines (pure rule and
 * end to end: a trickling header is cut, a slow body is cut, a flood of idle
 * connections does not keep a real client out, a 401 closes its
 * connection). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "mcp/internal.h"
#include "tool_test.h"

static int stool_echo(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                      struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)err;
	json_object_deep_copy(args, ret_result, NULL);
	return 0;
}

static const struct mcp_tool stools[] = {
    {"echo", "Echo", "Returns its arguments.", test_tool_args, NULL, MCP_HINT_READ_ONLY, stool_echo},
};

/* ---- strict parsing ---- */

static void refused_with(const char *text, const char *want)
{
	char why[300] = "";
	struct json_object *v = NULL;
	cr_assert_eq(mcp_json_parse_request(text, strlen(text), &v, why, sizeof(why)), -1, "accepted: %s", text);
	cr_assert_null(v);
	cr_assert(strstr(why, want), "%s: the reason '%s' lacks '%s'", text, why, want);
}

static void accepted(const char *text)
{
	char why[300] = "";
	struct json_object *v = NULL;
	cr_assert_eq(mcp_json_parse_request(text, strlen(text), &v, why, sizeof(why)), 0, "%s refused: %s", text, why);
	json_object_put(v);
}

Test(mcp_strict, nan_and_infinity_are_not_json)
{
	refused_with("{\"jsonrpc\":\"2.0\",\"id\":NaN,\"method\":\"ping\"}", "NaN is not JSON");
	refused_with("{\"id\":Infinity}", "Infinity is not JSON");
	refused_with("[1,-Infinity]", "-Infinity is not JSON");
	refused_with("{\"a\":{\"b\":[NaN]}}", "NaN");
}

Test(mcp_strict, numbers_must_be_held_exactly)
{
	refused_with("{\"id\":99999999999999999999}", "outside the 64-bit range");
	refused_with("{\"id\":-9223372036854775809}", "outside the 64-bit range");
	refused_with("{\"x\":1e400}", "outside the range of a double");
	refused_with("{\"x\":-1e999}", "outside the range of a double");
	accepted("{\"id\":9223372036854775807}");
	accepted("{\"id\":-9223372036854775808}");
	accepted("{\"x\":1.5e300,\"y\":-0,\"z\":0.000001}");
}

Test(mcp_strict, duplicate_keys_are_refused_naming_the_key)
{
	refused_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	             "\"arguments\":{},\"name\":\"bash\"}}",
	             "the key 'name' appears twice");
	refused_with("{\"a\":1,\"a\":2}", "'a' appears twice");
	/* Equal once decoded: an escape cannot hide a duplicate. */
	refused_with("{\"name\":1,\"n\\u0061me\":2}", "'name' appears twice");
	refused_with("[{\"k\":{\"deep\":1,\"deep\":1}}]", "'deep'");
	/* The same key in different objects is fine. */
	accepted("{\"a\":{\"x\":1},\"b\":{\"x\":2},\"c\":[{\"x\":3},{\"x\":4}]}");
	/* A string value that looks like a key is not one. */
	accepted("{\"a\":\"a\",\"b\":[\"a\",\"a\"]}");
}

Test(mcp_strict, keys_with_a_nul_are_refused)
{
	refused_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	             "\"arguments\":{\"com\\u0000mand\":\"x\"}}}",
	             "contains a NUL");
	/* A NUL in a value is left to the tools (file content may hold one). */
	accepted("{\"content\":\"a\\u0000b\"}");
}

Test(mcp_strict, nested_valid_requests_pass)
{
	accepted("{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
	         "\"arguments\":{\"s\":\"q\\\"uote\\\\\",\"t\":true,\"f\":false,\"n\":null,\"a\":[[],{}]}}}");
}

/* ---- names with a NUL, batches ---- */

static struct mcp_server *sserver;

static void ssetup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	struct mcp_server_options o = {.name = "t", .version = "1", .max_body_bytes = 1 << 20};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, stools, 1, NULL, &sserver, &err), 0);
}

static void steardown(void)
{
	mcp_server_free(sserver);
	sserver = NULL;
}

static struct json_object *rpc(const char *text)
{
	char *out = mcp_dispatch_text(sserver, text, strlen(text), NULL, NULL);
	cr_assert_not_null(out, "no reply to %s", text);
	struct json_object *r = json_tokener_parse(out);
	free(out);
	return r;
}

static const char *error_message(struct json_object *r)
{
	struct json_object *e = NULL, *m = NULL;
	if (!json_object_object_get_ex(r, "error", &e) || !json_object_object_get_ex(e, "message", &m))
		return NULL;
	return json_object_get_string(m);
}

TestSuite(mcp_names, .init = ssetup, .fini = steardown);

Test(mcp_names, a_method_or_tool_name_with_a_nul_is_not_the_plain_name)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\\u0000x\"}");
	cr_assert(strstr(error_message(r) ?: "", "NUL"), "%s", json_object_to_json_string(r));
	json_object_put(r);
	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\\u0000x\","
	        "\"arguments\":{}}}");
	cr_assert(strstr(error_message(r) ?: "", "without NUL"), "%s", json_object_to_json_string(r));
	json_object_put(r);
}

Test(mcp_names, a_large_id_is_echoed_exactly)
{
	struct json_object *r = rpc("{\"jsonrpc\":\"2.0\",\"id\":9223372036854775807,\"method\":\"ping\"}");
	cr_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(r, "id"), JSON_C_TO_STRING_PLAIN),
	                 "9223372036854775807");
	json_object_put(r);
	r = rpc("{\"jsonrpc\":\"2.0\",\"id\":99999999999999999999,\"method\":\"ping\"}");
	cr_assert(strstr(error_message(r) ?: "", "64-bit range"), "%s", json_object_to_json_string(r));
	json_object_put(r);
}

Test(mcp_names, batches_only_for_2025_03_26_and_at_most_32)
{
	struct json_object *one = json_tokener_parse("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
	cr_assert_null(mcp_batch_refusal(one, NULL), "no version: 2025-03-26 is assumed");
	cr_assert_null(mcp_batch_refusal(one, "2025-03-26"));
	for (const char *v = "2025-06-18";; v = "2025-11-25") {
		struct json_object *e = mcp_batch_refusal(one, v);
		cr_assert_not_null(e, "%s allows no batches", v);
		cr_assert(strstr(error_message(e), "not part of MCP"), "%s", error_message(e));
		json_object_put(e);
		if (!strcmp(v, "2025-11-25"))
			break;
	}
	struct json_object *single = json_tokener_parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	cr_assert_null(mcp_batch_refusal(single, "2025-11-25"), "one message is no batch");
	json_object_put(single);
	json_object_put(one);

	char big[8192];
	for (int count = MCP_BATCH_MAX + 1; count >= MCP_BATCH_MAX; count--) {
		snprintf(big, sizeof(big), "[");
		for (int i = 0; i < count; i++)
			snprintf(big + strlen(big), sizeof(big) - strlen(big),
			         "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}", i ? "," : "", i);
		strcat(big, "]");
		struct json_object *r = rpc(big);
		if (count > MCP_BATCH_MAX) {
			cr_assert(strstr(error_message(r) ?: "", "at most 32 messages and this one holds 33"), "%s",
			          json_object_to_json_string(r));
		} else {
			cr_assert(json_object_is_type(r, json_type_array), "32 are answered: %s",
			          json_object_to_json_string(r));
			cr_assert_eq(json_object_array_length(r), MCP_BATCH_MAX);
		}
		json_object_put(r);
	}
}

/* ---- the connection guard ---- */

Test(mcp_guard, deadline_rule)
{
	struct mcp_conn_limits lim = {
	    .header_deadline_ms = 10000, .body_grace_ms = 10000, .body_min_bytes_per_s = 16384, .max_fresh_tcp = 64};
	cr_assert_not(mcp_conn_overdue(0, 9999, 0, &lim));
	cr_assert(mcp_conn_overdue(0, 10001, 0, &lim), "headers late");
	cr_assert_not(mcp_conn_overdue(1, 10000, 0, &lim), "a body's grace");
	cr_assert(mcp_conn_overdue(1, 12000, 16384, &lim), "2 s after the grace, 1 s worth of bytes");
	cr_assert_not(mcp_conn_overdue(1, 12000, 2 * 16384, &lim));
	cr_assert_not(mcp_conn_overdue(1, 60000, 50 * 16384, &lim));
}

static struct mcp_server *gserver;
static unsigned gport;

static void gsetup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct mcp_server_options o = {
	    .host = "127.0.0.1",
	    .name = "t",
	    .version = "1",
	    .bearer_token = "tok",
	    .conn_limits = {
	        .header_deadline_ms = 600, .body_grace_ms = 600, .body_min_bytes_per_s = 100000, .max_fresh_tcp = 8}};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, stools, 1, NULL, &gserver, &err), 0);
	cr_assert_eq(mcp_server_listen(gserver, &err), 0, "%s", err ? err->message : "");
	gport = mcp_server_port(gserver);
}

static void gteardown(void)
{
	mcp_server_free(gserver);
	gserver = NULL;
	curl_global_cleanup();
}

TestSuite(mcp_guard_http, .init = gsetup, .fini = gteardown, .timeout = 30);

static int connect_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gport)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

/* Waits up to ms for fd to be closed by the peer: 1 when it was. */
static int closed_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (poll(&p, 1, ms) == 1) {
		char buf[512];
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		if (n <= 0)
			return 1;
	}
	return 0;
}

static long ping_status(void)
{
	CURL *c = curl_easy_init();
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", gport);
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	h = curl_slist_append(h, "Authorization: Bearer tok");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, fwrite);
	FILE *devnull = fopen("/dev/null", "w");
	curl_easy_setopt(c, CURLOPT_WRITEDATA, devnull);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	long status = 0;
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	fclose(devnull);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

Test(mcp_guard_http, a_trickling_header_is_cut_at_the_deadline)
{
	int fd = connect_port();
	cr_assert_eq(send(fd, "POST /mcp HTTP/1.1\r\n", 20, MSG_NOSIGNAL), 20);
	/* One more header byte now and then: never idle, never complete. */
	int cut = 0;
	for (int i = 0; i < 20 && !cut; i++) {
		usleep(150 * 1000);
		cut = send(fd, "X", 1, MSG_NOSIGNAL) < 0 || closed_within(fd, 0);
	}
	cr_assert(cut || closed_within(fd, 2000), "the connection was still open after 3 s (deadline 0.6 s)");
	close(fd);
	cr_assert_eq(ping_status(), 200, "a real client is served");
}

Test(mcp_guard_http, a_body_below_the_minimum_rate_is_cut)
{
	int fd = connect_port();
	const char *head = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer tok\r\n"
	                   "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
	cr_assert_eq(send(fd, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
	int cut = 0;
	for (int i = 0; i < 30 && !cut; i++) {
		usleep(100 * 1000);
		cut = send(fd, "{", 1, MSG_NOSIGNAL) < 0 || closed_within(fd, 0);
	}
	cr_assert(cut || closed_within(fd, 2000), "a 10 bytes/s body kept its connection");
	close(fd);
}

Test(mcp_guard_http, idle_connections_past_the_cap_do_not_keep_a_client_out)
{
	int fds[40];
	for (int i = 0; i < 40; i++)
		fds[i] = connect_port();
	/* 40 idle connections against a cap of 8 fresh ones: the oldest go as
	 * the server accepts the others (before their 0.6 s deadline). */
	int closed = 0, done[40] = {0};
	for (int round = 0; round < 50 && closed < 32; round++) {
		usleep(10 * 1000);
		for (int i = 0; i < 40; i++)
			if (!done[i] && closed_within(fds[i], 0))
				closed += done[i] = 1;
	}
	cr_assert_geq(closed, 32, "only %d of 40 idle connections were pushed out within 0.5 s (cap 8)", closed);
	cr_assert_eq(ping_status(), 200, "a client that sends its request at once is served");
	for (int i = 0; i < 40; i++)
		close(fds[i]);
}

Test(mcp_guard_http, a_refused_request_closes_its_connection)
{
	int fd = connect_port();
	const char *req = "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
	                  "Content-Length: 2\r\n\r\n{}";
	cr_assert_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	char buf[2048];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert(strstr(buf, "401"), "%s", buf);
	cr_assert(strcasestr(buf, "Connection: close"), "%s", buf);
	cr_assert(closed_within(fd, 2000), "the server keeps a refused connection open");
	close(fd);
}
