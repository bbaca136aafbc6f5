/* test_store_nodes.c: nodes in the registry (migration 0014, issue 28): a
 * registry of before the migration keeps its rows and reads them as on node
 * 'local'; node rows round trip with their labels; names and endpoints are
 * unique and 'local' has no row; drain and resume say the state before;
 * a contact updates labels and time, never the state; a node is removed
 * only when none of its sandboxes holds a container; an export is on its
 * sandbox's node. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static char dir[64], db[128];
static struct store *store;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-nodes-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	store = NULL;
}

static void teardown(void)
{
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(store_nodes, .init = setup, .fini = teardown);

static void open_store(void)
{
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0, "%s", err ? err->message : "");
}

static struct node_record node(const char *name, const char *endpoint)
{
	return (struct node_record){
	    .name = (char *)name,
	    .endpoint = (char *)endpoint,
	    .tls_ca = "/s/nodes/x/ca.pem",
	    .tls_cert = "/s/nodes/x/cert.pem",
	    .tls_key = "/s/nodes/x/key.pem",
	    .labels = {.runtimes = "runc, runsc",
	               .kvm = -1,
	               .memory_bytes = 1LL << 34,
	               .cpus = 8,
	               .engine_version = "20.10.24"},
	    .state = NODE_READY,
	    .created_at_ms = 100,
	};
}

static void insert_ok(const char *name, const char *endpoint)
{
	struct node_record n = node(name, endpoint);
	struct cp_error *err = NULL;
	cr_assert_eq(store_node_insert(store, &n, &err), 0, "%s", err ? err->message : "");
}

static void sandbox(const char *id, const char *ws, const char *on, enum sandbox_status status)
{
	struct cp_error *err = NULL;
	struct workspace_record w = {.id = (char *)ws, .mode = "managed", .path = "/tmp/w", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(store, &w, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record s = {.id = (char *)id,
	                           .workspace_id = (char *)ws,
	                           .status = status,
	                           .container_name = (char *)id,
	                           .image = "img",
	                           .network = 1,
	                           .created_at_ms = 5,
	                           .node = (char *)on};
	cr_assert_eq(store_sandbox_insert(store, &s, &err), 0, "%s", err ? err->message : "");
}

Test(store_nodes, an_older_registry_keeps_its_rows_on_node_local)
{
	sqlite3 *d = NULL;
	cr_assert_eq(sqlite3_open(db, &d), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(d,
	                          "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
	                          "applied_at_ms INTEGER NOT NULL)",
	                          NULL, NULL, NULL),
	             SQLITE_OK);
	for (size_t i = 0; i < store_migrations_count && store_migrations[i].version <= 13; i++) {
		cr_assert_eq(sqlite3_exec(d, store_migrations[i].sql, NULL, NULL, NULL), SQLITE_OK);
		char ins[200];
		snprintf(ins, sizeof ins, "INSERT INTO schema_migrations VALUES (%d, '%s', 1)",
		         store_migrations[i].version, store_migrations[i].name);
		cr_assert_eq(sqlite3_exec(d, ins, NULL, NULL, NULL), SQLITE_OK);
	}
	cr_assert_eq(sqlite3_exec(d,
	                          "INSERT INTO workspaces (id, mode, path, created_at_ms) VALUES ('ws_a', 'managed', "
	                          "'/tmp/a', 1);"
	                          "INSERT INTO sandboxes (id, workspace_id, status, container_name, image, "
	                          "created_at_ms, updated_at_ms, last_activity_ms) VALUES ('sbx_a', 'ws_a', "
	                          "'running', 'sbx_a', 'img', 5, 6, 7);"
	                          "INSERT INTO exports (id, sandbox_id, workspace_id, kind, reason, path, "
	                          "created_at_ms) VALUES ('exp_a', 'sbx_a', 'ws_a', 'git', 'checkpoint', '/e', 9)",
	                          NULL, NULL, NULL),
	             SQLITE_OK);
	sqlite3_close(d);

	open_store();
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(store, "sbx_a", &s, &err), 0);
	cr_assert_str_eq(s.node, "local");
	cr_assert_eq(s.status, SANDBOX_RUNNING);
	sandbox_record_clear(&s);
	struct node_record *rows = NULL;
	size_t n = 9;
	cr_assert_eq(store_node_list(store, &rows, &n, &err), 0);
	cr_assert_eq(n, 0, "no node added: an empty table");
	free(rows);
	int64_t count = -1;
	cr_assert_eq(store_node_count_sandboxes(store, "local", &count, &err), 0);
	cr_assert_eq(count, 1);
}

Test(store_nodes, rows_round_trip_with_their_labels)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	struct node_record b = node("a-2", "tcp://10.0.0.3:2376");
	b.labels.kvm = 1;
	b.state = NODE_DRAINING;
	b.last_contact_ms = 77;
	struct cp_error *err = NULL;
	cr_assert_eq(store_node_insert(store, &b, &err), 0);

	struct node_record got = {0};
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_str_eq(got.endpoint, "tcp://10.0.0.2:2376");
	cr_expect_str_eq(got.tls_key, "/s/nodes/x/key.pem");
	cr_expect_str_eq(got.labels.runtimes, "runc, runsc");
	cr_expect_eq(got.labels.kvm, -1, "not known stays not known");
	cr_expect_eq(got.labels.memory_bytes, 1LL << 34);
	cr_expect_eq(got.labels.cpus, 8);
	cr_expect_str_eq(got.labels.engine_version, "20.10.24");
	cr_expect_eq(got.state, NODE_READY);
	cr_expect_eq(got.last_contact_ms, 0);
	cr_expect_eq(got.created_at_ms, 100);
	node_record_clear(&got);

	struct node_record *rows = NULL;
	size_t n = 0;
	cr_assert_eq(store_node_list(store, &rows, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(rows[0].name, "a-2", "by name");
	cr_expect_eq(rows[0].labels.kvm, 1);
	cr_expect_eq(rows[0].state, NODE_DRAINING);
	cr_expect_eq(rows[0].last_contact_ms, 77);
	for (size_t i = 0; i < n; i++)
		node_record_clear(&rows[i]);
	free(rows);
}

Test(store_nodes, names_and_endpoints_are_unique_and_local_has_no_row)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	struct cp_error *err = NULL;
	struct node_record again = node("n1", "tcp://10.0.0.9:2376");
	cr_assert_eq(store_node_insert(store, &again, &err), -1);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect_eq(err->detail, CP_DETAIL_ALREADY_EXISTS);
	cr_expect(strstr(err->message, "chat2sbx node remove n1") != NULL, "%s", err->message);
	cp_error_freep(&err);

	struct node_record same = node("n2", "tcp://10.0.0.2:2376");
	cr_assert_eq(store_node_insert(store, &same, &err), -1);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "node 'n1' already has the endpoint") != NULL, "%s", err->message);
	cp_error_freep(&err);

	struct node_record local = node("local", "tcp://10.0.0.4:2376");
	cr_assert_eq(store_node_insert(store, &local, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_freep(&err);

	struct node_record got = {0};
	cr_assert_eq(store_node_get(store, "local", &got, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cr_expect(strstr(err->message, "this machine's engine") != NULL, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(store_node_get(store, "nope", &got, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cr_expect(strstr(err->message, "'nope'") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(store_nodes, drain_and_resume_say_the_state_before)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	struct cp_error *err = NULL;
	enum node_state before = _NODE_STATE_INVALID;
	cr_assert_eq(store_node_set_state(store, "n1", NODE_DRAINING, &before, &err), 0);
	cr_expect_eq(before, NODE_READY);
	cr_assert_eq(store_node_set_state(store, "n1", NODE_DRAINING, &before, &err), 0);
	cr_expect_eq(before, NODE_DRAINING, "draining twice is no error");
	cr_assert_eq(store_node_set_state(store, "n1", NODE_READY, &before, &err), 0);
	cr_expect_eq(before, NODE_DRAINING);
	struct node_record got = {0};
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_eq(got.state, NODE_READY);
	node_record_clear(&got);
	cr_assert_eq(store_node_set_state(store, "nope", NODE_DRAINING, NULL, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	cr_assert_eq(store_node_set_state(store, "n1", _NODE_STATE_MAX, NULL, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_freep(&err);
	cr_expect_str_eq(node_state_to_string(NODE_DOWN), "down");
	cr_expect_eq(node_state_from_string("draining"), NODE_DRAINING);
	cr_expect_eq(node_state_from_string("gone"), _NODE_STATE_INVALID);
}

Test(store_nodes, a_contact_updates_labels_and_time_but_not_the_state)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	struct cp_error *err = NULL;
	cr_assert_eq(store_node_set_state(store, "n1", NODE_DRAINING, NULL, &err), 0);
	struct node_labels l = {.runtimes = "runc", .kvm = 0, .memory_bytes = 5, .cpus = 1, .engine_version = NULL};
	cr_assert_eq(store_node_set_contact(store, "n1", &l, 1234, &err), 0);
	struct node_record got = {0};
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_str_eq(got.labels.runtimes, "runc");
	cr_expect_eq(got.labels.kvm, 0);
	cr_expect_eq(got.labels.memory_bytes, 5);
	cr_expect_eq(got.labels.cpus, 1);
	cr_expect_null(got.labels.engine_version);
	cr_expect_eq(got.last_contact_ms, 1234);
	cr_expect_eq(got.state, NODE_DRAINING);
	node_record_clear(&got);
	cr_assert_eq(store_node_set_contact(store, "nope", &l, 1, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
}

Test(store_nodes, removal_waits_until_no_sandbox_holds_a_container_there)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	sandbox("sbx_1", "ws_1", "n1", SANDBOX_RUNNING);
	sandbox("sbx_2", "ws_2", "n1", SANDBOX_EXPIRED);
	sandbox("sbx_3", "ws_3", NULL, SANDBOX_RUNNING);
	struct cp_error *err = NULL;
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get(store, "sbx_3", &s, &err), 0);
	cr_expect_str_eq(s.node, "local", "no node given: local");
	sandbox_record_clear(&s);
	cr_assert_eq(store_sandbox_get(store, "sbx_1", &s, &err), 0);
	cr_expect_str_eq(s.node, "n1");
	sandbox_record_clear(&s);

	int64_t count = 0;
	cr_assert_eq(store_node_count_sandboxes(store, "n1", &count, &err), 0);
	cr_expect_eq(count, 2, "running and expired both hold a container");
	cr_assert_eq(store_node_delete(store, "n1", NULL, &err), -1);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "2 sandboxes") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "chat2sbx node drain n1") != NULL, "%s", err->message);
	cp_error_freep(&err);

	cr_assert_eq(store_sandbox_set_status(store, "sbx_1", SANDBOX_REMOVED, NULL, NULL, 10, &err), 0);
	cr_assert_eq(store_sandbox_set_status(store, "sbx_2", SANDBOX_FAILED, NULL, "gone", 10, &err), 0);
	struct node_record gone = {0};
	cr_assert_eq(store_node_delete(store, "n1", &gone, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(gone.tls_key, "/s/nodes/x/key.pem", "the caller learns which files to remove");
	node_record_clear(&gone);
	cr_assert_eq(store_node_get(store, "n1", &gone, &err), -1);
	cp_error_freep(&err);
	cr_assert_eq(store_node_delete(store, "n1", NULL, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
}

/* Issue 28: warm-pool members hold containers on the node too, so they
 * count; when they are all that is left, the refusal says serve removes
 * them from a drained node (pool_node.c), not to destroy them by hand. */
Test(store_nodes, removal_names_warm_pool_members_left_on_the_node)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	struct cp_error *err = NULL;
	struct workspace_record w = {.id = "ws_p", .mode = "managed", .path = "/tmp/w", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(store, &w, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record s = {.id = "sbx_p",
	                           .workspace_id = "ws_p",
	                           .status = SANDBOX_RUNNING,
	                           .container_name = "sbx_p",
	                           .image = "img",
	                           .network = 1,
	                           .created_at_ms = 5,
	                           .pooled = 1,
	                           .node = "n1"};
	cr_assert_eq(store_sandbox_insert(store, &s, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_node_delete(store, "n1", NULL, &err), -1);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "1 warm-pool sandbox;") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "a running serve then removes them") != NULL, "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(store_sandbox_pool_forget(store, "sbx_p", &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_node_delete(store, "n1", NULL, &err), 0, "%s", err ? err->message : "");
}

Test(store_nodes, an_export_is_on_its_sandboxs_node)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	sandbox("sbx_1", "ws_1", "n1", SANDBOX_RUNNING);
	struct export_record x = {.id = "exp_1",
	                          .sandbox_id = "sbx_1",
	                          .workspace_id = "ws_1",
	                          .kind = "git",
	                          .reason = "checkpoint",
	                          .path = "/e/1",
	                          .created_at_ms = 3};
	struct cp_error *err = NULL;
	cr_assert_eq(store_export_insert(store, &x, &err), 0, "%s", err ? err->message : "");
	store_free(store);
	store = NULL;

	sqlite3 *d = NULL;
	cr_assert_eq(sqlite3_open(db, &d), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	cr_assert_eq(sqlite3_prepare_v2(d, "SELECT node FROM exports WHERE id = 'exp_1'", -1, &st, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	cr_expect_str_eq((const char *)sqlite3_column_text(st, 0), "n1");
	sqlite3_finalize(st);
	sqlite3_close(d);
}

Test(store_nodes, each_node_counts_its_own_live_sandboxes)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	sandbox("sbx_a", "ws_a", NULL, SANDBOX_RUNNING);
	sandbox("sbx_b", "ws_b", "n1", SANDBOX_RUNNING);
	sandbox("sbx_c", "ws_c", "n1", SANDBOX_CREATING);
	sandbox("sbx_d", "ws_d", "n1", SANDBOX_REMOVED);
	int local = -1, n1 = -1, all = -1;
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_count_live_on(store, NULL, &local, &err), 0);
	cr_assert_eq(store_sandbox_count_live_on(store, "n1", &n1, &err), 0);
	cr_assert_eq(store_sandbox_count_live(store, &all, &err), 0);
	cr_expect_eq(local, 1);
	cr_expect_eq(n1, 2);
	cr_expect_eq(all, 3);
}

/* The firewall reads the endpoints from serve and the CLI, which hold the
 * registry open: the read must leave that store working, its later writes
 * seen by another connection (no lock of it dropped). */
Test(store_nodes, endpoints_are_read_beside_an_open_store)
{
	open_store();
	char **v = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_node_endpoints_read(db, &v, &err), 0, "%s", err ? err->message : "");
	cr_assert_null(v, "no node, no endpoint");
	insert_ok("n1", "tcp://10.0.0.2:2376");
	insert_ok("n2", "tcp://[fd00::2]:2376");
	cr_assert_eq(store_node_endpoints_read(db, &v, &err), 0, "%s", err ? err->message : "");
	cr_assert(v && v[0] && v[1] && !v[2]);
	cr_expect_str_eq(v[0], "tcp://10.0.0.2:2376");
	cr_expect_str_eq(v[1], "tcp://[fd00::2]:2376");
	for (size_t i = 0; v[i]; i++)
		free(v[i]);
	free(v);
	insert_ok("n3", "tcp://10.0.0.3:2376");
	struct store *other = NULL;
	cr_assert_eq(store_open(db, &other, &err), 0, "%s", err ? err->message : "");
	struct node_record got = {0};
	cr_assert_eq(store_node_get(other, "n3", &got, &err), 0, "a write after the read is seen: %s",
	             err ? err->message : "");
	node_record_clear(&got);
	store_free(other);
	char absent[160];
	snprintf(absent, sizeof(absent), "%s/none.sqlite", dir);
	cr_assert_eq(store_node_endpoints_read(absent, &v, &err), 0, "a registry not made yet has no node");
	cr_assert_null(v);
}

Test(store_nodes, a_nodes_free_disk_is_not_known_until_recorded_and_can_be_forgotten)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	struct cp_error *err = NULL;
	struct node_record got = {0};
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_eq(got.disk.total_bytes, -1, "a new node's disk is not known");
	cr_expect_eq(got.disk.checked_ms, 0);
	node_record_clear(&got);
	struct node_disk d = {.total_bytes = 64LL << 20,
	                      .free_bytes = 1LL << 20,
	                      .watermark_bytes = 3LL << 20,
	                      .low = 1,
	                      .checked_ms = 77};
	cr_assert_eq(store_node_set_disk(store, "n1", &d, &err), 0);
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_eq(got.disk.total_bytes, 64LL << 20);
	cr_expect_eq(got.disk.free_bytes, 1LL << 20);
	cr_expect_eq(got.disk.watermark_bytes, 3LL << 20);
	cr_expect_eq(got.disk.low, 1);
	cr_expect_eq(got.disk.checked_ms, 77);
	cr_expect_eq(got.state, NODE_READY, "the state is not touched");
	node_record_clear(&got);
	/* The probe failed: the sizes are forgotten, the time of the look kept. */
	struct node_disk unknown = {.total_bytes = -1, .free_bytes = -1, .watermark_bytes = -1, .checked_ms = 88};
	cr_assert_eq(store_node_set_disk(store, "n1", &unknown, &err), 0);
	struct node_record *rows = NULL;
	size_t n = 0;
	cr_assert_eq(store_node_list(store, &rows, &n, &err), 0);
	cr_assert_eq(n, 1);
	cr_expect_eq(rows[0].disk.total_bytes, -1);
	cr_expect_eq(rows[0].disk.free_bytes, -1);
	cr_expect_eq(rows[0].disk.low, 0);
	cr_expect_eq(rows[0].disk.checked_ms, 88);
	node_record_clear(&rows[0]);
	free(rows);
	cr_assert_eq(store_node_set_disk(store, "nope", &d, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
}

/* Migration 0019: a node's process limits are not known until its probe
 * read them; then they round-trip, and a read that failed forgets them. */
Test(store_nodes, a_nodes_process_limits_round_trip)
{
	open_store();
	insert_ok("n1", "tcp://10.0.0.2:2376");
	struct cp_error *err = NULL;
	struct node_record got = {0};
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_eq(got.pid_max, 0);
	cr_expect_eq(got.threads_max, 0);
	node_record_clear(&got);
	cr_assert_eq(store_node_set_procs(store, "n1", 4194304, 254397, &err), 0);
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_eq(got.pid_max, 4194304);
	cr_expect_eq(got.threads_max, 254397);
	node_record_clear(&got);
	cr_assert_eq(store_node_set_procs(store, "n1", 0, -3, &err), 0);
	cr_assert_eq(store_node_get(store, "n1", &got, &err), 0);
	cr_expect_eq(got.pid_max, 0);
	cr_expect_eq(got.threads_max, 0);
	node_record_clear(&got);
	cr_assert_eq(store_node_set_procs(store, "nope", 1, 1, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
}
