/* args.c: typed access to tool arguments with actionable errors. */
#include "args.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "../base/id.h"

static const char *type_name(struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null: return "null";
	case json_type_boolean: return "a boolean";
	case json_type_double: return "a number with a fraction";
	case json_type_int: return "an integer";
	case json_type_object: return "an object";
	case json_type_array: return "an array";
	case json_type_string: return "a string";
	}
	return "a value";
}

int tool_args_given(struct json_object *args, const char *name, struct json_object **ret_value)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(args, name, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (ret_value)
		*ret_value = v;
	return 1;
}

static int args_string(struct json_object *args, const char *name, int required, int allow_nul, const char **ret,
                       struct cp_error **err)
{
	struct json_object *v = NULL;
	if (!tool_args_given(args, name, &v)) {
		if (required)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' is required (a string)", name);
		*ret = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' must be a string, not %s", name,
		                    type_name(v));
	/* A NUL inside would silently cut a path, id or command short. */
	if (!allow_nul && strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument '%s' contains a NUL character (\\u0000), which no path, id or "
		                    "command may hold; remove it",
		                    name);
	*ret = json_object_get_string(v);
	return 0;
}

int tool_args_string(struct json_object *args, const char *name, int required, const char **ret, struct cp_error **err)
{
	return args_string(args, name, required, 0, ret, err);
}

int tool_args_text(struct json_object *args, const char *name, int required, const char **ret, size_t *ret_len,
                   struct cp_error **err)
{
	if (args_string(args, name, required, 1, ret, err) < 0)
		return -1;
	struct json_object *v = NULL;
	if (ret_len)
		*ret_len =
		    *ret && json_object_object_get_ex(args, name, &v) ? (size_t)json_object_get_string_len(v) : 0;
	return 0;
}

int tool_args_int(struct json_object *args, const char *name, int64_t def, int64_t min, int64_t max, int64_t *ret,
                  struct cp_error **err)
{
	struct json_object *v = NULL;
	if (!tool_args_given(args, name, &v)) {
		*ret = def;
		return 0;
	}
	int64_t n;
	if (json_object_is_type(v, json_type_int)) {
		n = json_object_get_int64(v);
	} else if (json_object_is_type(v, json_type_double) &&
	           json_object_get_double(v) == (double)(int64_t)json_object_get_double(v)) {
		n = (int64_t)json_object_get_double(v); /* 1000.0 is an integer too */
	} else {
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' must be an integer, not %s", name,
		                    type_name(v));
	}
	if (n < min || n > max)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' is %lld; it must be in %lld..%lld",
		                    name, (long long)n, (long long)min, (long long)max);
	*ret = n;
	return 0;
}

int tool_args_bool(struct json_object *args, const char *name, int def, int *ret, struct cp_error **err)
{
	struct json_object *v = NULL;
	if (!tool_args_given(args, name, &v)) {
		*ret = def;
		return 0;
	}
	if (!json_object_is_type(v, json_type_boolean))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' must be true or false, not %s", name,
		                    type_name(v));
	*ret = json_object_get_boolean(v);
	return 0;
}

int tool_args_id(struct json_object *args, const char *name, const char *prefix, const char *hint, const char **ret,
                 struct cp_error **err)
{
	const char *s = NULL;
	if (!tool_args_given(args, name, NULL))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "argument '%s' is required (a string like '%s…'); %s",
		                    name, prefix, hint);
	if (tool_args_string(args, name, 1, &s, err) < 0)
		return -1;
	if (!id_valid(s, prefix))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument '%s' is '%.80s', which is not a valid id ('%s' followed by %d "
		                    "lowercase letters and digits); %s",
		                    name, s, prefix, ID_RANDOM_CHARS, hint);
	*ret = s;
	return 0;
}

int tool_args_only(struct json_object *args, const char *const *known, struct cp_error **err)
{
	json_object_object_foreach(args, key, val)
	{
		(void)val;
		int ok = 0;
		for (const char *const *k = known; *k; k++)
			if (strcmp(*k, key) == 0)
				ok = 1;
		if (!ok) {
			char list[512] = "";
			size_t o = 0;
			for (const char *const *k = known; *k && o < sizeof(list); k++)
				o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", *k);
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "unknown argument '%.64s'; %s%s", key,
			                    list[0] ? "this tool accepts: " : "this tool takes no arguments", list);
		}
	}
	return 0;
}

int tool_args_sandbox(struct json_object *args, const char *const *known, const char **ret_sandbox_id,
                      struct cp_error **err)
{
	if (tool_args_only(args, known, err) < 0)
		return -1;
	return tool_args_id(args, "sandbox_id", "sbx_", "call sandbox_list to see the sandboxes, or sandbox_create",
	                    ret_sandbox_id, err);
}
