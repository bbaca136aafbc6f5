/* sandbox_mount.c: the verified identities of a sandbox's host mounts: the
 * workspace mount (migration 0007, columns mount_dev and mount_ino of
 * sandboxes) and the extra ones, the .git protection of a direct workspace
 * (migration 0009, table sandbox_mounts). No engine calls here. */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

int store_sandbox_set_mount_identity(struct store *store, const char *id, uint64_t dev, uint64_t ino,
                                     struct cp_error **err)
{
	const char *what = "record the mount identity of a sandbox";
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, "UPDATE sandboxes SET mount_dev = ?, mount_ino = ? WHERE id = ?", what, err) < 0)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)dev);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)ino);
	sqlite3_bind_text(st, 3, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, what);
	if (sqlite3_changes(locked->db) == 0)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' not found; call sandbox_list", id);
	return 0;
}

int store_sandbox_get_mount_identity(struct store *store, const char *id, uint64_t *ret_dev, uint64_t *ret_ino,
                                     struct cp_error **err)
{
	const char *what = "read the mount identity of a sandbox";
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, "SELECT mount_dev, mount_ino FROM sandboxes WHERE id = ?", what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' not found; call sandbox_list", id);
	if (rc != SQLITE_ROW)
		return store_fail(locked, err, what);
	if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL)
		return 0;
	*ret_dev = (uint64_t)sqlite3_column_int64(st, 0);
	*ret_ino = (uint64_t)sqlite3_column_int64(st, 1);
	return 1;
}

void sandbox_mount_record_clear(struct sandbox_mount_record *m)
{
	if (!m)
		return;
	free(m->target);
	free(m->source);
	*m = (struct sandbox_mount_record){0};
}

/* 0 when sandbox id has a row, NOT_FOUND otherwise. The caller holds the lock. */
static int sandbox_exists_locked(struct store *store, const char *id, const char *what, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st, "SELECT 1 FROM sandboxes WHERE id = ?", what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' not found; call sandbox_list", id);
	return rc == SQLITE_ROW ? 0 : store_fail(store, err, what);
}

static int mounts_set_locked(struct store *store, const char *id, const struct sandbox_mount_record *m, size_t n,
                             struct cp_error **err)
{
	const char *what = "record the verified mounts of a sandbox";
	if (sandbox_exists_locked(store, id, what, err) < 0 ||
	    store_exec_arg(store, "DELETE FROM sandbox_mounts WHERE sandbox_id = ?", id, what, err) < 0)
		return -1;
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st,
	                  "INSERT INTO sandbox_mounts (sandbox_id, target, source, read_only, dev, ino) "
	                  "VALUES (?, ?, ?, ?, ?, ?)",
	                  what, err) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, m[i].target, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, m[i].source, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, m[i].read_only ? 1 : 0);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)m[i].dev);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)m[i].ino);
		if (sqlite3_step(st) != SQLITE_DONE)
			return store_fail(store, err, what);
	}
	return 0;
}

int store_sandbox_mounts_set(struct store *store, const char *id, const struct sandbox_mount_record *m, size_t n,
                             struct cp_error **err)
{
	return STORE_TRANSACTION(store, "record the verified mounts of a sandbox", err,
	                         mounts_set_locked(store, id, m, n, err));
}

static void read_mount(sqlite3_stmt *st, void *row)
{
	*(struct sandbox_mount_record *)row = (struct sandbox_mount_record){
	    .target = store_column_strdup(st, 0),
	    .source = store_column_strdup(st, 1),
	    .read_only = sqlite3_column_int(st, 2),
	    .dev = (uint64_t)sqlite3_column_int64(st, 3),
	    .ino = (uint64_t)sqlite3_column_int64(st, 4),
	};
}

static void clear_mount(void *row)
{
	sandbox_mount_record_clear(row);
}

static const struct store_row_type mount_rows = {sizeof(struct sandbox_mount_record), read_mount, clear_mount};

int store_sandbox_mounts_list(struct store *store, const char *id, struct sandbox_mount_record **ret, size_t *ret_n,
                              struct cp_error **err)
{
	return store_list_rows(store, &mount_rows,
	                       "SELECT target, source, read_only, dev, ino FROM sandbox_mounts WHERE sandbox_id = ? "
	                       "ORDER BY length(target), target",
	                       id, "read the verified mounts of a sandbox", (void **)ret, ret_n, err);
}
