/* approvals.c: rows of the approvals table. A decision is kept per node,
 * resolved path and mode (a unique index, migration 0018), and every change that touches an approval
 * and a workspace together runs in one BEGIN IMMEDIATE transaction, so the
 * CLI and serve can decide and request at the same time without a lost
 * update. No policy here: callers check the path first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "store_internal.h"

void approval_record_clear(struct approval_record *a)
{
	if (!a)
		return;
	free(a->id);
	free(a->host_path);
	free(a->real_path);
	free(a->mode);
	free(a->workspace_id);
	free(a->requested_by);
	free(a->node);
	*a = (struct approval_record){0};
}

#define AP_COLUMNS                                                                                                     \
	"id, host_path, real_path, mode, status, workspace_id, requested_by, requested_at_ms, "                        \
	"COALESCE(decided_at_ms, 0), node"

static void read_row(sqlite3_stmt *st, void *row)
{
	struct approval_record *a = row;
	a->id = store_column_strdup(st, 0);
	a->host_path = store_column_strdup(st, 1);
	a->real_path = store_column_strdup(st, 2);
	a->mode = store_column_strdup(st, 3);
	a->status = approval_status_from_string((const char *)sqlite3_column_text(st, 4));
	a->workspace_id = store_column_strdup(st, 5);
	a->requested_by = store_column_strdup(st, 6);
	a->requested_at_ms = sqlite3_column_int64(st, 7);
	a->decided_at_ms = sqlite3_column_int64(st, 8);
	a->node = store_column_strdup(st, 9);
}

STORE_ROW_TYPE(rows, struct approval_record, read_row, approval_record_clear);

static int get_by_id_locked(struct store *store, const char *id, struct approval_record *ret, struct cp_error **err)
{
	int found = 0;
	if (store_get_row_locked(store, &rows, "SELECT " AP_COLUMNS " FROM approvals WHERE id = ?", id, NULL,
	                         "load approval", ret, &found, err) < 0)
		return -1;
	if (!found)
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "approval '%s' does not exist; 'chat2sbx approval list' shows the approvals", id);
	return 0;
}

/* The approval of (node, real_path, mode); node NULL is 'local'. */
static int get_by_path_locked(struct store *store, const char *node, const char *real_path, const char *mode,
                              struct approval_record *ret, int *ret_found, struct cp_error **err)
{
	char key[STORE_NODE_MODE_KEY_MAX];
	store_node_mode_key(node, mode, key, sizeof(key));
	return store_get_row_locked(store, &rows,
	                            "SELECT " AP_COLUMNS " FROM approvals WHERE real_path = ?1 AND "
	                            "node || '/' || mode = ?2",
	                            real_path, key, "load approval", ret, ret_found, err);
}

static int insert_locked(struct store *store, const struct approval_record *a, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st,
	                  "INSERT INTO approvals (id, host_path, real_path, mode, status, workspace_id, "
	                  "requested_by, requested_at_ms, decided_at_ms, node) VALUES (?,?,?,?,?,?,?,?,?,?)",
	                  "insert approval", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, a->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, a->host_path, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->real_path, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, a->mode, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, approval_status_to_string(a->status), -1, SQLITE_STATIC);
	store_bind_text_opt(st, 6, a->workspace_id);
	sqlite3_bind_text(st, 7, a->requested_by, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, a->requested_at_ms);
	if (a->decided_at_ms)
		sqlite3_bind_int64(st, 9, a->decided_at_ms);
	sqlite3_bind_text(st, 10, a->node ? a->node : STORE_NODE_LOCAL, -1, SQLITE_STATIC);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : store_fail(store, err, "insert approval");
}

static int decide_locked(struct store *store, const char *id, enum approval_status status, const char *workspace_id,
                         int64_t now_ms, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st,
	                  "UPDATE approvals SET status = ?2, workspace_id = COALESCE(?3, workspace_id), "
	                  "decided_at_ms = ?4 WHERE id = ?1",
	                  "decide approval", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, approval_status_to_string(status), -1, SQLITE_STATIC);
	store_bind_text_opt(st, 3, workspace_id);
	sqlite3_bind_int64(st, 4, now_ms);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : store_fail(store, err, "decide approval");
}

static int request_body(struct store *store, const struct approval_record *want, struct approval_record *ret,
                        int *ret_created, struct cp_error **err)
{
	int found = 0;
	if (get_by_path_locked(store, want->node, want->real_path, want->mode, ret, &found, err) < 0)
		return -1;
	*ret_created = !found;
	if (found)
		return 0;
	struct approval_record row = *want;
	row.status = APPROVAL_PENDING;
	row.workspace_id = NULL;
	row.decided_at_ms = 0;
	if (insert_locked(store, &row, err) < 0)
		return -1;
	return get_by_id_locked(store, want->id, ret, err);
}

int store_approval_request(struct store *store, const struct approval_record *want, struct approval_record *ret,
                           int *ret_created, struct cp_error **err)
{
	return STORE_TRANSACTION(store, "request approval", err, request_body(store, want, ret, ret_created, err));
}

int store_approval_get(struct store *store, const char *id, struct approval_record *ret, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	return get_by_id_locked(locked, id, ret, err);
}

int store_approval_list(struct store *store, struct approval_record **ret, size_t *ret_n, struct cp_error **err)
{
	return store_list_rows(store, &rows,
	                       "SELECT " AP_COLUMNS " FROM approvals ORDER BY status != 'pending', "
	                       "requested_at_ms DESC, id",
	                       NULL, "list approvals", (void **)ret, ret_n, err);
}

/* The workspace for (path, mode): the existing one, or ws inserted. Its id
 * goes to *ret_id (caller frees). */
static int workspace_for_locked(struct store *store, const struct workspace_record *ws, char **ret_id, int *ret_created,
                                struct cp_error **err)
{
	struct workspace_record found = {0};
	int exists = 0;
	if (store_workspace_find_host_locked(store, ws->node, ws->path, ws->mode, &found, &exists, err) < 0)
		return -1;
	if (ret_created)
		*ret_created = !exists;
	if (exists) {
		*ret_id = found.id;
		found.id = NULL;
		workspace_record_clear(&found);
		return 0;
	}
	if (store_workspace_insert_locked(store, ws, err) < 0)
		return -1;
	*ret_id = xstrdup(ws->id);
	return 0;
}

static int approve_body(struct store *store, const char *id, const struct workspace_record *ws, int64_t now_ms,
                        struct approval_record *ret, struct cp_error **err)
{
	struct approval_record a = {0};
	if (get_by_id_locked(store, id, &a, err) < 0)
		return -1;
	int r = 0;
	if (a.status == APPROVAL_REJECTED) {
		r = cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "approval '%s' was rejected; to allow '%s' (%s) after all, run 'chat2sbx workspace add "
		    "%s --mode %s'",
		    id, a.host_path, a.mode, a.host_path, a.mode);
	} else if (a.status == APPROVAL_PENDING) {
		char *workspace_id = NULL;
		struct workspace_record w = *ws;
		w.mode = a.mode;
		w.node = a.node; /* the machine whose directory it is */
		r = workspace_for_locked(store, &w, &workspace_id, NULL, err);
		if (r == 0)
			r = decide_locked(store, id, APPROVAL_APPROVED, workspace_id, now_ms, err);
		free(workspace_id);
	}
	approval_record_clear(&a);
	return r < 0 ? r : get_by_id_locked(store, id, ret, err);
}

int store_approval_approve(struct store *store, const char *id, const struct workspace_record *ws, int64_t now_ms,
                           struct approval_record *ret, struct cp_error **err)
{
	return STORE_TRANSACTION(store, "approve", err, approve_body(store, id, ws, now_ms, ret, err));
}

static int reject_body(struct store *store, const char *id, int64_t now_ms, struct approval_record *ret,
                       struct cp_error **err)
{
	struct approval_record a = {0};
	if (get_by_id_locked(store, id, &a, err) < 0)
		return -1;
	int r = 0;
	if (a.status == APPROVAL_APPROVED)
		r = cp_error_set(err, CP_ERR_CONFLICT,
		                 "approval '%s' was already approved (workspace '%s'); a decision is kept", id,
		                 a.workspace_id ? a.workspace_id : "?");
	else if (a.status == APPROVAL_PENDING)
		r = decide_locked(store, id, APPROVAL_REJECTED, NULL, now_ms, err);
	approval_record_clear(&a);
	return r < 0 ? r : get_by_id_locked(store, id, ret, err);
}

int store_approval_reject(struct store *store, const char *id, int64_t now_ms, struct approval_record *ret,
                          struct cp_error **err)
{
	return STORE_TRANSACTION(store, "reject", err, reject_body(store, id, now_ms, ret, err));
}

static int register_body(struct store *store, const struct workspace_record *ws, const char *host_path,
                         const char *approval_id, int64_t now_ms, struct workspace_record *ret, int *ret_created,
                         struct cp_error **err)
{
	char *workspace_id = NULL;
	if (workspace_for_locked(store, ws, &workspace_id, ret_created, err) < 0)
		return -1;
	struct approval_record a = {0};
	int found = 0;
	int r = get_by_path_locked(store, ws->node, ws->path, ws->mode, &a, &found, err);
	if (r == 0 && found)
		r = decide_locked(store, a.id, APPROVAL_APPROVED, workspace_id, now_ms, err);
	else if (r == 0) {
		struct approval_record row = {.id = (char *)approval_id,
		                              .host_path = (char *)host_path,
		                              .real_path = ws->path,
		                              .mode = ws->mode,
		                              .status = APPROVAL_APPROVED,
		                              .workspace_id = workspace_id,
		                              .requested_by = "cli",
		                              .node = ws->node,
		                              .requested_at_ms = now_ms,
		                              .decided_at_ms = now_ms};
		r = insert_locked(store, &row, err);
	}
	approval_record_clear(&a);
	if (r == 0) {
		int got = 0;
		r = store_workspace_find_host_locked(store, ws->node, ws->path, ws->mode, ret, &got, err);
		if (r == 0 && !got)
			r = cp_error_set(err, CP_ERR_INTERNAL, "register workspace: it vanished");
	}
	free(workspace_id);
	return r;
}

int store_workspace_register_host(struct store *store, const struct workspace_record *ws, const char *host_path,
                                  const char *approval_id, int64_t now_ms, struct workspace_record *ret,
                                  int *ret_created, struct cp_error **err)
{
	return STORE_TRANSACTION(store, "register workspace", err,
	                         register_body(store, ws, host_path, approval_id, now_ms, ret, ret_created, err));
}

/* The count of live sandboxes on workspace id, or -1 with *err set. */
static int live_count(struct store *store, const char *id, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st,
	                  "SELECT count(*) FROM sandboxes WHERE workspace_id = ? AND " STORE_SANDBOX_LIVE(""),
	                  "forget workspace", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		return store_fail(store, err, "forget workspace");
	return sqlite3_column_int(st, 0);
}

static int forget_body(struct store *store, const char *id, struct cp_error **err)
{
	int live = live_count(store, id, err);
	if (live < 0)
		return -1;
	if (live > 0)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "forget workspace '%s': a sandbox still uses it; destroy that sandbox first", id);
	/* Sandbox rows first (their mounts and exposures go with them), then
	 * the approvals that point at the workspace, then the workspace. */
	static const char *const steps[] = {"DELETE FROM sandboxes WHERE workspace_id = ?",
	                                    "DELETE FROM approvals WHERE workspace_id = ?",
	                                    "DELETE FROM workspaces WHERE id = ?"};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (store_exec_arg(store, steps[i], id, "forget workspace", err) < 0)
			return -1;
		if (i == 2 && sqlite3_changes(store->db) == 0)
			return cp_error_set(err, CP_ERR_NOT_FOUND, "forget workspace: '%s' does not exist", id);
	}
	return 0;
}

int store_workspace_forget(struct store *store, const char *id, struct cp_error **err)
{
	return STORE_TRANSACTION(store, "forget workspace", err, forget_body(store, id, err));
}
