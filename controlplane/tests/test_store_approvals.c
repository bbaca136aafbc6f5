/* test_store_approvals.c: approvals on a temporary registry: one row per
 * resolved path and mode, decisions kept, approve makes or reuses the
 * workspace, operator registration overrides a rejection, two handles (CLI
 * and serve) see one truth. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static char dir[64], db[128];
static struct store *s1, *s2;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-appr-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &s1, &err), 0);
	cr_assert_eq(store_open(db, &s2, &err), 0);
}

static void teardown(void)
{
	store_free(s1);
	store_free(s2);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(store_approvals, .init = setup, .fini = teardown);

static struct approval_record request(struct store *s, const char *id, const char *path, const char *mode, int *created)
{
	struct approval_record want = {.id = (char *)id,
	                               .host_path = (char *)path,
	                               .real_path = (char *)path,
	                               .mode = (char *)mode,
	                               .requested_by = "mcp",
	                               .requested_at_ms = 100};
	struct approval_record got = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_approval_request(s, &want, &got, created, &err), 0, "%s", err ? err->message : "");
	return got;
}

Test(store_approvals, one_pending_request_per_path_and_mode)
{
	int created = 0;
	struct approval_record a = request(s1, "approval_a", "/r/p", "clone", &created);
	cr_expect(created);
	cr_expect_str_eq(approval_status_to_string(a.status), "pending");
	struct approval_record b = request(s2, "approval_b", "/r/p", "clone", &created);
	cr_expect_not(created, "the same path and mode returns the same approval");
	cr_expect_str_eq(b.id, "approval_a");
	struct approval_record c = request(s1, "approval_c", "/r/p", "direct", &created);
	cr_expect(created, "another mode is another approval");
	approval_record_clear(&a);
	approval_record_clear(&b);
	approval_record_clear(&c);
}

Test(store_approvals, approve_makes_the_workspace_and_is_kept)
{
	int created = 0;
	struct approval_record a = request(s1, "approval_a", "/r/p", "clone", &created);
	approval_record_clear(&a);
	struct workspace_record ws = {
	    .id = "ws_1", .mode = "clone", .path = "/r/p", .host_path = "/r/p", .created_at_ms = 5};
	struct approval_record d = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_approval_approve(s2, "approval_a", &ws, 200, &d, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(approval_status_to_string(d.status), "approved");
	cr_expect_str_eq(d.workspace_id, "ws_1");
	cr_expect_eq(d.decided_at_ms, 200);
	approval_record_clear(&d);
	/* Approving again answers it unchanged; rejecting it now is a conflict. */
	ws.id = "ws_2";
	cr_assert_eq(store_approval_approve(s1, "approval_a", &ws, 300, &d, &err), 0);
	cr_expect_str_eq(d.workspace_id, "ws_1");
	approval_record_clear(&d);
	cr_expect_lt(store_approval_reject(s1, "approval_a", 400, &d, &err), 0);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cp_error_free(err);
	err = NULL;
	/* A later request for the same path and mode finds the decision. */
	struct approval_record again = request(s1, "approval_z", "/r/p", "clone", &created);
	cr_expect_not(created);
	cr_expect_str_eq(approval_status_to_string(again.status), "approved");
	approval_record_clear(&again);
	struct workspace_record w = {0};
	cr_assert_eq(store_workspace_find_host(s2, "/r/p", "clone", &w, &err), 0);
	cr_expect_str_eq(w.id, "ws_1");
	workspace_record_clear(&w);
}

Test(store_approvals, reject_is_kept_and_register_overrides_it)
{
	int created = 0;
	struct approval_record a = request(s1, "approval_a", "/r/p", "direct", &created);
	approval_record_clear(&a);
	struct approval_record d = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_approval_reject(s2, "approval_a", 200, &d, &err), 0);
	cr_expect_str_eq(approval_status_to_string(d.status), "rejected");
	approval_record_clear(&d);
	struct workspace_record ws = {
	    .id = "ws_1", .mode = "direct", .path = "/r/p", .host_path = "/r/p", .created_at_ms = 5};
	cr_expect_lt(store_approval_approve(s1, "approval_a", &ws, 300, &d, &err), 0);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "workspace add /r/p --mode direct") != NULL, "%s", err->message);
	cp_error_free(err);
	err = NULL;

	struct workspace_record got = {0};
	cr_assert_eq(store_workspace_register_host(s1, &ws, "/r/p", "approval_new", 400, &got, &created, &err), 0, "%s",
	             err ? err->message : "");
	cr_expect(created);
	cr_expect_str_eq(got.id, "ws_1");
	workspace_record_clear(&got);
	cr_assert_eq(store_approval_get(s2, "approval_a", &d, &err), 0);
	cr_expect_str_eq(approval_status_to_string(d.status), "approved", "the operator's registration decides");
	cr_expect_str_eq(d.workspace_id, "ws_1");
	approval_record_clear(&d);
	/* Registering again reuses the workspace. */
	ws.id = "ws_other";
	cr_assert_eq(store_workspace_register_host(s2, &ws, "/r/p", "approval_x", 500, &got, &created, &err), 0);
	cr_expect_not(created);
	cr_expect_str_eq(got.id, "ws_1");
	workspace_record_clear(&got);
}

Test(store_approvals, unknown_ids_and_listing)
{
	struct approval_record d = {0};
	struct cp_error *err = NULL;
	cr_expect_lt(store_approval_get(s1, "approval_nope", &d, &err), 0);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cr_expect(strstr(err->message, "approval list") != NULL);
	cp_error_free(err);
	int created;
	struct approval_record a = request(s1, "approval_a", "/r/a", "clone", &created);
	struct approval_record b = request(s1, "approval_b", "/r/b", "clone", &created);
	approval_record_clear(&a);
	approval_record_clear(&b);
	err = NULL;
	cr_assert_eq(store_approval_reject(s1, "approval_a", 10, &d, &err), 0);
	approval_record_clear(&d);
	struct approval_record *rows = NULL;
	size_t n = 0;
	cr_assert_eq(store_approval_list(s2, &rows, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(rows[0].id, "approval_b", "pending first");
	for (size_t i = 0; i < n; i++)
		approval_record_clear(&rows[i]);
	free(rows);
}

Test(store_approvals, trashed_workspace_is_recorded)
{
	struct workspace_record ws = {.id = "ws_m", .mode = "managed", .path = "/d/ws_m", .created_at_ms = 1};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_insert(s1, &ws, &err), 0);
	cr_assert_eq(store_workspace_set_trashed(s2, "ws_m", "/d/trash/ws_m", 99, &err), 0);
	struct workspace_record got = {0};
	cr_assert_eq(store_workspace_get(s1, "ws_m", &got, &err), 0);
	cr_expect_str_eq(got.path, "/d/trash/ws_m");
	cr_expect_eq(got.trashed_at_ms, 99);
	workspace_record_clear(&got);
}

static struct approval_record request_on(struct store *s, const char *node, const char *id, const char *path,
                                         int *created)
{
	struct approval_record want = {.id = (char *)id,
	                               .host_path = (char *)path,
	                               .real_path = (char *)path,
	                               .mode = "direct",
	                               .requested_by = "mcp",
	                               .requested_at_ms = 100,
	                               .node = (char *)node};
	struct approval_record got = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_approval_request(s, &want, &got, created, &err), 0, "%s", err ? err->message : "");
	return got;
}

/* Migration 0018: the same path on two machines is two directories, so two
 * approvals and two workspaces; the workspace an approval makes records
 * the approval's node. */
Test(store_approvals, the_same_path_on_another_node_is_another_directory)
{
	int created = 0;
	struct approval_record here = request_on(s1, NULL, "approval_here", "/r/p", &created);
	cr_expect(created);
	cr_expect_str_eq(here.node, "local", "no node is this machine's");
	struct approval_record there = request_on(s2, "n1", "approval_n1", "/r/p", &created);
	cr_expect(created, "n1's /r/p is another approval");
	cr_expect_str_eq(there.node, "n1");
	struct approval_record again = request_on(s1, "n1", "approval_x", "/r/p", &created);
	cr_expect_not(created);
	cr_expect_str_eq(again.id, "approval_n1");
	approval_record_clear(&again);

	struct workspace_record ws = {
	    .id = "ws_n1", .mode = "direct", .path = "/r/p", .host_path = "/r/p", .created_at_ms = 5};
	struct approval_record d = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_approval_approve(s1, "approval_n1", &ws, 200, &d, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(d.workspace_id, "ws_n1");
	approval_record_clear(&d);
	ws.id = "ws_here";
	cr_assert_eq(store_approval_approve(s2, "approval_here", &ws, 210, &d, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(d.workspace_id, "ws_here", "not n1's workspace of the same path");
	approval_record_clear(&d);
	struct workspace_record w = {0};
	cr_assert_eq(store_workspace_get(s1, "ws_n1", &w, &err), 0);
	cr_expect_str_eq(w.node, "n1", "the workspace records whose directory it is");
	workspace_record_clear(&w);
	cr_assert_eq(store_workspace_get(s1, "ws_here", &w, &err), 0);
	cr_expect_str_eq(w.node, "local");
	workspace_record_clear(&w);

	/* Operator registration on n1 reuses n1's workspace, not this machine's. */
	struct workspace_record reg = {
	    .id = "ws_other", .mode = "direct", .path = "/r/p", .host_path = "/r/p", .created_at_ms = 6, .node = "n1"};
	cr_assert_eq(store_workspace_register_host(s2, &reg, "/r/p", "approval_y", 300, &w, &created, &err), 0, "%s",
	             err ? err->message : "");
	cr_expect_not(created);
	cr_expect_str_eq(w.id, "ws_n1");
	workspace_record_clear(&w);
	reg.node = "n2";
	cr_assert_eq(store_workspace_register_host(s2, &reg, "/r/p", "approval_z", 300, &w, &created, &err), 0, "%s",
	             err ? err->message : "");
	cr_expect(created, "n2's /r/p is a third directory");
	cr_expect_str_eq(w.node, "n2");
	workspace_record_clear(&w);
	struct approval_record *rows = NULL;
	size_t n = 0;
	cr_assert_eq(store_approval_list(s1, &rows, &n, &err), 0);
	cr_expect_eq(n, 3);
	for (size_t i = 0; i < n; i++)
		approval_record_clear(&rows[i]);
	free(rows);
	approval_record_clear(&here);
	approval_record_clear(&there);
}
