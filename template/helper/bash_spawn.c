/* bash_spawn.c: bash.start: checks, the log file and the shell's streams
 * (pipes or a pseudo-terminal), the hand-off to an idle keeper (spare.h,
 * keeper.h) and the new session's waiting reply. Decides nothing about
 * which commands may run (the host does). */

#include "bash_internal.h"

/* ---- bash.start ---- */

void bash_spare_ensure(void)
{
	spare_ensure(environ);
}

static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

static int start_check_cwd(json_object *params, char **ret_cwd, struct rpc_error *err)
{
	const char *cwd;
	size_t len;
	int r = rpc_param_string(params, "cwd", false, &cwd, &len, err);
	if (r < 0)
		return -1;
	if (r == 0 || len == 0) {
		cwd = paths_workspace();
		len = strlen(cwd);
	}
	char *abs;
	if (paths_resolve(cwd, len, "cwd", &abs, err) < 0)
		return -1;
	struct stat st;
	if (stat(abs, &st) < 0) {
		int e = errno;
		rpc_fail(err, "INVALID_ARGUMENT", "cwd '%s' %s; create the directory first or pass an existing one",
		         abs, e == ENOENT ? "does not exist" : strerror(e));
		free(abs);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		rpc_fail(err, "INVALID_ARGUMENT", "cwd '%s' is not a directory", abs);
		free(abs);
		return -1;
	}
	*ret_cwd = abs;
	return 0;
}

/* The shell's streams into fd (indexes below): output pipe + stdin
 * /dev/null; output pipe + input pipe (interactive); or a pseudo-terminal
 * of rows x cols (tty), whose master is read for output and written
 * (through a duplicate) for input. Ours: output read end, input write end.
 * The child's: its stdin and its stdout/stderr (the same slave on a tty).
 * On failure nothing is left open. */
enum { OUT_R, IN_W, CHILD_IN, CHILD_OUT, NFDS };
static int start_streams(struct session *s, int rows, int cols, int fd[NFDS], struct rpc_error *err)
{
	if (s->tty) {
		struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
		if (openpty(&fd[OUT_R], &fd[CHILD_OUT], NULL, NULL, &ws) < 0)
			return rpc_fail(err, "INTERNAL",
			                "cannot open a pseudo-terminal for session '%s': %s; start it "
			                "without tty",
			                s->id, strerror(errno));
		fcntl(fd[OUT_R], F_SETFD, FD_CLOEXEC);
		fcntl(fd[CHILD_OUT], F_SETFD, FD_CLOEXEC);
		fd[IN_W] = fcntl(fd[OUT_R], F_DUPFD_CLOEXEC, 3);
		if (fd[IN_W] < 0) {
			int e = errno;
			close_fds(fd, NFDS);
			return rpc_fail_errno(err, e, "duplicate the pseudo-terminal of", s->id);
		}
	} else {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0)
			return rpc_fail_errno(err, errno, "create output pipe for", s->id);
		fd[OUT_R] = p[0];
		fd[CHILD_OUT] = p[1];
		if (s->interactive) {
			if (pipe2(p, O_CLOEXEC) < 0) {
				int e = errno;
				close_fds(fd, NFDS);
				return rpc_fail_errno(err, e, "create input pipe for", s->id);
			}
			fd[CHILD_IN] = p[0];
			fd[IN_W] = p[1];
		} else if ((fd[CHILD_IN] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
			int e = errno;
			close_fds(fd, NFDS);
			return rpc_fail_errno(err, e, "open", "/dev/null");
		}
	}
	fcntl(fd[OUT_R], F_SETFL, O_NONBLOCK);
	if (fd[IN_W] >= 0)
		fcntl(fd[IN_W], F_SETFL, O_NONBLOCK);
	return 0;
}

/* Hand spec to a keeper (the spare, or a fresh one when the spare is gone
 * or was never there): its pid and report socket, or -1 with errno. */
static pid_t start_handoff(const struct keeper_spec *spec, int *ret_fd)
{
	for (int attempt = 0;; attempt++) {
		int fd;
		pid_t keeper = spare_take(environ, &fd);
		if (keeper < 0)
			return -1;
		/* A spare stopped from the sandbox would not answer. */
		kill(keeper, SIGCONT);
		int r = keeper_start(fd, spec);
		if (r == 0) {
			*ret_fd = fd;
			return keeper;
		}
		/* A spare killed from the sandbox: EPIPE; try once more with a
		 * fresh one. The one given up is reaped like any orphan. */
		close(fd);
		kill(keeper, SIGKILL);
		if (attempt > 0 || r != -EPIPE) {
			errno = -r;
			return -1;
		}
	}
}

/* Create the log file and the shell's streams and hand them to a keeper,
 * which forks the shell; fills s on success (with the shell's pid, reported
 * by the keeper). Waits for the keeper's first report: a fork when the
 * spare keeper takes the session, normally well under a millisecond; an
 * exec and a fork when a keeper had to be started; at most
 * KEEPER_START_MS. */
static int start_spawn(struct session *s, const char *cwd, int rows, int cols, struct rpc_error *err)
{
	s->log_path = xasprintf("%s/%s.log", paths_log_dir(), s->id);
	const int flags = O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC;
	s->log_fd = open(s->log_path, flags, 0600);
	if (s->log_fd < 0 && errno == ENOENT) {
		/* The first session, or the directory was removed from inside. */
		int r = paths_mkdir_p(paths_log_dir(), 0700);
		if (r < 0)
			return rpc_fail_errno(err, -r, "create log directory", paths_log_dir());
		s->log_fd = open(s->log_path, flags, 0600);
	}
	if (s->log_fd < 0)
		return rpc_fail_errno(err, errno, "create log", s->log_path);
	int fd[NFDS] = {-1, -1, -1, -1};
	if (start_streams(s, rows, cols, fd, err) < 0)
		return -1;
	struct keeper_spec spec = {
	    .cwd = cwd,
	    .command = s->command,
	    .in_fd = s->tty ? fd[CHILD_OUT] : fd[CHILD_IN],
	    .out_fd = fd[CHILD_OUT],
	    .tty = s->tty,
	};
	int report_fd = -1;
	pid_t keeper = start_handoff(&spec, &report_fd);
	int e = errno;
	close_fds(fd + CHILD_IN, 2);
	struct keeper_report rep = {0};
	int got = keeper < 0 ? -1 : keeper_report_read(report_fd, &rep, KEEPER_START_MS);
	if (got > 0 && rep.kind == KEEPER_REPORT_STARTED && rep.value > 0) {
		s->keeper = keeper;
		s->keeper_fd = report_fd;
		s->pid = rep.value;
		s->pipe_fd = fd[OUT_R];
		s->in_fd = fd[IN_W];
		return 0;
	}
	close_fds(fd, NFDS);
	if (report_fd >= 0)
		close(report_fd);
	if (got > 0 && rep.kind == KEEPER_REPORT_FAILED)
		e = rep.value;
	else if (keeper > 0) {
		/* Killed, or stuck: its end of the socket is closed, so it can no
		 * longer tell a shell to go (keeper.c), and the helper reaps it
		 * like any orphan. */
		kill(keeper, SIGKILL);
		return rpc_fail(err, "INTERNAL", "the keeper process of session '%s' %s before starting the shell",
		                s->id, got == 0 ? "did not answer" : "ended");
	}
	return rpc_fail(err, e == EAGAIN ? "LIMIT" : "INTERNAL", "fork for session '%s' failed: %s%s", s->id,
	                strerror(e), e == EAGAIN ? "; too many processes, stop some sessions" : "");
}

int bash_rpc_start(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	struct bash_state *st = bash_state();
	(void)ret_result;
	const char *sid, *command;
	size_t sid_len, cmd_len;
	struct output_bound bound;
	int64_t timeout_ms, yield_ms, rows, cols;
	bool interactive, tty, hidden;
	if (rpc_param_string(params, "session_id", true, &sid, &sid_len, err) < 0 ||
	    check_session_id(sid, sid_len, err) < 0 ||
	    rpc_param_string(params, "command", true, &command, &cmd_len, err) < 0 ||
	    rpc_param_int(params, "timeout_ms", 0, 0, INT64_MAX / 4, true, &timeout_ms, err) < 0 ||
	    param_yield(params, &yield_ms, err) < 0 || param_output(params, &bound, err) < 0 ||
	    rpc_param_bool(params, "interactive", false, &interactive, err) < 0 ||
	    rpc_param_bool(params, "tty", false, &tty, err) < 0 ||
	    rpc_param_bool(params, "hidden", false, &hidden, err) < 0 ||
	    rpc_param_int(params, "rows", BASH_TTY_ROWS, 1, BASH_TTY_MAX, false, &rows, err) < 0 ||
	    rpc_param_int(params, "cols", BASH_TTY_COLS, 1, BASH_TTY_MAX, false, &cols, err) < 0)
		return -1;
	if (cmd_len == 0)
		return rpc_fail(err, "INVALID_ARGUMENT", "command is empty; pass a shell command");
	if (strlen(command) != cmd_len)
		return rpc_fail(err, "INVALID_ARGUMENT", "command contains a NUL character");
	if (cmd_len > PROTO_COMMAND_MAX)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "command is %zu bytes; the limit is %d. Write a script with the "
		                "write tool and run that with bash instead",
		                cmd_len, PROTO_COMMAND_MAX);
	if (session_find(sid))
		return rpc_fail(err, "CONFLICT",
		                "session '%s' already exists in this sandbox; get its output with "
		                "bash_poll",
		                sid);
	if (running_count() >= BASH_MAX_RUNNING)
		return rpc_fail(
		    err, "LIMIT",
		    "%d sessions are already running; stop some with bash_stop first (sandbox_get lists them)",
		    BASH_MAX_RUNNING);
	if (st->nwaiters >= BASH_MAX_WAITERS)
		return rpc_fail(err, "LIMIT", "%d requests are already waiting; retry later", BASH_MAX_WAITERS);
	char *cwd;
	if (start_check_cwd(params, &cwd, err) < 0)
		return -1;

	struct session *s = xcalloc(1, sizeof *s);
	s->command = xstrdup(command);
	memcpy(s->id, sid, sid_len + 1);
	s->pipe_fd = s->log_fd = s->in_fd = s->keeper_fd = -1;
	s->status = SESSION_RUNNING;
	s->tty = tty;
	s->interactive = interactive || tty;
	s->hidden = hidden;
	int r = start_spawn(s, cwd, (int)rows, (int)cols, err);
	free(cwd);
	if (r < 0) {
		session_free(s);
		return -1;
	}
	int64_t now = bash_clock_ms();
	s->seq = ++st->seq;
	s->started_at_ms = wall_ms();
	s->timeout_at = timeout_ms ? now + timeout_ms : 0;
	sessions_add(s);
	waiter_add(WAIT_START, id, s, now + yield_ms, bound);
	session_persist(s);
	hlog_debug("session '%s' started: pid %d (keeper %d)%s", s->id, (int)s->pid, (int)s->keeper,
	           tty              ? ", on a pseudo-terminal"
	           : s->interactive ? ", interactive"
	                            : "");
	return 1;
}
