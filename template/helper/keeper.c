/* keeper.c: the per-session keeper. keeper_spawn (in the helper) forks;
 * the child executes the helper's binary again as KEEPER_ARGV0, so it holds
 * none of the helper's memory, and waits idle for keeper_start, which
 * sends a session's directory, command and streams over a socket pair.
 * keeper_main then leads the session (and, for tty sessions, holds the
 * terminal as its controlling terminal), is a child subreaper so every
 * process the session starts stays below it, starts the shell in its own
 * process group, reports the shell's pid and wait status and reaps until
 * it has no children left. It ignores every catchable signal: only the
 * helper stops a session, by signalling the keeper's descendants. It must
 * never hold a descriptor of the helper's beyond what it is given. */
#include "keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define KEEPER_COMM "chat2sbx-keeper" /* its comm (ps -o comm), at most 15 bytes */
#define REPORT_FD 3                   /* the keeper's socket, after its stdio */
#define FD_SCRATCH 10                 /* descriptors are moved above this first */
/* A spec message: header, cwd, NUL, command, NUL, with the shell's stdin
 * and output as SCM_RIGHTS. The helper's bounds (a path, a command below
 * MAX_ARG_STRLEN) keep it far below this. */
#define SPEC_MAX (256 * 1024)
#define SPEC_TTY 1u

struct spec_header {
	uint32_t flags, cwd_len, command_len;
};

/* One report to the helper: 0, or -1 when it could not be sent (a helper
 * that forgot the session, or gave up waiting, closed its end: EPIPE). */
static int report(int kind, int value)
{
	struct keeper_report r = {.kind = kind, .value = value};
	ssize_t n;
	do
		n = send(REPORT_FD, &r, sizeof r, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof r ? 0 : -1;
}

/* In the shell's process: its own process group (the foreground one of a
 * tty), then it waits for the keeper's go on go_fd, sent only after the
 * helper has been told the shell's pid: a keeper killed or stuck before
 * that (so the helper gives the session up) leaves a shell that exits
 * without running anything, never an untracked one. Then a clean signal
 * state, the directory, exec. stdio are already in place, the socket
 * closes on exec. Never returns. */
static void __attribute__((noreturn))
shell_exec(const char *cwd, const char *command, bool tty, int ctty_errno, int go_fd, char **envp)
{
	setpgid(0, 0);
	char go = 0;
	ssize_t n;
	do
		n = read(go_fd, &go, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127);
	close(go_fd);
	/* SIGTTOU is still ignored here (the keeper's dispositions), so a
	 * background group may take the terminal. */
	if (tty && ctty_errno == 0)
		tcsetpgrp(STDIN_FILENO, getpid());
	/* Signals sent since the fork are pending (blocked), not lost to the
	 * keeper's SIG_IGN: they act once the mask is cleared. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (ctty_errno) {
		dprintf(STDERR_FILENO,
		        "chat2sbx-helper: cannot make the pseudo-terminal the controlling terminal: %s\n",
		        strerror(ctty_errno));
		_exit(127);
	}
	if (chdir(cwd) < 0) {
		dprintf(STDERR_FILENO, "chat2sbx-helper: cannot enter '%s': %s\n", cwd, strerror(errno));
		_exit(127);
	}
	char *bash_argv[] = {"bash", "-c", (char *)command, NULL};
	execve("/bin/bash", bash_argv, envp);
	if (errno == ENOENT) {
		char *sh_argv[] = {"sh", "-c", (char *)command, NULL};
		execve("/bin/sh", sh_argv, envp);
	}
	dprintf(STDERR_FILENO, "chat2sbx-helper: cannot run /bin/bash or /bin/sh: %s\n", strerror(errno));
	_exit(127);
}

/* The keeper after its spec arrived, the shell's streams on 0-2. Returns
 * once the session has no process left (exits when the shell cannot be
 * started). */
static void keeper_run(const char *cwd, const char *command, bool tty)
{
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	/* A reused keeper leads its session already (EPERM); the session of
	 * the one before had no process left. */
	setsid();
	if (tty)
		setenv("TERM", KEEPER_TTY_TERM, 1);
	/* The keeper, not the shell, controls the terminal: a hang-up (the
	 * helper closes the master once the program closed the slave) signals
	 * the keeper, which ignores it, instead of a program that has not
	 * exited yet. */
	int ctty_errno = tty && ioctl(STDOUT_FILENO, TIOCSCTTY, 0) < 0 ? errno : 0;
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	int go[2];
	if (pipe2(go, O_CLOEXEC) < 0) {
		report(KEEPER_REPORT_FAILED, errno);
		_exit(0);
	}
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &all, NULL);
	pid_t shell = fork();
	if (shell == 0) {
		close(go[1]);
		shell_exec(cwd, command, tty, ctty_errno, go[0], environ);
	}
	int fork_errno = errno;
	sigprocmask(SIG_SETMASK, &none, NULL);
	close(go[0]);
	if (shell < 0) {
		report(KEEPER_REPORT_FAILED, fork_errno);
		_exit(0);
	}
	setpgid(shell, shell); /* also here, so the group exists whichever runs first */
	/* The go only once the helper has the pid (a helper that gave the
	 * session up closed its end: the shell then exits unrun). */
	if (report(KEEPER_REPORT_STARTED, shell) == 0) {
		ssize_t w;
		do
			w = write(go[1], "g", 1);
		while (w < 0 && errno == EINTR);
	}
	close(go[1]);
	/* The shell's streams are its own now: holding them would keep the
	 * output pipe (or the terminal) open after everyone else closed it. */
	for (int fd = 0; fd <= 2; fd++)
		if (null_fd < 0 || dup2(null_fd, fd) < 0)
			close(fd);
	if (null_fd >= 0)
		close(null_fd);
	int cd = chdir("/"); /* keep no directory busy; a failure only would */
	(void)cd;
	for (;;) {
		siginfo_t si = {0};
		if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: the session has no process left */
		}
		/* When the shell led the session, the kernel sent SIGHUP to its
		 * foreground group (the shell's jobs) as it exited; tty sessions
		 * keep that, sent while the exited shell still holds the group. */
		if (si.si_pid == shell && tty)
			kill(-shell, SIGHUP);
		int st;
		while (waitpid(si.si_pid, &st, 0) < 0 && errno == EINTR)
			;
		if (si.si_pid == shell)
			report(KEEPER_REPORT_EXITED, st);
	}
}

/* Receives the spec into buf (cwd and command point into it) and moves
 * the two descriptors that come with it onto 0-2. Returns 0 or an errno. */
static int spec_receive(char *buf, size_t size, char **ret_cwd, char **ret_command, bool *ret_tty)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = size - 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl, .msg_controllen = sizeof ctl};
	ssize_t n;
	do
		n = recvmsg(REPORT_FD, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno;
	if (n == 0)
		_exit(0); /* the helper closed the socket: an idle keeper is not needed */
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	int fds[2] = {-1, -1};
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(2 * sizeof(int)))
		memcpy(fds, CMSG_DATA(c), sizeof fds);
	struct spec_header h;
	if (fds[0] < 0 || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || n < (ssize_t)sizeof h)
		return EINVAL;
	memcpy(&h, buf, sizeof h);
	size_t body = (size_t)n - sizeof h;
	char *cwd = buf + sizeof h, *command = cwd + h.cwd_len + 1;
	if (h.cwd_len >= body || h.command_len >= body - h.cwd_len - 1 ||
	    (size_t)h.cwd_len + 1 + h.command_len + 1 != body || cwd[h.cwd_len] || command[h.command_len])
		return EINVAL;
	if (dup2(fds[0], STDIN_FILENO) < 0 || dup2(fds[1], STDOUT_FILENO) < 0 || dup2(fds[1], STDERR_FILENO) < 0)
		return errno;
	close(fds[0]);
	close(fds[1]);
	*ret_cwd = cwd;
	*ret_command = command;
	*ret_tty = h.flags & SPEC_TTY;
	return 0;
}

int keeper_main(void)
{
	/* execve made the process dumpable again; until here it held only
	 * /dev/null and a socket, which /proc cannot reopen. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_NAME, KEEPER_COMM, 0, 0, 0);
	int type = 0;
	socklen_t len = sizeof type;
	if (getsockopt(REPORT_FD, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET) {
		fprintf(stderr, "%s: started by chat2sbx-helper for each bash session only\n", KEEPER_ARGV0);
		return 2;
	}
	fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC);
	/* Only the helper ends a session. SIGCHLD keeps its default (not
	 * SIG_IGN, which would reap children without a status). */
	struct sigaction ign = {.sa_handler = SIG_IGN};
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP && sig != SIGCHLD)
			sigaction(sig, &ign, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	static char buf[SPEC_MAX];
	for (;;) {
		char *cwd = NULL, *command = NULL;
		bool tty = false;
		int e = spec_receive(buf, sizeof buf, &cwd, &command, &tty);
		if (e || !cwd || !command) { /* a failed call whose errno reads 0 sets neither */
			report(KEEPER_REPORT_FAILED, e ? e : EIO);
			_exit(0);
		}
		keeper_run(cwd, command, tty);
		/* A terminal session made its pty the keeper's controlling
		 * terminal: that keeper is not reused. Others wait for the next
		 * session (the helper closes the socket when it has a spare). */
		if (tty || report(KEEPER_REPORT_IDLE, 0) < 0)
			_exit(0);
	}
}

/* In the forked child: 0-2 = /dev/null, REPORT_FD = the socket (kept
 * across exec), nothing else. Every other descriptor is the helper's (its
 * request and reply streams, the signalfd, other sessions' pipes and
 * logs); all are close-on-exec, but the fallback without exec needs them
 * closed. Returns 0 or -errno. */
static int fds_arrange(int sock_fd)
{
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	int sock = fcntl(sock_fd, F_DUPFD_CLOEXEC, FD_SCRATCH);
	if (null_fd < 0 || sock < 0)
		return -errno;
	if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0 || dup2(null_fd, STDERR_FILENO) < 0 ||
	    dup2(sock, REPORT_FD) < 0)
		return -errno;
	if (close_range(REPORT_FD + 1, ~0u, 0) < 0) {
		struct rlimit rl;
		int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
		for (int fd = REPORT_FD + 1; fd < max; fd++)
			close(fd);
	}
	return 0;
}

/* The forked child of keeper_spawn. Never returns. */
static void __attribute__((noreturn)) keeper_child(char **envp, int sock_fd)
{
	int r = fds_arrange(sock_fd);
	if (r < 0) {
		struct keeper_report rep = {.kind = KEEPER_REPORT_FAILED, .value = -r};
		ssize_t w = send(sock_fd, &rep, sizeof rep, MSG_NOSIGNAL);
		_exit(w < 0);
	}
	char *argv[] = {KEEPER_ARGV0, NULL};
	execve("/proc/self/exe", argv, envp);
	/* No /proc, or the binary cannot be executed: go on as this copy of
	 * the helper (it shares the helper's pages at the fork, and keeps those
	 * the helper changes later). */
	environ = envp;
	_exit(keeper_main());
}

pid_t keeper_spawn(char **envp, int *ret_fd)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		keeper_child(envp, sv[1]);
	}
	int e = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		errno = e;
		return -1;
	}
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	*ret_fd = sv[0];
	return pid;
}

int keeper_start(int fd, const struct keeper_spec *spec)
{
	size_t cwd_len = strlen(spec->cwd), command_len = strlen(spec->command);
	if (sizeof(struct spec_header) + cwd_len + command_len + 2 >= SPEC_MAX)
		return -EMSGSIZE;
	struct spec_header h = {
	    .flags = spec->tty ? SPEC_TTY : 0, .cwd_len = (uint32_t)cwd_len, .command_len = (uint32_t)command_len};
	struct iovec iov[] = {
	    {.iov_base = &h, .iov_len = sizeof h},
	    {.iov_base = (char *)spec->cwd, .iov_len = cwd_len + 1},
	    {.iov_base = (char *)spec->command, .iov_len = command_len + 1},
	};
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 3, .msg_control = &ctl, .msg_controllen = sizeof ctl};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(2 * sizeof(int));
	int fds[2] = {spec->in_fd, spec->out_fd};
	memcpy(CMSG_DATA(c), fds, sizeof fds);
	ssize_t n;
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int keeper_report_read(int fd, struct keeper_report *ret, int timeout_ms)
{
	int64_t deadline = mono_ms() + timeout_ms;
	for (;;) {
		ssize_t n = recv(fd, ret, sizeof *ret, MSG_TRUNC);
		if (n == (ssize_t)sizeof *ret)
			return 1;
		if (n >= 0)
			return -1; /* end of file, or not a report */
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -1;
	}
}
