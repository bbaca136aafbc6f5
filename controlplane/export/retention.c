/* export_retention.c: saved clone work is kept like a managed workspace
 * (DESIGN.md, Sandboxes: lifetime): 30 days after it was saved it moves to
 * DATA_ROOT/trash/<export_id>, where `chat2sbx export show` and `apply`
 * still find it through its row; `chat2sbx export delete ID` moves one
 * there at once (issue 23: the caps count only exports outside the trash).
 * Nothing is ever deleted here; a bundle shared by hard links
 * (export_dedup.c) stays whole in every export that links it. Retention
 * runs on serve's maintenance thread with the workspace retention. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "export.h"

/* Moves x's directory to the trash and records it; the sandbox's exports
 * directory goes once its last export has (rmdir removes only an empty
 * one). *ret_dest (caller frees) is where it went. */
static int trash_one(const struct config *cfg, struct store *store, const struct export_record *x, int64_t now_ms,
                     char **ret_dest, struct cp_error **err)
{
	char *dest = NULL;
	if (export_trash_move(cfg, x->path, x->id, &dest, err) < 0)
		return -1;
	if (store_export_set_trashed(store, x->id, dest, now_ms, err) < 0) {
		free(dest);
		return -1;
	}
	char parent[4200];
	snprintf(parent, sizeof(parent), "%s/exports/%s", cfg->data_root, x->sandbox_id);
	rmdir(parent);
	*ret_dest = dest;
	return 0;
}

int export_retention_run(const struct config *cfg, struct store *store, int64_t now_ms, int64_t retention_ms,
                         struct cp_error **err)
{
	struct export_record *rows = NULL;
	size_t n = 0;
	if (store_export_list(store, NULL, &rows, &n, err) < 0)
		return -1;
	int moved = 0;
	for (size_t i = 0; i < n; i++) {
		struct export_record *x = &rows[i];
		if (x->trashed_at_ms == 0 && x->created_at_ms + retention_ms <= now_ms) {
			char *dest = NULL;
			struct cp_error *e = NULL;
			if (trash_one(cfg, store, x, now_ms, &dest, &e) < 0) {
				cp_error_log_free(LOG_LEVEL_WARN, "lifecycle", &e, "retention of export %s", x->id);
			} else {
				log_info("lifecycle", "export %s (sandbox %s) moved to the trash: %s", x->id,
				         x->sandbox_id, dest);
				moved++;
			}
			free(dest);
		}
		export_record_clear(x);
	}
	free(rows);
	return moved;
}

int export_delete(const struct config *cfg, struct store *store, const char *export_id, struct export_record *ret,
                  struct cp_error **err)
{
	struct export_record x = {0};
	if (store_export_get(store, export_id, &x, err) < 0)
		return -1;
	if (x.trashed_at_ms) {
		cp_error_set(err, CP_ERR_CONFLICT,
		             "export '%s' is in the trash already ('%s'); delete that directory yourself when you no "
		             "longer need it",
		             x.id, x.path);
		export_record_clear(&x);
		return -1;
	}
	_cleanup_free_ char *dest = NULL;
	int64_t now = clock_now_ms();
	int r = trash_one(cfg, store, &x, now, &dest, err);
	struct audit_record a = {.at_ms = now,
	                         .actor = "cli",
	                         .action = "export.delete",
	                         .sandbox_id = x.sandbox_id,
	                         .target = x.id,
	                         .status = r < 0 ? cp_error_code_name((*err)->code) : "ok",
	                         .message = r < 0 ? (*err)->message : dest};
	_cleanup_error_ struct cp_error *ae = NULL;
	if (store_audit_insert(store, &a, &ae) < 0)
		fprintf(stderr, "chat2sbx: warning: %s\n", ae->message);
	if (r < 0) {
		export_record_clear(&x);
		return cp_error_prefix(err, "delete export '%s'", export_id);
	}
	free(x.path);
	x.path = TAKE_PTR(dest);
	x.trashed_at_ms = now;
	*ret = x;
	return 0;
}
