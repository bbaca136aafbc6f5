/* test_store_pool.c: warm-pool rows (migration 0006, issue 8): members are
 * hidden from listings, limits and workspace_list; a claim takes exactly one
 * running member of the right image and runtime and resets its times; a
 * claimed row is never forgotten; forgetting a member deletes its rows. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store_fixture.h"

TestSuite(store_pool, .init = store_fx_setup, .fini = store_fx_teardown);

static struct store *open_ok(void)
{
	struct store *s = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(store_fx_db, &s, &err), 0, "%s", err ? err->message : "");
	return s;
}

/* A managed workspace ws_<id> and sandbox <id>, running, pooled as asked. */
static void add(struct store *s, const char *id, int pooled, const char *image, int64_t created)
{
	char ws[64];
	snprintf(ws, sizeof(ws), "ws_%s", id);
	struct workspace_record w = {.id = ws, .mode = "managed", .path = "/tmp/x", .created_at_ms = created};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_insert(s, &w, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record r = {.id = (char *)id,
	                           .workspace_id = ws,
	                           .status = SANDBOX_RUNNING,
	                           .container_name = (char *)id,
	                           .image = (char *)image,
	                           .network = 1,
	                           .created_at_ms = created,
	                           .pooled = pooled};
	cr_assert_eq(store_sandbox_insert(s, &r, &err), 0, "%s", err ? err->message : "");
}

static size_t count_list(struct store *s, int flags)
{
	struct sandbox_record *list = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_list(s, flags, &list, &n, &err), 0);
	for (size_t i = 0; i < n; i++)
		sandbox_record_clear(&list[i]);
	free(list);
	return n;
}

Test(store_pool, members_are_not_user_sandboxes)
{
	struct store *s = open_ok();
	add(s, "sbx_user", 0, "img:1", 1000);
	add(s, "sbx_pool", 1, "img:1", 2000);
	cr_expect_eq(count_list(s, 0), 1);
	cr_expect_eq(count_list(s, STORE_SANDBOX_LIST_POOLED), 2);
	int live = -1;
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_count_live(s, &live, &err), 0);
	cr_expect_eq(live, 1, "a pool member counts toward the sandbox limit");
	struct workspace_record *ws = NULL;
	size_t n = 0;
	cr_assert_eq(store_workspace_list(s, &ws, &n, &err), 0);
	cr_expect_eq(n, 1);
	cr_expect_str_eq(ws[0].id, "ws_sbx_user");
	for (size_t i = 0; i < n; i++)
		workspace_record_clear(&ws[i]);
	free(ws);
	struct sandbox_record *members = NULL;
	cr_assert_eq(store_sandbox_pool_list(s, &members, &n, &err), 0);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(members[0].id, "sbx_pool");
	cr_expect_eq(members[0].pooled, 1);
	sandbox_record_clear(&members[0]);
	free(members);
	store_free(s);
}

Test(store_pool, claim_takes_one_matching_member_once)
{
	struct store *s = open_ok();
	add(s, "sbx_other", 1, "img:old", 500); /* another image: never handed out */
	add(s, "sbx_a", 1, "img:1", 1000);
	add(s, "sbx_b", 1, "img:1", 2000);
	struct cp_error *err = NULL;
	char *id = NULL;
	cr_expect_eq(store_sandbox_pool_claim(s, NULL, "img:1", NULL, 512LL << 20, 0, 9000, &id, &err), 0,
	             "a member made with another memory ceiling is not what a default create gets");
	cr_expect_eq(store_sandbox_pool_claim(s, NULL, "img:1", NULL, 0, 20LL << 30, 9000, &id, &err), 0,
	             "nor one with another disk size");
	cr_assert_eq(store_sandbox_pool_claim(s, NULL, "img:1", NULL, 0, 0, 9000, &id, &err), 1);
	cr_expect_str_eq(id, "sbx_a", "the oldest member goes first");
	struct sandbox_record r = {0};
	cr_assert_eq(store_sandbox_get(s, id, &r, &err), 0);
	cr_expect_eq(r.pooled, 0);
	cr_expect_eq(r.created_at_ms, 9000);
	cr_expect_eq(r.last_activity_ms, 9000);
	sandbox_record_clear(&r);
	free(id);
	id = NULL;
	cr_assert_eq(store_sandbox_pool_claim(s, NULL, "img:1", NULL, 0, 0, 9100, &id, &err), 1);
	cr_expect_str_eq(id, "sbx_b");
	free(id);
	id = NULL;
	cr_expect_eq(store_sandbox_pool_claim(s, NULL, "img:1", NULL, 0, 0, 9200, &id, &err), 0);
	cr_expect_null(id);
	cr_expect_eq(store_sandbox_pool_claim(s, NULL, "img:1", "runsc", 0, 0, 9200, &id, &err), 0,
	             "runtime must match");
	cr_expect_eq(count_list(s, 0), 2, "claimed members are user sandboxes");
	store_free(s);
}

Test(store_pool, forget_deletes_a_member_but_never_a_claimed_one)
{
	struct store *s = open_ok();
	add(s, "sbx_a", 1, "img:1", 1000);
	add(s, "sbx_b", 1, "img:1", 2000);
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_pool_forget(s, "sbx_b", &err), 0, "%s", err ? err->message : "");
	struct workspace_record w = {0};
	cr_expect_eq(store_workspace_get(s, "ws_sbx_b", &w, &err), -1, "the member's workspace row goes too");
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	char *id = NULL;
	cr_assert_eq(store_sandbox_pool_claim(s, NULL, "img:1", NULL, 0, 0, 5000, &id, &err), 1);
	cr_expect_eq(store_sandbox_pool_forget(s, id, &err), -1);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cp_error_freep(&err);
	cr_expect_eq(store_sandbox_pool_forget(s, "sbx_nope", &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	free(id);
	cr_expect_eq(count_list(s, 0), 1);
	store_free(s);
}

/* Issue 28: each node keeps its own members; a claim for a node takes only
 * that node's, and a remote member is never what a create on 'local' gets. */
Test(store_pool, claim_takes_a_member_of_the_node_asked_only)
{
	struct store *s = open_ok();
	struct cp_error *err = NULL;
	struct workspace_record w = {.id = "ws_n1", .mode = "managed", .path = "/tmp/y", .created_at_ms = 100};
	cr_assert_eq(store_workspace_insert(s, &w, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record r = {.id = "sbx_n1",
	                           .workspace_id = "ws_n1",
	                           .status = SANDBOX_RUNNING,
	                           .container_name = "sbx_n1",
	                           .image = "img:1",
	                           .network = 1,
	                           .created_at_ms = 100,
	                           .pooled = 1,
	                           .node = "n1"};
	cr_assert_eq(store_sandbox_insert(s, &r, &err), 0, "%s", err ? err->message : "");
	add(s, "sbx_local", 1, "img:1", 200);
	char *id = NULL;
	cr_expect_eq(store_sandbox_pool_claim(s, "n2", "img:1", NULL, 0, 0, 9000, &id, &err), 0, "n2 has none");
	cr_assert_eq(store_sandbox_pool_claim(s, NULL, "img:1", NULL, 0, 0, 9000, &id, &err), 1);
	cr_expect_str_eq(id, "sbx_local", "local's own, though n1's is older");
	free(id);
	id = NULL;
	cr_expect_eq(store_sandbox_pool_claim(s, STORE_NODE_LOCAL, "img:1", NULL, 0, 0, 9000, &id, &err), 0);
	cr_assert_eq(store_sandbox_pool_claim(s, "n1", "img:1", NULL, 0, 0, 9000, &id, &err), 1);
	cr_expect_str_eq(id, "sbx_n1");
	free(id);
	store_free(s);
}
