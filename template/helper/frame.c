/* frame.c: line framing for the helper's stdin and stdout. The reader keeps
 * at most one frame (PROTO_MAX_FRAME) in memory and skips longer lines; the
 * writer queues replies for a non-blocking stdout so a slow reader on the
 * host never stalls the event loop. No JSON here. */
#include "frame.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hlog.h"
#include "proto.h"

#define READ_CHUNK (64 * 1024)
#define SMALL_CAP (256 * 1024)

void frame_reader_init(struct frame_reader *r)
{
	memset(r, 0, sizeof *r);
}

void frame_reader_free(struct frame_reader *r)
{
	free(r->buf);
	memset(r, 0, sizeof *r);
}

static void reserve(struct frame_reader *r, size_t want)
{
	if (r->cap - r->len >= want)
		return;
	size_t cap = r->cap ? r->cap : SMALL_CAP;
	while (cap - r->len < want)
		cap *= 2;
	r->buf = xrealloc(r->buf, cap);
	r->cap = cap;
}

/* Hand out every complete line in buf[0..len) and keep the partial tail. */
static void split_lines(struct frame_reader *r, frame_line_fn on_line, frame_line_fn on_overlong, void *data)
{
	size_t start = 0;
	char *nl;
	while ((nl = memchr(r->buf + r->scanned, '\n', r->len - r->scanned))) {
		size_t end = (size_t)(nl - r->buf);
		r->scanned = end + 1;
		if (r->skipping) {
			r->skipping = false;
		} else {
			size_t n = end - start;
			if (n > 0 && r->buf[start + n - 1] == '\r')
				n--;
			r->buf[start + n] = '\0';
			if (n > PROTO_MAX_FRAME)
				on_overlong(r->buf + start, n, data);
			else if (n > 0)
				on_line(r->buf + start, n, data);
		}
		start = end + 1;
	}
	if (r->skipping) {
		/* Still inside an over-long line: nothing before a newline matters. */
		r->len = 0;
		r->scanned = 0;
		return;
	}
	memmove(r->buf, r->buf + start, r->len - start);
	r->len -= start;
	r->scanned = r->len;
}

int frame_reader_read(struct frame_reader *r, int fd, frame_line_fn on_line, frame_line_fn on_overlong, void *data)
{
	reserve(r, READ_CHUNK + 1);
	ssize_t n = read(fd, r->buf + r->len, r->cap - r->len - 1);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : -1;
	if (n == 0)
		return 0;
	r->len += (size_t)n;
	split_lines(r, on_line, on_overlong, data);
	if (r->len > PROTO_MAX_FRAME) {
		r->buf[r->len] = '\0';
		on_overlong(r->buf, r->len, data);
		r->skipping = true;
		r->len = r->scanned = 0;
	}
	if (r->cap > SMALL_CAP && r->len < SMALL_CAP / 2) {
		r->buf = xrealloc(r->buf, SMALL_CAP);
		r->cap = SMALL_CAP;
	}
	return 1;
}

void frame_writer_init(struct frame_writer *w, int fd)
{
	memset(w, 0, sizeof *w);
	w->fd = fd;
}

void frame_writer_free(struct frame_writer *w)
{
	free(w->buf);
	memset(w, 0, sizeof *w);
	w->fd = -1;
}

void frame_writer_put(struct frame_writer *w, const char *line, size_t n)
{
	if (w->broken)
		return;
	if (w->head > 0 && (w->head >= w->len || w->cap - w->len < n + 1)) {
		memmove(w->buf, w->buf + w->head, w->len - w->head);
		w->len -= w->head;
		w->head = 0;
	}
	if (w->cap - w->len < n + 1) {
		size_t cap = w->cap ? w->cap : SMALL_CAP;
		while (cap - w->len < n + 1)
			cap *= 2;
		w->buf = xrealloc(w->buf, cap);
		w->cap = cap;
	}
	memcpy(w->buf + w->len, line, n);
	w->buf[w->len + n] = '\n';
	w->len += n + 1;
}

size_t frame_writer_flush(struct frame_writer *w)
{
	while (!w->broken && w->head < w->len) {
		ssize_t n = write(w->fd, w->buf + w->head, w->len - w->head);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			hlog_warn("writing replies failed (%s); replies are dropped until restart", strerror(errno));
			w->broken = true;
			break;
		}
		w->head += (size_t)n;
	}
	if (w->broken || w->head == w->len) {
		w->head = w->len = 0;
		if (w->cap > SMALL_CAP) {
			free(w->buf);
			w->buf = NULL;
			w->cap = 0;
		}
	}
	return w->len - w->head;
}

size_t frame_writer_pending(const struct frame_writer *w)
{
	return w->len - w->head;
}
