/* recovery.c: bringing a sandbox's helper channel back after its stream
 * closed (the helper restarted, the engine restarted, serve restarted), on a
 * tool call or from the maintenance pass. Tells the engine being away (the
 * call fails fast with UNAVAILABLE and the row is left as it is) from the
 * sandbox being gone (its row becomes failed with the reason, using the
 * reconcile decision table), and notices a helper that started again (its
 * hello carries a boot id): sessions it was running are then reported lost by
 * the helper itself. A sandbox on a host workspace whose restarted container
 * mounted another directory than its create verified (mount_verify.c) is
 * stopped and marked failed. Never removes a container. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

/* A helper that started this long after its sandbox was created has been
 * restarted at least once (creation waits at most for the hello). */
#define RESTART_SLACK_MS (POLICY_HELLO_TIMEOUT_MS + 60000)

static int failed_error(struct cp_error **err, const char *id, const char *reason)
{
	return cp_error_set(err, CP_ERR_CONFLICT,
	                    "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", id,
	                    reason);
}

/* Replaces an engine failure (the engine is stopped, restarting or hung)
 * with one message that says what is wrong and what to do. A connect that
 * failed (detail ENGINE_UNREACHABLE, set by docker/) is said by its cause;
 * any other failure keeps its whole message as the detail. */
static int engine_error(struct lifecycle *lc, const struct sandbox_record *s, struct cp_error **err)
{
	_cleanup_free_ char *detail = (*err)->detail == CP_DETAIL_ENGINE_UNREACHABLE
	                                  ? xstrdup(docker_engine_unreachable_cause((*err)->errnum))
	                                  : xstrdup((*err)->message);
	enum cp_error_code code = (*err)->code;
	cp_error_freep(err);
	if (!lifecycle_node_is_local(s->node))
		return cp_error_set(err, code,
		                    "node '%s' is not answering (%s), so sandbox '%s' on it cannot be reached; the "
		                    "sandbox is kept and is re-attached once the node answers again ('chat2sbx node "
		                    "show %s')",
		                    s->node, detail, s->id, s->node);
	return cp_error_set(err, code,
	                    "the Docker Engine at '%s' does not answer (%s), so sandbox '%s' cannot be reached; start "
	                    "the engine ('sudo systemctl start docker' or 'dockerd &') and retry. The sandbox is kept "
	                    "and is re-attached once the engine is back",
	                    docker_engine_socket(lc->engine), detail, s->id);
}

int lifecycle_helper_greet(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel *ch,
                           char ret_boot[40], struct cp_error **err)
{
	_cleanup_json_ struct json_object *res = NULL;
	if (helper_channel_call(ch, "hello", NULL, guard_vm_hello_timeout_ms(s->runtime), &res, err) < 0)
		return -1;
	if (helper_version_check(res, NULL, err) < 0)
		return -1;
	struct json_object *v = NULL;
	const char *boot = json_object_object_get_ex(res, "boot_id", &v) && json_object_is_type(v, json_type_string)
	                       ? json_object_get_string(v)
	                       : "";
	int64_t started = json_object_object_get_ex(res, "started_at_ms", &v) && json_object_is_type(v, json_type_int)
	                      ? json_object_get_int64(v)
	                      : 0;
	char prev[40], when[40], created[40];
	if (ret_boot)
		snprintf(ret_boot, 40, "%s", boot);
	lifecycle_channel_boot_swap(lc, s->id, boot, prev, sizeof(prev));
	if (prev[0] && boot[0] && strcmp(prev, boot) != 0)
		log_warn("lifecycle",
		         "sandbox %s was restarted: its helper started again at %s (its container was restarted: "
		         "by an engine restart, after the helper crashed, or by hand); its sessions that were running "
		         "are reported lost",
		         s->id, clock_format_rfc3339(started, when, sizeof(when)));
	else if (!prev[0] && started > s->created_at_ms + RESTART_SLACK_MS)
		log_info("lifecycle",
		         "sandbox %s has been restarted since it was created at %s: its helper started at %s; "
		         "sessions interrupted then are reported lost",
		         s->id, clock_format_rfc3339(s->created_at_ms, created, sizeof(created)),
		         clock_format_rfc3339(started, when, sizeof(when)));
	lifecycle_channel_go_direct(lc, s, ch);
	return 0;
}

/* The engine resolves a bind source again at every container start, so a
 * re-attached sandbox on a host workspace must still see the directory its
 * create verified (mount_verify.c; the identity is in its row, migration
 * 0007), and the .git paths mounted over it (git_guard.c, migration 0009). Checked on every re-attach, not only when
 * the boot id changed: a serve restart forgets the boot ids. On a mismatch the container is stopped and the row marked
 * failed with the reason. */
static int recheck_mount(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel *ch,
                         const char *container, struct cp_error **err)
{
	uint64_t dev = 0, ino = 0;
	int has = store_sandbox_get_mount_identity(lc->store, s->id, &dev, &ino, err);
	if (has <= 0 || !guard_mount_runtime_verifiable(s->runtime))
		return has < 0 ? -1 : 0;
	struct workspace_record w = {0};
	if (store_workspace_get(lc->store, s->workspace_id, &w, err) < 0)
		return -1;
	/* The .git protection of a direct workspace too (migration 0009): the
	 * engine mounted each source path again. */
	struct sandbox_mount_record *m = NULL;
	size_t n = 0;
	if (lifecycle_call_mounts(lc, s->id, &m, &n, err) < 0) {
		workspace_record_clear(&w);
		return -1;
	}
	const char *target = !strcmp(w.mode, "clone") ? POLICY_SOURCE_TARGET : POLICY_WORKSPACE_TARGET;
	int r;
	if (policy_runtime_is_vm(s->runtime)) {
		r = guard_vm_mounts_verify(&lc->host, container, s, w.mode, w.path, dev, ino, m, n, err);
	} else {
		r = guard_mount_verify(&lc->host, ch, s->id, target, w.path, dev, ino, err);
		if (r == 0)
			r = guard_git_verify(&lc->host, ch, s->id, m, n, err);
		if (r == 0 && n)
			r = guard_mounts_verify(&lc->host, ch, s, w.mode, m, n, err);
	}
	workspace_record_clear(&w);
	for (size_t i = 0; i < n; i++)
		sandbox_mount_record_clear(&m[i]);
	free(m);
	if (r == 0 || (*err)->code != CP_ERR_DENIED)
		return r;
	char reason[1200];
	snprintf(reason, sizeof(reason), "its container was restarted and mounted another directory or file: %s",
	         (*err)->message);
	cp_error_freep(err);
	_cleanup_error_ struct cp_error *e = NULL;
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, s->node, &engine, &e) < 0 || docker_container_stop(engine, container, &e) < 0)
		log_warn("security", "stop sandbox %s after its mount changed: %s", s->id, e->message);
	lifecycle_sandbox_fail_running(lc, s->id, reason);
	return failed_error(err, s->id, reason);
}

/* With s's re-attach claimed (reattach): inspect, decide, attach, greet.
 * *engine_down is set when the engine itself did not answer. */
static int reattach_locked(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel **ret_channel,
                           int *engine_down, struct cp_error **err)
{
	struct helper_channel *ch = lifecycle_channel_get(lc, s->id);
	if (ch && helper_channel_alive(ch)) {
		*ret_channel = ch; /* another call re-attached it meanwhile */
		return 0;
	}
	helper_channel_unref(ch);

	const char *container = s->container_id ? s->container_id : s->container_name;
	struct docker_container_state st = {0};
	int found = 1;
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, s->node, &engine, err) < 0) {
		*engine_down = 1;
		return engine_error(lc, s, err);
	}
	if (docker_container_inspect(engine, container, &st, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND) {
			*engine_down = 1;
			return engine_error(lc, s, err);
		}
		cp_error_freep(err);
		found = 0;
	}
	struct policy_reconcile_decision d;
	policy_reconcile_decide(POLICY_ROW_RUNNING, policy_container_state_of(found ? st.status : NULL),
	                        found ? st.status : NULL, st.exit_code, &d);
	/* A vm launcher that refused to boot (its mount changed) is restarted
	 * by the engine again and again: it is stopped and the reason kept. */
	const char *vm_reason = found && policy_runtime_is_vm(s->runtime) && guard_vm_refused(&st)
	                            ? guard_vm_exit_reason(st.exit_code)
	                            : NULL;
	int vm_mount_refused = vm_reason && st.exit_code == GUARD_VM_EXIT_MOUNT_CHANGED;
	docker_container_state_clear(&st);
	if (vm_reason) {
		if (vm_mount_refused) /* a security event, as on the runc path (recheck_mount) */
			guard_mount_audit(&lc->host, s->id, POLICY_WORKSPACE_TARGET, vm_reason);
		_cleanup_error_ struct cp_error *e = NULL;
		if (docker_container_stop(engine, container, &e) < 0)
			log_warn("lifecycle", "stop sandbox %s: %s", s->id, e->message);
		lifecycle_sandbox_fail_running(lc, s->id, vm_reason);
		return failed_error(err, s->id, vm_reason);
	}
	if (d.action == POLICY_RECONCILE_MARK_FAILED || d.action == POLICY_RECONCILE_REMOVE_AND_FAIL) {
		lifecycle_sandbox_fail_running(lc, s->id, d.reason);
		return failed_error(err, s->id, d.reason);
	}
	if (d.action != POLICY_RECONCILE_REATTACH)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "sandbox '%s' cannot be reached right now (%s): the engine is starting its "
		                    "container again; retry in a few seconds",
		                    s->id, d.reason[0] ? d.reason : "its container is not running");

	(void)lifecycle_channel_own(lc, s->id); /* when it can (another process may use it) */
	/* Not in the table until the mount checks passed: no call may use it
	 * before (a concurrent call meanwhile finds the old, closed channel
	 * and waits for this re-attach to end). */
	if (lifecycle_attach_unlisted(lc, s->id, s->node, container, &ch, err) < 0) {
		if ((*err)->code == CP_ERR_UNAVAILABLE || (*err)->code == CP_ERR_TIMEOUT) {
			*engine_down = 1;
			return engine_error(lc, s, err);
		}
		return cp_error_prefix(err, "reach the helper of sandbox '%s'", s->id);
	}
	char boot[40] = "";
	if (lifecycle_helper_greet(lc, s, ch, boot, err) < 0) {
		helper_channel_unref(ch);
		if ((*err)->detail == CP_DETAIL_HELPER_VERSION) {
			/* A sandbox that ran across an upgrade keeps the helper it
			 * was started with: nothing a retry would change. Its
			 * container is left running, so its files can be saved. */
			char reason[1200];
			snprintf(
			    reason, sizeof(reason),
			    "%s; chat2sbx was upgraded or downgraded while it ran. Save its work with 'docker cp "
			    "%s:/workspace ./%s-workspace', then remove it with 'chat2sbx sandbox destroy --force %s'",
			    (*err)->message, s->container_name ? s->container_name : container, s->id, s->id);
			lifecycle_channel_drop(lc, s->id);
			lifecycle_sandbox_fail_running(lc, s->id, reason);
			log_warn("lifecycle", "sandbox %s: %s", s->id, reason);
			cp_error_freep(err);
			return failed_error(err, s->id, reason);
		}
		if ((*err)->code == CP_ERR_TIMEOUT) {
			/* The container runs and its stream is open, but the helper
			 * says nothing: nothing a retry would change. */
			char reason[200];
			snprintf(reason, sizeof(reason), "its helper did not answer within %d s after a re-attach",
			         POLICY_HELLO_TIMEOUT_MS / 1000);
			lifecycle_sandbox_fail_running(lc, s->id, reason);
			cp_error_freep(err);
			return failed_error(err, s->id, reason);
		}
		/* A stream that closed meanwhile stays in the table with its boot
		 * id until the next attach replaces it. */
		if ((*err)->code != CP_ERR_UNAVAILABLE)
			lifecycle_channel_drop(lc, s->id);
		return cp_error_prefix(err, "reach the helper of sandbox '%s'", s->id);
	}
	if (recheck_mount(lc, s, ch, container, err) < 0) {
		helper_channel_unref(ch);
		return -1;
	}
	lifecycle_channel_put(lc, s->id, helper_channel_ref(ch)); /* the table's reference */
	lifecycle_channel_boot_swap(lc, s->id, boot, NULL, 0);    /* an entry made just now */
	log_info("lifecycle", "re-attached sandbox %s", s->id);
	*ret_channel = ch;
	return 0;
}

/* One re-attach under way (lifecycle_internal.h: reattaching). */
struct lifecycle_reattaching {
	const char *sandbox_id; /* borrowed from the caller's row */
	struct lifecycle_reattaching *next;
};

static int reattaching(const struct lifecycle *lc, const char *id)
{
	for (const struct lifecycle_reattaching *r = lc->reattaching; r; r = r->next)
		if (!strcmp(r->sandbox_id, id))
			return 1;
	return 0;
}

/* Re-attaches s with no other re-attach of s at the same time (a second
 * caller waits, then finds the first one's channel); re-attaches of other
 * sandboxes run beside it. */
static int reattach(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel **ret_channel,
                    int *engine_down, struct cp_error **err)
{
	struct lifecycle_reattaching me = {.sandbox_id = s->id};
	pthread_mutex_lock(&lc->attach_lock);
	while (reattaching(lc, s->id))
		pthread_cond_wait(&lc->attach_cond, &lc->attach_lock);
	me.next = lc->reattaching;
	lc->reattaching = &me;
	pthread_mutex_unlock(&lc->attach_lock);
	int r = reattach_locked(lc, s, ret_channel, engine_down, err);
	pthread_mutex_lock(&lc->attach_lock);
	for (struct lifecycle_reattaching **p = &lc->reattaching; *p; p = &(*p)->next)
		if (*p == &me) {
			*p = me.next;
			break;
		}
	pthread_cond_broadcast(&lc->attach_cond);
	pthread_mutex_unlock(&lc->attach_lock);
	return r;
}

int lifecycle_sandbox_reattach(struct lifecycle *lc, const struct sandbox_record *s,
                               struct helper_channel **ret_channel, struct cp_error **err)
{
	int engine_down = 0;
	return reattach(lc, s, ret_channel, &engine_down, err);
}

int lifecycle_reattach_run(struct lifecycle *lc, struct cp_error **err)
{
	size_t dropped = lifecycle_channels_drop_dead(lc);
	if (dropped)
		log_debug("lifecycle", "released %zu closed helper channel(s)", dropped);
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	if (store_sandbox_list(lc->store, STORE_SANDBOX_LIST_POOLED, &rows, &n, err) < 0)
		return cp_error_prefix(err, "re-attach sandboxes");
	int attached = 0;
	for (size_t i = 0; i < n; i++) {
		struct sandbox_record *s = &rows[i];
		if (s->status != SANDBOX_RUNNING)
			continue;
		/* An idle sandbox's processes run on: its .git protection is
		 * checked here too, not only at tool calls (git_guard.c). */
		_cleanup_error_ struct cp_error *ge = NULL;
		struct sandbox_mount_record *m = NULL;
		size_t n_m = 0;
		int g = lifecycle_call_mounts(lc, s->id, &m, &n_m, &ge);
		if (g == 0)
			g = guard_git_check(lc->git_watch, s, m, n_m, &ge);
		for (size_t j = 0; j < n_m; j++)
			sandbox_mount_record_clear(&m[j]);
		free(m);
		if (g < 0) {
			log_info("lifecycle", "check sandbox %s: %s", s->id, ge->message);
			continue;
		}
		struct helper_channel *ch = lifecycle_channel_get(lc, s->id);
		int alive = ch && helper_channel_alive(ch);
		helper_channel_unref(ch);
		if (alive)
			continue;
		/* Another process (the doctor's probe, a CLI command) is using its
		 * helper: attaching beside it would interleave our frames with its
		 * on the helper's stdin. Its next call or a later pass attaches. */
		if (lifecycle_channel_own(lc, s->id) == 0) {
			log_debug("lifecycle", "re-attach sandbox %s: another chat2sbx process uses it; later", s->id);
			continue;
		}
		_cleanup_error_ struct cp_error *e = NULL;
		ch = NULL;
		int engine_down = 0;
		if (reattach(lc, s, &ch, &engine_down, &e) == 0) {
			helper_channel_unref(ch);
			attached++;
			continue;
		}
		log_info("lifecycle", "re-attach sandbox %s: %s", s->id, e->message);
		if (engine_down)
			break; /* the next pass tries again */
	}
	for (size_t i = 0; i < n; i++)
		sandbox_record_clear(&rows[i]);
	free(rows);
	return attached;
}
