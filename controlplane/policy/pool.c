/* pool.c: what one node's warm pool does next (issue 28, "Warm pools are
 * per node"; issue 8 for the pool itself). Pure: the node's state, health
 * and member counts come in as parameters; lifecycle/pool_node.c gathers
 * them and carries the decision out. No engine, no registry, no clock. */
#include "policy.h"

static void say(const char **ret_why, const char *why)
{
	if (ret_why)
		*ret_why = why;
}

int policy_pool_target(const struct policy_pool_node *node, int size)
{
	if (size <= 0)
		return 0;
	if (node->max_sandboxes >= 0 && node->max_sandboxes < size)
		return node->max_sandboxes;
	return size;
}

enum policy_pool_action policy_pool_decide(const struct policy_pool_node *node, int size, const char **ret_why)
{
	say(ret_why, NULL);
	if (!node->answering) {
		say(ret_why, "the node is not answering; its members are kept and not handed out");
		return POLICY_POOL_IDLE;
	}
	if (node->state == POLICY_NODE_DRAINING) {
		if (node->all > 0)
			return POLICY_POOL_REMOVE_ALL;
		say(ret_why, "the node is drained");
		return POLICY_POOL_IDLE;
	}
	if (node->state != POLICY_NODE_READY) {
		say(ret_why, "the node is not ready yet");
		return POLICY_POOL_IDLE;
	}
	if (node->unusable > 0)
		return POLICY_POOL_REMOVE_UNUSABLE;
	int target = policy_pool_target(node, size);
	if (target <= 0)
		return node->all > 0 ? POLICY_POOL_REMOVE_ALL : POLICY_POOL_IDLE;
	if (node->all >= 2 * target + 2) {
		say(ret_why, "more members than ever needed are not ready; none is made until they are claimed or "
		             "removed");
		return POLICY_POOL_IDLE;
	}
	if (node->ready < target)
		return POLICY_POOL_CREATE;
	say(ret_why, "full");
	return POLICY_POOL_IDLE;
}
