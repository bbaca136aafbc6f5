/* guard.h: the host's guards around sandboxes it does not trust (issues
 * 12, 13, 15, 23): the host-mount checks (mount_verify.c), a direct
 * workspace's .git protected, walked and watched (git_guard.c, git_tree.c,
 * git_watch.c, git_quarantine.c), the free-space guard (disk_guard.c,
 * disk_watch.c, disk_decide.c), the limits derived from this machine
 * (host_limits.c), the bridge names the firewall relies on (bridges.c) and
 * the vm runtime's host side (vm.c). Below lifecycle/, which makes and runs
 * sandboxes and calls these; a guard knows no lifecycle: what it needs of
 * the host comes in a struct guard_host, and what it does to a sandbox it
 * finds broken beyond stopping it (marking it failed) goes through the
 * guard_fail_fn it was given. */
#ifndef CP_GUARD_H
#define CP_GUARD_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"
#include "../config/config.h"
#include "../docker/docker.h"
#include "../helper/helper.h"
#include "../policy/policy.h"
#include "../store/store.h"

struct json_object;
struct guard_git_watch;

/* What every guard needs of the host; borrowed, outliving every guard. */
struct guard_host {
	const struct config *cfg;
	struct store *store;          /* audit rows, sandbox rows */
	struct docker_engine *engine; /* pause, stop, inspect, exec */
};

/* Marks sandbox id failed with reason (a sentence) and drops whatever holds
 * its channel; the guard has stopped its container first. Called from any
 * thread (the .git watcher's too); must not call back into the guard. */
typedef void (*guard_fail_fn)(void *ctx, const char *id, const char *reason);

/* ---- runtimes (vm.c, issue 15) ---- */

/* Which runtime sandboxes get on this machine, and why. */
struct guard_runtime_choice {
	const char *runtime;   /* NULL: the engine's default; "vm"; or an OCI runtime (borrowed from cfg) */
	const char *why;       /* static: why auto chose it; NULL when it was named */
	const char *accel;     /* vm: "kvm" or "tcg" (static); NULL otherwise */
	const char *accel_why; /* static: why tcg; NULL for kvm or an explicit tcg */
	int cpu_virt;          /* the CPU advertises vmx or svm (/proc/cpuinfo) */
	int kvm_access;        /* /dev/kvm opens for reading and writing */
	int vm_image;          /* the vm image is in the engine (asked only when auto could choose vm) */
};
/* Decides the runtime from CHAT2SBX_RUNTIME ("" or auto: vm where the CPU
 * advertises vmx/svm, /dev/kvm opens and the vm image (CHAT2SBX_VM_IMAGE)
 * is in engine, else the engine's default; policy_runtime_choose) and, for
 * vm, the accelerator from CHAT2SBX_VM_ACCEL (policy_vm_accel_choose).
 * Reads /proc/cpuinfo, opens /dev/kvm, asks engine (may be NULL: no image
 * then) for the image in the auto case only. *ret borrows from cfg.
 * UNAVAILABLE when kvm is asked for and not usable. Used by serve
 * (lifecycle_new) and by status and setup, so all three agree. */
int guard_runtime_probe(const struct config *cfg, struct docker_engine *engine, struct guard_runtime_choice *ret,
                        struct cp_error **err);

/* The first hello's deadline for a sandbox of runtime (ms). */
int guard_vm_hello_timeout_ms(const char *runtime);

/* ---- the limits in force (host_limits.c; issue 13) ---- */
/* Reads this machine's memory, kernel.pid_max and threads-max from /proc.
 * UNAVAILABLE when they cannot be read. */
int guard_host_read(struct policy_host *ret, struct cp_error **err);
/* The sandbox limits cfg gives on this machine (policy_sandbox_limits over
 * guard_host_read); ret_host (may be NULL) gets the facts. Errors: the
 * read's, INVALID_ARGUMENT for CHAT2SBX_DEFAULT_MEMORY that is no size, or a
 * setting that cannot fit (policy_sandbox_limits). */
int guard_host_limits(const struct config *cfg, struct policy_host *ret_host, struct policy_sandbox_limits *ret,
                      struct cp_error **err);

/* ---- bridge interfaces (bridges.c, issue 12) ---- */

/* The bridge of sandbox_id's expose network: POLICY_BRIDGE_PREFIX "x"
 * and the last 10 characters of the id (50 random bits of a sandbox id;
 * the engine refuses a second network on a bridge name in use), into buf
 * (at least 16 bytes). Pure. */
void guard_expose_bridge_name(const char *sandbox_id, char *buf, size_t size);

/* The bridge interfaces of chat2sbx's networks on the engine (the shared
 * POLICY_NETWORK and every expose network, of any registry) that do not
 * start with POLICY_BRIDGE_PREFIX: networks an older chat2sbx made
 * before it named its bridges. *ret (caller frees with docker_strv_free) is
 * a NULL-terminated vector, possibly empty. Engine errors pass through.
 * Blocks on two engine calls (at most 15 s each). */
int guard_legacy_bridges(struct docker_engine *engine, char ***ret, struct cp_error **err);

/* ---- mount verification (mount_verify.c) ---- */

/* The nesting rule (policy_host_nesting_check) for resolved host path real
 * in mode (clone | direct) against every workspace of this machine in store
 * (not another node's host workspaces) except self_id (may be NULL) and any
 * with the same directory. DENIED naming the other
 * workspace; store errors as they come. Direct mode first: DENIED when real
 * is a git directory itself (a ".git" component, or a bare repository with
 * HEAD, objects/ and refs/), whose config and hooks the sandbox would own.
 * Called at registration, approval and create alike. */
int guard_host_nesting_check(struct store *store, const char *real, const char *mode, const char *self_id,
                             struct cp_error **err);
/* The same rule for path (as written; policy_node_path_check passed) on
 * another node, against that node's host workspaces only (the same path on
 * two machines is two directories; migration 0018). The .git shape is the
 * node check's (lifecycle/node_path.c). DENIED naming the other workspace;
 * store errors as they come. */
int guard_node_nesting_check(struct store *store, const char *node, const char *path, const char *mode,
                             const char *self_id, struct cp_error **err);

/* Opens the resolved directory real with openat2(RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS, O_PATH | O_DIRECTORY) and returns its st_dev (the
 * kernel's dev_t) and st_ino. A symlink (or a missing or non-directory)
 * component means the path changed since it was checked: CONFLICT "the
 * directory ... changed while it was being mounted ...". Other errors
 * INTERNAL with errno. Blocks only on the file system. */
int guard_mount_identity(const char *real, uint64_t *ret_dev, uint64_t *ret_ino, struct cp_error **err);
/* The same, keeping the O_PATH descriptor of the directory open in *ret_fd
 * (caller closes), for opening paths beneath the very directory checked. */
int guard_mount_open(const char *real, int *ret_fd, uint64_t *ret_dev, uint64_t *ret_ino, struct cp_error **err);

/* 1 when the runtime (NULL or "" = the engine's default, taken as runc)
 * shows a bind mount's host st_dev/st_ino inside the container, so that
 * guard_mount_verify applies; 0 otherwise (gVisor reports its own). */
int guard_mount_runtime_verifiable(const char *runtime);

/* For runtimes whose mounts cannot be verified (gVisor): refuses (DENIED,
 * naming the mount) a resolved host path that lies on a bind mount of a
 * subdirectory (its /proc/self/mountinfo root is not "/"), which the
 * path-based nesting rule cannot see through. Reads mountinfo only. */
int guard_mount_alias_check(const char *real, struct cp_error **err);

/* Asks the helper of sandbox_id on ch (up to POLICY_HELLO_TIMEOUT_MS)
 * for fs.stat of target and compares with (dev, ino) of host_dir as
 * guard_mount_identity gave them. Mismatch, or nothing at target (the
 * helper's NOT_FOUND: the host path was renamed away): a security warning
 * in the log, an audit row (action sandbox.mount_refused) and DENIED "the
 * host path ... changed while it was being mounted ...; try again". The
 * caller removes the container. Other channel errors as they come. */
int guard_mount_verify(const struct guard_host *h, struct helper_channel *ch, const char *sandbox_id,
                       const char *target, const char *host_dir, uint64_t dev, uint64_t ino, struct cp_error **err);

/* Judges a container's mount table (mountinfo, the text of
 * /proc/self/mountinfo, proc(5)) against the n mounts asked for (targets
 * and flags of want): each target not optional must be a mount point,
 * read-only when asked, and nothing may be mounted anywhere else but
 * at the engine's own places (/, /proc, /sys, /dev and below, /etc/hosts,
 * /etc/hostname, /etc/resolv.conf). 0, or -1 with the first difference in
 * reason (size bytes). A mount target inside a host directory (the .git
 * paths) is resolved by the engine in that directory, so a symlink raced in
 * there moves the mount elsewhere, which this sees. Pure. */
struct guard_mount_want {
	const char *target; /* mount point inside the container (borrowed) */
	int read_only;      /* must be mounted read-only */
	int optional;       /* may be missing (it is only allowed there) */
};
int guard_mountinfo_judge(const char *mountinfo, const struct guard_mount_want *want, size_t n, char *reason,
                          size_t size);

/* Asks the helper of s on ch for its mount table (fs.mounts, up to
 * POLICY_HELLO_TIMEOUT_MS) and judges it (guard_mountinfo_judge)
 * against what chat2sbx mounts for a workspace in mode with the extra
 * mounts m: the helper, the workspace, m, and the test-only engine socket.
 * A difference: a security warning, an audit row (sandbox.mount_refused)
 * and DENIED naming it; the caller removes or stops the container.
 * Channel errors as they come. */
int guard_mounts_verify(const struct guard_host *h, struct helper_channel *ch, const struct sandbox_record *s,
                        const char *mode, const struct sandbox_mount_record *m, size_t n, struct cp_error **err);
/* The judging half of guard_mounts_verify, on a reply whose string
 * member "mountinfo" holds the mount table (proc(5) mountinfo; reply
 * borrowed; a missing member judges an empty table): the helper's fs.mounts
 * answer, or a vm sandbox's got from its container (vm.c), where
 * the launcher mount is expected too. */
int guard_mounts_judge(const struct guard_host *h, const struct sandbox_record *s, const char *mode,
                       const struct sandbox_mount_record *m, size_t n, struct json_object *reply,
                       struct cp_error **err);

/* Logs message as a security warning and writes the audit row
 * sandbox.mount_refused (status DENIED) for sandbox_id and target. */
void guard_mount_audit(const struct guard_host *h, const char *sandbox_id, const char *target, const char *message);
/* The same with another audit action ("sandbox.git_guard_lost"). */
void guard_security_audit(const struct guard_host *h, const char *action, const char *sandbox_id, const char *target,
                          const char *message);

/* ---- direct-mode .git protection (git_guard.c) ---- */

struct guard_git {
	enum policy_git_shape shape;
	struct sandbox_mount_record *mounts; /* owned; parents first, as policy_git_paths lists them */
	size_t n;
};
void guard_git_clear(struct guard_git *g);

/* Prepares the .git protection of the direct workspace real, whose
 * directory ws_fd (an O_PATH descriptor from guard_mount_open) is: finds
 * the shape of real/.git, refuses (DENIED, naming the path, what is there
 * and what to do; nothing created) a symlink or a type other than git's at
 * .git or any protected path, a commondir naming another directory, a
 * gitfile naming a git dir inside real, anything but regular files and
 * directories anywhere in a .git directory (guard_git_tree_judge, up
 * to POLICY_GIT_TREE_MAX_MS); then creates the missing protected
 * paths' placeholders (owned like .git when running as root; UNAVAILABLE
 * when that is not possible) and opens each protected path beneath ws_fd
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), recording its host
 * identity. *ret (caller clears) lists the mounts: source real/REL, target
 * target_root/REL; none when real has no .git. Blocks on the file system. */
int guard_git_prepare(int ws_fd, const char *real, const char *target_root, struct guard_git *ret,
                      struct cp_error **err);

/* Verifies from inside (guard_mount_verify, fs.stat) that each of the n
 * mounts shows the identity recorded for it; the first mismatch is DENIED
 * as guard_mount_verify says. Channel errors as they come. */
int guard_git_verify(const struct guard_host *h, struct helper_channel *ch, const char *sandbox_id,
                     const struct sandbox_mount_record *m, size_t n, struct cp_error **err);

/* Host side: 0 when every source still opens (no symlink anywhere) to the
 * identity recorded, else 1 + the index of the first that does not, with a
 * sentence for the failure reason in reason (size bytes). A host-side
 * rename over a mount point drops that mount inside the container. */
int guard_git_host_lost(const struct sandbox_mount_record *m, size_t n, char *reason, size_t size);

/* For a running sandbox s: its recorded extra mounts m (n; borrowed: the
 * .git protection recorded at create) checked on the host
 * (guard_git_host_lost), then the rest of its .git through w
 * (guard_git_tree_check). Lost: a security warning, an audit row
 * (sandbox.git_guard_lost), the container stopped, w's fail function
 * called with the reason, and CONFLICT "sandbox ... has failed (...)".
 * A sandbox of another node (s->node not 'local') answers 0 at once: its
 * paths are that machine's and its whole .git is read-only inside.
 * Store errors as they come. Blocks on the file system, and on the engine
 * (stop, up to 30 s) only when the protection was lost. */
int guard_git_check(struct guard_git_watch *w, const struct sandbox_record *s, const struct sandbox_mount_record *m,
                    size_t n, struct cp_error **err);

/* ---- a direct workspace's whole .git (git_tree.c, git_watch.c,
 * git_quarantine.c; issue 23) ---- */

/* What one walk of a .git found (policy/git_tree.c judges). */
struct guard_git_scan {
	struct policy_git_finding found[POLICY_GIT_TREE_MAX_FINDINGS]; /* n of them; strings owned */
	size_t n;
	size_t more;                 /* offending entries past found[] */
	enum policy_git_bound bound; /* NONE, or why the walk stopped early */
	char *bound_rel;             /* where below .git it stopped (owned; may be NULL) */
	size_t entries, dirs;        /* files and directories counted, directories visited */
	size_t reread;               /* directories read this time (the others came from the cache) */
};
void guard_git_scan_clear(struct guard_git_scan *s);

/* One .git's cache of directories (git_tree.c). inotify_fd (borrowed; -1 =
 * none) gets a watch (IN_CREATE | IN_MOVED_TO) on every directory the tree
 * holds, added through the directory's own descriptor; the watches go when
 * the caller closes it. free accepts NULL. */
struct guard_git_tree *guard_git_tree_new(int inotify_fd);
void guard_git_tree_free(struct guard_git_tree *t);
/* Walks the .git directory git_fd (any descriptor of it, O_PATH will do;
 * borrowed) without following any symlink (openat2 RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS below it; lstat-like types), re-reading only the
 * directories whose identity or times changed since t last saw them.
 * Returns 0 when everything is a regular file or a directory, 1 when *ret
 * (caller clears) names what is not (or the walk stopped at a bound: a
 * refusal, never a pass), -1 on an error the file system gave (INTERNAL;
 * CONFLICT when .git changed under the walk). Blocks on the file system,
 * at most POLICY_GIT_TREE_MAX_MS. Not thread-safe for one t. */
int guard_git_tree_walk(struct guard_git_tree *t, int git_fd, struct guard_git_scan *ret, struct cp_error **err);
/* The bounds of t's walks (POLICY_GIT_TREE_MAX_* unless set here): for
 * tests and the benchmark, which reach them without 200 000 files. */
void guard_git_tree_set_bounds(struct guard_git_tree *t, size_t max_entries, int max_depth, int max_ms);
/* errno of the first watch that could not be added (ENOSPC: the watch
 * limit, the user's or the tree's own); 0 when every directory is watched. */
int guard_git_tree_watch_errno(const struct guard_git_tree *t);
/* One uncached walk of git_fd for a create: 0, or DENIED (policy_git_tree_
 * refusal / _bound_refusal naming git_dir, the host path) and errors as
 * guard_git_tree_walk. Creates nothing. */
int guard_git_tree_judge(int git_fd, const char *git_dir, struct cp_error **err);

/* For a running direct sandbox s whose recorded mounts are m (n; borrowed):
 * the .git directory among them (none: 0) walked through s's cache, which
 * this registers with the watcher w (its thread started at the first call,
 * stopped by guard_git_watch_free); skipped (one poll(2)) while the watches saw
 * nothing since a clean walk less than 30 s ago. Anything but regular
 * files and directories,
 * or a bound reached: what was found is moved into DATA_ROOT/quarantine,
 * the container is paused, walked again, stopped, w's fail function
 * called with the reason (policy_git_tree_reason), logged as a security warning
 * and audited (sandbox.git_tree_refused); CONFLICT "sandbox ... has failed
 * (...)". Blocks on the file system (POLICY_GIT_TREE_MAX_MS) and, when it
 * stops the sandbox, on the engine. */
int guard_git_tree_check(struct guard_git_watch *w, const struct sandbox_record *s,
                         const struct sandbox_mount_record *m, size_t n, struct cp_error **err);
/* A watcher of direct workspaces' .git for host h (borrowed), which marks a
 * sandbox failed through fail(fail_ctx, ...); its thread starts at the
 * first check. */
struct guard_git_watch *guard_git_watch_new(const struct guard_host *h, guard_fail_fn fail, void *fail_ctx);
/* Stops the watcher's thread and frees what it holds. Accepts NULL. */
void guard_git_watch_free(struct guard_git_watch *w);

/* Moving offending entries out of a repository (git_quarantine.c). */
struct guard_git_quarantine {
	char *dir;                  /* DATA_ROOT/quarantine/<sandbox>-<time>-<pid> once made (owned) */
	int dir_fd;                 /* -1 until made */
	size_t moved;               /* entries put there so far, named 1, 2, ... */
	struct json_object *record; /* an array: one object per entry handled */
};
void guard_git_quarantine_init(struct guard_git_quarantine *q);
/* Moves each of the n findings f (rel below git_fd; borrowed) that is not
 * moved yet into q's directory (made at the first move, 0700, under
 * DATA_ROOT/quarantine, never through a symlink): renameat2 without
 * following it; from another file system a symbolic link is made again
 * there and the original unlinked, anything else unlinked and recorded.
 * Sets f[i].moved_as, or f[i].move_errno. Directories chat2sbx may not read
 * and .git itself stay. -1 (UNAVAILABLE) only when the quarantine
 * directory cannot be made. Blocks on the file system. */
int guard_git_quarantine_move(struct guard_git_quarantine *q, const struct config *cfg, const char *sandbox_id,
                              const char *git_dir, int git_fd, struct policy_git_finding *f, size_t n,
                              struct cp_error **err);
/* Writes q's record.json (path, type, target, where it went or why not)
 * and releases q. Logs a failure to write it. */
void guard_git_quarantine_close(struct guard_git_quarantine *q);

/* Compares the stat answer res (fs.stat's fields: dev_major, dev_minor,
 * ino; borrowed) of target in sandbox_id with (dev, ino) of host_dir as
 * guard_mount_identity gave them; a mismatch is DENIED, logged and
 * audited as guard_mount_verify says. */
int guard_mount_compare(const struct guard_host *h, const char *sandbox_id, const char *target, const char *host_dir,
                        uint64_t dev, uint64_t ino, struct json_object *res, struct cp_error **err);

/* The launcher's exit statuses (template/vm/src/vm.h VM_EXIT_*): the
 * mount is not the verified directory; the guest cannot boot. */
#define GUARD_VM_EXIT_MOUNT_CHANGED 78
#define GUARD_VM_EXIT_CONFIG 79
/* Where the vm launcher is mounted, read-only (template/vm/src/vm.h VM_SELF). */
#define GUARD_VM_TARGET "/.chat2sbx/vm"
#define GUARD_VM_ENV_MAX 24
/* Storage for what guard_vm_container points spec at; lives as long
 * as the spec. */
struct guard_vm_parts {
	const char *env[GUARD_VM_ENV_MAX];
	char text[6][128];
	const char *entrypoint[3];
};
/* Turns the container spec of sandbox s (row runtime "vm") on workspace w
 * into the vm runtime's (the caller has mounted the launcher,
 * CHAT2SBX_VM_PATH, read-only at GUARD_VM_TARGET): the launcher as entrypoint with its settings in the environment
 * (the row's accelerator, the workspace mode, network, the guest's process limit = spec's pids_limit,
 * CHAT2SBX_VM_DOCKER, and the verified mount identity mount_dev:mount_ino of a host workspace), runc, every capability
 * dropped but CHOWN, DAC_OVERRIDE, FOWNER, SETGID, SETUID and KILL (the launcher's; QEMU keeps none), /dev/kvm under
 * KVM, and a pids limit for QEMU's threads. Pure; everything borrowed. */
void guard_vm_container(const struct guard_host *h, const struct sandbox_record *s, const struct workspace_record *w,
                        uint64_t mount_dev, uint64_t mount_ino, struct docker_container_spec *spec,
                        struct guard_vm_parts *parts);
/* INVALID_ARGUMENT naming the smallest size when memory_bytes (> 0) is
 * below POLICY_VM_MIN_MEMORY. Pure. */
int guard_vm_memory_check(int64_t memory_bytes, struct cp_error **err);
/* The mount checks of a vm sandbox s on a host workspace (mode, host_dir
 * with identity dev:ino) with the extra mounts m (the .git protection),
 * made in its container (`chat2sbx-vm stat` and `chat2sbx-vm mounts`,
 * engine exec), where the host's device and inode numbers are visible (9p
 * shows its own in the guest): the workspace target, each of m, and the
 * mount table when n > 0, as guard_mount_verify, guard_git_verify
 * and guard_mounts_verify judge them. DENIED on a difference; engine
 * errors as they come. Blocks up to about 40 s per exec. */
int guard_vm_mounts_verify(const struct guard_host *h, const char *container, const struct sandbox_record *s,
                           const char *mode, const char *host_dir, uint64_t dev, uint64_t ino,
                           const struct sandbox_mount_record *m, size_t n, struct cp_error **err);
/* Forwards container TCP port into the guest of a vm sandbox (QMP
 * hostfwd_add, recorded for later boots; `chat2sbx-vm expose`), so
 * sandbox_expose's forwarder reaches the guest's server. Idempotent.
 * Errors name the port; blocks up to about 40 s. */
int guard_vm_forward(const struct guard_host *h, const char *container, int port, struct cp_error **err);
/* The reason a vm sandbox's container exited with exit_code, when it is
 * the launcher's own refusal (mount changed, cannot boot); else NULL. */
const char *guard_vm_exit_reason(int exit_code);
/* 1 when the container in st is down (exited, or between the engine's
 * restarts) because its launcher refused (guard_vm_exit_reason). Pure. */
int guard_vm_refused(const struct docker_container_state *st);
/* Before a vm sandbox mounts workspace w: QEMU runs as the directory's
 * owner, never root. A root-owned managed workspace (serve runs as root)
 * is made over to POLICY_VM_UID, recursively (lchown, no links
 * followed, no mounts crossed); a root-owned direct workspace is refused
 * (DENIED, saying how to give it to its user); clone needs nothing (it is
 * only read). Blocks on the file system. */
int guard_vm_workspace_prepare(const struct guard_host *h, const struct workspace_record *w, struct cp_error **err);
/* After a vm sandbox's first hello failed: when its container exited
 * because the launcher refused (guard_vm_exit_reason), *err is
 * replaced by that reason (DENIED and audited for a changed mount,
 * UNAVAILABLE otherwise); else *err is left as it is. One inspect. */
void guard_vm_explain(const struct guard_host *h, const char *sandbox_id, const char *container, struct cp_error **err);

/* ---- the free-space guard (disk_guard.c, disk_watch.c, disk_decide.c;
 * issues 13, 23) ---- */

/* What the engine's storage allows a sandbox (guard_disk_start). */
struct guard_storage {
	int size_supported;    /* a writable layer's size can be given */
	char name[96];         /* "overlay2 on extfs", for messages */
	int64_t default_bytes; /* CHAT2SBX_DEFAULT_DISK where supported, else 0 */
};
struct guard_disk;
/* Starts watching the free space of DATA_ROOT's disk and of the engine's
 * data directory (when readable; one disk holding both is watched in both
 * roles) every 2 s: below CHAT2SBX_MIN_FREE_DISK, creates and saves are
 * refused and sandboxes writing to that disk (writable layer, workspace)
 * are paused, unpaused when space is back. Makes a 16 MiB reserve in
 * STATE_DIR it gives up when the disk is all but full. Fills *ret_storage
 * (GET /info; a storage that cannot be asked is logged and limits no
 * disk). Looks once before returning. *ret: the guard (guard_disk_stop).
 * UNAVAILABLE when its thread cannot start. */
int guard_disk_start(const struct guard_host *h, struct guard_storage *ret_storage, struct guard_disk **ret,
                     struct cp_error **err);
/* Stops the thread and frees g (paused sandboxes stay paused). Accepts NULL. */
void guard_disk_stop(struct guard_disk *g);
/* 0 when a sandbox may be created (or g is NULL); LIMIT with the numbers
 * when a disk is below the watermark. */
int guard_disk_check_create(struct guard_disk *g, struct cp_error **err);
/* 1 when g paused sandbox_id, with why in reason (may be NULL; size
 * bytes); 0 otherwise or when g is NULL. */
int guard_disk_paused(struct guard_disk *g, const char *sandbox_id, char *reason, size_t size);
/* Appends the audit row of a free-space guard's act on sandbox_id
 * (action "sandbox.pause" or "sandbox.unpause", actor serve, status ok,
 * message why; all borrowed); a row that cannot be written is logged.
 * Blocks on the registry only. */
void guard_disk_audit(const struct guard_host *h, const char *action, const char *sandbox_id, const char *message);
/* At start, before reconcile: unpauses this registry's containers an
 * earlier serve paused (a paused helper would not answer its re-attach). */
void guard_disk_unpause_leftovers(const struct guard_host *h);
/* What sandbox_get says about a sandbox without a disk limit on storage st:
 * text (thread-local, valid until the next call) naming the engine's
 * storage and that the free-space guard protects the disk instead. */
const char *guard_disk_note(const struct guard_storage *st);

/* ---- another node's disk (decisions for lifecycle/node_disk.c; pure) ---- */

/* The most a node's probe may print: three numbers and a newline. */
#define GUARD_NODE_DISK_OUTPUT_MAX 64
/* Reads what `stat -f -c '%S %b %a' DIR` printed in a node's disk probe
 * (out, len bytes, borrowed; bytes from another machine): exactly three
 * unsigned decimals of at most 18 digits (fragment size, total blocks,
 * blocks available to unprivileged users), one space between them, and
 * at most one newline after. The block size must be 512 B to 16 MiB,
 * the available blocks no more than the total, and the size below
 * 2^62 bytes. Sets *ret_total and *ret_avail (bytes) and returns 0; -1
 * for anything else (signs, blanks, a second line, a NUL, a longer
 * output), the outputs then untouched. stat(1)'s %S/%b/%a: coreutils
 * "stat --file-system"; the numbers of statfs(2). */
int guard_node_disk_parse(const char *out, size_t len, int64_t *ret_total, int64_t *ret_avail);
/* Whether a disk (this machine's or a node's) is low after a look, from whether it was
 * (was_low), its free bytes and its watermark: below the watermark it
 * is; it stops being low only once free space is back above the
 * watermark plus the local guard's resume room (a tenth of the
 * watermark, 1 to 64 MiB), so a disk hovering at the line does not
 * pause and unpause every pass. */
int guard_disk_low_after(int was_low, int64_t avail, int64_t watermark);

#endif
