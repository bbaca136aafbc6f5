/* test_store_workspace_volumes.c: where a workspace's files are (migration
 * 0015, issue 28): a managed workspace of another node records the node
 * and its volume, round trip; a registry at version 14 gives a managed
 * workspace whose sandbox on a node still holds its container that node
 * and the volume named after the sandbox, and leaves this machine's
 * workspaces, clones and trashed rows as they were. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store_fixture.h"

TestSuite(store_workspace_volumes, .init = store_fx_setup, .fini = store_fx_teardown);

static void expect_where(struct store *st, const char *id, const char *node, const char *volume)
{
	struct workspace_record w = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_get(st, id, &w, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(w.node, node, "%s", id);
	if (volume)
		cr_expect(w.volume && !strcmp(w.volume, volume), "%s: %s", id, w.volume ? w.volume : "(null)");
	else
		cr_expect_null(w.volume, "%s: %s", id, w.volume);
	workspace_record_clear(&w);
}

Test(store_workspace_volumes, a_remote_managed_workspace_round_trips)
{
	struct store *st = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(store_fx_db, &st, &err), 0, "%s", err ? err->message : "");
	struct workspace_record here = {.id = "ws_l", .mode = "managed", .path = "/tmp/l", .created_at_ms = 1};
	struct workspace_record there = {.id = "ws_r",
	                                 .mode = "managed",
	                                 .path = "/tmp/r",
	                                 .created_at_ms = 1,
	                                 .node = "n1",
	                                 .volume = "chat2sbx-ws-ws_r"};
	cr_assert_eq(store_workspace_insert(st, &here, &err), 0);
	cr_assert_eq(store_workspace_insert(st, &there, &err), 0);
	expect_where(st, "ws_l", "local", NULL);
	expect_where(st, "ws_r", "n1", "chat2sbx-ws-ws_r");
	store_free(st);
}

Test(store_workspace_volumes, an_older_registrys_live_remote_workspace_keeps_its_volume)
{
	sqlite3 *d = store_fx_at_version(14);
	/* live on n1; gone from n1 (trashed then); this machine's; a clone on n1 */
	store_fx_exec(d,
	              "INSERT INTO workspaces (id, mode, path, created_at_ms) VALUES ('ws_r', 'managed', '/tmp/r', 1), "
	              "('ws_g', 'managed', '/tmp/g', 1), ('ws_l', 'managed', '/tmp/l', 1), "
	              "('ws_c', 'clone', '/tmp/c', 1), ('ws_m', 'managed', '/tmp/m', 1)");
	store_fx_exec(d, "UPDATE workspaces SET trashed_at_ms = 9 WHERE id = 'ws_g'");
	store_fx_exec(
	    d, "INSERT INTO sandboxes (id, workspace_id, status, container_name, image, created_at_ms, updated_at_ms, "
	       "last_activity_ms, node) VALUES ('sbx_old', 'ws_r', 'removed', 'sbx_old', 'img', 1, 1, 1, 'n2'), "
	       "('sbx_r', 'ws_r', 'running', 'sbx_r', 'img', 2, 2, 2, 'n1'), "
	       "('sbx_g', 'ws_g', 'removed', 'sbx_g', 'img', 2, 2, 2, 'n1'), "
	       "('sbx_l', 'ws_l', 'running', 'sbx_l', 'img', 2, 2, 2, 'local'), "
	       "('sbx_c', 'ws_c', 'running', 'sbx_c', 'img', 2, 2, 2, 'n1'), "
	       "('sbx_m1', 'ws_m', 'failed', 'sbx_m1', 'img', 1, 1, 1, 'n1'), "
	       "('sbx_m2', 'ws_m', 'running', 'sbx_m2', 'img', 3, 3, 3, 'local')");
	sqlite3_close(d);

	struct store *st = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(store_fx_db, &st, &err), 0, "%s", err ? err->message : "");
	expect_where(st, "ws_r", "n1", "chat2sbx-ws-sbx_r");
	expect_where(st, "ws_g", "local", NULL);
	expect_where(st, "ws_l", "local", NULL);
	expect_where(st, "ws_c", "local", NULL);
	/* Its newest sandbox is here (an older one on n1 failed): its files are here. */
	expect_where(st, "ws_m", "local", NULL);
	store_free(st);
}
