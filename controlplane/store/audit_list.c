/* audit_list.c: reading the audit table back: the Activity view's pages
 * (store_audit_list) and counts. Rows the batch writer still holds are
 * written first (store_audit_flush), so a reader sees every row appended
 * before it asked. */
#include <stdlib.h>

#include "store_internal.h"

int store_audit_count(struct store *store, const char *action, int64_t *ret_count, struct cp_error **err)
{
	store_audit_flush(store);
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
	store_audit_flush(store); /* a row queued before the call is listed */
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
