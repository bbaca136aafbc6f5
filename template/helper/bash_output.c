/* bash_output.c: a session's output: pipe → log file (bounded, an
 * unfinished character held back) → snapshot replies by a delivery cursor
 * (proto.h, Snapshot, "Head and tail"). Reads the log, never the pipe's
 * writer; memory stays bounded whatever a command prints. */

#include "bash_internal.h"

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
void session_read(struct session *s, size_t budget)
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
uint64_t session_deliverable(const struct session *s)
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
const char *signal_name(int sig, char *buf, size_t cap)
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
 * carriage-return progress collapsed, valid UTF-8. The caller frees it. */
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

/* Fills *t from the last tail_n log bytes; -1 (t untouched) when the log is
 * shorter than the session counted (cut from inside the sandbox). */
static int tail_read(const struct session *s, size_t tail_n, bool whole, struct tail_part *t)
{
	unsigned char *buf = xmalloc(tail_n);
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
	return 0;
}

/* A snapshot reply (proto.h) that consumes up to bound.max bytes of
 * undelivered output, cut at a character boundary; when more is left, the
 * head and the tail (the session ended, or bound.tail) or the head and the
 * newest lines (still running), as proto.h, Snapshot, "Head and tail". */
json_object *session_snapshot(struct session *s, struct output_bound bound)
{
	uint64_t avail = s->total - s->delivered;
	uint64_t start = s->delivered;
	bool whole = avail > bound.max && (s->ended || bound.tail);
	size_t tail_n = avail > bound.max ? headtail_tail_budget(bound.max, whole) : 0;
	size_t head_max = bound.max - tail_n;
	size_t n = avail < head_max ? (size_t)avail : head_max;
	unsigned char *buf = xmalloc(n);
	size_t got = log_read(s, s->delivered, buf, n);
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
	char *out = output_text(buf, take, &out_len);
	free(buf);
	s->delivered += take;

	struct tail_part t = {0};
	if (tail_n > 0 && tail_read(s, tail_n, whole, &t) == 0 && whole) {
		char *marker = headtail_marker(s->delivered, t.start, s->total, s->log_path,
		                               take > 0 && out_len > 0 && out[out_len - 1] != '\n');
		size_t marker_len = strlen(marker);
		char *joined = xmalloc(out_len + marker_len + t.len + 1);
		memcpy(joined, out, out_len);
		memcpy(joined + out_len, marker, marker_len);
		memcpy(joined + out_len + marker_len, t.text, t.len + 1);
		free(marker);
		free(out);
		out = joined;
		out_len += marker_len + t.len;
	}
	uint64_t omitted_start = s->delivered;
	if (whole && t.text)
		s->delivered = t.start + t.raw;
	if (s->delivered > start)
		session_persist(s);

	json_object *r = xjson_object();
	xjson_add(r, "session_id", xjson_string(s->id));
	xjson_add(r, "status", xjson_string(status_name(s->status)));
	if (s->ended && s->status != SESSION_LOST)
		xjson_add(r, "exit_code", xjson_int64(s->exit_code));
	if (s->reason)
		xjson_add(r, "reason", xjson_string(s->reason));
	if (s->ended && s->term_sig) {
		char name[32];
		xjson_add(r, "signal", xjson_string(signal_name(s->term_sig, name, sizeof name)));
	}
	if (s->interactive)
		xjson_add(r, "stdin_open", xjson_bool(stdin_open(s)));
	xjson_add(r, "output", xjson_string_len(out, out_len));
	xjson_add(r, "output_bytes", xjson_int64((int64_t)(s->delivered - start)));
	if (whole && t.text) {
		xjson_add(r, "omitted_start", xjson_int64((int64_t)omitted_start));
		xjson_add(r, "omitted_end", xjson_int64((int64_t)t.start));
		xjson_add(r, "omitted_output_bytes", xjson_int64((int64_t)(t.start - omitted_start)));
	} else if (t.text && t.start >= s->delivered) {
		xjson_add(r, "latest_output", xjson_string_len(t.text, t.len));
		xjson_add(r, "latest_output_start", xjson_int64((int64_t)t.start));
	}
	free(t.text);
	xjson_add(r, "output_start", xjson_int64((int64_t)start));
	xjson_add(r, "output_end", xjson_int64((int64_t)s->delivered));
	xjson_add(r, "has_more_output", xjson_bool(session_deliverable(s) > 0));
	xjson_add(r, "total_output_bytes", xjson_int64((int64_t)s->total));
	if (s->dropped)
		xjson_add(r, "dropped_output_bytes", xjson_int64((int64_t)s->dropped));
	xjson_add(r, "log_path", xjson_string(s->log_path));
	xjson_add(r, "pid", xjson_int64(s->pid));
	free(out);
	return r;
}
