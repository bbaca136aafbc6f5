/* bash.h: bash sessions (proto.h: bash.start, bash.poll, bash.input,
 * bash.stop, bash.list): one shell per session below its own keeper process
 * (keeper.h; on a pipe or a pseudo-terminal), output logged to a file and
 * delivered by cursor, input queued without blocking, replies that wait. */
#ifndef CHAT2SBX_HELPER_BASH_H
#define CHAT2SBX_HELPER_BASH_H

#include <json-c/json.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "rpc.h"

/* Limits (documented in template/helper/README.md). */
#define BASH_MAX_RUNNING 256               /* live shells; bash.start beyond: LIMIT */
#define BASH_MAX_FINISHED 256              /* ended sessions kept; older ones are forgotten */
#define BASH_LIST_RECENT PROTO_LIST_RECENT /* bash.list: the latest sessions, plus all running */
#define BASH_MAX_WAITERS 1024              /* pending bash.* replies; beyond: LIMIT */
#define BASH_ID_MAX 128                    /* session_id: [A-Za-z0-9_.-], 1..128 bytes */
#define BASH_LOG_MAX (1ull << 30)          /* bytes logged per session; more is dropped */
#define BASH_DEFAULT_YIELD_MS PROTO_DEFAULT_YIELD_MS
#define BASH_MAX_YIELD_MS (24 * 3600 * 1000)
#define BASH_DEFAULT_OUTPUT 60000 /* max_output_bytes when absent */
#define BASH_MIN_OUTPUT 4         /* room for one whole character */
#define BASH_MAX_OUTPUT (4 * 1024 * 1024)
#define BASH_INPUT_MAX (1024 * 1024) /* input waiting per session; bash.input beyond: LIMIT */
#define BASH_TTY_ROWS 24             /* tty size when rows / cols are absent */
#define BASH_TTY_COLS 80
#define BASH_TTY_MAX 1000          /* rows and cols: 1..1000 */
#define BASH_POLLFDS_PER_SESSION 3 /* bash_pollfds: output, input, keeper reports */

/* Request handlers. params and id are borrowed. Each returns 0 with
 * *ret_result set (reply now; the caller owns it), 1 when the reply is
 * deferred (sent later through rpc_send_*, keeping its own reference to
 * id), or -1 with err set. None of them blocks. */
int bash_rpc_start(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
int bash_rpc_poll(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
int bash_rpc_input(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
int bash_rpc_stop(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
int bash_rpc_list(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

/* Monotonic clock in milliseconds (CLOCK_MONOTONIC). */
int64_t bash_clock_ms(void);

/* Number of sessions kept; *ret_running (may be NULL) gets the live ones. */
size_t bash_session_count(size_t *ret_running);

/* Fill fds (capacity cap) with one POLLIN entry per open output stream, one
 * POLLOUT entry per stdin with input waiting and one POLLIN entry per open
 * keeper report pipe (so at most BASH_POLLFDS_PER_SESSION per session) and
 * return how many; bash_pollfds_handle then reads and writes those that are
 * ready (a keeper's report of the shell's exit ends its session).
 * The pair must be used around one poll(2) call with nothing in between. */
size_t bash_pollfds(struct pollfd *fds, size_t cap);
void bash_pollfds_handle(const struct pollfd *fds, size_t n);

/* Reap every child that has exited (waitpid(-1, WNOHANG) loop): keepers
 * (their last reports are read; one killed from outside ends its session
 * with a reason and starts stopping what is left of it), the shells of
 * sessions whose keeper died (their status, their pipe drained of what is
 * readable) and orphans re-parented to the helper. A stopped keeper gets
 * SIGCONT. Never blocks (scans /proc when a session lost its keeper). */
void bash_reap(void);

/* Earliest monotonic deadline (ms) among waiting replies, timeouts and
 * kill escalations, or -1 when there is none. */
int64_t bash_next_deadline(void);

/* Fire due timers (timeout_ms → SIGTERM, grace over → SIGKILL rounds until
 * nothing of the session is left) and send every waiting reply whose
 * condition now holds. Call after each event. */
void bash_tick(void);

/* Start an idle keeper for the next bash.start when one is due
 * (spare_ensure, spare.h). Call after the replies of a loop turn were
 * written, so its fork and exec are off their path (one fork; never
 * blocks). bash_next_deadline includes its due time. */
void bash_spare_ensure(void);

/* Stop all sessions for a helper exit: SIGTERM to every process of every
 * session, reaping while waiting up to PROTO_KILL_GRACE_MS (signals arrive
 * on sigfd, a signalfd for SIGCHLD), then SIGKILL rounds for up to 500 ms;
 * answers every waiting request. Blocks at most about PROTO_KILL_GRACE_MS +
 * 500 ms. */
void bash_shutdown(int sigfd);

/* Carriage-return progress lines: in buf[0..len), every complete line (up
 * to and including '\n') that holds a '\r' not followed by '\n' keeps only
 * what follows its last such '\r' ("10%\r20%\r30%\n" → "30%\n"; "\r\n"
 * endings stay). A last line without '\n' is kept as it is. In place;
 * returns the new length. */
size_t bash_collapse_cr(unsigned char *buf, size_t len);

/* Load the sessions an earlier helper recorded in the log directory
 * (sessmeta.h; a restart of the container keeps /tmp): those that had
 * ended keep their status, exit code and undelivered output; those that
 * were still running get status "lost" with the reason "the sandbox
 * restarted at <boot_wall_ms as RFC 3339 UTC>; the command was
 * interrupted", and bash.poll returns what their log holds beyond what was
 * delivered. At most BASH_MAX_FINISHED, the most recently started. Call once
 * at start, before any bash.start. Returns how many were loaded; problems
 * are logged. */
size_t bash_restore(int64_t boot_wall_ms);

/* Acknowledgements from the control plane (proto.h, "Delivery and
 * acknowledgement"); params borrowed, {"session_id","start","end"}: a
 * reply's output_start and output_end. Notifications: nothing is answered,
 * malformed ones and unknown sessions are ignored.
 * bash_ack: the reply reached a caller; the acknowledged prefix moves to end
 * when the range continues it (persisted beside the log).
 * bash_nack: the reply reached the control plane after its caller had gone;
 * delivery rewinds to start (never before the acknowledged prefix), so the
 * next poll returns that output again. */
void bash_ack(json_object *params);
void bash_nack(json_object *params);

/* A new control plane attached (hello with a new attach_id): every waiting
 * reply is forgotten unanswered (its id belonged to the old attachment; the
 * sessions go on), and every session's delivery cursor rewinds to its
 * acknowledged prefix, so output sent but never acknowledged is returned by
 * the next bash.poll. Returns how many sessions were rewound. */
size_t bash_attach_reset(void);

/* Forget every session and waiting reply (log files stay), closing their
 * descriptors; processes are not signalled. */
void bash_free(void);

#endif
