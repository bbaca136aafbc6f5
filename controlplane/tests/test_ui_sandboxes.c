/* test_ui_sandboxes.c: the sandboxes on the owner's page (issue 26). What a
 * sandbox wrote (a session's command and output, a status, a host path)
 * comes out as text, never markup; a session's output is cleaned of
 * control characters, terminal escapes and invalid UTF-8; and Destroy,
 * driven through ui_handle with a real session, CSRF token and Origin
 * against the fake engine (tests/fake_engine.c, whose helpers never
 * answer, so a clone's save always fails): without force=on nothing is
 * forced and the failed save removes nothing; force=on without
 * confirm2=yes only asks again; both remove it, with an audit row. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "lifecycle_fixture.h"
#include "ui/ui_internal.h"

#define HOSTILE "<script>alert(1)</script>\"'&"

/* ---- the detail page's writing, on plain data ---- */

static struct ui page = {0};
static struct mcp_page_request in = {.method = "GET", .path = "/ui/sandboxes/x"};
static struct mcp_page_reply out;

static struct ui_req req(void)
{
	struct ui_req r = {.ui = &page, .in = &in, .out = &out, .now_ms = 1700000000000};
	return r;
}

Test(ui_sandbox_render, everything_a_sandbox_wrote_is_shown_as_text)
{
	struct ui_bash_session b = {.id = "bash_" HOSTILE,
	                            .command = "echo " HOSTILE,
	                            .status = "exited" HOSTILE,
	                            .reason = "killed " HOSTILE,
	                            .has_exit = 1,
	                            .exit_code = 3,
	                            .started_ms = 1700000000000 - 5000,
	                            .total_bytes = 10000,
	                            .output = "out " HOSTILE "\n</pre><img src=x onerror=alert(2)>"};
	struct ui_bash_session b2 = {.id = "bash_2", .status = "running", .output_error = "no log " HOSTILE};
	struct ui_bash_session sessions[2] = {b, b2};
	struct ui_preview prev = {.container_port = 8000};
	snprintf(prev.url, sizeof(prev.url), "http://127.0.0.1:41234/");
	struct ui_sandbox_view v = {.s = {.id = "sbx_" HOSTILE,
	                                  .workspace_id = "ws_" HOSTILE,
	                                  .status = SANDBOX_RUNNING,
	                                  .runtime = "runc" HOSTILE,
	                                  .failure_reason = "why " HOSTILE,
	                                  .memory_bytes = 512 << 20,
	                                  .created_at_ms = 1},
	                            .ws_mode = "clone",
	                            .ws_host_path = "/home/me/" HOSTILE,
	                            .expiry_at_ms = 1700000000000 + 3600000,
	                            .idle_timeout_ms = 86400000,
	                            .paused = 1,
	                            .unsaved = 1,
	                            .sessions = sessions,
	                            .n_sessions = 2,
	                            .sessions_listed = 2,
	                            .previews = &prev,
	                            .n_previews = 1};
	snprintf(v.paused_reason, sizeof(v.paused_reason), "disk " HOSTILE);
	struct ui_req r = req();
	ui_sandbox_view_render(&r, &v);
	cr_assert_not_null(r.html);
	cr_expect_null(strstr(r.html, "<script"), "%s", r.html);
	cr_expect_null(strstr(r.html, "<img"), "%s", r.html);
	cr_expect_null(strstr(r.html, "\"'"), "no raw quote from a value: %s", r.html);
	cr_expect(strstr(r.html, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"), "%s", r.html);
	cr_expect(strstr(r.html, "/home/me/&lt;script&gt;"), "the host path, escaped: %s", r.html);
	cr_expect(strstr(r.html, "&lt;/pre&gt;&lt;img src=x onerror=alert(2)&gt;"), "the output: %s", r.html);
	/* The contract's selectors. */
	cr_expect(strstr(r.html, "<section class=\"session\" data-session=\"bash_&lt;script&gt;"), "%s", r.html);
	cr_expect(strstr(r.html, "<pre class=\"output\" data-key=\"bash_&lt;script&gt;"), "%s", r.html);
	cr_expect(strstr(r.html, "class=\"status\""), "%s", r.html);
	cr_expect(strstr(r.html, "<a data-preview=\"8000\" href=\"http://127.0.0.1:41234/\" target=\"_blank\" "
	                         "rel=\"noopener noreferrer\">"),
	          "%s", r.html);
	cr_expect(strstr(r.html, "data-action=\"destroy\" href=\"/ui/sandboxes/sbx_&lt;script&gt;"), "%s", r.html);
	cr_expect(strstr(r.html, "(the last 4 KiB are shown)"), "%s", r.html);
	cr_expect(strstr(r.html, "data-paused=\"1\""), "%s", r.html);
	free(r.html);
}

Test(ui_sandbox_render, a_stopped_sandbox_says_why_it_shows_no_session)
{
	struct ui_sandbox_view v = {.s = {.id = "sbx_a", .workspace_id = "ws_a", .status = SANDBOX_FAILED},
	                            .sessions_note = "No session is shown: the sandbox is failed"};
	struct ui_req r = req();
	ui_sandbox_view_render(&r, &v);
	cr_expect(strstr(r.html, "sessions-note\">No session is shown: the sandbox is failed"), "%s", r.html);
	cr_expect_null(strstr(r.html, "class=\"session\""), "%s", r.html);
	free(r.html);
}

/* ---- a session's output as text fit to show ---- */

Test(ui_output, control_bytes_escapes_and_invalid_utf8_are_cleaned)
{
	const char raw[] = "a\x1b[31mred\x1b[0m\r\n\tb\x01\x7f\xff\xc3\xa9\xe2\x80\xae!";
	char *s = ui_output_clean((const unsigned char *)raw, sizeof(raw) - 1, 0);
	/* ESC sequences gone, CR dropped, \x01 \x7f \xff and U+202E (bidi
	 * override) each one U+FFFD; é, newline and tab kept. */
	cr_expect_str_eq(s, "ared\n\tb\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9\xef\xbf\xbd!");
	free(s);
	/* A NUL inside is shown, not an end. */
	const char nul[] = {'x', '\0', 'y'};
	s = ui_output_clean((const unsigned char *)nul, 3, 0);
	cr_expect_str_eq(s, "x\xef\xbf\xbdy");
	free(s);
}

Test(ui_output, a_tail_drops_its_cut_first_line_or_half_character)
{
	const char raw[] = "ne 12\nline 13\n";
	char *s = ui_output_clean((const unsigned char *)raw, sizeof(raw) - 1, 1);
	cr_expect_str_eq(s, "line 13\n");
	free(s);
	const char half[] = "\xa9\xa9tail"; /* cut inside a character, no newline */
	s = ui_output_clean((const unsigned char *)half, sizeof(half) - 1, 1);
	cr_expect_str_eq(s, "tail");
	free(s);
	s = ui_output_clean((const unsigned char *)"", 0, 1);
	cr_expect_str_eq(s, "");
	free(s);
}

/* ---- Destroy through ui_handle ---- */

#define SBX "sbx_aaaaaaaaaaaaaaaaaaaa"

static const struct fake_route routes[] = {
    {"GET", "/version", {.fixture = "version.http"}},
    {"GET", "/containers/" SBX "/json", {.fixture = "inspect_running.http"}},
    {"POST", "/attach", {.fixture = "attach_upgrade.http"}}, /* then closed: the helper never answers */
    {"POST", "/start", {.fixture = "start_ok.http"}},
    {"POST", "/stop", {.fixture = "start_ok.http"}},
    {"GET", "/containers/json", {.fixture = "list_empty.http"}},
    {"GET", "/networks", {.fixture = "network_list_ok.http"}},
    {"DELETE", "/containers/", {.fixture = "remove_ok.http"}},
};

static struct ui *ui;
static char cookie[UI_SECRET_CHARS + 40], csrf[UI_SECRET_CHARS + 1];
#define HOST "127.0.0.1:18788"

static void setup(void)
{
	lc_fixture_init("uidestroy");
	fx.cfg.max_export_bytes = 1 << 20;
	lc_fixture_start(routes, sizeof(routes) / sizeof(routes[0]));
	char repo[200];
	snprintf(repo, sizeof(repo), "%s/repo", fx.root);
	lc_fixture_workspace("ws_clone", "clone", repo, 1);
	lc_fixture_sandbox(SBX, "ws_clone", "running", clock_now_ms());
	struct ui_deps deps = {.cfg = &fx.cfg, .store = fx.store, .lc = fx.lc};
	ui = ui_new(&deps);
	char code[UI_SECRET_CHARS + 1], session[UI_SECRET_CHARS + 1];
	struct cp_error *err = NULL;
	cr_assert_eq(ui_code_new(ui->sessions, clock_now_ms(), code, &err), 0);
	cr_assert_eq(ui_code_redeem(ui->sessions, code, clock_now_ms(), session, csrf, &err), 0);
	snprintf(cookie, sizeof(cookie), UI_COOKIE_NAME "=%s", session);
}

static void teardown(void)
{
	ui_free(ui);
	lc_fixture_teardown();
}

TestSuite(ui_destroy, .init = setup, .fini = teardown, .timeout = 60);

/* POSTs the destroy form from origin with the given extra fields
 * (NULL-terminated name/value pairs); returns the body (caller frees) and
 * the status. */
static char *post_destroy_from(const char *origin, unsigned *status, const char *const *extra)
{
	struct mcp_page_field f[8] = {{"csrf", csrf}};
	size_t n = 1;
	for (size_t i = 0; extra && extra[i]; i += 2)
		f[n++] = (struct mcp_page_field){extra[i], extra[i + 1]};
	struct mcp_page_request q = {.method = "POST",
	                             .path = "/ui/sandboxes/" SBX "/destroy",
	                             .host = HOST,
	                             .origin = origin,
	                             .cookie = cookie,
	                             .form = f,
	                             .n_form = n};
	struct mcp_page_reply a = {0};
	ui_handle(ui, &q, &a);
	*status = a.status;
	return a.body;
}

static char *post_destroy(unsigned *status, const char *const *extra)
{
	return post_destroy_from("http://" HOST, status, extra);
}

static int64_t audit_rows(const char *action)
{
	int64_t n = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(store_audit_count(fx.store, action, &n, &err), 0, "%s", err ? err->message : "");
	return n;
}

Test(ui_destroy, the_confirmation_explains_the_rule_and_offers_force)
{
	struct mcp_page_request q = {
	    .method = "GET", .path = "/ui/sandboxes/" SBX "/destroy", .host = HOST, .cookie = cookie};
	struct mcp_page_reply a = {0};
	ui_handle(ui, &q, &a);
	cr_assert_eq(a.status, 200, "%s", a.body);
	cr_expect(strstr(a.body, "saved first"), "%s", a.body);
	cr_expect(strstr(a.body, "nothing is removed"), "%s", a.body);
	cr_expect(strstr(a.body, "<input type=\"checkbox\" name=\"force\">"), "%s", a.body);
	cr_expect(strstr(a.body, "data-action=\"confirm\""), "%s", a.body);
	cr_expect(strstr(a.body, "action=\"/ui/sandboxes/" SBX "/destroy\""), "%s", a.body);
	cr_expect(strstr(a.body, "data-live=\"0\""), "%s", a.body);
	free(a.body);
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0);
}

Test(ui_destroy, without_force_a_failed_save_removes_nothing)
{
	unsigned status = 0;
	/* A force field with any other value than "on" is no force either. */
	const char *const extra[] = {"force", "yes", "confirm2", "yes", NULL};
	char *body = post_destroy(&status, extra);
	cr_expect_eq(status, 409, "%s", body);
	cr_expect(strstr(body, "class=\"result error\""), "%s", body);
	cr_expect(strstr(body, "Nothing was removed"), "%s", body);
	free(body);
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0, "no container was removed");
	cr_expect_str_eq(lc_fixture_status(SBX), "running");
	cr_expect_eq(audit_rows("sandbox.destroy"), 1);
}

Test(ui_destroy, force_without_the_second_confirmation_only_asks_again)
{
	unsigned status = 0;
	const char *const extra[] = {"force", "on", NULL};
	char *body = post_destroy(&status, extra);
	cr_expect_eq(status, 200, "%s", body);
	cr_expect(strstr(body, "<input type=\"hidden\" name=\"force\" value=\"on\">"), "%s", body);
	cr_expect(strstr(body, "<input type=\"hidden\" name=\"confirm2\" value=\"yes\">"), "%s", body);
	cr_expect(strstr(body, "data-action=\"confirm\""), "%s", body);
	cr_expect(strstr(body, "data-live=\"0\""), "%s", body);
	free(body);
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0, "nothing was removed");
	cr_expect_eq(fake_count("POST", "/attach"), 0, "not even a save was tried");
	cr_expect_str_eq(lc_fixture_status(SBX), "running");
	cr_expect_eq(audit_rows("sandbox.destroy"), 0, "nothing was decided");
}

Test(ui_destroy, force_confirmed_twice_removes_it_and_says_what_is_lost)
{
	unsigned status = 0;
	const char *const extra[] = {"force", "on", "confirm2", "yes", NULL};
	char *body = post_destroy(&status, extra);
	cr_expect_eq(status, 200, "%s", body);
	cr_expect(strstr(body, "class=\"result ok\""), "%s", body);
	cr_expect(strstr(body, "were not saved and are gone"), "the loss in words: %s", body);
	free(body);
	cr_expect_eq(fake_count("DELETE", "/containers/" SBX), 1);
	cr_expect_str_eq(lc_fixture_status(SBX), "removed");
	cr_expect_eq(audit_rows("sandbox.destroy"), 1);
}

Test(ui_destroy, a_cross_origin_post_changes_nothing)
{
	unsigned status = 0;
	const char *const extra[] = {"force", "on", "confirm2", "yes", NULL};
	char *body = post_destroy_from("http://127.0.0.1:9999", &status, extra);
	cr_expect_eq(status, 403, "%s", body);
	free(body);
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0);
	cr_expect_str_eq(lc_fixture_status(SBX), "running");
}

Test(ui_sandbox_render, the_node_is_shown_with_its_state)
{
	struct ui_sandbox_view v = {
	    .s = {.id = "sbx_1", .workspace_id = "ws_1", .status = SANDBOX_RUNNING, .node = "n1", .created_at_ms = 1},
	    .ws_mode = "managed",
	    .node_endpoint = "tcp://10.0.0.2:2376" HOSTILE,
	    .node_state = NODE_DOWN,
	    .node_contact_ms = 1700000000000 - 60000};
	struct ui_req r = req();
	ui_sandbox_view_render(&r, &v);
	cr_assert_not_null(r.html);
	cr_expect(strstr(r.html, "<dt>Node</dt><dd class=\"node\" data-node=\"n1\"><code>n1</code>, the engine at "
	                         "<code>tcp://10.0.0.2:2376&lt;script&gt;"),
	          "%s", r.html);
	cr_expect(strstr(r.html, "data-node-state=\"down\">down</span>; it last answered"), "%s", r.html);
	cr_expect(strstr(r.html, "answer UNAVAILABLE until it answers again"), "%s", r.html);
	cr_expect_null(strstr(r.html, "<script"), "%s", r.html);
	free(r.html);

	/* A row on this machine, and one whose node was removed. */
	v.s.node = NULL;
	r = req();
	ui_sandbox_view_render(&r, &v);
	cr_expect(strstr(r.html, "data-node=\"local\">local (this machine's engine)</dd>"), "%s", r.html);
	free(r.html);
	v.s.node = "gone";
	v.node_endpoint = NULL;
	r = req();
	ui_sandbox_view_render(&r, &v);
	cr_expect(strstr(r.html, "<code>gone</code>: no longer registered"), "%s", r.html);
	free(r.html);
}
