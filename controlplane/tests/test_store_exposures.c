/* test_store_exposures.c: the exposures table (migration 0004) on a
 * temporary database: round trip, one mapping per sandbox port and per host
 * port, listing per sandbox and in all, deletion, and rows going with their
 * sandbox row. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"

static char dir[64], db[128];
static struct store *st;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-exp-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &st, &err), 0, "%s", err ? err->message : "");
	struct workspace_record w = {.id = "ws_a", .mode = "managed", .path = "/tmp/x", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(st, &w, &err), 0, "%s", err ? err->message : "");
	struct workspace_record w2 = {.id = "ws_b", .mode = "managed", .path = "/tmp/y", .created_at_ms = 1};
	cr_assert_eq(store_workspace_insert(st, &w2, &err), 0, "%s", err ? err->message : "");
	const char *ids[][2] = {{"sbx_a", "ws_a"}, {"sbx_b", "ws_b"}};
	for (int i = 0; i < 2; i++) {
		struct sandbox_record s = {.id = (char *)ids[i][0],
		                           .workspace_id = (char *)ids[i][1],
		                           .status = SANDBOX_RUNNING,
		                           .container_name = (char *)ids[i][0],
		                           .image = "img:1",
		                           .network = 1,
		                           .created_at_ms = 2};
		cr_assert_eq(store_sandbox_insert(st, &s, &err), 0, "%s", err ? err->message : "");
	}
}

static void teardown(void)
{
	store_free(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(store_exposures, .init = setup, .fini = teardown);

static int add(const char *sandbox, int port, int host_port, struct cp_error **err)
{
	char name[64];
	snprintf(name, sizeof(name), "%s-expose-%d", sandbox, port);
	struct exposure_record x = {.sandbox_id = (char *)sandbox,
	                            .container_port = port,
	                            .host = "127.0.0.1",
	                            .host_port = host_port,
	                            .forwarder_name = name,
	                            .forwarder_id = port == 8000 ? "abc123" : NULL,
	                            .network = "chat2sbx-expose-x",
	                            .created_at_ms = 1234};
	return store_exposure_insert(st, &x, err);
}

Test(store_exposures, round_trip)
{
	struct cp_error *err = NULL;
	cr_assert_eq(add("sbx_a", 8000, 40001, &err), 0, "%s", err ? err->message : "");
	struct exposure_record x = {0};
	cr_assert_eq(store_exposure_get(st, "sbx_a", 8000, &x, &err), 0);
	cr_assert_str_eq(x.sandbox_id, "sbx_a");
	cr_assert_eq(x.container_port, 8000);
	cr_assert_str_eq(x.host, "127.0.0.1");
	cr_assert_eq(x.host_port, 40001);
	cr_assert_str_eq(x.forwarder_name, "sbx_a-expose-8000");
	cr_assert_str_eq(x.forwarder_id, "abc123");
	cr_assert_str_eq(x.network, "chat2sbx-expose-x");
	cr_assert_eq(x.created_at_ms, 1234);
	exposure_record_clear(&x);
	cr_assert_null(x.host);
	exposure_record_clear(NULL);

	/* A NULL forwarder id comes back NULL. */
	cr_assert_eq(add("sbx_a", 3000, 40002, &err), 0);
	cr_assert_eq(store_exposure_get(st, "sbx_a", 3000, &x, &err), 0);
	cr_assert_null(x.forwarder_id);
	exposure_record_clear(&x);
}

Test(store_exposures, one_mapping_per_port)
{
	struct cp_error *err = NULL;
	cr_assert_eq(add("sbx_a", 8000, 40001, &err), 0);
	cr_assert_eq(add("sbx_a", 8000, 40009, &err), -1, "a second mapping of one sandbox port");
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert(strstr(err->message, "already exposed"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(add("sbx_b", 9000, 40001, &err), -1, "one host port for two exposures");
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cp_error_freep(&err);
	/* The same container port of another sandbox is another mapping. */
	cr_assert_eq(add("sbx_b", 8000, 40003, &err), 0, "%s", err ? err->message : "");
	/* An unknown sandbox is refused by the foreign key. */
	cr_assert_eq(add("sbx_nope", 8000, 40004, &err), -1);
	cp_error_freep(&err);
}

Test(store_exposures, not_found_names_the_port)
{
	struct cp_error *err = NULL;
	struct exposure_record x = {0};
	cr_assert_eq(store_exposure_get(st, "sbx_a", 8000, &x, &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cr_assert(strstr(err->message, "8000") && strstr(err->message, "sbx_a"), "%s", err->message);
	cp_error_freep(&err);
	cr_assert_eq(store_exposure_delete(st, "sbx_a", 8000, &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
}

static void clear_all(struct exposure_record *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		exposure_record_clear(&rows[i]);
	free(rows);
}

Test(store_exposures, list_delete_and_cascade)
{
	struct cp_error *err = NULL;
	struct exposure_record *rows = NULL;
	size_t n = 99;
	cr_assert_eq(store_exposure_list(st, NULL, &rows, &n, &err), 0);
	cr_assert_eq(n, 0);
	clear_all(rows, n);
	cr_assert_eq(add("sbx_b", 5000, 40010, &err), 0);
	cr_assert_eq(add("sbx_a", 8000, 40011, &err), 0);
	cr_assert_eq(add("sbx_a", 3000, 40012, &err), 0);

	cr_assert_eq(store_exposure_list(st, "sbx_a", &rows, &n, &err), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(rows[0].container_port, 3000, "ordered by port");
	cr_assert_eq(rows[1].container_port, 8000);
	clear_all(rows, n);

	cr_assert_eq(store_exposure_list(st, NULL, &rows, &n, &err), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(rows[0].sandbox_id, "sbx_a", "ordered by sandbox");
	cr_assert_str_eq(rows[2].sandbox_id, "sbx_b");
	clear_all(rows, n);

	cr_assert_eq(store_exposure_set_forwarder(st, "sbx_a", 3000, "def456", &err), 0);
	struct exposure_record x = {0};
	cr_assert_eq(store_exposure_get(st, "sbx_a", 3000, &x, &err), 0);
	cr_assert_str_eq(x.forwarder_id, "def456");
	exposure_record_clear(&x);
	cr_assert_eq(store_exposure_set_forwarder(st, "sbx_a", 4000, "x", &err), -1);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);

	cr_assert_eq(store_exposure_delete(st, "sbx_a", 3000, &err), 0);
	cr_assert_eq(store_exposure_list(st, "sbx_a", &rows, &n, &err), 0);
	cr_assert_eq(n, 1);
	clear_all(rows, n);

	/* Marking a sandbox removed keeps its rows (lifecycle removes them with
	 * the forwarders); deleting the sandbox row takes them along. */
	cr_assert_eq(store_sandbox_set_status(st, "sbx_b", SANDBOX_REMOVED, NULL, NULL, 5, &err), 0);
	cr_assert_eq(store_exposure_list(st, "sbx_b", &rows, &n, &err), 0);
	cr_assert_eq(n, 1);
	clear_all(rows, n);
	cr_assert_eq(store_sandbox_delete(st, "sbx_b", &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_exposure_list(st, "sbx_b", &rows, &n, &err), 0);
	cr_assert_eq(n, 0);
	clear_all(rows, n);
}

/* The sandbox_expose caps (security review, defect 3) count rows per
 * sandbox and in all. */
Test(store_exposures, count_per_sandbox_and_in_all)
{
	struct cp_error *err = NULL;
	int64_t n = -1;
	cr_assert_eq(store_exposure_count(st, NULL, &n, &err), 0, "%s", err ? err->message : "");
	cr_expect_eq(n, 0);
	cr_assert_eq(add("sbx_a", 8000, 40001, &err), 0);
	cr_assert_eq(add("sbx_a", 3000, 40002, &err), 0);
	cr_assert_eq(add("sbx_b", 9000, 40003, &err), 0);
	cr_assert_eq(store_exposure_count(st, "sbx_a", &n, &err), 0);
	cr_expect_eq(n, 2);
	cr_assert_eq(store_exposure_count(st, "sbx_b", &n, &err), 0);
	cr_expect_eq(n, 1);
	cr_assert_eq(store_exposure_count(st, "sbx_none", &n, &err), 0);
	cr_expect_eq(n, 0);
	cr_assert_eq(store_exposure_count(st, NULL, &n, &err), 0);
	cr_expect_eq(n, 3);
	cr_assert_eq(store_exposure_delete(st, "sbx_a", 8000, &err), 0);
	cr_assert_eq(store_exposure_count(st, NULL, &n, &err), 0);
	cr_expect_eq(n, 2);
}
