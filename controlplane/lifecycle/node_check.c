/* node_check.c: short-lived check containers on another node (issue 28).
 * The Docker API cannot open a node's path without following links
 * (node_path.c) nor tell a node's kernel limits (node_disk.c), so serve
 * makes a container of its own there for the moment of a check: the
 * template image, no network, a read-only root, every capability dropped
 * but those the check names, no-new-privileges, the sandbox seccomp
 * profile, 64 MiB and 16 processes, its own label (never taken for a
 * sandbox), runs one fixed program of ours in it through the exec API and
 * removes it. Nothing of a model's ever runs in it; what it prints is
 * still another machine's bytes, for the caller to read strictly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

/* The bound of the exec (ms); the container's create, start and removal
 * are the engine's own calls, each bounded by the transport. */
#define NODE_CHECK_EXEC_MS 10000L

int lifecycle_node_check_run(struct lifecycle *lc, const char *node, const struct lifecycle_node_check *check,
                             char **ret_out, struct cp_error **err)
{
	*ret_out = NULL;
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, node, &engine, err) < 0)
		return -1;
	const char *image = lc->cfg->template_image;
	_cleanup_free_ char *image_id = NULL;
	if (docker_image_inspect(engine, image, &image_id, err) < 0) {
		if ((*err)->code == CP_ERR_NOT_FOUND)
			(*err)->code = CP_ERR_UNAVAILABLE;
		return cp_error_prefix(err,
		                       "node '%s' lacks the template image its check runs in; load it there "
		                       "(docs/nodes.md, Set-up)",
		                       node);
	}
	_cleanup_free_ char *suffix = NULL;
	if (id_new("", &suffix, err) < 0)
		return -1;
	char name[96];
	snprintf(name, sizeof(name), "chat2sbx-check-%s", suffix);
	const char *labels[] = {POLICY_LABEL_PATH_CHECK, lc->cfg->database_path, NULL};
	const char *entrypoint[] = {"sh", "-c", "trap 'exit 0' TERM; sleep 60 & wait", NULL};
	const char *no_caps[] = {NULL};
	struct docker_container_spec spec = {
	    .name = name,
	    .image = image,
	    .entrypoint = entrypoint,
	    .labels = labels,
	    .mounts = check->mounts,
	    .n_mounts = check->n_mounts,
	    .memory_bytes = 64LL * 1024 * 1024,
	    .pids_limit = 16,
	    .network_disabled = 1,
	    .cap_drop_all = 1,
	    .cap_add = check->cap_add ? check->cap_add : no_caps,
	    .read_only_rootfs = 1,
	    .user = check->user ? check->user : "65534:65534",
	    .no_stdin = 1,
	    .pid_host = check->pid_host,
	};
	_cleanup_free_ char *id = NULL;
	if (docker_container_create(engine, &spec, &id, err) < 0)
		return -1;
	struct docker_exec_result res = {0};
	int r = docker_container_start(engine, id, err);
	if (r == 0)
		r = docker_container_exec(engine, id, check->argv, NODE_CHECK_EXEC_MS, &res, err);
	if (r == 0 && (res.exit_code != 0 || res.truncated || !res.out))
		r = cp_error_set(err, CP_ERR_UNAVAILABLE, "the check on node '%s' failed (exit code %d): %.300s", node,
		                 res.exit_code, res.err ? res.err : "");
	if (r == 0)
		*ret_out = TAKE_PTR(res.out);
	docker_exec_result_clear(&res);
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_container_remove(engine, id, &e) < 0)
		log_warn("lifecycle", "node %s: remove the check container %s: %s", node, name, e->message);
	return r;
}

void lifecycle_node_check_sweep(struct lifecycle *lc, const char *node)
{
	struct docker_engine *engine = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (lifecycle_node_engine(lc, node, &engine, &e) < 0)
		return; /* reconcile says why */
	_cleanup_free_ char *label = xasprintf("%s=%s", POLICY_LABEL_PATH_CHECK, lc->cfg->database_path);
	struct docker_container_state *cs = NULL;
	size_t n = 0;
	if (docker_container_list(engine, label, &cs, &n, &e) < 0) {
		log_info("lifecycle", "node %s: list leftover check containers: %s", node, e->message);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		cp_error_freep(&e);
		if (docker_container_remove(engine, cs[i].id, &e) < 0 && e->code != CP_ERR_NOT_FOUND)
			log_warn("lifecycle", "node %s: remove the leftover check container %s: %s", node, cs[i].name,
			         e->message);
		else
			log_info("lifecycle", "node %s: removed the leftover check container %s", node, cs[i].name);
		docker_container_state_clear(&cs[i]);
	}
	free(cs);
}
