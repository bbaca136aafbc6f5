/* expired.c: a clone sandbox whose idle expiry could not save its work is
 * stopped, not removed (status 'expired', expiry.c); sandbox_create for its
 * workspace starts that same container again, its clone as it was, instead
 * of making a new one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "lifecycle_internal.h"

int lifecycle_expired_revive(struct lifecycle *lc, const struct workspace_record *w, const struct lifecycle_limits *lim,
                             struct lifecycle_create_result *ret, struct cp_error **err)
{
	struct sandbox_record s = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (store_sandbox_get_expired_for_workspace(lc->store, w->id, &s, &e) < 0)
		return e->code == CP_ERR_NOT_FOUND ? 0 : (*err = TAKE_PTR(e), -1);
	int r = -1;
	char id[64];
	snprintf(id, sizeof(id), "%s", s.id);
	/* Expiry may be saving it right now: then it is not ours to start. */
	if (lifecycle_hold_begin(lc, id, err) < 0)
		goto out;
	/* The limit in force on its node (this machine's: host_limits.c,
	 * configured or derived; another node's: from its memory), as for any
	 * create. */
	int max = 0, live = 0;
	if (lifecycle_node_sandbox_limit(lc, s.node, &max, err) < 0)
		goto held;
	if (max > 0) {
		if (store_sandbox_count_live_on(lc->store, lifecycle_node_is_local(s.node) ? STORE_NODE_LOCAL : s.node,
		                                &live, err) < 0)
			goto held;
		if (live >= max) {
			cp_error_set(err, CP_ERR_LIMIT,
			             "the sandbox limit %sis reached: %d of %d active; sandbox '%s' of workspace '%s' "
			             "stays expired until one %sis destroyed",
			             lifecycle_node_is_local(s.node) ? "" : "of its node ", live, max, s.id, w->id,
			             lifecycle_node_is_local(s.node) ? "" : "there ");
			goto held;
		}
	}
	/* A node short of disk would pause it again at once (node_disk.c). */
	if (lifecycle_node_disk_check(lc, s.node, err) < 0)
		goto held;
	const char *container = s.container_id ? s.container_id : s.container_name;
	struct docker_engine *engine = NULL;
	if (lifecycle_node_engine(lc, s.node, &engine, err) < 0 || docker_container_start(engine, container, err) < 0) {
		cp_error_prefix(err, "start the expired sandbox '%s' again", s.id);
		goto held;
	}
	if (store_sandbox_revive(lc->store, s.id, clock_now_ms(), err) < 0)
		goto held;
	sandbox_record_clear(&s);
	if (store_sandbox_get_live_for_workspace(lc->store, w->id, &s, err) < 0)
		goto held;
	struct helper_channel *ch = NULL;
	lifecycle_channel_drop(lc, s.id);
	if (lifecycle_sandbox_reattach(lc, &s, &ch, err) < 0) /* a failure marks it failed with the reason */
		goto held;
	helper_channel_unref(ch);
	log_info("lifecycle", "sandbox %s started again after it expired (workspace %s)", s.id, w->id);
	sandbox_record_clear(&s);
	if (store_sandbox_get_live_for_workspace(lc->store, w->id, &ret->sandbox, err) < 0)
		goto held;
	ret->reused = 1;
	char *note = lifecycle_limits_differ_on_node(lc, &ret->sandbox, lim);
	ret->options_note =
	    xasprintf("this sandbox had expired after its idle timeout and was started again with its clone as it "
	              "was; bash sessions from before are gone%s%s",
	              note ? ". " : "", note ? note : "");
	free(note);
	r = 1;
held:
	lifecycle_hold_end(lc, id);
out:
	sandbox_record_clear(&s);
	return r;
}
