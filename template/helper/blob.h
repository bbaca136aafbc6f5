/* blob.h: blob.open, blob.read and blob.close: the bytes of one file out of
 * the sandbox in bounded chunks (base64 in JSON), for the control plane's
 * exports (controlplane/lifecycle/export_save.c). Mechanism only: the host
 * names the file, decides how much it takes and checks what it got. */
#ifndef CHAT2SBX_HELPER_BLOB_H
#define CHAT2SBX_HELPER_BLOB_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "rpc.h"

/* Files open at once; one more open is LIMIT (proto.h). */
#define BLOB_MAX_OPEN 4

/* blob.open {"path": absolute, "unlink": bool} → {"handle", "size"}.
 * Opens a regular file (never following a final symlink, never blocking on
 * a FIFO) and, with unlink, removes its name at once, so what is read later
 * is the file as opened, whatever happens to the path. id and params are
 * borrowed, *ret_result owned by the caller. */
int blob_rpc_open(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
/* blob.read {"handle", "offset", "length" (1..PROTO_BLOB_CHUNK_MAX)} →
 * {"data": base64 of at most length bytes from offset, "bytes": N,
 * "eof": bool (no byte at offset + bytes when read)}. One pread(2). */
int blob_rpc_read(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
/* blob.close {"handle"} → {}. Unknown handle: NOT_FOUND. */
int blob_rpc_close(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);
/* Closes every open blob (a new control plane attached: the old one's
 * handles are gone with it). Returns how many were open. */
size_t blob_close_all(void);

/* Standard base64 (RFC 4648, section 4) of n bytes into out, which must
 * hold 4 * ((n + 2) / 3) + 1 bytes; NUL-terminated. Returns the length. */
size_t blob_base64_encode(const unsigned char *in, size_t n, char *out);

#endif
