/* nodes.c: rows of the nodes table (migrations 0014, 0017 and 0018, issue 28):
 * other machines' engines, their TLS file paths, what their GET /info
 * said, their state and their free disk as serve last found it. This
 * machine's engine, node 'local', has no row. Knows no engine and no
 * file: the TLS files are node/'s. */
#include <stdio.h>
#include <stdlib.h>

#include "store_internal.h"

void node_labels_clear(struct node_labels *l)
{
	if (!l)
		return;
	free(l->runtimes);
	free(l->engine_version);
	*l = (struct node_labels){0};
}

void node_record_clear(struct node_record *n)
{
	if (!n)
		return;
	free(n->name);
	free(n->endpoint);
	free(n->tls_ca);
	free(n->tls_cert);
	free(n->tls_key);
	free(n->host_roots);
	node_labels_clear(&n->labels);
	*n = (struct node_record){0};
}

#define NODE_COLUMNS                                                                                                   \
	"name, endpoint, tls_ca, tls_cert, tls_key, runtimes, COALESCE(kvm, -1), memory_bytes, cpus, "                 \
	"engine_version, state, COALESCE(last_contact_ms, 0), created_at_ms, COALESCE(disk_total_bytes, -1), "         \
	"COALESCE(disk_free_bytes, -1), COALESCE(disk_watermark_bytes, -1), COALESCE(disk_low, 0), "                   \
	"COALESCE(disk_checked_ms, 0), host_roots, COALESCE(pid_max, 0), COALESCE(threads_max, 0)"

/* Sandbox rows on a node that still hold a container there (?1 = node). */
/* Column 0: the sandboxes holding a container there; column 1: how many
 * of them are warm-pool members (pool_node.c removes those of a drained
 * node while serve runs). */
#define NODE_SANDBOXES_SQL                                                                                             \
	"SELECT COUNT(*), COALESCE(SUM(pooled), 0) FROM sandboxes WHERE node = ?1 AND status NOT IN ('removed', "      \
	"'failed')"

static void read_row(sqlite3_stmt *st, void *row)
{
	struct node_record *n = row;
	n->name = store_column_strdup(st, 0);
	n->endpoint = store_column_strdup(st, 1);
	n->tls_ca = store_column_strdup(st, 2);
	n->tls_cert = store_column_strdup(st, 3);
	n->tls_key = store_column_strdup(st, 4);
	n->labels.runtimes = store_column_strdup(st, 5);
	n->labels.kvm = sqlite3_column_int(st, 6);
	n->labels.memory_bytes = sqlite3_column_int64(st, 7);
	n->labels.cpus = sqlite3_column_int64(st, 8);
	n->labels.engine_version = store_column_strdup(st, 9);
	n->state = node_state_from_string((const char *)sqlite3_column_text(st, 10));
	n->last_contact_ms = sqlite3_column_int64(st, 11);
	n->created_at_ms = sqlite3_column_int64(st, 12);
	n->disk = (struct node_disk){.total_bytes = sqlite3_column_int64(st, 13),
	                             .free_bytes = sqlite3_column_int64(st, 14),
	                             .watermark_bytes = sqlite3_column_int64(st, 15),
	                             .low = sqlite3_column_int(st, 16),
	                             .checked_ms = sqlite3_column_int64(st, 17)};
	n->host_roots = store_column_strdup(st, 18);
	n->pid_max = sqlite3_column_int64(st, 19);
	n->threads_max = sqlite3_column_int64(st, 20);
	if (n->disk.total_bytes < 0 || n->disk.free_bytes < 0 || n->disk.watermark_bytes < 0)
		n->disk = (struct node_disk){
		    .total_bytes = -1, .free_bytes = -1, .watermark_bytes = -1, .checked_ms = n->disk.checked_ms};
}

STORE_ROW_TYPE(rows, struct node_record, read_row, node_record_clear);

/* Binds the labels at ?6..?10 (kvm -1 as NULL). */
static void bind_labels(sqlite3_stmt *st, const struct node_labels *l)
{
	sqlite3_bind_text(st, 6, l->runtimes ? l->runtimes : "", -1, SQLITE_STATIC);
	if (l->kvm < 0)
		sqlite3_bind_null(st, 7);
	else
		sqlite3_bind_int(st, 7, l->kvm ? 1 : 0);
	sqlite3_bind_int64(st, 8, l->memory_bytes);
	sqlite3_bind_int64(st, 9, l->cpus);
	store_bind_text_opt(st, 10, l->engine_version);
}

/* NOT_FOUND for a name without a row (store.h words it). */
static int node_not_found(struct cp_error **err, const char *what, const char *name)
{
	if (name && !strcmp(name, STORE_NODE_LOCAL))
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "%s: node 'local' is this machine's engine, which has no registry row; see "
		                    "'chat2sbx node list'",
		                    what);
	return cp_error_set(err, CP_ERR_NOT_FOUND, "%s: node '%s' does not exist; see 'chat2sbx node list'", what,
	                    name ? name : "");
}

int store_node_insert(struct store *store, const struct node_record *n, struct cp_error **err)
{
	const char *what = "register node";
	if (!n->name || !strcmp(n->name, STORE_NODE_LOCAL))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s: 'local' is this machine's engine; choose another name", what);
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	/* A clash is told by name or endpoint before the insert, so the
	 * message can say which; the UNIQUE constraints still decide. */
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	if (store_prepare(locked, &q, "SELECT name, endpoint = ?2 FROM nodes WHERE name = ?1 OR endpoint = ?2", what,
	                  err) < 0)
		return -1;
	sqlite3_bind_text(q, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, n->endpoint, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW) {
		const char *other = (const char *)sqlite3_column_text(q, 0);
		if (sqlite3_column_int(q, 1))
			cp_error_set(err, CP_ERR_CONFLICT, "%s: node '%s' already has the endpoint '%s'", what,
			             other ? other : "", n->endpoint);
		else
			cp_error_set(err, CP_ERR_CONFLICT,
			             "%s: a node named '%s' exists already; choose another name, or remove it "
			             "first ('chat2sbx node remove %s')",
			             what, n->name, n->name);
		return cp_error_set_detail(err, CP_DETAIL_ALREADY_EXISTS);
	}
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "INSERT INTO nodes (name, endpoint, tls_ca, tls_cert, tls_key, runtimes, kvm, memory_bytes, "
	                  "cpus, engine_version, state, last_contact_ms, created_at_ms, host_roots) VALUES "
	                  "(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,NULLIF(?12,0),?13,NULLIF(?14,''))",
	                  what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, n->endpoint, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, n->tls_ca, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, n->tls_cert, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, n->tls_key, -1, SQLITE_STATIC);
	bind_labels(st, &n->labels);
	const char *state = node_state_to_string(n->state);
	sqlite3_bind_text(st, 11, state ? state : "ready", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 12, n->last_contact_ms);
	sqlite3_bind_int64(st, 13, n->created_at_ms);
	store_bind_text_opt(st, 14, n->host_roots);
	if (sqlite3_step(st) == SQLITE_DONE)
		return 0;
	if ((sqlite3_extended_errcode(locked->db) & 0xff) == SQLITE_CONSTRAINT) {
		cp_error_set(err, CP_ERR_CONFLICT, "%s: the name '%s' or the endpoint is taken", what, n->name);
		return cp_error_set_detail(err, CP_DETAIL_ALREADY_EXISTS);
	}
	return store_fail(locked, err, what);
}

int store_node_get(struct store *store, const char *name, struct node_record *ret, struct cp_error **err)
{
	int found = 0;
	if (store_get_row(store, &rows, "SELECT " NODE_COLUMNS " FROM nodes WHERE name = ?1", name ? name : "", NULL,
	                  "read node", ret, &found, err) < 0)
		return -1;
	return found ? 0 : node_not_found(err, "read node", name);
}

int store_node_list(struct store *store, struct node_record **ret, size_t *ret_n, struct cp_error **err)
{
	void *list = NULL;
	if (store_list_rows(store, &rows, "SELECT " NODE_COLUMNS " FROM nodes ORDER BY name", NULL, "list nodes", &list,
	                    ret_n, err) < 0)
		return -1;
	*ret = list;
	return 0;
}

/* The body of store_node_set_state, under its transaction. */
static int local_state_locked(struct store *store, enum node_state *ret, struct cp_error **err)
{
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	if (store_prepare(store, &q, "SELECT state FROM node_local WHERE id = 1", "read node local's state", err) < 0)
		return -1;
	int rc = sqlite3_step(q);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return store_fail(store, err, "read node local's state");
	*ret = rc == SQLITE_ROW ? node_state_from_string((const char *)sqlite3_column_text(q, 0)) : NODE_READY;
	return 0;
}

int store_node_local_state(struct store *store, enum node_state *ret, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	return local_state_locked(locked, ret, err);
}

static int set_local_state_locked(struct store *store, const char *text, enum node_state *ret_before,
                                  struct cp_error **err)
{
	const char *what = "change node local's state";
	if (strcmp(text, "ready") && strcmp(text, "draining"))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: node 'local' is ready or draining, not %s", what,
		                    text);
	enum node_state before = NODE_READY;
	if (local_state_locked(store, &before, err) < 0)
		return -1;
	if (ret_before)
		*ret_before = before;
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st,
	                  "INSERT INTO node_local (id, state) VALUES (1, ?1) "
	                  "ON CONFLICT (id) DO UPDATE SET state = excluded.state",
	                  what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : store_fail(store, err, what);
}

static int set_state_locked(struct store *store, const char *name, const char *text, enum node_state *ret_before,
                            struct cp_error **err)
{
	const char *what = "change the node's state";
	if (!strcmp(name, STORE_NODE_LOCAL))
		return set_local_state_locked(store, text, ret_before, err);
	_cleanup_stmt_ sqlite3_stmt *q = NULL;
	if (store_prepare(store, &q, "SELECT state FROM nodes WHERE name = ?1", what, err) < 0)
		return -1;
	sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	int rc = sqlite3_step(q);
	if (rc == SQLITE_DONE)
		return node_not_found(err, what, name);
	if (rc != SQLITE_ROW)
		return store_fail(store, err, what);
	if (ret_before)
		*ret_before = node_state_from_string((const char *)sqlite3_column_text(q, 0));
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st, "UPDATE nodes SET state = ?2 WHERE name = ?1", what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
	return sqlite3_step(st) == SQLITE_DONE ? 0 : store_fail(store, err, what);
}

int store_node_set_state(struct store *store, const char *name, enum node_state state, enum node_state *ret_before,
                         struct cp_error **err)
{
	const char *what = "change the node's state";
	const char *text = node_state_to_string(state);
	if (!text)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: no such state", what);
	if (!name)
		return node_not_found(err, what, name);
	return STORE_TRANSACTION(store, what, err, set_state_locked(store, name, text, ret_before, err));
}

int store_node_set_contact(struct store *store, const char *name, const struct node_labels *labels, int64_t now_ms,
                           struct cp_error **err)
{
	const char *what = "record the node's contact";
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "UPDATE nodes SET runtimes = ?6, kvm = ?7, memory_bytes = ?8, cpus = ?9, "
	                  "engine_version = ?10, last_contact_ms = ?2 WHERE name = ?1",
	                  what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ms);
	bind_labels(st, labels);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, what);
	return sqlite3_changes(locked->db) ? 0 : node_not_found(err, what, name);
}

int store_node_set_procs(struct store *store, const char *name, int64_t pid_max, int64_t threads_max,
                         struct cp_error **err)
{
	const char *what = "record the node's process limits";
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "UPDATE nodes SET pid_max = NULLIF(?2, 0), threads_max = NULLIF(?3, 0) WHERE name = ?1", what,
	                  err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pid_max > 0 ? pid_max : 0);
	sqlite3_bind_int64(st, 3, threads_max > 0 ? threads_max : 0);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, what);
	return sqlite3_changes(locked->db) ? 0 : node_not_found(err, what, name);
}

int store_node_set_disk(struct store *store, const char *name, const struct node_disk *d, struct cp_error **err)
{
	const char *what = "record the node's free disk";
	int known = d && d->total_bytes >= 0 && d->free_bytes >= 0 && d->watermark_bytes >= 0;
	_cleanup_store_unlock_ struct store *locked = store_lock(store);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(locked, &st,
	                  "UPDATE nodes SET disk_total_bytes = ?2, disk_free_bytes = ?3, disk_watermark_bytes = ?4, "
	                  "disk_low = ?5, disk_checked_ms = NULLIF(?6, 0) WHERE name = ?1",
	                  what, err) < 0)
		return -1;
	sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_STATIC);
	for (int i = 2; i <= 5 && !known; i++)
		sqlite3_bind_null(st, i);
	if (known) {
		sqlite3_bind_int64(st, 2, d->total_bytes);
		sqlite3_bind_int64(st, 3, d->free_bytes);
		sqlite3_bind_int64(st, 4, d->watermark_bytes);
		sqlite3_bind_int(st, 5, d->low ? 1 : 0);
	}
	sqlite3_bind_int64(st, 6, d ? d->checked_ms : 0);
	if (sqlite3_step(st) != SQLITE_DONE)
		return store_fail(locked, err, what);
	return sqlite3_changes(locked->db) ? 0 : node_not_found(err, what, name);
}

int store_node_count_sandboxes(struct store *store, const char *name, int64_t *ret_count, struct cp_error **err)
{
	return store_count(store, NODE_SANDBOXES_SQL, name ? name : "", "count the node's sandboxes", ret_count, err);
}

/* The body of store_node_delete, under its transaction. */
static int delete_locked(struct store *store, const char *name, struct node_record *ret, struct cp_error **err)
{
	const char *what = "remove node";
	struct node_record n = {0};
	int found = 0;
	if (store_get_row_locked(store, &rows, "SELECT " NODE_COLUMNS " FROM nodes WHERE name = ?1", name, NULL, what,
	                         &n, &found, err) < 0)
		return -1;
	if (!found)
		return node_not_found(err, what, name);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	if (store_prepare(store, &st, NODE_SANDBOXES_SQL, what, err) < 0) {
		node_record_clear(&n);
		return -1;
	}
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int row = sqlite3_step(st) == SQLITE_ROW;
	int64_t count = row ? sqlite3_column_int64(st, 0) : -1;
	int64_t pooled = row ? sqlite3_column_int64(st, 1) : 0;
	int r = 0;
	if (count < 0)
		r = store_fail(store, err, what);
	else if (count > 0 && pooled == count)
		r = cp_error_set(err, CP_ERR_CONFLICT,
		                 "%s '%s': it still has %lld warm-pool sandbox%s; drain it ('chat2sbx node drain "
		                 "%s'): a running serve then removes them within seconds, or the next serve to "
		                 "start does; then remove it",
		                 what, name, (long long)count, count == 1 ? "" : "es", name);
	else if (count > 0)
		r = cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "%s '%s': it still has %lld sandbox%s; drain it ('chat2sbx node drain %s'), "
		    "destroy them ('chat2sbx sandbox list', 'chat2sbx sandbox destroy ID'), then remove it",
		    what, name, (long long)(count - pooled), count - pooled == 1 ? "" : "es", name);
	else
		r = store_exec_arg(store, "DELETE FROM nodes WHERE name = ?1", name, what, err);
	if (r == 0 && ret)
		*ret = n;
	else
		node_record_clear(&n);
	return r;
}

int store_node_delete(struct store *store, const char *name, struct node_record *ret, struct cp_error **err)
{
	if (!name)
		return node_not_found(err, "remove node", name);
	return STORE_TRANSACTION(store, "remove node", err, delete_locked(store, name, ret, err));
}

int store_node_endpoints_read(const char *path, char ***ret, struct cp_error **err)
{
	*ret = NULL;
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK) {
		int absent = sqlite3_extended_errcode(db) == SQLITE_CANTOPEN;
		if (!absent)
			cp_error_set(err, CP_ERR_UNAVAILABLE, "read the nodes from '%s': %s", path,
			             db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return absent ? 0 : -1;
	}
	sqlite3_busy_timeout(db, STORE_BUSY_TIMEOUT_MS);
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT endpoint FROM nodes ORDER BY name", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		int no_table = strstr(sqlite3_errmsg(db), "no such table") != NULL;
		if (!no_table)
			cp_error_set(err, CP_ERR_UNAVAILABLE, "read the nodes from '%s': %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return no_table ? 0 : -1;
	}
	char **v = NULL;
	size_t n = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *e = sqlite3_column_text(st, 0);
		if (!e)
			continue;
		v = xrealloc(v, (n + 2) * sizeof(*v));
		v[n++] = xstrdup((const char *)e);
		v[n] = NULL;
	}
	if (rc != SQLITE_DONE) {
		cp_error_set(err, CP_ERR_UNAVAILABLE, "read the nodes from '%s': %s", path, sqlite3_errmsg(db));
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		v = NULL;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	*ret = v;
	return v || rc == SQLITE_DONE ? 0 : -1;
}
