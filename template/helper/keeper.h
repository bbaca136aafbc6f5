/* keeper.h: the per-session keeper process. The helper starts one keeper
 * per bash session: a fork that executes the helper's own binary again in
 * keeper mode (a fresh address space of a few hundred KiB instead of a
 * copy of the helper's heap). The keeper becomes a session leader and a
 * child subreaper, starts the shell, reports the shell's pid and later its
 * wait status, reaps everything the session leaves behind and exits once it
 * has no children left. Everything the session starts (setsid, double
 * forks, daemons) thus keeps the keeper as an ancestor while it lives. */
#ifndef CHAT2SBX_HELPER_KEEPER_H
#define CHAT2SBX_HELPER_KEEPER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* argv[0] of an executed keeper: main() (and the test harness) run
 * keeper_main for it. Also its name in ps. */
#define KEEPER_ARGV0 "chat2sbx-keeper"

/* The shell to start (all borrowed; fds are the caller's, left open). */
struct keeper_spec {
	const char *cwd, *command;
	char **envp; /* the shell's environment (also the keeper's) */
	int in_fd;   /* the shell's stdin: /dev/null, an input pipe or the pty slave */
	int out_fd;  /* its stdout and stderr: the output pipe or the pty slave */
	bool tty;    /* out_fd is a pty slave: it becomes the controlling terminal */
};

/* Reports, keeper → helper, one message each on a SOCK_SEQPACKET socket
 * (a socket, unlike a pipe, cannot be reopened through /proc/PID/fd). */
enum keeper_report_kind {
	KEEPER_REPORT_STARTED = 1, /* value: the shell's pid */
	KEEPER_REPORT_FAILED = 2,  /* value: errno; no shell was started */
	KEEPER_REPORT_EXITED = 3,  /* value: the shell's wait status */
};
struct keeper_report {
	int32_t kind, value;
};

/* Start the keeper for spec: the spec goes to it over the socket, then it
 * is forked and executes /proc/self/exe as KEEPER_ARGV0 (or, when that
 * cannot be executed, goes on as a plain fork). Returns its pid (a child of
 * the caller) and sets *ret_fd to the caller's end of the socket
 * (close-on-exec, non-blocking; the caller owns it), or returns -1 with
 * errno set (socket, send or fork failed; nothing is left behind). The
 * keeper holds no descriptor of the caller's but spec's two streams (until
 * the shell is forked) and its end of the socket. Never blocks. */
pid_t keeper_spawn(const struct keeper_spec *spec, int *ret_fd);

/* Read one report from fd (as given by keeper_spawn), waiting up to
 * timeout_ms (0: only what is there). Returns 1 with *ret filled, 0 when
 * nothing came in time, -1 at end of file (the keeper exited or died) or
 * on an error or a malformed message. */
int keeper_report_read(int fd, struct keeper_report *ret, int timeout_ms);

/* The keeper's program (argv[0] KEEPER_ARGV0), with fds 0-2 the shell's
 * streams and 3 its socket, as keeper_spawn leaves them; envp is the shell's
 * environment. Never returns when started that way; returns 2 (after a
 * message on stderr) when fd 3 is not such a socket (someone ran it by
 * hand). */
int keeper_main(char **envp);

#endif
