/* test_mcp_pages.c: the owner page's paths over real HTTP (mcp/pages.c,
 * issue 26): /ui requests reach the registered handler without the bearer
 * token /mcp needs, with the query and a form's fields decoded; mcp/'s own
 * refusals on those paths (a foreign Host, a body that is not a form, one
 * too large) are worded by the handler, so they carry its headers; other
 * paths never reach it. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "mcp/mcp.h"
#include "mcp_http_fixture.h"

static int calls;

/* Echoes what it was handed, one "name=value" line each. */
static void echo_page(void *ctx, const struct mcp_page_request *req, struct mcp_page_reply *reply)
{
	(void)ctx;
	calls++;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	fprintf(f, "method=%s\npath=%s\nunix=%d\nrefusal=%u %s\n", req->method, req->path, req->is_unix,
	        req->refusal_status, req->refusal ? req->refusal : "");
	for (size_t i = 0; i < req->n_query; i++)
		fprintf(f, "q.%s=%s\n", req->query[i].name, req->query[i].value);
	for (size_t i = 0; i < req->n_form; i++)
		fprintf(f, "f.%s=%s\n", req->form[i].name, req->form[i].value);
	fclose(f);
	static const char *const headers[] = {"Content-Security-Policy", "default-src 'self'", NULL};
	reply->status = req->refusal_status ? req->refusal_status : 200;
	reply->content_type = "text/plain";
	reply->body = text;
	reply->body_len = len;
	reply->headers = headers;
	snprintf(reply->set_cookie, sizeof(reply->set_cookie), "k=v; Path=/ui");
}

static void setup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct mcp_server_options o = {.host = "127.0.0.1",
	                               .name = "chat2sbx-test",
	                               .version = "0.0.1",
	                               .max_body_bytes = 1024 * 1024,
	                               .max_sessions = 8,
	                               .session_idle_ms = 60000,
	                               .bearer_token = "sekrit"};
	struct cp_error *err = NULL;
	cr_assert_eq(mcp_server_new(&o, htools, 2, NULL, &hserver, &err), 0);
	mcp_server_set_pages(hserver, echo_page, NULL);
	cr_assert_eq(mcp_server_listen(hserver, &err), 0, "%s", err ? err->message : "");
	snprintf(base_url, sizeof(base_url), "http://127.0.0.1:%u", mcp_server_port(hserver));
	calls = 0;
}

static void teardown(void)
{
	mcp_server_stop(hserver);
	mcp_server_free(hserver);
	curl_global_cleanup();
}

TestSuite(mcp_pages, .init = setup, .fini = teardown);

Test(mcp_pages, a_page_path_reaches_the_handler_without_the_token_with_its_query)
{
	struct hreply r = {0};
	hreq(&r, "GET", "/ui/sandboxes/x?a=1&b=two%20words", NULL, NULL);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "path=/ui/sandboxes/x\n") && strstr(r.body, "q.a=1\n") &&
	              strstr(r.body, "q.b=two words\n") && strstr(r.body, "unix=0\n"),
	          "%s", r.body);
	free_reply(&r);
	hreq(&r, "GET", "/ui", NULL, NULL);
	cr_assert_eq(r.status, 200);
	free_reply(&r);
	hreq(&r, "GET", "/uix", NULL, NULL);
	cr_assert_neq(r.status, 200, "/uix is not the page");
	free_reply(&r);
	hreq(&r, "POST", "/mcp", INIT_BODY, NULL);
	cr_assert_eq(r.status, 401, "/mcp still needs the token");
	free_reply(&r);
	cr_assert_eq(calls, 2);
}

Test(mcp_pages, a_form_posts_its_fields_decoded)
{
	static const char *const h[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
	struct hreply r = {0};
	hreq(&r, "POST", "/ui/approvals/a/approve", "csrf=a%2Bb&force=on&x=y+z&empty=&bare", h);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_assert(strstr(r.body, "f.csrf=a+b\n") && strstr(r.body, "f.force=on\n") && strstr(r.body, "f.x=y z\n") &&
	              strstr(r.body, "f.empty=\n") && strstr(r.body, "f.bare=\n") && strstr(r.body, "refusal=0 \n"),
	          "%s", r.body);
	free_reply(&r);
}

Test(mcp_pages, mcp_refusals_on_page_paths_are_worded_by_the_page)
{
	static const char *const json[] = {"Content-Type: application/json", NULL};
	struct hreply r = {0};
	hreq(&r, "POST", "/ui/logout", "{\"a\":1}", json);
	cr_assert_eq(r.status, 415, "%s", r.body);
	cr_assert(strstr(r.body, "refusal=415"));
	free_reply(&r);

	static const char *const host[] = {"Host: evil.example", NULL};
	hreq(&r, "GET", "/ui/", NULL, host);
	cr_assert_eq(r.status, 403);
	cr_assert(strstr(r.body, "refusal=403 forbidden: Host 'evil.example'"), "%s", r.body);
	free_reply(&r);

	static const char *const origin[] = {"Origin: http://evil.example", NULL};
	hreq(&r, "GET", "/ui/", NULL, origin);
	cr_assert_eq(r.status, 403);
	cr_assert(strstr(r.body, "refusal=403 forbidden: Origin"), "%s", r.body);
	free_reply(&r);

	static const char *const form[] = {"Content-Type: application/x-www-form-urlencoded", NULL};
	size_t big = MCP_PAGE_BODY_MAX + 1;
	char *body = malloc(big + 1);
	memset(body, 'a', big);
	body[big] = '\0';
	hreq(&r, "POST", "/ui/x", body, form);
	cr_assert_eq(r.status, 413, "%s", r.body);
	cr_assert(strstr(r.body, "refusal=413"));
	free_reply(&r);
	hreq_ex(&r, "POST", "/ui/x", body, form, 1); /* chunked: no Content-Length, refused at the end */
	cr_assert_eq(r.status, 413, "%s", r.body);
	free_reply(&r);
	free(body);
}

Test(mcp_pages, urls_name_the_page_for_a_client_of_this_machine)
{
	char buf[200];
	cr_assert_str_eq(mcp_page_url("127.0.0.1", 18788, "#/approvals/approval_x", buf, sizeof(buf)),
	                 "http://127.0.0.1:18788/ui/#/approvals/approval_x");
	cr_assert_str_eq(mcp_page_url("::1", 8, NULL, buf, sizeof(buf)), "http://[::1]:8/ui/");
	cr_assert_str_eq(mcp_page_url("0.0.0.0", 8, "login", buf, sizeof(buf)), "http://127.0.0.1:8/ui/login");
	cr_assert(mcp_page_path("/ui") && mcp_page_path("/ui/") && mcp_page_path("/ui/a"));
	cr_assert(!mcp_page_path("/uix") && !mcp_page_path("/mcp") && !mcp_page_path(NULL) && !mcp_page_path("/u"));
}
