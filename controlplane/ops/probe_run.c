/* probe_run.c: one command of the isolation probe run inside a probe
 * sandbox, through the same helper channel (bash.start) a model's bash call
 * uses, for isolation.c and every attack in its own file. Owns nothing
 * beyond the call; never judges what the command printed. */
#include <json-c/json.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "../lifecycle/lifecycle.h"
#include "ops_internal.h"

#define PROBE_CALL_WAIT_MS 45000
#define PROBE_MAX_OUTPUT 262144

/* Runs command as a bash session (ops_internal.h). */
int ops_probe_run(struct lifecycle *lc, const char *sandbox_id, const char *command, char **ret_output,
                  struct cp_error **err)
{
	_cleanup_free_ char *session = NULL;
	if (id_new("bash_", &session, err) < 0)
		return -1;
	struct helper_channel *ch = NULL;
	if (lifecycle_sandbox_channel(lc, sandbox_id, &ch, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session));
	xjson_add(p, "command", xjson_string(command));
	xjson_add(p, "cwd", xjson_string("/"));
	xjson_add(p, "yield_time_ms", xjson_int64(PROBE_CALL_WAIT_MS - 5000));
	xjson_add(p, "timeout_ms", xjson_int64(PROBE_CALL_WAIT_MS - 10000));
	xjson_add(p, "max_output_bytes", xjson_int64(PROBE_MAX_OUTPUT));
	_cleanup_json_ struct json_object *res = NULL;
	int r = helper_channel_call(ch, "bash.start", p, PROBE_CALL_WAIT_MS, &res, err);
	lifecycle_sandbox_release(lc, sandbox_id, ch);
	if (r < 0)
		return cp_error_prefix(err, "run the probe in sandbox '%s'", sandbox_id);
	struct json_object *v = NULL;
	const char *status = json_object_object_get_ex(res, "status", &v) ? json_object_get_string(v) : NULL;
	if (!status || strcmp(status, "exited"))
		return cp_error_set(err, CP_ERR_TIMEOUT, "the probe in sandbox '%s' did not finish (status %s)",
		                    sandbox_id, status ? status : "unknown");
	const char *out = json_object_object_get_ex(res, "output", &v) ? json_object_get_string(v) : "";
	*ret_output = xstrdup(out ? out : "");
	return 0;
}
