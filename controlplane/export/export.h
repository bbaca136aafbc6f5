/* export.h: saved clone work (issue 14) on the host, the export layer's one
 * header: the bundle header parser, the ref lists, the manifest, the host's
 * git runner, the exports directory, apply and retention. Saving through a
 * sandbox's channel is lifecycle's (lifecycle/export_save.c); nothing here
 * knows a sandbox as a running thing. Everything read here came out of a
 * sandbox and is judged before it is used. */
#ifndef CP_EXPORT_H
#define CP_EXPORT_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/child.h"
#include "../config/config.h"
#include "../policy/policy.h"
#include "../store/store.h"
#include "pack.h"

/* Largest bundle header read (signature, capabilities, prerequisites, refs). */
#define EXPORT_HEADER_MAX (8u * 1024 * 1024)
/* Most refs one export, bundle header or ref list may name at all (the
 * approved repository's own refs included). */
#define EXPORT_REFS_MAX 20000
/* Most refs of one export that are new or moved since the clone was made
 * (issue 23: each costs host work); checked before any git runs. */
#define EXPORT_REFS_NEW_MAX 500
/* Most commits the manifest's details walk (one git log over all refs);
 * past it the per-ref counts are lower bounds (commits_partial). */
#define EXPORT_MANIFEST_WALK_MAX 20000
/* Wall time of all the host git of one verification together (ms). */
#define EXPORT_VERIFY_BUDGET_MS 120000
/* Largest ref list file streamed out besides the bundle. */
#define EXPORT_REFLIST_MAX (4u * 1024 * 1024)
/* Commits and file names kept per ref in a manifest (the counts stay exact). */
#define EXPORT_MANIFEST_COMMITS_MAX 200
#define EXPORT_MANIFEST_FILES_MAX 500
/* How long one step of an unsaved-work probe may take in the sandbox (ms). */
#define EXPORT_PROBE_WAIT_MS 5000
/* Version of manifest.json. */
#define EXPORT_MANIFEST_VERSION 1

/* One ref as an export carries it. */
struct export_ref {
	char *name;   /* validated (policy_ref_name_check) */
	char oid[65]; /* lowercase hex: 40 (SHA-1) or 64 (SHA-256) digits */
	enum policy_ref_kind kind;
};
void export_refs_free(struct export_ref *refs, size_t n);

/* A git bundle's header (gitformat-bundle(5): "# v2 git bundle" or "# v3 git
 * bundle", v3 capabilities "@key[=value]", prerequisites "-<oid> <comment>",
 * refs "<oid> <refname>", an empty line, then the pack). */
struct export_bundle_header {
	int version; /* 2 or 3 */
	int oid_hex; /* 40 or 64 */
	struct export_ref *refs;
	size_t n_refs;
	char (*prereqs)[65];
	size_t n_prereqs;
	size_t header_len; /* bytes up to and including the empty line */
};
void export_bundle_header_clear(struct export_bundle_header *h);

/* Parses the first len bytes of a bundle file (at most EXPORT_HEADER_MAX
 * are needed). Refuses (DENIED, naming what is wrong, hostile bytes shown
 * escaped) anything but v2/v3 with object-format sha1 or sha256 and no
 * other capability, a malformed line, an oid of the wrong length or not
 * lowercase hex, a ref policy_ref_name_check refuses, the same ref twice,
 * more than EXPORT_REFS_MAX refs, a header without its empty line within
 * len bytes or not followed by "PACK". *ret (caller clears) on success. Pure. */
int export_bundle_parse(const char *data, size_t len, struct export_bundle_header *ret, struct cp_error **err);

/* Parses a ref list: lines "<oid> <refname>" (git for-each-ref
 * --format='%(objectname) %(refname)'), each judged as in a bundle header.
 * allow_any: the approved repository's own list (recorded at create; names
 * outside refs/heads and refs/tags are skipped, not refused). *ret (caller
 * frees with export_refs_free) and *ret_n on success. Pure. */
int export_reflist_parse(const char *text, size_t len, int allow_any, struct export_ref **ret, size_t *ret_n,
                         struct cp_error **err);

/* ---- the host's git (export_git.c) ---- */

/* The bounds of every git the host runs on a sandbox's bytes. */
struct export_git_bounds {
	uint64_t memory_bytes;    /* CHAT2SBX_SAVE_MEMORY_BYTES: RLIMIT_AS of each git */
	uint64_t max_input_bytes; /* CHAT2SBX_MAX_EXPORT_BYTES: index-pack --max-input-size */
};
#define EXPORT_GIT_MEMORY_DEFAULT (1ull << 30)
#define EXPORT_GIT_MAX_INPUT_DEFAULT (2ull << 30)

/* Sets the bounds in force for this process (0 keeps a default). Called
 * once, before any save or apply runs (lifecycle_new, export apply):
 * the values are read without a lock afterwards. */
void export_git_configure(uint64_t memory_bytes, uint64_t max_input_bytes);
/* The bounds in force (static; never NULL). */
const struct export_git_bounds *export_git_bounds_in_force(void);
/* The child limits of one git given timeout_ms of wall time: the memory
 * ceiling in force, CPU seconds = the wall budget (git runs one thread),
 * files up to twice the input bound plus 256 MiB, 1024 descriptors. Pure
 * but for reading the bounds in force. */
struct child_limits export_git_limits(long timeout_ms);

/* What the gits of this thread used since the last take. */
struct export_git_usage {
	int runs;
	long cpu_ms;
	long peak_rss_kib; /* the largest one */
};
/* Copies this thread's usage into *ret and starts it again at zero. */
void export_git_usage_take(struct export_git_usage *ret);

/* Runs git with args (NULL-terminated, without "git") in cwd, bounded
 * (export_git_limits(timeout_ms) through child_run: over the memory
 * ceiling, the CPU or the file bound it is stopped and the call fails with
 * LIMIT naming the bound), in a minimal
 * environment that no setting of the person's can turn into a program run:
 * PATH of the system directories, HOME = home, LC_ALL=C, no system or
 * global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), no
 * replace refs, no terminal prompt; and on the command line hooks off
 * (core.hooksPath=/dev/null), fsmonitor off, every transport but local files
 * off (protocol.allow=never, protocol.file.allow=always), object checks on
 * for every fetch (transfer.fsckObjects, fetch.fsckObjects), no automatic
 * gc, maintenance or commit-graph writes, no submodule recursion, and
 * git's own memory settings (one thread, bounded delta cache and pack
 * mappings, big blobs streamed). stdin gets
 * in (in_len bytes; NULL = /dev/null). stdout is collected up to out_max
 * bytes (more: LIMIT), stderr's tail kept for the message. Killed after
 * timeout_ms with its whole process group (TIMEOUT). A non-zero exit: INTERNAL "git <verb> failed: <its
 * stderr, escaped>" (code of *ret_status kept when ret_status is given and
 * the call then returns 1 instead). git missing: UNAVAILABLE. *ret_out
 * (caller frees, NUL-terminated; may be NULL) and *ret_len on success. */
int export_git_run(const char *cwd, const char *home, const char *const *args, const char *in, size_t in_len,
                   size_t out_max, long timeout_ms, char **ret_out, size_t *ret_len, int *ret_status,
                   struct cp_error **err);

/* export_git_run with the child's stdin read from in_fd (borrowed; from its
 * current offset), for input too large to hold in memory (a bundle's pack). */
int export_git_run_fd(const char *cwd, const char *home, const char *const *args, int in_fd, size_t out_max,
                      long timeout_ms, char **ret_out, size_t *ret_len, struct cp_error **err);

/* export_git_run_fd under limits instead of the bounds in force (the
 * doctor's check that the ceiling holds); stdout dropped past 64 KiB. */
int export_git_run_fd_limited(const char *cwd, const char *home, const char *const *args, int in_fd,
                              const struct child_limits *limits, struct cp_error **err);

/* export_git_run with the child's stdout written to out_fd (borrowed, a
 * file open for writing; > 0) instead of collected, under limits (their
 * file_bytes bounds what it writes there: a bundle made on the host, `git
 * bundle create -`, lifecycle/clone_source.c). stdin is /dev/null, HOME
 * /nonexistent. Errors as export_git_run's (a non-zero exit: INTERNAL with
 * git's message); INVALID_ARGUMENT without out_fd. Blocks at most
 * limits->wall_ms. */
int export_git_run_to_fd(const char *cwd, const char *const *args, int out_fd, const struct child_limits *limits,
                         struct cp_error **err);

/* The object directory of the git repository at dir (its .git/objects, or
 * objects of a bare one) into *ret (caller frees). NOT_FOUND when dir is
 * not a git repository's top level (or is gone). */
int export_git_objects_dir(const char *dir, const char *home, char **ret, struct cp_error **err);

/* ---- the manifest's details from one git log (export_details.c) ---- */

struct export_walk;
struct export_manifest_ref;
/* The arguments (without "git") of the one walk over a save's refs: ref
 * tips and ^bases on stdin, -z --raw output export_walk_parse reads. */
extern const char *const export_walk_git_args[];
/* Parses the walk's output (out, len bytes; NUL-terminated in place, so it
 * must outlive *ret) keeping at most max_commits commits (more: truncated,
 * export_walk_truncated). INTERNAL when it is not the walk's format.
 * *ret (export_walk_free) on success. Pure. */
int export_walk_parse(char *out, size_t len, size_t max_commits, struct export_walk **ret, struct cp_error **err);
size_t export_walk_commits(const struct export_walk *w);
int export_walk_truncated(const struct export_walk *w);
/* Fills r's new_commits (commits of the walk reachable from r->ref.oid),
 * commits (the newest EXPORT_MANIFEST_COMMITS_MAX, subjects escaped) and
 * files (distinct names, escaped, EXPORT_MANIFEST_FILES_MAX at most).
 * stamp: non-zero, different for every ref of one walk. */
void export_walk_ref_details(struct export_walk *w, struct export_manifest_ref *r, uint32_t stamp);
void export_walk_free(struct export_walk *w);

/* ---- verification (export_verify.c) ---- */

struct export_manifest;

struct export_verify_in {
	const char *dir;               /* the export's directory (the scratch repository goes inside) */
	const char *bundle;            /* the bundle file, or NULL for refs only */
	const char *host_objects;      /* the approved repository's object directory, NULL when gone */
	const struct export_ref *list; /* the sandbox's ref list (heads, tags, HEAD, snapshot), judged */
	size_t n_list;
	const struct export_ref *base; /* the approved repository's refs when the clone was made */
	size_t n_base;
	const char *sandbox_id;
	int64_t deadline_ms; /* clock_monotonic_ms() instant; 0 = EXPORT_VERIFY_BUDGET_MS from the start */
};

/* Verifies a bundle on the host (see export_verify.c) and fills m's refs,
 * commits, thin flag and snapshot. Before any git runs: the header, the
 * refs against the list, at most EXPORT_REFS_NEW_MAX new or moved refs,
 * and the pack's declared sizes and delta chains (export_pack_check);
 * then, one of EXPORT_VERIFY_AT_ONCE verifications of this process at a
 * time, git under its bounds. *ret_missing_prereqs is set (with CONFLICT)
 * when the bundle builds on commits the approved repository no longer
 * has: the caller asks the sandbox for a full bundle. DENIED for anything
 * refused (header, names, refs disagreeing with the list, a malformed
 * pack), LIMIT naming the bound hit (refs, pack sizes or depth, the memory,
 * CPU or file bound of git), TIMEOUT past the deadline, INTERNAL with
 * git's message when verify or the checked fetch fails. Blocks until
 * in->deadline_ms at most (plus the wait for a turn, bounded the same). */
int export_verify_git(const struct export_verify_in *in, struct export_manifest *m, int *ret_missing_prereqs,
                      struct cp_error **err);

/* ---- saves take turns (export_queue.c, issue 23) ---- */

/* Host verifications (pack check, git, archive check) of one process at once. */
#define EXPORT_VERIFY_AT_ONCE 2

struct export_slot;
/* Makes the caller the only save of sandbox_id: waits for a save of it in
 * this process (in the order they came), then flocks
 * DATA_ROOT/exports/<sandbox_id>/ (made when missing) against other
 * processes, looking again every 100 ms. TIMEOUT at deadline_ms
 * (clock_monotonic_ms) naming the save it waited for; UNAVAILABLE or
 * DENIED when the directory cannot be opened (export_dir_open_sandbox).
 * *ret (release with export_save_slot_release) on success. */
int export_save_slot_take(const struct config *cfg, const char *sandbox_id, int64_t deadline_ms,
                          struct export_slot **ret, struct cp_error **err);
/* Ends the slot (accepts NULL): the sandbox's exports directory goes when
 * the save left it empty, the flock is dropped and the next waiter runs. */
void export_save_slot_release(struct export_slot *slot);

/* Waits, first come first served, until fewer than EXPORT_VERIFY_AT_ONCE
 * verifications run in this process, and counts the caller in. TIMEOUT at
 * deadline_ms (clock_monotonic_ms). Pair with export_verify_turn_release. */
int export_verify_turn_take(int64_t deadline_ms, struct cp_error **err);
void export_verify_turn_release(void);

/* ---- what killed saves left behind (export_orphans.c) ---- */

/* Removes from DATA_ROOT/exports/<sandbox_id>/ every exp_* directory
 * without an exports row, and *.partial files and .scratch repositories
 * in those with one, skipping a sandbox whose directory another save holds
 * (its flock, export_queue.c) and never following a symlink (a link named
 * like an export is removed as a link); a sandbox directory left empty
 * goes too. Anything not named like our ids is left
 * alone. Returns how many directories and files were removed; -1 when the
 * exports directory cannot be opened or the registry cannot be read (then
 * nothing more is removed). Serve's start and every maintenance pass. */
int export_orphans_run(const struct config *cfg, struct store *store, struct cp_error **err);

/* The header and the pack of the bundle file at path judged as a save
 * judges them before git runs (export_bundle_parse, export_pack_check with
 * the bounds in force); export apply asks again before its fetch. Errors
 * as export_verify_git's; blocks EXPORT_VERIFY_BUDGET_MS at most. */
int export_bundle_check(const char *bundle, struct cp_error **err);

/* ---- plain-copy archives (export_archive.c, libarchive) ---- */

/* Opens the tar at path for reading (tar and GNU tar formats); NULL with
 * INVALID_ARGUMENT naming it when it cannot be opened. Caller frees with
 * archive_read_free. */
struct archive;
struct archive *export_archive_open(const char *path, struct cp_error **err);
/* Reads the tar at path through (a saved export): every header must parse;
 * *ret_entries counts them. INVALID_ARGUMENT naming the problem. */
int export_archive_check(const char *path, int64_t *ret_entries, struct cp_error **err);
/* Reads the tar in fd (borrowed; read from its start, its offset left at
 * the end) made of a plain directory for a clone on another node
 * (lifecycle/clone_source.c): every entry must be named prefix or below it
 * (no "..") and be a regular file, a directory, a symbolic link (kept as a
 * link, never followed) or a FIFO; *ret_entries counts them. DENIED naming a
 * device or socket found in the directory (what to do instead), INTERNAL
 * for a tar that does not parse or an entry outside prefix. Blocks while it
 * reads the file. */
int export_archive_check_source(int fd, const char *prefix, int64_t *ret_entries, struct cp_error **err);

/* ---- `export apply --to DIR` (export_extract.c) ---- */

#define EXPORT_STR_(x) #x
#define EXPORT_STR(x) EXPORT_STR_(x)
/* Longest entry name (and hard link target) extracted, bytes. */
#define EXPORT_EXTRACT_NAME_MAX 4000
/* Deepest entry extracted, in directories. */
#define EXPORT_EXTRACT_DEPTH_MAX 256
/* Most entries one archive may hold. */
#define EXPORT_EXTRACT_ENTRIES_MAX 1000000
/* Skipped entries named in the answer (all are counted). */
#define EXPORT_EXTRACT_SKIPPED_LISTED 100

enum export_entry_action {
	EXPORT_ENTRY_WRITE,    /* a file, directory or symlink */
	EXPORT_ENTRY_HARDLINK, /* a hard link to an earlier entry's name, inside */
	EXPORT_ENTRY_SKIP,     /* a FIFO, socket or device: not made, listed */
	EXPORT_ENTRY_IGNORE,   /* "." itself */
	EXPORT_ENTRY_REFUSE,   /* the whole archive is refused */
};

/* Judges one tar entry: its name (NULL: none), its type (AE_IF*, 0 for a
 * tar hard link) and its hard link target (NULL: not one). Names must be
 * relative, hold no ".." component, be at most EXPORT_EXTRACT_NAME_MAX
 * bytes and EXPORT_EXTRACT_DEPTH_MAX directories deep; a hard link's
 * target too. *ret_why (static): what kind was skipped, or why it is
 * refused. Writing through symlinks is libarchive's to refuse
 * (ARCHIVE_EXTRACT_SECURE_SYMLINKS), since it depends on what is on disk.
 * Pure. */
enum export_entry_action export_extract_judge(const char *name, unsigned type, const char *hardlink,
                                              const char **ret_why);

struct export_extract_result {
	int64_t entries; /* entries written */
	char **skipped;  /* "FIFO \"name\" (not made)", ...: the first EXPORT_EXTRACT_SKIPPED_LISTED, NULL-terminated */
	size_t n_listed; /* entries of skipped */
	size_t n_skipped; /* all entries skipped */
};
void export_extract_result_clear(struct export_extract_result *r);

/* Extracts the tar at path as the directory to_dir (missing, or an empty
 * directory that is not a symlink; missing parents are made 0755): every
 * entry judged by export_extract_judge, libarchive's ARCHIVE_EXTRACT_SECURE_*
 * guards on, setuid/setgid/sticky bits dropped, owners not restored, the
 * declared sizes at most the archive's own, all written into a new
 * directory beside to_dir that is renamed to to_dir only at the end. *ret
 * (caller clears) on success. Errors, each with nothing left behind
 * ("nothing was written to 'DIR': ..."): CONFLICT (to_dir not empty, a
 * symlink or not a directory, or made meanwhile), DENIED naming the refused
 * entry (escaped), LIMIT (its disk has less room than the archive's size,
 * or more than EXPORT_EXTRACT_ENTRIES_MAX entries), INVALID_ARGUMENT (a
 * damaged archive), INTERNAL (a write failed). Changes the working
 * directory while it runs (libarchive writes relative to it): not for
 * threaded callers (the CLI only). Blocks on the disk. */
int export_archive_extract(const char *path, const char *to_dir, struct export_extract_result *ret,
                           struct cp_error **err);

/* ---- export directories (export_dirs.c) ---- */

/* Opens (creating 0700) DATA_ROOT/exports/<sandbox_id>/<export_id>/ without
 * following a symlink at any step, each level owned by us and not writable
 * by others; *ret_path (caller frees) is its path, *ret_fd an O_PATH-free
 * directory descriptor (caller closes). A level that is a symlink or owned
 * by someone else: DENIED. */
int export_dir_open(const struct config *cfg, const char *sandbox_id, const char *export_id, char **ret_path,
                    int *ret_fd, struct cp_error **err);
/* Removes a directory this process made and gave up on (an export's files
 * and scratch repository, a partial plain copy of export_extract.c), best
 * effort, never following a symlink, making unreadable directories 0700
 * first, at most EXPORT_EXTRACT_DEPTH_MAX + 2 levels deep. */
void export_dir_remove(const char *path);
/* Opens (creating 0700) DATA_ROOT/exports/<sandbox_id>/ as export_dir_open
 * does its levels; *ret_fd (caller closes) on success. */
int export_dir_open_sandbox(const struct config *cfg, const char *sandbox_id, int *ret_fd, struct cp_error **err);
/* Opens DATA_ROOT/exports/ as export_dir_open does (made when create);
 * NOT_FOUND when it does not exist and create is 0. */
int export_dir_open_root(const struct config *cfg, int create, int *ret_fd, struct cp_error **err);
/* Removes the directory name below dirfd and everything in it, never
 * following a symlink (one named name is removed as a link), best effort;
 * 0 when name is gone afterwards. */
int export_dir_remove_at(int dirfd, const char *name);

/* ---- the manifest (export_manifest.c) ---- */

struct export_manifest_ref {
	struct export_ref ref;
	char *host_ref;              /* where apply fetches it; NULL when it collides (policy_ref_map) */
	int in_bundle;               /* 0: it points at a commit the approved repository already has */
	int64_t new_commits;         /* commits not in the approved repository when the clone was made */
	struct json_object *commits; /* [{"oid","subject"}] newest first, at most EXPORT_MANIFEST_COMMITS_MAX */
	struct json_object *files;   /* ["path", ...] touched by those commits, at most EXPORT_MANIFEST_FILES_MAX */
	char *bundle_ref; /* in_bundle: the name the bundle file's header gives this oid when it is not name (a
	                     bundle shared with an earlier export: export_dedup.c); NULL = name */
};

struct export_manifest {
	char *export_id, *sandbox_id, *workspace_id, *host_path, *kind, *reason, *message, *fingerprint;
	int64_t created_at_ms;
	int64_t bytes;   /* bundle or archive */
	int thin;        /* 1: the bundle needs the approved repository's commits (prerequisites) */
	int nothing_new; /* 1: no commit, branch or change since the clone was made: manifest only */
	int64_t commits; /* distinct commits over all refs not in the approved repository */
	struct export_manifest_ref *refs;
	size_t n_refs;
	char snapshot_oid[65];              /* "" = no uncommitted or untracked change */
	struct json_object *snapshot_files; /* [{"status","path"}] of the snapshot against HEAD */
	int64_t snapshot_file_count;
	int64_t archive_entries; /* tar: entries in workspace.tar */
	char *shares_bundle_of;  /* the bundle is a hard link to this export's (export_dedup.c); NULL = its own */
	int commits_partial;     /* 1: the walk stopped at EXPORT_MANIFEST_WALK_MAX; per-ref counts are lower bounds */
};
void export_manifest_clear(struct export_manifest *m);

/* The manifest as manifest.json holds it (caller puts). Pure. */
struct json_object *export_manifest_to_json(const struct export_manifest *m);
/* Reads o back (borrowed), checking the version, the kind and every ref
 * again (a manifest is ours, but its refs came from a sandbox). *ret
 * (caller clears) on success; INVALID_ARGUMENT naming the field otherwise.
 * Pure. */
int export_manifest_from_json(struct json_object *o, struct export_manifest *ret, struct cp_error **err);
/* Loads <dir>/manifest.json (a regular file, not a symlink, at most 64 MiB)
 * into *ret. */
int export_manifest_load(const char *dir, struct export_manifest *ret, struct cp_error **err);

/* ---- a save with nothing new shares the earlier bundle (export_dedup.c) ---- */

/* Reads the header of the bundle open at fd (borrowed; pread from offset 0,
 * at most EXPORT_HEADER_MAX bytes) into *ret as export_bundle_parse does. */
int export_bundle_header_read(int fd, struct export_bundle_header *ret, struct cp_error **err);

/* Decides whether a save whose sandbox lists the refs list (n_list, judged)
 * can share the bundle of the previous export prev (its manifest), whose
 * file's header is shared: 1 when every ref points at an object prev
 * holds (the snapshot only at prev's snapshot) and every in-bundle one is
 * carried by shared's header; then *ret (caller clears) is the new
 * manifest's content: its refs (names from list, bundle_ref the header's
 * name when it differs, host_ref mapped for sandbox_id, details copied from
 * prev's ref of the same object), snapshot, commits (the union of the
 * copied commit lists, or prev's when the tips are the same set), thin and
 * bytes as prev's, shares_bundle_of the export that first wrote the file.
 * 0 with *ret_why (static) otherwise, *ret untouched. Pure. */
int export_dedup_plan(const struct export_manifest *prev, const struct export_bundle_header *shared,
                      const struct export_ref *list, size_t n_list, const char *sandbox_id, struct export_manifest *ret,
                      const char **ret_why);

/* The previous export last (a git export with a bundle, its manifest read
 * again; a thin one only while host_reachable), its bundle file opened
 * without following a link and owned by this user with the size it saved,
 * its header parsed, export_dedup_plan: then that file is hard-linked as
 * "bundle" into dirfd (the new export's directory) and 1 is returned with
 * *m filled as the plan says. 0 (logged at debug) in every other case, m
 * untouched: the caller streams the bundle as usual. Never fails. Blocks on
 * reading the manifest and at most EXPORT_HEADER_MAX bytes. */
int export_dedup_try(const struct export_record *last, int host_reachable, const struct export_ref *list, size_t n_list,
                     const char *sandbox_id, int dirfd, struct export_manifest *m);

/* ---- room for a save (export_space.c, issue 23) ---- */

/* The caps and the disk, looked at once before a save keeps anything and
 * again before every chunk it writes. Fields are export_space.c's. */
struct export_space {
	const struct config *cfg; /* borrowed */
	const char *sandbox_id;   /* borrowed */
	int dirfd;                /* the export's directory (borrowed): its disk is the one measured */
	struct policy_save_caps caps;
	struct policy_save_usage sandbox, all; /* kept when the save began */
	int64_t expected;                      /* the file being streamed, as announced */
	int scratch;                           /* verification copies it once more */
	int kept;                              /* it counts against the byte caps */
	int ready;                             /* export_space_begin passed */
};

/* Before a save keeps an export (a bundle, refs only or an archive; not a
 * manifest alone): one more export must fit the caps
 * (policy_save_caps_check over store_export_usage) and the data root's disk
 * must keep CHAT2SBX_MIN_FREE_DISK after a margin. *sp is filled (borrowing
 * cfg, sandbox_id and dirfd). LIMIT naming the cap or the numbers and what
 * the person can do; UNAVAILABLE when the registry or the disk cannot be
 * read. Blocks on two registry reads and one fstatvfs. */
int export_space_begin(struct export_space *sp, const struct config *cfg, struct store *store, const char *sandbox_id,
                       int dirfd, struct cp_error **err);
/* Before streaming a file the sandbox announces as size bytes: scratch 1
 * when verification copies it (a bundle), kept 1 when it counts against the
 * byte caps (a bundle or an archive, not the ref list). LIMIT as above.
 * sp NULL or not begun: 0. */
int export_space_expect(struct export_space *sp, int64_t size, int scratch, int kept, struct cp_error **err);
/* Before writing n more bytes after streamed: the disk measured again, and
 * a file grown past its announced size checked against the byte caps.
 * LIMIT the moment the watermark (counting verification's copy) or a cap
 * would be crossed. sp NULL or not begun: 0. */
int export_space_chunk(struct export_space *sp, int64_t streamed, int64_t n, struct cp_error **err);

/* ---- retention (export_retention.c) ---- */

/* Moves every export older than retention_ms (lifecycle's
 * WORKSPACE_RETENTION_MS, as for workspaces) and not in the trash to
 * DATA_ROOT/trash/<export_id> (never deletes), recording the new path;
 * removes a sandbox's exports directory once empty. Returns how many moved,
 * -1 when the registry cannot be read. */
int export_retention_run(const struct config *cfg, struct store *store, int64_t now_ms, int64_t retention_ms,
                         struct cp_error **err);

/* Moves dir into DATA_ROOT/trash/ as name (name.1, name.2, ... when taken):
 * exports (retention, export delete) and released workspaces
 * (workspace/workspace.c) alike (trash.c). *ret_dest (caller frees) is where
 * it went. UNAVAILABLE when the trash cannot be made or the rename fails,
 * CONFLICT past 1000 entries of that name. */
int export_trash_move(const struct config *cfg, const char *dir, const char *name, char **ret_dest,
                      struct cp_error **err);

/* ---- for the CLI, the tools and doctor ---- */

/* doctor's floor check (issue 23): git index-pack --strict of the pack in
 * pack_fd (borrowed, from its offset) in a throwaway repository under
 * /tmp, bounded as every git of a save is but with the memory ceiling
 * memory_bytes and WITHOUT the pack check that a save runs first, so a
 * hostile pack meets the rlimits alone. *ret_peak_rss_kib: the largest
 * resident set of that git. 0 when git accepted the pack; otherwise -1
 * with LIMIT when a bound stopped it, or git's own error. Blocks 2
 * minutes at most. */
int export_index_unchecked(int pack_fd, uint64_t memory_bytes, long *ret_peak_rss_kib, struct cp_error **err);

/* Records, at create, the approved repository's heads and tags (git
 * for-each-ref on the host) in the row of sandbox_id, for "nothing new"
 * and thin bundles (export/apply.c; store borrowed). Not a git repository, or git failing: nothing
 * recorded, logged (saves are then full bundles). Never fails. */
void export_source_record(struct store *store, const char *sandbox_id, const struct workspace_record *w);

/* The checked manifest of export x (its manifest.json, every ref judged
 * again) as JSON (caller puts): refs with their commits and subjects and
 * the files they touched, the snapshot's files, sizes. Text that came from
 * the sandbox is already escaped. NOT_FOUND when the file is gone. */
int export_manifest_json(const struct export_record *x, struct json_object **ret, struct cp_error **err);

struct export_apply_result {
	char *target;     /* the repository or directory written */
	char *kind;       /* git | tar */
	int refs_updated; /* git: refs created or moved */
	int refs_same;    /* git: refs already where this export puts them */
	char **skipped;   /* git: branches not applied (their names collide), with how to fetch each; tar: FIFOs,
	                     sockets and devices not made; NULL-terminated */
	char *next_steps; /* what to run to look at and merge the work */
	char **refs;      /* git: "<host ref> <oid>" of every ref applied; NULL-terminated */
};
void export_apply_result_clear(struct export_apply_result *r);

/* `chat2sbx export apply ID [--to DIR]` (export_apply.c). git: fetches the
 * bundle into the approved repository under
 * refs/remotes/chat2sbx/<sandbox_id>/ only (transfer.fsckObjects on, no
 * tags followed, atomic), never touching its working tree, index, local
 * branches, HEAD or config; refs that point at commits the repository has
 * are set with update-ref in the same namespace. Applying again changes
 * nothing. tar (to_dir required): extracts a plain copy as to_dir (which
 * must not exist or be empty) through a directory beside it renamed at the
 * end (export_archive_extract: absolute names, "..", links out of it and
 * writes through symlinks refused, hard links made inside, FIFOs, sockets
 * and devices skipped and listed, setuid/setgid bits dropped). Errors:
 * NOT_FOUND (export or its files), CONFLICT (the approved path is gone or
 * no longer a git repository, or to_dir is not empty), INVALID_ARGUMENT
 * (--to with a git export, none without for tar), LIMIT or DENIED when
 * the bundle's pack fails the check a save makes (before git fetch sees
 * it; the fetch then runs under the same bounds as a save's git),
 * INTERNAL with git's message. Writes an audit row export.apply (actor
 * cli). */
int export_apply(const struct config *cfg, struct store *store, const char *export_id, const char *to_dir,
                 struct export_apply_result *ret, struct cp_error **err);
/* export_apply deciding for actor ("cli", "ui": whoever the audit row
 * export.apply names; static text). export_apply is this with "cli". */
int export_apply_as(const struct config *cfg, struct store *store, const char *actor, const char *export_id,
                    const char *to_dir, struct export_apply_result *ret, struct cp_error **err);

/* What a person reads after a successful export_apply of export_id (res
 * borrowed), the lines before res->next_steps that `chat2sbx export apply`
 * prints and the page shows: git: how many refs were created or moved and
 * already there, each "<host ref> <oid>" (the ref one shell word), the
 * branches skipped, and that the working tree, index, branches, HEAD and
 * config were not touched; tar: the entries skipped. Newly allocated
 * (caller frees), "" when there is nothing to say; ends with a newline
 * otherwise. */
char *export_apply_summary(const char *export_id, const struct export_apply_result *res);

/* `chat2sbx export delete ID` (export_retention.c): moves the export's
 * directory to DATA_ROOT/trash/ as retention does after 30 days (never
 * deleted; show and apply still find it), so it no longer counts against
 * the caps on kept exports; a bundle it shares by hard links stays whole in
 * the others. *ret (caller clears) is its row afterwards (path in the
 * trash). Errors: NOT_FOUND, CONFLICT (in the trash already, naming where),
 * UNAVAILABLE (the move or the registry failed: nothing moved, or moved and
 * the message says where). Writes an audit row export.delete (actor cli). */
int export_delete(const struct config *cfg, struct store *store, const char *export_id, struct export_record *ret,
                  struct cp_error **err);

#endif
