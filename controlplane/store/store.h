/* store.h: the registry (SQLite). The only code with SQL. WAL mode, a busy
 * timeout and foreign keys on; the schema comes only from migrations/NNNN_name.sql,
 * embedded at build time and applied in order at open, each in its own
 * transaction and recorded in schema_migrations. The CLI and the server may
 * use one database at once. A store handle is thread-safe (one connection,
 * serialized by a mutex). */
#ifndef CP_STORE_H
#define CP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"

struct store;

/* A migration embedded from migrations/NNNN_name.sql (build/gen/migrations.c). */
struct store_migration {
	int version;
	const char *name;
	const char *sql;
};
extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;

/* Busy timeout for every statement (ms): a writer waits this long for another. */
#define STORE_BUSY_TIMEOUT_MS 5000

/* Opens (creating with mode 0600) the database at path, enables WAL, busy
 * timeout and foreign keys, and applies pending migrations. The parent
 * directory must exist. *ret_store is owned by the caller (store_free). Fails
 * with UNAVAILABLE naming the path when it cannot be opened, is a symbolic
 * link, is not a regular file or belongs to another uid, INTERNAL when a
 * migration fails (the failed migration is rolled back; earlier ones stay),
 * CONFLICT when the database holds a newer schema than this binary knows. */
int store_open(const char *path, struct store **ret_store, struct cp_error **err);
void store_free(struct store *store);

/* For tests: fn(ctx, sql) is called with the text of every statement the
 * handle starts to run (sqlite3_trace_v2, SQLITE_TRACE_STMT), on the thread
 * running it, with the store's lock held (fn must not use the store).
 * fn NULL turns tracing off. ctx is borrowed until then. */
void store_trace_set(struct store *store, void (*fn)(void *ctx, const char *sql), void *ctx);

/* Highest applied migration version. */
int store_schema_version(struct store *store, int *ret_version, struct cp_error **err);

/* ---- workspaces ---- */

struct workspace_record {
	char *id;
	char *mode;      /* managed | clone | direct */
	char *path;      /* host directory behind /workspace */
	char *host_path; /* may be NULL */
	int64_t created_at_ms;
	int64_t released_at_ms; /* 0 = in use or never released */
	int64_t trashed_at_ms;  /* 0 = not in the trash */
	char *sandbox_id;       /* live sandbox using it (filled by get/list), may be NULL */
	/* Where its files are (migration 0015, issue 28): node NULL or "local"
	 * and volume NULL on this machine (path); a managed workspace of
	 * another node is that node's engine volume named volume, kept after
	 * its sandbox as path is on this machine. */
	char *node;
	char *volume;
};
void workspace_record_clear(struct workspace_record *w);

/* Inserts w (borrowed). CONFLICT when the id exists. */
int store_workspace_insert(struct store *store, const struct workspace_record *w, struct cp_error **err);
/* Loads one workspace into *ret (caller clears). NOT_FOUND names the id. */
int store_workspace_get(struct store *store, const char *id, struct workspace_record *ret, struct cp_error **err);
/* All workspaces, oldest first; *ret is an array of *ret_n records (caller
 * clears each and frees the array). */
int store_workspace_list(struct store *store, struct workspace_record **ret, size_t *ret_n, struct cp_error **err);
/* Deletes a workspace that no sandbox row refers to (used to undo a failed
 * create). CONFLICT when a sandbox still refers to it. */
int store_workspace_delete(struct store *store, const char *id, struct cp_error **err);

/* The workspace of a resolved host path and mode (clone/direct), or NOT_FOUND. */
int store_workspace_find_host(struct store *store, const char *real_path, const char *mode,
                              struct workspace_record *ret, struct cp_error **err);
/* Records that a managed workspace moved to the trash: path = new_path,
 * trashed_at_ms = now_ms. NOT_FOUND for an unknown id. */
int store_workspace_set_trashed(struct store *store, const char *id, const char *new_path, int64_t now_ms,
                                struct cp_error **err);

/* ---- statuses ----
 * A sandbox's and an approval's status, as enums with one string table each
 * (store/status.c). The registry keeps the strings; code compares the enums.
 * _to_string returns static text (NULL for a value out of range);
 * _from_string returns the value, or -EINVAL (negative) for NULL or an
 * unknown string. Pure. */
enum sandbox_status {
	SANDBOX_CREATING,
	SANDBOX_RUNNING,
	SANDBOX_FAILED,
	SANDBOX_REMOVED,
	SANDBOX_EXPIRED,  /* migration 0010 */
	SANDBOX_REMOVING, /* migration 0010 */
	_SANDBOX_STATUS_MAX,
	_SANDBOX_STATUS_INVALID = -22,
};
const char *sandbox_status_to_string(enum sandbox_status v);
enum sandbox_status sandbox_status_from_string(const char *s);
/* Whether the text status names st (false for NULL or an unknown text). */
int sandbox_status_is(const char *status, enum sandbox_status st);

enum approval_status {
	APPROVAL_PENDING,
	APPROVAL_APPROVED,
	APPROVAL_REJECTED,
	_APPROVAL_STATUS_MAX,
	_APPROVAL_STATUS_INVALID = -22,
};
const char *approval_status_to_string(enum approval_status v);
enum approval_status approval_status_from_string(const char *s);

/* ---- approvals ---- */

struct approval_record {
	char *id;
	char *host_path;             /* as requested */
	char *real_path;             /* resolved at request time */
	char *mode;                  /* clone | direct */
	enum approval_status status; /* read from the registry's text; a zeroed record is pending */
	char *workspace_id;          /* set once approved */
	char *requested_by;          /* mcp | cli */
	int64_t requested_at_ms;
	int64_t decided_at_ms; /* 0 while pending */
	char *node;            /* the machine whose directory it is: 'local' or a node's name (migration 0018) */
};
void approval_record_clear(struct approval_record *a);

/* The approval for (want->node, want->real_path, want->mode; node NULL is
 * 'local') when one exists, else a new
 * pending one made from want (its id, host_path, requested_by,
 * requested_at_ms). *ret (caller clears) is the row; *ret_created says which.
 * One transaction: two racing requests get the same row. */
int store_approval_request(struct store *store, const struct approval_record *want, struct approval_record *ret,
                           int *ret_created, struct cp_error **err);
/* One approval by id. NOT_FOUND names it and says how to list them. */
int store_approval_get(struct store *store, const char *id, struct approval_record *ret, struct cp_error **err);
/* All approvals, pending first, then newest first. Caller clears each and frees. */
int store_approval_list(struct store *store, struct approval_record **ret, size_t *ret_n, struct cp_error **err);
/* Approves a pending approval in one transaction: the workspace of its path
 * and mode is reused when it exists, else ws (borrowed; id, path = the
 * resolved path, host_path, created_at_ms) is inserted; the approval gets
 * status approved, workspace_id and decided_at_ms = now_ms. Approving an
 * approved one answers it unchanged. CONFLICT when it was rejected (the
 * message says how to allow the path after all). *ret (caller clears) is the
 * final row. */
int store_approval_approve(struct store *store, const char *id, const struct workspace_record *ws, int64_t now_ms,
                           struct approval_record *ret, struct cp_error **err);
/* Rejects a pending approval (rejecting a rejected one answers it unchanged).
 * CONFLICT when it was approved already. */
int store_approval_reject(struct store *store, const char *id, int64_t now_ms, struct approval_record *ret,
                          struct cp_error **err);
/* Operator registration (`chat2sbx workspace add`): in one transaction, the
 * workspace of (ws->path, ws->mode) is reused or ws inserted, and the approval
 * of that path and mode is made or turned approved (a rejection is
 * overridden: the operator decided). *ret (caller clears) is the workspace;
 * *ret_created says whether it is new. approval_id is used for a new
 * approval row. */
int store_workspace_register_host(struct store *store, const struct workspace_record *ws, const char *host_path,
                                  const char *approval_id, int64_t now_ms, struct workspace_record *ret,
                                  int *ret_created, struct cp_error **err);
/* Deletes workspace id completely, in one transaction: its sandbox rows
 * (with their mounts and exposures), the approvals that name it, and the
 * workspace row; the directory is the caller's. For a workspace nobody else
 * chose (the doctor's throwaway repository). CONFLICT when a sandbox is
 * still creating or running on it, NOT_FOUND when there is no such row. */
int store_workspace_forget(struct store *store, const char *id, struct cp_error **err);

/* ---- audit ---- */

struct audit_record {
	int64_t at_ms;
	const char *actor;      /* mcp | cli | serve */
	const char *action;     /* tool name, approval.approve, … */
	const char *sandbox_id; /* may be NULL */
	const char *target;     /* may be NULL */
	const char *status;     /* "ok" or an error code name */
	int64_t duration_ms;
	const char *message; /* may be NULL; stored cut to 1000 bytes */
	const char *method;  /* MCP: the JSON-RPC method; NULL for the CLI */
	const char *session; /* MCP: a short prefix of the session id; NULL when stateless */
};

/* Appends one audit row (all strings borrowed). Fails like any write. */
int store_audit_insert(struct store *store, const struct audit_record *a, struct cp_error **err);
/* The same, setting *ret_id (may be NULL) to the new row's id: a call on
 * record before it runs (status "started"), finished by store_audit_finish. */
int store_audit_insert_id(struct store *store, const struct audit_record *a, int64_t *ret_id, struct cp_error **err);
/* Sets the outcome of row id: status, duration_ms and message from a (the
 * message NULL clears it); sandbox_id and target when a has them (kept
 * otherwise). Other fields of a are ignored. NOT_FOUND when there is no such
 * row; fails like any write. */
int store_audit_finish(struct store *store, int64_t id, const struct audit_record *a, struct cp_error **err);
/* Audit rows in batches (issue 27, a group commit): rows handed to
 * store_audit_append wait in memory and one writer thread writes them in
 * one transaction once max_rows wait or delay_ms after the first of them.
 * Only for rows whose caller need not know they were written: a request's
 * row, a call's finish. A change's own row before it runs stays
 * store_audit_insert_id (the call gate: not on record, not run). */
struct store_audit_batching {
	size_t max_rows; /* a batch is written once this many rows wait */
	long delay_ms;   /* ... or this long after its first row came (> 0) */
	size_t bound;    /* at most this many wait (>= max_rows): a caller
	                  * that finds the queue full writes it itself */
	/* Called once for each row that could not be written, with why
	 * (borrowed), with the registry's lock held (it must not use the
	 * store); may be NULL. */
	void (*missed)(const char *action, const struct cp_error *e);
};
/* Starts the writer on store (opts copied). Returns 0, or -1 (logged) when
 * its thread cannot start: rows are then written at once, as without it.
 * store_free stops it and writes what waits. Call once, before the store is
 * shared. */
int store_audit_batching_start(struct store *store, const struct store_audit_batching *opts);
/* Appends a row (all strings copied): a new one when ticket is 0, else the
 * outcome of row ticket as store_audit_finish sets it. With batching, the
 * row is queued and 0 returned; a write failure later goes to the missed
 * callback. Without it, the row is written at once and the result is that
 * write's (0, or -1 with *err set). Blocks only when the queue is full, for
 * one transaction. */
int store_audit_append(struct store *store, int64_t ticket, const struct audit_record *a, struct cp_error **err);
/* Writes the queued rows now (one transaction; failures to the missed
 * callback), so that a read after it sees every row appended before it.
 * store_audit_list and store_audit_count call it. Accepts NULL and a store
 * without batching. Blocks for the registry's lock and one transaction. */
void store_audit_flush(struct store *store);
/* Count of audit rows with the given action (tests and status). */
int store_audit_count(struct store *store, const char *action, int64_t *ret_count, struct cp_error **err);

/* Which audit rows store_audit_list returns (strings borrowed; NULL = any):
 * those of one sandbox, and those of one action (a tool name such as
 * "bash", or "approval.approve"), both compared exactly. */
struct audit_filter {
	const char *sandbox_id;
	const char *action;
};
/* store_audit_list returns at most this many rows a call. */
#define STORE_AUDIT_LIST_MAX 500
/* One audit row as read back (every string owned; NULL where the row has
 * none). */
struct audit_row {
	int64_t id;
	int64_t at_ms;
	char *actor; /* mcp | cli | serve | ui */
	char *action;
	char *sandbox_id;
	char *target;
	char *status;
	int64_t duration_ms;
	char *message;
};
void audit_row_clear(struct audit_row *a);
/* The audit rows that match filter (NULL = all), newest first (at_ms, then
 * the row id, descending), skipping the first offset (>= 0) of them and
 * returning at most limit (1..STORE_AUDIT_LIST_MAX). *ret (caller clears
 * each row and frees the array; NULL when none) and *ret_n are set on
 * success. INVALID_ARGUMENT for an offset or limit out of range; fails like
 * any read otherwise. */
int store_audit_list(struct store *store, const struct audit_filter *filter, int64_t offset, size_t limit,
                     struct audit_row **ret, size_t *ret_n, struct cp_error **err);

/* ---- sandboxes ---- */

struct sandbox_record {
	char *id;
	char *workspace_id;
	enum sandbox_status status; /* read from the registry's text; a zeroed record is creating */
	char *container_name;
	char *container_id; /* may be NULL while creating */
	char *image;
	char *runtime;        /* may be NULL */
	int64_t memory_bytes; /* 0 = engine default */
	int64_t nano_cpus;    /* 0 = engine default */
	int network;
	char *failure_reason; /* may be NULL */
	int64_t created_at_ms;
	int64_t updated_at_ms;
	int64_t last_activity_ms;
	int64_t removed_at_ms;
	int pooled;         /* 1: a warm-pool member, not a user sandbox (migration 0006) */
	int64_t disk_bytes; /* writable layer size limit, 0 = none (migration 0008) */
	int unsaved;        /* clone work since its last export, as last checked: 1, 0, or -1 = not known (0010) */
	int64_t unsaved_checked_at_ms;     /* 0 = never checked */
	enum sandbox_status removing_from; /* with status removing: the status before; else
	                                    * _SANDBOX_STATUS_INVALID when read (0010) */
	char *vm_accel;                    /* runtime vm: "kvm" or "tcg"; NULL otherwise (migration 0011) */
	char *node;                        /* the node it runs on (migration 0014): "local" for this machine's
	                                    * engine; NULL in a record to insert means "local" */
};
void sandbox_record_clear(struct sandbox_record *s);
/* A deep copy of src into dst (dst's old fields are not freed; the caller
 * clears dst later). Beside the clear, so a new string field is copied and
 * freed in one file. Pure. */
void sandbox_record_copy(struct sandbox_record *dst, const struct sandbox_record *src);
/* Whether s is live: creating, running, or removing from one of those (the
 * same rule as the registry's one-live-sandbox-per-workspace index). Pure. */
int store_sandbox_is_live(const struct sandbox_record *s);

/* Inserts s (borrowed) with status 'creating' or as given. CONFLICT when the
 * workspace already has a live sandbox (store_sandbox_is_live), naming it. */
int store_sandbox_insert(struct store *store, const struct sandbox_record *s, struct cp_error **err);
/* Loads one sandbox. NOT_FOUND names the id and says to call sandbox_list. */
int store_sandbox_get(struct store *store, const char *id, struct sandbox_record *ret, struct cp_error **err);
/* The live sandbox of a workspace (store_sandbox_is_live: 'removing' too),
 * or NOT_FOUND. */
int store_sandbox_get_live_for_workspace(struct store *store, const char *workspace_id, struct sandbox_record *ret,
                                         struct cp_error **err);
/* Sandboxes, oldest first. include_removed is a set of flags: 0 lists the
 * live and failed user sandboxes; STORE_SANDBOX_LIST_REMOVED adds removed
 * ones; STORE_SANDBOX_LIST_POOLED adds warm-pool members (hidden otherwise).
 * Caller clears each and frees the array. */
#define STORE_SANDBOX_LIST_REMOVED 1
#define STORE_SANDBOX_LIST_POOLED 2
int store_sandbox_list(struct store *store, int include_removed, struct sandbox_record **ret, size_t *ret_n,
                       struct cp_error **err);
/* Count of live user sandboxes (store_sandbox_is_live; warm-pool members
 * excluded). */
int store_sandbox_count_live(struct store *store, int *ret_count, struct cp_error **err);
/* The same on one node (borrowed name; NULL = 'local'), issue 28: each
 * node's sandbox limit counts its own sandboxes. */
int store_sandbox_count_live_on(struct store *store, const char *node, int *ret_count, struct cp_error **err);
/* Sets status (and failure_reason when not NULL, container_id when not NULL),
 * updated_at = now_ms; SANDBOX_REMOVED also sets removed_at_ms, and it and
 * SANDBOX_FAILED release the workspace (released_at_ms = now_ms), in the same
 * transaction. NOT_FOUND when the id is unknown; status must be a value of
 * the enum (assert). */
int store_sandbox_set_status(struct store *store, const char *id, enum sandbox_status status, const char *container_id,
                             const char *failure_reason, int64_t now_ms, struct cp_error **err);
/* Puts the removal of sandbox id on record before its container is removed
 * (issue 13 item 4): status 'removing', removing_from = the status it
 * replaces (kept when it is 'removing' already), updated_at = now_ms. A
 * 'removed' row is left as it is. NOT_FOUND when no row changed (unknown
 * or removed); a registry that cannot write (a full disk) fails with its
 * error and changes nothing. */
int store_sandbox_set_removing(struct store *store, const char *id, int64_t now_ms, struct cp_error **err);
/* Records activity (a tool call reached the sandbox) at now_ms. */
int store_sandbox_touch(struct store *store, const char *id, int64_t now_ms, struct cp_error **err);
/* Deletes a sandbox row (used only to undo a create that failed before the
 * sandbox was ever usable). */
int store_sandbox_delete(struct store *store, const char *id, struct cp_error **err);

/* The host identity (st_dev as the kernel's dev_t, st_ino) of the directory
 * sandbox id has bind-mounted, verified at create (migration 0007;
 * sandbox_mount.c). set: NOT_FOUND when the row is missing. get: 1 with the
 * values, 0 when none was recorded (managed workspace, a runtime that does
 * not show host identities, an older row), -1 with NOT_FOUND or a store
 * error. */
int store_sandbox_set_mount_identity(struct store *store, const char *id, uint64_t dev, uint64_t ino,
                                     struct cp_error **err);
int store_sandbox_get_mount_identity(struct store *store, const char *id, uint64_t *ret_dev, uint64_t *ret_ino,
                                     struct cp_error **err);

/* One extra bind mount of a sandbox with the host identity it was verified
 * to have (migration 0009; sandbox_mount.c). */
struct sandbox_mount_record {
	char *target; /* inside the container, owned */
	char *source; /* host path, owned */
	int read_only;
	uint64_t dev; /* st_dev as the kernel's dev_t */
	uint64_t ino;
};
void sandbox_mount_record_clear(struct sandbox_mount_record *m);
/* Replaces the extra mounts recorded for sandbox id by the n in m
 * (borrowed), in one transaction. NOT_FOUND when the sandbox row is missing;
 * store errors as they come. */
int store_sandbox_mounts_set(struct store *store, const char *id, const struct sandbox_mount_record *m, size_t n,
                             struct cp_error **err);
/* The extra mounts of sandbox id by target (parents first), *ret (caller
 * clears each and frees; NULL when *ret_n is 0). No row is not an error. */
int store_sandbox_mounts_list(struct store *store, const char *id, struct sandbox_mount_record **ret, size_t *ret_n,
                              struct cp_error **err);

/* ---- saved clone work (store/exports.c, migration 0010, issue 14) ---- */

/* The refs of the approved repository a clone was made from ("<oid>
 * <refname>\n" lines, git for-each-ref), recorded at create. set: text may
 * be NULL (not a git repository). get: *ret (caller frees) is NULL when none
 * was recorded. NOT_FOUND for an unknown sandbox. */
int store_sandbox_set_source_refs(struct store *store, const char *id, const char *text, struct cp_error **err);
int store_sandbox_get_source_refs(struct store *store, const char *id, char **ret, struct cp_error **err);
/* Records the answer to "work since the last export?" (1 or 0) at now_ms. */
int store_sandbox_set_unsaved(struct store *store, const char *id, int unsaved, int64_t now_ms, struct cp_error **err);
/* The expired sandbox of a workspace (at most one is kept), or NOT_FOUND. */
int store_sandbox_get_expired_for_workspace(struct store *store, const char *workspace_id, struct sandbox_record *ret,
                                            struct cp_error **err);
/* An expired sandbox started again: status running, failure reason cleared,
 * activity at now_ms. CONFLICT when the workspace has a live sandbox
 * meanwhile, NOT_FOUND when id is not expired. */
int store_sandbox_revive(struct store *store, const char *id, int64_t now_ms, struct cp_error **err);

struct export_record {
	char *id; /* exp_… */
	char *sandbox_id;
	char *workspace_id;
	char *kind;      /* git | tar | none */
	char *reason;    /* checkpoint | destroy | expire | cleanup */
	char *path;      /* its directory on the host */
	int64_t bytes;   /* bundle or archive bytes */
	int64_t refs;    /* branches and tags */
	int64_t commits; /* commits not in the approved repository at create */
	int64_t dirty_files;
	char *fingerprint; /* may be NULL */
	char *message;     /* may be NULL */
	int64_t created_at_ms;
	int64_t applied_at_ms; /* 0 = never applied */
	int64_t applied_count;
	int64_t trashed_at_ms;  /* 0 = not in the trash */
	char *shares_bundle_of; /* the export whose bundle file this one's is a hard link of (0012); NULL = its own */
};
void export_record_clear(struct export_record *x);

/* Inserts x (borrowed), on the node its sandbox's row names ('local'
 * when that row is gone; migration 0014). CONFLICT when the id exists. */
int store_export_insert(struct store *store, const struct export_record *x, struct cp_error **err);
/* One export by id; NOT_FOUND names it and says how to list them. */
int store_export_get(struct store *store, const char *id, struct export_record *ret, struct cp_error **err);
/* The newest export of a sandbox, or NOT_FOUND. */
int store_export_last(struct store *store, const char *sandbox_id, struct export_record *ret, struct cp_error **err);
/* Every export (sandbox_id NULL) or those of one sandbox, oldest first.
 * Caller clears each and frees the array. */
int store_export_list(struct store *store, const char *sandbox_id, struct export_record **ret, size_t *ret_n,
                      struct cp_error **err);
/* An apply happened at now_ms: applied_at_ms = now_ms, applied_count + 1. */
int store_export_set_applied(struct store *store, const char *id, int64_t now_ms, struct cp_error **err);
/* Moved to the trash: path = new_path, trashed_at_ms = now_ms. */
int store_export_set_trashed(struct store *store, const char *id, const char *new_path, int64_t now_ms,
                             struct cp_error **err);
/* What the exports of sandbox_id (NULL: of the whole registry) keep, for
 * the caps (issue 23): *ret_count exports not in the trash and not of kind
 * none, *ret_bytes their bundle and archive bytes with a bundle shared by
 * hard links (shares_bundle_of) counted once. */
int store_export_usage(struct store *store, const char *sandbox_id, int64_t *ret_count, int64_t *ret_bytes,
                       struct cp_error **err);
/* Exports never applied (kind git or tar, not in the trash), for status. */
int store_export_count_unapplied(struct store *store, int64_t *ret_count, struct cp_error **err);

/* ---- warm pool (store/sandbox_pool.c, issue 8) ---- */

/* Claims one running warm-pool member on node (NULL = 'local'; issue 28:
 * each node keeps its own) made from image and runtime (NULL = engine
 * default) with memory_bytes and disk_bytes (the defaults a create without
 * options gets there) with one UPDATE: pooled 1 → 0, created, updated and
 * activity times = now_ms. Two racing claims never get the same row.
 * Returns 1 with *ret_id (caller frees) set, 0 when no member is ready. */
int store_sandbox_pool_claim(struct store *store, const char *node, const char *image, const char *runtime,
                             int64_t memory_bytes, int64_t disk_bytes, int64_t now_ms, char **ret_id,
                             struct cp_error **err);
/* Warm-pool members (pooled = 1) in any status but removed, oldest first.
 * Caller clears each and frees the array. */
int store_sandbox_pool_list(struct store *store, struct sandbox_record **ret, size_t *ret_n, struct cp_error **err);
/* Deletes a warm-pool member's sandbox row and its managed workspace row in
 * one transaction; a row that is no longer pooled (claimed meanwhile) is left
 * alone and CONFLICT is returned. NOT_FOUND for an unknown id. */
int store_sandbox_pool_forget(struct store *store, const char *id, struct cp_error **err);

/* ---- exposures (store/exposures.c, migration 0004) ---- */

struct exposure_record {
	char *sandbox_id;
	int container_port;   /* 1..65535, the sandbox's TCP port */
	char *host;           /* host address the port is published on */
	int host_port;        /* 1..65535 */
	char *forwarder_name; /* engine container that relays the port */
	char *forwarder_id;   /* may be NULL */
	char *network;        /* per-sandbox engine network the forwarder reaches the sandbox on */
	int64_t created_at_ms;
};
void exposure_record_clear(struct exposure_record *x);

/* Inserts x (borrowed). CONFLICT when (sandbox_id, container_port), the
 * forwarder name or (host, host_port) is taken; a foreign-key failure (no
 * such sandbox) is CONFLICT too. */
int store_exposure_insert(struct store *store, const struct exposure_record *x, struct cp_error **err);
/* The exposure of one sandbox port into *ret (caller clears). NOT_FOUND when
 * that port is not exposed. */
int store_exposure_get(struct store *store, const char *sandbox_id, int container_port, struct exposure_record *ret,
                       struct cp_error **err);
/* Exposures of one sandbox (sandbox_id) or of all (NULL), by sandbox then
 * port. *ret (caller clears each and frees; NULL when *ret_n is 0). */
int store_exposure_list(struct store *store, const char *sandbox_id, struct exposure_record **ret, size_t *ret_n,
                        struct cp_error **err);
/* Records the id of a forwarder made again (same name, same host port).
 * NOT_FOUND when that port is not exposed. */
int store_exposure_set_forwarder(struct store *store, const char *sandbox_id, int container_port,
                                 const char *forwarder_id, struct cp_error **err);
/* The number of exposure rows of sandbox_id, or of all sandboxes when
 * sandbox_id is NULL, into *ret_count (set only on success). Errors:
 * INTERNAL / UNAVAILABLE from SQLite. For the sandbox_expose caps. */
int store_exposure_count(struct store *store, const char *sandbox_id, int64_t *ret_count, struct cp_error **err);
/* Deletes one exposure row. NOT_FOUND when there is none. */
int store_exposure_delete(struct store *store, const char *sandbox_id, int container_port, struct cp_error **err);

/* ---- nodes (store/nodes.c, migration 0014, issue 28) ----
 * Other machines' Docker Engines. This machine's engine is node 'local'
 * and has no row (the migration says why): every function here refuses the
 * name 'local' as NOT_FOUND, and sandboxes whose node is 'local' belong to
 * no row. */

/* The name of this machine's engine as a node. */
#define STORE_NODE_LOCAL "local"

enum node_state {
	NODE_READY,    /* placements may land on it */
	NODE_DRAINING, /* no new placements; its sandboxes keep working */
	NODE_DOWN,     /* it stopped answering (the health loop's verdict) */
	_NODE_STATE_MAX,
	_NODE_STATE_INVALID = -22,
};
const char *node_state_to_string(enum node_state v);
enum node_state node_state_from_string(const char *s);

/* What a node's engine said about itself in GET /info at the last contact. */
struct node_labels {
	char *runtimes;       /* owned: registered OCI runtime names, comma-separated ("" when none) */
	int kvm;              /* 1 or 0; -1 while not known (GET /info does not tell) */
	int64_t memory_bytes; /* MemTotal */
	int64_t cpus;         /* NCPU */
	char *engine_version; /* owned: ServerVersion; may be NULL */
};
void node_labels_clear(struct node_labels *l);

/* What serve's node disk guard last found of a node's engine storage
 * (migration 0017; lifecycle/node_disk.c): -1 in the three sizes when not
 * known. */
struct node_disk {
	int64_t total_bytes;     /* the filesystem of the engine's data */
	int64_t free_bytes;      /* available to unprivileged users */
	int64_t watermark_bytes; /* CHAT2SBX_MIN_FREE_DISK applied to total_bytes */
	int low;                 /* 1: creates there refused, its sandboxes paused */
	int64_t checked_ms;      /* wall clock of the look; 0 = never */
};

struct node_record {
	char *name;     /* [a-z0-9][a-z0-9-]*, never "local" (policy_node_name_check) */
	char *endpoint; /* tcp://HOST:PORT */
	char *tls_ca;   /* paths of the copies under STATE_DIR/nodes/<name>/ */
	char *tls_cert;
	char *tls_key;
	struct node_labels labels;
	enum node_state state;   /* read from the registry's text */
	int64_t last_contact_ms; /* 0 = never */
	int64_t created_at_ms;
	struct node_disk disk; /* read only; written by store_node_set_disk */
	/* The node's directories under which a direct workspace may be asked
	 * for, ':'-separated absolute paths as CHAT2SBX_ALLOWED_HOST_ROOTS;
	 * NULL: none (migration 0018, `node add --host-root`). */
	char *host_roots;
	/* Its kernel.pid_max and kernel.threads-max as its disk probe read
	 * them (migration 0019); 0 until read. */
	int64_t pid_max, threads_max;
};
void node_record_clear(struct node_record *n);

/* Inserts n (borrowed; labels and state as given, last_contact_ms 0 for
 * none). CONFLICT naming the clash when the name or the endpoint is taken
 * (detail ALREADY_EXISTS); INVALID_ARGUMENT for the name 'local'. */
int store_node_insert(struct store *store, const struct node_record *n, struct cp_error **err);
/* One node by name into *ret (caller clears). NOT_FOUND naming it and
 * saying how to list nodes (also for 'local', which has no row). */
int store_node_get(struct store *store, const char *name, struct node_record *ret, struct cp_error **err);
/* Every node, by name. *ret (caller clears each and frees; NULL when none)
 * and *ret_n. */
int store_node_list(struct store *store, struct node_record **ret, size_t *ret_n, struct cp_error **err);
/* Every node's endpoint, read from the registry file at path without a
 * store: SQLite opened read-only, no migration, no file opened by hand, so
 * a process that holds the registry open already loses none of its locks
 * (a close(2) of another descriptor of the file would drop them: the
 * firewall asks from serve and the CLI). NULL-terminated into *ret
 * (caller frees each and the array; NULL for none, also when the file does
 * not exist or has no nodes table yet). UNAVAILABLE when it cannot be read. */
int store_node_endpoints_read(const char *path, char ***ret, struct cp_error **err);
/* Sets a node's state; *ret_before (may be NULL) gets the state it had.
 * NOT_FOUND for an unknown name. 'local' (no row: migration 0016's
 * node_local) takes ready or draining only (INVALID_ARGUMENT for down).
 * One transaction; blocks up to the busy timeout. */
int store_node_set_state(struct store *store, const char *name, enum node_state state, enum node_state *ret_before,
                         struct cp_error **err);
/* The state of node 'local' into *ret: NODE_DRAINING once `node drain
 * local` was recorded, NODE_READY otherwise (migration 0016). */
int store_node_local_state(struct store *store, enum node_state *ret, struct cp_error **err);
/* Records a contact: the labels (borrowed) and last_contact_ms = now_ms.
 * The state is left as it is (a drained node stays draining). NOT_FOUND for
 * an unknown name. */
int store_node_set_contact(struct store *store, const char *name, const struct node_labels *labels, int64_t now_ms,
                           struct cp_error **err);
/* Records node name's kernel.pid_max and kernel.threads-max (<= 0: not
 * known, stored NULL). NOT_FOUND when the row is gone. */
int store_node_set_procs(struct store *store, const char *name, int64_t pid_max, int64_t threads_max,
                         struct cp_error **err);
/* Records d (borrowed; NULL or a size below 0: not known, the sizes
 * cleared, checked_ms still written) as node name's free disk. NOT_FOUND
 * for a name without a row. */
int store_node_set_disk(struct store *store, const char *name, const struct node_disk *d, struct cp_error **err);
/* How many sandbox rows on node name still hold a container there: every
 * status but removed and failed (creating, running, expired, removing). */
int store_node_count_sandboxes(struct store *store, const char *name, int64_t *ret_count, struct cp_error **err);
/* Deletes node name in one transaction with the check that no sandbox row
 * on it holds a container (store_node_count_sandboxes, warm-pool members
 * included: their containers are there too): CONFLICT "node 'NAME' still
 * has N sandboxes; ..." otherwise, saying so when all of them are warm-pool
 * members (serve removes those from a drained node, issue 28). *ret (may be NULL; caller
 * clears) gets the deleted row, so the caller can remove its TLS files.
 * NOT_FOUND for an unknown name. */
int store_node_delete(struct store *store, const char *name, struct node_record *ret, struct cp_error **err);

#endif
