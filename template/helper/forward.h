/* forward.h: the helper's forward mode (`chat2sbx-helper forward LISTEN_PORT
 * TARGET_HOST TARGET_PORT`), the whole program of a sandbox_expose forwarder
 * container: accept TCP connections and relay each, both ways, to
 * TARGET_HOST:TARGET_PORT. No shell, no files, no JSON-RPC. */
#ifndef CHAT2SBX_HELPER_FORWARD_H
#define CHAT2SBX_HELPER_FORWARD_H

/* At most this many relayed connections at once; more wait in the backlog. */
#define FORWARD_MAX_CONNS 512
/* Bytes buffered per direction of a connection. */
#define FORWARD_BUF_BYTES (64 * 1024)

struct forward_config {
	const char *target_host; /* numeric address, or a name resolved by DNS per connection */
	const char *target_port; /* "8000" */
};

/* Opens a listening TCP socket on host:port (host: a numeric IPv4 address,
 * NULL = every IPv4 address; port "0" = any free port), non-blocking,
 * SO_REUSEADDR, close-on-exec. Returns the descriptor or -1 (logged). */
int forward_listen(const char *host, const char *port);

/* Relays every connection accepted on listen_fd (owned; closed on return) to
 * cfg's target until SIGTERM or SIGINT: one thread, one poll(2) over the
 * listener, both ends of every connection and a signalfd. For each
 * connection the target is resolved and connected without blocking the
 * others; bytes are copied as they come; an end of input on one side is
 * passed on as a shutdown(SHUT_WR) of the other once its buffered bytes are
 * written (half-close); a connection ends when both directions have, or on
 * any error (both sockets are closed). A target that cannot be reached closes
 * the client's connection. Returns 0 after a signal, 1 when setup fails
 * (logged). Blocks SIGTERM, SIGINT and ignores SIGPIPE in the process. */
int forward_serve(int listen_fd, const struct forward_config *cfg);

/* Entry point of the forward mode: argv is {"forward", LISTEN_PORT,
 * TARGET_HOST, TARGET_PORT}. Validates the ports (1-65535), listens on
 * 0.0.0.0:LISTEN_PORT and serves. Returns the process exit status (2 for
 * bad arguments). */
int forward_main(int argc, char **argv);

#endif
