/* audit.c: the audit table's writes: append-only rows of what was done
 * through MCP and the CLI, and a call's outcome on its row, with the two
 * statements kept on the handle. Messages are cut to a bound; nothing here
 * may hold a secret (callers pass error messages and ids only). */

#include "store_internal.h"

static void bind_opt(sqlite3_stmt *st, int i, const char *v, size_t max)
{
	if (v)
		sqlite3_bind_text(st, i, v, (int)strnlen(v, max), SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* The handle's statement *slot, prepared the first time (kept until
 * store_free: one prepare per handle, not per row). The caller holds the
 * lock, resets it after the step and clears its bindings. */
static int cached(struct store *store, sqlite3_stmt **slot, const char *sql, struct cp_error **err)
{
	if (!*slot && sqlite3_prepare_v3(store->db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK)
		return store_fail(store, err, "write audit");
	return 0;
}

/* Steps a cached write statement, then resets it and drops its borrowed
 * bindings. Returns 0, or -1 with *err set from the step's error. */
static int step_once(struct store *store, sqlite3_stmt *st, struct cp_error **err)
{
	int r = sqlite3_step(st) == SQLITE_DONE ? 0 : store_fail(store, err, "write audit");
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return r;
}

int store_audit_insert_locked(struct store *store, const struct audit_record *a, int64_t *ret_id, struct cp_error **err)
{
	if (cached(store, &store->audit_insert,
	           "INSERT INTO audit (at_ms, actor, action, sandbox_id, target, status, duration_ms, "
	           "message, method, session) VALUES (?,?,?,?,?,?,?,?,?,?)",
	           err) < 0)
		return -1;
	sqlite3_stmt *st = store->audit_insert;
	sqlite3_bind_int64(st, 1, a->at_ms);
	sqlite3_bind_text(st, 2, a->actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, a->action, -1, SQLITE_STATIC);
	bind_opt(st, 4, a->sandbox_id, STORE_AUDIT_SANDBOX_MAX);
	bind_opt(st, 5, a->target, STORE_AUDIT_TARGET_MAX);
	sqlite3_bind_text(st, 6, a->status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, a->duration_ms);
	bind_opt(st, 8, a->message, STORE_AUDIT_MESSAGE_MAX);
	bind_opt(st, 9, a->method, STORE_AUDIT_METHOD_MAX);
	bind_opt(st, 10, a->session, STORE_AUDIT_SESSION_MAX);
	if (step_once(store, st, err) < 0)
		return -1;
	if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(store->db);
	return 0;
}

int store_audit_finish_locked(struct store *store, int64_t id, const struct audit_record *a, struct cp_error **err)
{
	if (cached(store, &store->audit_finish,
	           "UPDATE audit SET sandbox_id = COALESCE(?, sandbox_id), target = COALESCE(?, target), "
	           "status = ?, duration_ms = ?, message = ? WHERE id = ?",
	           err) < 0)
		return -1;
	sqlite3_stmt *st = store->audit_finish;
	bind_opt(st, 1, a->sandbox_id, STORE_AUDIT_SANDBOX_MAX);
	bind_opt(st, 2, a->target, STORE_AUDIT_TARGET_MAX);
	sqlite3_bind_text(st, 3, a->status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, a->duration_ms);
	bind_opt(st, 5, a->message, STORE_AUDIT_MESSAGE_MAX);
	sqlite3_bind_int64(st, 6, id);
	if (step_once(store, st, err) < 0)
		return -1;
	if (sqlite3_changes(store->db) != 1)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "audit row %lld does not exist", (long long)id);
	return 0;
}

int store_audit_insert(struct store *store, const struct audit_record *a, struct cp_error **err)
{
	return store_audit_insert_id(store, a, NULL, err);
}

int store_audit_insert_id(struct store *store, const struct audit_record *a, int64_t *ret_id, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	return store_audit_insert_locked(locked, a, ret_id, err);
}

int store_audit_finish(struct store *store, int64_t id, const struct audit_record *a, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	return store_audit_finish_locked(locked, id, a, err);
}
