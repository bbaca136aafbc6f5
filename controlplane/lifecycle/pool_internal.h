/* pool_internal.h: the warm pool's pieces, shared by pool.c (start, stop,
 * claim, one refill per node kept in line with the node rows), pool_node.c
 * (one node's refill) and pool_member.c (what a member is and how one
 * goes) only. */
#ifndef CP_LIFECYCLE_POOL_INTERNAL_H
#define CP_LIFECYCLE_POOL_INTERNAL_H

#include <stdint.h>

#include "lifecycle_internal.h"

struct lifecycle_pool_node;

struct lifecycle_pool {
	struct lifecycle *lc; /* borrowed */
	int size;             /* members kept per node (policy_pool_target bounds it per node) */
	pthread_mutex_t lock; /* guards created and nodes */
	char **created;       /* ids of members made or adopted by this process (owned) */
	size_t n_created;
	struct lifecycle_pool_node **nodes; /* one refill per node (owned); 'local' first */
	size_t n_nodes;
	struct periodic *sync; /* follows the node rows (pool.c); NULL = none */
};

/* One node's refill (pool_node.c). */
struct lifecycle_pool_node {
	struct lifecycle_pool *pool;   /* borrowed */
	char *name;                    /* owned */
	struct periodic *worker;       /* the refill thread; a claim wakes it; NULL = none */
	long delay_ms;                 /* back-off after a failed create (the worker's own) */
	_Atomic int64_t claimed_at_ms; /* clock_monotonic_ms() of the last claim here, 0 = none */
	/* What the sync pass saw last (pool.c, under the pool's lock): a
	 * change wakes the worker, so a drain or a return acts within seconds. */
	int seen_state, seen_answering, seen;
};

/* ---- pool_member.c ---- */

/* Whether member s (borrowed) can be handed out on its node: running,
 * from today's image and runtime, and made with what a create without
 * options gets there now (that node's default memory ceiling,
 * lifecycle_pool_default_memory; on 'local' the default disk size,
 * elsewhere none: docs/nodes.md). Reads the node's row for another node. */
int lifecycle_pool_member_usable(struct lifecycle *lc, const struct sandbox_record *s);
/* The writable layer's size a member on node gets (0 on another node). */
int64_t lifecycle_pool_disk_bytes(const struct lifecycle *lc, const char *node);
/* The memory ceiling a create without options gets on node (its own
 * default, lifecycle_node_limits); -1 when the node's row cannot be read
 * (no member matches it). */
int64_t lifecycle_pool_default_memory(struct lifecycle *lc, const char *node);
/* Removes member s (borrowed) entirely: its rows first (a member claimed
 * meanwhile is left alone), then its channel, its container and, on
 * another node, its volume on that node's engine, then its empty workspace
 * directory. A member whose node does not answer (the health loop's word)
 * is left as it is: 0 when removed, 1 when left (logged at debug), -1 when
 * the rows could not go (logged). Blocks on the node's engine (its
 * timeouts bound it). */
int lifecycle_pool_member_remove(struct lifecycle *lc, const struct sandbox_record *s);
/* A member id (borrowed) this create claimed a moment ago and found it
 * cannot use (its container gone, its helper not answering): never handed
 * out, so it goes as a failed create's undo does (undo_later.c): its
 * container, on another node its workspace's volume, its row, then its
 * managed workspace's row and empty directory; what its node cannot do now
 * is finished by the maintenance pass. Unlike a destroy, no empty
 * workspace nobody used is kept (on a node: a volume kept for 30 days and
 * then forever). Failures are logged. Blocks on the node's engine (its
 * timeouts bound it). */
void lifecycle_pool_member_discard(struct lifecycle *lc, const char *id);
/* Notes id (copied) as made or adopted by this process: lifecycle_pool_stop
 * removes it unless claimed. Takes the pool's lock. */
void lifecycle_pool_remember(struct lifecycle_pool *p, const char *id);

/* ---- pool_node.c ---- */

/* Starts node's refill (name copied) for pool p (borrowed until
 * lifecycle_pool_node_stop): a thread that, step by step, gathers the
 * node's state, health and members, asks policy_pool_decide and makes one
 * member, removes the unusable ones or, on a drained node, all of them. It
 * never runs inside a tool call and only ever waits on its own node's
 * engine, so a stalled node holds up no other node's pool. Never NULL; a
 * node whose thread cannot start is logged and refilled never. */
struct lifecycle_pool_node *lifecycle_pool_node_start(struct lifecycle_pool *p, const char *name);
/* Runs node's next step now; claimed: a member was just claimed there (the
 * step waits a moment before making the next, as the claimed sandbox's
 * first calls follow). Accepts NULL; never blocks long. */
void lifecycle_pool_node_wake(struct lifecycle_pool_node *n, int claimed);
/* Asks node's refill to stop without waiting (periodic_stop_ask), so that
 * the steps under way on several nodes end together. Accepts NULL. */
void lifecycle_pool_node_stop_ask(struct lifecycle_pool_node *n);
/* Stops node's refill (waits for a step under way: at most one member's
 * create or removal on that node, bounded by that engine's timeouts) and
 * frees n. Accepts NULL. */
void lifecycle_pool_node_stop(struct lifecycle_pool_node *n);

#endif
