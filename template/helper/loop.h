/* loop.h: the helper's single-threaded event loop. */
#ifndef CHAT2SBX_HELPER_LOOP_H
#define CHAT2SBX_HELPER_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct loop_config {
	int in_fd;             /* requests, newline-delimited JSON-RPC */
	int out_fd;            /* replies; set non-blocking by the loop */
	const char *workspace; /* default cwd, base of relative paths */
	const char *log_dir;   /* session logs (created 0700 on first use) */
	/* The directory whose socket channel.connect connects to (proto.h),
	 * opened once at start; NULL: PROTO_CHANNEL_DIR. Tests point it into
	 * their own directory. */
	const char *channel_dir;
};

/* Serve requests from cfg->in_fd until SIGTERM or SIGINT (as PID 1: only
 * from outside the container, see loop_stop_signal_honoured). First the
 * sessions an earlier start of the helper recorded in cfg->log_dir are
 * loaded (bash_restore: ended ones as they ended, running ones "lost").
 * Then poll(2) over the requests, each session's output pipe, a signalfd
 * (SIGCHLD, SIGTERM, SIGINT) and the earliest timer. End of input does not end the loop:
 * sessions keep running and replies still go out. On SIGTERM/SIGINT every
 * process of every session is stopped (SIGTERM, SIGKILL rounds after
 * PROTO_KILL_GRACE_MS), waiting replies are answered, queued replies are
 * flushed for up to 1 s, everything is freed, and 0 is returned. Returns 1
 * when setup fails (logged). Blocks the calling process; it must be the only
 * user of SIGCHLD (it blocks SIGCHLD, SIGTERM and SIGINT while running and
 * makes the process a child subreaper, so orphans are reaped here even when
 * not running as PID 1). */
int loop_run(const struct loop_config *cfg);

/* Whether a SIGTERM or SIGINT from sender_pid (signalfd's ssi_pid, as seen
 * in the helper's pid namespace) stops a helper whose own pid is self. As
 * PID 1 of a container only a sender outside the container's pid namespace
 * counts (ssi_pid 0: the engine's stop); a `kill -TERM 1` from a command in
 * the sandbox is ignored. Not PID 1: every sender counts. Pure. */
bool loop_stop_signal_honoured(uint32_t sender_pid, pid_t self);

#endif
