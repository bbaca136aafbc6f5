/* undo_later.c: the undo of a failed create that could not be finished (a
 * full disk refuses the row's removal, the engine is away) is kept here and
 * finished at the next maintenance pass or create, so a failed create never
 * leaves a row 'creating' (counted as active) for as long as serve runs
 * (issue 13). At the next start reconcile.c finishes any that remain. Each
 * entry goes in order: the container (and on another node the volumes made
 * for the create), the sandbox row, then a managed workspace made for the
 * create (its row first, then its directory, so a row never names a missing
 * directory). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

struct lifecycle_undo {
	struct lifecycle_undo *next;
	char *sandbox_id;       /* owned */
	char *node;             /* owned; NULL = local */
	char *container;        /* owned; id or name; NULL = none was made */
	char *workspace_id;     /* owned; a managed workspace made for the create, or NULL */
	char *workspace_path;   /* owned, with workspace_id */
	char *workspace_volume; /* owned, with workspace_id on another node: its volume there */
	int container_done, row_done;
};

static void undo_free(struct lifecycle_undo *u)
{
	free(u->sandbox_id);
	free(u->node);
	free(u->container);
	free(u->workspace_id);
	free(u->workspace_path);
	free(u->workspace_volume);
	free(u);
}

/* One step of u at a time; returns 0 when all of it is done, -1 with the
 * first failure logged (the rest waits for the next run). */
static int undo_step(struct lifecycle *lc, struct lifecycle_undo *u)
{
	_cleanup_error_ struct cp_error *e = NULL;
	if (!u->container_done) {
		struct docker_engine *engine = NULL;
		if (lifecycle_node_engine(lc, u->node, &engine, &e) < 0 ||
		    (u->container && docker_container_remove(engine, u->container, &e) < 0 &&
		     e->code != CP_ERR_NOT_FOUND))
			goto failed;
		cp_error_freep(&e);
		/* On a remote node, after the container: a clone's volume, and the
		 * volume of a managed workspace made for this create. */
		char clone_volume[128];
		lifecycle_workspace_volume_name(u->sandbox_id, clone_volume, sizeof(clone_volume));
		if (lifecycle_workspace_volume_remove(lc, u->node, clone_volume, &e) < 0 ||
		    (u->workspace_volume &&
		     lifecycle_workspace_volume_remove(lc, u->node, u->workspace_volume, &e) < 0))
			goto failed;
		u->container_done = 1;
	}
	if (!u->row_done) {
		if (store_sandbox_delete(lc->store, u->sandbox_id, &e) < 0 && e->code != CP_ERR_NOT_FOUND)
			goto failed;
		cp_error_freep(&e);
		u->row_done = 1;
	}
	if (u->workspace_id) {
		if (store_workspace_delete(lc->store, u->workspace_id, &e) < 0 && e->code != CP_ERR_NOT_FOUND)
			goto failed;
		rmdir(u->workspace_path); /* only when still empty */
	}
	return 0;
failed:
	log_warn("lifecycle", "undo of the failed create of sandbox %s waits: %s", u->sandbox_id, e->message);
	return -1;
}

int lifecycle_undo_create(struct lifecycle *lc, const char *sandbox_id, const char *node, const char *container,
                          const struct workspace_record *new_workspace)
{
	struct lifecycle_undo *u = xcalloc(1, sizeof(*u));
	u->sandbox_id = xstrdup(sandbox_id);
	u->node = xstrdup(node);
	u->container = xstrdup(container);
	if (new_workspace) {
		u->workspace_id = xstrdup(new_workspace->id);
		u->workspace_path = xstrdup(new_workspace->path);
		u->workspace_volume = new_workspace->volume ? xstrdup(new_workspace->volume) : NULL;
	}
	if (undo_step(lc, u) == 0) {
		undo_free(u);
		return 0;
	}
	pthread_mutex_lock(&lc->lock);
	u->next = lc->undos;
	lc->undos = u;
	pthread_mutex_unlock(&lc->lock);
	return 1;
}

/* Whether u waits for another run: not of node (NULL = every node), or on
 * a node the health loop says is not answering (its engine's timeouts
 * would hold up the run, and a create with it, for nothing). */
static int undo_later(struct lifecycle *lc, const struct lifecycle_undo *u, const char *node)
{
	if (node && !lifecycle_node_same(node, u->node))
		return 1;
	return !lifecycle_node_is_local(u->node) && !node_health_answering(lc->health, u->node, NULL);
}

size_t lifecycle_undo_run(struct lifecycle *lc)
{
	return lifecycle_undo_run_on(lc, NULL);
}

size_t lifecycle_undo_run_on(struct lifecycle *lc, const char *node)
{
	/* Taken off the list while they run, so two runs never share one. */
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_undo *todo = lc->undos;
	lc->undos = NULL;
	pthread_mutex_unlock(&lc->lock);
	size_t left = 0;
	struct lifecycle_undo *keep = NULL;
	while (todo) {
		struct lifecycle_undo *u = todo;
		todo = u->next;
		if (!undo_later(lc, u, node) && undo_step(lc, u) == 0) {
			log_info("lifecycle", "the failed create of sandbox %s is undone", u->sandbox_id);
			undo_free(u);
			continue;
		}
		u->next = keep;
		keep = u;
		left++;
	}
	if (keep) {
		pthread_mutex_lock(&lc->lock);
		struct lifecycle_undo **tail = &keep;
		while (*tail)
			tail = &(*tail)->next;
		*tail = lc->undos;
		lc->undos = keep;
		pthread_mutex_unlock(&lc->lock);
	}
	return left;
}

void lifecycle_undos_clear(struct lifecycle *lc)
{
	while (lc->undos) {
		struct lifecycle_undo *u = lc->undos;
		lc->undos = u->next;
		log_info("lifecycle", "the failed create of sandbox %s is left to the next start to undo",
		         u->sandbox_id);
		undo_free(u);
	}
}
