/* networks.c: the engine network sandboxes with network access join. Makes
 * sure the shared network exists with its fixed bridge name, replacing an
 * older nameless one only while no container refers to it; never removes a
 * network in use. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

#define DOCKER_NETWORK_TIMEOUT_MS 15000L

/* How many containers, in any state, name network (id) among theirs:
 * GET /containers/json?all=1&filters={"network":[id]}. The network's own
 * inspect lists running members only, and a stopped container whose
 * network was replaced could not start again. */
static int network_users(struct docker_engine *engine, const char *id, const char *what, size_t *ret_n,
                         struct cp_error **err)
{
	_cleanup_free_ char *path = docker_filtered_path("/containers/json?all=1&", "network", id);
	_cleanup_json_ struct json_object *list = NULL;
	if (docker_request_list(engine, path, DOCKER_NETWORK_TIMEOUT_MS, what, &list, err) < 0)
		return -1;
	*ret_n = json_object_array_length(list);
	return 0;
}

/* POST /networks/create for the shared network; a racing creator's 409
 * counts as success. */
static int create_shared(struct docker_engine *engine, const char *name, const char *label, const char *bridge_name,
                         const char *what, struct cp_error **err)
{
	const char *labels[] = {label, "true", NULL};
	if (docker_network_create(engine, name, labels, 0, bridge_name, NULL, err) < 0) {
		if ((*err)->code != CP_ERR_CONFLICT)
			return cp_error_prefix(err, "%s", what);
		cp_error_freep(err); /* someone else created it meanwhile */
	}
	return 0;
}

/* GET /networks/{name}, then POST /networks/create when it is absent (Docker
 * Engine API v1.41, "Inspect a network", "Create a network"). An existing
 * network on another bridge than bridge_name (made by an older chat2sbx) is
 * removed and created again when no container refers to it; otherwise it is
 * kept and *ret_bridge names its bridge. Blocks at most 15 s per engine call. */
int docker_network_ensure(struct docker_engine *engine, const char *name, const char *label, const char *bridge_name,
                          char *ret_bridge, size_t size, struct cp_error **err)
{
	_cleanup_free_ char *what = xasprintf("create network '%s'", name);
	_cleanup_free_ char *esc = docker_escape(name, "");
	_cleanup_free_ char *path = xasprintf("/networks/%s", esc);
	if (ret_bridge && size)
		snprintf(ret_bridge, size, "%s", bridge_name);
	_cleanup_json_ struct json_object *found = NULL;
	if (docker_request(engine, "GET", path, NULL, DOCKER_NETWORK_TIMEOUT_MS, what, NULL, &found, err) < 0) {
		if ((*err)->code != CP_ERR_NOT_FOUND)
			return -1;
		cp_error_freep(err);
		return create_shared(engine, name, label, bridge_name, what, err);
	}
	char bridge[64] = "";
	struct json_object *id = NULL;
	if (docker_network_bridge_of(found, bridge, sizeof(bridge)) < 0 || !json_object_object_get_ex(found, "Id", &id))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's answer has no network Id", what);
	if (!strcmp(bridge, bridge_name))
		return 0;
	if (ret_bridge && size)
		snprintf(ret_bridge, size, "%s", bridge);
	size_t users = 0;
	if (network_users(engine, json_object_get_string(id), what, &users, err) < 0)
		return -1;
	if (users > 0)
		return 0; /* in use: kept as it is; its bridge is reported */
	_cleanup_error_ struct cp_error *e = NULL;
	if (docker_network_remove(engine, json_object_get_string(id), &e) < 0 && e->code != CP_ERR_NOT_FOUND)
		return 0; /* someone joined it meanwhile: keep it */
	if (create_shared(engine, name, label, bridge_name, what, err) < 0)
		return -1;
	/* A racing creator may have made it first, on whatever bridge. */
	_cleanup_json_ struct json_object *made = NULL;
	if (docker_request(engine, "GET", path, NULL, DOCKER_NETWORK_TIMEOUT_MS, what, NULL, &made, err) < 0)
		return -1;
	if (ret_bridge && size && docker_network_bridge_of(made, bridge, sizeof(bridge)) >= 0)
		snprintf(ret_bridge, size, "%s", bridge);
	return 0;
}
