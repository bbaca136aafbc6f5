/* files.c: read and write inside a sandbox, through its helper (no process
 * start per call). Paths are relative to /workspace or absolute inside the
 * sandbox; the helper resolves them there, never on the host. */
#include <json-c/json.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xjson.h"
#include "tools_internal.h"

#define FILES_TIMEOUT_MS 30000
#define READ_DEFAULT_LIMIT 2000

/* Copies args[name] (when given) into p under the same name, as given (file
 * content keeps its NULs). */
static void pass(const struct mcp_args *args, struct json_object *p, const char *name)
{
	struct json_object *v = mcp_args_value(args, name);
	if (v)
		xjson_add(p, name, json_object_get(v));
}

int tool_files_read(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	_cleanup_json_ struct json_object *p = xjson_object();
	pass(args, p, "path");
	xjson_add(p, "offset", xjson_int64(mcp_args_int(args, "offset", 1)));
	xjson_add(p, "limit", xjson_int64(mcp_args_int(args, "limit", READ_DEFAULT_LIMIT)));
	xjson_add(p, "max_bytes", xjson_int64(app->cfg->max_output_chars));
	xjson_add(p, "numbered", xjson_bool(mcp_args_bool(args, "line_numbers", 1)));
	return tools_helper_call(app, mcp_args_string(args, "sandbox_id", NULL), "file.read", p, FILES_TIMEOUT_MS, ret,
	                         err);
}

int tool_files_write(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                     struct cp_error **err)
{
	struct tools_app *app = call->app;
	_cleanup_json_ struct json_object *p = xjson_object();
	pass(args, p, "path");
	pass(args, p, "content");
	xjson_add(p, "create_dirs", xjson_bool(mcp_args_bool(args, "create_dirs", 0)));
	pass(args, p, "expected_sha256");
	return tools_helper_call(app, mcp_args_string(args, "sandbox_id", NULL), "file.write", p, FILES_TIMEOUT_MS, ret,
	                         err);
}

int tool_files_edit(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	_cleanup_json_ struct json_object *p = xjson_object();
	pass(args, p, "path");
	pass(args, p, "old_string");
	pass(args, p, "new_string");
	xjson_add(p, "replace_all", xjson_bool(mcp_args_bool(args, "replace_all", 0)));
	pass(args, p, "expected_sha256");
	return tools_helper_call(app, mcp_args_string(args, "sandbox_id", NULL), "file.edit", p, FILES_TIMEOUT_MS, ret,
	                         err);
}

/* apply_patch's expected_sha256 as the helper's path → sha256 map (owned,
 * in *ret; NULL when not given). The table checked its shape: an array of
 * {path, sha256} objects (the form strict clients can describe) or the map
 * itself (the earlier form, still accepted). Left here: a path given
 * twice. */
static int expected_list(const struct mcp_args *args, struct json_object **ret, struct cp_error **err)
{
	struct json_object *v = mcp_args_value(args, "expected_sha256");
	*ret = NULL;
	if (!v)
		return 0;
	if (json_object_is_type(v, json_type_object)) {
		*ret = json_object_get(v);
		return 0;
	}
	_cleanup_json_ struct json_object *map = xjson_object();
	size_t n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = json_object_array_get_idx(v, i);
		struct json_object *path = json_object_object_get(item, "path"),
		                   *sha = json_object_object_get(item, "sha256");
		const char *key = json_object_get_string(path);
		if (json_object_object_get_ex(map, key, NULL))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "expected_sha256 names '%.200s' twice; give each file once", key);
		xjson_add(map, key, json_object_get(sha));
	}
	*ret = TAKE_PTR(map);
	return 0;
}

int tool_files_apply_patch(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                           struct cp_error **err)
{
	struct tools_app *app = call->app;
	_cleanup_json_ struct json_object *p = xjson_object();
	struct json_object *expected = NULL;
	if (expected_list(args, &expected, err) < 0)
		return -1;
	pass(args, p, "patch");
	pass(args, p, "cwd");
	if (expected)
		xjson_add(p, "expected_sha256", expected);
	const char *id = mcp_args_string(args, "sandbox_id", NULL);
	if (tools_helper_call(app, id, "file.apply_patch", p, FILES_TIMEOUT_MS, ret, err) == 0)
		return 0;
	if ((*err)->code == CP_ERR_TIMEOUT)
		/* The helper carries on with a request whose answer nobody waits
		 * for: the patch may be half written now and whole later. */
		return cp_error_prefix(
		    err,
		    "apply_patch in sandbox '%s' did not answer within %d s, but the patch may still be "
		    "applying (or be applied already); before retrying, look at the files it touches "
		    "(read them, or run `git status`/`git diff` with bash)",
		    id, FILES_TIMEOUT_MS / 1000);
	return -1;
}

int tool_files_search(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                      struct cp_error **err)
{
	struct tools_app *app = call->app;
	_cleanup_json_ struct json_object *p = xjson_object();
	pass(args, p, "pattern");
	pass(args, p, "path");
	pass(args, p, "glob");
	xjson_add(p, "case_insensitive", xjson_bool(mcp_args_bool(args, "case_insensitive", 0)));
	xjson_add(p, "max_matches", xjson_int64(mcp_args_int(args, "max_matches", 200)));
	xjson_add(p, "max_bytes", xjson_int64(app->cfg->max_output_chars));
	return tools_helper_call(app, mcp_args_string(args, "sandbox_id", NULL), "file.search", p, FILES_TIMEOUT_MS,
	                         ret, err);
}

int tool_files_list(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	_cleanup_json_ struct json_object *p = xjson_object();
	pass(args, p, "path");
	pass(args, p, "glob");
	xjson_add(p, "depth", xjson_int64(mcp_args_int(args, "depth", 2)));
	xjson_add(p, "max_entries", xjson_int64(mcp_args_int(args, "max_entries", 1000)));
	return tools_helper_call(app, mcp_args_string(args, "sandbox_id", NULL), "file.list", p, FILES_TIMEOUT_MS, ret,
	                         err);
}
