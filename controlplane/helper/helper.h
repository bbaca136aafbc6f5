/* helper.h: the control plane's side of the helper channel. One channel per
 * running sandbox: an attached container stdio stream (docker attach) carrying
 * newline-delimited JSON-RPC 2.0 (template/helper/proto.h is the wire format).
 * Requests carry ids so calls on one sandbox overlap: a long bash.poll does not
 * block a file.read. A reader thread demultiplexes the stream, splits lines,
 * and wakes the caller waiting on each id. Never parses tool semantics: what
 * an answer asks to be acknowledged is read by the tool that owns it, through
 * struct helper_receipts. */
#ifndef CP_HELPER_H
#define CP_HELPER_H

#include <stdint.h>

#include "../base/error.h"

struct json_object;
struct helper_channel;
struct cp_cancel;

/* How a channel acknowledges answers that carry a delivery range
 * (template/helper/proto.h, "Delivery and acknowledgement"). The channel
 * knows no tool: the tool whose answers carry a range supplies these
 * (tools/bash.c, tool_bash_receipts), and the channel only queues and
 * writes the notifications. Static data; the channel borrows it. */
struct helper_receipts {
	/* Reads the range the "result" object of an answer carries (result
	 * borrowed): 1 with *ret_key borrowed from result and the range
	 * [*ret_start, *ret_end) (start < end), 0 when there is none. Called
	 * on the reader thread; must not block. */
	int (*range)(struct json_object *result, const char **ret_key, int64_t *ret_start, int64_t *ret_end);
	const char *key_name;    /* the params member that carries the key ("session_id") */
	const char *ack_method;  /* written when a waiting caller took the answer */
	const char *nack_method; /* written when nobody waited for it any more */
};

/* Takes ownership of fd (a hijacked attach stream, see docker_container_attach)
 * and starts the reader thread. receipts (borrowed, static; NULL = nothing
 * is acknowledged) says which answers carry a delivery range and how to
 * acknowledge them. name (copied) is used in messages
 * ("sandbox 'sbx_…'"). *ret_channel holds the caller's one reference
 * (helper_channel_unref). fd is the channel's even on failure (closed then),
 * as every function that takes ownership does (controlplane/README.md,
 * STYLE).
 * The first line written is the notification {"method":"attach","params":
 * {"attach_id":<32 hex digits, new per channel>}}, and every "hello" sent on
 * the channel carries the same attach_id: the helper then rewinds output it
 * sent but never saw acknowledged (template/helper/proto.h, "Delivery and
 * acknowledgement"). Request ids start at a random point per channel, so an
 * answer written for an earlier attachment matches no call. For every answer
 * in which receipts->range finds a range the channel writes
 * receipts->ack_method when a waiting caller took it, receipts->nack_method
 * when nobody waited any more (timed out or cancelled, or an answer to no
 * call), ahead of any later request. */
int helper_channel_new(int fd, const char *name, const struct helper_receipts *receipts,
                       struct helper_channel **ret_channel, struct cp_error **err);

/* Ends the channel now and drops the caller's reference: the stream is
 * shut down and every pending call fails at once with UNAVAILABLE ("the
 * channel was closed"). Memory, the descriptor and the reader thread go
 * with the last reference (helper_channel_unref), so calls holding their
 * own reference fail cleanly instead of touching freed memory. Accepts
 * NULL. Blocks only for the join when this was the last reference. (The
 * table's drop, lifecycle_channel_drop, only unreferences: a call in
 * flight there ends with the container.) */
void helper_channel_free(struct helper_channel *ch);

/* Reference counting so a channel can be dropped from a table while calls are
 * in flight: _ref returns ch; _unref frees at zero (new() returns one ref). */
struct helper_channel *helper_channel_ref(struct helper_channel *ch);
void helper_channel_unref(struct helper_channel *ch);

/* Sends {"jsonrpc":"2.0","id":N,"method":method,"params":params} (params
 * borrowed, may be NULL) and waits up to timeout_ms for the answer. On success
 * *ret_result (caller puts) is the "result" member, always a JSON object (a
 * result of any other type is refused with INTERNAL). Errors: the helper's own
 * JSON-RPC error → code from its data.code when present (INVALID_ARGUMENT,
 * NOT_FOUND, ...) else INTERNAL, message = helper's message; no answer in time →
 * TIMEOUT (the pending slot is freed; a late answer is dropped); channel closed
 * or helper gone → UNAVAILABLE ("the helper of sandbox 'sbx_…' is not
 * answering: ..."). Thread-safe; blocks at most timeout_ms. */
int helper_channel_call(struct helper_channel *ch, const char *method, struct json_object *params, long timeout_ms,
                        struct json_object **ret_result, struct cp_error **err);

/* As helper_channel_call, but the wait for the answer also ends as soon as
 * cancel (borrowed, may be NULL = never) fires: UNAVAILABLE with a message
 * saying the client cancelled. Only the wait ends: the request was sent and
 * the helper carries it out (a bash session started keeps running and can be
 * polled); its late answer is dropped. A token that fired before the call
 * still sends the request and returns at once. MCP
 * basic/utilities/cancellation. */
int helper_channel_call_cancel(struct helper_channel *ch, const char *method, struct json_object *params,
                               long timeout_ms, struct cp_cancel *cancel, struct json_object **ret_result,
                               struct cp_error **err);

/* The helper/control-plane version rule (template/helper/proto.h at
 * PROTO_VERSION_NUM): reads the "version" member of a hello answer (hello
 * borrowed; NULL is treated as an answer without it) and accepts an integer v
 * written as 1-9 decimal digits with PROTO_HOST_MIN <= v <= PROTO_VERSION_NUM.
 * 0 with *ret_version = v (ret_version may be NULL). Otherwise -1 with
 * CONFLICT, detail CP_DETAIL_HELPER_VERSION, and a message naming what the
 * helper said (at most 40 characters of it, as the helper is not trusted) and
 * the range accepted: "speaks protocol 0, this control plane accepts 1 to 2
 * (the helper is older than ...)", "... newer ...", "... did not say which
 * protocol it speaks ...". The caller adds what to do. Pure. */
int helper_version_check(struct json_object *hello, int *ret_version, struct cp_error **err);

/* The direct channel (template/helper/proto.h, channel.connect): moves ch's
 * requests and acknowledgements onto fd, a connected Unix socket to the
 * helper, and starts a reader thread for the answers that come back on it
 * (answers still on the attach stream are read there too). Takes fd (closed
 * on failure too). Waits until no request is on the wire (each has its
 * deadline). The socket's end ends the channel. Errors: UNAVAILABLE when ch
 * is closed, CONFLICT when it already has one, INTERNAL when the thread
 * cannot start. */
int helper_channel_direct_set(struct helper_channel *ch, int fd, struct cp_error **err);

/* Opens ch's direct channel: makes a listening socket "s" in dir (a
 * directory only this user can enter, created by the caller, which the
 * engine mounts read-only at PROTO_CHANNEL_DIR in the sandbox), asks the
 * helper to connect to it with a fresh random token (channel.connect),
 * accepts connections until one presents that token (others, from whatever
 * else runs in the sandbox, are closed), removes the socket and hands the
 * connection to helper_channel_direct_set. timeout_ms (> 0) bounds the
 * whole. On failure ch is unchanged and keeps the attach stream. Errors:
 * what the helper answered (an older helper: INTERNAL "unknown method"; no
 * socket in this sandbox: INTERNAL), TIMEOUT when no connection showed the
 * token in time, INTERNAL for a dir that cannot hold the socket. */
int helper_channel_connect_direct(struct helper_channel *ch, const char *dir, long timeout_ms, struct cp_error **err);

/* True while the stream is open and the reader has not seen EOF or a corrupt frame. */
int helper_channel_alive(struct helper_channel *ch);

/* Why the channel closed (borrowed, NULL while alive). */
const char *helper_channel_close_reason(struct helper_channel *ch);

#endif
