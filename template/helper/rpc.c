/* rpc.c: JSON-RPC 2.0 message handling for the helper (JSON-RPC 2.0
 * specification; the wire format is proto.h). Parses request lines, checks
 * parameter types, builds replies and hands each serialized line to the sink
 * the loop registered. Knows nothing of sessions or files. */
#include "rpc.h"
#include "xalloc.h"
#include "xjson.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hlog.h"

static rpc_sink_fn sink_fn;
static void *sink_data;

static int fail_va(struct rpc_error *err, int code, const char *data_code, const char *fmt, va_list ap)
{
	err->code = code;
	err->data_code = data_code;
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	return -1;
}

int rpc_fail(struct rpc_error *err, const char *data_code, const char *fmt, ...)
{
	int code = strcmp(data_code, "INVALID_ARGUMENT") == 0 ? PROTO_ERR_INVALID_PARAMS : PROTO_ERR_OPERATION;
	va_list ap;
	va_start(ap, fmt);
	fail_va(err, code, data_code, fmt, ap);
	va_end(ap);
	return -1;
}

int rpc_fail_code(struct rpc_error *err, int code, const char *data_code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fail_va(err, code, data_code, fmt, ap);
	va_end(ap);
	return -1;
}

int rpc_fail_errno(struct rpc_error *err, int errnum, const char *what, const char *path)
{
	const char *code = "INTERNAL";
	switch (errnum) {
	case ENOENT: code = "NOT_FOUND"; break;
	case ENOTDIR:
	case EISDIR:
	case ENAMETOOLONG:
	case ELOOP:
	case EACCES:
	case EPERM:
	case EROFS:
	case ETXTBSY: code = "INVALID_ARGUMENT"; break;
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
	case EMFILE:
	case ENFILE: code = "LIMIT"; break;
	}
	return rpc_fail(err, code, "%s '%s': %s", what, path, strerror(errnum));
}

static const char *type_word(json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null: return "null";
	case json_type_boolean: return "a boolean";
	case json_type_double: return "a fraction";
	case json_type_int: return "an integer";
	case json_type_object: return "an object";
	case json_type_array: return "an array";
	case json_type_string: return "a string";
	}
	return "unknown";
}

int rpc_param_string(json_object *params, const char *name, bool required, const char **ret, size_t *ret_len,
                     struct rpc_error *err)
{
	json_object *v;
	if (!json_object_object_get_ex(params, name, &v) || json_object_is_type(v, json_type_null)) {
		if (required)
			return rpc_fail(err, "INVALID_ARGUMENT", "missing parameter '%s': pass it as a string", name);
		*ret = NULL;
		if (ret_len)
			*ret_len = 0;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return rpc_fail(err, "INVALID_ARGUMENT", "parameter '%s' must be a string, not %s", name, type_word(v));
	*ret = json_object_get_string(v);
	if (ret_len)
		*ret_len = (size_t)json_object_get_string_len(v);
	return 1;
}

int rpc_param_int(json_object *params, const char *name, int64_t def, int64_t min, int64_t max, bool clamp,
                  int64_t *ret, struct rpc_error *err)
{
	json_object *v;
	if (!json_object_object_get_ex(params, name, &v) || json_object_is_type(v, json_type_null)) {
		*ret = def;
		return 0;
	}
	if (!json_object_is_type(v, json_type_int))
		return rpc_fail(err, "INVALID_ARGUMENT", "parameter '%s' must be an integer, not %s", name,
		                type_word(v));
	errno = 0;
	int64_t x = json_object_get_int64(v);
	if (errno == ERANGE)
		x = INT64_MAX;
	if (x < min)
		return rpc_fail(err, "INVALID_ARGUMENT", "parameter '%s' is %" PRId64 "; it must be at least %" PRId64,
		                name, x, min);
	if (x > max) {
		if (!clamp)
			return rpc_fail(err, "INVALID_ARGUMENT",
			                "parameter '%s' is %" PRId64 "; it must be at most %" PRId64, name, x, max);
		x = max;
	}
	*ret = x;
	return 1;
}

int rpc_param_bool(json_object *params, const char *name, bool def, bool *ret, struct rpc_error *err)
{
	json_object *v;
	if (!json_object_object_get_ex(params, name, &v) || json_object_is_type(v, json_type_null)) {
		*ret = def;
		return 0;
	}
	if (!json_object_is_type(v, json_type_boolean))
		return rpc_fail(err, "INVALID_ARGUMENT", "parameter '%s' must be true or false, not %s", name,
		                type_word(v));
	*ret = json_object_get_boolean(v);
	return 1;
}

void rpc_sink_set(rpc_sink_fn fn, void *data)
{
	sink_fn = fn;
	sink_data = data;
}

/* The serialized frame (owned by frame), *ret_len bytes; json-c returns
 * NULL only when it cannot allocate, and that aborts (xalloc.h). */
static const char *frame_text(json_object *frame, size_t *ret_len)
{
	const char *s =
	    json_object_to_json_string_length(frame, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, ret_len);
	if (!s)
		cp_oom();
	return s;
}

static void send_frame(json_object *frame)
{
	size_t len;
	const char *s = frame_text(frame, &len);
	if (sink_fn)
		sink_fn(s, len, sink_data);
}

static json_object *frame_new(json_object *id)
{
	json_object *frame = xjson_object();
	xjson_add(frame, "jsonrpc", xjson_string("2.0"));
	/* The frame holds its own reference to the borrowed id. */
	xjson_add(frame, "id", id ? json_object_get(id) : NULL);
	return frame;
}

void rpc_send_error(json_object *id, const struct rpc_error *err)
{
	json_object *frame = frame_new(id);
	json_object *e = xjson_object();
	xjson_add(e, "code", xjson_int64(err->code));
	xjson_add(e, "message", xjson_string(err->message));
	json_object *data = xjson_object();
	xjson_add(data, "code", xjson_string(err->data_code));
	xjson_add(e, "data", data);
	xjson_add(frame, "error", e);
	send_frame(frame);
	json_object_put(frame);
}

void rpc_send_result(json_object *id, json_object *result)
{
	json_object *frame = frame_new(id);
	xjson_add(frame, "result", result);
	size_t len;
	const char *s = frame_text(frame, &len);
	if (len + 1 > PROTO_MAX_FRAME) {
		struct rpc_error err;
		rpc_fail(&err, "LIMIT",
		         "reply of %zu bytes exceeds the %u-byte limit; ask for less at once (for "
		         "example fewer lines with read's limit)",
		         len, PROTO_MAX_FRAME);
		hlog_warn("%s", err.message);
		rpc_send_error(id, &err);
	} else if (sink_fn) {
		sink_fn(s, len, sink_data);
	}
	json_object_put(frame);
}

int rpc_request_parse(const char *line, size_t len, json_object **ret_root, json_object **ret_id,
                      const char **ret_method, json_object **ret_params, struct rpc_error *err)
{
	*ret_root = NULL;
	*ret_id = NULL;
	json_tokener *tok = json_tokener_new_ex(JSON_TOKENER_DEFAULT_DEPTH);
	if (!tok) /* json-c fails only to allocate */
		cp_oom();
	json_object *root = json_tokener_parse_ex(tok, line, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	size_t end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (root && end < len && isspace((unsigned char)line[end]))
		end++;
	if (!root || jerr != json_tokener_success || end != len) {
		json_object_put(root);
		return rpc_fail_code(err, PROTO_ERR_PARSE, "INVALID_ARGUMENT",
		                     "request is not valid JSON (%s); send one JSON-RPC object per line",
		                     jerr == json_tokener_continue  ? "incomplete"
		                     : jerr != json_tokener_success ? json_tokener_error_desc(jerr)
		                                                    : "trailing data");
	}
	*ret_root = root;
	if (!json_object_is_type(root, json_type_object))
		return rpc_fail_code(err, PROTO_ERR_INVALID_REQUEST, "INVALID_ARGUMENT",
		                     "request must be a JSON object, not %s", type_word(root));
	json_object *id;
	if (!json_object_object_get_ex(root, "id", &id) || json_object_is_type(id, json_type_null))
		return 1;
	if (!json_object_is_type(id, json_type_int) && !json_object_is_type(id, json_type_string))
		return rpc_fail_code(err, PROTO_ERR_INVALID_REQUEST, "INVALID_ARGUMENT",
		                     "request id must be an integer or a string, not %s", type_word(id));
	*ret_id = id;
	json_object *v;
	if (json_object_object_get_ex(root, "jsonrpc", &v) &&
	    (!json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), "2.0")))
		return rpc_fail_code(err, PROTO_ERR_INVALID_REQUEST, "INVALID_ARGUMENT", "\"jsonrpc\" must be \"2.0\"");
	if (!json_object_object_get_ex(root, "method", &v) || !json_object_is_type(v, json_type_string))
		return rpc_fail_code(err, PROTO_ERR_INVALID_REQUEST, "INVALID_ARGUMENT",
		                     "request has no \"method\" string");
	*ret_method = json_object_get_string(v);
	if (!json_object_object_get_ex(root, "params", &v) || json_object_is_type(v, json_type_null)) {
		v = xjson_object();
		xjson_add(root, "params", v);
	} else if (!json_object_is_type(v, json_type_object)) {
		return rpc_fail_code(err, PROTO_ERR_INVALID_PARAMS, "INVALID_ARGUMENT",
		                     "\"params\" must be an object, not %s", type_word(v));
	}
	*ret_params = v;
	return 0;
}

bool rpc_id_scan(const char *buf, size_t len, int64_t *ret_id)
{
	for (const char *p = buf; (p = memmem(p, len - (size_t)(p - buf), "\"id\"", 4)); p += 4) {
		if (p > buf && p[-1] == '\\')
			continue;
		const char *q = p + 4, *end = buf + len;
		while (q < end && isspace((unsigned char)*q))
			q++;
		if (q >= end || *q != ':')
			continue;
		q++;
		while (q < end && isspace((unsigned char)*q))
			q++;
		const char *digits = q;
		if (q < end && *q == '-')
			q++;
		int64_t v = 0;
		int n = 0;
		for (; q < end && isdigit((unsigned char)*q) && n < 18; q++, n++)
			v = v * 10 + (*q - '0');
		if (n == 0 || (q < end && isdigit((unsigned char)*q)))
			continue;
		*ret_id = *digits == '-' ? -v : v;
		return true;
	}
	return false;
}
