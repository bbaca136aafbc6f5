/* info.c: what the engine says about itself (GET /info) that a create
 * depends on: the OCI runtimes it has registered. Asked at create time, not
 * cached, because an operator may register a runtime and restart the engine
 * while serve runs. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"

#define DOCKER_INFO_TIMEOUT_MS 10000L

/* True when the runtime's registered runtimeArgs contain "--network=none"
 * (gVisor's runsc on hosts where it cannot use the host's network
 * namespace; /etc/docker/daemon.json "runtimes"). */
static int runtime_has_no_network(struct json_object *rt)
{
	struct json_object *args = NULL;
	if (!json_object_object_get_ex(rt, "runtimeArgs", &args) || !json_object_is_type(args, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(args); i++) {
		const char *a = json_object_get_string(json_object_array_get_idx(args, i));
		if (a && strcmp(a, "--network=none") == 0)
			return 1;
	}
	return 0;
}

/* GET /info (Docker Engine API v1.41, "Get system information"): looks
 * runtime up in "Runtimes" (the names `docker run --runtime` accepts).
 * engine and name borrowed. On success *ret_found says whether the engine
 * has it and *ret_no_network whether it was registered with runtimeArgs
 * "--network=none" (so its containers have no network whatever NetworkMode
 * says). *ret_names (may be NULL; caller frees) gets the registered names,
 * comma-separated, for messages. UNAVAILABLE when the engine does not answer,
 * INTERNAL for an answer without Runtimes. Blocks at most 10 s. */
int docker_engine_runtime(struct docker_engine *engine, const char *name, int *ret_found, int *ret_no_network,
                          char **ret_names, struct cp_error **err)
{
	const char *what = "ask the engine for its runtimes";
	_cleanup_json_ struct json_object *info = NULL;
	if (docker_request(engine, "GET", "/info", NULL, DOCKER_INFO_TIMEOUT_MS, what, NULL, &info, err) < 0)
		return -1;
	struct json_object *runtimes = NULL, *rt = NULL;
	if (!info || !json_object_object_get_ex(info, "Runtimes", &runtimes) ||
	    !json_object_is_type(runtimes, json_type_object))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the answer of GET /info has no Runtimes", what);
	int found = name && json_object_object_get_ex(runtimes, name, &rt);
	if (ret_names) {
		size_t len = 1;
		json_object_object_foreach(runtimes, key, val)
		{
			(void)val;
			len += strlen(key) + 2;
		}
		char *names = calloc(1, len);
		if (!names)
			return cp_error_set(err, CP_ERR_INTERNAL, "%s: out of memory", what);
		json_object_object_foreach(runtimes, k2, v2)
		{
			(void)v2;
			if (*names)
				strcat(names, ", ");
			strcat(names, k2);
		}
		*ret_names = names;
	}
	*ret_found = found;
	*ret_no_network = found && runtime_has_no_network(rt);
	return 0;
}
