/* assets.c: the page's script and style sheet, compiled in from
 * ui/assets/ by scripts/embed-file.sh (the Makefile's build/gen rules), so
 * serve shows the page with no file beside it and nothing from a network. */
#include <string.h>

#include "ui_internal.h"

extern const char ui_app_js[];
extern const size_t ui_app_js_len;
extern const char ui_style_css[];
extern const size_t ui_style_css_len;

void ui_asset(struct ui_req *r, const char *id)
{
	(void)id;
	int js = !strcmp(r->in->path, "/ui/app.js");
	r->out->status = 200;
	r->out->content_type = js ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8";
	ui_put(r, "%R", js ? ui_app_js : ui_style_css);
}
