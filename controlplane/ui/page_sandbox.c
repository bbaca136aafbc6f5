/* page_sandbox.c: one sandbox on the page, /ui/sandboxes/ID (docs/ui.md,
 * "Sandboxes"): every fact of the table, its bash sessions with the tail
 * of their output (live: the page is re-fetched every 2 s), its previews
 * (sandbox_expose's ports, opened in a new tab) and the Destroy link. The
 * facts are gathered by sandbox_view.c; this file only writes them. */
#include <stdio.h>

#include "../base/id.h"
#include "../lifecycle/lifecycle.h"
#include "ui_internal.h"

static void put_session(struct ui_req *r, const struct ui_bash_session *b)
{
	ui_put(r,
	       "<section class=\"session\" data-session=\"%s\" aria-label=\"Session %s\"><h3>Session "
	       "<code>%s</code></h3><pre class=\"command\">%s</pre>",
	       b->id, b->id, b->id, b->command ? b->command : "");
	ui_put(r, "<p><span class=\"status\" data-status=\"%s\">%s", b->status, b->status);
	if (b->has_exit)
		ui_put(r, " (exit code %L)", b->exit_code);
	if (b->reason)
		ui_put(r, ": %s", b->reason);
	ui_put(r, "</span> · started ");
	ui_put_time(r, b->started_ms);
	if (b->ended_ms > 0) {
		ui_put(r, " · ended ");
		ui_put_time(r, b->ended_ms);
	}
	ui_put(r, " · ");
	ui_put_size(r, b->total_bytes);
	ui_put(r, " of output%R</p>", b->total_bytes > UI_OUTPUT_TAIL ? " (the last 4 KiB are shown)" : "");
	if (b->output)
		ui_put(r, "<pre class=\"output\" data-key=\"%s\" tabindex=\"0\">%s</pre>", b->id, b->output);
	else
		ui_put(r, "<p class=\"note\">%s</p>", b->output_error ? b->output_error : "no output");
	ui_put(r, "</section>");
}

void ui_sandbox_view_render(struct ui_req *r, const struct ui_sandbox_view *v)
{
	const struct sandbox_record *s = &v->s;
	ui_put_sandbox_facts(r, v);

	ui_put(r, "<section aria-labelledby=\"previews-h\"><h2 id=\"previews-h\">Previews</h2>");
	if (v->previews_error)
		ui_put(r, "<p class=\"note\">The exposed ports could not be read: %s</p>", v->previews_error);
	else if (v->n_previews == 0)
		ui_put(r, "<p class=\"note\">No port is exposed. The model publishes one with sandbox_expose.</p>");
	else
		ui_put(r, "<ul class=\"previews\">");
	for (size_t i = 0; i < v->n_previews; i++) {
		const struct ui_preview *p = &v->previews[i];
		ui_put(r,
		       "<li><a data-preview=\"%d\" href=\"%s\" target=\"_blank\" rel=\"noopener noreferrer\">Port %d: "
		       "%s</a></li>",
		       p->container_port, p->url, p->container_port, p->url);
	}
	if (v->n_previews)
		ui_put(r, "</ul><p class=\"note\">A preview opens in a new tab; anyone who can reach this machine's "
		          "address above can open it too.</p>");
	ui_put(r, "</section>");

	ui_put(r, "<section aria-labelledby=\"sessions-h\"><h2 id=\"sessions-h\">Bash sessions</h2>");
	if (v->sessions_note)
		ui_put(r, "<p class=\"note sessions-note\">%s</p>", v->sessions_note);
	else if (v->n_sessions == 0)
		ui_put(r, "<p class=\"note sessions-note\">No bash session yet. The model starts one with bash.</p>");
	else
		ui_put(r,
		       "<p class=\"note\">Newest first, at most %d; the output updates every 2 s. Reading it here "
		       "takes nothing from what the model reads with bash_poll.</p>",
		       UI_SESSIONS_SHOWN);
	for (size_t i = 0; i < v->n_sessions; i++)
		put_session(r, &v->sessions[i]);
	if (v->sessions_listed > v->n_sessions && !v->sessions_note)
		ui_put(r, "<p class=\"note\">%z older session(s) not shown.</p>", v->sessions_listed - v->n_sessions);
	ui_put(r, "</section>");

	if (s->status != SANDBOX_REMOVED)
		ui_put(r,
		       "<p class=\"actions\"><a class=\"button danger\" data-action=\"destroy\" "
		       "href=\"/ui/sandboxes/%s/destroy\">Destroy this sandbox…</a></p>",
		       s->id);
}

int ui_sandbox_id_ok(struct ui_req *r, const char *id)
{
	if (id_valid(id, "sbx_"))
		return 1;
	ui_page_message(r, 404, "No such sandbox",
	                "That is not a sandbox id (sbx_ followed by its letters); pick one on the Sandboxes page.",
	                "/ui/sandboxes");
	return 0;
}

void ui_view_sandbox(struct ui_req *r, const char *id)
{
	if (!ui_sandbox_id_ok(r, id))
		return;
	struct ui_sandbox_view v = {0};
	struct cp_error *err = NULL;
	if (ui_sandbox_view_gather(r, id, &v, &err) < 0) {
		ui_page_error(r, err, "/ui/sandboxes");
		cp_error_free(err);
		return;
	}
	char title[160];
	snprintf(title, sizeof(title), "Sandbox %s", id);
	ui_page_begin(r, 200, title, "sandboxes", 1);
	ui_sandbox_view_render(r, &v);
	ui_page_end(r);
	ui_sandbox_view_clear(&v);
}
