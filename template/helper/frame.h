/* frame.h: newline framing of the helper's stdin and stdout (proto.h: one
 * JSON object per line, at most PROTO_MAX_FRAME bytes). */
#ifndef CHAT2SBX_HELPER_FRAME_H
#define CHAT2SBX_HELPER_FRAME_H

#include <stdbool.h>
#include <stddef.h>

/* Called for one complete line (without its newline or a trailing '\r');
 * line is writable and valid only during the call. */
typedef void (*frame_line_fn)(char *line, size_t len, void *data);

struct frame_reader {
	char *buf;
	size_t len, cap, scanned;
	bool skipping; /* inside an over-long line: drop bytes up to its newline */
};

void frame_reader_init(struct frame_reader *r);
void frame_reader_free(struct frame_reader *r);

/* One read(2) from fd, then on_line for every complete line. A line longer
 * than PROTO_MAX_FRAME is not buffered: on_overlong gets its first
 * PROTO_MAX_FRAME bytes once (to find its id) and the rest is dropped up to
 * the newline. Returns 1 after a read (or EAGAIN/EINTR), 0 at end of file,
 * -1 on a read error (errno set). Memory stays below about
 * PROTO_MAX_FRAME + 64 KiB and shrinks back after a large line. */
int frame_reader_read(struct frame_reader *r, int fd, frame_line_fn on_line, frame_line_fn on_overlong, void *data);

/* Queue of reply lines for a non-blocking fd. */
struct frame_writer {
	int fd;
	char *buf;
	size_t head, len, cap;
	bool broken; /* the reader went away: replies are dropped */
};

void frame_writer_init(struct frame_writer *w, int fd);
void frame_writer_free(struct frame_writer *w);
/* Append line (borrowed, n bytes) and a newline; the queue grows as needed
 * (allocation aborts on failure, xalloc.h). A broken stream drops the line
 * (the failing write was logged by frame_writer_flush). */
void frame_writer_put(struct frame_writer *w, const char *line, size_t n);
/* Write as much as the fd takes without blocking. Returns the bytes still
 * queued. EPIPE or another write error marks the writer broken. */
size_t frame_writer_flush(struct frame_writer *w);
/* Bytes queued and not yet written. */
size_t frame_writer_pending(const struct frame_writer *w);

#endif
