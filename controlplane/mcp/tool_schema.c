/* tool_schema.c: tools/list, generated from the tool table's declarations
 * (struct mcp_arg, mcp.h): each tool's inputSchema and outputSchema are
 * built from the same data tool_args.c checks calls against, once at start
 * and in a fixed order, so they are the same bytes every time.
 * Optional arguments are advertised as nullable: strict clients (OpenAI
 * strict function calling, the openai package's toStrictJsonSchema) list
 * every property in "required" and send null for one they leave out, and
 * tool_args.c takes null as "not given". Such a property is one schema
 * with its type and bounds at the top and "null" beside the type
 * ({"type": ["integer", "null"], "minimum": …}, an enum's values with null
 * among them): the one form that the openai strict converter, the OpenAI
 * Agents SDK, the AI SDK and LangChain's MCP adapters all keep typed with
 * its bounds (issue 25: LangChain's adapters drop an anyOf whose branches
 * are not objects, so the earlier anyOf [T, {"type": "null"}] reached its
 * models untyped). The MCP Inspector's schema lint warns about type arrays
 * (rule type-union, a portability note for single-type dialects); it keeps
 * them typed and exits 0. */
#include "internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

static const char *type_word(enum mcp_arg_type t)
{
	switch (t) {
	case MCP_ARG_STRING: return "string";
	case MCP_ARG_INTEGER: return "integer";
	case MCP_ARG_NUMBER: return "number";
	case MCP_ARG_BOOLEAN: return "boolean";
	case MCP_ARG_OBJECT: return "object";
	case MCP_ARG_ARRAY: return "array";
	case MCP_ARG_ANY: break;
	}
	return NULL;
}

static struct json_object *object_schema(const struct mcp_arg *decl, int output);

/* The schema of one property without its description: type and bounds;
 * nullable: null is a value too (an optional argument's "not given"). */
static struct json_object *value_schema(const struct mcp_arg *d, int nullable)
{
	struct json_object *p = xjson_object();
	if (type_word(d->type) && nullable) {
		struct json_object *types = xjson_array();
		xjson_append(types, xjson_string(type_word(d->type)));
		xjson_append(types, xjson_string("null"));
		xjson_add(p, "type", types);
	} else if (type_word(d->type)) {
		xjson_add(p, "type", xjson_string(type_word(d->type)));
	}
	if (d->type == MCP_ARG_STRING) {
		if (d->min_length)
			xjson_add(p, "minLength", xjson_int64((int64_t)d->min_length));
		if (d->max_length)
			xjson_add(p, "maxLength", xjson_int64((int64_t)d->max_length));
		if (d->id_prefix) {
			char pattern[64];
			snprintf(pattern, sizeof(pattern), "^%s[a-z2-7]{%d}$", d->id_prefix, ID_RANDOM_CHARS);
			xjson_add(p, "pattern", xjson_string(pattern));
		}
		if (d->enum_values) {
			struct json_object *e = xjson_array();
			for (const char *const *v = d->enum_values; *v; v++)
				xjson_append(e, xjson_string(*v));
			if (nullable) /* an enum lists every value, null too (JSON Schema 2020-12, 6.1.2) */
				xjson_append(e, NULL);
			xjson_add(p, "enum", e);
		}
	}
	if (d->type == MCP_ARG_INTEGER) {
		if (d->flags & MCP_ARG_MIN)
			xjson_add(p, "minimum", xjson_int64(d->min));
		if (d->flags & MCP_ARG_MAX)
			xjson_add(p, "maximum", xjson_int64(d->max));
	}
	if (d->type == MCP_ARG_ARRAY) {
		struct json_object *items = d->items ? object_schema(d->items, 0) : xjson_object();
		if (!d->items)
			xjson_add(items, "type", xjson_string("object"));
		xjson_add(p, "items", items);
	}
	return p;
}

/* A boolean or one of d's strings: {"anyOf": [{"type": "boolean"},
 * {"type": "string", "enum": […]}]}, one type per branch. */
static struct json_object *bool_or_enum_schema(const struct mcp_arg *d)
{
	struct json_object *p = xjson_object(), *any = xjson_array(), *b = xjson_object();
	xjson_add(b, "type", xjson_string("boolean"));
	struct mcp_arg as_string = {.type = MCP_ARG_STRING, .enum_values = d->enum_values};
	xjson_append(any, b);
	xjson_append(any, value_schema(&as_string, 0));
	xjson_add(p, "anyOf", any);
	if (d->description)
		xjson_add(p, "description", xjson_string(d->description));
	return p;
}

static struct json_object *property_schema(const struct mcp_arg *d, int output)
{
	if (d->flags & MCP_ARG_OR_ENUM)
		return bool_or_enum_schema(d); /* output only (decl_check) */
	struct json_object *p = value_schema(d, !output && !(d->flags & MCP_ARG_REQUIRED));
	if (d->description)
		xjson_add(p, "description", xjson_string(d->description));
	return p;
}

/* {"type":"object","properties":{…},"required":[…]} and, for arguments,
 * "additionalProperties": false (tool_args.c refuses unknown ones). */
static struct json_object *object_schema(const struct mcp_arg *decl, int output)
{
	struct json_object *o = xjson_object(), *props = xjson_object(), *required = xjson_array();
	xjson_add(o, "type", xjson_string("object"));
	xjson_add(o, "properties", props);
	for (const struct mcp_arg *d = decl; d && d->name; d++) {
		xjson_add(props, d->name, property_schema(d, output));
		if (d->flags & MCP_ARG_REQUIRED)
			xjson_append(required, xjson_string(d->name));
	}
	if (json_object_array_length(required))
		xjson_add(o, "required", required);
	else
		json_object_put(required);
	if (!output)
		xjson_add(o, "additionalProperties", xjson_bool(false));
	return o;
}

struct json_object *mcp_tool_schema(const struct mcp_arg *decl, int output)
{
	return object_schema(decl, output);
}

/* Refuses a declaration the generator or the checker could not honour (a
 * table bug, found at start): bounds on the wrong type, an inverted range,
 * array items that are not strings, a name given twice, an output-only
 * form among arguments (output: decl is a tool's output). */
static int decl_check(const char *tool, const struct mcp_arg *decl, int output, struct cp_error **err)
{
	for (const struct mcp_arg *d = decl; d && d->name; d++) {
		const char *bad = NULL;
		if (!d->type || d->type > MCP_ARG_ANY)
			bad = "has no type";
		else if ((d->flags & (MCP_ARG_MIN | MCP_ARG_MAX)) && d->type != MCP_ARG_INTEGER)
			bad = "has a range but is not an integer";
		else if ((d->flags & MCP_ARG_MIN) && (d->flags & MCP_ARG_MAX) && d->min > d->max)
			bad = "has a minimum above its maximum";
		else if ((d->flags & MCP_ARG_OR_ENUM) && (!output || d->type != MCP_ARG_BOOLEAN || !d->enum_values))
			bad = "is a boolean-or-enum but not an output boolean with values";
		else if ((d->min_length || d->max_length || (d->enum_values && !(d->flags & MCP_ARG_OR_ENUM)) ||
		          d->id_prefix || (d->flags & MCP_ARG_NUL_OK)) &&
		         d->type != MCP_ARG_STRING)
			bad = "has string bounds but is not a string";
		else if (d->max_length && d->min_length > d->max_length)
			bad = "has a minLength above its maxLength";
		else if ((d->flags & MCP_ARG_TEXT_TOO) && d->type != MCP_ARG_NUMBER)
			bad = "takes text too but is not a number";
		else if ((d->items || (d->flags & MCP_ARG_MAP_TOO)) && d->type != MCP_ARG_ARRAY)
			bad = "has items but is not an array";
		for (const struct mcp_arg *m = d->items; !bad && m && m->name; m++)
			if (m->type != MCP_ARG_STRING || !(m->flags & MCP_ARG_REQUIRED) || m->items)
				bad = "has an item member that is not a required string";
		for (const struct mcp_arg *e = decl; !bad && e < d; e++)
			if (strcmp(e->name, d->name) == 0)
				bad = "is declared twice";
		if (bad)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "tool '%s': argument '%s' %s", tool, d->name,
			                    bad);
	}
	return 0;
}

static struct json_object *annotations_new(const struct mcp_tool *t)
{
	/* All four hints are always present: ChatGPT asks the user to confirm
	 * any tool whose readOnlyHint is not true, and the spec defaults for a
	 * missing hint (destructive, open world) are the cautious ones. */
	struct json_object *a = xjson_object();
	if (t->title)
		xjson_add(a, "title", xjson_string(t->title));
	xjson_add(a, "readOnlyHint", xjson_bool(t->hints & MCP_HINT_READ_ONLY));
	xjson_add(a, "destructiveHint", xjson_bool(t->hints & MCP_HINT_DESTRUCTIVE));
	xjson_add(a, "idempotentHint", xjson_bool(t->hints & MCP_HINT_IDEMPOTENT));
	xjson_add(a, "openWorldHint", xjson_bool(t->hints & MCP_HINT_OPEN_WORLD));
	return a;
}

/* Builds the tools/list result text ({"tools": [...]}, MCP server/tools,
 * "Listing Tools" and "Tool") from tools[0..n_tools) (borrowed). A table
 * that cannot be served (a tool without name, description or handler, a
 * name twice, a declaration decl_check refuses) fails here, at start, with
 * INVALID_ARGUMENT naming the tool. Returns 0 and an owned string in
 * *ret_json. */
int mcp_tools_list_build(const struct mcp_tool *tools, size_t n_tools, char **ret_json, struct cp_error **err)
{
	_cleanup_json_ struct json_object *result = xjson_object();
	struct json_object *list = xjson_array();
	xjson_add(result, "tools", list);
	for (size_t i = 0; i < n_tools; i++) {
		const struct mcp_tool *t = &tools[i];
		if (!t->name || !t->description || !t->handler)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "tool #%zu: name, description and handler are required", i);
		for (size_t j = 0; j < i; j++)
			if (strcmp(tools[j].name, t->name) == 0)
				return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "tool '%s' is listed twice", t->name);
		if (decl_check(t->name, t->args, 0, err) < 0 || decl_check(t->name, t->output, 1, err) < 0)
			return -1;
		struct json_object *o = xjson_object();
		xjson_add(o, "name", xjson_string(t->name));
		if (t->title)
			xjson_add(o, "title", xjson_string(t->title));
		xjson_add(o, "description", xjson_string(t->description));
		xjson_add(o, "inputSchema", mcp_tool_schema(t->args, 0));
		if (t->output)
			xjson_add(o, "outputSchema", mcp_tool_schema(t->output, 1));
		xjson_add(o, "annotations", annotations_new(t));
		xjson_append(list, o);
	}
	*ret_json = xstrdup(xjson_text(result, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	return 0;
}

/* The tools array of a mcp_tools_list_build text (borrowed), as its own
 * text (owned), written with the same flags; NULL when it does not parse
 * (a programmer error: the text came from mcp_tools_list_build). */
char *mcp_tools_array_text(const char *list_json)
{
	_cleanup_json_ struct json_object *result = NULL;
	struct json_object *tools;
	if (mcp_json_parse(list_json, strlen(list_json), &result) < 0 ||
	    !json_object_object_get_ex(result, "tools", &tools))
		return NULL;
	return xstrdup(xjson_text(tools, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Serializes the tools member of a tools/list result: the prebuilt text
 * (the object's userdata, the server's, borrowed) as it is. */
static int prebuilt_to_json(struct json_object *jso, struct printbuf *pb, int level, int flags)
{
	(void)level;
	(void)flags;
	const char *text = json_object_get_userdata(jso);
	return printbuf_memappend(pb, text, (int)strlen(text));
}

/* Answers tools/list (MCP server/tools, "Listing Tools"; one page, no
 * cursor). id is borrowed; returns an owned response. Each call makes fresh
 * objects, so concurrent requests share no json-c object (json-c reference
 * counts and serialization caches are not thread-safe); the result is a
 * plain object a caller may add to (2026-07-28's cache hints), but its
 * tools member is opaque: an array without elements whose serialization is
 * the prebuilt list, so a call neither parses nor builds the list (issue
 * 27). */
struct json_object *mcp_tools_list(struct mcp_server *server, struct json_object *id)
{
	struct json_object *result = xjson_object(), *tools = json_object_new_array();
	if (!tools)
		cp_oom();
	json_object_set_serializer(tools, prebuilt_to_json, server->tools_array_json, NULL);
	xjson_add(result, "tools", tools);
	return mcp_rpc_result_new(id, result);
}
