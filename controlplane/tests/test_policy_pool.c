/* test_policy_pool.c: the warm pool's decision per node (issue 28, "Warm
 * pools are per node"; policy/pool.c) over made-up nodes, one row of the
 * decision table each: a node that does not answer keeps its members and
 * gets none; a drained node loses them all; a node still recorded down
 * waits for its reconcile; members that can never be handed out go first;
 * the target is the setting bounded by the node's sandbox limit; rows that
 * never become ready cannot grow without end. */
#include <criterion/criterion.h>

#include "policy/policy.h"

/* A ready, answering node with a limit of 10 and no members. */
static struct policy_pool_node node(const char *name)
{
	return (struct policy_pool_node){.name = name, .state = POLICY_NODE_READY, .answering = 1, .max_sandboxes = 10};
}

static enum policy_pool_action decide(const struct policy_pool_node *n, int size, const char **why)
{
	*why = "unset";
	return policy_pool_decide(n, size, why);
}

Test(policy_pool, a_ready_node_fills_to_the_setting_then_idles)
{
	struct policy_pool_node n = node("n1");
	const char *why;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_CREATE);
	cr_expect_null(why);
	n.ready = n.all = 1;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_CREATE);
	n.ready = n.all = 2;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE);
	cr_expect_str_eq(why, "full");
	n.ready = n.all = 3; /* the setting lowered: the extra ones wait to be claimed */
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE);
}

Test(policy_pool, the_target_is_bounded_by_the_node_sandbox_limit)
{
	struct policy_pool_node n = node("small");
	n.max_sandboxes = 2;
	cr_expect_eq(policy_pool_target(&n, 5), 2, "never more members than it may run sandboxes");
	cr_expect_eq(policy_pool_target(&n, 1), 1);
	cr_expect_eq(policy_pool_target(&n, 0), 0, "no pool");
	n.max_sandboxes = -1;
	cr_expect_eq(policy_pool_target(&n, 5), 5, "unlimited: the setting");
	n.max_sandboxes = 2;
	n.ready = n.all = 2;
	const char *why;
	cr_expect_eq(decide(&n, 5, &why), POLICY_POOL_IDLE);
	cr_expect_str_eq(why, "full");
}

Test(policy_pool, a_node_that_does_not_answer_keeps_its_members_and_gets_none)
{
	struct policy_pool_node n = node("n1");
	n.answering = 0;
	const char *why;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE, "nothing made on an engine that is gone");
	cr_expect_not_null(why);
	n.all = n.unusable = 2;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE, "nor removed: the containers are out of reach");
	n.state = POLICY_NODE_DRAINING;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE, "drained but not answering: removed once it answers");
}

Test(policy_pool, a_drained_node_loses_every_member)
{
	struct policy_pool_node n = node("n1");
	n.state = POLICY_NODE_DRAINING;
	n.ready = n.all = 2;
	const char *why;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_REMOVE_ALL, "drain means no new sandboxes");
	n.ready = n.all = 0;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE, "and none is made");
	cr_expect_str_eq(why, "the node is drained");
}

Test(policy_pool, a_node_recorded_down_waits_for_its_reconcile)
{
	struct policy_pool_node n = node("n1");
	n.state = POLICY_NODE_DOWN; /* answering again, the row not written yet */
	n.all = n.unusable = 1;
	const char *why;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE);
	cr_expect_str_eq(why, "the node is not ready yet");
}

Test(policy_pool, members_that_cannot_be_handed_out_go_before_any_is_made)
{
	struct policy_pool_node n = node("n1");
	n.all = 2;
	n.unusable = 1; /* failed while the node was away */
	n.ready = 1;
	const char *why;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_REMOVE_UNUSABLE);
	n.unusable = 0;
	n.all = 1;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_CREATE, "then it is made again");
}

Test(policy_pool, rows_that_never_become_ready_do_not_grow_without_end)
{
	struct policy_pool_node n = node("n1");
	n.ready = 0;
	n.all = 2 * 2 + 2; /* removing rows, say, that never finish */
	const char *why;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_IDLE);
	cr_expect_not_null(why);
	n.all = 2 * 2 + 1;
	cr_expect_eq(decide(&n, 2, &why), POLICY_POOL_CREATE);
}

Test(policy_pool, no_pool_means_no_members)
{
	struct policy_pool_node n = node("local");
	const char *why;
	cr_expect_eq(decide(&n, 0, &why), POLICY_POOL_IDLE);
	n.ready = n.all = 1;
	cr_expect_eq(decide(&n, 0, &why), POLICY_POOL_REMOVE_ALL);
}
