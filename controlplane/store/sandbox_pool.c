/* sandbox_pool.c: the rows of warm-pool members (issue 8, migration 0006).
 * A member is a sandboxes row with pooled = 1; a claim turns it into a user
 * sandbox with a single UPDATE, so two racing sandbox_create calls can never
 * get the same container. No engine calls here. */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

int store_sandbox_pool_claim(struct store *store, const char *node, const char *image, const char *runtime,
                             int64_t memory_bytes, int64_t disk_bytes, int64_t now_ms, char **ret_id,
                             struct cp_error **err)
{
	const char *what = "claim a warm sandbox";
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	/* One statement: the subquery and the update run under the same write
	 * lock, and "AND pooled = 1" in the outer WHERE makes a lost race a
	 * no-op instead of a double claim. */
	if (store_prepare(locked, &st,
	                  "UPDATE sandboxes SET pooled = 0, created_at_ms = ?1, updated_at_ms = ?1, "
	                  "last_activity_ms = ?1 WHERE pooled = 1 AND id = (SELECT id FROM sandboxes WHERE "
	                  "pooled = 1 AND status = 'running' AND image = ?2 AND COALESCE(runtime, '') = ?3 AND "
	                  "COALESCE(memory_bytes, 0) = ?4 AND disk_bytes = ?5 AND COALESCE(nano_cpus, 0) = 0 AND "
	                  "network = 1 AND node = ?6 ORDER BY created_at_ms, id LIMIT 1) RETURNING id",
	                  what, err) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, image, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, runtime ? runtime : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, memory_bytes);
	sqlite3_bind_int64(st, 5, disk_bytes);
	sqlite3_bind_text(st, 6, node ? node : STORE_NODE_LOCAL, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return 0;
	if (rc != SQLITE_ROW)
		return store_fail(locked, err, what);
	_cleanup_free_ char *id = store_column_strdup(st, 0);
	/* RETURNING rows are final only once the statement completes. */
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, what);
	*ret_id = TAKE_PTR(id);
	return 1;
}

int store_sandbox_pool_list(struct store *store, struct sandbox_record **ret, size_t *ret_n, struct cp_error **err)
{
	struct sandbox_record *all = NULL;
	size_t n = 0;
	if (store_sandbox_list(store, STORE_SANDBOX_LIST_POOLED, &all, &n, err) < 0)
		return -1;
	size_t kept = 0;
	for (size_t i = 0; i < n; i++) {
		if (all[i].pooled)
			all[kept++] = all[i];
		else
			sandbox_record_clear(&all[i]);
	}
	*ret = all;
	*ret_n = kept;
	return 0;
}

/* The workspace of warm-pool member id into *ret (caller frees; NULL for
 * none). NOT_FOUND for an unknown id, CONFLICT when it is no longer pooled.
 * The caller holds the lock. */
static int member_workspace_locked(struct store *store, const char *id, const char *what, char **ret,
                                   struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st, "SELECT workspace_id, pooled FROM sandboxes WHERE id = ?", what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "forget warm sandbox: '%s' does not exist", id);
	if (rc != SQLITE_ROW)
		return store_fail(store, err, what);
	if (sqlite3_column_int(st, 1) != 1)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "forget warm sandbox: '%s' was claimed; it is a user sandbox now", id);
	*ret = store_column_strdup(st, 0);
	return 0;
}

/* The body of store_sandbox_pool_forget, in its transaction. */
static int forget_locked(struct store *store, const char *id, struct cp_error **err)
{
	const char *what = "forget warm sandbox";
	_cleanup_free_ char *workspace_id = NULL;
	if (member_workspace_locked(store, id, what, &workspace_id, err) < 0 ||
	    store_exec_arg(store, "DELETE FROM sandboxes WHERE id = ?", id, what, err) < 0)
		return -1;
	return store_exec_arg(store,
	                      "DELETE FROM workspaces WHERE id = ? AND mode = 'managed' AND NOT EXISTS "
	                      "(SELECT 1 FROM sandboxes s WHERE s.workspace_id = workspaces.id)",
	                      workspace_id, what, err);
}

int store_sandbox_pool_forget(struct store *store, const char *id, struct cp_error **err)
{
	return STORE_TRANSACTION(store, "forget warm sandbox", err, forget_locked(store, id, err));
}
