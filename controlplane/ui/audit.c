/* audit.c: the audit row of a decision made on the page (ui_internal.h,
 * ui_audit): actor "ui", beside the CLI's and the MCP requests' rows. */
#include "../base/clock.h"
#include "../base/log.h"
#include "../store/store.h"
#include "ui_internal.h"

void ui_audit(struct ui_req *r, const char *action, const char *target, const char *sandbox_id,
              const struct cp_error *err)
{
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = "ui",
	                         .action = action,
	                         .sandbox_id = sandbox_id,
	                         .target = target,
	                         .status = err ? cp_error_code_name(err->code) : "ok",
	                         .message = err ? err->message : NULL};
	struct cp_error *e = NULL;
	if (store_audit_insert(r->ui->deps.store, &a, &e) < 0) {
		log_warn("ui", "the audit row of %s was not written: %s", action, e->message);
		cp_error_free(e);
	}
}
