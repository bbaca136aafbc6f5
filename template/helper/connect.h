/* connect.h: the helper's connect mode (`chat2sbx-helper connect PORT`),
 * the far end of a preview of a sandbox on another node (issue 28): serve
 * starts it in the sandbox with the engine's exec API and relays one TCP
 * connection of a person's browser through the exec's stdin and stdout,
 * over the engine's TLS connection. It connects to 127.0.0.1:PORT in the
 * sandbox's own network namespace and copies bytes both ways. No shell, no
 * files, no JSON-RPC. */
#ifndef CHAT2SBX_HELPER_CONNECT_H
#define CHAT2SBX_HELPER_CONNECT_H

/* Bytes buffered per direction. */
#define CONNECT_BUF_BYTES (64 * 1024)
/* After stdin ends (the person's side is gone or half-closed), how long the
 * server inside may take to finish its answer before the relay gives up (ms). */
#define CONNECT_LINGER_MS 60000

/* Relays in_fd → sock and sock → out_fd until both directions end, either
 * side fails, or CONNECT_LINGER_MS passes after in_fd ended. An end of
 * in_fd is passed on as shutdown(sock, SHUT_WR); an end of sock ends the
 * relay once its bytes are written. Descriptors borrowed. Returns 0 when
 * the server side ended cleanly, 1 on an error (logged). Ignores SIGPIPE. */
int connect_relay(int in_fd, int out_fd, int sock);

/* Entry point of the connect mode: argv is {"connect", PORT}. Validates the
 * port (1-65535), connects to 127.0.0.1:PORT and relays stdin and stdout.
 * Returns the process exit status: 0, 1 (the port refused the connection
 * or the relay failed; logged on stderr), 2 for bad arguments. */
int connect_main(int argc, char **argv);

#endif
