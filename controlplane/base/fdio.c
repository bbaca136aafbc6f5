/* fdio.c: deadline-bounded socket send and receive (fdio.h). Owns nothing;
 * never logs. */
#include "fdio.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "clock.h"

int fdio_wait(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		int64_t left = deadline_ms - clock_monotonic_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, left > 1000000 ? 1000000 : (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

int fdio_send_all(int fd, const void *buf, size_t len, int64_t deadline_ms, size_t *sent)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			if (sent)
				*sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -1;
		int r = fdio_wait(fd, POLLOUT, deadline_ms);
		if (r == 0)
			errno = ETIMEDOUT;
		if (r <= 0)
			return -1;
	}
	return 0;
}

ssize_t fdio_recv_some(int fd, void *buf, size_t len, int64_t deadline_ms)
{
	for (;;) {
		ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
		if (n >= 0)
			return n;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -1;
		int r = fdio_wait(fd, POLLIN, deadline_ms);
		if (r == 0)
			errno = ETIMEDOUT;
		if (r <= 0)
			return -1;
	}
}
