/* store_internal.h: shared by the store/ sources only. */
#ifndef CP_STORE_INTERNAL_H
#define CP_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <string.h>

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
};

/* Sets *err from the connection's last error: "<what>: registry error: ...",
 * CONFLICT for constraint failures, UNAVAILABLE for busy. Returns -1. */
int store_fail(struct store *store, struct cp_error **err, const char *what);
/* Runs SQL without results. Returns 0 or -1 with *err set. */
int store_exec(struct store *store, const char *sql, const char *what, struct cp_error **err);

/* Workspace helpers for callers that already hold store->lock (and run a
 * transaction): insert, and lookup by host path and mode. */
int store_workspace_insert_locked(struct store *store, const struct workspace_record *w, struct cp_error **err);
int store_workspace_find_host_locked(struct store *store, const char *real_path, const char *mode,
                                     struct workspace_record *ret, int *ret_found, struct cp_error **err);

/* Runs sql (no parameters) and collects every row into a new array of
 * records of row_size bytes, each zeroed and then filled by read_row; on
 * failure clear_row releases what was read. *ret (caller frees) and *ret_n
 * are set on success. Takes store->lock. what names the call in errors. */
int store_list_rows(struct store *store, const char *sql, size_t row_size, void (*read_row)(sqlite3_stmt *, void *),
                    void (*clear_row)(void *), const char *what, void **ret, size_t *ret_n, struct cp_error **err);

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
