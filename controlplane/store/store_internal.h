/* store_internal.h: shared by the store/ sources only. */
#ifndef CP_STORE_INTERNAL_H
#define CP_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "store.h"

/* Whether a sandbox row is live, as SQL over the columns of table alias t
 * ("" or "s."): creating or running, or being removed from one of those
 * (issue 13 item 4: 'removing' stays live until the engine confirmed the
 * container gone). One live row per workspace (the partial unique index
 * sandboxes_one_live_per_workspace of migration 0010 says the same); live
 * rows count against the sandbox limit. store_sandbox_is_live is the C
 * twin. */
#define STORE_SANDBOX_LIVE(t)                                                                                          \
	"(" t "status IN ('creating','running') OR (" t "status = 'removing' AND " t                                   \
	"removing_from IN ('creating','running')))"

struct store {
	sqlite3 *db;
	pthread_mutex_t lock; /* one statement sequence at a time per handle */
	/* Kept from their first use to store_free, used under lock (audit.c). */
	sqlite3_stmt *audit_insert, *audit_finish;
	struct audit_batch *audit_batch; /* NULL: every audit row is written at once */
	/* Set with audit_batch: stops its writer and writes what waits; store_free
	 * calls it before closing (a pointer, so store.c needs no audit code). */
	void (*audit_batch_stop)(struct store *store);
};

/* The bounds an audit row's columns are cut to. */
#define STORE_AUDIT_SANDBOX_MAX 128
#define STORE_AUDIT_TARGET_MAX 4096
#define STORE_AUDIT_MESSAGE_MAX 1000
#define STORE_AUDIT_METHOD_MAX 64
#define STORE_AUDIT_SESSION_MAX 16

/* store_audit_insert_id and store_audit_finish for a caller that holds
 * store->lock (and may run a transaction): the same statements, kept on the
 * handle. */
int store_audit_insert_locked(struct store *store, const struct audit_record *a, int64_t *ret_id,
                              struct cp_error **err);
int store_audit_finish_locked(struct store *store, int64_t id, const struct audit_record *a, struct cp_error **err);
/* Stops the audit writer and writes what is queued (audit_batch.c); a
 * handle without one is left as it is. store_free calls it (through
 * store->audit_batch_stop). */
void store_audit_batching_stop(struct store *store);

/* Sets *err from the connection's last error: "<what>: registry error: ...",
 * CONFLICT for constraint failures, UNAVAILABLE for busy. Returns -1. */
int store_fail(struct store *store, struct cp_error **err, const char *what);
/* Runs SQL without results. Returns 0 or -1 with *err set. */
int store_exec(struct store *store, const char *sql, const char *what, struct cp_error **err);

/* Workspace helpers for callers that already hold store->lock (and run a
 * transaction): insert, and lookup by node (NULL: 'local'), host path and
 * mode (migration 0018: the same path on two machines is two directories). */
int store_workspace_insert_locked(struct store *store, const struct workspace_record *w, struct cp_error **err);
int store_workspace_find_host_locked(struct store *store, const char *node, const char *real_path, const char *mode,
                                     struct workspace_record *ret, int *ret_found, struct cp_error **err);
/* "NODE/MODE" into buf (node NULL: 'local'), the key the lookups above
 * compare with `node || '/' || mode` (a node name has no '/'). */
#define STORE_NODE_MODE_KEY_MAX 96
void store_node_mode_key(const char *node, const char *mode, char *buf, size_t size);

/* How one table's rows become records (one per file that reads a table):
 * the record's size, read (fills a zeroed record from the current row;
 * copies what it keeps) and clear (releases a record's fields). */
struct store_row_type {
	size_t size;
	void (*read)(sqlite3_stmt *st, void *row);
	void (*clear)(void *row);
};
/* Defines name, the row type of records of type record read by read_fn
 * (static void read_fn(sqlite3_stmt *, void *)) and cleared by clear_fn
 * (the record's public clear, void clear_fn(record *)). */
#define STORE_ROW_TYPE(name, record, read_fn, clear_fn)                                                                \
	static void name##_clear(void *row)                                                                            \
	{                                                                                                              \
		clear_fn(row);                                                                                         \
	}                                                                                                              \
	static const struct store_row_type name = {sizeof(record), read_fn, name##_clear}

/* Runs sql (with ?1 = arg when arg is not NULL) and collects every row into
 * a new array of type->size records; on failure what was read is cleared.
 * *ret (caller frees) and *ret_n are set on success. Takes store->lock. what
 * names the call in errors. */
int store_list_rows(struct store *store, const struct store_row_type *type, const char *sql, const char *arg,
                    const char *what, void **ret, size_t *ret_n, struct cp_error **err);

/* Reads the first row of sql (?1 = a1, ?2 = a2 when a2 is not NULL) into
 * *ret (a zeroed record of type); *ret_found says whether there was one.
 * The caller holds store->lock. Returns 0, or -1 with *err set ("<what>:
 * registry error: ..."). store_get_row takes the lock itself. */
int store_get_row_locked(struct store *store, const struct store_row_type *type, const char *sql, const char *a1,
                         const char *a2, const char *what, void *ret, int *ret_found, struct cp_error **err);
int store_get_row(struct store *store, const struct store_row_type *type, const char *sql, const char *a1,
                  const char *a2, const char *what, void *ret, int *ret_found, struct cp_error **err);

/* Runs a one-row write sql with ?1 = id, ?2 = text (NULL binds NULL), ?3 =
 * num (parameters the statement does not use are ignored). NOT_FOUND
 * "<what>: <noun> '<id>' does not exist" when no row changed. Takes
 * store->lock. */
int store_exec_one(struct store *store, const char *sql, const char *what, const char *noun, const char *id,
                   const char *text, int64_t num, struct cp_error **err);

/* Statements with an automatic finalize (systemd's DEFINE_TRIVIAL_CLEANUP_FUNC):
 *   _cleanup_stmt_ sqlite3_stmt *st = NULL;
 *   if (store_prepare(store, &st, "SQL", "what", err) < 0) return -1;
 * and no site finalizes by hand. sqlite3_finalize(NULL) is a no-op. Declare
 * the statement after a _cleanup_store_unlock_ guard, so that it is finalized
 * before the lock is released (cleanups run in reverse order). */
static inline void store_stmt_finalizep(sqlite3_stmt **st)
{
	sqlite3_finalize(*st);
	*st = NULL;
}
#define _cleanup_stmt_ _cleanup_(store_stmt_finalizep)

/* Takes store->lock and returns store, for a _cleanup_store_unlock_ guard
 * that releases it at scope exit. Blocks until the lock is free. */
static inline struct store *store_lock(struct store *store)
{
	pthread_mutex_lock(&store->lock);
	return store;
}
static inline void store_unlockp(struct store **s)
{
	if (*s)
		pthread_mutex_unlock(&(*s)->lock);
}
#define _cleanup_store_unlock_ _cleanup_(store_unlockp)

/* Runs body, an int expression (0, or -1 with *err set), inside BEGIN
 * IMMEDIATE … COMMIT with store->lock held for the whole; rolls back when
 * body or the commit fails. Evaluates to 0 or -1. Blocks on the lock, then
 * up to the busy timeout for the registry's write lock. */
#define STORE_TRANSACTION(store, what, err, body)                                                                      \
	({                                                                                                             \
		_cleanup_store_unlock_ struct store *store_tx_locked = store_lock(store);                              \
		int store_tx_r = store_exec(store_tx_locked, "BEGIN IMMEDIATE", what, err);                            \
		if (store_tx_r == 0) {                                                                                 \
			store_tx_r = (body);                                                                           \
			if (store_tx_r == 0)                                                                           \
				store_tx_r = store_exec(store_tx_locked, "COMMIT", what, err);                         \
			if (store_tx_r < 0)                                                                            \
				store_exec(store_tx_locked, "ROLLBACK", "roll back", NULL);                            \
		}                                                                                                      \
		store_tx_r;                                                                                            \
	})

/* Runs a one-number query sql (?1 = arg when arg is not NULL), such as
 * SELECT COUNT(*), into *ret. Takes store->lock. Returns 0, or -1 with *err
 * set by store_fail(what). */
int store_count(struct store *store, const char *sql, const char *arg, const char *what, int64_t *ret,
                struct cp_error **err);

/* Runs a write sql that returns no rows with ?1 = arg (text; NULL binds
 * NULL; unused by a statement without ?1). The caller holds store->lock.
 * Returns 0, or -1 with *err set by store_fail(what). */
int store_exec_arg(struct store *store, const char *sql, const char *arg, const char *what, struct cp_error **err);

/* Prepares sql on store's connection into *ret (finalized by the caller's
 * _cleanup_stmt_). Returns 0, or -1 with *err set by store_fail(what). */
static inline int store_prepare(struct store *store, sqlite3_stmt **ret, const char *sql, const char *what,
                                struct cp_error **err)
{
	if (sqlite3_prepare_v2(store->db, sql, -1, ret, NULL) != SQLITE_OK)
		return store_fail(store, err, what);
	return 0;
}

/* Binds v as text at i, or SQL NULL when v is NULL. The text is borrowed
 * (SQLITE_STATIC) until the statement is finalized. */
static inline void store_bind_text_opt(sqlite3_stmt *st, int i, const char *v)
{
	if (v)
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, i);
}

/* Copies column i as an owned string (NULL for SQL NULL). sqlite3 answers
 * NULL for a non-NULL column only when out of memory: cp_oom() then. */
static inline char *store_column_strdup(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	if (!t && sqlite3_column_type(st, i) != SQLITE_NULL)
		cp_oom();
	return t ? xstrdup((const char *)t) : NULL;
}

/* sqlite3_mprintf that cannot fail (it returns NULL only when out of
 * memory: cp_oom() then); the caller frees with sqlite3_free. */
#define store_mprintf(...)                                                                                             \
	({                                                                                                             \
		char *store_mprintf_s = sqlite3_mprintf(__VA_ARGS__);                                                  \
		if (!store_mprintf_s)                                                                                  \
			cp_oom();                                                                                      \
		store_mprintf_s;                                                                                       \
	})

#endif
