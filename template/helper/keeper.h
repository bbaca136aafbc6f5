/* keeper.h: the per-session keeper process. Each bash session runs below a
 * keeper: a child of the helper that executed the helper's own binary
 * again in keeper mode (a fresh address space of a few hundred KiB instead
 * of a copy of the helper's heap). The helper starts one ahead of time
 * (keeper_spawn: the exec is off the path of a bash.start) and hands it a
 * session (keeper_start: the command and the shell's streams). The keeper
 * then becomes a session leader and a child subreaper, starts the shell,
 * reports the shell's pid and later its wait status, reaps everything the
 * session leaves behind and, once it has no children left, reports itself
 * idle and waits for the next session (the helper reuses it as its spare,
 * so a short command costs one fork of this small process and the shell's
 * exec) or exits when its socket is closed. A keeper of a tty session
 * exits instead (the terminal was its controlling terminal).
 * Everything the session starts (setsid, double forks, daemons) thus keeps
 * the keeper as an ancestor while it lives. */
#ifndef CHAT2SBX_HELPER_KEEPER_H
#define CHAT2SBX_HELPER_KEEPER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* argv[0] of an executed keeper: main() (and the test harness) run
 * keeper_main for it. Also its name in ps. */
#define KEEPER_ARGV0 "chat2sbx-keeper"
/* TERM of tty sessions (others keep the helper's environment as it is). */
#define KEEPER_TTY_TERM "xterm-256color"

/* The shell to start (all borrowed; fds are the caller's, left open). */
struct keeper_spec {
	const char *cwd, *command;
	int in_fd;  /* the shell's stdin: /dev/null, an input pipe or the pty slave */
	int out_fd; /* its stdout and stderr: the output pipe or the pty slave */
	bool tty;   /* out_fd is a pty slave: it becomes the controlling terminal,
	             * and TERM is KEEPER_TTY_TERM */
};

/* Reports, keeper → helper, one message each on a SOCK_SEQPACKET socket
 * (a socket, unlike a pipe, cannot be reopened through /proc/PID/fd). */
enum keeper_report_kind {
	KEEPER_REPORT_STARTED = 1, /* value: the shell's pid */
	KEEPER_REPORT_FAILED = 2,  /* value: errno; no shell was started */
	KEEPER_REPORT_EXITED = 3,  /* value: the shell's wait status */
	KEEPER_REPORT_IDLE = 4,    /* value 0: nothing of the session is left;
	                            * the keeper waits for another keeper_start */
};
struct keeper_report {
	int32_t kind, value;
};

/* Start an idle keeper: fork, and in the child execute /proc/self/exe as
 * KEEPER_ARGV0 with envp (the shells' environment; when the binary cannot
 * be executed the child goes on as a plain fork). It holds /dev/null on
 * 0-2 and its end of a socket pair, none of the caller's descriptors, and
 * waits for keeper_start. Returns its pid (a child of the caller) and sets
 * *ret_fd to the caller's end of the socket (close-on-exec, non-blocking;
 * the caller owns it; closing it makes an idle keeper exit), or returns -1
 * with errno set (socket or fork failed; nothing is left behind). Costs the
 * caller one fork; never blocks. */
pid_t keeper_spawn(char **envp, int *ret_fd);

/* Hand spec to the idle keeper behind fd: its directory and command, and
 * its two streams (passed as descriptors; the caller keeps its own). The
 * keeper answers with one report (keeper_report_read): STARTED with the
 * shell's pid, or FAILED. Returns 0, or -errno when the message could not
 * be sent (EPIPE: the keeper is gone; EMSGSIZE: spec too large). Never
 * blocks. */
int keeper_start(int fd, const struct keeper_spec *spec);

/* Read one report from fd (as given by keeper_spawn), waiting up to
 * timeout_ms (0: only what is there). Returns 1 with *ret filled, 0 when
 * nothing came in time, -1 at end of file (the keeper exited or died) or
 * on an error or a malformed message. */
int keeper_report_read(int fd, struct keeper_report *ret, int timeout_ms);

/* The keeper's program (argv[0] KEEPER_ARGV0), with fds 0-2 on /dev/null
 * and 3 its socket, as keeper_spawn leaves them. Never returns when
 * started that way (it serves sessions one after another and exits when
 * the helper closes the socket while it is idle, after a tty session, or
 * when a shell cannot be started); returns 2 (after a message on stderr)
 * when fd 3 is not such a socket (someone ran it by hand). */
int keeper_main(void);

#endif
