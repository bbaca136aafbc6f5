/* schema_nullable.c: optional tool arguments advertised as nullable.
 * Strict clients (OpenAI strict function calling, and converters such as the
 * openai package's toStrictJsonSchema) require every property to be listed
 * in "required" and send null for an optional argument they leave out;
 * their converters refuse an optional property that does not accept null.
 * Every tool handler already treats null as "not given" (tools/args.h), so
 * the advertised inputSchema says so: an optional property P becomes
 * {"anyOf": [P, {"type": "null"}]} with P's title and description kept
 * outside, one type per branch (a type array is less portable: MCP
 * Inspector's schema lint, rule type-union). */
#include "internal.h"

#include <json-c/json.h>
#include <string.h>

static int type_is_null(struct json_object *type)
{
	if (json_object_is_type(type, json_type_string))
		return strcmp(json_object_get_string(type), "null") == 0;
	if (!json_object_is_type(type, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(type); i++)
		if (type_is_null(json_object_array_get_idx(type, i)))
			return 1;
	return 0;
}

static int accepts_null(struct json_object *schema)
{
	struct json_object *v = NULL;
	if (json_object_object_get_ex(schema, "type", &v))
		return type_is_null(v);
	if (json_object_object_get_ex(schema, "anyOf", &v) && json_object_is_type(v, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(v); i++)
			if (accepts_null(json_object_array_get_idx(v, i)))
				return 1;
		return 0;
	}
	return 0;
}

static int is_required(struct json_object *required, const char *name)
{
	if (!json_object_is_type(required, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(required); i++) {
		struct json_object *r = json_object_array_get_idx(required, i);
		if (json_object_is_type(r, json_type_string) && strcmp(json_object_get_string(r), name) == 0)
			return 1;
	}
	return 0;
}

/* Moves key (when present) from one object to another. */
static void move_key(struct json_object *from, struct json_object *to, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(from, key, &v))
		return;
	json_object_object_add(to, key, json_object_get(v));
	json_object_object_del(from, key);
}

static struct json_object *nullable_new(struct json_object *schema)
{
	struct json_object *outer = json_object_new_object();
	move_key(schema, outer, "title");
	move_key(schema, outer, "description");
	struct json_object *any = json_object_new_array();
	json_object_array_add(any, json_object_get(schema));
	struct json_object *null = json_object_new_object();
	json_object_object_add(null, "type", json_object_new_string("null"));
	json_object_array_add(any, null);
	json_object_object_add(outer, "anyOf", any);
	return outer;
}

void mcp_schema_optional_nullable(struct json_object *schema)
{
	if (!json_object_is_type(schema, json_type_object))
		return;
	struct json_object *props = NULL, *required = NULL, *items = NULL;
	if (json_object_object_get_ex(schema, "items", &items))
		mcp_schema_optional_nullable(items);
	if (!json_object_object_get_ex(schema, "properties", &props) || !json_object_is_type(props, json_type_object))
		return;
	json_object_object_get_ex(schema, "required", &required);
	/* Keys first: replacing a member while json-c walks the table is not
	 * something its foreach promises to survive. */
	size_t n = (size_t)json_object_object_length(props), k = 0;
	const char *keys[n ? n : 1];
	json_object_object_foreach(props, key, val)
	{
		(void)val;
		keys[k++] = key;
	}
	for (size_t i = 0; i < k; i++) {
		struct json_object *p = NULL;
		json_object_object_get_ex(props, keys[i], &p);
		mcp_schema_optional_nullable(p);
		if (is_required(required, keys[i]) || !json_object_is_type(p, json_type_object) || accepts_null(p))
			continue;
		json_object_object_add(props, keys[i], nullable_new(p));
	}
}
