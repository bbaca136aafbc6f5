/* export_space.c: room for a save (issue 23 point 4). Before a save keeps
 * anything, the caps on kept exports are looked at (store_export_usage) and
 * the data root's disk must keep CHAT2SBX_MIN_FREE_DISK free after the
 * file, the copy verification makes of a bundle and a margin; then every
 * chunk is looked at again before it is written, since the size a sandbox
 * announces is only its word. Decisions are policy/saves.c's; this file
 * measures (fstatvfs of the export's own directory) and asks. */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "export.h"

int export_space_begin(struct export_space *sp, const struct config *cfg, struct store *store, const char *sandbox_id,
                       int dirfd, struct cp_error **err)
{
	*sp = (struct export_space){.cfg = cfg, .sandbox_id = sandbox_id, .dirfd = dirfd};
	sp->caps = (struct policy_save_caps){.sandbox_count = cfg->max_exports_per_sandbox,
	                                     .sandbox_bytes = cfg->max_export_bytes_per_sandbox,
	                                     .total_count = cfg->max_exports_total,
	                                     .total_bytes = cfg->max_export_bytes_total};
	if (store_export_usage(store, sandbox_id, &sp->sandbox.count, &sp->sandbox.bytes, err) < 0 ||
	    store_export_usage(store, NULL, &sp->all.count, &sp->all.bytes, err) < 0)
		return cp_error_prefix(err, "save the work of sandbox '%s'", sandbox_id);
	if (policy_save_caps_check(&sp->caps, &sp->sandbox, &sp->all, 0, sandbox_id, err) < 0)
		return -1;
	sp->ready = 1;
	return export_space_chunk(sp, 0, 0, err);
}

int export_space_expect(struct export_space *sp, int64_t size, int scratch, int kept, struct cp_error **err)
{
	if (!sp || !sp->ready)
		return 0;
	sp->expected = size > 0 ? size : 0;
	sp->scratch = scratch;
	sp->kept = kept;
	if (kept && policy_save_caps_check(&sp->caps, &sp->sandbox, &sp->all, sp->expected, sp->sandbox_id, err) < 0)
		return -1;
	return export_space_chunk(sp, 0, 0, err);
}

int export_space_chunk(struct export_space *sp, int64_t streamed, int64_t n, struct cp_error **err)
{
	if (!sp || !sp->ready)
		return 0;
	if (sp->kept && streamed + n > sp->expected &&
	    policy_save_caps_check(&sp->caps, &sp->sandbox, &sp->all, streamed + n, sp->sandbox_id, err) < 0)
		return -1;
	struct statvfs sv;
	if (fstatvfs(sp->dirfd, &sv) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                          "measure the free space of the data root '%s'", sp->cfg->data_root);
	int64_t total = (int64_t)sv.f_blocks * (int64_t)sv.f_frsize;
	struct policy_save_space s = {.sandbox_id = sp->sandbox_id,
	                              .data_root = sp->cfg->data_root,
	                              .avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize,
	                              .expected = sp->expected,
	                              .streamed = streamed,
	                              .next = n,
	                              .scratch = sp->scratch};
	s.watermark = policy_min_free_bytes(sp->cfg->min_free_disk_bytes, sp->cfg->min_free_disk_percent, total);
	return policy_save_space_check(&s, err);
}
