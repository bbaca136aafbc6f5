/* sandbox_mount.c: the verified identities of a sandbox's host mounts: the
 * workspace mount (migration 0007, columns mount_dev and mount_ino of
 * sandboxes) and the extra ones, the .git protection of a direct workspace
 * (migration 0009, table sandbox_mounts). No engine calls here. */
#include <stdio.h>
#include <stdlib.h>

#include "../base/xalloc.h"
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

void sandbox_mount_record_clear(struct sandbox_mount_record *m)
{
	if (!m)
		return;
	free(m->target);
	free(m->source);
	*m = (struct sandbox_mount_record){0};
}

static int mounts_set_locked(struct store *store, const char *id, const struct sandbox_mount_record *m, size_t n,
                             struct cp_error **err)
{
	const char *what = "record the verified mounts of a sandbox";
	sqlite3_stmt *st = NULL;
	int r = 0;
	if (sqlite3_prepare_v2(store->db, "SELECT 1 FROM sandboxes WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
		return store_fail(store, err, what);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	st = NULL;
	if (rc == SQLITE_DONE)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "sandbox '%s' not found; call sandbox_list", id);
	if (rc != SQLITE_ROW)
		return store_fail(store, err, what);
	if (sqlite3_prepare_v2(store->db, "DELETE FROM sandbox_mounts WHERE sandbox_id = ?", -1, &st, NULL) !=
	    SQLITE_OK)
		return store_fail(store, err, what);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return store_fail(store, err, what);
	if (sqlite3_prepare_v2(store->db,
	                       "INSERT INTO sandbox_mounts (sandbox_id, target, source, read_only, dev, ino) "
	                       "VALUES (?, ?, ?, ?, ?, ?)",
	                       -1, &st, NULL) != SQLITE_OK)
		return store_fail(store, err, what);
	for (size_t i = 0; i < n && r == 0; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, m[i].target, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, m[i].source, -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 4, m[i].read_only ? 1 : 0);
		sqlite3_bind_int64(st, 5, (sqlite3_int64)m[i].dev);
		sqlite3_bind_int64(st, 6, (sqlite3_int64)m[i].ino);
		if (sqlite3_step(st) != SQLITE_DONE)
			r = store_fail(store, err, what);
	}
	sqlite3_finalize(st);
	return r;
}

int store_sandbox_mounts_set(struct store *store, const char *id, const struct sandbox_mount_record *m, size_t n,
                             struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	int r = store_exec(store, "BEGIN IMMEDIATE", "record the verified mounts of a sandbox", err);
	if (r == 0) {
		r = mounts_set_locked(store, id, m, n, err);
		if (r == 0)
			r = store_exec(store, "COMMIT", "record the verified mounts of a sandbox", err);
		if (r < 0)
			store_exec(store, "ROLLBACK", "roll back", NULL);
	}
	pthread_mutex_unlock(&store->lock);
	return r;
}

int store_sandbox_mounts_list(struct store *store, const char *id, struct sandbox_mount_record **ret, size_t *ret_n,
                              struct cp_error **err)
{
	pthread_mutex_lock(&store->lock);
	sqlite3_stmt *st = NULL;
	struct sandbox_mount_record *rows = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
	if (sqlite3_prepare_v2(store->db,
	                       "SELECT target, source, read_only, dev, ino FROM sandbox_mounts WHERE sandbox_id = ? "
	                       "ORDER BY length(target), target",
	                       -1, &st, NULL) != SQLITE_OK) {
		r = store_fail(store, err, "read the verified mounts of a sandbox");
		goto out;
	}
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			rows = xrealloc(rows, cap * sizeof(*rows));
		}
		rows[n] = (struct sandbox_mount_record){
		    .target = store_column_strdup(st, 0),
		    .source = store_column_strdup(st, 1),
		    .read_only = sqlite3_column_int(st, 2),
		    .dev = (uint64_t)sqlite3_column_int64(st, 3),
		    .ino = (uint64_t)sqlite3_column_int64(st, 4),
		};
		n++;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(store, err, "read the verified mounts of a sandbox");
out:
	sqlite3_finalize(st);
	pthread_mutex_unlock(&store->lock);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			sandbox_mount_record_clear(&rows[i]);
		free(rows);
		return -1;
	}
	*ret = rows;
	*ret_n = n;
	return 0;
}
