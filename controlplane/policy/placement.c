/* placement.c: which node a new sandbox goes to (issue 28), as E2B's
 * orchestrator does it (packages/api/internal/orchestrator/placement/ in
 * e2b-dev/infra): filter the nodes that can take it, sample two or three of
 * them at random, take the best scored, and on a capacity failure try again
 * without the nodes tried. Pure: the nodes' facts and the random source come
 * in as parameters; no engine, no registry, no clock. sandbox_create
 * gathers the facts (lifecycle/create_place.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"

/* Whether the comma-separated list (", " or "," between names) has name. */
static int list_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; p && *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		size_t len = strcspn(p, ", ");
		if (len == n && len && !strncmp(p, name, n))
			return 1;
		p += len;
	}
	return 0;
}

static int tried(const struct policy_placement_tries *t, const char *name)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (!strcmp(t->names[i], name))
			return 1;
	return 0;
}

int64_t policy_placement_expected_use(int64_t ceiling)
{
	return ceiling < POLICY_ACTIVE_PER_BYTES ? ceiling : POLICY_ACTIVE_PER_BYTES;
}

/* What the request counts against node's memory. */
static int64_t counted(const struct policy_node *node, const struct policy_placement_request *req)
{
	if (req->memory_counted > 0)
		return req->memory_counted;
	return req->memory_bytes > 0 ? req->memory_bytes : policy_placement_expected_use(node->default_memory_bytes);
}

const char *policy_placement_refusal(const struct policy_node *node, const struct policy_placement_request *req,
                                     const struct policy_placement_tries *tries, int *ret_capacity)
{
	*ret_capacity = 0;
	if (req->pinned && strcmp(req->pinned, node->name) != 0)
		return "not the node that holds the direct workspace";
	if (tried(tries, node->name))
		return "tried already";
	if (node->state != POLICY_NODE_READY)
		return node->state == POLICY_NODE_DRAINING ? "draining" : "down";
	if (req->runtime && *req->runtime && !list_has(node->runtimes, req->runtime))
		return "does not offer the runtime";
	if (req->need_kvm && node->kvm != 1)
		return "has no usable KVM";
	if (req->nano_cpus > 0 && node->cpus > 0 && req->nano_cpus > node->cpus * 1000000000LL)
		return "has fewer CPUs than the sandbox's limit";
	if (!node->has_image)
		return "does not have the template image";
	*ret_capacity = 1;
	if (node->max_sandboxes >= 0 && node->sandboxes >= node->max_sandboxes)
		return "at its sandbox limit";
	if (node->memory_bytes <= 0 || req->memory_bytes > node->memory_bytes)
		return "has less memory than the sandbox's ceiling";
	if (node->memory_used + counted(node, req) > node->memory_bytes)
		return "has no room under its memory ceiling";
	*ret_capacity = 0;
	return NULL;
}

int64_t policy_placement_score(const struct policy_node *node, const struct policy_placement_request *req)
{
	int64_t free_after = node->memory_bytes - node->memory_used - counted(node, req);
	int64_t mem = node->memory_bytes > 0 ? free_after * 1000 / node->memory_bytes : 0;
	int64_t slots = node->max_sandboxes > 0
	                    ? (int64_t)(node->max_sandboxes - node->sandboxes - 1) * 1000 / node->max_sandboxes
	                    : 1000 / (1 + (int64_t)node->sandboxes);
	return mem + slots;
}

/* The refusal of every node as "name: why; ..." into buf, and whether each
 * failed only on capacity. */
static int refusals(const struct policy_node *nodes, size_t n, const struct policy_placement_request *req,
                    const struct policy_placement_tries *tries, char *buf, size_t size)
{
	int all_capacity = n > 0;
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int capacity = 0;
		const char *why = policy_placement_refusal(&nodes[i], req, tries, &capacity);
		if (req->pinned && strcmp(req->pinned, nodes[i].name) != 0)
			continue; /* not a candidate at all: not worth a word */
		all_capacity &= capacity;
		int w = snprintf(buf + used, used < size ? size - used : 0, "%s%s: %s", used ? "; " : "", nodes[i].name,
		                 why ? why : "eligible");
		if (w > 0)
			used += (size_t)w;
	}
	if (used >= size && size > 4)
		memcpy(buf + size - 4, "...", 4);
	return all_capacity;
}

int policy_placement_choose(const struct policy_node *nodes, size_t n, const struct policy_placement_request *req,
                            const struct policy_placement_tries *tries, size_t k, policy_random_fn rnd, void *rnd_ctx,
                            size_t *ret_index, struct cp_error **err)
{
	size_t eligible[POLICY_PLACEMENT_MAX_NODES], m = 0;
	int pinned_known = !req->pinned;
	for (size_t i = 0; i < n && i < POLICY_PLACEMENT_MAX_NODES; i++) {
		int capacity = 0;
		pinned_known |= req->pinned && !strcmp(req->pinned, nodes[i].name);
		if (!policy_placement_refusal(&nodes[i], req, tries, &capacity))
			eligible[m++] = i;
	}
	if (!pinned_known)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "place the sandbox: its direct workspace is on node '%s', which is not registered; "
		                    "add it again ('chat2sbx node add') or approve the path on another node",
		                    req->pinned);
	if (!m) {
		char why[1024];
		int capacity = refusals(nodes, n < POLICY_PLACEMENT_MAX_NODES ? n : POLICY_PLACEMENT_MAX_NODES, req,
		                        tries, why, sizeof(why));
		return cp_error_set(err, capacity ? CP_ERR_LIMIT : CP_ERR_UNAVAILABLE,
		                    "place the sandbox: no node can take it (%s)%s", n ? why : "no node",
		                    capacity ? "; destroy a sandbox or add a node, then retry" : "");
	}
	if (k < 1)
		k = 1;
	/* Partial Fisher-Yates: the first min(k, m) slots become a uniform
	 * sample without replacement; the best scored of them wins, the
	 * earlier sampled on a tie. */
	size_t take = k < m ? k : m, best = SIZE_MAX;
	int64_t best_score = INT64_MIN;
	for (size_t i = 0; i < take; i++) {
		size_t j = i + (m - i > 1 ? (size_t)(rnd(rnd_ctx) % (uint32_t)(m - i)) : 0);
		size_t t = eligible[i];
		eligible[i] = eligible[j];
		eligible[j] = t;
		int64_t s = policy_placement_score(&nodes[eligible[i]], req);
		if (s > best_score) {
			best_score = s;
			best = eligible[i];
		}
	}
	*ret_index = best;
	return 0;
}

int policy_placement_retry(struct policy_placement_tries *tries, const char *failed_node, enum cp_error_code code,
                           enum cp_error_detail detail)
{
	int capacity = code == CP_ERR_LIMIT || detail == CP_DETAIL_NO_SPACE || detail == CP_DETAIL_ENGINE_UNREACHABLE;
	if (!capacity || !failed_node)
		return 0;
	if (!tried(tries, failed_node) && tries->n < POLICY_PLACEMENT_MAX_TRIES)
		tries->names[tries->n++] = failed_node;
	return tries->n < POLICY_PLACEMENT_MAX_TRIES;
}

int policy_placement_node_limit(int64_t memory_bytes)
{
	if (memory_bytes <= 0)
		return -1;
	int64_t n = memory_bytes / POLICY_ACTIVE_PER_BYTES;
	return (int)(n < POLICY_ACTIVE_MIN ? POLICY_ACTIVE_MIN : n > POLICY_ACTIVE_MAX ? POLICY_ACTIVE_MAX : n);
}
