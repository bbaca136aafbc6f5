/* controlplane.h: what the CLI calls to run the control plane: the start-up
 * order of `serve` (main.c) and the shared opening of the data directories
 * and the registry. */
#ifndef CP_CONTROLPLANE_H
#define CP_CONTROLPLANE_H

#include "base/error.h"
#include "config/config.h"
#include "store/store.h"

struct serve_options {
	int stdio; /* serve MCP on stdin/stdout instead of HTTP */
};

/* Creates DATA_ROOT, STATE_DIR (0700) and WORKSPACE_ROOT (0700), tightening
 * existing ones, then opens the registry (migrations applied). *ret_store is
 * owned by the caller. Fails naming the directory or file. */
int controlplane_open_store(const struct config *cfg, struct store **ret_store, struct cp_error **err);

/* Checks the tunnel settings before serving: with the tunnel enabled, the
 * client executable, SECRET_DIR/tunnel-id and SECRET_DIR/key must exist; the
 * error names the missing file and the local-only switch
 * (CHAT2SBX_ENABLE_TUNNEL=0). */
int controlplane_check_tunnel(const struct config *cfg, struct cp_error **err);

/* Runs `serve` until SIGINT/SIGTERM (HTTP) or end of input (stdio): config is
 * loaded by the caller; this opens the store, the engine, checks the template
 * image and helper binary, reconciles, and serves. Returns 0, or -1 with *err
 * set for the caller to print. Blocks. */
int controlplane_serve(const struct config *cfg, const struct serve_options *opts, struct cp_error **err);

#endif
