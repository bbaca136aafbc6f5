/* fuzz_mcp_request.c: libFuzzer harness over the MCP JSON-RPC dispatcher
 * (mcp/dispatch.c via mcp_dispatch_text): each input is one raw request body,
 * dispatched once stateless (no session), once under a fake session id
 * that may also create a session, and once as an HTTP POST whose MCP 2026-07-28
 * routing headers are taken from the body itself (the claimed version, the
 * method, params.name), so the header checks of mcp/route_headers.c see
 * client-chosen bytes. The server is built once with a two-tool
 * fake table and never listens. Checks beyond the sanitizers: a reply is one
 * line of strict JSON, an object or an array (what both transports send as
 * is) in valid UTF-8 (see check_reply).
 * Built with clang -fsanitize=fuzzer by `make fuzz`; replayed with gcc over
 * corpus/ and regressions/ by `make unit` (replay_main.c). */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/log.h"
#include "mcp/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* echo: returns a copy of its arguments; {"raw": v} returns v itself, which
 * need not be an object (the dispatcher's "no result object" path). */
static int tool_echo(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                     struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)call;
	(void)err;
	struct json_object *raw;
	if (json_object_object_get_ex(args, "raw", &raw)) {
		*ret_result = json_object_get(raw);
		return 0;
	}
	struct json_object *copy = NULL;
	if (json_object_deep_copy(args, &copy, NULL) < 0)
		return cp_error_set(err, CP_ERR_INTERNAL, "echo: copy failed");
	*ret_result = copy;
	return 0;
}

/* fail: an error naming its arguments; {"silent": true} fails without one. */
static int tool_fail(const struct mcp_call *call, const struct mcp_args *margs, struct json_object **ret_result,
                     struct cp_error **err)
{
	struct json_object *args = mcp_args_object(margs);
	(void)ret_result;
	if (json_object_object_get_ex(args, "silent", NULL))
		return -1;
	return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s failed (session %s): %s", call->tool,
	                    call->session_id ? call->session_id : "-",
	                    json_object_to_json_string_ext(args, JSON_C_TO_STRING_PLAIN));
}

/* echo's arguments: one of each kind the argument checker knows, so the
 * fuzzer reaches every refusal (mcp/tool_args.c). */
static const struct mcp_arg echo_args[] = {
    {.name = "raw", .type = MCP_ARG_ANY},
    {.name = "s", .type = MCP_ARG_STRING, .max_length = 8, .min_length = 1},
    {.name = "mode", .type = MCP_ARG_STRING, .enum_values = (const char *const[]){"a", "b", NULL}},
    {.name = "id", .type = MCP_ARG_STRING, .id_prefix = "sbx_", .hint = "use an id"},
    {.name = "text", .type = MCP_ARG_STRING, .flags = MCP_ARG_NUL_OK},
    {.name = "n", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_MIN | MCP_ARG_MAX, .min = -5, .max = 10},
    {.name = "x", .type = MCP_ARG_NUMBER, .flags = MCP_ARG_TEXT_TOO},
    {.name = "b", .type = MCP_ARG_BOOLEAN},
    {.name = "list",
     .type = MCP_ARG_ARRAY,
     .flags = MCP_ARG_MAP_TOO,
     .items = (const struct mcp_arg[]){{.name = "path", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
                                       {.name = "sha256", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
                                       {0}}},
    {0}};
static const struct mcp_arg echo_out[] = {{0}};
static const struct mcp_arg fail_args[] = {{.name = "silent", .type = MCP_ARG_BOOLEAN}, {0}};

static const struct mcp_tool fuzz_tools[] = {
    {"echo", "Echo", "Returns its arguments.", echo_args, echo_out, MCP_HINT_READ_ONLY, tool_echo},
    {"fail", NULL, "Always fails.", fail_args, NULL, MCP_HINT_DESTRUCTIVE | MCP_HINT_OPEN_WORLD, tool_fail},
};

static struct mcp_server *fuzz_server(void)
{
	static struct mcp_server *server;
	if (server)
		return server;
	log_set_level(LOG_LEVEL_ERROR); /* one info line per tools/call would dominate the run */
	struct mcp_server_options opts = {
	    .name = "chat2sbx-fuzz",
	    .version = "0.0.0",
	    .instructions = "fuzzing",
	    .max_sessions = 64, /* small, so eviction is exercised too */
	};
	struct cp_error *err = NULL;
	if (mcp_server_new(&opts, fuzz_tools, sizeof(fuzz_tools) / sizeof(fuzz_tools[0]), NULL, &server, &err) < 0) {
		fprintf(stderr, "fuzz_mcp_request: mcp_server_new: %s\n", err->message);
		abort();
	}
	return server;
}

/* Strict JSON, UTF-8 not checked: json-c keeps a string's bytes as they are. */
static struct json_object *parse_lax_utf8(const char *text, size_t n)
{
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *v = json_tokener_parse_ex(tok, text, (int)n);
	int ok = json_tokener_get_error(tok) == json_tokener_success && json_tokener_get_parse_end(tok) == n;
	json_tokener_free(tok);
	if (!ok) {
		json_object_put(v);
		return NULL;
	}
	return v;
}

/* A reply must be one line of strict JSON in valid UTF-8 (messages quoting a
 * client string once cut a UTF-8 sequence: regressions/fuzz_mcp_request/
 * utf8-cut-*). FUZZ_MCP_STRICT_UTF8=0 relaxes the UTF-8 part. */
static void check_reply(const char *reply)
{
	static int strict_utf8 = -1;
	if (strict_utf8 < 0) {
		const char *e = getenv("FUZZ_MCP_STRICT_UTF8");
		strict_utf8 = !(e && strcmp(e, "0") == 0);
	}
	if (!reply)
		return;
	size_t n = strlen(reply);
	if (memchr(reply, '\n', n)) {
		fprintf(stderr, "fuzz_mcp_request: reply has a newline: %s\n", reply);
		abort();
	}
	struct json_object *v = NULL;
	if (strict_utf8 ? mcp_json_parse(reply, n, &v) < 0 : !(v = parse_lax_utf8(reply, n))) {
		fprintf(stderr, "fuzz_mcp_request: reply is not valid JSON%s: %s\n", strict_utf8 ? " (UTF-8)" : "",
		        reply);
		abort();
	}
	if (!json_object_is_type(v, json_type_object) && !json_object_is_type(v, json_type_array)) {
		fprintf(stderr, "fuzz_mcp_request: reply is neither an object nor an array: %s\n", reply);
		abort();
	}
	json_object_put(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_server *server = fuzz_server();
	/* An exact-size copy, so a read past the body is an ASan report. */
	char *body = malloc(size ? size : 1);
	if (!body)
		return 0;
	if (size)
		memcpy(body, data, size);

	char *reply = mcp_dispatch_text(server, body, size, NULL, NULL);
	check_reply(reply);
	free(reply);

	char *new_session = NULL;
	reply = mcp_dispatch_text(server, body, size, "0123456789abcdef0123456789abcdef", &new_session);
	check_reply(reply);
	free(reply);
	free(new_session);

	/* As an HTTP POST would carry it: routing headers from the body. */
	struct json_object *value = NULL, *m, *params, *meta, *v;
	char why[300];
	if (mcp_json_parse_request(body, size, &value, why, sizeof(why)) == 0) {
		struct mcp_route_headers h = {.protocol_version = "2026-07-28", .protocol_version_count = 1};
		if (json_object_object_get_ex(value, "method", &m) && json_object_is_type(m, json_type_string)) {
			h.method = json_object_get_string(m);
			h.method_count = 1;
		}
		if (json_object_object_get_ex(value, "params", &params) &&
		    json_object_object_get_ex(params, "name", &v) && json_object_is_type(v, json_type_string)) {
			h.name = json_object_get_string(v);
			h.name_count = 1 + (size & 1); /* now and then twice */
		}
		if (json_object_object_get_ex(params, "_meta", &meta) &&
		    json_object_object_get_ex(meta, "io.modelcontextprotocol/protocolVersion", &v) &&
		    json_object_is_type(v, json_type_string))
			h.protocol_version = json_object_get_string(v);
		struct mcp_sink sink = {.headers = &h, .owner = 7};
		struct json_object *r = mcp_dispatch_sink(server, value, NULL, NULL, &sink);
		char *text = r ? mcp_json_text(r) : NULL;
		check_reply(text);
		free(text);
		json_object_put(r);
		json_object_put(value);
	}

	free(body);
	return 0;
}
