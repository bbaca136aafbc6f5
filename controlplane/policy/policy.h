/* policy.h: decisions about what a request may ask for. Each check returns 0
 * (allowed) or -1 with *err naming the rule and the value. Everything here is
 * pure except the host-path check, which must look at the file system. */
#ifndef CP_POLICY_H
#define CP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../base/error.h"

/* ---- what a chat2sbx sandbox looks like from the host: mount targets,
 * engine labels, networks, deadlines; lifecycle/ makes sandboxes so, guard/
 * checks them ---- */

/* Inside every sandbox: where the helper is mounted and the workspace lives. */
#define POLICY_HELPER_TARGET "/.chat2sbx/helper"
#define POLICY_WORKSPACE_TARGET "/workspace"
/* Labels on every container (DESIGN.md, Sandboxes: registry and engine can be reconciled). */
#define POLICY_LABEL_SANDBOX "org.chat2sbx.sandbox"
#define POLICY_LABEL_WORKSPACE "org.chat2sbx.workspace"
#define POLICY_LABEL_REGISTRY "org.chat2sbx.registry"
/* The engine network of sandboxes with network access: a bridge with
 * inter-container communication off, so sandboxes cannot reach each other. */
#define POLICY_NETWORK "chat2sbx"
#define POLICY_LABEL_NETWORK "org.chat2sbx.network"
/* Every bridge interface of a chat2sbx network starts with this, so the
 * host's firewall (table inet chat2sbx, ops/firewall.c) names them all with
 * one static rule, whoever installed it (issue 12). The engine's own names
 * ("br-<id>") change with every network. At most 15 characters in all. */
#define POLICY_BRIDGE_PREFIX "c2s-"
/* POLICY_NETWORK's bridge. */
#define POLICY_NETWORK_BRIDGE POLICY_BRIDGE_PREFIX "sandboxes"
/* Where clone mode mounts the approved host directory (read-only). */
#define POLICY_SOURCE_TARGET "/.chat2sbx/source"
/* On another node, beside a clone's bundle at POLICY_SOURCE_TARGET: the
 * branch its HEAD names, one line (lifecycle/clone_source.c). */
#define POLICY_SOURCE_HEAD_TARGET "/.chat2sbx/source-head"
/* Every sandbox process (and forwarder) is the kernel's first choice when
 * memory runs out, before serve, the engine or anything else of the host
 * (issue 13; oom_score_adj is -1000..1000). */
#define POLICY_OOM_SCORE_ADJ 500
/* How long the helper gets to answer its first hello after start (ms). */
#define POLICY_HELLO_TIMEOUT_MS 15000
/* ... in a vm sandbox, which boots a kernel first (under TCG on a busy
 * 2-core machine that took up to 15 s; issue 15). */
#define POLICY_VM_HELLO_TIMEOUT_MS 120000
/* The uid (and gid) QEMU runs as for a workspace that belongs to root, to
 * which a managed workspace of a vm sandbox is made over (VM_DEFAULT_UID in
 * template/vm/src/vm.h; docs/vm.md). */
#define POLICY_VM_UID 64099
/* The smallest memory ceiling of a vm sandbox: a 256 MiB guest and QEMU's
 * own memory (template/vm/src/vm.h). */
#define POLICY_VM_MIN_MEMORY (512LL * 1024 * 1024)
/* Label on every container made for the warm pool (value "1"). Engine labels
 * are fixed at create, so a claimed sandbox keeps it: whether a sandbox is
 * still a member is the registry's pooled column, never the label. */
#define POLICY_LABEL_POOL "org.chat2sbx.pool"
/* Label on each node's disk probe container and its volume
 * (lifecycle/node_disk.c; value: the registry's database path). Distinct
 * from POLICY_LABEL_REGISTRY, so reconcile never takes the probe for a
 * sandbox and `node remove` never waits for it. */
#define POLICY_LABEL_DISK_PROBE "org.chat2sbx.diskprobe.registry"
/* Label on the short-lived container that checks a node's directory
 * (lifecycle/node_path.c; value: the registry's database path); distinct
 * from POLICY_LABEL_REGISTRY for the same reason. */
#define POLICY_LABEL_PATH_CHECK "org.chat2sbx.pathcheck.registry"
/* Labels on forwarder containers and their per-sandbox networks. Distinct
 * from POLICY_LABEL_REGISTRY, so sandbox reconcile never takes a
 * forwarder for a sandbox. */
#define POLICY_LABEL_EXPOSE_SANDBOX "org.chat2sbx.expose.sandbox"
#define POLICY_LABEL_EXPOSE_REGISTRY "org.chat2sbx.expose.registry"
#define POLICY_LABEL_EXPOSE_PORT "org.chat2sbx.expose.port"

/* Smallest memory limit the engine accepts (Docker: 6 MiB). */
#define POLICY_MEMORY_MIN_BYTES (6LL * 1024 * 1024)
/* Largest accepted (1 TiB), to refuse typos like "4000g". */
#define POLICY_MEMORY_MAX_BYTES (1024LL * 1024 * 1024 * 1024)

/* Parses a memory size as the Docker CLI writes it: digits followed by an
 * optional unit b, k, m, g (binary multiples, case-insensitive, an optional
 * trailing "b" as in "512mb"). "512m" → 536870912. Fails with
 * INVALID_ARGUMENT naming the value and the accepted form and range. */
int policy_memory_parse(const char *text, int64_t *ret_bytes, struct cp_error **err);

/* The same syntax for any size (base/size.h's size_parse): what names it
 * in messages ("disk"), and the result must lie in [min_bytes, max_bytes].
 * Pure. */
int policy_size_parse(const char *what, const char *text, int64_t min_bytes, int64_t max_bytes, int64_t *ret_bytes,
                      struct cp_error **err);

/* Smallest writable layer a sandbox may be given (a shell and a build). */
#define POLICY_DISK_MIN_BYTES (256LL * 1024 * 1024)
/* Largest disk size accepted (64 TiB), to refuse typos. */
#define POLICY_DISK_MAX_BYTES (64LL * 1024 * 1024 * 1024 * 1024)
/* The free-space watermark (issue 13), CHAT2SBX_MIN_FREE_DISK as the
 * settings loader parsed it: percent > 0 is that share of the filesystem
 * (fs_bytes), else bytes > 0 is that size, else ('auto') the smaller of
 * 2 GiB and 5 % of the filesystem. Returns bytes. Pure. */
#define POLICY_MIN_FREE_AUTO_BYTES (2LL * 1024 * 1024 * 1024)
#define POLICY_MIN_FREE_AUTO_PERCENT 5
int64_t policy_min_free_bytes(int64_t bytes, int percent, int64_t fs_bytes);

/* Parses a CPU count as the Docker CLI's --cpus takes it: a decimal number
 * with at most 9 fractional digits ("1.5", "0.25", "2"), greater than 0 and
 * at most host_cpus (the engine host's online CPUs; <= 0 = no upper check).
 * *ret_nano_cpus gets the count in billionths of a CPU (HostConfig.NanoCpus:
 * "1.5" → 1500000000). Fails with INVALID_ARGUMENT naming the value, the
 * accepted form and the range. Pure. */
int policy_cpus_parse(const char *text, long host_cpus, int64_t *ret_nano_cpus, struct cp_error **err);

/* Range of a per-sandbox process limit a request may ask for (pids_limit).
 * The low end leaves room for bash and a build tool; the high end keeps one
 * sandbox from exhausting the host's process table (kernel pid_max is often
 * 32768). */
#define POLICY_PIDS_MIN 16
#define POLICY_PIDS_MAX 32768

/* Checks a requested process limit against [POLICY_PIDS_MIN, cap] (cap <=
 * 0: POLICY_PIDS_MAX); INVALID_ARGUMENT naming the value and the range. Pure. */
int policy_pids_check(int64_t pids_limit, int64_t cap, struct cp_error **err);

/* ---- limits derived from the host (issue 13) ---- */

/* What the machine has: /proc/meminfo MemTotal, kernel.pid_max,
 * kernel.threads-max. */
struct policy_host {
	int64_t mem_total_bytes;
	int64_t pid_max;
	int64_t threads_max;
};

/* The sandbox limits in force on a host. */
struct policy_sandbox_limits {
	int64_t default_memory_bytes; /* the ceiling of a sandbox that asks for none */
	int64_t max_memory_bytes;     /* no sandbox may ask for more: the host's memory */
	int max_active;               /* running sandboxes at once; 0 = unlimited */
	int64_t pids_budget;          /* processes all sandboxes together may hold */
	int64_t pids_cap;             /* the most one sandbox may hold */
	int64_t pids_default;         /* a sandbox's limit when it asks for none */
};

/* The host's share for sandboxes: three quarters of the smaller of pid_max
 * and threads-max (each thread counts in a pids cgroup); the rest is the
 * host's own headroom. */
#define POLICY_PIDS_BUDGET_NUM 3
#define POLICY_PIDS_BUDGET_DEN 4
/* With an unlimited sandbox count, one sandbox may hold at most this
 * fraction of the budget (the sum is then not bounded). */
#define POLICY_PIDS_UNLIMITED_SHARE 4
/* The default memory ceiling: half the host's memory, at most 8 GiB. */
#define POLICY_DEFAULT_MEMORY_MAX (8LL * 1024 * 1024 * 1024)
/* The default sandbox count: one per 2 GiB of memory, 2 to 32. */
#define POLICY_ACTIVE_PER_BYTES (2LL * 1024 * 1024 * 1024)
#define POLICY_ACTIVE_MIN 2
#define POLICY_ACTIVE_MAX 32

/* Derives the limits from the host h and the operator's settings:
 * want_memory (CHAT2SBX_DEFAULT_MEMORY bytes; 0 = derived), want_active
 * (CHAT2SBX_MAX_ACTIVE_SANDBOXES; -1 = derived, 0 = unlimited), want_pids
 * (CHAT2SBX_PIDS_LIMIT; -1 = derived) and warm_pool (started sandboxes kept
 * ready, which hold processes too). The processes all active and pooled
 * sandboxes may hold stay within the budget: pids_cap = budget / (sandboxes
 * + pool). Fails with INVALID_ARGUMENT naming the setting and the numbers
 * when a setting cannot fit (a default memory above the host's, a pids limit
 * above the cap, so many sandboxes that each would get fewer than
 * POLICY_PIDS_MIN). Pure. */
int policy_sandbox_limits(const struct policy_host *h, int64_t want_memory, int want_active, int64_t want_pids,
                          int warm_pool, struct policy_sandbox_limits *ret, struct cp_error **err);

/* What GET /info does not tell of another node (issue 28): its kernel's
 * process limits. A node's budget assumes the kernel's own default pid_max
 * (32768), the lowest a Linux machine runs with, so that its sandboxes
 * together can never take its last processes whatever a distribution set. */
#define POLICY_NODE_PROCS_ASSUMED 32768
/* The limits of one sandbox on another node with mem_total_bytes of memory
 * (its /info MemTotal; <= 0: not known) into *ret, by this machine's rules
 * (policy_sandbox_limits) applied to that node: the sandbox count derived
 * from its memory (policy_placement_node_limit), the process budget from
 * its pid_max and threads_max (as its disk probe read them; either <= 0:
 * not known, POLICY_NODE_PROCS_ASSUMED for both), and the operator's
 * settings want_memory
 * (CHAT2SBX_DEFAULT_MEMORY bytes; <= 0 = derived: half the node's memory,
 * at most 8 GiB) and want_pids (CHAT2SBX_PIDS_LIMIT; <= 0 = derived) held to
 * the node: a default ceiling above its memory becomes its memory, a
 * process limit above its share for one sandbox becomes that share (those
 * settings were checked against this machine, not against every node).
 * warm_pool counts as on one machine. Never fails. Pure. */
void policy_node_sandbox_limits(int64_t mem_total_bytes, int64_t pid_max, int64_t threads_max, int64_t want_memory,
                                int64_t want_pids, int warm_pool, struct policy_sandbox_limits *ret);
/* The most a node's probe may print for its process limits (bytes). */
#define POLICY_NODE_PROCS_OUTPUT_MAX 32
/* Reads what `cat /proc/sys/kernel/pid_max /proc/sys/kernel/threads-max`
 * printed in a node's disk probe (out, len bytes, borrowed; another
 * machine's bytes): exactly two lines, each an unsigned decimal of at most
 * 10 digits without a leading zero and a newline; pid_max 301 to 4194304,
 * threads-max 20 to 2^30 - 1 (what a kernel accepts, proc(5)). Sets both
 * and returns 0; -1 for anything else, the outputs then untouched. Pure. */
int policy_node_procs_parse(const char *out, size_t len, int64_t *ret_pid_max, int64_t *ret_threads_max);

/* Clamps a requested yield (ms; negative = absent) to [0, max_ms], default_ms
 * when absent. DESIGN.md, Bash contract. */
int64_t policy_yield_clamp(int64_t requested_ms, int64_t default_ms, int64_t max_ms);

/* ---- host paths (policy/host_path.c) ----
 * The only way a host directory reaches a sandbox is an approval a person
 * gave on this machine; these rules decide which paths may even be asked for.
 * Checked at request time, at approval time and again at mount time
 * (DESIGN.md, Workspaces and approvals). This is the one place in policy/
 * that touches the file system (realpath, lstat), because a decision about a
 * path is only as good as the path's current resolution. */

/* Directory names that may never appear as a component of a given or
 * resolved host path (credential stores). NULL-terminated. */
extern const char *const policy_credential_dirs[];

struct policy_host_roots {
	const char *const *roots; /* absolute paths (need not be resolved) */
	size_t n;
	const char *data_root; /* chat2sbx's own data; never mountable */
	/* More of chat2sbx's own paths treated like data_root (rule 5): the
	 * state dir, the registry's directory, the workspace root, the helper
	 * binary's directory, the tunnel secrets, when configured elsewhere.
	 * NULL entries are skipped. */
	const char *const *own_paths;
	size_t n_own_paths;
};

/* Decides whether host path `path` (as the requester gave it) may become a
 * workspace. Rules, each refusal naming its rule and the path:
 *   1. path is absolute (no "~", no relative path);
 *   2. it exists and is a directory (realpath follows every symlink);
 *   3. no component of the given path, nor of its resolution, nor of any
 *      symlink target met on the way, is a credential directory
 *      (policy_credential_dirs; ".sshx" is fine);
 *   4. the resolution is strictly below one of roots->roots, each root
 *      itself resolved (a root itself is refused);
 *   5. the resolution is not the data root (nor any of own_paths), inside
 *      it, nor an ancestor of it.
 * On success *ret_real (caller frees) is the resolved path (no trailing
 * slash), valid at the moment of the check: callers check again right
 * before mounting. Fails with DENIED (rules 3–5), INVALID_ARGUMENT (rule 1,
 * not a directory, too long) or NOT_FOUND (rule 2: missing, a symlink loop,
 * permission refused), CONFLICT when the tree changed during the check, the
 * message saying which rule refused which path and what to do. Blocks only
 * on the file system. */
int policy_host_path_check(const struct policy_host_roots *roots, const char *path, char **ret_real,
                           struct cp_error **err);

/* ---- host workspace nesting (policy/nesting.c) ----
 * One existing host workspace: its resolved directory and its mode
 * (clone | direct; managed ones are ignored). Strings borrowed. */
struct policy_host_workspace {
	const char *id;
	const char *path;
	const char *mode;
};

/* Decides whether the resolved host path `real`, asked for in `mode`
 * (clone | direct), may become a workspace next to the n workspaces in
 * others (the caller leaves out the workspace of real itself):
 *   - real must not lie strictly inside the directory of a direct-mode
 *     workspace (a sandbox writing there could swap one of real's
 *     components for a symlink between the check and the mount);
 *   - a direct-mode real must not be an ancestor of any host workspace's
 *     directory (the same swap, the other way round).
 * Comparison on whole components of resolved paths. DENIED names the other
 * workspace and what to do. Pure. */
int policy_host_nesting_check(const char *real, const char *mode, const struct policy_host_workspace *others, size_t n,
                              struct cp_error **err);

/* ---- the vm runtime (policy/vm.c, issue 15) ---- */

/* The runtime name that selects microVM sandboxes (CHAT2SBX_RUNTIME=vm):
 * not an OCI runtime of the engine, but the vm image run by runc. */
#define POLICY_RUNTIME_VM "vm"
/* 1 when runtime (a row's or the lifecycle's; NULL = the engine's default)
 * is the vm runtime. Pure. */
int policy_runtime_is_vm(const char *runtime);
/* 1 when sandboxes of runtime get the direct channel (template/helper/
 * proto.h, channel.connect; issue 27): the helper runs in the container and
 * can reach a host socket mounted into it. runsc is left out (gVisor does
 * not reach host sockets), and so is vm (the helper is in the guest, behind
 * QEMU). NULL, the engine's default, is in: where that default cannot reach
 * the socket, the helper says so and the attach stream stays. Pure. */
int policy_runtime_direct_channel(const char *runtime);

/* 1 when a /proc/cpuinfo text advertises hardware virtualization on a
 * "flags" line (vmx: Intel VT-x, svm: AMD-V), else 0. A paravirtual nested
 * /dev/kvm (kvm_pvm) runs only guest kernels built for it and advertises
 * neither, so it counts as none (MACHINE-NOTES, microVMs). Pure. */
int policy_cpu_has_virtualization(const char *cpuinfo);

/* The accelerator of vm sandboxes from CHAT2SBX_VM_ACCEL (setting: "auto",
 * "kvm" or "tcg"), whether the CPU advertises virtualization and whether
 * /dev/kvm can be opened for reading and writing: auto → kvm when both
 * hold, else tcg; kvm when not both hold → UNAVAILABLE saying which is
 * missing and what to do; tcg → tcg. *ret_accel ("kvm" or "tcg", static)
 * and *ret_why (static: why tcg was chosen; NULL for kvm or an explicit
 * tcg). Pure. */
int policy_vm_accel_choose(const char *setting, int cpu_virt, int kvm_access, const char **ret_accel,
                           const char **ret_why, struct cp_error **err);

/* Which runtime sandboxes get from CHAT2SBX_RUNTIME (setting, "" = auto):
 * auto → POLICY_RUNTIME_VM when hardware virtualization is usable
 * (kvm_usable) and the vm image exists (vm_image), else NULL (the engine's
 * default); any other name → that name. *ret_why (static, may be NULL)
 * says why auto chose what it chose. Pure. */
const char *policy_runtime_choose(const char *setting, int kvm_usable, int vm_image, const char **ret_why);

/* What the machine showed for the runtime decision, and the settings. */
struct policy_runtime_facts {
	const char *setting;       /* CHAT2SBX_RUNTIME ("" or NULL = auto) */
	const char *accel_setting; /* CHAT2SBX_VM_ACCEL */
	int cpu_virt;              /* the CPU advertises vmx or svm */
	int kvm_access;            /* /dev/kvm opens for reading and writing */
	int vm_image;              /* the vm image is in the engine (policy_runtime_needs_image) */
};
struct policy_runtime_decision {
	const char *runtime;   /* NULL: the engine's default; POLICY_RUNTIME_VM; or the setting (borrowed) */
	const char *why;       /* static: why auto chose it; NULL when it was named */
	const char *accel;     /* vm: "kvm" or "tcg" (static); NULL otherwise */
	const char *accel_why; /* static: why tcg; NULL for kvm or an explicit tcg */
};
/* 1 when the decision depends on whether the vm image exists (auto on a
 * machine with usable virtualization), so the engine must be asked. Pure. */
int policy_runtime_needs_image(const char *setting, int cpu_virt, int kvm_access);
/* Which runtime and, for vm, which accelerator sandboxes get
 * (policy_runtime_choose, then policy_vm_accel_choose). *ret filled on
 * success; UNAVAILABLE as policy_vm_accel_choose. Pure. */
int policy_runtime_decide(const struct policy_runtime_facts *f, struct policy_runtime_decision *ret,
                          struct cp_error **err);

/* True when path is strictly below dir on whole components (both resolved,
 * absolute, no trailing slash except "/" itself): "/r/a/b" is below "/r/a",
 * "/r/ab" and "/r/a" are not. Pure. */
bool policy_path_strictly_below(const char *path, const char *dir);

/* ---- direct-mode git protection (policy/git_guard.c) ----
 * A direct-mode sandbox writes the approved directory itself, so whatever it
 * leaves in the repository's .git runs as the owner at the owner's next git
 * command (core.fsmonitor, hooks, a redirected common directory). These
 * paths are bind-mounted over the sandbox's view of .git (lifecycle/
 * git_guard.c); the table in git_guard.c says why each one is there and
 * why the others are not (gitrepository-layout(5), githooks(5),
 * git-config(1)). */

/* What the approved directory's ".git" is: absent, a directory (an ordinary
 * repository), or a file (a gitfile "gitdir: PATH": a linked worktree, a
 * submodule, a separated git dir). */
enum policy_git_shape { POLICY_GIT_NONE, POLICY_GIT_DIRECTORY, POLICY_GIT_GITFILE };

/* What chat2sbx does when a protected path does not exist yet: nothing can
 * be mounted over a missing path, and the sandbox could create it itself. */
enum policy_git_missing {
	POLICY_GIT_MISSING_NEVER, /* always there when the shape is (".git" itself) */
	POLICY_GIT_MISSING_MKDIR, /* create an empty directory */
	POLICY_GIT_MISSING_FILE,  /* create a regular file holding `content` */
};

struct policy_git_path {
	const char *rel; /* relative to the workspace directory: ".git/config" */
	bool directory;  /* the type git gives it: directory, else regular file */
	bool read_only;  /* read-only in the sandbox (".git" itself stays writable) */
	enum policy_git_missing missing;
	const char *content; /* POLICY_GIT_MISSING_FILE: the placeholder's bytes */
};

/* The paths to mount for a .git of this shape, parents first (static
 * table; *ret_n entries, 0 for POLICY_GIT_NONE). Pure. */
const struct policy_git_path *policy_git_paths(enum policy_git_shape shape, size_t *ret_n);

/* Checks an existing ".git/commondir" (content of len bytes, as read): git
 * takes the repository's configuration, hooks, objects and refs from the
 * directory it names, so anything but "." (this .git itself, what chat2sbx
 * writes when it is missing) is refused with DENIED naming path (the host
 * path, for the message) and the directory named. Trailing CR/LF are
 * ignored, as git ignores them. Pure. */
int policy_git_commondir_check(const char *path, const char *content, size_t len, struct cp_error **err);

/* Parses a gitfile (content of len bytes, the ".git" file of directory dir,
 * absolute): "gitdir: PATH" with trailing whitespace ignored, PATH relative
 * to dir unless absolute (git's read_gitfile). On success *ret_gitdir
 * (caller frees) is the absolute, lexically normalized PATH ("." and ".."
 * folded; symlinks are the caller's to resolve) and 1 is returned; 0 (and
 * *ret_gitdir NULL) when it is not a gitfile git would follow. Pure. */
int policy_gitfile_parse(const char *dir, const char *content, size_t len, char **ret_gitdir);

/* The sentence sandbox_create, `approval list`/`approve` and
 * docs/workspaces.md give about what a direct-mode sandbox can still do to the owner. */
extern const char policy_direct_mode_note[];
/* The same for a direct workspace of another node (node_path.c; docs/nodes.md
 * "A direct workspace on another node"): its whole .git is read-only. */
extern const char policy_direct_node_note[];
/* The note for a direct workspace of node (NULL or "local": this machine's). */
const char *policy_direct_note_for(const char *node);

/* ---- directories of another node (node_path.c, issue 28) ---- */

/* The longest node path passed to a node (bytes, without the NUL). */
#define POLICY_NODE_PATH_MAX 1024
/* Whether path (what: "host path", "--host-root", for the message) is a
 * node path chat2sbx can pass on as written: absolute, at most
 * POLICY_NODE_PATH_MAX bytes of printable ASCII without ':', ',' or '\\',
 * not '/', no empty, '.' or '..' component, no trailing '/', and no
 * credential directory component (policy_credential_dirs).
 * INVALID_ARGUMENT or DENIED naming what is wrong. Pure. */
int policy_node_path_shape(const char *path, const char *what, struct cp_error **err);
/* Whether path may be asked for as a workspace in mode on node (its
 * ':'-separated host_roots, NULL for none): the shape above, mode
 * "direct" (clone copies a directory of this machine), no ".git"
 * component, and strictly below one of the roots (compared as written:
 * the node's check refuses any symbolic link on the way). DENIED or
 * INVALID_ARGUMENT saying which rule and what to do. Pure. */
int policy_node_path_check(const char *node, const char *host_roots, const char *path, const char *mode,
                           struct cp_error **err);

/* What the check of a node path found (lifecycle/node_path.c): the
 * directory's identity as the node's kernel gives it, and its .git. */
enum { POLICY_NODE_GIT_NONE = 0, POLICY_NODE_GIT_DIR = 1 };
struct policy_node_path_facts {
	uint64_t dev, ino; /* st_dev, st_ino of the directory */
	int git;           /* POLICY_NODE_GIT_* */
	uint64_t git_dev, git_ino;
};
/* The longest answer the check may give (bytes, its newline included). */
#define POLICY_NODE_PATH_ANSWER_MAX 1024
/* Reads the node check's answer (len bytes, another machine's: read
 * strictly) about path on node into *ret: exactly one line, "ok DEV INO
 * none" or "ok DEV INO dir GDEV GINO" (decimal, no leading zero, at most
 * 20 digits), or a refusal: "link K", "missing K", "notdir K", "denied K"
 * (K the index of path's component where the walk stopped), "bare",
 * "gitlink", "gitother", "gitfile" (a gitfile names a git directory
 * elsewhere: refused on a node), "gitcommondir" (.git/commondir other than
 * "."), "gitbig" (.git over POLICY_GIT_TREE_MAX_*), "gitbad KIND HEX"
 * (KIND link|fifo|socket|device|other, HEX the entry's path below .git,
 * at most 400 bytes hex-encoded). A refusal is DENIED, NOT_FOUND or
 * INVALID_ARGUMENT naming the path on the node and what to do; anything
 * else UNAVAILABLE. Pure. */
int policy_node_path_answer(const char *node, const char *path, const char *answer, size_t len,
                            struct policy_node_path_facts *ret, struct cp_error **err);

/* Splits a colon-separated root list (CHAT2SBX_ALLOWED_HOST_ROOTS) into a
 * NULL-terminated array (caller frees with policy_roots_free); empty entries
 * are skipped. */
char **policy_roots_split(const char *colon_list, size_t *ret_n);
void policy_roots_free(char **roots);

/* ---- ref names of saved clone work (policy/refs.c, issue 14) ----
 * Everything in an export came out of a sandbox, so every ref name it
 * claims is judged here before anything is written on the host. */

/* Longest ref name accepted (bytes). */
#define POLICY_REF_NAME_MAX 1024
/* The ref the snapshot of uncommitted and untracked changes is saved on,
 * inside the sandbox's clone and in the bundle. */
#define POLICY_SNAPSHOT_REF "refs/chat2sbx/uncommitted"

enum policy_ref_kind {
	POLICY_REF_BRANCH,   /* refs/heads/<name> */
	POLICY_REF_TAG,      /* refs/tags/<name> */
	POLICY_REF_SNAPSHOT, /* POLICY_SNAPSHOT_REF */
	POLICY_REF_HEAD,     /* HEAD */
};

/* Judges len bytes of name (not NUL-terminated; may hold anything) as a ref
 * an export may carry: the rules of git-check-ref-format(1) (no component
 * starting with '.' or ending in ".lock", no "..", no control character,
 * space, ~ ^ : ? * [ or \, no "@{", not "@", no leading, trailing or
 * doubled '/', no trailing '.'), valid UTF-8, at most POLICY_REF_NAME_MAX
 * bytes, and one of HEAD, refs/heads/<x>, refs/tags/<x> or
 * POLICY_SNAPSHOT_REF. *ret_kind (may be NULL) says which. DENIED with the
 * name shown safely (control bytes escaped) and the rule it broke. Pure. */
int policy_ref_name_check(const char *name, size_t len, enum policy_ref_kind *ret_kind, struct cp_error **err);

/* The branch HEAD names, from len bytes of `git symbolic-ref -q HEAD`'s
 * output (out, borrowed: "refs/heads/<x>" and a newline): 1 with <x> in buf
 * (size bytes) when it is one line naming a branch that passes
 * policy_ref_name_check and fits; 0 with buf "" otherwise (a detached or
 * unborn HEAD prints nothing; anything else is not trusted). A clone on
 * another node checks that branch out, as a clone of the directory would
 * (lifecycle/clone_source.c). Pure. */
int policy_clone_head_branch(const char *out, size_t len, char *buf, size_t size);

/* The host ref an accepted ref of sandbox_id's export is fetched into: all
 * under refs/remotes/chat2sbx/<sandbox_id>/: a branch <x> as <x>, a tag <t>
 * as tags/<t>, the snapshot as uncommitted, HEAD as HEAD. A branch named
 * HEAD, uncommitted or tags, or below one of them, would collide with those
 * and gets CONFLICT (the caller skips it and says how to fetch it by hand).
 * name must have passed policy_ref_name_check; sandbox_id must be an id.
 * Writes the NUL-terminated result into buf (size bytes); LIMIT when it
 * does not fit. Pure. */
int policy_ref_map(const char *name, const char *sandbox_id, char *buf, size_t size, struct cp_error **err);

/* Writes up to len bytes of s into buf (size bytes) as printable ASCII:
 * control bytes, DEL, bytes >= 0x80 that are not valid UTF-8, quote and
 * backslash escaped (\x1b, \n, \", \\); valid UTF-8 kept, except the
 * characters a terminal does not show or that reorder text (text_invisible:
 * bidi controls, zero-width ones), written \u202e or \U0e0001. Cut with "..."
 * when it does not fit. For names from a sandbox in messages and on a
 * terminal (an escape sequence must not reach the person's terminal).
 * Returns buf. Pure. */
char *policy_text_escape(const char *s, size_t len, char *buf, size_t size);

/* ---- a direct workspace's whole .git, judged (policy/git_tree.c) ----
 * git on the host opens most of what it writes in .git without O_NOFOLLOW
 * (reflogs appended in logs/, COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD, ...:
 * git_tree.c lists what was measured), and creates lock files, objects and
 * refs below directories it reaches through any symlink. So nothing in a
 * direct workspace's .git may be anything but a regular file or a
 * directory: guard/git_tree.c walks the tree, these decide and say. */

/* What one entry of .git is, as judged. */
enum policy_git_entry {
	POLICY_GIT_ENTRY_OK,           /* a regular file or a directory */
	POLICY_GIT_ENTRY_SYMLINK,      /* git writes through it */
	POLICY_GIT_ENTRY_FIFO,         /* git blocks on it for ever */
	POLICY_GIT_ENTRY_SOCKET,       /* nothing git makes */
	POLICY_GIT_ENTRY_CHAR_DEVICE,  /* git would write to the device */
	POLICY_GIT_ENTRY_BLOCK_DEVICE, /* the same */
	POLICY_GIT_ENTRY_UNREADABLE,   /* a directory chat2sbx may not read: it cannot tell what is in it */
	POLICY_GIT_ENTRY_UNKNOWN,      /* a type no file system here makes */
};

/* Why a walk stopped before it saw everything: each is a refusal, never a
 * pass (a link could hide in what was not seen). */
enum policy_git_bound {
	POLICY_GIT_BOUND_NONE,
	POLICY_GIT_BOUND_ENTRIES, /* more than POLICY_GIT_TREE_MAX_ENTRIES files and directories */
	POLICY_GIT_BOUND_DEPTH,   /* a directory more than POLICY_GIT_TREE_MAX_DEPTH levels below .git */
	POLICY_GIT_BOUND_TIME,    /* a walk longer than POLICY_GIT_TREE_MAX_MS */
};

/* The bounds of one walk. A fresh `git clone` holds a few dozen entries;
 * git gc --auto packs loose objects past 6 700 (gc.auto); refs and reflogs
 * add one file each. */
#define POLICY_GIT_TREE_MAX_ENTRIES 200000
#define POLICY_GIT_TREE_MAX_DEPTH 48
#define POLICY_GIT_TREE_MAX_MS 5000
/* Offending entries one walk records by name (the rest are counted). */
#define POLICY_GIT_TREE_MAX_FINDINGS 16

/* One offending entry. Strings owned by whoever fills it (lifecycle/
 * git_tree.c); rel and target came from the sandbox: they are shown
 * escaped (policy_text_escape), never as shell words. */
struct policy_git_finding {
	char *rel; /* below .git: "logs/refs/stash" */
	enum policy_git_entry kind;
	char *target;   /* a symbolic link's target; NULL otherwise or when unreadable */
	char *moved_as; /* its name in the quarantine directory; NULL when not moved */
	int move_errno; /* why it was not moved (0: moved, or not tried) */
};

/* Judges one entry by its st_mode (as lstat gives it). Pure. */
enum policy_git_entry policy_git_entry_judge(mode_t mode);
/* "symbolic link", "FIFO", ...: static text for messages. Pure. */
const char *policy_git_entry_name(enum policy_git_entry kind);

/* The refusal of a create (DENIED) whose .git, at git_dir (the host path,
 * trusted), holds the n findings f (n >= 1) and more unnamed ones: names
 * each (up to 4), what git would do with it and what to do. Pure. */
int policy_git_tree_refusal(const char *git_dir, const struct policy_git_finding *f, size_t n, size_t more,
                            struct cp_error **err);
/* The same for a walk that stopped at bound (not NONE); rel (may be NULL)
 * names where, below git_dir. DENIED. Pure. */
int policy_git_tree_bound_refusal(const char *git_dir, enum policy_git_bound bound, const char *rel,
                                  struct cp_error **err);

/* The failure reason of a running sandbox whose .git held the n findings f
 * (moved, when moved_as is set, into the directory quarantine, may be NULL)
 * or whose walk stopped at bound (then f may be empty): what was found, where
 * it went, that the sandbox was stopped and what the person should check.
 * Caller frees; at most about 2 000 bytes. Pure. */
char *policy_git_tree_reason(const char *git_dir, const struct policy_git_finding *f, size_t n, size_t more,
                             enum policy_git_bound bound, const char *quarantine);

/* ---- saved work: free space and caps (policy/saves.c, issue 23) ---- */

/* Room a save keeps beyond the file it streams: the manifest, the ref list
 * (at most 4 MiB), the index git writes beside the scratch pack. */
#define POLICY_SAVE_SPACE_MARGIN_BYTES (8LL * 1024 * 1024)

/* Bytes a save still needs on the data root's disk: remaining bytes still
 * to stream, and with scratch a second copy of all total bytes (the pack
 * `git index-pack` writes into the verification's scratch repository),
 * plus POLICY_SAVE_SPACE_MARGIN_BYTES. Negative inputs count as 0. Pure. */
int64_t policy_save_space_need(int64_t remaining, int64_t total, int scratch);

/* One look at the data root's disk during a save. */
struct policy_save_space {
	const char *sandbox_id; /* for the message */
	const char *data_root;  /* for the message */
	int64_t avail;          /* free bytes for this user now (statvfs f_bavail) */
	int64_t watermark;      /* CHAT2SBX_MIN_FREE_DISK of that disk, bytes */
	int64_t expected;       /* bytes of the file in all as announced (the sandbox's word) */
	int64_t streamed;       /* bytes of it written already (they hold disk space now) */
	int64_t next;           /* bytes about to be written (0 before streaming) */
	int scratch;            /* 1: verification copies the file once more (a bundle) */
};

/* 0 when the save may go on: avail minus what it still needs
 * (policy_save_space_need over max(expected, streamed + next)) stays at or
 * above the watermark, so a file larger than announced is stopped at the
 * chunk that would cross it. LIMIT otherwise, naming the data root, the
 * numbers in MiB, CHAT2SBX_MIN_FREE_DISK, that the sandbox keeps its work,
 * and the commands the person can use. Pure. */
int policy_save_space_check(const struct policy_save_space *s, struct cp_error **err);

/* The caps on exports kept outside the trash (config: CHAT2SBX_MAX_EXPORTS_*
 * and CHAT2SBX_MAX_EXPORT_BYTES_*). */
struct policy_save_caps {
	int64_t sandbox_count, sandbox_bytes; /* per sandbox */
	int64_t total_count, total_bytes;     /* the whole data root */
};
/* What is kept now (store_export_usage). */
struct policy_save_usage {
	int64_t count, bytes;
};

/* 0 when one more export adding new_bytes (0 before its size is known, for
 * a refs-only save or one sharing its bundle) fits every cap: the count of
 * the sandbox's and of all exports, then their bytes. LIMIT naming the
 * first cap it passes (the setting and its value), the numbers, that the
 * sandbox keeps its work, and the commands the person can use (export
 * list, apply, delete). Pure. */
int policy_save_caps_check(const struct policy_save_caps *caps, const struct policy_save_usage *sandbox,
                           const struct policy_save_usage *all, int64_t new_bytes, const char *sandbox_id,
                           struct cp_error **err);
/* Bytes the byte caps still allow (never negative). Pure. */
int64_t policy_save_caps_room(const struct policy_save_caps *caps, const struct policy_save_usage *sandbox,
                              const struct policy_save_usage *all);

/* ---- reconcile's decision (reconcile.c) ---- */

/* What the registry says of one sandbox (NONE: a labelled container has no
 * row at all). */
enum policy_row_state {
	POLICY_ROW_NONE,
	POLICY_ROW_CREATING,
	POLICY_ROW_RUNNING,
	POLICY_ROW_FAILED,
	POLICY_ROW_REMOVED,
	POLICY_ROW_EXPIRED,  /* idle, its save failed: container stopped, kept (issue 14) */
	POLICY_ROW_REMOVING, /* its removal was put on record and not finished (issue 13) */
};
/* What the engine says of its container. RESTARTING: the engine's restart
 * policy is bringing it back (left to the next tool call). */
enum policy_container_state {
	POLICY_CONTAINER_ABSENT,
	POLICY_CONTAINER_RUNNING,
	POLICY_CONTAINER_RESTARTING,
	POLICY_CONTAINER_STOPPED,
};
enum policy_reconcile_action {
	POLICY_RECONCILE_NOTHING,
	POLICY_RECONCILE_REATTACH,         /* open the helper channel again */
	POLICY_RECONCILE_MARK_FAILED,      /* row → failed with reason */
	POLICY_RECONCILE_REMOVE_AND_FAIL,  /* remove the container, row → failed with reason */
	POLICY_RECONCILE_REMOVE_CONTAINER, /* the row is removed already: remove the leftover container */
	POLICY_RECONCILE_REPORT_ORPHAN,    /* no row: log it; only `chat2sbx sandbox destroy` removes it */
	POLICY_RECONCILE_FINISH_REMOVAL,   /* row 'removing': container removed if still there, row → removed */
};
struct policy_reconcile_decision {
	enum policy_reconcile_action action;
	char reason[200]; /* failure reason (MARK_FAILED, REMOVE_AND_FAIL) or what was seen */
};
/* Maps a row status ("creating", …; NULL = no row) and an engine container
 * state ("running", "exited", …; NULL = absent) to the enums. Pure. */
enum policy_row_state policy_row_state_of(const char *status);
enum policy_container_state policy_container_state_of(const char *engine_status);
/* The reconcile decision table: registry state × engine state → action, with
 * the reason recorded for failed rows (engine_status and exit_code describe
 * a stopped container). Pure; every row of the table has a unit test
 * (tests/test_lifecycle_reconcile.c). */
void policy_reconcile_decide(enum policy_row_state row, enum policy_container_state container,
                             const char *engine_status, int exit_code, struct policy_reconcile_decision *ret);

/* ---- nodes (issue 28): names and placement (policy/nodes.c, placement.c) ---- */

/* A node's name: 1 to 32 of a-z, 0-9 and '-', starting with a letter or
 * digit and not ending with '-', and not "local" (this machine's engine).
 * INVALID_ARGUMENT naming the value and the rule otherwise. Pure. */
int policy_node_name_check(const char *name, struct cp_error **err);

/* A node as placement sees it (all borrowed; the caller gathers them from
 * the registry and the node's /info). */
enum policy_node_state { POLICY_NODE_READY, POLICY_NODE_DRAINING, POLICY_NODE_DOWN };
struct policy_node {
	const char *name;
	enum policy_node_state state;
	const char *runtimes; /* offered OCI runtimes, comma-separated ("runc, runsc") */
	int kvm;              /* 1 usable, 0 not, -1 not known */
	int has_image;        /* holds the template image */
	int64_t memory_bytes; /* its memory ceiling for sandboxes; <= 0: not known (no room) */
	int64_t memory_used;  /* the memory its live sandboxes were given */
	/* The ceiling a sandbox that asks for none gets there
	 * (policy_node_sandbox_limits; 'local': this machine's). */
	int64_t default_memory_bytes;
	int64_t cpus;      /* its CPUs; <= 0: not known (any CPU limit fits) */
	int sandboxes;     /* its live sandboxes */
	int max_sandboxes; /* its sandbox limit; -1 = unlimited */
};
/* What the new sandbox needs. */
struct policy_placement_request {
	const char *runtime; /* runtime asked or chosen; NULL or "" = the engine's default */
	int need_kvm;        /* the vm runtime with KVM */
	/* The memory ceiling it asks for; 0 = none asked: each node's own
	 * default_memory_bytes, which fits that node by construction. */
	int64_t memory_bytes;
	/* What it counts against a node's memory (0 = memory_bytes, or with
	 * none asked policy_placement_expected_use of the node's default): a
	 * ceiling is a limit, not a reservation, so the caller counts what one
	 * machine's sandbox limit assumes a sandbox uses
	 * (policy_placement_expected_use); nodes' memory_used must be counted
	 * the same way. */
	int64_t memory_counted;
	int64_t nano_cpus;  /* the CPU limit asked (cpus = 1e9); 0 = none */
	const char *pinned; /* direct workspace: the only node that holds its path; NULL = any */
};
/* The nodes a create tried already (names borrowed), at most
 * POLICY_PLACEMENT_MAX_TRIES. */
#define POLICY_PLACEMENT_MAX_TRIES 3
struct policy_placement_tries {
	const char *names[POLICY_PLACEMENT_MAX_TRIES];
	size_t n;
};
/* Nodes beyond this many in the table are not considered. */
#define POLICY_PLACEMENT_MAX_NODES 256
/* A uniform 32-bit random number (ctx is the caller's). */
typedef uint32_t (*policy_random_fn)(void *ctx);

/* Why node cannot take the sandbox, in words ("draining", "does not offer
 * the runtime", "at its sandbox limit", ...; static text), or NULL when it
 * can. The filters in order: pinned to another node, tried (tries may be
 * NULL), not ready, the runtime not offered, KVM needed and not known
 * usable, no template image, then capacity: the sandbox limit reached, a
 * ceiling above the node's whole memory, or memory_used + the request's
 * counted memory (memory_counted, else memory_bytes) above memory_bytes. *ret_capacity is
 * 1 when only capacity refused it. Pure. */
const char *policy_placement_refusal(const struct policy_node *node, const struct policy_placement_request *req,
                                     const struct policy_placement_tries *tries, int *ret_capacity);
/* A node's score for the request, higher is better: the memory left free
 * after it (counted as in policy_placement_refusal), in thousandths of the ceiling, plus the sandbox slots left after
 * it, in thousandths of the limit (unlimited: 1000 / (1 + sandboxes)). Pure. */
int64_t policy_placement_score(const struct policy_node *node, const struct policy_placement_request *req);
/* Chooses the node for the request among nodes[0..n): the eligible ones
 * (policy_placement_refusal NULL, none of tries), then k of them (2 or 3;
 * all when fewer) sampled without replacement with rnd(rnd_ctx), the best
 * policy_placement_score of the sample winning (the earlier sampled on a
 * tie). *ret_index is its index. With no eligible node: LIMIT when every
 * candidate was refused for capacity only ("destroy a sandbox or add a
 * node"), UNAVAILABLE otherwise, each naming every node's refusal; a pinned
 * node missing from the table is UNAVAILABLE naming it. Pure apart from
 * rnd; calls rnd at most k times. */
int policy_placement_choose(const struct policy_node *nodes, size_t n, const struct policy_placement_request *req,
                            const struct policy_placement_tries *tries, size_t k, policy_random_fn rnd, void *rnd_ctx,
                            size_t *ret_index, struct cp_error **err);
/* After a create on failed_node (borrowed; must outlive tries) failed with
 * code and detail: whether to try another node. Only a capacity failure
 * (LIMIT, the engine's disk full) or a node that stopped answering
 * (ENGINE_UNREACHABLE) is tried elsewhere; then failed_node joins tries,
 * and 1 is returned while fewer than POLICY_PLACEMENT_MAX_TRIES nodes were
 * tried. 0: give the error to the caller. Pure. */
int policy_placement_retry(struct policy_placement_tries *tries, const char *failed_node, enum cp_error_code code,
                           enum cp_error_detail detail);
/* What a sandbox with a memory ceiling of ceiling bytes counts against
 * its node's memory: what one machine's sandbox limit assumes a sandbox
 * uses (POLICY_ACTIVE_PER_BYTES, one per that much memory), or its ceiling
 * when lower. Without it a 24 GiB node would take three sandboxes of the
 * default 8 GiB ceiling where one machine alone takes eleven. Pure. */
int64_t policy_placement_expected_use(int64_t ceiling);
/* The sandbox limit of a node with memory_bytes of memory (its /info
 * MemTotal), by this machine's default rule: one per
 * POLICY_ACTIVE_PER_BYTES, POLICY_ACTIVE_MIN to POLICY_ACTIVE_MAX; -1
 * (unlimited, then refused by the memory filter) when not known. Pure. */
int policy_placement_node_limit(int64_t memory_bytes);

/* ---- node health (issue 28; policy/node_health.c) ---- */

/* Missed GET /_ping answers in a row after which a node is down. */
#define POLICY_NODE_DOWN_AFTER 2
/* One node's health as the health loop keeps it (start from
 * {.answering = 1}: a node is presumed answering until it misses). */
struct policy_node_health {
	int answering;           /* 1 until POLICY_NODE_DOWN_AFTER misses in a row */
	int failures;            /* misses in a row, at most POLICY_NODE_DOWN_AFTER */
	int64_t first_miss_ms;   /* when the current run of misses began */
	int64_t down_since_ms;   /* while not answering: when it may have stopped (the run's first miss); else 0 */
	int64_t last_contact_ms; /* the last answer; 0 = none yet */
};
enum policy_node_health_event {
	POLICY_NODE_HEALTH_SAME, /* nothing to do */
	POLICY_NODE_HEALTH_DOWN, /* it just stopped answering */
	POLICY_NODE_HEALTH_BACK, /* it answers again after being down */
};
/* Feeds one probe (answered 1 or 0, at now_ms, wall clock ms) into *h and
 * says what changed: DOWN on the POLICY_NODE_DOWN_AFTER-th miss in a row
 * of an answering node (down_since_ms = the first of those misses), BACK on
 * the first answer of a node that was down. Pure. */
enum policy_node_health_event policy_node_health_step(struct policy_node_health *h, int answered, int64_t now_ms);
/* The registry state a node takes after event: ready becomes down on DOWN,
 * down becomes ready on BACK; draining stays draining (an outage never
 * undoes a drain) and anything else stays as it is. Pure. */
enum policy_node_state policy_node_state_after(enum policy_node_state row, enum policy_node_health_event event);

/* ---- warm pools per node (issue 28; policy/pool.c) ---- */

/* One node as the warm pool sees it at a refill step (name borrowed). */
struct policy_pool_node {
	const char *name;
	enum policy_node_state state; /* the registry's: ready, draining or down */
	int answering;                /* the health loop's: 1 answers (always for 'local') */
	int max_sandboxes;            /* its sandbox limit; -1 = unlimited */
	int ready;                    /* its members that can be handed out, or are being made */
	int unusable;                 /* its members that never can (failed, another image or default) */
	int all;                      /* every member row on it, in any state but removed */
};
/* What one node's refill does now. */
enum policy_pool_action {
	POLICY_POOL_IDLE,            /* nothing: full, or not its turn (why says which) */
	POLICY_POOL_CREATE,          /* make one member */
	POLICY_POOL_REMOVE_UNUSABLE, /* remove the members that can never be handed out */
	POLICY_POOL_REMOVE_ALL,      /* remove every member (drained; or the pool is off) */
};
/* The members node keeps for a pool of size per node: size, and never
 * more than its sandbox limit (a member waits to become one of its
 * sandboxes; more than it may ever run would only hold its memory); 0 for
 * size <= 0. Pure. */
int policy_pool_target(const struct policy_pool_node *node, int size);
/* One refill decision for node, in this order: not answering → IDLE (its
 * members are kept and not handed out: its reconcile decides when it
 * answers again); draining → REMOVE_ALL while it has members (drain means
 * no new sandboxes, and `node remove` counts members); the row still down
 * → IDLE (the health loop and reconcile go first); unusable members →
 * REMOVE_UNUSABLE; all at or above 2 × target + 2 → IDLE (the flood bound:
 * rows that never count as ready must not grow without end); ready below
 * the target → CREATE; else IDLE. *ret_why (static text, may be NULL) says
 * why for IDLE. Pure; every row has a unit test (tests/test_policy_pool.c). */
enum policy_pool_action policy_pool_decide(const struct policy_pool_node *node, int size, const char **ret_why);

#endif
