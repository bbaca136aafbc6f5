/* bash_session.c: the table of bash sessions (bash.h): lookup, counts,
 * pruning of old ended sessions, the record beside each log (sessmeta.h),
 * the sessions an earlier helper left (restore) and freeing. Owns the
 * one struct bash_state (the table, the waiting-reply list's storage,
 * the last /proc scan) that the other bash_*.c files reach through
 * bash_state(); never signals a process. */

#include "bash_internal.h"

/* The one instance; reached through bash_state(). */
static struct bash_state state;

struct bash_state *bash_state(void)
{
	return &state;
}

int64_t bash_clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool session_has_processes(const struct session *s)
{
	return s->keeper > 0 || (s->keeper_lost && s->leftovers);
}

struct session *session_find(const char *id)
{
	struct bash_state *st = bash_state();
	for (size_t i = 0; i < st->nsessions; i++)
		if (strcmp(st->sessions[i]->id, id) == 0)
			return st->sessions[i];
	return NULL;
}

size_t running_count(void)
{
	struct bash_state *st = bash_state();
	size_t n = 0;
	for (size_t i = 0; i < st->nsessions; i++)
		n += !st->sessions[i]->ended;
	return n;
}

size_t bash_session_count(size_t *ret_running)
{
	struct bash_state *st = bash_state();
	if (ret_running)
		*ret_running = running_count();
	return st->nsessions;
}

const char *status_name(enum session_status s)
{
	switch (s) {
	case SESSION_RUNNING: return "running";
	case SESSION_EXITED: return "exited";
	case SESSION_KILLED: return "killed";
	case SESSION_TIMED_OUT: return "timed_out";
	case SESSION_LOST: return "lost";
	}
	return "unknown";
}

void session_free(struct session *s)
{
	if (!s)
		return;
	if (s->pipe_fd >= 0)
		close(s->pipe_fd);
	if (s->log_fd >= 0)
		close(s->log_fd);
	if (s->in_fd >= 0)
		close(s->in_fd);
	if (s->keeper_fd >= 0)
		close(s->keeper_fd);
	free(s->inbuf);
	free(s->command);
	free(s->log_path);
	free(s->reason);
	free(s);
}

/* ---- metadata beside the log (sessmeta.h) ---- */

/* Records what the next helper must know of s; a failure is logged the
 * first time and otherwise ignored (the session itself is unaffected). */
void session_persist(struct session *s)
{
	static bool warned;
	struct sessmeta m = {
	    .command = s->command,
	    .started_at_ms = s->started_at_ms,
	    .pid = s->pid,
	    .interactive = s->interactive,
	    .tty = s->tty,
	    .hidden = s->hidden,
	    .ended = s->ended && !s->interrupted && s->status != SESSION_LOST,
	    .exit_code = s->exit_code,
	    .term_sig = s->term_sig,
	    .ended_at_ms = s->ended_at_ms,
	    .delivered = s->delivered,
	    .acked = s->acked,
	    .dropped = s->dropped,
	};
	snprintf(m.id, sizeof m.id, "%s", s->id);
	snprintf(m.status, sizeof m.status, "%s", status_name(s->status));
	int r = sessmeta_write(paths_log_dir(), &m);
	if (r < 0 && !warned) {
		warned = true;
		hlog_warn("cannot record session '%s' beside its log in %s (%s); after a restart of the sandbox "
		          "it will not be listed",
		          s->id, paths_log_dir(), strerror(-r));
	}
}

/* ---- sessions table ---- */

static void session_forget(size_t i)
{
	struct bash_state *st = bash_state();
	struct session *s = st->sessions[i];
	hlog_debug("forgetting session '%s' (log %s stays)", s->id, s->log_path);
	sessmeta_remove(paths_log_dir(), s->id);
	/* Keep creation order for bash.list. */
	memmove(st->sessions + i, st->sessions + i + 1, (st->nsessions - i - 1) * sizeof *st->sessions);
	st->nsessions--;
	session_free(s);
}

/* Forget the oldest ended sessions beyond BASH_MAX_FINISHED, preferring
 * those whose pipe is closed and whose processes are all gone (a forgotten
 * session's leftovers can no longer be stopped by bash.stop); sessions with
 * waiting replies stay. */
void sessions_prune(void)
{
	struct bash_state *st = bash_state();
	size_t finished = st->nsessions - running_count();
	while (finished > BASH_MAX_FINISHED) {
		ssize_t pick = -1;
		for (size_t i = 0; i < st->nsessions; i++) {
			struct session *s = st->sessions[i];
			if (!s->ended || s->waiters)
				continue;
			if (pick < 0)
				pick = (ssize_t)i;
			struct session *p = st->sessions[pick];
			bool s_closed = s->pipe_fd < 0 && !session_has_processes(s),
			     p_closed = p->pipe_fd < 0 && !session_has_processes(p);
			if ((s_closed && !p_closed) || (s_closed == p_closed && s->ended_seq < p->ended_seq))
				pick = (ssize_t)i;
		}
		if (pick < 0)
			return;
		session_forget((size_t)pick);
		finished--;
	}
}

void sessions_add(struct session *s)
{
	struct bash_state *st = bash_state();
	if (st->nsessions == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		st->sessions = xrealloc(st->sessions, cap * sizeof *st->sessions);
		st->polled = xrealloc(st->polled, BASH_POLLFDS_PER_SESSION * cap * sizeof *st->polled);
		st->cap = cap;
	}
	st->sessions[st->nsessions++] = s;
}

/* ---- sessions of an earlier helper (sessmeta.h) ---- */

/* A session the helper before this one recorded: ended ones keep their
 * status, running ones are lost. Never signalled (it has no keeper): its
 * pid means nothing to this helper. */
static struct session *session_restored(const struct sessmeta *m, const char *boot_text)
{
	struct bash_state *st = bash_state();
	struct session *s = xcalloc(1, sizeof *s);
	snprintf(s->id, sizeof s->id, "%s", m->id);
	s->pipe_fd = s->log_fd = s->in_fd = s->keeper_fd = -1;
	s->command = xstrdup(m->command ? m->command : "");
	s->log_path = xasprintf("%s/%s.log", paths_log_dir(), m->id);
	s->log_fd = open(s->log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat lst;
	if (s->log_fd >= 0 && fstat(s->log_fd, &lst) == 0 && S_ISREG(lst.st_mode))
		s->total = (uint64_t)lst.st_size;
	/* Delivery resumes after what the control plane acknowledged: a reply
	 * the old helper sent but nobody received is sent again. */
	s->delivered = m->acked < s->total ? m->acked : s->total;
	s->acked = s->delivered;
	s->dropped = m->dropped;
	s->pid = m->pid;
	s->interactive = m->interactive;
	s->tty = m->tty;
	s->hidden = m->hidden;
	s->started_at_ms = m->started_at_ms;
	s->ended = true;
	if (m->ended) {
		s->status = !strcmp(m->status, "killed")      ? SESSION_KILLED
		            : !strcmp(m->status, "timed_out") ? SESSION_TIMED_OUT
		                                              : SESSION_EXITED;
		s->exit_code = m->exit_code;
		s->term_sig = m->term_sig;
		s->ended_at_ms = m->ended_at_ms;
	} else {
		s->status = SESSION_LOST;
		s->reason = xasprintf("the sandbox restarted at %s; the command was interrupted (its output up to then "
		                      "is in %s)",
		                      boot_text, s->log_path);
	}
	s->seq = ++st->seq;
	s->ended_seq = ++st->seq;
	return s;
}

size_t bash_restore(int64_t boot_wall_ms)
{
	struct sessmeta *metas = NULL;
	size_t n = 0, restored = 0, lost = 0;
	int r = sessmeta_load_all(paths_log_dir(), BASH_MAX_FINISHED, &metas, &n);
	if (r < 0) {
		hlog_warn("cannot read the sessions of the previous start in %s: %s", paths_log_dir(), strerror(-r));
		return 0;
	}
	char boot_text[40] = "?";
	time_t secs = (time_t)(boot_wall_ms / 1000);
	struct tm tm;
	if (gmtime_r(&secs, &tm))
		strftime(boot_text, sizeof boot_text, "%Y-%m-%dT%H:%M:%SZ", &tm);
	for (size_t i = 0; i < n; i++) {
		if (!session_find(metas[i].id)) {
			struct session *s = session_restored(&metas[i], boot_text);
			sessions_add(s);
			restored++;
			lost += s->status == SESSION_LOST;
		}
		sessmeta_clear(&metas[i]);
	}
	free(metas);
	if (restored)
		hlog_info("restored %zu session(s) of the previous start from %s, %zu of them interrupted (lost)",
		          restored, paths_log_dir(), lost);
	return restored;
}

void bash_free(void)
{
	struct bash_state *st = bash_state();
	while (st->waiters) {
		struct waiter *w = st->waiters;
		st->waiters = w->next;
		json_object_put(w->id);
		free(w);
	}
	st->nwaiters = 0;
	for (size_t i = 0; i < st->nsessions; i++)
		session_free(st->sessions[i]);
	free(st->sessions);
	free(st->polled);
	st->sessions = st->polled = NULL;
	st->nsessions = st->cap = st->npolled = 0;
	proctree_free(&st->procs);
	spare_drop_all(false);
}
