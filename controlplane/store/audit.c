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
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(store->db,
	                       "INSERT INTO audit (at_ms, actor, action, sandbox_id, target, status, duration_ms, "
	                       "message, method, session) VALUES (?,?,?,?,?,?,?,?,?,?)",
	                       -1, &st, NULL) != SQLITE_OK) {
		r = store_fail(store, err, "write audit");
		goto out;
	}
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
		r = store_fail(store, err, "write audit");
	else if (ret_id)
		*ret_id = sqlite3_last_insert_rowid(store->db);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&store->lock);
	return r;
}

int store_audit_finish(struct store *store, int64_t id, const struct audit_record *a, struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(store->db,
	                       "UPDATE audit SET sandbox_id = COALESCE(?, sandbox_id), target = COALESCE(?, target), "
	                       "status = ?, duration_ms = ?, message = ? WHERE id = ?",
	                       -1, &st, NULL) != SQLITE_OK) {
		r = store_fail(store, err, "write audit");
		goto out;
	}
	bind_opt(st, 1, a->sandbox_id, 128);
	bind_opt(st, 2, a->target, 4096);
	sqlite3_bind_text(st, 3, a->status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, a->duration_ms);
	bind_opt(st, 5, a->message, AUDIT_MESSAGE_MAX);
	sqlite3_bind_int64(st, 6, id);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = store_fail(store, err, "write audit");
	else if (sqlite3_changes(store->db) != 1)
		r = cp_error_set(err, CP_ERR_NOT_FOUND, "audit row %lld does not exist", (long long)id);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&store->lock);
	return r;
}

int store_audit_count(struct store *store, const char *action, int64_t *ret_count, struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(store->db, "SELECT COUNT(*) FROM audit WHERE action = ?", -1, &st, NULL) != SQLITE_OK) {
		r = store_fail(store, err, "count audit");
		goto out;
	}
	sqlite3_bind_text(st, 1, action, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		*ret_count = sqlite3_column_int64(st, 0);
	else
		r = store_fail(store, err, "count audit");
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&store->lock);
	return r;
}
