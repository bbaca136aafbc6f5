/* test_lifecycle_place.c: where sandbox_create puts a new sandbox
 * (lifecycle/create_place.c, issue 28). With no node row the answer is
 * 'local' and no engine is asked (the fixture has none); a node row whose
 * engine cannot be opened is left out (down for that decision) and a
 * draining one is never chosen, so 'local' wins; a pin to such a node is
 * refused with the reasons; each node's sandbox count is its own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "lifecycle/pool_internal.h"
#include "lifecycle_fixture.h"

static void setup(void)
{
	log_set_level(LOG_LEVEL_ERROR);
	lc_fixture_setup("place", NULL, 0);
}

TestSuite(lifecycle_place, .init = setup, .fini = lc_fixture_teardown);

static const struct lifecycle_limits lim = {.memory_bytes = 512LL << 20, .pids_limit = 100, .network = 1};

Test(lifecycle_place, no_node_row_is_local_without_a_choice)
{
	char *node = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_place(fx.lc, &lim, NULL, NULL, &node, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(node, "local");
	free(node);
	cr_expect(lifecycle_node_is_local(NULL) && lifecycle_node_is_local("") && lifecycle_node_is_local("local"));
	cr_expect(!lifecycle_node_is_local("n1"));
}

Test(lifecycle_place, a_node_that_cannot_be_reached_or_drains_is_passed_over)
{
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 64LL << 30, 8);
	lc_fixture_node("n2", "tcp://127.0.0.2:9", NODE_DRAINING, 64LL << 30, 8);
	for (int i = 0; i < 8; i++) { /* random sampling: every try lands on local */
		char *node = NULL;
		struct cp_error *err = NULL;
		cr_assert_eq(lifecycle_place(fx.lc, &lim, NULL, NULL, &node, &err), 1, "%s", err ? err->message : "");
		cr_expect_str_eq(node, "local");
		free(node);
	}
}

Test(lifecycle_place, a_pin_to_a_node_that_cannot_take_it_is_refused_with_why)
{
	lc_fixture_node("n2", "tcp://127.0.0.2:9", NODE_DRAINING, 64LL << 30, 8);
	char *node = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_place(fx.lc, &lim, "n2", NULL, &node, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, "n2: draining") != NULL, "%s", err->message);
	cp_error_freep(&err);
	cr_expect_null(node);
	/* A node of no row. */
	cr_assert_eq(lifecycle_place(fx.lc, &lim, "gone", NULL, &node, &err), -1);
	cr_expect(strstr(err->message, "'gone', which is not registered") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(lifecycle_place, local_tried_already_leaves_no_node)
{
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 64LL << 30, 8);
	struct policy_placement_tries tries = {.names = {"local"}, .n = 1};
	char *node = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_place(fx.lc, &lim, NULL, &tries, &node, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, "local: tried already") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(lifecycle_place, an_engine_of_no_row_is_not_found)
{
	struct docker_engine *engine = NULL;
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_node_engine(fx.lc, "local", &engine, &err), 0);
	cr_expect_eq(engine, fx.engine);
	cr_assert_eq(lifecycle_node_engine(fx.lc, "n9", &engine, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
}

/* A row on node (NULL: local) for workspace ws, inserted through the
 * limit check; returns its result, the error's code into *ret_code. */
static int insert_on(const char *id, const char *ws, const char *node, int pooled, enum cp_error_code *ret_code,
                     char **ret_message)
{
	char path[64];
	snprintf(path, sizeof(path), "/nonexistent/workspaces/%s", ws);
	lc_fixture_workspace(ws, "managed", path, 1000);
	struct sandbox_record s = lc_fixture_running_row(id, ws, node);
	s.pooled = pooled;
	struct cp_error *err = NULL;
	int r = lifecycle_sandbox_insert_limited(fx.lc, &s, &err);
	if (err) {
		*ret_code = err->code;
		*ret_message = strdup(err->message);
	}
	cp_error_free(err);
	return r;
}

Test(lifecycle_place, a_nodes_sandbox_limit_holds_under_the_create_lock)
{
	/* 4 GiB: a limit of 2 (one per 2 GiB, policy_placement_node_limit). */
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 4LL << 30, 2);
	enum cp_error_code code = CP_ERR_INTERNAL;
	char *msg = NULL;
	cr_assert_eq(insert_on("s1", "w1", "n1", 0, &code, &msg), 0, "%s", msg ? msg : "");
	cr_assert_eq(insert_on("s2", "w2", "n1", 0, &code, &msg), 0, "%s", msg ? msg : "");
	/* The third is refused, naming the node and its count. */
	cr_assert_eq(insert_on("s3", "w3", "n1", 0, &code, &msg), -1);
	cr_expect_eq(code, CP_ERR_LIMIT);
	cr_expect(strstr(msg, "node 'n1' has no room: 2 of its 2") != NULL, "%s", msg);
	free(msg);
	msg = NULL;
	cr_expect(!lc_fixture_sandbox_exists("s3"));
	/* A warm-pool member is not counted against it, and local is its own. */
	cr_expect_eq(insert_on("p1", "w4", "n1", 1, &code, &msg), 0, "%s", msg ? msg : "");
	cr_expect_eq(insert_on("l1", "w5", NULL, 0, &code, &msg), 0, "%s", msg ? msg : "");
	/* A node removed meanwhile is not found. */
	cr_assert_eq(insert_on("s4", "w6", "gone", 0, &code, &msg), -1);
	cr_expect_eq(code, CP_ERR_NOT_FOUND, "%s", msg);
	free(msg);
}

/* A sandbox's limits on another node are that node's (issue 28): what was
 * not asked becomes its default, what was asked is held to what it has. */
Test(lifecycle_place, limits_not_asked_are_the_nodes_and_asked_ones_are_held_to_it)
{
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 4LL << 30, 2);
	lc_fixture_node("big", "tcp://127.0.0.2:9", NODE_READY, 128LL << 30, 64);
	struct lifecycle_limits l = {.memory_bytes = 8LL << 30, .pids_limit = 4096, .disk_bytes = 1LL << 30};
	struct cp_error *err = NULL;
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "n1", &l, &err), 0, "%s", err ? err->message : "");
	cr_expect_eq(l.memory_bytes, 2LL << 30, "half the node's 4 GiB, not this machine's default");
	cr_expect_eq(l.pids_limit, 4096);
	cr_expect_eq(l.disk_bytes, 0, "another node's storage is not asked for a size");
	l = (struct lifecycle_limits){.memory_bytes = 8LL << 30, .pids_limit = 4096};
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "big", &l, &err), 0);
	cr_expect_eq(l.pids_limit, 24576 / 32, "32 sandboxes share the node's assumed budget");
	/* 'local' is left as lifecycle_create_limits made it. */
	l = (struct lifecycle_limits){.memory_bytes = 8LL << 30, .pids_limit = 4096, .disk_bytes = 1LL << 30};
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "local", &l, &err), 0);
	cr_expect(l.memory_bytes == 8LL << 30 && l.pids_limit == 4096 && l.disk_bytes == 1LL << 30);

	/* Asked beyond the node: refused naming it and what it has. */
	l = (struct lifecycle_limits){.memory_bytes = 6LL << 30, .memory_asked = 1, .pids_limit = 100};
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "n1", &l, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cr_expect(strstr(err->message, "more than node 'n1' has (4096 MiB)") != NULL, "%s", err->message);
	cp_error_freep(&err);
	l = (struct lifecycle_limits){.nano_cpus = 3000000000LL, .pids_limit = 100};
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "n1", &l, &err), -1);
	cr_expect(strstr(err->message, "more than the 2 CPU(s) of node 'n1'") != NULL, "%s", err->message);
	cp_error_freep(&err);
	l = (struct lifecycle_limits){.pids_limit = 5000, .pids_asked = 1};
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "big", &l, &err), -1);
	cr_expect(strstr(err->message, "on node 'big'") && strstr(err->message, "16-768"), "%s", err->message);
	cp_error_freep(&err);
	/* A disk size is this machine's storage's: never dropped on a node. */
	l = (struct lifecycle_limits){.disk_bytes = 1LL << 30, .disk_asked = 1, .pids_limit = 100};
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "n1", &l, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cr_expect(strstr(err->message, "disk cannot be given on node 'n1'") != NULL, "%s", err->message);
	cp_error_freep(&err);
	/* Asked within: kept. */
	l = (struct lifecycle_limits){.memory_bytes = 3LL << 30, .memory_asked = 1, .pids_limit = 64, .pids_asked = 1};
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "n1", &l, &err), 0);
	cr_expect(l.memory_bytes == 3LL << 30 && l.pids_limit == 64);
	/* A node removed meanwhile. */
	cr_assert_eq(lifecycle_limits_on_node(fx.lc, "gone", &l, &err), -1);
	cr_expect_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_freep(&err);
	/* Its sandbox limit is the same rule's. */
	int max = 0;
	cr_assert_eq(lifecycle_node_sandbox_limit(fx.lc, "big", &max, &err), 0);
	cr_expect_eq(max, 32);
}

/* A reused sandbox on another node is not said to differ for having that
 * node's default ceiling; one asked otherwise still is. */
Test(lifecycle_place, a_reused_sandbox_on_a_node_is_compared_with_that_nodes_defaults)
{
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 4LL << 30, 2);
	struct sandbox_record s = lc_fixture_running_row("s1", "w1", "n1");
	s.memory_bytes = 2LL << 30;
	s.network = 1;
	struct lifecycle_limits want = {.memory_bytes = 8LL << 30, .pids_limit = 2000, .network = 1};
	char *note = lifecycle_limits_differ_on_node(fx.lc, &s, &want);
	cr_expect_null(note, "%s", note ? note : "");
	free(note);
	want.memory_bytes = 1LL << 30;
	want.memory_asked = 1;
	note = lifecycle_limits_differ_on_node(fx.lc, &s, &want);
	cr_expect(note && strstr(note, "memory"), "%s", note ? note : "(none)");
	free(note);
}

/* Node 'local' drained (migration 0016): no new sandbox is placed on it,
 * even with no other node (then nothing can take it, saying why), and a
 * resume places there again; 'down' is not a state it can be given. */
Test(lifecycle_place, a_drained_local_takes_no_new_sandbox)
{
	struct cp_error *err = NULL;
	enum node_state before = NODE_DOWN, now = NODE_DOWN;
	cr_assert_eq(store_node_local_state(fx.store, &now, &err), 0);
	cr_expect_eq(now, NODE_READY, "no row: ready");
	cr_assert_eq(store_node_set_state(fx.store, "local", NODE_DRAINING, &before, &err), 0, "%s",
	             err ? err->message : "");
	cr_expect_eq(before, NODE_READY);
	cr_assert_eq(store_node_local_state(fx.store, &now, &err), 0);
	cr_expect_eq(now, NODE_DRAINING);
	char *node = NULL;
	cr_assert_eq(lifecycle_place(fx.lc, &lim, NULL, NULL, &node, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, "local: draining") != NULL, "%s", err->message);
	cp_error_freep(&err);
	cr_expect_null(node);
	cr_assert_eq(store_node_set_state(fx.store, "local", NODE_DOWN, NULL, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_freep(&err);
	cr_assert_eq(store_node_set_state(fx.store, "local", NODE_READY, &before, &err), 0);
	cr_expect_eq(before, NODE_DRAINING);
	cr_assert_eq(lifecycle_place(fx.lc, &lim, NULL, NULL, &node, &err), 0, "%s", err ? err->message : "");
	cr_expect_str_eq(node, "local");
	free(node);
}

/* A warm member on another node is made with that node's default memory
 * ceiling, and is usable (and claimed) with it, not with this machine's. */
Test(lifecycle_place, a_members_default_is_its_nodes)
{
	lc_fixture_node("n1", "tcp://127.0.0.1:9", NODE_READY, 4LL << 30, 2);
	cr_expect_eq(lifecycle_pool_default_memory(fx.lc, "n1"), 2LL << 30, "half of the node's 4 GiB");
	cr_expect_eq(lifecycle_pool_default_memory(fx.lc, "local"), fx.lc->limits.default_memory_bytes);
	cr_expect_eq(lifecycle_pool_default_memory(fx.lc, "gone"), -1);
	fx.cfg.template_image = "img"; /* the row's (borrowed by lc) */
	struct sandbox_record s = lc_fixture_running_row("p1", "w1", "n1");
	s.runtime = (char *)lifecycle_runtime(fx.lc, NULL);
	s.memory_bytes = 2LL << 30;
	cr_expect(lifecycle_pool_member_usable(fx.lc, &s), "made with n1's default");
	s.memory_bytes = fx.lc->limits.default_memory_bytes;
	cr_expect(!lifecycle_pool_member_usable(fx.lc, &s), "this machine's default is not n1's");
}
