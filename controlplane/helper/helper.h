/* helper.h: the control plane's side of the helper channel. One channel per
 * running sandbox: an attached container stdio stream (docker attach) carrying
 * newline-delimited JSON-RPC 2.0 (template/helper/proto.h is the wire format).
 * Requests carry ids so calls on one sandbox overlap: a long bash.poll does not
 * block a file.read. A reader thread demultiplexes the stream, splits lines,
 * and wakes the caller waiting on each id. Never parses tool semantics. */
#ifndef CP_HELPER_H
#define CP_HELPER_H

#include "../base/error.h"

struct json_object;
struct helper_channel;
struct cp_cancel;

/* Largest frame accepted from the helper (bytes); longer lines close the channel. */
#define HELPER_MAX_FRAME (64u * 1024 * 1024)

/* Takes ownership of fd (a hijacked attach stream, see docker_container_attach)
 * and starts the reader thread. name (copied) is used in messages
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
 * carrying a bash delivery range (output_start < output_end) the channel
 * writes bash.ack when a waiting caller took it, bash.nack when nobody waited
 * any more (timed out or cancelled), ahead of any later request. */
int helper_channel_new(int fd, const char *name, struct helper_channel **ret_channel, struct cp_error **err);

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

/* True while the stream is open and the reader has not seen EOF or a corrupt frame. */
int helper_channel_alive(struct helper_channel *ch);

/* Why the channel closed (borrowed, NULL while alive). */
const char *helper_channel_close_reason(struct helper_channel *ch);

#endif
