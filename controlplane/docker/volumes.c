/* volumes.c: engine volumes made and removed on request (a managed
 * workspace on another machine's engine, issue 28: its files live in a
 * volume of that node's engine). Decides nothing about names or labels; the
 * caller does. Docker Engine API v1.41, "Volume": POST /volumes/create,
 * GET /volumes/{name}, DELETE /volumes/{name}. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

#define DOCKER_VOLUME_TIMEOUT_MS 15000L

int docker_volume_create(struct docker_engine *engine, const char *name, const char *const *labels,
                         struct cp_error **err)
{
	if (!name || !*name)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "create volume: empty name");
	_cleanup_free_ char *what = xasprintf("create volume '%s'", name);
	_cleanup_json_ struct json_object *body = xjson_object();
	struct json_object *lab = xjson_object();
	xjson_add(body, "Name", xjson_string(name));
	xjson_add(body, "Driver", xjson_string("local"));
	xjson_add(body, "Labels", lab);
	for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2)
		xjson_add(lab, labels[i], xjson_string(labels[i + 1]));
	long status = 0;
	_cleanup_json_ struct json_object *reply = NULL;
	return docker_request(engine, "POST", "/volumes/create", body, DOCKER_VOLUME_TIMEOUT_MS, what, &status, &reply,
	                      err) < 0
	           ? -1
	           : 0;
}

/* method on /volumes/{name}suffix (name escaped), what the call is for
 * messages ("remove", "inspect"); the engine's answer is not kept. */
static int volume_call(struct docker_engine *engine, const char *method, const char *name, const char *suffix,
                       const char *verb, struct cp_error **err)
{
	if (!name || !*name)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s volume: empty name", verb);
	_cleanup_free_ char *what = xasprintf("%s volume '%s'", verb, name);
	_cleanup_free_ char *esc = docker_escape(name, NULL);
	_cleanup_free_ char *path = xasprintf("/volumes/%s%s", esc, suffix);
	long status = 0;
	_cleanup_json_ struct json_object *reply = NULL;
	return docker_request(engine, method, path, NULL, DOCKER_VOLUME_TIMEOUT_MS, what, &status, &reply, err) < 0 ? -1
	                                                                                                            : 0;
}

int docker_volume_remove(struct docker_engine *engine, const char *name, struct cp_error **err)
{
	return volume_call(engine, "DELETE", name, "?force=1", "remove", err);
}

int docker_volume_has_label(struct docker_engine *engine, const char *name, const char *key, const char *value,
                            struct cp_error **err)
{
	if (!name || !*name || !key || !value)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "inspect volume: empty name or label");
	_cleanup_free_ char *what = xasprintf("inspect volume '%s'", name);
	_cleanup_free_ char *esc = docker_escape(name, NULL);
	_cleanup_free_ char *path = xasprintf("/volumes/%s", esc);
	long status = 0;
	/* Another machine's bytes: read up to docker_response_max's bound for
	 * one volume (bounds.c), and only compared, never kept. */
	_cleanup_json_ struct json_object *reply = NULL;
	if (docker_request(engine, "GET", path, NULL, DOCKER_VOLUME_TIMEOUT_MS, what, &status, &reply, err) < 0) {
		if ((*err)->code == CP_ERR_NOT_FOUND)
			cp_error_prefix(err, "the volume '%s' is gone", name);
		return -1;
	}
	struct json_object *labels = NULL, *v = NULL;
	if (!json_object_is_type(reply, json_type_object) || !json_object_object_get_ex(reply, "Labels", &labels) ||
	    !json_object_is_type(labels, json_type_object) || !json_object_object_get_ex(labels, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return 0;
	return strcmp(json_object_get_string(v), value) == 0;
}
