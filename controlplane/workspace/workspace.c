/* workspace.c: workspaces as the host sees them: the host-path policy applied
 * with this configuration, operator registration, approval decisions, and
 * retention (managed workspaces kept 30 days after their sandbox, then moved
 * to DATA_ROOT/trash, never deleted). No engine calls: the CLI uses these
 * with or without serve running. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../policy/policy.h"
#include "../export/export.h"
#include "../guard/guard.h"
#include "workspace.h"

const char *workspace_state(const struct workspace_record *w, int64_t *ret_trash_at_ms)
{
	if (ret_trash_at_ms)
		*ret_trash_at_ms = 0;
	if (w->trashed_at_ms > 0)
		return "trashed";
	if (w->sandbox_id)
		return "in_use";
	if (!strcmp(w->mode, "managed") && w->released_at_ms > 0) {
		if (ret_trash_at_ms)
			*ret_trash_at_ms = w->released_at_ms + WORKSPACE_RETENTION_MS;
		return "retained";
	}
	return "idle";
}

int workspace_host_path_check(const struct config *cfg, const char *path, char **ret_real, struct cp_error **err)
{
	size_t n = 0;
	char **roots = policy_roots_split(cfg->allowed_host_roots, &n);
	/* chat2sbx's own paths that may live outside the data root (rule 5):
	 * a direct workspace over the registry could approve itself anything,
	 * over the helper's directory it could replace PID 1 of new sandboxes. */
	char db_dir[PATH_MAX], helper_dir[PATH_MAX];
	snprintf(db_dir, sizeof(db_dir), "%s", cfg->database_path);
	snprintf(helper_dir, sizeof(helper_dir), "%s", cfg->helper_path);
	char *slash = strrchr(db_dir, '/');
	if (slash && slash != db_dir)
		*slash = '\0';
	slash = strrchr(helper_dir, '/');
	if (slash && slash != helper_dir)
		*slash = '\0';
	const char *own[] = {cfg->state_dir, db_dir, cfg->workspace_root, helper_dir, cfg->secret_dir};
	struct policy_host_roots pr = {.roots = (const char *const *)roots,
	                               .n = n,
	                               .data_root = cfg->data_root,
	                               .own_paths = own,
	                               .n_own_paths = sizeof(own) / sizeof(own[0])};
	int r = policy_host_path_check(&pr, path, ret_real, err);
	policy_roots_free(roots);
	return r;
}

static int check_mode(const char *mode, struct cp_error **err)
{
	if (mode && (!strcmp(mode, "clone") || !strcmp(mode, "direct")))
		return 0;
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
	                    "workspace mode '%s' is not one of clone (a private copy, the default) or direct (the "
	                    "host directory itself, read-write)",
	                    mode ? mode : "");
}

int workspace_register(const struct config *cfg, struct store *store, const char *path, const char *mode,
                       struct workspace_record *ret, int *ret_created, struct cp_error **err)
{
	if (check_mode(mode, err) < 0)
		return -1;
	_cleanup_free_ char *real = NULL;
	_cleanup_free_ char *ws_id = NULL;
	_cleanup_free_ char *approval_id = NULL;
	if (workspace_host_path_check(cfg, path, &real, err) < 0 ||
	    guard_host_nesting_check(store, real, mode, NULL, err) < 0 || id_new("ws_", &ws_id, err) < 0 ||
	    id_new("approval_", &approval_id, err) < 0)
		return -1;
	int64_t now = clock_now_ms();
	struct workspace_record ws = {
	    .id = ws_id, .mode = (char *)mode, .path = real, .host_path = real, .created_at_ms = now};
	return store_workspace_register_host(store, &ws, path, approval_id, now, ret, ret_created, err);
}

int workspace_node_path_check(struct store *store, const char *node, const char *path, const char *mode,
                              const char *self_id, struct cp_error **err)
{
	struct node_record n = {0};
	if (store_node_get(store, node, &n, err) < 0)
		return -1;
	int r = policy_node_path_check(node, n.host_roots, path, mode, err);
	node_record_clear(&n);
	if (r < 0 || guard_node_nesting_check(store, node, path, mode, self_id, err) < 0)
		return -1;
	return 0;
}

int workspace_register_on(const struct config *cfg, struct store *store, const char *node, const char *path,
                          const char *mode, struct workspace_record *ret, int *ret_created, struct cp_error **err)
{
	if (!node || !strcmp(node, STORE_NODE_LOCAL))
		return workspace_register(cfg, store, path, mode, ret, ret_created, err);
	if (check_mode(mode, err) < 0 || workspace_node_path_check(store, node, path, mode, NULL, err) < 0)
		return -1;
	_cleanup_free_ char *ws_id = NULL;
	_cleanup_free_ char *approval_id = NULL;
	if (id_new("ws_", &ws_id, err) < 0 || id_new("approval_", &approval_id, err) < 0)
		return -1;
	struct workspace_record ws = {.id = ws_id,
	                              .mode = (char *)mode,
	                              .path = (char *)path,
	                              .host_path = (char *)path,
	                              .created_at_ms = clock_now_ms(),
	                              .node = (char *)node};
	return store_workspace_register_host(store, &ws, path, approval_id, clock_now_ms(), ret, ret_created, err);
}

int workspace_approval_approve(const struct config *cfg, struct store *store, const char *id,
                               struct approval_record *ret, struct cp_error **err)
{
	struct approval_record a = {0};
	if (store_approval_get(store, id, &a, err) < 0)
		return -1;
	_cleanup_free_ char *real = NULL;
	_cleanup_free_ char *ws_id = NULL;
	int r = -1;
	int remote = a.node && strcmp(a.node, STORE_NODE_LOCAL) != 0;
	if (a.status == APPROVAL_PENDING && remote) {
		/* Another node's directory: its roots and nesting now; the path
		 * itself on the node at every create. */
		if (workspace_node_path_check(store, a.node, a.real_path, a.mode, NULL, err) < 0) {
			cp_error_prefix(err, "approve '%s'", id);
			goto out;
		}
	} else if (a.status == APPROVAL_PENDING) {
		/* Approval time: the path may have changed since it was requested. */
		if (workspace_host_path_check(cfg, a.host_path, &real, err) < 0) {
			cp_error_prefix(err, "approve '%s'", id);
			goto out;
		}
		if (strcmp(real, a.real_path) != 0) {
			cp_error_set(err, CP_ERR_DENIED,
			             "approve '%s': '%s' now resolves to '%s', not '%s' as when it was requested; "
			             "reject it and ask again",
			             id, a.host_path, real, a.real_path);
			goto out;
		}
		if (guard_host_nesting_check(store, real, a.mode, NULL, err) < 0) {
			cp_error_prefix(err, "approve '%s'", id);
			goto out;
		}
	}
	if (id_new("ws_", &ws_id, err) < 0)
		goto out;
	struct workspace_record ws = {.id = ws_id,
	                              .mode = a.mode,
	                              .path = a.real_path,
	                              .host_path = a.real_path,
	                              .created_at_ms = clock_now_ms(),
	                              .node = a.node};
	r = store_approval_approve(store, id, &ws, clock_now_ms(), ret, err);
out:
	approval_record_clear(&a);
	return r;
}

/* Retention of a managed workspace kept on another node (migration 0015,
 * docs/nodes.md): its files are a volume of that node's engine. The rule
 * here is DESIGN.md's "Sandboxes: lifetime" (moved to the trash, the trash
 * never emptied automatically), so the volume is not removed: on its node
 * it is what the trash directory is here, and this layer has no engine to
 * move it with anyway. The row is marked trashed (a later create is refused
 * naming the volume and the node, create.c; `workspace list` names them)
 * and this one line says where the files are, once. The directory this
 * machine made for it holds nothing of it: removed when empty, moved to the
 * trash otherwise, and not needed at all (a missing one would otherwise
 * fail the move at every pass, for ever). */
static int retire_on_node(const struct config *cfg, struct store *store, const struct workspace_record *w,
                          int64_t now_ms, struct cp_error **err)
{
	_cleanup_free_ char *dest = NULL;
	if (rmdir(w->path) < 0 && errno != ENOENT && export_trash_move(cfg, w->path, w->id, &dest, err) < 0)
		return -1;
	if (store_workspace_set_trashed(store, w->id, dest ? dest : w->path, now_ms, err) < 0)
		return -1;
	log_info("lifecycle",
	         "workspace %s retired after 30 days without a sandbox: its files stay in the volume %s on node %s, "
	         "never removed by chat2sbx (docker volume rm there frees the space)",
	         w->id, w->volume, w->node);
	return 0;
}

int workspace_retention_run(const struct config *cfg, struct store *store, int64_t now_ms, struct cp_error **err)
{
	struct workspace_record *rows = NULL;
	size_t n = 0;
	if (store_workspace_list(store, &rows, &n, err) < 0)
		return -1;
	int moved = 0;
	for (size_t i = 0; i < n; i++) {
		struct workspace_record *w = &rows[i];
		int64_t trash_at = 0;
		const char *state = workspace_state(w, &trash_at);
		if (!strcmp(state, "retained") && trash_at <= now_ms && w->volume && w->node &&
		    strcmp(w->node, STORE_NODE_LOCAL)) {
			struct cp_error *e = NULL;
			if (retire_on_node(cfg, store, w, now_ms, &e) < 0)
				cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "retention of workspace %s", w->id);
			else
				moved++;
		} else if (!strcmp(state, "retained") && trash_at <= now_ms) {
			char *dest = NULL;
			struct cp_error *e = NULL;
			if (export_trash_move(cfg, w->path, w->id, &dest, &e) < 0 ||
			    store_workspace_set_trashed(store, w->id, dest, now_ms, &e) < 0) {
				cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "retention of workspace %s", w->id);
			} else {
				log_info("lifecycle", "workspace %s moved to the trash: %s", w->id, dest);
				moved++;
			}
			free(dest);
		}
		workspace_record_clear(w);
	}
	free(rows);
	/* Saved clone work follows the same rule (export_retention.c). */
	struct cp_error *e = NULL;
	if (export_retention_run(cfg, store, now_ms, WORKSPACE_RETENTION_MS, &e) < 0) {
		cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "retention of exports");
	}
	return moved;
}
