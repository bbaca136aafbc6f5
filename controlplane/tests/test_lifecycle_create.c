/* test_lifecycle_create.c: lifecycle_sandbox_create without Docker, against
 * the fake engine in route mode with a scripted helper on the attach stream
 * (fake_engine.h). A create that succeeds (managed and clone workspaces);
 * each step that can fail (the row, the container create, the attach, the
 * start, the helper's hello, the clone copy, the mount check) fails one at a
 * time and is undone completely: no sandbox row left (none 'creating'), the
 * container created is removed (the exact DELETE the engine received), a
 * managed workspace made by this call gone with its directory, a workspace
 * that existed before kept, no channel left open. Then the warm pool's
 * claim, the reuse of a workspace's live sandbox, and a host path that needs
 * an approval, which creates nothing. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "base/clock.h"
#include "base/log.h"
#include "lifecycle_fixture.h"
#include "proto.h"
#include "store/store_internal.h"

/* The container id in create_ok.http. */
#define CONTAINER "e90e34656806a1b6b1f6c5b2e3bd28b4a1e1c0d6f1a4c8b7a4a8f0e4d1c2b3a4"

/* ---- scripted helpers ---- */

static struct stat host_dir; /* what fs.stat of the clone's source reports */

static int answer(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int answer(char **ret, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cr_assert_geq(vasprintf(ret, fmt, ap), 0);
	va_end(ap);
	return 1;
}

/* A helper that does what it is asked. */
static int helper_ok(const char *method, struct json_object *params, char **ret)
{
	(void)params;
	if (!strcmp(method, "hello"))
		return answer(
		    ret, "\"result\":{\"version\":\"" PROTO_VERSION "\",\"boot_id\":\"boot-1\",\"started_at_ms\":%lld}",
		    (long long)clock_now_ms());
	if (!strcmp(method, "fs.stat"))
		return answer(ret, "\"result\":{\"dev_major\":%u,\"dev_minor\":%u,\"ino\":%llu}",
		              major(host_dir.st_dev), minor(host_dir.st_dev), (unsigned long long)host_dir.st_ino);
	if (!strcmp(method, "bash.start"))
		return answer(ret, "\"result\":{\"status\":\"exited\",\"exit_code\":0,\"output\":\"\"}");
	return answer(ret, "\"error\":{\"code\":-32601,\"message\":\"method not found\"}");
}

/* Dies before its hello is answered. */
static int helper_dies(const char *method, struct json_object *params, char **ret)
{
	return strcmp(method, "hello") ? helper_ok(method, params, ret) : -1;
}

/* A helper from a build whose protocol is newer than this control plane's. */
static int helper_too_new(const char *method, struct json_object *params, char **ret)
{
	if (strcmp(method, "hello"))
		return helper_ok(method, params, ret);
	return answer(ret, "\"result\":{\"version\":\"%d\",\"boot_id\":\"boot-1\",\"started_at_ms\":%lld}",
	              PROTO_VERSION_NUM + 1, (long long)clock_now_ms());
}

/* A hostile helper: no version at all, the rest of hello as usual. */
static int helper_no_version(const char *method, struct json_object *params, char **ret)
{
	if (strcmp(method, "hello"))
		return helper_ok(method, params, ret);
	return answer(ret, "\"result\":{\"boot_id\":\"boot-1\",\"started_at_ms\":%lld}", (long long)clock_now_ms());
}

/* The clone copy fails (git clone's exit status and words). */
static int helper_copy_fails(const char *method, struct json_object *params, char **ret)
{
	if (strcmp(method, "bash.start"))
		return helper_ok(method, params, ret);
	return answer(ret, "\"result\":{\"status\":\"exited\",\"exit_code\":128,\"output\":\"fatal: copy broke\"}");
}

/* Sees another directory at the mount target than the one checked. */
static int helper_other_mount(const char *method, struct json_object *params, char **ret)
{
	if (strcmp(method, "fs.stat"))
		return helper_ok(method, params, ret);
	return answer(ret, "\"result\":{\"dev_major\":%u,\"dev_minor\":%u,\"ino\":%llu}", major(host_dir.st_dev),
	              minor(host_dir.st_dev), (unsigned long long)host_dir.st_ino + 1);
}

/* ---- the engine: the base routes, a test's overrides first ---- */

static const struct fake_route base_routes[] = {
    {"GET", "/version", {.fixture = "version.http"}},
    {"GET", "/networks/chat2sbx ", {.fixture = "network_named_ok.http"}},
    {"POST", "/containers/create", {.fixture = "create_ok.http"}},
    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_ok}},
    {"POST", "/start", {.fixture = "start_ok.http"}},
    {"GET", "/containers/sbx_warm", {.fixture = "inspect_running.http"}},
    {"DELETE", "/containers/", {.fixture = "remove_ok.http"}},
};
#define N_BASE (sizeof(base_routes) / sizeof(base_routes[0]))

static struct fake_route routes[N_BASE + 4];
static char repo[128]; /* a host directory below the allowed root */

static void start(const struct fake_route *over, size_t n_over)
{
	log_set_level(LOG_LEVEL_ERROR);
	cr_assert_leq(n_over, 4);
	if (n_over)
		memcpy(routes, over, n_over * sizeof(*over));
	memcpy(routes + n_over, base_routes, sizeof(base_routes));
	lc_fixture_init("create");
	char roots[96];
	snprintf(roots, sizeof(roots), "%s/repos", fx.root);
	snprintf(repo, sizeof(repo), "%s/proj", roots);
	cr_assert_eq(mkdir(roots, 0700), 0);
	cr_assert_eq(mkdir(repo, 0700), 0);
	cr_assert_eq(stat(repo, &host_dir), 0);
	static char roots_copy[96];
	snprintf(roots_copy, sizeof(roots_copy), "%s", roots);
	fx.cfg.allowed_host_roots = roots_copy;
	fx.cfg.template_image = "img";
	fx.cfg.helper_path = "/nonexistent/chat2sbx-helper";
	fx.cfg.docker_socket = "/nonexistent/docker.sock";
	lc_fixture_start(routes, n_over + N_BASE);
}

TestSuite(lifecycle_create, .fini = lc_fixture_teardown, .timeout = 60);

static int create(const struct lifecycle_create_options *o, struct lifecycle_create_result *res, struct cp_error **err)
{
	static const struct lifecycle_create_options none = {0};
	return lifecycle_sandbox_create(fx.lc, o ? o : &none, res, err);
}

/* A clone workspace of repo, approved earlier. */
static void clone_workspace(void)
{
	lc_fixture_workspace("ws_clone", "clone", repo, 1);
}

static size_t count_rows(const char *sql)
{
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	cr_assert_eq(store_prepare(fx.store, &st, sql, "count rows", NULL), 0, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	return (size_t)sqlite3_column_int64(st, 0);
}

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Nothing of a failed create remains: no sandbox row at all (so none
 * 'creating'), only the workspaces that existed before (and no directory
 * of a managed one made for it), no channel, and exactly one container
 * removal, of removed (a path part: the container's id, or its name when
 * no id came back; NULL: no container was asked for, none removed). */
static void assert_undone(struct cp_error *err, enum cp_error_code code, const char *words, size_t workspaces_before,
                          const char *removed)
{
	cr_assert_not_null(err);
	cr_expect_eq(err->code, code, "%s", err->message);
	cr_expect(strstr(err->message, words) != NULL, "'%s' in: %s", words, err->message);
	cr_expect_eq(count_rows("SELECT count(*) FROM sandboxes"), 0, "no sandbox row is left");
	cr_expect_eq(count_rows("SELECT count(*) FROM workspaces"), workspaces_before);
	cr_expect_eq(entries(fx.ws_root), 0, "no managed workspace directory is left");
	cr_expect_eq(fx.lc->n_channels, 0, "no channel is left");
	cr_expect_eq(fake_count("DELETE", "/containers/"), removed ? 1 : 0);
	if (removed)
		cr_expect_eq(fake_count("DELETE", removed), 1, "the container is removed: DELETE %s", removed);
	cr_expect_eq(lifecycle_undo_run(fx.lc), 0, "no undo waits");
}

/* A create (on workspace_id, NULL: a new managed one) that fails and is
 * undone (assert_undone). */
static void create_fails(const char *workspace_id, enum cp_error_code code, const char *words, size_t workspaces_before,
                         const char *removed)
{
	struct lifecycle_create_options o = {.workspace_id = workspace_id};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(create(&o, &res, &err), -1);
	cr_expect_null(res.sandbox.id);
	cr_expect_null(res.copy_session_id);
	assert_undone(err, code, words, workspaces_before, removed);
	cp_error_free(err);
}

/* ---- success ---- */

Test(lifecycle_create, managed_sandbox_runs_after_create_attach_start_hello)
{
	start(NULL, 0);
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(create(NULL, &res, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(sandbox_status_to_string(res.sandbox.status), "running");
	cr_expect_str_eq(res.sandbox.container_id, CONTAINER);
	cr_expect_not(res.reused);
	cr_expect_not(res.approval_required);
	cr_expect_eq(fake_count("POST", "/containers/create?name="), 1);
	cr_expect_eq(fake_count("POST", "/containers/" CONTAINER "/attach"), 1);
	cr_expect_eq(fake_count("POST", "/containers/" CONTAINER "/start"), 1);
	cr_expect_eq(fake_count("HELPER", "hello"), 1);
	cr_expect_eq(fake_count("HELPER", "bash.start"), 0, "a managed workspace is not copied");
	cr_expect_eq(fake_count("DELETE", "/containers/"), 0);
	cr_expect_eq(count_rows("SELECT count(*) FROM workspaces WHERE mode = 'managed'"), 1);
	cr_expect_eq(entries(fx.ws_root), 1, "its workspace directory");
	struct helper_channel *ch = lifecycle_channel_get(fx.lc, res.sandbox.id);
	cr_expect(ch && helper_channel_alive(ch), "its channel stays open in the table");
	helper_channel_unref(ch);
	lifecycle_create_result_clear(&res);
}

Test(lifecycle_create, clone_sandbox_checks_the_mount_and_copies)
{
	start(NULL, 0);
	clone_workspace();
	struct lifecycle_create_options o = {.workspace_id = "ws_clone"};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(create(&o, &res, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(sandbox_status_to_string(res.sandbox.status), "running");
	cr_expect_eq(fake_count("HELPER", "fs.stat"), 1, "the mount is checked from inside");
	cr_expect_eq(fake_count("HELPER", "bash.start"), 1, "then the clone is copied");
	cr_expect_null(res.copy_session_id, "the copy finished");
	lifecycle_create_result_clear(&res);
}

/* ---- each failing step, undone ---- */

Test(lifecycle_create, row_insert_failure_removes_the_new_workspace)
{
	start(NULL, 0);
	struct cp_error *err = NULL;
	/* A registry that fails the insert (not as a conflict, which would be a
	 * racing create): its trigger writes to a table that is gone. */
	cr_assert_eq(store_exec(fx.store,
	                        "CREATE TABLE gone (x); CREATE TRIGGER no_row BEFORE INSERT ON sandboxes BEGIN "
	                        "INSERT INTO gone VALUES (1); END; DROP TABLE gone",
	                        "test", &err),
	             0, "%s", err ? err->message : "");
	create_fails(NULL, CP_ERR_INTERNAL, "no such table", 0, NULL);
	cr_expect_eq(fake_count("POST", "/containers/create"), 0, "no container before the row");
}

Test(lifecycle_create, container_create_failure_is_undone)
{
	static const struct fake_route over[] = {{"POST", "/containers/create", {.fixture = "create_no_image.http"}}};
	start(over, 1);
	/* No id came back: the undo removes it by its name, the sandbox id. */
	create_fails(NULL, CP_ERR_NOT_FOUND, "create sandbox 'sbx_", 0, "/containers/sbx_");
	cr_expect_eq(fake_count("POST", "/attach"), 0);
}

Test(lifecycle_create, attach_failure_is_undone)
{
	static const struct fake_route over[] = {{"POST", "/attach", {.fixture = "attach_missing.http"}}};
	start(over, 1);
	create_fails(NULL, CP_ERR_NOT_FOUND, "create sandbox 'sbx_", 0, "/containers/" CONTAINER "?");
	cr_expect_eq(fake_count("POST", "/start"), 0, "never started");
}

Test(lifecycle_create, start_failure_is_undone)
{
	static const struct fake_route over[] = {{"POST", "/start", {.fixture = "start_error.http"}}};
	start(over, 1);
	create_fails(NULL, CP_ERR_UNAVAILABLE, "OCI runtime create failed", 0, "/containers/" CONTAINER "?");
	cr_expect_eq(fake_count("HELPER", "hello"), 0, "no hello to a container that did not start");
}

Test(lifecycle_create, hello_failure_is_undone)
{
	static const struct fake_route over[] = {
	    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_dies}}};
	start(over, 1);
	create_fails(NULL, CP_ERR_UNAVAILABLE, "not answering", 0, "/containers/" CONTAINER "?");
	cr_expect_eq(fake_count("HELPER", "hello"), 1);
}

/* The version rule (helper/version.c): a helper this control plane does
 * not speak to undoes the create, and the message says what to do. */
Test(lifecycle_create, helper_of_another_protocol_is_undone)
{
	static const struct fake_route over[] = {
	    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_too_new}}};
	start(over, 1);
	create_fails(NULL, CP_ERR_CONFLICT, "newer than this chat2sbx", 0, "/containers/" CONTAINER "?");
	cr_expect_eq(fake_count("HELPER", "hello"), 1);
	cr_expect_eq(fake_count("HELPER", "bash.start"), 0, "nothing runs in it");
}

Test(lifecycle_create, helper_without_a_version_is_undone)
{
	static const struct fake_route over[] = {
	    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_no_version}}};
	start(over, 1);
	create_fails(NULL, CP_ERR_CONFLICT, "reinstall chat2sbx", 0, "/containers/" CONTAINER "?");
}

Test(lifecycle_create, clone_copy_failure_is_undone_and_keeps_the_workspace)
{
	static const struct fake_route over[] = {
	    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_copy_fails}}};
	start(over, 1);
	clone_workspace();
	create_fails("ws_clone", CP_ERR_INTERNAL, "fatal: copy broke", 1, "/containers/" CONTAINER "?");
	cr_expect(lc_fixture_workspace_exists("ws_clone"), "an approved workspace outlives a failed create");
}

Test(lifecycle_create, mount_mismatch_is_refused_before_anything_runs)
{
	static const struct fake_route over[] = {
	    {"POST", "/attach", {.fixture = "attach_upgrade.http", .helper = helper_other_mount}}};
	start(over, 1);
	clone_workspace();
	create_fails("ws_clone", CP_ERR_DENIED, "changed while it was being mounted", 1, "/containers/" CONTAINER "?");
	cr_expect_eq(fake_count("HELPER", "bash.start"), 0, "nothing ran in it");
	cr_expect_eq(count_rows("SELECT count(*) FROM audit WHERE action = 'sandbox.mount_refused'"), 1);
}

/* ---- which workspaces may go to another node (issue 28) ---- */

/* A create on workspace_id asked for node: refused with code and words,
 * before any engine call, nothing made. */
static void node_refused(const char *workspace_id, const char *node, enum cp_error_code code, const char *words)
{
	struct lifecycle_create_options o = {.workspace_id = workspace_id, .node = node};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(create(&o, &res, &err), -1);
	assert_undone(err, code, words, 1, NULL);
	cr_expect_eq(fake_count("POST", "/containers/create"), 0, "no container was asked for");
	cp_error_free(err);
}

Test(lifecycle_create, a_direct_workspace_stays_on_local)
{
	start(NULL, 0);
	lc_fixture_workspace("ws_direct", "direct", repo, 1);
	node_refused("ws_direct", "n1", CP_ERR_INVALID_ARGUMENT, "direct workspace 'ws_direct' stays on node 'local'");
}

/* A managed workspace kept on another node (its files a volume there)
 * goes back to that node only: another node asked is refused, and a node
 * that cannot take it now (here: its engine cannot be opened) refuses it
 * naming the workspace and the node, with nothing asked of this machine's
 * engine. */
Test(lifecycle_create, a_managed_workspace_kept_on_a_node_goes_back_there_only)
{
	start(NULL, 0);
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 8LL << 30, 2);
	struct cp_error *err = NULL;
	struct workspace_record w = {.id = "ws_far",
	                             .mode = "managed",
	                             .path = "/nonexistent/ws_far",
	                             .created_at_ms = 1,
	                             .node = "n1",
	                             .volume = "chat2sbx-ws-ws_far"};
	cr_assert_eq(store_workspace_insert(fx.store, &w, &err), 0, "%s", err ? err->message : "");
	node_refused("ws_far", "local", CP_ERR_INVALID_ARGUMENT, "managed workspace 'ws_far' stays on node 'n1'");
	node_refused("ws_far", NULL, CP_ERR_UNAVAILABLE, "workspace 'ws_far' has its files on node 'n1'");
}

/* With node 'local' drained, an existing workspace of this machine gets no
 * new sandbox: refused saying how to resume, nothing asked of the engine. */
Test(lifecycle_create, a_drained_local_makes_no_sandbox_for_its_workspaces)
{
	start(NULL, 0);
	lc_fixture_workspace("ws_direct", "direct", repo, 1);
	struct cp_error *err = NULL;
	cr_assert_eq(store_node_set_state(fx.store, "local", NODE_DRAINING, NULL, &err), 0);
	node_refused("ws_direct", NULL, CP_ERR_UNAVAILABLE, "node 'local' is draining");
}

Test(lifecycle_create, a_clone_goes_through_placement)
{
	start(NULL, 0);
	clone_workspace();
	/* Placed, not pinned to local: the node asked is looked up. */
	node_refused("ws_clone", "n1", CP_ERR_NOT_FOUND, "'n1'");
}

/* ---- the warm pool, reuse, approvals ---- */

static void warm_member(const char *id, const char *ws, int64_t at_ms)
{
	lc_fixture_workspace(ws, "managed", fx.ws_root, at_ms);
	struct sandbox_record s = {.id = (char *)id,
	                           .workspace_id = (char *)ws,
	                           .status = SANDBOX_RUNNING,
	                           .container_name = (char *)id,
	                           .image = (char *)lifecycle_sandbox_image(fx.lc),
	                           .memory_bytes = fx.lc->limits.default_memory_bytes,
	                           .disk_bytes = fx.lc->storage.default_bytes,
	                           .network = 1,
	                           .pooled = 1,
	                           .created_at_ms = at_ms};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
}

Test(lifecycle_create, a_default_create_claims_a_warm_member)
{
	start(NULL, 0);
	/* Two ready members for a pool of one: the claim leaves one ready, so
	 * the pool's thread makes no new member during the test. */
	warm_member("sbx_warm1", "ws_warm1", 1);
	warm_member("sbx_warm2", "ws_warm2", 2);
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_pool_start(fx.lc, 1, &err), 0);
	struct lifecycle_create_result res = {0};
	cr_assert_eq(create(NULL, &res, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(res.sandbox.id, "sbx_warm1", "the oldest member");
	cr_expect_str_eq(sandbox_status_to_string(res.sandbox.status), "running");
	cr_expect_eq(res.sandbox.pooled, 0, "claimed: an ordinary sandbox now");
	cr_expect_eq(fake_count("POST", "/containers/create"), 0, "nothing cold");
	cr_expect_eq(fake_count("HELPER", "hello"), 1, "re-attached to the member's helper");
	lifecycle_create_result_clear(&res);
	/* Options a member does not have go cold. */
	struct lifecycle_create_options o = {.network_off = 1};
	cr_assert_eq(create(&o, &res, &err), 0, "%s", err ? err->message : "");
	cr_expect_neq(strncmp(res.sandbox.id, "sbx_warm", 8), 0);
	cr_expect_eq(fake_count("POST", "/containers/create"), 1);
	lifecycle_create_result_clear(&res);
}

Test(lifecycle_create, a_workspace_with_a_live_sandbox_gets_it_back)
{
	start(NULL, 0);
	lc_fixture_workspace("ws_a", "managed", fx.ws_root, 1);
	lc_fixture_sandbox("sbx_a", "ws_a", "running", 1);
	struct lifecycle_create_options o = {.workspace_id = "ws_a", .memory = "1g"};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(create(&o, &res, &err), 0, "%s", err ? err->message : "");
	cr_expect(res.reused);
	cr_expect_str_eq(res.sandbox.id, "sbx_a");
	cr_expect_not_null(res.options_note, "the memory asked for differs from the one it has");
	cr_expect_eq(fake_count("POST", "/containers/create"), 0);
	cr_expect_eq(count_rows("SELECT count(*) FROM sandboxes"), 1);
	lifecycle_create_result_clear(&res);
}

Test(lifecycle_create, a_new_host_path_needs_an_approval_and_creates_nothing)
{
	start(NULL, 0);
	struct lifecycle_create_options o = {.workspace_path = repo};
	struct lifecycle_create_result res = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(create(&o, &res, &err), 0, "%s", err ? err->message : "");
	cr_expect(res.approval_required);
	cr_expect_str_eq(approval_status_to_string(res.approval.status), "pending");
	cr_expect_str_eq(res.approval.mode, "clone");
	cr_expect_null(res.sandbox.id);
	cr_expect_eq(count_rows("SELECT count(*) FROM approvals WHERE status = 'pending'"), 1);
	cr_expect_eq(count_rows("SELECT count(*) FROM sandboxes"), 0);
	cr_expect_eq(count_rows("SELECT count(*) FROM workspaces"), 0);
	cr_expect_eq(fake_count("POST", "/containers/create"), 0, "nothing mounted, nothing made");
	/* Asking again reuses the same pending approval. */
	char *first = strdup(res.approval.id);
	lifecycle_create_result_clear(&res);
	cr_assert_eq(create(&o, &res, &err), 0);
	cr_expect_str_eq(res.approval.id, first);
	cr_expect_eq(count_rows("SELECT count(*) FROM approvals"), 1);
	free(first);
	lifecycle_create_result_clear(&res);
}
