/* test_ui_server.c: the owner page's request handling (ui_handle, issue 26)
 * attacked without HTTP: no session gives the login hint and no data on any
 * path, the login code only on the Unix socket and only once, a POST needs
 * the same origin and the session's CSRF token or changes nothing, every
 * answer carries the security headers, and a path with markup in it is shown
 * as text. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "mcp/mcp.h"
#include "store/store.h"
#include "ui/ui.h"

static char root[64], db[128];
static struct store *store;
static struct config cfg;
static struct ui *page;
static char approval_id[64];

#define HOST "127.0.0.1:18788"
#define EVIL_PATH "/tmp/<script>alert(1)</script>\"'"

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/c2s-ui-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(db, sizeof(db), "%s/reg.sqlite", root);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0);
	cfg = (struct config){.host = "127.0.0.1", .port = 18788, .ui_code_ttl_ms = 60000, .data_root = root};
	struct approval_record want = {.id = "approval_aaaaaaaaaaaaaaaaaaaa",
	                               .host_path = EVIL_PATH,
	                               .real_path = EVIL_PATH,
	                               .mode = "clone",
	                               .requested_by = "mcp",
	                               .requested_at_ms = 1000},
	                       got = {0};
	int created = 0;
	cr_assert_eq(store_approval_request(store, &want, &got, &created, &err), 0, "%s", err ? err->message : "");
	snprintf(approval_id, sizeof(approval_id), "%s", got.id);
	approval_record_clear(&got);
	page = ui_new(&(struct ui_deps){.cfg = &cfg, .store = store});
}

static void teardown(void)
{
	ui_free(page);
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(ui_server, .init = setup, .fini = teardown);

struct answer {
	struct mcp_page_reply reply;
	char *body; /* NUL-terminated copy */
};

static void answer_free(struct answer *a)
{
	free(a->reply.body);
	free(a->body);
}

static const char *header(const struct answer *a, const char *name)
{
	for (const char *const *h = a->reply.headers; h && h[0]; h += 2)
		if (!strcmp(h[0], name))
			return h[1];
	return NULL;
}

/* One request; fields are "name", "value" pairs, NULL-terminated. */
static struct answer ask(const char *method, const char *path, int is_unix, const char *cookie, const char *origin,
                         const char *const *query, const char *const *form)
{
	struct mcp_page_field q[8] = {{0}}, f[8] = {{0}};
	size_t nq = 0, nf = 0;
	for (; query && query[2 * nq]; nq++)
		q[nq] = (struct mcp_page_field){query[2 * nq], query[2 * nq + 1]};
	for (; form && form[2 * nf]; nf++)
		f[nf] = (struct mcp_page_field){form[2 * nf], form[2 * nf + 1]};
	struct mcp_page_request req = {.method = method,
	                               .path = path,
	                               .is_unix = is_unix,
	                               .host = HOST,
	                               .origin = origin,
	                               .cookie = cookie,
	                               .query = q,
	                               .n_query = nq,
	                               .form = f,
	                               .n_form = nf};
	struct answer a = {0};
	ui_handle(page, &req, &a.reply);
	a.body = strndup(a.reply.body ? a.reply.body : "", a.reply.body_len);
	const char *csp = header(&a, "Content-Security-Policy");
	cr_assert(csp && strstr(csp, "default-src 'self'") && strstr(csp, "frame-ancestors 'none'"),
	          "%s %s: every answer carries the CSP", method, path);
	cr_assert(!strstr(a.body, "<script>") && !strstr(a.body, " style="), "%s %s: no inline script or style", method,
	          path);
	return a;
}

/* A login through the Unix socket's code: the cookie header and the CSRF
 * token of the new session. */
static void login(char *cookie, size_t size, char *csrf, size_t csrf_size)
{
	struct answer c = ask("POST", "/ui/code", 1, NULL, NULL, NULL, NULL);
	cr_assert_eq(c.reply.status, 200);
	char code[64];
	cr_assert_eq(sscanf(c.body, "{\"code\":\"%63[^\"]\"", code), 1, "%s", c.body);
	answer_free(&c);
	const char *q[] = {"code", code, NULL};
	struct answer l = ask("GET", "/ui/login", 0, NULL, NULL, q, NULL);
	cr_assert_eq(l.reply.status, 303);
	cr_assert_str_eq(l.reply.location, "/ui/");
	cr_assert(strstr(l.reply.set_cookie, "HttpOnly") && strstr(l.reply.set_cookie, "SameSite=Strict") &&
	          strstr(l.reply.set_cookie, "Path=/ui"));
	snprintf(cookie, size, "%.*s", (int)strcspn(l.reply.set_cookie, ";"), l.reply.set_cookie);
	answer_free(&l);
	struct answer p = ask("GET", "/ui/approvals", 0, cookie, NULL, NULL, NULL);
	cr_assert_eq(p.reply.status, 200);
	const char *v = strstr(p.body, "name=\"csrf\" value=\"");
	cr_assert_not_null(v);
	snprintf(csrf, csrf_size, "%.*s", UI_SECRET_CHARS, v + strlen("name=\"csrf\" value=\""));
	answer_free(&p);
}

Test(ui_server, without_a_session_every_path_gives_the_login_hint_and_no_data)
{
	static const char *const paths[] = {"/ui/",          "/ui/approvals",   "/ui/app.js",  "/ui/style.css",
	                                    "/ui/sandboxes", "/ui/nonexistent", "/ui/exports", "/ui/activity"};
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct answer a =
		    ask("GET", paths[i], 0, "c2s_ui=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL, NULL, NULL);
		cr_assert_eq(a.reply.status, 401, "%s", paths[i]);
		cr_assert(strstr(a.body, "chat2sbx ui"), "%s: says how to log in", paths[i]);
		cr_assert(!strstr(a.body, "approval_") && !strstr(a.body, "alert"), "%s: no data", paths[i]);
		answer_free(&a);
	}
	const char *form[] = {"csrf", "x", NULL};
	char path[128];
	snprintf(path, sizeof(path), "/ui/approvals/%s/reject", approval_id);
	struct answer a = ask("POST", path, 0, NULL, "http://" HOST, NULL, form);
	cr_assert_eq(a.reply.status, 401);
	answer_free(&a);
	struct approval_record r = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_approval_get(store, approval_id, &r, &err), 0);
	cr_assert_eq(r.status, APPROVAL_PENDING, "a POST without a session changed nothing");
	approval_record_clear(&r);
}

Test(ui_server, the_login_code_comes_only_from_the_unix_socket_and_works_once)
{
	struct answer tcp = ask("POST", "/ui/code", 0, NULL, NULL, NULL, NULL);
	cr_assert_eq(tcp.reply.status, 404, "no code over TCP, where every local user can connect");
	cr_assert(!strstr(tcp.body, "code\""));
	answer_free(&tcp);
	struct answer get = ask("GET", "/ui/code", 1, NULL, NULL, NULL, NULL);
	cr_assert_eq(get.reply.status, 405);
	answer_free(&get);
	struct answer c = ask("POST", "/ui/code", 1, NULL, NULL, NULL, NULL);
	char code[64];
	cr_assert_eq(sscanf(c.body, "{\"code\":\"%63[^\"]\"", code), 1);
	cr_assert(strstr(c.body, "\"expires_in_ms\":60000"));
	answer_free(&c);
	const char *q[] = {"code", code, NULL};
	struct answer first = ask("GET", "/ui/login", 0, NULL, NULL, q, NULL);
	cr_assert_eq(first.reply.status, 303);
	answer_free(&first);
	struct answer again = ask("GET", "/ui/login", 0, NULL, NULL, q, NULL);
	cr_assert_eq(again.reply.status, 403, "a used code is refused");
	cr_assert(strstr(again.body, "chat2sbx ui") && !again.reply.set_cookie[0]);
	answer_free(&again);
	const char *forged[] = {"code", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL};
	struct answer f = ask("GET", "/ui/login", 0, NULL, NULL, forged, NULL);
	cr_assert_eq(f.reply.status, 403);
	answer_free(&f);
}

Test(ui_server, a_path_with_markup_is_shown_as_text)
{
	char cookie[128], csrf[64];
	login(cookie, sizeof(cookie), csrf, sizeof(csrf));
	struct answer a = ask("GET", "/ui/approvals", 0, cookie, NULL, NULL, NULL);
	cr_assert(strstr(a.body, "/tmp/&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;"), "%s", a.body);
	answer_free(&a);
	char path[128];
	snprintf(path, sizeof(path), "/ui/approvals/%s/approve", approval_id);
	struct answer c = ask("GET", path, 0, cookie, NULL, NULL, NULL);
	cr_assert_eq(c.reply.status, 200);
	cr_assert(strstr(c.body, "data-action=\"confirm\""), "the confirmation has its button");
	cr_assert(strstr(c.body, "&lt;script&gt;"), "and shows the path again, as text");
	answer_free(&c);
}

Test(ui_server, a_post_needs_the_same_origin_and_the_csrf_token)
{
	char cookie[128], csrf[64];
	login(cookie, sizeof(cookie), csrf, sizeof(csrf));
	char path[128];
	snprintf(path, sizeof(path), "/ui/approvals/%s/reject", approval_id);
	const char *good[] = {"csrf", csrf, NULL};
	const char *wrong[] = {"csrf", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", NULL};
	struct {
		const char *origin;
		const char *const *form;
	} refused[] = {
	    {NULL, good},                     /* no Origin */
	    {"null", good},                   /* an opaque origin */
	    {"http://127.0.0.1:9999", good},  /* another port is another origin */
	    {"http://localhost:18788", good}, /* another name */
	    {"https://" HOST, good},          /* another scheme */
	    {"http://" HOST, wrong},          /* not this session's token */
	    {"http://" HOST, NULL},           /* no token */
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		struct answer a = ask("POST", path, 0, cookie, refused[i].origin, NULL, refused[i].form);
		cr_assert_eq(a.reply.status, 403, "case %zu", i);
		answer_free(&a);
	}
	struct approval_record r = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_approval_get(store, approval_id, &r, &err), 0);
	cr_assert_eq(r.status, APPROVAL_PENDING, "no refused POST changed the approval");
	approval_record_clear(&r);

	struct answer ok = ask("POST", path, 0, cookie, "http://" HOST, NULL, good);
	cr_assert_eq(ok.reply.status, 200, "%s", ok.body);
	cr_assert(strstr(ok.body, "result ok"));
	answer_free(&ok);
	cr_assert_eq(store_approval_get(store, approval_id, &r, &err), 0);
	cr_assert_eq(r.status, APPROVAL_REJECTED, "the same stored decision as the CLI's");
	approval_record_clear(&r);
	struct answer twice = ask("POST", path, 0, cookie, "http://" HOST, NULL, good);
	cr_assert_eq(twice.reply.status, 409, "a decided approval is not decided again");
	answer_free(&twice);
}

Test(ui_server, logging_out_ends_the_session)
{
	char cookie[128], csrf[64];
	login(cookie, sizeof(cookie), csrf, sizeof(csrf));
	const char *form[] = {"csrf", csrf, NULL};
	struct answer out = ask("POST", "/ui/logout", 0, cookie, "http://" HOST, NULL, form);
	cr_assert_eq(out.reply.status, 303);
	cr_assert(strstr(out.reply.set_cookie, "Max-Age=0"));
	answer_free(&out);
	struct answer after = ask("GET", "/ui/", 0, cookie, NULL, NULL, NULL);
	cr_assert_eq(after.reply.status, 401);
	answer_free(&after);
}

Test(ui_server, refusals_made_before_the_page_carry_its_headers)
{
	struct mcp_page_request req = {.method = "GET",
	                               .path = "/ui/",
	                               .host = "evil.example",
	                               .refusal_status = 403,
	                               .refusal = "forbidden: Host 'evil.example' is not a loopback name"};
	struct mcp_page_reply reply = {0};
	ui_handle(page, &req, &reply);
	cr_assert_eq(reply.status, 403);
	cr_assert_not_null(reply.headers);
	cr_assert_str_eq(reply.headers[0], "Content-Security-Policy");
	cr_assert(strstr(reply.body, "evil.example"));
	free(reply.body);
}
