/* tunnel.h: OpenAI's tunnel-client as a supervised child of `serve`
 * (DESIGN.md, Tunnel; issue 7). Two parts: the configuration check that
 * `serve`, `setup` and `status` share, and the supervisor that starts the
 * client, restarts it with capped backoff, forwards its log lines and stops
 * it. The runtime key is never read here: the client reads it itself from a
 * `file:` reference, so it appears in no process's arguments or environment. */
#ifndef CP_TUNNEL_H
#define CP_TUNNEL_H

#include <stdint.h>
#include <sys/types.h>

#include "../base/error.h"
#include "../config/config.h"

/* Checks what the tunnel needs before anything starts. With
 * cfg->enable_tunnel == 0 it returns 0 at once. Otherwise it refuses, with
 * CP_ERR_UNAVAILABLE and a message naming the file and the fix, when:
 * - cfg->tunnel_client is missing, not a regular file or not executable;
 * - SECRET_DIR/tunnel-id is missing, unreadable, or not exactly `tunnel_`
 *   followed by 32 lowercase hexadecimal characters (one trailing newline
 *   allowed; its content is never echoed, in case a key was pasted there);
 * - SECRET_DIR/key is missing, not a regular file, empty, not owned by the
 *   current user, or has any group/other permission bit (must be 0600 or
 *   0400).
 * Every message also names the local-only switch CHAT2SBX_ENABLE_TUNNEL=0.
 * Reads metadata and the tunnel-id file only; never opens the key. Does not
 * block beyond local file I/O. */
int tunnel_config_check(const struct config *cfg, struct cp_error **err);

/* Reads SECRET_DIR/tunnel-id into buf (NUL-terminated, newline stripped).
 * buf must hold at least 40 bytes. Fails like tunnel_config_check when the
 * file is missing or malformed. */
int tunnel_id_read(const struct config *cfg, char *buf, size_t size, struct cp_error **err);

enum tunnel_state {
	TUNNEL_STATE_STARTING, /* spawned, or about to be */
	TUNNEL_STATE_RUNNING,  /* the child is alive */
	TUNNEL_STATE_BACKOFF,  /* the child exited; waiting before the next start */
	TUNNEL_STATE_STOPPED,  /* tunnel_stop ran; no child */
	TUNNEL_STATE_REFUSED,  /* the configuration check failed; nothing started */
};

/* Stable lower-case name of a state as written to tunnel.json ("running"). */
const char *tunnel_state_name(enum tunnel_state state);

/* A snapshot of the supervisor, copied out under its lock. */
struct tunnel_status {
	enum tunnel_state state;
	pid_t pid;             /* 0 when no child runs */
	unsigned restarts;     /* starts after the first one */
	char health_url[64];   /* "http://127.0.0.1:P", "" before the first start */
	char last_exit[512];   /* "exit status 1", "killed by signal 9", "" when none yet */
	int64_t updated_at_ms; /* wall clock of the last change */
};

/* Delay before restart number `failures` (1 = the first restart after an
 * exit): TUNNEL_BACKOFF_MIN_MS doubling each time, capped at
 * TUNNEL_BACKOFF_MAX_MS. failures == 0 returns 0. Pure. */
#define TUNNEL_BACKOFF_MIN_MS 1000
#define TUNNEL_BACKOFF_MAX_MS 60000
/* A child that stayed up this long resets the failure count. */
#define TUNNEL_STABLE_MS 60000
int64_t tunnel_backoff_ms(unsigned failures);

struct tunnel_supervisor;

/* Starts supervising the tunnel client. Call only once our own HTTP listener
 * answers on the Unix socket mcp_socket (borrowed, copied; STATE_DIR/mcp.sock,
 * which may not contain ',' or '=': INVALID_ARGUMENT, written as "refused").
 * cfg is borrowed and must outlive the supervisor. Runs tunnel_config_check
 * first (on failure writes state "refused" to STATE_DIR/tunnel.json and
 * returns -1 with its message). Then spawns `tunnel-client run
 * --control-plane.api-key=file:SECRET_DIR/key
 * --health.listen-addr=127.0.0.1:P
 * --mcp.server-url=channel=main,url=http://localhost/mcp,unix-socket=SOCKET`
 * (tunnel-client docs/configuration.md, "MCP server") with the environment
 * PATH, HOME, LANG and CONTROL_PLANE_TUNNEL_ID only, on a supervisor thread
 * that restarts it with tunnel_backoff_ms when it exits and forwards its
 * stdout/stderr lines to the log prefixed "tunnel-client: ". The child gets
 * PR_SET_PDEATHSIG(SIGTERM), so it does not outlive a killed serve.
 * STATE_DIR/tunnel.json (0600, atomic rename) follows every state change.
 * *ret_sup is owned by the caller (tunnel_stop). Fails with UNAVAILABLE when
 * the thread or the first spawn cannot be set up. Does not block on the
 * child. */
int tunnel_start(const struct config *cfg, const char *mcp_socket, struct tunnel_supervisor **ret_sup,
                 struct cp_error **err);

/* Stops the child (SIGTERM, up to 5 s, then SIGKILL), reaps it, joins the
 * threads, writes state "stopped" and frees sup. Accepts NULL. Blocks up to
 * about 5 s. */
void tunnel_stop(struct tunnel_supervisor *sup);

/* Copies the current state into *ret. sup is borrowed. Never blocks long. */
void tunnel_status_get(struct tunnel_supervisor *sup, struct tunnel_status *ret);

/* Writes STATE_DIR/tunnel.json with state "refused" and last_exit = reason
 * (borrowed), for a serve that will not start the tunnel. Best effort. */
void tunnel_state_write_refused(const struct config *cfg, const char *reason);

#endif
