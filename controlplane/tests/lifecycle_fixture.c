/* lifecycle_fixture.c: the shared registry + lifecycle fixture of the
 * lifecycle tests (lifecycle_fixture.h). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lifecycle_fixture.h"
#include "store/store_internal.h"
#include "tools/tools.h"

struct lc_fixture fx;

void lc_fixture_init(const char *tag)
{
	memset(&fx, 0, sizeof(fx));
	snprintf(fx.root, sizeof(fx.root), "/tmp/c2s-%.20s-XXXXXX", tag);
	cr_assert_not_null(mkdtemp(fx.root));
	snprintf(fx.data_root, sizeof(fx.data_root), "%s/data", fx.root);
	snprintf(fx.ws_root, sizeof(fx.ws_root), "%s/workspaces", fx.data_root);
	snprintf(fx.db, sizeof(fx.db), "%s/reg.sqlite", fx.data_root);
	cr_assert_eq(mkdir(fx.data_root, 0700), 0);
	cr_assert_eq(mkdir(fx.ws_root, 0700), 0);
	fx.cfg = (struct config){
	    .data_root = fx.data_root, .workspace_root = fx.ws_root, .database_path = fx.db, .runtime = ""};
}

void lc_fixture_start(const struct fake_route *routes, size_t n)
{
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(fx.db, &fx.store, &err), 0, "%s", err ? err->message : "");
	if (routes) {
		fake_start_routes(routes, n);
		cr_assert_eq(docker_engine_new(fake.sock, &fx.engine, &err), 0, "%s", err ? err->message : "");
	}
	cr_assert_eq(lifecycle_new(&fx.cfg, fx.store, fx.engine, &fx.lc, &err), 0, "%s", err ? err->message : "");
	lifecycle_channel_receipts_set(fx.lc, &tool_bash_receipts);
}

void lc_fixture_setup(const char *tag, const struct fake_route *routes, size_t n)
{
	lc_fixture_init(tag);
	lc_fixture_start(routes, n);
}

void lc_fixture_teardown(void)
{
	lifecycle_pool_stop(fx.lc);
	lifecycle_free(fx.lc);
	docker_engine_free(fx.engine);
	if (fx.engine)
		fake_stop_routes(&fake);
	store_free(fx.store);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fx.root);
	cr_expect_eq(system(cmd), 0);
}

void lc_fixture_workspace(const char *id, const char *mode, const char *path, int64_t at_ms)
{
	struct cp_error *err = NULL;
	struct workspace_record w = {.id = (char *)id,
	                             .mode = (char *)mode,
	                             .path = (char *)path,
	                             .host_path = strcmp(mode, "managed") ? (char *)path : NULL,
	                             .created_at_ms = at_ms};
	cr_assert_eq(store_workspace_insert(fx.store, &w, &err), 0, "%s", err ? err->message : "");
}

void lc_fixture_node(const char *name, const char *endpoint, enum node_state state, int64_t memory_bytes, int cpus)
{
	struct node_record n = {.name = (char *)name,
	                        .endpoint = (char *)endpoint,
	                        .tls_ca = "/nonexistent/ca.pem",
	                        .tls_cert = "/nonexistent/cert.pem",
	                        .tls_key = "/nonexistent/key.pem",
	                        .labels = {.runtimes = "runc", .kvm = -1, .memory_bytes = memory_bytes, .cpus = cpus},
	                        .state = state,
	                        .last_contact_ms = 1000,
	                        .created_at_ms = 1000};
	struct cp_error *err = NULL;
	cr_assert_eq(store_node_insert(fx.store, &n, &err), 0, "%s", err ? err->message : "");
}

void lc_fixture_sandbox(const char *id, const char *workspace_id, const char *status, int64_t at_ms)
{
	struct cp_error *err = NULL;
	struct sandbox_record s = {.id = (char *)id,
	                           .workspace_id = (char *)workspace_id,
	                           .status = sandbox_status_from_string(status),
	                           .container_name = (char *)id,
	                           .image = "img",
	                           .network = 1,
	                           .created_at_ms = at_ms};
	cr_assert_eq(store_sandbox_insert(fx.store, &s, &err), 0, "%s", err ? err->message : "");
}

struct sandbox_record lc_fixture_running_row(const char *id, const char *ws, const char *node)
{
	return (struct sandbox_record){.id = (char *)id,
	                               .workspace_id = (char *)ws,
	                               .status = SANDBOX_RUNNING,
	                               .container_name = (char *)id,
	                               .image = "img",
	                               .network = 1,
	                               .created_at_ms = 1,
	                               .node = (char *)node};
}

int lc_fixture_sandbox_exists(const char *id)
{
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	int r = store_sandbox_get(fx.store, id, &s, &err);
	sandbox_record_clear(&s);
	cp_error_free(err);
	return r == 0;
}

int lc_fixture_workspace_exists(const char *id)
{
	struct workspace_record w = {0};
	struct cp_error *err = NULL;
	int r = store_workspace_get(fx.store, id, &w, &err);
	workspace_record_clear(&w);
	cp_error_free(err);
	return r == 0;
}

const char *lc_fixture_status(const char *id)
{
	static char buf[32];
	struct sandbox_record s = {0};
	struct cp_error *err = NULL;
	cr_assert_eq(store_sandbox_get(fx.store, id, &s, &err), 0, "%s", err ? err->message : "");
	snprintf(buf, sizeof(buf), "%s", sandbox_status_to_string(s.status));
	sandbox_record_clear(&s);
	return buf;
}

void lc_fixture_read_only(int on)
{
	struct cp_error *err = NULL;
	cr_assert_eq(store_exec(fx.store, on ? "PRAGMA query_only = 1" : "PRAGMA query_only = 0", "test", &err), 0);
}
