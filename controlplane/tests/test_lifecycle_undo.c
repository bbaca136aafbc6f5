/* test_lifecycle_undo.c: the undo of a failed create (lifecycle/undo_later.c)
 * when the registry cannot write (a full disk): the undo waits with every
 * row as it was (the managed workspace's directory stays with its row), and
 * the next run, once the registry writes again, deletes the sandbox row,
 * then the workspace row, then its directory (issue 13). No engine: the
 * create failed before its container existed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "lifecycle/lifecycle_internal.h"
#include "store/store_internal.h"

static char root[64];
static char data_root[128], ws_root[160], ws_dir[200], db[160];
static struct store *store;
static struct config cfg;
static struct lifecycle *lc;

static void setup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	snprintf(root, sizeof(root), "/tmp/c2s-undo-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(data_root, sizeof(data_root), "%s/data", root);
	snprintf(ws_root, sizeof(ws_root), "%s/workspaces", data_root);
	snprintf(ws_dir, sizeof(ws_dir), "%s/ws_a", ws_root);
	snprintf(db, sizeof(db), "%s/reg.sqlite", data_root);
	cr_assert_eq(mkdir(data_root, 0700), 0);
	cr_assert_eq(mkdir(ws_root, 0700), 0);
	cr_assert_eq(mkdir(ws_dir, 0755), 0);
	cfg = (struct config){.data_root = data_root, .workspace_root = ws_root, .database_path = db, .runtime = ""};
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0);
	cr_assert_eq(lifecycle_new(&cfg, store, NULL, &lc, &err), 0);
	struct workspace_record w = {.id = "ws_a", .mode = "managed", .path = ws_dir, .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(store, &w, &err), 0);
	struct sandbox_record s = {.id = "sbx_a",
	                           .workspace_id = "ws_a",
	                           .status = "creating",
	                           .container_name = "sbx_a",
	                           .image = "img",
	                           .network = 1,
	                           .created_at_ms = 1};
	cr_assert_eq(store_sandbox_insert(store, &s, &err), 0);
}

static void teardown(void)
{
	lifecycle_free(lc);
	store_free(store);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(lifecycle_undo, .init = setup, .fini = teardown);

static void registry_writable(int yes)
{
	struct cp_error *err = NULL;
	cr_assert_eq(store_exec(store, yes ? "PRAGMA query_only = 0" : "PRAGMA query_only = 1", "test", &err), 0);
}

static int sandbox_exists(void)
{
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	int r = store_sandbox_get(store, "sbx_a", &s, &err);
	sandbox_record_clear(&s);
	cp_error_free(err);
	return r == 0;
}

static int workspace_exists(void)
{
	struct workspace_record w = {0};
	struct cp_error *err = NULL;
	int r = store_workspace_get(store, "ws_a", &w, &err);
	workspace_record_clear(&w);
	cp_error_free(err);
	return r == 0;
}

static int dir_exists(void)
{
	struct stat st;
	return stat(ws_dir, &st) == 0;
}

Test(lifecycle_undo, done_at_once_when_the_registry_writes)
{
	struct workspace_record w = {.id = "ws_a", .path = ws_dir};
	cr_assert_eq(lifecycle_undo_create(lc, "sbx_a", NULL, &w), 0);
	cr_assert_not(sandbox_exists());
	cr_assert_not(workspace_exists());
	cr_assert_not(dir_exists());
	cr_assert_eq(lifecycle_undo_run(lc), 0, "nothing waits");
}

Test(lifecycle_undo, waits_through_a_full_disk_and_is_finished_in_order)
{
	struct workspace_record w = {.id = "ws_a", .path = ws_dir};
	registry_writable(0);
	cr_assert_eq(lifecycle_undo_create(lc, "sbx_a", NULL, &w), 1, "the row cannot be deleted: it waits");
	cr_assert(sandbox_exists());
	cr_assert(workspace_exists());
	cr_assert(dir_exists(), "a workspace row never names a missing directory");
	cr_assert_eq(lifecycle_undo_run(lc), 1, "still waiting while the registry cannot write");
	cr_assert(dir_exists());

	registry_writable(1);
	cr_assert_eq(lifecycle_undo_run(lc), 0);
	cr_assert_not(sandbox_exists(), "the creating row no longer counts as active");
	cr_assert_not(workspace_exists());
	cr_assert_not(dir_exists());
	cr_assert_eq(lifecycle_undo_run(lc), 0);
}

Test(lifecycle_undo, a_workspace_that_is_not_empty_keeps_its_files)
{
	char f[260];
	snprintf(f, sizeof(f), "%s/kept", ws_dir);
	FILE *fp = fopen(f, "w");
	cr_assert_not_null(fp);
	fclose(fp);
	struct workspace_record w = {.id = "ws_a", .path = ws_dir};
	cr_assert_eq(lifecycle_undo_create(lc, "sbx_a", NULL, &w), 0);
	cr_assert_eq(access(f, F_OK), 0, "only an empty directory is removed");
}

Test(lifecycle_undo, left_to_the_next_start_when_serve_stops)
{
	registry_writable(0);
	cr_assert_eq(lifecycle_undo_create(lc, "sbx_a", NULL, NULL), 1);
	/* teardown's lifecycle_free drops the waiting undo without a leak (ASan) */
}
