/* lifecycle.h: sandboxes as running things: create (workspace, container,
 * helper channel), destroy, the table of open helper channels, and reconcile
 * at start. Uses store/, docker/, helper/ and policy/; knows nothing of MCP. */
#ifndef CP_LIFECYCLE_H
#define CP_LIFECYCLE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"
#include "../config/config.h"
#include "../docker/docker.h"
#include "../guard/guard.h"
#include "../helper/helper.h"
#include "../node/node.h"
#include "../workspace/workspace.h"
#include "../store/store.h"

struct lifecycle;
struct json_object;

/* Borrows cfg, store and engine (they must outlive the lifecycle). Derives
 * the sandbox limits in force from the host and cfg (guard_host_limits);
 * a setting that cannot fit this machine fails with its INVALID_ARGUMENT. */
int lifecycle_new(const struct config *cfg, struct store *store, struct docker_engine *engine, struct lifecycle **ret,
                  struct cp_error **err);
/* Closes every helper channel; the containers keep running (a restart of
 * serve loses no sandbox). Accepts NULL. */
void lifecycle_free(struct lifecycle *lc);
/* Says how every helper channel opened from now on acknowledges answers
 * (borrowed, static; helper_channel_new): the tool layer supplies it
 * (tools/bash.c's tool_bash_receipts), since lifecycle reads no tool's
 * fields. Call it right after lifecycle_new, before any sandbox is
 * attached; until then channels acknowledge nothing. */
void lifecycle_channel_receipts_set(struct lifecycle *lc, const struct helper_receipts *receipts);

/* ---- the runtime new sandboxes get (decided at lifecycle_new by
 * guard_runtime_probe) ---- */

/* The runtime new sandboxes get: NULL (the engine's default), "vm" or an
 * OCI runtime's name, decided when the lifecycle started; *ret_why (may be
 * NULL) gets why auto chose it (static, NULL when it was named). */
const char *lifecycle_runtime(const struct lifecycle *lc, const char **ret_why);
/* For vm: "kvm" or "tcg", and why tcg (static; NULL otherwise). NULL when
 * the runtime is not vm. */
const char *lifecycle_vm_accel(const struct lifecycle *lc, const char **ret_why);
/* The image new sandboxes are made from: CHAT2SBX_VM_IMAGE for vm, else
 * CHAT2SBX_TEMPLATE_IMAGE (borrowed from the configuration). */
const char *lifecycle_sandbox_image(const struct lifecycle *lc);

struct lifecycle_create_options {
	const char *workspace_id;   /* attach this workspace; NULL = see below */
	const char *workspace_path; /* a host directory (needs an approval); NULL = new managed workspace */
	const char *workspace_mode; /* "clone" (default) or "direct", with workspace_path */
	const char *memory;         /* "512m"; NULL = engine default */
	const char *cpus;           /* "1.5" (CPUs, > 0, at most the host's); NULL = no limit (issue 6) */
	int64_t pids_limit;         /* > 0: process limit; 0 = CHAT2SBX_PIDS_LIMIT (issue 6) */
	int network_off;            /* 1: no interface but loopback (NetworkMode none); 0 = default on */
	const char *disk;           /* "20g": writable layer size (only where the engine can); NULL = default */
	/* Progress of the steps of a create (template check, workspace, container
	 * create, start, helper hello, copy), for notifications/progress. Called
	 * on the creating thread; step is a short static text, done counts from 1
	 * up to total. NULL = no report. */
	void (*progress)(void *userdata, const char *step, int done, int total);
	void *progress_userdata;
	/* Fired when the MCP client cancels the request (borrowed, NULL =
	 * never): ends the wait for a clone copy, which goes on and is answered
	 * as still running (copy_session_id). Other steps are short and finish. */
	struct cp_cancel *cancel;
	/* The node to create on (borrowed; "local" = this machine); NULL =
	 * placement chooses among 'local' and the nodes added (issue 28; a host
	 * workspace, an existing workspace and the vm runtime stay on 'local'). */
	const char *node;
};

struct lifecycle_create_result {
	int approval_required;           /* 1: nothing was created; see approval */
	struct approval_record approval; /* the pending approval (approval_required) */
	struct sandbox_record sandbox;   /* the sandbox (otherwise) */
	int reused;                      /* the workspace's running sandbox was returned */
	char *options_note;              /* reused with other memory/cpus/network/runtime than asked: what differs */
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

/* How long sandbox_create waits for a clone copy before answering (ms). */
#define LIFECYCLE_COPY_WAIT_MS 45000

/* Removes the container (force) and marks the row removed; the workspace is
 * kept. Works for running, failed and expired sandboxes, and finishes a
 * 'removing' one; NOT_FOUND for unknown ids. The removal is put on record
 * ('removing', lifecycle_removal_record) before the container is removed:
 * UNAVAILABLE with nothing removed when that cannot be written; when only
 * the final 'removed' cannot be written the error says so and the row
 * stays 'removing' for lifecycle_removing_run. A sandbox already removed is answered as it is (destroy is
 * idempotent). A clone sandbox's work is saved first (lifecycle_export_save,
 * removal.c): when that fails nothing is removed and the error says why and
 * how to force it. *ret (may be NULL; caller clears) is the final row. The
 * same as lifecycle_sandbox_destroy_ex without force, reason destroy. */
int lifecycle_sandbox_destroy(struct lifecycle *lc, const char *id, struct sandbox_record *ret, struct cp_error **err);

/* The helper channel of a running sandbox, with a reference and a hold on
 * the sandbox that the caller ends with lifecycle_sandbox_release (never
 * helper_channel_unref alone: expiry waits for holds). Records activity. Re-attaches when the channel was
 * closed and the container still runs; marks the sandbox failed (reason
 * recorded) when the container is gone or stopped. Errors: NOT_FOUND (unknown
 * id), CONFLICT (sandbox failed or removed, with the reason and what to do),
 * UNAVAILABLE (engine or helper not answering). */
int lifecycle_sandbox_channel(struct lifecycle *lc, const char *id, struct helper_channel **ret_channel,
                              struct cp_error **err);

/* The open helper channel of sandbox id for a look that is no tool call
 * (the owner's page): a reference the caller drops with
 * helper_channel_unref, or NULL when no live channel is open (not running,
 * paused for disk, or not attached: the maintenance pass re-attaches).
 * Records no activity and takes no hold, so looking never keeps a sandbox
 * from its idle expiry; a removal that comes meanwhile makes the look's
 * helper calls fail (UNAVAILABLE). Never blocks but on the lifecycle's
 * lock. */
struct helper_channel *lifecycle_sandbox_channel_peek(struct lifecycle *lc, const char *id);

/* Ends a call that got ch from lifecycle_sandbox_channel: drops the
 * reference (ch may be NULL), records activity again (a call's end counts,
 * so a long call never looks idle) and releases the call's hold on the
 * sandbox, which expiry waits for. Every successful lifecycle_sandbox_channel
 * is paired with exactly one release, on every path. Never fails. */
void lifecycle_sandbox_release(struct lifecycle *lc, const char *id, struct helper_channel *ch);

/* Default of CHAT2SBX_IDLE_TIMEOUT_MS: a sandbox with no tool call for 24 h
 * is removed (DESIGN.md, Sandboxes: lifetime). */
#define LIFECYCLE_IDLE_TIMEOUT_MS (24LL * 3600 * 1000)

/* Expiry pass (lifecycle/expiry.c): every running sandbox whose last tool
 * call started or ended more than cfg->idle_timeout_ms before now_ms, and
 * that no call holds right now, is destroyed (lifecycle_sandbox_destroy_ex,
 * reason expire: a clone's work is saved first, the container is removed,
 * the row becomes removed, the workspace is kept and its retention clock
 * starts) and an audit row "sandbox.expire" is written. When a clone's save
 * fails the container is stopped instead and the row becomes 'expired' with
 * the reason; every later pass tries again (issue 14).
 * A call arriving while its sandbox is being expired is refused with
 * CONFLICT saying so. Returns how many were removed, or -1 when the registry
 * cannot be read (*err). Blocks for the engine removals (30 s each at most).
 * Run once at start after reconcile and once a minute. */
int lifecycle_expiry_run(struct lifecycle *lc, int64_t now_ms, struct cp_error **err);

/* When the expiry pass will remove sandbox s (its idle expiry, ms since
 * the epoch; s borrowed): a running one at its last activity (the
 * registry's, or a newer one calls noted in memory) plus
 * cfg->idle_timeout_ms, at the first pass (once a minute) from then on; an
 * expired one (a failed save kept it) is due now: 1. 0 for any other
 * status: no idle expiry. The same rule lifecycle_expiry_run applies. A
 * clone's work is saved first; a failed save keeps it 'expired'. */
int64_t lifecycle_idle_expiry_at(struct lifecycle *lc, const struct sandbox_record *s);
/* The idle timeout in force (ms): cfg->idle_timeout_ms, or
 * LIFECYCLE_IDLE_TIMEOUT_MS when that is not set. */
int64_t lifecycle_idle_timeout_ms(const struct lifecycle *lc);

/* Finishes the undos of failed creates that could not be finished when
 * they failed (lifecycle/undo_later.c: a full disk, the engine away): each
 * container removed, its row deleted, a managed workspace made for it
 * deleted; one on a node the health loop says is not answering waits.
 * Returns how many still wait (each failure logged). Blocks for the engine
 * removals. Run by the maintenance pass. */
size_t lifecycle_undo_run(struct lifecycle *lc);
/* As lifecycle_undo_run, for the undos on node only (borrowed; NULL = every
 * node). Run at the start of every create for 'local': a node that stalls
 * must not hold up creates elsewhere (issue 28), and another node's undos
 * wait for the maintenance pass, at most a minute. */
size_t lifecycle_undo_run_on(struct lifecycle *lc, const char *node);

/* Finishes the removals put on record whose final write failed (rows left
 * 'removing': a full disk between the engine's removal and the registry's
 * 'removed'): exposures and the container removed again when still there,
 * the row then 'removed' (lifecycle_sandbox_destroy_ex). Returns how many
 * still wait (each logged; 0 when the registry cannot be read, logged too). Blocks for the engine removals. Run by the
 * maintenance pass; reconcile does the same at start. */
size_t lifecycle_removing_run(struct lifecycle *lc);

/* ---- recovery (lifecycle/recovery.c) ---- */

/* Maintenance pass, once a minute after expiry: releases the helper channels
 * whose stream closed (the helper exited, the engine went away) and
 * re-attaches every running sandbox (warm-pool members too) that has no
 * live channel, as lifecycle_sandbox_channel would, without counting as
 * activity: a container that is gone or stopped makes its row failed with
 * the reason, a helper that restarted is logged. Stops at the first sandbox
 * the engine does not answer for (the next pass retries). Returns how many
 * were re-attached, or -1 when the registry cannot be read (*err). Blocks
 * for the engine calls (bounded by their timeouts) and the hellos (at most
 * POLICY_HELLO_TIMEOUT_MS each). */
int lifecycle_reattach_run(struct lifecycle *lc, struct cp_error **err);

/* ---- the maintenance thread (lifecycle/maintenance.c) ---- */

struct lifecycle_maintenance;
/* Starts serve's maintenance thread: at once and then every minute,
 * workspace_retention_run, lifecycle_expiry_run, lifecycle_removing_run,
 * lifecycle_undo_run, lifecycle_reattach_run (each logs its failure), then
 * hook(hook_userdata) when hook is not NULL (serve: the host-edge firewall,
 * from a layer above this one). lc and hook_userdata are borrowed until
 * lifecycle_maintenance_stop. Returns NULL (logged) when the thread cannot
 * be started: serve runs on without it. */
struct lifecycle_maintenance *lifecycle_maintenance_start(struct lifecycle *lc, void (*hook)(void *userdata),
                                                          void *hook_userdata);
/* Stops the thread (waits for a pass in progress to end) and frees m.
 * Accepts NULL. */
void lifecycle_maintenance_stop(struct lifecycle_maintenance *m);

/* ---- reconcile decision table (lifecycle/reconcile.c) ---- */

/* Compares the registry (every row, removed and warm-pool ones included)
 * with the engine's containers (label POLICY_LABEL_REGISTRY = this
 * database) and carries out lifecycle_reconcile_decide for each pair:
 * running sandboxes whose container runs are re-attached; those whose
 * container is gone or stopped are marked failed with the reason; rows left
 * 'creating' by a killed serve lose their container and are marked failed; a
 * removed row's leftover container is removed; labelled containers with no
 * row are logged and left alone. Run at start, before the listener (no
 * create is in flight). Returns 0 unless the registry or the engine cannot
 * be listed. Blocks on the engine (10 s per call at most). */
int lifecycle_reconcile(struct lifecycle *lc, struct cp_error **err);
/* lifecycle_reconcile for one node (borrowed name) that answers again after
 * an outage (issue 28; the health loop's POLICY_NODE_HEALTH_BACK): its rows
 * against its engine's containers, by the same decision table. A running
 * sandbox whose channel is still open keeps it (after a network cut the
 * stream and its bash sessions lived on); one whose channel closed is
 * re-attached; one whose container died with the node's engine is marked
 * failed with the reason. Rows in any other state (a create or a removal
 * under way owns them) and containers without a row are left alone;
 * sandboxes paused there for a low disk are unpaused first and paused
 * again by the node's next look (lifecycle/node_disk.c). The node's
 * engine's errors, prefixed, when it
 * does not answer after all (rows left as they are). Blocks for one
 * container list and an attach per re-attached sandbox. */
int lifecycle_node_reconcile(struct lifecycle *lc, const char *node, struct cp_error **err);
/* For a node (borrowed name) the health loop found not answering
 * (POLICY_NODE_HEALTH_DOWN): shuts down the helper channels of its
 * sandboxes that a call has used, so calls waiting on a stream that will
 * not answer fail at once (UNAVAILABLE, "the channel was closed") instead
 * of at their timeout; the next call is refused at the gate naming the
 * node, and once the node answers the channel is opened again
 * (lifecycle_node_reconcile or the call's re-attach), the sandbox's bash
 * sessions intact in its helper. Returns how many were closed. Never
 * blocks on an engine. */
size_t lifecycle_node_channels_close(struct lifecycle *lc, const char *node);

/* Mounts and paths exposed for tools' answers. */
const struct config *lifecycle_config(const struct lifecycle *lc);

/* ---- the free-space guard (disk_guard.c, disk_decide.c; issues 13, 23) ---- */
/* Starts watching the free space of DATA_ROOT's disk and of the engine's
 * data directory (when readable; one disk holding both is watched in both
 * roles) every 2 s: below CHAT2SBX_MIN_FREE_DISK, creates and saves are
 * refused and sandboxes writing to that disk (writable layer, workspace)
 * are paused, unpaused when space is back. Makes a 16 MiB reserve in STATE_DIR it gives up when
 * the disk is all but full. Looks once before returning. INVALID_ARGUMENT
 * for a CHAT2SBX_MIN_FREE_DISK that is neither 'auto', a size nor "N%".
 * Also starts the guard of other nodes' disks (node_disk.c: creates there
 * refused and their sandboxes paused below the same watermark). */
int lifecycle_disk_guard_start(struct lifecycle *lc, struct cp_error **err);
/* Stops the thread (paused sandboxes stay paused). NULL-safe, idempotent. */
void lifecycle_disk_guard_stop(struct lifecycle *lc);
/* 0 when a sandbox may be created; LIMIT with the numbers when the disk is
 * below the watermark. */
int lifecycle_disk_check_create(struct lifecycle *lc, struct cp_error **err);
/* What sandbox_get says about a sandbox without a disk limit: static text
 * naming the engine's storage and that the free-space guard protects the
 * disk instead. */
const char *lifecycle_disk_note(struct lifecycle *lc);
/* The newest activity of sandbox id that calls noted in memory and the
 * maintenance pass has not written to the registry yet (ms since the
 * epoch), or 0 when there is none: what the registry's last_activity_ms
 * does not show yet. Never blocks but on the lifecycle's lock. */
int64_t lifecycle_activity_unwritten(struct lifecycle *lc, const char *id);
/* 1 when the guard (this machine's, or a node's: the reason names the
 * node) paused sandbox_id, with why in reason (may be NULL). */
int lifecycle_disk_paused(struct lifecycle *lc, const char *sandbox_id, char *reason, size_t size);
/* At start, before reconcile: unpauses this registry's containers an
 * earlier serve paused (a paused helper would not answer its re-attach),
 * on this machine's engine and on every node's that answers. */
void lifecycle_disk_unpause_leftovers(struct lifecycle *lc);

/* The limits computed at lifecycle_new (borrowed, lives as long as lc). */
const struct policy_sandbox_limits *lifecycle_limits_in_force(const struct lifecycle *lc);
struct store *lifecycle_store(const struct lifecycle *lc);
struct docker_engine *lifecycle_engine(const struct lifecycle *lc);
/* Gives lc the health loop (borrowed until lifecycle_free or a later call
 * with NULL): a call on a sandbox whose node it says is not answering is
 * refused at the gate (lifecycle_sandbox_channel) with UNAVAILABLE naming
 * the node and since when, without touching the row or the engine. Set
 * before the first call; NULL (the default) treats every node as answering. */
void lifecycle_node_health_set(struct lifecycle *lc, struct node_health *health);
/* The engine of s's node (s borrowed; its node NULL or "local" = this
 * machine's, lifecycle_engine) into *ret, borrowed until lifecycle_free.
 * NOT_FOUND for a node without a row; DENIED or UNAVAILABLE, naming the
 * node, when its engine cannot be opened. Blocks at most about 5 s (the
 * first use of a node), else not at all. Thread-safe. */
int lifecycle_sandbox_engine(struct lifecycle *lc, const struct sandbox_record *s, struct docker_engine **ret,
                             struct cp_error **err);

/* ---- saved clone work (lifecycle/export_*.c, issue 14) ---- */

/* How long the save script in a sandbox may take during a tool call
 * (sandbox_export, sandbox_destroy: inside ChatGPT's 60 s patience). */
#define LIFECYCLE_EXPORT_WAIT_MS 40000
/* The same for expiry and the CLI, where nobody's patience runs out. */
#define LIFECYCLE_EXPORT_WAIT_LONG_MS 600000
/* A clone's "unsaved work" is looked at again after this long (ms). */
#define LIFECYCLE_UNSAVED_CHECK_MS 60000

struct lifecycle_export_options {
	const char *reason;             /* checkpoint | destroy | expire | cleanup */
	const char *message;            /* sandbox_export's message; NULL = none */
	const char *actor;              /* mcp | cli | serve (audit row) */
	long wait_ms;                   /* 0 = LIFECYCLE_EXPORT_WAIT_MS */
	struct helper_channel *channel; /* borrowed; NULL = the save finds (or starts) it */
};

struct lifecycle_export_result {
	struct export_record export; /* the new export, or the last one when nothing changed since */
	int saved;                   /* 1: a new export was written */
	int not_clone;               /* the workspace is not clone mode: nothing to save */
};
void lifecycle_export_result_clear(struct lifecycle_export_result *r);

/* Saves the work of a clone sandbox (export_save.c): a bundle of every
 * branch and tag, HEAD and a snapshot of uncommitted and untracked changes
 * (a tar for a plain copy), streamed out through the helper channel,
 * capped at CHAT2SBX_MAX_EXPORT_BYTES, verified on the host, kept in
 * DATA_ROOT/exports/<sandbox_id>/<export_id>/ with its manifest and an
 * exports row (kind none: nothing new since the clone was made, manifest
 * only). The same state as the last export saves nothing new (ret->saved
 * 0, ret->export the last one). A running sandbox is saved as it runs; an
 * expired or failed one is started for it and stopped again when the save
 * fails. A save whose refs all point at objects the previous export holds
 * shares that export's bundle file instead of streaming its own
 * (export_dedup.c). Not a clone: ret->not_clone, 0. Writes an audit row
 * export.save either way. One save of a sandbox at a time (export_queue.c: a second
 * waits for the first until o->wait_ms, also across processes), and the
 * host's checks are bounded (export_verify_git: refs, the pack's declared
 * sizes, git's memory, CPU and time). Errors: LIMIT (CHAT2SBX_MAX_EXPORT_BYTES,
 * a cap on kept exports, or the data root's free space: export_space.c; a
 * bound of that host work, named), TIMEOUT (the script, the wait for
 * another save or a turn, the checks' time bound), DENIED (a bundle
 * or ref the host refuses), UNAVAILABLE (engine or helper not answering),
 * CONFLICT (creating or removed), NOT_FOUND (no container), INTERNAL (the
 * script or git failed, with their message); a refusal keeps nothing and
 * leaves the sandbox and its work as they were. Blocks up to o->wait_ms for
 * the other save and for the script, then for streaming and verifying. */
int lifecycle_export_save(struct lifecycle *lc, const char *sandbox_id, const struct lifecycle_export_options *o,
                          struct lifecycle_export_result *ret, struct cp_error **err);

/* Whether a clone sandbox holds work since its last export (or, with none,
 * since it was made). */
enum lifecycle_unsaved {
	LIFECYCLE_UNSAVED_NONE = -1,   /* nothing to say: not a clone, or not running and never looked at */
	LIFECYCLE_UNSAVED_NO = 0,      /* everything is in an export */
	LIFECYCLE_UNSAVED_YES = 1,     /* work since the last export */
	LIFECYCLE_UNSAVED_UNKNOWN = 2, /* a running clone whose probe failed, timed out or is still running */
};
/* How long one answer waits for the probes it started, all together (ms). */
#define LIFECYCLE_UNSAVED_WAIT_MS 700
/* A probe that failed is not tried again for this long, doubling per
 * failure up to LIFECYCLE_UNSAVED_BACKOFF_MAX_MS (ms). */
#define LIFECYCLE_UNSAVED_BACKOFF_MS 60000
#define LIFECYCLE_UNSAVED_BACKOFF_MAX_MS (16 * 60000)
/* At most this many probes run at once (unsaved.c). */
#define LIFECYCLE_UNSAVED_PROBES_MAX 4

/* Fills ret[i] (an enum lifecycle_unsaved) for each of the n rows (borrowed)
 * (unsaved.c). A running clone whose answer in the registry is older than
 * LIFECYCLE_UNSAVED_CHECK_MS is asked again by a probe thread (the save
 * script in state mode: a hidden bash session that hashes refs and the
 * snapshot tree); the probes of one call run in parallel and the call waits
 * for them all together at most LIFECYCLE_UNSAVED_WAIT_MS, so no client
 * waits on a sandbox's probe: a probe still running then answers later (its
 * result is recorded for the next look) and the row is UNKNOWN now. A failed
 * or timed-out probe is remembered: that sandbox stays UNKNOWN, without a
 * new probe, for LIFECYCLE_UNSAVED_BACKOFF_MS, doubling per failure. Other
 * rows answer from the registry. Never fails; blocks at most
 * LIFECYCLE_UNSAVED_WAIT_MS plus one registry read per row. */
void lifecycle_sandboxes_unsaved(struct lifecycle *lc, const struct sandbox_record *rows, size_t n, int *ret);

/* Removes the volume of managed workspace w (borrowed) kept on another
 * node (migration 0015), for a caller that deletes the workspace itself
 * after its sandbox is destroyed (doctor's probes); nothing for a
 * workspace of this machine (its directory is the caller's). A volume
 * already gone is fine; the codes of the node's engine otherwise. Blocks
 * at most 15 s. */
int lifecycle_workspace_volume_drop(struct lifecycle *lc, const struct workspace_record *w, struct cp_error **err);

struct lifecycle_destroy_options {
	int force;          /* the person's force: remove even when the save fails; the answer says what is lost */
	int keep_unsaved;   /* the model's force: a clone whose save fails is stopped and kept for the person */
	const char *reason; /* the export's reason: destroy (default), expire or cleanup */
	const char *actor;  /* mcp | cli | serve, for the audit rows */
	long wait_ms;       /* for the save script; 0 = LIFECYCLE_EXPORT_WAIT_MS */
};

struct lifecycle_destroy_result {
	struct sandbox_record sandbox;       /* the final row */
	struct lifecycle_export_result save; /* the export saved before the removal (save.export.id NULL: none) */
	int nothing_to_save;                 /* not a clone, never handed out, or its container was gone */
	int save_failed;                     /* the save failed and force removed it anyway: see lost */
	int refused;                         /* the save failed and nothing was removed (the call failed) */
	int kept;                            /* keep_unsaved: the save failed, the sandbox was stopped and kept */
	char *lost;                          /* with save_failed: what is gone, as a sentence */
	char *note;                          /* why nothing could be saved, when it could not */
};
void lifecycle_destroy_result_clear(struct lifecycle_destroy_result *r);

/* lifecycle_sandbox_destroy with options and everything the answer needs
 * (*ret, caller clears). Errors as lifecycle_sandbox_destroy; a refused
 * save sets ret->refused and returns the save's code (LIMIT, TIMEOUT,
 * UNAVAILABLE, DENIED, INTERNAL) with the how-to-force message. With
 * o->keep_unsaved (a model's force: only the person may discard unsaved
 * work, issue 23) a clone whose save fails is not removed: its container is
 * stopped and kept, the row becomes 'failed' with a reason naming the
 * person's commands, ret->kept is set and ret->note says so; 0. */
int lifecycle_sandbox_destroy_ex(struct lifecycle *lc, const char *id, const struct lifecycle_destroy_options *o,
                                 struct lifecycle_destroy_result *ret, struct cp_error **err);

/* The person's destroy (destroy_person.c): what `chat2sbx sandbox destroy
 * ID [--force]` and the page's Destroy do, alike. lifecycle_sandbox_destroy_ex
 * with force as given (only the person may discard unsaved work), reason
 * destroy, actor (cli, ui) and the save wait LIFECYCLE_EXPORT_WAIT_LONG_MS
 * (blocks that long at most for a clone's save). 0: destroyed, *ret (caller
 * clears) as lifecycle_sandbox_destroy_ex. An id with no registry row whose
 * container of this registry (POLICY_LABEL_REGISTRY) still exists: with
 * force it is removed with its exposures and 1 is returned (ret->note says
 * what of the exposures could not be removed, if anything); without force
 * CONFLICT saying its work cannot be saved. Otherwise the errors of
 * lifecycle_sandbox_destroy_ex (NOT_FOUND when there is no container
 * either). */
int lifecycle_sandbox_destroy_person(struct lifecycle *lc, const char *id, int force, const char *actor,
                                     struct lifecycle_destroy_result *ret, struct cp_error **err);

/* What the removal of a sandbox's container needs (removal.c). FREE: not a
 * clone (managed and direct workspaces live on the host), or a row in
 * 'creating' (never handed to anyone), 'removed' (saved or forced before) or
 * 'removing' (its save or force came before the row said so). NEEDS_SAVE: everything
 * else of a clone. workspace_mode is borrowed and may be NULL. Pure. */
enum lifecycle_removal_need {
	LIFECYCLE_REMOVAL_FREE,
	LIFECYCLE_REMOVAL_NEEDS_SAVE,
};
enum lifecycle_removal_need lifecycle_removal_need_of(const char *workspace_mode, enum sandbox_status row_status);

/* The guard itself: 0 when s's container may be removed (nothing to save,
 * saved: ret->save, or forced after a failed save: ret->save_failed and
 * ret->lost); 1 when the save failed and o->keep_unsaved asks to stop and
 * keep the sandbox instead (ret->kept, ret->note: the reason to record);
 * -1 with ret->refused and the message otherwise. Blocks for the save. */
int lifecycle_removal_guard(struct lifecycle *lc, const struct sandbox_record *s,
                            const struct lifecycle_destroy_options *o, struct lifecycle_destroy_result *ret,
                            struct cp_error **err);

/* Puts the removal of s on record (status 'removing', issue 13 item 4)
 * before its container is removed: 0 when written, when s is 'removing' or
 * 'removed' already, or when its row is gone (nothing to say it in). A
 * registry that cannot write (a full disk): UNAVAILABLE saying nothing was
 * removed and to free space, and nothing is changed. Blocks for one
 * registry write. */
int lifecycle_removal_record(struct lifecycle *lc, const struct sandbox_record *s, struct cp_error **err);

/* The guard, then the removal put on record (lifecycle_removal_record),
 * then the removal of s's container (engine NOT_FOUND is fine); the caller
 * writes the row's final status. The only way lifecycle/ removes a sandbox
 * container. */
int lifecycle_container_remove_guarded(struct lifecycle *lc, const struct sandbox_record *s,
                                       const struct lifecycle_destroy_options *o, struct lifecycle_destroy_result *ret,
                                       struct cp_error **err);

/* ---- warm pool (lifecycle/pool.c, issue 8; per node, issue 28) ---- */

/* Starts the warm pool after lifecycle_reconcile: pool members of this
 * registry that failed (their container died while serve was away), do
 * not match what a default create gets now, or sit on a drained or removed
 * node are removed with their rows, containers and empty workspaces (a
 * member on a node that does not answer is left for a later start), the
 * others adopted (removed at this serve's clean stop unless claimed; with
 * size <= 0 all are removed); then, when size > 0, one background thread
 * per node keeps size running members there with their helper attached
 * (policy_pool_decide: at most the node's sandbox limit; none on a node
 * that is not ready; every member of a drained node removed), refilling
 * after each claim and retrying failed creates with a growing delay (up to
 * a minute), and one more thread follows the node rows every 2 s (a node
 * added gets a refill, a node removed loses it; none but 'local' with the
 * vm runtime). Members re-attached by reconcile count toward size.
 * Returns 0; a failure to list the members is logged, not fatal. Blocks on
 * the engines of the members it removes. Call lifecycle_pool_stop before
 * lifecycle_free. */
int lifecycle_pool_start(struct lifecycle *lc, int size, struct cp_error **err);

/* As lifecycle_pool_start, later: the pool starts at the first
 * sandbox_create that could claim a member (that one is created cold). For
 * stdio, whose clients may start serve only to probe it (issue 18). Does
 * not block. */
void lifecycle_pool_defer(struct lifecycle *lc, int size);

/* Stops the pool's threads (waits for each node's create in progress, at
 * most its helper hello timeout) and removes the members nobody claimed
 * that this process created or adopted at start, on every node: container,
 * rows, a remote node's volume and the empty workspace. A member on a node
 * that does not answer is left (logged; the next start removes it). Safe
 * when the pool never started. */
void lifecycle_pool_stop(struct lifecycle *lc);

/* ---- exposed ports (lifecycle/expose.c, issue 6) ---- */

/* The sandbox's name on its per-sandbox network, where forwarders reach it. */
#define LIFECYCLE_EXPOSE_ALIAS "sandbox"

/* Most ports one sandbox may expose at once (security review, defect 3). */
#define LIFECYCLE_MAX_EXPOSURES_PER_SANDBOX 8
/* sandbox_expose: publishes TCP port (1-65535) of a running sandbox on
 * cfg->expose_host at a host port chosen automatically, through a forwarder
 * container (see expose.c for why). An exposed port is answered as it is
 * (*ret_created 0; a stopped forwarder is started again); otherwise the
 * per-sandbox network, the sandbox's connection to it and the forwarder are
 * made and the row inserted (*ret_created 1). *ret (caller clears) is the
 * row. Counts as activity of the sandbox. Errors: INVALID_ARGUMENT (port),
 * NOT_FOUND (unknown sandbox), CONFLICT (failed, removed or still creating;
 * created with network off), LIMIT (a new port past
 * LIFECYCLE_MAX_EXPOSURES_PER_SANDBOX on this sandbox or cfg->max_exposures
 * in all), engine errors with what failed. Checks come
 * before anything is made; on failure nothing made is left. Blocks on the
 * engine (about a second for a new exposure). Thread-safe (one expose or
 * removal at a time per process). */
int lifecycle_sandbox_expose(struct lifecycle *lc, const char *sandbox_id, int64_t port, struct exposure_record *ret,
                             int *ret_created, struct cp_error **err);

/* Removes every exposure of a sandbox: forwarders (with and without rows),
 * rows, the sandbox's connection to its network, the network. Called by
 * lifecycle_sandbox_destroy; idempotent. On an engine failure the rows of
 * forwarders not removed stay (the next reconcile retries) and *err says
 * which. */
int lifecycle_exposures_remove(struct lifecycle *lc, const char *sandbox_id, struct cp_error **err);

/* The address a browser on this machine opens exposure x at, as the tools
 * and the page word it: http://HOST:HOST_PORT/ (an IPv6 host in brackets,
 * RFC 3986 section 3.2.2). Written to buf (size bytes); returns buf. */
const char *lifecycle_exposure_url(const struct exposure_record *x, char *buf, size_t size);

/* The exposures of one sandbox (store_exposure_list), for answers. */
int lifecycle_sandbox_exposures(struct lifecycle *lc, const char *sandbox_id, struct exposure_record **ret,
                                size_t *ret_n, struct cp_error **err);

/* At start, after the sandboxes are reconciled: forwarders of running
 * sandboxes run (started when stopped, made again on the same host port when
 * gone); exposures of sandboxes that are not running (failed, removed) are
 * removed; forwarders and networks with this registry's label and no row
 * are removed. Problems with single forwarders are logged. Fails only when
 * the registry cannot be read. */
int lifecycle_exposures_reconcile(struct lifecycle *lc, struct cp_error **err);

#endif
