/* export_internal.h: what lifecycle's save through a sandbox's channel
 * (export_save.c) shares with unsaved.c, maintenance.c and sandbox.c: the
 * export layer's header and the unsaved-work probe. */
#ifndef CP_LIFECYCLE_EXPORT_INTERNAL_H
#define CP_LIFECYCLE_EXPORT_INTERNAL_H

#include "../export/export.h"
#include "lifecycle_internal.h"

/* Asks the running clone sandbox sandbox_id, over ch (borrowed, alive),
 * whether it holds work since its last export (export_save.c's script in
 * state mode, a hidden bash session; each step bounded by
 * EXPORT_PROBE_WAIT_MS). 0 with *ret_unsaved 1 or 0, also recorded in the
 * registry; -1 with *err (TIMEOUT, UNAVAILABLE when cancel fired or the
 * channel closed, INTERNAL when the script failed). cancel (borrowed, may be
 * NULL) ends every wait at once. Called by unsaved.c's probe threads only. */
int export_unsaved_probe(struct lifecycle *lc, const char *sandbox_id, struct helper_channel *ch,
                         struct cp_cancel *cancel, int *ret_unsaved, struct cp_error **err);

#endif
