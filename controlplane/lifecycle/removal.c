/* removal.c: the one rule every removal of a sandbox's container obeys
 * (issue 14): a clone-mode container is removed only after its work was
 * saved (lifecycle_export_save) or with an explicit force, which the
 * answer turns into a sentence saying what is lost. Every path that
 * removes a sandbox container (destroy by a tool or the CLI, expiry,
 * cleanup of a failed sandbox, reconcile, the undo of a failed create, the
 * warm pool) goes through lifecycle_container_remove_guarded, and the
 * unit test test_lifecycle_removal.c walks them all against a fake engine.
 * Two row states need no save: 'creating' (the sandbox was never handed to
 * anyone: lifecycle_sandbox_channel refuses it and sandbox_create answers
 * only once it is running, so nothing in it is anybody's work) and
 * 'removed' or 'removing' (its save or force came before the row said so).
 * The undo of a failed create (undo_later.c) removes a 'creating' row's
 * container itself: the rule asks nothing of it.
 *
 * After the guard and before the engine is asked, the removal is put on
 * record (status 'removing', issue 13 item 4): a registry that cannot write
 * (a full disk) stops it there with nothing removed, and a removal whose
 * final write failed is finished by lifecycle_removing_run (the maintenance
 * pass) or reconcile at the next start. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

void lifecycle_destroy_result_clear(struct lifecycle_destroy_result *r)
{
	if (!r)
		return;
	sandbox_record_clear(&r->sandbox);
	lifecycle_export_result_clear(&r->save);
	free(r->lost);
	free(r->note);
	*r = (struct lifecycle_destroy_result){0};
}

enum lifecycle_removal_need lifecycle_removal_need_of(const char *workspace_mode, enum sandbox_status row_status)
{
	if (!workspace_mode || strcmp(workspace_mode, "clone") != 0)
		return LIFECYCLE_REMOVAL_FREE;
	if (row_status == SANDBOX_CREATING || row_status == SANDBOX_REMOVED || row_status == SANDBOX_REMOVING)
		return LIFECYCLE_REMOVAL_FREE;
	return LIFECYCLE_REMOVAL_NEEDS_SAVE;
}

int lifecycle_removal_guard(struct lifecycle *lc, const struct sandbox_record *s,
                            const struct lifecycle_destroy_options *o, struct lifecycle_destroy_result *ret,
                            struct cp_error **err)
{
	struct workspace_record w = {0};
	_cleanup_error_ struct cp_error *we = NULL;
	if (store_workspace_get(lc->store, s->workspace_id, &w, &we) < 0) {
		/* Without its workspace row nobody can tell clone from managed:
		 * only a force removes it. */
		if (!o->force)
			return cp_error_set(
			    err, CP_ERR_CONFLICT,
			    "sandbox '%s' was not removed: its workspace '%s' is unknown, so its work cannot "
			    "be saved (%s); remove it with force",
			    s->id, s->workspace_id, we->message);
		return 0;
	}
	enum lifecycle_removal_need need = lifecycle_removal_need_of(w.mode, s->status);
	workspace_record_clear(&w);
	if (need == LIFECYCLE_REMOVAL_FREE) {
		ret->nothing_to_save = 1;
		return 0;
	}
	struct lifecycle_export_options eo = {
	    .reason = o->reason ? o->reason : "destroy",
	    .actor = o->actor,
	    .wait_ms = o->wait_ms,
	};
	_cleanup_error_ struct cp_error *se = NULL;
	if (lifecycle_export_save(lc, s->id, &eo, &ret->save, &se) == 0)
		return 0;
	if (se->code == CP_ERR_NOT_FOUND) {
		/* The container is gone: nothing left to save or to remove. */
		ret->nothing_to_save = 1;
		ret->note = xasprintf("%s", se->message);
		return 0;
	}
	_cleanup_free_ char *since = NULL;
	struct export_record last = {0};
	_cleanup_error_ struct cp_error *le = NULL;
	if (store_export_last(lc->store, s->id, &last, &le) == 0) {
		since = xasprintf("since its last export %s", last.id);
	} else {
		since = xstrdup("since it was created");
	}
	export_record_clear(&last);
	if (o->force) {
		ret->save_failed = 1;
		ret->lost =
		    xasprintf("the commits, branches and uncommitted changes made in sandbox %s %s were not saved "
		              "and are gone (the save failed: %s)",
		              s->id, since ? since : "", se->message);
		log_warn("lifecycle", "sandbox %s removed with force: %s", s->id, ret->lost ? ret->lost : "");
		return 0;
	}
	if (o->keep_unsaved) {
		ret->kept = 1;
		ret->note = xasprintf(
		    "its work could not be saved (%s), so sandbox_destroy with force stopped it and kept its "
		    "container: only the person at this machine can discard unsaved work. They can retry the save "
		    "with `chat2sbx sandbox destroy %s` or discard the commits, branches and uncommitted changes "
		    "made in it %s with `chat2sbx sandbox destroy %s --force`",
		    se->message, s->id, since ? since : "", s->id);
		return 1;
	}
	ret->refused = 1;
	return cp_error_set(err, se->code,
	                    "sandbox '%s' was not removed: its work could not be saved (%s). Nothing was changed. "
	                    "Fix the cause and try again. sandbox_destroy with \"force\": true stops it and keeps "
	                    "it for the person; only the person can discard the commits, branches and uncommitted "
	                    "changes made in it %s (`chat2sbx sandbox destroy %s --force`)",
	                    s->id, se->message, since ? since : "", s->id);
}

int lifecycle_removal_record(struct lifecycle *lc, const struct sandbox_record *s, struct cp_error **err)
{
	if (s->status == SANDBOX_REMOVED || s->status == SANDBOX_REMOVING)
		return 0; /* on record already */
	_cleanup_error_ struct cp_error *e = NULL;
	/* No call takes it from here on: the next one reads the row. */
	lifecycle_call_state_forget(lc, s->id);
	if (store_sandbox_set_removing(lc->store, s->id, clock_now_ms(), &e) == 0)
		return 0;
	if (e->code == CP_ERR_NOT_FOUND)
		return 0; /* no row left to say it (a warm-pool member forgotten first) */
	return cp_error_set(err, CP_ERR_UNAVAILABLE,
	                    "sandbox '%s' was not removed: its removal could not be put on record in the registry "
	                    "(%s). Nothing was changed. Free space on the disk holding the "
	                    "state directory (%s), then try again",
	                    s->id, e->message, lc->cfg->state_dir ? lc->cfg->state_dir : "CHAT2SBX_STATE_DIR");
}

int lifecycle_container_remove_guarded(struct lifecycle *lc, const struct sandbox_record *s,
                                       const struct lifecycle_destroy_options *o, struct lifecycle_destroy_result *ret,
                                       struct cp_error **err)
{
	int g = lifecycle_removal_guard(lc, s, o, ret, err);
	if (g == 1) /* only the tools' destroy asks to keep; a removal here cannot stop and keep */
		return cp_error_set(err, CP_ERR_CONFLICT, "sandbox '%s' was not removed: %s", s->id, ret->note);
	if (g < 0 || lifecycle_removal_record(lc, s, err) < 0)
		return -1;
	lifecycle_channel_drop(lc, s->id);
	const char *container = s->container_id ? s->container_id : s->container_name;
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, s->node, &engine, err) < 0 ||
	    docker_container_remove(engine, container, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND)
			return -1;
		cp_error_freep(err);
	}
	lifecycle_channel_dir_remove(lc, s->id);
	lifecycle_workspace_gone(lc, s);
	return 0;
}
