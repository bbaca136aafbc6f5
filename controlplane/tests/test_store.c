/* test_store.c: the registry on a temporary database: migrations recorded
 * once, file modes, records round-trip, one live sandbox per workspace,
 * status transitions, two handles on one file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store.h"
#include "store_fixture.h"

TestSuite(store, .init = store_fx_setup, .fini = store_fx_teardown);

static struct store *open_ok(void)
{
	struct store *s = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(store_fx_db, &s, &err), 0, "%s", err ? err->message : "");
	return s;
}

static void add_workspace(struct store *s, const char *id)
{
	struct workspace_record w = {.id = (char *)id, .mode = "managed", .path = "/tmp/x", .created_at_ms = 1000};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_insert(s, &w, &err), 0, "%s", err ? err->message : "");
}

static int add_sandbox(struct store *s, const char *id, const char *ws, struct cp_error **err)
{
	struct sandbox_record r = {.id = (char *)id,
	                           .workspace_id = (char *)ws,
	                           .container_name = (char *)id,
	                           .image = "img:1",
	                           .network = 1,
	                           .created_at_ms = 2000};
	return store_sandbox_insert(s, &r, err);
}

Test(store, migrations_applied_once_and_file_is_private)
{
	struct store *s = open_ok();
	int v = 0;
	cr_assert_eq(store_schema_version(s, &v, NULL), 0);
	cr_expect_eq(v, store_migrations[store_migrations_count - 1].version);
	store_free(s);
	s = open_ok(); /* reopening applies nothing twice */
	cr_assert_eq(store_schema_version(s, &v, NULL), 0);
	cr_expect_eq(v, store_migrations[store_migrations_count - 1].version);
	store_free(s);
	struct stat st;
	cr_assert_eq(stat(store_fx_db, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
}

Test(store, workspace_and_sandbox_round_trip)
{
	struct store *s = open_ok();
	add_workspace(s, "ws_a");
	struct cp_error *err = NULL;
	cr_assert_eq(add_sandbox(s, "sbx_1", "ws_a", &err), 0, "%s", err ? err->message : "");
	struct sandbox_record r = {0};
	cr_assert_eq(store_sandbox_get(s, "sbx_1", &r, &err), 0);
	cr_expect_str_eq(sandbox_status_to_string(r.status), "creating");
	cr_expect_str_eq(r.image, "img:1");
	cr_expect_eq(r.network, 1);
	sandbox_record_clear(&r);
	cr_assert_eq(store_sandbox_set_status(s, "sbx_1", SANDBOX_RUNNING, "cid123", NULL, 3000, &err), 0);
	cr_assert_eq(store_sandbox_get(s, "sbx_1", &r, &err), 0);
	cr_expect_str_eq(sandbox_status_to_string(r.status), "running");
	cr_expect_str_eq(r.container_id, "cid123");
	cr_expect_eq(r.updated_at_ms, 3000);
	sandbox_record_clear(&r);

	struct workspace_record w = {0};
	cr_assert_eq(store_workspace_get(s, "ws_a", &w, &err), 0);
	cr_expect_str_eq(w.sandbox_id, "sbx_1");
	workspace_record_clear(&w);

	int live = -1;
	cr_assert_eq(store_sandbox_count_live(s, &live, &err), 0);
	cr_expect_eq(live, 1);
	cr_assert_eq(store_sandbox_touch(s, "sbx_1", 5000, &err), 0);
	cr_assert_eq(store_sandbox_set_status(s, "sbx_1", SANDBOX_REMOVED, NULL, NULL, 6000, &err), 0);
	cr_assert_eq(store_sandbox_get(s, "sbx_1", &r, &err), 0);
	cr_expect_str_eq(sandbox_status_to_string(r.status), "removed");
	cr_expect_eq(r.removed_at_ms, 6000);
	cr_expect_eq(r.last_activity_ms, 5000);
	sandbox_record_clear(&r);
	cr_assert_eq(store_workspace_get(s, "ws_a", &w, &err), 0);
	cr_expect_null(w.sandbox_id);
	cr_expect_eq(w.released_at_ms, 6000);
	workspace_record_clear(&w);

	struct sandbox_record *list = NULL;
	size_t n = 9;
	cr_assert_eq(store_sandbox_list(s, 0, &list, &n, &err), 0);
	cr_expect_eq(n, 0, "removed sandboxes are hidden");
	free(list);
	cr_assert_eq(store_sandbox_list(s, 1, &list, &n, &err), 0);
	cr_expect_eq(n, 1);
	sandbox_record_clear(&list[0]);
	free(list);
	store_free(s);
}

Test(store, one_live_sandbox_per_workspace)
{
	struct store *s = open_ok();
	add_workspace(s, "ws_a");
	struct cp_error *err = NULL;
	cr_assert_eq(add_sandbox(s, "sbx_1", "ws_a", &err), 0);
	cr_expect_lt(add_sandbox(s, "sbx_2", "ws_a", &err), 0);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_CONFLICT);
	cr_expect(strstr(err->message, "ws_a") != NULL, "%s", err->message);
	cp_error_free(err);
	err = NULL;
	cr_assert_eq(store_sandbox_set_status(s, "sbx_1", SANDBOX_FAILED, NULL, "boom", 10, &err), 0);
	cr_expect_eq(add_sandbox(s, "sbx_2", "ws_a", &err), 0, "a failed sandbox frees the workspace");
	store_free(s);
}

Test(store, not_found_messages_name_the_id)
{
	struct store *s = open_ok();
	struct cp_error *err = NULL;
	struct sandbox_record r = {0};
	cr_expect_lt(store_sandbox_get(s, "sbx_nope", &r, &err), 0);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cr_expect(strstr(err->message, "sbx_nope") && strstr(err->message, "sandbox_list"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	cr_expect_lt(store_sandbox_set_status(s, "sbx_nope", SANDBOX_FAILED, NULL, NULL, 1, &err), 0);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_free(err);
	err = NULL;
	cr_expect_lt(add_sandbox(s, "sbx_1", "ws_missing", &err), 0, "foreign keys are on");
	cp_error_free(err);
	store_free(s);
}

Test(store, two_handles_share_the_database)
{
	struct store *a = open_ok();
	struct store *b = open_ok();
	add_workspace(a, "ws_a");
	struct workspace_record w = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_get(b, "ws_a", &w, &err), 0, "%s", err ? err->message : "");
	workspace_record_clear(&w);
	store_free(a);
	store_free(b);
}

/* Another local user planting the registry (a data root under /tmp they
 * made): a symbolic link to a file of theirs, or a file they own, is never
 * opened; nothing is written through the link. */
Test(store, a_planted_registry_is_refused)
{
	char target[160];
	snprintf(target, sizeof(target), "%s/theirs.sqlite", store_fx_dir);
	cr_assert_eq(symlink(target, store_fx_db), 0);
	struct store *s = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(store_fx_db, &s, &err), -1);
	cr_assert(strstr(err->message, "symbolic link"), "%s", err->message);
	cp_error_free(err);
	err = NULL;
	struct stat st;
	cr_assert_eq(stat(target, &st), -1, "nothing was created through the link");
	cr_assert_eq(unlink(store_fx_db), 0);
	if (geteuid() != 0)
		return; /* only root can give a file to another uid */
	FILE *f = fopen(store_fx_db, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(chown(store_fx_db, 4321, 4321), 0);
	cr_assert_eq(store_open(store_fx_db, &s, &err), -1);
	cr_assert(strstr(err->message, "belongs to uid 4321"), "%s", err->message);
	cp_error_free(err);
}
