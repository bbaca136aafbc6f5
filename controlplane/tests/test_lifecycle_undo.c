/* test_lifecycle_undo.c: the undo of a failed create (lifecycle/undo_later.c)
 * when the registry cannot write (a full disk): the undo waits with every
 * row as it was (the managed workspace's directory stays with its row), and
 * the next run, once the registry writes again, deletes the sandbox row,
 * then the workspace row, then its directory (issue 13). No engine: the
 * create failed before its container existed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "lifecycle_fixture.h"

static char ws_dir[200];

static void setup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	lc_fixture_setup("undo", NULL, 0);
	snprintf(ws_dir, sizeof(ws_dir), "%s/ws_a", fx.ws_root);
	cr_assert_eq(mkdir(ws_dir, 0755), 0);
	lc_fixture_workspace("ws_a", "managed", ws_dir, 1);
	lc_fixture_sandbox("sbx_a", "ws_a", "creating", 1);
}

TestSuite(lifecycle_undo, .init = setup, .fini = lc_fixture_teardown);

static int sandbox_exists(void)
{
	return lc_fixture_sandbox_exists("sbx_a");
}

static int workspace_exists(void)
{
	return lc_fixture_workspace_exists("ws_a");
}

static int dir_exists(void)
{
	struct stat st;
	return stat(ws_dir, &st) == 0;
}

Test(lifecycle_undo, done_at_once_when_the_registry_writes)
{
	struct workspace_record w = {.id = "ws_a", .path = ws_dir};
	cr_assert_eq(lifecycle_undo_create(fx.lc, "sbx_a", NULL, NULL, &w), 0);
	cr_assert_not(sandbox_exists());
	cr_assert_not(workspace_exists());
	cr_assert_not(dir_exists());
	cr_assert_eq(lifecycle_undo_run(fx.lc), 0, "nothing waits");
}

Test(lifecycle_undo, waits_through_a_full_disk_and_is_finished_in_order)
{
	struct workspace_record w = {.id = "ws_a", .path = ws_dir};
	lc_fixture_read_only(1);
	cr_assert_eq(lifecycle_undo_create(fx.lc, "sbx_a", NULL, NULL, &w), 1, "the row cannot be deleted: it waits");
	cr_assert(sandbox_exists());
	cr_assert(workspace_exists());
	cr_assert(dir_exists(), "a workspace row never names a missing directory");
	cr_assert_eq(lifecycle_undo_run(fx.lc), 1, "still waiting while the registry cannot write");
	cr_assert(dir_exists());

	lc_fixture_read_only(0);
	cr_assert_eq(lifecycle_undo_run(fx.lc), 0);
	cr_assert_not(sandbox_exists(), "the creating row no longer counts as active");
	cr_assert_not(workspace_exists());
	cr_assert_not(dir_exists());
	cr_assert_eq(lifecycle_undo_run(fx.lc), 0);
}

Test(lifecycle_undo, a_workspace_that_is_not_empty_keeps_its_files)
{
	char f[260];
	snprintf(f, sizeof(f), "%s/kept", ws_dir);
	FILE *fp = fopen(f, "w");
	cr_assert_not_null(fp);
	fclose(fp);
	struct workspace_record w = {.id = "ws_a", .path = ws_dir};
	cr_assert_eq(lifecycle_undo_create(fx.lc, "sbx_a", NULL, NULL, &w), 0);
	cr_assert_eq(access(f, F_OK), 0, "only an empty directory is removed");
}

Test(lifecycle_undo, left_to_the_next_start_when_serve_stops)
{
	lc_fixture_read_only(1);
	cr_assert_eq(lifecycle_undo_create(fx.lc, "sbx_a", NULL, NULL, NULL), 1);
	/* teardown's lifecycle_free drops the waiting undo without a leak (ASan) */
}

/* Issue 28: a create runs only this machine's undos (another node's wait
 * for the maintenance pass, so a node that stalls holds up no create
 * here); a run for another node leaves a local undo waiting. */
Test(lifecycle_undo, a_run_for_one_node_leaves_the_others_waiting)
{
	struct workspace_record w = {.id = "ws_a", .path = ws_dir};
	lc_fixture_read_only(1);
	cr_assert_eq(lifecycle_undo_create(fx.lc, "sbx_a", NULL, NULL, &w), 1);
	lc_fixture_read_only(0);
	cr_assert_eq(lifecycle_undo_run_on(fx.lc, "n1"), 1, "not n1's: it waits");
	cr_assert(sandbox_exists());
	cr_assert_eq(lifecycle_undo_run_on(fx.lc, STORE_NODE_LOCAL), 0);
	cr_assert_not(sandbox_exists());
	cr_assert_not(workspace_exists());
}
