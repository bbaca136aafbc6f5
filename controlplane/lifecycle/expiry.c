/* expiry.c: sandboxes nobody used for the idle timeout (24 h by default) are
 * removed: container gone, row removed, workspace kept with its retention
 * clock started (DESIGN.md, Sandboxes: lifetime). Every tool call that
 * reaches a sandbox records activity at its start and its end, and holds the
 * sandbox in between (activity.c), so a running call is never interrupted.
 * Runs on serve's maintenance thread, never inside a tool call. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

static int idle(const struct sandbox_record *s, int64_t now_ms, int64_t timeout_ms)
{
	return strcmp(s->status, "running") == 0 && s->last_activity_ms + timeout_ms <= now_ms;
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

/* Removes one idle sandbox unless a call holds it or touched it since the
 * list was read. Returns 1 when removed. */
static int expire_one(struct lifecycle *lc, const char *id, int64_t now_ms, int64_t timeout_ms)
{
	if (!lifecycle_expire_claim(lc, id))
		return 0; /* a call holds it: it is not idle */
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
	char msg[160];
	snprintf(msg, sizeof(msg), "no tool call for %lld s (idle timeout %lld s); workspace %s kept",
	         (long long)((now_ms - s.last_activity_ms) / 1000), (long long)(timeout_ms / 1000), s.workspace_id);
	if (lifecycle_sandbox_destroy(lc, id, NULL, &e) < 0) {
		log_warn("lifecycle", "expiry of %s: %s (next pass retries)", id, e->message);
		audit_expiry(lc, &s, now_ms, cp_error_code_name(e->code), e->message);
		goto out;
	}
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
	int64_t timeout_ms = lc->cfg->idle_timeout_ms > 0 ? lc->cfg->idle_timeout_ms : LIFECYCLE_IDLE_TIMEOUT_MS;
	struct sandbox_record *rows = NULL;
	size_t n = 0;
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
