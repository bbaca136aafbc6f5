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

void docker_storage_clear(struct docker_storage *s)
{
	if (!s)
		return;
	free(s->driver);
	free(s->backing_fs);
	free(s->root_dir);
	*s = (struct docker_storage){0};
}

/* Drivers whose containers take HostConfig.StorageOpt {"size": …}:
 * overlay2 only on xfs (with the pquota mount option, which /info does not
 * show), devicemapper, btrfs and zfs (Docker docs, "docker run
 * --storage-opt"). */
static int takes_size(const char *driver, const char *backing)
{
	if (!driver)
		return 0;
	if (!strcmp(driver, "overlay2"))
		return backing && !strcmp(backing, "xfs");
	return !strcmp(driver, "devicemapper") || !strcmp(driver, "btrfs") || !strcmp(driver, "zfs");
}

int docker_engine_storage(struct docker_engine *engine, struct docker_storage *ret, struct cp_error **err)
{
	const char *what = "ask the engine for its storage";
	_cleanup_json_ struct json_object *info = NULL;
	if (docker_request(engine, "GET", "/info", NULL, DOCKER_INFO_TIMEOUT_MS, what, NULL, &info, err) < 0)
		return -1;
	struct docker_storage s = {0};
	struct json_object *v = NULL, *status = NULL;
	if (json_object_object_get_ex(info, "Driver", &v) && json_object_is_type(v, json_type_string))
		s.driver = strdup(json_object_get_string(v));
	if (json_object_object_get_ex(info, "DockerRootDir", &v) && json_object_is_type(v, json_type_string))
		s.root_dir = strdup(json_object_get_string(v));
	/* DriverStatus: [["Backing Filesystem", "extfs"], ...] */
	if (json_object_object_get_ex(info, "DriverStatus", &status) && json_object_is_type(status, json_type_array))
		for (size_t i = 0; i < json_object_array_length(status) && !s.backing_fs; i++) {
			struct json_object *pair = json_object_array_get_idx(status, i);
			const char *k = json_object_get_string(json_object_array_get_idx(pair, 0));
			const char *val = json_object_get_string(json_object_array_get_idx(pair, 1));
			if (k && val && !strcmp(k, "Backing Filesystem"))
				s.backing_fs = strdup(val);
		}
	s.size_supported = takes_size(s.driver, s.backing_fs);
	*ret = s;
	return 0;
}
