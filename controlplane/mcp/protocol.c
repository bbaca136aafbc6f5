/* protocol.c: JSON-RPC 2.0 framing shared by both transports: strict parsing
 * of one message text, reply objects, serialization, and the list of MCP
 * protocol revisions we serve. Owns no state; never logs, never touches a
 * socket. */
#include "internal.h"

#include "../base/xalloc.h"
#include "../base/xjson.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

const char *const mcp_protocol_versions[] = {MCP_PROTOCOL_LATEST, "2025-06-18", "2025-03-26"};
const size_t mcp_protocol_versions_count = sizeof(mcp_protocol_versions) / sizeof(mcp_protocol_versions[0]);

/* A result {key: []} (owned), as the lists we have nothing for answer. */
struct json_object *mcp_empty_list_result(const char *key)
{
	struct json_object *result = xjson_object();
	xjson_add(result, key, xjson_array());
	return result;
}

/* The result of completion/complete (owned; server/utilities/completion):
 * nothing to complete. */
struct json_object *mcp_empty_completion_result(void)
{
	struct json_object *completion = xjson_object();
	xjson_add(completion, "values", xjson_array());
	xjson_add(completion, "total", xjson_int64(0));
	xjson_add(completion, "hasMore", xjson_bool(0));
	struct json_object *result = xjson_object();
	xjson_add(result, "completion", completion);
	return result;
}

/* True when version is one of the revisions we serve (MCP basic/lifecycle,
 * "Version Negotiation"; basic/transports, "Protocol Version Header"). */
int mcp_protocol_supported(const char *version)
{
	if (!version)
		return 0;
	for (size_t i = 0; i < mcp_protocol_versions_count; i++)
		if (strcmp(version, mcp_protocol_versions[i]) == 0)
			return 1;
	return 0;
}

static struct json_object *rpc_envelope(struct json_object *id)
{
	struct json_object *o = xjson_object();
	xjson_add(o, "jsonrpc", xjson_string("2.0"));
	/* The reply carries the request's id object itself (same type and
	 * value); json_object_get gives the reply its own reference. */
	xjson_add(o, "id", id ? json_object_get(id) : NULL);
	return o;
}

/* Builds a JSON-RPC 2.0 error response (JSON-RPC 2.0 section 5 and 5.1).
 * id is borrowed (NULL gives "id": null, which JSON-RPC reserves for
 * messages whose id could not be read); message is copied. Returns an owned
 * object. */
struct json_object *mcp_rpc_error_new(struct json_object *id, int code, const char *message)
{
	struct json_object *o = rpc_envelope(id);
	struct json_object *e = xjson_object();
	xjson_add(e, "code", xjson_int64(code));
	xjson_add(e, "message", xjson_string(message));
	xjson_add(o, "error", e);
	return o;
}

/* Builds a JSON-RPC 2.0 success response (JSON-RPC 2.0 section 5). id is
 * borrowed; result is owned and moves into the reply. Returns an owned
 * object. */
struct json_object *mcp_rpc_result_new(struct json_object *id, struct json_object *result)
{
	struct json_object *o = rpc_envelope(id);
	xjson_add(o, "result", result ? result : xjson_object());
	return o;
}

/* Serializes obj as one line of compact JSON (no newline inside, as the MCP
 * stdio transport requires: basic/transports, "stdio"). obj is borrowed;
 * returns an owned string, NULL when memory is exhausted. */
char *mcp_json_text(struct json_object *obj)
{
	return xstrdup(xjson_text(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

static int only_whitespace(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
			return 0;
	return 1;
}

/* Parses exactly one JSON value from text[0..len) (RFC 8259, strict: no
 * trailing data except whitespace, no NUL bytes, valid UTF-8). text is
 * borrowed and need not be NUL-terminated. Returns 0 and an owned value in
 * *ret_value (which may be NULL for the literal null), or -1 for a parse
 * error (JSON-RPC -32700). Does not block. */
int mcp_json_parse(const char *text, size_t len, struct json_object **ret_value)
{
	if (!text || len == 0 || memchr(text, '\0', len) || only_whitespace(text, len))
		return -1;
	struct json_tokener *tok = json_tokener_new_ex(64);
	if (!tok)
		return -1;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	struct json_object *v = json_tokener_parse_ex(tok, text, (int)len);
	enum json_tokener_error jerr = json_tokener_get_error(tok);
	int ok = 0;
	if (jerr == json_tokener_success) {
		size_t end = json_tokener_get_parse_end(tok);
		ok = end <= len && only_whitespace(text + end, len - end);
	} else if (jerr == json_tokener_continue) {
		/* A top-level number (or trailing whitespace) leaves the tokener
		 * waiting for more; a NUL byte tells it the input has ended. */
		v = json_tokener_parse_ex(tok, "", 1);
		ok = json_tokener_get_error(tok) == json_tokener_success;
	}
	json_tokener_free(tok);
	if (!ok) {
		if (v)
			json_object_put(v);
		return -1;
	}
	*ret_value = v;
	return 0;
}

/* A request's text: mcp_json_parse, then mcp_json_strict_check. On failure
 * why (always terminated) says what was wrong, for a -32700 reply. */
int mcp_json_parse_request(const char *text, size_t len, struct json_object **ret_value, char *why, size_t why_size)
{
	struct json_object *v = NULL;
	if (mcp_json_parse(text, len, &v) < 0) {
		snprintf(why, why_size, "the body is not valid JSON");
		return -1;
	}
	if (mcp_json_strict_check(text, len, why, why_size) < 0) {
		json_object_put(v);
		return -1;
	}
	*ret_value = v;
	return 0;
}

/* Writes a byte count the way a person reads a limit ("20 MiB", "1 KiB",
 * "1500 bytes") into buf, for the errors that name the body limit
 * (DESIGN.md, MCP surface: 413 with a JSON-RPC error naming the limit). */
void mcp_format_size(size_t bytes, char *buf, size_t size)
{
	if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
		snprintf(buf, size, "%zu MiB", bytes / (1024 * 1024));
	else if (bytes >= 1024 && bytes % 1024 == 0)
		snprintf(buf, size, "%zu KiB", bytes / 1024);
	else
		snprintf(buf, size, "%zu bytes", bytes);
}
