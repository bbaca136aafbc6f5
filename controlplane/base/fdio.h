/* fdio.h: socket I/O bounded by a deadline, one poll-based loop for every
 * caller (the engine's attach handshake, the helper channel's writes).
 * Deadlines are absolute, in milliseconds of clock_monotonic_ms (clock.h). */
#ifndef CP_FDIO_H
#define CP_FDIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Waits with poll(2) for events (POLLIN, POLLOUT) on fd until deadline_ms,
 * retrying EINTR. Returns 1 when ready, 0 when the deadline passed, -1 on a
 * poll error (errno). Blocks at most until the deadline. */
int fdio_wait(int fd, short events, int64_t deadline_ms);

/* Writes all len bytes of buf to the socket fd before deadline_ms: send(2)
 * with MSG_NOSIGNAL (a gone peer is EPIPE, not a process-wide SIGPIPE) and
 * MSG_DONTWAIT, so a blocking fd cannot stall past the deadline; EINTR is
 * retried and EAGAIN waits for POLLOUT. Returns 0, or -1 with errno
 * (ETIMEDOUT when the peer stopped reading in time). *sent, when not NULL,
 * grows by every byte put on the wire, also on failure, so callers can tell
 * a refused write from one cut mid-message. */
int fdio_send_all(int fd, const void *buf, size_t len, int64_t deadline_ms, size_t *sent);

/* Reads up to len bytes from the socket fd once it is readable, before
 * deadline_ms (recv(2) with MSG_DONTWAIT; EINTR retried). Returns the bytes
 * read (> 0), 0 at end of stream, or -1 with errno (ETIMEDOUT when nothing
 * came in time). Reads at most once. */
ssize_t fdio_recv_some(int fd, void *buf, size_t len, int64_t deadline_ms);

#endif
