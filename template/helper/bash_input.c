/* bash_input.c: a session's stdin: bash.input → a bounded pending buffer
 * → the program's stdin, written without blocking, closed on request or
 * when the program stops reading. */

#include "bash_internal.h"

/* ---- input: bash.input → pending buffer → the program's stdin ---- */

bool stdin_open(const struct session *s)
{
	return s->in_fd >= 0 && !s->in_close;
}

/* Close the program's stdin for good, dropping input it has not read. */
void input_close(struct session *s)
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
size_t input_write(struct session *s, const char *p, size_t n)
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
void input_flush(struct session *s)
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

void input_queue(struct session *s, const char *p, size_t n)
{
	if (n == 0)
		return;
	if (s->inlen + n > s->incap) {
		size_t cap = s->incap ? s->incap : 4096;
		while (cap < s->inlen + n)
			cap *= 2;
		s->inbuf = xrealloc(s->inbuf, cap);
		s->incap = cap;
	}
	memcpy(s->inbuf + s->inlen, p, n);
	s->inlen += n;
}
