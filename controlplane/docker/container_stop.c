/* container_stop.c: POST /containers/{id}/stop (Docker Engine API v1.41,
 * "Stop a container"). A stopped container stays stopped under the
 * restart policy "unless-stopped" until someone starts it. */
#include <stdio.h>
#include <stdlib.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "engine_internal.h"

/* t=0: SIGKILL at once; the engine waits for the exit. */
#define DOCKER_STOP_TIMEOUT_MS 30000L

int docker_container_stop(struct docker_engine *engine, const char *id, struct cp_error **err)
{
	if (!id || !*id)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "stop container: empty container id");
	_cleanup_free_ char *esc = docker_escape(id, NULL);
	_cleanup_free_ char *path = NULL;
	_cleanup_free_ char *what = NULL;
	path = xasprintf("/containers/%s/stop?t=0", esc);
	what = xasprintf("stop container '%s'", id);
	_cleanup_json_ struct json_object *reply = NULL;
	return docker_request(engine, "POST", path, NULL, DOCKER_STOP_TIMEOUT_MS, what, NULL, &reply, err);
}
