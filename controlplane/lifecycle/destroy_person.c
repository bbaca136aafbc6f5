/* destroy_person.c: the person's destroy (`chat2sbx sandbox destroy ID
 * [--force]` and the page's Destroy button do exactly this, through this
 * one function): lifecycle_sandbox_destroy_ex with the person's options
 * (reason destroy, the long save wait, force only when asked), and for an
 * id without a registry row the orphan container of this registry, which
 * only force removes (its work cannot be saved without its row), with its
 * exposures. Containers of other registries or of nobody are never
 * touched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

/* No registry row for id: removes this registry's container named id when
 * force, else CONFLICT. 1 when removed; -1 with *err (the NOT_FOUND kept
 * when there is no such container either). */
static int orphan(struct lifecycle *lc, const char *id, int force, struct lifecycle_destroy_result *ret,
                  struct cp_error **err)
{
	struct docker_container_state *cs = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e2 = NULL;
	char label[4200];
	snprintf(label, sizeof(label), "%s=%s", POLICY_LABEL_REGISTRY, lc->cfg->database_path);
	int r = -1;
	if (docker_container_list(lc->engine, label, &cs, &n, &e2) < 0)
		return -1; /* the registry's NOT_FOUND says more than the engine's trouble */
	for (size_t i = 0; i < n; i++) {
		if (r < 0 && !strcmp(cs[i].name, id) && !force) {
			/* Without its row nobody can tell whether it held a clone's
			 * work, or save it: only force removes it. */
			cp_error_freep(err);
			cp_error_set(
			    err, CP_ERR_CONFLICT,
			    "container %s has no registry row, so whatever work it holds (a clone's commits) "
			    "cannot be saved; remove it anyway with force (`chat2sbx sandbox destroy %s --force`, or "
			    "Force on the page's Destroy)",
			    id, id);
		} else if (r < 0 && !strcmp(cs[i].name, id) &&
		           docker_container_remove(lc->engine, cs[i].id, &e2) == 0) {
			cp_error_freep(err);
			r = 1;
		}
		docker_container_state_clear(&cs[i]);
	}
	free(cs);
	cp_error_freep(&e2);
	/* Its sandbox_expose forwarders and network, if any (labelled with its id). */
	if (r == 1 && lifecycle_exposures_remove(lc, id, &e2) < 0) {
		log_warn("lifecycle", "removed orphan container %s: %s", id, e2->message);
		ret->note = xasprintf("its exposed ports were not all removed: %s", e2->message);
	}
	return r;
}

int lifecycle_sandbox_destroy_person(struct lifecycle *lc, const char *id, int force, const char *actor,
                                     struct lifecycle_destroy_result *ret, struct cp_error **err)
{
	struct lifecycle_destroy_options opts = {
	    .force = force, .reason = "destroy", .actor = actor, .wait_ms = LIFECYCLE_EXPORT_WAIT_LONG_MS};
	int r = lifecycle_sandbox_destroy_ex(lc, id, &opts, ret, err);
	if (r < 0 && (*err)->code == CP_ERR_NOT_FOUND)
		r = orphan(lc, id, force, ret, err);
	return r;
}
