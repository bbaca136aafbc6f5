/* workspace.h: workspaces and approvals as the host sees them (workspace.c):
 * the host-path policy applied with this configuration, the operator's
 * registration, approval decisions, and retention of released managed
 * workspaces. No engine and no running sandbox: the CLI uses these with or
 * without serve, and lifecycle/ (above) when a sandbox asks for a host
 * directory. */
#ifndef CP_WORKSPACE_H
#define CP_WORKSPACE_H

#include <stdint.h>

#include "../base/error.h"
#include "../config/config.h"
#include "../store/store.h"

/* Days a managed workspace is kept after its sandbox is removed. */
#define WORKSPACE_RETENTION_MS (30LL * 24 * 3600 * 1000)

/* State of a workspace for listings: "in_use" (a live sandbox), "trashed",
 * "retained" (managed, released; *ret_trash_at_ms = when it moves to the
 * trash), or "idle". Pure. */
const char *workspace_state(const struct workspace_record *w, int64_t *ret_trash_at_ms);

/* Checks a host path with the policy built from cfg (allowed roots, data
 * root). *ret_real (caller frees) is its resolution. Errors as
 * policy_host_path_check. */
int workspace_host_path_check(const struct config *cfg, const char *path, char **ret_real, struct cp_error **err);

/* `chat2sbx workspace add PATH --mode M`: policy, then the workspace of the
 * path and mode is reused or made, and the approval recorded approved.
 * *ret (caller clears) is the workspace, *ret_created whether it is new. */
int workspace_register(const struct config *cfg, struct store *store, const char *path, const char *mode,
                       struct workspace_record *ret, int *ret_created, struct cp_error **err);

/* Whether path (as written) of node (not 'local') may be a workspace in
 * mode, by what the registry knows (migration 0018): the node's host roots
 * (policy_node_path_check) and the nesting rule among its host workspaces
 * (self_id left out; may be NULL). NOT_FOUND for an unknown node; DENIED
 * or INVALID_ARGUMENT saying which rule. The path itself is looked at on
 * the node at every request and create (lifecycle/node_path.c): nothing
 * here reaches an engine. */
int workspace_node_path_check(struct store *store, const char *node, const char *path, const char *mode,
                              const char *self_id, struct cp_error **err);

/* `chat2sbx workspace add PATH --mode M --node NODE`: workspace_register
 * for node NULL or 'local'; for another node (issue 28, migration 0018) the
 * path as written under that node's host roots (policy_node_path_check,
 * mode direct only) and the nesting rule among its host workspaces, then
 * the same registration recording the node. NOT_FOUND for an unknown node.
 * Reaches no engine: the path is looked at on the node at every create. */
int workspace_register_on(const struct config *cfg, struct store *store, const char *node, const char *path,
                          const char *mode, struct workspace_record *ret, int *ret_created, struct cp_error **err);

/* `chat2sbx approval approve ID`: checks the approval's path with the policy
 * again (approval time; another node's: its roots and nesting, as
 * workspace_register_on), then approves it (store_approval_approve). */
int workspace_approval_approve(const struct config *cfg, struct store *store, const char *id,
                               struct approval_record *ret, struct cp_error **err);

/* Moves every managed workspace released more than WORKSPACE_RETENTION_MS
 * before now_ms, and without a live sandbox, to DATA_ROOT/trash/<id> (never
 * deletes; host workspaces are never touched). One kept on another node
 * (its files a volume there) is marked trashed in place: its volume stays
 * on the node, named in an info line, and its empty directory here goes.
 * A failure is logged and retried at the next run. Returns how many moved
 * or retired, or -1 when the registry cannot be read. Does not block
 * beyond the file system and the registry. */
int workspace_retention_run(const struct config *cfg, struct store *store, int64_t now_ms, struct cp_error **err);

#endif
