/* tools_internal.h: handlers and shared helpers of tools/ (the table in
 * table.c refers to these). Each handler follows mcp_tool_handler's contract. */
#ifndef CP_TOOLS_INTERNAL_H
#define CP_TOOLS_INTERNAL_H

#include "tools.h"

struct json_object;

/* A sandbox row as tools answer it (caller puts). */
struct json_object *tools_sandbox_json(struct tools_app *app, const struct sandbox_record *s);

int tool_sandbox_create(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_sandbox_list(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_sandbox_get(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_sandbox_destroy(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_sandbox_export(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
/* An export row as tools answer it (caller puts): id, kind, counts, and
 * the command the person runs (tools/export.c). */
struct json_object *tools_export_json(const struct export_record *x);
/* Adds unsaved_work (unsaved: an enum lifecycle_unsaved from
 * lifecycle_sandboxes_unsaved; true, false, "unknown", or nothing for
 * LIFECYCLE_UNSAVED_NONE) and last_export (the newest export of s) to o. */
void tools_sandbox_add_saved(struct tools_app *app, struct json_object *o, const struct sandbox_record *s, int unsaved);
int tool_sandbox_expose(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
/* The exposed ports of a sandbox as a JSON array (caller puts), NULL when the
 * registry cannot be read (tools/expose.c). */
struct json_object *tools_exposures_json(struct tools_app *app, const char *sandbox_id);
int tool_workspace_list(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_bash_run(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_bash_poll(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_bash_stop(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_bash_input(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_bash_list(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_files_edit(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_files_apply_patch(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_files_search(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_files_list(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_files_read(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);
int tool_files_write(const struct mcp_call *, const struct mcp_args *, struct json_object **, struct cp_error **);

/* Calls method on the sandbox's helper: resolves the channel (activity is
 * recorded), sends params (borrowed), waits up to timeout_ms. *ret (caller
 * puts) is the helper's result. Errors name the sandbox. */
int tools_helper_call(struct tools_app *app, const char *sandbox_id, const char *method, struct json_object *params,
                      long timeout_ms, struct json_object **ret, struct cp_error **err);

#endif
