/* container_pause.c: freezing a container and measuring what it wrote, for
 * the free-space guard (issue 13): POST /containers/{id}/pause and
 * /unpause (Docker Engine API v1.41, "Pause a container": the cgroup
 * freezer), and the size of its writable layer (GET /containers/{id}/json
 * ?size=1: SizeRw). Decides nothing about which containers. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "engine_internal.h"

#define DOCKER_PAUSE_TIMEOUT_MS 15000L
/* Sizing walks the layer's files in the engine: allow it time. */
#define DOCKER_SIZE_TIMEOUT_MS 30000L

static int post_container(struct docker_engine *engine, const char *id, const char *verb, struct cp_error **err)
{
	if (!id || !*id)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s container: empty container id", verb);
	_cleanup_free_ char *esc = docker_escape(id, NULL);
	_cleanup_free_ char *path = NULL, *what = NULL;
	path = xasprintf("/containers/%s/%s", esc, verb);
	what = xasprintf("%s container '%s'", verb, id);
	_cleanup_json_ struct json_object *reply = NULL;
	return docker_request(engine, "POST", path, NULL, DOCKER_PAUSE_TIMEOUT_MS, what, NULL, &reply, err);
}

int docker_container_pause(struct docker_engine *engine, const char *id, struct cp_error **err)
{
	return post_container(engine, id, "pause", err);
}

int docker_container_unpause(struct docker_engine *engine, const char *id, struct cp_error **err)
{
	return post_container(engine, id, "unpause", err);
}

int docker_container_layer_size(struct docker_engine *engine, const char *id, int64_t *ret_bytes, int *ret_paused,
                                struct cp_error **err)
{
	_cleanup_free_ char *esc = docker_escape(id ? id : "", NULL);
	_cleanup_free_ char *path = NULL, *what = NULL;
	path = xasprintf("/containers/%s/json?size=1", esc);
	what = xasprintf("measure container '%s'", id ? id : "");
	_cleanup_json_ struct json_object *info = NULL;
	if (docker_request(engine, "GET", path, NULL, DOCKER_SIZE_TIMEOUT_MS, what, NULL, &info, err) < 0)
		return -1;
	struct json_object *v = NULL, *state = NULL;
	*ret_bytes = json_object_object_get_ex(info, "SizeRw", &v) ? json_object_get_int64(v) : 0;
	if (ret_paused)
		*ret_paused = json_object_object_get_ex(info, "State", &state) &&
		              json_object_object_get_ex(state, "Paused", &v) && json_object_get_boolean(v);
	return 0;
}
