/* controlplane.h: what the CLI calls to run the control plane: the start-up
 * order of `serve` (serve.c) and the shared opening of the data directories
 * and the registry. */
#ifndef CP_CONTROLPLANE_H
#define CP_CONTROLPLANE_H

#include "base/error.h"
#include "config/config.h"
#include "store/store.h"

struct serve_options {
	int stdio;            /* serve MCP on stdin/stdout instead of HTTP */
	int verify_isolation; /* run the doctor's isolation probe first; refuse to serve if an attack succeeds */
};

/* Creates DATA_ROOT, STATE_DIR (0700) and WORKSPACE_ROOT (0700), tightening
 * existing ones, then opens the registry (migrations applied). *ret_store is
 * owned by the caller. Fails naming the directory or file. */
int controlplane_open_store(const struct config *cfg, struct store **ret_store, struct cp_error **err);

/* Runs `serve` until SIGINT/SIGTERM (HTTP) or end of input (stdio): config is
 * loaded by the caller; this opens the store, the engine, checks the template
 * image and helper binary, reconciles, runs the isolation probe when
 * verify_isolation is set (refusing to serve if an attack succeeds), and
 * serves; STATE_DIR/serve.json (ops/ops.h) exists while it listens over HTTP.
 * Over HTTP with cfg->enable_tunnel, it refuses to start when
 * tunnel_config_check fails and supervises the tunnel client once the
 * listener is up (tunnel/tunnel.h). SIGTERM/SIGINT stop it gracefully (stop
 * accepting, let running calls answer, stop the tunnel client); SIGHUP only
 * logs that AGENTS.md is read at every create/get (nothing is reloaded).
 * Returns 0, or -1 with *err set for the caller to print. Blocks. */
int controlplane_serve(const struct config *cfg, const struct serve_options *opts, struct cp_error **err);

#endif
