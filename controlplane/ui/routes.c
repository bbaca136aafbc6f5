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
    /* sandboxes (page_sandboxes.c, page_sandbox.c, page_destroy.c) */
    {"GET", "/ui/sandboxes", ui_view_sandboxes},
    {"GET", "/ui/sandboxes/*", ui_view_sandbox},
    {"GET", "/ui/sandboxes/*/destroy", ui_view_destroy_confirm},
    {"POST", "/ui/sandboxes/*/destroy", ui_do_destroy},
    /* saved work, health, activity */
    {"GET", "/ui/exports", ui_view_exports},
    {"GET", "/ui/exports/*", ui_view_export},
    {"GET", "/ui/exports/*/apply", ui_view_export_confirm},
    {"POST", "/ui/exports/*/apply", ui_do_export_apply},
    {"GET", "/ui/health", ui_view_health},
    {"POST", "/ui/health/doctor", ui_do_doctor},
    {"GET", "/ui/activity", ui_view_activity},
    {NULL, NULL, NULL},
};
