/* ops.h: operating chat2sbx: the state files `status` reads (serve.json,
 * written by serve; tunnel.json, written by the tunnel supervisor), a
 * loopback-only HTTP probe, the isolation probe behind `chat2sbx doctor` and
 * `serve --verify-isolation`, when the host-edge firewall is installed, and
 * the pure decisions both use (capability masks, mount tables, readiness). Uses lifecycle/, helper/, docker/; knows
 * nothing of MCP beyond sending one initialize. */
#ifndef CP_OPS_H
#define CP_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../base/error.h"
#include "../config/config.h"
#include "../firewall/firewall.h"

struct docker_engine;

/* ---- serve.json and tunnel.json (ops/state_files.c) ---- */

#define OPS_SERVE_STATE_FILE "serve.json"
#define OPS_TUNNEL_STATE_FILE "tunnel.json"

/* STATE_DIR/serve.json:
 * {"pid":N,"started_at_ms":N,"version":"..","endpoint":"http://127.0.0.1:PORT/mcp",
 *  "socket":"STATE_DIR/mcp.sock","token_file":"STATE_DIR/token","token_required":bool,
 *  "tunnel_enabled":bool}. Never the token itself. */
struct ops_serve_state {
	int pid;
	int64_t started_at_ms;
	char *version;    /* owned */
	char *endpoint;   /* owned */
	char *socket;     /* owned; NULL in a file of an older serve */
	char *token_file; /* owned; NULL in a file of an older serve */
	int token_required;
	int tunnel_enabled;
};
void ops_serve_state_clear(struct ops_serve_state *s);

/* Writes STATE_DIR/serve.json for this process (getpid, CHAT2SBX_VERSION;
 * started_at_ms from *st, now when 0; pid and version of *st are ignored; its
 * strings borrowed) atomically: a 0600 temporary file in the same directory,
 * fsync, rename. Fails with UNAVAILABLE naming the file. Blocks on local
 * file I/O only. */
int ops_serve_state_write(const char *state_dir, const struct ops_serve_state *st, struct cp_error **err);

/* Makes sure STATE_DIR/serve.json names this process: writes it (as
 * ops_serve_state_write) when it is missing, unreadable or names another
 * pid. *written (in/out) is -1 before the first call, then 1 when the file
 * is good and 0 while it cannot be written, so a failure is logged once and
 * its recovery once (a full disk at start, a file removed by hand: issue
 * 13). Never fails; serve calls it every few seconds. */
void ops_serve_state_keep(const char *state_dir, const struct ops_serve_state *st, int *written);

/* Removes STATE_DIR/serve.json when it names this process (a newer serve's
 * file is left alone). Never fails. */
void ops_serve_state_remove(const char *state_dir);

/* Reads STATE_DIR/serve.json into *ret (caller clears). NOT_FOUND when the
 * file does not exist (serve is not running or never wrote it); INVALID_ARGUMENT
 * when it is not the agreed JSON object. */
int ops_serve_state_read(const char *state_dir, struct ops_serve_state *ret, struct cp_error **err);

/* STATE_DIR/tunnel.json, written by the tunnel supervisor:
 * {"state":"starting|running|backoff|stopped|refused","pid":N|null,"restarts":N,
 *  "health_url":"http://127.0.0.1:P"|null,"last_exit":".."|null,"updated_at_ms":N} */
struct ops_tunnel_state {
	char *state; /* owned */
	int pid;     /* 0 = null */
	int64_t restarts;
	char *health_url; /* owned, may be NULL */
	char *last_exit;  /* owned, may be NULL */
	int64_t updated_at_ms;
};
void ops_tunnel_state_clear(struct ops_tunnel_state *s);

/* Reads STATE_DIR/tunnel.json into *ret (caller clears). Errors as
 * ops_serve_state_read. */
int ops_tunnel_state_read(const char *state_dir, struct ops_tunnel_state *ret, struct cp_error **err);

/* True when pid names a live process (kill(pid, 0) succeeds or fails with
 * EPERM). */
int ops_pid_alive(int pid);

/* ---- the MCP bearer token (ops/token.c; issue 12) ---- */

#define OPS_MCP_TOKEN_FILE "token"
#define OPS_MCP_SOCKET_FILE "mcp.sock"
#define OPS_MCP_TOKEN_LEN 64 /* hex characters of 32 random bytes */

/* STATE_DIR/token into buf (always terminated). Pure. */
void ops_mcp_token_path(const char *state_dir, char *buf, size_t size);

/* Reads the token (64 lowercase hex characters) from STATE_DIR/token into
 * ret. The file must be a regular file (not a symlink) owned by this user
 * with no group/other permission bits, or DENIED says so and how to fix it;
 * NOT_FOUND when serve never made one; INVALID_ARGUMENT when it holds no
 * token. Never logs or returns the token in a message. Local file I/O only. */
int ops_mcp_token_read(const char *state_dir, char ret[OPS_MCP_TOKEN_LEN + 1], struct cp_error **err);

/* The token for serve: read as ops_mcp_token_read, or made when there is
 * none (32 bytes from getrandom(2), written 0600 through a temporary file
 * and a rename, so a crash never leaves half a token). *ret_created (may be
 * NULL) says whether it was made now. Errors as ops_mcp_token_read, plus
 * UNAVAILABLE when the file cannot be written. The state dir must be this
 * user's 0700 directory (serve.c makes it so). */
int ops_mcp_token_ensure(const char *state_dir, char ret[OPS_MCP_TOKEN_LEN + 1], int *ret_created,
                         struct cp_error **err);

/* ---- loopback HTTP probe (ops/http_probe.c) ---- */

/* True when url is http:// to 127.0.0.0/8, ::1 or localhost. Pure. */
int ops_url_is_loopback(const char *url);

/* One request of ops_http_probe; every string borrowed. */
struct ops_http_request {
	const char *method;       /* "GET", "POST" */
	const char *url;          /* loopback http:// (with a socket: the logical URL, http://localhost/mcp) */
	const char *body;         /* sent as application/json with MCP's Accept header; NULL = none */
	const char *unix_socket;  /* dial this Unix socket instead of TCP; NULL = TCP */
	const char *bearer_token; /* sent as "Authorization: Bearer <token>"; NULL = no header */
	long timeout_ms;
};

/* Sends one HTTP request to a loopback url and waits at most
 * rq->timeout_ms. *ret_status gets the HTTP status; *ret_body (may be NULL;
 * caller frees) up to 64 KiB of the answer. Refuses a url that is not
 * loopback with INVALID_ARGUMENT (status never talks to other hosts);
 * connection refused or timeout → UNAVAILABLE / TIMEOUT naming the url.
 * The token's copies are wiped before returning. */
int ops_http_probe(const struct ops_http_request *rq, long *ret_status, char **ret_body, struct cp_error **err);

/* ---- pure decisions (ops/checks.c) ---- */

/* Finds "CapEff:\t<hex>" in the text of /proc/<pid>/status. Returns 0 with
 * *ret_mask, -1 when the line is absent or malformed. */
int ops_capabilities_parse(const char *status_text, uint64_t *ret_mask);

/* Names (comma-separated, "CAP_SYS_ADMIN,CAP_NET_ADMIN") of the dangerous
 * capabilities set in mask, written into buf (always terminated). Dangerous:
 * what lets a process leave or reconfigure its container (SYS_ADMIN,
 * NET_ADMIN, SYS_MODULE, SYS_PTRACE, SYS_RAWIO, DAC_READ_SEARCH, SYS_BOOT,
 * SYS_TIME, MAC_ADMIN, MAC_OVERRIDE, BPF, PERFMON, SYSLOG, LINUX_IMMUTABLE);
 * numbers from linux/capability.h. Returns how many are set. Pure. */
int ops_capabilities_dangerous(uint64_t mask, char *buf, size_t size);

/* Looks through a /proc/self/mountinfo text for a mount of the engine socket:
 * a mount point or root whose last component is "docker.sock" or equals
 * socket_basename (may be NULL). Writes the first offending mount point into
 * buf. Returns 1 when found, 0 otherwise. Pure. */
int ops_mountinfo_find_socket(const char *mountinfo, const char *socket_basename, char *buf, size_t size);

/* Looks through a mountinfo text for a credential directory (a mount point
 * or root with a component .aws .azure .config .docker .gnupg .kube .local
 * .secrets .ssh, DESIGN.md Workspaces) or the host home (root equal to home,
 * may be NULL). Mounts at skip_target (the read-only helper file, whose host
 * path may well sit under ~/.local) and at PROTO_CHANNEL_DIR (the direct
 * channel's empty directory under the state directory) are not judged. Writes the first
 * offending entry into buf. Returns 1 when found, 0 otherwise. Pure. */
int ops_mountinfo_find_credentials(const char *mountinfo, const char *home, const char *skip_target, char *buf,
                                   size_t size);

/* The vm probe's judgment of QEMU (isolation_vm.c): status is the text of
 * its /proc/<pid>/status, syscalls the JSON line of `chat2sbx-vm syscalls`
 * run in its container (template/vm/src/ctl.c; NULL or "" when it gave
 * none). 0 when QEMU runs as a non-root uid with CapEff 0, NoNewPrivs 1
 * and a seccomp filter (Seccomp 2) that refuses io_uring_setup and
 * openat2 (they act on files past seccomp's view of mode bits,
 * docker/seccomp.c); -1 otherwise. buf (size bytes, always terminated)
 * says which, or that no status was given. */
int ops_vm_qemu_judge(const char *status, const char *syscalls, char *buf, size_t size);

/* The process limit in force from the survey's pids section: the smallest
 * positive number among its lines (the pids.max of a cgroup and each of its
 * ancestors; "max" and other text are skipped); -1 when there is none. A
 * vm guest's limit sits on an ancestor of the shell's cgroup. */
long long ops_pids_limit(const char *text);

/* The listening ports (state 0A) in the text of /proc/net/tcp or tcp6
 * (several tables may follow each other), each once, into ports (at most
 * max); returns how many. */
size_t ops_tcp_listeners(const char *proc_net_tcp, int *ports, size_t max);

/* What `chat2sbx status` found. */
struct ops_readiness {
	int service_up;       /* serve.json names a live process */
	int mcp_answering;    /* initialize answered 200 */
	int engine_up;        /* the engine answered */
	int engine_denied;    /* this user may not use the engine's socket (EACCES/EPERM) */
	int template_present; /* the template image exists */
	int tunnel_enabled;   /* CHAT2SBX_ENABLE_TUNNEL=1 */
	int tunnel_ready;     /* tunnel.json says running and /readyz answered 200 */
	int firewall_missing; /* CHAT2SBX_FIREWALL=1 and table inet chat2sbx was read and is not in place */
};

/* The exit status of `status`: 0 when ready; OPS_EXIT_NOT_READY when the
 * service is down or its MCP endpoint does not answer, the engine is down,
 * the template image is missing, the tunnel is enabled but not ready, or
 * the host-edge firewall is on and was found not in place. A socket this
 * user may not use comes first: nothing else can work until that is fixed.
 * *ret_reason (static text; may be NULL) names the first such thing. Pure. */
#define OPS_EXIT_NOT_READY 6
int ops_readiness_exit_status(const struct ops_readiness *r, const char **ret_reason);

/* ---- the template image after an upgrade (ops/template.c) ---- */

/* Looks for an image built from the same template inputs as cfg's
 * DATA_DIR/template/build.sh and tags it cfg->template_image, running that
 * script with CHAT2SBX_TEMPLATE_RETAG_ONLY=1 (it never builds). 1 when the
 * tag is now in place (detail, size bytes: what was done), 0 when a build
 * is needed (detail says so), -1 with *err when the script is missing
 * (config_install_path's words) or failed (UNAVAILABLE with its last
 * words). Blocks up to 120 s (engine calls). */
int ops_template_retag(const struct config *cfg, char *detail, size_t size, struct cp_error **err);

/* ---- the host-edge firewall (ops/firewall.c, issue 12) ---- */

/* Builds the firewall for this machine: the bridges POLICY_BRIDGE_PREFIX*
 * and the older ones the engine has (guard_legacy_bridges; none when
 * engine is NULL), and the addresses of every node's engine host (issue
 * 28: the registry at cfg->database_path when it exists; a name is
 * resolved now, one that does not resolve is logged and left out).
 * *ret: caller clears. Engine and registry errors pass through. */
int ops_firewall_build(const struct config *cfg, struct docker_engine *engine, struct firewall_ruleset *ret,
                       struct cp_error **err);

/* One line about rs ("<state>: table inet chat2sbx drops what the bridges
 * c2s-* and br-… send to this host's own addresses") into buf. Pure. */
void ops_firewall_describe(const struct firewall_ruleset *rs, const char *state, char *buf, size_t size);

/* Puts the firewall in place: builds it, reads the table, replaces it
 * (one transaction) unless it is already exactly this ruleset, and reads it
 * back. *ret_changed says whether it wrote, *ret_before (may be NULL) what
 * it found; detail (size bytes) says what is in place now. DENIED without CAP_NET_ADMIN; UNAVAILABLE when the
 * kernel refuses; engine errors pass through. Blocks on two engine calls
 * and netlink. Idempotent. */
int ops_firewall_install(const struct config *cfg, struct docker_engine *engine, int *ret_changed,
                         enum firewall_state *ret_before, char *detail, size_t size, struct cp_error **err);

/* Removes table inet chat2sbx (firewall_remove). */
int ops_firewall_uninstall(int *ret_removed, struct cp_error **err);

/* What `status` and `doctor` say about the firewall. */
struct ops_firewall_report {
	int enabled;   /* CHAT2SBX_FIREWALL */
	int permitted; /* this process may read nftables (CAP_NET_ADMIN) */
	int known;     /* state was read */
	enum firewall_state state;
	char detail[1024]; /* one line for a person */
};
/* Fills *ret; never fails (what could not be read is "unknown" with the
 * reason in detail). engine may be NULL (no older bridges considered).
 * Blocks on two engine calls and netlink. */
void ops_firewall_report(const struct config *cfg, struct docker_engine *engine, struct ops_firewall_report *ret);

/* The note root leaves after installing the firewall (ops/firewall_note.c),
 * read by a serve without CAP_NET_ADMIN. On a tmpfs: a reboot removes it. */
#define OPS_FIREWALL_NOTE "/run/chat2sbx/firewall"

/* Writes fingerprint (borrowed) to the note at path (creating its
 * directory 0755; the note 0644, replaced atomically, never through a
 * symlink). Meant for root after a successful install: written by anyone
 * else it is not trusted. INTERNAL with errno on a write failure. */
int ops_firewall_note_write(const char *path, const char *fingerprint, struct cp_error **err);

/* 1 when the note at path says fingerprint and may be trusted: its
 * directory (not a symlink) and the note (a regular file, not a symlink,
 * at most 4096 bytes) are owned by trusted_uid (0 in use; tests pass their
 * own) and writable by nobody else. 0 otherwise; detail (size bytes, always
 * terminated) says what was found in either case. Never fails. */
int ops_firewall_note_check(const char *path, const char *fingerprint, uid_t trusted_uid, char *detail, size_t size);

/* For a process without CAP_NET_ADMIN: 1 when the firewall this build
 * would install is known to be in place (read from the kernel when this
 * process may after all, else root's note), 0 when not or not known;
 * detail (size bytes) says which and why. Never fails. Blocks like
 * ops_firewall_build plus a netlink read. */
int ops_firewall_unprivileged_check(const struct config *cfg, struct docker_engine *engine, char *detail, size_t size);

/* serve's start: with CHAT2SBX_FIREWALL=0 logs a warning and returns 0;
 * without CAP_NET_ADMIN reads the table if it can, else trusts only root's
 * note (ops_firewall_note_check with OPS_FIREWALL_NOTE), and refuses
 * (DENIED, saying what to run as root) when neither shows it in place;
 * otherwise installs it (ops_firewall_install) and logs what is in place,
 * or fails with the cause and what to do, so serve refuses to start. */
int ops_firewall_serve_start(const struct config *cfg, struct docker_engine *engine, struct cp_error **err);

/* serve's maintenance pass: with the setting on and CAP_NET_ADMIN, puts the
 * firewall back when it is missing or out of date (logged as a warning);
 * problems are logged. Never fails. Blocks like ops_firewall_install. */
void ops_firewall_maintain(const struct config *cfg, struct docker_engine *engine);

/* ---- isolation probe (ops/isolation.c) ---- */

enum ops_check_result { OPS_CHECK_PASSED, OPS_CHECK_FAILED, OPS_CHECK_SKIPPED };

struct ops_check {
	char node[40];      /* the node the probe ran on ("local" = this machine) */
	const char *name;   /* static: "docker_socket", "host_files", ... */
	const char *attack; /* static: what the attack tried */
	enum ops_check_result result;
	char *detail; /* owned: what was seen */
};

#define OPS_PROBE_MAX_CHECKS 24
struct ops_probe_report {
	char node[40]; /* copied into each check added: the node being probed ("" = "local") */
	struct ops_check checks[OPS_PROBE_MAX_CHECKS];
	size_t n;
};
void ops_probe_report_clear(struct ops_probe_report *r);
/* Appends one outcome: name and attack are static text, the detail is
 * formatted (copied). Past OPS_PROBE_MAX_CHECKS outcomes it is dropped. */
void ops_probe_report_add(struct ops_probe_report *r, const char *name, const char *attack,
                          enum ops_check_result result, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Static name of a result ("passed", "failed", "skipped"). */
const char *ops_check_result_name(enum ops_check_result r);
/* Number of failed checks. */
size_t ops_probe_report_failures(const struct ops_probe_report *r);
/* For `serve --verify-isolation`: logs each outcome (component "doctor")
 * and fails with DENIED naming every attack that succeeded; skipped checks
 * do not fail. */
int ops_probe_report_require(const struct ops_probe_report *r, struct cp_error **err);

/* The attacks on serve's MCP endpoint (ops/attack_endpoint.c; issue 12),
 * appended to *r: "mcp_token" (the TCP port of the running serve named by
 * STATE_DIR/serve.json answers 401 without a token and with a wrong one,
 * and 200 with the right one) and "mcp_socket" (its Unix socket is 0600,
 * and, when this process is root, a throwaway uid is refused by the file
 * permissions and, holding CAP_DAC_OVERRIDE, cut off by the peer-uid
 * check). Both are skipped with the reason when serve does not run. Forks
 * short-lived children as root; blocks up to about 20 s. */
void ops_endpoint_probe(const struct config *cfg, struct ops_probe_report *r);

struct lifecycle;

/* ---- the host-files attack (ops/attack_host_files.c) ---- */

/* What ops_setid_scan found below a host directory. */
struct ops_setid_findings {
	size_t entries;    /* entries looked at (below the directory) */
	size_t found;      /* with S_ISUID/S_ISGID, or a regular file with security.capability */
	char detail[1024]; /* "sub/f (mode 4755), g (file capabilities)" relative to the directory, cut */
};

/* Walks dir (symlinks never followed, at most 8 levels deep; dir itself
 * included) and records every entry whose mode has S_ISUID or S_ISGID and
 * every regular file with a security.capability attribute. *ret is filled on
 * success. UNAVAILABLE naming dir when it cannot be opened. Local file I/O
 * only. */
int ops_setid_scan(const char *dir, struct ops_setid_findings *ret, struct cp_error **err);

/* Proves isolation on this machine: plants canaries on the host (a file in a
 * fresh host temp dir and one in DATA_ROOT, an environment variable in this
 * process), creates a probe sandbox through lc (managed workspace, the
 * operator's configuration) and attacks it from inside through its helper
 * channel: Docker socket, host files, host environment, credential mounts,
 * capabilities and privileges, pids limit, memory ceiling, setuid files
 * planted through /workspace (ops_attack_host_files), the host's own
 * services (a listener on 0.0.0.0 of the host, host_edge.c); then a second probe with
 * network_off=1 must see nothing but loopback (skipped with the reason when
 * this build does not honour network_off), and a third on a throwaway
 * direct workspace must not change its .git, then one per plant of a link
 * in it must be stopped (ops_git_guard_probe, ops_git_plant_probe). Each
 * outcome goes into *ret
 * (caller clears). Probes and canaries are removed at the end, also on
 * failure, and the probes' registry rows and managed workspaces are deleted
 * (doctor leaves nothing behind). Returns 0 when the probe ran (checks may
 * have failed), -1 with *err when it could not run (engine, template).
 * Blocks up to a few minutes (ten creates, two dozen helper calls).
 * Not thread-safe: sets and unsets an environment variable.
 *
 * node (borrowed; NULL or "local" = this machine) places the probes on
 * another machine's engine (issue 28): there the probe is attacked from
 * inside the same way (socket, host files and environment of serve's
 * machine, credentials, privileges, pids and memory ceilings, serve's
 * machine's services through a listener on its 0.0.0.0, network_off), and
 * what runs on this machine only is one skipped outcome saying so (the
 * direct-mode git attacks, the setuid plants through /workspace, the
 * export-bundle bomb: direct workspaces stay on 'local', a remote managed
 * workspace is an engine volume there, and bundles are read here whichever
 * node made them). Every outcome carries the node's name (ops_check.node).
 * NOT_FOUND for a node without a row; the node's engine's errors when it
 * cannot take the probe. */
int ops_isolation_probe(struct lifecycle *lc, const char *node, struct ops_probe_report *ret, struct cp_error **err);

/* Runs command in sandbox_id as a bash session through lc (cwd /, up to
 * about 40 s) and returns its combined output in *ret_output (caller
 * frees). TIMEOUT when it did not finish, channel errors as they come. */
int ops_probe_run(struct lifecycle *lc, const char *sandbox_id, const char *command, char **ret_output,
                  struct cp_error **err);

/* The direct-mode git attack (ops/git_probe.c), part of
 * ops_isolation_probe: makes a throwaway git repository (written by hand,
 * no git runs on the host) in the first allowed host root that exists and
 * is writable, registers it as a direct workspace as `chat2sbx workspace
 * add` does, creates a probe sandbox on it, tries from inside to write
 * .git/config, add a hook, redirect .git/commondir, rename a lock file over
 * .git/config and rename .git, and checks on the host that nothing of .git
 * changed. Adds "direct_git" to r: passed, failed (naming what got
 * through, or why the probe could not run) or skipped (no allowed root
 * exists or is writable); then, on the same repository, ops_git_plant_probe
 * ("direct_git_links"). The probes, their registry rows (sandbox, approval,
 * workspace) and the directory are removed whatever happens. Blocks for
 * eight creates and helper calls. */
void ops_git_guard_probe(struct lifecycle *lc, struct ops_probe_report *r);
/* Its verdict, pure: out is what the attack printed inside ("refused NAME"
 * or "WROTE NAME" lines, "@@end" last), before and after the host's .git as
 * the probe saw it. Failed when a write got through (naming each), when
 * the attack did not run to its end, or when the host's .git changed;
 * passed otherwise. Adds "direct_git" to r. */
void ops_git_guard_judge(const char *out, const char *before, const char *after, struct ops_probe_report *r);

/* What one plant of the doctor's second git attack came to
 * (git_plant_probe.c, issue 23). */
struct ops_git_plant_outcome {
	const char *rel; /* below .git (static) */
	int planted;     /* the plant was made inside (it said so) */
	int stopped;     /* the sandbox was failed, naming rel, and ran no further */
	int still_there; /* rel is still a link or special file on the host afterwards */
	long ms;         /* from the plant's command to the failed row (or the wait's end) */
};
/* The second direct-mode git attack, part of ops_git_guard_probe: on the
 * throwaway repository dir (workspace_id, direct), one probe sandbox per
 * plant plants a symbolic link to a canary outside the repository where
 * git on the host writes through one (logs/HEAD, logs/refs/stash,
 * COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD, ORIG_HEAD) or links .git/logs to a
 * directory outside; chat2sbx must move it out of .git and stop and fail
 * the sandbox within 10 s, and the canary must be unchanged. Adds
 * "direct_git_links" to r. The probes, their quarantined plants and the
 * canary are removed. Blocks for seven creates and helper calls. */
void ops_git_plant_probe(struct lifecycle *lc, const char *dir, const char *workspace_id, struct ops_probe_report *r);
/* Its verdict, pure: failed when a plant could not be made (and nothing
 * stopped it: the attack proved nothing), did not stop its sandbox, stayed
 * in .git, or the canary changed (each named); passed otherwise, with the
 * slowest reaction. Adds "direct_git_links" to r. */
void ops_git_plant_judge(const struct ops_git_plant_outcome *o, size_t n, int canary_changed,
                         struct ops_probe_report *r);
/* The delta bomb of issue 23 (ops/attack_delta_bomb.c): a git pack of a
 * blob of base_bytes zeros and levels REF_DELTAs, each copying the one
 * before twice (every id and the trailer real SHA-1s, so git resolves
 * it). *ret (caller frees) and *ret_len. Never fails. */
int ops_delta_bomb_pack(unsigned levels, size_t base_bytes, unsigned char **ret, size_t *ret_len);
/* Part of ops_isolation_probe: the bomb (10 levels over 1 MiB) fed to
 * host git index-pack without the pack check under a 64 MiB ceiling
 * (must stop at the ceiling), and handed over by a clone probe's own
 * `git bundle` in a real save (must be refused at a bound, every host
 * git child under CHAT2SBX_SAVE_MEMORY_BYTES). Adds "delta_bomb" to r:
 * failed when host git resolved the bomb or a child passed its ceiling,
 * skipped when no allowed root takes a throwaway repository. The probe,
 * its repository and its rows are removed. Blocks up to about a minute. */
void ops_delta_bomb_probe(struct lifecycle *lc, struct ops_probe_report *r);

/* `serve --verify-isolation`: runs ops_isolation_probe, logs each outcome
 * (component "doctor"), and fails with DENIED naming every attack that
 * succeeded, so serve refuses to start; a probe that cannot run fails with
 * its own error. Skipped checks do not fail. Blocks like the probe. */
int ops_isolation_require(struct lifecycle *lc, struct cp_error **err);

#endif
