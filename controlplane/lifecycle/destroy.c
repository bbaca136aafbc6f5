/* destroy.c: destroying a sandbox (its work saved first through
 * removal.c's rule, the removal put on record, exposures, channel and
 * container removed, the row 'removed'), keeping a clone whose save failed
 * for the person, and finishing the removals a full disk or a stop left
 * 'removing' (the maintenance pass). Never executes anything on the host
 * but engine calls. */
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

/* A model's force met a failed save (issue 23): the sandbox stops (no
 * model call reaches it any more) and its container is kept, stopped, for
 * the person, whose `chat2sbx sandbox destroy --force` alone discards it.
 * The row says why ('failed' with ret->note as the reason). */
static int keep_for_person(struct lifecycle *lc, const struct sandbox_record *s, struct lifecycle_destroy_result *ret,
                           struct cp_error **err)
{
	lifecycle_channel_drop(lc, s->id);
	const char *container = s->container_id ? s->container_id : s->container_name;
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, s->node, &engine, err) < 0 ||
	    (docker_container_stop(engine, container, err) < 0 && (*err)->code != CP_ERR_NOT_FOUND))
		return cp_error_prefix(err, "destroy sandbox '%s': %s; stopping it failed", s->id, ret->note);
	cp_error_freep(err);
	if (store_sandbox_set_status(lc->store, s->id, SANDBOX_FAILED, NULL, ret->note, clock_now_ms(), err) < 0)
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
	if (s.status == SANDBOX_REMOVED) {
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
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, s.node, &engine, err) < 0 ||
	    docker_container_remove(engine, container, err) < 0) {
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
	lifecycle_channel_dir_remove(lc, id);
	lifecycle_workspace_gone(lc, &s);
	sandbox_record_clear(&s);
	/* The container is gone: when this write fails the row stays
	 * 'removing' and lifecycle_removing_run finishes it. */
	if (store_sandbox_set_status(lc->store, id, SANDBOX_REMOVED, NULL, NULL, clock_now_ms(), err) < 0)
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

size_t lifecycle_removing_run(struct lifecycle *lc)
{
	struct sandbox_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_sandbox_list(lc->store, STORE_SANDBOX_LIST_POOLED, &rows, &n, &e) < 0) {
		log_warn("lifecycle", "finish interrupted removals: %s", e->message);
		return 0;
	}
	size_t left = 0;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].status == SANDBOX_REMOVING) {
			/* destroy_ex on a 'removing' row: no save (its guard ran),
			 * exposures, the container again (gone is fine), then
			 * 'removed'. */
			struct lifecycle_destroy_options o = {.reason = "destroy", .actor = "serve"};
			struct lifecycle_destroy_result dr = {0};
			_cleanup_error_ struct cp_error *de = NULL;
			if (lifecycle_sandbox_destroy_ex(lc, rows[i].id, &o, &dr, &de) == 0) {
				log_info("lifecycle", "the interrupted removal of sandbox %s is finished", rows[i].id);
			} else {
				log_warn("lifecycle", "the interrupted removal of sandbox %s waits: %s", rows[i].id,
				         de->message);
				left++;
			}
			lifecycle_destroy_result_clear(&dr);
		}
		sandbox_record_clear(&rows[i]);
	}
	free(rows);
	return left;
}
