/* exports.c: rows of saved clone work (migration 0010, issue 14): the
 * exports table, and the sandbox columns that saves compare against
 * (source_refs, unsaved). No files and no engine here: lifecycle/ writes
 * the export directories. */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

void export_record_clear(struct export_record *x)
{
	if (!x)
		return;
	free(x->id);
	free(x->sandbox_id);
	free(x->workspace_id);
	free(x->kind);
	free(x->reason);
	free(x->path);
	free(x->fingerprint);
	free(x->message);
	free(x->shares_bundle_of);
	*x = (struct export_record){0};
}

#define EXP_COLUMNS                                                                                                    \
	"id, sandbox_id, workspace_id, kind, reason, path, bytes, refs, commits, dirty_files, fingerprint, message, "  \
	"created_at_ms, COALESCE(applied_at_ms,0), applied_count, COALESCE(trashed_at_ms,0), shares_bundle_of"

static void read_row(sqlite3_stmt *st, void *row)
{
	struct export_record *x = row;
	x->id = store_column_strdup(st, 0);
	x->sandbox_id = store_column_strdup(st, 1);
	x->workspace_id = store_column_strdup(st, 2);
	x->kind = store_column_strdup(st, 3);
	x->reason = store_column_strdup(st, 4);
	x->path = store_column_strdup(st, 5);
	x->bytes = sqlite3_column_int64(st, 6);
	x->refs = sqlite3_column_int64(st, 7);
	x->commits = sqlite3_column_int64(st, 8);
	x->dirty_files = sqlite3_column_int64(st, 9);
	x->fingerprint = store_column_strdup(st, 10);
	x->message = store_column_strdup(st, 11);
	x->created_at_ms = sqlite3_column_int64(st, 12);
	x->applied_at_ms = sqlite3_column_int64(st, 13);
	x->applied_count = sqlite3_column_int64(st, 14);
	x->trashed_at_ms = sqlite3_column_int64(st, 15);
	x->shares_bundle_of = store_column_strdup(st, 16);
}

STORE_ROW_TYPE(rows, struct export_record, read_row, export_record_clear);

int store_export_insert(struct store *store, const struct export_record *x, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "INSERT INTO exports (id, sandbox_id, workspace_id, kind, reason, path, bytes, refs, "
	                  "commits, dirty_files, fingerprint, message, created_at_ms, shares_bundle_of, node) VALUES "
	                  "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,"
	                  /* the node its sandbox ran on (migration 0014) */
	                  "COALESCE((SELECT node FROM sandboxes WHERE id = ?2), 'local'))",
	                  "insert export", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, x->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, x->sandbox_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, x->workspace_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, x->kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, x->reason, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, x->path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, x->bytes);
	sqlite3_bind_int64(st, 8, x->refs);
	sqlite3_bind_int64(st, 9, x->commits);
	sqlite3_bind_int64(st, 10, x->dirty_files);
	store_bind_text_opt(st, 11, x->fingerprint);
	store_bind_text_opt(st, 12, x->message);
	sqlite3_bind_int64(st, 13, x->created_at_ms);
	store_bind_text_opt(st, 14, x->shares_bundle_of);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, "insert export");
	return 0;
}

int store_export_get(struct store *store, const char *id, struct export_record *ret, struct cp_error **err)
{
	int found = 0;
	if (store_get_row(store, &rows, "SELECT " EXP_COLUMNS " FROM exports WHERE id = ?", id, NULL, "load export",
	                  ret, &found, err) < 0)
		return -1;
	if (!found)
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "export '%s' does not exist; `chat2sbx export list` shows the saved exports", id);
	return 0;
}

int store_export_last(struct store *store, const char *sandbox_id, struct export_record *ret, struct cp_error **err)
{
	int found = 0;
	if (store_get_row(store, &rows,
	                  "SELECT " EXP_COLUMNS " FROM exports WHERE sandbox_id = ? ORDER BY created_at_ms DESC, "
	                  "rowid DESC LIMIT 1",
	                  sandbox_id, NULL, "load export", ret, &found, err) < 0)
		return -1;
	if (!found)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' has no export yet", sandbox_id);
	return 0;
}

int store_export_list(struct store *store, const char *sandbox_id, struct export_record **ret, size_t *ret_n,
                      struct cp_error **err)
{
	const char *sql = sandbox_id ? "SELECT " EXP_COLUMNS
	                               " FROM exports WHERE sandbox_id = ? ORDER BY created_at_ms, rowid"
	                             : "SELECT " EXP_COLUMNS " FROM exports ORDER BY created_at_ms, rowid";
	return store_list_rows(store, &rows, sql, sandbox_id, "list exports", (void **)ret, ret_n, err);
}

int store_export_set_applied(struct store *store, const char *id, int64_t now_ms, struct cp_error **err)
{
	return store_exec_one(store,
	                      "UPDATE exports SET applied_at_ms = ?3, applied_count = applied_count + 1 WHERE id = ?1",
	                      "record the apply", "export", id, NULL, now_ms, err);
}

int store_export_set_trashed(struct store *store, const char *id, const char *new_path, int64_t now_ms,
                             struct cp_error **err)
{
	return store_exec_one(store, "UPDATE exports SET path = ?2, trashed_at_ms = ?3 WHERE id = ?1",
	                      "move the export to the trash", "export", id, new_path, now_ms, err);
}

int store_export_count_unapplied(struct store *store, int64_t *ret_count, struct cp_error **err)
{
	return store_count(store,
	                   "SELECT COUNT(*) FROM exports WHERE kind != 'none' AND applied_count = 0 AND "
	                   "trashed_at_ms IS NULL",
	                   NULL, "count exports", ret_count, err);
}

int store_export_usage(struct store *store, const char *sandbox_id, int64_t *ret_count, int64_t *ret_bytes,
                       struct cp_error **err)
{
	/* Kept: not in the trash, holding something (kind none is a manifest
	 * alone). A bundle shared by hard links (0012) counts once, under the
	 * export that first wrote it. */
	static const char sql[] =
	    "SELECT (SELECT COUNT(*) FROM exports WHERE kind != 'none' AND trashed_at_ms IS NULL AND "
	    "(?1 IS NULL OR sandbox_id = ?1)), "
	    "(SELECT COALESCE(SUM(b), 0) FROM (SELECT MAX(bytes) AS b FROM exports WHERE kind != 'none' AND "
	    "trashed_at_ms IS NULL AND (?1 IS NULL OR sandbox_id = ?1) GROUP BY COALESCE(shares_bundle_of, id)))";
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, sql, "add up the exports", err) < 0)
		return -1;
	store_bind_text_opt(st, 1, sandbox_id);
	if (sqlite3_step(st) != SQLITE_ROW)
		return store_fail(locked, err, "add up the exports");
	*ret_count = sqlite3_column_int64(st, 0);
	*ret_bytes = sqlite3_column_int64(st, 1);
	return 0;
}

int store_sandbox_set_source_refs(struct store *store, const char *id, const char *text, struct cp_error **err)
{
	return store_exec_one(store, "UPDATE sandboxes SET source_refs = ?2 WHERE id = ?1", "record the source refs",
	                      "sandbox", id, text, 0, err);
}

int store_sandbox_get_source_refs(struct store *store, const char *id, char **ret, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, "SELECT source_refs FROM sandboxes WHERE id = ?", "read the source refs", err) <
	    0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' does not exist", id);
	if (rc != SQLITE_ROW)
		return store_fail(locked, err, "read the source refs");
	*ret = store_column_strdup(st, 0);
	return 0;
}

int store_sandbox_set_unsaved(struct store *store, const char *id, int unsaved, int64_t now_ms, struct cp_error **err)
{
	return store_exec_one(store, "UPDATE sandboxes SET unsaved = ?2, unsaved_checked_at_ms = ?3 WHERE id = ?1",
	                      "record unsaved work", "sandbox", id, unsaved ? "1" : "0", now_ms, err);
}
