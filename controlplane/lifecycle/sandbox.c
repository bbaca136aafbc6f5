/* sandbox.c: the call gate: handing a sandbox's helper channel to a tool
 * call from what memory holds of it (call_state.c; the registry is read
 * only when memory holds nothing), refusing failed, removed, expired,
 * paused sandboxes with what to do, re-attaching a closed channel through
 * recovery.c. The lifecycle object is lifecycle.c, create create.c,
 * destroy destroy.c. Never executes anything on the host but engine
 * calls. */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../policy/policy.h"
#include "export_internal.h"
#include "lifecycle_internal.h"

/* Why a row that is not running takes no call, as CONFLICT naming what to do. */
static int not_running(const struct sandbox_record *s, struct cp_error **err)
{
	const char *id = s->id;
	if (s->status == SANDBOX_FAILED)
		return cp_error_set(
		    err, CP_ERR_CONFLICT,
		    "sandbox '%s' has failed (%s); destroy it with sandbox_destroy and create a new one", id,
		    s->failure_reason ? s->failure_reason : "no reason recorded");
	if (s->status == SANDBOX_REMOVED)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "sandbox '%s' was destroyed; create a new one with sandbox_create", id);
	if (s->status == SANDBOX_REMOVING)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "sandbox '%s' is being removed (a removal the registry could not finish yet is "
		                    "finished by the next maintenance pass); create a new one with sandbox_create",
		                    id);
	if (s->status == SANDBOX_EXPIRED)
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
	if (s->status != SANDBOX_RUNNING)
		return not_running(s, err);
	if (store_sandbox_mounts_list(lc->store, id, m, n, err) < 0)
		return -1;
	return 0;
}

/* UNAVAILABLE when s's node is not answering (issue 28): naming the node
 * and since when (UTC), the row and the container left alone. */
static int node_unavailable(struct lifecycle *lc, const struct sandbox_record *s, struct cp_error **err)
{
	int64_t since_ms = 0;
	if (!s->node || node_health_answering(lc->health, s->node, &since_ms))
		return 0;
	char when[64] = "a while";
	time_t t = (time_t)(since_ms / 1000);
	struct tm tm;
	if (since_ms > 0 && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "sandbox '%s' runs on node '%s', which is not answering since %s; the sandbox and its "
	                    "work are kept and answer again once the node does ('chat2sbx node list' shows its "
	                    "state); meanwhile create a new sandbox to work elsewhere",
	                    s->id, s->node, when);
}

struct helper_channel *lifecycle_sandbox_channel_peek(struct lifecycle *lc, const char *id)
{
	if (lifecycle_disk_paused(lc, id, NULL, 0))
		return NULL; /* a frozen helper would only time out */
	struct helper_channel *ch = lifecycle_channel_get(lc, id);
	if (ch && !helper_channel_alive(ch)) {
		helper_channel_unref(ch);
		ch = NULL;
	}
	return ch;
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
	/* Its node stopped answering (node/health.c): say so at once instead
	 * of waiting on an engine that is gone; the row stays as it is. */
	if (node_unavailable(lc, &s, err) < 0)
		goto out;
	/* A direct workspace's .git protection must still be in place: a
	 * host-side replacement of a protected path drops its mount inside
	 * (git_guard.c); then the sandbox is stopped and this call refused. */
	if (guard_git_check(lc->git_watch, &s, m, n, err) < 0)
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
