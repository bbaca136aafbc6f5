/* direct.c: connecting the direct channel (proto.h, channel.connect). The
 * loop (loop.c) owns the descriptor once connected and moves its lines. */
#include "direct.h"

#include <errno.h>
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

int direct_connect(const char *path, const char *token, size_t len, struct rpc_error *err)
{
	if (!token_ok(token, len))
		return rpc_fail(err, "INVALID_ARGUMENT", "token must be %d lowercase hex digits",
		                PROTO_CHANNEL_TOKEN_LEN);
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof addr.sun_path)
		return rpc_fail(err, "INTERNAL", "the channel socket path '%.64s' is too long", path);
	memcpy(addr.sun_path, path, strlen(path) + 1);
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
