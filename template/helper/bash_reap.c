/* bash_reap.c: what ends sessions: the kill sequence over the process
 * tree (bash.stop, timeout_ms, shutdown), the event loop's part (pollfds,
 * keepers' reports, idle keepers back to the pool), reaping children and
 * keepers killed from inside, deadlines and the helper's stop. */

#include "bash_internal.h"

/* ---- stopping what a session started ---- */

/* Whether anything of the session may still run. A keeper exits only once
 * every process below it is gone, and its pid stays ours until we reap it.
 * Sessions of an earlier helper never count (their pids mean nothing). */
static bool pid_is_keeper(pid_t pid)
{
	struct bash_state *st = bash_state();
	if (spare_is(pid))
		return true;
	for (size_t i = 0; i < st->nsessions; i++)
		if (st->sessions[i]->keeper == pid)
			return true;
	return false;
}

/* Send sig to every process of s in t (a recent scan) and return how many
 * got it. Normally: every descendant of its keeper, never the keeper itself
 * (it ignores the signals anyway, and must outlive the others to reap
 * them). When the keeper was killed from outside its orphans went to the
 * helper (the nearest subreaper): then the roots are the shell, while it
 * runs, and every child of the helper that is no keeper and not in the
 * helper's own session. Which dead keeper such an orphan belonged to is no
 * longer known, so every session that lost its keeper stops them all. */
size_t session_signal(struct session *s, struct proctree *t, int sig)
{
	if (s->keeper > 0)
		return proctree_signal(t, &s->keeper, 1, &s->keeper, 1, sig);
	if (!s->keeper_lost || !s->leftovers)
		return 0;
	pid_t self = getpid(), own_sid = getsid(0);
	pid_t *roots = xmalloc((t->n + 1) * sizeof *roots);
	size_t n = 0;
	if (!s->ended)
		roots[n++] = s->pid;
	for (size_t i = 0; i < t->n; i++) {
		const struct proctree_entry *e = &t->entries[i];
		if (e->ppid == self && e->sid != own_sid && !pid_is_keeper(e->pid))
			roots[n++] = e->pid;
	}
	size_t sent = proctree_signal(t, roots, n, NULL, 0, sig);
	free(roots);
	s->leftovers = sent > 0;
	return sent;
}

/* Fresh scan into procs; false (logged once) when /proc cannot be read. */
bool procs_scan(void)
{
	struct bash_state *st = bash_state();
	static bool warned;
	int r = proctree_scan(&st->procs);
	if (r < 0 && !warned) {
		warned = true;
		hlog_error("cannot read the process table in /proc (%s); bash.stop and timeouts cannot reach the "
		           "processes of sessions",
		           strerror(-r));
	}
	return r == 0;
}

/* SIGTERM and SIGCONT to everything of s in t (NULL: nothing could be
 * scanned), and SIGKILL rounds from PROTO_KILL_GRACE_MS on. */
static void kill_begin_in(struct session *s, enum kill_reason reason, int64_t now, struct proctree *t)
{
	if (!s->ended && s->kill == KILL_NONE)
		s->kill = reason;
	if (t) {
		session_signal(s, t, SIGTERM);
		session_signal(s, t, SIGCONT);
	}
	if (!s->kill_at) {
		s->kill_at = now + PROTO_KILL_GRACE_MS;
		s->kill_rounds = 0;
	}
}

void kill_begin(struct session *s, enum kill_reason reason, int64_t now)
{
	struct bash_state *st = bash_state();
	kill_begin_in(s, reason, now, procs_scan() ? &st->procs : NULL);
}

/* One SIGKILL round on s in t: processes forked while the last round was
 * sent are caught by the next one, sooner at first, then backing off (a
 * process in uninterruptible sleep dies only when it wakes up). */
static void kill_round(struct session *s, struct proctree *t, int64_t now)
{
	/* Nothing left (the keeper exited and was reaped): no more rounds. A
	 * table that could not be read counts as something left. */
	size_t sent = !session_has_processes(s) ? 0 : t ? session_signal(s, t, SIGKILL) : 1;
	if (sent == 0) {
		s->kill_at = 0;
		return;
	}
	int64_t wait = (int64_t)KILL_ROUND_MS << (s->kill_rounds < 7 ? s->kill_rounds : 7);
	s->kill_rounds++;
	s->kill_at = now + (wait < KILL_ROUND_MAX_MS ? wait : KILL_ROUND_MAX_MS);
	hlog_debug("session '%s': SIGKILL round %u reached %zu process(es)", s->id, s->kill_rounds, sent);
}

/* ---- events ---- */

static void keeper_drain(struct session *s);

size_t bash_pollfds(struct pollfd *fds, size_t cap)
{
	struct bash_state *st = bash_state();
	st->npolled = 0;
	for (size_t i = 0; i < st->nsessions && st->npolled < cap; i++) {
		struct session *s = st->sessions[i];
		if (s->pipe_fd >= 0 && !s->out_held) {
			fds[st->npolled] = (struct pollfd){.fd = s->pipe_fd, .events = POLLIN};
			st->polled[st->npolled++] = s;
		}
		if (s->in_fd >= 0 && s->inlen > 0 && st->npolled < cap) {
			fds[st->npolled] = (struct pollfd){.fd = s->in_fd, .events = POLLOUT};
			st->polled[st->npolled++] = s;
		}
		if (s->keeper_fd >= 0 && st->npolled < cap) {
			fds[st->npolled] = (struct pollfd){.fd = s->keeper_fd, .events = POLLIN};
			st->polled[st->npolled++] = s;
		}
	}
	return st->npolled;
}

void bash_pollfds_handle(const struct pollfd *fds, size_t n)
{
	struct bash_state *st = bash_state();
	/* No descriptor is opened in between, so a number still names the
	 * stream it was polled for (or was closed). */
	for (size_t i = 0; i < n && i < st->npolled; i++) {
		if (!fds[i].revents)
			continue;
		if (st->polled[i]->pipe_fd == fds[i].fd && fds[i].events == POLLIN)
			session_read(st->polled[i], READ_BUDGET);
		else if (st->polled[i]->in_fd == fds[i].fd && fds[i].events == POLLOUT)
			input_flush(st->polled[i]);
		else if (st->polled[i]->keeper_fd == fds[i].fd)
			keeper_drain(st->polled[i]);
	}
	st->npolled = 0;
}

/* The shell's end: its wait status as the keeper (or, after the keeper's
 * death, the helper) reaped it. */
static void session_end(struct session *s, int wstatus)
{
	struct bash_state *st = bash_state();
	s->ended = true;
	s->ended_at_ms = wall_ms();
	s->ended_seq = ++st->seq;
	s->exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
	s->term_sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
	/* Input after the shell's exit is refused (CONFLICT). */
	input_close(s);
	s->status = s->kill == KILL_STOP      ? SESSION_KILLED
	            : s->kill == KILL_TIMEOUT ? SESSION_TIMED_OUT
	                                      : SESSION_EXITED;
	/* What the shell wrote before it exited is in the pipe now; take it,
	 * so `echo hi; exit 3` answers "hi" with exit_code 3. */
	session_read(s, DRAIN_BUDGET);
	session_persist(s);
	hlog_debug("session '%s' ended: %s, exit code %d", s->id, status_name(s->status), s->exit_code);
}

/* s's keeper reported that nothing of the session is left and it waits
 * for another (keeper.h, KEEPER_REPORT_IDLE): the session is over, and the
 * keeper goes back to the pool of idle ones (spare.h). */
static void keeper_recycle(struct session *s)
{
	pid_t keeper = s->keeper;
	int fd = s->keeper_fd;
	s->keeper = 0;
	s->keeper_fd = -1;
	spare_give(keeper, fd);
}

/* Read every report the keeper has written; end of file closes the pipe. */
static void keeper_drain(struct session *s)
{
	struct keeper_report r;
	int got;
	while (s->keeper_fd >= 0 && (got = keeper_report_read(s->keeper_fd, &r, 0)) != 0) {
		if (got < 0) {
			close(s->keeper_fd);
			s->keeper_fd = -1;
		} else if (r.kind == KEEPER_REPORT_EXITED && !s->ended) {
			session_end(s, r.value);
		} else if (r.kind == KEEPER_REPORT_IDLE && s->ended && s->keeper > 0) {
			keeper_recycle(s);
		}
	}
}

/* Whether s's keeper has exited (a zombie we have not reaped yet). */
static bool keeper_exited(const struct session *s)
{
	siginfo_t si = {0};
	return s->keeper > 0 && waitid(P_PID, (id_t)s->keeper, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == s->keeper;
}

/* The keeper was reaped with wait status st. It exits by itself only once
 * it has no child left; killed from outside (kill -9 in the sandbox), it
 * leaves the session's processes to the helper, which ends the session and
 * stops whatever it can still find of it. */
static void keeper_reaped(struct session *s, int st)
{
	pid_t keeper = s->keeper;
	s->keeper = 0;
	keeper_drain(s); /* what it reported before it went */
	if (s->keeper_fd >= 0) {
		close(s->keeper_fd);
		s->keeper_fd = -1;
	}
	if (WIFEXITED(st))
		return;
	char name[32];
	signal_name(WTERMSIG(st), name, sizeof name);
	s->keeper_lost = s->leftovers = true;
	hlog_warn("the keeper (pid %d) of session '%s' was killed by %s; stopping what is left of the session",
	          (int)keeper, s->id, name);
	bool status_lost = false;
	if (!s->ended) {
		/* The shell is our child now, unless the keeper reaped it and died
		 * before it could report the status. */
		int shell_st;
		pid_t r = waitpid(s->pid, &shell_st, WNOHANG);
		if (r == s->pid)
			session_end(s, shell_st);
		else if (r < 0 && errno == ECHILD)
			status_lost = true;
	}
	free(s->reason);
	s->reason = xasprintf("the session's keeper process (pid %d, the shell's parent) was killed by %s%s; the "
	                      "helper stopped every process of the session it could still find",
	                      (int)keeper, name, status_lost ? " before it reported how the shell ended" : "");
	if (status_lost) {
		session_end(s, 0);
		s->status = SESSION_LOST;
		session_persist(s);
	}
	kill_begin(s, KILL_STOP, bash_clock_ms());
}

static struct session *session_by_keeper(pid_t pid)
{
	struct bash_state *st = bash_state();
	for (size_t i = 0; i < st->nsessions; i++)
		if (st->sessions[i]->keeper == pid)
			return st->sessions[i];
	return NULL;
}

/* A running session whose shell has this pid and whose keeper is gone:
 * only then is the shell our child. (A live keeper means the pid was
 * reused: the shell ended and its report is still in the pipe.) */
static struct session *session_by_orphaned_shell(pid_t pid)
{
	struct bash_state *st = bash_state();
	for (size_t i = 0; i < st->nsessions; i++) {
		struct session *s = st->sessions[i];
		if (s->ended || s->pid != pid)
			continue;
		if (s->keeper > 0) {
			/* Its keeper died but is not reaped yet (waitpid's order). */
			keeper_drain(s);
			if (s->ended || !keeper_exited(s))
				continue;
		}
		return s;
	}
	return NULL;
}

void bash_reap(void)
{
	struct bash_state *st = bash_state();
	int wstatus;
	pid_t pid;
	while ((pid = waitpid(-1, &wstatus, WNOHANG | WUNTRACED)) > 0) {
		struct session *s = session_by_keeper(pid);
		if (WIFSTOPPED(wstatus)) {
			/* A stopped keeper (SIGSTOP from the sandbox) would neither
			 * reap nor report: let it go on. */
			if (s || spare_is(pid))
				kill(pid, SIGCONT);
			continue;
		}
		if (spare_is(pid)) {
			/* Killed from the sandbox: the next bash.start starts another
			 * (not at once, so a kill loop cannot drive a fork loop). */
			spare_lost(pid);
			continue;
		}
		if (s) {
			keeper_reaped(s, wstatus);
			continue;
		}
		s = session_by_orphaned_shell(pid);
		if (s) {
			session_end(s, wstatus);
			continue;
		}
		hlog_debug("reaped process %d", (int)pid);
	}
	/* Sessions that lost their keeper: a reap may have been the last of
	 * them (bash.stop waits for that). */
	bool scanned = false;
	for (size_t i = 0; i < st->nsessions; i++) {
		struct session *s = st->sessions[i];
		if (!s->keeper_lost || !s->leftovers)
			continue;
		if (!scanned && !procs_scan())
			return;
		scanned = true;
		session_signal(s, &st->procs, 0);
	}
}

int64_t bash_next_deadline(void)
{
	struct bash_state *st = bash_state();
	int64_t best = -1;
#define CONSIDER(t)                                                                                                    \
	do {                                                                                                           \
		if ((t) > 0 && (best < 0 || (t) < best))                                                               \
			best = (t);                                                                                    \
	} while (0)
	for (struct waiter *w = st->waiters; w; w = w->next)
		CONSIDER(w->deadline);
	for (size_t i = 0; i < st->nsessions; i++) {
		struct session *s = st->sessions[i];
		if (session_has_processes(s))
			CONSIDER(s->timeout_at);
		CONSIDER(s->kill_at);
	}
	CONSIDER(spare_deadline());
#undef CONSIDER
	return best;
}

void bash_tick(void)
{
	struct bash_state *st = bash_state();
	int64_t now = bash_clock_ms();
	bool scanned = false;
	struct proctree *table = NULL;
	for (size_t i = 0; i < st->nsessions; i++) {
		struct session *s = st->sessions[i];
		/* timeout_ms bounds everything the session started: after the
		 * shell's exit it still ends what the shell left behind (the
		 * session keeps the shell's status then). */
		if (s->timeout_at && now >= s->timeout_at) {
			s->timeout_at = 0;
			if (session_has_processes(s)) {
				hlog_debug("session '%s' timed out", s->id);
				kill_begin(s, KILL_TIMEOUT, now);
				scanned = false; /* kill_begin scanned again */
			}
		}
		if (s->kill_at && now >= s->kill_at) {
			/* One scan for every session due in this tick. */
			if (!scanned && session_has_processes(s)) {
				scanned = true;
				table = procs_scan() ? &st->procs : NULL;
			}
			kill_round(s, table, now);
		}
	}
	waiters_answer(false);
	sessions_prune();
}

static bool any_session_has_processes(void)
{
	struct bash_state *st = bash_state();
	for (size_t i = 0; i < st->nsessions; i++)
		if (session_has_processes(st->sessions[i]))
			return true;
	return false;
}

/* Reap and read reports until nothing of any session is left or the
 * deadline passes; with kill_every_ms > 0, a SIGKILL round to every session
 * that often. SIGCHLD arrives on sigfd. */
static void shutdown_wait(int sigfd, int64_t deadline, int kill_every_ms)
{
	struct bash_state *st = bash_state();
	for (;;) {
		bash_reap();
		for (size_t i = 0; i < st->nsessions; i++)
			keeper_drain(st->sessions[i]);
		if (!any_session_has_processes())
			return;
		int64_t now = bash_clock_ms(), left = deadline - now;
		if (left <= 0)
			return;
		if (kill_every_ms > 0) {
			bool scanned = procs_scan();
			for (size_t i = 0; i < st->nsessions; i++)
				if (session_has_processes(st->sessions[i]))
					kill_round(st->sessions[i], scanned ? &st->procs : NULL, now);
			if (left > kill_every_ms)
				left = kill_every_ms;
		}
		struct pollfd p = {.fd = sigfd, .events = POLLIN};
		if (poll(&p, 1, (int)left) > 0) {
			char buf[1024];
			while (read(sigfd, buf, sizeof buf) > 0)
				;
		}
	}
}

void bash_shutdown(int sigfd)
{
	struct bash_state *st = bash_state();
	int64_t now = bash_clock_ms();
	spare_drop_all(true); /* they exit at end of file; reaped below */
	for (size_t i = 0; i < st->nsessions; i++)
		if (!st->sessions[i]->ended)
			st->sessions[i]->interrupted = true;
	/* One scan for all sessions: a shutdown may stop hundreds. */
	bool scanned = procs_scan();
	for (size_t i = 0; i < st->nsessions; i++)
		if (session_has_processes(st->sessions[i]))
			kill_begin_in(st->sessions[i], KILL_STOP, now, scanned ? &st->procs : NULL);
	shutdown_wait(sigfd, now + PROTO_KILL_GRACE_MS, 0);
	shutdown_wait(sigfd, bash_clock_ms() + 500, 20);
	waiters_answer(true);
}
