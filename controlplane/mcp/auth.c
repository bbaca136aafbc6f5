/* auth.c: who may use the MCP endpoint (issue 12). Over TCP a request must
 * carry the owner's bearer token (RFC 6750 section 2.1, compared in
 * constant time); over the Unix socket the peer's uid, read from the kernel
 * (SO_PEERCRED, unix(7)), must be serve's own or root. Also binds that
 * socket. Pure checks plus socket calls; no HTTP, no state. */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../base/cleanup.h"

/* The token68 of "Bearer <token68>" (RFC 6750 section 2.1: the scheme is
 * case-insensitive, one or more spaces, optional trailing spaces). Returns
 * its start and length, or NULL when the header is not of that form. */
static const char *bearer_value(const char *authorization, size_t *ret_len)
{
	if (!authorization)
		return NULL;
	const char *p = authorization;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
		return NULL;
	p += 6;
	while (*p == ' ' || *p == '\t')
		p++;
	size_t n = strcspn(p, " \t");
	const char *rest = p + n;
	while (*rest == ' ' || *rest == '\t')
		rest++;
	if (n == 0 || *rest)
		return NULL;
	*ret_len = n;
	return p;
}

enum mcp_bearer_result mcp_bearer_check(const char *authorization, const char *token)
{
	size_t n = 0;
	const char *given = bearer_value(authorization, &n);
	if (!given)
		return authorization ? MCP_BEARER_MALFORMED : MCP_BEARER_MISSING;
	/* Constant time in the token's length: every byte of the token is
	 * compared whatever the given value is, so the time taken says nothing
	 * about how much of a guess was right. */
	size_t m = strlen(token);
	unsigned char diff = n != m;
	for (size_t i = 0; i < m; i++)
		diff |= (unsigned char)token[i] ^ (unsigned char)(i < n ? given[i] : 0);
	return diff == 0 ? MCP_BEARER_OK : MCP_BEARER_WRONG;
}

int mcp_peer_uid_allowed(uid_t peer, uid_t self)
{
	return peer == self || peer == 0;
}

int mcp_peer_credentials(int fd, uid_t *ret_uid, pid_t *ret_pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
		return -1;
	*ret_uid = cred.uid;
	if (ret_pid)
		*ret_pid = cred.pid;
	return 0;
}

int mcp_unix_listen(const char *path, int *ret_fd, struct cp_error **err)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(addr.sun_path))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "the MCP socket path '%s' is %zu bytes, more than a Unix socket allows (%zu); "
		                    "set a shorter CHAT2SBX_STATE_DIR",
		                    path, strlen(path), sizeof(addr.sun_path) - 1);
	memcpy(addr.sun_path, path, strlen(path) + 1);
	/* A socket left by a serve that died: the caller holds the registry's
	 * serve lock, so nobody else listens on it. Anything else is left. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return cp_error_set(err, CP_ERR_CONFLICT,
			                    "'%s' exists and is not a socket; move it away so serve can listen there",
			                    path);
		if (unlink(path) < 0)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "remove the stale socket '%s'", path);
	}
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "create the MCP socket '%s'", path);
	/* 0600 from the moment it exists: bind applies the umask. */
	mode_t old = umask(0177);
	int r = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
	int bind_errno = errno;
	umask(old);
	if (r < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, bind_errno, "listen on the MCP socket '%s'", path);
	if (chmod(path, 0600) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		unlink(path);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, e, "listen on the MCP socket '%s'", path);
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}
