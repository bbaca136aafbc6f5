/* files.c: read and write inside a sandbox, through its helper (no process
 * start per call). Paths are relative to /workspace or absolute inside the
 * sandbox; the helper resolves them there, never on the host. */
#include <json-c/json.h>
#include <string.h>

#include "../base/cleanup.h"
#include "args.h"
#include "tools_internal.h"

#define FILES_TIMEOUT_MS 30000
#define READ_DEFAULT_LIMIT 2000
#define READ_MAX_LIMIT 100000

int tool_files_read(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "path", "offset", "limit", NULL};
	const char *sandbox_id = NULL, *path = NULL;
	int64_t offset = 1, limit = READ_DEFAULT_LIMIT;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 || tool_args_string(args, "path", 1, &path, err) < 0 ||
	    tool_args_int(args, "offset", 1, 1, INT32_MAX, &offset, err) < 0 ||
	    tool_args_int(args, "limit", READ_DEFAULT_LIMIT, 1, READ_MAX_LIMIT, &limit, err) < 0)
		return -1;
	if (!*path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument 'path' is empty; give a file path relative to /workspace or absolute");
	_cleanup_json_ struct json_object *p = json_object_new_object();
	json_object_object_add(p, "path", json_object_new_string(path));
	json_object_object_add(p, "offset", json_object_new_int64(offset));
	json_object_object_add(p, "limit", json_object_new_int64(limit));
	json_object_object_add(p, "max_bytes", json_object_new_int(app->cfg->max_output_chars));
	return tools_helper_call(app, sandbox_id, "file.read", p, FILES_TIMEOUT_MS, ret, err);
}

int tool_files_write(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                     struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "path", "content", "create_dirs", "expected_sha256", NULL};
	const char *sandbox_id = NULL, *path = NULL, *content = NULL, *expected = NULL;
	int create_dirs = 0;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 || tool_args_string(args, "path", 1, &path, err) < 0 ||
	    tool_args_text(args, "content", 1, &content, NULL, err) < 0 ||
	    tool_args_bool(args, "create_dirs", 0, &create_dirs, err) < 0 ||
	    tool_args_string(args, "expected_sha256", 0, &expected, err) < 0)
		return -1;
	if (!*path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument 'path' is empty; give a file path relative to /workspace or absolute");
	_cleanup_json_ struct json_object *p = json_object_new_object();
	json_object_object_add(p, "path", json_object_new_string(path));
	struct json_object *c = NULL;
	json_object_object_get_ex(args, "content", &c);
	json_object_object_add(p, "content", json_object_get(c));
	json_object_object_add(p, "create_dirs", json_object_new_boolean(create_dirs));
	if (expected)
		json_object_object_add(p, "expected_sha256", json_object_new_string(expected));
	return tools_helper_call(app, sandbox_id, "file.write", p, FILES_TIMEOUT_MS, ret, err);
}
