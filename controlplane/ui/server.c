/* server.c: one /ui request from mcp/ to a view (ui.h, ui_handle): the
 * refusals mcp/ made, the login code the CLI asks for on the Unix socket,
 * the login link, the session check, the CSRF and same-origin checks of
 * every POST, logging out, and the route table's dispatch. Every answer
 * carries ui_security_headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../config/config.h"
#include "../store/store.h"
#include "ui_internal.h"

struct ui *ui_new(const struct ui_deps *deps)
{
	struct ui *ui = xcalloc(1, sizeof(*ui));
	ui->deps = *deps;
	int64_t ttl = deps->cfg && deps->cfg->ui_code_ttl_ms > 0 ? deps->cfg->ui_code_ttl_ms : UI_CODE_TTL_MS;
	ui->sessions = ui_sessions_new(ttl, UI_SESSION_IDLE_MS);
	return ui;
}

void ui_free(struct ui *ui)
{
	if (!ui)
		return;
	ui_sessions_free(ui->sessions);
	free(ui);
}

/* The answer without a live session: what to do, and nothing else. */
static void login_hint(struct ui_req *r, unsigned status, const char *why)
{
	ui_page_message(r, status, "Log in to chat2sbx",
	                why ? why
	                    : "This page needs a login. Run chat2sbx ui in a terminal on this machine, as the user "
	                      "that runs chat2sbx serve, and open the link it prints.",
	                NULL);
}

/* POST /ui/code on the Unix socket (the peer's uid is checked by mcp/):
 * a one-time login code as JSON for `chat2sbx ui`. */
static void mint_code(struct ui_req *r)
{
	char code[UI_SECRET_CHARS + 1];
	struct cp_error *err = NULL;
	if (ui_code_new(r->ui->sessions, r->now_ms, code, &err) < 0) {
		ui_page_error(r, err, NULL);
		cp_error_free(err);
		return;
	}
	int64_t ttl =
	    r->ui->deps.cfg && r->ui->deps.cfg->ui_code_ttl_ms > 0 ? r->ui->deps.cfg->ui_code_ttl_ms : UI_CODE_TTL_MS;
	r->out->status = 200;
	r->out->content_type = "application/json";
	char text[160];
	snprintf(text, sizeof(text), "{\"code\":\"%s\",\"expires_in_ms\":%lld}\n", code, (long long)ttl);
	ui_put(r, "%R", text);
	explicit_bzero(code, sizeof(code));
	explicit_bzero(text, sizeof(text));
	log_info("ui", "made a login code for the page (good once, for %lld s)", (long long)(ttl / 1000));
}

/* GET /ui/login?code=…: spends the code, sets the session cookie and
 * sends the browser on to /ui/ (the code leaves the address bar). */
static void login(struct ui_req *r)
{
	struct cp_error *err = NULL;
	const char *code = ui_query(r, "code");
	if (ui_code_redeem(r->ui->sessions, code ? code : "", r->now_ms, r->session, r->csrf, &err) < 0) {
		r->session[0] = '\0';
		login_hint(r, 403, err->message);
		log_warn("ui", "refused a login link: %s", err->message);
		cp_error_free(err);
		return;
	}
	ui_session_cookie(r->session, r->out->set_cookie, sizeof(r->out->set_cookie));
	snprintf(r->out->location, sizeof(r->out->location), "/ui/");
	r->out->status = 303;
	ui_put(r, "<!doctype html><title>chat2sbx</title><a href=\"/ui/\">Continue</a>\n");
	log_info("ui", "a browser logged in to the page");
}

/* Matches path against pattern: literal segments equal, a '*' segment any
 * one non-empty segment, copied to id (size bytes). 1 on a match. */
static int route_match(const char *pattern, const char *path, char *id, size_t size)
{
	id[0] = '\0';
	while (*pattern && *path) {
		if (*pattern == '*') {
			size_t n = strcspn(path, "/");
			if (n == 0 || n >= size)
				return 0;
			memcpy(id, path, n);
			id[n] = '\0';
			path += n;
			pattern++;
			continue;
		}
		if (*pattern != *path)
			return 0;
		pattern++;
		path++;
	}
	return *pattern == '\0' && *path == '\0';
}

static void dispatch(struct ui_req *r)
{
	const char *path = r->in->path;
	char id[128];
	int path_known = 0;
	for (const struct ui_route *rt = ui_routes; rt->pattern; rt++) {
		if (!route_match(rt->pattern, path, id, sizeof(id)))
			continue;
		path_known = 1;
		if (strcmp(rt->method, r->in->method) != 0)
			continue;
		rt->fn(r, strchr(rt->pattern, '*') ? id : NULL);
		return;
	}
	if (path_known)
		ui_page_message(r, 405, "Not here", "This address does not take that kind of request.", "/ui/");
	else
		ui_page_message(r, 404, "Not found", "There is no such page.", "/ui/");
}

/* Why a POST may not change anything, or NULL when it may: the Origin must
 * be the page's own (another port is another origin; RFC 6454) and the
 * form must carry the session's CSRF token. */
static const char *post_refusal(struct ui_req *r)
{
	if (!ui_origin_same(r->in->origin, r->in->host))
		return "refused: this request came from another site or port (its Origin is not this page's). "
		       "Use the buttons on this page.";
	if (!ui_session_csrf_ok(r->ui->sessions, r->session, ui_form(r, "csrf"), r->now_ms))
		return "refused: the form's token is missing or is not this session's. Reload the page and try again.";
	return NULL;
}

void ui_handle(void *ctx, const struct mcp_page_request *in, struct mcp_page_reply *out)
{
	struct ui_req r = {.ui = ctx, .in = in, .out = out, .now_ms = clock_now_ms()};
	out->headers = ui_security_headers;
	const int post = !strcmp(in->method, "POST");
	if (in->refusal_status) {
		ui_page_message(&r, in->refusal_status, "Refused", in->refusal, NULL);
	} else if (!strcmp(in->path, "/ui")) {
		snprintf(out->location, sizeof(out->location), "/ui/");
		out->status = 308;
	} else if (!strcmp(in->path, "/ui/code")) {
		if (!in->is_unix)
			ui_page_message(&r, 404, "Not found", "There is no such page.", NULL);
		else if (!post)
			ui_page_message(&r, 405, "Not here", "POST to get a login code.", NULL);
		else
			mint_code(&r);
	} else if (!strcmp(in->path, "/ui/login") && !post) {
		login(&r);
	} else {
		char cookie[UI_SECRET_CHARS + 1];
		const char *sid = ui_cookie_session(in->cookie, cookie);
		if (!sid || !ui_session_touch(r.ui->sessions, sid, r.now_ms, r.csrf)) {
			login_hint(&r, 401, NULL);
		} else {
			snprintf(r.session, sizeof(r.session), "%s", sid);
			const char *why = post ? post_refusal(&r) : NULL;
			if (why) {
				log_warn("ui", "refused a POST to %s: %s", in->path, why);
				ui_page_message(&r, 403, "Refused", why, "/ui/");
			} else if (post && !strcmp(in->path, "/ui/logout")) {
				ui_session_end(r.ui->sessions, r.session);
				ui_session_cookie("", out->set_cookie, sizeof(out->set_cookie));
				snprintf(out->location, sizeof(out->location), "/ui/");
				out->status = 303;
			} else {
				dispatch(&r);
			}
		}
	}
	out->body = r.html;
	out->body_len = r.len;
	explicit_bzero(r.csrf, sizeof(r.csrf));
	explicit_bzero(r.session, sizeof(r.session));
}
