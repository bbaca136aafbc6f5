/* sandbox.c: creating and destroying sandboxes, and handing out their helper
 * channels. The order of a create (row → container → attach → start → hello →
 * running) makes every failure undoable: whatever step fails, the container
 * is removed and the rows this call made are deleted, so the registry and the
 * engine agree. Never executes anything on the host but engine calls. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../policy/policy.h"
#include "lifecycle_internal.h"

int lifecycle_new(const struct config *cfg, struct store *store, struct docker_engine *engine, struct lifecycle **ret,
                  struct cp_error **err)
{
	struct lifecycle *lc = calloc(1, sizeof(*lc));
	if (!lc)
		return cp_error_set(err, CP_ERR_INTERNAL, "start lifecycle: out of memory");
	lc->cfg = cfg;
	lc->store = store;
	lc->engine = engine;
	pthread_mutex_init(&lc->lock, NULL);
	pthread_mutex_init(&lc->attach_lock, NULL);
	*ret = lc;
	return 0;
}

void lifecycle_free(struct lifecycle *lc)
{
	if (!lc)
		return;
	lifecycle_channels_clear(lc);
	pthread_mutex_destroy(&lc->lock);
	pthread_mutex_destroy(&lc->attach_lock);
	free(lc);
}

const struct config *lifecycle_config(const struct lifecycle *lc)
{
	return lc->cfg;
}
struct store *lifecycle_store(const struct lifecycle *lc)
{
	return lc->store;
}

int lifecycle_attach(struct lifecycle *lc, const char *sandbox_id, const char *container,
                     struct helper_channel **ret_channel, struct cp_error **err)
{
	int fd = -1;
	if (docker_container_attach(lc->engine, container, 10000, &fd, err) < 0)
		return -1;
	struct helper_channel *ch = NULL;
	if (helper_channel_new(fd, sandbox_id, &ch, err) < 0)
		return -1; /* the channel owns fd even on failure */
	if (lifecycle_channel_put(lc, sandbox_id, ch) < 0) {
		helper_channel_unref(ch);
		return cp_error_set(err, CP_ERR_INTERNAL, "attach to sandbox '%s': out of memory", sandbox_id);
	}
	if (ret_channel)
		*ret_channel = helper_channel_ref(ch);
	return 0;
}

static int helper_hello(struct helper_channel *ch, struct cp_error **err)
{
	_cleanup_json_ struct json_object *res = NULL;
	if (helper_channel_call(ch, "hello", NULL, LIFECYCLE_HELLO_TIMEOUT_MS, &res, err) < 0)
		return -1;
	return 0;
}

static int make_managed_workspace(struct lifecycle *lc, struct workspace_record *ret, struct cp_error **err)
{
	_cleanup_free_ char *id = NULL;
	if (id_new("ws_", &id, err) < 0)
		return -1;
	_cleanup_free_ char *path = NULL;
	if (asprintf(&path, "%s/%s", lc->cfg->workspace_root, id) < 0)
		return cp_error_set(err, CP_ERR_INTERNAL, "create workspace: out of memory");
	/* 0755 inside a 0700 root: the sandbox's own non-root users can read it,
	 * nobody else on the host can reach it. */
	if (mkdir(path, 0755) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "create workspace directory '%s'", path);
	struct workspace_record w = {.id = id, .mode = "managed", .path = path, .created_at_ms = clock_now_ms()};
	if (store_workspace_insert(lc->store, &w, err) < 0) {
		rmdir(path);
		return -1;
	}
	return store_workspace_get(lc->store, id, ret, err);
}

static int ensure_network(struct lifecycle *lc, struct cp_error **err)
{
	pthread_mutex_lock(&lc->attach_lock);
	int r =
	    lc->network_ready ? 0 : docker_network_ensure(lc->engine, LIFECYCLE_NETWORK, LIFECYCLE_LABEL_NETWORK, err);
	if (r == 0)
		lc->network_ready = 1;
	pthread_mutex_unlock(&lc->attach_lock);
	return r;
}

static int start_container(struct lifecycle *lc, const struct sandbox_record *s, const struct workspace_record *w,
                           char **ret_container_id, struct cp_error **err)
{
	char sandbox_env[64];
	snprintf(sandbox_env, sizeof(sandbox_env), "CHAT2SBX_SANDBOX_ID=%s", s->id);
	const char *env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	                     "HOME=/root",
	                     "LANG=C.UTF-8",
	                     "TERM=dumb",
	                     sandbox_env,
	                     NULL};
	const char *entrypoint[] = {LIFECYCLE_HELPER_TARGET, NULL};
	const char *labels[] = {
	    LIFECYCLE_LABEL_SANDBOX, s->id, LIFECYCLE_LABEL_WORKSPACE, w->id, LIFECYCLE_LABEL_REGISTRY,
	    lc->cfg->database_path,  NULL};
	struct docker_mount mounts[] = {
	    {.source = lc->cfg->helper_path, .target = LIFECYCLE_HELPER_TARGET, .read_only = 1},
	    {.source = w->path, .target = LIFECYCLE_WORKSPACE_TARGET, .read_only = 0},
	};
	struct docker_container_spec spec = {
	    .name = s->container_name,
	    .image = s->image,
	    .entrypoint = entrypoint,
	    .env = env,
	    .labels = labels,
	    .working_dir = LIFECYCLE_WORKSPACE_TARGET,
	    .mounts = mounts,
	    .n_mounts = sizeof(mounts) / sizeof(mounts[0]),
	    .memory_bytes = s->memory_bytes,
	    .nano_cpus = s->nano_cpus,
	    .pids_limit = lc->cfg->pids_limit,
	    .network_disabled = !s->network,
	    .network = LIFECYCLE_NETWORK,
	    .runtime = s->runtime,
	};
	if (s->network && ensure_network(lc, err) < 0)
		return -1;
	_cleanup_free_ char *container_id = NULL;
	if (docker_container_create(lc->engine, &spec, &container_id, err) < 0)
		return -1;
	_cleanup_(helper_channel_unrefp) struct helper_channel *ch = NULL;
	if (lifecycle_attach(lc, s->id, container_id, &ch, err) < 0 ||
	    docker_container_start(lc->engine, container_id, err) < 0 || helper_hello(ch, err) < 0) {
		*ret_container_id = TAKE_PTR(container_id); /* the caller removes it */
		return -1;
	}
	*ret_container_id = TAKE_PTR(container_id);
	return 0;
}

/* Undo of a create that failed: nothing of it may remain. */
static void undo_create(struct lifecycle *lc, const char *sandbox_id, const char *container_id,
                        const struct workspace_record *new_workspace)
{
	lifecycle_channel_drop(lc, sandbox_id);
	_cleanup_error_ struct cp_error *e = NULL;
	if (container_id && docker_container_remove(lc->engine, container_id, &e) < 0 && e->code != CP_ERR_NOT_FOUND)
		log_warn("lifecycle", "undo create of sandbox '%s': %s", sandbox_id, e->message);
	cp_error_freep(&e);
	if (store_sandbox_delete(lc->store, sandbox_id, &e) < 0 && e->code != CP_ERR_NOT_FOUND)
		log_warn("lifecycle", "undo create of sandbox '%s': %s", sandbox_id, e->message);
	cp_error_freep(&e);
	if (new_workspace) {
		if (store_workspace_delete(lc->store, new_workspace->id, &e) < 0)
			log_warn("lifecycle", "undo create of workspace '%s': %s", new_workspace->id, e->message);
		rmdir(new_workspace->path); /* only when still empty */
	}
}

int lifecycle_sandbox_create(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                             struct sandbox_record *ret, int *ret_reused, struct cp_error **err)
{
	/* Declared before any goto so their cleanups never see garbage. */
	_cleanup_free_ char *id = NULL;
	_cleanup_free_ char *container_id = NULL;
	int64_t memory = 0;
	if (opts->memory && policy_memory_parse(opts->memory, &memory, err) < 0)
		return -1;

	struct workspace_record ws = {0};
	int new_workspace = 0;
	if (opts->workspace_id) {
		if (store_workspace_get(lc->store, opts->workspace_id, &ws, err) < 0)
			return -1;
		if (ws.sandbox_id) {
			/* One workspace, one live sandbox: hand back the one it has. */
			int r = store_sandbox_get(lc->store, ws.sandbox_id, ret, err);
			workspace_record_clear(&ws);
			if (r == 0)
				*ret_reused = 1;
			return r;
		}
	} else {
		if (make_managed_workspace(lc, &ws, err) < 0)
			return -1;
		new_workspace = 1;
	}

	if (lc->cfg->max_active_sandboxes > 0) {
		int live = 0;
		if (store_sandbox_count_live(lc->store, &live, err) < 0)
			goto fail_workspace;
		if (live >= lc->cfg->max_active_sandboxes) {
			cp_error_set(err, CP_ERR_LIMIT,
			             "the sandbox limit is reached: %d of %d active; destroy a sandbox you no "
			             "longer need (sandbox_list, sandbox_destroy) and try again",
			             live, lc->cfg->max_active_sandboxes);
			goto fail_workspace;
		}
	}

	if (id_new("sbx_", &id, err) < 0)
		goto fail_workspace;
	struct sandbox_record row = {
	    .id = id,
	    .workspace_id = ws.id,
	    .status = "creating",
	    .container_name = id,
	    .image = lc->cfg->template_image,
	    .runtime = lc->cfg->runtime[0] ? lc->cfg->runtime : NULL,
	    .memory_bytes = memory,
	    .network = 1,
	    .created_at_ms = clock_now_ms(),
	};
	if (store_sandbox_insert(lc->store, &row, err) < 0) {
		if ((*err)->code == CP_ERR_CONFLICT && !new_workspace) {
			/* A concurrent create won the race for this workspace: reuse its sandbox. */
			cp_error_freep(err);
			int r = store_sandbox_get_live_for_workspace(lc->store, ws.id, ret, err);
			workspace_record_clear(&ws);
			if (r == 0)
				*ret_reused = 1;
			return r;
		}
		goto fail_workspace;
	}

	int64_t t0 = clock_monotonic_ms();
	if (start_container(lc, &row, &ws, &container_id, err) < 0) {
		cp_error_prefix(err, "create sandbox '%s'", id);
		undo_create(lc, id, container_id, new_workspace ? &ws : NULL);
		workspace_record_clear(&ws);
		return -1;
	}
	if (store_sandbox_set_status(lc->store, id, "running", container_id, NULL, clock_now_ms(), err) < 0) {
		undo_create(lc, id, container_id, new_workspace ? &ws : NULL);
		workspace_record_clear(&ws);
		return -1;
	}
	log_info("lifecycle", "created sandbox %s (workspace %s, container %.12s) in %lld ms", id, ws.id, container_id,
	         (long long)(clock_monotonic_ms() - t0));
	workspace_record_clear(&ws);
	*ret_reused = 0;
	return store_sandbox_get(lc->store, id, ret, err);

fail_workspace:
	if (new_workspace) {
		_cleanup_error_ struct cp_error *e = NULL;
		store_workspace_delete(lc->store, ws.id, &e);
		rmdir(ws.path);
	}
	workspace_record_clear(&ws);
	return -1;
}

int lifecycle_sandbox_destroy(struct lifecycle *lc, const char *id, struct sandbox_record *ret, struct cp_error **err)
{
	struct sandbox_record s = {0};
	if (store_sandbox_get(lc->store, id, &s, err) < 0)
		return -1;
	if (strcmp(s.status, "removed") == 0) {
		/* Destroy is idempotent: a second call answers the removed sandbox. */
		if (ret)
			*ret = s;
		else
			sandbox_record_clear(&s);
		return 0;
	}
	lifecycle_channel_drop(lc, id);
	const char *container = s.container_id ? s.container_id : s.container_name;
	if (docker_container_remove(lc->engine, container, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND) {
			cp_error_prefix(err, "destroy sandbox '%s'", id);
			sandbox_record_clear(&s);
			return -1;
		}
		cp_error_freep(err);
	}
	sandbox_record_clear(&s);
	if (store_sandbox_set_status(lc->store, id, "removed", NULL, NULL, clock_now_ms(), err) < 0)
		return -1;
	log_info("lifecycle", "destroyed sandbox %s", id);
	if (ret)
		return store_sandbox_get(lc->store, id, ret, err);
	return 0;
}

/* Marks a sandbox failed with reason and drops its channel. */
static void mark_failed(struct lifecycle *lc, const char *id, const char *reason)
{
	lifecycle_channel_drop(lc, id);
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_sandbox_set_status(lc->store, id, "failed", NULL, reason, clock_now_ms(), &e) < 0)
		log_warn("lifecycle", "mark sandbox '%s' failed: %s", id, e->message);
	else
		log_warn("lifecycle", "sandbox %s failed: %s", id, reason);
}

int lifecycle_sandbox_channel(struct lifecycle *lc, const char *id, struct helper_channel **ret_channel,
                              struct cp_error **err)
{
	_cleanup_error_ struct cp_error *touch_err = NULL; /* before any goto */
	struct sandbox_record s = {0};
	if (store_sandbox_get(lc->store, id, &s, err) < 0)
		return -1;
	int r = -1;
	if (strcmp(s.status, "running") != 0) {
		if (strcmp(s.status, "failed") == 0)
			cp_error_set(
			    err, CP_ERR_CONFLICT,
			    "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", id,
			    s.failure_reason ? s.failure_reason : "no reason recorded");
		else if (strcmp(s.status, "removed") == 0)
			cp_error_set(err, CP_ERR_CONFLICT,
			             "sandbox '%s' was destroyed; create a new one with sandbox_create", id);
		else
			cp_error_set(err, CP_ERR_CONFLICT, "sandbox '%s' is still being created; try again shortly",
			             id);
		goto out;
	}
	/* Every call that reaches a running sandbox counts as activity. */
	if (store_sandbox_touch(lc->store, id, clock_now_ms(), &touch_err) < 0)
		log_warn("lifecycle", "record activity of %s: %s", id, touch_err->message);

	struct helper_channel *ch = lifecycle_channel_get(lc, id);
	if (ch && helper_channel_alive(ch)) {
		*ret_channel = ch;
		r = 0;
		goto out;
	}
	helper_channel_unref(ch);

	/* The channel is closed: the helper died, or serve restarted. Look at the container. */
	pthread_mutex_lock(&lc->attach_lock);
	ch = lifecycle_channel_get(lc, id);
	if (ch && helper_channel_alive(ch)) {
		pthread_mutex_unlock(&lc->attach_lock);
		*ret_channel = ch;
		r = 0;
		goto out;
	}
	helper_channel_unref(ch);
	struct docker_container_state st = {0};
	const char *container = s.container_id ? s.container_id : s.container_name;
	if (docker_container_inspect(lc->engine, container, &st, err) < 0) {
		if ((*err)->code == CP_ERR_NOT_FOUND) {
			cp_error_freep(err);
			mark_failed(lc, id, "its container no longer exists");
			cp_error_set(err, CP_ERR_CONFLICT,
			             "sandbox '%s' has failed (its container no longer exists); destroy it with "
			             "sandbox_destroy and create a new one",
			             id);
		}
		pthread_mutex_unlock(&lc->attach_lock);
		goto out;
	}
	if (!st.running) {
		char reason[256];
		snprintf(reason, sizeof(reason), "its container stopped (status %s, exit code %d)%s%s", st.status,
		         st.exit_code, st.error && *st.error ? ": " : "", st.error ? st.error : "");
		mark_failed(lc, id, reason);
		cp_error_set(err, CP_ERR_CONFLICT,
		             "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", id,
		             reason);
		docker_container_state_clear(&st);
		pthread_mutex_unlock(&lc->attach_lock);
		goto out;
	}
	docker_container_state_clear(&st);
	r = lifecycle_attach(lc, id, container, ret_channel, err);
	if (r == 0 && helper_hello(*ret_channel, err) < 0) {
		helper_channel_unref(*ret_channel);
		*ret_channel = NULL;
		lifecycle_channel_drop(lc, id);
		r = -1;
	}
	pthread_mutex_unlock(&lc->attach_lock);
	if (r < 0)
		cp_error_prefix(err, "reach the helper of sandbox '%s'", id);
out:
	sandbox_record_clear(&s);
	return r;
}
