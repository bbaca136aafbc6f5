/* sandboxes.c: rows of the sandboxes table. A partial unique index keeps one
 * live (creating/running/removing) sandbox per workspace, so two racing creates cannot
 * both win. No engine calls here. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

void sandbox_record_clear(struct sandbox_record *s)
{
	if (!s)
		return;
	free(s->id);
	free(s->workspace_id);
	free(s->container_name);
	free(s->container_id);
	free(s->image);
	free(s->runtime);
	free(s->failure_reason);
	free(s->vm_accel);
	free(s->node);
	*s = (struct sandbox_record){0};
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

void sandbox_record_copy(struct sandbox_record *dst, const struct sandbox_record *src)
{
	*dst = *src;
	dst->id = dup_or_null(src->id);
	dst->workspace_id = dup_or_null(src->workspace_id);
	dst->container_name = dup_or_null(src->container_name);
	dst->container_id = dup_or_null(src->container_id);
	dst->image = dup_or_null(src->image);
	dst->runtime = dup_or_null(src->runtime);
	dst->failure_reason = dup_or_null(src->failure_reason);
	dst->vm_accel = dup_or_null(src->vm_accel);
	dst->node = dup_or_null(src->node);
}

#define SBX_COLUMNS                                                                                                    \
	"id, workspace_id, status, container_name, container_id, image, runtime, COALESCE(memory_bytes,0), "           \
	"COALESCE(nano_cpus,0), network, failure_reason, created_at_ms, updated_at_ms, last_activity_ms, "             \
	"COALESCE(removed_at_ms,0), pooled, disk_bytes, COALESCE(unsaved,-1), COALESCE(unsaved_checked_at_ms,0), "     \
	"removing_from, vm_accel, node"

static void read_row(sqlite3_stmt *st, void *row)
{
	struct sandbox_record *s = row;
	s->id = store_column_strdup(st, 0);
	s->workspace_id = store_column_strdup(st, 1);
	s->status = sandbox_status_from_string((const char *)sqlite3_column_text(st, 2));
	s->container_name = store_column_strdup(st, 3);
	s->container_id = store_column_strdup(st, 4);
	s->image = store_column_strdup(st, 5);
	s->runtime = store_column_strdup(st, 6);
	s->memory_bytes = sqlite3_column_int64(st, 7);
	s->nano_cpus = sqlite3_column_int64(st, 8);
	s->network = sqlite3_column_int(st, 9);
	s->failure_reason = store_column_strdup(st, 10);
	s->created_at_ms = sqlite3_column_int64(st, 11);
	s->updated_at_ms = sqlite3_column_int64(st, 12);
	s->last_activity_ms = sqlite3_column_int64(st, 13);
	s->removed_at_ms = sqlite3_column_int64(st, 14);
	s->pooled = sqlite3_column_int(st, 15);
	s->disk_bytes = sqlite3_column_int64(st, 16);
	s->unsaved = sqlite3_column_int(st, 17);
	s->unsaved_checked_at_ms = sqlite3_column_int64(st, 18);
	s->removing_from = sandbox_status_from_string((const char *)sqlite3_column_text(st, 19));
	s->vm_accel = store_column_strdup(st, 20);
	s->node = store_column_strdup(st, 21);
}

int store_sandbox_is_live(const struct sandbox_record *s)
{
	enum sandbox_status st = s->status == SANDBOX_REMOVING ? s->removing_from : s->status;
	return st == SANDBOX_CREATING || st == SANDBOX_RUNNING;
}

STORE_ROW_TYPE(rows, struct sandbox_record, read_row, sandbox_record_clear);

int store_sandbox_insert(struct store *store, const struct sandbox_record *s, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "INSERT INTO sandboxes (id, workspace_id, status, container_name, container_id, image, "
	                  "runtime, memory_bytes, nano_cpus, network, created_at_ms, updated_at_ms, "
	                  "last_activity_ms, pooled, disk_bytes, vm_accel, node) VALUES "
	                  "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,COALESCE(?17,'local'))",
	                  "insert sandbox", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, s->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, s->workspace_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, sandbox_status_to_string(s->status), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, s->container_name, -1, SQLITE_STATIC);
	store_bind_text_opt(st, 5, s->container_id);
	sqlite3_bind_text(st, 6, s->image, -1, SQLITE_STATIC);
	store_bind_text_opt(st, 7, s->runtime);
	sqlite3_bind_int64(st, 8, s->memory_bytes);
	sqlite3_bind_int64(st, 9, s->nano_cpus);
	sqlite3_bind_int(st, 10, s->network);
	sqlite3_bind_int64(st, 11, s->created_at_ms);
	sqlite3_bind_int64(st, 12, s->created_at_ms);
	sqlite3_bind_int64(st, 13, s->created_at_ms);
	sqlite3_bind_int(st, 14, s->pooled ? 1 : 0);
	sqlite3_bind_int64(st, 15, s->disk_bytes);
	store_bind_text_opt(st, 16, s->vm_accel);
	store_bind_text_opt(st, 17, s->node);
	if (sqlite3_step(st) == SQLITE_DONE)
		return 0;
	if ((sqlite3_extended_errcode(locked->db) & 0xff) == SQLITE_CONSTRAINT)
		return cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "workspace '%s' already has a live sandbox; use it (sandbox_list) or destroy it first",
		    s->workspace_id);
	return store_fail(locked, err, "insert sandbox");
}

static int get_one(struct store *store, const char *sql, const char *arg, struct sandbox_record *ret,
                   struct cp_error **err, int *ret_found)
{
	return store_get_row(store, &rows, sql, arg, NULL, "load sandbox", ret, ret_found, err);
}

int store_sandbox_get(struct store *store, const char *id, struct sandbox_record *ret, struct cp_error **err)
{
	int found;
	if (get_one(store, "SELECT " SBX_COLUMNS " FROM sandboxes WHERE id = ?", id, ret, err, &found) < 0)
		return -1;
	if (!found)
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "sandbox '%s' does not exist; call sandbox_list to see the sandboxes, or "
		                    "sandbox_create to make one",
		                    id);
	return 0;
}

int store_sandbox_get_live_for_workspace(struct store *store, const char *workspace_id, struct sandbox_record *ret,
                                         struct cp_error **err)
{
	int found;
	if (get_one(store, "SELECT " SBX_COLUMNS " FROM sandboxes WHERE workspace_id = ? AND " STORE_SANDBOX_LIVE(""),
	            workspace_id, ret, err, &found) < 0)
		return -1;
	if (!found)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "workspace '%s' has no live sandbox", workspace_id);
	return 0;
}

int store_sandbox_list(struct store *store, int include_removed, struct sandbox_record **ret, size_t *ret_n,
                       struct cp_error **err)
{
	/* Indexed by the flags (store.h): removed ones, warm-pool members. */
	static const char *const sql_for[] = {
	    "SELECT " SBX_COLUMNS " FROM sandboxes WHERE status != 'removed' AND pooled = 0 ORDER BY created_at_ms, id",
	    "SELECT " SBX_COLUMNS " FROM sandboxes WHERE pooled = 0 ORDER BY created_at_ms, id",
	    "SELECT " SBX_COLUMNS " FROM sandboxes WHERE status != 'removed' ORDER BY created_at_ms, id",
	    "SELECT " SBX_COLUMNS " FROM sandboxes ORDER BY created_at_ms, id",
	};
	const char *sql = sql_for[include_removed & 3];
	return store_list_rows(store, &rows, sql, NULL, "list sandboxes", (void **)ret, ret_n, err);
}

int store_sandbox_count_live(struct store *store, int *ret_count, struct cp_error **err)
{
	int64_t n = 0;
	if (store_count(store, "SELECT COUNT(*) FROM sandboxes WHERE " STORE_SANDBOX_LIVE("") " AND pooled = 0", NULL,
	                "count sandboxes", &n, err) < 0)
		return -1;
	*ret_count = (int)n;
	return 0;
}

int store_sandbox_count_live_on(struct store *store, const char *node, int *ret_count, struct cp_error **err)
{
	int64_t n = 0;
	if (store_count(store,
	                "SELECT COUNT(*) FROM sandboxes WHERE " STORE_SANDBOX_LIVE("") " AND pooled = 0 AND node = ?1",
	                node ? node : STORE_NODE_LOCAL, "count sandboxes", &n, err) < 0)
		return -1;
	*ret_count = (int)n;
	return 0;
}

/* The body of store_sandbox_set_status, in its transaction. */
static int set_status_locked(struct store *store, const char *id, enum sandbox_status status, const char *container_id,
                             const char *failure_reason, int64_t now_ms, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st,
	                  "UPDATE sandboxes SET status = ?1, container_id = COALESCE(?2, container_id), "
	                  "failure_reason = COALESCE(?3, failure_reason), updated_at_ms = ?4, "
	                  "removed_at_ms = CASE WHEN ?1 = 'removed' THEN ?4 ELSE removed_at_ms END WHERE id = ?5",
	                  "update sandbox", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, sandbox_status_to_string(status), -1, SQLITE_STATIC);
	store_bind_text_opt(st, 2, container_id);
	store_bind_text_opt(st, 3, failure_reason);
	sqlite3_bind_int64(st, 4, now_ms);
	sqlite3_bind_text(st, 5, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(store, err, "update sandbox");
	if (sqlite3_changes(store->db) == 0)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "update sandbox: sandbox '%s' does not exist", id);
	if (status != SANDBOX_REMOVED && status != SANDBOX_FAILED)
		return 0;
	_cleanup_stmt_ sqlite3_stmt *release = NULL;
	if (store_prepare(store, &release,
	                  "UPDATE workspaces SET released_at_ms = ?1 WHERE id = (SELECT workspace_id FROM "
	                  "sandboxes WHERE id = ?2)",
	                  "release workspace", err) < 0)
		return -1;
	sqlite3_bind_int64(release, 1, now_ms);
	sqlite3_bind_text(release, 2, id, -1, SQLITE_STATIC);
	if (sqlite3_step(release) != SQLITE_DONE)
		return store_fail(store, err, "release workspace");
	return 0;
}

int store_sandbox_set_status(struct store *store, const char *id, enum sandbox_status status, const char *container_id,
                             const char *failure_reason, int64_t now_ms, struct cp_error **err)
{
	assert(sandbox_status_to_string(status));
	return STORE_TRANSACTION(store, "update sandbox", err,
	                         set_status_locked(store, id, status, container_id, failure_reason, now_ms, err));
}

int store_sandbox_set_removing(struct store *store, const char *id, int64_t now_ms, struct cp_error **err)
{
	/* One statement: the status it replaces is kept in the same write, and
	 * a second call (a removal finished again) keeps the first one's. */
	return store_exec_one(store,
	                      "UPDATE sandboxes SET removing_from = CASE WHEN status = 'removing' THEN removing_from "
	                      "ELSE status END, status = 'removing', updated_at_ms = ?3 WHERE id = ?1 AND status != "
	                      "'removed'",
	                      "record the removal of sandbox", "sandbox", id, NULL, now_ms, err);
}

int store_sandbox_touch(struct store *store, const char *id, int64_t now_ms, struct cp_error **err)
{
	return store_exec_one(store, "UPDATE sandboxes SET last_activity_ms = MAX(last_activity_ms, ?3) WHERE id = ?1",
	                      "record activity", "sandbox", id, NULL, now_ms, err);
}

int store_sandbox_delete(struct store *store, const char *id, struct cp_error **err)
{
	return store_exec_one(store, "DELETE FROM sandboxes WHERE id = ?1", "delete sandbox", "sandbox", id, NULL, 0,
	                      err);
}

int store_sandbox_get_expired_for_workspace(struct store *store, const char *workspace_id, struct sandbox_record *ret,
                                            struct cp_error **err)
{
	int found;
	if (get_one(store,
	            "SELECT " SBX_COLUMNS
	            " FROM sandboxes WHERE workspace_id = ? AND status = 'expired' AND pooled = 0 "
	            "ORDER BY created_at_ms DESC LIMIT 1",
	            workspace_id, ret, err, &found) < 0)
		return -1;
	if (!found)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "workspace '%s' has no expired sandbox", workspace_id);
	return 0;
}

int store_sandbox_revive(struct store *store, const char *id, int64_t now_ms, struct cp_error **err)
{
	const char *what = "start an expired sandbox again";
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "UPDATE sandboxes SET status = 'running', failure_reason = NULL, updated_at_ms = ?1, "
	                  "last_activity_ms = ?1 WHERE id = ?2 AND status = 'expired'",
	                  what, err) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		if ((sqlite3_extended_errcode(locked->db) & 0xff) == SQLITE_CONSTRAINT)
			return cp_error_set(err, CP_ERR_CONFLICT,
			                    "sandbox '%s' cannot start again: its workspace has another live sandbox",
			                    id);
		return store_fail(locked, err, what);
	}
	if (sqlite3_changes(locked->db) == 0)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' is not expired", id);
	return 0;
}
