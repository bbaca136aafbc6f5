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
/* Where clone mode mounts the approved host directory (read-only). */
#define LIFECYCLE_SOURCE_TARGET "/.chat2sbx/source"
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
	const char *workspace_id;   /* attach this workspace; NULL = see below */
	const char *workspace_path; /* a host directory (needs an approval); NULL = new managed workspace */
	const char *workspace_mode; /* "clone" (default) or "direct", with workspace_path */
	const char *memory;         /* "512m"; NULL = engine default */
	const char *cpus;           /* "1.5" (CPUs, > 0, at most the host's); NULL = no limit (issue 6) */
	int64_t pids_limit;         /* > 0: process limit; 0 = CHAT2SBX_PIDS_LIMIT (issue 6) */
	int network_off;            /* 1: no interface but loopback (NetworkMode none); 0 = default on */
	/* Progress of the steps of a create (template check, workspace, container
	 * create, start, helper hello, copy), for notifications/progress. Called
	 * on the creating thread; step is a short static text, done counts from 1
	 * up to total. NULL = no report. */
	void (*progress)(void *userdata, const char *step, int done, int total);
	void *progress_userdata;
};

struct lifecycle_create_result {
	int approval_required;           /* 1: nothing was created; see approval */
	struct approval_record approval; /* the pending approval (approval_required) */
	struct sandbox_record sandbox;   /* the sandbox (otherwise) */
	int reused;                      /* the workspace's running sandbox was returned */
	char *copy_session_id;           /* clone mode: the copy's bash session when it is still running */
};
void lifecycle_create_result_clear(struct lifecycle_create_result *r);

/* Creates a sandbox: validates options (before anything is created), makes or
 * loads the workspace, inserts the row (creating), creates the container
 * (helper mounted read-only as PID 1, workspace at /workspace, no host
 * environment, pids limit), attaches, starts, waits for the helper's hello,
 * marks it running. A host path goes through the host-path policy (request
 * time) and its approval: never decided → a pending approval is recorded and
 * returned (approval_required, nothing mounted); rejected → DENIED naming the
 * approval; approved → its workspace. A host workspace is checked against
 * the policy again at mount time (a path that became a symlink elsewhere is
 * refused). clone copies the read-only mounted directory into the
 * container's own /workspace (git clone with every branch for a repository)
 * and waits for it up to LIFECYCLE_COPY_WAIT_MS. When the workspace already
 * has a live sandbox, that one is returned (reused). On failure nothing is
 * left behind: the container is removed and the rows (and a managed
 * workspace made by this call) are deleted. *ret (caller clears with
 * lifecycle_create_result_clear) is filled on success. */
int lifecycle_sandbox_create(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                             struct lifecycle_create_result *ret, struct cp_error **err);

/* ---- workspaces (lifecycle/workspace.c): usable by the CLI without an engine ---- */

/* Days a managed workspace is kept after its sandbox is removed. */
#define LIFECYCLE_RETENTION_MS (30LL * 24 * 3600 * 1000)
/* How long sandbox_create waits for a clone copy before answering (ms). */
#define LIFECYCLE_COPY_WAIT_MS 45000

/* State of a workspace for listings: "in_use" (a live sandbox), "trashed",
 * "retained" (managed, released; *ret_trash_at_ms = when it moves to the
 * trash), or "idle". Pure. */
const char *lifecycle_workspace_state(const struct workspace_record *w, int64_t *ret_trash_at_ms);

/* Checks a host path with the policy built from cfg (allowed roots, data
 * root). *ret_real (caller frees) is its resolution. Errors as
 * policy_host_path_check. */
int lifecycle_host_path_check(const struct config *cfg, const char *path, char **ret_real, struct cp_error **err);

/* `chat2sbx workspace add PATH --mode M`: policy, then the workspace of the
 * path and mode is reused or made, and the approval recorded approved.
 * *ret (caller clears) is the workspace, *ret_created whether it is new. */
int lifecycle_workspace_register(const struct config *cfg, struct store *store, const char *path, const char *mode,
                                 struct workspace_record *ret, int *ret_created, struct cp_error **err);

/* `chat2sbx approval approve ID`: checks the approval's path with the policy
 * again (approval time), then approves it (store_approval_approve). */
int lifecycle_approval_approve(const struct config *cfg, struct store *store, const char *id,
                               struct approval_record *ret, struct cp_error **err);

/* Moves every managed workspace released more than LIFECYCLE_RETENTION_MS
 * before now_ms, and without a live sandbox, to DATA_ROOT/trash/<id> (never
 * deletes; host workspaces are never touched). Returns how many moved, or -1
 * when the registry cannot be read. */
int lifecycle_retention_run(const struct config *cfg, struct store *store, int64_t now_ms, struct cp_error **err);

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
