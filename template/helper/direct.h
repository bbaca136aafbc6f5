/* direct.h: the helper's end of the direct channel (proto.h,
 * channel.connect): a Unix socket the control plane offers so requests and
 * answers skip the engine's attach stream. */
#ifndef CHAT2SBX_HELPER_DIRECT_H
#define CHAT2SBX_HELPER_DIRECT_H

#include <stddef.h>

#include "rpc.h"

/* Connects to the socket PROTO_CHANNEL_SOCKET_NAME in the directory dirfd
 * (borrowed; an O_PATH descriptor the loop opened at start, -1: none),
 * writes token (len bytes, PROTO_CHANNEL_TOKEN_LEN hex digits) and a
 * newline, and returns the connected descriptor: close-on-exec and
 * non-blocking, the caller's to close. The directory is reached through
 * /proc/self/fd, not by its path, so a rename of anything above it (root in
 * the sandbox can rename /.chat2sbx and plant a listener of its own at the
 * old path, then learn the token and present it to the control plane) does
 * not move the connection. Returns -1 with err set: "INVALID_ARGUMENT" for a
 * token that is not PROTO_CHANNEL_TOKEN_LEN hex digits, "INTERNAL" when there
 * is no directory, the socket cannot be reached, is busy (its backlog full:
 * EAGAIN) or the token not written (the message says why). Never blocks: the
 * socket is non-blocking from the start, and a fresh one takes the token's
 * 33 bytes at once. */
int direct_connect(int dirfd, const char *token, size_t len, struct rpc_error *err);

#endif
