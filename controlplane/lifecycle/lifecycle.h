/* lifecycle.h: sandboxes as running things: create (workspace, container,
 * helper channel), destroy, the table of open helper channels, and reconcile
 * at start. Uses store/, docker/, helper/ and policy/; knows nothing of MCP. */
#ifndef CP_LIFECYCLE_H
#define CP_LIFECYCLE_H

#include <stdint.h>

#include "../base/error.h"
#include "../config/config.h"
#include "../docker/docker.h"
#include "../helper/helper.h"
#include "../store/store.h"

/* Inside every sandbox: where the helper is mounted and the workspace lives. */
#define LIFECYCLE_HELPER_TARGET "/.chat2sbx/helper"
#define LIFECYCLE_WORKSPACE_TARGET "/workspace"
/* Labels on every container (DESIGN.md, Sandboxes: registry and engine can be reconciled). */
#define LIFECYCLE_LABEL_SANDBOX "org.chat2sbx.sandbox"
#define LIFECYCLE_LABEL_WORKSPACE "org.chat2sbx.workspace"
#define LIFECYCLE_LABEL_REGISTRY "org.chat2sbx.registry"
/* The engine network of sandboxes with network access: a bridge with
 * inter-container communication off, so sandboxes cannot reach each other. */
#define LIFECYCLE_NETWORK "chat2sbx"
#define LIFECYCLE_LABEL_NETWORK "org.chat2sbx.network"
/* How long the helper gets to answer its first hello after start (ms). */
#define LIFECYCLE_HELLO_TIMEOUT_MS 15000

struct lifecycle;

/* Borrows cfg, store and engine (they must outlive the lifecycle). */
int lifecycle_new(const struct config *cfg, struct store *store, struct docker_engine *engine, struct lifecycle **ret,
                  struct cp_error **err);
/* Closes every helper channel; the containers keep running (a restart of
 * serve loses no sandbox). Accepts NULL. */
void lifecycle_free(struct lifecycle *lc);

struct lifecycle_create_options {
	const char *workspace_id; /* NULL = a new managed workspace */
	const char *memory;       /* "512m"; NULL = engine default */
};

/* Creates a sandbox: validates options (before anything is created), makes or
 * loads the managed workspace, inserts the row (creating), creates the
 * container (helper mounted read-only as PID 1, workspace at /workspace, no
 * host environment, pids limit), attaches, starts, waits for the helper's
 * hello, marks it running. When the workspace already has a live sandbox, that
 * one is returned with *ret_reused = 1. On failure nothing is left behind: the
 * container is removed and the rows (and a workspace made by this call) are
 * deleted. *ret (caller clears) is the sandbox row. Blocks for container
 * create+start (about 1-2 s here) and at most LIFECYCLE_HELLO_TIMEOUT_MS for the helper. */
int lifecycle_sandbox_create(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                             struct sandbox_record *ret, int *ret_reused, struct cp_error **err);

/* Removes the container (force) and marks the row removed; the workspace is
 * kept. Works for running and failed sandboxes; NOT_FOUND for unknown ids. A
 * sandbox already removed is answered as it is (destroy is idempotent). *ret (may be NULL; caller
 * clears) is the final row. */
int lifecycle_sandbox_destroy(struct lifecycle *lc, const char *id, struct sandbox_record *ret, struct cp_error **err);

/* The helper channel of a running sandbox, with a reference the caller drops
 * (helper_channel_unref). Records activity. Re-attaches when the channel was
 * closed and the container still runs; marks the sandbox failed (reason
 * recorded) when the container is gone or stopped. Errors: NOT_FOUND (unknown
 * id), CONFLICT (sandbox failed or removed, with the reason and what to do),
 * UNAVAILABLE (engine or helper not answering). */
int lifecycle_sandbox_channel(struct lifecycle *lc, const char *id, struct helper_channel **ret_channel,
                              struct cp_error **err);

/* Compares the registry with the engine's containers (label
 * LIFECYCLE_LABEL_REGISTRY = this database): running sandboxes whose container
 * runs are re-attached; those whose container is gone or stopped are marked
 * failed with the reason; labelled containers with no live row are logged and
 * left alone. Returns 0 unless the engine cannot be listed. */
int lifecycle_reconcile(struct lifecycle *lc, struct cp_error **err);

/* Mounts and paths exposed for tools' answers. */
const struct config *lifecycle_config(const struct lifecycle *lc);
struct store *lifecycle_store(const struct lifecycle *lc);

#endif
