/* node_engines.c: one engine per node (issue 28). Node 'local' is the
 * engine lifecycle_new was given; another node's engine is opened over
 * mutual TLS (docker_engine_new_tls) with its row's TLS copies the first
 * time a sandbox on it needs it, and kept until lifecycle_free. Every
 * per-sandbox engine call asks here with the row's node; what is truly
 * machine-wide (the host edge, the firewall, the disk guard) stays on
 * lc->engine. Nothing here decides placement (create_place.c). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

struct lifecycle_node_engine {
	char *name;                   /* owned */
	struct docker_engine *engine; /* owned */
	int network_ready;            /* POLICY_NETWORK made on it (create.c) */
};

int lifecycle_node_is_local(const char *node)
{
	return !node || !*node || !strcmp(node, STORE_NODE_LOCAL);
}

int lifecycle_node_same(const char *a, const char *b)
{
	return lifecycle_node_is_local(a) ? lifecycle_node_is_local(b) : b && !strcmp(a, b);
}

static struct lifecycle_node_engine *find(struct lifecycle *lc, const char *node)
{
	for (size_t i = 0; i < lc->n_node_engines; i++)
		if (!strcmp(lc->node_engines[i].name, node))
			return &lc->node_engines[i];
	return NULL;
}

int lifecycle_node_engine(struct lifecycle *lc, const char *node, struct docker_engine **ret, struct cp_error **err)
{
	if (lifecycle_node_is_local(node)) {
		*ret = lc->engine;
		return 0;
	}
	pthread_mutex_lock(&lc->node_lock);
	struct lifecycle_node_engine *e = find(lc, node);
	*ret = e ? e->engine : NULL;
	pthread_mutex_unlock(&lc->node_lock);
	if (*ret)
		return 0;
	/* Opened outside the lock (up to 5 s for a node that does not answer),
	 * so calls to other nodes' sandboxes never wait for it. */
	struct node_record n = {0};
	struct docker_engine *engine = NULL;
	if (store_node_get(lc->store, node, &n, err) < 0)
		return -1;
	struct docker_tls_files tls = {.ca = n.tls_ca, .cert = n.tls_cert, .key = n.tls_key};
	int r = docker_engine_new_tls(n.endpoint, &tls, &engine, err);
	if (r < 0) {
		cp_error_prefix(err, "reach node '%s'", node);
		node_record_clear(&n);
		return -1;
	}
	pthread_mutex_lock(&lc->node_lock);
	e = find(lc, node);
	if (e) { /* another call opened it meanwhile: keep that one */
		docker_engine_free(engine);
		engine = e->engine;
	} else {
		lc->node_engines = xrealloc(lc->node_engines, (lc->n_node_engines + 1) * sizeof(*lc->node_engines));
		lc->node_engines[lc->n_node_engines++] =
		    (struct lifecycle_node_engine){.name = xstrdup(node), .engine = engine};
		log_debug("lifecycle", "node %s: engine opened at %s", node, n.endpoint);
	}
	pthread_mutex_unlock(&lc->node_lock);
	node_record_clear(&n);
	*ret = engine;
	return 0;
}

int lifecycle_node_engine_adopt(struct lifecycle *lc, const char *node, struct docker_engine *engine)
{
	int r = -1;
	pthread_mutex_lock(&lc->node_lock);
	if (!lifecycle_node_is_local(node) && !find(lc, node)) {
		lc->node_engines = xrealloc(lc->node_engines, (lc->n_node_engines + 1) * sizeof(*lc->node_engines));
		lc->node_engines[lc->n_node_engines++] =
		    (struct lifecycle_node_engine){.name = xstrdup(node), .engine = TAKE_PTR(engine)};
		r = 0;
	}
	pthread_mutex_unlock(&lc->node_lock);
	docker_engine_free(engine);
	return r;
}

int lifecycle_node_network_ready(struct lifecycle *lc, const char *node, int set)
{
	if (lifecycle_node_is_local(node))
		return -1;
	pthread_mutex_lock(&lc->node_lock);
	struct lifecycle_node_engine *e = find(lc, node);
	int r = e ? e->network_ready : 0;
	if (e && set)
		e->network_ready = 1;
	pthread_mutex_unlock(&lc->node_lock);
	return r;
}

void lifecycle_node_engines_clear(struct lifecycle *lc)
{
	for (size_t i = 0; i < lc->n_node_engines; i++) {
		free(lc->node_engines[i].name);
		docker_engine_free(lc->node_engines[i].engine);
	}
	free(lc->node_engines);
	lc->node_engines = NULL;
	lc->n_node_engines = 0;
}

void lifecycle_workspace_volume_name(const char *owner_id, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s", LIFECYCLE_VOLUME_PREFIX, owner_id);
}

int lifecycle_workspace_volume_remove(struct lifecycle *lc, const char *node, const char *name, struct cp_error **err)
{
	if (lifecycle_node_is_local(node))
		return 0;
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, node, &engine, err) < 0)
		return -1;
	if (docker_volume_remove(engine, name, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND)
			return cp_error_prefix(err, "remove the volume '%s' on node '%s'", name, node);
		cp_error_freep(err);
	}
	return 0;
}

/* A volume's identity is its label POLICY_LABEL_WORKSPACE=<workspace id>,
 * compared with the row's id; nothing more is recorded. Why that is
 * enough: the id is random (id_new), the engine labels a volume only when
 * its maker asks, and chat2sbx asks once, at the POST /volumes/create of
 * a new workspace (create.c never sends it again for a kept one, so a
 * volume removed by hand is not made again by us); the volume the engine
 * makes by itself for a container naming a missing one has no labels.
 * Volumes of the release before 0015 carry the same label, so they pass
 * with no backfill. Not chosen: the engine's CreatedAt (whole seconds: a
 * volume removed and made again inside the second between the check and
 * the container's create, which is this race, looks the same) and a
 * random token in a new workspace column (a migration and a store change
 * for no case the label misses: only a person re-creating the volume by
 * hand with our labels, a restore, passes, and a restore is meant to). */
int lifecycle_workspace_volume_check(struct lifecycle *lc, const struct workspace_record *w, struct cp_error **err)
{
	if (lifecycle_node_is_local(w->node) || !w->volume)
		return 0;
	struct docker_engine *engine = NULL;
	int same = -1;
	if (lifecycle_node_engine(lc, w->node, &engine, err) < 0 ||
	    (same = docker_volume_has_label(engine, w->volume, POLICY_LABEL_WORKSPACE, w->id, err)) < 0)
		return cp_error_prefix(err, "check the files of workspace '%s' on node '%s'", w->id, w->node);
	if (same == 0)
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "the files of workspace '%s' are gone from node '%s': the volume '%s' there is "
		                    "not the one chat2sbx made for it (it lacks the label %s=%s; the engine makes an "
		                    "empty, unlabelled one when a container names a volume that was removed) and is "
		                    "left as it is; create a sandbox without workspace_id for a new workspace",
		                    w->id, w->node, w->volume, POLICY_LABEL_WORKSPACE, w->id);
	return 0;
}

int lifecycle_workspace_volume_drop(struct lifecycle *lc, const struct workspace_record *w, struct cp_error **err)
{
	if (lifecycle_node_is_local(w->node) || !w->volume)
		return 0;
	return lifecycle_workspace_volume_remove(lc, w->node, w->volume, err);
}

void lifecycle_workspace_gone(struct lifecycle *lc, const struct sandbox_record *s)
{
	if (lifecycle_node_is_local(s->node))
		return;
	_cleanup_error_ struct cp_error *e = NULL;
	struct workspace_record w = {0};
	if (store_workspace_get(lc->store, s->workspace_id, &w, &e) < 0) {
		if (e->code != CP_ERR_NOT_FOUND) {
			/* Not knowing whether the volume is a kept workspace's, keep it. */
			log_warn("lifecycle", "sandbox %s: %s (any volume of its workspace stays on node %s)", s->id,
			         e->message, s->node);
			return;
		}
		cp_error_freep(&e); /* a warm member's row goes first: its own volume is removed by pool_member.c */
	}
	if (w.volume && !strcmp(w.mode, "managed")) {
		/* Kept with its workspace, released like a directory here. */
		log_debug("lifecycle", "sandbox %s: workspace %s keeps its volume %s on node %s", s->id, w.id, w.volume,
		          s->node);
		workspace_record_clear(&w);
		return;
	}
	char name[128];
	lifecycle_workspace_volume_name(s->id, name, sizeof(name));
	if (lifecycle_workspace_volume_remove(lc, s->node, name, &e) < 0) {
		log_warn("lifecycle", "sandbox %s: %s (the volume stays on the node)", s->id, e->message);
		workspace_record_clear(&w);
		return;
	}
	/* An older release's managed workspace: its files went with the volume
	 * named after the sandbox, so the row says so and no later create
	 * reuses it empty. */
	if (w.id && !strcmp(w.mode, "managed") && w.trashed_at_ms <= 0 &&
	    store_workspace_set_trashed(lc->store, w.id, w.path, clock_now_ms(), &e) < 0)
		log_warn("lifecycle", "workspace %s of sandbox %s: %s", w.id, s->id, e->message);
	workspace_record_clear(&w);
}

int lifecycle_helper_upload(struct lifecycle *lc, struct docker_engine *engine, const char *container,
                            struct cp_error **err)
{
	const char *path = lc->cfg->helper_path;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read the helper '%s'", path);
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > DOCKER_TAR_FILE_MAX)
		return cp_error_set(err, CP_ERR_INTERNAL, "read the helper '%s': not a regular file of at most %u MiB",
		                    path, (unsigned)(DOCKER_TAR_FILE_MAX >> 20));
	size_t len = (size_t)st.st_size, got = 0;
	_cleanup_free_ unsigned char *data = xmalloc(len);
	while (got < len) {
		ssize_t n = read(fd, data + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return cp_error_set_errno(err, CP_ERR_INTERNAL, n < 0 ? errno : EIO, "read the helper '%s'",
			                          path);
		got += (size_t)n;
	}
	_cleanup_free_ unsigned char *tar = NULL;
	size_t tar_len = 0;
	/* POLICY_HELPER_TARGET is /.chat2sbx/helper. */
	if (docker_tar_file(".chat2sbx", "helper", 0755, data, len, &tar, &tar_len, err) < 0 ||
	    docker_container_put_archive(engine, container, "/", tar, tar_len, LIFECYCLE_HELPER_UPLOAD_MS, err) < 0)
		return cp_error_prefix(err, "put the helper into container '%.12s'", container);
	return 0;
}
