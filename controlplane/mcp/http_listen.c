/* http_listen.c: the Streamable HTTP transport's daemons: binding the TCP
 * address (numeric, so no resolver runs) and the Unix socket, starting
 * libmicrohttpd with a thread per connection and its bounds, and stopping
 * both while running requests finish (http.c answers the requests). */
#include "http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"

/* Idle keep-alive connections hold a thread each; tool calls stay well under
 * a minute by design (DESIGN.md, MCP surface), so two minutes is generous. */
#define CONNECTION_TIMEOUT_S 120u
/* Each connection is a thread that may wait up to a minute in a tool call, so
 * the limit bounds threads; their stacks are kept small (MCP_HTTP_STACK_BYTES) so the
 * limit costs little memory. serve raises RLIMIT_NOFILE to fit. */
#define CONNECTION_LIMIT 1024u
/* How long stop waits for running requests: longer than any tool call may
 * take (DESIGN.md: a call must finish well inside ChatGPT's 60 s). */
#define STOP_WAIT_MS 70000

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	char text[512];
	vsnprintf(text, sizeof(text), fmt, ap);
	size_t n = strlen(text);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		text[--n] = '\0';
	log_warn("mcp", "libmicrohttpd: %s", text);
}

static int resolve_bind(const char *host, unsigned port, struct sockaddr_storage *ret_addr, struct cp_error **err)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
	struct addrinfo *ai = NULL;
	int r = getaddrinfo(host, NULL, &hints, &ai);
	if (r != 0 || !ai)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "resolve bind address '%s': %s", host,
		                    gai_strerror(r));
	memset(ret_addr, 0, sizeof(*ret_addr));
	memcpy(ret_addr, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (ret_addr->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ret_addr)->sin6_port = htons((uint16_t)port);
	else
		((struct sockaddr_in *)ret_addr)->sin_port = htons((uint16_t)port);
	return 0;
}

/* libmicrohttpd reports a failed start only through its log; a bind of our
 * own on the same address recovers errno for a precise message. */
static int bind_failure(const struct mcp_server *server, const struct sockaddr_storage *addr, struct cp_error **err)
{
	socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	_cleanup_close_ int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd >= 0 && bind(fd, (const struct sockaddr *)addr, len) < 0) {
		if (errno == EADDRINUSE)
			return cp_error_set(err, CP_ERR_UNAVAILABLE,
			                    "port %u on %s is in use; stop the other server or set CHAT2SBX_PORT",
			                    server->opts.port, server->host);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "listen on %s port %u", server->host,
		                          server->opts.port);
	}
	return cp_error_set(err, CP_ERR_UNAVAILABLE, "listen on %s port %u: libmicrohttpd failed to start",
	                    server->host, server->opts.port);
}

/* The daemon options both listeners share. */
#define MCP_DAEMON_FLAGS                                                                                               \
	(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG | MHD_USE_ITC)

/* Starts the Unix socket listener on server->unix_path (issue 12): a
 * daemon of its own over a socket bound here, whose connections are checked
 * for their peer's uid as they start (on_unix_connection) and again per
 * request (refuse_early). */
static int listen_unix(struct mcp_server *server, struct cp_error **err)
{
	int fd = -1;
	if (mcp_unix_listen(server->unix_path, &fd, err) < 0)
		return -1;
	server->unix_listener = (struct mcp_listener){.server = server, .is_unix = 1};
	server->unix_daemon = MHD_start_daemon(
	    MCP_DAEMON_FLAGS, 0, NULL, NULL, mcp_http_on_request, &server->unix_listener, MHD_OPTION_EXTERNAL_LOGGER,
	    on_mhd_log, NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_CONNECTION, mcp_http_on_connection,
	    &server->unix_listener, MHD_OPTION_NOTIFY_COMPLETED, mcp_http_on_completed, server,
	    MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT, CONNECTION_LIMIT,
	    MHD_OPTION_THREAD_STACK_SIZE, MCP_HTTP_STACK_BYTES, MHD_OPTION_END);
	if (!server->unix_daemon) {
		close(fd);
		unlink(server->unix_path);
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "listen on the MCP socket '%s': libmicrohttpd failed to start", server->unix_path);
	}
	server->unix_listening = 1;
	log_info("mcp", "listening on unix:%s (this user and root only)", server->unix_path);
	return 0;
}

/* Starts the Streamable HTTP listeners (see mcp.h; MCP basic/transports,
 * "Streamable HTTP"): TCP on opts.host:opts.port, and the Unix socket when
 * one is configured. Requests run on one thread per connection, so a slow
 * tool call blocks only its own connection. Fails with INVALID_ARGUMENT for
 * an unresolvable host, UNAVAILABLE naming the address when the port is
 * taken or a daemon cannot start, the socket's error (mcp_unix_listen),
 * CONFLICT when already listening; on failure nothing is left listening.
 * Returns at once. */
int mcp_server_listen(struct mcp_server *server, struct cp_error **err)
{
	if (server->daemon)
		return cp_error_set(err, CP_ERR_CONFLICT, "listen: the MCP server is already listening on port %u",
		                    server->port);
	struct sockaddr_storage addr;
	if (resolve_bind(server->host, server->opts.port, &addr, err) < 0)
		return -1;
	/* MHD_USE_ITC lets stop quiesce the daemon (close the listener) while
	 * running requests finish. */
	unsigned flags = MCP_DAEMON_FLAGS;
	if (addr.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	server->tcp_listener = (struct mcp_listener){.server = server, .is_unix = 0};
	if (mcp_conn_guard_start(server) < 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "listen: cannot start the connection watchdog thread");
	server->daemon =
	    MHD_start_daemon(flags, (uint16_t)server->opts.port, NULL, NULL, mcp_http_on_request, &server->tcp_listener,
	                     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
	                     (struct sockaddr *)&addr, MHD_OPTION_NOTIFY_COMPLETED, mcp_http_on_completed, server,
	                     MHD_OPTION_NOTIFY_CONNECTION, mcp_http_on_connection, &server->tcp_listener,
	                     MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
	                     CONNECTION_LIMIT, MHD_OPTION_THREAD_STACK_SIZE, MCP_HTTP_STACK_BYTES, MHD_OPTION_END);
	if (!server->daemon) {
		mcp_conn_guard_stop(&server->guard);
		return bind_failure(server, &addr, err);
	}
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
	server->port = info ? info->port : server->opts.port;
	if (server->unix_path && listen_unix(server, err) < 0) {
		MHD_stop_daemon(server->daemon);
		server->daemon = NULL;
		server->port = 0;
		mcp_conn_guard_stop(&server->guard);
		return -1;
	}
	log_info("mcp", "listening on http://%s%s%s:%u" MCP_PATH "%s", addr.ss_family == AF_INET6 ? "[" : "",
	         server->host, addr.ss_family == AF_INET6 ? "]" : "", server->port,
	         server->bearer_token ? " (bearer token required)" : " (NO TOKEN CHECK: CHAT2SBX_MCP_TOKEN=off)");
	return 0;
}

/* Stops the listeners (see mcp.h): closes the listening sockets at once
 * (removing the Unix socket's file),
 * answers requests that arrive on open connections with 503, waits up to
 * STOP_WAIT_MS for running requests to send their replies, then stops the
 * daemon (which closes every connection and joins its threads; alone it
 * would cut running requests off without a reply). No-op when not
 * listening. Blocks for as long as the longest running request. */
void mcp_server_stop(struct mcp_server *server)
{
	if (!server->daemon)
		return;
	pthread_mutex_lock(&server->http_lock);
	server->http_stopping = 1;
	pthread_mutex_unlock(&server->http_lock);
	MHD_socket fd = MHD_quiesce_daemon(server->daemon);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	if (server->unix_daemon) {
		fd = MHD_quiesce_daemon(server->unix_daemon);
		if (fd != MHD_INVALID_SOCKET)
			close(fd);
	}
	if (server->unix_listening) {
		unlink(server->unix_path); /* nobody can connect any more: say so to clients at once */
		server->unix_listening = 0;
	}

	struct timespec deadline = clock_deadline_after(STOP_WAIT_MS);
	pthread_mutex_lock(&server->http_lock);
	while (server->http_active > 0)
		if (pthread_cond_timedwait(&server->http_idle, &server->http_lock, &deadline) == ETIMEDOUT) {
			log_warn("mcp", "stopping with %u requests still running", server->http_active);
			break;
		}
	pthread_mutex_unlock(&server->http_lock);

	/* Readers of running streams would block the daemon's join. */
	mcp_resume_shutdown(server->resume);
	MHD_stop_daemon(server->daemon);
	server->daemon = NULL;
	if (server->unix_daemon) {
		MHD_stop_daemon(server->unix_daemon);
		server->unix_daemon = NULL;
	}
	mcp_conn_guard_stop(&server->guard); /* every connection is closed now */
	server->port = 0;
	pthread_mutex_lock(&server->http_lock);
	server->http_stopping = 0;
	pthread_mutex_unlock(&server->http_lock);
}
