/* container_pause.c: freezing a container and measuring what it wrote, for
 * the free-space guard (issue 13): POST /containers/{id}/pause and
 * /unpause (Docker Engine API v1.41, "Pause a container": the cgroup
 * freezer), and what it writes on the engine's disk (GET /containers/{id}/json
 * ?size=1: SizeRw, its volumes, the files the engine mounts into it). Decides
 * nothing about which containers. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "engine_internal.h"

#define DOCKER_PAUSE_TIMEOUT_MS 15000L

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

void docker_container_usage_clear(struct docker_container_usage *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < sizeof(u->files) / sizeof(u->files[0]); i++)
		free(u->files[i]);
	*u = (struct docker_container_usage){0};
}

/* A string member's copy, NULL when absent, not a string or empty. */
static char *string_member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	const char *s = json_object_get_string(v);
	return *s ? xstrdup(s) : NULL;
}

int docker_container_usage(struct docker_engine *engine, const char *id, long timeout_ms,
                           struct docker_container_usage *ret, struct cp_error **err)
{
	*ret = (struct docker_container_usage){.size_rw = -1};
	if (!id || !*id)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "measure container: empty container id");
	_cleanup_free_ char *esc = docker_escape(id, NULL);
	_cleanup_free_ char *path = NULL, *what = NULL;
	path = xasprintf("/containers/%s/json?size=1", esc);
	what = xasprintf("measure container '%s'", id);
	_cleanup_json_ struct json_object *info = NULL;
	if (docker_request(engine, "GET", path, NULL, timeout_ms, what, NULL, &info, err) < 0)
		return -1;
	struct docker_container_usage u = {.size_rw = -1};
	struct json_object *v = NULL, *state = NULL, *mounts = NULL;
	/* -1 is the engine's own "the driver could not say" (moby 20.10
	 * daemon/images/image_unix.go, GetContainerLayerSize). */
	if (json_object_object_get_ex(info, "SizeRw", &v) && json_object_is_type(v, json_type_int))
		u.size_rw = json_object_get_int64(v) < 0 ? -1 : json_object_get_int64(v);
	u.paused = json_object_object_get_ex(info, "State", &state) && json_object_object_get_ex(state, "Paused", &v) &&
	           json_object_get_boolean(v);
	if (json_object_object_get_ex(info, "Mounts", &mounts) && json_object_is_type(mounts, json_type_array))
		for (size_t i = 0; i < json_object_array_length(mounts); i++) {
			struct json_object *m = json_object_array_get_idx(mounts, i), *type = NULL;
			if (json_object_object_get_ex(m, "Type", &type) &&
			    json_object_is_type(type, json_type_string) &&
			    !strcmp(json_object_get_string(type), "volume"))
				u.volumes++;
		}
	u.files[0] = string_member(info, "HostsPath");
	u.files[1] = string_member(info, "ResolvConfPath");
	u.files[2] = string_member(info, "HostnamePath");
	*ret = u;
	return 0;
}
