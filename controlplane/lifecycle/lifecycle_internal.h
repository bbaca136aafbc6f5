/* lifecycle_internal.h: shared by lifecycle/ sources only. */
#ifndef CP_LIFECYCLE_INTERNAL_H
#define CP_LIFECYCLE_INTERNAL_H

#include <pthread.h>

#include "../policy/policy.h"
#include "lifecycle.h"

static inline void helper_channel_unrefp(struct helper_channel **ch)
{
	if (*ch)
		helper_channel_unref(*ch);
}

struct lifecycle_channel {
	char *sandbox_id;               /* owned */
	struct helper_channel *channel; /* one reference owned by the table; NULL once dropped dead */
	char boot_id[40];               /* the helper start last greeted (recovery.c); "" = not yet */
	int owner_fd;                   /* flocked STATE_DIR/attach/<id> (lifecycle_channel_own); -1 = none */
	/* What a tool call needs of the sandbox, held so a call on a healthy
	 * sandbox reads nothing from the registry (call_state.c): its row as
	 * last seen running (row.id NULL = not known: the next call loads it)
	 * and its extra mounts (the .git protection; fixed at create). */
	struct sandbox_record row;
	struct sandbox_mount_record *mounts;
	size_t n_mounts;
	int mounts_known;    /* mounts hold the registry's list (kept when the row is forgotten) */
	int64_t activity_ms; /* the newest call start or end, in memory */
	int activity_dirty;  /* activity_ms not written to the registry yet */
};

struct lifecycle {
	const struct config *cfg;     /* borrowed */
	struct store *store;          /* borrowed */
	struct docker_engine *engine; /* borrowed */
	pthread_mutex_t lock;         /* guards channels */
	struct lifecycle_channel *channels;
	size_t n_channels;
	/* Given to every channel opened (borrowed, static; NULL = none). */
	const struct helper_receipts *receipts;
	int network_ready;           /* LIFECYCLE_NETWORK exists (under attach_lock) */
	pthread_mutex_t attach_lock; /* one (re-)attach at a time, so a sandbox never gets two channels */
	struct lifecycle_pool *pool; /* warm pool (pool.c); NULL = none */
	int pool_deferred;           /* size of a pool that starts at the first create (stdio) */
	/* How the pool makes a member (lifecycle_pool_member_create, set by
	 * lifecycle_new), so pool.c never calls create.c, which claims from it. */
	int (*pool_member_create)(struct lifecycle *lc, struct lifecycle_create_result *ret, struct cp_error **err);
	/* Calls holding a sandbox (activity.c), under lock: expiry never removes
	 * a sandbox a call holds, and a sandbox being expired takes no new call. */
	struct lifecycle_hold *holds;
	size_t n_holds;
	pthread_mutex_t create_lock;         /* the sandbox limit check and the row insert, as one step */
	struct policy_sandbox_limits limits; /* in force on this machine (host_limits.c) */
	struct lifecycle_disk_guard *disk;   /* the free-space guard (disk_guard.c); NULL until started */
	int disk_size_supported;             /* the engine's storage takes a layer size (asked at start) */
	char storage_name[96];               /* "overlay2 on extfs", for messages */
	int64_t default_disk_bytes;          /* CHAT2SBX_DEFAULT_DISK where supported, else 0 */
	/* The runtime sandboxes get (runtime_vm.c): NULL = the engine's
	 * default, "vm", or an OCI runtime's name (borrowed from cfg or static);
	 * for vm its accelerator ("kvm", "tcg"); why auto or tcg was chosen. */
	const char *runtime;
	const char *runtime_why;
	const char *vm_accel;
	const char *vm_accel_why;
	struct lifecycle_undo *undos;             /* failed creates not yet undone (undo_later.c), under lock */
	struct lifecycle_unsaved_probes *unsaved; /* unsaved-work probes (unsaved.c) */
	struct lifecycle_git_watch *git_watch;    /* direct sandboxes' .git watcher (git_watch.c); under lock */
};

/* The unsaved-work probe table (unsaved.c). free fires the probes' cancel
 * token and waits for their threads (each ends at once on the cancel). */
struct lifecycle_unsaved_probes *lifecycle_unsaved_probes_new(void);
void lifecycle_unsaved_probes_free(struct lifecycle_unsaved_probes *p);

struct lifecycle_hold {
	char *sandbox_id; /* owned */
	int calls;        /* calls between lifecycle_sandbox_channel and lifecycle_sandbox_release */
	int expiring;     /* expiry is removing it */
};

/* The limits a create asks for (create_options.c), validated. */
struct lifecycle_limits {
	int64_t memory_bytes; /* 0 = engine default */
	int64_t nano_cpus;    /* 0 = no limit */
	int64_t pids_limit;   /* > 0 */
	int64_t disk_bytes;   /* writable layer size; 0 = none (the engine cannot, or none asked) */
	int network;          /* 0 = NetworkMode none (asked, or the runtime has --network=none) */
	const char *runtime;  /* borrowed from cfg; NULL = engine default */
};
/* Validates opts' memory, cpus, pids_limit and the configured runtime (GET
 * /info) before anything is created; INVALID_ARGUMENT naming the value, or
 * UNAVAILABLE when the engine lacks the runtime. */
int lifecycle_create_limits(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                            struct lifecycle_limits *ret, struct cp_error **err);
/* What differs between a live sandbox and the limits asked for, as a
 * sentence for the model (caller frees), or NULL when nothing differs. */
char *lifecycle_limits_differ(const struct sandbox_record *s, const struct lifecycle_limits *want);
/* store_sandbox_insert after checking CHAT2SBX_MAX_ACTIVE_SANDBOXES (LIMIT
 * when reached; pooled rows are not counted), both under create_lock. */
int lifecycle_sandbox_insert_limited(struct lifecycle *lc, const struct sandbox_record *row, struct cp_error **err);

/* Undoes a failed create (undo_later.c): removes container (an id or the
 * name; NULL = none), deletes the sandbox row, then new_workspace (may be
 * NULL: a managed workspace made for this create; its row, then its empty
 * directory). All strings copied. Returns 0 when done, 1 when a step failed
 * and the rest waits for lifecycle_undo_run (logged). */
int lifecycle_undo_create(struct lifecycle *lc, const char *sandbox_id, const char *container,
                          const struct workspace_record *new_workspace);
/* Drops the undos still waiting (lifecycle_free); reconcile finishes them at
 * the next start. */
void lifecycle_undos_clear(struct lifecycle *lc);

/* Holds (activity.c). hold_begin counts a call on id; it fails (CONFLICT)
 * when the sandbox is being expired. hold_end
 * undoes one hold_begin. expire_claim marks id expiring when no call holds
 * it (returns 1), else returns 0; expire_done forgets the mark. */
int lifecycle_hold_begin(struct lifecycle *lc, const char *id, struct cp_error **err);
void lifecycle_hold_end(struct lifecycle *lc, const char *id);
int lifecycle_expire_claim(struct lifecycle *lc, const char *id);
void lifecycle_expire_done(struct lifecycle *lc, const char *id);
void lifecycle_holds_clear(struct lifecycle *lc);

/* Channel table (channels.c). get returns a new reference or NULL; put
 * always takes ch's reference (replacing and unreferencing an older one):
 * it cannot fail (STYLE, ownership: a function that takes ownership takes
 * it even on failure). */
struct helper_channel *lifecycle_channel_get(struct lifecycle *lc, const char *id);
void lifecycle_channel_put(struct lifecycle *lc, const char *id, struct helper_channel *ch);
void lifecycle_channel_drop(struct lifecycle *lc, const char *id);
/* Releases every channel whose stream has closed (the helper exited, the
 * engine went away), keeping its entry's boot id; returns how many. */
size_t lifecycle_channels_drop_dead(struct lifecycle *lc);
/* Records boot_id (the helper's hello) as the start of id's helper and
 * copies the one recorded before into prev (size bytes; "" when none).
 * A sandbox without an entry gets none recorded. */
void lifecycle_channel_boot_swap(struct lifecycle *lc, const char *id, const char *boot_id, char *prev, size_t size);
void lifecycle_channels_clear(struct lifecycle *lc);
/* Marks this process as the one using sandbox id's helper channel: an
 * flock(2) LOCK_EX|LOCK_NB on STATE_DIR/attach/<id> (made 0600, never
 * through a symlink), kept in the table entry (made without a channel when
 * missing) until lifecycle_channel_drop (which removes the file) or
 * lifecycle_channels_clear. Every attach takes it when it can; serve's
 * periodic re-attach pass attaches only where it holds it, so it never
 * attaches beside another process (the doctor's probe, a CLI command) that
 * is using the helper: two writers on one helper's stdin interleave their
 * frames. Returns 1 held (now or before), 0 another process holds it, -1
 * could not tell (the directory or file could not be made; logged at
 * debug). Never blocks but on the table's lock. */
int lifecycle_channel_own(struct lifecycle *lc, const char *id);

/* What a call needs of a running sandbox, in memory (call_state.c), all
 * under lc->lock. remember copies s (status running) and its n mounts m
 * (borrowed) into id's channel-table entry, making one without a channel
 * when missing. forget drops the row (its status is changing) but keeps
 * the channel. take: 1 when id's channel is open and its row known, with
 * *ret_channel (a reference), *ret_row, *ret_m and *ret_n (copies the
 * caller clears) filled; 0 otherwise, nothing filled. */
void lifecycle_call_state_remember(struct lifecycle *lc, const char *id, const struct sandbox_record *s,
                                   const struct sandbox_mount_record *m, size_t n);
void lifecycle_call_state_forget(struct lifecycle *lc, const char *id);
int lifecycle_call_state_take(struct lifecycle *lc, const char *id, struct helper_channel **ret_channel,
                              struct sandbox_record *ret_row, struct sandbox_mount_record **ret_m, size_t *ret_n);
/* Frees what an entry holds besides its id and channel. */
void lifecycle_call_state_clear(struct lifecycle_channel *c);
/* The mounts recorded for sandbox id: the copy held in memory, else read
 * from the registry (and held when id has an entry). Caller clears each
 * and frees the array. Store errors as they come. */
int lifecycle_call_mounts(struct lifecycle *lc, const char *id, struct sandbox_mount_record **ret_m, size_t *ret_n,
                          struct cp_error **err);
/* Records a call's activity on id at now_ms in memory; 1 when id has an
 * entry to hold it, 0 when not (the caller writes it to the registry). */
int lifecycle_activity_note(struct lifecycle *lc, const char *id, int64_t now_ms);
/* Writes the activity held in memory to the registry (store_sandbox_touch)
 * for id, or for every sandbox when id is NULL; a failed write is logged
 * and kept for the next flush. Called by the maintenance pass before
 * expiry decides, by expiry under its claim, and by lifecycle_free. */
void lifecycle_activity_flush(struct lifecycle *lc, const char *id);

/* Attaches to a container's stdio (created or running; channels.c) and opens
 * its helper channel; sends no hello (the caller greets: create, reconcile).
 * On success the channel is in the table and *ret_channel (may be NULL) gets
 * an extra reference; on failure nothing is in the table. Blocks for the
 * attach handshake (at most 10 s). */
int lifecycle_attach(struct lifecycle *lc, const char *sandbox_id, const char *container,
                     struct helper_channel **ret_channel, struct cp_error **err);
/* The same without putting the channel in the table: *ret_channel (one
 * reference, the caller's) is not used by any call until the caller puts it
 * there (a re-attach does so only after its mount checks, recovery.c). */
int lifecycle_attach_unlisted(struct lifecycle *lc, const char *sandbox_id, const char *container,
                              struct helper_channel **ret_channel, struct cp_error **err);

/* Brings back the channel of s, a row loaded as "running", whose channel is
 * missing or closed (recovery.c), under attach_lock: the container is
 * inspected; running → attach + hello (the helper's boot id is recorded, a
 * restarted helper logged); gone or stopped → the row becomes failed with
 * the reason and CONFLICT says to destroy it; restarting → UNAVAILABLE; the
 * engine not answering (stopped, restarting, hung: bounded by the engine
 * timeouts) → UNAVAILABLE naming the socket, the row untouched; a helper
 * that does not answer hello within LIFECYCLE_HELLO_TIMEOUT_MS → failed.
 * On success *ret_channel holds a reference the caller drops. */
int lifecycle_sandbox_reattach(struct lifecycle *lc, const struct sandbox_record *s,
                               struct helper_channel **ret_channel, struct cp_error **err);

/* hello on the fresh channel ch of sandbox s (up to
 * LIFECYCLE_HELLO_TIMEOUT_MS; errors as helper_channel_call): records the
 * helper's boot id in s's channel-table entry and logs a helper that started
 * again since the last hello (its container was restarted: an engine restart
 * or a helper crash), or, with no earlier hello known, one that started long
 * after the sandbox was created (recovery.c). ret_boot (may be NULL) gets
 * the boot id. */
int lifecycle_helper_greet(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel *ch,
                           char ret_boot[40], struct cp_error **err);

/* An expired sandbox of workspace w started again for sandbox_create
 * (expired.c): 1 with *ret filled (reused, a note saying so), 0 when w has
 * none, -1 with *err (the sandbox limit, the engine, a failed re-attach:
 * the sandbox then stays expired or becomes failed with the reason). */
int lifecycle_expired_revive(struct lifecycle *lc, const struct workspace_record *w, const struct lifecycle_limits *lim,
                             struct lifecycle_create_result *ret, struct cp_error **err);

/* ---- mount verification (mount_verify.c) ---- */

/* The nesting rule (policy_host_nesting_check) for resolved host path real
 * in mode (clone | direct) against every workspace in store except self_id
 * (may be NULL) and any with the same directory. DENIED naming the other
 * workspace; store errors as they come. Direct mode first: DENIED when real
 * is a git directory itself (a ".git" component, or a bare repository with
 * HEAD, objects/ and refs/), whose config and hooks the sandbox would own.
 * Called at registration, approval and create alike. */
int lifecycle_host_nesting_check(struct store *store, const char *real, const char *mode, const char *self_id,
                                 struct cp_error **err);

/* Opens the resolved directory real with openat2(RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS, O_PATH | O_DIRECTORY) and returns its st_dev (the
 * kernel's dev_t) and st_ino. A symlink (or a missing or non-directory)
 * component means the path changed since it was checked: CONFLICT "the
 * directory ... changed while it was being mounted ...". Other errors
 * INTERNAL with errno. Blocks only on the file system. */
int lifecycle_mount_identity(const char *real, uint64_t *ret_dev, uint64_t *ret_ino, struct cp_error **err);
/* The same, keeping the O_PATH descriptor of the directory open in *ret_fd
 * (caller closes), for opening paths beneath the very directory checked. */
int lifecycle_mount_open(const char *real, int *ret_fd, uint64_t *ret_dev, uint64_t *ret_ino, struct cp_error **err);

/* 1 when the runtime (NULL or "" = the engine's default, taken as runc)
 * shows a bind mount's host st_dev/st_ino inside the container, so that
 * lifecycle_mount_verify applies; 0 otherwise (gVisor reports its own). */
int lifecycle_mount_runtime_verifiable(const char *runtime);

/* For runtimes whose mounts cannot be verified (gVisor): refuses (DENIED,
 * naming the mount) a resolved host path that lies on a bind mount of a
 * subdirectory (its /proc/self/mountinfo root is not "/"), which the
 * path-based nesting rule cannot see through. Reads mountinfo only. */
int lifecycle_mount_alias_check(const char *real, struct cp_error **err);

/* Asks the helper of sandbox_id on ch (up to LIFECYCLE_HELLO_TIMEOUT_MS)
 * for fs.stat of target and compares with (dev, ino) of host_dir as
 * lifecycle_mount_identity gave them. Mismatch, or nothing at target (the
 * helper's NOT_FOUND: the host path was renamed away): a security warning
 * in the log, an audit row (action sandbox.mount_refused) and DENIED "the
 * host path ... changed while it was being mounted ...; try again". The
 * caller removes the container. Other channel errors as they come. */
int lifecycle_mount_verify(struct lifecycle *lc, struct helper_channel *ch, const char *sandbox_id, const char *target,
                           const char *host_dir, uint64_t dev, uint64_t ino, struct cp_error **err);

/* Judges a container's mount table (mountinfo, the text of
 * /proc/self/mountinfo, proc(5)) against the n mounts asked for (targets
 * and flags of want): each target not optional must be a mount point,
 * read-only when asked, and nothing may be mounted anywhere else but
 * at the engine's own places (/, /proc, /sys, /dev and below, /etc/hosts,
 * /etc/hostname, /etc/resolv.conf). 0, or -1 with the first difference in
 * reason (size bytes). A mount target inside a host directory (the .git
 * paths) is resolved by the engine in that directory, so a symlink raced in
 * there moves the mount elsewhere, which this sees. Pure. */
struct lifecycle_mount_want {
	const char *target; /* mount point inside the container (borrowed) */
	int read_only;      /* must be mounted read-only */
	int optional;       /* may be missing (it is only allowed there) */
};
int lifecycle_mountinfo_judge(const char *mountinfo, const struct lifecycle_mount_want *want, size_t n, char *reason,
                              size_t size);

/* Asks the helper of s on ch for its mount table (fs.mounts, up to
 * LIFECYCLE_HELLO_TIMEOUT_MS) and judges it (lifecycle_mountinfo_judge)
 * against what chat2sbx mounts for a workspace in mode with the extra
 * mounts m: the helper, the workspace, m, and the test-only engine socket.
 * A difference: a security warning, an audit row (sandbox.mount_refused)
 * and DENIED naming it; the caller removes or stops the container.
 * Channel errors as they come. */
int lifecycle_mounts_verify(struct lifecycle *lc, struct helper_channel *ch, const struct sandbox_record *s,
                            const char *mode, const struct sandbox_mount_record *m, size_t n, struct cp_error **err);
/* The judging half of lifecycle_mounts_verify, on a reply whose string
 * member "mountinfo" holds the mount table (proc(5) mountinfo; reply
 * borrowed; a missing member judges an empty table): the helper's fs.mounts
 * answer, or a vm sandbox's got from its container (runtime_vm.c), where
 * the launcher mount is expected too. */
int lifecycle_mounts_judge(struct lifecycle *lc, const struct sandbox_record *s, const char *mode,
                           const struct sandbox_mount_record *m, size_t n, struct json_object *reply,
                           struct cp_error **err);

/* Logs message as a security warning and writes the audit row
 * sandbox.mount_refused (status DENIED) for sandbox_id and target. */
void lifecycle_mount_audit(struct lifecycle *lc, const char *sandbox_id, const char *target, const char *message);
/* The same with another audit action ("sandbox.git_guard_lost"). */
void lifecycle_security_audit(struct lifecycle *lc, const char *action, const char *sandbox_id, const char *target,
                              const char *message);

/* ---- direct-mode .git protection (git_guard.c) ---- */

struct lifecycle_git_guard {
	enum policy_git_shape shape;
	struct sandbox_mount_record *mounts; /* owned; parents first, as policy_git_paths lists them */
	size_t n;
};
void lifecycle_git_guard_clear(struct lifecycle_git_guard *g);

/* Prepares the .git protection of the direct workspace real, whose
 * directory ws_fd (an O_PATH descriptor from lifecycle_mount_open) is: finds
 * the shape of real/.git, refuses (DENIED, naming the path, what is there
 * and what to do; nothing created) a symlink or a type other than git's at
 * .git or any protected path, a commondir naming another directory, a
 * gitfile naming a git dir inside real, anything but regular files and
 * directories anywhere in a .git directory (lifecycle_git_tree_judge, up
 * to POLICY_GIT_TREE_MAX_MS); then creates the missing protected
 * paths' placeholders (owned like .git when running as root; UNAVAILABLE
 * when that is not possible) and opens each protected path beneath ws_fd
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), recording its host
 * identity. *ret (caller clears) lists the mounts: source real/REL, target
 * target_root/REL; none when real has no .git. Blocks on the file system. */
int lifecycle_git_guard_prepare(int ws_fd, const char *real, const char *target_root, struct lifecycle_git_guard *ret,
                                struct cp_error **err);

/* Verifies from inside (lifecycle_mount_verify, fs.stat) that each of the n
 * mounts shows the identity recorded for it; the first mismatch is DENIED
 * as lifecycle_mount_verify says. Channel errors as they come. */
int lifecycle_git_guard_verify(struct lifecycle *lc, struct helper_channel *ch, const char *sandbox_id,
                               const struct sandbox_mount_record *m, size_t n, struct cp_error **err);

/* Host side: 0 when every source still opens (no symlink anywhere) to the
 * identity recorded, else 1 + the index of the first that does not, with a
 * sentence for the failure reason in reason (size bytes). A host-side
 * rename over a mount point drops that mount inside the container. */
int lifecycle_git_guard_host_lost(const struct sandbox_mount_record *m, size_t n, char *reason, size_t size);

/* For a running sandbox s: its recorded extra mounts m (n; borrowed, from
 * lifecycle_call_mounts) checked on the host
 * (lifecycle_git_guard_host_lost). Lost: a security warning, an audit row
 * (sandbox.git_guard_lost), the container stopped, the row marked failed
 * with the reason, and CONFLICT "sandbox ... has failed (...)". Store
 * errors as they come. Blocks on the file system, and on the engine (stop,
 * up to 30 s) only when the protection was lost. */
int lifecycle_sandbox_guard_check(struct lifecycle *lc, const struct sandbox_record *s,
                                  const struct sandbox_mount_record *m, size_t n, struct cp_error **err);

/* ---- a direct workspace's whole .git (git_tree.c, git_watch.c,
 * git_quarantine.c; issue 23) ---- */

/* What one walk of a .git found (policy/git_tree.c judges). */
struct lifecycle_git_scan {
	struct policy_git_finding found[POLICY_GIT_TREE_MAX_FINDINGS]; /* n of them; strings owned */
	size_t n;
	size_t more;                 /* offending entries past found[] */
	enum policy_git_bound bound; /* NONE, or why the walk stopped early */
	char *bound_rel;             /* where below .git it stopped (owned; may be NULL) */
	size_t entries, dirs;        /* files and directories counted, directories visited */
	size_t reread;               /* directories read this time (the others came from the cache) */
};
void lifecycle_git_scan_clear(struct lifecycle_git_scan *s);

/* One .git's cache of directories (git_tree.c). inotify_fd (borrowed; -1 =
 * none) gets a watch (IN_CREATE | IN_MOVED_TO) on every directory the tree
 * holds, added through the directory's own descriptor; the watches go when
 * the caller closes it. free accepts NULL. */
struct lifecycle_git_tree *lifecycle_git_tree_new(int inotify_fd);
void lifecycle_git_tree_free(struct lifecycle_git_tree *t);
/* Walks the .git directory git_fd (any descriptor of it, O_PATH will do;
 * borrowed) without following any symlink (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS below it; lstat-like types), re-reading only the
 * directories whose identity or times changed since t last saw them.
 * Returns 0 when everything is a regular file or a directory, 1 when *ret
 * (caller clears) names what is not (or the walk stopped at a bound: a
 * refusal, never a pass), -1 on an error the file system gave (INTERNAL;
 * CONFLICT when .git changed under the walk). Blocks on the file system,
 * at most POLICY_GIT_TREE_MAX_MS. Not thread-safe for one t. */
int lifecycle_git_tree_walk(struct lifecycle_git_tree *t, int git_fd, struct lifecycle_git_scan *ret,
                            struct cp_error **err);
/* The bounds of t's walks (POLICY_GIT_TREE_MAX_* unless set here): for
 * tests and the benchmark, which reach them without 200 000 files. */
void lifecycle_git_tree_set_bounds(struct lifecycle_git_tree *t, size_t max_entries, int max_depth, int max_ms);
/* errno of the first watch that could not be added (ENOSPC: the watch
 * limit, the user's or the tree's own); 0 when every directory is watched. */
int lifecycle_git_tree_watch_errno(const struct lifecycle_git_tree *t);
/* One uncached walk of git_fd for a create: 0, or DENIED (policy_git_tree_
 * refusal / _bound_refusal naming git_dir, the host path) and errors as
 * lifecycle_git_tree_walk. Creates nothing. */
int lifecycle_git_tree_judge(int git_fd, const char *git_dir, struct cp_error **err);

/* For a running direct sandbox s whose recorded mounts are m (n; borrowed):
 * the .git directory among them (none: 0) walked through s's cache, which
 * this registers with the watcher (a thread started at the first call,
 * stopped by lifecycle_free); skipped (one poll(2)) while the watches saw
 * nothing since a clean walk less than 30 s ago. Anything but regular
 * files and directories,
 * or a bound reached: what was found is moved into DATA_ROOT/quarantine,
 * the container is paused, walked again, stopped, the row marked failed
 * with the reason (policy_git_tree_reason), logged as a security warning
 * and audited (sandbox.git_tree_refused); CONFLICT "sandbox ... has failed
 * (...)". Blocks on the file system (POLICY_GIT_TREE_MAX_MS) and, when it
 * stops the sandbox, on the engine. */
int lifecycle_git_tree_check(struct lifecycle *lc, const struct sandbox_record *s, const struct sandbox_mount_record *m,
                             size_t n, struct cp_error **err);
/* Stops the watcher and frees what it holds (lifecycle_free). */
void lifecycle_git_watch_free(struct lifecycle *lc);

/* Moving offending entries out of a repository (git_quarantine.c). */
struct lifecycle_git_quarantine {
	char *dir;                  /* DATA_ROOT/quarantine/<sandbox>-<time>-<pid> once made (owned) */
	int dir_fd;                 /* -1 until made */
	size_t moved;               /* entries put there so far, named 1, 2, ... */
	struct json_object *record; /* an array: one object per entry handled */
};
void lifecycle_git_quarantine_init(struct lifecycle_git_quarantine *q);
/* Moves each of the n findings f (rel below git_fd; borrowed) that is not
 * moved yet into q's directory (made at the first move, 0700, under
 * DATA_ROOT/quarantine, never through a symlink): renameat2 without
 * following it; from another file system a symbolic link is made again
 * there and the original unlinked, anything else unlinked and recorded.
 * Sets f[i].moved_as, or f[i].move_errno. Directories chat2sbx may not read
 * and .git itself stay. -1 (UNAVAILABLE) only when the quarantine
 * directory cannot be made. Blocks on the file system. */
int lifecycle_git_quarantine_move(struct lifecycle_git_quarantine *q, const struct config *cfg, const char *sandbox_id,
                                  const char *git_dir, int git_fd, struct policy_git_finding *f, size_t n,
                                  struct cp_error **err);
/* Writes q's record.json (path, type, target, where it went or why not)
 * and releases q. Logs a failure to write it. */
void lifecycle_git_quarantine_close(struct lifecycle_git_quarantine *q);

/* Marks sandbox id failed with reason unless its row has left "running"
 * (a destroy racing with us must stay removed), and drops its channel
 * (fail.c). */
void lifecycle_sandbox_fail_running(struct lifecycle *lc, const char *id, const char *reason);

/* Compares the stat answer res (fs.stat's fields: dev_major, dev_minor,
 * ino; borrowed) of target in sandbox_id with (dev, ino) of host_dir as
 * lifecycle_mount_identity gave them; a mismatch is DENIED, logged and
 * audited as lifecycle_mount_verify says. */
int lifecycle_mount_compare(struct lifecycle *lc, const char *sandbox_id, const char *target, const char *host_dir,
                            uint64_t dev, uint64_t ino, struct json_object *res, struct cp_error **err);

/* ---- the vm runtime (runtime_vm.c) ---- */

/* Decides lc->runtime (CHAT2SBX_RUNTIME, auto: vm where the CPU advertises
 * vmx/svm, /dev/kvm opens and the vm image exists, else the engine's
 * default; policy_runtime_choose) and, for vm, the accelerator
 * (CHAT2SBX_VM_ACCEL; a TCG choice is logged as a warning). Reads
 * /proc/cpuinfo, opens /dev/kvm, asks the engine for the vm image (auto
 * only). UNAVAILABLE when kvm is asked for and not usable. */
int lifecycle_vm_select(struct lifecycle *lc, struct cp_error **err);

/* The launcher's exit statuses (template/vm/src/vm.h VM_EXIT_*): the
 * mount is not the verified directory; the guest cannot boot. */
#define LIFECYCLE_VM_EXIT_MOUNT_CHANGED 78
#define LIFECYCLE_VM_EXIT_CONFIG 79
/* Where the vm launcher is mounted, read-only (template/vm/src/vm.h VM_SELF). */
#define LIFECYCLE_VM_TARGET "/.chat2sbx/vm"
#define LIFECYCLE_VM_ENV_MAX 24
/* Storage for what lifecycle_vm_container points spec at; lives as long
 * as the spec. */
struct lifecycle_vm_parts {
	const char *env[LIFECYCLE_VM_ENV_MAX];
	char text[6][128];
	const char *entrypoint[3];
};
/* Turns the container spec of sandbox s (row runtime "vm") on workspace w
 * into the vm runtime's (the caller has mounted the launcher,
 * CHAT2SBX_VM_PATH, read-only at LIFECYCLE_VM_TARGET): the launcher as entrypoint with its settings in the environment
 * (the row's accelerator, the workspace mode, network, the guest's process limit = spec's pids_limit,
 * CHAT2SBX_VM_DOCKER, and the verified mount identity mount_dev:mount_ino of a host workspace), runc, every capability
 * dropped but CHOWN, DAC_OVERRIDE, FOWNER, SETGID, SETUID and KILL (the launcher's; QEMU keeps none), /dev/kvm under
 * KVM, and a pids limit for QEMU's threads. Pure; everything borrowed. */
void lifecycle_vm_container(const struct lifecycle *lc, const struct sandbox_record *s,
                            const struct workspace_record *w, uint64_t mount_dev, uint64_t mount_ino,
                            struct docker_container_spec *spec, struct lifecycle_vm_parts *parts);
/* INVALID_ARGUMENT naming the smallest size when memory_bytes (> 0) is
 * below LIFECYCLE_VM_MIN_MEMORY. Pure. */
int lifecycle_vm_memory_check(int64_t memory_bytes, struct cp_error **err);
/* The mount checks of a vm sandbox s on a host workspace (mode, host_dir
 * with identity dev:ino) with the extra mounts m (the .git protection),
 * made in its container (`chat2sbx-vm stat` and `chat2sbx-vm mounts`,
 * engine exec), where the host's device and inode numbers are visible (9p
 * shows its own in the guest): the workspace target, each of m, and the
 * mount table when n > 0, as lifecycle_mount_verify, lifecycle_git_guard_verify
 * and lifecycle_mounts_verify judge them. DENIED on a difference; engine
 * errors as they come. Blocks up to about 40 s per exec. */
int lifecycle_vm_mounts_verify(struct lifecycle *lc, const char *container, const struct sandbox_record *s,
                               const char *mode, const char *host_dir, uint64_t dev, uint64_t ino,
                               const struct sandbox_mount_record *m, size_t n, struct cp_error **err);
/* Forwards container TCP port into the guest of a vm sandbox (QMP
 * hostfwd_add, recorded for later boots; `chat2sbx-vm expose`), so
 * sandbox_expose's forwarder reaches the guest's server. Idempotent.
 * Errors name the port; blocks up to about 40 s. */
int lifecycle_vm_forward(struct lifecycle *lc, const char *container, int port, struct cp_error **err);
/* The reason a vm sandbox's container exited with exit_code, when it is
 * the launcher's own refusal (mount changed, cannot boot); else NULL. */
const char *lifecycle_vm_exit_reason(int exit_code);
/* 1 when the container in st is down (exited, or between the engine's
 * restarts) because its launcher refused (lifecycle_vm_exit_reason). Pure. */
int lifecycle_vm_refused(const struct docker_container_state *st);
/* Before a vm sandbox mounts workspace w: QEMU runs as the directory's
 * owner, never root. A root-owned managed workspace (serve runs as root)
 * is made over to LIFECYCLE_VM_UID, recursively (lchown, no links
 * followed, no mounts crossed); a root-owned direct workspace is refused
 * (DENIED, saying how to give it to its user); clone needs nothing (it is
 * only read). Blocks on the file system. */
int lifecycle_vm_workspace_prepare(struct lifecycle *lc, const struct workspace_record *w, struct cp_error **err);
/* After a vm sandbox's first hello failed: when its container exited
 * because the launcher refused (lifecycle_vm_exit_reason), *err is
 * replaced by that reason (DENIED and audited for a changed mount,
 * UNAVAILABLE otherwise); else *err is left as it is. One inspect. */
void lifecycle_vm_explain(struct lifecycle *lc, const char *sandbox_id, const char *container, struct cp_error **err);

/* The claim hook of lifecycle_sandbox_create: when opts ask for a new
 * managed workspace with default options (no workspace, memory, cpus, pids
 * or network option) and a member made from the configured image and
 * runtime is ready, claims it atomically (store_sandbox_pool_claim) and
 * fills *ret with it (a user sandbox from now on, created and active now),
 * then wakes the refill. Returns 1 when claimed, 0 when the caller must
 * create cold (no pool, no member ready, the sandbox limit is reached — the
 * cold path reports that — or the claimed member's helper no longer answers:
 * it is removed), -1 with *err on a registry failure. */
int lifecycle_pool_claim(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                         struct lifecycle_create_result *ret, struct cp_error **err);

/* The cold path of lifecycle_sandbox_create, for the warm pool (pool.c):
 * never a claim; a new managed workspace with default options, and the row
 * pooled (hidden from listings, limits and expiry) with LIFECYCLE_LABEL_POOL
 * on its container. Contract otherwise as lifecycle_sandbox_create. */
int lifecycle_pool_member_create(struct lifecycle *lc, struct lifecycle_create_result *ret, struct cp_error **err);

#endif
