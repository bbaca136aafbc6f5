/* fuzz_tool_args.c: libFuzzer harness over the tool-argument checker
 * (controlplane/mcp/tool_args.c, mcp_args_check and its accessors), which
 * judges the arguments object a model sends with every tools/call. The
 * input is JSON text (parsed strictly, as the MCP layer parses a request);
 * a non-object is skipped, as dispatch refuses it before the checker. The
 * declaration below uses every argument type and flag the tool table uses
 * (tools/table.c). On success every declared argument is read back through
 * its accessor and must keep its declared bounds; on failure *err is set. */
#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "mcp/mcp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const modes[] = {"text", "lines", "bytes", NULL};
static const char *const unknown[] = {"unknown", NULL};
static const struct mcp_arg ref_items[] = {
    {.name = "path", .type = MCP_ARG_STRING},
    {.name = "sha256", .type = MCP_ARG_STRING},
    {0},
};
static const struct mcp_arg decl[] = {
    {.name = "sandbox_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED, .id_prefix = "sbx_"},
    {.name = "command", .type = MCP_ARG_STRING, .min_length = 1, .max_length = 64},
    {.name = "content", .type = MCP_ARG_STRING, .flags = MCP_ARG_NUL_OK},
    {.name = "mode", .type = MCP_ARG_STRING, .enum_values = modes},
    {.name = "yield_time_ms", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_MIN | MCP_ARG_MAX, .min = 0, .max = 300000},
    {.name = "offset", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_MIN, .min = 1},
    {.name = "port", .type = MCP_ARG_NUMBER, .flags = MCP_ARG_TEXT_TOO},
    {.name = "tty", .type = MCP_ARG_BOOLEAN},
    {.name = "unsaved", .type = MCP_ARG_BOOLEAN, .flags = MCP_ARG_OR_ENUM, .enum_values = unknown},
    {.name = "expected", .type = MCP_ARG_ARRAY, .flags = MCP_ARG_MAP_TOO, .items = ref_items},
    {.name = "anything", .type = MCP_ARG_ANY},
    {0},
};

static void read_back(const struct mcp_args *a)
{
	for (const struct mcp_arg *d = decl; d->name; d++) {
		if (!mcp_args_given(a, d->name))
			continue;
		switch (d->type) {
		case MCP_ARG_STRING: {
			size_t len = 0;
			const char *s = mcp_args_string(a, d->name, &len);
			if (!s || (!(d->flags & MCP_ARG_NUL_OK) && strlen(s) != len)) {
				fprintf(stderr, "fuzz_tool_args: '%s' passed with a NUL or no text\n", d->name);
				abort();
			}
			break;
		}
		case MCP_ARG_INTEGER: {
			int64_t v = mcp_args_int(a, d->name, 0);
			if (((d->flags & MCP_ARG_MIN) && v < d->min) || ((d->flags & MCP_ARG_MAX) && v > d->max)) {
				fprintf(stderr, "fuzz_tool_args: '%s' = %lld passed out of range\n", d->name,
				        (long long)v);
				abort();
			}
			break;
		}
		case MCP_ARG_BOOLEAN:
			if (!(d->flags & MCP_ARG_OR_ENUM))
				(void)mcp_args_bool(a, d->name, 0);
			else
				(void)mcp_args_value(a, d->name);
			break;
		default: (void)mcp_args_value(a, d->name); break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	struct json_tokener *tok = json_tokener_new();
	if (!tok)
		abort();
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	struct json_object *args = json_tokener_parse_ex(tok, (const char *)data, (int)size);
	int ok = json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	if (!ok || !json_object_is_type(args, json_type_object)) {
		json_object_put(args);
		return 0;
	}
	struct mcp_args *a = NULL;
	struct cp_error *err = NULL;
	if (mcp_args_check(decl, args, &a, &err) >= 0) {
		read_back(a);
		mcp_args_free(a);
	} else if (!err) {
		fprintf(stderr, "fuzz_tool_args: refusal without an error\n");
		abort();
	}
	cp_error_free(err);
	json_object_put(args);
	return 0;
}
