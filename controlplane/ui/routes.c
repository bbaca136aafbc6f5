/* routes.c: the page's routes (ui_internal.h, struct ui_route): which view
 * answers which method and path. docs/ui.md lists them for people. Login,
 * the login code and logging out are server.c's, before any of these. */
#include <stddef.h>

#include "ui_internal.h"

const struct ui_route ui_routes[] = {
    {"GET", "/ui/", ui_view_overview},
    {"GET", "/ui/app.js", ui_asset},
    {"GET", "/ui/style.css", ui_asset},
    {"GET", "/ui/approvals", ui_view_approvals},
    {"GET", "/ui/approvals/*/approve", ui_view_approval_confirm},
    {"GET", "/ui/approvals/*/reject", ui_view_approval_confirm},
    {"POST", "/ui/approvals/*/approve", ui_do_approval},
    {"POST", "/ui/approvals/*/reject", ui_do_approval},
    {NULL, NULL, NULL},
};
