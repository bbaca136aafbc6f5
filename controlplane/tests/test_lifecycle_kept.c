/* test_lifecycle_kept.c: managed workspaces kept on another node (issue 28,
 * docs/nodes.md) without Docker or TLS: the fake engine in route mode stands
 * behind node 'n1' (lifecycle_node_engine_adopt) and behind 'local'. A kept
 * workspace's volume removed by hand, before the check or between the check
 * and the container's create (the engine then makes an empty one of that
 * name), is NOT_FOUND with the container removed and nothing of the create
 * left; a warm member found broken at its claim goes whole, its empty
 * workspace (row, directory, and on a node its volume) with it. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "lifecycle_fixture.h"
#include "lifecycle/pool_internal.h"
#include "proto.h"
#include "store/store_internal.h"

/* The container id in create_ok.http. */
#define CONTAINER "e90e34656806a1b6b1f6c5b2e3bd28b4a1e1c0d6f1a4c8b7a4a8f0e4d1c2b3a4"
#define VOLUME "chat2sbx-ws-ws_far"

TestSuite(lifecycle_kept, .fini = lc_fixture_teardown, .timeout = 60);

/* A helper that says hello and nothing else. */
static int helper_hello(const char *method, struct json_object *params, char **ret)
{
	(void)params;
	if (strcmp(method, "hello"))
		return -1;
	return asprintf(ret, "\"result\":{\"version\":\"" PROTO_VERSION "\",\"boot_id\":\"b\",\"started_at_ms\":%lld}",
	                (long long)clock_now_ms()) < 0
	           ? -1
	           : 1;
}

/* The fake engine with routes (a test's first), node 'n1' (ready, 8 GiB,
 * 2 CPUs) on it too; a helper file to copy into a node's containers. */
static void start(const struct fake_route *routes, size_t n)
{
	log_set_level(LOG_LEVEL_ERROR);
	lc_fixture_init("kept");
	static char helper[200];
	snprintf(helper, sizeof(helper), "%s/helper", fx.root);
	FILE *f = fopen(helper, "w");
	cr_assert_not_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	fx.cfg.template_image = "img";
	fx.cfg.helper_path = helper;
	fx.cfg.docker_socket = "/nonexistent/docker.sock";
	lc_fixture_start(routes, n);
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 8LL << 30, 2);
	struct docker_engine *node_engine = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_engine_new(fake.sock, &node_engine, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(lifecycle_node_engine_adopt(fx.lc, "n1", node_engine), 0);
}

/* Workspace ws_far, kept on n1 in VOLUME after its sandbox was removed. */
static void kept_on_n1(void)
{
	struct workspace_record w = {
	    .id = "ws_far", .mode = "managed", .path = fx.ws_root, .created_at_ms = 1, .node = "n1", .volume = VOLUME};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_insert(fx.store, &w, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record s = lc_fixture_running_row("sbx_old", "ws_far", "n1");
	cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(store_sandbox_set_status(fx.store, "sbx_old", SANDBOX_REMOVED, NULL, NULL, 2, &err), 0);
}

static size_t count_rows(const char *sql)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	cr_assert_eq(store_prepare(fx.store, &st, sql, "count rows", NULL), 0, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	return (size_t)sqlite3_column_int64(st, 0);
}

/* sandbox_create {workspace_id: ws_far} fails NOT_FOUND saying its files
 * are gone from n1; nothing of it is left but the workspace's row, and the
 * volume found there is neither made nor removed by us. */
static void create_kept_is_not_found(void)
{
	kept_on_n1();
	struct lifecycle_create_options o = {.workspace_id = "ws_far"};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_create(fx.lc, &o, &res, &err), -1, "an empty workspace was handed out");
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND, "%s", err->message);
	cr_expect_not_null(strstr(err->message, "the files of workspace 'ws_far' are gone from node 'n1'"), "%s",
	                   err->message);
	cp_error_free(err);
	cr_expect_null(res.sandbox.id);
	cr_expect_eq(count_rows("SELECT count(*) FROM sandboxes WHERE id <> 'sbx_old'"), 0, "no row of the create");
	cr_expect(lc_fixture_workspace_exists("ws_far"), "the workspace's row stays");
	cr_expect_eq(fake_count("POST", "/volumes/create"), 0, "a kept volume is never made again");
	cr_expect_eq(fake_count("DELETE", "/volumes/" VOLUME), 0, "the volume found is left as it is");
	cr_expect_eq(fake_count("POST", "/start"), 0, "nothing started");
	cr_expect_eq(fx.lc->n_channels, 0);
	cr_expect_eq(lifecycle_undo_run(fx.lc), 0, "no undo waits");
}

static const struct fake_route node_routes[] = {
    {"GET", "/version", {.fixture = "version.http"}},
    {"GET", "/_ping", {.fixture = "ping_text.http"}},
    {"GET", "/images/img/json", {.fixture = "image_ok.http"}},
    {"GET", "/networks/chat2sbx ", {.fixture = "network_named_ok.http"}},
    {"POST", "/containers/create", {.fixture = "create_ok.http"}},
    {"DELETE", "/containers/", {.fixture = "remove_ok.http"}},
};
#define N_NODE (sizeof(node_routes) / sizeof(node_routes[0]))

/* routes: over first, then node_routes. */
static void start_with(const struct fake_route *over, size_t n_over)
{
	static struct fake_route routes[N_NODE + 6];
	cr_assert_leq(n_over, 6);
	memcpy(routes, over, n_over * sizeof(*over));
	memcpy(routes + n_over, node_routes, sizeof(node_routes));
	start(routes, n_over + N_NODE);
}

/* Removed by hand after the check, before the container's create: the
 * engine made an empty, unlabelled volume of that name for the container.
 * Without the second look the sandbox would start on it. */
Test(lifecycle_kept, a_volume_removed_before_the_container_create_is_not_found)
{
	const struct fake_route over[] = {
	    {"GET", "/volumes/" VOLUME, {.fixture = "volume_labelled.http", .times = 1}},
	    {"GET", "/volumes/" VOLUME, {.fixture = "volume_unlabelled.http"}},
	};
	start_with(over, 2);
	create_kept_is_not_found();
	cr_expect_eq(fake_count("GET", "/volumes/" VOLUME), 2, "checked before and after the container's create");
	cr_expect_eq(fake_count("POST", "/containers/create"), 1);
	cr_expect_eq(fake_count("DELETE", "/containers/" CONTAINER), 1, "the container made on it is removed");
}

/* An unlabelled volume of that name already (an earlier create met the
 * same race, or a person made one): refused before any container. */
Test(lifecycle_kept, a_volume_not_made_for_the_workspace_is_refused_before_any_container)
{
	const struct fake_route over[] = {{"GET", "/volumes/" VOLUME, {.fixture = "volume_unlabelled.http"}}};
	start_with(over, 1);
	create_kept_is_not_found();
	cr_expect_eq(fake_count("POST", "/containers/create"), 0);
}

/* Its own volume, labelled: the create goes on past both looks (here to
 * the helper's copy into the container, which the fake refuses, and is
 * undone keeping the workspace). */
Test(lifecycle_kept, its_own_volume_passes_both_looks)
{
	const struct fake_route over[] = {{"GET", "/volumes/" VOLUME, {.fixture = "volume_labelled.http"}}};
	start_with(over, 1);
	kept_on_n1();
	struct lifecycle_create_options o = {.workspace_id = "ws_far"};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_create(fx.lc, &o, &res, &err), -1);
	cr_expect_not_null(strstr(err->message, "put the helper into container"), "past the second look: %s",
	                   err->message);
	cp_error_free(err);
	cr_expect_eq(fake_count("GET", "/volumes/" VOLUME), 2);
	cr_expect_eq(fake_count("POST", "/volumes/create"), 0);
	cr_expect(lc_fixture_workspace_exists("ws_far"));
}

/* ---- a warm member found broken at its claim ---- */

/* A running member row id on node (NULL: local), made at at_ms, with its
 * new managed workspace ws (its directory made; on a node its volume
 * named after ws). */
static void warm_member(const char *id, const char *ws, const char *node, int64_t at_ms, char *dir, size_t dir_size)
{
	snprintf(dir, dir_size, "%s/%s", fx.ws_root, ws);
	cr_assert_eq(mkdir(dir, 0755), 0);
	char volume[128];
	lifecycle_workspace_volume_name(ws, volume, sizeof(volume));
	struct workspace_record w = {.id = (char *)ws,
	                             .mode = "managed",
	                             .path = dir,
	                             .created_at_ms = 1,
	                             .node = (char *)node,
	                             .volume = node ? volume : NULL};
	struct cp_error *err = NULL;
	cr_assert_eq(store_workspace_insert(fx.store, &w, &err), 0, "%s", err ? err->message : "");
	struct sandbox_record s = lc_fixture_running_row(id, ws, node);
	s.image = (char *)lifecycle_sandbox_image(fx.lc);
	s.memory_bytes = lifecycle_pool_default_memory(fx.lc, node);
	s.disk_bytes = lifecycle_pool_disk_bytes(fx.lc, node);
	s.pooled = 1;
	s.created_at_ms = at_ms;
	cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
}

/* The claim finds the member's container gone: the create goes cold (here
 * refused by the fake at the container's create) and the member leaves
 * nothing: no row of it or of its workspace, no directory, on a node no
 * volume; no kept workspace nobody ever used. */
static void broken_member_goes_whole(const char *node)
{
	char dir[200], spare[200];
	warm_member("sbx_warm", "ws_warm", node, 1, dir, sizeof(dir));
	warm_member("sbx_spare", "ws_spare", node, 2, spare, sizeof(spare)); /* keeps the refill quiet */
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_pool_start(fx.lc, 1, &err), 0);
	struct lifecycle_create_options o = {.node = node ? node : "local"};
	struct lifecycle_create_result res = {0};
	(void)lifecycle_sandbox_create(fx.lc, &o, &res, &err);
	cp_error_free(err);
	lifecycle_create_result_clear(&res);
	cr_expect_eq(fake_count("GET", "/containers/sbx_warm/json"), 1, "the claim looked for it");
	cr_expect(!lc_fixture_sandbox_exists("sbx_warm"), "the member's row is gone");
	cr_expect(!lc_fixture_workspace_exists("ws_warm"), "its empty workspace is not kept");
	struct stat st;
	cr_expect_neq(stat(dir, &st), 0, "its directory is gone");
	if (node)
		cr_expect_eq(fake_count("DELETE", "/volumes/chat2sbx-ws-ws_warm"), 1, "its volume on the node is gone");
	cr_expect_eq(lifecycle_undo_run(fx.lc), 0, "no undo waits");
}

static const struct fake_route broken_routes[] = {
    {"GET", "/containers/sbx_warm/json", {.fixture = "inspect_missing.http"}},
    {"GET", "/containers/sbx_spare/json", {.fixture = "inspect_running.http"}},
    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_hello}},
    {"POST", "/containers/create", {.fixture = "create_no_image.http"}},
    {"DELETE", "/volumes/", {.fixture = "remove_ok.http"}},
};
#define N_BROKEN (sizeof(broken_routes) / sizeof(broken_routes[0]))

Test(lifecycle_kept, a_broken_warm_member_on_local_leaves_no_workspace)
{
	start_with(broken_routes, N_BROKEN);
	broken_member_goes_whole(NULL);
}

Test(lifecycle_kept, a_broken_warm_member_on_a_node_leaves_no_volume)
{
	start_with(broken_routes, N_BROKEN);
	broken_member_goes_whole("n1");
}

/* ---- a new managed workspace on a node whose create fails ---- */

/* Fails at the container's start: the undo removes the container, then the
 * volume made for the new workspace, then its rows and directory; no empty
 * workspace is kept for a sandbox that never ran. */
Test(lifecycle_kept, a_new_workspace_whose_start_fails_on_a_node_leaves_no_volume)
{
	static const struct fake_route over[] = {
	    {"POST", "/volumes/create", {.fixture = "volume_labelled.http"}},
	    {"PUT", "/archive", {.fixture = "start_ok.http"}},
	    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_hello}},
	    {"POST", "/start", {.fixture = "start_error.http"}},
	    {"DELETE", "/volumes/", {.fixture = "remove_ok.http"}},
	};
	start_with(over, sizeof(over) / sizeof(over[0]));
	struct lifecycle_create_options o = {.node = "n1"};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_sandbox_create(fx.lc, &o, &res, &err), -1);
	cr_expect_eq(fake_count("POST", "/start"), 1, "it failed at the start: %s", err->message);
	cp_error_free(err);
	cr_expect_eq(fake_count("POST", "/volumes/create"), 1);
	cr_expect_eq(fake_count("DELETE", "/containers/" CONTAINER), 1);
	cr_expect_eq(fake_count("DELETE", "/volumes/chat2sbx-ws-ws_"), 1, "the new workspace's volume is removed");
	cr_expect_eq(count_rows("SELECT count(*) FROM sandboxes"), 0);
	cr_expect_eq(count_rows("SELECT count(*) FROM workspaces"), 0, "no workspace row is kept");
	DIR *d = opendir(fx.ws_root);
	cr_assert_not_null(d);
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	cr_expect_eq(n, 0, "no workspace directory is left");
	cr_expect_eq(lifecycle_undo_run(fx.lc), 0, "no undo waits");
}

/* ---- retention of a workspace kept on a node (workspace.c) ---- */

/* 30 days after its sandbox, a workspace kept on n1 is retired in place:
 * marked trashed with its volume and node kept in the row (the volume is
 * never removed: nothing here can, and the trash is never emptied), its
 * empty directory here gone and nothing put into DATA_ROOT/trash; a
 * missing directory is no failure. Once, not at every pass. */
Test(lifecycle_kept, retention_retires_a_node_workspace_in_place_once)
{
	log_set_level(LOG_LEVEL_ERROR);
	lc_fixture_setup("kept", NULL, 0);
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 8LL << 30, 2);
	const int64_t t0 = 1000000;
	char empty[200], missing[200];
	snprintf(empty, sizeof(empty), "%s/ws_empty", fx.ws_root);
	snprintf(missing, sizeof(missing), "%s/ws_missing", fx.ws_root);
	cr_assert_eq(mkdir(empty, 0755), 0);
	const char *ids[] = {"ws_empty", "ws_missing"}, *paths[] = {empty, missing};
	struct cp_error *err = NULL;
	for (int i = 0; i < 2; i++) {
		char volume[128], sbx[64];
		lifecycle_workspace_volume_name(ids[i], volume, sizeof(volume));
		struct workspace_record w = {.id = (char *)ids[i],
		                             .mode = "managed",
		                             .path = (char *)paths[i],
		                             .created_at_ms = 1,
		                             .node = "n1",
		                             .volume = volume};
		cr_assert_eq(store_workspace_insert(fx.store, &w, &err), 0, "%s", err ? err->message : "");
		snprintf(sbx, sizeof(sbx), "sbx_of_%s", ids[i]);
		struct sandbox_record s = lc_fixture_running_row(sbx, ids[i], "n1");
		cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
		cr_assert_eq(store_sandbox_set_status(fx.store, sbx, SANDBOX_REMOVED, NULL, NULL, t0, &err), 0);
	}
	cr_expect_eq(workspace_retention_run(&fx.cfg, fx.store, t0 + WORKSPACE_RETENTION_MS - 1, &err), 0, "day 29");
	cr_expect_eq(workspace_retention_run(&fx.cfg, fx.store, t0 + WORKSPACE_RETENTION_MS, &err), 2, "day 30");
	for (int i = 0; i < 2; i++) {
		struct workspace_record w = {0};
		cr_assert_eq(store_workspace_get(fx.store, ids[i], &w, &err), 0);
		cr_expect_str_eq(workspace_state(&w, NULL), "trashed", "%s", ids[i]);
		cr_expect_str_eq(w.node, "n1", "where its files are stays known");
		cr_expect_not_null(strstr(w.volume ? w.volume : "", ids[i]));
		workspace_record_clear(&w);
	}
	struct stat st;
	cr_expect_neq(stat(empty, &st), 0, "the empty directory here is gone");
	char trash[200];
	snprintf(trash, sizeof(trash), "%s/trash/ws_empty", fx.data_root);
	cr_expect_neq(stat(trash, &st), 0, "nothing of a node's workspace is in this machine's trash");
	cr_expect_eq(workspace_retention_run(&fx.cfg, fx.store, t0 + 2 * WORKSPACE_RETENTION_MS, &err), 0, "once");
}
