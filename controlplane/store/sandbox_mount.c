/* sandbox_mount.c: the verified identity of a sandbox's host mount
 * (migration 0007, columns mount_dev and mount_ino of sandboxes). No engine
 * calls here. */
#include <stdio.h>

#include "store_internal.h"

int store_sandbox_set_mount_identity(struct store *store, const char *id, uint64_t dev, uint64_t ino,
                                     struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(store->db, "UPDATE sandboxes SET mount_dev = ?, mount_ino = ? WHERE id = ?", -1, &st,
	                       NULL) != SQLITE_OK) {
		r = store_fail(store, err, "record the mount identity of a sandbox");
		goto out;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)dev);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)ino);
	sqlite3_bind_text(st, 3, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE)
		r = store_fail(store, err, "record the mount identity of a sandbox");
	else if (sqlite3_changes(store->db) == 0)
		r = cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' not found; call sandbox_list", id);
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&store->lock);
	return r;
}

int store_sandbox_get_mount_identity(struct store *store, const char *id, uint64_t *ret_dev, uint64_t *ret_ino,
                                     struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(store->db, "SELECT mount_dev, mount_ino FROM sandboxes WHERE id = ?", -1, &st, NULL) !=
	    SQLITE_OK) {
		r = store_fail(store, err, "read the mount identity of a sandbox");
		goto out;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (sqlite3_column_type(st, 0) == SQLITE_NULL || sqlite3_column_type(st, 1) == SQLITE_NULL) {
			r = 0;
		} else {
			*ret_dev = (uint64_t)sqlite3_column_int64(st, 0);
			*ret_ino = (uint64_t)sqlite3_column_int64(st, 1);
			r = 1;
		}
	} else if (rc == SQLITE_DONE) {
		r = cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' not found; call sandbox_list", id);
	} else {
		r = store_fail(store, err, "read the mount identity of a sandbox");
	}
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&store->lock);
	return r;
}
