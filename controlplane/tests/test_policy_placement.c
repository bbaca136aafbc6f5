/* test_policy_placement.c: placement over tables of made-up nodes (issue
 * 28, policy/placement.c): each filter alone, the score, the best of a
 * random sample with an injected random source, the refusals' codes and
 * words, retries on capacity that skip the nodes tried, direct-mode
 * pinning; and node names (policy/nodes.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "policy/policy.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define GIB (1LL << 30)

/* A random source that answers a script of numbers, then zeros. */
struct script {
	const uint32_t *v;
	size_t n, i;
};
static uint32_t scripted(void *ctx)
{
	struct script *s = ctx;
	return s->i < s->n ? s->v[s->i++] : 0;
}

/* A ready node with room: 16 GiB, 2 of 10 sandboxes, runc and runsc, the image. */
static struct policy_node ready(const char *name)
{
	return (struct policy_node){.name = name,
	                            .state = POLICY_NODE_READY,
	                            .runtimes = "io.containerd.runc.v2, runc, runsc",
	                            .kvm = -1,
	                            .has_image = 1,
	                            .memory_bytes = 16 * GIB,
	                            .memory_used = 4 * GIB,
	                            .sandboxes = 2,
	                            .max_sandboxes = 10,
	                            .default_memory_bytes = 8 * GIB,
	                            .cpus = 8};
}

static const struct policy_placement_request one_gib = {.memory_bytes = GIB};

Test(policy_placement, each_filter_refuses_alone_and_says_why)
{
	struct {
		const char *why;
		struct policy_node node;
		struct policy_placement_request req;
		int capacity;
	} rows[] = {
	    {NULL, ready("a"), one_gib, 0},
	    {"draining", ready("a"), one_gib, 0},
	    {"down", ready("a"), one_gib, 0},
	    {"does not offer the runtime", ready("a"), {.runtime = "kata", .memory_bytes = GIB}, 0},
	    {"has no usable KVM", ready("a"), {.need_kvm = 1, .memory_bytes = GIB}, 0},
	    {"does not have the template image", ready("a"), one_gib, 0},
	    {"at its sandbox limit", ready("a"), one_gib, 1},
	    {"has no room under its memory ceiling", ready("a"), {.memory_bytes = 13 * GIB}, 1},
	    /* A ceiling counted as what it is expected to use: 13 GiB asked,
	     * 2 GiB counted, fits beside the 4 GiB used; a ceiling above the
	     * node's whole memory never does. */
	    {NULL, ready("a"), {.memory_bytes = 13 * GIB, .memory_counted = 2 * GIB}, 0},
	    {"has less memory than the sandbox's ceiling",
	     ready("a"),
	     {.memory_bytes = 17 * GIB, .memory_counted = 2 * GIB},
	     1},
	    {"has no room under its memory ceiling",
	     ready("a"),
	     {.memory_bytes = 13 * GIB, .memory_counted = 13 * GIB},
	     1},
	    {"not the node that holds the direct workspace", ready("a"), {.pinned = "b", .memory_bytes = GIB}, 0},
	    /* A CPU limit above the node's CPUs (8), and one that fits. */
	    {"has fewer CPUs than the sandbox's limit", ready("a"), {.nano_cpus = 9000000000LL}, 0},
	    {NULL, ready("a"), {.nano_cpus = 8000000000LL}, 0},
	    /* No ceiling asked: the node's own default (8 GiB here), counted
	     * as it is expected to use (2 GiB), fits beside the 4 GiB used;
	     * counted whole (13 GiB) it would not. */
	    {NULL, ready("a"), {.memory_bytes = 0}, 0},
	    {"has no room under its memory ceiling", ready("a"), {.memory_counted = 13 * GIB}, 1},
	};
	rows[1].node.state = POLICY_NODE_DRAINING;
	rows[2].node.state = POLICY_NODE_DOWN;
	rows[5].node.has_image = 0;
	rows[6].node.sandboxes = 10;
	for (size_t i = 0; i < N(rows); i++) {
		int capacity = -1;
		const char *why = policy_placement_refusal(&rows[i].node, &rows[i].req, NULL, &capacity);
		if (rows[i].why)
			cr_expect(why && !strcmp(why, rows[i].why), "row %zu: '%s'", i, why ? why : "(eligible)");
		else
			cr_expect_null(why, "row %zu: %s", i, why);
		cr_expect_eq(capacity, rows[i].capacity, "row %zu", i);
	}
	/* The runtime is matched as a whole name, and exactly 12 GiB fits. */
	struct policy_node a = ready("a");
	int capacity;
	struct policy_placement_request run = {.runtime = "run", .memory_bytes = 12 * GIB};
	cr_expect_not_null(policy_placement_refusal(&a, &run, NULL, &capacity));
	run.runtime = "runsc";
	cr_expect_null(policy_placement_refusal(&a, &run, NULL, &capacity));
	a.kvm = 1;
	struct policy_placement_request vm = {.need_kvm = 1, .memory_bytes = GIB};
	cr_expect_null(policy_placement_refusal(&a, &vm, NULL, &capacity));
	a.max_sandboxes = -1;
	a.sandboxes = 1000;
	cr_expect_null(policy_placement_refusal(&a, &one_gib, NULL, &capacity), "-1: no sandbox limit");
	a.memory_bytes = 0;
	cr_expect_not_null(policy_placement_refusal(&a, &one_gib, NULL, &capacity), "memory not known: no room");
}

Test(policy_placement, score_prefers_free_memory_and_few_sandboxes)
{
	struct policy_node empty = ready("e"), busy = ready("b"), full_mem = ready("m");
	empty.sandboxes = 0;
	empty.memory_used = 0;
	busy.sandboxes = 8;
	full_mem.memory_used = 14 * GIB;
	int64_t se = policy_placement_score(&empty, &one_gib), sb = policy_placement_score(&busy, &one_gib),
	        sm = policy_placement_score(&full_mem, &one_gib);
	cr_expect_gt(se, sb);
	cr_expect_gt(se, sm);
	/* empty: 15/16 free (937) + 9/10 slots (900) */
	cr_expect_eq(se, 937 + 900);
	struct policy_node unlimited = ready("u");
	unlimited.max_sandboxes = -1;
	unlimited.sandboxes = 3;
	cr_expect_eq(policy_placement_score(&unlimited, &one_gib), 11 * 1000 / 16 + 1000 / 4);
}

Test(policy_placement, best_of_the_sample_wins_and_the_random_source_decides_the_sample)
{
	struct policy_node nodes[] = {ready("a"), ready("b"), ready("c"), ready("d")};
	nodes[0].sandboxes = 9; /* worst */
	nodes[1].sandboxes = 0; /* best */
	nodes[2].sandboxes = 5;
	nodes[3].state = POLICY_NODE_DRAINING; /* never */
	struct cp_error *err = NULL;
	size_t got = 99;

	/* k = 3 of the 3 eligible: the best of all. */
	struct script s0 = {0};
	cr_assert_eq(policy_placement_choose(nodes, N(nodes), &one_gib, NULL, 3, scripted, &s0, &got, &err), 0);
	cr_expect_eq(got, 1);

	/* k = 2: draw 0 of the 3 eligible [a, b, c] takes a, then draw 1 of
	 * the 2 left [b, c] takes c; b, the best, was not sampled. */
	static const uint32_t pick_a_c[] = {0, 1};
	struct script s1 = {pick_a_c, 2, 0};
	cr_assert_eq(policy_placement_choose(nodes, N(nodes), &one_gib, NULL, 2, scripted, &s1, &got, &err), 0);
	cr_expect_eq(got, 2, "c beats a; b was not sampled");
	cr_expect_eq(s1.i, 2, "k draws");

	/* k = 1: whatever is drawn. */
	static const uint32_t pick_first[] = {0};
	struct script s2 = {pick_first, 1, 0};
	cr_assert_eq(policy_placement_choose(nodes, N(nodes), &one_gib, NULL, 1, scripted, &s2, &got, &err), 0);
	cr_expect_eq(got, 0);

	/* One eligible node: no draw at all decides anything. */
	struct policy_node only[] = {ready("x")};
	struct script s3 = {0};
	cr_assert_eq(policy_placement_choose(only, 1, &one_gib, NULL, 3, scripted, &s3, &got, &err), 0);
	cr_expect_eq(got, 0);
}

Test(policy_placement, no_node_is_limit_for_capacity_and_unavailable_otherwise)
{
	struct policy_node full[] = {ready("a"), ready("b")};
	full[0].sandboxes = 10;
	full[1].memory_used = 16 * GIB;
	struct cp_error *err = NULL;
	size_t got = 99;
	struct script s = {0};
	cr_assert_eq(policy_placement_choose(full, N(full), &one_gib, NULL, 2, scripted, &s, &got, &err), -1);
	cr_expect_eq(got, 99, "nothing chosen");
	cr_expect_eq(err->code, CP_ERR_LIMIT);
	cr_expect(strstr(err->message, "a: at its sandbox limit") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "b: has no room under its memory ceiling") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "add a node") != NULL, "%s", err->message);
	cp_error_freep(&err);

	full[1].state = POLICY_NODE_DOWN;
	cr_assert_eq(policy_placement_choose(full, N(full), &one_gib, NULL, 2, scripted, &s, &got, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE, "one node is down, not full");
	cr_expect(strstr(err->message, "b: down") != NULL, "%s", err->message);
	cp_error_freep(&err);

	cr_assert_eq(policy_placement_choose(NULL, 0, &one_gib, NULL, 2, scripted, &s, &got, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cp_error_freep(&err);
}

Test(policy_placement, a_capacity_failure_is_tried_on_another_node_and_tries_are_bounded)
{
	struct policy_node nodes[] = {ready("a"), ready("b"), ready("c"), ready("d")};
	nodes[0].sandboxes = 0; /* best, then b, c, d */
	nodes[1].sandboxes = 1;
	nodes[2].sandboxes = 2;
	nodes[3].sandboxes = 3;
	struct policy_placement_tries tries = {0};
	struct cp_error *err = NULL;
	size_t got = 99;
	struct script s = {0};
	const char *order[] = {"a", "b", "c"};
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(policy_placement_choose(nodes, N(nodes), &one_gib, &tries, 4, scripted, &s, &got, &err),
		             0);
		cr_expect_str_eq(nodes[got].name, order[i], "try %zu", i);
		int again = policy_placement_retry(&tries, nodes[got].name, CP_ERR_LIMIT, CP_DETAIL_NONE);
		cr_expect_eq(again, i < 2, "try %zu: at most %d nodes", i, POLICY_PLACEMENT_MAX_TRIES);
	}
	cr_expect_eq(tries.n, 3);

	/* Only capacity, a full disk or an unreachable node moves a create. */
	struct policy_placement_tries t2 = {0};
	cr_expect_eq(policy_placement_retry(&t2, "a", CP_ERR_INVALID_ARGUMENT, CP_DETAIL_NONE), 0);
	cr_expect_eq(policy_placement_retry(&t2, "a", CP_ERR_INTERNAL, CP_DETAIL_NONE), 0);
	cr_expect_eq(t2.n, 0);
	cr_expect_eq(policy_placement_retry(&t2, "a", CP_ERR_UNAVAILABLE, CP_DETAIL_ENGINE_UNREACHABLE), 1);
	cr_expect_eq(policy_placement_retry(&t2, "b", CP_ERR_INTERNAL, CP_DETAIL_NO_SPACE), 1);
	cr_expect_eq(t2.n, 2);
	/* Every eligible node tried: the refusal says so. */
	struct policy_node two[] = {ready("a"), ready("b")};
	cr_assert_eq(policy_placement_choose(two, 2, &one_gib, &t2, 2, scripted, &s, &got, &err), -1);
	cr_expect(strstr(err->message, "a: tried already") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(policy_placement, a_direct_workspace_pins_its_node)
{
	struct policy_node nodes[] = {ready("a"), ready("b")};
	nodes[0].sandboxes = 0; /* a would win unpinned */
	struct policy_placement_request pin = {.memory_bytes = GIB, .pinned = "b"};
	struct cp_error *err = NULL;
	size_t got = 99;
	struct script s = {0};
	cr_assert_eq(policy_placement_choose(nodes, N(nodes), &pin, NULL, 2, scripted, &s, &got, &err), 0);
	cr_expect_eq(got, 1);

	nodes[1].state = POLICY_NODE_DOWN;
	cr_assert_eq(policy_placement_choose(nodes, N(nodes), &pin, NULL, 2, scripted, &s, &got, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE, "never elsewhere");
	cr_expect(strstr(err->message, "b: down") != NULL, "%s", err->message);
	cr_expect(strstr(err->message, "a:") == NULL, "other nodes are not candidates: %s", err->message);
	cp_error_freep(&err);

	pin.pinned = "gone";
	cr_assert_eq(policy_placement_choose(nodes, N(nodes), &pin, NULL, 2, scripted, &s, &got, &err), -1);
	cr_expect_eq(err->code, CP_ERR_UNAVAILABLE);
	cr_expect(strstr(err->message, "'gone', which is not registered") != NULL, "%s", err->message);
	cp_error_freep(&err);
}

Test(policy_node_name, names_a_person_types)
{
	const char *ok[] = {"a", "n1", "gpu-2", "0", "abcdefghijabcdefghijabcdefghij12"};
	const char *bad[] = {
	    "", "local", "-a", "a-", "A", "a_b", "a.b", "a/b", "..", "a b", "abcdefghijabcdefghijabcdefghij123"};
	for (size_t i = 0; i < N(ok); i++) {
		struct cp_error *err = NULL;
		cr_expect_eq(policy_node_name_check(ok[i], &err), 0, "%s: %s", ok[i], err ? err->message : "");
		cp_error_freep(&err);
	}
	for (size_t i = 0; i < N(bad); i++) {
		struct cp_error *err = NULL;
		cr_expect_eq(policy_node_name_check(bad[i], &err), -1, "'%s' accepted", bad[i]);
		if (err)
			cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cp_error_freep(&err);
	}
	struct cp_error *err = NULL;
	cr_expect_eq(policy_node_name_check(NULL, &err), -1);
	cp_error_freep(&err);
}

Test(policy_placement, a_nodes_limit_follows_its_memory_as_this_machines_does)
{
	cr_expect_eq(policy_placement_node_limit(0), -1, "not known");
	cr_expect_eq(policy_placement_node_limit(-5), -1);
	cr_expect_eq(policy_placement_node_limit(1LL << 30), POLICY_ACTIVE_MIN);
	cr_expect_eq(policy_placement_node_limit(24LL << 30), 12);
	cr_expect_eq(policy_placement_node_limit(1LL << 40), POLICY_ACTIVE_MAX);
}
