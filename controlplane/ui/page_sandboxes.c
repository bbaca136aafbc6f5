/* page_sandboxes.c: the sandboxes on the page (docs/ui.md, "Sandboxes"):
 * the table of live and failed ones from the registry, each with its
 * status, runtime, node, workspace and mode, limits, times, idle expiry,
 * paused-for-disk state and unsaved clone work, as lifecycle knows them;
 * and the words the detail page shares for those facts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "../lifecycle/lifecycle.h"
#include "ui_internal.h"

/* The words for an enum lifecycle_unsaved answer. */
static const char *unsaved_words(int unsaved)
{
	switch (unsaved) {
	case LIFECYCLE_UNSAVED_YES: return "yes: work since its last saved export";
	case LIFECYCLE_UNSAVED_NO: return "no: everything is in an export";
	case LIFECYCLE_UNSAVED_UNKNOWN: return "not known yet (being looked at)";
	default: return "—";
	}
}

/* Memory and CPUs of row s: its own or the default (default_memory). */
static void put_limits(struct ui_req *r, const struct sandbox_record *s, int64_t default_memory)
{
	if (s->memory_bytes > 0)
		ui_put_size(r, s->memory_bytes);
	else if (default_memory > 0) {
		ui_put_size(r, default_memory);
		ui_put(r, " (default)");
	} else
		ui_put(r, "engine default");
	ui_put(r, " memory, ");
	if (s->nano_cpus > 0) {
		char cpus[32];
		snprintf(cpus, sizeof(cpus), "%g CPUs", (double)s->nano_cpus / 1e9);
		ui_put(r, "%s", cpus);
	} else
		ui_put(r, "all CPUs");
}

/* The idle expiry (lifecycle_idle_expiry_at's answer at). */
static void put_expiry(struct ui_req *r, int64_t at)
{
	if (at == 0)
		ui_put(r, "—");
	else if (at <= r->now_ms)
		ui_put(r, "due now (at the next maintenance pass, within a minute)");
	else
		ui_put_time(r, at);
}

/* The sandbox's node as a <dt>/<dd> pair: 'local', or another machine's
 * engine with its endpoint, state and last answer (docs/nodes.md). */
static void put_node(struct ui_req *r, const struct ui_sandbox_view *v)
{
	const char *node = v->s.node && *v->s.node ? v->s.node : STORE_NODE_LOCAL;
	ui_put(r, "<dt>Node</dt><dd class=\"node\" data-node=\"%s\">", node);
	if (!strcmp(node, STORE_NODE_LOCAL)) {
		ui_put(r, "local (this machine's engine)</dd>");
		return;
	}
	if (!v->node_endpoint) {
		ui_put(r, "<code>%s</code>: no longer registered (node list)</dd>", node);
		return;
	}
	ui_put(r, "<code>%s</code>, the engine at <code>%s</code>: <span data-node-state=\"%s\">%s</span>", node,
	       v->node_endpoint, node_state_to_string(v->node_state), node_state_to_string(v->node_state));
	if (v->node_contact_ms) {
		ui_put(r, "; it last answered ");
		ui_put_time(r, v->node_contact_ms);
	}
	if (v->node_state == NODE_DOWN)
		ui_put(r, "<br><span class=\"note\">Its sandboxes answer UNAVAILABLE until it answers again; their "
		          "rows and files are kept.</span>");
	ui_put(r, "</dd>");
}

void ui_put_sandbox_facts(struct ui_req *r, const struct ui_sandbox_view *v)
{
	const struct sandbox_record *s = &v->s;
	ui_put(r, "<dl class=\"facts\"><dt>Status</dt><dd class=\"sandbox-status\" data-status=\"%s\">%s",
	       sandbox_status_to_string(s->status), sandbox_status_to_string(s->status));
	if (s->failure_reason)
		ui_put(r, ": %s", s->failure_reason);
	ui_put(r, "</dd><dt>Paused for disk</dt><dd class=\"paused\" data-paused=\"%R\">", v->paused ? "1" : "0");
	if (v->paused)
		ui_put(r, "yes: %s. It resumes on its own, with everything in it, once space is freed.",
		       v->paused_reason);
	else
		ui_put(r, "no");
	ui_put(r, "</dd><dt>Runtime</dt><dd>%s%R%s</dd>", s->runtime ? s->runtime : "runc (the engine's default)",
	       s->vm_accel ? ", " : "", s->vm_accel);
	put_node(r, v);
	ui_put(r, "<dt>Workspace</dt><dd><code>%s</code> (%s)", s->workspace_id, v->ws_mode ? v->ws_mode : "unknown");
	if (v->ws_host_path)
		ui_put(r, " of <code>%s</code>", v->ws_host_path);
	ui_put(r, "</dd><dt>Limits</dt><dd>");
	put_limits(r, s, v->default_memory_bytes);
	if (v->pids_default > 0)
		ui_put(r, "; processes: %L unless it was created with its own pids_limit", v->pids_default);
	if (s->disk_bytes > 0) {
		ui_put(r, "; disk ");
		ui_put_size(r, s->disk_bytes);
	}
	ui_put(r, "; network %R</dd><dt>Created</dt><dd>", s->network ? "on" : "off");
	ui_put_time(r, s->created_at_ms);
	ui_put(r, "</dd><dt>Last activity</dt><dd>");
	ui_put_time(r, v->last_activity_ms);
	ui_put(r, "</dd><dt>Idle expiry</dt><dd class=\"expiry\">");
	put_expiry(r, v->expiry_at_ms);
	if (v->expiry_at_ms)
		ui_put(r,
		       "<br><span class=\"note\">Removed after %L min without a tool call (CHAT2SBX_IDLE_TIMEOUT_MS); "
		       "looking at this page does not count. A clone's work is saved first; when that save fails it "
		       "is stopped and kept instead.</span>",
		       v->idle_timeout_ms / 60000);
	ui_put(r, "</dd><dt>Unsaved work</dt><dd class=\"unsaved\" data-unsaved=\"%d\">%s</dd></dl>", v->unsaved,
	       unsaved_words(v->unsaved));
}

void ui_put_sandboxes(struct ui_req *r)
{
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	struct lifecycle *lc = r->ui->deps.lc;
	if (store_sandbox_list(r->ui->deps.store, 0, &rows, &n, &err) < 0) {
		ui_put(r, "<div class=\"result error\"><p>%s</p></div>", err->message);
		cp_error_free(err);
		return;
	}
	int *unsaved = xcalloc(n ? n : 1, sizeof(*unsaved));
	if (lc)
		lifecycle_sandboxes_unsaved(lc, rows, n, unsaved);
	else
		for (size_t i = 0; i < n; i++)
			unsaved[i] = LIFECYCLE_UNSAVED_NONE;
	int64_t default_memory = lc ? lifecycle_limits_in_force(lc)->default_memory_bytes : 0;
	if (n == 0)
		ui_put(r, "<p class=\"note\">No sandbox. The model makes one with sandbox_create.</p>");
	else
		ui_put(r, "<table class=\"sandboxes\"><thead><tr><th>Sandbox</th><th>Status</th><th>Runtime</th>"
		          "<th>Node</th><th>Workspace</th><th>Limits</th><th>Created</th><th>Last "
		          "activity</th><th>Idle expiry</th>"
		          "<th>Unsaved work</th></tr></thead><tbody>");
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_record *s = &rows[i];
		struct workspace_record w = {0};
		if (store_workspace_get(r->ui->deps.store, s->workspace_id, &w, &err) < 0) {
			cp_error_free(err);
			err = NULL;
		}
		int paused = lc && lifecycle_disk_paused(lc, s->id, NULL, 0);
		ui_put(r,
		       "<tr data-sandbox=\"%s\"><td><a href=\"/ui/sandboxes/%s\"><code>%s</code></a></td>"
		       "<td data-status=\"%s\">%s%R</td><td>%s</td><td data-node=\"%s\">%s</td><td><code>%s</code> "
		       "(%s)</td><td>",
		       s->id, s->id, s->id, sandbox_status_to_string(s->status), sandbox_status_to_string(s->status),
		       paused ? ", <strong class=\"paused\">paused for disk</strong>" : "",
		       s->runtime ? s->runtime : "runc", s->node && *s->node ? s->node : STORE_NODE_LOCAL,
		       s->node && *s->node ? s->node : STORE_NODE_LOCAL, s->workspace_id ? s->workspace_id : "—",
		       w.mode ? w.mode : "unknown");
		put_limits(r, s, default_memory);
		ui_put(r, "</td><td>");
		ui_put_time(r, s->created_at_ms);
		int64_t unwritten = lc ? lifecycle_activity_unwritten(lc, s->id) : 0;
		ui_put(r, "</td><td>");
		ui_put_time(r, unwritten > s->last_activity_ms ? unwritten : s->last_activity_ms);
		ui_put(r, "</td><td>");
		put_expiry(r, lc ? lifecycle_idle_expiry_at(lc, s) : 0);
		ui_put(r, "</td><td data-unsaved=\"%d\">%s</td></tr>", unsaved[i], unsaved_words(unsaved[i]));
		workspace_record_clear(&w);
		sandbox_record_clear(&rows[i]);
	}
	if (n)
		ui_put(r, "</tbody></table>");
	free(unsaved);
	free(rows);
}

void ui_view_sandboxes(struct ui_req *r, const char *id)
{
	(void)id;
	ui_page_begin(r, 200, "Sandboxes", "sandboxes", 1);
	ui_put_sandboxes(r);
	ui_page_end(r);
}
