/* ui.h: the owner's page under /ui/ (issue 26; docs/ui.md): the handler
 * serve registers with mcp_server_set_pages, and its security core: login
 * codes, sessions, CSRF tokens, the same-origin rule, the security headers
 * every answer carries, and HTML escaping. */
#ifndef CP_UI_H
#define CP_UI_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"

/* A login code, a session id and a CSRF token are each 32 bytes from
 * getrandom(2) as unpadded base64url (RFC 4648 section 5): 43 characters. */
#define UI_SECRET_CHARS 43
/* A login code is good for one use within this long (ms). */
#define UI_CODE_TTL_MS (5 * 60 * 1000)
/* A session ends after this long without a request (ms), or at logout. */
#define UI_SESSION_IDLE_MS (2 * 60 * 60 * 1000)
/* At most this many unused codes and live sessions; a new one beyond them
 * replaces the oldest code or the session idle the longest. */
#define UI_MAX_CODES 8
#define UI_MAX_SESSIONS 16
/* The session cookie's name. */
#define UI_COOKIE_NAME "c2s_ui"

struct ui_sessions;

/* A new, empty store whose codes live code_ttl_ms and whose sessions end
 * after idle_ms without use (both > 0; UI_CODE_TTL_MS and
 * UI_SESSION_IDLE_MS in serve, shorter in tests). Thread-safe: every call
 * takes its lock. Free with ui_sessions_free (NULL is fine). */
struct ui_sessions *ui_sessions_new(int64_t code_ttl_ms, int64_t idle_ms);
void ui_sessions_free(struct ui_sessions *s);

/* Makes a one-time login code valid until now_ms + code_ttl_ms and writes
 * it, NUL-terminated, to code. Fails with INTERNAL when the kernel's random
 * source fails. */
int ui_code_new(struct ui_sessions *s, int64_t now_ms, char code[UI_SECRET_CHARS + 1], struct cp_error **err);

/* Spends CODE (any text; compared in constant time) and starts a session:
 * writes its id and its CSRF token. The code is gone afterwards, whether
 * or not the session could be made. Fails with DENIED when the code is not
 * one this store made, was used already or has expired (one message for
 * all three, saying to run `chat2sbx ui` again), INTERNAL when the random
 * source fails. */
int ui_code_redeem(struct ui_sessions *s, const char *code, int64_t now_ms, char session[UI_SECRET_CHARS + 1],
                   char csrf[UI_SECRET_CHARS + 1], struct cp_error **err);

/* 1 when SESSION (the cookie's value; any text, NULL included) is a live
 * session: its idle time restarts at now_ms and, when csrf is not NULL, its
 * CSRF token is written there. 0 otherwise (unknown, ended or idle too
 * long: an idle one is ended here). */
int ui_session_touch(struct ui_sessions *s, const char *session, int64_t now_ms, char csrf[UI_SECRET_CHARS + 1]);

/* 1 when SESSION is live (as ui_session_touch, which it does) and TOKEN is
 * its CSRF token (constant-time compare); 0 otherwise. Every request that
 * changes state must pass this and ui_origin_same. */
int ui_session_csrf_ok(struct ui_sessions *s, const char *session, const char *token, int64_t now_ms);

/* Ends SESSION (logout); unknown ones are ignored. */
void ui_session_end(struct ui_sessions *s, const char *session);

/* The Set-Cookie value for SESSION: HttpOnly, SameSite=Strict, Path=/ui
 * (RFC 6265 section 4.1; SameSite: RFC 6265bis). Written to buf (size
 * bytes); returns buf. An empty SESSION gives the cookie that ends it
 * (Max-Age=0). */
const char *ui_session_cookie(const char *session, char *buf, size_t size);

/* The cookie named UI_COOKIE_NAME in a Cookie header (RFC 6265 section
 * 5.4: "name=value" pairs separated by "; "), copied to buf when its value
 * is exactly UI_SECRET_CHARS base64url characters; NULL otherwise. */
const char *ui_cookie_session(const char *cookie_header, char buf[UI_SECRET_CHARS + 1]);

/* 1 when the request's Origin header names the page's own origin:
 * "http://" followed by exactly HOST (the Host header the loopback
 * checks already accepted, e.g. "127.0.0.1:18788"). A missing Origin, the
 * literal "null" or any other origin gives 0 (RFC 6454 section 7). */
int ui_origin_same(const char *origin, const char *host);

/* The headers every /ui/ answer carries, NULL-terminated pairs of name and
 * value: a strict Content-Security-Policy (default-src 'self', no inline
 * script, frame-ancestors 'none'), X-Content-Type-Options: nosniff,
 * Referrer-Policy: same-origin (no-referrer would make browsers send
 * "Origin: null" on the page's own form POSTs: Fetch standard, "serializing
 * a request origin"; same-origin still gives no other origin a referrer),
 * Cache-Control: no-store. Static storage. */
extern const char *const ui_security_headers[];

/* TEXT (NULL reads as "") with &, <, >, " and ' as HTML character
 * references, fit for element content and quoted attribute values (HTML
 * Living Standard, 13.1.4). Newly allocated; the caller frees. */
char *ui_html_escape(const char *text);

struct config;
struct store;
struct lifecycle;
struct mcp_page_request;
struct mcp_page_reply;

/* What the page works with (all borrowed; they outlive the page). */
struct ui_deps {
	const struct config *cfg;
	struct store *store;
	struct lifecycle *lc;
	const char *self_exe; /* this program, for `doctor` run as a child */
};

struct ui;

/* The page over deps (copied): a session store whose codes live
 * cfg->ui_code_ttl_ms and whose sessions end after UI_SESSION_IDLE_MS idle.
 * Free with ui_free (NULL is fine) after the listeners stopped. */
struct ui *ui_new(const struct ui_deps *deps);
void ui_free(struct ui *ui);

/* mcp_page_fn for ctx = a struct ui: answers one /ui request (the routes
 * are docs/ui.md's). Without a live session only /ui/login and, on the Unix
 * socket, POST /ui/code answer anything but the login hint (401); every
 * POST needs the session's CSRF token and a same-origin Origin (403
 * otherwise, nothing changed); every answer carries ui_security_headers. */
void ui_handle(void *ctx, const struct mcp_page_request *req, struct mcp_page_reply *reply);

#endif
