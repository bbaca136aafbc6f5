/* policy.h: decisions about what a request may ask for. Each check returns 0
 * (allowed) or -1 with *err naming the rule and the value. Everything here is
 * pure except the host-path check, which must look at the file system. */
#ifndef CP_POLICY_H
#define CP_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "../base/error.h"

/* Smallest memory limit the engine accepts (Docker: 6 MiB). */
#define POLICY_MEMORY_MIN_BYTES (6LL * 1024 * 1024)
/* Largest accepted (1 TiB), to refuse typos like "4000g". */
#define POLICY_MEMORY_MAX_BYTES (1024LL * 1024 * 1024 * 1024)

/* Parses a memory size as the Docker CLI writes it: digits followed by an
 * optional unit b, k, m, g (binary multiples, case-insensitive, an optional
 * trailing "b" as in "512mb"). "512m" → 536870912. Fails with
 * INVALID_ARGUMENT naming the value and the accepted form and range. */
int policy_memory_parse(const char *text, int64_t *ret_bytes, struct cp_error **err);

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

/* Checks a requested process limit against [POLICY_PIDS_MIN,
 * POLICY_PIDS_MAX]; INVALID_ARGUMENT naming the value and the range. Pure. */
int policy_pids_check(int64_t pids_limit, struct cp_error **err);

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
 * backslash escaped (\x1b, \n, \", \\); valid UTF-8 kept. Cut with "..."
 * when it does not fit. For names from a sandbox in messages and on a
 * terminal (an escape sequence must not reach the person's terminal).
 * Returns buf. Pure. */
char *policy_text_escape(const char *s, size_t len, char *buf, size_t size);

#endif
