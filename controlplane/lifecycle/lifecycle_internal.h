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
	struct node_health *health;   /* borrowed: other nodes' health (node/health.c); NULL = all answer */
	pthread_mutex_t lock;         /* guards channels */
	struct lifecycle_channel *channels;
	size_t n_channels;
	/* Given to every channel opened (borrowed, static; NULL = none). */
	const struct helper_receipts *receipts;
	int network_ready;           /* POLICY_NETWORK exists (under attach_lock) */
	pthread_mutex_t attach_lock; /* guards network_ready and reattaching */
	/* Re-attaches under way, one per sandbox at a time so a sandbox never
	 * gets two channels (recovery.c); others wait on attach_cond. A
	 * re-attach of one sandbox never waits for another's, which may be on
	 * a node that answers slowly. Entries live on their callers' stacks. */
	struct lifecycle_reattaching *reattaching;
	pthread_cond_t attach_cond;
	struct guard_host host;      /* cfg, store and engine again, for the guards (guard/) */
	struct lifecycle_pool *pool; /* warm pool (pool.c); NULL = none */
	int pool_deferred;           /* size of a pool that starts at the first create (stdio) */
	/* How the pool makes a member on a node (lifecycle_pool_member_create,
	 * set by lifecycle_new), so pool_node.c never calls create.c, which
	 * claims from the pool. */
	int (*pool_member_create)(struct lifecycle *lc, const char *node, struct lifecycle_create_result *ret,
	                          struct cp_error **err);
	/* Calls holding a sandbox (activity.c), under lock: expiry never removes
	 * a sandbox a call holds, and a sandbox being expired takes no new call. */
	struct lifecycle_hold *holds;
	size_t n_holds;
	pthread_mutex_t create_lock;             /* the sandbox limit check and the row insert, as one step */
	struct policy_sandbox_limits limits;     /* in force on this machine (host_limits.c) */
	struct guard_disk *disk;                 /* the free-space guard (guard/disk_guard.c); NULL until started */
	struct lifecycle_node_disks *node_disks; /* other nodes' disks (node_disk.c); NULL until started */
	struct guard_storage storage;            /* what the engine's storage allows (asked when the guard starts) */
	/* The runtime sandboxes get (guards.c, decided at lifecycle_new): NULL
	 * = the engine's default, "vm", or an OCI runtime's name; for vm its
	 * accelerator; why auto or tcg was chosen. */
	struct guard_runtime_choice runtime;
	struct lifecycle_undo *undos;             /* failed creates not yet undone (undo_later.c), under lock */
	struct lifecycle_unsaved_probes *unsaved; /* unsaved-work probes (unsaved.c) */
	struct guard_git_watch *git_watch;        /* direct sandboxes' .git watcher (guard/git_watch.c) */
	/* Other nodes' engines, opened on first use (node_engines.c), under node_lock. */
	pthread_mutex_t node_lock;
	struct lifecycle_node_engine *node_engines;
	/* Previews of sandboxes on other nodes (expose_relay.c), under relay_lock. */
	pthread_mutex_t relay_lock;
	pthread_cond_t relay_cond; /* a connection ended */
	struct lifecycle_relay *relays;
	int relay_conns; /* live connections of every relay */
	size_t n_node_engines;
};

/* ---- one engine per node (node_engines.c, issue 28) ---- */
/* Whether node (borrowed; NULL and "" as "local") is this machine's engine. Pure. */
int lifecycle_node_is_local(const char *node);
/* Whether node names a and b (borrowed; NULL or "" = local) are one node. */
int lifecycle_node_same(const char *a, const char *b);
/* The engine of node (borrowed name; NULL = local) into *ret, borrowed
 * until lifecycle_free: lc->engine for 'local'; another node's is opened
 * over mutual TLS with its row's files the first time and kept. NOT_FOUND
 * for a node without a row; the codes of docker_engine_new_tls (DENIED,
 * UNAVAILABLE), prefixed "reach node 'NAME'", when it cannot be opened.
 * Blocks at most about 5 s (an open, outside any lock: a node that does not
 * answer delays only its own callers), else not at all. Thread-safe. */
int lifecycle_node_engine(struct lifecycle *lc, const char *node, struct docker_engine **ret, struct cp_error **err);
/* Whether POLICY_NETWORK was made on a remote node's engine (1/0; set: mark
 * it made); -1 for 'local' (lc->network_ready holds that). Thread-safe. */
int lifecycle_node_network_ready(struct lifecycle *lc, const char *node, int set);

/* The fields of a container of serve's own that runs no model code (a
 * preview's forwarder, a node's disk probe), inside a struct
 * docker_container_spec initializer: it comes back after an engine
 * restart, keeps no capability, has a read-only root, runs as nobody,
 * gets no stdin and is the kernel's first choice when memory runs out. */
#define LIFECYCLE_SERVICE_CONTAINER                                                                                    \
	.restart_policy = "unless-stopped", .cap_drop_all = 1, .read_only_rootfs = 1, .user = "65534:65534",           \
	.no_stdin = 1, .oom_score_adj = POLICY_OOM_SCORE_ADJ

/* ---- short-lived check containers on another node (node_check.c) ---- */
struct lifecycle_node_check {
	const char *const *argv;           /* NULL-terminated: the fixed program run in it */
	const struct docker_mount *mounts; /* borrowed; may be NULL */
	size_t n_mounts;
	const char *const *cap_add; /* NULL-terminated capabilities kept; NULL: none */
	const char *user;           /* NULL: 65534:65534 */
	int pid_host;               /* 1: the node's pid namespace (what its kernel says of itself) */
};
/* Makes a check container on node (the template image, no network, a
 * read-only root, every capability dropped but check->cap_add, 64 MiB, 16
 * processes, label POLICY_LABEL_PATH_CHECK), runs check->argv in it
 * through the exec API (up to 10 s), removes it and gives its standard
 * output in *ret_out (caller frees; at most 64 KiB, another machine's
 * bytes). UNAVAILABLE when the node lacks the template image or the
 * program failed (its stderr in the message); engine errors as they come.
 * Blocks on the node's engine: about 0.5 s. */
int lifecycle_node_check_run(struct lifecycle *lc, const char *node, const struct lifecycle_node_check *check,
                             char **ret_out, struct cp_error **err);
/* Removes the check containers of this registry left on node (serve died
 * or a removal failed during a check: each holds a mount of the node's
 * root). Called by reconcile at start, before any check runs; failures
 * are logged. Blocks on the node's engine. */
void lifecycle_node_check_sweep(struct lifecycle *lc, const char *node);

/* ---- a directory of another node (node_path.c, issue 28 item 4) ---- */
/* Looks at path (policy_node_path_check passed) on node's engine, from a
 * check container of ours there (node_check.c) with the node's root
 * read-only, walking it without following any link: *ret gets the identity of the
 * directory and of its .git. UNAVAILABLE when the node lacks the template
 * image or its check misbehaves; the refusals of policy_node_path_answer
 * (a link on the way, missing, not a directory, a bare repository, a .git
 * link); engine errors as they come, each prefixed with the path and node.
 * Blocks on the node's engine: about 0.5 s, at most the transport's bound
 * per call plus 10 s for the program. */
int lifecycle_node_path_check(struct lifecycle *lc, const char *node, const char *path,
                              struct policy_node_path_facts *ret, struct cp_error **err);

/* ---- other nodes' disks (node_disk.c, issue 28 item 3) ---- */
/* Starts watching the free space of every node row's engine storage: a
 * thread reads the rows every 2 s and each node gets a thread of its own
 * that asks its disk probe every 10 s (made on the node when missing;
 * lc->health borrowed to skip a node that does not answer). Below
 * CHAT2SBX_MIN_FREE_DISK of that filesystem the node's running sandboxes
 * are paused through its engine, unpaused above the resume room
 * (guard_disk_low_after); what was found goes into the node's row
 * (store_node_set_disk). Never fails: a thread that cannot start is
 * logged and that disk is not watched. Stop with lifecycle_node_disk_stop. */
void lifecycle_node_disk_start(struct lifecycle *lc);
/* Stops every node's thread at once (a look under way ends first: at
 * most about 25 s for an exec on a node that stalls, once) and removes
 * the disk probe of each node that answers _ping within 1.5 s;
 * sandboxes it paused stay paused (the next serve unpauses them at
 * start). Accepts NULL and a lifecycle without the watch. */
void lifecycle_node_disk_stop(struct lifecycle *lc);
/* At start, before reconcile (lifecycle_disk_unpause_leftovers): on each
 * node row that is not down and answers _ping within 1.5 s, unpauses this
 * registry's containers an earlier serve paused for a low disk there (a
 * paused helper would not answer its re-attach); the node's first look
 * pauses them again if its disk is still low. Blocks about 1.5 s per node
 * that does not answer, more for one that answers and then stalls (its
 * list's and unpauses' timeouts). */
void lifecycle_node_disk_unpause_leftovers(struct lifecycle *lc);
/* Around the reconcile of a node that answers again
 * (lifecycle_node_reconcile): _back holds the node's looks off, unpauses
 * every paused container of this registry there (a paused helper would
 * not answer its re-attach, and reconcile would take it for stopped) and
 * only then forgets which of its sandboxes this guard paused (a call
 * meanwhile is told it is paused, not re-attached to a frozen one); _back_done lets
 * them go on with a look at once, which pauses them again if its disk
 * is still low. node borrowed; 'local' is ignored. _back blocks on the
 * node's engine (a list and an unpause each); _back_done never blocks. */
void lifecycle_node_disk_back(struct lifecycle *lc, const char *node);
void lifecycle_node_disk_back_done(struct lifecycle *lc, const char *node);
/* 0 when a sandbox may be created on node (borrowed; 'local' and a node
 * whose disk is not known always may); LIMIT naming the node, its free
 * space, the watermark and what to do while its disk is low. Never
 * blocks on an engine. */
int lifecycle_node_disk_check(struct lifecycle *lc, const char *node, struct cp_error **err);
/* 1 when the node disk guard paused sandbox_id (borrowed), with why,
 * naming the node, in reason (may be NULL; size bytes); else 0. Never
 * blocks on an engine. */
int lifecycle_node_disk_paused(struct lifecycle *lc, const char *sandbox_id, char *reason, size_t size);
/* The node a new sandbox with limits lim goes to (create_place.c): with no
 * node row and no pin, 'local' at once (no engine asked); otherwise
 * policy_placement_choose over 'local' and every node row, pinned (borrowed;
 * NULL = any) to one node, without the nodes in tries (may be NULL); a
 * remote node's engine is asked whether it holds the template image. On
 * success *ret_node (caller frees) is its name. The refusal of
 * policy_placement_choose (LIMIT when only capacity refused, UNAVAILABLE
 * otherwise) or the registry's error. Returns 1 when placement chose among
 * several nodes (a capacity failure there may be tried elsewhere), 0 for
 * 'local' without a choice or a pinned node, -1 on failure. Blocks on the
 * registry and at most about 5 s per remote node. */
struct lifecycle_limits; /* below */
int lifecycle_place(struct lifecycle *lc, const struct lifecycle_limits *lim, const char *pinned,
                    const struct policy_placement_tries *tries, char **ret_node, struct cp_error **err);
/* How long putting the helper into a remote container may take (ms). */
#define LIFECYCLE_HELPER_UPLOAD_MS 60000L
/* Puts this machine's helper binary (cfg->helper_path, read whole, at most
 * DOCKER_TAR_FILE_MAX) into container (created, not started; borrowed) on
 * engine (a remote node's) at POLICY_HELPER_TARGET, mode 0755: a path of
 * this machine cannot be bind-mounted there. INTERNAL when the helper
 * cannot be read; the engine's codes otherwise. Blocks at most
 * LIFECYCLE_HELPER_UPLOAD_MS. */
int lifecycle_helper_upload(struct lifecycle *lc, struct docker_engine *engine, const char *container,
                            struct cp_error **err);
/* Previews of sandboxes on other nodes (expose_relay.c; docs/previews.md).
 * Starts listening on host (CHAT2SBX_EXPOSE_HOST, borrowed) port
 * *io_host_port (0 = any free one, then set) and relays each connection to
 * container_port inside sandbox s (borrowed; its id, node and container are
 * copied) through an exec of the helper's connect mode on s's node's
 * engine. At most 64 connections per preview and 256 over all run at once
 * (more wait in the backlog); one idle for 30 minutes is closed.
 * Listening already for that sandbox and port: 0, nothing changes.
 * UNAVAILABLE when the port cannot be bound (taken), INVALID_ARGUMENT for
 * a host that is not an address, INTERNAL when no thread starts. */
int lifecycle_relay_start(struct lifecycle *lc, const struct sandbox_record *s, int container_port, const char *host,
                          int *io_host_port, struct cp_error **err);
/* Stops the relays of sandbox_id (borrowed): of container_port, or all of
 * them for container_port <= 0. The port is free at return; live
 * connections are cut and end in their own threads. */
void lifecycle_relay_stop(struct lifecycle *lc, const char *sandbox_id, int container_port);
/* Stops every relay and waits until no connection's thread runs (they
 * use a node's engine and lc: lifecycle_free, before those go). A thread
 * in an exec's create or start ends within about 25 s; a copy at once. */
void lifecycle_relays_stop_all(struct lifecycle *lc);
/* The source of a clone on another node (clone_source.c), made on this
 * machine before its container exists. */
struct lifecycle_clone_source {
	int fd;         /* the bundle or tar: a file with no name, 0600 (owned; -1 none) */
	uint64_t size;  /* its bytes, at most CHAT2SBX_MAX_EXPORT_BYTES */
	int bundle;     /* 1: a git bundle of branches, tags and HEAD; 0: a tar of the directory */
	char head[256]; /* bundle: the branch HEAD names, or "" (detached, or not trusted) */
};
/* Makes the source of clone workspace w (borrowed; its path approved and
 * just re-checked, with identity dev/ino, 0/0 = not checked): a directory
 * holding .git gets `git bundle create - --branches --tags HEAD`, run by
 * export/'s git runner (fixed settings: no hooks, no fsmonitor, no
 * transports; its memory and CPU bounds); anything else a GNU tar that
 * keeps symbolic links as links, every entry then judged
 * (export_archive_check_source: no devices, nothing outside). Both run in
 * the directory opened once without following links, each bounded in time
 * (5 min) and in what it may write (CHAT2SBX_MAX_EXPORT_BYTES + 1). *ret
 * (caller clears) on success. LIMIT over that ceiling, naming it;
 * INVALID_ARGUMENT for a repository with no branch or tag; DENIED for a
 * device or socket in the directory, a .git that is a symbolic link or a
 * gitfile (a repository elsewhere), or a directory that is no longer the
 * one checked; UNAVAILABLE without git or tar; INTERNAL or TIMEOUT when
 * git or tar fail. The temporary file is gone whatever happens (it never
 * has a name). Blocks while git or tar run. */
int lifecycle_clone_source_make(struct lifecycle *lc, const struct workspace_record *w, uint64_t dev, uint64_t ino,
                                struct lifecycle_clone_source *ret, struct cp_error **err);
/* Puts src (borrowed) into container (created, not started, with its
 * helper already copied in; borrowed) on engine, streamed with the archive
 * API: a bundle as POLICY_SOURCE_TARGET (a file, mode 0444) with the branch
 * of HEAD at POLICY_SOURCE_HEAD_TARGET, a tar's entries below
 * POLICY_SOURCE_TARGET. The engine's codes, prefixed. Blocks at most a
 * minute plus a second per 4 MiB. */
int lifecycle_clone_source_put(struct lifecycle *lc, struct docker_engine *engine, const char *container,
                               const struct lifecycle_clone_source *src, struct cp_error **err);
/* Closes src's file (so it is gone) and resets it; accepts NULL. */
void lifecycle_clone_source_clear(struct lifecycle_clone_source *src);
/* Frees the remote engines (lifecycle_free). */
void lifecycle_node_engines_clear(struct lifecycle *lc);
/* Puts engine (ownership moves to lc; freed by lifecycle_free) behind the
 * remote node name (borrowed) as if lifecycle_node_engine had opened it:
 * the unit tests' way to a node (the fake engine on a Unix socket, where a
 * node's own is mutual TLS). Nothing else calls it. 0, or -1 (engine
 * freed) when node is 'local' or already has one. Does not block. */
int lifecycle_node_engine_adopt(struct lifecycle *lc, const char *node, struct docker_engine *engine);
/* On a remote node a managed workspace is an engine volume there named
 * LIFECYCLE_VOLUME_PREFIX + the workspace's id, recorded in its row and
 * kept after its sandbox (migration 0015); a clone's /workspace is one
 * named after its sandbox, which goes with it (docs/nodes.md says why). */
#define LIFECYCLE_VOLUME_PREFIX "chat2sbx-ws-"
/* The volume's name for owner_id (borrowed: a workspace's id, or a
 * clone's sandbox's) into buf. Pure. */
void lifecycle_workspace_volume_name(const char *owner_id, char *buf, size_t size);
/* Removes the volume name (borrowed) on node (after its container):
 * nothing to do on 'local', a volume already gone is fine. The codes of
 * lifecycle_node_engine and of the engine (CONFLICT while a container uses
 * it) otherwise. Blocks at most 15 s. */
int lifecycle_workspace_volume_remove(struct lifecycle *lc, const char *node, const char *name, struct cp_error **err);
/* After the container of s (borrowed) is removed, on a remote node: a
 * clone's volume (named after s) goes too; a managed workspace with its
 * own volume keeps it, as this machine keeps a released workspace's
 * directory; a managed workspace of an older release, whose volume was
 * named after s, loses it and its row is marked trashed. Nothing on
 * 'local'. Failures are logged (a volume left is named by its label).
 * Blocks at most 15 s. */
void lifecycle_workspace_gone(struct lifecycle *lc, const struct sandbox_record *s);
/* Whether the volume of the managed workspace w (borrowed) on another node
 * is the one chat2sbx made for it (GET /volumes/{name}: it exists and is
 * labelled POLICY_LABEL_WORKSPACE=w->id), or a create would mount an
 * empty one. create.c asks before a sandbox is made for an existing
 * workspace and again right after its container is created, before it
 * starts: the engine makes a missing named volume, unlabelled and empty,
 * at a container's create, so a volume removed by hand between the two
 * shows there. NOT_FOUND naming the workspace, the volume and the node
 * when it is gone or not that one (the volume found is left as it is);
 * the engine's codes otherwise. Nothing to check for a workspace of this
 * machine. Blocks at most 15 s (a node's engine opened first: 5 s more). */
int lifecycle_workspace_volume_check(struct lifecycle *lc, const struct workspace_record *w, struct cp_error **err);

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
	/* Which of memory_bytes and pids_limit the create asked for: the others
	 * are a node's defaults, taken again for the node the sandbox goes to
	 * (lifecycle_limits_on_node). */
	int memory_asked, pids_asked;
	int disk_asked;      /* a writable layer's size asked: this machine's storage gives it (not another node's) */
	const char *runtime; /* borrowed from cfg; NULL = engine default */
};
/* Validates opts' memory, cpus, pids_limit and the configured runtime (GET
 * /info) before anything is created; INVALID_ARGUMENT naming the value, or
 * UNAVAILABLE when the engine lacks the runtime. */
int lifecycle_create_limits(struct lifecycle *lc, const struct lifecycle_create_options *opts,
                            struct lifecycle_limits *ret, struct cp_error **err);
/* The limits sandboxes get on node (borrowed; NULL = 'local') into *ret:
 * this machine's (lc->limits) on 'local', else derived from the node row's
 * labels by policy_node_sandbox_limits with this machine's settings. Its
 * CPUs into *ret_cpus (may be NULL; <= 0 = not known). NOT_FOUND naming a
 * node without row. Reads the registry only. */
int lifecycle_node_limits(struct lifecycle *lc, const char *node, struct policy_sandbox_limits *ret, int64_t *ret_cpus,
                          struct cp_error **err);
/* The same from a node row r (borrowed) already read. */
void lifecycle_node_row_limits(struct lifecycle *lc, const struct node_record *r, struct policy_sandbox_limits *ret);
/* *lim (checked against this machine and the largest node by
 * lifecycle_create_limits) made the limits of a sandbox on node (borrowed;
 * NULL or 'local': left as it is): a memory ceiling or process limit not
 * asked becomes that node's default; one asked, and a CPU limit, are
 * checked against that node (INVALID_ARGUMENT naming the node, what it has
 * and what to do); the writable layer's size is not asked of another node
 * (disk_bytes 0, and a size asked is INVALID_ARGUMENT: placement keeps such
 * a sandbox on 'local'). NOT_FOUND for a node without row. Reads the
 * registry only. */
int lifecycle_limits_on_node(struct lifecycle *lc, const char *node, struct lifecycle_limits *lim,
                             struct cp_error **err);
/* What differs between a live sandbox and the limits asked for, as a
 * sentence for the model (caller frees), or NULL when nothing differs. */
char *lifecycle_limits_differ(const struct sandbox_record *s, const struct lifecycle_limits *want);
/* lifecycle_limits_differ with want's defaults (what was not asked) taken
 * as those of s's node (lifecycle_limits_on_node): a sandbox on another
 * node is not said to differ for having that node's default ceiling. A
 * limit asked beyond that node still reads as a difference. */
char *lifecycle_limits_differ_on_node(struct lifecycle *lc, const struct sandbox_record *s,
                                      const struct lifecycle_limits *want);
/* store_sandbox_insert after checking the sandbox limit of row's node
 * (CHAT2SBX_MAX_ACTIVE_SANDBOXES on 'local'; another node's from its
 * memory, policy_placement_node_limit), both under create_lock. LIMIT when
 * the node is full (placement then tries another when it chose this one);
 * NOT_FOUND when the node was removed meanwhile. Pooled rows are neither
 * checked nor counted, nor are other nodes' sandboxes. */
int lifecycle_sandbox_insert_limited(struct lifecycle *lc, const struct sandbox_record *row, struct cp_error **err);
/* The sandbox limit of node (NULL or "local": this machine) into *ret_max
 * (<= 0: none): CHAT2SBX_MAX_ACTIVE_SANDBOXES for 'local', another node's
 * from its memory as placement reckons it (lifecycle_node_limits, from the
 * registry's row). NOT_FOUND when the node has no row. The
 * caller holds create_lock when it counts against it. */
int lifecycle_node_sandbox_limit(struct lifecycle *lc, const char *node, int *ret_max, struct cp_error **err);

/* Undoes a failed create (undo_later.c): removes container (an id or the
 * name; NULL = none), deletes the sandbox row, then new_workspace (may be
 * NULL: a managed workspace made for this create; its row, then its empty
 * directory; on another node its volume, after the container). All
 * strings copied. Returns 0 when done, 1 when a step failed
 * and the rest waits for lifecycle_undo_run (logged). */
int lifecycle_undo_create(struct lifecycle *lc, const char *sandbox_id, const char *node, const char *container,
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
/* The direct channel's directory of sandbox id (template/helper/proto.h,
 * channel.connect): STATE_DIR/channel/<id>, 0700, mounted read-only at
 * PROTO_CHANNEL_DIR. path: copies it into buf (size bytes); 0 when it does
 * not fit. make: creates it (and STATE_DIR/channel) when missing and checks
 * it is a directory of this user's alone; 0, or -1 with err (INTERNAL).
 * remove: removes it and the socket a failed open may have left (nothing
 * else is ever in it); quiet. */
int lifecycle_channel_dir_path(struct lifecycle *lc, const char *id, char *buf, size_t size);
int lifecycle_channel_dir_make(struct lifecycle *lc, const char *id, struct cp_error **err);
void lifecycle_channel_dir_remove(struct lifecycle *lc, const char *id);
/* Moves the calls of ch (sandbox s's open channel) onto the direct
 * channel when s's runtime has one and this process owns the channel
 * (lifecycle_channel_own). Best effort: on any failure ch keeps the attach
 * stream and the reason is logged at debug. Blocks at most 2 s. */
void lifecycle_channel_go_direct(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel *ch);

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
int lifecycle_attach(struct lifecycle *lc, const char *sandbox_id, const char *node, const char *container,
                     struct helper_channel **ret_channel, struct cp_error **err);
/* The same without putting the channel in the table: *ret_channel (one
 * reference, the caller's) is not used by any call until the caller puts it
 * there (a re-attach does so only after its mount checks, recovery.c). */
int lifecycle_attach_unlisted(struct lifecycle *lc, const char *sandbox_id, const char *node, const char *container,
                              struct helper_channel **ret_channel, struct cp_error **err);

/* Brings back the channel of s, a row loaded as "running", whose channel is
 * missing or closed (recovery.c), one re-attach of s at a time (another
 * caller waits for it; other sandboxes' re-attaches run beside): the container is
 * inspected; running → attach + hello (the helper's boot id is recorded, a
 * restarted helper logged); gone or stopped → the row becomes failed with
 * the reason and CONFLICT says to destroy it; restarting → UNAVAILABLE; the
 * engine not answering (stopped, restarting, hung: bounded by the engine
 * timeouts) → UNAVAILABLE naming the socket, the row untouched; a helper
 * that does not answer hello within POLICY_HELLO_TIMEOUT_MS → failed.
 * On success *ret_channel holds a reference the caller drops. */
int lifecycle_sandbox_reattach(struct lifecycle *lc, const struct sandbox_record *s,
                               struct helper_channel **ret_channel, struct cp_error **err);

/* hello on the fresh channel ch of sandbox s (up to
 * POLICY_HELLO_TIMEOUT_MS; errors as helper_channel_call): records the
 * helper's boot id in s's channel-table entry and logs a helper that started
 * again since the last hello (its container was restarted: an engine restart
 * or a helper crash), or, with no earlier hello known, one that started long
 * after the sandbox was created (recovery.c). ret_boot (may be NULL) gets
 * the boot id. A helper whose protocol this control plane does not speak
 * (helper_version_check) fails with CONFLICT, detail CP_DETAIL_HELPER_VERSION,
 * before anything is recorded. */
int lifecycle_helper_greet(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel *ch,
                           char ret_boot[40], struct cp_error **err);

/* An expired sandbox of workspace w started again for sandbox_create
 * (expired.c): 1 with *ret filled (reused, a note saying so), 0 when w has
 * none, -1 with *err (the sandbox limit, the engine, a failed re-attach:
 * the sandbox then stays expired or becomes failed with the reason). */
int lifecycle_expired_revive(struct lifecycle *lc, const struct workspace_record *w, const struct lifecycle_limits *lim,
                             struct lifecycle_create_result *ret, struct cp_error **err);

/* Marks sandbox id failed with reason unless its row has left "running"
 * (a destroy racing with us must stay removed), and drops its channel
 * (fail.c). */
void lifecycle_sandbox_fail_running(struct lifecycle *lc, const char *id, const char *reason);
/* The same as a guard_fail_fn (ctx: the struct lifecycle), given to the
 * .git watcher. */
void lifecycle_sandbox_fail_hook(void *ctx, const char *id, const char *reason);

/* ---- the guards a lifecycle holds (guards.c) ---- */

/* Decides lc->runtime (CHAT2SBX_RUNTIME, auto: vm where the CPU advertises
 * vmx/svm, /dev/kvm opens and the vm image exists, else the engine's
 * default; policy_runtime_choose) and, for vm, the accelerator
 * (CHAT2SBX_VM_ACCEL; a TCG choice is logged as a warning). Reads
 * /proc/cpuinfo, opens /dev/kvm, asks the engine for the vm image (auto
 * only). UNAVAILABLE when kvm is asked for and not usable. */
int lifecycle_vm_select(struct lifecycle *lc, struct cp_error **err);

/* The claim hook of lifecycle_sandbox_create, after placement chose node
 * (borrowed; NULL = 'local'): when opts ask for a new managed workspace
 * with default options (no workspace, memory, cpus, pids or network
 * option) and a member of that node made from the configured image and
 * runtime is ready, claims it atomically (store_sandbox_pool_claim) and
 * fills *ret with it (a user sandbox from now on, created and active now),
 * then wakes that node's refill. Returns 1 when claimed, 0 when the caller
 * must create cold (no pool, no member ready there, the node not answering,
 * 'local' at its sandbox limit — the cold path reports that — or the
 * claimed member's helper no longer answers: it is removed), -1 with *err
 * on a registry failure. Blocks only on a claimed member's re-attach. */
int lifecycle_pool_claim(struct lifecycle *lc, const char *node, const struct lifecycle_create_options *opts,
                         struct lifecycle_create_result *ret, struct cp_error **err);

/* The cold path of lifecycle_sandbox_create, for the warm pool
 * (pool_node.c): never a claim; a new managed workspace with default
 * options pinned to node (borrowed; NULL = 'local': placement still
 * refuses a node that is not ready, lacks the template image or has no
 * room, with the reason), and the row pooled (hidden from listings, limits
 * and expiry) with POLICY_LABEL_POOL on its container. Contract otherwise
 * as lifecycle_sandbox_create. */
int lifecycle_pool_member_create(struct lifecycle *lc, const char *node, struct lifecycle_create_result *ret,
                                 struct cp_error **err);

#endif
