/* loop.h: the helper's single-threaded event loop. */
#ifndef CHAT2SBX_HELPER_LOOP_H
#define CHAT2SBX_HELPER_LOOP_H

struct loop_config {
	int in_fd;             /* requests, newline-delimited JSON-RPC */
	int out_fd;            /* replies; set non-blocking by the loop */
	const char *workspace; /* default cwd, base of relative paths */
	const char *log_dir;   /* session logs (created 0700 on first use) */
};

/* Serve requests from cfg->in_fd until SIGTERM or SIGINT: poll(2) over the
 * requests, each session's output pipe, a signalfd (SIGCHLD, SIGTERM,
 * SIGINT) and the earliest timer. End of input does not end the loop:
 * sessions keep running and replies still go out. On SIGTERM/SIGINT every
 * session's process group is stopped (SIGTERM, SIGKILL after
 * PROTO_KILL_GRACE_MS), waiting replies are answered, queued replies are
 * flushed for up to 1 s, everything is freed, and 0 is returned. Returns 1
 * when setup fails (logged). Blocks the calling process; it must be the only
 * user of SIGCHLD (it blocks SIGCHLD, SIGTERM and SIGINT while running and
 * makes the process a child subreaper, so orphans are reaped here even when
 * not running as PID 1). */
int loop_run(const struct loop_config *cfg);

#endif
