/* sandbox.c: the lifecycle object (lifecycle_new/free), destroying a
 * sandbox, and handing its helper channel to a tool call (refusing failed,
 * removed, expired, paused sandboxes with what to do; re-attaching a closed
 * channel through recovery.c) from what memory holds of it (call_state.c),
 * reading the registry only when memory holds nothing. Create lives in create.c. Never executes
 * anything on the host but engine calls. */
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
#include "../base/xalloc.h"
#include "../policy/policy.h"
#include "export_internal.h"
#include "lifecycle_internal.h"

int lifecycle_new(const struct config *cfg, struct store *store, struct docker_engine *engine, struct lifecycle **ret,
                  struct cp_error **err)
{
	struct policy_sandbox_limits limits;
	if (lifecycle_host_limits(cfg, NULL, &limits, err) < 0)
		return -1;
	struct lifecycle *lc = xcalloc(1, sizeof(*lc));
	lc->limits = limits;
	lc->cfg = cfg;
	lc->store = store;
	lc->engine = engine;
	/* Every git a save or an apply runs on a sandbox's bytes gets these
	 * bounds (export_git.c); set before any thread can save. */
	export_git_configure((uint64_t)cfg->save_memory_bytes, (uint64_t)cfg->max_export_bytes);
	pthread_mutex_init(&lc->lock, NULL);
	pthread_mutex_init(&lc->attach_lock, NULL);
	pthread_mutex_init(&lc->create_lock, NULL);
	lc->unsaved = lifecycle_unsaved_probes_new();
	if (lifecycle_vm_select(lc, err) < 0) { /* which runtime new sandboxes get (runtime_vm.c) */
		lifecycle_free(lc);
		return -1;
	}
	*ret = lc;
	return 0;
}

void lifecycle_free(struct lifecycle *lc)
{
	if (!lc)
		return;
	lifecycle_git_watch_free(lc);               /* first: its thread uses the rest */
	lifecycle_activity_flush(lc, NULL);         /* the calls' activity held in memory */
	lifecycle_unsaved_probes_free(lc->unsaved); /* before the channels and the store its probes use */
	lifecycle_channels_clear(lc);
	lifecycle_holds_clear(lc);
	lifecycle_undos_clear(lc);
	pthread_mutex_destroy(&lc->lock);
	pthread_mutex_destroy(&lc->attach_lock);
	pthread_mutex_destroy(&lc->create_lock);
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
struct docker_engine *lifecycle_engine(const struct lifecycle *lc)
{
	return lc->engine;
}

/* A model's force met a failed save (issue 23): the sandbox stops (no
 * model call reaches it any more) and its container is kept, stopped, for
 * the person, whose `chat2sbx sandbox destroy --force` alone discards it.
 * The row says why ('failed' with ret->note as the reason). */
static int keep_for_person(struct lifecycle *lc, const struct sandbox_record *s, struct lifecycle_destroy_result *ret,
                           struct cp_error **err)
{
	lifecycle_channel_drop(lc, s->id);
	const char *container = s->container_id ? s->container_id : s->container_name;
	if (docker_container_stop(lc->engine, container, err) < 0 && (*err)->code != CP_ERR_NOT_FOUND)
		return cp_error_prefix(err, "destroy sandbox '%s': %s; stopping it failed", s->id, ret->note);
	cp_error_freep(err);
	if (store_sandbox_set_status(lc->store, s->id, "failed", NULL, ret->note, clock_now_ms(), err) < 0)
		return cp_error_prefix(err,
		                       "destroy sandbox '%s': it is stopped and kept, but the registry could not "
		                       "record it",
		                       s->id);
	log_warn("lifecycle", "sandbox %s: %s", s->id, ret->note);
	return store_sandbox_get(lc->store, s->id, &ret->sandbox, err);
}

int lifecycle_sandbox_destroy_ex(struct lifecycle *lc, const char *id, const struct lifecycle_destroy_options *o,
                                 struct lifecycle_destroy_result *ret, struct cp_error **err)
{
	*ret = (struct lifecycle_destroy_result){0};
	struct sandbox_record s = {0};
	if (store_sandbox_get(lc->store, id, &s, err) < 0)
		return -1;
	if (strcmp(s.status, "removed") == 0) {
		/* Destroy is idempotent: a second call answers the removed sandbox. */
		ret->sandbox = s;
		ret->nothing_to_save = 1;
		return 0;
	}
	/* The work comes out first (removal.c): a clone whose save fails is
	 * left as it is, exposures and all. Then the removal is put on record
	 * ('removing': no tool call reaches it from here on); a registry that
	 * cannot write stops it before anything is removed. */
	int g = lifecycle_removal_guard(lc, &s, o, ret, err);
	if (g == 1) {
		int r = keep_for_person(lc, &s, ret, err);
		sandbox_record_clear(&s);
		return r;
	}
	if (g < 0 || lifecycle_removal_record(lc, &s, err) < 0) {
		cp_error_prefix(err, "destroy sandbox '%s'", id);
		sandbox_record_clear(&s);
		return -1;
	}
	/* Exposed ports go with the sandbox (expose.c), before the container:
	 * removing many forwarders takes a while, and until the container is
	 * gone the row says 'removing', truly. A forwarder the engine would not
	 * remove now is retried by the next reconcile. */
	_cleanup_error_ struct cp_error *expose_err = NULL;
	if (lifecycle_exposures_remove(lc, id, &expose_err) < 0)
		log_warn("lifecycle", "destroy sandbox %s: %s (retried at the next start)", id, expose_err->message);
	lifecycle_channel_drop(lc, id);
	const char *container = s.container_id ? s.container_id : s.container_name;
	if (docker_container_remove(lc->engine, container, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND) {
			cp_error_prefix(err,
			                "destroy sandbox '%s' (its removal is on record: the maintenance pass tries "
			                "again every minute)",
			                id);
			sandbox_record_clear(&s);
			return -1;
		}
		cp_error_freep(err);
	}
	sandbox_record_clear(&s);
	/* The container is gone: when this write fails the row stays
	 * 'removing' and lifecycle_removing_run finishes it. */
	if (store_sandbox_set_status(lc->store, id, "removed", NULL, NULL, clock_now_ms(), err) < 0)
		return cp_error_prefix(
		    err,
		    "destroy sandbox '%s': its container is removed, but the registry could not record "
		    "it (it stays 'removing' until the next maintenance pass finishes it)",
		    id);
	log_info("lifecycle", "destroyed sandbox %s%s%s", id, ret->save.export.id ? ", work saved as " : "",
	         ret->save.export.id ? ret->save.export.id : "");
	return store_sandbox_get(lc->store, id, &ret->sandbox, err);
}

int lifecycle_sandbox_destroy(struct lifecycle *lc, const char *id, struct sandbox_record *ret, struct cp_error **err)
{
	struct lifecycle_destroy_options o = {.reason = "destroy", .actor = "serve"};
	struct lifecycle_destroy_result res = {0};
	int r = lifecycle_sandbox_destroy_ex(lc, id, &o, &res, err);
	if (r == 0 && ret) {
		*ret = res.sandbox;
		res.sandbox = (struct sandbox_record){0};
	}
	lifecycle_destroy_result_clear(&res);
	return r;
}

/* Why a row that is not running takes no call, as CONFLICT naming what to do. */
static int not_running(const struct sandbox_record *s, struct cp_error **err)
{
	const char *id = s->id;
	if (strcmp(s->status, "failed") == 0)
		return cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", id,
		    s->failure_reason ? s->failure_reason : "no reason recorded");
	if (strcmp(s->status, "removed") == 0)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "sandbox '%s' was destroyed; create a new one with sandbox_create", id);
	if (strcmp(s->status, "removing") == 0)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "sandbox '%s' is being removed (a removal the registry could not finish yet is "
		                    "finished by the next maintenance pass); create a new one with sandbox_create",
		                    id);
	if (strcmp(s->status, "expired") == 0)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "sandbox '%s' expired (%s); its container is stopped with its clone intact: call "
		                    "sandbox_create with workspace_id '%s' to start it again",
		                    id, s->failure_reason ? s->failure_reason : "idle", s->workspace_id);
	return cp_error_set(err, CP_ERR_CONFLICT, "sandbox '%s' is still being created; try again shortly", id);
}

/* The registry's view of id when memory holds none (the first call after
 * serve started or a re-attach): the row, refused unless running, and its
 * mounts, both then held for the next calls. */
static int load_running(struct lifecycle *lc, const char *id, struct sandbox_record *s, struct sandbox_mount_record **m,
                        size_t *n, struct cp_error **err)
{
	if (store_sandbox_get(lc->store, id, s, err) < 0)
		return -1;
	if (strcmp(s->status, "running") != 0)
		return not_running(s, err);
	if (store_sandbox_mounts_list(lc->store, id, m, n, err) < 0)
		return -1;
	return 0;
}

int lifecycle_sandbox_channel(struct lifecycle *lc, const char *id, struct helper_channel **ret_channel,
                              struct cp_error **err)
{
	struct sandbox_record s = {0};
	struct sandbox_mount_record *m = NULL;
	size_t n = 0;
	struct helper_channel *ch = NULL;
	int held = 0, r = -1;
	/* A healthy sandbox: everything the gate needs is in memory. */
	int known = lifecycle_call_state_take(lc, id, &ch, &s, &m, &n);
	if (!known && load_running(lc, id, &s, &m, &n, err) < 0)
		goto out;
	/* A full disk froze it (disk_guard.c): say why instead of waiting on it. */
	char paused[700];
	if (lifecycle_disk_paused(lc, id, paused, sizeof(paused))) {
		cp_error_set(err, CP_ERR_UNAVAILABLE,
		             "sandbox '%s' is paused because %s; it resumes on its own, with everything in it, once "
		             "the person at this machine frees space; try again later",
		             id, paused);
		goto out;
	}
	/* A direct workspace's .git protection must still be in place: a
	 * host-side replacement of a protected path drops its mount inside
	 * (git_guard.c); then the sandbox is stopped and this call refused. */
	if (lifecycle_sandbox_guard_check(lc, &s, m, n, err) < 0)
		goto out;
	/* The call holds the sandbox until lifecycle_sandbox_release (expiry
	 * waits for it); taken before the activity is noted, so expiry never
	 * sees an idle row that a call is about to use. */
	if (lifecycle_hold_begin(lc, id, err) < 0)
		goto out;
	held = 1;
	if (!known) {
		lifecycle_call_state_remember(lc, id, &s, m, n);
		helper_channel_unref(ch);
		ch = lifecycle_channel_get(lc, id);
	}
	/* Every call that reaches a running sandbox counts as activity; held
	 * in memory, written by the maintenance pass (lifecycle_activity_flush). */
	lifecycle_activity_note(lc, id, clock_now_ms());
	if (ch && helper_channel_alive(ch)) {
		*ret_channel = TAKE_PTR(ch);
		r = 0;
		goto out;
	}
	/* The channel is closed: the helper or the engine restarted, or serve
	 * did. recovery.c looks at the container and re-attaches or explains. */
	r = lifecycle_sandbox_reattach(lc, &s, ret_channel, err);
out:
	if (ch)
		helper_channel_unref(ch);
	if (r < 0 && held)
		lifecycle_hold_end(lc, id);
	for (size_t i = 0; i < n; i++)
		sandbox_mount_record_clear(&m[i]);
	free(m);
	sandbox_record_clear(&s);
	return r;
}

void lifecycle_sandbox_release(struct lifecycle *lc, const char *id, struct helper_channel *ch)
{
	if (ch)
		helper_channel_unref(ch);
	/* The end of a call counts too: a call longer than the idle timeout
	 * must not leave its sandbox looking idle. Held in memory while the
	 * sandbox has its entry; written at once when it has none. */
	int64_t now = clock_now_ms();
	_cleanup_error_ struct cp_error *e = NULL;
	if (!lifecycle_activity_note(lc, id, now) && store_sandbox_touch(lc->store, id, now, &e) < 0)
		log_warn("lifecycle", "record activity of %s: %s", id, e->message);
	lifecycle_hold_end(lc, id);
}
