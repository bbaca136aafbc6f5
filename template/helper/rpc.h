/* rpc.h: JSON-RPC 2.0 requests and replies for the helper (wire format in
 * proto.h): typed parameter getters, error objects, and the reply sink that
 * every module sends through. */
#ifndef CHAT2SBX_HELPER_RPC_H
#define CHAT2SBX_HELPER_RPC_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* One failure, filled once at the failure site. data_code is one of the
 * stable codes in proto.h ("INVALID_ARGUMENT", "NOT_FOUND", "CONFLICT",
 * "LIMIT", "INTERNAL"); code is the JSON-RPC error code. */
struct rpc_error {
	int code;
	const char *data_code;
	char message[1024];
};

/* Fill err. data_code "INVALID_ARGUMENT" maps to -32602 (bad params, as
 * proto.h says), every other code to -32000 (operation failed). Messages say
 * what was wrong and what to do. Always returns -1, so callers can write
 * `return rpc_fail(err, ...)`. */
int rpc_fail(struct rpc_error *err, const char *data_code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Same with an explicit JSON-RPC code (-32600, -32601, ...). Returns -1. */
int rpc_fail_code(struct rpc_error *err, int code, const char *data_code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Map an errno from a file operation on path to NOT_FOUND (ENOENT),
 * INVALID_ARGUMENT (ENOTDIR, EISDIR, ENAMETOOLONG, ELOOP, EACCES, EPERM, EROFS,
 * ETXTBSY: the caller must pick another path), LIMIT (ENOSPC,
 * EDQUOT, EFBIG, EMFILE, ENFILE) or INTERNAL, with a message
 * "<what> '<path>': <strerror>". Returns -1. */
int rpc_fail_errno(struct rpc_error *err, int errnum, const char *what, const char *path);

/* Parameter getters. params is borrowed (an object, never NULL). Each
 * returns 0 when the parameter is absent and not required (the default is
 * stored), 1 when present and valid, -1 with err set (INVALID_ARGUMENT naming
 * the field) otherwise. Returned strings are borrowed from params. */
int rpc_param_string(json_object *params, const char *name, bool required, const char **ret, size_t *ret_len,
                     struct rpc_error *err);
/* An integer in [min, max]; values above max are clamped to max when clamp
 * is true, refused otherwise. */
int rpc_param_int(json_object *params, const char *name, int64_t def, int64_t min, int64_t max, bool clamp,
                  int64_t *ret, struct rpc_error *err);
int rpc_param_bool(json_object *params, const char *name, bool def, bool *ret, struct rpc_error *err);

/* Where replies go: a function taking one serialized reply line (without
 * the newline, len bytes, borrowed). The loop registers its output queue. */
typedef void (*rpc_sink_fn)(const char *line, size_t len, void *data);
void rpc_sink_set(rpc_sink_fn fn, void *data);

/* Send {"jsonrpc","id","result"}. id is borrowed; result's reference is
 * taken (freed here). A reply over PROTO_MAX_FRAME is replaced by a LIMIT
 * error, so no line the helper writes exceeds the frame bound. */
void rpc_send_result(json_object *id, json_object *result);
/* Send {"jsonrpc","id","error":{code,message,data:{code}}}; id borrowed. */
void rpc_send_error(json_object *id, const struct rpc_error *err);

/* Parse one request line. On success *ret_root owns the parsed object and
 * *ret_id, *ret_method, *ret_params borrow from it (*ret_params is an
 * object; an absent params becomes an empty object added to the root), and 0
 * is returned. A request without an id returns 1 (a notification: ignore
 * it). On a malformed request returns -1 with err set and *ret_id set to the
 * id when one could be found (borrowed from *ret_root, which the caller must
 * free when non-NULL), else NULL. */
int rpc_request_parse(const char *line, size_t len, json_object **ret_root, json_object **ret_id,
                      const char **ret_method, json_object **ret_params, struct rpc_error *err);

/* Find a top-level-looking "id": <integer> in the first part of a frame that
 * could not be parsed (over-long or truncated). Returns true and sets *ret_id
 * when found. Heuristic: in valid JSON a quoted "id" followed by ':' is always
 * a key, and helper requests have no other "id" keys. */
bool rpc_id_scan(const char *buf, size_t len, int64_t *ret_id);

#endif
