/* audit.c: the audit table: append-only rows of what was done through MCP
 * and the CLI. Messages are cut to a bound; nothing here may hold a secret
 * (callers pass error messages and ids only). */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

#define AUDIT_MESSAGE_MAX 1000

static void bind_opt(sqlite3_stmt *st, int i, const char *v, int max)
{
	if (v)
		sqlite3_bind_text(st, i, v, (int)strnlen(v, (size_t)max), SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

int store_audit_insert(struct store *store, const struct audit_record *a, struct cp_error **err)
{
	return store_audit_insert_id(store, a, NULL, err);
}

int store_audit_insert_id(struct store *store, const struct audit_record *a, int64_t *ret_id, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "INSERT INTO audit (at_ms, actor, action, sandbox_id, target, status, duration_ms, "
	                  "message, method, session) VALUES (?,?,?,?,?,?,?,?,?,?)",
	                  "write audit", err) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, a->at_ms);
	sqlite3_bind_text(st, 2, a->actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->action, -1, SQLITE_STATIC);
	bind_opt(st, 4, a->sandbox_id, 128);
	bind_opt(st, 5, a->target, 4096);
	sqlite3_bind_text(st, 6, a->status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, a->duration_ms);
	bind_opt(st, 8, a->message, AUDIT_MESSAGE_MAX);
	bind_opt(st, 9, a->method, 64);
	bind_opt(st, 10, a->session, 16);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, "write audit");
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(locked->db);
	return 0;
}

int store_audit_finish(struct store *store, int64_t id, const struct audit_record *a, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "UPDATE audit SET sandbox_id = COALESCE(?, sandbox_id), target = COALESCE(?, target), "
	                  "status = ?, duration_ms = ?, message = ? WHERE id = ?",
	                  "write audit", err) < 0)
		return -1;
	bind_opt(st, 1, a->sandbox_id, 128);
	bind_opt(st, 2, a->target, 4096);
	sqlite3_bind_text(st, 3, a->status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, a->duration_ms);
	bind_opt(st, 5, a->message, AUDIT_MESSAGE_MAX);
	sqlite3_bind_int64(st, 6, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, "write audit");
	if (sqlite3_changes(locked->db) != 1)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "audit row %lld does not exist", (long long)id);
	return 0;
}

int store_audit_count(struct store *store, const char *action, int64_t *ret_count, struct cp_error **err)
{
	return store_count(store, "SELECT COUNT(*) FROM audit WHERE action = ?", action, "count audit", ret_count, err);
}

void audit_row_clear(struct audit_row *a)
{
	if (!a)
		return;
	free(a->actor);
	free(a->action);
	free(a->sandbox_id);
	free(a->target);
	free(a->status);
	free(a->message);
	*a = (struct audit_row){0};
}

int store_audit_list(struct store *store, const struct audit_filter *filter, int64_t offset, size_t limit,
                     struct audit_row **ret, size_t *ret_n, struct cp_error **err)
{
	*ret = NULL;
	*ret_n = 0;
	if (offset < 0 || limit < 1 || limit > STORE_AUDIT_LIST_MAX)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "list audit rows: offset %lld and limit %zu are out of range (offset >= 0, limit "
		                    "1..%d)",
		                    (long long)offset, limit, STORE_AUDIT_LIST_MAX);
	const char *sandbox_id = filter ? filter->sandbox_id : NULL, *action = filter ? filter->action : NULL;
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(
	        locked, &st,
	        "SELECT id, at_ms, actor, action, sandbox_id, target, status, duration_ms, message FROM audit "
	        "WHERE (?1 IS NULL OR sandbox_id = ?1) AND (?2 IS NULL OR action = ?2) "
	        "ORDER BY at_ms DESC, id DESC LIMIT ?3 OFFSET ?4",
	        "list audit rows", err) < 0)
		return -1;
	store_bind_text_opt(st, 1, sandbox_id);
	store_bind_text_opt(st, 2, action);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)limit);
	sqlite3_bind_int64(st, 4, offset);
	struct audit_row *rows = xcalloc(limit, sizeof(*rows));
	size_t n = 0;
	int rc = SQLITE_DONE;
	while (n < limit && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct audit_row *a = &rows[n++];
		a->id = sqlite3_column_int64(st, 0);
		a->at_ms = sqlite3_column_int64(st, 1);
		a->actor = store_column_strdup(st, 2);
		a->action = store_column_strdup(st, 3);
		a->sandbox_id = store_column_strdup(st, 4);
		a->target = store_column_strdup(st, 5);
		a->status = store_column_strdup(st, 6);
		a->duration_ms = sqlite3_column_int64(st, 7);
		a->message = store_column_strdup(st, 8);
	}
	if (n < limit && rc != SQLITE_DONE) {
		for (size_t i = 0; i < n; i++)
			audit_row_clear(&rows[i]);
		free(rows);
		return store_fail(locked, err, "list audit rows");
	}
	if (n == 0) {
		free(rows);
		rows = NULL;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}
