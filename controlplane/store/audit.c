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
