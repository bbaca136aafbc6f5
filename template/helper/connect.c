/* connect.c: the connect mode (connect.h): one TCP connection inside the
 * sandbox relayed over this process's stdin and stdout. */
#include "connect.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hlog.h"

/* One direction's bytes in flight. */
struct dir {
	char *buf;
	size_t len, off;
	int eof; /* the source ended */
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads into d when it is empty. 1 when something happened, 0 when not, -1 on error. */
static int fill(int fd, struct dir *d)
{
	if (d->len || d->eof)
		return 0;
	ssize_t n = read(fd, d->buf, CONNECT_BUF_BYTES);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (n == 0)
		d->eof = 1;
	d->len = (size_t)n;
	d->off = 0;
	return 1;
}

/* Writes what d holds. 1 when something moved, 0 when not, -1 on error. */
static int drain(int fd, struct dir *d)
{
	if (!d->len)
		return 0;
	ssize_t n = write(fd, d->buf + d->off, d->len - d->off);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	d->off += (size_t)n;
	if (d->off == d->len)
		d->len = d->off = 0;
	return 1;
}

int connect_relay(int in_fd, int out_fd, int sock)
{
	signal(SIGPIPE, SIG_IGN);
	static char up_buf[CONNECT_BUF_BYTES], down_buf[CONNECT_BUF_BYTES];
	struct dir up = {.buf = up_buf}, down = {.buf = down_buf};
	int shut = 0;
	long long linger_until = 0;
	for (;;) {
		if (down.eof && !down.len)
			return 0; /* the server finished and everything reached stdout */
		if (up.eof && !up.len && !shut) {
			shutdown(sock, SHUT_WR);
			shut = 1;
			linger_until = now_ms() + CONNECT_LINGER_MS;
		}
		struct pollfd p[3] = {{.fd = in_fd}, {.fd = sock}, {.fd = out_fd}};
		if (!up.len && !up.eof)
			p[0].events = POLLIN;
		if (!down.len && !down.eof)
			p[1].events |= POLLIN;
		if (up.len)
			p[1].events |= POLLOUT;
		if (down.len)
			p[2].events = POLLOUT;
		for (int i = 0; i < 3; i++)
			if (!p[i].events)
				p[i].fd = -1; /* a hang-up on a side not waited on must not spin the loop */
		int timeout = -1;
		if (shut) {
			long long left = linger_until - now_ms();
			if (left <= 0) {
				hlog_warn("connect: the server did not finish within %d s of the client's end",
				          CONNECT_LINGER_MS / 1000);
				return 1;
			}
			timeout = (int)left;
		}
		if (poll(p, 3, timeout) < 0 && errno != EINTR)
			return 1;
		if ((p[0].revents && fill(in_fd, &up) < 0) ||
		    (p[1].revents & (POLLIN | POLLHUP | POLLERR) && !down.len && !down.eof && fill(sock, &down) < 0) ||
		    (p[1].revents & POLLOUT && drain(sock, &up) < 0) || (p[2].revents && drain(out_fd, &down) < 0)) {
			hlog_debug("connect: relay ended: %s", strerror(errno));
			return 1;
		}
	}
}

int connect_main(int argc, char **argv)
{
	char *end = NULL;
	long port = argc == 2 ? strtol(argv[1], &end, 10) : 0;
	if (argc != 2 || !end || *end || port < 1 || port > 65535) {
		hlog_warn("usage: chat2sbx-helper connect PORT (1-65535)");
		return 2;
	}
	int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (sock < 0 || connect(sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		hlog_warn("connect: nothing answers on port %ld in the sandbox: %s", port, strerror(errno));
		return 1;
	}
	int r = connect_relay(STDIN_FILENO, STDOUT_FILENO, sock);
	close(sock);
	return r;
}
