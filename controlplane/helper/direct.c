/* direct.c: opening a helper channel's direct socket (template/helper/
 * proto.h, channel.connect), so tool calls skip the engine's attach stream
 * (two proxies, dockerd and the container's shim, on every request and
 * answer). The socket lives only while the helper connects: made, offered,
 * accepted and removed in one call. Whatever else runs in the sandbox may
 * connect too while it exists; only the connection that presents the token
 * the helper got on its own stdin is kept. Nothing else here trusts the
 * sandbox: the answers that come back are read like the attach stream's. */
#include "helper.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <nettle/memops.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../template/helper/proto.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/fdio.h"
#include "../base/xjson.h"

#define SOCKET_NAME PROTO_CHANNEL_SOCKET_NAME
/* Connections that showed no token or a wrong one, at most, before giving up. */
#define DIRECT_MAX_TRIES 16
/* How long one connection may take to show its token (ms). */
#define DIRECT_TOKEN_WAIT_MS 250

static int token_new(char out[PROTO_CHANNEL_TOKEN_LEN + 1])
{
	unsigned char raw[PROTO_CHANNEL_TOKEN_LEN / 2];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[PROTO_CHANNEL_TOKEN_LEN] = '\0';
	return 0;
}

/* A listening socket SOCKET_NAME in the directory dirfd, 0600, bound through
 * /proc/self/fd so a long state directory fits sun_path. */
static int listen_in(int dirfd)
{
	(void)unlinkat(dirfd, SOCKET_NAME, 0);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/" SOCKET_NAME, dirfd);
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || fchmodat(dirfd, SOCKET_NAME, 0600, 0) < 0 ||
	    listen(fd, DIRECT_MAX_TRIES) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Whether the connection c presents token and a newline before deadline. */
static int token_shown(int c, const char *token, int64_t deadline)
{
	char buf[PROTO_CHANNEL_TOKEN_LEN + 1];
	size_t got = 0;
	while (got < sizeof(buf)) {
		ssize_t n = fdio_recv_some(c, buf + got, sizeof(buf) - got, deadline);
		if (n <= 0)
			return 0;
		got += (size_t)n;
	}
	return buf[PROTO_CHANNEL_TOKEN_LEN] == '\n' && memeql_sec(buf, token, PROTO_CHANNEL_TOKEN_LEN);
}

/* Accepts on l until a connection shows token; returns it or -1 (errno
 * ETIMEDOUT when none did in time). */
static int accept_token(int l, const char *token, int64_t deadline)
{
	for (int tries = 0; tries < DIRECT_MAX_TRIES; tries++) {
		int w = fdio_wait(l, POLLIN, deadline);
		if (w <= 0) {
			if (w == 0)
				errno = ETIMEDOUT;
			return -1;
		}
		int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EAGAIN || errno == EINTR || errno == ECONNABORTED)
				continue;
			return -1;
		}
		/* The helper writes its token as it connects: a connection that
		 * holds back gets a short while, not the whole call's. */
		int64_t soon = clock_monotonic_ms() + DIRECT_TOKEN_WAIT_MS;
		if (token_shown(c, token, soon < deadline ? soon : deadline))
			return c;
		close(c);
	}
	errno = ETIMEDOUT;
	return -1;
}

int helper_channel_connect_direct(struct helper_channel *ch, const char *dir, long timeout_ms, struct cp_error **err)
{
	if (!ch || !dir || timeout_ms <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "open a direct channel: a directory and a positive "
		                    "timeout are required");
	int64_t deadline = clock_monotonic_ms() + timeout_ms;
	_cleanup_close_ int dirfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dirfd < 0 || fstat(dirfd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "open the direct channel directory '%s'", dir);
	if (st.st_uid != geteuid() || (st.st_mode & 077))
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "the direct channel directory '%s' is not this user's alone (mode %o, owner %u)",
		                    dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
	char token[PROTO_CHANNEL_TOKEN_LEN + 1];
	if (token_new(token) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "make a direct channel token");
	_cleanup_close_ int l = listen_in(dirfd);
	if (l < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "listen in '%s/" SOCKET_NAME "'", dir);
	_cleanup_json_ struct json_object *params = xjson_object();
	xjson_add(params, "token", xjson_string(token));
	_cleanup_json_ struct json_object *res = NULL;
	int64_t left = deadline - clock_monotonic_ms();
	int rc = helper_channel_call(ch, "channel.connect", params, left > 0 ? (long)left : 1, &res, err);
	int c = -1;
	if (rc == 0) {
		/* The helper connected before it answered: the connection waits. */
		c = accept_token(l, token, deadline);
		if (c < 0)
			rc = cp_error_set_errno(err, errno == ETIMEDOUT ? CP_ERR_TIMEOUT : CP_ERR_INTERNAL, errno,
			                        "no connection to '%s/" SOCKET_NAME "' showed the token in time", dir);
	}
	(void)unlinkat(dirfd, SOCKET_NAME, 0);
	explicit_bzero(token, sizeof(token));
	if (rc < 0)
		return -1;
	return helper_channel_direct_set(ch, c, err);
}
