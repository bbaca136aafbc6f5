/* node_health.c: when a node counts as not answering, and what its
 * registry state becomes (issue 28, "Health and failure"). The health loop
 * (node/health.c) asks each node's engine GET /_ping every interval and
 * feeds each answer here; one missed answer is noise (a busy engine, a
 * dropped packet), POLICY_NODE_DOWN_AFTER in a row is a node that stopped
 * answering. Only ready and down move: a node the operator drained stays
 * draining through an outage (placement skips it either way), so an
 * outage never undoes a drain. Pure. */
#include "policy.h"

enum policy_node_health_event policy_node_health_step(struct policy_node_health *h, int answered, int64_t now_ms)
{
	if (answered) {
		int was_down = !h->answering;
		h->answering = 1;
		h->failures = 0;
		h->down_since_ms = 0;
		h->last_contact_ms = now_ms;
		return was_down ? POLICY_NODE_HEALTH_BACK : POLICY_NODE_HEALTH_SAME;
	}
	if (h->failures < POLICY_NODE_DOWN_AFTER)
		h->failures++;
	if (h->failures == 1)
		h->first_miss_ms = now_ms;
	if (!h->answering || h->failures < POLICY_NODE_DOWN_AFTER)
		return POLICY_NODE_HEALTH_SAME;
	h->answering = 0;
	/* Down since the first of the misses in a row, or since the last
	 * answer when there was one after it: the earliest moment it may have
	 * stopped. */
	h->down_since_ms = h->first_miss_ms;
	return POLICY_NODE_HEALTH_DOWN;
}

enum policy_node_state policy_node_state_after(enum policy_node_state row, enum policy_node_health_event event)
{
	if (event == POLICY_NODE_HEALTH_DOWN && row == POLICY_NODE_READY)
		return POLICY_NODE_DOWN;
	if (event == POLICY_NODE_HEALTH_BACK && row == POLICY_NODE_DOWN)
		return POLICY_NODE_READY;
	return row;
}
