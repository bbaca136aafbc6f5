/* pool.c: the warm pool (issue 8), per node (issue 28). Keeps
 * CHAT2SBX_WARM_POOL started managed sandboxes with their helper attached
 * on each node, so that sandbox_create for a new managed workspace with
 * default options answers in milliseconds instead of the engine's
 * create+start. Members are ordinary sandboxes rows with pooled = 1
 * (migration 0006): hidden from listings, limits and expiry, reconciled
 * like any sandbox. This file starts and stops the pool, keeps one refill
 * per node (pool_node.c) in line with the node rows, and claims; it
 * removes only members this process made or adopted. */
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "../base/xalloc.h"
#include "pool_internal.h"

/* How often the node rows are read: a node added gets its refill, a node
 * removed loses it, and a node drained or back from an outage has its
 * refill woken, within this long. */
#define POOL_SYNC_MS 2000

/* Whether another node than 'local' can have members at all: the vm
 * runtime is this machine's (docs/nodes.md). */
static int remote_pools(const struct lifecycle *lc)
{
	return !policy_runtime_is_vm(lifecycle_runtime(lc, NULL));
}

static struct lifecycle_pool_node *find_locked(struct lifecycle_pool *p, const char *name)
{
	for (size_t i = 0; i < p->n_nodes; i++)
		if (lifecycle_node_same(p->nodes[i]->name, name))
			return p->nodes[i];
	return NULL;
}

/* One sync pass: a refill for every node row (none for a vm runtime),
 * none for a row gone; a refill whose node's state or health changed is
 * woken. A refill is stopped outside the lock (it may be finishing a step
 * on a slow engine), so claims never wait for it. */
static long sync_nodes(void *arg)
{
	struct lifecycle_pool *p = arg;
	struct lifecycle *lc = p->lc;
	struct node_record *rows = NULL;
	size_t n_rows = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_node_list(lc->store, &rows, &n_rows, &e) < 0) {
		log_warn("lifecycle", "warm pool: list the nodes: %s", e->message);
		return -1;
	}
	if (!remote_pools(lc))
		n_rows = 0; /* the rows are still cleared below */
	struct lifecycle_pool_node **gone = NULL;
	size_t n_gone = 0;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->n_nodes; i++)
		p->nodes[i]->seen = lifecycle_node_is_local(p->nodes[i]->name);
	for (size_t r = 0; r < n_rows; r++) {
		struct lifecycle_pool_node *n = find_locked(p, rows[r].name);
		if (!n) {
			n = lifecycle_pool_node_start(p, rows[r].name);
			p->nodes = xrealloc(p->nodes, (p->n_nodes + 1) * sizeof(*p->nodes));
			p->nodes[p->n_nodes++] = n;
		}
		n->seen = 1;
		int answering = node_health_answering(lc->health, n->name, NULL);
		if (n->seen_state != (int)rows[r].state || n->seen_answering != answering) {
			if (n->seen_state >= 0)
				lifecycle_pool_node_wake(n, 0);
			n->seen_state = (int)rows[r].state;
			n->seen_answering = answering;
		}
	}
	size_t kept = 0;
	for (size_t i = 0; i < p->n_nodes; i++) {
		if (p->nodes[i]->seen) {
			p->nodes[kept++] = p->nodes[i];
		} else {
			gone = xrealloc(gone, (n_gone + 1) * sizeof(*gone));
			gone[n_gone++] = p->nodes[i];
		}
	}
	p->n_nodes = kept;
	pthread_mutex_unlock(&p->lock);
	for (size_t i = 0; i < n_gone; i++) {
		log_info("lifecycle", "warm pool: node %s was removed; its refill stops", gone[i]->name);
		lifecycle_pool_node_stop(gone[i]);
	}
	free(gone);
	for (size_t i = 0; i < n_rows; i++)
		node_record_clear(&rows[i]);
	free(rows);
	return -1;
}

/* Whether a member on node may be adopted at start: its node ('local' or a
 * row) is not drained (a down one's members wait for its reconcile). */
static int node_keeps_members(struct lifecycle *lc, const char *node)
{
	_cleanup_error_ struct cp_error *e = NULL;
	if (lifecycle_node_is_local(node)) {
		enum node_state st = NODE_READY;
		return store_node_local_state(lc->store, &st, &e) < 0 || st != NODE_DRAINING;
	}
	if (!remote_pools(lc))
		return 0;
	struct node_record row = {0};
	if (store_node_get(lc->store, node, &row, &e) < 0)
		return 0;
	int keeps = row.state != NODE_DRAINING;
	node_record_clear(&row);
	return keeps;
}

/* Members of an earlier serve: those that cannot be handed out (failed
 * while serve was away, another image, runtime or default, a drained or
 * removed node) are removed now, the others adopted into *ret (caller
 * frees), so this serve's clean stop removes them if nobody claims them
 * (issue 18: a serve killed now and then must not leave members forever).
 * With no pool (size <= 0), all go. */
static void adopt_or_remove(struct lifecycle *lc, int size, char ***ret, size_t *ret_n)
{
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	*ret = NULL;
	*ret_n = 0;
	if (store_sandbox_pool_list(lc->store, &rows, &n, &e) < 0) {
		log_warn("lifecycle", "warm pool: %s", e->message);
		return;
	}
	char **adopt = xcalloc(n ? n : 1, sizeof(*adopt));
	size_t n_adopt = 0;
	int removed = 0, left = 0;
	for (size_t i = 0; i < n; i++) {
		const struct sandbox_record *s = &rows[i];
		int usable = lifecycle_pool_member_usable(lc, s) || s->status == SANDBOX_CREATING;
		if (size > 0 && usable && node_keeps_members(lc, s->node)) {
			adopt[n_adopt++] = xstrdup(s->id);
		} else {
			int r = lifecycle_pool_member_remove(lc, s);
			removed += r == 0;
			left += r == 1;
		}
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
	if (n)
		log_info("lifecycle",
		         "warm pool: %zu member(s) from an earlier start adopted, %d removed, %d left on nodes that "
		         "do not answer",
		         n_adopt, removed, left);
	*ret = adopt;
	*ret_n = n_adopt;
}

int lifecycle_pool_start(struct lifecycle *lc, int size, struct cp_error **err)
{
	(void)err;
	char **adopt = NULL;
	size_t n_adopt = 0;
	adopt_or_remove(lc, size, &adopt, &n_adopt);
	if (size <= 0) {
		for (size_t i = 0; i < n_adopt; i++)
			free(adopt[i]);
		free(adopt);
		return 0;
	}
	struct lifecycle_pool *p = xcalloc(1, sizeof(*p));
	p->lc = lc;
	p->size = size;
	p->created = adopt; /* taken over: removed at stop like those made here */
	p->n_created = n_adopt;
	pthread_mutex_init(&p->lock, NULL);
	p->nodes = xcalloc(1, sizeof(*p->nodes));
	p->nodes[p->n_nodes++] = lifecycle_pool_node_start(p, STORE_NODE_LOCAL);
	lc->pool = p; /* before the threads: a claim may come at once */
	p->sync = periodic_start("warm pool nodes", 0, POOL_SYNC_MS, sync_nodes, p);
	if (!p->sync)
		log_warn("lifecycle", "warm pool: cannot follow the nodes; only node local keeps members");
	return 0;
}

void lifecycle_pool_defer(struct lifecycle *lc, int size)
{
	lc->pool_deferred = size;
	if (size > 0)
		log_info("lifecycle", "warm pool: starts at the first sandbox_create (stdio: a probing client makes "
		                      "nothing)");
}

void lifecycle_pool_stop(struct lifecycle *lc)
{
	if (!lc)
		return;
	if (!lc->pool && lc->pool_deferred > 0) {
		/* A deferred pool that never started: members an earlier serve
		 * left are removed now rather than kept forever. */
		lifecycle_pool_start(lc, 0, NULL);
		return;
	}
	if (!lc->pool)
		return;
	struct lifecycle_pool *p = lc->pool;
	periodic_stop(p->sync); /* no refill starts from here on */
	/* Every node's refill asked first: a create under way on a slow node
	 * ends alongside the others' instead of after them. */
	for (size_t i = 0; i < p->n_nodes; i++)
		lifecycle_pool_node_stop_ask(p->nodes[i]);
	for (size_t i = 0; i < p->n_nodes; i++)
		lifecycle_pool_node_stop(p->nodes[i]);
	free(p->nodes);
	lc->pool = NULL;
	int removed = 0, left = 0;
	for (size_t i = 0; i < p->n_created; i++) {
		struct sandbox_record s = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		if (store_sandbox_get(lc->store, p->created[i], &s, &e) == 0 && s.pooled &&
		    s.status != SANDBOX_REMOVED) {
			int r = lifecycle_pool_member_remove(lc, &s);
			removed += r == 0;
			left += r == 1;
		}
		sandbox_record_clear(&s);
		free(p->created[i]);
	}
	free(p->created);
	if (removed || left)
		log_info("lifecycle",
		         "warm pool: removed %d unclaimed sandbox(es) made by this serve; %d left on nodes that do "
		         "not answer (the next start removes them)",
		         removed, left);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Default options: a new managed workspace and nothing else. */
static int wants_default(const struct lifecycle_create_options *o)
{
	return !o->workspace_id && !o->workspace_path &&
	       (!o->workspace_mode || !strcmp(o->workspace_mode, "managed")) && !o->memory && !o->cpus &&
	       o->pids_limit <= 0 && !o->network_off && !o->disk;
}

/* Takes a member of node from the registry into *ret_id: 1 taken, 0 none
 * (or the node at its sandbox limit: the cold path refuses with its
 * message), -1 on a registry failure or a node removed meanwhile. Counts
 * and claims under the create lock (as lifecycle_sandbox_insert_limited
 * does), so a claim racing a cold create cannot overshoot the node's
 * limit, on this machine or another. */
static int take_member(struct lifecycle *lc, const char *node, char **ret_id, struct cp_error **err)
{
	int local = lifecycle_node_is_local(node);
	pthread_mutex_lock(&lc->create_lock);
	/* The node's limit, counted under the create lock as a cold create's
	 * insert is (lifecycle_sandbox_insert_limited): full, the create goes
	 * cold and gets LIMIT there, so placement may try another node. */
	int max = 0;
	int r = lifecycle_node_sandbox_limit(lc, node, &max, err);
	if (r == 0 && max > 0) {
		int live = 0;
		r = store_sandbox_count_live_on(lc->store, local ? STORE_NODE_LOCAL : node, &live, err);
		if (r == 0 && live >= max)
			r = 1;
	}
	if (r == 0)
		r = store_sandbox_pool_claim(lc->store, local ? STORE_NODE_LOCAL : node, lifecycle_sandbox_image(lc),
		                             lifecycle_runtime(lc, NULL), lifecycle_pool_default_memory(lc, node),
		                             lifecycle_pool_disk_bytes(lc, node), clock_now_ms(), ret_id, err);
	else if (r == 1)
		r = 0;
	pthread_mutex_unlock(&lc->create_lock);
	return r;
}

int lifecycle_pool_claim(struct lifecycle *lc, const char *node, const struct lifecycle_create_options *opts,
                         struct lifecycle_create_result *ret, struct cp_error **err)
{
	/* A deferred pool (stdio) starts with the first create that could use
	 * it; this create goes cold, the next ones find members. */
	if (!lc->pool && lc->pool_deferred > 0 && wants_default(opts)) {
		pthread_mutex_lock(&lc->create_lock);
		int size = lc->pool_deferred;
		lc->pool_deferred = 0;
		pthread_mutex_unlock(&lc->create_lock);
		if (size > 0)
			lifecycle_pool_start(lc, size, NULL);
		return 0;
	}
	struct lifecycle_pool *p = lc->pool;
	if (!p || !wants_default(opts))
		return 0;
	/* A node that stopped answering hands nothing out: its members wait
	 * for its reconcile (placement skips it anyway once it is down). */
	if (!lifecycle_node_is_local(node) && !node_health_answering(lc->health, node, NULL))
		return 0;
	_cleanup_free_ char *id = NULL;
	int r = take_member(lc, node, &id, err);
	if (r <= 0)
		return r;
	pthread_mutex_lock(&p->lock);
	lifecycle_pool_node_wake(find_locked(p, node), 1); /* refill in the background, after a quiet moment */
	pthread_mutex_unlock(&p->lock);

	struct helper_channel *ch = lifecycle_channel_get(lc, id);
	int alive = ch && helper_channel_alive(ch);
	if (ch)
		helper_channel_unref(ch);
	if (!alive) {
		/* Re-attach, or mark it failed when its container is gone. */
		_cleanup_error_ struct cp_error *e = NULL;
		if (lifecycle_sandbox_channel(lc, id, &ch, &e) < 0) {
			cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e,
			                  "warm sandbox %s cannot be used; creating cold", id);
			lifecycle_pool_member_discard(lc, id); /* with its empty workspace */
			return 0;
		}
		lifecycle_sandbox_release(lc, id, ch); /* ends the hold lifecycle_sandbox_channel took */
	}
	if (opts->progress)
		opts->progress(opts->progress_userdata, "claim a warm sandbox", 1, 1);
	if (store_sandbox_get(lc->store, id, &ret->sandbox, err) < 0)
		return -1;
	log_info("lifecycle", "claimed warm sandbox %s on node %s (workspace %s)", id,
	         lifecycle_node_is_local(node) ? STORE_NODE_LOCAL : node, ret->sandbox.workspace_id);
	return 1;
}
