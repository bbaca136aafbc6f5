/* ui_internal.h: what the page's files share (private to ui/): one request
 * being answered (struct ui_req), the HTML it writes through ui_put (every
 * %s escaped), the page's frame, the route table, and each view's handler. */
#ifndef CP_UI_INTERNAL_H
#define CP_UI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../mcp/mcp.h"
#include "ui.h"

/* The page: its dependencies and its sessions. */
struct ui {
	struct ui_deps deps;
	struct ui_sessions *sessions;
};

/* One request being answered. The handler writes the body with ui_put and
 * the status and headers into out; ui_handle (server.c) queues it. */
struct ui_req {
	struct ui *ui;                     /* borrowed: the page's dependencies */
	const struct mcp_page_request *in; /* borrowed */
	struct mcp_page_reply *out;        /* the answer; body filled from html at the end */
	char *html;                        /* the body so far (owned; moves into out) */
	size_t len, cap;                   /* of html */
	char session[UI_SECRET_CHARS + 1]; /* the live session ("" before login) */
	char csrf[UI_SECRET_CHARS + 1];    /* its CSRF token, for every form */
	int64_t now_ms;                    /* wall clock at the request's start */
};

/* Appends fmt to r's body. Directives: %s a string written as HTML text
 * (escaped with ui_html_escape; NULL reads as ""), %R a string written
 * raw (only this code's own markup, never a value from a sandbox, a path,
 * the registry or the request), %d int, %u unsigned, %L int64_t, %z
 * size_t, %% a percent sign. Any other directive aborts (a bug). */
void ui_put(struct ui_req *r, const char *fmt, ...);

/* The page's frame (html.c): ui_page_begin writes the document's head, the
 * navigation (active names the current entry: "overview", "approvals",
 * "sandboxes", "exports", "health", "activity"; NULL for none), the log-out
 * form and opens <main>; live = 1 lets app.js re-fetch the page every 2 s
 * and replace <main> (a view; 0 on confirmations and results, which must
 * hold still). ui_page_end closes it. status is the HTTP status. */
void ui_page_begin(struct ui_req *r, unsigned status, const char *title, const char *active, int live);
void ui_page_end(struct ui_req *r);

/* A whole page saying one thing: status, a heading and a sentence (text,
 * escaped), with a link back to back_href (our own path; NULL for none),
 * in a `.result` block of class ok (status < 400) or error. */
void ui_page_message(struct ui_req *r, unsigned status, const char *heading, const char *text, const char *back_href);

/* Opens a form that POSTs to action (our own path) with the session's
 * CSRF token as a hidden field `csrf`; ui_put the fields and buttons, then
 * "</form>". */
void ui_form_begin(struct ui_req *r, const char *action);

/* Writes ms (a wall-clock time in ms since the epoch) as
 * <time datetime="ISO 8601">relative words</time> followed by the exact
 * UTC time in a `.exact` span: "3 min ago" or "in 2 h" against r->now_ms,
 * "never" for ms <= 0. */
void ui_put_time(struct ui_req *r, int64_t ms);

/* Writes bytes as a size a person reads ("512 B", "1.5 MiB"). */
void ui_put_size(struct ui_req *r, int64_t bytes);

/* The value of query argument or form field name of r (borrowed), NULL
 * when absent. */
const char *ui_query(const struct ui_req *r, const char *name);
const char *ui_form(const struct ui_req *r, const char *name);

/* The error page for err (its message; the status from its code:
 * INVALID_ARGUMENT 400, NOT_FOUND 404, DENIED 403, CONFLICT 409,
 * UNAVAILABLE 503, anything else 500), with a link back. */
void ui_page_error(struct ui_req *r, const struct cp_error *err, const char *back_href);

/* One audit row for a decision made on the page: actor "ui", action
 * ("approval.approve", "sandbox.destroy", "export.apply", ...), target and
 * sandbox_id (may be NULL), status from err (NULL = ok). A failed write is
 * logged, never fatal: the decision was made. */
void ui_audit(struct ui_req *r, const char *action, const char *target, const char *sandbox_id,
              const struct cp_error *err);

/* A route: method and pattern ("/ui/sandboxes/" then a star: a '*' matches one path
 * segment, handed to fn as id; NULL when the pattern has none). Handlers
 * answer through r and return nothing; state-changing routes are POST and
 * run only after ui_handle checked the session, the CSRF token and the
 * Origin. */
struct ui_route {
	const char *method;
	const char *pattern;
	void (*fn)(struct ui_req *r, const char *id);
};

/* routes.c: the table, NULL-pattern terminated. */
extern const struct ui_route ui_routes[];

/* The views, one file each. */
void ui_view_overview(struct ui_req *r, const char *id);
void ui_view_approvals(struct ui_req *r, const char *id);
void ui_view_approval_confirm(struct ui_req *r, const char *id); /* GET /ui/approvals/ID/{approve,reject} */
void ui_do_approval(struct ui_req *r, const char *id);           /* POST the same */
/* The pending approvals' table (the overview shows it too). */
void ui_put_approvals(struct ui_req *r, int pending_only);
/* The sandboxes' table (overview and /ui/sandboxes). */
void ui_put_sandboxes(struct ui_req *r);

/* The static assets (assets.c, embedded from ui/assets/ at build time). */
void ui_asset(struct ui_req *r, const char *id);

#endif
