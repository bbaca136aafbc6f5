/* store.c: opening the registry and running migrations. Owns the SQLite
 * connection; every statement runs under store->lock. Migrations are the only
 * source of schema (migrations/NNNN_name.sql, embedded by scripts/embed-migrations.sh). */
#include "store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/clock.h"
#include "../base/log.h"

int store_fail(struct store *store, struct cp_error **err, const char *what)
{
	int rc = sqlite3_extended_errcode(store->db);
	enum cp_error_code code = CP_ERR_INTERNAL;
	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		code = CP_ERR_UNAVAILABLE;
	else if ((rc & 0xff) == SQLITE_CONSTRAINT)
		code = CP_ERR_CONFLICT;
	return cp_error_set(err, code, "%s: registry error: %s", what, sqlite3_errmsg(store->db));
}

int store_exec(struct store *store, const char *sql, const char *what, struct cp_error **err)
{
	char *msg = NULL;
	if (sqlite3_exec(store->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		cp_error_set(err, CP_ERR_INTERNAL, "%s: registry error: %s", what, msg ? msg : "unknown");
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

int store_exec_arg(struct store *store, const char *sql, const char *arg, const char *what, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st, sql, what, err) < 0)
		return -1;
	store_bind_text_opt(st, 1, arg);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(store, err, what);
	return 0;
}

int store_count(struct store *store, const char *sql, const char *arg, const char *what, int64_t *ret,
                struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, sql, what, err) < 0)
		return -1;
	if (arg)
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW)
		return store_fail(locked, err, what);
	*ret = sqlite3_column_int64(st, 0);
	return 0;
}

static int applied_version(struct store *store, int *ret, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations", "read schema version",
	                  err) < 0)
		return -1;
	if (sqlite3_step(st) != SQLITE_ROW)
		return store_fail(store, err, "read schema version");
	*ret = sqlite3_column_int(st, 0);
	return 0;
}

/* Inserts m's row into schema_migrations; fails like store_fail(what). */
static int record_migration(struct store *store, const struct store_migration *m, const char *what,
                            struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st, "INSERT INTO schema_migrations (version, name, applied_at_ms) VALUES (?, ?, ?)",
	                  what, err) < 0)
		return -1;
	sqlite3_bind_int(st, 1, m->version);
	sqlite3_bind_text(st, 2, m->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, clock_now_ms());
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(store, err, what);
	return 0;
}

static int migrate(struct store *store, struct cp_error **err)
{
	if (store_exec(store,
	               "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT "
	               "NULL, applied_at_ms INTEGER NOT NULL)",
	               "create schema_migrations", err) < 0)
		return -1;
	int current = 0;
	if (applied_version(store, &current, err) < 0)
		return -1;
	int newest = store_migrations_count ? store_migrations[store_migrations_count - 1].version : 0;
	if (current > newest)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "the registry has schema version %d but this chat2sbx knows only up to %d; "
		                    "run a newer chat2sbx or point CHAT2SBX_DATABASE_PATH elsewhere",
		                    current, newest);
	for (size_t i = 0; i < store_migrations_count; i++) {
		const struct store_migration *m = &store_migrations[i];
		if (m->version <= current)
			continue;
		if (store_exec(store, "BEGIN IMMEDIATE", "begin migration", err) < 0)
			return -1;
		/* Another process may have applied it while we waited for the lock. */
		int now_version = 0;
		if (applied_version(store, &now_version, err) < 0)
			goto rollback;
		if (now_version >= m->version) {
			store_exec(store, "COMMIT", "commit migration", NULL);
			continue;
		}
		char what[128];
		snprintf(what, sizeof(what), "apply migration %s", m->name);
		if (store_exec(store, m->sql, what, err) < 0)
			goto rollback;
		if (record_migration(store, m, what, err) < 0)
			goto rollback;
		if (store_exec(store, "COMMIT", what, err) < 0)
			goto rollback;
		log_info("store", "applied migration %s", m->name);
	}
	return 0;
rollback:
	store_exec(store, "ROLLBACK", "roll back migration", NULL);
	return -1;
}

int store_open(const char *path, struct store **ret_store, struct cp_error **err)
{
	/* Create the file 0600 ourselves so SQLite never makes it world-readable;
	 * never through a symlink, and never a file another user owns (they
	 * could read and change approvals, workspace paths and the audit). */
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == ELOOP)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the registry '%s' is a symbolic link; a registry is never opened through one: "
		                    "move it away (and the directory holding it, if you did not make it)",
		                    path);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open registry '%s'", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		int bad_owner = S_ISREG(st.st_mode) && st.st_uid != geteuid();
		close(fd);
		if (bad_owner)
			return cp_error_set(
			    err, CP_ERR_UNAVAILABLE,
			    "the registry '%s' belongs to uid %u, not to this user (uid %u); move it away "
			    "(that user could have read and changed it)",
			    path, (unsigned)st.st_uid, (unsigned)geteuid());
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "the registry '%s' is not a regular file; move it away",
		                    path);
	}
	if (fchmod(fd, 0600) < 0) {
		close(fd);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "set mode of registry '%s'", path);
	}
	close(fd);

	struct store *store = xcalloc(1, sizeof(*store));
	pthread_mutex_init(&store->lock, NULL);
	if (sqlite3_open_v2(path, &store->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_NOFOLLOW,
	                    NULL) != SQLITE_OK) {
		if (!store->db) /* sqlite3 allocates no handle only when out of memory */
			cp_oom();
		cp_error_set(err, CP_ERR_UNAVAILABLE, "open registry '%s': %s", path, sqlite3_errmsg(store->db));
		store_free(store);
		return -1;
	}
	sqlite3_busy_timeout(store->db, STORE_BUSY_TIMEOUT_MS);
	if (store_exec(store, "PRAGMA journal_mode=WAL", "enable WAL", err) < 0 ||
	    store_exec(store, "PRAGMA foreign_keys=ON", "enable foreign keys", err) < 0 ||
	    store_exec(store, "PRAGMA synchronous=NORMAL", "set synchronous", err) < 0 || migrate(store, err) < 0) {
		cp_error_prefix(err, "open registry '%s'", path);
		store_free(store);
		return -1;
	}
	/* WAL side files inherit nothing from the main file's mode; tighten them. */
	char side[4096];
	snprintf(side, sizeof(side), "%s-wal", path);
	chmod(side, 0600);
	snprintf(side, sizeof(side), "%s-shm", path);
	chmod(side, 0600);
	*ret_store = store;
	return 0;
}

void store_free(struct store *store)
{
	if (!store)
		return;
	if (store->audit_batch_stop) /* the queued audit rows first: none is lost at a clean stop */
		store->audit_batch_stop(store);
	sqlite3_finalize(store->audit_insert);
	sqlite3_finalize(store->audit_finish);
	if (store->db)
		sqlite3_close(store->db);
	pthread_mutex_destroy(&store->lock);
	free(store);
}

int store_schema_version(struct store *store, int *ret_version, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	return applied_version(locked, ret_version, err);
}

int store_list_rows(struct store *store, const struct store_row_type *type, const char *sql, const char *arg,
                    const char *what, void **ret, size_t *ret_n, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	char *list = NULL;
	size_t n = 0;
	if (store_prepare(locked, &st, sql, what, err) < 0)
		return -1;
	int r = 0;
	if (arg)
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		list = xrealloc(list, (n + 1) * type->size);
		memset(list + n * type->size, 0, type->size);
		type->read(st, list + n * type->size);
		n++;
	}
	if (rc != SQLITE_DONE)
		r = store_fail(store, err, what);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			type->clear(list + i * type->size);
		free(list);
		return r;
	}
	*ret = list;
	*ret_n = n;
	return 0;
}

int store_get_row_locked(struct store *store, const struct store_row_type *type, const char *sql, const char *a1,
                         const char *a2, const char *what, void *ret, int *ret_found, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	int r = 0;
	*ret_found = 0;
	if (store_prepare(store, &st, sql, what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, a1, -1, SQLITE_STATIC);
	if (a2)
		sqlite3_bind_text(st, 2, a2, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		type->read(st, ret);
		*ret_found = 1;
	} else if (rc != SQLITE_DONE) {
		r = store_fail(store, err, what);
	}
	return r;
}

int store_get_row(struct store *store, const struct store_row_type *type, const char *sql, const char *a1,
                  const char *a2, const char *what, void *ret, int *ret_found, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	return store_get_row_locked(locked, type, sql, a1, a2, what, ret, ret_found, err);
}

int store_exec_one(struct store *store, const char *sql, const char *what, const char *noun, const char *id,
                   const char *text, int64_t num, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, sql, what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	store_bind_text_opt(st, 2, text);
	sqlite3_bind_int64(st, 3, num);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, what);
	if (sqlite3_changes(locked->db) == 0)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "%s: %s '%s' does not exist", what, noun, id);
	return 0;
}

struct store_trace {
	void (*fn)(void *ctx, const char *sql);
	void *ctx;
};
static struct store_trace trace_hook; /* one traced handle at a time: tests only */

static int trace_stmt(unsigned type, void *ctx, void *p, void *x)
{
	(void)x;
	struct store_trace *t = ctx;
	if (type == SQLITE_TRACE_STMT && t->fn)
		t->fn(t->ctx, sqlite3_sql(p));
	return 0;
}

void store_trace_set(struct store *store, void (*fn)(void *ctx, const char *sql), void *ctx)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	trace_hook = (struct store_trace){.fn = fn, .ctx = ctx};
	sqlite3_trace_v2(locked->db, fn ? SQLITE_TRACE_STMT : 0, fn ? trace_stmt : NULL, fn ? &trace_hook : NULL);
}
