/* export_retention.c: saved clone work is kept like a managed workspace
 * (DESIGN.md, Sandboxes: lifetime): 30 days after it was saved it moves to
 * DATA_ROOT/trash/<export_id>, where `chat2sbx export show` and `apply`
 * still find it through its row. Nothing is ever deleted here. Runs on
 * serve's maintenance thread with the workspace retention. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/log.h"
#include "export_internal.h"

int lifecycle_export_retention_run(const struct config *cfg, struct store *store, int64_t now_ms, struct cp_error **err)
{
	struct export_record *rows = NULL;
	size_t n = 0;
	if (store_export_list(store, NULL, &rows, &n, err) < 0)
		return -1;
	int moved = 0;
	for (size_t i = 0; i < n; i++) {
		struct export_record *x = &rows[i];
		if (x->trashed_at_ms == 0 && x->created_at_ms + LIFECYCLE_RETENTION_MS <= now_ms) {
			char *dest = NULL;
			struct cp_error *e = NULL;
			if (lifecycle_trash_move(cfg, x->path, x->id, &dest, &e) < 0 ||
			    store_export_set_trashed(store, x->id, dest, now_ms, &e) < 0) {
				cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "retention of export %s", x->id);
			} else {
				log_info("lifecycle", "export %s (sandbox %s) moved to the trash: %s", x->id,
				         x->sandbox_id, dest);
				moved++;
				/* The sandbox's directory goes once its last export has
				 * (rmdir removes only an empty one). */
				char parent[4200];
				snprintf(parent, sizeof(parent), "%s/exports/%s", cfg->data_root, x->sandbox_id);
				rmdir(parent);
			}
			free(dest);
		}
		export_record_clear(x);
	}
	free(rows);
	return moved;
}
