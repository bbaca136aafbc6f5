/* sandbox_pool.c: the rows of warm-pool members (issue 8, migration 0006).
 * A member is a sandboxes row with pooled = 1; a claim turns it into a user
 * sandbox with a single UPDATE, so two racing sandbox_create calls can never
 * get the same container. No engine calls here. */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

int store_sandbox_pool_claim(struct store *store, const char *image, const char *runtime, int64_t memory_bytes,
                             int64_t disk_bytes, int64_t now_ms, char **ret_id, struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	int r = 0;
	/* One statement: the subquery and the update run under the same write
	 * lock, and "AND pooled = 1" in the outer WHERE makes a lost race a
	 * no-op instead of a double claim. */
	if (sqlite3_prepare_v2(store->db,
	                       "UPDATE sandboxes SET pooled = 0, created_at_ms = ?1, updated_at_ms = ?1, "
	                       "last_activity_ms = ?1 WHERE pooled = 1 AND id = (SELECT id FROM sandboxes WHERE "
	                       "pooled = 1 AND status = 'running' AND image = ?2 AND COALESCE(runtime, '') = ?3 AND "
	                       "COALESCE(memory_bytes, 0) = ?4 AND disk_bytes = ?5 AND COALESCE(nano_cpus, 0) = 0 AND "
	                       "network = 1 ORDER BY created_at_ms, id LIMIT 1) RETURNING id",
	                       -1, &st, NULL) != SQLITE_OK) {
		r = store_fail(store, err, "claim a warm sandbox");
		goto out;
	}
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, image, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, runtime ? runtime : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, memory_bytes);
	sqlite3_bind_int64(st, 5, disk_bytes);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		char *id = store_column_strdup(st, 0);
		/* RETURNING rows are final only once the statement completes. */
		if (sqlite3_step(st) != SQLITE_DONE) {
			free(id);
			r = store_fail(store, err, "claim a warm sandbox");
			goto out;
		}
		*ret_id = id;
		r = 1;
	} else if (rc != SQLITE_DONE) {
		r = store_fail(store, err, "claim a warm sandbox");
	}
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&store->lock);
	return r;
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

int store_sandbox_pool_forget(struct store *store, const char *id, struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	char *workspace_id = NULL;
	int r = store_exec(store, "BEGIN IMMEDIATE", "forget warm sandbox", err);
	if (r < 0)
		goto out;
	if (sqlite3_prepare_v2(store->db, "SELECT workspace_id, pooled FROM sandboxes WHERE id = ?", -1, &st, NULL) !=
	    SQLITE_OK) {
		r = store_fail(store, err, "forget warm sandbox");
		goto rollback;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		r = rc == SQLITE_DONE
		        ? cp_error_set(err, CP_ERR_NOT_FOUND, "forget warm sandbox: '%s' does not exist", id)
		        : store_fail(store, err, "forget warm sandbox");
		goto rollback;
	}
	if (sqlite3_column_int(st, 1) != 1) {
		r = cp_error_set(err, CP_ERR_CONFLICT,
		                 "forget warm sandbox: '%s' was claimed; it is a user sandbox now", id);
		goto rollback;
	}
	workspace_id = store_column_strdup(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	const char *const steps[] = {"DELETE FROM sandboxes WHERE id = ?",
	                             "DELETE FROM workspaces WHERE id = ? AND mode = 'managed' AND NOT EXISTS "
	                             "(SELECT 1 FROM sandboxes s WHERE s.workspace_id = workspaces.id)"};
	for (size_t i = 0; i < 2; i++) {
		if (sqlite3_prepare_v2(store->db, steps[i], -1, &st, NULL) != SQLITE_OK) {
			r = store_fail(store, err, "forget warm sandbox");
			goto rollback;
		}
		sqlite3_bind_text(st, 1, i == 0 ? id : workspace_id, -1, SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE) {
			r = store_fail(store, err, "forget warm sandbox");
			goto rollback;
		}
		sqlite3_finalize(st);
		st = NULL;
	}
	r = store_exec(store, "COMMIT", "forget warm sandbox", err);
	if (r == 0)
		goto out;
rollback:
	sqlite3_finalize(st);
	st = NULL;
	store_exec(store, "ROLLBACK", "roll back", NULL);
out:
	sqlite3_finalize(st);
	free(workspace_id);
	pthread_mutex_unlock(&store->lock);
	return r;
}
