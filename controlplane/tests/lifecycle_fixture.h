/* lifecycle_fixture.h: the registry + lifecycle every lifecycle test starts
 * from: a temporary DATA_ROOT (0700) with its workspaces folder and a
 * migrated registry, a configuration pointing at them, and a lifecycle on
 * the fake engine in route mode (fake_engine.h) or on no engine at all.
 * One fixture per test process (Criterion runs each test in its own). */
#ifndef CP_TEST_LIFECYCLE_FIXTURE_H
#define CP_TEST_LIFECYCLE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "fake_engine.h"
#include "lifecycle/lifecycle_internal.h"

struct lc_fixture {
	char root[64];       /* /tmp/c2s-<tag>-XXXXXX, removed by the teardown */
	char data_root[128]; /* root/data */
	char ws_root[160];   /* root/data/workspaces */
	char db[160];        /* root/data/reg.sqlite */
	struct config cfg;   /* the paths above, runtime "" (the engine's default) */
	struct store *store;
	struct docker_engine *engine; /* NULL without routes */
	struct lifecycle *lc;
};

extern struct lc_fixture fx;

/* Makes the directories and the configuration; the test may change fx.cfg
 * before lc_fixture_start. tag names the temporary directory. */
void lc_fixture_init(const char *tag);
/* Opens the registry and, when routes is not NULL, the fake engine serving
 * them and an engine handle on it; then the lifecycle. */
void lc_fixture_start(const struct fake_route *routes, size_t n);
/* lc_fixture_init + lc_fixture_start. */
void lc_fixture_setup(const char *tag, const struct fake_route *routes, size_t n);
/* Frees the lifecycle (its warm pool first), the engine, the fake engine
 * and the registry, and removes the temporary directory. */
void lc_fixture_teardown(void);

/* Rows inserted as given (assert on failure), created at at_ms; a sandbox
 * named as its container, image "img", network on. */
void lc_fixture_workspace(const char *id, const char *mode, const char *path, int64_t at_ms);
void lc_fixture_sandbox(const char *id, const char *workspace_id, const char *status, int64_t at_ms);
/* A running sandbox row id of workspace ws on node (NULL = local), named as
 * its container, image "img", network on, created at 1 ms; every string
 * borrowed, nothing inserted. */
struct sandbox_record lc_fixture_running_row(const char *id, const char *ws, const char *node);
/* A node row whose TLS files do not exist (its engine never opens):
 * runtimes "runc", kvm not known, memory_bytes and cpus as given, last
 * contact and creation at 1000 ms. */
void lc_fixture_node(const char *name, const char *endpoint, enum node_state state, int64_t memory_bytes, int cpus);
/* 1 when the row exists. */
int lc_fixture_sandbox_exists(const char *id);
int lc_fixture_workspace_exists(const char *id);
/* The row's status (static buffer); asserts the row exists. */
const char *lc_fixture_status(const char *id);
/* The registry read-only (1) or writable again (0): a full disk. */
void lc_fixture_read_only(int on);

#endif
