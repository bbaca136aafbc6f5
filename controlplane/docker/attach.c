/* attach.c: the hijacked attach connection to a container's stdio (Docker
 * Engine API v1.41, "Attach to a container"). Owns the handshake only: the
 * caller gets the raw socket and reads multiplexed frames (demux.c). Speaks
 * HTTP/1.1 on a plain AF_UNIX socket, not through libcurl (see
 * attach_connect), or, to a remote engine, on the near end of the TLS
 * relay (attach_tls.c); still engine transport, so it lives in docker/ only. */
#include "engine_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "../base/buf.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/fdio.h"
#include "../base/xalloc.h"
#include "../base/log.h"

#define ATTACH_MAX_HEADERS (16u * 1024)
#define ATTACH_MAX_ERROR_BODY (64u * 1024)

static void cleanup_bufp(struct cp_buf *b)
{
	cp_buf_free(b);
}

/* A plain socket rather than libcurl's CONNECT_ONLY + CURLINFO_ACTIVESOCKET:
 * the stream outlives any curl handle (curl would close the fd with it), and
 * the response head must be read without consuming one byte of the stream
 * behind it, which needs byte-level control of every read. */
static int attach_connect(const char *socket_path, int64_t deadline, const char *what, int *ret_fd,
                          struct cp_error **err)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(socket_path) >= sizeof(addr.sun_path))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: socket path '%s' is too long", what,
		                    socket_path);
	memcpy(addr.sun_path, socket_path, strlen(socket_path) + 1);

	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "%s: socket", what);
	for (;;) {
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == EINPROGRESS) {
			int r = fdio_wait(fd, POLLOUT, deadline);
			int soerr = 0;
			socklen_t sl = sizeof(soerr);
			if (r == 0)
				return cp_error_set(err, CP_ERR_TIMEOUT,
				                    "%s: the Docker Engine at '%s' did not accept "
				                    "the connection in time",
				                    what, socket_path);
			if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
				soerr = errno;
			if (soerr)
				return docker_error_unreachable(err, socket_path, what, soerr);
			break;
		}
		if (errno == EAGAIN) {
			/* A full listen backlog: a non-blocking AF_UNIX connect cannot
			 * wait for room, so retry briefly, bounded by the deadline. */
			if (clock_monotonic_ms() >= deadline)
				return cp_error_set(err, CP_ERR_TIMEOUT,
				                    "%s: the Docker Engine at '%s' is too busy to "
				                    "accept a connection",
				                    what, socket_path);
			poll(NULL, 0, 10);
			continue;
		}
		return docker_error_unreachable(err, socket_path, what, errno);
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Reads the response head one byte at a time, stopping right after the blank
 * line: the multiplexed stream that follows must stay in the socket. */
static int read_head(int fd, int64_t deadline, struct cp_buf *head, const char *what, struct cp_error **err)
{
	while (head->len < 4 || memcmp(head->data + head->len - 4, "\r\n\r\n", 4) != 0) {
		char c;
		ssize_t n = fdio_recv_some(fd, &c, 1, deadline);
		if (n < 0 && errno == ETIMEDOUT)
			return cp_error_set(err, CP_ERR_TIMEOUT,
			                    "%s: the engine did not answer the attach request in time", what);
		if (n < 0)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "%s: read the engine's answer", what);
		if (n == 0)
			return cp_error_set(err, CP_ERR_UNAVAILABLE,
			                    "%s: the engine closed the connection during the "
			                    "attach handshake",
			                    what);
		if (cp_buf_append(head, &c, 1) < 0)
			return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's response headers exceed %u KiB",
			                    what, ATTACH_MAX_HEADERS >> 10);
	}
	return 0;
}

/* Value of header name in head (case-insensitive), copied into out. */
static const char *head_value(const char *head, const char *name, char *out, size_t size)
{
	size_t n = strlen(name);
	for (const char *line = strstr(head, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
		const char *h = line + 2;
		if (strncasecmp(h, name, n) != 0 || h[n] != ':')
			continue;
		h += n + 1;
		while (*h == ' ' || *h == '\t')
			h++;
		size_t len = strcspn(h, "\r\n");
		while (len && (h[len - 1] == ' ' || h[len - 1] == '\t'))
			len--;
		if (len >= size)
			len = size - 1;
		memcpy(out, h, len);
		out[len] = '\0';
		return out;
	}
	return NULL;
}

/* Decodes a chunked body in place (RFC 9112, section 7.1); stops at the last
 * chunk or at the first malformed size line. */
static void dechunk(struct cp_buf *b)
{
	size_t in = 0, out = 0;
	while (in < b->len) {
		char *end = NULL;
		unsigned long size = strtoul(b->data + in, &end, 16);
		char *crlf = strstr(b->data + in, "\r\n");
		if (!crlf || end == b->data + in || size == 0)
			break;
		in = (size_t)(crlf - b->data) + 2;
		if (size > b->len - in)
			size = b->len - in;
		memmove(b->data + out, b->data + in, size);
		out += size;
		in += size + 2;
	}
	b->len = out;
	b->data[out] = '\0';
}

/* Reads the body of a refused attach (an error JSON) within the deadline. */
static void read_error_body(int fd, const char *head, int64_t deadline, struct cp_buf *body)
{
	char value[64];
	long want = -1;
	if (head_value(head, "Content-Length", value, sizeof(value)))
		want = strtol(value, NULL, 10);
	int chunked = head_value(head, "Transfer-Encoding", value, sizeof(value)) && strcasecmp(value, "chunked") == 0;
	char buf[4096];
	while (want < 0 || body->len < (size_t)want) {
		size_t room = want < 0 ? sizeof(buf) : (size_t)want - body->len;
		ssize_t n = fdio_recv_some(fd, buf, room < sizeof(buf) ? room : sizeof(buf), deadline);
		if (n <= 0 || cp_buf_append(body, buf, (size_t)n) < 0)
			break;
		if (chunked && body->len >= 5 && memcmp(body->data + body->len - 5, "0\r\n\r\n", 5) == 0)
			break;
	}
	if (chunked && body->data)
		dechunk(body);
}

/* Sends request (a whole HTTP/1.1 request asking "Upgrade: tcp") and hands
 * over the raw stream behind the answer (engine_internal.h). */
int docker_hijack(struct docker_engine *engine, const char *request, int64_t deadline, const char *what, int *ret_fd,
                  struct cp_error **err)
{
	int64_t start = clock_monotonic_ms();
	_cleanup_close_ int fd = -1;
	if (engine->endpoint ? docker_tls_stream_open(engine, deadline, what, &fd, err) < 0
	                     : attach_connect(engine->socket_path, deadline, what, &fd, err) < 0)
		return -1;
	if (fdio_send_all(fd, request, strlen(request), deadline, NULL) < 0) {
		if (errno == ETIMEDOUT)
			return cp_error_set(err, CP_ERR_TIMEOUT, "%s: the engine did not take the request in time",
			                    what);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "%s: send the request", what);
	}
	_cleanup_(cleanup_bufp) struct cp_buf head;
	cp_buf_init(&head, ATTACH_MAX_HEADERS);
	if (read_head(fd, deadline, &head, what, err) < 0)
		return -1;

	long status = 0;
	if (sscanf(head.data, "HTTP/1.%*d %ld", &status) != 1)
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "%s: the engine's answer is not HTTP", what);
	log_debug("docker", "%s -> %ld (%lld ms)", what, status, (long long)(clock_monotonic_ms() - start));

	if (status != 101 && status != 200) {
		_cleanup_(cleanup_bufp) struct cp_buf body;
		cp_buf_init(&body, ATTACH_MAX_ERROR_BODY);
		read_error_body(fd, head.data, deadline, &body);
		char msg[1024];
		return docker_error_status(err, status, docker_engine_message(body.data, body.len, msg, sizeof(msg)),
		                           what);
	}

	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "%s: make the stream blocking", what);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* POST /containers/{id}/attach?stream=1&stdin=1&stdout=1&stderr=1 with
 * "Upgrade: tcp" (Docker Engine API v1.41, "Attach to a container", section
 * "Hijacking"). The engine answers 101 (or 200 from engines that skip the
 * upgrade) and the socket becomes the raw stream. id borrowed. *ret_fd (caller
 * closes) is blocking and O_CLOEXEC; nothing after the response headers has
 * been read from it. To a remote engine the descriptor is the near end of
 * a socketpair whose far end a thread relays over TLS (attach_tls.c), which
 * reads, writes, polls and closes like the socket. Errors: the engine's 404 → NOT_FOUND, 409 → CONFLICT,
 * 5xx → UNAVAILABLE, each with its message; the engine unreachable →
 * UNAVAILABLE; no answer within timeout_ms → TIMEOUT. */
int docker_container_attach(struct docker_engine *engine, const char *id, long timeout_ms, int *ret_fd,
                            struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	what = xasprintf("attach to container '%s'", id ? id : "");
	if (!id || !*id || timeout_ms <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: an id and a positive timeout are required",
		                    what);
	_cleanup_free_ char *esc = docker_escape(id, NULL);
	_cleanup_free_ char *request =
	    xasprintf("POST /v%s/containers/%s/attach?stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\n"
	              "Host: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n",
	              engine->api_version, esc);
	return docker_hijack(engine, request, clock_monotonic_ms() + timeout_ms, what, ret_fd, err);
}
