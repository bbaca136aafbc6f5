/* ui_internal.h: what the page's files share (private to ui/): one request
 * being answered (struct ui_req), the HTML it writes through ui_put (every
 * %s escaped), the page's frame, the route table, and each view's handler. */
#ifndef CP_UI_INTERNAL_H
#define CP_UI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "../mcp/mcp.h"
#include "ui.h"

struct ui_health;

/* The page: its dependencies and its sessions. */
struct ui {
	struct ui_deps deps;
	struct ui_sessions *sessions;
	struct ui_health *health; /* page_health.c: the status cache and the one doctor run */
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

/* ---- sandboxes: the detail page and Destroy (page_sandbox.c,
 * sandbox_view.c, page_destroy.c) ---- */

#include "../store/store.h"

/* Bounds of one look at a sandbox (sandbox_view.c): the newest sessions
 * shown, the tail of each one's output (bytes), the deadline of each
 * helper call (ms). */
#define UI_SESSIONS_SHOWN 8
#define UI_OUTPUT_TAIL 4096
#define UI_HELPER_CALL_MS 2000

/* One bash session as the page shows it (strings owned; from the helper's
 * bash.list, hostile: every one is written through ui_put's %s). */
struct ui_bash_session {
	char *id, *command, *status, *reason; /* reason may be NULL */
	int has_exit;                         /* exit_code is known */
	int64_t exit_code;
	int64_t started_ms, ended_ms; /* ended 0: still running */
	int64_t total_bytes;          /* all the output it wrote */
	char *output;                 /* the tail, cleaned (ui_output_clean); NULL when it could not be read */
	char *output_error;           /* why not (NULL when read) */
};

/* An exposed port: the sandbox's port and the address a browser opens. */
struct ui_preview {
	int container_port;
	char url[300];
};

/* Everything the detail page shows of one sandbox, gathered first
 * (ui_sandbox_view_gather) and written after (ui_sandbox_view_render), so
 * that the writing can be tested on plain data. */
struct ui_sandbox_view {
	struct sandbox_record s; /* the registry's row */
	char *ws_mode;           /* managed | clone | direct; NULL when unknown */
	char *ws_host_path;      /* the host folder behind it; NULL for a managed one */
	/* Its node (issue 28) when it is not 'local': the registry's row of it
	 * (endpoint, state, last contact); node_endpoint NULL when the row is
	 * gone or could not be read. */
	char *node_endpoint;
	enum node_state node_state;
	int64_t node_contact_ms;
	int64_t last_activity_ms; /* the row's, or newer in memory */
	int64_t expiry_at_ms;     /* lifecycle_idle_expiry_at: 0 none, 1 due now */
	int64_t idle_timeout_ms;
	int paused; /* paused for disk */
	char paused_reason[700];
	int unsaved;                      /* enum lifecycle_unsaved */
	int64_t default_memory_bytes;     /* what a sandbox without memory gets */
	int64_t pids_default;             /* the process limit of one that asked for none */
	struct ui_bash_session *sessions; /* newest first, at most UI_SESSIONS_SHOWN */
	size_t n_sessions;
	size_t sessions_listed; /* how many the helper listed */
	char *sessions_note;    /* why no session is shown, in words; NULL when listed */
	struct ui_preview *previews;
	size_t n_previews;
	char *previews_error; /* the registry's error; NULL when listed */
};
void ui_sandbox_view_clear(struct ui_sandbox_view *v);

/* Gathers v (caller clears) for sandbox id through r->ui->deps: the row
 * (NOT_FOUND: -1 and *err), its workspace, lifecycle's idle expiry,
 * paused-for-disk and unsaved-work answers, its exposures, and for a
 * running one its sessions through the open channel without counting as
 * activity (lifecycle_sandbox_channel_peek): bash.list, then each shown
 * session's last UI_OUTPUT_TAIL bytes through blob.open/blob.read/
 * blob.close (never bash.poll: the model's output stays unread; one blob
 * at a time in this process, so a clone's save always finds a free one),
 * each call and the wait for that turn bounded by UI_HELPER_CALL_MS. A helper that fails leaves words in
 * sessions_note or output_error, never an error. */
int ui_sandbox_view_gather(struct ui_req *r, const char *id, struct ui_sandbox_view *v, struct cp_error **err);

/* Writes v's facts as a <dl class="facts"> (page_sandboxes.c: the same
 * words as the table's). */
void ui_put_sandbox_facts(struct ui_req *r, const struct ui_sandbox_view *v);

/* Writes v's page body (facts, sessions, previews, Destroy link). */
void ui_sandbox_view_render(struct ui_req *r, const struct ui_sandbox_view *v);

/* n bytes of a program's output (any bytes) as text fit to show: valid
 * UTF-8 (an invalid byte becomes U+FFFD), newlines and tabs kept, a
 * carriage return dropped, terminal escape sequences (ESC [ ... final)
 * removed, other control and invisible characters (text_invisible) shown
 * as U+FFFD. cut_start: the bytes are a tail cut from a longer output, so
 * its cut first line is dropped (up to the first newline; without one, up
 * to 3 leading UTF-8 continuation bytes). Newly allocated.
 * HTML escaping is still ui_put's. */
char *ui_output_clean(const unsigned char *bytes, size_t n, int cut_start);

/* What a Destroy POST does (page_destroy.c), from its form: PLAIN without
 * force=on; ASK_AGAIN with force=on but not confirm2=yes (the second
 * confirmation: nothing changes); FORCE with both. */
enum ui_destroy_step {
	UI_DESTROY_PLAIN,
	UI_DESTROY_ASK_AGAIN,
	UI_DESTROY_FORCE,
};
enum ui_destroy_step ui_destroy_step_of(const struct ui_req *r);

/* 1 when id is a sandbox id (sbx_ and its letters); 0 after answering the
 * 404 page that says so (page_sandbox.c). */
int ui_sandbox_id_ok(struct ui_req *r, const char *id);

void ui_view_sandboxes(struct ui_req *r, const char *id);       /* GET /ui/sandboxes */
void ui_view_sandbox(struct ui_req *r, const char *id);         /* GET /ui/sandboxes/ID */
void ui_view_destroy_confirm(struct ui_req *r, const char *id); /* GET /ui/sandboxes/ID/destroy */
void ui_do_destroy(struct ui_req *r, const char *id);           /* POST the same */
/* ---- saved work, health and activity (page_exports.c, page_health.c,
 * page_activity.c) ---- */
struct export_record;
struct export_apply_result;
struct json_object;

void ui_view_exports(struct ui_req *r, const char *id);        /* GET /ui/exports */
void ui_view_export(struct ui_req *r, const char *id);         /* GET /ui/exports/ID */
void ui_view_export_confirm(struct ui_req *r, const char *id); /* GET /ui/exports/ID/apply */
void ui_do_export_apply(struct ui_req *r, const char *id);     /* POST the same */
/* The render steps over plain data (tests feed them hostile text): one
 * `tr[data-export]` row of x, its approved repository repo (NULL when
 * unknown) and its manifest m (export_manifest_json; NULL when unreadable);
 * the body of /ui/exports/ID for x and m (m may be NULL); the `.result.ok`
 * block of a successful apply of export id (`pre.commands` holds
 * res->next_steps). Every value is written escaped. */
void ui_put_export_row(struct ui_req *r, const struct export_record *x, const char *repo, struct json_object *m);
void ui_put_export_detail(struct ui_req *r, const struct export_record *x, struct json_object *m);
void ui_put_apply_result(struct ui_req *r, const char *id, const struct export_apply_result *res);

/* The health part of struct ui: made by ui_new, freed by ui_free, which
 * stops a doctor run still going (its child killed) and joins its thread. */
struct ui_health *ui_health_new(void);
void ui_health_free(struct ui_health *h);
void ui_view_health(struct ui_req *r, const char *id); /* GET /ui/health */
void ui_do_doctor(struct ui_req *r, const char *id);   /* POST /ui/health/doctor */
/* status: `chat2sbx status --json`'s object (NULL: none) as nested lists,
 * every key and value escaped. */
void ui_put_status(struct ui_req *r, struct json_object *status);
/* The `#doctor` block: state "idle", "running", "done" or "failed"; out
 * (done: doctor --json's stdout, parsed here; one `li.attack` per check,
 * data-outcome blocked / succeeded / skipped for doctor's passed / failed /
 * skipped) or why it failed (failed); times in ms (0: none). */
void ui_put_doctor(struct ui_req *r, const char *state, const char *out, const char *failure, int64_t started_ms,
                   int64_t finished_ms);

/* Rows per page of /ui/activity, and the last page one may ask for. */
#define UI_ACTIVITY_PAGE_ROWS 50
#define UI_ACTIVITY_PAGE_MAX 10000
/* /ui/activity's filters, checked. */
struct ui_activity_query {
	const char *sandbox; /* borrowed from the request; NULL = any */
	const char *tool;    /* borrowed; NULL = any */
	int64_t page;        /* 1 … UI_ACTIVITY_PAGE_MAX */
};
/* Checks the query arguments sandbox, tool and page (each NULL or "" when
 * absent; borrowed, and q borrows them): sandbox a sandbox id, tool 1 to 64
 * of [a-z_./], page a decimal 1 … UI_ACTIVITY_PAGE_MAX. NULL when good,
 * else a sentence (static) saying which is wrong and what it must be. */
const char *ui_activity_query_parse(const char *sandbox, const char *tool, const char *page,
                                    struct ui_activity_query *q);
void ui_view_activity(struct ui_req *r, const char *id); /* GET /ui/activity */

/* The static assets (assets.c, embedded from ui/assets/ at build time). */
void ui_asset(struct ui_req *r, const char *id);

#endif
