/* pool_node.c: one node's warm-pool refill (issue 28: "Warm pools are per
 * node"). A thread per node gathers the node's state (its row; 'local' is
 * always ready), its health (node/health.c) and its members (the registry),
 * lets policy_pool_decide choose, and does that one thing: make a member
 * pinned to the node (the create path's placement refuses a node that
 * lost the template image or its room), remove the ones that can never be
 * handed out, or remove them all on a drained node. Each thread waits only
 * on its own node's engine; it never runs inside a tool call. */
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "../base/xalloc.h"
#include "pool_internal.h"

/* How long a refill sleeps when nothing is to be done (a claim or a change
 * of its node's state wakes it at once), and the bounds of its back-off
 * after a failed create. */
#define POOL_IDLE_CHECK_MS 10000
#define POOL_RETRY_MIN_MS 2000
#define POOL_RETRY_MAX_MS 60000
/* After a claim the refill waits this long before it starts a member: a
 * container start keeps both cores of a small machine busy for about a
 * second, and the claimed sandbox's first calls usually follow at once
 * (issue 27: warm create → first bash). */
#define POOL_CLAIM_QUIET_MS 500

/* The node's facts and members (caller clears each and frees *ret_rows).
 * -1 when the registry cannot be read (logged); 1 when the node has no row
 * any more (its refill is about to stop). */
static int gather(struct lifecycle_pool_node *n, struct policy_pool_node *ret, struct sandbox_record **ret_rows,
                  size_t *ret_n)
{
	struct lifecycle *lc = n->pool->lc;
	_cleanup_error_ struct cp_error *e = NULL;
	*ret = (struct policy_pool_node){.name = n->name, .state = POLICY_NODE_READY, .answering = 1};
	if (lifecycle_node_is_local(n->name)) {
		ret->max_sandboxes = lc->limits.max_active > 0 ? lc->limits.max_active : -1;
		enum node_state st = NODE_READY; /* `node drain local` (migration 0016) */
		if (store_node_local_state(lc->store, &st, &e) < 0) {
			log_warn("lifecycle", "warm pool on node local: %s", e->message);
			return -1;
		}
		ret->state = node_state_to_policy(st);
	} else {
		struct node_record row = {0};
		if (store_node_get(lc->store, n->name, &row, &e) < 0) {
			if (e->code == CP_ERR_NOT_FOUND)
				return 1;
			log_warn("lifecycle", "warm pool on node %s: %s", n->name, e->message);
			return -1;
		}
		ret->state = node_state_to_policy(row.state);
		ret->max_sandboxes = policy_placement_node_limit(row.labels.memory_bytes);
		ret->answering = node_health_answering(lc->health, n->name, NULL);
		node_record_clear(&row);
	}
	struct sandbox_record *rows = NULL;
	size_t n_rows = 0, kept = 0;
	if (store_sandbox_pool_list(lc->store, &rows, &n_rows, &e) < 0) {
		log_warn("lifecycle", "warm pool on node %s: %s", n->name, e->message);
		return -1;
	}
	for (size_t i = 0; i < n_rows; i++) {
		if (!lifecycle_node_same(n->name, rows[i].node)) {
			sandbox_record_clear(&rows[i]);
			continue;
		}
		rows[kept] = rows[i];
		const struct sandbox_record *s = &rows[kept++];
		ret->all++;
		if (lifecycle_pool_member_usable(lc, s) || s->status == SANDBOX_CREATING)
			ret->ready++;
		else if (s->status != SANDBOX_REMOVING)
			ret->unusable++;
	}
	*ret_rows = rows;
	*ret_n = kept;
	return 0;
}

/* Removes the node's members (every one, or only those that can never be
 * handed out); returns how many went. */
static int remove_members(struct lifecycle *lc, const struct sandbox_record *rows, size_t n, int all)
{
	int removed = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_record *s = &rows[i];
		if (s->status == SANDBOX_REMOVING || s->status == SANDBOX_CREATING)
			continue; /* another step owns it */
		if (!all && lifecycle_pool_member_usable(lc, s))
			continue;
		removed += lifecycle_pool_member_remove(lc, s) == 0;
	}
	return removed;
}

/* Makes one member on the node. Returns 0 or -1 (logged). */
static int create_member(struct lifecycle_pool_node *n)
{
	struct lifecycle *lc = n->pool->lc;
	struct lifecycle_create_result res = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	int64_t t0 = clock_monotonic_ms();
	if (lc->pool_member_create(lc, n->name, &res, &e) < 0) {
		log_warn("lifecycle", "warm pool on node %s: %s (retrying later)", n->name, e->message);
		return -1;
	}
	lifecycle_pool_remember(n->pool, res.sandbox.id);
	log_info("lifecycle", "warm pool: sandbox %s ready on node %s in %lld ms", res.sandbox.id, n->name,
	         (long long)(clock_monotonic_ms() - t0));
	lifecycle_create_result_clear(&res);
	return 0;
}

/* One refill step. Returns the wait before the next (0 after a member was
 * made or removed, a doubling back-off after a failed create,
 * POOL_IDLE_CHECK_MS otherwise; a claim or the sync pass wakes it). */
static long refill(void *arg)
{
	struct lifecycle_pool_node *n = arg;
	struct lifecycle *lc = n->pool->lc;
	struct policy_pool_node facts;
	struct sandbox_record *rows = NULL;
	size_t n_rows = 0;
	int g = gather(n, &facts, &rows, &n_rows);
	if (g != 0)
		return g < 0 ? POOL_RETRY_MIN_MS : POOL_IDLE_CHECK_MS;
	const char *why = NULL;
	enum policy_pool_action act = policy_pool_decide(&facts, n->pool->size, &why);
	long wait = POOL_IDLE_CHECK_MS;
	if (act == POLICY_POOL_REMOVE_ALL || act == POLICY_POOL_REMOVE_UNUSABLE) {
		int removed = remove_members(lc, rows, n_rows, act == POLICY_POOL_REMOVE_ALL);
		if (removed)
			log_info("lifecycle", "warm pool on node %s: removed %d member(s)%s", n->name, removed,
			         act == POLICY_POOL_REMOVE_ALL ? " (the node is drained)"
			                                       : " that could not be handed out");
		wait = removed ? 0 : POOL_RETRY_MIN_MS;
	} else if (act == POLICY_POOL_CREATE) {
		int64_t quiet = n->claimed_at_ms + POOL_CLAIM_QUIET_MS - clock_monotonic_ms();
		if (n->claimed_at_ms && quiet > 0) {
			wait = (long)quiet;
		} else if (create_member(n) == 0) {
			n->delay_ms = 0;
			wait = 0;
		} else {
			n->delay_ms = n->delay_ms ? n->delay_ms * 2 : POOL_RETRY_MIN_MS;
			if (n->delay_ms > POOL_RETRY_MAX_MS)
				n->delay_ms = POOL_RETRY_MAX_MS;
			wait = n->delay_ms;
		}
	} else if (why && facts.all >= 2 * policy_pool_target(&facts, n->pool->size) + 2) {
		log_warn("lifecycle", "warm pool on node %s: %d members, %d ready: %s", n->name, facts.all, facts.ready,
		         why);
	}
	for (size_t i = 0; i < n_rows; i++)
		sandbox_record_clear(&rows[i]);
	free(rows);
	return wait;
}

struct lifecycle_pool_node *lifecycle_pool_node_start(struct lifecycle_pool *p, const char *name)
{
	struct lifecycle_pool_node *n = xcalloc(1, sizeof(*n));
	n->pool = p;
	n->name = xstrdup(name);
	n->seen_state = -1;
	n->seen_answering = -1;
	n->worker = periodic_start("warm pool", 0, POOL_IDLE_CHECK_MS, refill, n);
	if (!n->worker)
		log_warn("lifecycle", "warm pool on node %s: cannot start its thread; sandboxes there are created cold",
		         name);
	else
		log_info("lifecycle", "warm pool: keeping %d sandbox(es) ready on node %s", p->size, name);
	return n;
}

void lifecycle_pool_node_wake(struct lifecycle_pool_node *n, int claimed)
{
	if (!n)
		return;
	if (claimed)
		n->claimed_at_ms = clock_monotonic_ms();
	periodic_wake(n->worker);
}

void lifecycle_pool_node_stop_ask(struct lifecycle_pool_node *n)
{
	if (n)
		periodic_stop_ask(n->worker);
}

void lifecycle_pool_node_stop(struct lifecycle_pool_node *n)
{
	if (!n)
		return;
	periodic_stop(n->worker);
	free(n->name);
	free(n);
}
