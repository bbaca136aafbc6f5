/* create_place.c: the node a new sandbox goes to (issue 28). Gathers what
 * placement needs of node 'local' and of every node row (state from the
 * row, memory from its labels, live sandboxes and the memory they were
 * given from the registry, the template image asked of its engine) and
 * lets policy_placement_choose decide, with getrandom as the random
 * source. With no node row (and 'local' not drained) it answers 'local'
 * without asking any engine, so a single machine's create is what it was.
 * Creates nothing. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

/* Two candidates sampled, the better one taken (E2B's best of K). */
#define PLACE_SAMPLE 2
/* How long a remote node may take to answer _ping before it is left out of
 * one placement (ms). */
#define PLACE_PING_MS 1500L

static uint32_t random_u32(void *ctx)
{
	(void)ctx;
	uint32_t v = 0;
	/* getrandom of 4 bytes does not fail once the pool is ready; the
	 * fallback only skews a choice, never a security decision. */
	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
		v = (uint32_t)rand();
	return v;
}

/* Live user sandboxes and the memory live ones were given (pool members'
 * too: they hold it), added to the node among nodes[0..n) each is on. */
static int count_live(struct lifecycle *lc, struct policy_node *nodes, size_t n, struct cp_error **err)
{
	struct sandbox_record *rows = NULL;
	size_t n_rows = 0;
	if (store_sandbox_list(lc->store, STORE_SANDBOX_LIST_POOLED, &rows, &n_rows, err) < 0)
		return -1;
	for (size_t i = 0; i < n_rows; i++) {
		if (store_sandbox_is_live(&rows[i]))
			for (size_t j = 0; j < n; j++)
				if (lifecycle_node_same(nodes[j].name, rows[i].node)) {
					nodes[j].sandboxes += !rows[i].pooled; /* the limit counts user sandboxes */
					nodes[j].memory_used += policy_placement_expected_use(
					    rows[i].memory_bytes > 0 ? rows[i].memory_bytes
					                             : nodes[j].default_memory_bytes);
					break;
				}
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
	return 0;
}

/* Whether a ready remote node holds the template image; a node whose engine
 * does not answer counts as down for this decision (logged). */
static void probe_remote(struct lifecycle *lc, struct policy_node *p)
{
	if (p->state != POLICY_NODE_READY)
		return;
	_cleanup_error_ struct cp_error *e = NULL;
	_cleanup_free_ char *image_id = NULL;
	struct docker_engine *engine = NULL;
	/* A short _ping first: with no health loop yet, a node that stopped
	 * answering costs each create at most PLACE_PING_MS, not a whole
	 * inspect's timeout. */
	if (lifecycle_node_engine(lc, p->name, &engine, &e) == 0 &&
	    docker_engine_ping(engine, PLACE_PING_MS, &e) == 0 &&
	    docker_image_inspect(engine, lifecycle_sandbox_image(lc), &image_id, &e) == 0) {
		p->has_image = 1;
		return;
	}
	if (e->code == CP_ERR_NOT_FOUND && engine) {
		p->has_image = 0;
		return;
	}
	log_warn("lifecycle", "placement: node %s is left out: %s", p->name, e->message);
	p->state = POLICY_NODE_DOWN;
}

struct probe {
	struct lifecycle *lc;
	struct policy_node *node;
	pthread_t thread;
	int started;
};

static void *probe_run(void *arg)
{
	struct probe *pr = arg;
	probe_remote(pr->lc, pr->node);
	return NULL;
}

/* probe_remote for nodes[1..n) (those of pinned only, when set), all at
 * once: a create waits for the slowest node's answer, not for their sum
 * (a node that answers its ping and then stalls costs its inspect's
 * timeout once). A thread that cannot start probes in this one. */
static void probe_remotes(struct lifecycle *lc, struct policy_node *nodes, size_t n, const char *pinned)
{
	struct probe *pr = xcalloc(n, sizeof(*pr));
	size_t asked = 0;
	for (size_t i = 1; i < n; i++)
		asked += nodes[i].state == POLICY_NODE_READY && (!pinned || !strcmp(pinned, nodes[i].name));
	for (size_t i = 1; i < n; i++) {
		if (nodes[i].state != POLICY_NODE_READY || (pinned && strcmp(pinned, nodes[i].name)))
			continue;
		pr[i] = (struct probe){.lc = lc, .node = &nodes[i]};
		pr[i].started = asked > 1 && pthread_create(&pr[i].thread, NULL, probe_run, &pr[i]) == 0;
		if (!pr[i].started)
			probe_remote(lc, &nodes[i]);
	}
	for (size_t i = 1; i < n; i++)
		if (pr[i].started)
			pthread_join(pr[i].thread, NULL);
	free(pr);
}

int lifecycle_place(struct lifecycle *lc, const struct lifecycle_limits *lim, const char *pinned,
                    const struct policy_placement_tries *tries, char **ret_node, struct cp_error **err)
{
	struct node_record *rows = NULL;
	size_t n_rows = 0;
	enum node_state local_state = NODE_READY; /* `node drain local` (migration 0016) */
	if (store_node_local_state(lc->store, &local_state, err) < 0 ||
	    store_node_list(lc->store, &rows, &n_rows, err) < 0)
		return cp_error_prefix(err, "place the sandbox");
	if (n_rows == 0 && lifecycle_node_is_local(pinned) && local_state == NODE_READY) {
		*ret_node = xstrdup(STORE_NODE_LOCAL); /* one machine: nothing to ask */
		return 0;
	}
	size_t n = n_rows + 1 < POLICY_PLACEMENT_MAX_NODES ? n_rows + 1 : POLICY_PLACEMENT_MAX_NODES;
	struct policy_node *nodes = xcalloc(n, sizeof(*nodes));
	/* 'local': its runtime was checked by lifecycle_create_limits. */
	nodes[0] = (struct policy_node){.name = STORE_NODE_LOCAL,
	                                .state = node_state_to_policy(local_state),
	                                .runtimes = lim->runtime ? lim->runtime : "",
	                                .kvm = -1,
	                                .has_image = 1,
	                                .memory_bytes = lc->limits.max_memory_bytes,
	                                .default_memory_bytes = lc->limits.default_memory_bytes,
	                                .cpus = sysconf(_SC_NPROCESSORS_ONLN),
	                                .max_sandboxes = lc->limits.max_active > 0 ? lc->limits.max_active : -1};
	for (size_t i = 1; i < n; i++) {
		const struct node_record *r = &rows[i - 1];
		struct policy_sandbox_limits nl;
		lifecycle_node_row_limits(lc, r, &nl);
		nodes[i] = (struct policy_node){.name = r->name,
		                                .state = node_state_to_policy(r->state),
		                                .runtimes = r->labels.runtimes ? r->labels.runtimes : "",
		                                .kvm = r->labels.kvm,
		                                .memory_bytes = r->labels.memory_bytes,
		                                .default_memory_bytes = nl.default_memory_bytes,
		                                .cpus = r->labels.cpus,
		                                .max_sandboxes = r->labels.memory_bytes > 0 ? nl.max_active : -1};
	}
	int rc = count_live(lc, nodes, n, err);
	if (rc == 0)
		probe_remotes(lc, nodes, n, pinned);
	/* A node short of disk takes nothing (node_disk.c); pinned there: why. */
	for (size_t i = 1; rc == 0 && i < n; i++)
		if ((!pinned || !strcmp(pinned, nodes[i].name)) &&
		    lifecycle_node_disk_check(lc, nodes[i].name, pinned ? err : NULL) < 0) {
			nodes[i].state = POLICY_NODE_DRAINING;
			rc = pinned ? -1 : 0;
		}
	/* A ceiling not asked is each node's own default (it fits that node). */
	int64_t ceiling = lim->memory_asked ? lim->memory_bytes : 0;
	struct policy_placement_request req = {
	    .runtime = lim->runtime,
	    .memory_bytes = ceiling,
	    .memory_counted = ceiling > 0 ? policy_placement_expected_use(ceiling) : 0,
	    .nano_cpus = lim->nano_cpus,
	    .pinned = pinned,
	};
	size_t chosen = 0;
	if (rc == 0 &&
	    policy_placement_choose(nodes, n, &req, tries, PLACE_SAMPLE, random_u32, NULL, &chosen, err) == 0) {
		*ret_node = xstrdup(nodes[chosen].name);
		rc = !pinned; /* chosen among several: another may be tried */
	} else {
		rc = -1;
	}
	free(nodes);
	for (size_t i = 0; i < n_rows; i++)
		node_record_clear(&rows[i]);
	free(rows);
	return rc;
}
