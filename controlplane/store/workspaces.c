/* workspaces.c: rows of the workspaces table. No policy here (policy/ decides
 * what may become a workspace); this only persists and loads. The _locked
 * helpers run inside a caller's lock (and transaction), for approvals.c. */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

void workspace_record_clear(struct workspace_record *w)
{
	if (!w)
		return;
	free(w->id);
	free(w->mode);
	free(w->path);
	free(w->host_path);
	free(w->sandbox_id);
	free(w->node);
	free(w->volume);
	*w = (struct workspace_record){0};
}

#define WS_COLUMNS                                                                                                     \
	"w.id, w.mode, w.path, w.host_path, w.created_at_ms, COALESCE(w.released_at_ms, 0), "                          \
	"(SELECT s.id FROM sandboxes s WHERE s.workspace_id = w.id AND " STORE_SANDBOX_LIVE(                           \
	    "s.") "), "                                                                                                \
	          "COALESCE(w.trashed_at_ms, 0), w.node, w.volume"

static void read_row(sqlite3_stmt *st, void *row)
{
	struct workspace_record *w = row;
	w->id = store_column_strdup(st, 0);
	w->mode = store_column_strdup(st, 1);
	w->path = store_column_strdup(st, 2);
	w->host_path = store_column_strdup(st, 3);
	w->created_at_ms = sqlite3_column_int64(st, 4);
	w->released_at_ms = sqlite3_column_int64(st, 5);
	w->sandbox_id = store_column_strdup(st, 6);
	w->trashed_at_ms = sqlite3_column_int64(st, 7);
	w->node = store_column_strdup(st, 8);
	w->volume = store_column_strdup(st, 9);
}

STORE_ROW_TYPE(rows, struct workspace_record, read_row, workspace_record_clear);

int store_workspace_insert_locked(struct store *store, const struct workspace_record *w, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st,
	                  "INSERT INTO workspaces (id, mode, path, host_path, created_at_ms, node, volume) "
	                  "VALUES (?,?,?,?,?,COALESCE(?, 'local'),?)",
	                  "insert workspace", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, w->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, w->mode, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, w->path, -1, SQLITE_STATIC);
	store_bind_text_opt(st, 4, w->host_path);
	sqlite3_bind_int64(st, 5, w->created_at_ms);
	store_bind_text_opt(st, 6, w->node);
	store_bind_text_opt(st, 7, w->volume);
	if (sqlite3_step(st) != SQLITE_DONE) {
		store_fail(store, err, "insert workspace");
		return cp_error_prefix(err, "workspace '%s'", w->id);
	}
	return 0;
}

void store_node_mode_key(const char *node, const char *mode, char *buf, size_t size)
{
	snprintf(buf, size, "%s/%s", node ? node : STORE_NODE_LOCAL, mode ? mode : "");
}

int store_workspace_find_host_locked(struct store *store, const char *node, const char *real_path, const char *mode,
                                     struct workspace_record *ret, int *ret_found, struct cp_error **err)
{
	char key[STORE_NODE_MODE_KEY_MAX];
	store_node_mode_key(node, mode, key, sizeof(key));
	return store_get_row_locked(store, &rows,
	                            "SELECT " WS_COLUMNS " FROM workspaces w WHERE w.path = ?1 AND "
	                            "w.node || '/' || w.mode = ?2",
	                            real_path, key, "load workspace", ret, ret_found, err);
}

int store_workspace_insert(struct store *store, const struct workspace_record *w, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	return store_workspace_insert_locked(locked, w, err);
}

int store_workspace_get(struct store *store, const char *id, struct workspace_record *ret, struct cp_error **err)
{
	int found = 0;
	int r = store_get_row(store, &rows, "SELECT " WS_COLUMNS " FROM workspaces w WHERE w.id = ?", id, NULL,
	                      "load workspace", ret, &found, err);
	if (r == 0 && !found)
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "workspace '%s' does not exist; call workspace_list to see the known workspaces",
		                    id);
	return r;
}

int store_workspace_find_host(struct store *store, const char *real_path, const char *mode,
                              struct workspace_record *ret, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	int found = 0;
	if (store_workspace_find_host_locked(locked, NULL, real_path, mode, ret, &found, err) < 0)
		return -1;
	if (!found)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "no %s workspace for '%s'", mode, real_path);
	return 0;
}

int store_workspace_list(struct store *store, struct workspace_record **ret, size_t *ret_n, struct cp_error **err)
{
	/* A warm-pool member's workspace is nobody's yet (issue 8): hidden. */
	return store_list_rows(store, &rows,
	                       "SELECT " WS_COLUMNS
	                       " FROM workspaces w WHERE NOT EXISTS (SELECT 1 FROM sandboxes p WHERE "
	                       "p.workspace_id = w.id AND p.pooled = 1) ORDER BY w.created_at_ms, w.id",
	                       NULL, "list workspaces", (void **)ret, ret_n, err);
}

int store_workspace_delete(struct store *store, const char *id, struct cp_error **err)
{
	return store_exec_one(store, "DELETE FROM workspaces WHERE id = ?1", "delete workspace", "workspace", id, NULL,
	                      0, err);
}

int store_workspace_set_trashed(struct store *store, const char *id, const char *new_path, int64_t now_ms,
                                struct cp_error **err)
{
	return store_exec_one(store, "UPDATE workspaces SET path = ?2, trashed_at_ms = ?3 WHERE id = ?1",
	                      "move workspace to the trash", "workspace", id, new_path, now_ms, err);
}
