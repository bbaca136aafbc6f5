/* lifecycle.c: the lifecycle object: lifecycle_new (the limits in force,
 * the runtime new sandboxes get, how the warm pool makes a member) and
 * lifecycle_free (threads first, then the tables), and its accessors.
 * Nothing here talks to a sandbox. */
#include <stdlib.h>

#include "../base/xalloc.h"
#include "export_internal.h"
#include "lifecycle_internal.h"

int lifecycle_new(const struct config *cfg, struct store *store, struct docker_engine *engine, struct lifecycle **ret,
                  struct cp_error **err)
{
	struct policy_sandbox_limits limits;
	if (guard_host_limits(cfg, NULL, &limits, err) < 0)
		return -1;
	struct lifecycle *lc = xcalloc(1, sizeof(*lc));
	lc->limits = limits;
	lc->cfg = cfg;
	lc->store = store;
	lc->engine = engine;
	lc->host = (struct guard_host){cfg, store, engine};
	lc->git_watch = guard_git_watch_new(&lc->host, lifecycle_sandbox_fail_hook, lc);
	lc->pool_member_create = lifecycle_pool_member_create;
	/* Every git a save or an apply runs on a sandbox's bytes gets these
	 * bounds (export_git.c); set before any thread can save. */
	export_git_configure((uint64_t)cfg->save_memory_bytes, (uint64_t)cfg->max_export_bytes);
	pthread_mutex_init(&lc->lock, NULL);
	pthread_mutex_init(&lc->attach_lock, NULL);
	pthread_cond_init(&lc->attach_cond, NULL);
	pthread_mutex_init(&lc->create_lock, NULL);
	pthread_mutex_init(&lc->node_lock, NULL);
	pthread_mutex_init(&lc->relay_lock, NULL);
	pthread_cond_init(&lc->relay_cond, NULL);
	lc->unsaved = lifecycle_unsaved_probes_new();
	if (lifecycle_vm_select(lc, err) < 0) { /* which runtime new sandboxes get (guards.c) */
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
	guard_git_watch_free(lc->git_watch);        /* first: its thread uses the rest */
	lifecycle_activity_flush(lc, NULL);         /* the calls' activity held in memory */
	lifecycle_unsaved_probes_free(lc->unsaved); /* before the channels and the store its probes use */
	lifecycle_channels_clear(lc);
	lifecycle_holds_clear(lc);
	lifecycle_undos_clear(lc);
	lifecycle_relays_stop_all(lc);    /* their connections use the nodes' engines */
	lifecycle_node_engines_clear(lc); /* after the channels: a relay thread may use one */
	pthread_mutex_destroy(&lc->relay_lock);
	pthread_cond_destroy(&lc->relay_cond);
	pthread_mutex_destroy(&lc->node_lock);
	pthread_mutex_destroy(&lc->lock);
	pthread_mutex_destroy(&lc->attach_lock);
	pthread_cond_destroy(&lc->attach_cond);
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
void lifecycle_node_health_set(struct lifecycle *lc, struct node_health *health)
{
	lc->health = health;
}
int lifecycle_sandbox_engine(struct lifecycle *lc, const struct sandbox_record *s, struct docker_engine **ret,
                             struct cp_error **err)
{
	return lifecycle_node_engine(lc, s->node, ret, err);
}
