/* create.c: sandbox_create, from options to a running sandbox. The order
 * (workspace → row → container → attach → start → hello → copy → running)
 * makes every failure undoable: whatever step fails, the container is
 * removed and the rows this call made are deleted, so the registry and the
 * engine agree. A host directory only gets here through an approval, and is
 * checked against the policy again right before it is mounted; the container
 * must then see that very directory before anything runs in it
 * (mount_verify.c). */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/xjson.h"
#include "../base/xalloc.h"
#include "../base/cancel.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../policy/policy.h"
#include "../export/export.h"
#include "lifecycle_internal.h"
#include "proto.h" /* template/helper/proto.h: the helper's environment */

/* Copies the source into the container's own /workspace: a git
 * repository is cloned (every branch becomes a local branch), anything else
 * is copied as it is. The source is the read-only mount of the approved
 * directory on this machine; on another node (clone_source.c) a bundle of
 * its branches and tags at the same path, cloned the same way (the origin
 * then names that path on both), with the branch HEAD names beside it, or
 * the directory's entries unpacked there. Runs inside the sandbox as a bash
 * session. */
static const char copy_command[] =
    "set -e\n"
    "src=" POLICY_SOURCE_TARGET "\n"
    "if [ -f \"$src\" ] || [ -e \"$src/.git\" ]; then\n"
    "  git clone --quiet --no-hardlinks \"$src\" " POLICY_WORKSPACE_TARGET "\n"
    "  cd " POLICY_WORKSPACE_TARGET "\n"
    "  git for-each-ref --format='%(refname:strip=3)' refs/remotes/origin | while read -r b; do\n"
    "    [ \"$b\" = HEAD ] && continue\n"
    "    git show-ref --quiet --verify \"refs/heads/$b\" || git branch --quiet --track \"$b\" \"origin/$b\"\n"
    "  done\n"
    "  if [ -f " POLICY_SOURCE_HEAD_TARGET " ]; then\n"
    "    b=$(head -n 1 " POLICY_SOURCE_HEAD_TARGET ")\n"
    "    if [ \"$(git symbolic-ref -q --short HEAD || true)\" != \"$b\" ] && git show-ref --quiet --verify "
    "\"refs/heads/$b\"; then\n"
    "      git checkout --quiet \"$b\"\n"
    "    fi\n"
    "  fi\n"
    "else\n"
    "  cp -a \"$src/.\" " POLICY_WORKSPACE_TARGET "/\n"
    "fi\n";

static int make_managed_workspace(struct lifecycle *lc, const char *node, struct workspace_record *ret,
                                  struct cp_error **err)
{
	_cleanup_free_ char *id = NULL;
	if (id_new("ws_", &id, err) < 0)
		return -1;
	_cleanup_free_ char *path = NULL;
	path = xasprintf("%s/%s", lc->cfg->workspace_root, id);
	/* 0755 inside a 0700 root: the sandbox's own non-root users can read it,
	 * nobody else on the host can reach it. */
	if (mkdir(path, 0755) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "create workspace directory '%s'", path);
	struct workspace_record w = {.id = id, .mode = "managed", .path = path, .created_at_ms = clock_now_ms()};
	/* On another node its files are a volume there, kept with the row
	 * (migration 0015); the directory here stays empty. */
	char volume[128];
	if (!lifecycle_node_is_local(node)) {
		lifecycle_workspace_volume_name(id, volume, sizeof(volume));
		w.node = (char *)node;
		w.volume = volume;
	}
	if (store_workspace_insert(lc->store, &w, err) < 0) {
		rmdir(path);
		return -1;
	}
	return store_workspace_get(lc->store, id, ret, err);
}

/* A directory of node (not 'local'), as written: the node's host roots and
 * the nesting rule among its host workspaces (workspace_node_path_check;
 * self_id left out, may be NULL), then the path itself looked
 * at on the node without following links (node_path.c), *ret its identity. */
static int node_host_path(struct lifecycle *lc, const char *node, const char *path, const char *mode,
                          const char *self_id, struct policy_node_path_facts *ret, struct cp_error **err)
{
	if (workspace_node_path_check(lc->store, node, path, mode, self_id, err) < 0)
		return -1;
	return lifecycle_node_path_check(lc, node, path, ret, err);
}

/* A host path: policy (request time), then its approval. Returns 0 with *ret
 * loaded when approved, 1 with ret->approval when a person must decide. */
static int resolve_host_path(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                             struct workspace_record *ret_ws, struct lifecycle_create_result *ret,
                             struct cp_error **err)
{
	const char *mode = opts->workspace_mode ? opts->workspace_mode : "clone";
	if (strcmp(mode, "clone") && strcmp(mode, "direct"))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "workspace_mode '%s' is not one of clone (a private copy, the default) or direct "
		                    "(the host directory itself, read-write)",
		                    mode);
	_cleanup_free_ char *real = NULL;
	_cleanup_free_ char *approval_id = NULL;
	/* Direct mode with another node: that machine's directory (migration
	 * 0018). A clone's path is always this machine's (node then says where
	 * its sandbox runs). */
	const char *on =
	    opts->node && !lifecycle_node_is_local(opts->node) && !strcmp(mode, "direct") ? opts->node : NULL;
	if (on) {
		struct policy_node_path_facts facts;
		if (node_host_path(lc, on, opts->workspace_path, mode, NULL, &facts, err) < 0)
			return -1;
		real = xstrdup(opts->workspace_path); /* taken as written: no link on it (node_path.c) */
	} else if (workspace_host_path_check(lc->cfg, opts->workspace_path, &real, err) < 0) {
		return -1;
	}
	if (id_new("approval_", &approval_id, err) < 0)
		return -1;
	struct approval_record want = {.id = approval_id,
	                               .host_path = (char *)opts->workspace_path,
	                               .real_path = real,
	                               .mode = (char *)mode,
	                               .requested_by = "mcp",
	                               .requested_at_ms = clock_now_ms(),
	                               .node = (char *)on};
	struct approval_record a = {0};
	int created = 0;
	if (store_approval_request(lc->store, &want, &a, &created, err) < 0)
		return -1;
	if (created)
		log_info("lifecycle", "approval %s requested for %s (%s)", a.id, a.real_path, a.mode);
	if (a.status == APPROVAL_PENDING) {
		ret->approval = a;
		ret->approval_required = 1;
		return 1;
	}
	int r;
	if (a.status == APPROVAL_REJECTED) {
		char when[40];
		r = cp_error_set(err, CP_ERR_DENIED,
		                 "host path '%s' (%s) was rejected by the person at this machine (approval '%s', %s); "
		                 "do not ask again; use another path or a managed workspace",
		                 a.host_path, a.mode, a.id, clock_format_rfc3339(a.decided_at_ms, when, sizeof(when)));
	} else {
		r = store_workspace_get(lc->store, a.workspace_id, ret_ws, err);
	}
	approval_record_clear(&a);
	return r;
}

/* Mount time for a direct workspace of another node: its roots, the
 * nesting rule and the path on the node again (node_host_path), *ret_dev
 * and *ret_ino the directory's identity there; its .git, when it has one,
 * goes to *ret_guard as one mount, the whole .git read-only: serve cannot
 * watch another machine's .git (git_watch.c), so the sandbox may change
 * nothing in it. The helper verifies both identities from inside before
 * anything runs (verify_host_mount), which needs a runtime that shows the
 * node's numbers (runc). */
static int recheck_node_workspace(struct lifecycle *lc, const struct workspace_record *w, const char *runtime,
                                  uint64_t *ret_dev, uint64_t *ret_ino, struct guard_git *ret_guard,
                                  struct cp_error **err)
{
	if (!guard_mount_runtime_verifiable(runtime) || policy_runtime_is_vm(runtime))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "mount workspace '%s': a directory of node '%s' is mounted only under the runc "
		                    "runtime, where chat2sbx can verify from inside that the engine mounted the "
		                    "directory it checked; '%s' does not show that (set CHAT2SBX_RUNTIME=runc)",
		                    w->id, w->node, runtime ? runtime : "");
	struct policy_node_path_facts facts;
	if (node_host_path(lc, w->node, w->path, w->mode, w->id, &facts, err) < 0)
		return cp_error_prefix(err, "mount workspace '%s'", w->id);
	*ret_dev = facts.dev;
	*ret_ino = facts.ino;
	if (facts.git == POLICY_NODE_GIT_NONE)
		return 0;
	ret_guard->shape = POLICY_GIT_DIRECTORY; /* a gitfile is refused on a node (policy_node_path_answer) */
	ret_guard->mounts = xcalloc(1, sizeof(*ret_guard->mounts));
	ret_guard->mounts[0] = (struct sandbox_mount_record){.source = xasprintf("%s/.git", w->path),
	                                                     .target = xstrdup(POLICY_WORKSPACE_TARGET "/.git"),
	                                                     .read_only = 1,
	                                                     .dev = facts.git_dev,
	                                                     .ino = facts.git_ino};
	ret_guard->n = 1;
	return 0;
}

/* Mount time: the approved directory must still pass the policy and resolve
 * where it did when it was approved (it may have become a symlink), must not
 * nest with a direct-mode workspace, and is then opened without following
 * symlinks: *ret_dev and *ret_ino are what the container must see
 * (mount_verify.c). A direct workspace's .git protection goes to *ret_guard
 * (caller clears). */
static int recheck_host_workspace(struct lifecycle *lc, const struct workspace_record *w, const char *runtime,
                                  uint64_t *ret_dev, uint64_t *ret_ino, struct guard_git *ret_guard,
                                  struct cp_error **err)
{
	if (!lifecycle_node_is_local(w->node))
		return recheck_node_workspace(lc, w, runtime, ret_dev, ret_ino, ret_guard, err);
	_cleanup_free_ char *real = NULL;
	if (workspace_host_path_check(lc->cfg, w->host_path, &real, err) < 0)
		return cp_error_prefix(err, "mount workspace '%s'", w->id);
	if (strcmp(real, w->path) != 0)
		return cp_error_set(err, CP_ERR_DENIED,
		                    "mount workspace '%s': '%s' now resolves to '%s', not to the approved '%s'; it is "
		                    "not mounted",
		                    w->id, w->host_path, real, w->path);
	if (guard_host_nesting_check(lc->store, real, w->mode, w->id, err) < 0)
		return cp_error_prefix(err, "mount workspace '%s'", w->id);
	/* Without the identity check (gVisor), a bind-mounted alias could
	 * reach into a direct-mode workspace unseen by the nesting rule. */
	if (!guard_mount_runtime_verifiable(lifecycle_runtime(lc, NULL)) && guard_mount_alias_check(real, err) < 0)
		return cp_error_prefix(err, "mount workspace '%s'", w->id);
	_cleanup_close_ int fd = -1;
	if (guard_mount_open(real, &fd, ret_dev, ret_ino, err) < 0) {
		guard_mount_audit(&lc->host, NULL, real, (*err)->message);
		return -1;
	}
	/* Direct mode: the repository's .git, opened beneath that very
	 * directory (git_guard.c). */
	if (!strcmp(w->mode, "direct") && guard_git_prepare(fd, real, POLICY_WORKSPACE_TARGET, ret_guard, err) < 0) {
		guard_mount_audit(&lc->host, NULL, real, (*err)->message);
		return cp_error_prefix(err, "mount workspace '%s'", w->id);
	}
	return 0;
}

/* The shared network, on its fixed bridge (issue 12). One made by an older
 * chat2sbx stays while containers refer to it; the firewall then names its
 * bridge (guard_legacy_bridges). */
static int ensure_network(struct lifecycle *lc, const char *node, struct docker_engine *engine, struct cp_error **err)
{
	if (!lifecycle_node_is_local(node)) {
		/* Another node's engine: its own network (no host firewall of ours
		 * there yet, docs/nodes.md). */
		char bridge[64] = "";
		if (lifecycle_node_network_ready(lc, node, 0) == 1)
			return 0;
		if (docker_network_ensure(engine, POLICY_NETWORK, POLICY_LABEL_NETWORK, POLICY_NETWORK_BRIDGE, bridge,
		                          sizeof(bridge), err) < 0)
			return cp_error_prefix(err, "on node '%s'", node);
		lifecycle_node_network_ready(lc, node, 1);
		return 0;
	}
	pthread_mutex_lock(&lc->attach_lock);
	char bridge[64] = "";
	int r = lc->network_ready ? 0
	                          : docker_network_ensure(lc->engine, POLICY_NETWORK, POLICY_LABEL_NETWORK,
	                                                  POLICY_NETWORK_BRIDGE, bridge, sizeof(bridge), err);
	if (r == 0 && !lc->network_ready && strcmp(bridge, POLICY_NETWORK_BRIDGE))
		log_info("lifecycle",
		         "network '%s' was made by an older chat2sbx on bridge %s and still has containers; it is "
		         "used as it is (the firewall covers that bridge by name) and made again on %s once unused",
		         POLICY_NETWORK, bridge, POLICY_NETWORK_BRIDGE);
	if (r == 0)
		lc->network_ready = 1;
	pthread_mutex_unlock(&lc->attach_lock);
	return r;
}

/* Steps a create reports to opts->progress (lifecycle.h): options,
 * workspace, container create, start, helper hello, clone copy. */
#define CREATE_STEPS 6

static void report_step(const struct lifecycle_create_options *opts, const char *step, int done)
{
	if (opts && opts->progress)
		opts->progress(opts->progress_userdata, step, done, CREATE_STEPS);
}

/* kept: w is a managed workspace kept on s's node from an earlier sandbox
 * (its volume there is checked, never made again). */
static int start_container(struct lifecycle *lc, const struct sandbox_record *s, const struct workspace_record *w,
                           int kept, const struct guard_git *guard, uint64_t mount_dev, uint64_t mount_ino,
                           const struct lifecycle_clone_source *source, char **ret_container_id,
                           struct helper_channel **ret_channel, const struct lifecycle_create_options *opts,
                           struct cp_error **err)
{
	char sandbox_env[64];
	snprintf(sandbox_env, sizeof(sandbox_env), PROTO_HELPER_ENV_SANDBOX_ID "=%s", s->id);
	const char *env[] = {PROTO_HELPER_ENV_FIXED, sandbox_env, NULL};
	const char *entrypoint[] = {POLICY_HELPER_TARGET, NULL};
	const char *labels[] = {POLICY_LABEL_SANDBOX,
	                        s->id,
	                        POLICY_LABEL_WORKSPACE,
	                        w->id,
	                        POLICY_LABEL_REGISTRY,
	                        lc->cfg->database_path,
	                        s->pooled ? POLICY_LABEL_POOL : NULL, /* NULL ends the list early */
	                        "1",
	                        NULL};
	/* managed and direct: the directory is /workspace. clone: it is a
	 * read-only source, and /workspace stays on the container's own disk. */
	int clone = !strcmp(w->mode, "clone");
	/* Another node (issue 28): its managed workspace, and a clone's
	 * /workspace, is a volume of its engine named after the sandbox
	 * (docs/nodes.md), and no path of this machine is mounted (the helper
	 * and a clone's source are copied in, the channel directory is not
	 * needed: calls use the attach stream). */
	const char *remote = lifecycle_node_is_local(s->node) ? NULL : s->node;
	struct docker_engine *engine = NULL;
	char volume[128] = "";
	if (lifecycle_node_engine(lc, s->node, &engine, err) < 0)
		return -1;
	/* A direct workspace of that node: its own directory, bind-mounted. */
	int node_dir = remote && !strcmp(w->mode, "direct") && lifecycle_node_same(w->node, remote);
	if (remote && !node_dir) {
		if ((strcmp(w->mode, "managed") && !(clone && source && source->fd >= 0)) ||
		    (!strcmp(w->mode, "managed") && (!w->volume || !lifecycle_node_same(w->node, remote))))
			return cp_error_set(
			    err, CP_ERR_INVALID_ARGUMENT,
			    "a %s workspace of node '%s' cannot go to node '%s': its files are not there "
			    "(docs/nodes.md)",
			    w->mode, w->node ? w->node : STORE_NODE_LOCAL, remote);
		/* A new managed workspace's own volume, or a clone's, named after
		 * its sandbox and labelled with it. A kept workspace's is never
		 * asked for again: the engine would make one of that name, with
		 * the very labels its check looks for, if it was removed since
		 * (lifecycle_workspace_volume_check). */
		const char *vlabels[] = {POLICY_LABEL_WORKSPACE,
		                         w->id,
		                         POLICY_LABEL_REGISTRY,
		                         lc->cfg->database_path,
		                         POLICY_LABEL_SANDBOX,
		                         s->id,
		                         NULL};
		if (w->volume) {
			snprintf(volume, sizeof(volume), "%s", w->volume);
			vlabels[4] = NULL;
		} else {
			lifecycle_workspace_volume_name(s->id, volume, sizeof(volume));
		}
		if (!kept && docker_volume_create(engine, volume, vlabels, err) < 0)
			return cp_error_prefix(err, "on node '%s'", remote);
	}
	/* helper, workspace, the .git protection (direct mode, parents first;
	 * the engine sorts by target depth too), and the test-only socket. */
	int vm = policy_runtime_is_vm(s->runtime);
	_cleanup_free_ struct docker_mount *mounts = xcalloc(guard->n + 5, sizeof(*mounts));
	size_t n_mounts = 0;
	/* Another node has no path of this machine's: its helper is copied in
	 * before the start (lifecycle_helper_upload). */
	if (!remote)
		mounts[n_mounts++] = (struct docker_mount){
		    .source = lc->cfg->helper_path, .target = POLICY_HELPER_TARGET, .read_only = 1};
	mounts[n_mounts++] =
	    (struct docker_mount){.source = remote && !node_dir ? volume : w->path,
	                          .target = clone && !remote ? POLICY_SOURCE_TARGET : POLICY_WORKSPACE_TARGET,
	                          .read_only = clone && !remote,
	                          .volume = remote != NULL && !node_dir};
	for (size_t i = 0; i < guard->n; i++)
		mounts[n_mounts++] = (struct docker_mount){.source = guard->mounts[i].source,
		                                           .target = guard->mounts[i].target,
		                                           .read_only = guard->mounts[i].read_only};
	/* TEST ONLY (CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET=1): the engine
	 * socket inside, the very hole `chat2sbx doctor` must detect. Never
	 * mounted otherwise. */
	if (lc->cfg->test_unsafe_mount_docker_socket && remote == NULL)
		mounts[n_mounts++] =
		    (struct docker_mount){.source = lc->cfg->docker_socket, .target = "/var/run/docker.sock"};
	/* vm: the launcher and guest init too (guard/vm.c). */
	if (vm)
		mounts[n_mounts++] =
		    (struct docker_mount){.source = lc->cfg->vm_path, .target = GUARD_VM_TARGET, .read_only = 1};
	/* The direct channel's directory, read-only: the helper connects to the
	 * socket serve makes there for a moment (channels.c, helper/direct.c). */
	char channel_dir[4096];
	if (!remote && policy_runtime_direct_channel(s->runtime) &&
	    lifecycle_channel_dir_path(lc, s->id, channel_dir, sizeof(channel_dir))) {
		if (lifecycle_channel_dir_make(lc, s->id, err) < 0)
			return -1;
		mounts[n_mounts++] =
		    (struct docker_mount){.source = channel_dir, .target = PROTO_CHANNEL_DIR, .read_only = 1};
	}
	struct docker_container_spec spec = {
	    .name = s->container_name,
	    .image = s->image,
	    .entrypoint = entrypoint,
	    .env = env,
	    .labels = labels,
	    .working_dir = POLICY_WORKSPACE_TARGET,
	    .mounts = mounts,
	    .n_mounts = n_mounts,
	    .memory_bytes = s->memory_bytes,
	    .nano_cpus = s->nano_cpus,
	    .pids_limit = opts && opts->pids_limit > 0 ? opts->pids_limit : lc->limits.pids_default,
	    .oom_score_adj = POLICY_OOM_SCORE_ADJ,
	    .disk_bytes = s->disk_bytes,
	    .network_disabled = !s->network,
	    .network = POLICY_NETWORK,
	    .runtime = s->runtime,
	    /* An engine restart (no live-restore) starts it again; the helper
	     * then reports the sessions it was running as lost (recovery.c).
	     * Not a direct workspace of another node: there the helper is a file
	     * of the container's own layer, which the sandbox can replace, and
	     * after a restart it would answer the mount checks of the re-attach
	     * (the engine resolves the bind sources again); stopped, it is
	     * marked failed instead, its directory untouched. */
	    .restart_policy = node_dir ? NULL : "unless-stopped",
	};
	struct guard_vm_parts vm_parts;
	if (vm)
		guard_vm_container(&lc->host, s, w, mount_dev, mount_ino, &spec, &vm_parts);
	if (s->network && ensure_network(lc, s->node, engine, err) < 0)
		return -1;
	_cleanup_free_ char *container_id = NULL;
	report_step(opts, "creating the container", 3);
	if (docker_container_create(engine, &spec, &container_id, err) < 0)
		return -1;
	_cleanup_(helper_channel_unrefp) struct helper_channel *ch = NULL;
	int r = 0;
	/* The container holds the volume now (no removal while it exists):
	 * a kept workspace's must still be the one made for it, or the engine
	 * just made it empty. */
	if (remote && kept && lifecycle_workspace_volume_check(lc, w, err) < 0)
		r = -1;
	if (r == 0 && remote && lifecycle_helper_upload(lc, engine, container_id, err) < 0)
		r = -1;
	if (r == 0 && remote && clone && lifecycle_clone_source_put(lc, engine, container_id, source, err) < 0)
		r = -1;
	if (r == 0 && lifecycle_attach(lc, s->id, s->node, container_id, &ch, err) < 0)
		r = -1;
	report_step(opts, "starting the container", 4);
	if (r == 0 && docker_container_start(engine, container_id, err) < 0)
		r = -1;
	report_step(opts, "waiting for the helper in the sandbox", 5);
	if (r == 0 && lifecycle_helper_greet(lc, s, ch, NULL, err) < 0) { /* records its boot id (recovery.c) */
		if ((*err)->detail == CP_DETAIL_HELPER_VERSION)
			cp_error_prefix(
			    err,
			    "the helper at '%s' does not belong to this chat2sbx (if chat2sbx was upgraded while "
			    "this serve ran, restart serve; otherwise reinstall chat2sbx so that its binary and "
			    "lib/chat2sbx/chat2sbx-helper come from one build; then retry)",
			    lc->cfg->helper_path);
		else if (vm)
			guard_vm_explain(&lc->host, s->id, container_id,
			                 err); /* the launcher's refusal, if it was one */
		r = -1;
	}
	*ret_container_id = TAKE_PTR(container_id); /* on failure the caller removes it */
	if (r == 0)
		*ret_channel = TAKE_PTR(ch);
	return r;
}

/* Runs the clone copy; waits up to LIFECYCLE_COPY_WAIT_MS. A copy still
 * running leaves its session id in *ret_session (the sandbox is usable; the
 * model can poll it). A copy that failed fails the create with its output. */
static int copy_into_workspace(struct lifecycle *lc, struct helper_channel *ch, const char *sandbox_id,
                               char **ret_session, const struct lifecycle_create_options *opts, struct cp_error **err)
{
	_cleanup_free_ char *session = NULL;
	if (id_new("bash_", &session, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session));
	xjson_add(p, "command", xjson_string(copy_command));
	xjson_add(p, "cwd", xjson_string("/"));
	xjson_add(p, "yield_time_ms", xjson_int64(LIFECYCLE_COPY_WAIT_MS));
	xjson_add(p, "max_output_bytes", xjson_int64(4000));
	_cleanup_json_ struct json_object *res = NULL;
	report_step(opts, "copying the workspace into the sandbox", 6);
	if (helper_channel_call_cancel(ch, "bash.start", p, LIFECYCLE_COPY_WAIT_MS + 10000, opts->cancel, &res, err) <
	    0) {
		if (!cp_cancel_fired(opts->cancel))
			return cp_error_prefix(err, "copy the workspace into sandbox '%s'", sandbox_id);
		/* The client stopped waiting: the copy goes on, as a slow one does. */
		cp_error_freep(err);
		log_info("lifecycle", "sandbox %s: create cancelled by the client; workspace copy goes on as %s",
		         sandbox_id, session);
		*ret_session = TAKE_PTR(session);
		return 0;
	}
	struct json_object *v = NULL;
	const char *status = json_object_object_get_ex(res, "status", &v) ? json_object_get_string(v) : "";
	if (status && !strcmp(status, "running")) {
		log_info("lifecycle", "sandbox %s: workspace copy still running as %s", sandbox_id, session);
		*ret_session = TAKE_PTR(session);
		return 0;
	}
	int code = json_object_object_get_ex(res, "exit_code", &v) ? json_object_get_int(v) : -1;
	if (status && !strcmp(status, "exited") && code == 0)
		return 0;
	const char *out = json_object_object_get_ex(res, "output", &v) ? json_object_get_string(v) : "";
	(void)lc;
	return cp_error_set(err, CP_ERR_INTERNAL,
	                    "copy the workspace into sandbox '%s' failed (%s, exit code %d): %.2000s", sandbox_id,
	                    status ? status : "?", code, out ? out : "");
}

/* Before anything runs in a new sandbox on a host workspace: the container
 * must see at its mount target the very directory recheck_host_workspace
 * opened (the engine resolved the path string again), and at each .git
 * path mounted over it the very file or directory git_guard.c opened, each
 * a mount of its own, with nothing mounted elsewhere (those targets lie in
 * the host directory, where the engine resolves them again too).
 * Recorded for the re-check after a container restart (recovery.c).
 * Runtimes that do not show host identities (gVisor) rely on the nesting
 * rule alone. */
static int verify_host_mount(struct lifecycle *lc, const struct sandbox_record *s, const struct workspace_record *w,
                             struct helper_channel *ch, const char *container, uint64_t dev, uint64_t ino,
                             const struct guard_git *guard, struct cp_error **err)
{
	/* Another node mounts no path of this machine (a clone's source was
	 * copied in, clone_source.c), only a direct workspace's own directory
	 * there, verified as here against what the node's check found
	 * (node_path.c). */
	if (!strcmp(w->mode, "managed") || (!lifecycle_node_is_local(s->node) && strcmp(w->mode, "direct")))
		return 0;
	if (policy_runtime_is_vm(s->runtime)) {
		/* From the container's side, where the host's numbers show. */
		if (guard_vm_mounts_verify(&lc->host, container, s, w->mode, w->path, dev, ino, guard->mounts, guard->n,
		                           err) < 0 ||
		    store_sandbox_set_mount_identity(lc->store, s->id, dev, ino, err) < 0)
			return -1;
	} else if (guard_mount_runtime_verifiable(s->runtime)) {
		const char *target = !strcmp(w->mode, "clone") ? POLICY_SOURCE_TARGET : POLICY_WORKSPACE_TARGET;
		if (guard_mount_verify(&lc->host, ch, s->id, target, w->path, dev, ino, err) < 0 ||
		    guard_git_verify(&lc->host, ch, s->id, guard->mounts, guard->n, err) < 0 ||
		    (guard->n && guard_mounts_verify(&lc->host, ch, s, w->mode, guard->mounts, guard->n, err) < 0) ||
		    store_sandbox_set_mount_identity(lc->store, s->id, dev, ino, err) < 0)
			return -1;
	}
	/* Recorded under any runtime: the host-side check needs no help from
	 * inside (git_guard.c). */
	return guard->n ? store_sandbox_mounts_set(lc->store, s->id, guard->mounts, guard->n, err) : 0;
}

/* Undo of a create that failed: nothing of it may remain. */
static void undo_create(struct lifecycle *lc, const char *sandbox_id, const char *node, const char *container_id,
                        const struct workspace_record *new_workspace)
{
	lifecycle_channel_drop(lc, sandbox_id);
	/* The container by its name when its id never came back. The row is
	 * still 'creating' (never handed to anyone), so the removal rule
	 * (removal.c) asks for no save. */
	lifecycle_undo_create(lc, sandbox_id, node, container_id ? container_id : sandbox_id, new_workspace);
}

/* The workspace's live sandbox as the answer (reused). */
static int answer_reused(struct lifecycle *lc, const char *workspace_id, const struct lifecycle_limits *want,
                         struct lifecycle_create_result *ret, struct cp_error **err)
{
	if (store_sandbox_get_live_for_workspace(lc->store, workspace_id, &ret->sandbox, err) < 0)
		return -1;
	if (ret->sandbox.status == SANDBOX_REMOVING) {
		/* Live until its container is gone, never handed out again. */
		cp_error_set(err, CP_ERR_CONFLICT,
		             "workspace '%s' still has sandbox '%s', which is being removed (a removal the registry "
		             "could not finish yet; the next maintenance pass, within a minute, finishes it); try "
		             "again then",
		             workspace_id, ret->sandbox.id);
		sandbox_record_clear(&ret->sandbox);
		return -1;
	}
	ret->reused = 1;
	ret->options_note = lifecycle_limits_differ_on_node(lc, &ret->sandbox, want);
	return 0;
}

/* Whether a new sandbox may be made on node: this machine's disk has room
 * (disk_guard.c) and its sandbox count is below its limit. Another node's
 * limit was checked by placement (create_place.c). */
static int check_limit(struct lifecycle *lc, const char *node, struct cp_error **err)
{
	if (!lifecycle_node_is_local(node))
		return 0;
	if (lifecycle_disk_check_create(lc, err) < 0)
		return -1;
	if (lc->limits.max_active <= 0)
		return 0;
	int live = 0;
	if (store_sandbox_count_live_on(lc->store, STORE_NODE_LOCAL, &live, err) < 0)
		return -1;
	if (live >= lc->limits.max_active)
		return cp_error_set(
		    err, CP_ERR_LIMIT,
		    "the sandbox limit is reached: %d of %d active; destroy a sandbox you no longer need "
		    "(sandbox_list, sandbox_destroy) and try again",
		    live, lc->limits.max_active);
	return 0;
}

/* The node of a new managed workspace's sandbox into *ret_node (caller
 * frees); 1 when placement chose it among several nodes (a capacity failure
 * there may be tried elsewhere), 0 when it is 'local' by rule or the only
 * one. */
static int place_new(struct lifecycle *lc, const struct lifecycle_create_options *opts, int pool_member,
                     const struct lifecycle_limits *lim, const struct policy_placement_tries *tries, char **ret_node,
                     struct cp_error **err)
{
	if (opts->node && !lifecycle_node_is_local(opts->node)) {
		struct node_record n = {0};
		if (store_node_get(lc->store, opts->node, &n, err) < 0)
			return -1; /* NOT_FOUND naming it and how to list nodes */
		node_record_clear(&n);
		if (policy_runtime_is_vm(lim->runtime))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "the vm runtime runs on this machine only (node 'local'), not on node '%s'",
			                    opts->node);
	}
	/* The vm runtime and a disk size are this machine's (docs/nodes.md); a
	 * pool member is made where its refill asks (opts->node), 'local' when
	 * none. */
	const char *pinned = opts->node                                                             ? opts->node
	                     : pool_member || policy_runtime_is_vm(lim->runtime) || lim->disk_asked ? STORE_NODE_LOCAL
	                                                                                            : NULL;
	return lifecycle_place(lc, lim, pinned, tries, ret_node, err);
}

/* The node of a sandbox for an existing workspace w (borrowed) into
 * *ret_node (caller frees): a clone's is placed as a new managed one's
 * (its source can be sent to another node, clone_source.c), *ret_placed
 * then naming a choice among several; a direct or managed workspace goes
 * where its files are: 'local', or the node whose volume holds a managed
 * workspace kept there (refused with why when that node cannot take it
 * now); any other node asked is refused. */
static int place_existing(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                          const struct workspace_record *w, const struct lifecycle_limits *lim,
                          const struct policy_placement_tries *tries, char **ret_node, char **ret_placed,
                          struct cp_error **err)
{
	if (!strcmp(w->mode, "clone")) {
		int placed = place_new(lc, opts, 0, lim, tries, ret_node, err);
		if (placed == 1)
			*ret_placed = xstrdup(*ret_node);
		return placed < 0 ? -1 : 0;
	}
	const char *home = w->node ? w->node : STORE_NODE_LOCAL; /* where its files are */
	if (opts->node && !lifecycle_node_same(opts->node, home))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s workspace '%s' stays on node '%s': its files are there; create without 'node' "
		                    "(another node takes a new managed workspace or a clone, docs/nodes.md)",
		                    w->mode, w->id, home);
	if (!lifecycle_node_is_local(home)) {
		/* A managed workspace kept on its node: back there, if it can. */
		if (lifecycle_place(lc, lim, home, tries, ret_node, err) < 0)
			return cp_error_prefix(err, "workspace '%s' has its files on node '%s'", w->id, home);
		return 0;
	}
	enum node_state local_state = NODE_READY;
	if (store_node_local_state(lc->store, &local_state, err) < 0)
		return -1;
	if (local_state == NODE_DRAINING)
		return cp_error_set(
		    err, CP_ERR_UNAVAILABLE,
		    "node 'local' is draining (chat2sbx node drain local): no new sandbox is made on this "
		    "machine, and %s workspace '%s' has its files here; the person can run "
		    "'chat2sbx node resume local'",
		    w->mode, w->id);
	*ret_node = xstrdup(STORE_NODE_LOCAL);
	return 0;
}

/* A clone placed on another node: its source made here (clone_source.c)
 * into *source. When placement chose the node (not the caller) and the
 * source cannot go there for its size (LIMIT), the sandbox goes to 'local'
 * instead, where the directory is mounted: *ret_node becomes 'local' and
 * *ret_placed is dropped. */
static int clone_source_or_local(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                                 const struct lifecycle_limits *lim, const struct workspace_record *w, uint64_t dev,
                                 uint64_t ino, char **ret_node, char **ret_placed,
                                 struct lifecycle_clone_source *source, struct cp_error **err)
{
	if (lifecycle_clone_source_make(lc, w, dev, ino, source, err) == 0)
		return 0;
	int pinned = opts->node && !lifecycle_node_is_local(opts->node);
	if (pinned || (*err)->code != CP_ERR_LIMIT)
		return cp_error_prefix(err, "on node '%s'", *ret_node);
	/* 'local' as placement would take it: not drained, room, memory. */
	_cleanup_free_ char *local = NULL;
	_cleanup_error_ struct cp_error *why = NULL;
	if (lifecycle_place(lc, lim, STORE_NODE_LOCAL, NULL, &local, &why) < 0)
		return cp_error_prefix(err,
		                       "on node '%s', and node 'local', where the directory is, cannot take it (%s)",
		                       *ret_node, why->message);
	log_info("lifecycle", "clone of workspace %s goes to node local instead of %s: %s", w->id, *ret_node,
	         (*err)->message);
	cp_error_freep(err);
	free(*ret_node);
	*ret_node = xstrdup(STORE_NODE_LOCAL);
	free(*ret_placed);
	*ret_placed = NULL;
	return 0;
}

/* lifecycle_sandbox_create; pool_member: lifecycle_pool_member_create.
 * *ret_placed (caller frees; NULL when none) names the node placement chose
 * among several, for another try after a capacity failure. */
static int create_sandbox(struct lifecycle *lc, const struct lifecycle_create_options *opts, int pool_member,
                          const struct policy_placement_tries *tries, char **ret_placed,
                          struct lifecycle_create_result *ret, struct cp_error **err)
{
	/* Declared before any goto so their cleanups never see garbage. */
	_cleanup_free_ char *id = NULL;
	_cleanup_free_ char *container_id = NULL;
	_cleanup_(helper_channel_unrefp) struct helper_channel *ch = NULL;
	struct workspace_record ws = {0};
	int new_workspace = 0;
	struct lifecycle_limits lim = {0};
	uint64_t mount_dev = 0, mount_ino = 0; /* host identity of a host workspace (mount_verify.c) */
	_cleanup_(guard_git_clear) struct guard_git guard = {0}; /* direct mode (git_guard.c) */
	_cleanup_free_ char *node = NULL;                        /* where it goes (issue 28) */
	/* a clone's source on another node (clone_source.c) */
	_cleanup_(lifecycle_clone_source_clear) struct lifecycle_clone_source source = {.fd = -1};
	*ret = (struct lifecycle_create_result){0};
	*ret_placed = NULL;

	/* Earlier failed creates on this machine first: they hold a place
	 * under its limit until undone (another node's: the maintenance pass). */
	lifecycle_undo_run_on(lc, STORE_NODE_LOCAL);
	if (lifecycle_create_limits(lc, opts, &lim, err) < 0)
		return -1; /* nothing created yet */
	if (opts->workspace_id && opts->workspace_path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "give either workspace_id (an existing workspace) or workspace_path (a host "
		                    "directory), not both");
	/* "managed" names the default explicitly (the reference systems' own call). */
	int managed_mode = opts->workspace_mode && !strcmp(opts->workspace_mode, "managed");
	if (managed_mode && (opts->workspace_path || opts->workspace_id))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "workspace_mode 'managed' makes a new managed workspace; it does not go with "
		                    "workspace_path or workspace_id");
	if (opts->workspace_mode && !managed_mode && !opts->workspace_path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "workspace_mode '%s' only applies with workspace_path (a host directory)",
		                    opts->workspace_mode);
	report_step(opts, "options checked", 1);

	if (opts->workspace_path) {
		int r = resolve_host_path(lc, opts, &ws, ret, err);
		if (r != 0)
			return r < 0 ? -1 : 0; /* approval required: nothing to create */
	} else if (opts->workspace_id) {
		if (store_workspace_get(lc->store, opts->workspace_id, &ws, err) < 0)
			return -1;
	} else {
		int placed = place_new(lc, opts, pool_member, &lim, tries, &node, err);
		if (placed < 0 || lifecycle_limits_on_node(lc, node, &lim, err) < 0)
			return -1; /* nothing created yet */
		if (placed == 1)
			*ret_placed = xstrdup(node);
		/* Warm pool (pool.c): a ready member of the chosen node answers at once. */
		int claimed = pool_member ? 0 : lifecycle_pool_claim(lc, node, opts, ret, err);
		if (claimed != 0)
			return claimed < 0 ? -1 : 0;
		if (check_limit(lc, node, err) < 0 || make_managed_workspace(lc, node, &ws, err) < 0)
			return -1;
		new_workspace = 1;
	}
	if (!new_workspace) {
		if (ws.sandbox_id) {
			/* One workspace, one live sandbox: hand back the one it has. */
			int r = answer_reused(lc, ws.id, &lim, ret, err);
			workspace_record_clear(&ws);
			return r;
		}
		/* An expired clone sandbox of this workspace starts again with its
		 * clone as it was (expired.c). */
		int revived = lifecycle_expired_revive(lc, &ws, &lim, ret, err);
		if (revived != 0) {
			workspace_record_clear(&ws);
			return revived < 0 ? -1 : 0;
		}
		if (ws.trashed_at_ms > 0 && ws.volume) {
			cp_error_set(err, CP_ERR_CONFLICT,
			             "workspace '%s' was retired after 30 days without a sandbox; its files are in the "
			             "volume '%s' of node '%s' (docker volume ls there); create a sandbox without "
			             "workspace_id for a new one",
			             ws.id, ws.volume, ws.node);
			goto fail_workspace;
		} else if (ws.trashed_at_ms > 0) {
			cp_error_set(err, CP_ERR_CONFLICT,
			             "workspace '%s' was moved to the trash after 30 days without a sandbox; its files "
			             "are in '%s' on the host; create a sandbox without workspace_id for a new one",
			             ws.id, ws.path);
			goto fail_workspace;
		}
		if (place_existing(lc, opts, &ws, &lim, tries, &node, ret_placed, err) < 0 ||
		    (strcmp(ws.mode, "managed") &&
		     recheck_host_workspace(lc, &ws, lim.runtime, &mount_dev, &mount_ino, &guard, err) < 0) ||
		    (!lifecycle_node_is_local(node) && !strcmp(ws.mode, "clone") &&
		     clone_source_or_local(lc, opts, &lim, &ws, mount_dev, mount_ino, &node, ret_placed, &source, err) <
		         0) ||
		    lifecycle_limits_on_node(lc, node, &lim, err) < 0 || check_limit(lc, node, err) < 0 ||
		    lifecycle_workspace_volume_check(lc, &ws, err) < 0)
			goto fail_workspace;
	}

	if (id_new("sbx_", &id, err) < 0)
		goto fail_workspace;
	struct sandbox_record row = {
	    .id = id,
	    .workspace_id = ws.id,
	    .status = SANDBOX_CREATING,
	    .container_name = id,
	    .image = (char *)lifecycle_sandbox_image(lc),
	    .runtime = (char *)lim.runtime,
	    .vm_accel = policy_runtime_is_vm(lim.runtime) ? (char *)lifecycle_vm_accel(lc, NULL) : NULL,
	    .memory_bytes = lim.memory_bytes,
	    .nano_cpus = lim.nano_cpus,
	    .network = lim.network,
	    .disk_bytes = lim.disk_bytes,
	    .created_at_ms = clock_now_ms(),
	    .pooled = pool_member,
	    .node = node, /* recorded by the insert that creates the row; NULL = local */
	};
	if (lifecycle_sandbox_insert_limited(lc, &row, err) < 0) {
		if ((*err)->code == CP_ERR_CONFLICT && !new_workspace) {
			/* A concurrent create won the race for this workspace: reuse its sandbox. */
			cp_error_freep(err);
			int r = answer_reused(lc, ws.id, &lim, ret, err);
			workspace_record_clear(&ws);
			return r;
		}
		goto fail_workspace;
	}

	int64_t t0 = clock_monotonic_ms();
	if (policy_runtime_is_vm(row.runtime) && guard_vm_workspace_prepare(&lc->host, &ws, err) < 0)
		goto fail_sandbox;
	if (!strcmp(ws.mode, "clone")) /* what its saves compare with (export_apply.c) */
		export_source_record(lc->store, id, &ws);
	report_step(opts, "workspace ready", 2);
	int kept = !new_workspace && !strcmp(ws.mode, "managed") && ws.volume;
	if (start_container(lc, &row, &ws, kept, &guard, mount_dev, mount_ino, &source, &container_id, &ch, opts, err) <
	        0 ||
	    verify_host_mount(lc, &row, &ws, ch, container_id, mount_dev, mount_ino, &guard, err) < 0 ||
	    (!strcmp(ws.mode, "clone") && copy_into_workspace(lc, ch, id, &ret->copy_session_id, opts, err) < 0)) {
		cp_error_prefix(err, "create sandbox '%s'", id);
		goto fail_sandbox;
	}
	if (store_sandbox_set_status(lc->store, id, SANDBOX_RUNNING, container_id, NULL, clock_now_ms(), err) < 0)
		goto fail_sandbox;
	log_info("lifecycle", "created sandbox %s (%s workspace %s, container %.12s) in %lld ms", id, ws.mode, ws.id,
	         container_id, (long long)(clock_monotonic_ms() - t0));
	workspace_record_clear(&ws);
	if (store_sandbox_get(lc->store, id, &ret->sandbox, err) < 0)
		return -1;
	/* Its calls find the row and the .git mounts in memory (call_state.c). */
	lifecycle_call_state_remember(lc, id, &ret->sandbox, guard.mounts, guard.n);
	return 0;

fail_sandbox:
	undo_create(lc, id, node, container_id, new_workspace ? &ws : NULL);
	free(ret->copy_session_id);
	ret->copy_session_id = NULL;
	workspace_record_clear(&ws);
	return -1;
fail_workspace:
	if (new_workspace) {
		/* The row first: a directory without its row is only clutter, a row
		 * without its directory a workspace that cannot be used. */
		_cleanup_error_ struct cp_error *e = NULL;
		if (store_workspace_delete(lc->store, ws.id, &e) == 0)
			rmdir(ws.path);
		else
			log_warn("lifecycle", "undo create of workspace '%s': %s (its empty directory stays with it)",
			         ws.id, e->message);
	}
	workspace_record_clear(&ws);
	return -1;
}

int lifecycle_sandbox_create(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                             struct lifecycle_create_result *ret, struct cp_error **err)
{
	/* A create that failed for capacity on a node placement chose is tried
	 * on another (policy_placement_retry), at most POLICY_PLACEMENT_MAX_TRIES. */
	struct policy_placement_tries tries = {0};
	char *tried[POLICY_PLACEMENT_MAX_TRIES] = {0}; /* own the names tries borrows */
	size_t n_tried = 0;
	int r;
	for (;;) {
		char *placed = NULL;
		r = create_sandbox(lc, opts, 0, &tries, &placed, ret, err);
		if (r == 0 || !placed || n_tried == POLICY_PLACEMENT_MAX_TRIES) {
			free(placed);
			break;
		}
		tried[n_tried++] = placed;
		if (!policy_placement_retry(&tries, placed, (*err)->code, (*err)->detail))
			break;
		log_info("lifecycle", "create on node %s failed for capacity (%s); trying another node", placed,
		         (*err)->message);
		cp_error_freep(err);
	}
	for (size_t i = 0; i < n_tried; i++)
		free(tried[i]);
	return r;
}

int lifecycle_pool_member_create(struct lifecycle *lc, const char *node, struct lifecycle_create_result *ret,
                                 struct cp_error **err)
{
	const struct lifecycle_create_options defaults = {.node = node};
	_cleanup_free_ char *placed = NULL;
	return create_sandbox(lc, &defaults, 1, NULL, &placed, ret, err);
}
