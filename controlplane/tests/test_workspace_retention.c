/* test_workspace_retention.c: managed workspaces are kept 30 days after
 * their sandbox is removed, then moved (never deleted) to DATA_ROOT/trash;
 * host workspaces are never moved. The clock is passed in, so nothing waits. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lifecycle/lifecycle.h"

static char root[64];
static struct store *store;
static struct config cfg;
static char data_root[128], ws_root[160], db[160];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/c2s-ret-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(data_root, sizeof(data_root), "%s/data", root);
	snprintf(ws_root, sizeof(ws_root), "%s/workspaces", data_root);
	snprintf(db, sizeof(db), "%s/reg.sqlite", data_root);
	cr_assert_eq(mkdir(data_root, 0700), 0);
	cr_assert_eq(mkdir(ws_root, 0700), 0);
	cfg = (struct config){.data_root = data_root, .workspace_root = ws_root, .database_path = db};
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0);
}

static void teardown(void)
{
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(lifecycle_retention, .init = setup, .fini = teardown);

static void workspace_with_removed_sandbox(const char *ws_id, const char *mode, const char *path, int64_t removed)
{
	struct cp_error *err = NULL;
	struct workspace_record w = {.id = (char *)ws_id,
	                             .mode = (char *)mode,
	                             .path = (char *)path,
	                             .host_path = strcmp(mode, "managed") ? (char *)path : NULL,
	                             .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(store, &w, &err), 0);
	char sbx[64];
	snprintf(sbx, sizeof(sbx), "sbx_of_%s", ws_id);
	struct sandbox_record s = {.id = sbx,
	                           .workspace_id = (char *)ws_id,
	                           .container_name = sbx,
	                           .image = "i",
	                           .network = 1,
	                           .created_at_ms = 2};
	cr_assert_eq(store_sandbox_insert(store, &s, &err), 0);
	cr_assert_eq(store_sandbox_set_status(store, sbx, SANDBOX_REMOVED, NULL, NULL, removed, &err), 0);
}

Test(lifecycle_retention, managed_moves_after_30_days_host_never)
{
	const int64_t t0 = 1000000;
	char managed[200], host[200], file[240];
	snprintf(managed, sizeof(managed), "%s/ws_m", ws_root);
	snprintf(host, sizeof(host), "%s/hostdir", root);
	cr_assert_eq(mkdir(managed, 0755), 0);
	cr_assert_eq(mkdir(host, 0755), 0);
	snprintf(file, sizeof(file), "%s/work.txt", managed);
	FILE *f = fopen(file, "w");
	fputs("keep me\n", f);
	fclose(f);
	workspace_with_removed_sandbox("ws_m", "managed", managed, t0);
	workspace_with_removed_sandbox("ws_h", "direct", host, t0);

	struct workspace_record w = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_get(store, "ws_m", &w, &err), 0);
	int64_t trash_at = 0;
	cr_expect_str_eq(workspace_state(&w, &trash_at), "retained");
	cr_expect_eq(trash_at, t0 + WORKSPACE_RETENTION_MS);
	workspace_record_clear(&w);

	cr_expect_eq(workspace_retention_run(&cfg, store, t0 + WORKSPACE_RETENTION_MS - 1, &err), 0, "day 29: kept");
	struct stat st;
	cr_expect_eq(stat(managed, &st), 0);

	cr_expect_eq(workspace_retention_run(&cfg, store, t0 + WORKSPACE_RETENTION_MS, &err), 1, "day 30: moved");
	cr_expect_neq(stat(managed, &st), 0, "gone from the workspace root");
	char moved[240];
	snprintf(moved, sizeof(moved), "%s/trash/ws_m/work.txt", data_root);
	cr_expect_eq(stat(moved, &st), 0, "its files are in the trash, not deleted");
	cr_expect_eq(stat(host, &st), 0, "a host workspace is never moved");
	cr_assert_eq(store_workspace_get(store, "ws_m", &w, &err), 0);
	cr_expect_str_eq(workspace_state(&w, NULL), "trashed");
	workspace_record_clear(&w);
	cr_assert_eq(store_workspace_get(store, "ws_h", &w, &err), 0);
	cr_expect_str_eq(workspace_state(&w, NULL), "idle");
	workspace_record_clear(&w);

	cr_expect_eq(workspace_retention_run(&cfg, store, t0 + 2 * WORKSPACE_RETENTION_MS, &err), 0, "moved once");
}

Test(lifecycle_retention, a_live_sandbox_keeps_its_workspace)
{
	char managed[200];
	snprintf(managed, sizeof(managed), "%s/ws_live", ws_root);
	cr_assert_eq(mkdir(managed, 0755), 0);
	workspace_with_removed_sandbox("ws_live", "managed", managed, 5);
	struct cp_error *err = NULL;
	struct sandbox_record s = {.id = "sbx_new",
	                           .workspace_id = "ws_live",
	                           .container_name = "sbx_new",
	                           .image = "i",
	                           .network = 1,
	                           .created_at_ms = 6};
	cr_assert_eq(store_sandbox_insert(store, &s, &err), 0);
	cr_expect_eq(workspace_retention_run(&cfg, store, 5 + 2 * WORKSPACE_RETENTION_MS, &err), 0);
	struct stat st;
	cr_expect_eq(stat(managed, &st), 0);
}
