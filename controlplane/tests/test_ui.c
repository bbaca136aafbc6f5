/* test_ui.c: the page's security core (issue 26): login codes are single-use
 * and expire, sessions expire when idle and end at logout, CSRF tokens and
 * secrets are checked exactly, the cookie and origin rules, the headers,
 * and HTML escaping of what a sandbox or a path wrote. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui.h"

#define TTL 1000
#define IDLE 5000

static struct ui_sessions *store;

static void setup(void)
{
	store = ui_sessions_new(TTL, IDLE);
}

static void teardown(void)
{
	ui_sessions_free(store);
}

TestSuite(ui, .init = setup, .fini = teardown);

/* Logs in with a fresh code at now_ms; the session and token in the out
 * buffers. */
static void login(int64_t now_ms, char session[UI_SECRET_CHARS + 1], char csrf[UI_SECRET_CHARS + 1])
{
	char code[UI_SECRET_CHARS + 1];
	struct cp_error *err = NULL;
	cr_assert_eq(ui_code_new(store, now_ms, code, &err), 0);
	cr_assert_eq(ui_code_redeem(store, code, now_ms, session, csrf, &err), 0, "%s", err ? err->message : "");
}

Test(ui, a_code_works_once)
{
	char code[UI_SECRET_CHARS + 1], session[UI_SECRET_CHARS + 1], csrf[UI_SECRET_CHARS + 1];
	struct cp_error *err = NULL;
	cr_assert_eq(ui_code_new(store, 0, code, &err), 0);
	cr_expect_eq(strlen(code), UI_SECRET_CHARS);
	cr_assert_eq(ui_code_redeem(store, code, 10, session, csrf, &err), 0);
	cr_expect_eq(strlen(session), UI_SECRET_CHARS);
	cr_expect_str_neq(session, code);
	cr_expect_str_neq(session, csrf);
	cr_expect_eq(ui_session_touch(store, session, 20, NULL), 1);

	cr_expect_eq(ui_code_redeem(store, code, 20, session, csrf, &err), -1, "a used code is refused");
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_DENIED);
	cr_expect(strstr(err->message, "chat2sbx ui"), "says what to do: %s", err->message);
	cp_error_free(err);
}

Test(ui, an_expired_or_unknown_code_is_refused)
{
	char code[UI_SECRET_CHARS + 1], session[UI_SECRET_CHARS + 1], csrf[UI_SECRET_CHARS + 1];
	struct cp_error *err = NULL;
	cr_assert_eq(ui_code_new(store, 0, code, &err), 0);
	cr_expect_eq(ui_code_redeem(store, code, TTL, session, csrf, &err), -1, "expired at exactly TTL");
	cp_error_free(err);
	err = NULL;
	cr_assert_eq(ui_code_new(store, 0, code, &err), 0);
	char other[UI_SECRET_CHARS + 1];
	memcpy(other, code, sizeof(other));
	other[UI_SECRET_CHARS - 1] = other[UI_SECRET_CHARS - 1] == 'A' ? 'B' : 'A';
	const char *bad[] = {other, "", "x", NULL};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		cr_expect_eq(ui_code_redeem(store, bad[i], 1, session, csrf, &err), -1, "code %zu", i);
		cp_error_free(err);
	}
	/* A prefix or a longer text is not the code either. */
	char longer[UI_SECRET_CHARS + 2];
	snprintf(longer, sizeof(longer), "%sA", code);
	err = NULL;
	cr_expect_eq(ui_code_redeem(store, longer, 1, session, csrf, &err), -1);
	cp_error_free(err);
	/* The real one still works: failed guesses do not spend it. */
	err = NULL;
	cr_expect_eq(ui_code_redeem(store, code, 1, session, csrf, &err), 0);
}

Test(ui, a_flood_of_codes_keeps_the_table_bounded_and_drops_the_oldest)
{
	char first[UI_SECRET_CHARS + 1], code[UI_SECRET_CHARS + 1], session[UI_SECRET_CHARS + 1],
	    csrf[UI_SECRET_CHARS + 1];
	struct cp_error *err = NULL;
	cr_assert_eq(ui_code_new(store, 0, first, &err), 0);
	for (int i = 1; i <= UI_MAX_CODES; i++)
		cr_assert_eq(ui_code_new(store, i, code, &err), 0);
	cr_expect_eq(ui_code_redeem(store, first, 100, session, csrf, &err), -1, "the oldest was replaced");
	cp_error_free(err);
	err = NULL;
	cr_expect_eq(ui_code_redeem(store, code, 100, session, csrf, &err), 0, "the newest works");
}

Test(ui, a_session_ends_when_idle_and_at_logout)
{
	char session[UI_SECRET_CHARS + 1], csrf[UI_SECRET_CHARS + 1], got[UI_SECRET_CHARS + 1];
	login(0, session, csrf);
	cr_expect_eq(ui_session_touch(store, session, IDLE - 1, got), 1);
	cr_expect_str_eq(got, csrf);
	cr_expect_eq(ui_session_touch(store, session, 2 * IDLE - 2, NULL), 1, "each request restarts the idle time");
	cr_expect_eq(ui_session_touch(store, session, 3 * IDLE, NULL), 0, "idle too long");
	cr_expect_eq(ui_session_touch(store, session, 3 * IDLE, NULL), 0, "and gone");

	login(0, session, csrf);
	ui_session_end(store, session);
	cr_expect_eq(ui_session_touch(store, session, 1, NULL), 0, "logged out");
	cr_expect_eq(ui_session_touch(store, NULL, 1, NULL), 0);
	cr_expect_eq(ui_session_touch(store, "", 1, NULL), 0);
}

Test(ui, the_csrf_token_is_the_sessions_own)
{
	char a[UI_SECRET_CHARS + 1], a_csrf[UI_SECRET_CHARS + 1], b[UI_SECRET_CHARS + 1], b_csrf[UI_SECRET_CHARS + 1];
	login(0, a, a_csrf);
	login(0, b, b_csrf);
	cr_expect_eq(ui_session_csrf_ok(store, a, a_csrf, 1), 1);
	cr_expect_eq(ui_session_csrf_ok(store, a, b_csrf, 1), 0, "another session's token");
	cr_expect_eq(ui_session_csrf_ok(store, a, NULL, 1), 0);
	cr_expect_eq(ui_session_csrf_ok(store, a, "", 1), 0);
	cr_expect_eq(ui_session_csrf_ok(store, a, a, 1), 0, "the session id is not the token");
	cr_expect_eq(ui_session_csrf_ok(store, NULL, a_csrf, 1), 0, "no session, no token");
	ui_session_end(store, a);
	cr_expect_eq(ui_session_csrf_ok(store, a, a_csrf, 2), 0, "an ended session's token");
	cr_expect_eq(ui_session_csrf_ok(store, b, b_csrf, 2), 1);
}

Test(ui, sessions_beyond_the_table_replace_the_longest_idle)
{
	char first[UI_SECRET_CHARS + 1], csrf[UI_SECRET_CHARS + 1], s[UI_SECRET_CHARS + 1];
	login(0, first, csrf);
	for (int i = 1; i <= UI_MAX_SESSIONS; i++)
		login(i, s, csrf);
	cr_expect_eq(ui_session_touch(store, first, 100, NULL), 0);
	cr_expect_eq(ui_session_touch(store, s, 100, NULL), 1);
}

Test(ui_rules, cookie_set_read_and_cleared)
{
	char session[UI_SECRET_CHARS + 1];
	memset(session, 'a', UI_SECRET_CHARS);
	session[UI_SECRET_CHARS] = '\0';
	char buf[256], got[UI_SECRET_CHARS + 1];
	const char *set = ui_session_cookie(session, buf, sizeof(buf));
	cr_expect(strstr(set, "c2s_ui=aaaa") == set, "%s", set);
	cr_expect(strstr(set, "; HttpOnly") && strstr(set, "; SameSite=Strict") && strstr(set, "; Path=/ui"), "%s",
	          set);
	cr_expect(strstr(ui_session_cookie("", buf, sizeof(buf)), "Max-Age=0"));

	char header[300];
	snprintf(header, sizeof(header), "theme=dark; c2s_ui=%s; other=1", session);
	cr_expect_str_eq(ui_cookie_session(header, got), session);
	snprintf(header, sizeof(header), "c2s_ui=%s", session);
	cr_expect_str_eq(ui_cookie_session(header, got), session);
	/* Wrong length, a foreign character, a look-alike name, none. */
	snprintf(header, sizeof(header), "c2s_ui=%sa", session);
	cr_expect_null(ui_cookie_session(header, got));
	snprintf(header, sizeof(header), "c2s_ui=%.*s<", UI_SECRET_CHARS - 1, session);
	cr_expect_null(ui_cookie_session(header, got));
	snprintf(header, sizeof(header), "xc2s_ui=%s", session);
	cr_expect_null(ui_cookie_session(header, got));
	cr_expect_null(ui_cookie_session(NULL, got));
	cr_expect_null(ui_cookie_session("", got));
}

Test(ui_rules, only_the_pages_own_origin_may_change_state)
{
	cr_expect_eq(ui_origin_same("http://127.0.0.1:18788", "127.0.0.1:18788"), 1);
	cr_expect_eq(ui_origin_same("http://127.0.0.1:9999", "127.0.0.1:18788"), 0, "another port");
	cr_expect_eq(ui_origin_same("https://127.0.0.1:18788", "127.0.0.1:18788"), 0);
	cr_expect_eq(ui_origin_same("http://127.0.0.1:18788.evil.example", "127.0.0.1:18788"), 0);
	cr_expect_eq(ui_origin_same("null", "127.0.0.1:18788"), 0, "a sandboxed frame or file: page");
	cr_expect_eq(ui_origin_same(NULL, "127.0.0.1:18788"), 0, "no Origin");
	cr_expect_eq(ui_origin_same("http://", ""), 0);
}

Test(ui_rules, every_answer_carries_the_security_headers)
{
	int csp = 0, nosniff = 0, referrer = 0;
	for (size_t i = 0; ui_security_headers[i]; i += 2) {
		const char *name = ui_security_headers[i], *value = ui_security_headers[i + 1];
		if (!strcmp(name, "Content-Security-Policy")) {
			csp = strstr(value, "default-src 'self'") && strstr(value, "frame-ancestors 'none'") &&
			      !strstr(value, "unsafe-inline") && !strstr(value, "unsafe-eval");
		}
		nosniff |= !strcmp(name, "X-Content-Type-Options") && !strcmp(value, "nosniff");
		referrer |= !strcmp(name, "Referrer-Policy") && !strcmp(value, "same-origin");
	}
	cr_expect(csp && nosniff && referrer);
}

Test(ui_rules, what_a_sandbox_wrote_is_shown_as_text)
{
	char *s = ui_html_escape("<script>alert('x')</script> & \"q\"");
	cr_expect_str_eq(s, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
	free(s);
	s = ui_html_escape("/home/me/\"><img src=x onerror=alert(1)>");
	cr_expect_null(strchr(s, '<'));
	cr_expect_null(strchr(s, '"'));
	free(s);
	s = ui_html_escape(NULL);
	cr_expect_str_eq(s, "");
	free(s);
	s = ui_html_escape("plain é text");
	cr_expect_str_eq(s, "plain é text");
	free(s);
}
