/* expiry.c: sandboxes nobody used for the idle timeout (24 h by default) are
 * removed: container gone, row removed, workspace kept with its retention
 * clock started (DESIGN.md, Sandboxes: lifetime). A clone sandbox's work is
 * saved first; when that fails it is stopped instead and kept 'expired'
 * until a later pass saves it (issue 14). Every tool call that
 * reaches a sandbox notes activity at its start and its end, in memory
 * (call_state.c, written here before deciding), and holds the sandbox in
 * between (activity.c), so a running call is never interrupted.
 * Runs on serve's maintenance thread, never inside a tool call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

/* The rule: when a sandbox whose last tool call started or ended at
 * last_ms becomes due for removal: a running one timeout_ms later; an
 * expired one at once (its save failed at an earlier pass and is tried
 * again at every pass, issue 14); any other status never (0). */
static int64_t due_at(enum sandbox_status status, int64_t last_ms, int64_t timeout_ms)
{
	if (status == SANDBOX_EXPIRED)
		return 1;
	return status == SANDBOX_RUNNING ? last_ms + timeout_ms : 0;
}

int64_t lifecycle_idle_timeout_ms(const struct lifecycle *lc)
{
	return lc->cfg->idle_timeout_ms > 0 ? lc->cfg->idle_timeout_ms : LIFECYCLE_IDLE_TIMEOUT_MS;
}

/* Due now by the rule. */
static int idle(const struct sandbox_record *s, int64_t now_ms, int64_t timeout_ms)
{
	int64_t at = due_at(s->status, s->last_activity_ms, timeout_ms);
	return at > 0 && at <= now_ms;
}

int64_t lifecycle_idle_expiry_at(struct lifecycle *lc, const struct sandbox_record *s)
{
	int64_t last = s->last_activity_ms, unwritten = lifecycle_activity_unwritten(lc, s->id);
	return due_at(s->status, unwritten > last ? unwritten : last, lifecycle_idle_timeout_ms(lc));
}

static void audit_expiry(struct lifecycle *lc, const struct sandbox_record *s, int64_t now_ms, const char *status,
                         const char *message)
{
	struct audit_record a = {
	    .at_ms = now_ms,
	    .actor = "serve",
	    .action = "sandbox.expire",
	    .sandbox_id = s->id,
	    .target = s->workspace_id,
	    .status = status,
	    .message = message,
	};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_audit_insert(lc->store, &a, &e) < 0)
		log_warn("lifecycle", "audit expiry of %s: %s", s->id, e->message);
}

/* The save failed (removal.c refused): the container is stopped instead,
 * its clone intact, and the row says why; the next pass tries again, and
 * sandbox_create for its workspace starts it again. */
static void stop_instead(struct lifecycle *lc, const struct sandbox_record *s, const struct cp_error *why,
                         int64_t now_ms)
{
	_cleanup_error_ struct cp_error *e = NULL;
	const char *container = s->container_id ? s->container_id : s->container_name;
	lifecycle_channel_drop(lc, s->id);
	struct docker_engine *engine = NULL;
	if ((lifecycle_node_engine(lc, s->node, &engine, &e) < 0 || docker_container_stop(engine, container, &e) < 0) &&
	    e->code != CP_ERR_NOT_FOUND)
		cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "expiry of %s: stop its container", s->id);
	cp_error_freep(&e);
	char reason[1200];
	snprintf(reason, sizeof(reason),
	         "idle past the timeout; its work could not be saved, so its container was stopped, not removed, and "
	         "the save is tried again at every maintenance pass (%s)",
	         why->message);
	if (store_sandbox_set_status(lc->store, s->id, SANDBOX_EXPIRED, NULL, reason, now_ms, &e) < 0)
		log_warn("lifecycle", "expiry of %s: %s", s->id, e->message);
	audit_expiry(lc, s, now_ms, "expired", reason);
	log_warn("lifecycle", "sandbox %s expired but was kept (stopped): %s", s->id, why->message);
}

/* Removes one idle sandbox unless a call holds it or touched it since the
 * list was read. Returns 1 when removed. */
static int expire_one(struct lifecycle *lc, const char *id, int64_t now_ms, int64_t timeout_ms)
{
	if (!lifecycle_expire_claim(lc, id))
		return 0; /* a call holds it: it is not idle */
	/* Calls that ended since the pass's flush are in memory only. */
	lifecycle_activity_flush(lc, id);
	int removed = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	struct sandbox_record s = {0};
	/* Read again under the claim: a call that ended after the list was
	 * read has touched the row, and no call can start now. */
	if (store_sandbox_get(lc->store, id, &s, &e) < 0) {
		log_warn("lifecycle", "expiry of %s: %s", id, e->message);
		goto out;
	}
	if (!idle(&s, now_ms, timeout_ms))
		goto out;
	char msg[240];
	snprintf(msg, sizeof(msg), "no tool call for %lld s (idle timeout %lld s); workspace %s kept",
	         (long long)((now_ms - s.last_activity_ms) / 1000), (long long)(timeout_ms / 1000), s.workspace_id);
	/* A clone's work is saved first (reason expire); no save, no removal. */
	struct lifecycle_destroy_options o = {
	    .reason = "expire", .actor = "serve", .wait_ms = LIFECYCLE_EXPORT_WAIT_LONG_MS};
	struct lifecycle_destroy_result dr = {0};
	if (lifecycle_sandbox_destroy_ex(lc, id, &o, &dr, &e) < 0) {
		if (dr.refused) {
			stop_instead(lc, &s, e, now_ms);
		} else {
			log_warn("lifecycle", "expiry of %s: %s (next pass retries)", id, e->message);
			audit_expiry(lc, &s, now_ms, cp_error_code_name(e->code), e->message);
		}
		lifecycle_destroy_result_clear(&dr);
		goto out;
	}
	if (dr.save.export.id) {
		size_t len = strlen(msg);
		snprintf(msg + len, sizeof(msg) - len, "; work saved as %s", dr.save.export.id);
	}
	lifecycle_destroy_result_clear(&dr);
	log_info("lifecycle", "expired sandbox %s: %s", id, msg);
	audit_expiry(lc, &s, now_ms, "ok", msg);
	removed = 1;
out:
	sandbox_record_clear(&s);
	lifecycle_expire_done(lc, id);
	return removed;
}

int lifecycle_expiry_run(struct lifecycle *lc, int64_t now_ms, struct cp_error **err)
{
	int64_t timeout_ms = lifecycle_idle_timeout_ms(lc);
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	lifecycle_activity_flush(lc, NULL); /* the calls' activity, held in memory (call_state.c) */
	if (store_sandbox_list(lc->store, 0, &rows, &n, err) < 0)
		return cp_error_prefix(err, "expire idle sandboxes");
	int removed = 0;
	for (size_t i = 0; i < n; i++) {
		if (idle(&rows[i], now_ms, timeout_ms))
			removed += expire_one(lc, rows[i].id, now_ms, timeout_ms);
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
	return removed;
}
