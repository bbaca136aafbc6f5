/* page_overview.c: /ui/, what needs the person first: the approvals
 * waiting for a decision, then the sandboxes (docs/ui.md, "Overview"). */
#include "ui_internal.h"

void ui_view_overview(struct ui_req *r, const char *id)
{
	(void)id;
	ui_page_begin(r, 200, "Overview", "overview", 1);
	ui_put_approvals(r, 1);
	ui_put(r, "<section aria-labelledby=\"sbx-h\"><h2 id=\"sbx-h\">Sandboxes</h2>");
	ui_put_sandboxes(r);
	ui_put(r, "</section>");
	ui_page_end(r);
}
