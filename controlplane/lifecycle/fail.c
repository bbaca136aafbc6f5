/* fail.c: marking a running sandbox failed: its channel dropped, its row
 * 'failed' with the reason unless it has left 'running' meanwhile. Shared by
 * everything that finds a running sandbox broken (recovery.c, and the .git
 * guards of guard/ through lifecycle_sandbox_fail_hook), so none of them
 * calls another back.
 * Never touches the container: the caller stops it first when it must. */
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

void lifecycle_sandbox_fail_running(struct lifecycle *lc, const char *id, const char *reason)
{
	lifecycle_channel_drop(lc, id);
	struct sandbox_record now = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_sandbox_get(lc->store, id, &now, &e) < 0 || now.status != SANDBOX_RUNNING) {
		sandbox_record_clear(&now);
		return;
	}
	sandbox_record_clear(&now);
	if (store_sandbox_set_status(lc->store, id, SANDBOX_FAILED, NULL, reason, clock_now_ms(), &e) < 0)
		log_warn("lifecycle", "mark sandbox '%s' failed: %s", id, e->message);
	else
		log_warn("lifecycle", "sandbox %s failed: %s", id, reason);
}

void lifecycle_sandbox_fail_hook(void *ctx, const char *id, const char *reason)
{
	lifecycle_sandbox_fail_running(ctx, id, reason);
}
