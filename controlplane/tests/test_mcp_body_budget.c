/* test_mcp_body_budget.c: the hardening of the HTTP transport (security
 * review, defects 2 and 4): the budget of request bodies held at once and
 * the loopback-peer rule, as pure functions; the 503 over HTTP. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "mcp/internal.h"

Test(mcp_body_budget, reserves_up_to_the_limit_and_releases)
{
	struct mcp_body_budget b;
	mcp_body_budget_init(&b, 100);
	cr_expect_eq(mcp_body_budget_reserve(&b, 60), 0);
	cr_expect_eq(mcp_body_budget_reserve(&b, 40), 0);
	cr_expect_eq(mcp_body_budget_used(&b), 100);
	cr_expect_eq(mcp_body_budget_reserve(&b, 1), -1, "past the limit");
	cr_expect_eq(mcp_body_budget_used(&b), 100, "a refused reservation takes nothing");
	mcp_body_budget_release(&b, 60);
	cr_expect_eq(mcp_body_budget_used(&b), 40);
	cr_expect_eq(mcp_body_budget_reserve(&b, 61), -1);
	cr_expect_eq(mcp_body_budget_reserve(&b, 60), 0);
	cr_expect_eq(mcp_body_budget_reserve(&b, (size_t)-1), -1, "no overflow");
	mcp_body_budget_release(&b, 100);
	cr_expect_eq(mcp_body_budget_used(&b), 0);
	mcp_body_budget_destroy(&b);
}

Test(mcp_body_budget, advises_a_trim_after_large_releases)
{
	struct mcp_body_budget b;
	mcp_body_budget_init(&b, MCP_BODY_BUDGET_BYTES);
	size_t mib = 1024 * 1024;
	cr_assert_eq(mcp_body_budget_reserve(&b, 40 * mib), 0);
	cr_expect_eq(mcp_body_budget_release(&b, 1 * mib), 0, "small releases do not trim");
	cr_expect_eq(mcp_body_budget_release(&b, 19 * mib), 1, "16 MiB released: trim");
	cr_expect_eq(mcp_body_budget_release(&b, 1 * mib), 0, "counting starts again");
	cr_expect_eq(mcp_body_budget_release(&b, 19 * mib), 1);
	cr_expect_eq(mcp_body_budget_used(&b), 0);
	mcp_body_budget_destroy(&b);
}

Test(mcp_body_budget, the_budget_is_64_mib)
{
	cr_expect_eq(MCP_BODY_BUDGET_BYTES, (size_t)64 * 1024 * 1024);
}

static int v4(const char *text)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	cr_assert_eq(inet_pton(AF_INET, text, &a.sin_addr), 1);
	return mcp_peer_is_loopback((struct sockaddr *)&a, sizeof(a));
}

static int v6(const char *text)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6};
	cr_assert_eq(inet_pton(AF_INET6, text, &a.sin6_addr), 1);
	return mcp_peer_is_loopback((struct sockaddr *)&a, sizeof(a));
}

Test(mcp_peer, only_loopback_peers_are_served)
{
	cr_expect(v4("127.0.0.1"));
	cr_expect(v4("127.1.2.3"));
	cr_expect(v6("::1"));
	cr_expect(v6("::ffff:127.0.0.1"));
	/* A sandbox reaches the host through its bridge gateway. */
	cr_expect_not(v4("172.17.0.1"));
	cr_expect_not(v4("172.18.0.5"));
	cr_expect_not(v4("10.0.0.1"));
	cr_expect_not(v4("0.0.0.0"));
	cr_expect_not(v4("128.0.0.1"));
	cr_expect_not(v6("::"));
	cr_expect_not(v6("fe80::1"));
	cr_expect_not(v6("::ffff:172.17.0.1"));
	cr_expect_not(mcp_peer_is_loopback(NULL, 0));
	struct sockaddr_in a = {.sin_family = AF_INET};
	cr_expect_not(mcp_peer_is_loopback((struct sockaddr *)&a, 2), "a short address is not trusted");
}

/* ---- over HTTP: a spent budget answers 503 + Retry-After, unbuffered ---- */

#include <curl/curl.h>
#include <stdlib.h>

#include "base/log.h"

struct reply {
	long status;
	char body[4096];
	size_t len;
	int retry_after_1;
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t k = size * n;
	size_t room = sizeof(r->body) - 1 - r->len;
	memcpy(r->body + r->len, data, k < room ? k : room);
	r->len += k < room ? k : room;
	r->body[r->len] = '\0';
	return k;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	if (size * n >= 14 && strncasecmp(data, "Retry-After: 1", 14) == 0)
		r->retry_after_1 = 1;
	return size * n;
}

static void post(unsigned port, const char *body, struct reply *r)
{
	memset(r, 0, sizeof(*r));
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/mcp", port);
	CURL *c = curl_easy_init();
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	h = curl_slist_append(h, "Accept: application/json, text/event-stream");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	cr_assert_eq(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

Test(mcp_body_budget, a_spent_budget_is_503_with_retry_after, .timeout = 20)
{
	log_set_level(LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct mcp_server_options o = {.host = "127.0.0.1",
	                               .port = 0,
	                               .name = "chat2sbx-test",
	                               .version = "0.0.1",
	                               .max_body_bytes = 1024 * 1024,
	                               .max_sessions = 8,
	                               .session_idle_ms = 60000};
	struct mcp_server *server = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, NULL, 0, NULL, &server, &err), 0);
	cr_assert_eq(mcp_server_listen(server, &err), 0, "%s", err ? err->message : "");
	const char *ping = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
	struct reply r;

	/* Other connections hold all but 10 bytes of the budget. */
	cr_assert_eq(mcp_body_budget_reserve(&server->body_budget, MCP_BODY_BUDGET_BYTES - 10), 0);
	post(mcp_server_port(server), ping, &r);
	cr_expect_eq(r.status, 503, "%s", r.body);
	cr_expect(r.retry_after_1, "Retry-After: 1 is sent");
	cr_expect(strstr(r.body, "\"jsonrpc\"") && strstr(r.body, "retry"), "%s", r.body);
	cr_expect_eq(mcp_body_budget_used(&server->body_budget), MCP_BODY_BUDGET_BYTES - 10,
	             "the refused request holds nothing");

	/* Once they are done, the same request is served and gives its share back. */
	mcp_body_budget_release(&server->body_budget, MCP_BODY_BUDGET_BYTES - 10);
	post(mcp_server_port(server), ping, &r);
	cr_expect_eq(r.status, 200, "%s", r.body);
	cr_expect_eq(mcp_body_budget_used(&server->body_budget), 0);

	mcp_server_stop(server);
	mcp_server_free(server);
	curl_global_cleanup();
}
