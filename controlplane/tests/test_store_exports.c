/* test_store_exports.c: saved clone work in the registry (migration 0010):
 * the rebuild of sandboxes keeps every row, column, exposure and extra mount
 * of a database made before it; the status 'expired' and its revival; the
 * status 'removing' and the one-live-sandbox rule; export rows round trip,
 * newest per sandbox, applied and trashed; source refs and the unsaved
 * flag. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store_fixture.h"

TestSuite(store_exports, .init = store_fx_setup, .fini = store_fx_teardown);

Test(store_exports, rebuild_keeps_rows_and_exposures_of_an_older_registry)
{
	/* A registry at version 9 with a sandbox, an exposure and an extra
	 * mount, as an older chat2sbx left it. */
	sqlite3 *d = store_fx_at_version(9);
	store_fx_exec(d,
	              "INSERT INTO workspaces (id, mode, path, created_at_ms) VALUES ('ws_a', 'managed', '/tmp/a', 1)");
	store_fx_exec(
	    d,
	    "INSERT INTO sandboxes (id, workspace_id, status, container_name, image, created_at_ms, updated_at_ms, "
	    "last_activity_ms, mount_dev, mount_ino, disk_bytes) VALUES ('sbx_a', 'ws_a', 'running', 'sbx_a', 'img', "
	    "5, 6, 7, 11, 12, 4096)");
	store_fx_exec(
	    d, "INSERT INTO sandbox_mounts VALUES ('sbx_a', '/workspace/.git/config', '/tmp/a/.git/config', 1, 3, 4)");
	store_fx_exec(
	    d, "INSERT INTO exposures VALUES ('sbx_a', 8000, '127.0.0.1', 40000, 'sbx_a-expose-8000', NULL, 'net', 9)");
	sqlite3_close(d);

	struct store *st = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(store_fx_db, &st, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get(st, "sbx_a", &s, &err), 0);
	cr_assert_str_eq(sandbox_status_to_string(s.status), "running");
	cr_assert_eq(s.last_activity_ms, 7);
	cr_assert_eq(s.unsaved, -1, "not known yet");
	cr_assert_eq(s.disk_bytes, 4096, "0008's column is kept");
	cr_assert_null(sandbox_status_to_string(s.removing_from));
	sandbox_record_clear(&s);
	struct sandbox_mount_record *mounts = NULL;
	size_t n_mounts = 0;
	cr_assert_eq(store_sandbox_mounts_list(st, "sbx_a", &mounts, &n_mounts, &err), 0);
	cr_assert_eq(n_mounts, 1, "0009's extra mounts are kept");
	cr_assert_str_eq(mounts[0].target, "/workspace/.git/config");
	cr_assert_eq(mounts[0].ino, 4);
	sandbox_mount_record_clear(&mounts[0]);
	free(mounts);
	uint64_t dev = 0, ino = 0;
	cr_assert_eq(store_sandbox_get_mount_identity(st, "sbx_a", &dev, &ino, &err), 1);
	cr_assert_eq(dev, 11);
	cr_assert_eq(ino, 12);
	struct exposure_record x = {0};
	cr_assert_eq(store_exposure_get(st, "sbx_a", 8000, &x, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(x.host_port, 40000);
	exposure_record_clear(&x);
	/* The foreign key still holds: an exposure of no sandbox is refused. */
	struct exposure_record bad = {.sandbox_id = "sbx_zz",
	                              .container_port = 1,
	                              .host = "127.0.0.1",
	                              .host_port = 1,
	                              .forwarder_name = "f",
	                              .network = "n",
	                              .created_at_ms = 1};
	cr_assert_eq(store_exposure_insert(st, &bad, &err), -1);
	cp_error_freep(&err);
	store_free(st);
}

static struct store *open_with_sandbox(void)
{
	struct store *st = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(store_fx_db, &st, &err), 0, "%s", err ? err->message : "");
	struct workspace_record w = {
	    .id = "ws_c", .mode = "clone", .path = "/tmp/c", .host_path = "/tmp/c", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(st, &w, &err), 0);
	struct sandbox_record s = {.id = "sbx_c",
	                           .workspace_id = "ws_c",
	                           .status = SANDBOX_RUNNING,
	                           .container_name = "sbx_c",
	                           .image = "img",
	                           .network = 1,
	                           .created_at_ms = 2};
	cr_assert_eq(store_sandbox_insert(st, &s, &err), 0);
	return st;
}

Test(store_exports, expired_is_not_live_and_revives)
{
	struct store *st = open_with_sandbox();
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_set_status(st, "sbx_c", SANDBOX_EXPIRED, NULL, "idle; the save failed", 10, &err), 0,
	             "%s", err ? err->message : "");
	int live = -1;
	cr_assert_eq(store_sandbox_count_live(st, &live, &err), 0);
	cr_assert_eq(live, 0);
	struct workspace_record w = {0};
	cr_assert_eq(store_workspace_get(st, "ws_c", &w, &err), 0);
	cr_assert_null(w.sandbox_id, "an expired sandbox is not the workspace's live one");
	workspace_record_clear(&w);
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get_expired_for_workspace(st, "ws_c", &s, &err), 0);
	cr_assert_str_eq(s.id, "sbx_c");
	sandbox_record_clear(&s);
	cr_assert_eq(store_sandbox_revive(st, "sbx_c", 20, &err), 0);
	cr_assert_eq(store_sandbox_get(st, "sbx_c", &s, &err), 0);
	cr_assert_str_eq(sandbox_status_to_string(s.status), "running");
	cr_assert_null(s.failure_reason);
	cr_assert_eq(s.last_activity_ms, 20);
	sandbox_record_clear(&s);
	cr_assert_eq(store_sandbox_revive(st, "sbx_c", 21, &err), -1, "only an expired one revives");
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	store_free(st);
}

/* Issue 13 item 4: 'removing' is live when the status it replaced was
 * (one per workspace, counted), and never when it replaced a failed row. */
Test(store_exports, removing_stays_live_while_its_container_may_exist)
{
	struct store *st = open_with_sandbox();
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_set_removing(st, "sbx_c", 30, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get(st, "sbx_c", &s, &err), 0);
	cr_assert_str_eq(sandbox_status_to_string(s.status), "removing");
	cr_assert_str_eq(sandbox_status_to_string(s.removing_from), "running");
	cr_assert(store_sandbox_is_live(&s));
	sandbox_record_clear(&s);
	cr_assert_eq(store_sandbox_set_removing(st, "sbx_c", 31, &err), 0, "a second time keeps what it replaced");
	cr_assert_eq(store_sandbox_get_live_for_workspace(st, "ws_c", &s, &err), 0);
	cr_assert_str_eq(sandbox_status_to_string(s.removing_from), "running");
	sandbox_record_clear(&s);
	int live = -1;
	cr_assert_eq(store_sandbox_count_live(st, &live, &err), 0);
	cr_assert_eq(live, 1, "its container may still be there: it counts");
	struct workspace_record w = {0};
	cr_assert_eq(store_workspace_get(st, "ws_c", &w, &err), 0);
	cr_assert_str_eq(w.sandbox_id, "sbx_c");
	workspace_record_clear(&w);
	struct sandbox_record other = {.id = "sbx_d",
	                               .workspace_id = "ws_c",
	                               .container_name = "sbx_d",
	                               .image = "img",
	                               .network = 1,
	                               .created_at_ms = 3};
	cr_assert_eq(store_sandbox_insert(st, &other, &err), -1, "one live sandbox per workspace");
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cp_error_freep(&err);
	/* Removed at last: the workspace is free, and a removed row is never
	 * turned back into 'removing'. */
	cr_assert_eq(store_sandbox_set_status(st, "sbx_c", SANDBOX_REMOVED, NULL, NULL, 40, &err), 0);
	cr_assert_eq(store_sandbox_set_removing(st, "sbx_c", 41, &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	cr_assert_eq(store_sandbox_insert(st, &other, &err), 0, "%s", err ? err->message : "");
	/* A failed sandbox being removed is not live: the workspace's new one
	 * stays the live one. */
	struct sandbox_record failed = {.id = "sbx_f",
	                                .workspace_id = "ws_c",
	                                .status = SANDBOX_FAILED,
	                                .container_name = "sbx_f",
	                                .image = "img",
	                                .network = 1,
	                                .created_at_ms = 4};
	cr_assert_eq(store_sandbox_insert(st, &failed, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_sandbox_set_removing(st, "sbx_f", 50, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_sandbox_get_live_for_workspace(st, "ws_c", &s, &err), 0);
	cr_assert_str_eq(s.id, "sbx_d");
	sandbox_record_clear(&s);
	cr_assert_eq(store_sandbox_get(st, "sbx_f", &s, &err), 0);
	cr_assert_not(store_sandbox_is_live(&s));
	sandbox_record_clear(&s);
	cr_assert_eq(store_sandbox_count_live(st, &live, &err), 0);
	cr_assert_eq(live, 1);
	store_free(st);
}

Test(store_exports, rows_round_trip_newest_applied_trashed)
{
	struct store *st = open_with_sandbox();
	struct cp_error *err = NULL;
	struct export_record a = {.id = "exp_a",
	                          .sandbox_id = "sbx_c",
	                          .workspace_id = "ws_c",
	                          .kind = "git",
	                          .reason = "checkpoint",
	                          .path = "/d/exports/sbx_c/exp_a",
	                          .bytes = 100,
	                          .refs = 3,
	                          .commits = 2,
	                          .dirty_files = 1,
	                          .fingerprint = "ff",
	                          .message = "mid-work",
	                          .created_at_ms = 100};
	struct export_record b = {.id = "exp_b",
	                          .sandbox_id = "sbx_c",
	                          .workspace_id = "ws_c",
	                          .kind = "none",
	                          .reason = "destroy",
	                          .path = "/d/exports/sbx_c/exp_b",
	                          .created_at_ms = 200};
	cr_assert_eq(store_export_insert(st, &a, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_export_insert(st, &b, &err), 0);
	cr_assert_eq(store_export_insert(st, &b, &err), -1, "ids are unique");
	cp_error_freep(&err);
	struct export_record x = {0};
	cr_assert_eq(store_export_last(st, "sbx_c", &x, &err), 0);
	cr_assert_str_eq(x.id, "exp_b");
	cr_assert_null(x.fingerprint);
	export_record_clear(&x);
	cr_assert_eq(store_export_get(st, "exp_a", &x, &err), 0);
	cr_assert_str_eq(x.message, "mid-work");
	cr_assert_eq(x.bytes, 100);
	cr_assert_eq(x.commits, 2);
	cr_assert_eq(x.applied_count, 0);
	export_record_clear(&x);
	int64_t n = -1;
	cr_assert_eq(store_export_count_unapplied(st, &n, &err), 0);
	cr_assert_eq(n, 1, "a manifest-only export has nothing to apply");
	cr_assert_eq(store_export_set_applied(st, "exp_a", 300, &err), 0);
	cr_assert_eq(store_export_set_applied(st, "exp_a", 400, &err), 0);
	cr_assert_eq(store_export_get(st, "exp_a", &x, &err), 0);
	cr_assert_eq(x.applied_count, 2);
	cr_assert_eq(x.applied_at_ms, 400);
	export_record_clear(&x);
	cr_assert_eq(store_export_count_unapplied(st, &n, &err), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(store_export_set_trashed(st, "exp_b", "/d/trash/exp_b", 500, &err), 0);
	struct export_record *list = NULL;
	size_t len = 0;
	cr_assert_eq(store_export_list(st, "sbx_c", &list, &len, &err), 0);
	cr_assert_eq(len, 2);
	cr_assert_str_eq(list[0].id, "exp_a");
	cr_assert_str_eq(list[1].path, "/d/trash/exp_b");
	cr_assert_eq(list[1].trashed_at_ms, 500);
	for (size_t i = 0; i < len; i++)
		export_record_clear(&list[i]);
	free(list);
	cr_assert_eq(store_export_list(st, "sbx_'; DROP TABLE exports; --", &list, &len, &err), 0);
	cr_assert_eq(len, 0);
	free(list);
	cr_assert_eq(store_export_get(st, "exp_zz", &x, &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cr_assert(strstr(err->message, "chat2sbx export list"));
	cp_error_freep(&err);
	store_free(st);
}

Test(store_exports, source_refs_and_unsaved)
{
	struct store *st = open_with_sandbox();
	struct cp_error *err = NULL;
	char *text = (char *)"x";
	cr_assert_eq(store_sandbox_get_source_refs(st, "sbx_c", &text, &err), 0);
	cr_assert_null(text);
	cr_assert_eq(store_sandbox_set_source_refs(st, "sbx_c", "aaaa refs/heads/main\n", &err), 0);
	cr_assert_eq(store_sandbox_get_source_refs(st, "sbx_c", &text, &err), 0);
	cr_assert_str_eq(text, "aaaa refs/heads/main\n");
	free(text);
	cr_assert_eq(store_sandbox_set_unsaved(st, "sbx_c", 1, 77, &err), 0);
	struct sandbox_record s = {0};
	cr_assert_eq(store_sandbox_get(st, "sbx_c", &s, &err), 0);
	cr_assert_eq(s.unsaved, 1);
	cr_assert_eq(s.unsaved_checked_at_ms, 77);
	sandbox_record_clear(&s);
	cr_assert_eq(store_sandbox_set_unsaved(st, "sbx_zz", 0, 1, &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	store_free(st);
}

/* The caps' accounting (issue 23): exports outside the trash and holding
 * something, a bundle shared by hard links counted once, per sandbox and in
 * all. */
Test(store_exports, usage_counts_a_shared_bundle_once)
{
	struct store *st = open_with_sandbox();
	struct cp_error *err = NULL;
	struct export_record rows[] = {
	    {.id = "exp_a", .sandbox_id = "sbx_c", .kind = "git", .bytes = 1000, .created_at_ms = 1},
	    {.id = "exp_b",
	     .sandbox_id = "sbx_c",
	     .kind = "git",
	     .bytes = 1000,
	     .created_at_ms = 2,
	     .shares_bundle_of = "exp_a"},
	    {.id = "exp_c",
	     .sandbox_id = "sbx_c",
	     .kind = "git",
	     .bytes = 1000,
	     .created_at_ms = 3,
	     .shares_bundle_of = "exp_a"},
	    {.id = "exp_d", .sandbox_id = "sbx_c", .kind = "none", .bytes = 0, .created_at_ms = 4},
	    {.id = "exp_e", .sandbox_id = "sbx_o", .kind = "tar", .bytes = 50, .created_at_ms = 5},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		rows[i].workspace_id = "ws_c";
		rows[i].reason = "checkpoint";
		rows[i].path = "/d/x";
		cr_assert_eq(store_export_insert(st, &rows[i], &err), 0, "%s", err ? err->message : "");
	}
	struct export_record x = {0};
	cr_assert_eq(store_export_get(st, "exp_b", &x, &err), 0);
	cr_assert_str_eq(x.shares_bundle_of, "exp_a");
	export_record_clear(&x);
	int64_t n = 0, bytes = 0;
	cr_assert_eq(store_export_usage(st, "sbx_c", &n, &bytes, &err), 0);
	cr_assert_eq(n, 3, "a manifest-only export holds nothing");
	cr_assert_eq(bytes, 1000, "one bundle, three exports");
	cr_assert_eq(store_export_usage(st, NULL, &n, &bytes, &err), 0);
	cr_assert_eq(n, 4);
	cr_assert_eq(bytes, 1050);
	/* The export that wrote the file goes to the trash: the others still
	 * keep it (hard links), so it still counts, once. */
	cr_assert_eq(store_export_set_trashed(st, "exp_a", "/d/trash/exp_a", 9, &err), 0);
	cr_assert_eq(store_export_usage(st, "sbx_c", &n, &bytes, &err), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(bytes, 1000);
	cr_assert_eq(store_export_set_trashed(st, "exp_b", "/d/trash/exp_b", 9, &err), 0);
	cr_assert_eq(store_export_set_trashed(st, "exp_c", "/d/trash/exp_c", 9, &err), 0);
	cr_assert_eq(store_export_usage(st, "sbx_c", &n, &bytes, &err), 0);
	cr_assert_eq(n, 0);
	cr_assert_eq(bytes, 0, "the trash is not counted: export delete makes room");
	store_free(st);
}
