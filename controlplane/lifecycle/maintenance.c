/* maintenance.c: serve's maintenance thread: at start and once a minute,
 * retention, the remains of saves a kill cut short, idle expiry (after
 * writing the activity calls noted in memory, call_state.c), the
 * removals and undos a full disk kept from finishing, the re-attach of
 * channels an engine or helper restart closed, and the caller's own hook
 * (serve: the host-edge firewall). Never inside a tool call (DESIGN.md,
 * Sandboxes: lifetime). */
#include <stdlib.h>

#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "../base/xalloc.h"
#include "export_internal.h"
#include "lifecycle_internal.h"

#define MAINTENANCE_INTERVAL_MS 60000

struct lifecycle_maintenance {
	struct lifecycle *lc; /* borrowed */
	void (*hook)(void *userdata);
	void *hook_userdata;
	struct periodic *worker; /* the pass at start, then every MAINTENANCE_INTERVAL_MS */
};

/* One pass; every step logs its own failure and the next still runs. */
static long maintenance_pass(void *arg)
{
	struct lifecycle_maintenance *m = arg;
	struct lifecycle *lc = m->lc;
	struct cp_error *e = NULL;
	if (workspace_retention_run(lc->cfg, lc->store, clock_now_ms(), &e) < 0) {
		log_warn("serve", "retention: %s", e->message);
		cp_error_freep(&e);
	}
	if (export_orphans_run(lc->cfg, lc->store, &e) < 0) { /* saves a kill cut short */
		log_warn("serve", "remains of unfinished saves: %s", e->message);
		cp_error_freep(&e);
	}
	if (lifecycle_expiry_run(lc, clock_now_ms(), &e) < 0) {
		log_warn("serve", "expiry: %s", e->message);
		cp_error_freep(&e);
	}
	lifecycle_removing_run(lc); /* removals a full disk kept from finishing */
	lifecycle_undo_run(lc);     /* failed creates a full disk kept from undoing */
	/* Channels closed by an engine or helper restart come back here even
	 * when no tool call asks for them. */
	if (lifecycle_reattach_run(lc, &e) < 0) {
		log_warn("serve", "re-attach: %s", e->message);
		cp_error_freep(&e);
	}
	if (m->hook)
		m->hook(m->hook_userdata);
	return -1; /* the interval */
}

struct lifecycle_maintenance *lifecycle_maintenance_start(struct lifecycle *lc, void (*hook)(void *userdata),
                                                          void *hook_userdata)
{
	struct lifecycle_maintenance *m = xcalloc(1, sizeof(*m));
	*m = (struct lifecycle_maintenance){.lc = lc, .hook = hook, .hook_userdata = hook_userdata};
	m->worker = periodic_start("maintenance", 0, MAINTENANCE_INTERVAL_MS, maintenance_pass, m);
	if (!m->worker) {
		log_warn("serve", "without the maintenance thread idle sandboxes are not expired and closed "
		                  "channels are re-attached only by tool calls");
		free(m);
		return NULL;
	}
	return m;
}

void lifecycle_maintenance_stop(struct lifecycle_maintenance *m)
{
	if (!m)
		return;
	periodic_stop(m->worker);
	free(m);
}
