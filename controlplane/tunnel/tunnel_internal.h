/* tunnel_internal.h: what the files of tunnel/ share and nothing outside
 * uses. */
#ifndef CP_TUNNEL_INTERNAL_H
#define CP_TUNNEL_INTERNAL_H

#include "tunnel/tunnel.h"

/* Writes STATE_DIR/tunnel.json from *st (borrowed): temporary file, mode
 * 0600, rename. Best effort: a failure is logged, never returned. */
void tunnel_state_write(const struct config *cfg, const struct tunnel_status *st);

#endif
