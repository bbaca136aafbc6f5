/* child.c: one host program run on bytes we do not trust (git over a
 * sandbox's bundle, issue 23), bounded by rlimits set in the child before
 * exec, in its own process group killed whole at a wall deadline. Owns the
 * child's pipes and reaps it; never runs a shell, never leaves a process
 * behind. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "cancel.h"
#include "clock.h"
#include "xalloc.h"

#define CHILD_ERR_TAIL (64 * 1024)

void child_result_clear(struct child_result *r)
{
	if (!r)
		return;
	free(r->out);
	free(r->err_tail);
	*r = (struct child_result){0};
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void set_limit(int resource, uint64_t value, uint64_t hard_extra)
{
	if (!value)
		return;
	struct rlimit rl = {.rlim_cur = value, .rlim_max = value + hard_extra};
	setrlimit(resource, &rl);
}

static __attribute__((noreturn)) void child_exec(const struct child_spec *s, pid_t parent, int in, int out, int errfd,
                                                 int report)
{
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* serve died before the line above */
		_exit(127);
	sigset_t all;
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	set_limit(RLIMIT_AS, s->limits.memory_bytes, 0);
	set_limit(RLIMIT_CPU, s->limits.cpu_seconds, 5);
	set_limit(RLIMIT_FSIZE, s->limits.file_bytes, 0);
	if (s->limits.open_files) {
		struct rlimit cur;
		if (getrlimit(RLIMIT_NOFILE, &cur) == 0 && s->limits.open_files < cur.rlim_max) {
			struct rlimit rl = {.rlim_cur = s->limits.open_files, .rlim_max = s->limits.open_files};
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		goto fail;
	if (s->cwd && chdir(s->cwd) < 0)
		goto fail;
	execve(s->path, (char *const *)s->argv, (char *const *)s->envp);
fail:;
	int e = errno;
	ssize_t w = write(report, &e, sizeof(e));
	(void)w;
	_exit(127);
}

struct pipes {
	int in[2], out[2], err[2], report[2], null_fd;
};

static void pipes_close(struct pipes *p)
{
	close_pair(p->in);
	close_pair(p->out);
	close_pair(p->err);
	close_pair(p->report);
	if (p->null_fd >= 0)
		close(p->null_fd);
	p->null_fd = -1;
}

static int pipes_open(const struct child_spec *s, struct pipes *p)
{
	*p = (struct pipes){{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, -1};
	if ((s->out_fd <= 0 && pipe2(p->out, O_CLOEXEC) < 0) || pipe2(p->err, O_CLOEXEC) < 0 ||
	    pipe2(p->report, O_CLOEXEC) < 0)
		return -1;
	if (s->in_fd < 0 && s->in && s->in_len) {
		/* A socket, so a child that exits unread is EPIPE (MSG_NOSIGNAL),
		 * not a SIGPIPE that would end serve. */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p->in) < 0)
			return -1;
	} else if (s->in_fd < 0) {
		p->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (p->null_fd < 0)
			return -1;
	}
	return 0;
}

/* Appends to the stderr tail, keeping at least its last half. */
static void tail_append(struct cp_buf *b, const char *data, size_t n)
{
	size_t keep = b->max / 2;
	if (n > keep) {
		data += n - keep;
		n = keep;
	}
	if (cp_buf_append(b, data, n) < 0) {
		cp_buf_consume(b, b->len - keep);
		cp_buf_append(b, data, n);
	}
}

/* Reads what fd has; closes it at end of file. */
static void drain(int *fd, struct cp_buf *b, int *over, int tail)
{
	char buf[65536];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n > 0) {
		if (tail)
			tail_append(b, buf, (size_t)n);
		else if (!*over && cp_buf_append(b, buf, (size_t)n) < 0)
			*over = 1;
	} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		close(*fd);
		*fd = -1;
	}
}

/* The I/O loop: until stdout and stderr close and the child is reaped, or
 * the deadline. Once the child is gone its group is killed, so a
 * descendant holding the pipes cannot keep us here. */
static void pump(const struct child_spec *s, pid_t pid, struct pipes *p, struct child_result *r, int *status,
                 struct rusage *ru, int64_t deadline)
{
	struct cp_buf out, errb;
	cp_buf_init(&out, s->out_max);
	cp_buf_init(&errb, CHILD_ERR_TAIL);
	size_t in_off = 0;
	int reaped = 0;
	if (p->out[0] >= 0)
		fcntl(p->out[0], F_SETFL, O_NONBLOCK);
	fcntl(p->err[0], F_SETFL, O_NONBLOCK);
	while (p->out[0] >= 0 || p->err[0] >= 0 || !reaped) {
		if (!reaped) {
			pid_t w = wait4(pid, status, WNOHANG, ru);
			if (w == pid || (w < 0 && errno == ECHILD)) { /* ECHILD: reaped elsewhere, status unknown */
				reaped = 1;
				kill(-pid, SIGKILL);
			}
		}
		int64_t left = deadline - clock_monotonic_ms();
		if (left <= 0) {
			r->timed_out = !reaped;
			kill(-pid, SIGKILL);
			break;
		}
		if (cp_cancel_fired(s->cancel)) {
			r->cancelled = !reaped;
			kill(-pid, SIGKILL);
			break;
		}
		struct pollfd f[3];
		int nf = 0, io = -1, ie = -1, ii = -1;
		if (p->out[0] >= 0)
			io = nf, f[nf++] = (struct pollfd){.fd = p->out[0], .events = POLLIN};
		if (p->err[0] >= 0)
			ie = nf, f[nf++] = (struct pollfd){.fd = p->err[0], .events = POLLIN};
		if (p->in[1] >= 0)
			ii = nf, f[nf++] = (struct pollfd){.fd = p->in[1], .events = POLLOUT};
		/* Short sleeps while only the exit is awaited (no fd tells of it). */
		int wait = nf && (p->out[0] >= 0 || p->err[0] >= 0) ? 200 : 20;
		if (poll(f, (nfds_t)nf, (int)(left < wait ? left : wait)) < 0 && errno != EINTR)
			break;
		if (io >= 0 && f[io].revents)
			drain(&p->out[0], &out, &r->out_over, 0);
		if (ie >= 0 && f[ie].revents)
			drain(&p->err[0], &errb, &r->out_over, 1);
		if (ii >= 0 && f[ii].revents) {
			ssize_t n = send(p->in[1], s->in + in_off, s->in_len - in_off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n > 0)
				in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == s->in_len) {
				close(p->in[1]);
				p->in[1] = -1;
			}
		}
	}
	if (!reaped) {
		while (wait4(pid, status, 0, ru) < 0 && errno == EINTR)
			;
		kill(-pid, SIGKILL);
	}
	r->out_len = out.len;
	r->out = out.data ? cp_buf_steal(&out) : xstrdup("");
	r->err_len = errb.len;
	r->err_tail = errb.data ? cp_buf_steal(&errb) : xstrdup("");
	cp_buf_free(&out);
	cp_buf_free(&errb);
}

int child_run(const struct child_spec *s, struct child_result *ret, struct cp_error **err)
{
	*ret = (struct child_result){0};
	struct pipes p;
	if (pipes_open(s, &p) < 0) {
		int e = errno;
		pipes_close(&p);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, e, "run '%s'", s->path);
	}
	int in = s->in_fd >= 0 ? s->in_fd : p.in[0] >= 0 ? p.in[0] : p.null_fd;
	int64_t t0 = clock_monotonic_ms();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0)
		child_exec(s, parent, in, s->out_fd > 0 ? s->out_fd : p.out[1], p.err[1], p.report[1]);
	int fork_errno = errno;
	if (pid > 0)
		setpgid(pid, pid); /* also here, so the group exists before anything below kills it */
	if (p.in[0] >= 0)
		close(p.in[0]), p.in[0] = -1;
	if (p.out[1] >= 0)
		close(p.out[1]), p.out[1] = -1;
	close(p.err[1]), p.err[1] = -1;
	close(p.report[1]), p.report[1] = -1;
	if (pid < 0) {
		pipes_close(&p);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, fork_errno, "run '%s'", s->path);
	}
	/* The report pipe closes at exec (O_CLOEXEC) or carries exec's errno. */
	int exec_errno = 0;
	ssize_t n;
	while ((n = read(p.report[0], &exec_errno, sizeof(exec_errno))) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)sizeof(exec_errno)) {
		int status;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		pipes_close(&p);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, exec_errno, "start '%s'", s->path);
	}
	int status = 0;
	struct rusage ru = {0};
	long wall = s->limits.wall_ms > 0 ? s->limits.wall_ms : 1;
	pump(s, pid, &p, ret, &status, &ru, t0 + wall);
	pipes_close(&p);
	ret->exited = WIFEXITED(status);
	ret->code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
	ret->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	ret->peak_rss_kib = ru.ru_maxrss;
	ret->cpu_ms = (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	              (long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	ret->wall_ms = (long)(clock_monotonic_ms() - t0);
	return 0;
}
