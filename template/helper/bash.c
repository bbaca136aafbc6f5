/* bash.c: bash sessions inside the sandbox. Owns every session (its keeper
 * process and shell, keeper.h), its output pipe and log file, and the
 * replies that wait on it (bash.start until exit, bash.poll until output,
 * bash.stop until nothing of the session is left). Output goes to the log
 * file first and is delivered from there by a per-session cursor, so memory
 * stays bounded whatever a command prints. Mechanism only: which commands
 * may run is decided on the host. */
#include "bash.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "headtail.h"
#include "hlog.h"
#include "keeper.h"
#include "paths.h"
#include "proctree.h"
#include "proto.h"
#include "sessmeta.h"
#include "spare.h"
#include "utf8.h"

#define DRAIN_BUDGET (1024 * 1024) /* bytes read from a pipe when its shell exits */
#define READ_BUDGET (256 * 1024)   /* bytes read per pipe per loop turn (fairness) */
#define STOP_SLACK_MS 1000         /* bash.stop answers by grace + this at the latest */
#define LIST_COMMAND_MAX 1000      /* bytes of a command shown by bash.list */
#define TTY_EOF '\x04'             /* VEOF (Ctrl-D) of a fresh pseudo-terminal */
#define KEEPER_START_MS 5000       /* bash.start waits this long for the keeper's first report */
#define KILL_ROUND_MS 10           /* SIGKILL rounds: the first retry, doubling ... */
#define KILL_ROUND_MAX_MS 1000     /* ... up to this while anything of the session is left */

extern char **environ;

enum session_status { SESSION_RUNNING, SESSION_EXITED, SESSION_KILLED, SESSION_TIMED_OUT, SESSION_LOST };
enum kill_reason { KILL_NONE, KILL_STOP, KILL_TIMEOUT };
enum waiter_kind { WAIT_START, WAIT_POLL, WAIT_STOP };

struct session {
	char id[BASH_ID_MAX + 1];
	char *command;
	char *log_path;
	pid_t pid; /* the shell; also its process group id (it calls setpgid) */
	/* The keeper (keeper.h): our child, so its pid is ours until we reap
	 * it, and it exits only once nothing of the session is left; 0 once
	 * reaped. keeper_fd: the read end of its report pipe, -1 once closed. */
	pid_t keeper;
	int keeper_fd;
	/* The keeper was killed from outside: what is left of the session is
	 * found through the shell and the orphans the helper adopted, and
	 * counts until a scan finds nothing (leftovers false). */
	bool keeper_lost, leftovers;
	int pipe_fd, log_fd;
	bool interactive, tty;
	bool hidden; /* bash.start hidden: the control plane's own command, left out of bash.list */
	/* The program's stdin (interactive sessions): the pipe's write end or a
	 * duplicate of the pty master, non-blocking; -1 once closed. Input the
	 * program has not read yet waits in inbuf (at most BASH_INPUT_MAX). */
	int in_fd;
	char *inbuf;
	size_t inlen, incap;
	bool in_close;      /* bash.input close: close stdin once inbuf is written */
	bool in_mid_line;   /* tty: the last byte queued was not '\n' */
	uint64_t total;     /* bytes in the log file */
	uint64_t delivered; /* bytes already returned in replies */
	/* Of those, the prefix the control plane acknowledged (bash.ack): it
	 * reached a caller. A new attachment rewinds delivered to here. */
	uint64_t acked;
	uint64_t dropped; /* bytes lost: over BASH_LOG_MAX or a failing log write */
	unsigned char tail[3];
	size_t tail_len; /* last bytes of the log, to spot an unfinished character */
	bool ended, log_failed;
	/* tty: the master read end of file (no slave open) before the shell was
	 * reaped; kept open, not polled, until the reap (session_read). */
	bool out_held;
	/* Running when the helper began to stop: its end is not recorded, so
	 * the next helper reports it lost (sessmeta.h). */
	bool interrupted;
	char *reason; /* SESSION_LOST: why (owned) */
	enum session_status status;
	int exit_code;
	int term_sig; /* the signal that killed the shell, or 0 */
	enum kill_reason kill;
	int64_t timeout_at, kill_at;        /* monotonic ms; 0 = none */
	unsigned kill_rounds;               /* SIGKILL rounds sent so far */
	int64_t started_at_ms, ended_at_ms; /* wall clock, for bash.list */
	uint64_t seq, ended_seq;
	size_t waiters;
};

/* How much of a session's output one answer may carry: max raw bytes, and
 * whether the caller asked for head and tail while the session still runs
 * ("tail": true). */
struct output_bound {
	size_t max;
	bool tail;
};

struct waiter {
	enum waiter_kind kind;
	json_object *id; /* own reference */
	struct session *session;
	int64_t deadline;
	struct output_bound bound;
	struct waiter *next;
};

static struct session **sessions;
static size_t nsessions, sessions_cap;
static struct waiter *waiters;
static size_t nwaiters;
static uint64_t seq_counter;
/* Sessions behind the pollfds last handed out, in the same order. */
static struct session **polled; /* at most BASH_POLLFDS_PER_SESSION entries per session */
static size_t npolled;
static struct proctree procs; /* the last scan of /proc, reused */

int64_t bash_clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct session *session_find(const char *id)
{
	for (size_t i = 0; i < nsessions; i++)
		if (strcmp(sessions[i]->id, id) == 0)
			return sessions[i];
	return NULL;
}

static size_t running_count(void)
{
	size_t n = 0;
	for (size_t i = 0; i < nsessions; i++)
		n += !sessions[i]->ended;
	return n;
}

size_t bash_session_count(size_t *ret_running)
{
	if (ret_running)
		*ret_running = running_count();
	return nsessions;
}

static const char *status_name(enum session_status s)
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

static void session_free(struct session *s)
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
static void session_persist(struct session *s)
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

/* ---- output: pipe → log file → replies ---- */

static void tail_push(struct session *s, const char *p, size_t n)
{
	if (n >= sizeof s->tail) {
		memcpy(s->tail, p + n - sizeof s->tail, sizeof s->tail);
		s->tail_len = sizeof s->tail;
		return;
	}
	unsigned char t[2 * sizeof s->tail];
	memcpy(t, s->tail, s->tail_len);
	memcpy(t + s->tail_len, p, n);
	size_t len = s->tail_len + n;
	size_t skip = len > sizeof s->tail ? len - sizeof s->tail : 0;
	memcpy(s->tail, t + skip, len - skip);
	s->tail_len = len - skip;
}

static void session_append(struct session *s, const char *p, size_t n)
{
	size_t keep = n;
	if (s->total >= BASH_LOG_MAX)
		keep = 0;
	else if (s->total + n > BASH_LOG_MAX)
		keep = (size_t)(BASH_LOG_MAX - s->total);
	size_t done = 0;
	while (done < keep && !s->log_failed) {
		ssize_t w = write(s->log_fd, p + done, keep - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			hlog_warn("writing log '%s' failed (%s); later output of session '%s' is "
			          "dropped",
			          s->log_path, w < 0 ? strerror(errno) : "no progress", s->id);
			s->log_failed = true;
			break;
		}
		done += (size_t)w;
	}
	if (keep < n && s->dropped == 0)
		hlog_warn("session '%s' wrote more than %llu bytes; the rest is dropped", s->id,
		          (unsigned long long)BASH_LOG_MAX);
	tail_push(s, p, done);
	s->total += done;
	s->dropped += n - done;
}

/* Read what the pipe holds, up to budget bytes; EOF or an error closes it.
 * A terminal's master is the exception while its shell has not been reaped:
 * closing it hangs the terminal up, and a program that closed its terminal
 * handles but has not exited yet would die of SIGHUP instead of exiting
 * with its own status. Its end of file only stops the polling then
 * (out_held); bash_reap reads the rest and closes it. */
static void session_read(struct session *s, size_t budget)
{
	static char buf[64 * 1024];
	while (s->pipe_fd >= 0 && budget > 0) {
		ssize_t n = read(s->pipe_fd, buf, budget < sizeof buf ? budget : sizeof buf);
		if (n > 0) {
			session_append(s, buf, (size_t)n);
			budget -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (s->tty && !s->ended) {
			s->out_held = true;
			break;
		}
		close(s->pipe_fd);
		s->pipe_fd = -1;
	}
}

/* Bytes a reply could deliver now. While the session runs, an unfinished
 * character at the end of the log waits for its remaining bytes. */
static uint64_t session_deliverable(const struct session *s)
{
	uint64_t avail = s->total - s->delivered;
	if (!s->ended && avail > 0) {
		size_t inc = utf8_incomplete_suffix(s->tail, s->tail_len);
		return inc >= avail ? 0 : avail - inc;
	}
	return avail;
}

size_t bash_collapse_cr(unsigned char *buf, size_t len)
{
	size_t out = 0, start = 0;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		/* The line is buf[start..i]; keep what follows its last '\r' that
		 * does not end it ("\r\n" stays). */
		size_t from = start;
		for (size_t k = start; k < i; k++)
			if (buf[k] == '\r' && buf[k + 1] != '\n')
				from = k + 1;
		memmove(buf + out, buf + from, i + 1 - from);
		out += i + 1 - from;
		start = i + 1;
	}
	if (start < len)
		memmove(buf + out, buf + start, len - start);
	return out + (len - start);
}

/* "SIGKILL" for 9; realtime signals as "SIGRTMIN+n". */
static const char *signal_name(int sig, char *buf, size_t cap)
{
	const char *abbrev = sigabbrev_np(sig);
	if (abbrev)
		snprintf(buf, cap, "SIG%s", abbrev);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, cap, "SIGRTMIN+%d", sig - SIGRTMIN);
	else
		snprintf(buf, cap, "SIG%d", sig);
	return buf;
}

/* ---- input: bash.input → pending buffer → the program's stdin ---- */

static bool stdin_open(const struct session *s)
{
	return s->in_fd >= 0 && !s->in_close;
}

/* Close the program's stdin for good, dropping input it has not read. */
static void input_close(struct session *s)
{
	if (s->in_fd >= 0)
		close(s->in_fd);
	s->in_fd = -1;
	free(s->inbuf);
	s->inbuf = NULL;
	s->inlen = s->incap = 0;
}

/* Write what stdin takes now without blocking; returns the bytes written.
 * No reader left (EPIPE; EIO on a pty whose slave is closed) closes stdin. */
static size_t input_write(struct session *s, const char *p, size_t n)
{
	size_t done = 0;
	while (s->in_fd >= 0 && done < n) {
		ssize_t w = write(s->in_fd, p + done, n - done);
		if (w > 0) {
			done += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w == 0 || errno == EAGAIN)
			break;
		hlog_debug("stdin of session '%s' is gone (%s); %zu bytes of input dropped", s->id, strerror(errno),
		           n - done + s->inlen);
		input_close(s);
	}
	return done;
}

/* Write pending input as far as stdin takes it; close stdin after the last
 * byte when a close was asked for. */
static void input_flush(struct session *s)
{
	if (s->in_fd < 0)
		return;
	if (s->inlen > 0) {
		size_t w = input_write(s, s->inbuf, s->inlen);
		if (s->in_fd < 0)
			return;
		memmove(s->inbuf, s->inbuf + w, s->inlen - w);
		s->inlen -= w;
	}
	if (s->inlen == 0 && s->in_close)
		input_close(s);
}

static int input_queue(struct session *s, const char *p, size_t n)
{
	if (n == 0)
		return 0;
	if (s->inlen + n > s->incap) {
		size_t cap = s->incap ? s->incap : 4096;
		while (cap < s->inlen + n)
			cap *= 2;
		char *b = realloc(s->inbuf, cap);
		if (!b)
			return -1;
		s->inbuf = b;
		s->incap = cap;
	}
	memcpy(s->inbuf + s->inlen, p, n);
	s->inlen += n;
	return 0;
}

/* Reads log bytes [off, off + n) into buf; returns how many it got (fewer
 * when the log was cut short from inside the sandbox). */
static size_t log_read(const struct session *s, uint64_t off, unsigned char *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(s->log_fd, buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/* The answer's text of raw log bytes buf[0..n) (changed in place):
 * carriage-return progress collapsed, valid UTF-8. Owned; NULL when memory
 * runs out. */
static char *output_text(unsigned char *buf, size_t n, size_t *ret_len)
{
	return utf8_sanitize(buf, bash_collapse_cr(buf, n), ret_len);
}

/* The tail of an answer whose rest of output exceeds its bound (proto.h,
 * Snapshot, "Head and tail"): the text of the last log bytes from a line
 * start, and which bytes those are. */
struct tail_part {
	char *text;      /* owned */
	size_t len, raw; /* text length; raw log bytes it stands for */
	uint64_t start;  /* its first log offset */
};

static int tail_read(const struct session *s, size_t tail_n, bool whole, struct tail_part *t)
{
	unsigned char *buf = malloc(tail_n);
	if (!buf)
		return -1;
	uint64_t off = s->total - tail_n;
	if (log_read(s, off, buf, tail_n) < tail_n) {
		free(buf);
		return -1;
	}
	size_t skip = headtail_tail_skip(buf, tail_n, whole ? tail_n / 2 : tail_n - 1), n = tail_n - skip;
	/* A character whose last bytes are still to come waits for them (when
	 * it belongs to the delivered range) or is not shown yet. */
	if (!s->ended)
		n -= utf8_incomplete_suffix(buf + skip, n);
	t->start = off + skip;
	t->raw = n;
	t->text = output_text(buf + skip, n, &t->len);
	free(buf);
	return t->text ? 0 : -1;
}

/* A snapshot reply (proto.h) that consumes up to bound.max bytes of
 * undelivered output, cut at a character boundary; when more is left, the
 * head and the tail (the session ended, or bound.tail) or the head and the
 * newest lines (still running), as proto.h, Snapshot, "Head and tail". */
static json_object *session_snapshot(struct session *s, struct output_bound bound)
{
	uint64_t avail = s->total - s->delivered;
	uint64_t start = s->delivered;
	bool whole = avail > bound.max && (s->ended || bound.tail);
	size_t tail_n = avail > bound.max ? headtail_tail_budget(bound.max, whole) : 0;
	size_t head_max = bound.max - tail_n;
	size_t n = avail < head_max ? (size_t)avail : head_max;
	unsigned char *buf = malloc(n ? n : 1);
	if (!buf)
		n = 0;
	size_t got = buf ? log_read(s, s->delivered, buf, n) : 0;
	if (got < n) {
		/* The log was truncated or removed from inside the sandbox. */
		hlog_warn("log '%s' of session '%s' is shorter than expected; %llu bytes skipped", s->log_path, s->id,
		          (unsigned long long)(avail - got));
		s->dropped += avail - got;
		s->total = s->delivered + got;
		avail = got;
		n = got;
		tail_n = 0;
	}
	size_t take = n;
	if (!(s->ended && n == avail))
		take = n - utf8_incomplete_suffix(buf, n);
	size_t out_len = 0;
	char *out = buf ? output_text(buf, take, &out_len) : NULL;
	free(buf);
	s->delivered += out ? take : 0;

	struct tail_part t = {0};
	char *marker = NULL;
	if (out && tail_n > 0 && tail_read(s, tail_n, whole, &t) == 0 && whole) {
		marker = headtail_marker(s->delivered, t.start, s->total, s->log_path,
		                         take > 0 && out_len > 0 && out[out_len - 1] != '\n');
		char *joined = marker ? malloc(out_len + strlen(marker) + t.len + 1) : NULL;
		if (joined) {
			memcpy(joined, out, out_len);
			memcpy(joined + out_len, marker, strlen(marker));
			memcpy(joined + out_len + strlen(marker), t.text, t.len + 1);
			free(out);
			out = joined;
			out_len += strlen(marker) + t.len;
		} else {
			free(t.text); /* out of memory: plain cursor delivery */
			t = (struct tail_part){0};
			whole = false;
		}
	}
	uint64_t omitted_start = s->delivered;
	if (whole && t.text)
		s->delivered = t.start + t.raw;
	if (out && s->delivered > start)
		session_persist(s);

	json_object *r = json_object_new_object();
	json_object_object_add(r, "session_id", json_object_new_string(s->id));
	json_object_object_add(r, "status", json_object_new_string(status_name(s->status)));
	if (s->ended && s->status != SESSION_LOST)
		json_object_object_add(r, "exit_code", json_object_new_int(s->exit_code));
	if (s->reason)
		json_object_object_add(r, "reason", json_object_new_string(s->reason));
	if (s->ended && s->term_sig) {
		char name[32];
		json_object_object_add(r, "signal",
		                       json_object_new_string(signal_name(s->term_sig, name, sizeof name)));
	}
	if (s->interactive)
		json_object_object_add(r, "stdin_open", json_object_new_boolean(stdin_open(s)));
	json_object_object_add(r, "output", json_object_new_string_len(out ? out : "", (int)out_len));
	json_object_object_add(r, "output_bytes", json_object_new_int64((int64_t)(s->delivered - start)));
	if (whole && t.text) {
		json_object_object_add(r, "omitted_start", json_object_new_int64((int64_t)omitted_start));
		json_object_object_add(r, "omitted_end", json_object_new_int64((int64_t)t.start));
		json_object_object_add(r, "omitted_output_bytes",
		                       json_object_new_int64((int64_t)(t.start - omitted_start)));
	} else if (t.text && t.start >= s->delivered) {
		json_object_object_add(r, "latest_output", json_object_new_string_len(t.text, (int)t.len));
		json_object_object_add(r, "latest_output_start", json_object_new_int64((int64_t)t.start));
	}
	free(t.text);
	free(marker);
	json_object_object_add(r, "output_start", json_object_new_int64((int64_t)start));
	json_object_object_add(r, "output_end", json_object_new_int64((int64_t)s->delivered));
	json_object_object_add(r, "has_more_output", json_object_new_boolean(session_deliverable(s) > 0));
	json_object_object_add(r, "total_output_bytes", json_object_new_int64((int64_t)s->total));
	if (s->dropped)
		json_object_object_add(r, "dropped_output_bytes", json_object_new_int64((int64_t)s->dropped));
	json_object_object_add(r, "log_path", json_object_new_string(s->log_path));
	json_object_object_add(r, "pid", json_object_new_int(s->pid));
	free(out);
	return r;
}

/* ---- stopping what a session started ---- */

/* Whether anything of the session may still run. A keeper exits only once
 * every process below it is gone, and its pid stays ours until we reap it.
 * Sessions of an earlier helper never count (their pids mean nothing). */
static bool session_has_processes(const struct session *s)
{
	return s->keeper > 0 || (s->keeper_lost && s->leftovers);
}

static bool pid_is_keeper(pid_t pid)
{
	if (spare_is(pid))
		return true;
	for (size_t i = 0; i < nsessions; i++)
		if (sessions[i]->keeper == pid)
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
static size_t session_signal(struct session *s, struct proctree *t, int sig)
{
	if (s->keeper > 0)
		return proctree_signal(t, &s->keeper, 1, &s->keeper, 1, sig);
	if (!s->keeper_lost || !s->leftovers)
		return 0;
	pid_t self = getpid(), own_sid = getsid(0);
	pid_t *roots = malloc((t->n + 1) * sizeof *roots);
	if (!roots)
		return 1; /* try again in the next round */
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
static bool procs_scan(void)
{
	static bool warned;
	int r = proctree_scan(&procs);
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

static void kill_begin(struct session *s, enum kill_reason reason, int64_t now)
{
	kill_begin_in(s, reason, now, procs_scan() ? &procs : NULL);
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

/* ---- sessions table ---- */

static void session_forget(size_t i)
{
	struct session *s = sessions[i];
	hlog_debug("forgetting session '%s' (log %s stays)", s->id, s->log_path);
	sessmeta_remove(paths_log_dir(), s->id);
	/* Keep creation order for bash.list. */
	memmove(sessions + i, sessions + i + 1, (nsessions - i - 1) * sizeof *sessions);
	nsessions--;
	session_free(s);
}

/* Forget the oldest ended sessions beyond BASH_MAX_FINISHED, preferring
 * those whose pipe is closed and whose processes are all gone (a forgotten
 * session's leftovers can no longer be stopped by bash.stop); sessions with
 * waiting replies stay. */
static void sessions_prune(void)
{
	size_t finished = nsessions - running_count();
	while (finished > BASH_MAX_FINISHED) {
		ssize_t pick = -1;
		for (size_t i = 0; i < nsessions; i++) {
			struct session *s = sessions[i];
			if (!s->ended || s->waiters)
				continue;
			if (pick < 0)
				pick = (ssize_t)i;
			struct session *p = sessions[pick];
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

static int sessions_add(struct session *s, struct rpc_error *err)
{
	if (nsessions == sessions_cap) {
		size_t cap = sessions_cap ? sessions_cap * 2 : 64;
		struct session **a = realloc(sessions, cap * sizeof *a);
		struct session **p = realloc(polled, BASH_POLLFDS_PER_SESSION * cap * sizeof *p);
		if (p)
			polled = p;
		if (!a || !p) {
			if (a)
				sessions = a;
			return rpc_fail(err, "INTERNAL", "out of memory adding a session");
		}
		sessions = a;
		sessions_cap = cap;
	}
	sessions[nsessions++] = s;
	return 0;
}

/* ---- waiting replies ---- */

static int waiter_add(enum waiter_kind kind, json_object *id, struct session *s, int64_t deadline,
                      struct output_bound bound, struct rpc_error *err)
{
	struct waiter *w = calloc(1, sizeof *w);
	if (!w)
		return rpc_fail(err, "INTERNAL", "out of memory queueing a reply");
	w->kind = kind;
	w->id = json_object_get(id);
	w->session = s;
	w->deadline = deadline;
	w->bound = bound;
	struct waiter **tail = &waiters;
	while (*tail)
		tail = &(*tail)->next;
	*tail = w;
	nwaiters++;
	s->waiters++;
	return 0;
}

static bool waiter_ready(const struct waiter *w, int64_t now)
{
	struct session *s = w->session;
	if (now >= w->deadline)
		return true;
	/* bash.stop answers once nothing is left of the session. */
	if (w->kind == WAIT_STOP)
		return s->ended && !session_has_processes(s);
	return s->ended || (w->kind == WAIT_POLL && session_deliverable(s) > 0);
}

/* Answer every waiter whose condition holds (all of them when force). The
 * list is walked in arrival order, so of two polls on one session the
 * first gets the new output and the second keeps waiting. */
static void waiters_answer(bool force)
{
	int64_t now = bash_clock_ms();
	struct waiter **pp = &waiters;
	while (*pp) {
		struct waiter *w = *pp;
		if (!force && !waiter_ready(w, now)) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		nwaiters--;
		w->session->waiters--;
		rpc_send_result(w->id, session_snapshot(w->session, w->bound));
		json_object_put(w->id);
		free(w);
	}
}

/* ---- parameters ---- */

static int param_session(json_object *params, struct session **ret, struct rpc_error *err)
{
	const char *sid;
	if (rpc_param_string(params, "session_id", true, &sid, NULL, err) < 0)
		return -1;
	struct session *s = session_find(sid);
	if (!s)
		return rpc_fail(err, "NOT_FOUND",
		                "no session '%.*s' in this sandbox; sandbox_get lists this sandbox's "
		                "bash sessions (old ended ones are forgotten, their logs stay in %s)",
		                BASH_ID_MAX, sid, paths_log_dir());
	*ret = s;
	return 0;
}

static int param_output(json_object *params, struct output_bound *ret, struct rpc_error *err)
{
	int64_t v;
	if (rpc_param_int(params, "max_output_bytes", BASH_DEFAULT_OUTPUT, 0, BASH_MAX_OUTPUT, true, &v, err) < 0 ||
	    rpc_param_bool(params, "tail", false, &ret->tail, err) < 0)
		return -1;
	ret->max = v < BASH_MIN_OUTPUT ? BASH_MIN_OUTPUT : (size_t)v;
	return 0;
}

static int param_yield(json_object *params, int64_t *ret, struct rpc_error *err)
{
	return rpc_param_int(params, "yield_time_ms", BASH_DEFAULT_YIELD_MS, 0, BASH_MAX_YIELD_MS, true, ret, err) < 0
	           ? -1
	           : 0;
}

static int check_session_id(const char *id, size_t len, struct rpc_error *err)
{
	bool ok = len > 0 && len <= BASH_ID_MAX && id[0] != '.' && strlen(id) == len;
	for (size_t i = 0; ok && i < len; i++) {
		char c = id[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		     c == '-' || c == '.';
	}
	if (!ok)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "session_id must be 1 to %d characters from A-Z a-z 0-9 _ - . "
		                "(not starting with '.'), like 'bash_1f2e'",
		                BASH_ID_MAX);
	return 0;
}

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
	if (asprintf(&s->log_path, "%s/%s.log", paths_log_dir(), s->id) < 0) {
		s->log_path = NULL;
		return rpc_fail(err, "INTERNAL", "out of memory");
	}
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
	if (cmd_len > BASH_COMMAND_MAX)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "command is %zu bytes; the limit is %d. Write a script with the "
		                "write tool and run that with bash instead",
		                cmd_len, BASH_COMMAND_MAX);
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
	if (nwaiters >= BASH_MAX_WAITERS)
		return rpc_fail(err, "LIMIT", "%d requests are already waiting; retry later", BASH_MAX_WAITERS);
	char *cwd;
	if (start_check_cwd(params, &cwd, err) < 0)
		return -1;

	struct session *s = calloc(1, sizeof *s);
	if (!s || !(s->command = strdup(command))) {
		free(s);
		free(cwd);
		return rpc_fail(err, "INTERNAL", "out of memory");
	}
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
	s->seq = ++seq_counter;
	s->started_at_ms = wall_ms();
	s->timeout_at = timeout_ms ? now + timeout_ms : 0;
	if (sessions_add(s, err) < 0 || waiter_add(WAIT_START, id, s, now + yield_ms, bound, err) < 0) {
		/* The shell runs already: keep it reachable if it was added. */
		if (!session_find(s->id)) {
			if (procs_scan())
				session_signal(s, &procs, SIGKILL);
			session_free(s);
		}
		return -1;
	}
	session_persist(s);
	hlog_debug("session '%s' started: pid %d (keeper %d)%s", s->id, (int)s->pid, (int)s->keeper,
	           tty              ? ", on a pseudo-terminal"
	           : s->interactive ? ", interactive"
	                            : "");
	return 1;
}

/* ---- bash.poll, bash.stop, bash.list ---- */

int bash_rpc_poll(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)ret_result;
	struct session *s;
	int64_t yield_ms;
	struct output_bound bound;
	if (param_session(params, &s, err) < 0 || param_yield(params, &yield_ms, err) < 0 ||
	    param_output(params, &bound, err) < 0)
		return -1;
	if (nwaiters >= BASH_MAX_WAITERS)
		return rpc_fail(err, "LIMIT", "%d requests are already waiting; retry later", BASH_MAX_WAITERS);
	return waiter_add(WAIT_POLL, id, s, bash_clock_ms() + yield_ms, bound, err) < 0 ? -1 : 1;
}

int bash_rpc_input(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	struct session *s;
	const char *data;
	size_t len;
	bool close_stdin;
	if (param_session(params, &s, err) < 0)
		return -1;
	int r = rpc_param_string(params, "data", false, &data, &len, err);
	if (r < 0 || rpc_param_bool(params, "close", false, &close_stdin, err) < 0)
		return -1;
	if (r == 0) {
		data = "";
		len = 0;
	}
	if (!s->interactive)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "session '%s' was not started with interactive: true; its stdin is at "
		                "end-of-file. Start a new session with interactive: true to send it input",
		                s->id);
	if (s->ended)
		return rpc_fail(err, "CONFLICT",
		                "session '%s' has ended (%s), so its stdin is closed; get the rest of its "
		                "output with bash_poll",
		                s->id, status_name(s->status));
	if (!stdin_open(s))
		return rpc_fail(err, "CONFLICT",
		                "the stdin of session '%s' is closed (closed on request, or the program "
		                "stopped reading it); the session can no longer take input",
		                s->id);
	if (len > BASH_INPUT_MAX - s->inlen)
		return rpc_fail(err, "LIMIT",
		                "session '%s' has %zu bytes of input it has not read yet and at most %d "
		                "may wait; nothing was sent. Poll its output and send the rest later",
		                s->id, s->inlen, BASH_INPUT_MAX);
	input_flush(s);
	size_t written = 0;
	if (s->in_fd >= 0 && s->inlen == 0)
		written = input_write(s, data, len);
	if (s->in_fd >= 0 && input_queue(s, data + written, len - written) < 0)
		return rpc_fail(err, "INTERNAL", "out of memory queueing input for session '%s'", s->id);
	if (len > 0)
		s->in_mid_line = data[len - 1] != '\n';
	if (close_stdin && s->in_fd >= 0) {
		/* A pty has no end of file of its own: the line discipline turns
		 * VEOF at the start of a line into one (a second one ends a
		 * partial line first). */
		const char eof[2] = {TTY_EOF, TTY_EOF};
		if (s->tty && input_queue(s, eof, s->in_mid_line ? 2 : 1) < 0)
			return rpc_fail(err, "INTERNAL", "out of memory queueing input for session '%s'", s->id);
		s->in_close = true;
		input_flush(s);
	}
	json_object *res = json_object_new_object();
	json_object_object_add(res, "session_id", json_object_new_string(s->id));
	json_object_object_add(res, "bytes_written", json_object_new_int64((int64_t)written));
	json_object_object_add(res, "pending_input_bytes", json_object_new_int64((int64_t)s->inlen));
	json_object_object_add(res, "stdin_open", json_object_new_boolean(stdin_open(s)));
	*ret_result = res;
	return 0;
}

int bash_rpc_stop(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)ret_result;
	struct session *s;
	struct output_bound bound;
	if (param_session(params, &s, err) < 0 || param_output(params, &bound, err) < 0)
		return -1;
	if (nwaiters >= BASH_MAX_WAITERS)
		return rpc_fail(err, "LIMIT", "%d requests are already waiting; retry later", BASH_MAX_WAITERS);
	int64_t now = bash_clock_ms();
	/* After the shell exited, background jobs and whatever else the
	 * session started may be left (holding the output pipe or not): stop
	 * them too, but keep the shell's real status. */
	if (session_has_processes(s))
		kill_begin(s, KILL_STOP, now);
	return waiter_add(WAIT_STOP, id, s, now + PROTO_KILL_GRACE_MS + STOP_SLACK_MS, bound, err) < 0 ? -1 : 1;
}

int bash_rpc_list(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	(void)params;
	(void)err;
	json_object *list = json_object_new_array();
	size_t recent_from = nsessions > BASH_LIST_RECENT ? nsessions - BASH_LIST_RECENT : 0;
	size_t hidden = 0;
	for (size_t i = 0; i < nsessions; i++) {
		struct session *s = sessions[i];
		if (s->hidden) {
			hidden++;
			continue;
		}
		if (i < recent_from && s->ended)
			continue;
		json_object *o = json_object_new_object();
		json_object_object_add(o, "session_id", json_object_new_string(s->id));
		size_t clen = strlen(s->command);
		if (clen > LIST_COMMAND_MAX) {
			size_t cut = LIST_COMMAND_MAX;
			cut -= utf8_incomplete_suffix((const unsigned char *)s->command, cut);
			char *c = NULL;
			if (asprintf(&c, "%.*s…", (int)cut, s->command) >= 0) {
				json_object_object_add(o, "command", json_object_new_string(c));
				free(c);
			}
		} else {
			json_object_object_add(o, "command", json_object_new_string(s->command));
		}
		json_object_object_add(o, "status", json_object_new_string(status_name(s->status)));
		if (s->ended && s->status != SESSION_LOST)
			json_object_object_add(o, "exit_code", json_object_new_int(s->exit_code));
		if (s->reason)
			json_object_object_add(o, "reason", json_object_new_string(s->reason));
		if (s->ended && s->term_sig) {
			char name[32];
			json_object_object_add(o, "signal",
			                       json_object_new_string(signal_name(s->term_sig, name, sizeof name)));
		}
		json_object_object_add(o, "interactive", json_object_new_boolean(s->interactive));
		json_object_object_add(o, "tty", json_object_new_boolean(s->tty));
		json_object_object_add(o, "stdin_open", json_object_new_boolean(stdin_open(s)));
		json_object_object_add(o, "started_at_ms", json_object_new_int64(s->started_at_ms));
		if (s->ended && s->status != SESSION_LOST)
			json_object_object_add(o, "ended_at_ms", json_object_new_int64(s->ended_at_ms));
		json_object_object_add(o, "pid", json_object_new_int(s->pid));
		json_object_object_add(o, "log_path", json_object_new_string(s->log_path));
		json_object_object_add(o, "total_output_bytes", json_object_new_int64((int64_t)s->total));
		json_object_object_add(o, "has_more_output", json_object_new_boolean(session_deliverable(s) > 0));
		json_object_array_add(list, o);
	}
	size_t listed = json_object_array_length(list);
	json_object *r = json_object_new_object();
	json_object_object_add(r, "sessions", list);
	json_object_object_add(r, "total", json_object_new_int64((int64_t)(nsessions - hidden)));
	json_object_object_add(r, "truncated", json_object_new_boolean(listed < nsessions - hidden));
	*ret_result = r;
	return 0;
}

/* ---- acknowledgements (bash.ack, bash.nack, hello attach_id) ---- */

/* Reads {"session_id","start","end"} of an acknowledgement; false when
 * malformed or the session is unknown (then it is ignored). */
static bool ack_params(json_object *params, struct session **ret, uint64_t *ret_start, uint64_t *ret_end)
{
	struct rpc_error err;
	const char *sid;
	int64_t start, end;
	if (rpc_param_string(params, "session_id", true, &sid, NULL, &err) < 0 ||
	    rpc_param_int(params, "start", 0, 0, INT64_MAX, false, &start, &err) < 0 ||
	    rpc_param_int(params, "end", 0, 0, INT64_MAX, false, &end, &err) < 0 || end < start) {
		hlog_debug("ignoring a malformed acknowledgement");
		return false;
	}
	*ret = session_find(sid);
	if (!*ret)
		hlog_debug("ignoring an acknowledgement for unknown session '%.*s'", BASH_ID_MAX, sid);
	*ret_start = (uint64_t)start;
	*ret_end = (uint64_t)end;
	return *ret != NULL;
}

void bash_ack(json_object *params)
{
	struct session *s;
	uint64_t start, end;
	if (!ack_params(params, &s, &start, &end))
		return;
	/* Only a range that continues the acknowledged prefix moves it: after a
	 * reply that was not acknowledged, later ones are not either, so the
	 * gap is delivered again rather than lost. */
	if (start > s->acked || end <= s->acked || end > s->delivered)
		return;
	s->acked = end;
	session_persist(s);
}

void bash_nack(json_object *params)
{
	struct session *s;
	uint64_t start, end;
	if (!ack_params(params, &s, &start, &end))
		return;
	uint64_t to = start > s->acked ? start : s->acked;
	if (to < s->delivered) {
		hlog_debug("session '%s': %llu bytes sent were not received; delivering them again", s->id,
		           (unsigned long long)(s->delivered - to));
		s->delivered = to;
	}
}

size_t bash_attach_reset(void)
{
	size_t rewound = 0;
	/* Waiting replies belong to the previous attachment: their ids mean
	 * nothing (or something else) to the new one. Their sessions go on. */
	while (waiters) {
		struct waiter *w = waiters;
		waiters = w->next;
		w->session->waiters--;
		json_object_put(w->id);
		free(w);
	}
	nwaiters = 0;
	for (size_t i = 0; i < nsessions; i++) {
		struct session *s = sessions[i];
		if (s->delivered > s->acked) {
			s->delivered = s->acked;
			rewound++;
		}
	}
	return rewound;
}

/* ---- events ---- */

static void keeper_drain(struct session *s);

size_t bash_pollfds(struct pollfd *fds, size_t cap)
{
	npolled = 0;
	for (size_t i = 0; i < nsessions && npolled < cap; i++) {
		struct session *s = sessions[i];
		if (s->pipe_fd >= 0 && !s->out_held) {
			fds[npolled] = (struct pollfd){.fd = s->pipe_fd, .events = POLLIN};
			polled[npolled++] = s;
		}
		if (s->in_fd >= 0 && s->inlen > 0 && npolled < cap) {
			fds[npolled] = (struct pollfd){.fd = s->in_fd, .events = POLLOUT};
			polled[npolled++] = s;
		}
		if (s->keeper_fd >= 0 && npolled < cap) {
			fds[npolled] = (struct pollfd){.fd = s->keeper_fd, .events = POLLIN};
			polled[npolled++] = s;
		}
	}
	return npolled;
}

void bash_pollfds_handle(const struct pollfd *fds, size_t n)
{
	/* No descriptor is opened in between, so a number still names the
	 * stream it was polled for (or was closed). */
	for (size_t i = 0; i < n && i < npolled; i++) {
		if (!fds[i].revents)
			continue;
		if (polled[i]->pipe_fd == fds[i].fd && fds[i].events == POLLIN)
			session_read(polled[i], READ_BUDGET);
		else if (polled[i]->in_fd == fds[i].fd && fds[i].events == POLLOUT)
			input_flush(polled[i]);
		else if (polled[i]->keeper_fd == fds[i].fd)
			keeper_drain(polled[i]);
	}
	npolled = 0;
}

/* The shell's end: its wait status as the keeper (or, after the keeper's
 * death, the helper) reaped it. */
static void session_end(struct session *s, int st)
{
	s->ended = true;
	s->ended_at_ms = wall_ms();
	s->ended_seq = ++seq_counter;
	s->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	s->term_sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
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
	if (asprintf(&s->reason,
	             "the session's keeper process (pid %d, the shell's parent) was killed by %s%s; the helper "
	             "stopped every process of the session it could still find",
	             (int)keeper, name, status_lost ? " before it reported how the shell ended" : "") < 0)
		s->reason = NULL;
	if (status_lost) {
		session_end(s, 0);
		s->status = SESSION_LOST;
		session_persist(s);
	}
	kill_begin(s, KILL_STOP, bash_clock_ms());
}

static struct session *session_by_keeper(pid_t pid)
{
	for (size_t i = 0; i < nsessions; i++)
		if (sessions[i]->keeper == pid)
			return sessions[i];
	return NULL;
}

/* A running session whose shell has this pid and whose keeper is gone:
 * only then is the shell our child. (A live keeper means the pid was
 * reused: the shell ended and its report is still in the pipe.) */
static struct session *session_by_orphaned_shell(pid_t pid)
{
	for (size_t i = 0; i < nsessions; i++) {
		struct session *s = sessions[i];
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
	int st;
	pid_t pid;
	while ((pid = waitpid(-1, &st, WNOHANG | WUNTRACED)) > 0) {
		struct session *s = session_by_keeper(pid);
		if (WIFSTOPPED(st)) {
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
			keeper_reaped(s, st);
			continue;
		}
		s = session_by_orphaned_shell(pid);
		if (s) {
			session_end(s, st);
			continue;
		}
		hlog_debug("reaped process %d", (int)pid);
	}
	/* Sessions that lost their keeper: a reap may have been the last of
	 * them (bash.stop waits for that). */
	bool scanned = false;
	for (size_t i = 0; i < nsessions; i++) {
		struct session *s = sessions[i];
		if (!s->keeper_lost || !s->leftovers)
			continue;
		if (!scanned && !procs_scan())
			return;
		scanned = true;
		session_signal(s, &procs, 0);
	}
}

int64_t bash_next_deadline(void)
{
	int64_t best = -1;
#define CONSIDER(t)                                                                                                    \
	do {                                                                                                           \
		if ((t) > 0 && (best < 0 || (t) < best))                                                               \
			best = (t);                                                                                    \
	} while (0)
	for (struct waiter *w = waiters; w; w = w->next)
		CONSIDER(w->deadline);
	for (size_t i = 0; i < nsessions; i++) {
		struct session *s = sessions[i];
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
	int64_t now = bash_clock_ms();
	bool scanned = false;
	struct proctree *table = NULL;
	for (size_t i = 0; i < nsessions; i++) {
		struct session *s = sessions[i];
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
				table = procs_scan() ? &procs : NULL;
			}
			kill_round(s, table, now);
		}
	}
	waiters_answer(false);
	sessions_prune();
}

static bool any_session_has_processes(void)
{
	for (size_t i = 0; i < nsessions; i++)
		if (session_has_processes(sessions[i]))
			return true;
	return false;
}

/* Reap and read reports until nothing of any session is left or the
 * deadline passes; with kill_every_ms > 0, a SIGKILL round to every session
 * that often. SIGCHLD arrives on sigfd. */
static void shutdown_wait(int sigfd, int64_t deadline, int kill_every_ms)
{
	for (;;) {
		bash_reap();
		for (size_t i = 0; i < nsessions; i++)
			keeper_drain(sessions[i]);
		if (!any_session_has_processes())
			return;
		int64_t now = bash_clock_ms(), left = deadline - now;
		if (left <= 0)
			return;
		if (kill_every_ms > 0) {
			bool scanned = procs_scan();
			for (size_t i = 0; i < nsessions; i++)
				if (session_has_processes(sessions[i]))
					kill_round(sessions[i], scanned ? &procs : NULL, now);
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
	int64_t now = bash_clock_ms();
	spare_drop_all(true); /* they exit at end of file; reaped below */
	for (size_t i = 0; i < nsessions; i++)
		if (!sessions[i]->ended)
			sessions[i]->interrupted = true;
	/* One scan for all sessions: a shutdown may stop hundreds. */
	bool scanned = procs_scan();
	for (size_t i = 0; i < nsessions; i++)
		if (session_has_processes(sessions[i]))
			kill_begin_in(sessions[i], KILL_STOP, now, scanned ? &procs : NULL);
	shutdown_wait(sigfd, now + PROTO_KILL_GRACE_MS, 0);
	shutdown_wait(sigfd, bash_clock_ms() + 500, 20);
	waiters_answer(true);
}

/* ---- sessions of an earlier helper (sessmeta.h) ---- */

/* A session the helper before this one recorded: ended ones keep their
 * status, running ones are lost. Never signalled (it has no keeper): its
 * pid means nothing to this helper. */
static struct session *session_restored(const struct sessmeta *m, const char *boot_text)
{
	struct session *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	snprintf(s->id, sizeof s->id, "%s", m->id);
	s->pipe_fd = s->log_fd = s->in_fd = s->keeper_fd = -1;
	s->command = strdup(m->command ? m->command : "");
	if (!s->command || asprintf(&s->log_path, "%s/%s.log", paths_log_dir(), m->id) < 0) {
		s->log_path = NULL;
		session_free(s);
		return NULL;
	}
	s->log_fd = open(s->log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;
	if (s->log_fd >= 0 && fstat(s->log_fd, &st) == 0 && S_ISREG(st.st_mode))
		s->total = (uint64_t)st.st_size;
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
		if (asprintf(&s->reason,
		             "the sandbox restarted at %s; the command was interrupted (its output up to then is in "
		             "%s)",
		             boot_text, s->log_path) < 0) {
			s->reason = NULL;
			session_free(s);
			return NULL;
		}
	}
	s->seq = ++seq_counter;
	s->ended_seq = ++seq_counter;
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
	struct rpc_error err;
	for (size_t i = 0; i < n; i++) {
		struct session *s = session_find(metas[i].id) ? NULL : session_restored(&metas[i], boot_text);
		if (s && sessions_add(s, &err) < 0) {
			session_free(s);
			s = NULL;
		}
		if (s) {
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
	while (waiters) {
		struct waiter *w = waiters;
		waiters = w->next;
		json_object_put(w->id);
		free(w);
	}
	nwaiters = 0;
	for (size_t i = 0; i < nsessions; i++)
		session_free(sessions[i]);
	free(sessions);
	free(polled);
	sessions = polled = NULL;
	nsessions = sessions_cap = npolled = 0;
	proctree_free(&procs);
	spare_drop_all(false);
}
