/* page_sandboxes.c: the sandboxes on the page (docs/ui.md, "Sandboxes"):
 * the table of live and failed ones from the registry. */
#include <stdlib.h>

#include "../store/store.h"
#include "ui_internal.h"

void ui_put_sandboxes(struct ui_req *r)
{
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	if (store_sandbox_list(r->ui->deps.store, 0, &rows, &n, &err) < 0) {
		ui_put(r, "<div class=\"result error\"><p>%s</p></div>", err->message);
		cp_error_free(err);
		return;
	}
	if (n == 0)
		ui_put(r, "<p class=\"note\">No sandbox. The model makes one with sandbox_create.</p>");
	else
		ui_put(r, "<table class=\"sandboxes\"><thead><tr><th>Sandbox</th><th>Status</th><th>Runtime</th>"
		          "<th>Workspace</th><th>Created</th><th>Last activity</th></tr></thead><tbody>");
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_record *s = &rows[i];
		ui_put(r,
		       "<tr data-sandbox=\"%s\"><td><a href=\"/ui/sandboxes/%s\"><code>%s</code></a></td><td>%s</td>"
		       "<td>%s</td><td>%s</td><td>",
		       s->id, s->id, s->id, sandbox_status_to_string(s->status), s->runtime ? s->runtime : "runc",
		       s->workspace_id ? s->workspace_id : "—");
		ui_put_time(r, s->created_at_ms);
		ui_put(r, "</td><td>");
		ui_put_time(r, s->last_activity_ms);
		ui_put(r, "</td></tr>");
		sandbox_record_clear(&rows[i]);
	}
	if (n)
		ui_put(r, "</tbody></table>");
	free(rows);
}
