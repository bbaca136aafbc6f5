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
	static const char *const known[] = {"sandbox_id", "path", "offset", "limit", "line_numbers", NULL};
	const char *sandbox_id = NULL, *path = NULL;
	int64_t offset = 1, limit = READ_DEFAULT_LIMIT;
	int line_numbers = 1;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 || tool_args_string(args, "path", 1, &path, err) < 0 ||
	    tool_args_int(args, "offset", 1, 1, INT32_MAX, &offset, err) < 0 ||
	    tool_args_int(args, "limit", READ_DEFAULT_LIMIT, 1, READ_MAX_LIMIT, &limit, err) < 0 ||
	    tool_args_bool(args, "line_numbers", 1, &line_numbers, err) < 0)
		return -1;
	if (!*path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument 'path' is empty; give a file path relative to /workspace or absolute");
	_cleanup_json_ struct json_object *p = json_object_new_object();
	json_object_object_add(p, "path", json_object_new_string(path));
	json_object_object_add(p, "offset", json_object_new_int64(offset));
	json_object_object_add(p, "limit", json_object_new_int64(limit));
	json_object_object_add(p, "max_bytes", json_object_new_int(app->cfg->max_output_chars));
	json_object_object_add(p, "numbered", json_object_new_boolean(line_numbers));
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

/* Copies args[name] (when present) into p under the same name. */
static void pass(struct json_object *args, struct json_object *p, const char *name)
{
	struct json_object *v = NULL;
	if (tool_args_given(args, name, &v))
		json_object_object_add(p, name, json_object_get(v));
}

int tool_files_edit(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id",      "path", "old_string", "new_string", "replace_all",
	                                    "expected_sha256", NULL};
	const char *sandbox_id = NULL, *path = NULL, *old_s = NULL, *new_s = NULL, *expected = NULL;
	int replace_all = 0;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 || tool_args_string(args, "path", 1, &path, err) < 0 ||
	    tool_args_text(args, "old_string", 1, &old_s, NULL, err) < 0 ||
	    tool_args_text(args, "new_string", 1, &new_s, NULL, err) < 0 ||
	    tool_args_bool(args, "replace_all", 0, &replace_all, err) < 0 ||
	    tool_args_string(args, "expected_sha256", 0, &expected, err) < 0)
		return -1;
	if (!*path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument 'path' is empty; give a file path relative to /workspace or absolute");
	_cleanup_json_ struct json_object *p = json_object_new_object();
	pass(args, p, "path");
	pass(args, p, "old_string");
	pass(args, p, "new_string");
	json_object_object_add(p, "replace_all", json_object_new_boolean(replace_all));
	pass(args, p, "expected_sha256");
	return tools_helper_call(app, sandbox_id, "file.edit", p, FILES_TIMEOUT_MS, ret, err);
}

#define EXPECTED_HINT                                                                                                  \
	"give an array of {\"path\": …, \"sha256\": …} objects with the sha256 read returned for each "            \
	"file, e.g. [{\"path\": \"src/a.py\", \"sha256\": \"3f2a…\"}]"

/* apply_patch's expected_sha256 as the helper's path → sha256 map (owned,
 * in *ret; NULL when not given). The array of {path, sha256} objects is the
 * form strict clients can describe; the map, the earlier form, is still
 * accepted (README, apply_patch). A path given twice is refused. */
static int expected_list(struct json_object *args, struct json_object **ret, struct cp_error **err)
{
	struct json_object *v = NULL;
	*ret = NULL;
	if (!tool_args_given(args, "expected_sha256", &v))
		return 0;
	if (json_object_is_type(v, json_type_object)) {
		*ret = json_object_get(v);
		return 0;
	}
	if (!json_object_is_type(v, json_type_array))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument 'expected_sha256' is not an array; " EXPECTED_HINT);
	_cleanup_json_ struct json_object *map = json_object_new_object();
	size_t n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		struct json_object *item = json_object_array_get_idx(v, i), *path = NULL, *sha = NULL;
		int keys = json_object_is_type(item, json_type_object) ? json_object_object_length(item) : -1;
		if (keys != 2 || !json_object_object_get_ex(item, "path", &path) ||
		    !json_object_object_get_ex(item, "sha256", &sha) || !json_object_is_type(path, json_type_string) ||
		    !json_object_is_type(sha, json_type_string))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "expected_sha256[%zu] is not an object with exactly the strings 'path' and "
			                    "'sha256'; " EXPECTED_HINT,
			                    i);
		const char *key = json_object_get_string(path);
		if (strlen(key) != (size_t)json_object_get_string_len(path))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "expected_sha256[%zu].path contains a NUL character (\\u0000); remove it",
			                    i);
		if (json_object_object_get_ex(map, key, NULL))
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "expected_sha256 names '%.200s' twice; give each file once", key);
		json_object_object_add(map, key, json_object_get(sha));
	}
	*ret = json_object_get(map);
	return 0;
}

int tool_files_apply_patch(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                           struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "patch", "cwd", "expected_sha256", NULL};
	const char *sandbox_id = NULL, *patch = NULL, *cwd = NULL;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 ||
	    tool_args_text(args, "patch", 1, &patch, NULL, err) < 0 || tool_args_string(args, "cwd", 0, &cwd, err) < 0)
		return -1;
	if (!*patch)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument 'patch' is empty; give a patch starting with '*** Begin Patch' or a "
		                    "unified diff");
	_cleanup_json_ struct json_object *p = json_object_new_object();
	struct json_object *expected = NULL;
	if (expected_list(args, &expected, err) < 0)
		return -1;
	pass(args, p, "patch");
	pass(args, p, "cwd");
	if (expected)
		json_object_object_add(p, "expected_sha256", expected);
	return tools_helper_call(app, sandbox_id, "file.apply_patch", p, FILES_TIMEOUT_MS, ret, err);
}

int tool_files_search(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                      struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id",       "pattern",     "path", "glob",
	                                    "case_insensitive", "max_matches", NULL};
	const char *sandbox_id = NULL, *pattern = NULL, *path = NULL, *glob = NULL;
	int ci = 0;
	int64_t max_matches = 0;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 ||
	    tool_args_string(args, "pattern", 1, &pattern, err) < 0 ||
	    tool_args_string(args, "path", 0, &path, err) < 0 || tool_args_string(args, "glob", 0, &glob, err) < 0 ||
	    tool_args_bool(args, "case_insensitive", 0, &ci, err) < 0 ||
	    tool_args_int(args, "max_matches", 200, 1, 5000, &max_matches, err) < 0)
		return -1;
	if (!*pattern)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "argument 'pattern' is empty; give a regular expression");
	_cleanup_json_ struct json_object *p = json_object_new_object();
	pass(args, p, "pattern");
	pass(args, p, "path");
	pass(args, p, "glob");
	json_object_object_add(p, "case_insensitive", json_object_new_boolean(ci));
	json_object_object_add(p, "max_matches", json_object_new_int64(max_matches));
	json_object_object_add(p, "max_bytes", json_object_new_int(app->cfg->max_output_chars));
	return tools_helper_call(app, sandbox_id, "file.search", p, FILES_TIMEOUT_MS, ret, err);
}

int tool_files_list(const struct mcp_call *call, struct json_object *args, struct json_object **ret,
                    struct cp_error **err)
{
	struct tools_app *app = call->app;
	static const char *const known[] = {"sandbox_id", "path", "depth", "glob", "max_entries", NULL};
	const char *sandbox_id = NULL, *path = NULL, *glob = NULL;
	int64_t depth = 0, max_entries = 0;
	if (tool_args_sandbox(args, known, &sandbox_id, err) < 0 || tool_args_string(args, "path", 0, &path, err) < 0 ||
	    tool_args_string(args, "glob", 0, &glob, err) < 0 ||
	    tool_args_int(args, "depth", 2, 1, 10, &depth, err) < 0 ||
	    tool_args_int(args, "max_entries", 1000, 1, 10000, &max_entries, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = json_object_new_object();
	pass(args, p, "path");
	pass(args, p, "glob");
	json_object_object_add(p, "depth", json_object_new_int64(depth));
	json_object_object_add(p, "max_entries", json_object_new_int64(max_entries));
	return tools_helper_call(app, sandbox_id, "file.list", p, FILES_TIMEOUT_MS, ret, err);
}
