/* pool_member.c: one warm-pool member (issue 8; per node, issue 28): what
 * can be handed out, and how a member goes (rows, channel, container, a
 * remote node's volume, the empty workspace directory). Members are
 * sandboxes rows with pooled = 1; this file decides nothing about how many
 * a node keeps (policy/pool.c) and makes none (pool_node.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "pool_internal.h"

int64_t lifecycle_pool_disk_bytes(const struct lifecycle *lc, const char *node)
{
	/* The writable layer's size is this machine's storage's option
	 * (create.c gives a remote sandbox none). */
	return lifecycle_node_is_local(node) ? lc->storage.default_bytes : 0;
}

int64_t lifecycle_pool_default_memory(struct lifecycle *lc, const char *node)
{
	struct policy_sandbox_limits nl;
	_cleanup_error_ struct cp_error *e = NULL;
	return lifecycle_node_limits(lc, node, &nl, NULL, &e) < 0 ? -1 : nl.default_memory_bytes;
}

int lifecycle_pool_member_usable(struct lifecycle *lc, const struct sandbox_record *s)
{
	const char *rt = lifecycle_runtime(lc, NULL);
	/* A member is what a create with no options gets now: the default
	 * memory ceiling and disk size in force (host_limits.c, disk_guard.c). */
	return s->status == SANDBOX_RUNNING && !strcmp(s->image, lifecycle_sandbox_image(lc)) &&
	       !strcmp(s->runtime ? s->runtime : "", rt ? rt : "") &&
	       s->memory_bytes == lifecycle_pool_default_memory(lc, s->node) &&
	       s->disk_bytes == lifecycle_pool_disk_bytes(lc, s->node) && s->nano_cpus == 0 && s->network == 1;
}

int lifecycle_pool_member_remove(struct lifecycle *lc, const struct sandbox_record *s)
{
	/* Rows forgotten while the engine cannot be asked would leave the
	 * container on the node with no row to find it by: wait for it. */
	if (!lifecycle_node_is_local(s->node) && !node_health_answering(lc->health, s->node, NULL)) {
		log_debug("lifecycle", "warm sandbox %s stays: node %s is not answering", s->id, s->node);
		return 1;
	}
	_cleanup_error_ struct cp_error *e = NULL;
	struct workspace_record w = {0};
	if (store_workspace_get(lc->store, s->workspace_id, &w, &e) < 0)
		cp_error_freep(&e);
	if (store_sandbox_pool_forget(lc->store, s->id, &e) < 0) {
		if (e->code != CP_ERR_CONFLICT)
			log_warn("lifecycle", "remove warm sandbox %s: %s", s->id, e->message);
		workspace_record_clear(&w);
		return -1;
	}
	/* A member was never claimed and its (managed) workspace row is gone
	 * already, so the guard could not tell: the removal is explicit. */
	struct lifecycle_destroy_options o = {.force = 1, .reason = "cleanup", .actor = "serve"};
	struct lifecycle_destroy_result dr = {0};
	if (lifecycle_container_remove_guarded(lc, s, &o, &dr, &e) < 0)
		log_warn("lifecycle", "remove the container of warm sandbox %s on node %s: %s", s->id,
		         s->node ? s->node : STORE_NODE_LOCAL, e->message);
	lifecycle_destroy_result_clear(&dr);
	cp_error_freep(&e);
	/* Its workspace's own volume on another node (lifecycle_workspace_gone
	 * found no row to tell it is the member's alone). */
	if (w.volume && lifecycle_workspace_volume_remove(lc, s->node, w.volume, &e) < 0)
		log_warn("lifecycle", "warm sandbox %s: %s (the volume stays on the node)", s->id, e->message);
	cp_error_freep(&e);
	if (w.path && !strcmp(w.mode, "managed") && rmdir(w.path) < 0 && errno != ENOENT)
		log_warn("lifecycle", "remove the workspace directory '%s' of warm sandbox %s: %s", w.path, s->id,
		         strerror(errno));
	log_debug("lifecycle", "removed warm sandbox %s", s->id);
	workspace_record_clear(&w);
	return 0;
}

void lifecycle_pool_member_discard(struct lifecycle *lc, const char *id)
{
	_cleanup_error_ struct cp_error *e = NULL;
	struct sandbox_record s = {0};
	struct workspace_record w = {0};
	if (store_sandbox_get(lc->store, id, &s, &e) < 0 ||
	    store_workspace_get(lc->store, s.workspace_id, &w, &e) < 0) {
		log_warn("lifecycle", "remove warm sandbox %s: %s", id, e->message);
		goto out;
	}
	lifecycle_call_state_forget(lc, id);
	lifecycle_channel_drop(lc, id);
	lifecycle_channel_dir_remove(lc, id);
	/* A member's workspace is always a managed one made for it. */
	lifecycle_undo_create(lc, id, s.node, s.container_id ? s.container_id : s.container_name,
	                      !strcmp(w.mode, "managed") ? &w : NULL);
out:
	sandbox_record_clear(&s);
	workspace_record_clear(&w);
}

void lifecycle_pool_remember(struct lifecycle_pool *p, const char *id)
{
	char *copy = xstrdup(id);
	pthread_mutex_lock(&p->lock);
	p->created = xrealloc(p->created, (p->n_created + 1) * sizeof(*p->created));
	p->created[p->n_created++] = copy;
	pthread_mutex_unlock(&p->lock);
}
