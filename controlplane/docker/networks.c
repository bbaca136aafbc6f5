/* networks.c: the engine network sandboxes with network access join. Only
 * makes sure it exists; never removes a network. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"

#define DOCKER_NETWORK_TIMEOUT_MS 15000L

/* GET /networks/{name}, then POST /networks/create when it is absent (Docker
 * Engine API v1.41, "Inspect a network", "Create a network"): a bridge with
 * inter-container communication off (com.docker.network.bridge.enable_icc
 * "false"), so sandboxes cannot reach each other, and CheckDuplicate so two
 * racing creates make one network (the loser's 409 counts as success). name
 * and label are borrowed. Blocks at most 15 s per engine call. */
int docker_network_ensure(struct docker_engine *engine, const char *name, const char *label, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *esc = docker_escape(name, "");
	if (asprintf(&what, "create network '%s'", name) < 0 || !esc || asprintf(&path, "/networks/%s", esc) < 0)
		return cp_error_set(err, CP_ERR_INTERNAL, "create network '%s': out of memory", name);
	_cleanup_json_ struct json_object *found = NULL;
	if (docker_request(engine, "GET", path, NULL, DOCKER_NETWORK_TIMEOUT_MS, what, NULL, &found, err) == 0)
		return 0;
	if ((*err)->code != CP_ERR_NOT_FOUND)
		return -1;
	cp_error_freep(err);

	_cleanup_json_ struct json_object *body = json_object_new_object();
	json_object_object_add(body, "Name", json_object_new_string(name));
	json_object_object_add(body, "Driver", json_object_new_string("bridge"));
	json_object_object_add(body, "CheckDuplicate", json_object_new_boolean(1));
	struct json_object *options = json_object_new_object();
	json_object_object_add(options, "com.docker.network.bridge.enable_icc", json_object_new_string("false"));
	json_object_object_add(body, "Options", options);
	struct json_object *labels = json_object_new_object();
	json_object_object_add(labels, label, json_object_new_string("true"));
	json_object_object_add(body, "Labels", labels);
	_cleanup_json_ struct json_object *created = NULL;
	if (docker_request(engine, "POST", "/networks/create", body, DOCKER_NETWORK_TIMEOUT_MS, what, NULL, &created,
	                   err) < 0) {
		if ((*err)->code != CP_ERR_CONFLICT)
			return -1;
		cp_error_freep(err); /* someone else created it meanwhile */
	}
	return 0;
}
