/* exposures.c: rows of the exposures table (migration 0004): which container
 * port of which sandbox is published on which host address and port, through
 * which forwarder container and engine network. No engine calls here: the
 * rows are the registry's record of what lifecycle/expose.c made. */
#include <stdio.h>
#include <stdlib.h>

#include "../base/xalloc.h"
#include "store_internal.h"

void exposure_record_clear(struct exposure_record *x)
{
	if (!x)
		return;
	free(x->sandbox_id);
	free(x->host);
	free(x->forwarder_name);
	free(x->forwarder_id);
	free(x->network);
	*x = (struct exposure_record){0};
}

#define EXP_COLUMNS "sandbox_id, container_port, host, host_port, forwarder_name, forwarder_id, network, created_at_ms"

/* Copies one row. */
static void read_row(sqlite3_stmt *st, void *row)
{
	struct exposure_record *x = row;
	x->sandbox_id = store_column_strdup(st, 0);
	x->container_port = sqlite3_column_int(st, 1);
	x->host = store_column_strdup(st, 2);
	x->host_port = sqlite3_column_int(st, 3);
	x->forwarder_name = store_column_strdup(st, 4);
	x->forwarder_id = store_column_strdup(st, 5);
	x->network = store_column_strdup(st, 6);
	x->created_at_ms = sqlite3_column_int64(st, 7);
}

STORE_ROW_TYPE(rows, struct exposure_record, read_row, exposure_record_clear);

int store_exposure_insert(struct store *store, const struct exposure_record *x, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, "INSERT INTO exposures (" EXP_COLUMNS ") VALUES (?,?,?,?,?,?,?,?)",
	                  "insert exposure", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, x->sandbox_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, x->container_port);
	sqlite3_bind_text(st, 3, x->host, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, x->host_port);
	sqlite3_bind_text(st, 5, x->forwarder_name, -1, SQLITE_STATIC);
	store_bind_text_opt(st, 6, x->forwarder_id);
	sqlite3_bind_text(st, 7, x->network, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 8, x->created_at_ms);
	if (sqlite3_step(st) == SQLITE_DONE)
		return 0;
	if ((sqlite3_extended_errcode(locked->db) & 0xff) == SQLITE_CONSTRAINT)
		return cp_error_set(
		    err, CP_ERR_CONFLICT, "port %d of sandbox '%s' (or host port %s:%d) is already exposed: %s",
		    x->container_port, x->sandbox_id, x->host, x->host_port, sqlite3_errmsg(locked->db));
	return store_fail(locked, err, "insert exposure");
}

int store_exposure_get(struct store *store, const char *sandbox_id, int container_port, struct exposure_record *ret,
                       struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "SELECT " EXP_COLUMNS " FROM exposures WHERE sandbox_id = ? AND container_port = ?",
	                  "load exposure", err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, container_port);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "port %d of sandbox '%s' is not exposed", container_port,
		                    sandbox_id);
	if (rc != SQLITE_ROW)
		return store_fail(locked, err, "load exposure");
	*ret = (struct exposure_record){0};
	read_row(st, ret);
	return 0;
}

int store_exposure_list(struct store *store, const char *sandbox_id, struct exposure_record **ret, size_t *ret_n,
                        struct cp_error **err)
{
	const char *sql = sandbox_id ? "SELECT " EXP_COLUMNS
	                               " FROM exposures WHERE sandbox_id = ? ORDER BY container_port"
	                             : "SELECT " EXP_COLUMNS " FROM exposures ORDER BY sandbox_id, container_port";
	return store_list_rows(store, &rows, sql, sandbox_id, "list exposures", (void **)ret, ret_n, err);
}

int store_exposure_count(struct store *store, const char *sandbox_id, int64_t *ret_count, struct cp_error **err)
{
	return store_count(store,
	                   sandbox_id ? "SELECT COUNT(*) FROM exposures WHERE sandbox_id = ?"
	                              : "SELECT COUNT(*) FROM exposures",
	                   sandbox_id, "count exposures", ret_count, err);
}

/* Runs a one-row write sql on the exposure of (?1 = sandbox_id, ?2 =
 * container_port), ?3 = text (NULL binds NULL; unused by a statement
 * without it). NOT_FOUND "<what>: port … is not exposed" when no row
 * changed. Takes store->lock. */
static int port_write(struct store *store, const char *sql, const char *what, const char *sandbox_id,
                      int container_port, const char *text, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st, sql, what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, sandbox_id, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, container_port);
	store_bind_text_opt(st, 3, text);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, what);
	if (sqlite3_changes(locked->db) == 0)
		return cp_error_set(err, CP_ERR_NOT_FOUND, "%s: port %d of sandbox '%s' is not exposed", what,
		                    container_port, sandbox_id);
	return 0;
}

int store_exposure_delete(struct store *store, const char *sandbox_id, int container_port, struct cp_error **err)
{
	return port_write(store, "DELETE FROM exposures WHERE sandbox_id = ?1 AND container_port = ?2",
	                  "delete exposure", sandbox_id, container_port, NULL, err);
}

int store_exposure_set_forwarder(struct store *store, const char *sandbox_id, int container_port,
                                 const char *forwarder_id, struct cp_error **err)
{
	return port_write(store, "UPDATE exposures SET forwarder_id = ?3 WHERE sandbox_id = ?1 AND container_port = ?2",
	                  "update exposure", sandbox_id, container_port, forwarder_id, err);
}
