/* images.c: image calls on the Docker Engine. Only looks images up; pulling
 * and building are the template build's business (template/), never the
 * control plane's at request time. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"

#define DOCKER_IMAGE_TIMEOUT_MS 10000L

/* GET /images/{name}/json (Docker Engine API v1.41, "Inspect an image").
 * name is borrowed; '/' and ':' stay unescaped because the engine's route
 * takes a repository path with a tag there. *ret_id (caller frees) is the
 * image's "Id" ("sha256:…"). NOT_FOUND when the image is absent. Blocks at
 * most 10 s. */
int docker_image_inspect(struct docker_engine *engine, const char *name, char **ret_id, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	what = xasprintf("inspect image '%s'", name ? name : "");
	if (!name || !*name)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: empty image name", what);

	_cleanup_free_ char *esc = docker_escape(name, "/:@");
	_cleanup_free_ char *path = NULL;
	path = xasprintf("/images/%s/json", esc);
	_cleanup_json_ struct json_object *body = NULL;
	if (docker_request(engine, "GET", path, NULL, DOCKER_IMAGE_TIMEOUT_MS, what, NULL, &body, err) < 0)
		return -1;
	struct json_object *id = NULL;
	if (!body || !json_object_object_get_ex(body, "Id", &id) || !json_object_is_type(id, json_type_string))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's answer has no image Id", what);
	char *copy = xstrdup(json_object_get_string(id));
	*ret_id = copy;
	return 0;
}
