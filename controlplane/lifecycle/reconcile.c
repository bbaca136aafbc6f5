/* reconcile.c: at start, make the registry and the engine agree. Sandboxes
 * survive a restart of serve: the helper keeps every session, so re-attaching
 * loses nothing. Containers are never removed here (only an explicit destroy
 * removes one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

static void fail_row(struct lifecycle *lc, const char *id, const char *reason)
{
	struct cp_error *e = NULL;
	if (store_sandbox_set_status(lc->store, id, "failed", NULL, reason, clock_now_ms(), &e) < 0) {
		log_warn("lifecycle", "mark sandbox '%s' failed: %s", id, e->message);
		cp_error_free(e);
	} else {
		log_warn("lifecycle", "sandbox %s failed: %s", id, reason);
	}
}

int lifecycle_reconcile(struct lifecycle *lc, struct cp_error **err)
{
	struct sandbox_record *rows = NULL;
	size_t n_rows = 0;
	if (store_sandbox_list(lc->store, 0, &rows, &n_rows, err) < 0)
		return -1;
	char label[4200];
	snprintf(label, sizeof(label), "%s=%s", LIFECYCLE_LABEL_REGISTRY, lc->cfg->database_path);
	struct docker_container_state *cs = NULL;
	size_t n_cs = 0;
	if (docker_container_list(lc->engine, label, &cs, &n_cs, err) < 0) {
		for (size_t i = 0; i < n_rows; i++)
			sandbox_record_clear(&rows[i]);
		free(rows);
		return cp_error_prefix(err, "reconcile sandboxes");
	}

	int attached = 0, failed = 0;
	for (size_t i = 0; i < n_rows; i++) {
		struct sandbox_record *s = &rows[i];
		if (strcmp(s->status, "running") != 0 && strcmp(s->status, "creating") != 0)
			continue;
		struct docker_container_state *c = NULL;
		for (size_t j = 0; j < n_cs; j++)
			if (strcmp(cs[j].name, s->container_name) == 0)
				c = &cs[j];
		if (strcmp(s->status, "creating") == 0) {
			/* serve died in the middle of a create: never half-usable. */
			if (c) {
				struct cp_error *e = NULL;
				if (docker_container_remove(lc->engine, c->id, &e) < 0)
					cp_error_free(e);
			}
			fail_row(lc, s->id, "chat2sbx stopped while creating it; its container was removed");
			failed++;
			continue;
		}
		if (!c) {
			fail_row(lc, s->id, "its container no longer exists");
			failed++;
			continue;
		}
		if (!c->running) {
			char reason[160];
			snprintf(reason, sizeof(reason), "its container is %s (exit code %d)", c->status, c->exit_code);
			fail_row(lc, s->id, reason);
			failed++;
			continue;
		}
		struct cp_error *e = NULL;
		if (lifecycle_attach(lc, s->id, c->id, NULL, &e) < 0) {
			log_warn("lifecycle", "re-attach sandbox %s: %s (next tool call retries)", s->id, e->message);
			cp_error_free(e);
			continue;
		}
		attached++;
	}
	for (size_t j = 0; j < n_cs; j++) {
		int known = 0;
		for (size_t i = 0; i < n_rows; i++)
			if (strcmp(rows[i].container_name, cs[j].name) == 0)
				known = 1;
		if (!known)
			log_warn("lifecycle",
			         "container %s carries this registry's label but has no live sandbox row; remove it "
			         "with 'chat2sbx sandbox destroy %s'",
			         cs[j].name, cs[j].name);
	}
	log_info("lifecycle", "reconciled: %d sandbox(es) re-attached, %d marked failed", attached, failed);
	for (size_t i = 0; i < n_rows; i++)
		sandbox_record_clear(&rows[i]);
	free(rows);
	for (size_t j = 0; j < n_cs; j++)
		docker_container_state_clear(&cs[j]);
	free(cs);
	return 0;
}
