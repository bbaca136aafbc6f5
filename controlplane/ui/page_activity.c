/* page_activity.c: /ui/activity (docs/ui.md, "Activity"): the audit table
 * newest first, UI_ACTIVITY_PAGE_ROWS a page, filtered by sandbox and by
 * tool (the row's action: a tool name, or approval.approve, export.apply,
 * ...), read with store_audit_list. The filters are checked before any
 * query: a value that is not a sandbox id or a short tool word is answered
 * with a 400 page saying what it must be. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/id.h"
#include "../store/store.h"
#include "ui_internal.h"

/* The longest tool filter: longer than any tool or audit action. */
#define TOOL_MAX 64

const char *ui_activity_query_parse(const char *sandbox, const char *tool, const char *page,
                                    struct ui_activity_query *q)
{
	*q = (struct ui_activity_query){.page = 1};
	if (sandbox && *sandbox) {
		if (!id_valid(sandbox, "sbx_"))
			return "The sandbox filter must be a sandbox id: sbx_ followed by 20 letters and digits, as on "
			       "the "
			       "Sandboxes page. Leave it empty for every sandbox.";
		q->sandbox = sandbox;
	}
	if (tool && *tool) {
		size_t n = strspn(tool, "abcdefghijklmnopqrstuvwxyz_./");
		if (tool[n] != '\0' || n > TOOL_MAX)
			return "The tool filter must be one tool or action name: up to 64 lowercase letters, '_', '.' "
			       "and '/', such as bash, sandbox_create or approval.approve. Leave it empty for every "
			       "tool.";
		q->tool = tool;
	}
	if (page && *page) {
		int64_t v = 0;
		size_t i = 0;
		for (; page[i] >= '0' && page[i] <= '9' && v <= UI_ACTIVITY_PAGE_MAX; i++)
			v = v * 10 + (page[i] - '0');
		if (page[i] != '\0' || v < 1 || v > UI_ACTIVITY_PAGE_MAX)
			return "The page must be a number from 1 to 10000.";
		q->page = v;
	}
	return NULL;
}

/* The address of page p of query q (values checked: no character in them
 * needs percent-encoding). */
static void put_href(struct ui_req *r, const struct ui_activity_query *q, int64_t p)
{
	ui_put(r, "/ui/activity?page=%L", p);
	if (q->sandbox)
		ui_put(r, "&amp;sandbox=%s", q->sandbox);
	if (q->tool)
		ui_put(r, "&amp;tool=%s", q->tool);
}

static void put_row(struct ui_req *r, const struct audit_row *a)
{
	struct ui_activity_query q;
	ui_put(r, "<tr class=\"audit\" data-status=\"%s\"><td>", a->status);
	ui_put_time(r, a->at_ms);
	ui_put(r, "</td><td>%s</td><td>", a->actor);
	/* Filter links only for what the filter accepts (rows written by
	 * older versions or by hand may hold anything). */
	if (!ui_activity_query_parse(NULL, a->action, NULL, &q))
		ui_put(r, "<a href=\"/ui/activity?tool=%s\"><code>%s</code></a>", a->action, a->action);
	else
		ui_put(r, "<code>%s</code>", a->action);
	ui_put(r, "</td><td>");
	if (a->sandbox_id && id_valid(a->sandbox_id, "sbx_"))
		ui_put(r, "<a href=\"/ui/activity?sandbox=%s\"><code>%s</code></a>", a->sandbox_id, a->sandbox_id);
	else if (a->sandbox_id)
		ui_put(r, "<code>%s</code>", a->sandbox_id);
	ui_put(r, "</td><td>");
	if (a->target && *a->target)
		ui_put(r, "<code>%s</code>", a->target);
	ui_put(r, "</td><td class=\"status\">%s</td><td>%L ms</td><td>%s</td></tr>", a->status, a->duration_ms,
	       a->message);
}

void ui_view_activity(struct ui_req *r, const char *id)
{
	(void)id;
	struct ui_activity_query q;
	const char *why = ui_activity_query_parse(ui_query(r, "sandbox"), ui_query(r, "tool"), ui_query(r, "page"), &q);
	if (why) {
		ui_page_message(r, 400, "Not a filter", why, "/ui/activity");
		return;
	}
	struct audit_filter f = {.sandbox_id = q.sandbox, .action = q.tool};
	struct audit_row *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	/* One row more than a page: whether a next page exists. */
	if (store_audit_list(r->ui->deps.store, &f, (q.page - 1) * UI_ACTIVITY_PAGE_ROWS, UI_ACTIVITY_PAGE_ROWS + 1,
	                     &rows, &n, &err) < 0) {
		ui_page_error(r, err, "/ui/");
		cp_error_free(err);
		return;
	}
	const int more = n > UI_ACTIVITY_PAGE_ROWS;
	ui_page_begin(r, 200, "Activity", "activity", 1);
	ui_put(r,
	       "<p class=\"note\">Everything done through MCP, the command line, serve and this page, newest "
	       "first.</p><form method=\"get\" action=\"/ui/activity\" class=\"filters\"><label>Sandbox "
	       "<input name=\"sandbox\" value=\"%s\" placeholder=\"sbx_…\" size=\"28\"></label> <label>Tool "
	       "<input name=\"tool\" value=\"%s\" placeholder=\"bash\" size=\"18\"></label> <button "
	       "type=\"submit\">Filter</button> <a href=\"/ui/activity\">All</a></form>",
	       q.sandbox, q.tool);
	if (!n) {
		ui_put(r, "<p class=\"note\">%R</p>", q.page > 1 ? "No rows on this page." : "No activity matches.");
	} else {
		ui_put(r,
		       "<table class=\"activity\"><thead><tr><th>When</th><th>Who</th><th>Action</th><th>Sandbox</th>"
		       "<th>Target</th><th>Status</th><th>Took</th><th>Message</th></tr></thead><tbody>");
		for (size_t i = 0; i < n && i < UI_ACTIVITY_PAGE_ROWS; i++)
			put_row(r, &rows[i]);
		ui_put(r, "</tbody></table>");
	}
	ui_put(r, "<nav class=\"pages\" aria-label=\"Activity pages\"><p>");
	if (q.page > 1) {
		ui_put(r, "<a rel=\"prev\" href=\"");
		put_href(r, &q, q.page - 1);
		ui_put(r, "\">Newer</a> ");
	}
	ui_put(r, "page %L", q.page);
	if (more && q.page < UI_ACTIVITY_PAGE_MAX) {
		ui_put(r, " <a rel=\"next\" href=\"");
		put_href(r, &q, q.page + 1);
		ui_put(r, "\">Older</a>");
	}
	ui_put(r, "</p></nav>");
	ui_page_end(r);
	for (size_t i = 0; i < n; i++)
		audit_row_clear(&rows[i]);
	free(rows);
}
