/* direct.c: connecting the direct channel (proto.h, channel.connect). The
 * loop (loop.c) owns the descriptor once connected and moves its lines.
 * The socket is reached through the channel directory the loop opened at
 * start, never by its path: root in the sandbox may rename the directory
 * above the mount and put its own listener where the path leads. */
#include "direct.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"

static int token_ok(const char *token, size_t len)
{
	if (len != PROTO_CHANNEL_TOKEN_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((token[i] >= '0' && token[i] <= '9') || (token[i] >= 'a' && token[i] <= 'f')))
			return 0;
	return 1;
}

int direct_connect(int dirfd, const char *token, size_t len, struct rpc_error *err)
{
	if (!token_ok(token, len))
		return rpc_fail(err, "INVALID_ARGUMENT", "token must be %d lowercase hex digits",
		                PROTO_CHANNEL_TOKEN_LEN);
	if (dirfd < 0)
		return rpc_fail(err, "INTERNAL",
		                "this sandbox has no direct channel directory (" PROTO_CHANNEL_DIR
		                " was not there when the helper started)");
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	/* The directory itself, whatever its path leads to now. */
	snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/" PROTO_CHANNEL_SOCKET_NAME, dirfd);
	const char *path = PROTO_CHANNEL_SOCKET;
	/* Non-blocking from the start: a listener whose backlog others in the
	 * sandbox filled answers EAGAIN at once instead of stalling the loop. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return rpc_fail(err, "INTERNAL", "make a socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		int e = errno;
		close(fd);
		return rpc_fail(err, "INTERNAL", "connect to %s: %s", path, strerror(e));
	}
	char line[PROTO_CHANNEL_TOKEN_LEN + 1];
	memcpy(line, token, len);
	line[len] = '\n';
	/* A fresh stream socket takes 33 bytes at once. */
	ssize_t n;
	do
		n = send(fd, line, len + 1, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)(len + 1)) {
		int e = n < 0 ? errno : EAGAIN;
		close(fd);
		return rpc_fail(err, "INTERNAL", "write the token to %s: %s", path, strerror(e));
	}
	return fd;
}
